/* pyscan.c -- what each line of a Python source file reads and writes (see pyscan.h).
 *
 * The source is parsed through pysrc.h (what libtree-sitter 0.20.7 cannot take blanked out, a time
 * limit, a truncated tree refused), and then
 * walked three times, always with explicit stacks (the tree is as deep as the input is nested,
 * and 100,000 parentheses must not exhaust the C stack):
 *   1. errors: the lines of ERROR and MISSING nodes; subtrees without an error are skipped whole;
 *   2. bindings: the scopes (module, functions, classes, lambdas, comprehensions), the names each
 *      binds or declares global, and the module globals. They are all collected before any access
 *      is judged because Python decides a name's scope from the whole function body, not from what
 *      precedes the use;
 *   3. accesses: attribute and subscript chains through self, cls, a global, a local variable or
 *      an alias, visited in source order so that aliases follow the bindings as they happen;
 *   4. lines: what the statement around each line does with its values (a condition, a return,
 *      a name a later condition tests), in pyscan_lines.c.
 *
 * Strings (names, paths, qualified names) are interned in one buffer that is handed out in the
 * same allocation as the access array: a function with a million accesses stores its qualified
 * name once, and afd_pyscan_finish frees everything with the array. The buffer is bounded
 * (AFD_EFULL) so that a crafted source -- a long alias path used under a million distinct keys --
 * cannot grow the output beyond a fixed multiple of the input.
 *
 * Beyond pyscan.h: AFD_EFULL also answers a source whose parse exceeds its time limit (garbage
 * megabytes long) or whose tree libtree-sitter broke (see pysrc.h), and the error lines
 * include those of brackets nested too deep and of long runs of continuation-only lines.
 *
 * Walks 1 and 2 live in pyscan_bind.c, walk 3 in pyscan_access.c, walk 4 in pyscan_lines.c; this file holds
 * the driver, the interned strings, the index tables and the node helpers they share (pyscan_impl.h). Node
 * kinds, fields and the cursor walks come from pyast.h. */
#include "pyscan_impl.h"

#include <stdlib.h>
#include <string.h>

/* pyscan's kinds of the front end's node kinds: every target list is one container, and what
 * never holds an access is skipped whole. */
