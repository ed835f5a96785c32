/* gate_impl.h -- what the gate's files share (gate.c compares, gate_facts.c parses and holds
 * the helpers, gate_visit.c turns nodes into facts): the categories of facts, one side's facts,
 * the node kinds and the walk's state. Private to those files; the API is gate.h. */
#ifndef AFD_GATE_IMPL_H
#define AFD_GATE_IMPL_H

#include "afd.h"
#include "buf.h"
#include "gate.h"
#include "pyast.h"

#include <stddef.h>
#include <stdint.h>

#define MAX_ANCESTOR_HOPS 512u
/* Normalized texts are cut here (and tagged with their full length): a multiset comparison of
 * long statements by their first 240 characters is good enough, and it bounds the work a deeply
 * nested file can cause. */
#define MAX_NORM 240u
/* A subtree search (does this try body await anything?) looks at this many nodes at most. */
#define MAX_SEARCH_NODES 4096u
#define MAX_DOTTED 256u
/* Lock nesting edges kept per side: the cycle search is quadratic in them, and real code nests a
 * handful of locks. A file with more fails `no_lock_cycle` rather than stall the gate. */
#define MAX_EDGES 256u
/* Renaming imports remembered per side (every dotted name is looked up in them). */
#define MAX_IMPORTS 1024u
/* New primitives whose uses are checked; the rest of an absurd patch is not looked at. */
#define MAX_CHECKED_CREATIONS 64u

/* ---- categories of facts ---- */

enum {
    C_SLEEP,      /* a sleep call: resolved name + arguments */
    C_POLL,       /* a sleep inside a while loop */
    C_TIMEOUT,    /* a timeout call */
    C_TMARK,      /* @pytest.mark.timeout(...), with its value */
    C_RETRY_DEC,  /* a retry/flaky decorator */
    C_RETRY_LOOP, /* a try in a loop whose handler lets the loop go round again */
    C_ASSERT,     /* an assert statement or a self.assert*() call */
    C_APPROX,     /* pytest.approx( */
    C_SWALLOW,    /* an except clause that swallows */
    C_SUPPRESS,   /* contextlib.suppress( */
    C_SKIP,       /* a skip/xfail mark or call */
    C_TESTNAME,   /* def test*: the name */
    C_CREATE,     /* a primitive's creation: "Kind\x1ftarget" */
    C_USE,        /* a primitive's use: "acq|set|wait|notify|put|get\x1freceiver" */
    C_TASKBIND,   /* target of create_task/ensure_future, with fn and byte */
    C_AWAIT,      /* `await name`, with fn and byte */
    C_TASKAWAIT,  /* derived: an await of a name bound to a task earlier in the same function */
    C_AWITH,      /* a lock-like item of an `async with` */
    C_EDGE,       /* nested acquisition "outer\x1finner" */
    C_UNSORTED,   /* an `async with a, b` whose locks are not in text order */
    C_OFFLOAD,    /* a call moved off the event loop: asyncio.to_thread(F, ...), run_in_executor(x, F, ...) */
    C_CANCEL_SWALLOW, /* a handler catching cancellation that does not re-raise it, or a suppress of it */
    C_SHIELD,         /* an asyncio.shield call: "asyncio.shield" + its arguments */
    C_UNCANCEL,       /* a .uncancel() call */
    C_HANDON,         /* a hand-off passed on: a re-raising cancellation handler tests F.done() and
                       * F.cancelled(), or a loop tests W.cancelled()/W.done() and calls W.set_result() */
    C__COUNT
};

typedef struct fact {
    uint8_t cat;
    uint32_t off, len; /* text in facts.strs */
    uint32_t fn;       /* enclosing function's start byte + 1, 0 at module level */
    uint32_t byte;
    double val;
} fact;

typedef struct facts {
    fact *v; /* Owned. */
    size_t n, cap;
    afd_buf strs;
    afd_buf toks; /* leaf token stream, for not_noop */
    int present;  /* this side exists */
    int analysed; /* facts are meaningful */
    int parse_ok; /* parsed without ERROR/MISSING (and not refused as too large) */
    size_t n_edges;
    int edges_overflow; /* more than MAX_EDGES lock nesting edges */
    char why[96];       /* parse failure reason */
} facts;

