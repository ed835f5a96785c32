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
 *      an alias, visited in source order so that aliases follow the bindings as they happen.
 *
 * Strings (names, paths, qualified names) are interned in one buffer that is handed out in the
 * same allocation as the access array: a function with a million accesses stores its qualified
 * name once, and afd_pyscan_finish frees everything with the array. The buffer is bounded
 * (AFD_EFULL) so that a crafted source -- a long alias path used under a million distinct keys --
 * cannot grow the output beyond a fixed multiple of the input.
 *
 * Beyond pyscan.h: AFD_EFULL also answers a source whose parse exceeds its time limit (garbage
 * megabytes long) or whose tree libtree-sitter broke (see pysrc.h), and the error lines
 * include those of brackets nested too deep and of long runs of continuation-only lines. */
#include "pyscan.h"
#include "afd.h"
#include "buf.h"
#include "pyast.h"

#include <stdlib.h>
#include <string.h>

#define NONE32 0xffffffffu
/* Name resolution walks at most this many enclosing scopes before it consults the module: real
 * code nests a few levels, and a crafted one (a million nested lambdas) must not make every name
 * a walk to the root. */
#define MAX_SCOPE_HOPS 64u

/* ---- node kinds: the few dozen node types the walks tell apart ---- */

enum {
    K_OTHER,
    K_SKIP, /* never holds an access: comments, type annotations, string bodies */
    K_IDENT,
    K_ATTR,
    K_SUBSCRIPT,
    K_CALL,
    K_STRING,
    K_INTEGER,
    K_UNARY,
    K_PAREN,
    K_CONTAINER, /* target lists: a store into one is a store into each element */
    K_ASSIGN,
    K_AUGASSIGN,
    K_NAMED_EXPR,
    K_DELETE,
    K_FOR,
    K_FOR_IN,
    K_WITH,
    K_AS_PATTERN,
    K_AWAIT,
    K_GLOBAL,
    K_NONLOCAL,
    K_FUNCDEF,
    K_CLASSDEF,
    K_LAMBDA,
    K_PARAMS,
    K_DEFAULT_PARAM,
    K_TYPED_PARAM,
    K_TYPED_DEFAULT_PARAM,
    K_IMPORT,
    K_DOTTED_NAME,
    K_ALIASED_IMPORT,
    K_KEYWORD_ARG,
    K_COMP,
    K_CASE_PATTERN,
    K_KEYWORD_PATTERN,
    K_CLASS_PATTERN,
    K_STRING_START,
    K_STRING_END,
    K_INTERPOLATION,
};

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

/* The methods that change their receiver; any other method call reads it. */
static const char *const MUTATING[] = {
    "append", "extend",     "insert",      "update",      "pop",        "popitem",    "setdefault",
    "clear",  "add",        "discard",     "remove",      "sort",       "reverse",    "__setitem__",
    "__delitem__", "appendleft", "extendleft", "popleft",
};

/* ---- scopes and names ---- */

enum { S_MODULE, S_FUNCTION, S_CLASS, S_LAMBDA, S_COMP };

typedef struct pyscope {
    const void *id;       /* the defining node (TSNode.id and start byte identify it) */
    uint32_t start;
    uint32_t parent;
    uint32_t fnscope;     /* nearest function through lambdas and comprehensions, or NONE32 */
    uint32_t qparent;     /* nearest module, function or class: what a qualified name extends */
    uint32_t noncomp;     /* nearest scope that is not a comprehension: where `:=` binds */
    uint32_t qual_off;    /* interned qualified name (functions and classes) */
    uint32_t fn_name_off; /* interned name accesses here are attributed to */
    uint8_t kind;
} pyscope;

/* NF_BIND: the scope binds the name (so it is not a global there); NF_VAR: as a variable (a
 * parameter, a target, a capture), not only by import, def or class; NF_GDECL: declared `global`;
 * NF_GLOBALVAR (module scope only): a module global. */
enum { NF_BIND = 1, NF_GDECL = 2, NF_GLOBALVAR = 4, NF_VAR = 8 };
#define NF_LOCALVAR (NF_BIND | NF_VAR)

typedef struct nament {
    uint32_t scope, off, len; /* name = src[off, off + len) */
    uint8_t flags;
} nament;

typedef struct alias {
    uint32_t fn, off, len; /* the function and the aliasing name (src[off, off + len)) */
    uint32_t rname_off, path_off;
    uint8_t root, active;
} alias;

typedef struct strent {
    uint32_t off, len;
} strent;

/* An open-addressing table of indices into an entry array the caller keeps. */
typedef struct itab {
    uint32_t *slot; /* entry index + 1; 0 marks an empty slot */
    uint64_t *hash;
    size_t cap, used;
} itab;

typedef int (*itab_eq)(const void *env, uint32_t idx);

/* ---- the walks' state ---- */

enum { OP_VISIT, OP_BIND, OP_UNBIND };
/* Modes of the access walk: how the visited expression is used. M_MWRITE is the receiver of a
 * mutating method call. */
enum { M_READ, M_STORE, M_DEL, M_AUG, M_MWRITE };
/* Modes of the binding walk. */
enum { A_GEN, A_BIND, A_BIND_GLOBAL, A_CASE, A_PARAM };

typedef struct item {
    TSNode node;
    uint32_t scope;
    uint32_t aux; /* A_PARAM: the function or lambda whose parameter this is */
    uint8_t op;
    uint8_t mode;
} item;

typedef afd_pykid kid;

enum { SEG_ATTR, SEG_SUB };

typedef struct seg {
    TSNode node; /* SEG_ATTR: the attribute's identifier; SEG_SUB: the only key, or null for [*] */
    uint8_t kind;
} seg;

enum { R_NONE, R_ROOT, R_ALIAS };

typedef struct res {
    uint8_t kind, root;
    uint32_t name_off, path_off;
} res;

typedef struct racc {
    uint32_t start, seq, line;
    uint32_t name_off, path_off, fn_off;
    uint8_t root, write;
} racc;

typedef struct u32vec {
    uint32_t *v;
    size_t n, cap;
} u32vec;

