/* pyscan_access.c -- pyscan's third walk: attribute and subscript chains through self, cls, a
 * global, a local variable or an alias, resolved against the bindings of the second walk and
 * visited in source order so that aliases follow the bindings as they happen (see pyscan.c). */
#include "pyscan_impl.h"

#include <stdlib.h>
#include <string.h>

/* The methods that change their receiver; any other method call reads it. */
static const char *const MUTATING[] = {
    "append", "extend", "insert",      "update",      "setdefault", "clear",      "add",     "discard",
    "remove", "sort",   "__setitem__", "__delitem__", "appendleft", "extendleft", "reverse",
};

/* The methods that take a value out of their receiver and return it: a read and a write. */
static const char *const TAKING[] = {"pop", "popitem", "popleft"};

/* ---- walk 3: accesses ---- */

static int root_named(ctx *c, const char *s, size_t n, uint8_t root, res *r)
{
    c->tmp.len = 0;
    afd_utf8_clean(&c->tmp, s, n, "?", AFD_UTF8_NO_CONTROLS);
    if (c->tmp.err)
        return c->tmp.err;
    r->kind = R_ROOT;
    r->root = root;
    r->path_off = c->off_empty;
    return afd_pyscan_intern(c, (const char *)c->tmp.data, c->tmp.len, &r->name_off);
}

/* What identifier id denotes in scope sc, by Python's rules: the innermost scope that binds it
 * (a class body only for code directly in it), `global` declarations, the function's aliases,
 * then the module globals. */
static int resolve(ctx *c, TSNode id, uint32_t sc, res *r)
{
    memset(r, 0, sizeof *r);
    size_t n;
    const char *s = afd_pyast_text(c->src, c->len, id, &n);
    if (n == 0)
        return 0;
    if ((n == 4 && memcmp(s, "self", 4) == 0) || (n == 3 && memcmp(s, "cls", 3) == 0)) {
        r->kind = R_ROOT;
        r->root = n == 4 ? AFD_ROOT_SELF : AFD_ROOT_CLS;
        r->name_off = n == 4 ? c->off_self : c->off_cls;
        r->path_off = c->off_empty;
        return 0;
    }
    int seen_fn = 0;
    uint32_t hops = 0;
    for (uint32_t cur = sc; cur != 0 && hops < MAX_SCOPE_HOPS; cur = c->scopes[cur].parent, hops++) {
        const pyscope *p = &c->scopes[cur];
        if (p->kind == S_CLASS && cur != sc)
            continue; /* a class body's names are not visible to the functions inside it */
        uint8_t f = afd_pyscan_name_flags(c, cur, s, n);
        if (f & NF_GDECL)
            return root_named(c, s, n, AFD_ROOT_GLOBAL, r);
        if (p->kind == S_FUNCTION && !seen_fn) {
            seen_fn = 1;
            const alias *a = afd_pyscan_alias_find(c, cur, s, n);
            if (a && a->active) {
                r->kind = R_ALIAS;
                r->root = a->root;
                r->name_off = a->rname_off;
                r->path_off = a->path_off;
                return 0;
            }
        }
        if (f & NF_BIND) {
            /* A variable of a function (or of a lambda or comprehension in it): the tracer
             * records which object it holds. A class body's names and imported modules are
             * no one's state. */
            if (p->kind != S_CLASS && (f & NF_VAR))
                return root_named(c, s, n, AFD_ROOT_LOCAL, r);
            return 0;
        }
    }
    if (afd_pyscan_name_flags(c, 0, s, n) & NF_GLOBALVAR)
        return root_named(c, s, n, AFD_ROOT_GLOBAL, r);
    return 0;
}

/* Walks the attribute/subscript chain that ends at e down to its base and resolves the base.
 * c->segs receives the segments, outermost first. With push_keys, the subscript keys and a base
 * that is not a name (a call, a literal) are queued to be scanned as reads. */
