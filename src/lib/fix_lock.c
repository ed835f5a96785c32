/* fix_lock.c -- the lock fixes (see fix.h): LOCK puts the smallest run of statements holding a
 * lost update's read and write inside one `async with`, LOCK_CALLER does so in the lowest common
 * caller (or extends the `async with` the writers already take over the read), LOCK_ORDER makes a
 * function that nests two locks it is given take them in one global order. All are line edits
 * planned on fixctx (fix.c); afd_fix_lock_for gives the lock placement to RECHECK (fix_recheck.c). */
#include "fix_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static TSNode find_init(TSNode class_body, const char *src)
{
    uint32_t k = ts_node_named_child_count(class_body);
    for (uint32_t i = 0; i < k; i++) {
        TSNode ch = ts_node_named_child(class_body, i);
        TSNode def =
            afd_pyast_is(ch, AFD_PY_DECORATED_DEFINITION) ? afd_pyast_field(ch, AFD_PYF_DEFINITION) : ch;
        if (!afd_pyast_is(def, AFD_PY_FUNCTION_DEFINITION))
            continue;
        TSNode name = afd_pyast_field(def, AFD_PYF_NAME);
        if (!ts_node_is_null(name) && ts_node_end_byte(name) - ts_node_start_byte(name) == 8 &&
            memcmp(src + ts_node_start_byte(name), "__init__", 8) == 0)
            return def;
    }
    return (TSNode){{0}, 0, 0};
}

static int lock_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The indentation unit of fn's body: a tab when the guarded run is indented with tabs, else the
 * body's indentation relative to the def (4 when it cannot be told). */
static void indent_unit(const fixctx *c, TSNode fn, size_t ind, const char *at, size_t def_ind, char unit[16])
{
    if (ind > 0 && at[0] == '\t') {
        snprintf(unit, 16, "\t");
        return;
    }
    size_t u = 4;
    TSNode body = afd_pyast_field(fn, AFD_PYF_BODY);
    if (!ts_node_is_null(body) && ts_node_named_child_count(body) > 0) {
        size_t bi = afd_fix_line_indent(c, ts_node_start_point(ts_node_named_child(body, 0)).row, NULL);
        if (bi > def_ind && bi - def_ind <= 8)
            u = bi - def_ind;
    }
    memset(unit, ' ', u);
    unit[u] = 0;
}

/* Plans the creation of the lock `text` for site where the resource lives: at module setup for
 * module state, first in `__init__` (after its docstring) for instance state; a class without
 * `__init__` creates it where it is used, so only `import asyncio` may be needed. */
static void lock_create(fixctx *c, const afd_lock_site *site, const char *text, TSNode init,
                        uint32_t setup_row, int *has_asyncio)
{
    if (site->root == AFD_ROOT_GLOBAL) {
        afd_buf *b = &c->edits[setup_row].before;
        if (!*has_asyncio) {
            afd_buf_printf(b, "import asyncio\n");
            *has_asyncio = 1;
        }
        afd_buf_printf(b, "%s = asyncio.Lock()  # affidavit: guards %s (%s)\n", text, site->name,
                       site->cause ? site->cause : "lost update");
    } else if (!ts_node_is_null(init)) {
        TSNode body = afd_pyast_field(init, AFD_PYF_BODY);
        uint32_t k = ts_node_named_child_count(body);
        TSNode st0 = k ? ts_node_named_child(body, 0) : body;
        uint32_t row = ts_node_start_point(st0).row;
        if (k && afd_fix_is_docstring(st0))
            row = ts_node_end_point(st0).row + 1;
        size_t bind = afd_fix_line_indent(c, ts_node_start_point(st0).row, NULL);
        afd_buf_printf(&c->edits[row].before, "%.*s%s = asyncio.Lock()  # affidavit: guards self.%s (%s)\n",
                       (int)bind, c->src + c->line_start[ts_node_start_point(st0).row], text, site->name,
                       site->cause ? site->cause : "lost update");
        if (!*has_asyncio) {
            afd_buf_printf(&c->edits[setup_row].before, "import asyncio\n");
            *has_asyncio = 1;
        }
    } else if (!*has_asyncio) {
        afd_buf_printf(&c->edits[setup_row].before, "import asyncio\n");
        *has_asyncio = 1;
    }
}