typedef struct ctx {
    const char *src;
    size_t len;
    TSTreeCursor cur;
    kid *kids;
    size_t n_kids, cap_kids;
    item *stk;
    size_t n_stk, cap_stk;
    seg *segs;
    size_t n_segs, cap_segs;
    afd_buf path, tmp, strs;
    size_t budget; /* bytes the interned strings may take */
    size_t work;   /* bytes of paths and qualified names built so far (bounded by 4 budgets) */
    strent *sents;
    size_t n_sents, cap_sents;
    itab str_tab;
    pyscope *scopes;
    size_t n_scopes, cap_scopes;
    itab scope_tab;
    nament *names;
    size_t n_names, cap_names;
    itab name_tab;
    alias *aliases;
    size_t n_aliases, cap_aliases;
    itab alias_tab;
    racc *acc;
    size_t n_acc, cap_acc;
    uint32_t seq;
    u32vec yields, errors;
    uint32_t off_empty, off_self, off_cls;
} ctx;

/* ---- small utilities ---- */

static int u32_push(u32vec *v, uint32_t x)
{
    int rc = afd_pyast_grow((void **)&v->v, &v->cap, v->n + 1, sizeof *v->v);
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

/* Length of the valid UTF-8 sequence at p (at most n bytes), or 0: overlong forms, surrogates and
 * code points above U+10FFFF are invalid, as in Python's decoder. */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
    unsigned c = p[0];
    if (c < 0x80)
        return 1;
    size_t len;
    uint32_t cp, min;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
        cp = c & 0x1f;
        min = 0x80;
    } else if ((c & 0xf0) == 0xe0) {
        len = 3;
        cp = c & 0x0f;
        min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        cp = c & 0x07;
        min = 0x10000;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

/* Appends s[0, n) with every control byte and every byte of invalid UTF-8 replaced by '?': the
 * strings go to Python and into reports, which both want valid UTF-8 without NULs. */
static void put_clean(afd_buf *b, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        size_t k = p[i] < 0x20 || p[i] == 0x7f ? 0 : utf8_seq(p + i, n - i);
        if (k == 0) {
            afd_buf_put(b, "?", 1);
            i++;
        } else {
            afd_buf_put(b, p + i, k);
            i += k;
        }
    }
}

static void put_str(afd_buf *b, const char *s)
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

static uint32_t itab_find(const itab *t, uint64_t h, itab_eq eq, const void *env)
{
    if (!t->cap)
        return NONE32;
    for (size_t i = (size_t)h & (t->cap - 1); t->slot[i]; i = (i + 1) & (t->cap - 1))
        if (t->hash[i] == h && eq(env, t->slot[i] - 1))
            return t->slot[i] - 1;
    return NONE32;
}

static int itab_insert(itab *t, uint64_t h, uint32_t idx)
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

static uint64_t hash_bytes(uint64_t seed, const char *s, size_t n)
{
    return afd_mix64(afd_fnv1a(afd_fnv1a(AFD_FNV_INIT, &seed, sizeof seed), s, n));
}

/* ---- interned strings ---- */

/* Counts n bytes of string building. Interning bounds what is kept, not what is built: a long
 * alias path used a million times would be copied a million times, so the copying is bounded
 * too. */
static int charge(ctx *c, size_t n)
{
    c->work += n;
    return c->work > 4 * c->budget ? AFD_EFULL : 0;
}

typedef struct str_key {
    const ctx *c;
    const char *s;
    size_t n;
} str_key;

static int str_eq(const void *env, uint32_t idx)
{
    const str_key *k = env;
    const strent *e = &k->c->sents[idx];
    return e->len == k->n && memcmp(k->c->strs.data + e->off, k->s, k->n) == 0;
}

/* The offset of the NUL-terminated copy of s[0, n) in the string buffer. s must not point into
 * that buffer (it may move). */
static int intern(ctx *c, const char *s, size_t n, uint32_t *off)
{
    uint64_t h = hash_bytes(0, s, n);
    str_key k = {c, s, n};
    uint32_t i = itab_find(&c->str_tab, h, str_eq, &k);
    if (i != NONE32) {
        *off = c->sents[i].off;
        return 0;
    }
    if (n + 1 > c->budget - c->strs.len)
        return AFD_EFULL;
    int rc = afd_pyast_grow((void **)&c->sents, &c->cap_sents, c->n_sents + 1, sizeof *c->sents);
    if (rc < 0)
        return rc;
    size_t at = c->strs.len;
    afd_buf_put(&c->strs, s, n);
    afd_buf_put(&c->strs, "", 1);
    if (c->strs.err)
        return c->strs.err;
    c->sents[c->n_sents] = (strent){(uint32_t)at, (uint32_t)n};
    rc = itab_insert(&c->str_tab, h, (uint32_t)c->n_sents);
    if (rc < 0)
        return rc;
    c->n_sents++;
    *off = (uint32_t)at;
    return 0;
}

/* ---- nodes ---- */

static uint8_t kind_of(const ctx *c, TSNode n)
{
    (void)c;
    return SCAN_KIND[afd_pyast_kind(n)];
}

static const char *text_of(const ctx *c, TSNode n, size_t *len)
{
    return afd_pyast_text(c->src, c->len, n, len);
}

static int text_is(const ctx *c, TSNode n, const char *s)
{
    return afd_pyast_text_is(c->src, c->len, n, s);
}

/* An identifier the walks can use: present, not made up by error recovery, not empty. */
static int ident_ok(const ctx *c, TSNode n)
{
    size_t len;
    if (afd_pyast_is_bad(n) || kind_of(c, n) != K_IDENT)
        return 0;
    text_of(c, n, &len);
    return len > 0;
}

static int list_kids(ctx *c, TSNode n)
{
    return afd_pyast_children(&c->cur, n, &c->kids, &c->n_kids, &c->cap_kids);
}

/* Whether the node (with, for, for_in_clause) starts with the `async` keyword. */
static int has_async(const ctx *c)
{
    for (size_t i = 0; i < c->n_kids; i++)
        if (!c->kids[i].named && strcmp(ts_node_type(c->kids[i].node), "async") == 0)
            return 1;
    return 0;
}