static int chain_walk(ctx *c, TSNode e, uint32_t sc, int push_keys, res *r)
{
    memset(r, 0, sizeof *r);
    c->n_segs = 0;
    int valid = 1, rc = 0;
    for (;;) {
        if (afd_pyast_is_bad(e))
            return 0;
        uint8_t k = afd_pyscan_kind_of(c, e);
        seg sg = {{{0}, 0, 0}, SEG_ATTR};
        TSNode next;
        if ((k == K_ATTR || k == K_SUBSCRIPT) && ts_node_has_error(e)) {
            /* `self.a<junk>.b`, `self.d[k` (a MISSING bracket): the chain is broken where the
             * error is; what precedes it is still read. */
            if ((rc = afd_pyscan_list_kids(c, e)) < 0)
                return rc;
            int broken = 0;
            for (size_t i = 0; i < c->n_kids; i++)
                broken |= afd_pyast_is_bad(c->kids[i].node);
            if (broken) {
                valid = 0;
                TSNode base = afd_pyast_field(e, k == K_ATTR ? AFD_PYF_OBJECT : AFD_PYF_VALUE);
                if (push_keys && k == K_SUBSCRIPT)
                    for (size_t i = 0; i < c->n_kids && rc == 0; i++)
                        if (c->kids[i].field == afd_pyast_field_id(AFD_PYF_SUBSCRIPT))
                            rc = afd_pyscan_push(c, c->kids[i].node, sc, 0, OP_VISIT, M_READ);
                if (rc == 0 && push_keys)
                    rc = afd_pyscan_push(c, base, sc, 0, OP_VISIT, M_READ);
                return rc;
            }
        }
        if (k == K_ATTR) {
            sg.node = afd_pyast_field(e, AFD_PYF_ATTRIBUTE);
            if (!afd_pyscan_ident_ok(c, sg.node))
                valid = 0;
            next = afd_pyast_field(e, AFD_PYF_OBJECT);
        } else if (k == K_SUBSCRIPT) {
            if ((rc = afd_pyscan_list_kids(c, e)) < 0)
                return rc;
            size_t nkeys = 0;
            int comma = 0;
            sg.kind = SEG_SUB;
            next = (TSNode){{0}, 0, 0};
            for (size_t i = 0; i < c->n_kids; i++) {
                const kid *kd = &c->kids[i];
                if (kd->field == afd_pyast_field_id(AFD_PYF_VALUE)) {
                    next = kd->node;
                } else if (kd->field == afd_pyast_field_id(AFD_PYF_SUBSCRIPT)) {
                    nkeys++;
                    sg.node = kd->node;
                    if (push_keys && (rc = afd_pyscan_push(c, kd->node, sc, 0, OP_VISIT, M_READ)) < 0)
                        return rc;
                } else if (!kd->named && strcmp(ts_node_type(kd->node), ",") == 0) {
                    comma = 1; /* x[1,] is a tuple key */
                }
            }
            if (nkeys != 1 || comma)
                sg.node = (TSNode){{0}, 0, 0};
        } else if (k == K_PAREN) {
            /* (self.a).b is self.a.b; anything else in parentheses is the base. */
            TSNode inner = ts_node_named_child(e, 0);
            if (ts_node_named_child_count(e) != 1 || afd_pyast_is_bad(inner))
                break;
            uint8_t ik = afd_pyscan_kind_of(c, inner);
            if (ik != K_IDENT && ik != K_ATTR && ik != K_SUBSCRIPT && ik != K_PAREN)
                break;
            e = inner;
            continue;
        } else {
            break;
        }
        rc = afd_array_grow((void **)&c->segs, &c->cap_segs, c->n_segs + 1, sizeof *c->segs, 16);
        if (rc < 0)
            return rc;
        c->segs[c->n_segs++] = sg;
        e = next;
    }
    if (afd_pyscan_kind_of(c, e) != K_IDENT)
        return push_keys ? afd_pyscan_push(c, e, sc, 0, OP_VISIT, M_READ) : 0;
    if (!valid)
        return 0;
    return resolve(c, e, sc, r);
}

/* A string literal key in canonical form: double quotes, \' as ', " escaped, other escapes as
 * written; raw strings with their backslashes escaped. Returns 0 (nothing usable written) for
 * f-strings, bytes, and anything that is not plain printable UTF-8 on one line. */
