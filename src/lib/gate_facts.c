/* gate_facts.c -- one side of a changed file parsed (through pysrc's defences) and walked into
 * facts, and the helpers the visits share: node kinds, normalized text, dotted names, imports,
 * the ancestor stack (see gate.c for the whole design). */
#include "gate_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The gate's kinds of the front end's node kinds: a string is one token whatever the grammar
 * splits it into, and an except* clause swallows as an except clause does. */
static const uint8_t GATE_KIND[AFD_PY_KIND_COUNT] = {
    [AFD_PY_IDENTIFIER] = K_IDENT,
    [AFD_PY_ATTRIBUTE] = K_ATTR,
    [AFD_PY_CALL] = K_CALL,
    [AFD_PY_STRING] = K_STRING,
    [AFD_PY_CONCATENATED_STRING] = K_STRING,
    [AFD_PY_DECORATOR] = K_DECORATOR,
    [AFD_PY_WITH_STATEMENT] = K_WITH,
    [AFD_PY_WHILE_STATEMENT] = K_WHILE,
    [AFD_PY_FOR_STATEMENT] = K_FOR,
    [AFD_PY_TRY_STATEMENT] = K_TRY,
    [AFD_PY_EXCEPT_CLAUSE] = K_EXCEPT,
    [AFD_PY_EXCEPT_GROUP_CLAUSE] = K_EXCEPT,
    [AFD_PY_ASSERT_STATEMENT] = K_ASSERT,
    [AFD_PY_FUNCTION_DEFINITION] = K_FUNCDEF,
    [AFD_PY_CLASS_DEFINITION] = K_CLASSDEF,
    [AFD_PY_LAMBDA] = K_LAMBDA,
    [AFD_PY_AWAIT] = K_AWAIT,
    [AFD_PY_BLOCK] = K_BLOCK,
    [AFD_PY_ASSIGNMENT] = K_ASSIGN,
    [AFD_PY_IMPORT_STATEMENT] = K_IMPORT,
    [AFD_PY_IMPORT_FROM_STATEMENT] = K_IMPORT_FROM,
    [AFD_PY_ALIASED_IMPORT] = K_ALIASED_IMPORT,
    [AFD_PY_DOTTED_NAME] = K_DOTTED_NAME,
    [AFD_PY_AS_PATTERN] = K_AS_PATTERN,
    [AFD_PY_TUPLE] = K_TUPLE,
    [AFD_PY_PARENTHESIZED_EXPRESSION] = K_PAREN,
    [AFD_PY_EXPRESSION_STATEMENT] = K_EXPR_STMT,
    [AFD_PY_PASS_STATEMENT] = K_PASS,
    [AFD_PY_CONTINUE_STATEMENT] = K_CONTINUE,
    [AFD_PY_RETURN_STATEMENT] = K_RETURN,
    [AFD_PY_RAISE_STATEMENT] = K_RAISE,
    [AFD_PY_BREAK_STATEMENT] = K_BREAK,
    [AFD_PY_ELLIPSIS] = K_ELLIPSIS,
    [AFD_PY_ARGUMENT_LIST] = K_ARGLIST,
    [AFD_PY_INTEGER] = K_INTEGER,
    [AFD_PY_FLOAT] = K_FLOAT,
};

/* ---- small helpers ---- */

uint8_t afd_gate_kind_of(const ctx *c, TSNode n)
{
    (void)c;
    return GATE_KIND[afd_pyast_kind(n)];
}

int afd_gate_is_space(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f' || ch == '\v';
}

/* The node's text with whitespace runs (and line continuations) collapsed to one space, into b
 * (reset first, NUL-terminated). Cut at MAX_NORM characters and tagged with the full length. */
