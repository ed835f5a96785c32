/* gate.c -- the policy gate (see gate.h).
 *
 * Each side of each changed file is parsed with tree-sitter and walked once (iteratively, with a
 * cursor and an explicit ancestor stack: a crafted `1+1+...` nests 100,000 deep) into "facts":
 * (category, normalized text) pairs such as (SLEEP, "asyncio.sleep(0.1)") or (ASSERT, "assert x
 * == 1"). A check then compares the multisets of one category before and after: what the after
 * side holds more of was added by the patch. Questions about context (is this sleep inside a
 * `while`? which function binds this task?) scan the ancestor stack upwards, at most
 * MAX_ANCESTOR_HOPS nodes, and stop at the enclosing function.
 *
 * Before parsing, a copy of the source has what libtree-sitter 0.20.7 cannot take blanked out
 * (comments; brackets nested beyond CPython's limit; long runs of continuation-only lines) by
 * pysrc.h, as for pyscan.c; blanking comments also makes them invisible to every comparison, which
 * is what `not_noop` wants. */
#include "gate.h"
#include "afd.h"
#include "buf.h"
#include "pyast.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    C_SLEEP,       /* a sleep call: resolved name + arguments */
    C_POLL,        /* a sleep inside a while loop */
    C_TIMEOUT,     /* a timeout call */
    C_TMARK,       /* @pytest.mark.timeout(...), with its value */
    C_RETRY_DEC,   /* a retry/flaky decorator */
    C_RETRY_LOOP,  /* a try in a loop whose handler lets the loop go round again */
    C_ASSERT,      /* an assert statement or a self.assert*() call */
    C_APPROX,      /* pytest.approx( */
    C_SWALLOW,     /* an except clause that swallows */
    C_SUPPRESS,    /* contextlib.suppress( */
    C_SKIP,        /* a skip/xfail mark or call */
    C_TESTNAME,    /* def test*: the name */
    C_CREATE,      /* a primitive's creation: "Kind\x1ftarget" */
    C_USE,         /* a primitive's use: "acq|set|wait|notify|put|get\x1freceiver" */
    C_TASKBIND,    /* target of create_task/ensure_future, with fn and byte */
    C_AWAIT,       /* `await name`, with fn and byte */
    C_TASKAWAIT,   /* derived: an await of a name bound to a task earlier in the same function */
    C_AWITH,       /* a lock-like item of an `async with` */
    C_EDGE,        /* nested acquisition "outer\x1finner" */
    C_UNSORTED,    /* an `async with a, b` whose locks are not in text order */
    C_OFFLOAD,     /* a call moved off the event loop: asyncio.to_thread(F, ...), run_in_executor(x, F, ...) */
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
    fact *v;
    size_t n, cap;
    afd_buf strs;
    afd_buf toks;   /* leaf token stream, for not_noop */
    int present;    /* this side exists */
    int analysed;   /* facts are meaningful */
    int parse_ok;   /* parsed without ERROR/MISSING (and not refused as too large) */
    size_t n_edges;
    int edges_overflow; /* more than MAX_EDGES lock nesting edges */
    char why[96];   /* parse failure reason */
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

typedef struct imp {
    char local[64];
    char qual[MAX_DOTTED];
} imp;

typedef struct ctx {
    const char *src; /* Borrowed: the sanitized copy (afd_pysrc.text) of the side being analysed. */
    size_t len;
    TSTreeCursor cur;
    TSNode *anc;
    size_t n_anc, cap_anc;
    imp *imps;
    size_t n_imps, cap_imps;
    afd_buf tmp, tmp2;
    facts *out;
    int rc;
} ctx;

/* ---- small helpers ---- */

static uint8_t kind_of(const ctx *c, TSNode n)
{
    (void)c;
    return GATE_KIND[afd_pyast_kind(n)];
}

static const char *text_of(const ctx *c, TSNode n, size_t *len)
{
    return afd_pyast_text(c->src, c->len, n, len);
}

static int text_is(const ctx *c, TSNode n, const char *s)
{
    return afd_pyast_text_is(c->src, c->len, n, s);
}

static int is_space(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f' || ch == '\v';
}

/* The node's text with whitespace runs (and line continuations) collapsed to one space, into b
 * (reset first, NUL-terminated). Cut at MAX_NORM characters and tagged with the full length. */
