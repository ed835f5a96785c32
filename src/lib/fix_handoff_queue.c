/* fix_handoff_queue.c -- HANDOFF_CLEANUP for an item got from a queue (see fix_handoff.h,
 * afd_fix_handoff_putback).
 *
 * The shape: in an async function, `x = await <q>.get()` (or `x = <q>.get_nowait()`) takes an
 * item off a queue, later statements of the same block await something, and a later statement of
 * that block hands x on (`return x`, `yield x`). An interruption at one of those awaits (a
 * cancellation, a timeout) leaves with x held by nobody: the queue is one item short for good.
 * The fix puts x back where it came from and re-raises, wherever those statements are left by an
 * exception: `except BaseException: <q>.put_nowait(x); raise`. Everything is read off the syntax
 * tree; a shape that does not match is refused with a reason. The handler always re-raises. */
#include "fix_handoff.h"

#include "fix_impl.h"

#include <stdio.h>
#include <string.h>

typedef struct queue_get {
    TSNode get;   /* the statement `x = await <q>.get()` / `x = <q>.get_nowait()` */
    TSNode item;  /* x */
    TSNode queue; /* <q>: a name or an attribute */
} queue_get;

static const char *node_text(const fixctx *c, TSNode n, size_t *len)
{
    return afd_pyast_text(c->src, c->len, n, len);
}

static int same_node_text(const fixctx *c, TSNode a, TSNode b)
{
    return afd_fix_same_text(c->src, a, b);
}

/* Whether st is `x = await <q>.get()` or `x = <q>.get_nowait()` with x a name and q a name or an
 * attribute; fills *g. */
static int is_queue_get(const fixctx *c, TSNode st, queue_get *g)
{
    TSNode as = afd_pyast_is(st, AFD_PY_EXPRESSION_STATEMENT) ? ts_node_named_child(st, 0) : st;
    if (!afd_pyast_is(as, AFD_PY_ASSIGNMENT))
        return 0;
    TSNode left = afd_pyast_field(as, AFD_PYF_LEFT), right = afd_pyast_field(as, AFD_PYF_RIGHT);
    const char *method = "get_nowait";
    if (afd_pyast_is(right, AFD_PY_AWAIT)) {
        right = ts_node_named_child(right, 0);
        method = "get";
    }
    TSNode f = afd_pyast_field(right, AFD_PYF_FUNCTION);
    if (!afd_pyast_is(left, AFD_PY_IDENTIFIER) || !afd_pyast_is(right, AFD_PY_CALL) ||
        !afd_pyast_is(f, AFD_PY_ATTRIBUTE) ||
        !afd_fix_text_is(c->src, afd_pyast_field(f, AFD_PYF_ATTRIBUTE), method) ||
        ts_node_named_child_count(afd_pyast_field(right, AFD_PYF_ARGUMENTS)) != 0)
        return 0;
    TSNode q = afd_pyast_field(f, AFD_PYF_OBJECT);
    if (!afd_pyast_is(q, AFD_PY_IDENTIFIER) && !afd_pyast_is(q, AFD_PY_ATTRIBUTE))
        return 0;
    *g = (queue_get){st, left, q};
    return 1;
}

/* A walk for what a range of statements must not hold: a yield (the wrapped statements would
 * cross a suspension handed to the caller), a put of x back to q (the give-back is there). */
typedef struct range_walk {
    const fixctx *c;    /* Borrowed. */
    const queue_get *g; /* Borrowed. */
    int yields, puts_back;
} range_walk;

static int range_enter(void *ctx, TSNode n)
{
    range_walk *w = ctx;
    if (strcmp(ts_node_type(n), "yield") == 0)
        w->yields = 1;
    TSNode f = afd_pyast_field(n, AFD_PYF_FUNCTION);
    if (afd_pyast_is(n, AFD_PY_CALL) && afd_pyast_is(f, AFD_PY_ATTRIBUTE) &&
        (afd_fix_text_is(w->c->src, afd_pyast_field(f, AFD_PYF_ATTRIBUTE), "put_nowait") ||
         afd_fix_text_is(w->c->src, afd_pyast_field(f, AFD_PYF_ATTRIBUTE), "put")) &&
        same_node_text(w->c, afd_pyast_field(f, AFD_PYF_OBJECT), w->g->queue) &&
        same_node_text(w->c, ts_node_named_child(afd_pyast_field(n, AFD_PYF_ARGUMENTS), 0), w->g->item))
        w->puts_back = 1;
    return AFD_PYAST_DESCEND;
}