/* The lock guarding site's resource as code in fn names it, into text, with its creation planned
 * where the resource lives (lock_create): what LOCK does for one resource, for the fixes that put
 * one lock elsewhere (RECHECK). When owner (a class name) is given, the class fn belongs to must be that
 * class: a lock on another object's instance would not exclude the tasks of another instance. */
int afd_fix_lock_for(fixctx *c, TSNode fn, const afd_lock_site *site, const char *owner, char *text,
                     size_t cap)
{
    TSNode root = ts_tree_root_node(c->tree);
    TSNode cls = afd_fix_enclosing(fn, AFD_PY_CLASS_DEFINITION);
    TSNode init = {{0}, 0, 0};
    if (site->root == AFD_ROOT_GLOBAL) {
        snprintf(text, cap, "_affidavit_lock_%s", site->name);
    } else if (site->root == AFD_ROOT_SELF) {
        if (ts_node_is_null(cls))
            return afd_fix_refuse(c, "an attribute of self outside a class");
        TSNode cname = afd_pyast_field(cls, AFD_PYF_NAME);
        if (owner && !afd_fix_text_is(c->src, cname, owner))
            return afd_fix_refuse(c,
                                  "the function is a method of %.*s, the resource lives in %s: a lock there "
                                  "would not be shared by every %s's users",
                                  (int)(ts_node_end_byte(cname) - ts_node_start_byte(cname)),
                                  c->src + ts_node_start_byte(cname), owner, owner);
        init = find_init(afd_pyast_field(cls, AFD_PYF_BODY), c->src);
        if (!ts_node_is_null(init))
            snprintf(text, cap, "self._affidavit_lock_%s", site->name);
        else
            snprintf(text, cap, "self.__dict__.setdefault(\"_affidavit_lock_%s\", asyncio.Lock())",
                     site->name);
    } else {
        return afd_fix_refuse(c, "only module state and instance state get a lock");
    }
    int has_asyncio = 0;
    uint32_t setup_row = afd_fix_module_setup_row(root, &has_asyncio, c->src);
    lock_create(c, site, text, init, setup_row, &has_asyncio);
    return 0;
}

/* The indentation unit of fn's body at row (see indent_unit), into unit. */
void afd_fix_indent_unit(const fixctx *c, TSNode fn, uint32_t row, char unit[16])
{
    const char *at;
    size_t ind = afd_fix_line_indent(c, row, &at);
    indent_unit(c, fn, ind, at, afd_fix_line_indent(c, ts_node_start_point(fn).row, NULL), unit);
}

