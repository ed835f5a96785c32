/* pyscan_lines.c -- pyscan's fourth walk: what the statement around each line does with the
 * values computed on it (pyscan.h, afd_pyscan_line_flags).
 *
 * A line is marked TEST when it holds part of the condition of an if, elif or while; RETURN when
 * it holds part of a `return` statement's value; NAME_TESTED when it holds part of the value of
 * an assignment to a plain name (`value = await self.get(k)`) that a condition later in the same
 * function reads (`if value is not None:`). A caller's frame line tells, through these, what the
 * caller does with the value a call returned: the flow of a read's value out of its function
 * (explain.h, afd_view_caller_tests). Lines, not expressions: a line holding two statements
 * carries both statements' marks (a heuristic, like every line-level inference here).
 *
 * Invariant: the walk is iterative (afd_pyast_walk) and its work is linear in the tree, plus a
 * sort of the assignments and the names read in conditions. */
#include "pyscan_impl.h"

#include <stdlib.h>
#include <string.h>

/* An assignment to a plain name, or a name read in a condition: by function (the start byte of
 * the innermost def or lambda, NONE32 at module level) and name hash, in source order. */
typedef struct nameuse {
    uint32_t fn, start;
    uint64_t hash;
    uint32_t first, last; /* assignment: the value's lines */
    uint8_t is_cond;
} nameuse;

typedef struct lwalk {
    ctx *c;
    uint32_t *fns; /* Owned: the open functions' start bytes, innermost last */
    size_t n_fns, cap_fns;
    uint32_t *conds; /* Owned: the open conditions, innermost last, as pairs: the condition's end
                        byte, then the end byte of the statement it belongs to */
    size_t n_conds, cap_conds;
    uint32_t *attrs; /* Owned: the attribute identifiers (`.value` of `self.value`) still to come in
                        the open conditions, by start byte, innermost last: not names */
    size_t n_attrs, cap_attrs;
    nameuse *uses; /* Owned. */
    size_t n_uses, cap_uses;
    int rc;
} lwalk;

/* Marks lines first..last with bit, growing c->lflags (zero-filled) to hold them. */
static int mark_lines(ctx *c, uint32_t first, uint32_t last, uint8_t bit)
{
    if (last < first || first == 0)
        return 0;
    if (last >= c->n_lflags) {
        size_t cap = c->cap_lflags;
        int rc = afd_array_grow((void **)&c->lflags, &cap, (size_t)last + 1, 1, 64);
        if (rc < 0)
            return rc;
        c->cap_lflags = cap;
        memset(c->lflags + c->n_lflags, 0, (size_t)last + 1 - c->n_lflags);
        c->n_lflags = (size_t)last + 1;
    }
    for (uint32_t l = first; l <= last; l++)
        c->lflags[l] |= bit;
    return 0;
}

static int mark(ctx *c, TSNode n, uint8_t bit)
{
    return mark_lines(c, ts_node_start_point(n).row + 1, ts_node_end_point(n).row + 1, bit);
}

static int push_u32(uint32_t **v, size_t *n, size_t *cap, uint32_t x)
{
    int rc = afd_array_grow((void **)v, cap, *n + 1, sizeof **v, 16);
    if (rc < 0)
        return rc;
    (*v)[(*n)++] = x;
    return 0;
}

static int add_use(lwalk *w, TSNode name, uint8_t is_cond, TSNode value)
{
    size_t n;
    const char *s = afd_pyast_text(w->c->src, w->c->len, name, &n);
    if (n == 0)
        return 0;
    int rc = afd_array_grow((void **)&w->uses, &w->cap_uses, w->n_uses + 1, sizeof *w->uses, 16);
    if (rc < 0)
        return rc;
    nameuse *u = &w->uses[w->n_uses++];
    u->fn = w->n_fns ? w->fns[w->n_fns - 1] : NONE32;
    u->start = ts_node_start_byte(name);
    u->hash = afd_pyscan_hash_bytes(0, s, n);
    u->is_cond = is_cond;
    u->first = is_cond ? 0 : ts_node_start_point(value).row + 1;
    u->last = is_cond ? 0 : ts_node_end_point(value).row + 1;
    return 0;
}

/* The statements whose `condition` field is a test: if, elif, while. */
static int is_test_stmt(TSNode n, enum afd_py_kind k)
{
    return k == AFD_PY_WHILE_STATEMENT || strcmp(ts_node_type(n), "if_statement") == 0 ||
           strcmp(ts_node_type(n), "elif_clause") == 0;
}

/* Whether n (an identifier) is a name read in the innermost open condition, not an attribute. */
static int cond_name(lwalk *w, TSNode n)
{
    uint32_t at = ts_node_start_byte(n);
    if (!w->n_conds || at >= w->conds[w->n_conds - 2])
        return 0;
    if (w->n_attrs && w->attrs[w->n_attrs - 1] == at) {
        w->n_attrs--;
        return 0;
    }
    return 1;
}