static int put_string_key(ctx *c, TSNode s)
{
    if (afd_pyscan_list_kids(c, s) < 0 || c->n_kids < 2)
        return 0;
    TSNode st = c->kids[0].node, en = c->kids[c->n_kids - 1].node;
    if (afd_pyscan_kind_of(c, st) != K_STRING_START || afd_pyscan_kind_of(c, en) != K_STRING_END ||
        afd_pyast_is_bad(en))
        return 0;
    for (size_t i = 0; i < c->n_kids; i++)
        if (afd_pyscan_kind_of(c, c->kids[i].node) == K_INTERPOLATION)
            return 0;
    size_t sl, el;
    const char *stt = afd_pyast_text(c->src, c->len, st, &sl), *ent = afd_pyast_text(c->src, c->len, en, &el);
    size_t q = 0;
    while (q < sl && (stt[sl - 1 - q] == '\'' || stt[sl - 1 - q] == '"'))
        q++;
    size_t plen = sl - q;
    int raw = 0;
    if (plen == 1 && (stt[0] == 'r' || stt[0] == 'R'))
        raw = 1;
    else if (plen > 1 || (plen == 1 && stt[0] != 'u' && stt[0] != 'U'))
        return 0; /* bytes, f-strings and the like */
    if (q == 0 || el != q || memcmp(ent, stt + plen, q) != 0)
        return 0;
    uint32_t a = ts_node_end_byte(st), b = ts_node_start_byte(en);
    if (b < a || b > c->len)
        return 0;
    const unsigned char *p = (const unsigned char *)c->src + a;
    size_t n = b - a;
    afd_buf_put(&c->path, "\"", 1);
    for (size_t i = 0; i < n;) {
        unsigned ch = p[i];
        if (ch < 0x20 || ch == 0x7f)
            return 0;
        if (ch == '\\') {
            if (raw) {
                afd_buf_put(&c->path, "\\\\", 2);
                i++;
                continue;
            }
            if (i + 1 >= n || p[i + 1] < 0x20)
                return 0;
            if (p[i + 1] == '\'') {
                afd_buf_put(&c->path, "'", 1);
            } else if (p[i + 1] == '"' || p[i + 1] == '\\') {
                afd_buf_put(&c->path, p + i, 2);
            } else {
                afd_buf_put(&c->path, "\\", 1);
                i++;
                continue; /* the escaped character is copied (and checked) on its own */
            }
            i += 2;
            continue;
        }
        if (ch == '"') {
            afd_buf_put(&c->path, "\\\"", 2);
            i++;
            continue;
        }
        size_t k = afd_utf8_len(p + i, n - i);
        if (k == 0)
            return 0;
        afd_buf_put(&c->path, p + i, k);
        i += k;
    }
    afd_buf_put(&c->path, "\"", 1);
    return 1;
}

/* An integer literal key in decimal: 0x10, 1_6 and 16 are all [16]. Returns 0 for suffixed
 * literals (1j) and hexadecimal ones beyond 64 bits. */
static int put_int_key(ctx *c, TSNode n, int neg)
{
    size_t len;
    const char *t = afd_pyast_text(c->src, c->len, n, &len);
    char digits[32];
    if (len >= 2 && t[0] == '0' && strchr("xXoObB", t[1])) {
        unsigned base = (t[1] == 'x' || t[1] == 'X') ? 16 : (t[1] == 'o' || t[1] == 'O') ? 8 : 2;
        uint64_t v = 0;
        int any = 0;
        for (size_t i = 2; i < len; i++) {
            char ch = t[i];
            unsigned d;
            if (ch == '_')
                continue;
            if (ch >= '0' && ch <= '9')
                d = (unsigned)(ch - '0');
            else if (ch >= 'a' && ch <= 'f')
                d = (unsigned)(ch - 'a' + 10);
            else if (ch >= 'A' && ch <= 'F')
                d = (unsigned)(ch - 'A' + 10);
            else
                return 0;
            if (d >= base || v > (UINT64_MAX - d) / base)
                return 0;
            v = v * base + d;
            any = 1;
        }
        if (!any)
            return 0;
        size_t k = sizeof digits;
        digits[--k] = 0;
        do {
            digits[--k] = (char)('0' + v % 10);
            v /= 10;
        } while (v);
        if (neg && strcmp(digits + k, "0") != 0)
            afd_buf_put(&c->path, "-", 1);
        afd_pyscan_put_str(&c->path, digits + k);
        return 1;
    }
    size_t i = 0;
    for (size_t j = 0; j < len; j++)
        if (!((t[j] >= '0' && t[j] <= '9') || t[j] == '_'))
            return 0;
    while (i < len && (t[i] == '0' || t[i] == '_'))
        i++;
    if (i == len) { /* 0, 00, 0_0 */
        afd_buf_put(&c->path, "0", 1);
        return len > 0;
    }
    if (neg)
        afd_buf_put(&c->path, "-", 1);
    for (; i < len; i++)
        if (t[i] != '_')
            afd_buf_put(&c->path, t + i, 1);
    return 1;
}

