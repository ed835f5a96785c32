/* gate_cancel.c -- the gate's visits for fixes that hide cancellation: a handler that catches
 * CancelledError (or everything) and does not re-raise it, a contextlib.suppress of it, an
 * asyncio.shield, a Task.uncancel() (see gate.c for the whole design, gate.h for the checks).
 *
 * A cancelled task that swallows its CancelledError keeps running as if nothing happened: the
 * waiter handed a lock, an item or a wake-up before it was cancelled now holds it, a timeout
 * that fired never takes effect, and the test that failed because of that passes for the wrong
 * reason. The same holds for shielding the awaited call or uncancelling the task.
 *
 * What counts as a re-raise is deliberately narrow (a handler that only sometimes re-raises
 * hides the cancellation the other times): the handler's last statement is a bare `raise` or
 * `raise NAME` (`from` anything) where NAME is the handler's `as` name, every other `raise` in
 * it is one of those too, and nothing leaves the handler before its end (no `return`, no `break`
 * or `continue` outside a loop of the handler's own). Statements in nested functions, lambdas
 * and classes are not the handler's. A name rebound before `raise NAME` is not noticed. */
#include "gate_impl.h"

#include <stdio.h>
#include <string.h>

/* A handler whose body is larger than this is not searched for escapes: it counts as not
 * re-raising (a cleanup that large is no simple pass-on). */
#define MAX_HANDLER_NODES MAX_SEARCH_NODES
/* Parenthesized or tuple exception types nested deeper than this count as catching
 * cancellation: the gate refuses what it does not look at. */
#define MAX_TYPE_DEPTH 32u

/* n's text normalized as afd_gate_norm makes it, into b (reset, NUL-terminated); a text cut at
 * MAX_NORM is tagged with a hash of its whole normalized text, not its raw length, so that
 * re-indenting a long handler (a fix that wraps it in `async with`) keeps its key. */
static void norm_key(const ctx *c, TSNode n, afd_buf *b)
{
    b->len = 0;
    size_t len;
    const char *t = afd_pyast_text(c->src, c->len, n, &len);
    uint32_t h = 2166136261u; /* FNV-1a over every character the normalized text would hold */
    size_t out = 0;
    int sp = 0;
    for (size_t i = 0; i < len; i++) {
        char ch = t[i];
        if (ch == '\\' && i + 1 < len && (t[i + 1] == '\n' || t[i + 1] == '\r'))
            ch = ' ';
        if (afd_gate_is_space(ch)) {
            sp = out > 0;
            continue;
        }
        for (int k = sp ? 0 : 1; k < 2; k++) {
            char o = k == 0 ? ' ' : ch;
            h = (h ^ (uint8_t)o) * 16777619u;
            if (out++ < MAX_NORM)
                afd_buf_put_u8(b, (uint8_t)o);
        }
        sp = 0;
    }
    if (out > MAX_NORM)
        afd_buf_printf(b, "~%08x", (unsigned)h);
    afd_buf_put_u8(b, 0);
    b->len--;
}

/* Whether an except clause's type catches asyncio's CancelledError: BaseException, any name whose
 * last component is CancelledError (asyncio's, asyncio.exceptions', or one imported under another
 * name), anyio's get_cancelled_exc_class(), or a tuple holding one. */
static int catches_cancel(const ctx *c, TSNode t, unsigned depth)
{
    if (depth > MAX_TYPE_DEPTH)
        return 1;
    uint8_t k = afd_gate_kind_of(c, t);
    if (k == K_TUPLE || k == K_PAREN) {
        uint32_t nc = ts_node_named_child_count(t);
        for (uint32_t i = 0; i < nc; i++)
            if (catches_cancel(c, ts_node_named_child(t, i), depth + 1))
                return 1;
        return 0;
    }
    if (k == K_AS_PATTERN)
        return ts_node_named_child_count(t) && catches_cancel(c, ts_node_named_child(t, 0), depth + 1);
    if (k == K_CALL)
        t = afd_pyast_field(t, AFD_PYF_FUNCTION);
    afd_buf b;
    afd_buf_init(&b);
    int yes = 0;
    /* dotted sets data when it answers 1; testing it too tells the compiler so */
    if (!ts_node_is_null(t) && afd_gate_dotted(c, t, &b) && b.data) {
        const char *q = (const char *)b.data, *last = afd_gate_last_part(q);
        yes = k == K_CALL ? strcmp(last, "get_cancelled_exc_class") == 0
                          : strcmp(last, "CancelledError") == 0 || strcmp(q, "BaseException") == 0 ||
                                strcmp(q, "builtins.BaseException") == 0;
    }
    afd_buf_finish(&b);
    return yes;
}

/* The search of a handler body for a way out that skips its final re-raise. */
typedef struct escape {
    const ctx *c;       /* Borrowed: the side being analysed */
    TSNode body, alias; /* the handler's block and its `as` name (a null node when none) */
    unsigned seen;
    int bad;
} escape;

/* `raise` or `raise NAME [from X]` with NAME the handler's `as` name (the grammar wraps that name
 * in an as_pattern_target: the texts are compared). */