static const uint8_t SCAN_KIND[AFD_PY_KIND_COUNT] = {
    [AFD_PY_IDENTIFIER] = K_IDENT,
    [AFD_PY_ATTRIBUTE] = K_ATTR,
    [AFD_PY_SUBSCRIPT] = K_SUBSCRIPT,
    [AFD_PY_CALL] = K_CALL,
    [AFD_PY_STRING] = K_STRING,
    [AFD_PY_INTEGER] = K_INTEGER,
    [AFD_PY_UNARY_OPERATOR] = K_UNARY,
    [AFD_PY_PARENTHESIZED_EXPRESSION] = K_PAREN,
    [AFD_PY_PATTERN_LIST] = K_CONTAINER,
    [AFD_PY_TUPLE_PATTERN] = K_CONTAINER,
    [AFD_PY_LIST_PATTERN] = K_CONTAINER,
    [AFD_PY_EXPRESSION_LIST] = K_CONTAINER,
    [AFD_PY_TUPLE] = K_CONTAINER,
    [AFD_PY_LIST] = K_CONTAINER,
    [AFD_PY_LIST_SPLAT_PATTERN] = K_CONTAINER,
    [AFD_PY_DICTIONARY_SPLAT_PATTERN] = K_CONTAINER,
    [AFD_PY_LIST_SPLAT] = K_CONTAINER,
    [AFD_PY_AS_PATTERN_TARGET] = K_CONTAINER,
    [AFD_PY_ASSIGNMENT] = K_ASSIGN,
    [AFD_PY_AUGMENTED_ASSIGNMENT] = K_AUGASSIGN,
    [AFD_PY_NAMED_EXPRESSION] = K_NAMED_EXPR,
    [AFD_PY_DELETE_STATEMENT] = K_DELETE,
    [AFD_PY_FOR_STATEMENT] = K_FOR,
    [AFD_PY_FOR_IN_CLAUSE] = K_FOR_IN,
    [AFD_PY_WITH_STATEMENT] = K_WITH,
    [AFD_PY_AS_PATTERN] = K_AS_PATTERN,
    [AFD_PY_AWAIT] = K_AWAIT,
    [AFD_PY_GLOBAL_STATEMENT] = K_GLOBAL,
    [AFD_PY_NONLOCAL_STATEMENT] = K_NONLOCAL,
    [AFD_PY_FUNCTION_DEFINITION] = K_FUNCDEF,
    [AFD_PY_CLASS_DEFINITION] = K_CLASSDEF,
    [AFD_PY_LAMBDA] = K_LAMBDA,
    [AFD_PY_PARAMETERS] = K_PARAMS,
    [AFD_PY_LAMBDA_PARAMETERS] = K_PARAMS,
    [AFD_PY_DEFAULT_PARAMETER] = K_DEFAULT_PARAM,
    [AFD_PY_TYPED_PARAMETER] = K_TYPED_PARAM,
    [AFD_PY_TYPED_DEFAULT_PARAMETER] = K_TYPED_DEFAULT_PARAM,
    [AFD_PY_IMPORT_STATEMENT] = K_IMPORT,
    [AFD_PY_IMPORT_FROM_STATEMENT] = K_IMPORT,
    [AFD_PY_FUTURE_IMPORT_STATEMENT] = K_IMPORT,
    [AFD_PY_DOTTED_NAME] = K_DOTTED_NAME,
    [AFD_PY_ALIASED_IMPORT] = K_ALIASED_IMPORT,
    [AFD_PY_KEYWORD_ARGUMENT] = K_KEYWORD_ARG,
    [AFD_PY_LIST_COMPREHENSION] = K_COMP,
    [AFD_PY_SET_COMPREHENSION] = K_COMP,
    [AFD_PY_DICTIONARY_COMPREHENSION] = K_COMP,
    [AFD_PY_GENERATOR_EXPRESSION] = K_COMP,
    [AFD_PY_CASE_PATTERN] = K_CASE_PATTERN,
    [AFD_PY_KEYWORD_PATTERN] = K_KEYWORD_PATTERN,
    [AFD_PY_CLASS_PATTERN] = K_CLASS_PATTERN,
    [AFD_PY_STRING_START] = K_STRING_START,
    [AFD_PY_STRING_END] = K_STRING_END,
    [AFD_PY_INTERPOLATION] = K_INTERPOLATION,
    [AFD_PY_COMMENT] = K_SKIP,
    [AFD_PY_TYPE] = K_SKIP,
    [AFD_PY_TYPE_PARAMETER] = K_SKIP,
    [AFD_PY_TYPE_ALIAS_STATEMENT] = K_SKIP,
    [AFD_PY_STRING_CONTENT] = K_SKIP,
};

/* ---- small utilities ---- */

int afd_pyscan_u32_push(u32vec *v, uint32_t x)
{
    int rc = afd_array_grow((void **)&v->v, &v->cap, v->n + 1, sizeof *v->v, 16);
    if (rc < 0)
        return rc;
    v->v[v->n++] = x;
    return 0;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static void u32_sort_unique(u32vec *v)
{
    if (v->n < 2)
        return;
    qsort(v->v, v->n, sizeof *v->v, cmp_u32);
    size_t w = 1;
    for (size_t i = 1; i < v->n; i++)
        if (v->v[i] != v->v[w - 1])
            v->v[w++] = v->v[i];
    v->n = w;
}

void afd_pyscan_put_str(afd_buf *b, const char *s)
{
    afd_buf_put(b, s, strlen(s));
}

/* ---- the index table ---- */

static int itab_reserve(itab *t)
{
    if ((t->used + 1) * 2 <= t->cap)
        return 0;
    size_t ncap = t->cap ? t->cap * 2 : 64;
    uint32_t *ns = calloc(ncap, sizeof *ns);
    uint64_t *nh = malloc(ncap * sizeof *nh);
    if (!ns || !nh) {
        free(ns);
        free(nh);
        return AFD_ENOMEM;
    }
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->slot[i])
            continue;
        size_t j = (size_t)t->hash[i] & (ncap - 1);
        while (ns[j])
            j = (j + 1) & (ncap - 1);
        ns[j] = t->slot[i];
        nh[j] = t->hash[i];
    }
    free(t->slot);
    free(t->hash);
    t->slot = ns;
    t->hash = nh;
    t->cap = ncap;
    return 0;
}