static int put_key(ctx *c, TSNode key)
{
    if (ts_node_is_null(key) || afd_pyast_is_bad(key))
        return 0;
    switch (afd_pyscan_kind_of(c, key)) {
    case K_STRING:
        return put_string_key(c, key);
    case K_INTEGER:
        return put_int_key(c, key, 0);
    case K_UNARY: {
        TSNode op = afd_pyast_field(key, AFD_PYF_OPERATOR), arg = afd_pyast_field(key, AFD_PYF_ARGUMENT);
        if (ts_node_is_null(op) || !afd_pyast_text_is(c->src, c->len, op, "-") || afd_pyast_is_bad(arg) ||
            afd_pyscan_kind_of(c, arg) != K_INTEGER)
            return 0;
        return put_int_key(c, arg, 1);
    }
    default:
        return 0;
    }
}

/* c->path = the resolved chain's path: the alias's path, then the segments innermost first. */
static int build_path(ctx *c, const res *r)
{
    c->path.len = 0;
    afd_buf_put(&c->path, "", 0);
    if (r->kind == R_ALIAS)
        afd_pyscan_put_str(&c->path, (const char *)c->strs.data + r->path_off);
    for (size_t i = c->n_segs; i-- > 0;) {
        const seg *sg = &c->segs[i];
        if (sg->kind == SEG_ATTR) {
            size_t n;
            const char *t = afd_pyast_text(c->src, c->len, sg->node, &n);
            afd_buf_put(&c->path, ".", 1);
            afd_utf8_clean(&c->path, t, n, "?", AFD_UTF8_NO_CONTROLS);
        } else {
            afd_buf_put(&c->path, "[", 1);
            size_t mark = c->path.len;
            if (c->path.err == 0 && !put_key(c, sg->node)) {
                c->path.len = mark;
                afd_buf_put(&c->path, "*", 1);
            }
            afd_buf_put(&c->path, "]", 1);
        }
    }
    return c->path.err ? c->path.err : afd_pyscan_charge(c, c->path.len);
}

/* write: 1 a write, 0 a read, 2 a taking call's read (AFD_PYACC_TAKE). */
static int emit(ctx *c, TSNode at, uint32_t sc, const res *r, uint32_t path_off, int write)
{
    int rc = afd_array_grow((void **)&c->acc, &c->cap_acc, c->n_acc + 1, sizeof *c->acc, 16);
    if (rc < 0)
        return rc;
    uint8_t flags =
        (uint8_t)((c->test ? AFD_PYACC_TEST : 0) | (write == 1 && c->literal ? AFD_PYACC_LITERAL : 0) |
                  (write == 2 ? AFD_PYACC_TAKE : 0));
    write = write == 1;
    c->acc[c->n_acc++] =
        (racc){ts_node_start_byte(at),    c->seq++, afd_pyast_line(at), r->name_off, path_off,
               c->scopes[sc].fn_name_off, r->root,  (uint8_t)write,     flags};
    return 0;
}