int afd_fix_lock(const char *src, size_t len, const afd_lock_site *sites, size_t n, afd_buf *out, char *why,
                 size_t whylen)
{
    fixctx c = {.src = src, .len = len, .why = why, .whylen = whylen};
    char *locks[MAX_SITES] = {0};
    int rc = afd_fix_start(&c, out);
    if (rc == 0 && (n == 0 || n > MAX_SITES))
        rc = afd_fix_refuse(&c, "no update site given");
    if (rc < 0)
        goto out;
    TSNode root = ts_tree_root_node(c.tree);
    /* the interval: the deepest block holding every read and write, and its children from the
     * first that holds one of them to the last */
    TSNode chains[2 * MAX_SITES][MAX_CHAIN];
    size_t lens[2 * MAX_SITES];
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (!sites[i].read_line || !sites[i].write_line || sites[i].read_line > c.n_lines ||
            sites[i].write_line > c.n_lines) {
            rc = afd_fix_refuse(&c, "a line is outside the file");
            goto out;
        }
        lens[m] = afd_fix_statement_chain(root, sites[i].read_line - 1, chains[m], MAX_CHAIN);
        m++;
        lens[m] = afd_fix_statement_chain(root, sites[i].write_line - 1, chains[m], MAX_CHAIN);
        m++;
    }
    size_t depth = 0;
    for (;; depth++) {
        int same = 1;
        for (size_t k = 0; k < m && same; k++)
            same = depth < lens[k] &&
                   ts_node_eq(ts_node_parent(chains[k][depth]), ts_node_parent(chains[0][depth]));
        if (!same)
            break;
    }
    if (depth == 0) {
        rc = afd_fix_refuse(&c, "the read and the write are not in one block of code");
        goto out;
    }
    depth--; /* chains[k][depth] are siblings in one block */
    TSNode block = ts_node_parent(chains[0][depth]);
    TSNode first = chains[0][depth], last = chains[0][depth];
    for (size_t k = 1; k < m; k++) {
        TSNode s = chains[k][depth];
        if (ts_node_start_byte(s) < ts_node_start_byte(first))
            first = s;
        if (ts_node_start_byte(s) > ts_node_start_byte(last))
            last = s;
    }
    TSNode fn = afd_pyast_is(block, AFD_PY_BLOCK) ? ts_node_parent(block) : (TSNode){{0}, 0, 0};
    if (!afd_pyast_is(fn, AFD_PY_FUNCTION_DEFINITION))
        fn = afd_fix_enclosing(block, AFD_PY_FUNCTION_DEFINITION);
    if (ts_node_is_null(fn) || !afd_fix_is_async_def(fn)) {
        rc = afd_fix_refuse(
            &c, "the read and the write are not in one async function: an async with cannot go there");
        goto out;
    }
    uint32_t r0 = ts_node_start_point(first).row, r1 = ts_node_end_point(last).row;
    for (TSNode s = first;; s = ts_node_next_named_sibling(s)) {
        if (afd_fix_has_multiline_string(s)) {
            rc = afd_fix_refuse(
                &c, "a multi-line string lies in the statements to guard: re-indenting it would change it");
            goto out;
        }
        if (ts_node_eq(s, last) || ts_node_is_null(s))
            break;
    }
    /* the indentation: the interval's own, and one unit (the body's relative to its def) */
    const char *at;
    size_t ind = afd_fix_line_indent(&c, r0, &at);
    size_t def_ind = afd_fix_line_indent(&c, ts_node_start_point(fn).row, NULL);
    char unit[16];
    indent_unit(&c, fn, ind, at, def_ind, unit);
    /* the locks, one per resource, created where the resource lives */
    TSNode cls = afd_fix_enclosing(fn, AFD_PY_CLASS_DEFINITION);
    TSNode init = {{0}, 0, 0};
    if (!ts_node_is_null(cls))
        init = find_init(afd_pyast_field(cls, AFD_PYF_BODY), src);
    int has_asyncio = 0;
    uint32_t setup_row = afd_fix_module_setup_row(root, &has_asyncio, src);
    size_t n_locks = 0;
    for (size_t i = 0; i < n; i++) {
        char text[300];
        if (sites[i].root == AFD_ROOT_GLOBAL) {
            snprintf(text, sizeof text, "_affidavit_lock_%s", sites[i].name);
        } else if (sites[i].root == AFD_ROOT_SELF) {
            if (ts_node_is_null(cls)) {
                rc = afd_fix_refuse(&c, "an attribute of self outside a class");
                goto out;
            }
            if (!ts_node_is_null(init))
                snprintf(text, sizeof text, "self._affidavit_lock_%s", sites[i].name);
            else
                snprintf(text, sizeof text,
                         "self.__dict__.setdefault(\"_affidavit_lock_%s\", asyncio.Lock())", sites[i].name);
        } else {
            rc = afd_fix_refuse(&c, "only module state and instance state get a lock");
            goto out;
        }
        int dup = 0;
        for (size_t k = 0; k < n_locks; k++)
            dup |= strcmp(locks[k], text) == 0;
        if (dup)
            continue;
        locks[n_locks] = strdup(text);
        if (!locks[n_locks]) {
            rc = AFD_ENOMEM;
            goto out;
        }
        n_locks++;
        lock_create(&c, &sites[i], text, init, setup_row, &has_asyncio);
    }
    qsort(locks, n_locks, sizeof *locks, lock_cmp); /* one global order: no lock-order cycle */
    afd_buf *head = &c.edits[r0].before;
    afd_buf_printf(head, "%.*sasync with ", (int)ind, at);
    for (size_t k = 0; k < n_locks; k++)
        afd_buf_printf(head, "%s%s", k ? ", " : "", locks[k]);
    afd_buf_printf(head, ":  # affidavit: the read and the write below run as one step\n");
    for (uint32_t r = r0; r <= r1 && r < c.n_lines; r++)
        c.edits[r].indent = 1;
    rc = afd_fix_emit(&c, out, unit);
