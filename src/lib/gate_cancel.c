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

/* The search of a re-raising handler for a future it tests for a result it was handed: a call
 * `R.done()` and a call `R.cancelled()` on one receiver R. */
typedef struct handon {
    const ctx *c; /* Borrowed: the side being analysed */
    TSNode done[8];
    size_t n_done;
    TSNode found; /* the receiver R of a `.cancelled()` call matching a `.done()` one */
    unsigned seen;
} handon;

static int handon_enter(void *vh, TSNode x)
{
    handon *h = vh;
    uint8_t k = afd_gate_kind_of(h->c, x);
    if (++h->seen > MAX_HANDLER_NODES)
        return AFD_PYAST_STOP;
    if (afd_gate_is_scope_kind(k) || k == K_STRING)
        return AFD_PYAST_SKIP;
    TSNode f = afd_pyast_field(x, AFD_PYF_FUNCTION);
    if (k != K_CALL || afd_gate_kind_of(h->c, f) != K_ATTR)
        return AFD_PYAST_DESCEND;
    TSNode recv = afd_pyast_field(f, AFD_PYF_OBJECT), meth = afd_pyast_field(f, AFD_PYF_ATTRIBUTE);
    if (afd_pyast_text_is(h->c->src, h->c->len, meth, "done") && h->n_done < 8)
        h->done[h->n_done++] = recv;
    if (!afd_pyast_text_is(h->c->src, h->c->len, meth, "cancelled"))
        return AFD_PYAST_DESCEND;
    size_t rl;
    const char *rt = afd_pyast_text(h->c->src, h->c->len, recv, &rl);
    for (size_t i = 0; i < h->n_done; i++) {
        size_t dl;
        const char *dt = afd_pyast_text(h->c->src, h->c->len, h->done[i], &dl);
        if (dl == rl && memcmp(dt, rt, rl) == 0) {
            h->found = recv;
            return AFD_PYAST_STOP;
        }
    }
    return AFD_PYAST_DESCEND;
}

/* The search of a re-raising handler for puts of a name back to a queue: `Q.put_nowait(X)` or
 * `Q.put(X)` with X a name (a put of a value made on the spot is not the item held). */
typedef struct putback {
    const ctx *c; /* Borrowed: the side being analysed */
    TSNode queue[8], item[8];
    size_t n;
    unsigned seen;
} putback;

static int putback_enter(void *vp, TSNode x)
{
    putback *p = vp;
    uint8_t k = afd_gate_kind_of(p->c, x);
    if (++p->seen > MAX_HANDLER_NODES)
        return AFD_PYAST_STOP;
    if (afd_gate_is_scope_kind(k) || k == K_STRING)
        return AFD_PYAST_SKIP;
    TSNode f = afd_pyast_field(x, AFD_PYF_FUNCTION);
    if (k != K_CALL || afd_gate_kind_of(p->c, f) != K_ATTR)
        return AFD_PYAST_DESCEND;
    TSNode meth = afd_pyast_field(f, AFD_PYF_ATTRIBUTE);
    TSNode args = afd_pyast_field(x, AFD_PYF_ARGUMENTS);
    TSNode arg = ts_node_named_child(args, 0);
    if ((afd_pyast_text_is(p->c->src, p->c->len, meth, "put_nowait") ||
         afd_pyast_text_is(p->c->src, p->c->len, meth, "put")) &&
        ts_node_named_child_count(args) == 1 && afd_gate_kind_of(p->c, arg) == K_IDENT && p->n < 8) {
        p->queue[p->n] = afd_pyast_field(f, AFD_PYF_OBJECT);
        p->item[p->n++] = arg;
    }
    return AFD_PYAST_DESCEND;
}

