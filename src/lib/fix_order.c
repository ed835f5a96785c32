/* fix_order.c -- the fixes that order two tasks or free the loop (see fix.h): AWAIT_TASK and
 * EVENT_GATE make a reader wait for its writer, EVENT_WAIT waits on the program's own event, and
 * OFFLOAD moves a blocking call to a worker thread. All are line edits planned on fixctx (fix.c). */
#include "fix_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- AWAIT_TASK ---- */

int afd_fix_text_is(const char *src, TSNode n, const char *s)
{
    size_t a = ts_node_start_byte(n), b = ts_node_end_byte(n), l = strlen(s);
    return !ts_node_is_null(n) && b - a == l && memcmp(src + a, s, l) == 0;
}

int afd_fix_same_text(const char *src, TSNode a, TSNode b)
{
    if (ts_node_is_null(a) || ts_node_is_null(b))
        return 0;
    size_t la = ts_node_end_byte(a) - ts_node_start_byte(a), lb = ts_node_end_byte(b) - ts_node_start_byte(b);
    return la == lb && memcmp(src + ts_node_start_byte(a), src + ts_node_start_byte(b), la) == 0;
}

static int text_ends_with(const char *src, TSNode n, const char *s)
{
    size_t a = ts_node_start_byte(n), b = ts_node_end_byte(n), l = strlen(s);
    return !ts_node_is_null(n) && b - a >= l && memcmp(src + b - l, s, l) == 0 &&
           (b - a == l || src[b - l - 1] == '.');
}

/* `name = <spawn>(W(...))`: the name, or a null node. */
static TSNode spawned_handle(const char *src, TSNode assign, const char *writer)
{
    TSNode null = {{0}, 0, 0};
    TSNode left = afd_pyast_field(assign, AFD_PYF_LEFT);
    TSNode right = afd_pyast_field(assign, AFD_PYF_RIGHT);
    if (!afd_pyast_is(left, AFD_PY_IDENTIFIER) || !afd_pyast_is(right, AFD_PY_CALL))
        return null;
    TSNode fn = afd_pyast_field(right, AFD_PYF_FUNCTION);
    if (!text_ends_with(src, fn, "create_task") && !text_ends_with(src, fn, "ensure_future"))
        return null;
    TSNode args = afd_pyast_field(right, AFD_PYF_ARGUMENTS);
    TSNode first = ts_node_named_child_count(args) ? ts_node_named_child(args, 0) : null;
    if (!afd_pyast_is(first, AFD_PY_CALL))
        return null;
    TSNode wfn = afd_pyast_field(first, AFD_PYF_FUNCTION);
    if (!afd_fix_text_is(src, wfn, writer) && !text_ends_with(src, wfn, writer))
        return null;
    return left;
}

int afd_fix_await_task(const char *src, size_t len, uint32_t read_line, const char *writer, afd_buf *out,
                       char *why, size_t whylen)
{
    fixctx c = {.src = src, .len = len, .why = why, .whylen = whylen};
    int rc = afd_fix_start(&c, out);
    if (rc == 0 && (!writer || !*writer))
        rc = afd_fix_refuse(&c, "nothing to await");
    if (rc < 0)
        goto out;
    TSNode stmt, fn;
    rc = afd_fix_async_statement_at(&c, read_line, "the read", "nothing can be awaited there", &stmt, &fn);
    if (rc < 0)
        goto out;
    /* the last handle to the writer's task bound before the statement, anywhere in the function */
    TSNode handle = {{0}, 0, 0};
    TSNode stack[512];
    size_t sp = 0;
    stack[sp++] = afd_pyast_field(fn, AFD_PYF_BODY);
    while (sp) {
        TSNode cur = stack[--sp];
        if (ts_node_start_byte(cur) >= ts_node_start_byte(stmt))
            continue;
        if (afd_pyast_is(cur, AFD_PY_FUNCTION_DEFINITION) || afd_pyast_is(cur, AFD_PY_CLASS_DEFINITION) ||
            afd_pyast_is(cur, AFD_PY_LAMBDA))
            continue; /* another scope's names */
        if (afd_pyast_is(cur, AFD_PY_ASSIGNMENT)) {
            TSNode h = spawned_handle(src, cur, writer);
            if (!ts_node_is_null(h) &&
                (ts_node_is_null(handle) || ts_node_start_byte(h) > ts_node_start_byte(handle)))
                handle = h;
        }
        uint32_t k = ts_node_child_count(cur);
        for (uint32_t i = 0; i < k && sp < 512; i++)
            stack[sp++] = ts_node_child(cur, i);
    }
    if (ts_node_is_null(handle)) {
        rc = afd_fix_refuse(&c, "the reader holds no handle to the writer's task (%s) before the read",
                            writer);
        goto out;
    }
    uint32_t row = ts_node_start_point(stmt).row;
    const char *at;
    size_t ind = afd_fix_line_indent(&c, row, &at);
    afd_buf_printf(&c.edits[row].before,
                   "%.*sawait %.*s  # affidavit: the write this reads happens in that task\n", (int)ind, at,
                   (int)(ts_node_end_byte(handle) - ts_node_start_byte(handle)),
                   src + ts_node_start_byte(handle));
    rc = afd_fix_emit(&c, out, "");
out:
    afd_fix_finish(&c);
    return rc;
}