/* The access (if any) made by the chain e used in mode m. */
static int handle_chain(ctx *c, TSNode e, uint32_t sc, uint8_t m)
{
    res r;
    int rc = chain_walk(c, e, sc, 1, &r);
    if (rc < 0 || r.kind == R_NONE)
        return rc;
    /* Storing into or deleting the alias's own name rebinds it; it touches no shared state. */
    if (c->n_segs == 0 && r.kind == R_ALIAS && (m == M_STORE || m == M_DEL))
        return 0;
    if ((rc = build_path(c, &r)) < 0)
        return rc;
    /* A bare local variable's take (`items.pop()`) is its write only, like any mutating call on
     * it: merely naming it reads nothing the tracer could place. */
    if (m == M_TAKE && c->path.len == 0 && r.root == AFD_ROOT_LOCAL)
        m = M_MWRITE;
    /* Bare self or cls (passed along, returned, a method called on it) is no access: as the
     * whole object it would overlap every attribute of it. A bare local variable is one only
     * when a mutating method is called on it (`items.append(x)`): which object it names is
     * known at run time only, and merely naming it touches nothing. */
    if (c->path.len == 0 && (r.root == AFD_ROOT_SELF || r.root == AFD_ROOT_CLS ||
                             (r.root == AFD_ROOT_LOCAL && m != M_MWRITE && m != M_TAKE)))
        return 0;
    uint32_t path_off;
    if ((rc = afd_pyscan_intern(c, (const char *)c->path.data, c->path.len, &path_off)) < 0)
        return rc;
    int aug_alias = c->n_segs == 0 && r.kind == R_ALIAS; /* s += x rebinds s: a read only */
    if (m == M_READ || m == M_AUG || m == M_TAKE)
        rc = emit(c, e, sc, &r, path_off, m == M_TAKE ? 2 : 0);
    if (rc == 0 && (m == M_STORE || m == M_DEL || m == M_MWRITE || m == M_TAKE || (m == M_AUG && !aug_alias)))
        rc = emit(c, e, sc, &r, path_off, 1);
    return rc;
}

static int named_in(const ctx *c, TSNode method, const char *const *names, size_t n_names)
{
    size_t n;
    const char *t = afd_pyast_text(c->src, c->len, method, &n);
    for (size_t i = 0; i < n_names; i++)
        if (strlen(names[i]) == n && memcmp(names[i], t, n) == 0)
            return 1;
    return 0;
}

/* The mode a method call gives its receiver: a container's mutating or taking method writes it,
 * unless the call's result is awaited (a coroutine method of the same name: no container's). */
static uint8_t method_mode(const ctx *c, int awaited, TSNode method)
{
    if (awaited)
        return M_READ;
    if (named_in(c, method, TAKING, sizeof TAKING / sizeof TAKING[0]))
        return M_TAKE;
    return named_in(c, method, MUTATING, sizeof MUTATING / sizeof MUTATING[0]) ? M_MWRITE : M_READ;
}

static int handle_call(ctx *c, TSNode n, uint32_t sc, int awaited)
{
    TSNode fn = afd_pyast_field(n, AFD_PYF_FUNCTION);
    int rc = afd_pyscan_push(c, afd_pyast_field(n, AFD_PYF_ARGUMENTS), sc, 0, OP_VISIT, M_READ);
    if (rc < 0 || afd_pyast_is_bad(fn))
        return rc;
    if (afd_pyscan_kind_of(c, fn) == K_ATTR) {
        TSNode method = afd_pyast_field(fn, AFD_PYF_ATTRIBUTE), recv = afd_pyast_field(fn, AFD_PYF_OBJECT);
        if (afd_pyscan_ident_ok(c, method) && !ts_node_is_null(recv))
            return handle_chain(c, recv, sc, method_mode(c, awaited, method));
    }
    return afd_pyscan_push(c, fn, sc, 0, OP_VISIT, M_READ);
}

/* After `name = value` (or `name := value`): name aliases value when value is an access. */
static int b_bind(ctx *c, TSNode n, uint32_t sc)
{
    int assign = afd_pyscan_kind_of(c, n) == K_ASSIGN;
    TSNode target = afd_pyast_field(n, assign ? AFD_PYF_LEFT : AFD_PYF_NAME);
    TSNode value = afd_pyast_field(n, assign ? AFD_PYF_RIGHT : AFD_PYF_VALUE);
    /* a = b = v: a is bound to v */
    while (!afd_pyast_is_bad(value) && afd_pyscan_kind_of(c, value) == K_ASSIGN)
        value = afd_pyast_field(value, AFD_PYF_RIGHT);
    if (afd_pyast_is_bad(target))
        return 0;
    if (afd_pyscan_kind_of(c, target) != K_IDENT)
        return afd_pyscan_push(c, target, sc, 0, OP_UNBIND, 0);
    uint32_t fn = c->scopes[sc].fnscope;
    if (fn == NONE32)
        return 0; /* module and class bodies have no aliases: their names are globals or attributes */
    res tr, vr;
    int rc = resolve(c, target, sc, &tr);
    if (rc < 0)
        return rc;
    if (tr.kind == R_ROOT && tr.root != AFD_ROOT_LOCAL) { /* self, cls, a global: no alias */
        afd_pyscan_alias_clear(c, fn, target);
        return 0;
    }
    if (afd_pyast_is_bad(value) || (rc = chain_walk(c, value, sc, 0, &vr)) < 0 || vr.kind == R_NONE) {
        afd_pyscan_alias_clear(c, fn, target);
        return rc;
    }
    if ((rc = build_path(c, &vr)) < 0)
        return rc;
    /* `t = state` leaves t a variable of its own: the tracer sees the object either way. */
    if (vr.root == AFD_ROOT_LOCAL && c->path.len == 0) {
        afd_pyscan_alias_clear(c, fn, target);
        return 0;
    }
    uint32_t path_off;
    if ((rc = afd_pyscan_intern(c, (const char *)c->path.data, c->path.len, &path_off)) < 0)
        return rc;
    return afd_pyscan_alias_set(c, fn, target, &vr, path_off);
}

