/* fix.c -- fixes as minimal text edits of the user's source (see fix.h).
 *
 * The edits are line-based: whole lines are inserted before a given line or replace it, and lines
 * are indented or dedented by one unit. Nothing else of the source is touched, so comments, blank
 * lines and formatting stay as they were, and the result is easy to show as a unified diff.
 *
 * This file holds what every fix shares (the parse, the line split, the edit plan and its output,
 * the statement chain that finds where a line sits) and the regression test; the fixes are in
 * fix_lock.c and fix_order.c. */
#include "fix_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int afd_fix_refuse(fixctx *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (c->why && c->whylen)
        vsnprintf(c->why, c->whylen, fmt, ap);
    va_end(ap);
    return AFD_EINVAL;
}

/* The chain of (statement, block) pairs from the module down to the innermost statement holding
 * row: chain[k] is a statement, a direct child of a block (or of the module). */
size_t afd_fix_statement_chain(TSNode root, uint32_t row, TSNode *chain, size_t cap)
{
    size_t n = 0;
    TSNode node = root;
    for (;;) {
        uint32_t k = ts_node_named_child_count(node);
        TSNode next = {{0}, 0, 0};
        int found = 0;
        for (uint32_t i = 0; i < k; i++) {
            TSNode ch = ts_node_named_child(node, i);
            if (ts_node_start_point(ch).row <= row && row <= ts_node_end_point(ch).row) {
                next = ch;
                found = 1;
                break;
            }
        }
        if (!found)
            return n;
        if ((afd_pyast_is(node, AFD_PY_BLOCK) || afd_pyast_is(node, AFD_PY_MODULE)) && n < cap)
            chain[n++] = next;
        node = next;
    }
}

size_t afd_fix_line_indent(const fixctx *c, uint32_t row, const char **at)
{
    const char *p = c->src + c->line_start[row];
    const char *end = c->src + c->line_start[row + 1];
    size_t n = 0;
    while (p + n < end && (p[n] == ' ' || p[n] == '\t'))
        n++;
    if (at)
        *at = p;
    return n;
}

static int multiline_string_enter(void *found, TSNode n)
{
    if (afd_pyast_is(n, AFD_PY_STRING) && ts_node_start_point(n).row != ts_node_end_point(n).row) {
        *(int *)found = 1;
        return AFD_PYAST_STOP;
    }
    return AFD_PYAST_DESCEND;
}

int afd_fix_has_multiline_string(TSNode n)
{
    int found = 0;
    afd_pyast_walk(NULL, n, multiline_string_enter, NULL, &found); /* it allocates nothing that can fail */
    return found;
}

TSNode afd_fix_enclosing(TSNode n, enum afd_py_kind kind)
{
    for (TSNode p = ts_node_parent(n); !ts_node_is_null(p); p = ts_node_parent(p))
        if (afd_pyast_is(p, kind))
            return p;
    return (TSNode){{0}, 0, 0};
}

int afd_fix_is_async_def(TSNode fn)
{
    return ts_node_child_count(fn) > 0 && afd_pyast_is_token(ts_node_child(fn, 0), "async");
}

static int split_lines(fixctx *c)
{
    size_t n = 1;
    for (size_t i = 0; i < c->len; i++)
        n += c->src[i] == '\n';
    c->line_start = malloc((n + 1) * sizeof *c->line_start);
    c->edits = calloc(n + 1, sizeof *c->edits);
    if (!c->line_start || !c->edits)
        return AFD_ENOMEM;
    size_t k = 0;
    c->line_start[k++] = 0;
    for (size_t i = 0; i < c->len; i++)
        if (c->src[i] == '\n' && k < n)
            c->line_start[k++] = i + 1;
    c->n_lines = k;
    c->line_start[k] = c->len;
    for (size_t i = 0; i <= n; i++)
        afd_buf_init(&c->edits[i].before);
    return 0;
}

/* Parses the source and splits it into lines: AFD_ENOMEM, or AFD_EINVAL with a reason when it does
 * not parse (within the time limit) without errors. afd_fix_finish releases everything either way. */
static int fix_parse(fixctx *c)
{
    int bad = 0;
    int rc = afd_pysrc_parse(&c->ps, c->src, c->len, afd_pyast_flag_refused, &bad);
    if (rc == AFD_ENOMEM)
        return rc;
    c->tree = c->ps.tree;
    if (rc < 0 || bad || ts_node_has_error(ts_tree_root_node(c->tree)))
        return afd_fix_refuse(c, "the source has syntax errors (or could not be parsed in time)");
    return split_lines(c);
}