out:
    for (size_t k = 0; k < MAX_SITES; k++)
        free(locks[k]);
    afd_fix_finish(&c);
    return rc;
}

/* ---- LOCK_ORDER ---- */

/* The one item of an `async with NAME:` statement whose header is on one line and whose body
 * starts on the next, or a null node. */
static TSNode async_with_name(TSNode st)
{
    TSNode none = {{0}, 0, 0};
    if (!afd_pyast_is(st, AFD_PY_WITH_STATEMENT) || ts_node_child_count(st) == 0 ||
        !afd_pyast_is_token(ts_node_child(st, 0), "async"))
        return none;
    TSNode clause = ts_node_named_child(st, 0);
    TSNode body = afd_pyast_field(st, AFD_PYF_BODY);
    if (!afd_pyast_is(clause, AFD_PY_WITH_CLAUSE) || ts_node_named_child_count(clause) != 1 ||
        ts_node_is_null(body) || ts_node_start_point(body).row <= ts_node_start_point(st).row)
        return none;
    TSNode item = ts_node_named_child(clause, 0);
    TSNode value = afd_pyast_field(item, AFD_PYF_VALUE);
    return afd_pyast_is(value, AFD_PY_IDENTIFIER) ? value : none;
}

/* Whether name is one of fn's parameters. */
static int is_parameter(const char *src, TSNode fn, TSNode name)
{
    TSNode params = afd_pyast_field(fn, AFD_PYF_PARAMETERS);
    uint32_t k = ts_node_named_child_count(params);
    size_t nl = ts_node_end_byte(name) - ts_node_start_byte(name);
    for (uint32_t i = 0; i < k; i++) {
        TSNode p = ts_node_named_child(params, i);
        if (!afd_pyast_is(p, AFD_PY_IDENTIFIER))
            p = afd_pyast_field(p, AFD_PYF_NAME).id ? afd_pyast_field(p, AFD_PYF_NAME)
                                                    : ts_node_named_child(p, 0);
        if (afd_pyast_is(p, AFD_PY_IDENTIFIER) && ts_node_end_byte(p) - ts_node_start_byte(p) == nl &&
            !memcmp(src + ts_node_start_byte(p), src + ts_node_start_byte(name), nl))
            return 1;
    }
    return 0;
}

/* Whether name is assigned (bound by `=`, `+=`, a for target, `as`, walrus...) anywhere in n. */
static int is_rebound(const char *src, TSNode n, TSNode name)
{
    TSNode stack[512];
    size_t sp = 0;
    size_t nl = ts_node_end_byte(name) - ts_node_start_byte(name);
    stack[sp++] = n;
    while (sp) {
        TSNode cur = stack[--sp];
        TSNode left = {{0}, 0, 0};
        if (afd_pyast_is(cur, AFD_PY_ASSIGNMENT) || afd_pyast_is(cur, AFD_PY_AUGMENTED_ASSIGNMENT) ||
            afd_pyast_is(cur, AFD_PY_FOR_STATEMENT) || afd_pyast_is(cur, AFD_PY_NAMED_EXPRESSION))
            left = afd_pyast_field(cur,
                                   afd_pyast_is(cur, AFD_PY_NAMED_EXPRESSION) ? AFD_PYF_NAME : AFD_PYF_LEFT);
        else if (afd_pyast_is(cur, AFD_PY_AS_PATTERN))
            left = afd_pyast_field(cur, AFD_PYF_ALIAS);
        if (!ts_node_is_null(left)) {
            /* any identifier inside the target with the same text */
            TSNode t[64];
            size_t tp = 0;
            t[tp++] = left;
            while (tp) {
                TSNode x = t[--tp];
                if (afd_pyast_is(x, AFD_PY_IDENTIFIER) && ts_node_end_byte(x) - ts_node_start_byte(x) == nl &&
                    !memcmp(src + ts_node_start_byte(x), src + ts_node_start_byte(name), nl))
                    return 1;
                uint32_t k = ts_node_named_child_count(x);
                for (uint32_t i = 0; i < k && tp < 64; i++)
                    t[tp++] = ts_node_named_child(x, i);
            }
        }
        uint32_t k = ts_node_named_child_count(cur);
        for (uint32_t i = 0; i < k && sp < 512; i++)
            stack[sp++] = ts_node_named_child(cur, i);
    }
    return 0;
}