uint32_t afd_pyscan_itab_find(const itab *t, uint64_t h, itab_eq eq, const void *env)
{
    if (!t->cap)
        return NONE32;
    for (size_t i = (size_t)h & (t->cap - 1); t->slot[i]; i = (i + 1) & (t->cap - 1))
        if (t->hash[i] == h && eq(env, t->slot[i] - 1))
            return t->slot[i] - 1;
    return NONE32;
}

int afd_pyscan_itab_insert(itab *t, uint64_t h, uint32_t idx)
{
    int rc = itab_reserve(t);
    if (rc < 0)
        return rc;
    size_t i = (size_t)h & (t->cap - 1);
    while (t->slot[i])
        i = (i + 1) & (t->cap - 1);
    t->slot[i] = idx + 1;
    t->hash[i] = h;
    t->used++;
    return 0;
}

static void itab_free(itab *t)
{
    free(t->slot);
    free(t->hash);
}

uint64_t afd_pyscan_hash_bytes(uint64_t seed, const char *s, size_t n)
{
    return afd_mix64(afd_fnv1a(afd_fnv1a(AFD_FNV_INIT, &seed, sizeof seed), s, n));
}

/* ---- interned strings ---- */

/* Counts n bytes of string building. Interning bounds what is kept, not what is built: a long
 * alias path used a million times would be copied a million times, so the copying is bounded
 * too. */
int afd_pyscan_charge(ctx *c, size_t n)
{
    c->work += n;
    return c->work > 4 * c->budget ? AFD_EFULL : 0;
}

static int str_eq(const void *env, uint32_t idx)
{
    const itab_key *k = env;
    const strent *e = &k->c->sents[idx];
    return e->len == k->n && memcmp(k->c->strs.data + e->off, k->p, k->n) == 0;
}

/* The offset of the NUL-terminated copy of s[0, n) in the string buffer. s must not point into
 * that buffer (it may move). */
int afd_pyscan_intern(ctx *c, const char *s, size_t n, uint32_t *off)
{
    uint64_t h = afd_pyscan_hash_bytes(0, s, n);
    itab_key k = {c, 0, s, n};
    uint32_t i = afd_pyscan_itab_find(&c->str_tab, h, str_eq, &k);
    if (i != NONE32) {
        *off = c->sents[i].off;
        return 0;
    }
    if (n + 1 > c->budget - c->strs.len)
        return AFD_EFULL;
    int rc = afd_array_grow((void **)&c->sents, &c->cap_sents, c->n_sents + 1, sizeof *c->sents, 16);
    if (rc < 0)
        return rc;
    size_t at = c->strs.len;
    afd_buf_put(&c->strs, s, n);
    afd_buf_put(&c->strs, "", 1);
    if (c->strs.err)
        return c->strs.err;
    c->sents[c->n_sents] = (strent){(uint32_t)at, (uint32_t)n};
    rc = afd_pyscan_itab_insert(&c->str_tab, h, (uint32_t)c->n_sents);
    if (rc < 0)
        return rc;
    c->n_sents++;
    *off = (uint32_t)at;
    return 0;
}

/* ---- nodes ---- */

uint8_t afd_pyscan_kind_of(const ctx *c, TSNode n)
{
    (void)c;
    return SCAN_KIND[afd_pyast_kind(n)];
}

/* An identifier the walks can use: present, not made up by error recovery, not empty. */
int afd_pyscan_ident_ok(const ctx *c, TSNode n)
{
    size_t len;
    if (afd_pyast_is_bad(n) || afd_pyscan_kind_of(c, n) != K_IDENT)
        return 0;
    afd_pyast_text(c->src, c->len, n, &len);
    return len > 0;
}