/* A name rebound by anything but a plain assignment (for, with, del, import, def, +=) stops
 * being an alias. */
static int b_unbind(ctx *c, TSNode n, uint32_t sc)
{
    uint32_t fn = c->scopes[sc].fnscope;
    if (fn == NONE32)
        return 0;
    switch (afd_pyscan_kind_of(c, n)) {
    case K_IDENT:
        afd_pyscan_alias_clear(c, fn, n);
        return 0;
    case K_CONTAINER:
    case K_PAREN: {
        int rc = afd_pyscan_list_kids(c, n);
        return rc < 0 ? rc : afd_pyscan_push_kids(c, sc, OP_UNBIND, 0);
    }
    case K_DOTTED_NAME:
        return afd_pyscan_push(c, ts_node_named_child(n, 0), sc, 0, OP_UNBIND, 0);
    case K_ALIASED_IMPORT:
        return afd_pyscan_push(c, afd_pyast_field(n, AFD_PYF_ALIAS), sc, 0, OP_UNBIND, 0);
    default:
        return 0;
    }
}

/* A for statement or a comprehension's for clause (k): an `async for` is a yield site; the
 * target is a store, and everything else a read. */
static int b_for(ctx *c, TSNode n, uint32_t sc, uint8_t k)
{
    int rc;
    if ((rc = afd_pyscan_list_kids(c, n)) < 0)
        return rc;
    if (afd_pyscan_has_async(c) && (rc = afd_pyscan_u32_push(&c->yields, afd_pyast_line(n))) < 0)
        return rc;
    TSNode left = {{0}, 0, 0}, right = {{0}, 0, 0};
    for (size_t i = c->n_kids; rc == 0 && i-- > 0;) {
        const kid *kd = &c->kids[i];
        if (kd->field == afd_pyast_field_id(AFD_PYF_LEFT))
            left = kd->node;
        else if (kd->field == afd_pyast_field_id(AFD_PYF_RIGHT) && k == K_FOR)
            right = kd->node;
        else if (kd->named)
            rc = afd_pyscan_push(c, kd->node, sc, 0, OP_VISIT, M_READ);
    }
    /* Iterable, then the target, then (a loop statement's) body: a comprehension's
     * variables are its own and alias nothing. */
    if (rc == 0 && k == K_FOR)
        rc = afd_pyscan_push(c, left, sc, 0, OP_UNBIND, 0);
    if (rc == 0)
        rc = afd_pyscan_push(c, left, sc, 0, OP_VISIT, M_STORE);
    if (rc == 0)
        rc = afd_pyscan_push(c, right, sc, 0, OP_VISIT, M_READ);
    return rc;
}

/* Whether n is a literal constant (*lit): what an assignment of it stores cannot differ from one
 * run to the next. Lists a string's parts into c->kids (O(1) each, however many escapes it has).
 * Returns 0 or AFD_ENOMEM. */