/* The edited text: each line's insertions, then the line, indented by unit when marked. */
int afd_fix_emit(const fixctx *c, afd_buf *out, const char *unit)
{
    for (size_t r = 0; r <= c->n_lines; r++) {
        afd_buf_put(out, c->edits[r].before.data, c->edits[r].before.len);
        if (c->edits[r].before.err)
            return AFD_ENOMEM;
        if (r == c->n_lines)
            break;
        if (c->edits[r].omit)
            continue;
        const char *p = c->src + c->line_start[r];
        size_t l = c->line_start[r + 1] - c->line_start[r];
        int blank = 1;
        for (size_t i = 0; i < l && blank; i++)
            blank = p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r';
        if (c->edits[r].indent && !blank)
            afd_buf_printf(out, "%s", unit);
        if (c->edits[r].drop && !blank) {
            p += c->edits[r].drop;
            l -= c->edits[r].drop;
        }
        afd_buf_put(out, p, l);
    }
    return out->err ? AFD_ENOMEM : 0;
}

void afd_fix_finish(fixctx *c)
{
    if (c->edits)
        for (size_t i = 0; i <= c->n_lines; i++)
            afd_buf_finish(&c->edits[i].before);
    free(c->edits);
    free(c->line_start);
    afd_pysrc_finish(&c->ps);
}

/* Resets the outputs and parses the source (refusing one too large to edit). */
int afd_fix_start(fixctx *c, afd_buf *out)
{
    out->len = 0;
    if (c->why && c->whylen)
        c->why[0] = 0;
    if (c->len > AFD_PYSCAN_MAX_SOURCE)
        return afd_fix_refuse(c, "the source is too large to edit");
    return fix_parse(c);
}

int afd_fix_is_docstring(TSNode stmt)
{
    return afd_pyast_is(stmt, AFD_PY_EXPRESSION_STATEMENT) && ts_node_named_child_count(stmt) == 1 &&
           afd_pyast_is(ts_node_named_child(stmt, 0), AFD_PY_STRING);
}

/* The innermost statement holding the 1-based line into *st (a null node when no statement holds
 * it), or AFD_EINVAL with "<what> is outside the file" when the line is not in the file. */
int afd_fix_statement_at(fixctx *c, uint32_t line, const char *what, TSNode *st)
{
    if (!line || line > c->n_lines)
        return afd_fix_refuse(c, "%s is outside the file", what);
    TSNode chain[MAX_CHAIN];
    size_t n = afd_fix_statement_chain(ts_tree_root_node(c->tree), line - 1, chain, MAX_CHAIN);
    *st = n ? chain[n - 1] : (TSNode){{0}, 0, 0};
    return 0;
}

/* The innermost statement holding the 1-based line, which must be in an async function: into *st
 * and *fn, or AFD_EINVAL with a reason naming what the line holds ("the read"), and for a plain
 * function what cannot be done there. */
int afd_fix_async_statement_at(fixctx *c, uint32_t line, const char *what, const char *cannot, TSNode *st,
                               TSNode *fn)
{
    int rc = afd_fix_statement_at(c, line, what, st);
    if (rc < 0)
        return rc;
    if (ts_node_is_null(*st))
        return afd_fix_refuse(c, "no statement holds %s", what);
    *fn = afd_fix_enclosing(*st, AFD_PY_FUNCTION_DEFINITION);
    if (ts_node_is_null(*fn) || !afd_fix_is_async_def(*fn))
        return afd_fix_refuse(c, "%s is not in an async function: %s", what, cannot);
    return 0;
}

/* The row before which module-level setup goes: after the last top-level import, else after the
 * module docstring, else at the top. */
