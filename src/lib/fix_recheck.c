/* fix_recheck.c -- RECHECK (fix_recheck.h): the check of a lazy initialization kept, made again
 * under a lock. Line edits planned on fixctx (fix.c); the lock is LOCK's (fix_lock.c).
 *
 * Invariant: every line of the user's source is emitted, unchanged or re-indented, and the only
 * lines added are the lock's creation, its `async with`, the repeated `if` header and (for an
 * early return) the repeated return. Workload: once per candidate, on one file. */
#include "fix_impl.h"
#include "fix_recheck.h"

#include <stdio.h>
#include <string.h>

static int is_type(TSNode n, const char *type)
{
    return !ts_node_is_null(n) && strcmp(ts_node_type(n), type) == 0;
}

static TSNode field(TSNode n, const char *name)
{
    return ts_node_child_by_field_name(n, name, (uint32_t)strlen(name));
}

/* Whether n holds an await or binds a name (a walrus or a lambda's parameters do not count:
 * only `:=` binds in an expression): evaluating it again would not be a mere re-check. */
static int has_effect(TSNode n)
{
    if (afd_pyast_is(n, AFD_PY_AWAIT) || afd_pyast_is(n, AFD_PY_NAMED_EXPRESSION) || is_type(n, "yield"))
        return 1;
    uint32_t k = ts_node_named_child_count(n);
    for (uint32_t i = 0; i < k; i++)
        if (has_effect(ts_node_named_child(n, i)))
            return 1;
    return 0;
}

/* The innermost `if` statement whose condition lies on row, or a null node. */
static TSNode if_at(TSNode root, uint32_t row)
{
    TSNode chain[MAX_CHAIN];
    size_t n = afd_fix_statement_chain(root, row, chain, MAX_CHAIN);
    for (size_t i = n; i-- > 0;) {
        TSNode cond = field(chain[i], "condition");
        if (is_type(chain[i], "if_statement") && ts_node_start_point(cond).row <= row &&
            row <= ts_node_end_point(cond).row)
            return chain[i];
    }
    return (TSNode){{0}, 0, 0};
}

/* The row re-emitted `units` indentation units deeper (blank rows stay as they are). */
static void reindent(fixctx *c, uint32_t row, int units, const char *unit)
{
    const char *p = c->src + c->line_start[row];
    size_t l = c->line_start[row + 1] - c->line_start[row];
    int blank = 1;
    for (size_t i = 0; i < l && blank; i++)
        blank = p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r';
    if (blank)
        return;
    afd_buf *b = &c->edits[row].before;
    for (int u = 0; u < units; u++)
        afd_buf_printf(b, "%s", unit);
    afd_buf_put(b, p, l);
    c->edits[row].omit = 1;
}

/* The statement of block that holds row, or a null node. */
static TSNode child_holding(TSNode block, uint32_t row)
{
    uint32_t k = ts_node_named_child_count(block);
    for (uint32_t i = 0; i < k; i++) {
        TSNode ch = ts_node_named_child(block, i);
        if (ts_node_start_point(ch).row <= row && row <= ts_node_end_point(ch).row)
            return ch;
    }
    return (TSNode){{0}, 0, 0};
}

/* Refuses statements from first to last (siblings) that hold a multi-line string. */
static int check_strings(fixctx *c, TSNode first, TSNode last)
{
    for (TSNode s = first; !ts_node_is_null(s); s = ts_node_next_named_sibling(s)) {
        if (afd_fix_has_multiline_string(s))
            return afd_fix_refuse(
                c, "a multi-line string lies in the statements to guard: re-indenting it would change it");
        if (ts_node_eq(s, last))
            break;
    }
    return 0;
}