void afd_gate_norm(const ctx *c, TSNode n, afd_buf *b)
{
    b->len = 0;
    size_t len;
    const char *t = afd_pyast_text(c->src, c->len, n, &len);
    int sp = 0;
    size_t i = 0;
    for (; i < len && b->len < MAX_NORM; i++) {
        char ch = t[i];
        if (ch == '\\' && i + 1 < len && (t[i + 1] == '\n' || t[i + 1] == '\r'))
            ch = ' ';
        if (afd_gate_is_space(ch)) {
            sp = b->len > 0;
            continue;
        }
        if (sp)
            afd_buf_put_u8(b, ' ');
        sp = 0;
        afd_buf_put_u8(b, (uint8_t)ch);
    }
    if (i < len)
        afd_buf_printf(b, "~%zu", len);
    afd_buf_put_u8(b, 0);
    b->len--;
}

/* "a.b.c" for an identifier or an attribute chain of identifiers into b, with the first component
 * replaced through the import aliases; 0 when n is anything else. */
int afd_gate_dotted(const ctx *c, TSNode n, afd_buf *b)
{
    TSNode parts[16];
    size_t np = 0;
    b->len = 0;
    while (!ts_node_is_null(n)) {
        uint8_t k = afd_gate_kind_of(c, n);
        if (k == K_IDENT) {
            if (np >= 16)
                return 0;
            parts[np++] = n;
            break;
        }
        if (k != K_ATTR || np >= 15)
            return 0;
        TSNode a = afd_pyast_field(n, AFD_PYF_ATTRIBUTE);
        if (ts_node_is_null(a) || afd_gate_kind_of(c, a) != K_IDENT)
            return 0;
        parts[np++] = a;
        n = afd_pyast_field(n, AFD_PYF_OBJECT);
    }
    if (np == 0)
        return 0;
    size_t l0;
    const char *t0 = afd_pyast_text(c->src, c->len, parts[np - 1], &l0);
    int done = 0;
    for (size_t i = c->n_imps; i-- > 0 && !done;) /* the last import of a name wins, as in Python */
        if (strlen(c->imps[i].local) == l0 && memcmp(c->imps[i].local, t0, l0) == 0) {
            afd_buf_printf(b, "%s", c->imps[i].qual);
            done = 1;
        }
    if (!done)
        afd_buf_put(b, t0, l0);
    for (size_t i = np - 1; i-- > 0;) {
        size_t l = 0;
        const char *t = afd_pyast_text(c->src, c->len, parts[i], &l);
        afd_buf_put_u8(b, '.');
        afd_buf_put(b, t, l);
    }
    afd_buf_put_u8(b, 0);
    b->len--;
    return b->len > 0 && b->len < MAX_DOTTED && !b->err;
}

int afd_gate_in_list(const char *s, const char *const *list)
{
    for (size_t i = 0; list[i]; i++)
        if (strcmp(s, list[i]) == 0)
            return 1;
    return 0;
}

const char *afd_gate_last_part(const char *s)
{
    const char *d = strrchr(s, '.');
    return d ? d + 1 : s;
}

void afd_gate_add_fact(ctx *c, uint8_t cat, const char *s, size_t len, uint32_t fn, uint32_t byte, double val)
{
    facts *f = c->out;
    if (c->rc)
        return;
    if (afd_array_grow((void **)&f->v, &f->cap, f->n + 1, sizeof *f->v, 16) < 0) {
        c->rc = AFD_ENOMEM;
        return;
    }
    uint32_t off = (uint32_t)f->strs.len;
    afd_buf_put(&f->strs, s, len);
    if (f->strs.err) {
        c->rc = f->strs.err;
        return;
    }
    f->v[f->n++] = (fact){cat, off, (uint32_t)len, fn, byte, val};
}

void afd_gate_add_fact_str(ctx *c, uint8_t cat, const char *s)
{
    afd_gate_add_fact(c, cat, s, strlen(s), 0, 0, 0);
}

void afd_gate_add_edge(ctx *c, const char *outer, const char *inner)
{
    if (c->out->n_edges >= MAX_EDGES) {
        c->out->edges_overflow = 1;
        return;
    }
    c->out->n_edges++;
    char e[2 * MAX_NORM + 64];
    snprintf(e, sizeof e, "%s\x1f%s", outer, inner);
    afd_gate_add_fact_str(c, C_EDGE, e);
}