uint32_t afd_fix_module_setup_row(TSNode module, int *has_asyncio, const char *src)
{
    uint32_t row = 0;
    uint32_t k = ts_node_named_child_count(module);
    *has_asyncio = 0;
    for (uint32_t i = 0; i < k; i++) {
        TSNode ch = ts_node_named_child(module, i);
        if (i == 0 && afd_fix_is_docstring(ch))
            row = ts_node_end_point(ch).row + 1;
        if (afd_pyast_is(ch, AFD_PY_IMPORT_STATEMENT) || afd_pyast_is(ch, AFD_PY_IMPORT_FROM_STATEMENT) ||
            afd_pyast_is(ch, AFD_PY_FUTURE_IMPORT_STATEMENT)) {
            row = ts_node_end_point(ch).row + 1;
            if (afd_pyast_is(ch, AFD_PY_IMPORT_STATEMENT)) {
                uint32_t m = ts_node_named_child_count(ch);
                for (uint32_t j = 0; j < m; j++) {
                    TSNode nm = ts_node_named_child(ch, j);
                    uint32_t a = ts_node_start_byte(nm), b = ts_node_end_byte(nm);
                    if (afd_pyast_is(nm, AFD_PY_DOTTED_NAME) && b - a == 7 &&
                        memcmp(src + a, "asyncio", 7) == 0)
                        *has_asyncio = 1;
                }
            }
        }
    }
    return row;
}

/* ---- the regression test ---- */

int afd_fix_regression_test(const char *src, size_t len, const char *test, const char *token,
                            const char *summary, afd_buf *out, char *why, size_t whylen)
{
    fixctx c = {.src = src, .len = len, .why = why, .whylen = whylen};
    int rc = afd_fix_start(&c, out);
    if (rc == 0 && (!test || !*test || strchr(test, '[') || !token))
        rc = afd_fix_refuse(&c, "the test is parametrized or unnamed");
    if (rc < 0)
        goto out;
    TSNode root = ts_tree_root_node(c.tree);
    int found = 0, has_affidavit = 0;
    uint32_t k = ts_node_named_child_count(root);
    for (uint32_t i = 0; i < k; i++) {
        TSNode ch = ts_node_named_child(root, i);
        if (afd_pyast_is(ch, AFD_PY_IMPORT_STATEMENT)) {
            uint32_t m = ts_node_named_child_count(ch);
            for (uint32_t j = 0; j < m; j++)
                has_affidavit |= afd_fix_text_is(src, ts_node_named_child(ch, j), "affidavit");
        }
        TSNode def =
            afd_pyast_is(ch, AFD_PY_DECORATED_DEFINITION) ? afd_pyast_field(ch, AFD_PYF_DEFINITION) : ch;
        if (!afd_pyast_is(def, AFD_PY_FUNCTION_DEFINITION) ||
            !afd_fix_text_is(src, afd_pyast_field(def, AFD_PYF_NAME), test))
            continue;
        TSNode params = afd_pyast_field(def, AFD_PYF_PARAMETERS);
        if (!afd_fix_is_async_def(def)) {
            rc = afd_fix_refuse(&c, "%s is not an async test", test);
            goto out;
        }
        if (ts_node_named_child_count(params) != 0) {
            rc = afd_fix_refuse(&c, "%s takes arguments (fixtures): the replay cannot pass them on", test);
            goto out;
        }
        found = 1;
    }
    if (!found) {
        rc = afd_fix_refuse(&c, "no module-level test function %s in the file", test);
        goto out;
    }
    int dummy;
    uint32_t setup_row = afd_fix_module_setup_row(root, &dummy, src);
    if (!has_affidavit)
        afd_buf_printf(&c.edits[setup_row].before, "import affidavit\n");
    rc = afd_fix_emit(&c, out, "");
    if (out->len && out->data[out->len - 1] != '\n')
        afd_buf_printf(out, "\n");
    /* the summary goes into a comment line: no line breaks (nor quotes or backslashes) */
    char clean[200];
    size_t ci = 0;
    for (const char *p = summary ? summary : ""; *p && ci + 1 < sizeof clean; p++)
        clean[ci++] = *p == '"' ? '\'' : *p == '\\' ? '/' : (*p == '\n' || *p == '\r') ? ' ' : *p;
    clean[ci] = 0;
    /* the original coroutine function itself is replayed, so its task keeps the label the
     * schedule's delays name ("test_x#0"), as it had in the run that failed */
    afd_buf_printf(out,
                   "\n\n# affidavit: %s replayed under the schedule that made it fail (%s)\n"
                   "%s_affidavit_replay = affidavit.replay(\"%s\")(%s)\n",
                   test, clean, test, token, test);
    if (out->err)
        rc = AFD_ENOMEM;
out:
    afd_fix_finish(&c);
    return rc;
}