int afd_fix_recheck(const char *src, size_t len, const afd_lock_site *site, const char *owner, afd_buf *out,
                    char *why, size_t whylen)
{
    fixctx c = {.src = src, .len = len, .why = why, .whylen = whylen};
    int rc = afd_fix_start(&c, out);
    if (rc < 0)
        goto out;
    if (!site || !site->read_line || !site->write_line || site->read_line > c.n_lines ||
        site->write_line > c.n_lines) {
        rc = afd_fix_refuse(&c, "the check or the act is outside the file");
        goto out;
    }
    TSNode root = ts_tree_root_node(c.tree);
    uint32_t crow = site->read_line - 1, arow = site->write_line - 1;
    TSNode ifs = if_at(root, crow);
    if (ts_node_is_null(ifs)) {
        rc = afd_fix_refuse(&c, "the check at line %u is not the condition of an if statement",
                            site->read_line);
        goto out;
    }
    TSNode cond = field(ifs, "condition"), body = field(ifs, "consequence");
    uint32_t irow = ts_node_start_point(ifs).row;
    if (!ts_node_is_null(field(ifs, "alternative"))) {
        rc = afd_fix_refuse(
            &c, "the if at line %u has an elif or else branch: re-checking it is not synthesized", irow + 1);
        goto out;
    }
    if (ts_node_end_point(cond).row != irow || ts_node_is_null(body) ||
        ts_node_start_point(body).row <= irow) {
        rc = afd_fix_refuse(&c, "the if at line %u does not have a one-line header and a block below it",
                            irow + 1);
        goto out;
    }
    if (has_effect(cond)) {
        rc = afd_fix_refuse(
            &c, "the condition at line %u awaits or binds a name: checking it again would repeat that",
            irow + 1);
        goto out;
    }
    TSNode fn = afd_fix_enclosing(ifs, AFD_PY_FUNCTION_DEFINITION);
    if (ts_node_is_null(fn) || !afd_fix_is_async_def(fn)) {
        rc = afd_fix_refuse(&c, "the check is not in an async function: an async with cannot go there");
        goto out;
    }
    /* the shape: the act inside the if, or after an early return */
    int inside = ts_node_start_point(body).row <= arow && arow <= ts_node_end_point(body).row;
    TSNode ret = ts_node_named_child(body, 0), first = {{0}, 0, 0}, last = {{0}, 0, 0};
    if (!inside) {
        TSNode block = ts_node_parent(ifs);
        last = child_holding(block, arow);
        first = ts_node_next_named_sibling(ifs);
        if (ts_node_named_child_count(body) != 1 || !afd_pyast_is(ret, AFD_PY_RETURN_STATEMENT) ||
            ts_node_start_point(ret).row != ts_node_end_point(ret).row || ts_node_is_null(last) ||
            ts_node_is_null(first) || ts_node_start_byte(last) <= ts_node_start_byte(ifs)) {
            rc = afd_fix_refuse(&c,
                                "the act at line %u is neither in the if at line %u nor after an early "
                                "`if ...: return` in its block",
                                site->write_line, irow + 1);
            goto out;
        }
    }
    rc = inside ? check_strings(&c, ts_node_named_child(body, 0), (TSNode){{0}, 0, 0})
                : check_strings(&c, first, last);
    if (rc < 0)
        goto out;
    char lock[300], unit[16];
    rc = afd_fix_lock_for(&c, fn, site, owner, lock, sizeof lock);
    if (rc < 0)
        goto out;
    afd_fix_indent_unit(&c, fn, irow, unit);
    const char *at;
    int ind = (int)afd_fix_line_indent(&c, irow, &at);
    int cl = (int)(ts_node_end_byte(cond) - ts_node_start_byte(cond));
    const char *cs = src + ts_node_start_byte(cond);
    if (inside) {
        /* from the row after the header: a comment that opens the body is not in the block's node */
        uint32_t b0 = irow + 1, b1 = ts_node_end_point(body).row;
        afd_buf *head = &c.edits[b0].before;
        afd_buf_printf(head, "%.*s%sasync with %s:  # affidavit: one task at a time past the check\n", ind,
                       at, unit, lock);
        afd_buf_printf(head, "%.*s%s%sif %.*s:  # affidavit: checked again under the lock\n", ind, at, unit,
                       unit, cl, cs);
        for (uint32_t r = b0; r <= b1 && r < c.n_lines; r++)
            reindent(&c, r, 2, unit);
    } else {
        uint32_t r0 = ts_node_start_point(first).row, r1 = ts_node_end_point(last).row;
        afd_buf *head = &c.edits[r0].before;
        afd_buf_printf(head, "%.*sasync with %s:  # affidavit: one task at a time past the check\n", ind, at,
                       lock);
        afd_buf_printf(head, "%.*s%sif %.*s:  # affidavit: checked again under the lock\n", ind, at, unit, cl,
                       cs);
        afd_buf_printf(head, "%.*s%s%s%.*s\n", ind, at, unit, unit,
                       (int)(ts_node_end_byte(ret) - ts_node_start_byte(ret)), src + ts_node_start_byte(ret));
        for (uint32_t r = r0; r <= r1 && r < c.n_lines; r++)
            c.edits[r].indent = 1;
    }
    rc = afd_fix_emit(&c, out, unit);
out:
    afd_fix_finish(&c);
    return rc;
}