/* The ancestor i levels above the current node (1 = parent), or a null node. */
TSNode afd_gate_ancestor(const ctx *c, size_t i)
{
    TSNode z;
    memset(&z, 0, sizeof z);
    if (i >= c->n_anc)
        return z;
    return c->anc[c->n_anc - 1 - i];
}

int afd_gate_is_scope_kind(uint8_t k)
{
    return k == K_FUNCDEF || k == K_LAMBDA || k == K_CLASSDEF;
}

/* Start byte + 1 of the enclosing function, 0 at module level (or too deep to tell). */
uint32_t afd_gate_enclosing_fn(const ctx *c)
{
    for (size_t i = 1; i <= MAX_ANCESTOR_HOPS; i++) {
        TSNode a = afd_gate_ancestor(c, i);
        if (ts_node_is_null(a))
            break;
        if (afd_gate_is_scope_kind(afd_gate_kind_of(c, a)))
            return ts_node_start_byte(a) + 1;
    }
    return 0;
}

typedef struct search {
    uint8_t k1, k2;
    unsigned seen;
    int found;
} search;

static int search_enter(void *vs, TSNode x)
{
    search *q = vs;
    uint8_t k = GATE_KIND[afd_pyast_kind(x)];
    if (k == q->k1 || k == q->k2) {
        q->found = 1;
        return AFD_PYAST_STOP;
    }
    if (++q->seen > MAX_SEARCH_NODES)
        return AFD_PYAST_STOP;
    return afd_gate_is_scope_kind(k) ? AFD_PYAST_SKIP : AFD_PYAST_DESCEND;
}

/* Whether n's subtree, nested scopes left out, holds a node of kind k1 or k2. The search is bounded:
 * past MAX_SEARCH_NODES it answers no (a try body that large is no retry of one call). It has a
 * cursor of its own: the walk's is in use. */
int afd_gate_subtree_has(ctx *c, TSNode n, uint8_t k1, uint8_t k2)
{
    (void)c;
    search q = {k1, k2, 0, 0};
    afd_pyast_walk(NULL, n, search_enter, NULL, &q); /* it allocates nothing that can fail */
    return q.found;
}

/* Whether a block has statements and ok() holds for each. */
int afd_gate_block_statements_all(const ctx *c, TSNode block, int (*ok)(const ctx *, TSNode))
{
    uint32_t nc = ts_node_named_child_count(block);
    if (nc == 0)
        return 0;
    for (uint32_t i = 0; i < nc; i++)
        if (!ok(c, ts_node_named_child(block, i)))
            return 0;
    return 1;
}

int afd_gate_block_has_top(const ctx *c, TSNode block, uint8_t k1, uint8_t k2, uint8_t k3)
{
    uint32_t nc = ts_node_named_child_count(block);
    for (uint32_t i = 0; i < nc; i++) {
        uint8_t k = afd_gate_kind_of(c, ts_node_named_child(block, i));
        if (k == k1 || k == k2 || k == k3)
            return 1;
    }
    return 0;
}

TSNode afd_gate_block_child(const ctx *c, TSNode n)
{
    uint32_t nc = ts_node_named_child_count(n);
    for (uint32_t i = 0; i < nc; i++) {
        TSNode k = ts_node_named_child(n, i);
        if (afd_gate_kind_of(c, k) == K_BLOCK)
            return k;
    }
    TSNode z;
    memset(&z, 0, sizeof z);
    return z;
}

/* ---- imports ---- */