static int same_src(const ctx *c, TSNode a, TSNode b)
{
    size_t la, lb;
    const char *ta = afd_pyast_text(c->src, c->len, a, &la), *tb = afd_pyast_text(c->src, c->len, b, &lb);
    return !ts_node_is_null(a) && !ts_node_is_null(b) && la == lb && memcmp(ta, tb, la) == 0;
}

/* The search of a function, before a handler, for `X = await Q.get()` or `X = Q.get_nowait()`:
 * the get of the item a put in that handler gives back (nested scopes are not the function's). */
typedef struct got_from {
    const ctx *c; /* Borrowed: the side being analysed */
    TSNode queue, item;
    uint32_t before; /* the handler's start byte */
    int found;
    unsigned seen;
} got_from;

static int got_from_enter(void *vg, TSNode x)
{
    got_from *g = vg;
    uint8_t k = afd_gate_kind_of(g->c, x);
    if (++g->seen > 4 * MAX_HANDLER_NODES || ts_node_start_byte(x) >= g->before)
        return AFD_PYAST_STOP;
    if ((afd_gate_is_scope_kind(k) && g->seen > 1) || k == K_STRING)
        return AFD_PYAST_SKIP;
    if (k != K_ASSIGN || !same_src(g->c, afd_pyast_field(x, AFD_PYF_LEFT), g->item))
        return AFD_PYAST_DESCEND;
    TSNode r = afd_pyast_field(x, AFD_PYF_RIGHT);
    const char *meth = "get_nowait";
    if (afd_gate_kind_of(g->c, r) == K_AWAIT) {
        r = ts_node_named_child(r, 0);
        meth = "get";
    }
    TSNode f = afd_pyast_field(r, AFD_PYF_FUNCTION);
    if (afd_gate_kind_of(g->c, r) == K_CALL && afd_gate_kind_of(g->c, f) == K_ATTR &&
        afd_pyast_text_is(g->c->src, g->c->len, afd_pyast_field(f, AFD_PYF_ATTRIBUTE), meth) &&
        same_src(g->c, afd_pyast_field(f, AFD_PYF_OBJECT), g->queue)) {
        g->found = 1;
        return AFD_PYAST_STOP;
    }
    return AFD_PYAST_DESCEND;
}

/* A handler that catches cancellation and re-raises it, and on the way puts an item back to the
 * queue its function got it from (`X = await Q.get()` earlier, `Q.put_nowait(X)` here), gives
 * back what the interrupted code held: the hand-off it took is passed on to the next getter.
 * That is substance (C_HANDON, keyed "putback " + Q and X normalized); a put of another value, or
 * to another queue, is not. */
static void visit_putback(ctx *c, TSNode body)
{
    putback p;
    memset(&p, 0, sizeof p);
    p.c = c;
    afd_pyast_walk(NULL, body, putback_enter, NULL, &p); /* it allocates nothing that can fail */
    TSNode fn = body;
    while (!ts_node_is_null(fn) && afd_gate_kind_of(c, fn) != K_FUNCDEF)
        fn = ts_node_parent(fn);
    if (ts_node_is_null(fn))
        return;
    for (size_t i = 0; i < p.n; i++) {
        got_from g = {c, p.queue[i], p.item[i], ts_node_start_byte(body), 0, 0};
        afd_pyast_walk(NULL, fn, got_from_enter, NULL, &g); /* it allocates nothing that can fail */
        if (!g.found)
            continue;
        norm_key(c, p.queue[i], &c->tmp2);
        char key[2 * MAX_NORM + 32];
        int w = snprintf(key, sizeof key, "putback %s ", c->tmp2.data ? (const char *)c->tmp2.data : "");
        norm_key(c, p.item[i], &c->tmp2);
        snprintf(key + w, sizeof key - (size_t)w, "%s", c->tmp2.data ? (const char *)c->tmp2.data : "");
        afd_gate_add_fact_str(c, C_HANDON, key);
        return;
    }
}