/* ---- EVENT_GATE ---- */

static TSNode module_function(const char *src, TSNode root, const char *name)
{
    uint32_t k = ts_node_named_child_count(root);
    for (uint32_t i = 0; i < k; i++) {
        TSNode ch = ts_node_named_child(root, i);
        TSNode def =
            afd_pyast_is(ch, AFD_PY_DECORATED_DEFINITION) ? afd_pyast_field(ch, AFD_PYF_DEFINITION) : ch;
        if (afd_pyast_is(def, AFD_PY_FUNCTION_DEFINITION) &&
            afd_fix_text_is(src, afd_pyast_field(def, AFD_PYF_NAME), name))
            return def;
    }
    return (TSNode){{0}, 0, 0};
}

int afd_fix_event_gate(const char *src, size_t len, const char *test, uint32_t write_line, uint32_t read_line,
                       const char *name, int after_loops, afd_buf *out, char *why, size_t whylen)
{
    fixctx c = {.src = src, .len = len, .why = why, .whylen = whylen};
    int rc = afd_fix_start(&c, out);
    if (rc == 0 && (!test || !*test || !name || !*name || strlen(name) > 64))
        rc = afd_fix_refuse(&c, "nothing to gate");
    for (const char *p = name; rc == 0 && *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_'))
            rc = afd_fix_refuse(&c, "the resource is not a plain module name");
    if (rc < 0)
        goto out;
    TSNode root = ts_tree_root_node(c.tree);
    TSNode fn_test = module_function(src, root, test);
    if (ts_node_is_null(fn_test) || !afd_fix_is_async_def(fn_test)) {
        rc = afd_fix_refuse(&c, "the test %s is not an async function of this file", test);
        goto out;
    }
    if (!write_line || !read_line || write_line > c.n_lines || read_line > c.n_lines) {
        rc = afd_fix_refuse(&c, "a line is outside the file");
        goto out;
    }
    TSNode wchain[MAX_CHAIN], rchain[MAX_CHAIN];
    size_t nw = afd_fix_statement_chain(root, write_line - 1, wchain, MAX_CHAIN);
    size_t nr = afd_fix_statement_chain(root, read_line - 1, rchain, MAX_CHAIN);
    if (!nw || !nr) {
        rc = afd_fix_refuse(&c, "no statement holds the write or the read");
        goto out;
    }
    TSNode wst = wchain[nw - 1], rst = rchain[nr - 1];
    if (after_loops) {
        /* the last of repeated writes: set once the outermost loop around the write, inside the
         * writer's function, is done */
        TSNode wfn = afd_fix_enclosing(wst, AFD_PY_FUNCTION_DEFINITION);
        for (size_t i = 0; i < nw; i++)
            if ((afd_pyast_is(wchain[i], AFD_PY_FOR_STATEMENT) ||
                 afd_pyast_is(wchain[i], AFD_PY_WHILE_STATEMENT)) &&
                !ts_node_is_null(wfn) && ts_node_start_byte(wchain[i]) > ts_node_start_byte(wfn)) {
                wst = wchain[i];
                break;
            }
    }
    TSNode rfn = afd_fix_enclosing(rst, AFD_PY_FUNCTION_DEFINITION);
    if (ts_node_is_null(rfn) || !afd_fix_is_async_def(rfn)) {
        rc = afd_fix_refuse(&c, "the read is not in an async function: it cannot wait");
        goto out;
    }
    if (ts_node_eq(wst, rst)) {
        rc = afd_fix_refuse(&c, "the write and the read are one statement");
        goto out;
    }
    char ev[128];
    snprintf(ev, sizeof ev, "_affidavit_%s_written", name);
    /* module level: the name exists, and is None outside the test */
    int has_asyncio = 0;
    uint32_t setup_row = afd_fix_module_setup_row(root, &has_asyncio, src);
    if (!has_asyncio)
        afd_buf_printf(&c.edits[setup_row].before, "import asyncio\n");
    afd_buf_printf(&c.edits[setup_row].before,
                   "%s = None  # affidavit: set once %s is written; created per run by %s\n", ev, name, test);
    /* the test: a new Event at its start (after a docstring) */
    TSNode body = afd_pyast_field(fn_test, AFD_PYF_BODY);
    uint32_t k = ts_node_named_child_count(body);
    TSNode st0 = k ? ts_node_named_child(body, 0) : body;
    uint32_t row = ts_node_start_point(st0).row;
    if (k > 1 && afd_fix_is_docstring(st0))
        row = ts_node_end_point(st0).row + 1;
    const char *at;
    size_t ind = afd_fix_line_indent(&c, ts_node_start_point(st0).row, &at);
    afd_buf_printf(&c.edits[row].before,
                   "%.*sglobal %s\n%.*s%s = asyncio.Event()  # affidavit: one per run\n", (int)ind, at, ev,
                   (int)ind, at, ev);
    /* after the write: set it */
    uint32_t wrow = ts_node_end_point(wst).row + 1;
    size_t wind = afd_fix_line_indent(&c, ts_node_start_point(wst).row, &at);
    afd_buf_printf(&c.edits[wrow].before,
                   "%.*sif %s is not None:  # affidavit: the write is done\n%.*s    %s.set()\n", (int)wind,
                   at, ev, (int)wind, at, ev);
    /* before the read: wait for it */
    uint32_t rrow = ts_node_start_point(rst).row;
    size_t rind = afd_fix_line_indent(&c, rrow, &at);
    afd_buf_printf(
        &c.edits[rrow].before,
        "%.*sif %s is not None:  # affidavit: read only after the write\n%.*s    await %s.wait()\n",
        (int)rind, at, ev, (int)rind, at, ev);
    rc = afd_fix_emit(&c, out, "");
out:
    afd_fix_finish(&c);
    return rc;
}

/* ---- EVENT_WAIT ---- */

/* The first `X.is_set()` call (no arguments) inside n, or a null node. */
static TSNode find_is_set(const char *src, TSNode n)
{
    if (afd_pyast_is(n, AFD_PY_CALL)) {
        TSNode fn = afd_pyast_field(n, AFD_PYF_FUNCTION);
        TSNode args = afd_pyast_field(n, AFD_PYF_ARGUMENTS);
        if (afd_pyast_is(fn, AFD_PY_ATTRIBUTE) &&
            afd_fix_text_is(src, afd_pyast_field(fn, AFD_PYF_ATTRIBUTE), "is_set") &&
            !ts_node_is_null(args) && ts_node_named_child_count(args) == 0)
            return afd_pyast_field(fn, AFD_PYF_OBJECT);
    }
    if (afd_pyast_is(n, AFD_PY_LAMBDA) || afd_pyast_is(n, AFD_PY_FUNCTION_DEFINITION) ||
        afd_pyast_is(n, AFD_PY_CLASS_DEFINITION) || afd_pyast_is(n, AFD_PY_BLOCK))
        return (TSNode){{0}, 0, 0}; /* not the statement's own test */
    uint32_t k = ts_node_named_child_count(n);
    for (uint32_t i = 0; i < k; i++) {
        TSNode r = find_is_set(src, ts_node_named_child(n, i));
        if (!ts_node_is_null(r))
            return r;
    }
    return (TSNode){{0}, 0, 0};
}

int afd_fix_event_wait(const char *src, size_t len, uint32_t read_line, afd_buf *out, char *why,
                       size_t whylen)
{
    fixctx c = {.src = src, .len = len, .why = why, .whylen = whylen};
    int rc = afd_fix_start(&c, out);
    if (rc < 0)
        goto out;
    TSNode st, fn;
    if ((rc = afd_fix_async_statement_at(&c, read_line, "the check", "it cannot wait", &st, &fn)) < 0)
        goto out;
    TSNode ev = find_is_set(src, st);
    if (ts_node_is_null(ev)) {
        rc = afd_fix_refuse(&c, "the statement at line %u does not test `<event>.is_set()`", read_line);
        goto out;
    }
    uint32_t a = ts_node_start_byte(ev), b = ts_node_end_byte(ev);
    if (ts_node_start_point(ev).row != ts_node_end_point(ev).row || b - a > 200) {
        rc = afd_fix_refuse(&c, "the event's expression spans lines");
        goto out;
    }
    uint32_t row = ts_node_start_point(st).row;
    const char *at;
    size_t ind = afd_fix_line_indent(&c, row, &at);
    afd_buf_printf(&c.edits[row].before, "%.*sawait %.*s.wait()  # affidavit: check only once it is set\n",
                   (int)ind, at, (int)(b - a), src + a);
    rc = afd_fix_emit(&c, out, "");
out:
    afd_fix_finish(&c);
    return rc;
}

/* ---- OFFLOAD ---- */

int afd_fix_offload(const char *src, size_t len, uint32_t line, afd_buf *out, char *why, size_t whylen)
{
    fixctx c = {.src = src, .len = len, .why = why, .whylen = whylen};
    int rc = afd_fix_start(&c, out);
    if (rc < 0)
        goto out;
    TSNode st;
    if ((rc = afd_fix_statement_at(&c, line, "the blocking call", &st)) < 0)
        goto out;
    if (ts_node_is_null(st) || ts_node_start_point(st).row != line - 1 ||
        ts_node_end_point(st).row != line - 1) {
        rc = afd_fix_refuse(&c, "the blocking call at line %u is not a statement of one line", line);
        goto out;
    }
    /* `F(args)` alone, or the right side of `x = F(args)` */
    TSNode call = {{0}, 0, 0};
    if (afd_pyast_is(st, AFD_PY_EXPRESSION_STATEMENT) && ts_node_named_child_count(st) == 1) {
        TSNode e = ts_node_named_child(st, 0);
        if (afd_pyast_is(e, AFD_PY_CALL))
            call = e;
        else if (afd_pyast_is(e, AFD_PY_ASSIGNMENT) &&
                 afd_pyast_is(afd_pyast_field(e, AFD_PYF_RIGHT), AFD_PY_CALL))
            call = afd_pyast_field(e, AFD_PYF_RIGHT);
    }
    TSNode fnx = ts_node_is_null(call) ? call : afd_pyast_field(call, AFD_PYF_FUNCTION);
    TSNode args = ts_node_is_null(call) ? call : afd_pyast_field(call, AFD_PYF_ARGUMENTS);
    if (ts_node_is_null(fnx) || !afd_pyast_is(args, AFD_PY_ARGUMENT_LIST)) {
        rc = afd_fix_refuse(&c, "line %u is not a plain call `F(...)` or `x = F(...)`", line);
        goto out;
    }
    TSNode fn = afd_fix_enclosing(st, AFD_PY_FUNCTION_DEFINITION);
    if (ts_node_is_null(fn) || !afd_fix_is_async_def(fn)) {
        rc = afd_fix_refuse(
            &c, "the blocking call is not made by an async function (it is in a plain function its "
                "coroutine calls): offloading the caller is not synthesized");
        goto out;
    }
    uint32_t cs = ts_node_start_byte(call), ce = ts_node_end_byte(call);
    uint32_t fs = ts_node_start_byte(fnx), fe = ts_node_end_byte(fnx);
    uint32_t as = ts_node_start_byte(args) + 1, ae = ts_node_end_byte(args) - 1; /* inside the parentheses */
    int has_args = ts_node_named_child_count(args) > 0;
    uint32_t row = line - 1;
    const char *ls = src + c.line_start[row];
    const char *le = src + c.line_start[row + 1];
    afd_buf *b = &c.edits[row].before;
    afd_buf_put(b, ls, (size_t)(src + cs - ls));
    afd_buf_printf(b, "await asyncio.to_thread(%.*s%s%.*s)", (int)(fe - fs), src + fs, has_args ? ", " : "",
                   has_args ? (int)(ae - as) : 0, src + as);
    afd_buf_put(b, src + ce, (size_t)(le - (src + ce)));
    if (b->len && b->data[b->len - 1] != '\n')
        afd_buf_put_u8(b, '\n');
    c.edits[row].omit = 1;
    int has_asyncio = 0;
    uint32_t setup_row = afd_fix_module_setup_row(ts_tree_root_node(c.tree), &has_asyncio, src);
    if (!has_asyncio)
        afd_buf_printf(&c.edits[setup_row].before, "import asyncio\n");
    rc = afd_fix_emit(&c, out, "");
out:
    afd_fix_finish(&c);
    return rc;
}
