/* explain_stale.c -- one decision made by two tasks (see explain.h, afd_view_twin_check): an
 * order violation's inverted pair that is in fact a check-then-act.
 *
 * The check-then-act atoms of explain_pairs.c need the checking task to write the state it
 * checked again, after its yield. A task whose act is a call (a refresh that spends a single-use
 * token, an initialization that resets a flag) writes nothing it checked: all the trace shows is
 * that it read the state before another task wrote it, and an order violation is what remains.
 * What tells the two apart is the source around the read: here the read is a check -- it is made
 * while an `if` condition is evaluated, in the function itself or in a callee that condition
 * calls -- and the task then suspended inside that `if`'s body, acting on what it saw. The other
 * task's write is its own act on the same check: it made such a check of the state too, yielded
 * and wrote the state from inside the body of the `if` it checked in. Both tasks took the branch;
 * the first to act makes the other's decision stale. A reader that reads too early (an order
 * violation) decides nothing the writer also decided: the writer does not check before it writes.
 *
 * Invariant: only the source and the chains recorded are read; nothing here changes a view.
 * Workload: once per decision, over at most the inverted pairs kept (each test parses one or two
 * files). */
#include "explain.h"
#include "afd.h"
#include "fileio.h"
#include "pyast.h"
#include "pysrc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The frames of the suspension that ended step s: its chain, else its site "file:line" as one
 * frame; 0 when the step suspended at no known await. */
static size_t suspension_frames(const afd_view *v, const afd_xstep *s, afd_xframe *out)
{
    size_t n = afd_view_chain(v->tr, s->chain, out, AFD_CHAIN_MAX_FRAMES);
    if (n)
        return n;
    const char *site = afd_trace_known(v->tr, s->site);
    const char *colon = site ? strrchr(site, ':') : NULL;
    if (!colon || colon == site || !colon[1])
        return 0;
    char *end = NULL;
    unsigned long line = strtoul(colon + 1, &end, 10);
    if (*end || !line || line > UINT32_MAX || (size_t)(colon - site) >= sizeof out->file)
        return 0;
    snprintf(out->file, sizeof out->file, "%.*s", (int)(colon - site), site);
    out->line = (uint32_t)line;
    out->function[0] = 0;
    return 1;
}

/* Whether two frames can be one function: the same file and, where both are known, the same
 * function name. */
static int same_function(const afd_xframe *x, const afd_xframe *y)
{
    return x->file[0] && strcmp(x->file, y->file) == 0 &&
           (!x->function[0] || !y->function[0] || strcmp(x->function, y->function) == 0);
}

/* Where chains a (the check's) and b (the act's) part, outermost first: the lowest index at
 * which the same function runs in both, every frame above it being one call in progress (same
 * function, same line). Writes the lines of the check and of the act in that function; 0 when
 * the chains never share a function or part on one line. */
static int parting(const afd_xframe *a, size_t na, const afd_xframe *b, size_t nb, const char **file,
                   uint32_t *check_line, uint32_t *act_line)
{
    size_t k = 0;
    while (k + 1 < na && k + 1 < nb && a[k].line == b[k].line && same_function(&a[k], &b[k]) &&
           a[k].function[0] && b[k].function[0])
        k++;
    if (!na || !nb || !same_function(&a[k], &b[k]) || !a[k].line || !b[k].line || a[k].line == b[k].line)
        return 0;
    *file = a[k].file;
    *check_line = a[k].line;
    *act_line = b[k].line;
    return 1;
}

static int is_type(TSNode n, const char *type)
{
    return !ts_node_is_null(n) && strcmp(ts_node_type(n), type) == 0;
}

static TSNode field(TSNode n, const char *name)
{
    return ts_node_child_by_field_name(n, name, (uint32_t)strlen(name));
}

/* Whether 1-based line act_line of the parsed source lies in the body of an `if` (or `elif`)
 * whose condition spans 1-based line check_line, within one function. */
