/* fix.c -- fixes as minimal text edits of the user's source (see fix.h).
 *
 * The edits are line-based: whole lines are inserted before a given line or replace it, and lines
 * are indented or dedented by one unit. Nothing else of the source is touched, so comments, blank lines and formatting stay
 * as they were, and the result is easy to show as a unified diff. */
#include "fix.h"
#include "afd.h"
#include "pyast.h"
#include "pyscan.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CHAIN 256u
#define MAX_SITES 16u

typedef struct line_edit {
    afd_buf before; /* lines inserted before this line */
    uint8_t indent; /* indent this line by one unit */
    uint8_t omit;   /* leave this line out (its replacement, if any, is in `before`) */
    uint8_t drop;   /* remove this many leading whitespace bytes (a dedent; checked when planned) */
} line_edit;

typedef struct fixctx {
    afd_pysrc ps;     /* Owned (fix_parse .. fix_finish); its tree is parsed from a blanked copy */
    TSTree *tree;     /* Borrowed: ps.tree. */
    const char *src;  /* the real source: the text edited and written out */
    size_t len;
    size_t n_lines;
    size_t *line_start; /* byte offset of each line; line_start[n_lines] == len */
    line_edit *edits;
    char *why;
    size_t whylen;
} fixctx;

static int refuse(fixctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int refuse(fixctx *c, const char *fmt, ...)
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
static size_t statement_chain(TSNode root, uint32_t row, TSNode *chain, size_t cap)
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

static size_t line_indent(const fixctx *c, uint32_t row, const char **at)
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

static int has_multiline_string(TSNode n)
{
    int found = 0;
    afd_pyast_walk(NULL, n, multiline_string_enter, NULL, &found); /* it allocates nothing that can fail */
    return found;
}

static TSNode enclosing(TSNode n, enum afd_py_kind kind)
{
    for (TSNode p = ts_node_parent(n); !ts_node_is_null(p); p = ts_node_parent(p))
        if (afd_pyast_is(p, kind))
            return p;
    return (TSNode){{0}, 0, 0};
}

static int is_async_def(TSNode fn)
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
 * not parse (within the time limit) without errors. fix_finish releases everything either way. */
static int fix_parse(fixctx *c)
{
    int bad = 0;
    int rc = afd_pysrc_parse(&c->ps, c->src, c->len, afd_pyast_flag_refused, &bad);
    if (rc == AFD_ENOMEM)
        return rc;
    c->tree = c->ps.tree;
    if (rc < 0 || bad || ts_node_has_error(ts_tree_root_node(c->tree)))
        return refuse(c, "the source has syntax errors (or could not be parsed in time)");
    return split_lines(c);
}

/* The edited text: each line's insertions, then the line, indented by unit when marked. */
static int fix_emit(const fixctx *c, afd_buf *out, const char *unit)
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

static void fix_finish(fixctx *c)
{
    if (c->edits)
        for (size_t i = 0; i <= c->n_lines; i++)
            afd_buf_finish(&c->edits[i].before);
    free(c->edits);
    free(c->line_start);
    afd_pysrc_finish(&c->ps);
}

/* Resets the outputs and parses the source (refusing one too large to edit). */
static int fix_start(fixctx *c, afd_buf *out)
{
    out->len = 0;
    if (c->why && c->whylen)
        c->why[0] = 0;
    if (c->len > AFD_PYSCAN_MAX_SOURCE)
        return refuse(c, "the source is too large to edit");
    return fix_parse(c);
}

static int is_docstring(TSNode stmt)
{
    return afd_pyast_is(stmt, AFD_PY_EXPRESSION_STATEMENT) && ts_node_named_child_count(stmt) == 1 &&
           afd_pyast_is(ts_node_named_child(stmt, 0), AFD_PY_STRING);
}

/* The row before which module-level setup goes: after the last top-level import, else after the
 * module docstring, else at the top. */
static uint32_t module_setup_row(TSNode module, int *has_asyncio, const char *src)
{
    uint32_t row = 0;
    uint32_t k = ts_node_named_child_count(module);
    *has_asyncio = 0;
    for (uint32_t i = 0; i < k; i++) {
        TSNode ch = ts_node_named_child(module, i);
        if (i == 0 && is_docstring(ch))
            row = ts_node_end_point(ch).row + 1;
        if (afd_pyast_is(ch, AFD_PY_IMPORT_STATEMENT) || afd_pyast_is(ch, AFD_PY_IMPORT_FROM_STATEMENT) ||
            afd_pyast_is(ch, AFD_PY_FUTURE_IMPORT_STATEMENT)) {
            row = ts_node_end_point(ch).row + 1;
            if (afd_pyast_is(ch, AFD_PY_IMPORT_STATEMENT)) {
                uint32_t m = ts_node_named_child_count(ch);
                for (uint32_t j = 0; j < m; j++) {
                    TSNode nm = ts_node_named_child(ch, j);
                    uint32_t a = ts_node_start_byte(nm), b = ts_node_end_byte(nm);
                    if (afd_pyast_is(nm, AFD_PY_DOTTED_NAME) && b - a == 7 && memcmp(src + a, "asyncio", 7) == 0)
                        *has_asyncio = 1;
                }
            }
        }
    }
    return row;
}

static TSNode find_init(TSNode class_body, const char *src)
{
    uint32_t k = ts_node_named_child_count(class_body);
    for (uint32_t i = 0; i < k; i++) {
        TSNode ch = ts_node_named_child(class_body, i);
        TSNode def = afd_pyast_is(ch, AFD_PY_DECORATED_DEFINITION) ? afd_pyast_field(ch, AFD_PYF_DEFINITION) : ch;
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

int afd_fix_lock(const char *src, size_t len, const afd_lock_site *sites, size_t n, afd_buf *out, char *why,
                 size_t whylen)
{
    fixctx c = {.src = src, .len = len, .why = why, .whylen = whylen};
    char *locks[MAX_SITES] = {0};
    int rc = fix_start(&c, out);
    if (rc == 0 && (n == 0 || n > MAX_SITES))
        rc = refuse(&c, "no update site given");
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
            rc = refuse(&c, "a line is outside the file");
            goto out;
        }
        lens[m] = statement_chain(root, sites[i].read_line - 1, chains[m], MAX_CHAIN);
        m++;
        lens[m] = statement_chain(root, sites[i].write_line - 1, chains[m], MAX_CHAIN);
        m++;
    }
    size_t depth = 0;
    for (;; depth++) {
        int same = 1;
        for (size_t k = 0; k < m && same; k++)
            same = depth < lens[k] && ts_node_eq(ts_node_parent(chains[k][depth]), ts_node_parent(chains[0][depth]));
        if (!same)
            break;
    }
    if (depth == 0) {
        rc = refuse(&c, "the read and the write are not in one block of code");
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
        fn = enclosing(block, AFD_PY_FUNCTION_DEFINITION);
    if (ts_node_is_null(fn) || !is_async_def(fn)) {
        rc = refuse(&c, "the read and the write are not in one async function: an async with cannot go there");
        goto out;
    }
    uint32_t r0 = ts_node_start_point(first).row, r1 = ts_node_end_point(last).row;
    for (TSNode s = first;; s = ts_node_next_named_sibling(s)) {
        if (has_multiline_string(s)) {
            rc = refuse(&c, "a multi-line string lies in the statements to guard: re-indenting it would change it");
            goto out;
        }
        if (ts_node_eq(s, last) || ts_node_is_null(s))
            break;
    }
    /* the indentation: the interval's own, and one unit (the body's relative to its def) */
    const char *at;
    size_t ind = line_indent(&c, r0, &at);
    size_t def_ind = line_indent(&c, ts_node_start_point(fn).row, NULL);
    char unit[16];
    if (ind > 0 && at[0] == '\t') {
        snprintf(unit, sizeof unit, "\t");
    } else {
        size_t u = 4;
        TSNode body = afd_pyast_field(fn, AFD_PYF_BODY);
        if (!ts_node_is_null(body) && ts_node_named_child_count(body) > 0) {
            size_t bi = line_indent(&c, ts_node_start_point(ts_node_named_child(body, 0)).row, NULL);
            if (bi > def_ind && bi - def_ind <= 8)
                u = bi - def_ind;
        }
        memset(unit, ' ', u);
        unit[u] = 0;
    }
    /* the locks, one per resource, created where the resource lives */
    TSNode cls = enclosing(fn, AFD_PY_CLASS_DEFINITION);
    TSNode init = {{0}, 0, 0};
    if (!ts_node_is_null(cls))
        init = find_init(afd_pyast_field(cls, AFD_PYF_BODY), src);
    int has_asyncio = 0;
    uint32_t setup_row = module_setup_row(root, &has_asyncio, src);
    size_t n_locks = 0;
    for (size_t i = 0; i < n; i++) {
        char text[300];
        if (sites[i].root == AFD_ROOT_GLOBAL) {
            snprintf(text, sizeof text, "_affidavit_lock_%s", sites[i].name);
        } else if (sites[i].root == AFD_ROOT_SELF) {
            if (ts_node_is_null(cls)) {
                rc = refuse(&c, "an attribute of self outside a class");
                goto out;
            }
            if (!ts_node_is_null(init))
                snprintf(text, sizeof text, "self._affidavit_lock_%s", sites[i].name);
            else
                snprintf(text, sizeof text, "self.__dict__.setdefault(\"_affidavit_lock_%s\", asyncio.Lock())",
                         sites[i].name);
        } else {
            rc = refuse(&c, "only module state and instance state get a lock");
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
        /* where the lock is created */
        if (sites[i].root == AFD_ROOT_GLOBAL) {
            afd_buf *b = &c.edits[setup_row].before;
            if (!has_asyncio) {
                afd_buf_printf(b, "import asyncio\n");
                has_asyncio = 1;
            }
            afd_buf_printf(b, "%s = asyncio.Lock()  # affidavit: guards %s (%s)\n", text, sites[i].name,
                           sites[i].cause ? sites[i].cause : "lost update");
        } else if (!ts_node_is_null(init)) {
            TSNode body = afd_pyast_field(init, AFD_PYF_BODY);
            uint32_t k = ts_node_named_child_count(body);
            TSNode st0 = k ? ts_node_named_child(body, 0) : body;
            uint32_t row = ts_node_start_point(st0).row;
            if (k && is_docstring(st0))
                row = ts_node_end_point(st0).row + 1;
            size_t bind = line_indent(&c, ts_node_start_point(st0).row, NULL);
            afd_buf_printf(&c.edits[row].before, "%.*s%s = asyncio.Lock()  # affidavit: guards self.%s (%s)\n",
                           (int)bind, c.src + c.line_start[ts_node_start_point(st0).row], text, sites[i].name,
                           sites[i].cause ? sites[i].cause : "lost update");
            if (!has_asyncio) {
                afd_buf_printf(&c.edits[setup_row].before, "import asyncio\n");
                has_asyncio = 1;
            }
        } else if (!has_asyncio) {
            afd_buf_printf(&c.edits[setup_row].before, "import asyncio\n");
            has_asyncio = 1;
        }
    }
    qsort(locks, n_locks, sizeof *locks, lock_cmp); /* one global order: no lock-order cycle */
    afd_buf *head = &c.edits[r0].before;
    afd_buf_printf(head, "%.*sasync with ", (int)ind, at);
    for (size_t k = 0; k < n_locks; k++)
        afd_buf_printf(head, "%s%s", k ? ", " : "", locks[k]);
    afd_buf_printf(head, ":  # affidavit: the read and the write below run as one step\n");
    for (uint32_t r = r0; r <= r1 && r < c.n_lines; r++)
        c.edits[r].indent = 1;
    rc = fix_emit(&c, out, unit);
out:
    for (size_t k = 0; k < MAX_SITES; k++)
        free(locks[k]);
    fix_finish(&c);
    return rc;
}

/* ---- AWAIT_TASK ---- */

static int text_is(const char *src, TSNode n, const char *s)
{
    size_t a = ts_node_start_byte(n), b = ts_node_end_byte(n), l = strlen(s);
    return !ts_node_is_null(n) && b - a == l && memcmp(src + a, s, l) == 0;
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
    if (!text_is(src, wfn, writer) && !text_ends_with(src, wfn, writer))
        return null;
    return left;
}

int afd_fix_await_task(const char *src, size_t len, uint32_t read_line, const char *writer, afd_buf *out,
                       char *why, size_t whylen)
{
    fixctx c = {.src = src, .len = len, .why = why, .whylen = whylen};
    int rc = fix_start(&c, out);
    if (rc == 0 && (!writer || !*writer))
        rc = refuse(&c, "nothing to await");
    if (rc < 0)
        goto out;
    if (!read_line || read_line > c.n_lines) {
        rc = refuse(&c, "the read is outside the file");
        goto out;
    }
    TSNode chain[MAX_CHAIN];
    size_t n = statement_chain(ts_tree_root_node(c.tree), read_line - 1, chain, MAX_CHAIN);
    if (!n) {
        rc = refuse(&c, "no statement holds the read");
        goto out;
    }
    TSNode stmt = chain[n - 1];
    TSNode fn = enclosing(stmt, AFD_PY_FUNCTION_DEFINITION);
    if (ts_node_is_null(fn) || !is_async_def(fn)) {
        rc = refuse(&c, "the read is not in an async function: nothing can be awaited there");
        goto out;
    }
    /* the last handle to the writer's task bound before the statement, anywhere in the function */
    TSNode handle = {{0}, 0, 0};
    TSNode stack[512];
    size_t sp = 0;
    stack[sp++] = afd_pyast_field(fn, AFD_PYF_BODY);
    while (sp) {
        TSNode cur = stack[--sp];
        if (ts_node_start_byte(cur) >= ts_node_start_byte(stmt))
            continue;
        if (afd_pyast_is(cur, AFD_PY_FUNCTION_DEFINITION) || afd_pyast_is(cur, AFD_PY_CLASS_DEFINITION) || afd_pyast_is(cur, AFD_PY_LAMBDA))
            continue; /* another scope's names */
        if (afd_pyast_is(cur, AFD_PY_ASSIGNMENT)) {
            TSNode h = spawned_handle(src, cur, writer);
            if (!ts_node_is_null(h) && (ts_node_is_null(handle) || ts_node_start_byte(h) > ts_node_start_byte(handle)))
                handle = h;
        }
        uint32_t k = ts_node_child_count(cur);
        for (uint32_t i = 0; i < k && sp < 512; i++)
            stack[sp++] = ts_node_child(cur, i);
    }
    if (ts_node_is_null(handle)) {
        rc = refuse(&c, "the reader holds no handle to the writer's task (%s) before the read", writer);
        goto out;
    }
    uint32_t row = ts_node_start_point(stmt).row;
    const char *at;
    size_t ind = line_indent(&c, row, &at);
    afd_buf_printf(&c.edits[row].before, "%.*sawait %.*s  # affidavit: the write this reads happens in that task\n",
                   (int)ind, at, (int)(ts_node_end_byte(handle) - ts_node_start_byte(handle)),
                   src + ts_node_start_byte(handle));
    rc = fix_emit(&c, out, "");
out:
    fix_finish(&c);
    return rc;
}

/* ---- the regression test ---- */

int afd_fix_regression_test(const char *src, size_t len, const char *test, const char *token, const char *summary,
                            afd_buf *out, char *why, size_t whylen)
{
    fixctx c = {.src = src, .len = len, .why = why, .whylen = whylen};
    int rc = fix_start(&c, out);
    if (rc == 0 && (!test || !*test || strchr(test, '[') || !token))
        rc = refuse(&c, "the test is parametrized or unnamed");
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
                has_affidavit |= text_is(src, ts_node_named_child(ch, j), "affidavit");
        }
        TSNode def = afd_pyast_is(ch, AFD_PY_DECORATED_DEFINITION) ? afd_pyast_field(ch, AFD_PYF_DEFINITION) : ch;
        if (!afd_pyast_is(def, AFD_PY_FUNCTION_DEFINITION) || !text_is(src, afd_pyast_field(def, AFD_PYF_NAME), test))
            continue;
        TSNode params = afd_pyast_field(def, AFD_PYF_PARAMETERS);
        if (!is_async_def(def)) {
            rc = refuse(&c, "%s is not an async test", test);
            goto out;
        }
        if (ts_node_named_child_count(params) != 0) {
            rc = refuse(&c, "%s takes arguments (fixtures): the replay cannot pass them on", test);
            goto out;
        }
        found = 1;
    }
    if (!found) {
        rc = refuse(&c, "no module-level test function %s in the file", test);
        goto out;
    }
    int dummy;
    uint32_t setup_row = module_setup_row(root, &dummy, src);
    if (!has_affidavit)
        afd_buf_printf(&c.edits[setup_row].before, "import affidavit\n");
    rc = fix_emit(&c, out, "");
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
    fix_finish(&c);
    return rc;
}

/* ---- EVENT_GATE ---- */

static TSNode module_function(const char *src, TSNode root, const char *name)
{
    uint32_t k = ts_node_named_child_count(root);
    for (uint32_t i = 0; i < k; i++) {
        TSNode ch = ts_node_named_child(root, i);
        TSNode def = afd_pyast_is(ch, AFD_PY_DECORATED_DEFINITION) ? afd_pyast_field(ch, AFD_PYF_DEFINITION) : ch;
        if (afd_pyast_is(def, AFD_PY_FUNCTION_DEFINITION) && text_is(src, afd_pyast_field(def, AFD_PYF_NAME), name))
            return def;
    }
    return (TSNode){{0}, 0, 0};
}

int afd_fix_event_gate(const char *src, size_t len, const char *test, uint32_t write_line, uint32_t read_line,
                       const char *name, int after_loops, afd_buf *out, char *why, size_t whylen)
{
    fixctx c = {.src = src, .len = len, .why = why, .whylen = whylen};
    int rc = fix_start(&c, out);
    if (rc == 0 && (!test || !*test || !name || !*name || strlen(name) > 64))
        rc = refuse(&c, "nothing to gate");
    for (const char *p = name; rc == 0 && *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_'))
            rc = refuse(&c, "the resource is not a plain module name");
    if (rc < 0)
        goto out;
    TSNode root = ts_tree_root_node(c.tree);
    TSNode fn_test = module_function(src, root, test);
    if (ts_node_is_null(fn_test) || !is_async_def(fn_test)) {
        rc = refuse(&c, "the test %s is not an async function of this file", test);
        goto out;
    }
    if (!write_line || !read_line || write_line > c.n_lines || read_line > c.n_lines) {
        rc = refuse(&c, "a line is outside the file");
        goto out;
    }
    TSNode wchain[MAX_CHAIN], rchain[MAX_CHAIN];
    size_t nw = statement_chain(root, write_line - 1, wchain, MAX_CHAIN);
    size_t nr = statement_chain(root, read_line - 1, rchain, MAX_CHAIN);
    if (!nw || !nr) {
        rc = refuse(&c, "no statement holds the write or the read");
        goto out;
    }
    TSNode wst = wchain[nw - 1], rst = rchain[nr - 1];
    if (after_loops) {
        /* the last of repeated writes: set once the outermost loop around the write, inside the
         * writer's function, is done */
        TSNode wfn = enclosing(wst, AFD_PY_FUNCTION_DEFINITION);
        for (size_t i = 0; i < nw; i++)
            if ((afd_pyast_is(wchain[i], AFD_PY_FOR_STATEMENT) || afd_pyast_is(wchain[i], AFD_PY_WHILE_STATEMENT)) &&
                !ts_node_is_null(wfn) && ts_node_start_byte(wchain[i]) > ts_node_start_byte(wfn)) {
                wst = wchain[i];
                break;
            }
    }
    TSNode rfn = enclosing(rst, AFD_PY_FUNCTION_DEFINITION);
    if (ts_node_is_null(rfn) || !is_async_def(rfn)) {
        rc = refuse(&c, "the read is not in an async function: it cannot wait");
        goto out;
    }
    if (ts_node_eq(wst, rst)) {
        rc = refuse(&c, "the write and the read are one statement");
        goto out;
    }
    char ev[128];
    snprintf(ev, sizeof ev, "_affidavit_%s_written", name);
    /* module level: the name exists, and is None outside the test */
    int has_asyncio = 0;
    uint32_t setup_row = module_setup_row(root, &has_asyncio, src);
    if (!has_asyncio)
        afd_buf_printf(&c.edits[setup_row].before, "import asyncio\n");
    afd_buf_printf(&c.edits[setup_row].before,
                   "%s = None  # affidavit: set once %s is written; created per run by %s\n", ev, name, test);
    /* the test: a new Event at its start (after a docstring) */
    TSNode body = afd_pyast_field(fn_test, AFD_PYF_BODY);
    uint32_t k = ts_node_named_child_count(body);
    TSNode st0 = k ? ts_node_named_child(body, 0) : body;
    uint32_t row = ts_node_start_point(st0).row;
    if (k > 1 && is_docstring(st0))
        row = ts_node_end_point(st0).row + 1;
    const char *at;
    size_t ind = line_indent(&c, ts_node_start_point(st0).row, &at);
    afd_buf_printf(&c.edits[row].before, "%.*sglobal %s\n%.*s%s = asyncio.Event()  # affidavit: one per run\n",
                   (int)ind, at, ev, (int)ind, at, ev);
    /* after the write: set it */
    uint32_t wrow = ts_node_end_point(wst).row + 1;
    size_t wind = line_indent(&c, ts_node_start_point(wst).row, &at);
    afd_buf_printf(&c.edits[wrow].before, "%.*sif %s is not None:  # affidavit: the write is done\n%.*s    %s.set()\n",
                   (int)wind, at, ev, (int)wind, at, ev);
    /* before the read: wait for it */
    uint32_t rrow = ts_node_start_point(rst).row;
    size_t rind = line_indent(&c, rrow, &at);
    afd_buf_printf(&c.edits[rrow].before,
                   "%.*sif %s is not None:  # affidavit: read only after the write\n%.*s    await %s.wait()\n",
                   (int)rind, at, ev, (int)rind, at, ev);
    rc = fix_emit(&c, out, "");
out:
    fix_finish(&c);
    return rc;
}

/* ---- EVENT_WAIT ---- */

/* The first `X.is_set()` call (no arguments) inside n, or a null node. */
static TSNode find_is_set(const char *src, TSNode n)
{
    if (afd_pyast_is(n, AFD_PY_CALL)) {
        TSNode fn = afd_pyast_field(n, AFD_PYF_FUNCTION);
        TSNode args = afd_pyast_field(n, AFD_PYF_ARGUMENTS);
        if (afd_pyast_is(fn, AFD_PY_ATTRIBUTE) && text_is(src, afd_pyast_field(fn, AFD_PYF_ATTRIBUTE), "is_set") &&
            !ts_node_is_null(args) && ts_node_named_child_count(args) == 0)
            return afd_pyast_field(fn, AFD_PYF_OBJECT);
    }
    if (afd_pyast_is(n, AFD_PY_LAMBDA) || afd_pyast_is(n, AFD_PY_FUNCTION_DEFINITION) || afd_pyast_is(n, AFD_PY_CLASS_DEFINITION) ||
        afd_pyast_is(n, AFD_PY_BLOCK))
        return (TSNode){{0}, 0, 0}; /* not the statement's own test */
    uint32_t k = ts_node_named_child_count(n);
    for (uint32_t i = 0; i < k; i++) {
        TSNode r = find_is_set(src, ts_node_named_child(n, i));
        if (!ts_node_is_null(r))
            return r;
    }
    return (TSNode){{0}, 0, 0};
}

int afd_fix_event_wait(const char *src, size_t len, uint32_t read_line, afd_buf *out, char *why, size_t whylen)
{
    fixctx c = {.src = src, .len = len, .why = why, .whylen = whylen};
    int rc = fix_start(&c, out);
    if (rc < 0)
        goto out;
    if (!read_line || read_line > c.n_lines) {
        rc = refuse(&c, "the check is outside the file");
        goto out;
    }
    TSNode root = ts_tree_root_node(c.tree);
    TSNode chain[MAX_CHAIN];
    size_t n = statement_chain(root, read_line - 1, chain, MAX_CHAIN);
    if (!n) {
        rc = refuse(&c, "no statement holds the check");
        goto out;
    }
    TSNode st = chain[n - 1];
    TSNode fn = enclosing(st, AFD_PY_FUNCTION_DEFINITION);
    if (ts_node_is_null(fn) || !is_async_def(fn)) {
        rc = refuse(&c, "the check is not in an async function: it cannot wait");
        goto out;
    }
    TSNode ev = find_is_set(src, st);
    if (ts_node_is_null(ev)) {
        rc = refuse(&c, "the statement at line %u does not test `<event>.is_set()`", read_line);
        goto out;
    }
    uint32_t a = ts_node_start_byte(ev), b = ts_node_end_byte(ev);
    if (ts_node_start_point(ev).row != ts_node_end_point(ev).row || b - a > 200) {
        rc = refuse(&c, "the event's expression spans lines");
        goto out;
    }
    uint32_t row = ts_node_start_point(st).row;
    const char *at;
    size_t ind = line_indent(&c, row, &at);
    afd_buf_printf(&c.edits[row].before, "%.*sawait %.*s.wait()  # affidavit: check only once it is set\n", (int)ind,
                   at, (int)(b - a), src + a);
    rc = fix_emit(&c, out, "");
out:
    fix_finish(&c);
    return rc;
}

/* ---- LOCK_ORDER ---- */

/* The one item of an `async with NAME:` statement whose header is on one line and whose body
 * starts on the next, or a null node. */
static TSNode async_with_name(TSNode st)
{
    TSNode none = {{0}, 0, 0};
    if (!afd_pyast_is(st, AFD_PY_WITH_STATEMENT) || ts_node_child_count(st) == 0 || !afd_pyast_is_token(ts_node_child(st, 0), "async"))
        return none;
    TSNode clause = ts_node_named_child(st, 0);
    TSNode body = afd_pyast_field(st, AFD_PYF_BODY);
    if (!afd_pyast_is(clause, AFD_PY_WITH_CLAUSE) || ts_node_named_child_count(clause) != 1 || ts_node_is_null(body) ||
        ts_node_start_point(body).row <= ts_node_start_point(st).row)
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
        if (afd_pyast_is(cur, AFD_PY_ASSIGNMENT) || afd_pyast_is(cur, AFD_PY_AUGMENTED_ASSIGNMENT) || afd_pyast_is(cur, AFD_PY_FOR_STATEMENT) ||
            afd_pyast_is(cur, AFD_PY_NAMED_EXPRESSION))
            left = afd_pyast_field(cur, afd_pyast_is(cur, AFD_PY_NAMED_EXPRESSION) ? AFD_PYF_NAME : AFD_PYF_LEFT);
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

int afd_fix_lock_order(const char *src, size_t len, uint32_t outer_line, uint32_t inner_line, afd_buf *out, char *why,
                       size_t whylen)
{
    fixctx c = {.src = src, .len = len, .why = why, .whylen = whylen};
    int rc = fix_start(&c, out);
    if (rc < 0)
        goto out;
    if (!outer_line || !inner_line || outer_line >= inner_line || inner_line > c.n_lines) {
        rc = refuse(&c, "the two acquisitions are not an outer and an inner line of the file");
        goto out;
    }
    TSNode root = ts_tree_root_node(c.tree);
    TSNode oc[MAX_CHAIN], ic[MAX_CHAIN];
    size_t no = statement_chain(root, outer_line - 1, oc, MAX_CHAIN);
    size_t ni = statement_chain(root, inner_line - 1, ic, MAX_CHAIN);
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
        rc = refuse(&c, "the locks are not taken by `async with NAME:` statements at lines %u and %u", outer_line,
                    inner_line);
        goto out;
    }
    if (ts_node_start_byte(inner) < ts_node_start_byte(outer) || ts_node_end_byte(inner) > ts_node_end_byte(outer)) {
        rc = refuse(&c, "the inner `async with` is not inside the outer one");
        goto out;
    }
    TSNode fn = enclosing(outer, AFD_PY_FUNCTION_DEFINITION);
    if (ts_node_is_null(fn) || !is_async_def(fn) || !ts_node_eq(enclosing(inner, AFD_PY_FUNCTION_DEFINITION), fn)) {
        rc = refuse(&c, "the two acquisitions are not in one async function");
        goto out;
    }
    /* the locks come from the caller: the function is called with them in either order */
    if (!is_parameter(src, fn, a) || !is_parameter(src, fn, b) || is_rebound(src, fn, a) || is_rebound(src, fn, b)) {
        rc = refuse(&c, "the locks are not parameters the function leaves unchanged: no single order to put them in");
        goto out;
    }
    TSNode ibody = afd_pyast_field(inner, AFD_PYF_BODY);
    if (has_multiline_string(ibody)) {
        rc = refuse(&c, "a multi-line string lies in the inner block: dedenting it would change it");
        goto out;
    }
    const char *oat, *iat, *bat;
    size_t oind = line_indent(&c, outer_line - 1, &oat);
    size_t iind = line_indent(&c, inner_line - 1, &iat);
    uint32_t b0 = ts_node_start_point(ibody).row, b1 = ts_node_end_point(ibody).row;
    size_t bind = line_indent(&c, b0, &bat);
    if (bind <= iind || bind - iind > 8 || memcmp(iat, bat, iind) != 0) {
        rc = refuse(&c, "the inner block's indentation is not one unit deeper than its `async with`");
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
            rc = refuse(&c, "line %u of the inner block is indented differently", r + 1);
            goto out;
        }
        c.edits[r].drop = (uint8_t)unit;
    }
    int an = (int)(ts_node_end_byte(a) - ts_node_start_byte(a)), bn = (int)(ts_node_end_byte(b) - ts_node_start_byte(b));
    const char *as = src + ts_node_start_byte(a), *bs = src + ts_node_start_byte(b);
    afd_buf_printf(&c.edits[outer_line - 1].before,
                   "%.*s_affidavit_lock_a, _affidavit_lock_b = sorted((%.*s, %.*s), key=id)  # affidavit: one "
                   "global order for every caller\n"
                   "%.*sasync with _affidavit_lock_a, _affidavit_lock_b:  # affidavit: both locks, taken together "
                   "(was: async with %.*s:)\n",
                   (int)oind, oat, an, as, bn, bs, (int)oind, oat, an, as);
    c.edits[outer_line - 1].omit = 1;
    c.edits[inner_line - 1].omit = 1;
    rc = fix_emit(&c, out, "");
out:
    fix_finish(&c);
    return rc;
}

/* ---- OFFLOAD ---- */

int afd_fix_offload(const char *src, size_t len, uint32_t line, afd_buf *out, char *why, size_t whylen)
{
    fixctx c = {.src = src, .len = len, .why = why, .whylen = whylen};
    int rc = fix_start(&c, out);
    if (rc < 0)
        goto out;
    if (!line || line > c.n_lines) {
        rc = refuse(&c, "the blocking call is outside the file");
        goto out;
    }
    TSNode root = ts_tree_root_node(c.tree);
    TSNode chain[MAX_CHAIN];
    size_t n = statement_chain(root, line - 1, chain, MAX_CHAIN);
    TSNode st = n ? chain[n - 1] : (TSNode){{0}, 0, 0};
    if (ts_node_is_null(st) || ts_node_start_point(st).row != line - 1 || ts_node_end_point(st).row != line - 1) {
        rc = refuse(&c, "the blocking call at line %u is not a statement of one line", line);
        goto out;
    }
    /* `F(args)` alone, or the right side of `x = F(args)` */
    TSNode call = {{0}, 0, 0};
    if (afd_pyast_is(st, AFD_PY_EXPRESSION_STATEMENT) && ts_node_named_child_count(st) == 1) {
        TSNode e = ts_node_named_child(st, 0);
        if (afd_pyast_is(e, AFD_PY_CALL))
            call = e;
        else if (afd_pyast_is(e, AFD_PY_ASSIGNMENT) && afd_pyast_is(afd_pyast_field(e, AFD_PYF_RIGHT), AFD_PY_CALL))
            call = afd_pyast_field(e, AFD_PYF_RIGHT);
    }
    TSNode fnx = ts_node_is_null(call) ? call : afd_pyast_field(call, AFD_PYF_FUNCTION);
    TSNode args = ts_node_is_null(call) ? call : afd_pyast_field(call, AFD_PYF_ARGUMENTS);
    if (ts_node_is_null(fnx) || !afd_pyast_is(args, AFD_PY_ARGUMENT_LIST)) {
        rc = refuse(&c, "line %u is not a plain call `F(...)` or `x = F(...)`", line);
        goto out;
    }
    TSNode fn = enclosing(st, AFD_PY_FUNCTION_DEFINITION);
    if (ts_node_is_null(fn) || !is_async_def(fn)) {
        rc = refuse(&c, "the blocking call is not made by an async function (it is in a plain function its "
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
    uint32_t setup_row = module_setup_row(root, &has_asyncio, src);
    if (!has_asyncio)
        afd_buf_printf(&c.edits[setup_row].before, "import asyncio\n");
    rc = fix_emit(&c, out, "");
out:
    fix_finish(&c);
    return rc;
}