/* ---- node kinds ---- */

enum {
    K_OTHER,
    K_IDENT,
    K_ATTR,
    K_CALL,
    K_STRING,
    K_DECORATOR,
    K_WITH,
    K_WHILE,
    K_FOR,
    K_TRY,
    K_EXCEPT,
    K_ASSERT,
    K_FUNCDEF,
    K_CLASSDEF,
    K_LAMBDA,
    K_AWAIT,
    K_BLOCK,
    K_ASSIGN,
    K_IMPORT,
    K_IMPORT_FROM,
    K_ALIASED_IMPORT,
    K_DOTTED_NAME,
    K_AS_PATTERN,
    K_TUPLE,
    K_PAREN,
    K_EXPR_STMT,
    K_PASS,
    K_CONTINUE,
    K_RETURN,
    K_RAISE,
    K_BREAK,
    K_ELLIPSIS,
    K_ARGLIST,
    K_INTEGER,
    K_FLOAT,
};

typedef struct imp {
    char local[64];
    char qual[MAX_DOTTED];
} imp;

typedef struct ctx {
    const char *src; /* Borrowed: the sanitized copy (afd_pysrc.text) of the side being analysed. */
    size_t len;
    TSTreeCursor cur;
    TSNode *anc; /* Owned: the ancestor stack of the walk, the current node last */
    size_t n_anc, cap_anc;
    imp *imps; /* Owned: the renaming imports of the side being analysed */
    size_t n_imps, cap_imps;
    afd_buf tmp, tmp2;
    facts *out; /* Borrowed: the side being analysed */
    int rc;
} ctx;

/* Shared by the gate's files; each is documented where it is defined. */
uint8_t afd_gate_kind_of(const ctx *c, TSNode n);
int afd_gate_is_space(char ch);
void afd_gate_norm(const ctx *c, TSNode n, afd_buf *b);
int afd_gate_dotted(const ctx *c, TSNode n, afd_buf *b);
int afd_gate_in_list(const char *s, const char *const *list);
const char *afd_gate_last_part(const char *s);
void afd_gate_add_fact(ctx *c, uint8_t cat, const char *s, size_t len, uint32_t fn, uint32_t byte,
                       double val);
void afd_gate_add_fact_str(ctx *c, uint8_t cat, const char *s);
void afd_gate_add_edge(ctx *c, const char *outer, const char *inner);
TSNode afd_gate_ancestor(const ctx *c, size_t i);
int afd_gate_is_scope_kind(uint8_t k);
uint32_t afd_gate_enclosing_fn(const ctx *c);
int afd_gate_subtree_has(ctx *c, TSNode n, uint8_t k1, uint8_t k2);
int afd_gate_block_statements_all(const ctx *c, TSNode block, int (*ok)(const ctx *, TSNode));
int afd_gate_block_has_top(const ctx *c, TSNode block, uint8_t k1, uint8_t k2, uint8_t k3);
TSNode afd_gate_block_child(const ctx *c, TSNode n);
void afd_gate_visit_import(ctx *c, TSNode n, int from);
/* gate_span.c: 1 when the patch extends an existing `async with` over statements it moved in from
 * the same function (what says so), 0 when not, < 0 on allocation failure. */
int afd_gate_extends_lock(const afd_gate_file *f, char *what, size_t whatlen);
int afd_gate_analyse(ctx *c, const char *src, size_t len, facts *out);
int afd_gate_walk(ctx *c, TSNode root, int imports_only);
/* gate_cancel.c: the facts of fixes that hide cancellation, from an except clause and from a call
 * (q: its resolved dotted name, "" when none; meth: the attribute called, NULL when none). */
void afd_gate_visit_cancel_except(ctx *c, TSNode n);
void afd_gate_visit_wake_loop(ctx *c, TSNode n);
void afd_gate_visit_cancel_call(ctx *c, TSNode n, const char *q, const char *meth);

#endif
