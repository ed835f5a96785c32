/* pyscan_impl.h -- the state the three walks of pyscan share (pyscan.c, pyscan_bind.c,
 * pyscan_access.c): node kinds, scopes, names, aliases, the work stack and the interned strings.
 * Private to those files; the API is pyscan.h. */
#ifndef AFD_PYSCAN_IMPL_H
#define AFD_PYSCAN_IMPL_H

#include "afd.h"
#include "buf.h"
#include "text.h"
#include "pyast.h"
#include "pyscan.h"

#include <stddef.h>
#include <stdint.h>

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

/* ---- scopes and names ---- */

enum { S_MODULE, S_FUNCTION, S_CLASS, S_LAMBDA, S_COMP };

typedef struct pyscope {
    const void *id; /* Borrowed: the defining node (TSNode.id and start byte identify it) */
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
    uint32_t *slot; /* Owned: entry index + 1; 0 marks an empty slot */
    uint64_t *hash; /* Owned: the hash of each slot's entry */
    size_t cap, used;
} itab;

typedef int (*itab_eq)(const void *env, uint32_t idx);

/* ---- the walks' state ---- */

enum { OP_VISIT, OP_BIND, OP_UNBIND };
/* Modes of the access walk: how the visited expression is used. M_MWRITE is the receiver of a
 * mutating method call. */
enum { M_READ, M_STORE, M_DEL, M_AUG, M_MWRITE, M_TAKE }; /* M_TAKE: the receiver of a taking call (pop) */
/* Bits or-ed into an access-walk item's mode: M_TEST, the expression sits in the condition of an
 * if, elif or while (inherited by everything beneath it); M_LITERAL, the target of an assignment
 * whose value is a literal constant; M_AWAITED, the expression an `await` awaits (not inherited).
 * M_MASK keeps the mode itself. */
enum { M_TEST = 0x80, M_LITERAL = 0x40, M_AWAITED = 0x20, M_MASK = 0x1f };
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
    uint8_t flags; /* AFD_PYACC_TEST, AFD_PYACC_LITERAL */
} racc;

typedef struct u32vec {
    uint32_t *v; /* Owned. */
    size_t n, cap;
} u32vec;

typedef struct ctx {
    const char *src; /* Borrowed: the sanitized copy (afd_pysrc.text) the tree was parsed from. */
    size_t len;
    TSTreeCursor cur;
    kid *kids; /* Owned: the children of the node being visited (afd_pyast_children) */
    size_t n_kids, cap_kids;
    item *stk; /* Owned: the walk's work stack */
    size_t n_stk, cap_stk;
    seg *segs; /* Owned: the segments of the chain being resolved, outermost first */
    size_t n_segs, cap_segs;
    afd_buf path, tmp, strs;
    size_t budget; /* bytes the interned strings may take */
    size_t work;   /* bytes of paths and qualified names built so far (bounded by 4 budgets) */
    strent *sents; /* Owned: the interned strings, indexed by str_tab */
    size_t n_sents, cap_sents;
    itab str_tab;
    pyscope *scopes; /* Owned. */
    size_t n_scopes, cap_scopes;
    itab scope_tab;
    nament *names; /* Owned. */
    size_t n_names, cap_names;
    itab name_tab;
    alias *aliases; /* Owned. */
    size_t n_aliases, cap_aliases;
    itab alias_tab;
    racc *acc; /* Owned: the accesses found, their strings in strs */
    size_t n_acc, cap_acc;
    uint32_t seq;
    uint8_t test;    /* M_TEST when the item being visited sits in a condition, else 0 */
    uint8_t literal; /* M_LITERAL when it is a target assigned a literal, else 0 */
    u32vec yields, errors;
    uint8_t *lflags; /* Owned: AFD_PYLINE_* bits by 1-based line (pyscan_lines.c) */
    size_t n_lflags, cap_lflags;
    uint32_t off_empty, off_self, off_cls;
} ctx;

/* What an itab lookup compares an entry with: the entry's owner (the scope of a name, the function
 * of an alias, the start byte of a scope's node; 0 for a string) and its bytes (the text of a name,
 * an alias or a string, or a scope's node id with n 0). */
typedef struct itab_key {
    const ctx *c; /* Borrowed. */
    uint32_t owner;
    const void *p; /* Borrowed. */
    size_t n;
} itab_key;

/* Shared by the walks; each is documented where it is defined. */
int afd_pyscan_u32_push(u32vec *v, uint32_t x);
void afd_pyscan_put_str(afd_buf *b, const char *s);
uint32_t afd_pyscan_itab_find(const itab *t, uint64_t h, itab_eq eq, const void *env);
int afd_pyscan_itab_insert(itab *t, uint64_t h, uint32_t idx);
uint64_t afd_pyscan_hash_bytes(uint64_t seed, const char *s, size_t n);
int afd_pyscan_charge(ctx *c, size_t n);
int afd_pyscan_intern(ctx *c, const char *s, size_t n, uint32_t *off);
uint8_t afd_pyscan_kind_of(const ctx *c, TSNode n);
int afd_pyscan_ident_ok(const ctx *c, TSNode n);
int afd_pyscan_list_kids(ctx *c, TSNode n);
int afd_pyscan_has_async(const ctx *c);
int afd_pyscan_push(ctx *c, TSNode n, uint32_t scope, uint32_t aux, uint8_t op, uint8_t mode);
int afd_pyscan_push_kids(ctx *c, uint32_t scope, uint8_t op, uint8_t mode);
int afd_pyscan_b_visit(ctx *c, const item *it);
int afd_pyscan_scope_add(ctx *c, TSNode n, uint8_t kind, uint32_t parent, TSNode name, uint32_t *out);
int afd_pyscan_scope_get(ctx *c, TSNode n, uint8_t kind, uint32_t parent, TSNode name, uint32_t *out);
uint8_t afd_pyscan_name_flags(const ctx *c, uint32_t scope, const char *s, size_t n);
alias *afd_pyscan_alias_find(const ctx *c, uint32_t fn, const char *s, size_t n);
void afd_pyscan_alias_clear(ctx *c, uint32_t fn, TSNode id);
int afd_pyscan_alias_set(ctx *c, uint32_t fn, TSNode id, const res *r, uint32_t path_off);
int afd_pyscan_collect_errors(ctx *c, TSNode root);
int afd_pyscan_a_visit(ctx *c, const item *it);
int afd_pyscan_lines(ctx *c, TSNode root);

#endif