static int is_literal(ctx *c, TSNode n, int *lit)
{
    static const char *const LITERALS[] = {"true", "false", "none", "integer", "float", "string"};
    *lit = 0;
    if (afd_pyast_is_bad(n))
        return 0;
    const char *t = ts_node_type(n);
    for (size_t i = 0; i < sizeof LITERALS / sizeof LITERALS[0]; i++)
        *lit |= strcmp(t, LITERALS[i]) == 0;
    if (!*lit || !afd_pyast_is(n, AFD_PY_STRING))
        return 0;
    int rc = afd_pyscan_list_kids(c, n);
    /* an f-string with a replacement field is computed */
    for (size_t i = 0; rc == 0 && i < c->n_kids; i++)
        if (afd_pyast_is(c->kids[i].node, AFD_PY_INTERPOLATION))
            *lit = 0;
    return rc;
}

/* Pushes the children listed in c->kids in mode m, the condition of an if, elif or while (the
 * child in field `condition`) marked as a test. */
static int push_kids_tests(ctx *c, uint32_t sc, uint8_t m)
{
    TSFieldId cond = afd_pyast_field_id(AFD_PYF_CONDITION);
    for (size_t i = c->n_kids; i-- > 0;) {
        if (!c->kids[i].named)
            continue;
        int rc = afd_pyscan_push(c, c->kids[i].node, sc, 0, OP_VISIT,
                                 (uint8_t)(m | (c->kids[i].field == cond ? M_TEST : 0)));
        if (rc < 0)
            return rc;
    }
    return 0;
}