/* ---- SINGLE_FLIGHT ---- */

/* Whether an identifier with the text of `name` occurs in n. */
static int mentions(const char *src, TSNode n, TSNode name)
{
    if (afd_pyast_is(n, AFD_PY_IDENTIFIER)) {
        size_t l = ts_node_end_byte(n) - ts_node_start_byte(n);
        return l == ts_node_end_byte(name) - ts_node_start_byte(name) &&
               !memcmp(src + ts_node_start_byte(n), src + ts_node_start_byte(name), l);
    }
    uint32_t k = ts_node_named_child_count(n);
    for (uint32_t i = 0; i < k; i++)
        if (mentions(src, ts_node_named_child(n, i), name))
            return 1;
    return 0;
}

/* The targets n binds: assignment and for targets, `as` names, walrus names, into out (at most
 * cap identifiers); returns their number. Nested functions and classes bind in their own scope. */
static size_t bound_names(TSNode n, TSNode *out, size_t cap)
{
    size_t k = 0;
    TSNode stack[256];
    size_t sp = 0;
    stack[sp++] = n;
    while (sp && k < cap) {
        TSNode cur = stack[--sp];
        TSNode left = {{0}, 0, 0};
        if (afd_pyast_is(cur, AFD_PY_ASSIGNMENT) || afd_pyast_is(cur, AFD_PY_AUGMENTED_ASSIGNMENT) ||
            afd_pyast_is(cur, AFD_PY_FOR_STATEMENT))
            left = afd_pyast_field(cur, AFD_PYF_LEFT);
        else if (afd_pyast_is(cur, AFD_PY_NAMED_EXPRESSION))
            left = afd_pyast_field(cur, AFD_PYF_NAME);
        else if (afd_pyast_is(cur, AFD_PY_AS_PATTERN))
            left = afd_pyast_field(cur, AFD_PYF_ALIAS);
        if (afd_pyast_is(left, AFD_PY_IDENTIFIER))
            out[k++] = left;
        else if (!ts_node_is_null(left))
            for (uint32_t i = 0; i < ts_node_named_child_count(left) && k < cap; i++)
                if (afd_pyast_is(ts_node_named_child(left, i), AFD_PY_IDENTIFIER))
                    out[k++] = ts_node_named_child(left, i);
        uint32_t m = ts_node_named_child_count(cur);
        for (uint32_t i = 0; i < m && sp < 256; i++) {
            TSNode ch = ts_node_named_child(cur, i);
            if (!afd_pyast_is(ch, AFD_PY_FUNCTION_DEFINITION) && !afd_pyast_is(ch, AFD_PY_CLASS_DEFINITION) &&
                !afd_pyast_is(ch, AFD_PY_LAMBDA))
                stack[sp++] = ch;
        }
    }
    return k;
}

/* Whether n holds a yield, a nonlocal or a global statement outside nested functions. */
static int has_scope_statement(TSNode n)
{
    if (is_type(n, "yield") || afd_pyast_is(n, AFD_PY_NONLOCAL_STATEMENT) ||
        afd_pyast_is(n, AFD_PY_GLOBAL_STATEMENT))
        return 1;
    if (afd_pyast_is(n, AFD_PY_FUNCTION_DEFINITION) || afd_pyast_is(n, AFD_PY_LAMBDA))
        return 0;
    uint32_t k = ts_node_named_child_count(n);
    for (uint32_t i = 0; i < k; i++)
        if (has_scope_statement(ts_node_named_child(n, i)))
            return 1;
    return 0;
}

/* The key: an identifier given as an argument to a call in `lookup` and to one in `store`, or a
 * null node. */
static TSNode shared_argument(const char *src, TSNode lookup, TSNode store)
{
    TSNode stack[256];
    size_t sp = 0;
    stack[sp++] = lookup;
    while (sp) {
        TSNode cur = stack[--sp];
        if (afd_pyast_is(cur, AFD_PY_CALL)) {
            TSNode args = afd_pyast_field(cur, AFD_PYF_ARGUMENTS);
            for (uint32_t i = 0; i < ts_node_named_child_count(args); i++) {
                TSNode a = ts_node_named_child(args, i);
                if (afd_pyast_is(a, AFD_PY_IDENTIFIER) && mentions(src, store, a))
                    return a;
            }
        }
        uint32_t m = ts_node_named_child_count(cur);
        for (uint32_t i = 0; i < m && sp < 256; i++)
            stack[sp++] = ts_node_named_child(cur, i);
    }
    return (TSNode){{0}, 0, 0};
}