int afd_fix_lock_order(const char *src, size_t len, uint32_t outer_line, uint32_t inner_line, afd_buf *out,
                       char *why, size_t whylen)
{
    fixctx c = {.src = src, .len = len, .why = why, .whylen = whylen};
    int rc = afd_fix_start(&c, out);
    if (rc < 0)
        goto out;
    if (!outer_line || !inner_line || outer_line >= inner_line || inner_line > c.n_lines) {
        rc = afd_fix_refuse(&c, "the two acquisitions are not an outer and an inner line of the file");
        goto out;
    }
    TSNode root = ts_tree_root_node(c.tree);
    TSNode oc[MAX_CHAIN], ic[MAX_CHAIN];
    size_t no = afd_fix_statement_chain(root, outer_line - 1, oc, MAX_CHAIN);
    size_t ni = afd_fix_statement_chain(root, inner_line - 1, ic, MAX_CHAIN);
    TSNode outer = {{0}, 0, 0}, inner = {{0}, 0, 0};
    for (size_t i = 0; i < no; i++)
        if (ts_node_start_point(oc[i]).row == outer_line - 1)
            outer = oc[i];
    for (size_t i = 0; i < ni; i++)
        if (ts_node_start_point(ic[i]).row == inner_line - 1)
            inner = ic[i];
    TSNode a = ts_node_is_null(outer) ? outer : async_with_name(outer);
    TSNode b = ts_node_is_null(inner) ? inner : async_with_name(inner);
    if (ts_node_is_null(a) || ts_node_is_null(b)) {
        rc = afd_fix_refuse(&c, "the locks are not taken by `async with NAME:` statements at lines %u and %u",
                            outer_line, inner_line);
        goto out;
    }
    if (ts_node_start_byte(inner) < ts_node_start_byte(outer) ||
        ts_node_end_byte(inner) > ts_node_end_byte(outer)) {
        rc = afd_fix_refuse(&c, "the inner `async with` is not inside the outer one");
        goto out;
    }
    TSNode fn = afd_fix_enclosing(outer, AFD_PY_FUNCTION_DEFINITION);
    if (ts_node_is_null(fn) || !afd_fix_is_async_def(fn) ||
        !ts_node_eq(afd_fix_enclosing(inner, AFD_PY_FUNCTION_DEFINITION), fn)) {
        rc = afd_fix_refuse(&c, "the two acquisitions are not in one async function");
        goto out;
    }
    /* the locks come from the caller: the function is called with them in either order */
    if (!is_parameter(src, fn, a) || !is_parameter(src, fn, b) || is_rebound(src, fn, a) ||
        is_rebound(src, fn, b)) {
        rc = afd_fix_refuse(
            &c, "the locks are not parameters the function leaves unchanged: no single order to put them in");
        goto out;
    }
    TSNode ibody = afd_pyast_field(inner, AFD_PYF_BODY);
    if (afd_fix_has_multiline_string(ibody)) {
        rc = afd_fix_refuse(&c, "a multi-line string lies in the inner block: dedenting it would change it");
        goto out;
    }
    const char *oat, *iat, *bat;
    size_t oind = afd_fix_line_indent(&c, outer_line - 1, &oat);
    size_t iind = afd_fix_line_indent(&c, inner_line - 1, &iat);
    uint32_t b0 = ts_node_start_point(ibody).row, b1 = ts_node_end_point(ibody).row;
    size_t bind = afd_fix_line_indent(&c, b0, &bat);
    if (bind <= iind || bind - iind > 8 || memcmp(iat, bat, iind) != 0) {
        rc = afd_fix_refuse(&c, "the inner block's indentation is not one unit deeper than its `async with`");
        goto out;
    }
    size_t unit = bind - iind;
    /* comments right after the block, at its indentation, belong to it (tree-sitter leaves them out) */
    while (b1 + 1 < c.n_lines) {
        const char *p = src + c.line_start[b1 + 1];
        size_t l = c.line_start[b1 + 2] - c.line_start[b1 + 1];
        if (l <= bind || memcmp(p, bat, bind) != 0 || p[bind] != '#')
            break;
        b1++;
    }
    for (uint32_t r = b0; r <= b1; r++) {
        const char *p = src + c.line_start[r];
        size_t l = c.line_start[r + 1] - c.line_start[r], k = 0;
        while (k < l && (p[k] == ' ' || p[k] == '\t'))
            k++;
        if (k == l || p[k] == '\n' || p[k] == '\r')
            continue; /* blank */
        if (k < bind || memcmp(p, bat, bind) != 0) {
            rc = afd_fix_refuse(&c, "line %u of the inner block is indented differently", r + 1);
            goto out;
        }
        c.edits[r].drop = (uint8_t)unit;
    }
    int an = (int)(ts_node_end_byte(a) - ts_node_start_byte(a)),
        bn = (int)(ts_node_end_byte(b) - ts_node_start_byte(b));
    const char *as = src + ts_node_start_byte(a), *bs = src + ts_node_start_byte(b);
    afd_buf_printf(
        &c.edits[outer_line - 1].before,
        "%.*s_affidavit_lock_a, _affidavit_lock_b = sorted((%.*s, %.*s), key=id)  # affidavit: one "
        "global order for every caller\n"
        "%.*sasync with _affidavit_lock_a, _affidavit_lock_b:  # affidavit: both locks, taken together "
        "(was: async with %.*s:)\n",
        (int)oind, oat, an, as, bn, bs, (int)oind, oat, an, as);
    c.edits[outer_line - 1].omit = 1;
    c.edits[inner_line - 1].omit = 1;
    rc = afd_fix_emit(&c, out, "");
out:
    afd_fix_finish(&c);
    return rc;
}