static int push(ctx *c, TSNode n, uint32_t scope, uint32_t aux, uint8_t op, uint8_t mode)
{
    if (ts_node_is_null(n))
        return 0;
    int rc = afd_pyast_grow((void **)&c->stk, &c->cap_stk, c->n_stk + 1, sizeof *c->stk);
    if (rc < 0)
        return rc;
    c->stk[c->n_stk++] = (item){n, scope, aux, op, mode};
    return 0;
}

/* Pushes the named children listed in c->kids, last first, so that they are visited in source
 * order. */
static int push_kids(ctx *c, uint32_t scope, uint8_t op, uint8_t mode)
{
    for (size_t i = c->n_kids; i-- > 0;) {
        if (!c->kids[i].named)
            continue;
        int rc = push(c, c->kids[i].node, scope, 0, op, mode);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* ---- scopes ---- */

typedef struct scope_key {
    const ctx *c;
    const void *id;
    uint32_t start;
} scope_key;

static int scope_eq(const void *env, uint32_t idx)
{
    const scope_key *k = env;
    return k->c->scopes[idx].id == k->id && k->c->scopes[idx].start == k->start;
}

static uint64_t scope_hash(TSNode n)
{
    return afd_mix64((uint64_t)(uintptr_t)n.id ^ ((uint64_t)ts_node_start_byte(n) << 40));
}

/* Creates the scope that node n (of the given kind) opens inside parent; name is the function's
 * or class's name node. */
static int scope_add(ctx *c, TSNode n, uint8_t kind, uint32_t parent, TSNode name, uint32_t *out)
{
    int rc = afd_pyast_grow((void **)&c->scopes, &c->cap_scopes, c->n_scopes + 1, sizeof *c->scopes);
    if (rc < 0)
        return rc;
    uint32_t idx = (uint32_t)c->n_scopes;
    pyscope s = {n.id, ts_node_start_byte(n), NONE32, NONE32, idx, idx, c->off_empty, c->off_empty, kind};
    if (kind != S_MODULE) {
        const pyscope *p = &c->scopes[parent];
        int through = p->kind == S_LAMBDA || p->kind == S_COMP;
        s.parent = parent;
        s.qparent = through ? p->qparent : parent;
        s.noncomp = kind == S_COMP ? p->noncomp : idx;
        s.fnscope = kind == S_LAMBDA || kind == S_COMP ? p->fnscope : NONE32;
        s.fn_name_off = p->fn_name_off;
    }
    if (kind == S_FUNCTION || kind == S_CLASS) {
        /* Python's __qualname__: "C.m", "f.<locals>.g". */
        const pyscope *q = &c->scopes[s.qparent];
        c->tmp.len = 0;
        if (q->kind != S_MODULE) {
            put_str(&c->tmp, (const char *)c->strs.data + q->qual_off);
            put_str(&c->tmp, q->kind == S_FUNCTION ? ".<locals>." : ".");
        }
        size_t len;
        const char *t = ident_ok(c, name) ? text_of(c, name, &len) : (len = 1, "?");
        put_clean(&c->tmp, t, len);
        if (c->tmp.err)
            return c->tmp.err;
        if ((rc = charge(c, c->tmp.len)) < 0)
            return rc;
        rc = intern(c, (const char *)c->tmp.data, c->tmp.len, &s.qual_off);
        if (rc < 0)
            return rc;
    }
    if (kind == S_FUNCTION) {
        s.fnscope = idx;
        s.fn_name_off = s.qual_off;
    }
    c->scopes[idx] = s;
    rc = itab_insert(&c->scope_tab, scope_hash(n), idx);
    if (rc < 0)
        return rc;
    c->n_scopes++;
    *out = idx;
    return 0;
}

/* The scope node n opens: made by the binding walk, or made now (empty) if that walk did not
 * reach the node, so that the two walks need not agree node for node. */
static int scope_get(ctx *c, TSNode n, uint8_t kind, uint32_t parent, TSNode name, uint32_t *out)
{
    scope_key k = {c, n.id, ts_node_start_byte(n)};
    uint32_t i = itab_find(&c->scope_tab, scope_hash(n), scope_eq, &k);
    if (i != NONE32) {
        *out = i;
        return 0;
    }
    return scope_add(c, n, kind, parent, name, out);
}

typedef struct name_key {
    const ctx *c;
    uint32_t scope;
    const char *s;
    size_t n;
} name_key;

static int name_eq(const void *env, uint32_t idx)
{
    const name_key *k = env;
    const nament *e = &k->c->names[idx];
    return e->scope == k->scope && e->len == k->n && memcmp(k->c->src + e->off, k->s, k->n) == 0;
}

static uint8_t name_flags(const ctx *c, uint32_t scope, const char *s, size_t n)
{
    name_key k = {c, scope, s, n};
    uint32_t i = itab_find(&c->name_tab, hash_bytes(scope, s, n), name_eq, &k);
    return i == NONE32 ? 0 : c->names[i].flags;
}

static int name_add(ctx *c, uint32_t scope, TSNode id, uint8_t flags)
{
    if (!ident_ok(c, id))
        return 0;
    size_t n;
    const char *s = text_of(c, id, &n);
    uint64_t h = hash_bytes(scope, s, n);
    name_key k = {c, scope, s, n};
    uint32_t i = itab_find(&c->name_tab, h, name_eq, &k);
    if (i != NONE32) {
        c->names[i].flags |= flags;
        return 0;
    }
    int rc = afd_pyast_grow((void **)&c->names, &c->cap_names, c->n_names + 1, sizeof *c->names);
    if (rc < 0)
        return rc;
    c->names[c->n_names] = (nament){scope, (uint32_t)(s - c->src), (uint32_t)n, flags};
    rc = itab_insert(&c->name_tab, h, (uint32_t)c->n_names);
    if (rc < 0)
        return rc;
    c->n_names++;
    return 0;
}

/* ---- aliases ---- */

typedef struct alias_key {
    const ctx *c;
    uint32_t fn;
    const char *s;
    size_t n;
} alias_key;

static int alias_eq(const void *env, uint32_t idx)
{
    const alias_key *k = env;
    const alias *a = &k->c->aliases[idx];
    return a->fn == k->fn && a->len == k->n && memcmp(k->c->src + a->off, k->s, k->n) == 0;
}

static alias *alias_find(const ctx *c, uint32_t fn, const char *s, size_t n)
{
    alias_key k = {c, fn, s, n};
    uint32_t i = itab_find(&c->alias_tab, hash_bytes(fn, s, n), alias_eq, &k);
    return i == NONE32 ? NULL : &c->aliases[i];
}

static void alias_clear(ctx *c, uint32_t fn, TSNode id)
{
    size_t n;
    const char *s = text_of(c, id, &n);
    alias *a = fn == NONE32 ? NULL : alias_find(c, fn, s, n);
    if (a)
        a->active = 0;
}

static int alias_set(ctx *c, uint32_t fn, TSNode id, const res *r, uint32_t path_off)
{
    size_t n;
    const char *s = text_of(c, id, &n);
    alias *a = alias_find(c, fn, s, n);
    if (!a) {
        int rc = afd_pyast_grow((void **)&c->aliases, &c->cap_aliases, c->n_aliases + 1, sizeof *c->aliases);
        if (rc < 0)
            return rc;
        rc = itab_insert(&c->alias_tab, hash_bytes(fn, s, n), (uint32_t)c->n_aliases);
        if (rc < 0)
            return rc;
        a = &c->aliases[c->n_aliases++];
        a->fn = fn;
        a->off = (uint32_t)(s - c->src);
        a->len = (uint32_t)n;
    }
    a->root = r->root;
    a->rname_off = r->name_off;
    a->path_off = path_off;
    a->active = 1;
    return 0;
}

/* ---- walk 1: errors ---- */

static int error_enter(void *vc, TSNode n)
{
    if (afd_pyast_is_error(n) || ts_node_is_missing(n)) {
        int rc = u32_push(&((ctx *)vc)->errors, afd_pyast_line(n));
        return rc < 0 ? rc : AFD_PYAST_SKIP;
    }
    return ts_node_has_error(n) ? AFD_PYAST_DESCEND : AFD_PYAST_SKIP;
}

static int collect_errors(ctx *c, TSNode root)
{
    return afd_pyast_walk(&c->cur, root, error_enter, NULL, c);
}

/* ---- walk 2: scopes and bindings ---- */

/* One parameter of a def or lambda: its names bind in the new scope, its default value is
 * evaluated in the enclosing one. */
static int bind_param(ctx *c, TSNode n, uint32_t outer, uint32_t inner)
{
    int rc = 0;
    switch (kind_of(c, n)) {
    case K_IDENT:
        return name_add(c, inner, n, NF_LOCALVAR);
    case K_DEFAULT_PARAM:
    case K_TYPED_DEFAULT_PARAM:
        rc = push(c, afd_pyast_field(n, AFD_PYF_NAME), inner, 0, OP_VISIT, A_BIND);
        if (rc == 0)
            rc = push(c, afd_pyast_field(n, AFD_PYF_VALUE), outer, 0, OP_VISIT, A_GEN);
        return rc;
    case K_TYPED_PARAM:
        rc = list_kids(c, n);
        for (size_t i = 0; rc == 0 && i < c->n_kids; i++)
            if (c->kids[i].named && kind_of(c, c->kids[i].node) != K_SKIP)
                rc = push(c, c->kids[i].node, inner, 0, OP_VISIT, A_BIND);
        return rc;
    case K_CONTAINER:
        return push(c, n, inner, 0, OP_VISIT, A_BIND);
    default:
        return 0;
    }
}

/* Names bound by a match-case pattern: captures (a dotted name of one identifier), stars and
 * `as` targets; a dotted name with a dot is a value pattern, and a keyword pattern's keyword is
 * an attribute name. */
static int bind_case(ctx *c, TSNode n, uint32_t scope)
{
    uint8_t k = kind_of(c, n);
    if (k == K_IDENT)
        return name_add(c, scope, n, NF_LOCALVAR);
    if (k == K_DOTTED_NAME) {
        if (ts_node_named_child_count(n) == 1)
            return name_add(c, scope, ts_node_named_child(n, 0), NF_LOCALVAR);
        return 0;
    }
    int rc = list_kids(c, n);
    size_t first = c->n_kids;
    for (size_t i = 0; i < c->n_kids && first == c->n_kids; i++)
        if (c->kids[i].named)
            first = i;
    for (size_t i = c->n_kids; rc == 0 && i-- > 0;) {
        uint8_t kk = kind_of(c, c->kids[i].node);
        if (!c->kids[i].named || (k == K_KEYWORD_PATTERN && i == first && kk == K_IDENT) ||
            (k == K_CLASS_PATTERN && kk == K_DOTTED_NAME))
            continue;
        rc = push(c, c->kids[i].node, scope, 0, OP_VISIT, A_CASE);
    }
    return rc;
}

static int bind_import(ctx *c, TSNode n, uint32_t scope)
{
    int rc = list_kids(c, n);
    for (size_t i = 0; rc == 0 && i < c->n_kids; i++) {
        TSNode k = c->kids[i].node;
        if (c->kids[i].field != afd_pyast_field_id(AFD_PYF_NAME))
            continue;
        if (kind_of(c, k) == K_DOTTED_NAME) /* import a.b binds a */
            rc = name_add(c, scope, ts_node_named_child(k, 0), NF_BIND);
        else if (kind_of(c, k) == K_ALIASED_IMPORT)
            rc = name_add(c, scope, afd_pyast_field(k, AFD_PYF_ALIAS), NF_BIND);
    }
    return rc;
}

static int a_visit(ctx *c, const item *it)
{
    TSNode n = it->node;
    uint32_t sc = it->scope;
    int rc = 0;
    if (afd_pyast_is_bad(n))
        return 0;
    uint8_t k = kind_of(c, n);
    switch (it->mode) {
    case A_PARAM:
        return bind_param(c, n, sc, it->aux);
    case A_CASE:
        return bind_case(c, n, sc);
    case A_BIND:
    case A_BIND_GLOBAL:
        if (k == K_IDENT)
            return name_add(c, sc, n, it->mode == A_BIND_GLOBAL ? NF_LOCALVAR | NF_GLOBALVAR : NF_LOCALVAR);
        if (k == K_CONTAINER || k == K_PAREN) {
            rc = list_kids(c, n);
            return rc < 0 ? rc : push_kids(c, sc, OP_VISIT, it->mode);
        }
        break; /* an attribute or subscript target: its parts are expressions */
    default:
        break;
    }
    uint32_t s;
    switch (k) {
    case K_SKIP:
    case K_IDENT:
    case K_DOTTED_NAME:
        return 0;
    case K_FUNCDEF:
    case K_CLASSDEF:
    case K_LAMBDA: {
        TSNode name = afd_pyast_field(n, AFD_PYF_NAME);
        if (k != K_LAMBDA && (rc = name_add(c, sc, name, NF_BIND)) < 0)
            return rc;
        rc = scope_add(c, n, k == K_FUNCDEF ? S_FUNCTION : k == K_CLASSDEF ? S_CLASS : S_LAMBDA, sc,
                       name, &s);
        if (rc == 0)
            rc = push(c, afd_pyast_field(n, AFD_PYF_BODY), s, 0, OP_VISIT, A_GEN);
        if (rc == 0 && k == K_CLASSDEF)
            rc = push(c, afd_pyast_field(n, AFD_PYF_SUPERCLASSES), sc, 0, OP_VISIT, A_GEN);
        if (rc == 0 && k != K_CLASSDEF) {
            TSNode params = afd_pyast_field(n, AFD_PYF_PARAMETERS);
            if (!ts_node_is_null(params) && (rc = list_kids(c, params)) == 0)
                for (size_t i = c->n_kids; rc == 0 && i-- > 0;)
                    if (c->kids[i].named)
                        rc = push(c, c->kids[i].node, sc, s, OP_VISIT, A_PARAM);
        }
        return rc;
    }
    case K_COMP:
        rc = scope_add(c, n, S_COMP, sc, n, &s);
        if (rc == 0)
            rc = list_kids(c, n);
        return rc < 0 ? rc : push_kids(c, s, OP_VISIT, A_GEN);
    case K_ASSIGN:
    case K_AUGASSIGN:
        /* Module-level assignment targets are the module globals. */
        rc = push(c, afd_pyast_field(n, AFD_PYF_LEFT), sc, 0, OP_VISIT,
                  c->scopes[sc].kind == S_MODULE ? A_BIND_GLOBAL : A_BIND);
        if (rc == 0)
            rc = push(c, afd_pyast_field(n, AFD_PYF_RIGHT), sc, 0, OP_VISIT, A_GEN);
        return rc;
    case K_NAMED_EXPR:
        rc = name_add(c, c->scopes[sc].noncomp, afd_pyast_field(n, AFD_PYF_NAME), NF_LOCALVAR);
        return rc < 0 ? rc : push(c, afd_pyast_field(n, AFD_PYF_VALUE), sc, 0, OP_VISIT, A_GEN);
    case K_DELETE:
        rc = list_kids(c, n);
        return rc < 0 ? rc : push_kids(c, sc, OP_VISIT, A_BIND);
    case K_FOR:
    case K_FOR_IN:
    case K_AS_PATTERN: {
        TSFieldId target = k == K_AS_PATTERN ? afd_pyast_field_id(AFD_PYF_ALIAS) : afd_pyast_field_id(AFD_PYF_LEFT);
        rc = list_kids(c, n);
        for (size_t i = c->n_kids; rc == 0 && i-- > 0;)
            if (c->kids[i].named)
                rc = push(c, c->kids[i].node, sc, 0, OP_VISIT,
                          c->kids[i].field == target ? A_BIND : A_GEN);
        return rc;
    }
    case K_IMPORT:
        return bind_import(c, n, sc);
    case K_GLOBAL:
    case K_NONLOCAL:
        rc = list_kids(c, n);
        for (size_t i = 0; rc == 0 && i < c->n_kids; i++) {
            TSNode id = c->kids[i].node;
            if (kind_of(c, id) != K_IDENT)
                continue;
            if (k == K_NONLOCAL) {
                rc = name_add(c, sc, id, NF_LOCALVAR);
            } else {
                rc = name_add(c, sc, id, NF_GDECL);
                if (rc == 0)
                    rc = name_add(c, 0, id, NF_GLOBALVAR);
            }
        }
        return rc;
    case K_CASE_PATTERN:
        return bind_case(c, n, sc);
    default:
        rc = list_kids(c, n);
        return rc < 0 ? rc : push_kids(c, sc, OP_VISIT, A_GEN);
    }
}

/* ---- walk 3: accesses ---- */

static int root_named(ctx *c, const char *s, size_t n, uint8_t root, res *r)
{
    c->tmp.len = 0;
    put_clean(&c->tmp, s, n);
    if (c->tmp.err)
        return c->tmp.err;
    r->kind = R_ROOT;
    r->root = root;
    r->path_off = c->off_empty;
    return intern(c, (const char *)c->tmp.data, c->tmp.len, &r->name_off);
}

/* What identifier id denotes in scope sc, by Python's rules: the innermost scope that binds it
 * (a class body only for code directly in it), `global` declarations, the function's aliases,
 * then the module globals. */
static int resolve(ctx *c, TSNode id, uint32_t sc, res *r)
{
    memset(r, 0, sizeof *r);
    size_t n;
    const char *s = text_of(c, id, &n);
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
        uint8_t f = name_flags(c, cur, s, n);
        if (f & NF_GDECL)
            return root_named(c, s, n, AFD_ROOT_GLOBAL, r);
        if (p->kind == S_FUNCTION && !seen_fn) {
            seen_fn = 1;
            const alias *a = alias_find(c, cur, s, n);
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
    if (name_flags(c, 0, s, n) & NF_GLOBALVAR)
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
        uint8_t k = kind_of(c, e);
        seg sg = {{{0}, 0, 0}, SEG_ATTR};
        TSNode next;
        if ((k == K_ATTR || k == K_SUBSCRIPT) && ts_node_has_error(e)) {
            /* `self.a<junk>.b`, `self.d[k` (a MISSING bracket): the chain is broken where the
             * error is; what precedes it is still read. */
            if ((rc = list_kids(c, e)) < 0)
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
                            rc = push(c, c->kids[i].node, sc, 0, OP_VISIT, M_READ);
                if (rc == 0 && push_keys)
                    rc = push(c, base, sc, 0, OP_VISIT, M_READ);
                return rc;
            }
        }
        if (k == K_ATTR) {
            sg.node = afd_pyast_field(e, AFD_PYF_ATTRIBUTE);
            if (!ident_ok(c, sg.node))
                valid = 0;
            next = afd_pyast_field(e, AFD_PYF_OBJECT);
        } else if (k == K_SUBSCRIPT) {
            if ((rc = list_kids(c, e)) < 0)
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
                    if (push_keys && (rc = push(c, kd->node, sc, 0, OP_VISIT, M_READ)) < 0)
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
            uint8_t ik = kind_of(c, inner);
            if (ik != K_IDENT && ik != K_ATTR && ik != K_SUBSCRIPT && ik != K_PAREN)
                break;
            e = inner;
            continue;
        } else {
            break;
        }
        rc = afd_pyast_grow((void **)&c->segs, &c->cap_segs, c->n_segs + 1, sizeof *c->segs);
        if (rc < 0)
            return rc;
        c->segs[c->n_segs++] = sg;
        e = next;
    }
    if (kind_of(c, e) != K_IDENT)
        return push_keys ? push(c, e, sc, 0, OP_VISIT, M_READ) : 0;
    if (!valid)
        return 0;
    return resolve(c, e, sc, r);
}

/* A string literal key in canonical form: double quotes, \' as ', " escaped, other escapes as
 * written; raw strings with their backslashes escaped. Returns 0 (nothing usable written) for
 * f-strings, bytes, and anything that is not plain printable UTF-8 on one line. */
static int put_string_key(ctx *c, TSNode s)
{
    if (list_kids(c, s) < 0 || c->n_kids < 2)
        return 0;
    TSNode st = c->kids[0].node, en = c->kids[c->n_kids - 1].node;
    if (kind_of(c, st) != K_STRING_START || kind_of(c, en) != K_STRING_END || afd_pyast_is_bad(en))
        return 0;
    for (size_t i = 0; i < c->n_kids; i++)
        if (kind_of(c, c->kids[i].node) == K_INTERPOLATION)
            return 0;
    size_t sl, el;
    const char *stt = text_of(c, st, &sl), *ent = text_of(c, en, &el);
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
        size_t k = utf8_seq(p + i, n - i);
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
    const char *t = text_of(c, n, &len);
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
        put_str(&c->path, digits + k);
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
    switch (kind_of(c, key)) {
    case K_STRING:
        return put_string_key(c, key);
    case K_INTEGER:
        return put_int_key(c, key, 0);
    case K_UNARY: {
        TSNode op = afd_pyast_field(key, AFD_PYF_OPERATOR), arg = afd_pyast_field(key, AFD_PYF_ARGUMENT);
        if (ts_node_is_null(op) || !text_is(c, op, "-") || afd_pyast_is_bad(arg) || kind_of(c, arg) != K_INTEGER)
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
        put_str(&c->path, (const char *)c->strs.data + r->path_off);
    for (size_t i = c->n_segs; i-- > 0;) {
        const seg *sg = &c->segs[i];
        if (sg->kind == SEG_ATTR) {
            size_t n;
            const char *t = text_of(c, sg->node, &n);
            afd_buf_put(&c->path, ".", 1);
            put_clean(&c->path, t, n);
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
    return c->path.err ? c->path.err : charge(c, c->path.len);
}

static int emit(ctx *c, TSNode at, uint32_t sc, const res *r, uint32_t path_off, int write)
{
    int rc = afd_pyast_grow((void **)&c->acc, &c->cap_acc, c->n_acc + 1, sizeof *c->acc);
    if (rc < 0)
        return rc;
    c->acc[c->n_acc++] = (racc){ts_node_start_byte(at), c->seq++, afd_pyast_line(at), r->name_off, path_off,
                                c->scopes[sc].fn_name_off, r->root, (uint8_t)write};
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
    /* Bare self or cls (passed along, returned, a method called on it) is no access: as the
     * whole object it would overlap every attribute of it. A bare local variable is one only
     * when a mutating method is called on it (`items.append(x)`): which object it names is
     * known at run time only, and merely naming it touches nothing. */
    if (c->path.len == 0 && (r.root == AFD_ROOT_SELF || r.root == AFD_ROOT_CLS ||
                             (r.root == AFD_ROOT_LOCAL && m != M_MWRITE)))
        return 0;
    uint32_t path_off;
    if ((rc = intern(c, (const char *)c->path.data, c->path.len, &path_off)) < 0)
        return rc;
    int aug_alias = c->n_segs == 0 && r.kind == R_ALIAS; /* s += x rebinds s: a read only */
    if (m == M_READ || (m == M_AUG))
        rc = emit(c, e, sc, &r, path_off, 0);
    if (rc == 0 && (m == M_STORE || m == M_DEL || m == M_MWRITE || (m == M_AUG && !aug_alias)))
        rc = emit(c, e, sc, &r, path_off, 1);
    return rc;
}

static int is_mutating(const ctx *c, TSNode method)
{
    size_t n;
    const char *t = text_of(c, method, &n);
    for (size_t i = 0; i < sizeof MUTATING / sizeof MUTATING[0]; i++)
        if (strlen(MUTATING[i]) == n && memcmp(MUTATING[i], t, n) == 0)
            return 1;
    return 0;
}

static int handle_call(ctx *c, TSNode n, uint32_t sc)
{
    TSNode fn = afd_pyast_field(n, AFD_PYF_FUNCTION);
    int rc = push(c, afd_pyast_field(n, AFD_PYF_ARGUMENTS), sc, 0, OP_VISIT, M_READ);
    if (rc < 0 || afd_pyast_is_bad(fn))
        return rc;
    if (kind_of(c, fn) == K_ATTR) {
        TSNode method = afd_pyast_field(fn, AFD_PYF_ATTRIBUTE), recv = afd_pyast_field(fn, AFD_PYF_OBJECT);
        if (ident_ok(c, method) && !ts_node_is_null(recv))
            return handle_chain(c, recv, sc, is_mutating(c, method) ? M_MWRITE : M_READ);
    }
    return push(c, fn, sc, 0, OP_VISIT, M_READ);
}

/* After `name = value` (or `name := value`): name aliases value when value is an access. */
static int b_bind(ctx *c, TSNode n, uint32_t sc)
{
    int assign = kind_of(c, n) == K_ASSIGN;
    TSNode target = afd_pyast_field(n, assign ? AFD_PYF_LEFT : AFD_PYF_NAME);
    TSNode value = afd_pyast_field(n, assign ? AFD_PYF_RIGHT : AFD_PYF_VALUE);
    /* a = b = v: a is bound to v */
    while (!afd_pyast_is_bad(value) && kind_of(c, value) == K_ASSIGN)
        value = afd_pyast_field(value, AFD_PYF_RIGHT);
    if (afd_pyast_is_bad(target))
        return 0;
    if (kind_of(c, target) != K_IDENT)
        return push(c, target, sc, 0, OP_UNBIND, 0);
    uint32_t fn = c->scopes[sc].fnscope;
    if (fn == NONE32)
        return 0; /* module and class bodies have no aliases: their names are globals or attributes */
    res tr, vr;
    int rc = resolve(c, target, sc, &tr);
    if (rc < 0)
        return rc;
    if (tr.kind == R_ROOT && tr.root != AFD_ROOT_LOCAL) { /* self, cls, a global: no alias */
        alias_clear(c, fn, target);
        return 0;
    }
    if (afd_pyast_is_bad(value) || (rc = chain_walk(c, value, sc, 0, &vr)) < 0 || vr.kind == R_NONE) {
        alias_clear(c, fn, target);
        return rc;
    }
    if ((rc = build_path(c, &vr)) < 0)
        return rc;
    /* `t = state` leaves t a variable of its own: the tracer sees the object either way. */
    if (vr.root == AFD_ROOT_LOCAL && c->path.len == 0) {
        alias_clear(c, fn, target);
        return 0;
    }
    uint32_t path_off;
    if ((rc = intern(c, (const char *)c->path.data, c->path.len, &path_off)) < 0)
        return rc;
    return alias_set(c, fn, target, &vr, path_off);
}

/* A name rebound by anything but a plain assignment (for, with, del, import, def, +=) stops
 * being an alias. */
static int b_unbind(ctx *c, TSNode n, uint32_t sc)
{
    uint32_t fn = c->scopes[sc].fnscope;
    if (fn == NONE32)
        return 0;
    switch (kind_of(c, n)) {
    case K_IDENT:
        alias_clear(c, fn, n);
        return 0;
    case K_CONTAINER:
    case K_PAREN: {
        int rc = list_kids(c, n);
        return rc < 0 ? rc : push_kids(c, sc, OP_UNBIND, 0);
    }
    case K_DOTTED_NAME:
        return push(c, ts_node_named_child(n, 0), sc, 0, OP_UNBIND, 0);
    case K_ALIASED_IMPORT:
        return push(c, afd_pyast_field(n, AFD_PYF_ALIAS), sc, 0, OP_UNBIND, 0);
    default:
        return 0;
    }
}

static int b_visit(ctx *c, const item *it)
{
    TSNode n = it->node;
    uint32_t sc = it->scope, s;
    uint8_t m = it->mode;
    int rc = 0;
    if (afd_pyast_is_bad(n))
        return 0;
    if (it->op == OP_BIND)
        return b_bind(c, n, sc);
    if (it->op == OP_UNBIND)
        return b_unbind(c, n, sc);
    uint8_t k = kind_of(c, n);
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
        return handle_call(c, n, sc);
    case K_CONTAINER:
    case K_PAREN:
        rc = list_kids(c, n);
        return rc < 0 ? rc : push_kids(c, sc, OP_VISIT, m);
    case K_ASSIGN:
    case K_NAMED_EXPR: {
        int assign = k == K_ASSIGN;
        rc = push(c, n, sc, 0, OP_BIND, 0);
        if (rc == 0)
            rc = push(c, afd_pyast_field(n, assign ? AFD_PYF_LEFT : AFD_PYF_NAME), sc, 0, OP_VISIT, M_STORE);
        if (rc == 0) /* the value is evaluated first */
            rc = push(c, afd_pyast_field(n, assign ? AFD_PYF_RIGHT : AFD_PYF_VALUE), sc, 0, OP_VISIT, M_READ);
        return rc;
    }
    case K_AUGASSIGN: {
        TSNode left = afd_pyast_field(n, AFD_PYF_LEFT);
        rc = push(c, left, sc, 0, OP_UNBIND, 0);
        if (rc == 0)
            rc = push(c, left, sc, 0, OP_VISIT, M_AUG);
        if (rc == 0)
            rc = push(c, afd_pyast_field(n, AFD_PYF_RIGHT), sc, 0, OP_VISIT, M_READ);
        return rc;
    }
    case K_DELETE:
        rc = list_kids(c, n);
        for (size_t i = c->n_kids; rc == 0 && i-- > 0;) {
            if (!c->kids[i].named)
                continue;
            rc = push(c, c->kids[i].node, sc, 0, OP_UNBIND, 0);
            if (rc == 0)
                rc = push(c, c->kids[i].node, sc, 0, OP_VISIT, M_DEL);
        }
        return rc;
    case K_FOR:
    case K_FOR_IN: {
        if ((rc = list_kids(c, n)) < 0)
            return rc;
        if (has_async(c) && (rc = u32_push(&c->yields, afd_pyast_line(n))) < 0)
            return rc;
        TSNode left = {{0}, 0, 0}, right = {{0}, 0, 0};
        for (size_t i = c->n_kids; rc == 0 && i-- > 0;) {
            const kid *kd = &c->kids[i];
            if (kd->field == afd_pyast_field_id(AFD_PYF_LEFT))
                left = kd->node;
            else if (kd->field == afd_pyast_field_id(AFD_PYF_RIGHT) && k == K_FOR)
                right = kd->node;
            else if (kd->named)
                rc = push(c, kd->node, sc, 0, OP_VISIT, M_READ);
        }
        /* Iterable, then the target, then (a loop statement's) body: a comprehension's
         * variables are its own and alias nothing. */
        if (rc == 0 && k == K_FOR)
            rc = push(c, left, sc, 0, OP_UNBIND, 0);
        if (rc == 0)
            rc = push(c, left, sc, 0, OP_VISIT, M_STORE);
        if (rc == 0)
            rc = push(c, right, sc, 0, OP_VISIT, M_READ);
        return rc;
    }
    case K_WITH:
    case K_AWAIT:
        if ((rc = list_kids(c, n)) < 0)
            return rc;
        if ((k == K_AWAIT || has_async(c)) && (rc = u32_push(&c->yields, afd_pyast_line(n))) < 0)
            return rc;
        return push_kids(c, sc, OP_VISIT, M_READ);
    case K_AS_PATTERN:
        rc = list_kids(c, n);
        for (size_t i = c->n_kids; rc == 0 && i-- > 0;) {
            const kid *kd = &c->kids[i];
            if (kd->field == afd_pyast_field_id(AFD_PYF_ALIAS)) {
                rc = push(c, kd->node, sc, 0, OP_UNBIND, 0);
                if (rc == 0)
                    rc = push(c, kd->node, sc, 0, OP_VISIT, M_STORE);
            } else if (kd->named) {
                rc = push(c, kd->node, sc, 0, OP_VISIT, M_READ);
            }
        }
        return rc;
    case K_FUNCDEF:
    case K_CLASSDEF:
    case K_LAMBDA: {
        TSNode name = afd_pyast_field(n, AFD_PYF_NAME);
        rc = scope_get(c, n, k == K_FUNCDEF ? S_FUNCTION : k == K_CLASSDEF ? S_CLASS : S_LAMBDA, sc,
                       name, &s);
        if (rc == 0)
            rc = push(c, afd_pyast_field(n, AFD_PYF_BODY), s, 0, OP_VISIT, M_READ);
        if (rc == 0 && k != K_LAMBDA)
            rc = push(c, name, sc, 0, OP_UNBIND, 0);
        /* Default values and base classes are evaluated where the definition is. */
        if (rc == 0)
            rc = push(c, afd_pyast_field(n, k == K_CLASSDEF ? AFD_PYF_SUPERCLASSES : AFD_PYF_PARAMETERS), sc, 0,
                      OP_VISIT, M_READ);
        return rc;
    }
    case K_PARAMS:
        rc = list_kids(c, n);
        for (size_t i = c->n_kids; rc == 0 && i-- > 0;) {
            uint8_t pk = kind_of(c, c->kids[i].node);
            if (pk == K_DEFAULT_PARAM || pk == K_TYPED_DEFAULT_PARAM)
                rc = push(c, afd_pyast_field(c->kids[i].node, AFD_PYF_VALUE), sc, 0, OP_VISIT, M_READ);
        }
        return rc;
    case K_COMP:
        rc = scope_get(c, n, S_COMP, sc, n, &s);
        if (rc == 0)
            rc = list_kids(c, n);
        return rc < 0 ? rc : push_kids(c, s, OP_VISIT, M_READ);
    case K_KEYWORD_ARG:
        return push(c, afd_pyast_field(n, AFD_PYF_VALUE), sc, 0, OP_VISIT, M_READ);
    case K_IMPORT:
        rc = list_kids(c, n);
        for (size_t i = 0; rc == 0 && i < c->n_kids; i++)
            if (c->kids[i].field == afd_pyast_field_id(AFD_PYF_NAME))
                rc = push(c, c->kids[i].node, sc, 0, OP_UNBIND, 0);
        return rc;
    default:
        rc = list_kids(c, n);
        return rc < 0 ? rc : push_kids(c, sc, OP_VISIT, M_READ);
    }
}

/* ---- the source as the parser sees it ---- */

/* ---- driver ---- */

/* The lines pysrc blanked because they would break the parser are error lines. */
static int push_error_line(void *vc, uint32_t line)
{
    return u32_push(&((ctx *)vc)->errors, line);
}

static int ctx_init(ctx *c, const char *src, size_t len)
{
    c->src = src;
    c->len = len;
    /* Names and paths come from the source's text, qualified names repeat their prefixes, and
     * the access array is 16 times the source at worst already: the strings may take as much. */
    c->budget = 16 * len + (16u << 20);
    int rc = intern(c, "", 0, &c->off_empty);
    if (rc == 0)
        rc = intern(c, "self", 4, &c->off_self);
    if (rc == 0)
        rc = intern(c, "cls", 3, &c->off_cls);
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
}

static int run_walk(ctx *c, TSNode root, int (*visit)(ctx *, const item *), uint8_t mode)
{
    c->n_stk = 0;
    int rc = push(c, root, 0, 0, OP_VISIT, mode);
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
            a[i] = (afd_pyaccess){r->line, r->root, r->write, strs + r->name_off, strs + r->path_off,
                                  strs + r->fn_off};
        }
        out->acc = a;
        out->n_acc = c->n_acc;
    }
    out->yields = c->yields.v;
    out->n_yields = c->yields.n;
    out->errors = c->errors.v;
    out->n_errors = c->errors.n;
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
        rc = collect_errors(&c, root);
        if (rc == 0)
            rc = scope_add(&c, root, S_MODULE, 0, root, &module);
        if (rc == 0)
            rc = run_walk(&c, root, a_visit, A_GEN);
        if (rc == 0)
            rc = run_walk(&c, root, b_visit, M_READ);
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