static void add_import(ctx *c, TSNode local, const char *qual)
{
    size_t l = 0;
    const char *t = afd_pyast_text(c->src, c->len, local, &l);
    if (l == 0 || l >= sizeof c->imps[0].local || strlen(qual) >= MAX_DOTTED || c->rc ||
        c->n_imps >= MAX_IMPORTS)
        return;
    if (afd_array_grow((void **)&c->imps, &c->cap_imps, c->n_imps + 1, sizeof *c->imps, 16) < 0) {
        c->rc = AFD_ENOMEM;
        return;
    }
    imp *m = &c->imps[c->n_imps++];
    memcpy(m->local, t, l);
    m->local[l] = 0;
    snprintf(m->qual, sizeof m->qual, "%s", qual);
}

void afd_gate_visit_import(ctx *c, TSNode n, int from)
{
    char mod[MAX_DOTTED] = "";
    if (from) {
        TSNode m = afd_pyast_field(n, AFD_PYF_MODULE_NAME);
        size_t l = 0;
        const char *t = ts_node_is_null(m) ? "" : afd_pyast_text(c->src, c->len, m, &l);
        if (ts_node_is_null(m) || afd_gate_kind_of(c, m) != K_DOTTED_NAME || l >= sizeof mod)
            return; /* relative imports name the project's own modules */
        memcpy(mod, t, l);
        mod[l] = 0;
    }
    uint32_t nc = ts_node_named_child_count(n);
    for (uint32_t i = 0; i < nc; i++) {
        TSNode k = ts_node_named_child(n, i);
        uint8_t kk = afd_gate_kind_of(c, k);
        TSNode name = k, alias;
        memset(&alias, 0, sizeof alias);
        if (kk == K_ALIASED_IMPORT) {
            name = afd_pyast_field(k, AFD_PYF_NAME);
            alias = afd_pyast_field(k, AFD_PYF_ALIAS);
        } else if (kk != K_DOTTED_NAME) {
            continue;
        }
        if (ts_node_is_null(name) || (from && ts_node_eq(name, afd_pyast_field(n, AFD_PYF_MODULE_NAME))))
            continue;
        size_t l = 0;
        const char *t = afd_pyast_text(c->src, c->len, name, &l);
        char q[MAX_DOTTED];
        size_t ml = from ? strlen(mod) + 1 : 0;
        if (ml + l >= sizeof q)
            continue; /* a name that long is no module we know */
        if (from) {
            memcpy(q, mod, ml - 1);
            q[ml - 1] = '.';
        }
        memcpy(q + ml, t, l);
        q[ml + l] = 0;
        if (!ts_node_is_null(alias))
            add_import(c, alias, q);
        else if (from)
            add_import(c, name, q);
        /* `import a.b` binds a: nothing to rename */
    }
}

/* ---- parsing one side ---- */

typedef struct bind {
    uint32_t fn, byte;
    const char *s;
    size_t len;
} bind;

/* Task bindings by (function, text, byte). */
static int cmp_bind(const void *x, const void *y)
{
    const bind *a = x, *b = y;
    if (a->fn != b->fn)
        return a->fn < b->fn ? -1 : 1;
    int r = memcmp(a->s, b->s, a->len < b->len ? a->len : b->len);
    if (r)
        return r;
    if (a->len != b->len)
        return a->len < b->len ? -1 : 1;
    return (a->byte > b->byte) - (a->byte < b->byte);
}

/* An `await name` is an await of a task handle when the same function bound name to a new task
 * earlier (in source order). Bindings are sorted once; each await looks up the earliest. */