/* ---- LOCK_CALLER ---- */

/* The identifiers of n (at most cap), for the names the lock expression depends on. */
static size_t identifiers(TSNode n, TSNode *out, size_t cap)
{
    size_t k = 0;
    TSNode stack[64];
    size_t sp = 0;
    stack[sp++] = n;
    while (sp && k < cap) {
        TSNode cur = stack[--sp];
        if (afd_pyast_is(cur, AFD_PY_IDENTIFIER))
            out[k++] = cur;
        uint32_t m = ts_node_named_child_count(cur);
        for (uint32_t i = 0; i < m && sp < 64; i++)
            stack[sp++] = ts_node_named_child(cur, i);
    }
    return k;
}

/* The `async with` (header on one line, body below) among the siblings from `from` on whose body
 * holds row, or a null node. */
static TSNode async_with_holding(TSNode from, uint32_t row)
{
    for (TSNode s = from; !ts_node_is_null(s); s = ts_node_next_named_sibling(s)) {
        if (ts_node_start_point(s).row > row)
            break;
        TSNode body = afd_pyast_field(s, AFD_PYF_BODY);
        if (afd_pyast_is(s, AFD_PY_WITH_STATEMENT) && ts_node_child_count(s) > 0 &&
            afd_pyast_is_token(ts_node_child(s, 0), "async") && !ts_node_is_null(body) &&
            ts_node_start_point(body).row > ts_node_start_point(s).row &&
            ts_node_start_point(body).row <= row && row <= ts_node_end_point(body).row)
            return s;
    }
    return (TSNode){{0}, 0, 0};
}

/* The existing lock extended: the `async with L:` header moves up from `with` to the statement
 * `first`, and the statements from `first` to it go inside. L's expression must not depend on a
 * name those statements bind (it is evaluated earlier now), and they must not take L themselves
 * (an asyncio.Lock is not reentrant). */