int afd_pyscan_b_visit(ctx *c, const item *it)
{
    TSNode n = it->node;
    uint32_t sc = it->scope, s;
    uint8_t m = it->mode & M_MASK;
    int rc = 0;
    c->test = it->mode & M_TEST;
    c->literal = it->mode & M_LITERAL;
    if (afd_pyast_is_bad(n))
        return 0;
    if (it->op == OP_BIND)
        return b_bind(c, n, sc);
    if (it->op == OP_UNBIND)
        return b_unbind(c, n, sc);
    uint8_t k = afd_pyscan_kind_of(c, n);
    switch (k) {
    case K_SKIP:
    case K_GLOBAL:
    case K_NONLOCAL:
    case K_CASE_PATTERN:
    case K_KEYWORD_PATTERN:
    case K_DOTTED_NAME:
        return 0;
    case K_IDENT:
    case K_ATTR:
    case K_SUBSCRIPT:
        return handle_chain(c, n, sc, m);
    case K_CALL:
        return handle_call(c, n, sc, (it->mode & M_AWAITED) != 0);
    case K_CONTAINER:
    case K_PAREN:
        rc = afd_pyscan_list_kids(c, n);
        return rc < 0 ? rc : afd_pyscan_push_kids(c, sc, OP_VISIT, m);
    case K_ASSIGN:
    case K_NAMED_EXPR: {
        int assign = k == K_ASSIGN;
        rc = afd_pyscan_push(c, n, sc, 0, OP_BIND, 0);
        int lit = 0;
        if (rc == 0)
            rc = is_literal(c, afd_pyast_field(n, assign ? AFD_PYF_RIGHT : AFD_PYF_VALUE), &lit);
        if (rc == 0)
            rc = afd_pyscan_push(c, afd_pyast_field(n, assign ? AFD_PYF_LEFT : AFD_PYF_NAME), sc, 0, OP_VISIT,
                                 (uint8_t)(M_STORE | (lit ? M_LITERAL : 0)));
        if (rc == 0) /* the value is evaluated first */
            rc = afd_pyscan_push(c, afd_pyast_field(n, assign ? AFD_PYF_RIGHT : AFD_PYF_VALUE), sc, 0,
                                 OP_VISIT, M_READ);
        return rc;
    }
    case K_AUGASSIGN: {
        TSNode left = afd_pyast_field(n, AFD_PYF_LEFT);
        rc = afd_pyscan_push(c, left, sc, 0, OP_UNBIND, 0);
        if (rc == 0)
            rc = afd_pyscan_push(c, left, sc, 0, OP_VISIT, M_AUG);
        if (rc == 0)
            rc = afd_pyscan_push(c, afd_pyast_field(n, AFD_PYF_RIGHT), sc, 0, OP_VISIT, M_READ);
        return rc;
    }
    case K_DELETE:
        rc = afd_pyscan_list_kids(c, n);
        for (size_t i = c->n_kids; rc == 0 && i-- > 0;) {
            if (!c->kids[i].named)
                continue;
            rc = afd_pyscan_push(c, c->kids[i].node, sc, 0, OP_UNBIND, 0);
            if (rc == 0)
                rc = afd_pyscan_push(c, c->kids[i].node, sc, 0, OP_VISIT, M_DEL);
        }
        return rc;
    case K_FOR:
    case K_FOR_IN:
        return b_for(c, n, sc, k);
    case K_WITH:
    case K_AWAIT:
        if ((rc = afd_pyscan_list_kids(c, n)) < 0)
            return rc;
        if ((k == K_AWAIT || afd_pyscan_has_async(c)) &&
            (rc = afd_pyscan_u32_push(&c->yields, afd_pyast_line(n))) < 0)
            return rc;
        return afd_pyscan_push_kids(c, sc, OP_VISIT, (uint8_t)(M_READ | (k == K_AWAIT ? M_AWAITED : 0)));
    case K_AS_PATTERN:
        rc = afd_pyscan_list_kids(c, n);
        for (size_t i = c->n_kids; rc == 0 && i-- > 0;) {
            const kid *kd = &c->kids[i];
            if (kd->field == afd_pyast_field_id(AFD_PYF_ALIAS)) {
                rc = afd_pyscan_push(c, kd->node, sc, 0, OP_UNBIND, 0);
                if (rc == 0)
                    rc = afd_pyscan_push(c, kd->node, sc, 0, OP_VISIT, M_STORE);
            } else if (kd->named) {
                rc = afd_pyscan_push(c, kd->node, sc, 0, OP_VISIT, M_READ);
            }
        }
        return rc;
    case K_FUNCDEF:
    case K_CLASSDEF:
    case K_LAMBDA: {
        TSNode name = afd_pyast_field(n, AFD_PYF_NAME);
        rc = afd_pyscan_scope_get(c, n,
                                  k == K_FUNCDEF    ? S_FUNCTION
                                  : k == K_CLASSDEF ? S_CLASS
                                                    : S_LAMBDA,
                                  sc, name, &s);
        if (rc == 0)
            rc = afd_pyscan_push(c, afd_pyast_field(n, AFD_PYF_BODY), s, 0, OP_VISIT, M_READ);
        if (rc == 0 && k != K_LAMBDA)
            rc = afd_pyscan_push(c, name, sc, 0, OP_UNBIND, 0);
        /* Default values and base classes are evaluated where the definition is. */
        if (rc == 0)
            rc = afd_pyscan_push(
                c, afd_pyast_field(n, k == K_CLASSDEF ? AFD_PYF_SUPERCLASSES : AFD_PYF_PARAMETERS), sc, 0,
                OP_VISIT, M_READ);
        return rc;
    }
    case K_PARAMS:
        rc = afd_pyscan_list_kids(c, n);
        for (size_t i = c->n_kids; rc == 0 && i-- > 0;) {
            uint8_t pk = afd_pyscan_kind_of(c, c->kids[i].node);
            if (pk == K_DEFAULT_PARAM || pk == K_TYPED_DEFAULT_PARAM)
                rc = afd_pyscan_push(c, afd_pyast_field(c->kids[i].node, AFD_PYF_VALUE), sc, 0, OP_VISIT,
                                     M_READ);
        }
        return rc;
    case K_COMP:
        rc = afd_pyscan_scope_get(c, n, S_COMP, sc, n, &s);
        if (rc == 0)
            rc = afd_pyscan_list_kids(c, n);
        return rc < 0 ? rc : afd_pyscan_push_kids(c, s, OP_VISIT, M_READ);
    case K_KEYWORD_ARG:
        return afd_pyscan_push(c, afd_pyast_field(n, AFD_PYF_VALUE), sc, 0, OP_VISIT, M_READ);
    case K_IMPORT:
        rc = afd_pyscan_list_kids(c, n);
        for (size_t i = 0; rc == 0 && i < c->n_kids; i++)
            if (c->kids[i].field == afd_pyast_field_id(AFD_PYF_NAME))
                rc = afd_pyscan_push(c, c->kids[i].node, sc, 0, OP_UNBIND, 0);
        return rc;
    default:
        rc = afd_pyscan_list_kids(c, n);
        return rc < 0 ? rc : push_kids_tests(c, sc, M_READ);
    }
}