static void derive_task_awaits(ctx *c)
{
    facts *f = c->out;
    size_t nb = 0;
    for (size_t i = 0; i < f->n; i++)
        nb += f->v[i].cat == C_TASKBIND;
    if (nb == 0)
        return;
    bind *bs = malloc(nb * sizeof *bs);
    if (!bs) {
        c->rc = AFD_ENOMEM;
        return;
    }
    /* The texts live in f->strs, which afd_gate_add_fact may move: the awaits are collected first. */
    nb = 0;
    for (size_t i = 0; i < f->n; i++)
        if (f->v[i].cat == C_TASKBIND)
            bs[nb++] =
                (bind){f->v[i].fn, f->v[i].byte, (const char *)f->strs.data + f->v[i].off, f->v[i].len};
    qsort(bs, nb, sizeof *bs, cmp_bind);
    afd_buf found;
    afd_buf_init(&found);
    for (size_t i = 0; i < f->n; i++) {
        if (f->v[i].cat != C_AWAIT)
            continue;
        bind key = {f->v[i].fn, 0, (const char *)f->strs.data + f->v[i].off, f->v[i].len};
        size_t lo = 0, hi = nb;
        while (lo < hi) { /* the first binding not before (fn, text, byte 0): the earliest */
            size_t mid = lo + (hi - lo) / 2;
            if (cmp_bind(&bs[mid], &key) < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < nb && bs[lo].fn == key.fn && bs[lo].len == key.len && bs[lo].byte < f->v[i].byte &&
            memcmp(bs[lo].s, key.s, key.len) == 0) {
            afd_buf_printf(&found, "await %.*s", (int)key.len, key.s);
            afd_buf_put_u8(&found, 0); /* NUL-separated list */
        }
    }
    free(bs);
    if (found.err)
        c->rc = found.err;
    for (size_t off = 0; off < found.len && !c->rc;) {
        const char *t = (const char *)found.data + off;
        afd_gate_add_fact_str(c, C_TASKAWAIT, t);
        off += strlen(t) + 1;
    }
    afd_buf_finish(&found);
}

static int error_enter(void *line, TSNode n)
{
    if (afd_pyast_is_error(n) || ts_node_is_missing(n)) {
        *(uint32_t *)line = afd_pyast_line(n);
        return AFD_PYAST_STOP;
    }
    return ts_node_has_error(n) ? AFD_PYAST_DESCEND : AFD_PYAST_SKIP;
}

/* The line of the first ERROR or MISSING node (only subtrees with an error are entered). */
static uint32_t first_error_line(TSNode root)
{
    uint32_t line = afd_pyast_line(root);
    afd_pyast_walk(NULL, root, error_enter, NULL, &line); /* it allocates nothing that can fail */
    return line;
}

int afd_gate_analyse(ctx *c, const char *src, size_t len, facts *out)
{
    out->present = src != NULL;
    if (!src)
        return 0;
    if (len > AFD_GATE_MAX_SOURCE) {
        snprintf(out->why, sizeof out->why, "too large to afd_gate_analyse (%zu bytes)", len);
        return 0;
    }
    int bad = 0; /* pysrc refused something: the side does not parse as it is */
    afd_pysrc ps;
    int prc = afd_pysrc_parse(&ps, src, len, afd_pyast_flag_refused, &bad);
    if (prc == AFD_ENOMEM) {
        afd_pysrc_finish(&ps);
        return prc;
    }
    if (bad)
        snprintf(out->why, sizeof out->why, "brackets or continuations nested too deep");
    if (prc < 0) {
        snprintf(out->why, sizeof out->why,
                 "the parse timed out or its tree is too wide to afd_gate_analyse");
        afd_pysrc_finish(&ps);
        return 0;
    }
    TSNode root = ts_tree_root_node(ps.tree);
    if (!bad && ts_node_has_error(root))
        snprintf(out->why, sizeof out->why, "tree-sitter finds a syntax error at line %u",
                 (unsigned)first_error_line(root));
    out->parse_ok = !bad && !ts_node_has_error(root);
    c->src = ps.text;
    c->len = len;
    c->out = out;
    c->n_imps = 0;
    c->rc = 0;
    c->cur = ts_tree_cursor_new(root);
    int rc = afd_gate_walk(c, root, 1);
    if (rc == 0)
        rc = afd_gate_walk(c, root, 0);
    if (rc == 0) {
        derive_task_awaits(c);
        rc = c->rc;
    }
    if (rc == 0 && (out->toks.err || out->strs.err))
        rc = AFD_ENOMEM;
    ts_tree_cursor_delete(&c->cur);
    afd_pysrc_finish(&ps);
    c->src = NULL;
    out->analysed = rc == 0;
    return rc;
}