static void norm(const ctx *c, TSNode n, afd_buf *b)
{
    b->len = 0;
    size_t len;
    const char *t = text_of(c, n, &len);
    int sp = 0;
    size_t i = 0;
    for (; i < len && b->len < MAX_NORM; i++) {
        char ch = t[i];
        if (ch == '\\' && i + 1 < len && (t[i + 1] == '\n' || t[i + 1] == '\r'))
            ch = ' ';
        if (is_space(ch)) {
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
static int dotted(const ctx *c, TSNode n, afd_buf *b)
{
    TSNode parts[16];
    size_t np = 0;
    b->len = 0;
    while (!ts_node_is_null(n)) {
        uint8_t k = kind_of(c, n);
        if (k == K_IDENT) {
            if (np >= 16)
                return 0;
            parts[np++] = n;
            break;
        }
        if (k != K_ATTR || np >= 15)
            return 0;
        TSNode a = afd_pyast_field(n, AFD_PYF_ATTRIBUTE);
        if (ts_node_is_null(a) || kind_of(c, a) != K_IDENT)
            return 0;
        parts[np++] = a;
        n = afd_pyast_field(n, AFD_PYF_OBJECT);
    }
    if (np == 0)
        return 0;
    size_t l0;
    const char *t0 = text_of(c, parts[np - 1], &l0);
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
        const char *t = text_of(c, parts[i], &l);
        afd_buf_put_u8(b, '.');
        afd_buf_put(b, t, l);
    }
    afd_buf_put_u8(b, 0);
    b->len--;
    return b->len > 0 && b->len < MAX_DOTTED && !b->err;
}

static int in_list(const char *s, const char *const *list)
{
    for (size_t i = 0; list[i]; i++)
        if (strcmp(s, list[i]) == 0)
            return 1;
    return 0;
}

static const char *last_part(const char *s)
{
    const char *d = strrchr(s, '.');
    return d ? d + 1 : s;
}

static void add_fact(ctx *c, uint8_t cat, const char *s, size_t len, uint32_t fn, uint32_t byte, double val)
{
    facts *f = c->out;
    if (c->rc)
        return;
    if (afd_pyast_grow((void **)&f->v, &f->cap, f->n + 1, sizeof *f->v) < 0) {
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

static void add_fact_str(ctx *c, uint8_t cat, const char *s)
{
    add_fact(c, cat, s, strlen(s), 0, 0, 0);
}

static void add_edge(ctx *c, const char *outer, const char *inner)
{
    if (c->out->n_edges >= MAX_EDGES) {
        c->out->edges_overflow = 1;
        return;
    }
    c->out->n_edges++;
    char e[2 * MAX_NORM + 64];
    snprintf(e, sizeof e, "%s\x1f%s", outer, inner);
    add_fact_str(c, C_EDGE, e);
}

/* The ancestor i levels above the current node (1 = parent), or a null node. */
static TSNode ancestor(const ctx *c, size_t i)
{
    TSNode z;
    memset(&z, 0, sizeof z);
    if (i >= c->n_anc)
        return z;
    return c->anc[c->n_anc - 1 - i];
}

static int is_scope_kind(uint8_t k)
{
    return k == K_FUNCDEF || k == K_LAMBDA || k == K_CLASSDEF;
}

/* Start byte + 1 of the enclosing function, 0 at module level (or too deep to tell). */
static uint32_t enclosing_fn(const ctx *c)
{
    for (size_t i = 1; i <= MAX_ANCESTOR_HOPS; i++) {
        TSNode a = ancestor(c, i);
        if (ts_node_is_null(a))
            break;
        if (is_scope_kind(kind_of(c, a)))
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
    return is_scope_kind(k) ? AFD_PYAST_SKIP : AFD_PYAST_DESCEND;
}

/* Whether n's subtree, nested scopes left out, holds a node of kind k1 or k2. The search is bounded:
 * past MAX_SEARCH_NODES it answers no (a try body that large is no retry of one call). It has a
 * cursor of its own: the walk's is in use. */
static int subtree_has(ctx *c, TSNode n, uint8_t k1, uint8_t k2)
{
    (void)c;
    search q = {k1, k2, 0, 0};
    afd_pyast_walk(NULL, n, search_enter, NULL, &q); /* it allocates nothing that can fail */
    return q.found;
}

/* Whether a block has statements and ok() holds for each. */
static int block_statements_all(const ctx *c, TSNode block, int (*ok)(const ctx *, TSNode))
{
    uint32_t nc = ts_node_named_child_count(block);
    if (nc == 0)
        return 0;
    for (uint32_t i = 0; i < nc; i++)
        if (!ok(c, ts_node_named_child(block, i)))
            return 0;
    return 1;
}

static int block_has_top(const ctx *c, TSNode block, uint8_t k1, uint8_t k2, uint8_t k3)
{
    uint32_t nc = ts_node_named_child_count(block);
    for (uint32_t i = 0; i < nc; i++) {
        uint8_t k = kind_of(c, ts_node_named_child(block, i));
        if (k == k1 || k == k2 || k == k3)
            return 1;
    }
    return 0;
}

static TSNode block_child(const ctx *c, TSNode n)
{
    uint32_t nc = ts_node_named_child_count(n);
    for (uint32_t i = 0; i < nc; i++) {
        TSNode k = ts_node_named_child(n, i);
        if (kind_of(c, k) == K_BLOCK)
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
    const char *t = text_of(c, local, &l);
    if (l == 0 || l >= sizeof c->imps[0].local || strlen(qual) >= MAX_DOTTED || c->rc || c->n_imps >= MAX_IMPORTS)
        return;
    if (afd_pyast_grow((void **)&c->imps, &c->cap_imps, c->n_imps + 1, sizeof *c->imps) < 0) {
        c->rc = AFD_ENOMEM;
        return;
    }
    imp *m = &c->imps[c->n_imps++];
    memcpy(m->local, t, l);
    m->local[l] = 0;
    snprintf(m->qual, sizeof m->qual, "%s", qual);
}

static void visit_import(ctx *c, TSNode n, int from)
{
    char mod[MAX_DOTTED] = "";
    if (from) {
        TSNode m = afd_pyast_field(n, AFD_PYF_MODULE_NAME);
        size_t l = 0;
        const char *t = ts_node_is_null(m) ? "" : text_of(c, m, &l);
        if (ts_node_is_null(m) || kind_of(c, m) != K_DOTTED_NAME || l >= sizeof mod)
            return; /* relative imports name the project's own modules */
        memcpy(mod, t, l);
        mod[l] = 0;
    }
    uint32_t nc = ts_node_named_child_count(n);
    for (uint32_t i = 0; i < nc; i++) {
        TSNode k = ts_node_named_child(n, i);
        uint8_t kk = kind_of(c, k);
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
        const char *t = text_of(c, name, &l);
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

/* ---- the visits ---- */

static const char *const SLEEPS[] = {"asyncio.sleep", "time.sleep", "anyio.sleep", "trio.sleep", NULL};
static const char *const YIELD_SLEEPS[] = {"asyncio.sleep", "anyio.sleep", "trio.sleep", NULL};
static const char *const TIMEOUTS[] = {"asyncio.wait_for", "asyncio.timeout", "asyncio.timeout_at",
                                       "anyio.fail_after", "anyio.move_on_after", "async_timeout.timeout",
                                       "trio.fail_after", "trio.move_on_after", NULL};
static const char *const SKIP_MARKS[] = {"pytest.mark.skip", "pytest.mark.skipif", "pytest.mark.xfail",
                                         "unittest.skip", "unittest.skipIf", "unittest.skipUnless",
                                         "unittest.expectedFailure", NULL};
static const char *const SKIP_CALLS[] = {"pytest.skip", "pytest.xfail", NULL};
static const char *const PRIMS[] = {"asyncio.Lock", "asyncio.Event", "asyncio.Condition", "asyncio.Semaphore",
                                    "asyncio.BoundedSemaphore", "asyncio.Queue", "asyncio.LifoQueue",
                                    "asyncio.PriorityQueue", NULL};
static const char *const TASK_MAKERS[] = {"asyncio.create_task", "asyncio.ensure_future", NULL};
static const char *const LOG_HEADS[] = {"print", "logging", "log", "logger", "LOG", "LOGGER", "_log", "_logger", NULL};
static const char *const LOG_METHODS[] = {"debug", "info", "warning", "warn", "error", "exception", "critical",
                                          "log", NULL};

/* The target of `target = <n>` when n is an assignment's whole right side, into b; "" otherwise. */
static void bound_target(ctx *c, TSNode n, afd_buf *b)
{
    TSNode p = ancestor(c, 1);
    b->len = 0;
    if (!ts_node_is_null(p) && kind_of(c, p) == K_ASSIGN && ts_node_eq(afd_pyast_field(p, AFD_PYF_RIGHT), n))
        norm(c, afd_pyast_field(p, AFD_PYF_LEFT), b);
    afd_buf_put_u8(b, 0);
    b->len--;
}

static int is_zero_delay(const ctx *c, TSNode args)
{
    if (ts_node_is_null(args) || ts_node_named_child_count(args) != 1)
        return 0;
    TSNode a = ts_node_named_child(args, 0);
    uint8_t k = kind_of(c, a);
    if (k != K_INTEGER && k != K_FLOAT)
        return 0;
    size_t l = 0;
    const char *t = text_of(c, a, &l);
    char buf[32];
    if (l >= sizeof buf)
        return 0;
    memcpy(buf, t, l);
    buf[l] = 0;
    return strtod(buf, NULL) == 0.0;
}

/* A sleep's fact: q and its argument list's text ("(0.1)"); zero is a zero-delay yield. */
static void sleep_fact(ctx *c, const char *q, const char *argtext, int zero)
{
    afd_buf *t = &c->tmp2;
    char text[MAX_DOTTED + MAX_NORM + 24];
    snprintf(text, sizeof text, "%s%s", q, argtext);
    if (!(in_list(q, YIELD_SLEEPS) && zero))
        add_fact_str(c, C_SLEEP, text);
    /* Polling: a sleep (a zero one too: a busy wait) inside a while loop of the same function. */
    for (size_t i = 1; i <= MAX_ANCESTOR_HOPS; i++) {
        TSNode a = ancestor(c, i);
        if (ts_node_is_null(a) || is_scope_kind(kind_of(c, a)))
            break;
        if (kind_of(c, a) == K_WHILE) {
            norm(c, afd_pyast_field(a, AFD_PYF_CONDITION), t);
            char ptext[sizeof text + MAX_NORM + 16];
            snprintf(ptext, sizeof ptext, "while %s: %s", t->data ? (const char *)t->data : "", text);
            add_fact_str(c, C_POLL, ptext);
            break;
        }
    }
}

static void visit_sleep(ctx *c, const char *q, TSNode args)
{
    norm(c, args, &c->tmp2);
    char argtext[MAX_NORM + 8];
    snprintf(argtext, sizeof argtext, "%s", c->tmp2.data ? (const char *)c->tmp2.data : "()");
    sleep_fact(c, q, argtext, is_zero_delay(c, args));
}

/* `asyncio.to_thread(F, a, b)` and `loop.run_in_executor(x, F, a, b)`: F(a, b) runs off the loop.
 * An offloaded sleep is still a sleep, written as if called ("time.sleep(0.03)"): moving a
 * blocking sleep off the loop changes no sleep, adding one in a thread adds one. */
static void visit_offload(ctx *c, TSNode args, uint32_t skip)
{
    uint32_t k = ts_node_named_child_count(args);
    if (k <= skip)
        return;
    TSNode fnarg = ts_node_named_child(args, skip);
    char q[MAX_DOTTED] = "";
    if (dotted(c, fnarg, &c->tmp))
        snprintf(q, sizeof q, "%s", (const char *)c->tmp.data);
    else {
        norm(c, fnarg, &c->tmp);
        snprintf(q, sizeof q, "%s", c->tmp.data ? (const char *)c->tmp.data : "");
    }
    add_fact_str(c, C_OFFLOAD, q);
    if (!in_list(q, SLEEPS))
        return;
    char argtext[MAX_NORM + 8] = "()";
    if (k > skip + 1) {
        /* the text from the first argument after F to the last, as a call would have it */
        TSNode first = ts_node_named_child(args, skip + 1), last = ts_node_named_child(args, k - 1);
        size_t len;
        const char *t = text_of(c, first, &len);
        size_t span = ts_node_end_byte(last) - ts_node_start_byte(first);
        afd_buf *b = &c->tmp2;
        b->len = 0;
        afd_buf_put_u8(b, '(');
        int sp = 0;
        for (size_t i = 0; i < span && b->len < MAX_NORM; i++) {
            if (is_space(t[i])) {
                sp = 1;
                continue;
            }
            if (sp)
                afd_buf_put_u8(b, ' ');
            sp = 0;
            afd_buf_put_u8(b, (uint8_t)t[i]);
        }
        afd_buf_put_u8(b, ')');
        snprintf(argtext, sizeof argtext, "%.*s", (int)b->len, (const char *)b->data);
    }
    sleep_fact(c, q, argtext, 0);
}

static void visit_call(ctx *c, TSNode n)
{
    TSNode fn = afd_pyast_field(n, AFD_PYF_FUNCTION), args = afd_pyast_field(n, AFD_PYF_ARGUMENTS);
    if (ts_node_is_null(fn))
        return;
    char q[MAX_DOTTED] = "";
    if (dotted(c, fn, &c->tmp))
        snprintf(q, sizeof q, "%s", (const char *)c->tmp.data);
    const char *meth = NULL;
    char methbuf[64] = "";
    if (kind_of(c, fn) == K_ATTR) {
        TSNode a = afd_pyast_field(fn, AFD_PYF_ATTRIBUTE);
        size_t l = 0;
        const char *t = ts_node_is_null(a) ? "" : text_of(c, a, &l);
        if (!ts_node_is_null(a) && l < sizeof methbuf) {
            memcpy(methbuf, t, l);
            methbuf[l] = 0;
            meth = methbuf;
        }
    }
    if (in_list(q, SLEEPS) || (meth && (strcmp(meth, "call_later") == 0 || strcmp(meth, "call_at") == 0))) {
        visit_sleep(c, q[0] ? q : meth, args);
        return;
    }
    if (strcmp(q, "asyncio.to_thread") == 0 || (meth && strcmp(meth, "run_in_executor") == 0)) {
        visit_offload(c, args, strcmp(q, "asyncio.to_thread") == 0 ? 0 : 1);
        return;
    }
    if (in_list(q, TIMEOUTS)) {
        norm(c, n, &c->tmp2);
        add_fact_str(c, C_TIMEOUT, (const char *)c->tmp2.data);
    } else if (strcmp(q, "pytest.approx") == 0) {
        norm(c, n, &c->tmp2);
        add_fact_str(c, C_APPROX, (const char *)c->tmp2.data);
    } else if (strcmp(q, "contextlib.suppress") == 0) {
        norm(c, n, &c->tmp2);
        add_fact_str(c, C_SUPPRESS, (const char *)c->tmp2.data);
    } else if (in_list(q, SKIP_CALLS)) {
        add_fact_str(c, C_SKIP, q);
    } else if (in_list(q, PRIMS)) {
        bound_target(c, n, &c->tmp2);
        char text[MAX_NORM + 64];
        snprintf(text, sizeof text, "%s\x1f%s", last_part(q), (const char *)c->tmp2.data);
        add_fact_str(c, C_CREATE, text);
    } else if (in_list(q, TASK_MAKERS) || (meth && strcmp(meth, "create_task") == 0)) {
        bound_target(c, n, &c->tmp2);
        if (c->tmp2.len)
            add_fact(c, C_TASKBIND, (const char *)c->tmp2.data, c->tmp2.len, enclosing_fn(c),
                     ts_node_start_byte(n), 0);
    }
    if (meth) {
        static const char *const USES[][2] = {
            {"acquire", "acq"}, {"set", "set"},       {"wait", "wait"},         {"wait_for", "wait"},
            {"notify", "notify"}, {"notify_all", "notify"}, {"put", "put"},  {"put_nowait", "put"},
            {"get", "get"},     {"get_nowait", "get"},
        };
        for (size_t i = 0; i < sizeof USES / sizeof USES[0]; i++)
            if (strcmp(meth, USES[i][0]) == 0) {
                norm(c, afd_pyast_field(fn, AFD_PYF_OBJECT), &c->tmp2);
                char text[MAX_NORM + 64];
                snprintf(text, sizeof text, "%s\x1f%s", USES[i][1], (const char *)c->tmp2.data);
                add_fact_str(c, C_USE, text);
                break;
            }
        if (strncmp(meth, "assert", 6) == 0) { /* unittest's self.assertEqual(...) */
            norm(c, n, &c->tmp2);
            add_fact_str(c, C_ASSERT, (const char *)c->tmp2.data);
        }
    }
}

static void visit_decorator(ctx *c, TSNode n)
{
    TSNode e = ts_node_named_child_count(n) ? ts_node_named_child(n, 0) : n;
    TSNode args;
    memset(&args, 0, sizeof args);
    if (kind_of(c, e) == K_CALL) {
        args = afd_pyast_field(e, AFD_PYF_ARGUMENTS);
        e = afd_pyast_field(e, AFD_PYF_FUNCTION);
    }
    if (!dotted(c, e, &c->tmp))
        return;
    char q[MAX_DOTTED];
    snprintf(q, sizeof q, "%s", (const char *)c->tmp.data);
    const char *last = last_part(q);
    size_t first_len = strcspn(q, ".");
    norm(c, n, &c->tmp2);
    if (strcmp(q, "pytest.mark.timeout") == 0) {
        double v = INFINITY; /* a non-literal timeout counts as the largest */
        if (!ts_node_is_null(args) && ts_node_named_child_count(args) > 0) {
            TSNode a = ts_node_named_child(args, 0);
            uint8_t k = kind_of(c, a);
            size_t l = 0;
            const char *t = text_of(c, a, &l);
            char buf[32];
            if ((k == K_INTEGER || k == K_FLOAT) && l < sizeof buf) {
                memcpy(buf, t, l);
                buf[l] = 0;
                v = strtod(buf, NULL);
            }
        }
        add_fact(c, C_TMARK, (const char *)c->tmp2.data, c->tmp2.len, 0, 0, v);
    } else if (strcmp(last, "flaky") == 0 || strcmp(last, "retry") == 0 || strcmp(q, "pytest.mark.repeat") == 0 ||
               (first_len == 7 && strncmp(q, "backoff", 7) == 0) ||
               (first_len == 8 && strncmp(q, "tenacity", 8) == 0) ||
               (first_len == 8 && strncmp(q, "retrying", 8) == 0) || strstr(q, "retry") != NULL) {
        add_fact_str(c, C_RETRY_DEC, (const char *)c->tmp2.data);
    } else if (kind_of(c, e) == K_IDENT && in_list(q, SKIP_MARKS)) {
        add_fact_str(c, C_SKIP, q); /* attributes are counted by visit_attribute */
    }
}

/* The lock-like items of an `async with` (names and attribute chains, not calls), normalized,
 * appended to list as NUL-separated strings; returns their count. 0 for a plain `with`. */
static size_t lock_items(ctx *c, TSNode with, afd_buf *list)
{
    list->len = 0;
    int is_async = 0;
    uint32_t nc = ts_node_child_count(with);
    TSNode clause;
    memset(&clause, 0, sizeof clause);
    for (uint32_t i = 0; i < nc; i++) {
        TSNode k = ts_node_child(with, i);
        if (!ts_node_is_named(k) && strcmp(ts_node_type(k), "async") == 0)
            is_async = 1;
        else if (ts_node_is_named(k) && strcmp(ts_node_type(k), "with_clause") == 0)
            clause = k;
    }
    if (!is_async || ts_node_is_null(clause))
        return 0;
    size_t count = 0;
    uint32_t ni = ts_node_named_child_count(clause);
    for (uint32_t i = 0; i < ni; i++) {
        TSNode item = ts_node_named_child(clause, i);
        TSNode v = afd_pyast_field(item, AFD_PYF_VALUE);
        if (!ts_node_is_null(v) && kind_of(c, v) == K_AS_PATTERN && ts_node_named_child_count(v))
            v = ts_node_named_child(v, 0);
        uint8_t k = ts_node_is_null(v) ? K_OTHER : kind_of(c, v);
        if (k != K_IDENT && k != K_ATTR)
            continue;
        norm(c, v, &c->tmp2);
        afd_buf_put(list, c->tmp2.data, c->tmp2.len + 1);
        count++;
    }
    return count;
}

static void visit_with(ctx *c, TSNode n)
{
    afd_buf mine;
    afd_buf_init(&mine);
    size_t cnt = lock_items(c, n, &mine);
    if (mine.err)
        c->rc = mine.err;
    if (cnt == 0 || c->rc) {
        afd_buf_finish(&mine);
        return;
    }
    const char *prev = NULL;
    int unsorted = 0;
    for (const char *s = (const char *)mine.data; s < (const char *)mine.data + mine.len; s += strlen(s) + 1) {
        char text[MAX_NORM + 64];
        add_fact_str(c, C_AWITH, s);
        snprintf(text, sizeof text, "acq\x1f%s", s);
        add_fact_str(c, C_USE, text);
        if (prev) {
            add_edge(c, prev, s);
            unsorted |= strcmp(prev, s) > 0;
        }
        prev = s;
    }
    if (unsorted) {
        TSNode clause = ts_node_named_child_count(n) ? ts_node_named_child(n, 0) : n;
        norm(c, clause, &c->tmp2);
        add_fact_str(c, C_UNSORTED, (const char *)c->tmp2.data);
    }
    /* Nesting: an edge from every lock of every enclosing async with of the same function. */
    afd_buf outer;
    afd_buf_init(&outer);
    for (size_t i = 1; i <= MAX_ANCESTOR_HOPS && !c->rc && !c->out->edges_overflow; i++) {
        TSNode a = ancestor(c, i);
        if (ts_node_is_null(a) || is_scope_kind(kind_of(c, a)))
            break;
        if (kind_of(c, a) != K_WITH || lock_items(c, a, &outer) == 0)
            continue;
        if (outer.err) {
            c->rc = outer.err;
            break;
        }
        for (const char *o = (const char *)outer.data; o < (const char *)outer.data + outer.len; o += strlen(o) + 1)
            for (const char *s = (const char *)mine.data; s < (const char *)mine.data + mine.len; s += strlen(s) + 1)
                add_edge(c, o, s);
    }
    afd_buf_finish(&outer);
    afd_buf_finish(&mine);
}

static int is_broad_type(const ctx *c, TSNode t)
{
    static const char *const BROAD[] = {"Exception", "BaseException", "AssertionError", NULL};
    uint8_t k = kind_of(c, t);
    if (k == K_TUPLE || k == K_PAREN) {
        uint32_t nc = ts_node_named_child_count(t);
        for (uint32_t i = 0; i < nc; i++) {
            TSNode e = ts_node_named_child(t, i);
            uint8_t ek = kind_of(c, e);
            if ((ek == K_IDENT || ek == K_ATTR) && is_broad_type(c, e))
                return 1;
        }
        return 0;
    }
    if (k == K_AS_PATTERN && ts_node_named_child_count(t))
        return is_broad_type(c, ts_node_named_child(t, 0));
    if (k == K_IDENT) {
        for (size_t i = 0; BROAD[i]; i++)
            if (text_is(c, t, BROAD[i]))
                return 1;
    } else if (k == K_ATTR) {
        TSNode a = afd_pyast_field(t, AFD_PYF_ATTRIBUTE);
        return !ts_node_is_null(a) && (text_is(c, a, "Exception") || text_is(c, a, "BaseException"));
    }
    return 0;
}

/* A handler statement that does nothing about the error: pass, `...`, continue, return, or a call
 * to print or a logger. */
static int is_idle_stmt(const ctx *c, TSNode s)
{
    uint8_t k = kind_of(c, s);
    if (k == K_PASS || k == K_CONTINUE || k == K_RETURN)
        return 1;
    if (k != K_EXPR_STMT || ts_node_named_child_count(s) != 1)
        return 0;
    TSNode e = ts_node_named_child(s, 0);
    if (kind_of(c, e) == K_ELLIPSIS)
        return 1;
    if (kind_of(c, e) == K_AWAIT && ts_node_named_child_count(e))
        e = ts_node_named_child(e, 0);
    if (kind_of(c, e) != K_CALL)
        return 0;
    afd_buf b;
    afd_buf_init(&b);
    int idle = 0;
    if (dotted(c, afd_pyast_field(e, AFD_PYF_FUNCTION), &b)) {
        const char *q = (const char *)b.data;
        char head[64];
        size_t hl = strcspn(q, ".");
        snprintf(head, sizeof head, "%.*s", (int)(hl < 63 ? hl : 63), q);
        idle = in_list(head, LOG_HEADS) || (strchr(q, '.') && in_list(last_part(q), LOG_METHODS) &&
                                            (strstr(q, "log") || strstr(q, "LOG")));
    }
    afd_buf_finish(&b);
    return idle;
}

static void visit_except(ctx *c, TSNode n)
{
    TSNode type = afd_pyast_field(n, AFD_PYF_VALUE);
    TSNode body = block_child(c, n);
    int swallow = 0;
    if (ts_node_is_null(body))
        return;
    if (block_statements_all(c, body, is_idle_stmt))
        swallow = 1;
    else if ((ts_node_is_null(type) || is_broad_type(c, type)) && !block_has_top(c, body, K_RAISE, K_RAISE, K_RAISE))
        swallow = 1;
    if (!swallow)
        return;
    norm(c, n, &c->tmp2);
    add_fact_str(c, C_SWALLOW, (const char *)c->tmp2.data);
}

/* A try inside a loop (of the same function) around an await or an assert, with a handler that
 * neither raises nor leaves the loop: the loop goes round and tries again. */
static void visit_try(ctx *c, TSNode n)
{
    TSNode loop;
    memset(&loop, 0, sizeof loop);
    for (size_t i = 1; i <= MAX_ANCESTOR_HOPS; i++) {
        TSNode a = ancestor(c, i);
        if (ts_node_is_null(a) || is_scope_kind(kind_of(c, a)))
            break;
        if (kind_of(c, a) == K_WHILE || kind_of(c, a) == K_FOR) {
            loop = a;
            break;
        }
    }
    if (ts_node_is_null(loop))
        return;
    TSNode body = afd_pyast_field(n, AFD_PYF_BODY);
    if (ts_node_is_null(body) || !subtree_has(c, body, K_AWAIT, K_ASSERT))
        return;
    uint32_t nc = ts_node_named_child_count(n);
    for (uint32_t i = 0; i < nc; i++) {
        TSNode h = ts_node_named_child(n, i);
        if (kind_of(c, h) != K_EXCEPT)
            continue;
        TSNode hb = block_child(c, h);
        if (ts_node_is_null(hb) || block_has_top(c, hb, K_RAISE, K_BREAK, K_RETURN))
            continue;
        norm(c, h, &c->tmp2);
        char text[MAX_NORM + 32];
        snprintf(text, sizeof text, "loop: %s", (const char *)c->tmp2.data);
        add_fact_str(c, C_RETRY_LOOP, text);
    }
}

static void put_token(ctx *c, TSNode n)
{
    size_t l = 0;
    const char *t = text_of(c, n, &l);
    while (l && is_space(*t)) {
        t++;
        l--;
    }
    while (l && is_space(t[l - 1]))
        l--;
    if (l == 0)
        return;
    afd_buf_put(&c->out->toks, t, l);
    afd_buf_put_u8(&c->out->toks, 0x1f);
}

/* Visits n on the way down; returns whether to descend. */
static int visit(ctx *c, TSNode n)
{
    uint8_t k = kind_of(c, n);
    switch (k) {
    case K_STRING:
        put_token(c, n);
        return 0; /* a string is one token, whatever the grammar splits it into */
    case K_BLOCK:
        afd_buf_put(&c->out->toks, "{\x1f", 2);
        break;
    case K_CALL:
        visit_call(c, n);
        break;
    case K_ATTR:
        if (dotted(c, n, &c->tmp) && in_list((const char *)c->tmp.data, SKIP_MARKS))
            add_fact_str(c, C_SKIP, (const char *)c->tmp.data);
        break;
    case K_DECORATOR:
        visit_decorator(c, n);
        break;
    case K_WITH:
        visit_with(c, n);
        break;
    case K_TRY:
        visit_try(c, n);
        break;
    case K_EXCEPT:
        visit_except(c, n);
        break;
    case K_ASSERT:
        norm(c, n, &c->tmp2);
        add_fact_str(c, C_ASSERT, (const char *)c->tmp2.data);
        break;
    case K_FUNCDEF: {
        TSNode name = afd_pyast_field(n, AFD_PYF_NAME);
        size_t l = 0;
        const char *t = ts_node_is_null(name) ? "" : text_of(c, name, &l);
        if (!ts_node_is_null(name) && l >= 4 && memcmp(t, "test", 4) == 0)
            add_fact(c, C_TESTNAME, t, l, 0, 0, 0);
        break;
    }
    case K_AWAIT:
        if (ts_node_named_child_count(n)) {
            TSNode e = ts_node_named_child(n, 0);
            uint8_t ek = kind_of(c, e);
            if (ek == K_IDENT || ek == K_ATTR) {
                norm(c, e, &c->tmp2);
                add_fact(c, C_AWAIT, (const char *)c->tmp2.data, c->tmp2.len, enclosing_fn(c),
                         ts_node_start_byte(n), 0);
            }
        }
        break;
    default:
        break;
    }
    if (ts_node_child_count(n) == 0)
        put_token(c, n);
    return 1;
}

static void leave(ctx *c, TSNode n)
{
    if (kind_of(c, n) == K_BLOCK)
        afd_buf_put(&c->out->toks, "}\x1f", 2);
}

/* The first pass only records imports (every later name is resolved through them); the second
 * visits everything. Both keep the ancestor stack: the enter function pushes, leave pops. */
static int enter_imports(void *vc, TSNode n)
{
    ctx *c = vc;
    if (afd_pyast_grow((void **)&c->anc, &c->cap_anc, c->n_anc + 1, sizeof *c->anc) < 0)
        return AFD_ENOMEM;
    c->anc[c->n_anc++] = n;
    uint8_t k = kind_of(c, n);
    if (k == K_IMPORT || k == K_IMPORT_FROM)
        visit_import(c, n, k == K_IMPORT_FROM);
    if (c->rc)
        return c->rc;
    return k != K_IMPORT && k != K_IMPORT_FROM && k != K_STRING ? AFD_PYAST_DESCEND : AFD_PYAST_SKIP;
}

static int leave_imports(void *vc, TSNode n)
{
    (void)n;
    ((ctx *)vc)->n_anc--;
    return 0;
}

static int enter_all(void *vc, TSNode n)
{
    ctx *c = vc;
    if (afd_pyast_grow((void **)&c->anc, &c->cap_anc, c->n_anc + 1, sizeof *c->anc) < 0)
        return AFD_ENOMEM;
    c->anc[c->n_anc++] = n;
    int down = visit(c, n);
    if (c->rc)
        return c->rc;
    return down ? AFD_PYAST_DESCEND : AFD_PYAST_SKIP;
}

static int leave_all(void *vc, TSNode n)
{
    ctx *c = vc;
    leave(c, n);
    c->n_anc--;
    return 0;
}

static int walk(ctx *c, TSNode root, int imports_only)
{
    c->n_anc = 0;
    int rc = imports_only ? afd_pyast_walk(&c->cur, root, enter_imports, leave_imports, c)
                          : afd_pyast_walk(&c->cur, root, enter_all, leave_all, c);
    return rc < 0 ? rc : c->rc;
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
    /* The texts live in f->strs, which add_fact may move: the awaits are collected first. */
    nb = 0;
    for (size_t i = 0; i < f->n; i++)
        if (f->v[i].cat == C_TASKBIND)
            bs[nb++] = (bind){f->v[i].fn, f->v[i].byte, (const char *)f->strs.data + f->v[i].off, f->v[i].len};
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
        add_fact_str(c, C_TASKAWAIT, t);
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

static int analyse(ctx *c, const char *src, size_t len, facts *out)
{
    out->present = src != NULL;
    if (!src)
        return 0;
    if (len > AFD_GATE_MAX_SOURCE) {
        snprintf(out->why, sizeof out->why, "too large to analyse (%zu bytes)", len);
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
        snprintf(out->why, sizeof out->why, "the parse timed out or its tree is too wide to analyse");
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
    int rc = walk(c, root, 1);
    if (rc == 0)
        rc = walk(c, root, 0);
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

/* ---- comparing the two sides ---- */

typedef struct sref {
    const char *s;
    uint32_t len;
    double val;
} sref;

static int cmp_sref(const void *a, const void *b)
{
    const sref *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int r = memcmp(x->s, y->s, n);
    if (r)
        return r;
    return (x->len > y->len) - (x->len < y->len);
}

static int collect(const facts *f, uint8_t cat, sref **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    size_t cnt = 0;
    for (size_t i = 0; i < f->n; i++)
        cnt += f->v[i].cat == cat;
    if (cnt == 0)
        return 0;
    sref *v = malloc(cnt * sizeof *v);
    if (!v)
        return AFD_ENOMEM;
    for (size_t i = 0; i < f->n; i++)
        if (f->v[i].cat == cat)
            v[(*n)++] = (sref){(const char *)f->strs.data + f->v[i].off, f->v[i].len, f->v[i].val};
    qsort(v, *n, sizeof *v, cmp_sref);
    *out = v;
    return 0;
}

/* How many entries of category cat `after` holds beyond those of `before` (multiset difference);
 * the first such text (cut to fit) into first. */
static int added(const facts *before, const facts *after, uint8_t cat, char *first, size_t firstlen,
                 size_t *count)
{
    sref *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    *count = 0;
    if (first && firstlen)
        first[0] = 0;
    int rc = collect(before, cat, &b, &nb);
    if (rc == 0)
        rc = collect(after, cat, &a, &na);
    size_t i = 0, j = 0;
    while (rc == 0 && i < na) {
        int r = j < nb ? cmp_sref(&a[i], &b[j]) : -1;
        if (r == 0) {
            i++;
            j++;
        } else if (r > 0) {
            j++;
        } else {
            if (*count == 0 && first && firstlen)
                snprintf(first, firstlen, "%.*s", (int)a[i].len, a[i].s);
            (*count)++;
            i++;
        }
    }
    free(a);
    free(b);
    return rc;
}

static size_t count_cat(const facts *f, uint8_t cat)
{
    size_t n = 0;
    for (size_t i = 0; i < f->n; i++)
        n += f->v[i].cat == cat;
    return n;
}

static double max_val(const facts *f, uint8_t cat)
{
    double m = -INFINITY;
    for (size_t i = 0; i < f->n; i++)
        if (f->v[i].cat == cat && f->v[i].val > m)
            m = f->v[i].val;
    return m;
}

/* ---- paths ---- */

int afd_gate_is_test_path(const char *path)
{
    if (!path)
        return 0;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    for (const char *p = path; p < base;) {
        const char *slash = strchr(p, '/');
        size_t l = (size_t)(slash - p);
        if ((l == 5 && memcmp(p, "tests", 5) == 0) || (l == 4 && memcmp(p, "test", 4) == 0))
            return 1;
        p = slash + 1;
    }
    size_t bl = strlen(base);
    if (strcmp(base, "conftest.py") == 0)
        return 1;
    if (bl > 3 && strcmp(base + bl - 3, ".py") == 0) {
        if (strncmp(base, "test_", 5) == 0 || (bl >= 8 && strcmp(base + bl - 8, "_test.py") == 0))
            return 1;
    }
    return 0;
}

int afd_gate_is_third_party_path(const char *path)
{
    static const char *const PARTS[] = {"site-packages/", ".venv/", "venv/", "vendor/", "node_modules/",
                                        "_vendor/", NULL};
    if (!path)
        return 0;
    for (size_t i = 0; PARTS[i]; i++)
        if (strstr(path, PARTS[i]))
            return 1;
    return 0;
}

/* ---- checks ---- */

static const struct {
    const char *name, *group;
} CHECKS[AFD_GATE__COUNT] = {
    [AFD_GATE_NO_SLEEP] = {"no_sleep", "refused shortcut"},
    [AFD_GATE_NO_TIMEOUT] = {"no_timeout", "refused shortcut"},
    [AFD_GATE_NO_RETRY] = {"no_retry", "refused shortcut"},
    [AFD_GATE_NO_WEAKER_ASSERT] = {"no_weaker_assert", "refused shortcut"},
    [AFD_GATE_NO_SWALLOW] = {"no_swallow", "refused shortcut"},
    [AFD_GATE_NO_SKIP] = {"no_skip", "refused shortcut"},
    [AFD_GATE_SYNC_PRIMITIVE] = {"sync_primitive", "required substance"},
    [AFD_GATE_PRIMITIVE_USED_TWICE] = {"primitive_used_twice", "required substance"},
    [AFD_GATE_NOT_NOOP] = {"not_noop", "required substance"},
    [AFD_GATE_NO_LOCK_CYCLE] = {"no_lock_cycle", "structural safety"},
    [AFD_GATE_SRC_ALLOWED] = {"src_allowed", "structural safety"},
    [AFD_GATE_NO_THIRD_PARTY] = {"no_third_party", "structural safety"},
    [AFD_GATE_PARSES] = {"parses", "structural safety"},
};

const char *afd_gate_check_name(int id)
{
    return id >= 0 && id < AFD_GATE__COUNT ? CHECKS[id].name : NULL;
}

static void set_fail(afd_gate_check *ck, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_fail(afd_gate_check *ck, const char *fmt, ...)
{
    if (!ck->passed)
        return; /* the first failure is the one reported */
    ck->passed = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ck->reason, sizeof ck->reason, fmt, ap);
    va_end(ap);
    /* One line: a normalized text holds no newline, but a path might. */
    for (char *p = ck->reason; *p; p++)
        if (*p == '\n' || *p == '\r' || *p == 0x1f)
            *p = ' ';
}

/* A refused category: fails when the patch adds an entry. */
static int refuse(afd_gate_check *ck, const facts *b, const facts *a, uint8_t cat, const char *what,
                  const char *path)
{
    char first[120];
    size_t n;
    int rc = added(b, a, cat, first, sizeof first, &n);
    if (rc == 0 && n)
        set_fail(ck, "adds %s `%s` in %s", what, first, path);
    return rc;
}

/* Whether `to` reaches `from` through the edges of all after sides ("u\x1fv" texts). */
static int reaches(const facts *sides, size_t n_sides, const char *from, size_t from_len, const char *to,
                   size_t to_len, int *found)
{
    /* Breadth-first over lock texts; the graphs are a handful of edges. */
    typedef struct node {
        const char *s;
        size_t len;
    } node;
    node *q = NULL;
    size_t nq = 0, cap = 0, head = 0;
    *found = 0;
    if (afd_pyast_grow((void **)&q, &cap, 1, sizeof *q) < 0)
        return AFD_ENOMEM;
    q[nq++] = (node){to, to_len};
    while (head < nq && !*found) {
        node cur = q[head++];
        if (cur.len == from_len && memcmp(cur.s, from, from_len) == 0) {
            *found = 1;
            break;
        }
        for (size_t si = 0; si < n_sides; si++) {
            const facts *f = &sides[si];
            for (size_t i = 0; i < f->n; i++) {
                if (f->v[i].cat != C_EDGE)
                    continue;
                const char *e = (const char *)f->strs.data + f->v[i].off;
                const char *sep = memchr(e, 0x1f, f->v[i].len);
                if (!sep || (size_t)(sep - e) != cur.len || memcmp(e, cur.s, cur.len) != 0)
                    continue;
                const char *v = sep + 1;
                size_t vl = f->v[i].len - (size_t)(v - e);
                int seen = 0;
                for (size_t k = 0; k < nq && !seen; k++)
                    seen = q[k].len == vl && memcmp(q[k].s, v, vl) == 0;
                if (seen)
                    continue;
                if (afd_pyast_grow((void **)&q, &cap, nq + 1, sizeof *q) < 0) {
                    free(q);
                    return AFD_ENOMEM;
                }
                q[nq++] = (node){v, vl};
            }
        }
    }
    free(q);
    return 0;
}

static int check_lock_cycle(afd_gate_check *ck, const facts *befores, const facts *afters,
                            const afd_gate_file *files, size_t n)
{
    for (size_t fi = 0; fi < n; fi++) {
        const facts *b = &befores[fi], *a = &afters[fi];
        int rc = refuse(ck, b, a, C_UNSORTED, "an `async with` whose locks are out of text order", files[fi].path);
        if (rc < 0)
            return rc;
        if (a->edges_overflow)
            set_fail(ck, "%s nests more than %u lock acquisitions: too many to check for cycles", files[fi].path,
                     MAX_EDGES);
        sref *ea = NULL, *eb = NULL;
        size_t na = 0, nb = 0;
        rc = collect(a, C_EDGE, &ea, &na);
        if (rc == 0)
            rc = collect(b, C_EDGE, &eb, &nb);
        for (size_t i = 0; rc == 0 && i < na && ck->passed; i++) {
            /* Only edges the patch adds can close a new cycle. */
            if (nb && bsearch(&ea[i], eb, nb, sizeof *eb, cmp_sref))
                continue;
            const char *sep = memchr(ea[i].s, 0x1f, ea[i].len);
            if (!sep)
                continue;
            size_t ul = (size_t)(sep - ea[i].s);
            int found = 0;
            /* The edge u -> v closes a cycle when v reaches u (v == u: a lock taken twice). */
            rc = reaches(a, 1, ea[i].s, ul, sep + 1, ea[i].len - ul - 1, &found);
            if (rc == 0 && found)
                set_fail(ck, "acquiring %.*s then %.*s in %s inverts another nesting (a lock-order cycle)",
                         (int)(ul > 60 ? 60 : ul), ea[i].s, (int)(ea[i].len - ul - 1 > 60 ? 60 : ea[i].len - ul - 1),
                         sep + 1, files[fi].path);
        }
        free(ea);
        free(eb);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* The last dotted component of s[0..len): its start in *tail, its length returned. */
static size_t last_part_n(const char *s, size_t len, const char **tail)
{
    *tail = s;
    for (size_t k = 0; k < len; k++)
        if (s[k] == '.')
            *tail = s + k + 1;
    return len - (size_t)(*tail - s);
}

/* Uses of a primitive across all after sides, by the last component of the receiver's text
 * (`self._ev` created in __init__ is `obj._ev` in a test). */
static size_t count_uses(const facts *afters, size_t n, const char *use, const char *target)
{
    const char *tl = last_part(target);
    size_t tlen = strlen(tl), ul = strlen(use), cnt = 0;
    for (size_t fi = 0; fi < n; fi++) {
        const facts *f = &afters[fi];
        for (size_t i = 0; i < f->n; i++) {
            if (f->v[i].cat != C_USE)
                continue;
            const char *s = (const char *)f->strs.data + f->v[i].off;
            size_t l = f->v[i].len;
            if (l <= ul || memcmp(s, use, ul) != 0 || s[ul] != 0x1f)
                continue;
            const char *rlast;
            size_t rll = last_part_n(s + ul + 1, l - ul - 1, &rlast);
            cnt += rll == tlen && memcmp(rlast, tl, tlen) == 0;
        }
    }
    return cnt;
}

/* The asyncio.Event or Condition the program already creates (in the before side of any file)
 * whose text ends like target's: its kind ("Event") in kind/kind_len, 1; 0 when none. */
static int existing_waitable(const facts *befores, size_t n, const char *target, size_t tlen, const char **kind,
                             size_t *kind_len)
{
    const char *tl;
    size_t tll = last_part_n(target, tlen, &tl);
    int found = 0;
    for (size_t f = 0; f < n && !found; f++) {
        sref *cr = NULL;
        size_t ncr = 0;
        if (collect(&befores[f], C_CREATE, &cr, &ncr) < 0)
            return -1;
        for (size_t k = 0; k < ncr && !found; k++) {
            const char *sep = memchr(cr[k].s, 0x1f, cr[k].len);
            size_t kl = sep ? (size_t)(sep - cr[k].s) : 0;
            int waitable = (kl == 5 && !memcmp(cr[k].s, "Event", 5)) || (kl == 9 && !memcmp(cr[k].s, "Condition", 9));
            const char *cl;
            size_t cll = waitable ? last_part_n(sep + 1, cr[k].len - kl - 1, &cl) : 0;
            if (waitable && cll == tll && !memcmp(cl, tl, tll)) {
                found = 1;
                *kind = cr[k].s; /* the facts' strings outlive cr */
                *kind_len = kl;
            }
        }
        free(cr);
    }
    return found;
}

/* 1 when the patch adds a `wait` on an Event or Condition the program already creates (`await
 * self.connected.wait()` where the code only tested the flag), saying so in what. */
static int waits_on_existing(const facts *b, const facts *a, const facts *befores, size_t n, const char *path,
                             char *what, size_t whatlen)
{
    sref *ua = NULL, *ub = NULL;
    size_t nua = 0, nub = 0, i = 0, j = 0;
    int rc = collect(a, C_USE, &ua, &nua);
    if (rc == 0)
        rc = collect(b, C_USE, &ub, &nub);
    int found = 0;
    while (rc == 0 && !found && i < nua) {
        int r = j < nub ? cmp_sref(&ua[i], &ub[j]) : -1;
        if (r >= 0) { /* in both, or only before: not added */
            j++;
            i += r == 0;
            continue;
        }
        const sref *u = &ua[i++];
        if (u->len <= 5 || memcmp(u->s, "wait\x1f", 5) != 0)
            continue;
        const char *kind;
        size_t kl;
        int e = existing_waitable(befores, n, u->s + 5, u->len - 5, &kind, &kl);
        if (e < 0)
            rc = -1;
        else if (e) {
            found = 1;
            snprintf(what, whatlen, "waits on the existing asyncio.%.*s %.*s in %s", (int)kl, kind,
                     (int)(u->len - 5 > 80 ? 80 : u->len - 5), u->s + 5, path);
        }
    }
    free(ua);
    free(ub);
    return rc < 0 ? rc : found;
}

static int check_primitives(afd_gate_check *sync, afd_gate_check *used, const facts *befores,
                            const facts *afters, const afd_gate_file *files, size_t n)
{
    int substance = 0;
    char what[200] = "";
    for (size_t fi = 0; fi < n; fi++) {
        const facts *b = &befores[fi], *a = &afters[fi];
        static const uint8_t CATS[] = {C_CREATE, C_TASKAWAIT, C_AWITH, C_OFFLOAD};
        static const char *const NAMES[] = {"creates", "awaits the task handle", "adds `async with`",
                                            "moves a blocking call off the event loop:"};
        for (size_t k = 0; k < 4 && !substance; k++) {
            char first[120];
            size_t cnt;
            int rc = added(b, a, CATS[k], first, sizeof first, &cnt);
            if (rc < 0)
                return rc;
            if (cnt) {
                substance = 1;
                for (char *p = first; *p; p++)
                    if (*p == 0x1f)
                        *p = ' ';
                snprintf(what, sizeof what, "%s %s in %s", NAMES[k], first, files[fi].path);
            }
        }
        if (!substance) {
            int rc = waits_on_existing(b, a, befores, n, files[fi].path, what, sizeof what);
            if (rc < 0)
                return rc;
            substance = rc;
        }
        /* Every primitive the patch creates must be used at both ends. */
        sref *ca = NULL, *cb = NULL;
        size_t na = 0, nb = 0;
        int rc = collect(a, C_CREATE, &ca, &na);
        if (rc == 0)
            rc = collect(b, C_CREATE, &cb, &nb);
        size_t j = 0, checked = 0;
        for (size_t i = 0; rc == 0 && i < na && used->passed && checked < MAX_CHECKED_CREATIONS; i++) {
            int r = -1;
            while (j < nb && (r = cmp_sref(&ca[i], &cb[j])) > 0)
                j++;
            if (j < nb && r == 0) {
                j++;
                continue; /* was there before */
            }
            checked++;
            char kind[64], target[MAX_NORM + 16];
            const char *sep = memchr(ca[i].s, 0x1f, ca[i].len);
            if (!sep)
                continue;
            snprintf(kind, sizeof kind, "%.*s", (int)(sep - ca[i].s), ca[i].s);
            snprintf(target, sizeof target, "%.*s", (int)(ca[i].len - (size_t)(sep - ca[i].s) - 1), sep + 1);
            if (!target[0]) {
                set_fail(used, "an asyncio.%s is created in %s but not bound to a name: nothing can share it",
                         kind, files[fi].path);
                break;
            }
            const char *need1 = "acq", *need2 = NULL;
            if (strcmp(kind, "Event") == 0) {
                need1 = "set";
                need2 = "wait";
            } else if (strcmp(kind, "Condition") == 0) {
                need1 = "notify";
                need2 = "wait";
            } else if (strstr(kind, "Queue")) {
                need1 = "put";
                need2 = "get";
            }
            size_t u1 = count_uses(afters, n, need1, target);
            size_t u2 = need2 ? count_uses(afters, n, need2, target) : 1;
            if (u1 == 0 || u2 == 0)
                set_fail(used, "%s (asyncio.%s) is never %s: not used at both ends (syntactic; reachability is "
                         "checked by verification)", target, kind,
                         u1 == 0 ? (strcmp(need1, "acq") == 0 ? "acquired" : need1) : need2);
        }
        free(ca);
        free(cb);
        if (rc < 0)
            return rc;
    }
    if (substance)
        snprintf(sync->reason, sizeof sync->reason, "the patch %s", what);
    else
        set_fail(sync, "the patch adds no synchronization primitive (Lock, Event, Condition, Semaphore, Queue, "
                 "an awaited task handle or an `async with`)");
    if (used->passed)
        snprintf(used->reason, sizeof used->reason,
                 "every primitive the patch creates is used at both ends (syntactic; reachability is checked by "
                 "verification)");
    return 0;
}

static int same_text(const char *a, size_t al, const char *b, size_t bl)
{
    if (!a || !b)
        return a == b;
    return al == bl && memcmp(a, b, al) == 0;
}

int afd_gate_run(const afd_gate_file *files, size_t n, int allow_src, afd_gate_check out[AFD_GATE__COUNT])
{
    if (!out || (!files && n))
        return AFD_EINVAL;
    for (int i = 0; i < AFD_GATE__COUNT; i++) {
        out[i].name = CHECKS[i].name;
        out[i].group = CHECKS[i].group;
        out[i].passed = 1;
        out[i].reason[0] = 0;
    }
    for (size_t i = 0; i < n; i++)
        if (!files[i].path || (!files[i].before && !files[i].after) || (!files[i].before && files[i].before_len) ||
            (!files[i].after && files[i].after_len))
            return AFD_EINVAL;
    facts *fb = calloc(n ? n : 1, sizeof *fb), *fa = calloc(n ? n : 1, sizeof *fa);
    ctx c;
    memset(&c, 0, sizeof c);
    int rc = fb && fa ? 0 : AFD_ENOMEM;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const afd_gate_file *f = &files[i];
        if (same_text(f->before, f->before_len, f->after, f->after_len))
            continue; /* unchanged: facts stay empty on both sides */
        rc = analyse(&c, f->before, f->before_len, &fb[i]);
        if (rc == 0)
            rc = analyse(&c, f->after, f->after_len, &fa[i]);
    }
    int noop = 1;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const afd_gate_file *f = &files[i];
        const facts *b = &fb[i], *a = &fa[i];
        if (same_text(f->before, f->before_len, f->after, f->after_len))
            continue;
        int is_test = afd_gate_is_test_path(f->path);
        /* structural safety */
        if (!is_test && !allow_src)
            set_fail(&out[AFD_GATE_SRC_ALLOWED], "%s is not a test file and source edits are not allowed", f->path);
        if (afd_gate_is_third_party_path(f->path))
            set_fail(&out[AFD_GATE_NO_THIRD_PARTY], "%s is third-party code", f->path);
        if (a->present && !a->parse_ok)
            set_fail(&out[AFD_GATE_PARSES], "%s does not pass the tree-sitter parse check: %s", f->path,
                     a->why[0] ? a->why : "not analysed");
        if (!b->present || !a->present || b->toks.len != a->toks.len ||
            (b->toks.len && memcmp(b->toks.data, a->toks.data, b->toks.len) != 0))
            noop = 0;
        /* refused shortcuts */
        afd_gate_check *ck = &out[AFD_GATE_NO_SLEEP];
        if ((rc = refuse(ck, b, a, C_SLEEP, "a sleep", f->path)) < 0 ||
            (rc = refuse(ck, b, a, C_POLL, "a polling loop", f->path)) < 0)
            break;
        ck = &out[AFD_GATE_NO_TIMEOUT];
        if ((rc = refuse(ck, b, a, C_TIMEOUT, "a timeout", f->path)) < 0)
            break;
        if (count_cat(a, C_TMARK) > count_cat(b, C_TMARK))
            set_fail(ck, "adds a @pytest.mark.timeout in %s", f->path);
        else if (max_val(a, C_TMARK) > max_val(b, C_TMARK) && count_cat(b, C_TMARK))
            set_fail(ck, "raises a @pytest.mark.timeout in %s (%g -> %g)", f->path, max_val(b, C_TMARK),
                     max_val(a, C_TMARK));
        ck = &out[AFD_GATE_NO_RETRY];
        if ((rc = refuse(ck, b, a, C_RETRY_DEC, "a retry decorator", f->path)) < 0 ||
            (rc = refuse(ck, b, a, C_RETRY_LOOP, "a retry loop", f->path)) < 0)
            break;
        ck = &out[AFD_GATE_NO_WEAKER_ASSERT];
        if (is_test) {
            char first[120];
            size_t cnt;
            if ((rc = added(a, b, C_ASSERT, first, sizeof first, &cnt)) < 0)
                break;
            if (cnt)
                set_fail(ck, "removes or changes the assert `%s` in %s", first, f->path);
        }
        if ((rc = refuse(ck, b, a, C_APPROX, "a pytest.approx", f->path)) < 0)
            break;
        ck = &out[AFD_GATE_NO_SWALLOW];
        if ((rc = refuse(ck, b, a, C_SWALLOW, "an exception handler that swallows", f->path)) < 0 ||
            (rc = refuse(ck, b, a, C_SUPPRESS, "an exception suppression", f->path)) < 0)
            break;
        ck = &out[AFD_GATE_NO_SKIP];
        if ((rc = refuse(ck, b, a, C_SKIP, "a skip", f->path)) < 0)
            break;
        if (is_test && !a->present)
            set_fail(ck, "deletes the test file %s", f->path);
        if (is_test) {
            char first[120];
            size_t cnt;
            if ((rc = added(a, b, C_TESTNAME, first, sizeof first, &cnt)) < 0)
                break;
            if (cnt)
                set_fail(ck, "the test %s in %s is no longer collected (renamed or removed)", first, f->path);
        }
    }
    if (rc == 0) {
        if (noop)
            set_fail(&out[AFD_GATE_NOT_NOOP], "the patch changes only comments and whitespace (or nothing)");
        rc = check_lock_cycle(&out[AFD_GATE_NO_LOCK_CYCLE], fb, fa, files, n);
    }
    if (rc == 0)
        rc = check_primitives(&out[AFD_GATE_SYNC_PRIMITIVE], &out[AFD_GATE_PRIMITIVE_USED_TWICE], fb, fa, files, n);
    if (rc == 0) {
        static const char *const OK[AFD_GATE__COUNT] = {
            [AFD_GATE_NO_SLEEP] = "adds no sleep, call_later or polling loop",
            [AFD_GATE_NO_TIMEOUT] = "adds no timeout and raises no timeout mark",
            [AFD_GATE_NO_RETRY] = "adds no retry decorator or retry loop",
            [AFD_GATE_NO_WEAKER_ASSERT] = "keeps every assert and adds no pytest.approx",
            [AFD_GATE_NO_SWALLOW] = "adds no swallowing handler or suppress",
            [AFD_GATE_NO_SKIP] = "adds no skip or xfail and keeps every test collected",
            [AFD_GATE_NOT_NOOP] = "the token streams differ",
            [AFD_GATE_NO_LOCK_CYCLE] = "lock acquisitions added keep one order",
            [AFD_GATE_SRC_ALLOWED] = "changes only test files, or source edits are allowed",
            [AFD_GATE_NO_THIRD_PARTY] = "changes no third-party file",
            [AFD_GATE_PARSES] = "every new text passes the tree-sitter parse check (compile() runs in verification)",
        };
        for (int i = 0; i < AFD_GATE__COUNT; i++)
            if (out[i].passed && !out[i].reason[0] && OK[i])
                snprintf(out[i].reason, sizeof out[i].reason, "%s", OK[i]);
    }
    for (size_t i = 0; i < n && fb && fa; i++) {
        free(fb[i].v);
        free(fa[i].v);
        afd_buf_finish(&fb[i].strs);
        afd_buf_finish(&fa[i].strs);
        afd_buf_finish(&fb[i].toks);
        afd_buf_finish(&fa[i].toks);
    }
    free(fb);
    free(fa);
    free(c.anc);
    free(c.imps);
    afd_buf_finish(&c.tmp);
    afd_buf_finish(&c.tmp2);
    return rc;
}

int afd_gate_passed(const afd_gate_check out[AFD_GATE__COUNT])
{
    if (!out)
        return 0;
    for (int i = 0; i < AFD_GATE__COUNT; i++)
        if (!out[i].passed)
            return 0;
    return 1;
}