/* Whether name is a parameter of fn or bound by a statement of body before `until`. */
static int bound_before(const char *src, TSNode fn, TSNode body, TSNode until, TSNode name)
{
    if (mentions(src, afd_pyast_field(fn, AFD_PYF_PARAMETERS), name))
        return 1;
    for (TSNode s = ts_node_named_child(body, 0); !ts_node_is_null(s) && !ts_node_eq(s, until);
         s = ts_node_next_named_sibling(s)) {
        TSNode b[64];
        size_t n = bound_names(s, b, 64);
        for (size_t i = 0; i < n; i++)
            if (mentions(src, b[i], name))
                return 1;
    }
    return 0;
}

/* The in-flight dict's expression and its creation planned (in `__init__` for a method of a
 * class that has one, at module setup otherwise), into text. */
static void in_flight_dict(fixctx *c, TSNode fn, char *text, size_t cap)
{
    TSNode root = ts_tree_root_node(c->tree);
    int has_asyncio = 0;
    uint32_t setup_row = afd_fix_module_setup_row(root, &has_asyncio, c->src);
    afd_buf *setup = &c->edits[setup_row].before;
    if (!has_asyncio)
        afd_buf_printf(setup, "import asyncio\n");
    TSNode cls = afd_fix_enclosing(fn, AFD_PY_CLASS_DEFINITION);
    TSNode params = afd_pyast_field(fn, AFD_PYF_PARAMETERS);
    TSNode self = ts_node_named_child_count(params) ? ts_node_named_child(params, 0) : params;
    TSNode init = {{0}, 0, 0};
    if (!ts_node_is_null(cls) && afd_fix_text_is(c->src, self, "self")) {
        TSNode cb = afd_pyast_field(cls, AFD_PYF_BODY);
        for (uint32_t i = 0; i < ts_node_named_child_count(cb) && ts_node_is_null(init); i++) {
            TSNode d = ts_node_named_child(cb, i);
            if (afd_pyast_is(d, AFD_PY_FUNCTION_DEFINITION) &&
                afd_fix_text_is(c->src, afd_pyast_field(d, AFD_PYF_NAME), "__init__"))
                init = d;
        }
    }
    if (!ts_node_is_null(init)) {
        TSNode body = afd_pyast_field(init, AFD_PYF_BODY);
        TSNode st0 = ts_node_named_child(body, 0);
        uint32_t row = ts_node_start_point(st0).row;
        if (afd_fix_is_docstring(st0))
            row = ts_node_end_point(st0).row + 1;
        const char *at;
        size_t ind = afd_fix_line_indent(c, ts_node_start_point(st0).row, &at);
        afd_buf_printf(&c->edits[row].before,
                       "%.*sself._affidavit_in_flight = {}  # affidavit: the computation in flight per key\n",
                       (int)ind, at);
        snprintf(text, cap, "self._affidavit_in_flight");
    } else {
        afd_buf_printf(setup, "_affidavit_in_flight = {}  # affidavit: the computation in flight per key\n");
        snprintf(text, cap, "_affidavit_in_flight");
    }
}

