/* pyscan_bind.c -- pyscan's scopes, names and aliases, and its first two walks: the error lines
 * and the bindings (see pyscan.c for the whole design). Every scope and name is collected before
 * any access is judged: Python decides a name's scope from the whole function body. */
#include "pyscan_impl.h"

#include <stdlib.h>
#include <string.h>

/* ---- scopes ---- */

static int scope_eq(const void *env, uint32_t idx)
{
    const itab_key *k = env;
    return k->c->scopes[idx].id == k->p && k->c->scopes[idx].start == k->owner;
}

static uint64_t scope_hash(TSNode n)
{
    return afd_mix64((uint64_t)(uintptr_t)n.id ^ ((uint64_t)ts_node_start_byte(n) << 40));
}

/* Creates the scope that node n (of the given kind) opens inside parent; name is the function's
 * or class's name node. */
int afd_pyscan_scope_add(ctx *c, TSNode n, uint8_t kind, uint32_t parent, TSNode name, uint32_t *out)
{
    int rc = afd_array_grow((void **)&c->scopes, &c->cap_scopes, c->n_scopes + 1, sizeof *c->scopes, 16);
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
            afd_pyscan_put_str(&c->tmp, (const char *)c->strs.data + q->qual_off);
            afd_pyscan_put_str(&c->tmp, q->kind == S_FUNCTION ? ".<locals>." : ".");
        }
        size_t len;
        const char *t =
            afd_pyscan_ident_ok(c, name) ? afd_pyast_text(c->src, c->len, name, &len) : (len = 1, "?");
        afd_utf8_clean(&c->tmp, t, len, "?", AFD_UTF8_NO_CONTROLS);
        if (c->tmp.err)
            return c->tmp.err;
        if ((rc = afd_pyscan_charge(c, c->tmp.len)) < 0)
            return rc;
        rc = afd_pyscan_intern(c, (const char *)c->tmp.data, c->tmp.len, &s.qual_off);
        if (rc < 0)
            return rc;
    }
    if (kind == S_FUNCTION) {
        s.fnscope = idx;
        s.fn_name_off = s.qual_off;
    }
    c->scopes[idx] = s;
    rc = afd_pyscan_itab_insert(&c->scope_tab, scope_hash(n), idx);
    if (rc < 0)
        return rc;
    c->n_scopes++;
    *out = idx;
    return 0;
}

/* The scope node n opens: made by the binding walk, or made now (empty) if that walk did not
 * reach the node, so that the two walks need not agree node for node. */
int afd_pyscan_scope_get(ctx *c, TSNode n, uint8_t kind, uint32_t parent, TSNode name, uint32_t *out)
{
    itab_key k = {c, ts_node_start_byte(n), n.id, 0};
    uint32_t i = afd_pyscan_itab_find(&c->scope_tab, scope_hash(n), scope_eq, &k);
    if (i != NONE32) {
        *out = i;
        return 0;
    }
    return afd_pyscan_scope_add(c, n, kind, parent, name, out);
}

static int name_eq(const void *env, uint32_t idx)
{
    const itab_key *k = env;
    const nament *e = &k->c->names[idx];
    return e->scope == k->owner && e->len == k->n && memcmp(k->c->src + e->off, k->p, k->n) == 0;
}

uint8_t afd_pyscan_name_flags(const ctx *c, uint32_t scope, const char *s, size_t n)
{
    itab_key k = {c, scope, s, n};
    uint32_t i = afd_pyscan_itab_find(&c->name_tab, afd_pyscan_hash_bytes(scope, s, n), name_eq, &k);
    return i == NONE32 ? 0 : c->names[i].flags;
}

static int name_add(ctx *c, uint32_t scope, TSNode id, uint8_t flags)
{
    if (!afd_pyscan_ident_ok(c, id))
        return 0;
    size_t n;
    const char *s = afd_pyast_text(c->src, c->len, id, &n);
    uint64_t h = afd_pyscan_hash_bytes(scope, s, n);
    itab_key k = {c, scope, s, n};
    uint32_t i = afd_pyscan_itab_find(&c->name_tab, h, name_eq, &k);
    if (i != NONE32) {
        c->names[i].flags |= flags;
        return 0;
    }
    int rc = afd_array_grow((void **)&c->names, &c->cap_names, c->n_names + 1, sizeof *c->names, 16);
    if (rc < 0)
        return rc;
    c->names[c->n_names] = (nament){scope, (uint32_t)(s - c->src), (uint32_t)n, flags};
    rc = afd_pyscan_itab_insert(&c->name_tab, h, (uint32_t)c->n_names);
    if (rc < 0)
        return rc;
    c->n_names++;
    return 0;
}

/* ---- aliases ---- */

static int alias_eq(const void *env, uint32_t idx)
{
    const itab_key *k = env;
    const alias *a = &k->c->aliases[idx];
    return a->fn == k->owner && a->len == k->n && memcmp(k->c->src + a->off, k->p, k->n) == 0;
}