static int guards_in_tree(const afd_pysrc *ps, const char *text, size_t len, uint32_t check_line,
                          uint32_t act_line)
{
    const char *p = text, *end = text + len;
    for (uint32_t l = 1; l < check_line && p < end; l++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        p = nl ? nl + 1 : end;
    }
    uint32_t col = 0;
    while (p + col < end && (p[col] == ' ' || p[col] == '\t'))
        col++;
    uint32_t crow = check_line - 1, arow = act_line - 1;
    TSPoint at = {crow, col};
    TSNode n = ts_node_named_descendant_for_point_range(ts_tree_root_node(ps->tree), at, at);
    for (; !ts_node_is_null(n) && !afd_pyast_is(n, AFD_PY_FUNCTION_DEFINITION); n = ts_node_parent(n)) {
        if (!is_type(n, "if_statement") && !is_type(n, "elif_clause"))
            continue;
        TSNode cond = field(n, "condition"), body = field(n, "consequence");
        if (ts_node_is_null(cond) || ts_node_is_null(body) || ts_node_start_point(cond).row > crow ||
            ts_node_end_point(cond).row < crow)
            continue;
        return ts_node_start_point(body).row <= arow && arow <= ts_node_end_point(body).row &&
               arow > ts_node_end_point(cond).row;
    }
    return 0;
}

/* Whether the read `check` is a check guarding the act whose frames are act[0..n_act): the
 * chains part in one function, where the check's line is an `if` condition (the read made there,
 * or in a callee the condition calls: a heuristic, the read's value is not followed into the
 * test) and the act's line lies in that `if`'s body. */
static int guards(const afd_view *v, const afd_xaccess *check, const afd_xframe *act, size_t n_act)
{
    afd_xframe cf[AFD_CHAIN_MAX_FRAMES];
    size_t nc = afd_view_access_frames(v, check, cf);
    const char *file = NULL;
    uint32_t check_line = 0, act_line = 0;
    if (!parting(cf, nc, act, n_act, &file, &check_line, &act_line) || act_line < check_line)
        return 0;
    char *text = NULL;
    size_t len = 0;
    if (afd_file_read(file, 4u << 20, &text, &len) != 0)
        return 0;
    afd_pysrc ps = {0};
    int yes = afd_pysrc_parse(&ps, text, len, NULL, NULL) == 0 &&
              guards_in_tree(&ps, text, len, check_line, act_line);
    afd_pysrc_finish(&ps);
    free(text);
    return yes;
}

/* A read of shared state (not a primitive's, not a write). */
static int plain_read(const afd_xaccess *a)
{
    return !a->write && !a->sync;
}

/* The other task's own check before its write y (index yi of yv): a read of the same state by the
 * same task, in an earlier step, guarding the write. AFD_NOPOS when there is none. */
static uint32_t writers_check(const afd_view *yv, uint32_t yi)
{
    const afd_xaccess *y = &yv->acc[yi];
    afd_xframe wf[AFD_CHAIN_MAX_FRAMES];
    size_t nw = afd_view_access_frames(yv, y, wf);
    for (uint32_t i = 0; i < yi; i++) {
        const afd_xaccess *c = &yv->acc[i];
        if (plain_read(c) && c->step < y->step && strcmp(c->label, y->label) == 0 &&
            afd_view_resources_overlap(c->resource, y->resource) && guards(yv, c, wf, nw))
            return i;
    }
    return AFD_NOPOS;
}

int afd_view_twin_check(const afd_view *fail, const afd_view *pass, const afd_xpair *pairs, size_t n,
                        afd_xtwin *out)
{
    for (size_t i = 0; i < n; i++) {
        const afd_xpair *p = &pairs[i];
        const afd_view *yv = p->y_pass ? pass : fail;
        if (!yv || p->x >= fail->n_acc || p->y >= yv->n_acc)
            continue;
        const afd_xaccess *x = &fail->acc[p->x], *y = &yv->acc[p->y];
        if (!plain_read(x) || !y->write || y->sync)
            continue;
        afd_xframe sf[AFD_CHAIN_MAX_FRAMES];
        size_t ns = suspension_frames(fail, &fail->steps[x->step], sf);
        if (!ns || !guards(fail, x, sf, ns))
            continue;
        uint32_t c = writers_check(yv, p->y);
        if (c == AFD_NOPOS)
            continue;
        out->pair = i;
        out->check = c;
        return 1;
    }
    return 0;
}