/* Whether st hands x on: `return x` or `yield x` alone. */
static int hands_on(const fixctx *c, TSNode st, TSNode item)
{
    if (afd_pyast_is(st, AFD_PY_RETURN_STATEMENT))
        return same_node_text(c, ts_node_named_child(st, 0), item);
    TSNode e = afd_pyast_is(st, AFD_PY_EXPRESSION_STATEMENT) ? ts_node_named_child(st, 0) : st;
    return strcmp(ts_node_type(e), "yield") == 0 && same_node_text(c, ts_node_named_child(e, 0), item);
}

/* Whether the module shows q as a queue with put_nowait(): some `<q>.put_nowait(` in its text. */
static int queue_like(const fixctx *c, TSNode q)
{
    size_t lq;
    const char *t = node_text(c, q, &lq);
    static const char tail[] = ".put_nowait(";
    size_t lt = sizeof tail - 1;
    for (size_t i = 0; i + lq + lt <= c->len; i++)
        if (!memcmp(c->src + i, t, lq) && !memcmp(c->src + i + lq, tail, lt) &&
            (i == 0 || !(c->src[i - 1] == '_' || c->src[i - 1] == '.' ||
                         (c->src[i - 1] >= 'a' && c->src[i - 1] <= 'z') ||
                         (c->src[i - 1] >= 'A' && c->src[i - 1] <= 'Z') ||
                         (c->src[i - 1] >= '0' && c->src[i - 1] <= '9'))))
            return 1;
    return 0;
}

/* Whether the except clause ex catches a cancellation: bare, BaseException or CancelledError. */
static int catches_cancel(const fixctx *c, TSNode ex)
{
    TSNode first = ts_node_named_child(ex, 0);
    if (ts_node_is_null(first) || afd_pyast_is(first, AFD_PY_BLOCK))
        return 1;
    size_t l;
    const char *t = node_text(c, first, &l);
    for (size_t i = 0; i + 13 <= l; i++)
        if (!memcmp(t + i, "BaseException", 13) || (i + 14 <= l && !memcmp(t + i, "CancelledError", 14)))
            return 1;
    return 0;
}

/* The latest queue get in a block enclosing st, before the statement of that block holding st:
 * the get and the index of that statement in *at. */
static int find_get(const fixctx *c, TSNode st, TSNode fn, queue_get *g, TSNode *block, uint32_t *at)
{
    for (TSNode n = st; !ts_node_eq(n, fn); n = ts_node_parent(n)) {
        TSNode b = ts_node_parent(n);
        if (!afd_pyast_is(b, AFD_PY_BLOCK))
            continue;
        uint32_t k = ts_node_named_child_count(b), i = 0;
        while (i < k && !ts_node_eq(ts_node_named_child(b, i), n))
            i++;
        for (uint32_t j = i; j-- > 0;)
            if (is_queue_get(c, ts_node_named_child(b, j), g)) {
                *block = b;
                *at = i;
                return 1;
            }
    }
    return 0;
}

/* The give-back handler's lines, at the indent of `except` (ind) plus unit, into b. */
static void put_handler(const fixctx *c, const queue_get *g, const char *ind, size_t n, const char *unit,
                        afd_buf *b)
{
    size_t lq, lx;
    const char *q = node_text(c, g->queue, &lq), *x = node_text(c, g->item, &lx);
    afd_buf_printf(b, "%.*sexcept BaseException:\n", (int)n, ind);
    afd_buf_printf(b,
                   "%.*s%s# affidavit: interrupted while holding %.*s, got from %.*s: put it back and "
                   "re-raise.\n",
                   (int)n, ind, unit, (int)lx, x, (int)lq, q);
    afd_buf_printf(b, "%.*s%s%.*s.put_nowait(%.*s)\n", (int)n, ind, unit, (int)lq, q, (int)lx, x);
    afd_buf_printf(b, "%.*s%sraise\n", (int)n, ind, unit);
}