alias *afd_pyscan_alias_find(const ctx *c, uint32_t fn, const char *s, size_t n)
{
    itab_key k = {c, fn, s, n};
    uint32_t i = afd_pyscan_itab_find(&c->alias_tab, afd_pyscan_hash_bytes(fn, s, n), alias_eq, &k);
    return i == NONE32 ? NULL : &c->aliases[i];
}

void afd_pyscan_alias_clear(ctx *c, uint32_t fn, TSNode id)
{
    size_t n;
    const char *s = afd_pyast_text(c->src, c->len, id, &n);
    alias *a = fn == NONE32 ? NULL : afd_pyscan_alias_find(c, fn, s, n);
    if (a)
        a->active = 0;
}

int afd_pyscan_alias_set(ctx *c, uint32_t fn, TSNode id, const res *r, uint32_t path_off)
{
    size_t n;
    const char *s = afd_pyast_text(c->src, c->len, id, &n);
    alias *a = afd_pyscan_alias_find(c, fn, s, n);
    if (!a) {
        int rc =
            afd_array_grow((void **)&c->aliases, &c->cap_aliases, c->n_aliases + 1, sizeof *c->aliases, 16);
        if (rc < 0)
            return rc;
        rc = afd_pyscan_itab_insert(&c->alias_tab, afd_pyscan_hash_bytes(fn, s, n), (uint32_t)c->n_aliases);
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
        int rc = afd_pyscan_u32_push(&((ctx *)vc)->errors, afd_pyast_line(n));
        return rc < 0 ? rc : AFD_PYAST_SKIP;
    }
    return ts_node_has_error(n) ? AFD_PYAST_DESCEND : AFD_PYAST_SKIP;
}

int afd_pyscan_collect_errors(ctx *c, TSNode root)
{
    return afd_pyast_walk(&c->cur, root, error_enter, NULL, c);
}

/* ---- walk 2: scopes and bindings ---- */

/* One parameter of a def or lambda: its names bind in the new scope, its default value is
 * evaluated in the enclosing one. */
static int bind_param(ctx *c, TSNode n, uint32_t outer, uint32_t inner)
{
    int rc = 0;
    switch (afd_pyscan_kind_of(c, n)) {
    case K_IDENT:
        return name_add(c, inner, n, NF_LOCALVAR);
    case K_DEFAULT_PARAM:
    case K_TYPED_DEFAULT_PARAM:
        rc = afd_pyscan_push(c, afd_pyast_field(n, AFD_PYF_NAME), inner, 0, OP_VISIT, A_BIND);
        if (rc == 0)
            rc = afd_pyscan_push(c, afd_pyast_field(n, AFD_PYF_VALUE), outer, 0, OP_VISIT, A_GEN);
        return rc;
    case K_TYPED_PARAM:
        rc = afd_pyscan_list_kids(c, n);
        for (size_t i = 0; rc == 0 && i < c->n_kids; i++)
            if (c->kids[i].named && afd_pyscan_kind_of(c, c->kids[i].node) != K_SKIP)
                rc = afd_pyscan_push(c, c->kids[i].node, inner, 0, OP_VISIT, A_BIND);
        return rc;
    case K_CONTAINER:
        return afd_pyscan_push(c, n, inner, 0, OP_VISIT, A_BIND);
    default:
        return 0;
    }
}

/* Names bound by a match-case pattern: captures (a dotted name of one identifier), stars and
 * `as` targets; a dotted name with a dot is a value pattern, and a keyword pattern's keyword is
 * an attribute name. */
static int bind_case(ctx *c, TSNode n, uint32_t scope)
{
    uint8_t k = afd_pyscan_kind_of(c, n);
    if (k == K_IDENT)
        return name_add(c, scope, n, NF_LOCALVAR);
    if (k == K_DOTTED_NAME) {
        if (ts_node_named_child_count(n) == 1)
            return name_add(c, scope, ts_node_named_child(n, 0), NF_LOCALVAR);
        return 0;
    }
    int rc = afd_pyscan_list_kids(c, n);
    size_t first = c->n_kids;
    for (size_t i = 0; i < c->n_kids && first == c->n_kids; i++)
        if (c->kids[i].named)
            first = i;
    for (size_t i = c->n_kids; rc == 0 && i-- > 0;) {
        uint8_t kk = afd_pyscan_kind_of(c, c->kids[i].node);
        if (!c->kids[i].named || (k == K_KEYWORD_PATTERN && i == first && kk == K_IDENT) ||
            (k == K_CLASS_PATTERN && kk == K_DOTTED_NAME))
            continue;
        rc = afd_pyscan_push(c, c->kids[i].node, scope, 0, OP_VISIT, A_CASE);
    }
    return rc;
}