int afd_pyscan_list_kids(ctx *c, TSNode n)
{
    return afd_pyast_children(&c->cur, n, &c->kids, &c->n_kids, &c->cap_kids);
}

/* Whether the node (with, for, for_in_clause) starts with the `async` keyword. */
int afd_pyscan_has_async(const ctx *c)
{
    for (size_t i = 0; i < c->n_kids; i++)
        if (!c->kids[i].named && strcmp(ts_node_type(c->kids[i].node), "async") == 0)
            return 1;
    return 0;
}

int afd_pyscan_push(ctx *c, TSNode n, uint32_t scope, uint32_t aux, uint8_t op, uint8_t mode)
{
    if (ts_node_is_null(n))
        return 0;
    int rc = afd_array_grow((void **)&c->stk, &c->cap_stk, c->n_stk + 1, sizeof *c->stk, 16);
    if (rc < 0)
        return rc;
    /* What sits beneath a condition is in it too, whatever mode its parent pushed it with. */
    if (op == OP_VISIT)
        mode |= c->test;
    c->stk[c->n_stk++] = (item){n, scope, aux, op, mode};
    return 0;
}

/* Pushes the named children listed in c->kids, last first, so that they are visited in source
 * order. */
int afd_pyscan_push_kids(ctx *c, uint32_t scope, uint8_t op, uint8_t mode)
{
    for (size_t i = c->n_kids; i-- > 0;) {
        if (!c->kids[i].named)
            continue;
        int rc = afd_pyscan_push(c, c->kids[i].node, scope, 0, op, mode);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* ---- the source as the parser sees it ---- */

/* ---- driver ---- */

/* The lines pysrc blanked because they would break the parser are error lines. */
static int push_error_line(void *vc, uint32_t line)
{
    return afd_pyscan_u32_push(&((ctx *)vc)->errors, line);
}

static int ctx_init(ctx *c, const char *src, size_t len)
{
    c->src = src;
    c->len = len;
    /* Names and paths come from the source's text, qualified names repeat their prefixes, and
     * the access array is 16 times the source at worst already: the strings may take as much. */
    c->budget = 16 * len + (16u << 20);
    int rc = afd_pyscan_intern(c, "", 0, &c->off_empty);
    if (rc == 0)
        rc = afd_pyscan_intern(c, "self", 4, &c->off_self);
    if (rc == 0)
        rc = afd_pyscan_intern(c, "cls", 3, &c->off_cls);
    return rc;
}

static void ctx_free(ctx *c)
{
    free(c->kids);
    free(c->stk);
    free(c->segs);
    afd_buf_finish(&c->path);
    afd_buf_finish(&c->tmp);
    afd_buf_finish(&c->strs);
    free(c->sents);
    itab_free(&c->str_tab);
    free(c->scopes);
    itab_free(&c->scope_tab);
    free(c->names);
    itab_free(&c->name_tab);
    free(c->aliases);
    itab_free(&c->alias_tab);
    free(c->acc);
    free(c->yields.v);
    free(c->errors.v);
    free(c->lflags);
}

static int run_walk(ctx *c, TSNode root, int (*visit)(ctx *, const item *), uint8_t mode)
{
    c->n_stk = 0;
    c->test = 0;
    int rc = afd_pyscan_push(c, root, 0, 0, OP_VISIT, mode);
    while (rc == 0 && c->n_stk > 0) {
        item it = c->stk[--c->n_stk];
        rc = visit(c, &it);
    }
    return rc;
}

static int cmp_racc(const void *a, const void *b)
{
    const racc *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

/* Hands the results to out: the accesses and every string they point to in one block. */
static int publish(ctx *c, afd_pyscan *out)
{
    u32_sort_unique(&c->yields);
    u32_sort_unique(&c->errors);
    if (c->n_acc) {
        qsort(c->acc, c->n_acc, sizeof *c->acc, cmp_racc);
        size_t head = c->n_acc * sizeof(afd_pyaccess);
        char *block = malloc(head + c->strs.len + 1);
        if (!block)
            return AFD_ENOMEM;
        afd_pyaccess *a = (afd_pyaccess *)(void *)block;
        char *strs = block + head;
        memcpy(strs, c->strs.data, c->strs.len + 1);
        for (size_t i = 0; i < c->n_acc; i++) {
            const racc *r = &c->acc[i];
            a[i] = (afd_pyaccess){
                r->line,         r->root, r->write, r->flags, strs + r->name_off, strs + r->path_off,
                strs + r->fn_off};
        }
        out->acc = a;
        out->n_acc = c->n_acc;
    }
    out->yields = c->yields.v;
    out->n_yields = c->yields.n;
    out->errors = c->errors.v;
    out->n_errors = c->errors.n;
    out->line_flags = c->lflags;
    out->n_line_flags = c->n_lflags;
    c->lflags = NULL;
    c->n_lflags = c->cap_lflags = 0;
    c->yields = (u32vec){0};
    c->errors = (u32vec){0};
    return 0;
}

int afd_pyscan_source(const char *src, size_t len, afd_pyscan *out)
{
    if (!out)
        return AFD_EINVAL;
    memset(out, 0, sizeof *out);
    if (len > AFD_PYSCAN_MAX_SOURCE)
        return AFD_EFULL;
    if (!src && len)
        return AFD_EINVAL;
    ctx c;
    memset(&c, 0, sizeof c);
    c.src = src ? src : "";
    c.len = len;
    afd_pysrc ps;
    int rc = afd_pysrc_parse(&ps, src, len, push_error_line, &c);
    if (rc == 0)
        rc = ctx_init(&c, ps.text, len);
    TSTree *tree = ps.tree;
    if (rc == 0) {
        TSNode root = ts_tree_root_node(tree);
        c.cur = ts_tree_cursor_new(root);
        uint32_t module;
        rc = afd_pyscan_collect_errors(&c, root);
        if (rc == 0)
            rc = afd_pyscan_scope_add(&c, root, S_MODULE, 0, root, &module);
        if (rc == 0)
            rc = run_walk(&c, root, afd_pyscan_a_visit, A_GEN);
        if (rc == 0)
            rc = run_walk(&c, root, afd_pyscan_b_visit, M_READ);
        if (rc == 0)
            rc = afd_pyscan_lines(&c, root);
        ts_tree_cursor_delete(&c.cur);
    }
    if (rc == 0)
        rc = publish(&c, out);
    afd_pysrc_finish(&ps);
    ctx_free(&c);
    if (rc < 0)
        afd_pyscan_finish(out);
    return rc;
}

void afd_pyscan_finish(afd_pyscan *s)
{
    if (!s)
        return;
    free(s->acc); /* the strings live in the same block */
    free(s->yields);
    free(s->errors);
    free(s->line_flags);
    memset(s, 0, sizeof *s);
}

void afd_pyscan_line(const afd_pyscan *s, uint32_t line, size_t *first, size_t *count)
{
    size_t lo = 0, hi = s ? s->n_acc : 0;
    while (lo < hi) { /* first access with a line >= line */
        size_t mid = lo + (hi - lo) / 2;
        if (s->acc[mid].line < line)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t end = lo;
    hi = s ? s->n_acc : 0;
    while (end < hi) { /* first access with a line > line */
        size_t mid = end + (hi - end) / 2;
        if (s->acc[mid].line <= line)
            end = mid + 1;
        else
            hi = mid;
    }
    if (first)
        *first = lo;
    if (count)
        *count = end - lo;
}

uint8_t afd_pyscan_line_flags(const afd_pyscan *s, uint32_t line)
{
    return s && line < s->n_line_flags ? s->line_flags[line] : 0;
}

int afd_pyscan_is_yield(const afd_pyscan *s, uint32_t line)
{
    size_t lo = 0, hi = s ? s->n_yields : 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->yields[mid] < line)
            lo = mid + 1;
        else
            hi = mid;
    }
    return s && lo < s->n_yields && s->yields[lo] == line;
}