/* The statements of block b from first to last (indices) and their checks; plans the edit. */
static int plan_putback(fixctx *c, const queue_get *g, const char *unit, TSNode b, uint32_t first,
                        uint32_t last, TSNode st)
{
    range_walk w = {c, g, 0, 0};
    for (uint32_t i = first; i <= last; i++) {
        TSNode s = ts_node_named_child(b, i);
        afd_pyast_walk(NULL, s, range_enter, NULL, &w); /* it allocates nothing that can fail */
        if (afd_fix_has_multiline_string(s))
            return afd_fix_refuse(c,
                                  "a statement holding the item spans a multi-line string: not re-indented");
    }
    size_t lx;
    const char *x = node_text(c, g->item, &lx);
    if (w.puts_back)
        return afd_fix_refuse(c, "%.*s is put back to its queue already on the path that holds it", (int)lx,
                              x);
    if (w.yields)
        return afd_fix_refuse(c,
                              "the statements holding %.*s cross a yield: the give-back would span the "
                              "caller's code",
                              (int)lx, x);
    TSNode s0 = ts_node_named_child(b, first), s1 = ts_node_named_child(b, last);
    uint32_t r0 = ts_node_start_point(s0).row, r1 = ts_node_end_point(s1).row;
    const char *at;
    size_t n = afd_fix_line_indent(c, r0, &at);
    /* One try statement whose body holds the await and whose handlers let a cancellation through:
     * the give-back is one more handler of it, as the real fixes write it. */
    if (first == last && strcmp(ts_node_type(s0), "try_statement") == 0) {
        TSNode body = afd_pyast_field(s0, AFD_PYF_BODY), last_ex = {{0}, 0, 0};
        uint32_t k = ts_node_named_child_count(s0);
        for (uint32_t i = 0; i < k; i++) {
            TSNode ch = ts_node_named_child(s0, i);
            if (!afd_pyast_is(ch, AFD_PY_EXCEPT_CLAUSE))
                continue;
            if (catches_cancel(c, ch))
                return afd_fix_refuse(c,
                                      "the try holding %.*s already catches the interruption: its handler "
                                      "is where the give-back belongs, not a new one",
                                      (int)lx, x);
            last_ex = ch;
        }
        if (!ts_node_is_null(last_ex)) {
            if (ts_node_start_byte(st) < ts_node_start_byte(body) ||
                ts_node_end_byte(st) > ts_node_end_byte(body))
                return afd_fix_refuse(c, "the interrupted await is in a handler of the try, not its body");
            put_handler(c, g, at, n, unit, &c->edits[ts_node_end_point(last_ex).row + 1].before);
            return 0;
        }
    }
    afd_buf_printf(&c->edits[r0].before, "%.*stry:\n", (int)n, at);
    for (uint32_t r = r0; r <= r1; r++)
        c->edits[r].indent = 1;
    put_handler(c, g, at, n, unit, &c->edits[r1 + 1].before);
    return 0;
}

int afd_fix_handoff_putback(const char *src, size_t len, uint32_t await_line, afd_buf *out, char *why,
                            size_t whylen)
{
    fixctx c = {.src = src, .len = len, .why = why, .whylen = whylen};
    TSNode st, fn, b;
    queue_get g;
    uint32_t at = 0;
    int rc = afd_fix_start(&c, out);
    if (rc < 0 ||
        (rc = afd_fix_async_statement_at(&c, await_line, "the await",
                                         "an item got from a queue is held in a coroutine", &st, &fn)) < 0)
        goto out;
    if (!find_get(&c, st, fn, &g, &b, &at)) {
        rc = afd_fix_refuse(&c,
                            "no `x = await <q>.get()` or `x = <q>.get_nowait()` precedes line %u in a "
                            "block around it: no item got from a queue",
                            await_line);
        goto out;
    }
    if (!queue_like(&c, g.queue)) {
        size_t lq;
        const char *q = node_text(&c, g.queue, &lq);
        rc = afd_fix_refuse(&c,
                            "%.*s is never given put_nowait() in this module: not a queue to put the "
                            "item back to",
                            (int)lq, q);
        goto out;
    }
    uint32_t k = ts_node_named_child_count(b), gi = at;
    while (gi > 0 && !ts_node_eq(ts_node_named_child(b, gi), g.get))
        gi--;
    uint32_t hi = at + 1;
    while (hi < k && !hands_on(&c, ts_node_named_child(b, hi), g.item))
        hi++;
    if (hi >= k) {
        rc = afd_fix_refuse(&c, "the block that got the item does not hand it on after the await "
                                "(`return x` or `yield x`): no holding span to guard");
        goto out;
    }
    char unit[16];
    afd_fix_indent_unit(&c, fn, ts_node_start_point(g.get).row, unit);
    if ((rc = plan_putback(&c, &g, unit, b, gi + 1, hi - 1, st)) < 0)
        goto out;
    rc = afd_fix_emit(&c, out, unit);
out:
    afd_fix_finish(&c);
    return rc;
}