static int enter(void *vw, TSNode n)
{
    lwalk *w = vw;
    ctx *c = w->c;
    if (afd_pyast_is_bad(n))
        return AFD_PYAST_SKIP;
    enum afd_py_kind k = afd_pyast_kind(n);
    int rc = 0;
    if (k == AFD_PY_FUNCTION_DEFINITION || k == AFD_PY_LAMBDA)
        rc = push_u32(&w->fns, &w->n_fns, &w->cap_fns, ts_node_start_byte(n));
    else if (k == AFD_PY_RETURN_STATEMENT)
        rc = mark(c, n, AFD_PYLINE_RETURN);
    else if (k == AFD_PY_IDENTIFIER && cond_name(w, n))
        rc = add_use(w, n, 1, n);
    else if (k == AFD_PY_ATTRIBUTE && w->n_conds && ts_node_start_byte(n) < w->conds[w->n_conds - 2]) {
        TSNode attr = afd_pyast_field(n, AFD_PYF_ATTRIBUTE);
        if (!ts_node_is_null(attr))
            rc = push_u32(&w->attrs, &w->n_attrs, &w->cap_attrs, ts_node_start_byte(attr));
    } else if (k == AFD_PY_ASSIGNMENT) {
        TSNode left = afd_pyast_field(n, AFD_PYF_LEFT), right = afd_pyast_field(n, AFD_PYF_RIGHT);
        if (!afd_pyast_is_bad(left) && !afd_pyast_is_bad(right) && afd_pyast_kind(left) == AFD_PY_IDENTIFIER)
            rc = add_use(w, left, 0, right);
    }
    TSNode cond = rc == 0 && is_test_stmt(n, k) ? afd_pyast_field(n, AFD_PYF_CONDITION) : (TSNode){{0}, 0, 0};
    if (!ts_node_is_null(cond) && !afd_pyast_is_bad(cond)) {
        rc = mark(c, cond, AFD_PYLINE_TEST);
        if (rc == 0) /* open until n is left; names before the condition's end are in it */
            rc = push_u32(&w->conds, &w->n_conds, &w->cap_conds, ts_node_end_byte(cond));
        if (rc == 0)
            rc = push_u32(&w->conds, &w->n_conds, &w->cap_conds, ts_node_end_byte(n));
    }
    return rc < 0 ? rc : AFD_PYAST_DESCEND;
}

static int leave(void *vw, TSNode n)
{
    lwalk *w = vw;
    if (afd_pyast_is_bad(n))
        return 0;
    enum afd_py_kind k = afd_pyast_kind(n);
    if ((k == AFD_PY_FUNCTION_DEFINITION || k == AFD_PY_LAMBDA) && w->n_fns)
        w->n_fns--;
    if (!w->n_conds || w->conds[w->n_conds - 1] != ts_node_end_byte(n) || !is_test_stmt(n, k))
        return 0;
    TSNode cond = afd_pyast_field(n, AFD_PYF_CONDITION);
    if (!ts_node_is_null(cond) && !afd_pyast_is_bad(cond))
        w->n_conds -= 2;
    return 0;
}

static int cmp_use(const void *a, const void *b)
{
    const nameuse *x = a, *y = b;
    if (x->fn != y->fn)
        return x->fn < y->fn ? -1 : 1;
    if (x->hash != y->hash)
        return x->hash < y->hash ? -1 : 1;
    return (x->start > y->start) - (x->start < y->start);
}

/* The statement marks of the tree into c->lflags (indexed by 1-based line). */
int afd_pyscan_lines(ctx *c, TSNode root)
{
    lwalk w = {.c = c};
    int rc = afd_pyast_walk(&c->cur, root, enter, leave, &w);
    if (rc == 0 && w.n_uses > 1)
        qsort(w.uses, w.n_uses, sizeof *w.uses, cmp_use);
    /* Backwards through each (function, name) group: an assignment with a condition reading the
     * name after it is tested. Names in conditions at module level are a module's flow, not a
     * call's: they count as well, the caller frame may be a module's code. */
    int later_cond = 0;
    for (size_t i = w.n_uses; rc == 0 && i-- > 0;) {
        const nameuse *u = &w.uses[i];
        if (i + 1 == w.n_uses || u->fn != w.uses[i + 1].fn || u->hash != w.uses[i + 1].hash)
            later_cond = 0;
        if (u->is_cond) {
            later_cond = 1;
        } else if (later_cond) {
            rc = mark_lines(c, u->first, u->last, AFD_PYLINE_NAME_TESTED);
        }
    }
    free(w.fns);
    free(w.conds);
    free(w.attrs);
    free(w.uses);
    return rc;
}