/* A handler that catches cancellation and re-raises it, and on the way tests whether the future
 * it awaited had already been completed (`F.done() and not F.cancelled()`), is the cleanup of a
 * hand-off: what the waiter was handed is passed on before the cancellation propagates. That is
 * substance (C_HANDON, keyed by F's normalized text); whether the pass-on works is verification's
 * to decide. */
static void visit_handon(ctx *c, TSNode body)
{
    handon h;
    memset(&h, 0, sizeof h);
    h.c = c;
    afd_pyast_walk(NULL, body, handon_enter, NULL, &h); /* it allocates nothing that can fail */
    if (ts_node_is_null(h.found)) {
        visit_putback(c, body);
        return;
    }
    norm_key(c, h.found, &c->tmp2);
    afd_gate_add_fact_str(c, C_HANDON, (const char *)c->tmp2.data);
}

/* The search of a loop body for a future it tests and completes: a call `W.cancelled()` or
 * `W.done()` and a call `W.set_result(...)` on one receiver W (nested scopes are not the loop's). */
typedef struct wake_loop {
    const ctx *c; /* Borrowed: the side being analysed */
    TSNode tested[8], handed[8];
    size_t n_tested, n_handed;
    unsigned seen;
} wake_loop;

static int wake_loop_enter(void *vw, TSNode x)
{
    wake_loop *w = vw;
    uint8_t k = afd_gate_kind_of(w->c, x);
    if (++w->seen > MAX_HANDLER_NODES)
        return AFD_PYAST_STOP;
    if (afd_gate_is_scope_kind(k) || k == K_STRING)
        return AFD_PYAST_SKIP;
    TSNode f = afd_pyast_field(x, AFD_PYF_FUNCTION);
    if (k != K_CALL || afd_gate_kind_of(w->c, f) != K_ATTR)
        return AFD_PYAST_DESCEND;
    TSNode recv = afd_pyast_field(f, AFD_PYF_OBJECT), meth = afd_pyast_field(f, AFD_PYF_ATTRIBUTE);
    if ((afd_pyast_text_is(w->c->src, w->c->len, meth, "cancelled") ||
         afd_pyast_text_is(w->c->src, w->c->len, meth, "done")) &&
        w->n_tested < 8)
        w->tested[w->n_tested++] = recv;
    if (afd_pyast_text_is(w->c->src, w->c->len, meth, "set_result") && w->n_handed < 8)
        w->handed[w->n_handed++] = recv;
    return AFD_PYAST_DESCEND;
}

/* A loop that completes a future only after testing it (`if not w.cancelled(): w.set_result(x)`)
 * hands what it hands to the first waiter that can still take it: the owner is decided when it
 * is woken, not by which waiter happens to be first. That is substance too (C_HANDON, keyed
 * "loop " + W's normalized text); whether it works is verification's to decide. */
void afd_gate_visit_wake_loop(ctx *c, TSNode n)
{
    wake_loop w;
    memset(&w, 0, sizeof w);
    w.c = c;
    afd_pyast_walk(NULL, afd_pyast_field(n, AFD_PYF_BODY), wake_loop_enter, NULL, &w); /* allocates nothing */
    for (size_t i = 0; i < w.n_handed; i++)
        for (size_t j = 0; j < w.n_tested; j++) {
            size_t hl, tl;
            const char *ht = afd_pyast_text(c->src, c->len, w.handed[i], &hl);
            const char *tt = afd_pyast_text(c->src, c->len, w.tested[j], &tl);
            if (hl != tl || memcmp(ht, tt, hl) != 0)
                continue;
            norm_key(c, w.handed[i], &c->tmp2);
            char key[MAX_NORM + 32];
            snprintf(key, sizeof key, "loop %s", c->tmp2.data ? (const char *)c->tmp2.data : "");
            afd_gate_add_fact_str(c, C_HANDON, key);
            return;
        }
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
    if (reraises(c, body, alias)) {
        visit_handon(c, body);
        return;
    }
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