int afd_fix_single_flight(const char *src, size_t len, uint32_t read_line, uint32_t write_line, afd_buf *out,
                          char *why, size_t whylen)
{
    fixctx c = {.src = src, .len = len, .why = why, .whylen = whylen};
    int rc = afd_fix_start(&c, out);
    TSNode look, fn;
    if (rc == 0)
        rc = afd_fix_async_statement_at(&c, read_line, "the lookup", "no coroutine to share", &look, &fn);
    if (rc < 0)
        goto out;
    TSNode body = afd_pyast_field(fn, AFD_PYF_BODY);
    look = child_holding(body, read_line - 1);
    TSNode store = write_line && write_line <= c.n_lines ? child_holding(body, write_line - 1) : look;
    if (ts_node_is_null(look) || ts_node_is_null(store) ||
        ts_node_start_byte(store) <= ts_node_start_byte(look)) {
        rc = afd_fix_refuse(&c, "the lookup and the store are not two statements of one function's body");
        goto out;
    }
    /* the cache's shape: `v = <lookup>`, then `if <test of v>: return ...` (a hit returns) */
    TSNode hit = ts_node_next_named_sibling(look);
    TSNode v = afd_pyast_is(ts_node_named_child(look, 0), AFD_PY_ASSIGNMENT)
                   ? afd_pyast_field(ts_node_named_child(look, 0), AFD_PYF_LEFT)
                   : (TSNode){{0}, 0, 0};
    TSNode hbody = field(hit, "consequence");
    if (!afd_pyast_is(v, AFD_PY_IDENTIFIER) || !is_type(hit, "if_statement") ||
        !ts_node_is_null(field(hit, "alternative")) || !mentions(src, field(hit, "condition"), v) ||
        ts_node_named_child_count(hbody) != 1 ||
        !afd_pyast_is(ts_node_named_child(hbody, 0), AFD_PY_RETURN_STATEMENT) ||
        ts_node_start_byte(store) <= ts_node_start_byte(hit)) {
        rc = afd_fix_refuse(&c,
                            "not a cache lookup: `v = <lookup>` followed by `if <test of v>: return ...` and "
                            "then the store");
        goto out;
    }
    TSNode key = shared_argument(src, look, store);
    if (ts_node_is_null(key) || !bound_before(src, fn, body, look, key)) {
        rc = afd_fix_refuse(
            &c, "no key: no name bound before the lookup is given to both the lookup and the store");
        goto out;
    }
    TSNode last = ts_node_named_child(body, ts_node_named_child_count(body) - 1);
    for (TSNode s = look; !ts_node_is_null(s); s = ts_node_next_named_sibling(s)) {
        TSNode b[64];
        size_t n = bound_names(s, b, 64);
        for (size_t i = 0; i < n; i++)
            if (bound_before(src, fn, body, look, b[i])) {
                rc = afd_fix_refuse(&c, "the statements from the lookup on rebind `%.*s`, bound before them",
                                    (int)(ts_node_end_byte(b[i]) - ts_node_start_byte(b[i])),
                                    src + ts_node_start_byte(b[i]));
                goto out;
            }
        if (has_scope_statement(s) || afd_fix_has_multiline_string(s)) {
            rc = afd_fix_refuse(&c,
                                "the statements from the lookup on yield, declare nonlocal or global names, "
                                "or hold a multi-line string");
            goto out;
        }
    }
    uint32_t r0 = ts_node_start_point(look).row, r1 = ts_node_end_point(last).row;
    if (r1 + 1 >= c.n_lines && (len == 0 || src[len - 1] != '\n')) {
        rc = afd_fix_refuse(&c, "the function ends the file without a newline");
        goto out;
    }
    char unit[16], dict[64];
    afd_fix_indent_unit(&c, fn, r0, unit);
    in_flight_dict(&c, fn, dict, sizeof dict);
    const char *at;
    int ind = (int)afd_fix_line_indent(&c, r0, &at);
    int kl = (int)(ts_node_end_byte(key) - ts_node_start_byte(key));
    const char *ks = src + ts_node_start_byte(key);
    afd_buf_printf(
        &c.edits[r0].before,
        "%.*sasync def _affidavit_compute():  # affidavit: the lookup and the computation, run once "
        "per key at a time\n",
        ind, at);
    for (uint32_t r = r0; r <= r1; r++)
        c.edits[r].indent = 1;
    afd_buf *tail = &c.edits[r1 + 1].before;
    afd_buf_printf(tail, "%.*s_affidavit_task = %s.get(%.*s)\n", ind, at, dict, kl, ks);
    afd_buf_printf(
        tail, "%.*sif _affidavit_task is None:  # affidavit: the first miss computes; the others await it\n",
        ind, at);
    afd_buf_printf(tail, "%.*s%s_affidavit_task = asyncio.ensure_future(_affidavit_compute())\n", ind, at,
                   unit);
    afd_buf_printf(tail, "%.*s%s%s[%.*s] = _affidavit_task\n", ind, at, unit, dict, kl, ks);
    afd_buf_printf(tail, "%.*s%s_affidavit_task.add_done_callback(lambda _t: %s.pop(%.*s, None))\n", ind, at,
                   unit, dict, kl, ks);
    afd_buf_printf(tail, "%.*sreturn await _affidavit_task\n", ind, at);
    rc = afd_fix_emit(&c, out, unit);
out:
    afd_fix_finish(&c);
    return rc;
}