static int extend_lock(fixctx *c, TSNode fn, TSNode first, TSNode with, afd_buf *out)
{
    TSNode clause = ts_node_named_child(with, 0);
    TSNode names[32];
    size_t n = identifiers(clause, names, 32);
    size_t cl = ts_node_end_byte(clause) - ts_node_start_byte(clause);
    const char *cs = c->src + ts_node_start_byte(clause);
    for (TSNode s = first; !ts_node_eq(s, with); s = ts_node_next_named_sibling(s)) {
        for (size_t i = 0; i < n; i++)
            if (is_rebound(c->src, s, names[i]))
                return afd_fix_refuse(c, "the lock `%.*s` depends on a name bound before it is taken",
                                      (int)cl, cs);
        if (afd_fix_has_multiline_string(s))
            return afd_fix_refuse(
                c, "a multi-line string lies in the statements to guard: re-indenting it would change it");
        /* the moved statements' own `async with` of the same lock would wait for itself */
        for (uint32_t r = ts_node_start_point(s).row; r <= ts_node_end_point(s).row; r++) {
            const char *p = c->src + c->line_start[r];
            size_t l = c->line_start[r + 1] - c->line_start[r];
            for (size_t k = 0; cl && k + cl <= l; k++)
                if (!memcmp(p + k, cs, cl))
                    return afd_fix_refuse(c, "the statements to guard take `%.*s` already", (int)cl, cs);
        }
    }
    uint32_t r0 = ts_node_start_point(first).row, wr = ts_node_start_point(with).row;
    char unit[16];
    afd_fix_indent_unit(c, fn, r0, unit);
    const char *at;
    size_t ind = afd_fix_line_indent(c, r0, &at);
    afd_buf_printf(&c->edits[r0].before,
                   "%.*sasync with %.*s:  # affidavit: the lock the writers hold, taken before the read (was "
                   "at line %u)\n",
                   (int)ind, at, (int)cl, cs, wr + 1);
    for (uint32_t r = r0; r < wr; r++)
        c->edits[r].indent = 1;
    c->edits[wr].omit = 1;
    return afd_fix_emit(c, out, unit);
}

int afd_fix_lock_caller(const char *src, size_t len, const afd_lock_site *site, const char *owner,
                        int *reused, afd_buf *out, char *why, size_t whylen)
{
    *reused = 0;
    fixctx c = {.src = src, .len = len, .why = why, .whylen = whylen};
    int rc = afd_fix_start(&c, out);
    if (rc < 0)
        goto out;
    TSNode st, fn;
    rc = afd_fix_async_statement_at(&c, site->read_line, "the read", "an async with cannot go there", &st,
                                    &fn);
    if (rc < 0)
        goto out;
    if (site->write_line > c.n_lines || !site->write_line) {
        rc = afd_fix_refuse(&c, "the write is outside the file");
        goto out;
    }
    TSNode root = ts_tree_root_node(c.tree);
    TSNode rch[MAX_CHAIN], wch[MAX_CHAIN];
    size_t nr = afd_fix_statement_chain(root, site->read_line - 1, rch, MAX_CHAIN);
    size_t nw = afd_fix_statement_chain(root, site->write_line - 1, wch, MAX_CHAIN);
    size_t d = 0;
    while (d < nr && d < nw && ts_node_eq(ts_node_parent(rch[d]), ts_node_parent(wch[d])) &&
           ts_node_eq(rch[d], wch[d]))
        d++;
    /* the write already under `async with L:` after the read's statement in one block: extend L */
    if (d < nr && d < nw && ts_node_eq(ts_node_parent(rch[d]), ts_node_parent(wch[d])) &&
        ts_node_start_byte(rch[d]) < ts_node_start_byte(wch[d])) {
        TSNode with = async_with_holding(rch[d], site->write_line - 1);
        if (ts_node_eq(with, wch[d])) {
            rc = extend_lock(&c, fn, rch[d], with, out);
            *reused = rc == 0;
            if (rc != AFD_EINVAL)
                goto out; /* else L cannot be extended here: a new lock, which verification judges */
        }
    }
    if (site->root == AFD_ROOT_SELF && owner) {
        char text[300];
        rc = afd_fix_lock_for(&c, fn, site, owner, text, sizeof text); /* only its refusal is used */
        if (rc < 0)
            goto out;
    }
    afd_fix_finish(&c);
    return afd_fix_lock(src, len, site, 1, out, why, whylen);
out:
    afd_fix_finish(&c);
    return rc;
}