static int is_reraise(const escape *e, TSNode r)
{
    if (ts_node_named_child_count(r) == 0)
        return 1;
    TSNode x = ts_node_named_child(r, 0);
    if (ts_node_is_null(e->alias) || afd_gate_kind_of(e->c, x) != K_IDENT)
        return 0;
    size_t al, xl;
    const char *at = afd_pyast_text(e->c->src, e->c->len, e->alias, &al);
    const char *xt = afd_pyast_text(e->c->src, e->c->len, x, &xl);
    return al == xl && memcmp(at, xt, al) == 0;
}

/* Whether a break or continue at n stays inside a loop body of the handler's own. */
static int in_own_loop(const escape *e, TSNode n)
{
    TSNode child = n;
    for (size_t hops = 0; hops < MAX_ANCESTOR_HOPS; hops++) {
        TSNode p = ts_node_parent(child);
        if (ts_node_is_null(p) || ts_node_eq(p, e->body))
            return 0;
        uint8_t k = afd_gate_kind_of(e->c, p);
        if ((k == K_WHILE || k == K_FOR) && ts_node_eq(child, afd_pyast_field(p, AFD_PYF_BODY)))
            return 1;
        child = p;
    }
    return 0;
}

static int escape_enter(void *ve, TSNode x)
{
    escape *e = ve;
    uint8_t k = afd_gate_kind_of(e->c, x);
    if (++e->seen > MAX_HANDLER_NODES || k == K_RETURN ||
        ((k == K_BREAK || k == K_CONTINUE) && !in_own_loop(e, x)) || (k == K_RAISE && !is_reraise(e, x))) {
        e->bad = 1;
        return AFD_PYAST_STOP;
    }
    return afd_gate_is_scope_kind(k) || k == K_STRING ? AFD_PYAST_SKIP : AFD_PYAST_DESCEND;
}

/* Whether a handler body re-raises on every path (the rule in this file's opening comment). */
static int reraises(const ctx *c, TSNode body, TSNode alias)
{
    uint32_t nc = ts_node_named_child_count(body);
    if (nc == 0)
        return 0;
    TSNode last = ts_node_named_child(body, nc - 1);
    escape e = {c, body, alias, 0, 0};
    if (afd_gate_kind_of(c, last) != K_RAISE || !is_reraise(&e, last))
        return 0;
    afd_pyast_walk(NULL, body, escape_enter, NULL, &e); /* it allocates nothing that can fail */
    return !e.bad;
}

void afd_gate_visit_cancel_except(ctx *c, TSNode n)
{
    TSNode type, alias, body = afd_gate_block_child(c, n);
    memset(&type, 0, sizeof type);
    memset(&alias, 0, sizeof alias);
    if (ts_node_is_null(body))
        return;
    if (afd_pyast_kind(n) == AFD_PY_EXCEPT_GROUP_CLAUSE) {
        /* `except* T as name:` has no fields: the type, then the name, then the block */
        uint32_t nc = ts_node_named_child_count(n), got = 0;
        for (uint32_t i = 0; i < nc && got < 2; i++) {
            TSNode k = ts_node_named_child(n, i);
            if (afd_gate_kind_of(c, k) == K_BLOCK)
                break;
            if (got++ == 0)
                type = k;
            else
                alias = k;
        }
    } else {
        type = afd_pyast_field(n, AFD_PYF_VALUE);
        alias = afd_pyast_field(n, AFD_PYF_ALIAS);
    }
    /* `except T as name:` parses as the pattern `T as name` */
    if (ts_node_is_null(alias) && !ts_node_is_null(type) && afd_gate_kind_of(c, type) == K_AS_PATTERN)
        alias = afd_pyast_field(type, AFD_PYF_ALIAS);
    /* A bare `except:` catches everything, CancelledError with it. */
    if (!ts_node_is_null(type) && !catches_cancel(c, type, 0))
        return;
    if (reraises(c, body, alias))
        return;
    norm_key(c, n, &c->tmp2);
    afd_gate_add_fact_str(c, C_CANCEL_SWALLOW, (const char *)c->tmp2.data);
}

void afd_gate_visit_cancel_call(ctx *c, TSNode n, const char *q, const char *meth)
{
    TSNode args = afd_pyast_field(n, AFD_PYF_ARGUMENTS);
    if (strcmp(q, "asyncio.shield") == 0 || strcmp(q, "asyncio.tasks.shield") == 0) {
        /* keyed by the resolved name, so that `aio.shield(x)` and `asyncio.shield(x)` are one */
        norm_key(c, args, &c->tmp2);
        char text[MAX_NORM + 64];
        snprintf(text, sizeof text, "asyncio.shield%s", c->tmp2.data ? (const char *)c->tmp2.data : "()");
        afd_gate_add_fact_str(c, C_SHIELD, text);
    } else if (meth && strcmp(meth, "uncancel") == 0) {
        norm_key(c, n, &c->tmp2);
        afd_gate_add_fact_str(c, C_UNCANCEL, (const char *)c->tmp2.data);
    } else if (strcmp(q, "contextlib.suppress") == 0 && !ts_node_is_null(args)) {
        uint32_t na = ts_node_named_child_count(args);
        for (uint32_t i = 0; i < na; i++)
            if (catches_cancel(c, ts_node_named_child(args, i), 0)) {
                norm_key(c, n, &c->tmp2);
                afd_gate_add_fact_str(c, C_CANCEL_SWALLOW, (const char *)c->tmp2.data);
                break;
            }
    }
}