static int bind_import(ctx *c, TSNode n, uint32_t scope)
{
    int rc = afd_pyscan_list_kids(c, n);
    for (size_t i = 0; rc == 0 && i < c->n_kids; i++) {
        TSNode k = c->kids[i].node;
        if (c->kids[i].field != afd_pyast_field_id(AFD_PYF_NAME))
            continue;
        if (afd_pyscan_kind_of(c, k) == K_DOTTED_NAME) /* import a.b binds a */
            rc = name_add(c, scope, ts_node_named_child(k, 0), NF_BIND);
        else if (afd_pyscan_kind_of(c, k) == K_ALIASED_IMPORT)
            rc = name_add(c, scope, afd_pyast_field(k, AFD_PYF_ALIAS), NF_BIND);
    }
    return rc;
}

int afd_pyscan_a_visit(ctx *c, const item *it)
{
    TSNode n = it->node;
    uint32_t sc = it->scope;
    int rc = 0;
    if (afd_pyast_is_bad(n))
        return 0;
    uint8_t k = afd_pyscan_kind_of(c, n);
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
            rc = afd_pyscan_list_kids(c, n);
            return rc < 0 ? rc : afd_pyscan_push_kids(c, sc, OP_VISIT, it->mode);
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
        rc = afd_pyscan_scope_add(c, n,
                                  k == K_FUNCDEF    ? S_FUNCTION
                                  : k == K_CLASSDEF ? S_CLASS
                                                    : S_LAMBDA,
                                  sc, name, &s);
        if (rc == 0)
            rc = afd_pyscan_push(c, afd_pyast_field(n, AFD_PYF_BODY), s, 0, OP_VISIT, A_GEN);
        if (rc == 0 && k == K_CLASSDEF)
            rc = afd_pyscan_push(c, afd_pyast_field(n, AFD_PYF_SUPERCLASSES), sc, 0, OP_VISIT, A_GEN);
        if (rc == 0 && k != K_CLASSDEF) {
            TSNode params = afd_pyast_field(n, AFD_PYF_PARAMETERS);
            if (!ts_node_is_null(params) && (rc = afd_pyscan_list_kids(c, params)) == 0)
                for (size_t i = c->n_kids; rc == 0 && i-- > 0;)
                    if (c->kids[i].named)
                        rc = afd_pyscan_push(c, c->kids[i].node, sc, s, OP_VISIT, A_PARAM);
        }
        return rc;
    }
    case K_COMP:
        rc = afd_pyscan_scope_add(c, n, S_COMP, sc, n, &s);
        if (rc == 0)
            rc = afd_pyscan_list_kids(c, n);
        return rc < 0 ? rc : afd_pyscan_push_kids(c, s, OP_VISIT, A_GEN);
    case K_ASSIGN:
    case K_AUGASSIGN:
        /* Module-level assignment targets are the module globals. */
        rc = afd_pyscan_push(c, afd_pyast_field(n, AFD_PYF_LEFT), sc, 0, OP_VISIT,
                             c->scopes[sc].kind == S_MODULE ? A_BIND_GLOBAL : A_BIND);
        if (rc == 0)
            rc = afd_pyscan_push(c, afd_pyast_field(n, AFD_PYF_RIGHT), sc, 0, OP_VISIT, A_GEN);
        return rc;
    case K_NAMED_EXPR:
        rc = name_add(c, c->scopes[sc].noncomp, afd_pyast_field(n, AFD_PYF_NAME), NF_LOCALVAR);
        return rc < 0 ? rc : afd_pyscan_push(c, afd_pyast_field(n, AFD_PYF_VALUE), sc, 0, OP_VISIT, A_GEN);
    case K_DELETE:
        rc = afd_pyscan_list_kids(c, n);
        return rc < 0 ? rc : afd_pyscan_push_kids(c, sc, OP_VISIT, A_BIND);
    case K_FOR:
    case K_FOR_IN:
    case K_AS_PATTERN: {
        TSFieldId target =
            k == K_AS_PATTERN ? afd_pyast_field_id(AFD_PYF_ALIAS) : afd_pyast_field_id(AFD_PYF_LEFT);
        rc = afd_pyscan_list_kids(c, n);
        for (size_t i = c->n_kids; rc == 0 && i-- > 0;)
            if (c->kids[i].named)
                rc = afd_pyscan_push(c, c->kids[i].node, sc, 0, OP_VISIT,
                                     c->kids[i].field == target ? A_BIND : A_GEN);
        return rc;
    }
    case K_IMPORT:
        return bind_import(c, n, sc);
    case K_GLOBAL:
    case K_NONLOCAL:
        rc = afd_pyscan_list_kids(c, n);
        for (size_t i = 0; rc == 0 && i < c->n_kids; i++) {
            TSNode id = c->kids[i].node;
            if (afd_pyscan_kind_of(c, id) != K_IDENT)
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
        rc = afd_pyscan_list_kids(c, n);
        return rc < 0 ? rc : afd_pyscan_push_kids(c, sc, OP_VISIT, A_GEN);
    }
}
