/* gate_visit.c -- the gate's visits: what each node kind adds to a side's facts (a sleep, a
 * timeout, a retry, an assert, a swallowing handler, a skip, a primitive's creation or use, a
 * lock nesting edge), and the two walks that call them (see gate.c for the whole design). */
#include "gate_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the visits ---- */

static const char *const SLEEPS[] = {"asyncio.sleep", "time.sleep", "anyio.sleep", "trio.sleep", NULL};
static const char *const YIELD_SLEEPS[] = {"asyncio.sleep", "anyio.sleep", "trio.sleep", NULL};
static const char *const TIMEOUTS[] = {"asyncio.wait_for", "asyncio.timeout",     "asyncio.timeout_at",
                                       "anyio.fail_after", "anyio.move_on_after", "async_timeout.timeout",
                                       "trio.fail_after",  "trio.move_on_after",  NULL};
static const char *const SKIP_MARKS[] = {
    "pytest.mark.skip", "pytest.mark.skipif",  "pytest.mark.xfail",        "unittest.skip",
    "unittest.skipIf",  "unittest.skipUnless", "unittest.expectedFailure", NULL};
static const char *const SKIP_CALLS[] = {"pytest.skip", "pytest.xfail", NULL};
static const char *const PRIMS[] = {"asyncio.Lock",
                                    "asyncio.Event",
                                    "asyncio.Condition",
                                    "asyncio.Semaphore",
                                    "asyncio.BoundedSemaphore",
                                    "asyncio.Queue",
                                    "asyncio.LifoQueue",
                                    "asyncio.PriorityQueue",
                                    NULL};
static const char *const TASK_MAKERS[] = {"asyncio.create_task", "asyncio.ensure_future", NULL};
static const char *const LOG_HEADS[] = {"print",  "logging", "log",     "logger", "LOG",
                                        "LOGGER", "_log",    "_logger", NULL};
static const char *const LOG_METHODS[] = {"debug",     "info",     "warning", "warn", "error",
                                          "exception", "critical", "log",     NULL};

/* A name or attributes of a name: what holds task handles, re-read without side effects. */
static int is_handle_ref(TSNode n)
{
    while (afd_pyast_is(n, AFD_PY_ATTRIBUTE))
        n = afd_pyast_field(n, AFD_PYF_OBJECT);
    return afd_pyast_is(n, AFD_PY_IDENTIFIER);
}

/* `list(h)` or `list(h.values())` around a handle reference h: a copy of a container of tasks. */
static int is_handle_copy(const ctx *c, TSNode n)
{
    if (!afd_pyast_is(n, AFD_PY_CALL))
        return is_handle_ref(n);
    TSNode fn = afd_pyast_field(n, AFD_PYF_FUNCTION), args = afd_pyast_field(n, AFD_PYF_ARGUMENTS);
    size_t l = 0;
    const char *t = afd_pyast_text(c->src, c->len, fn, &l);
    if (!afd_pyast_is(fn, AFD_PY_IDENTIFIER) || l != 4 || memcmp(t, "list", 4) != 0 ||
        ts_node_named_child_count(args) != 1)
        return 0;
    TSNode a = ts_node_named_child(args, 0);
    if (afd_pyast_is(a, AFD_PY_CALL) &&
        ts_node_named_child_count(afd_pyast_field(a, AFD_PYF_ARGUMENTS)) == 0) {
        TSNode m = afd_pyast_field(a, AFD_PYF_FUNCTION);
        t = afd_pyast_text(c->src, c->len, afd_pyast_field(m, AFD_PYF_ATTRIBUTE), &l);
        return afd_pyast_is(m, AFD_PY_ATTRIBUTE) && l == 6 && memcmp(t, "values", 6) == 0 &&
               is_handle_ref(afd_pyast_field(m, AFD_PYF_OBJECT));
    }
    return is_handle_ref(a);
}

/* `asyncio.gather(...)` or `asyncio.wait(...)` of task handles only (names or attributes, starred
 * or in a list, a container copied with list()): awaiting tasks that already run, the way a
 * reader waits for tasks it did not spawn itself. A call among the arguments (a new coroutine, a
 * sleep) is not a handle: such a gather is not counted. */
static int awaits_handles(ctx *c, TSNode call)
{
    if (!afd_gate_dotted(c, afd_pyast_field(call, AFD_PYF_FUNCTION), &c->tmp))
        return 0;
    const char *q = (const char *)c->tmp.data;
    if (strcmp(q, "asyncio.gather") != 0 && strcmp(q, "asyncio.wait") != 0)
        return 0;
    TSNode args = afd_pyast_field(call, AFD_PYF_ARGUMENTS);
    uint32_t k = ts_node_named_child_count(args);
    int handles = 0;
    for (uint32_t i = 0; i < k; i++) {
        TSNode a = ts_node_named_child(args, i);
        if (afd_pyast_is(a, AFD_PY_KEYWORD_ARGUMENT)) {
            size_t l = 0;
            const char *t = afd_pyast_text(c->src, c->len, afd_pyast_field(a, AFD_PYF_NAME), &l);
            if (l == 7 && memcmp(t, "timeout", 7) == 0)
                return 0; /* a wait that gives up is no ordering */
            continue;     /* return_exceptions=..., return_when=...: not awaitables */
        }
        if (afd_pyast_is(a, AFD_PY_COMMENT))
            continue;
        if (afd_pyast_is(a, AFD_PY_LIST_SPLAT) && ts_node_named_child_count(a) == 1)
            a = ts_node_named_child(a, 0);
        if (afd_pyast_is(a, AFD_PY_LIST)) {
            uint32_t m = ts_node_named_child_count(a);
            for (uint32_t j = 0; j < m; j++)
                if (!is_handle_ref(ts_node_named_child(a, j)))
                    return 0;
            handles += m > 0;
            continue;
        }
        if (!is_handle_copy(c, a))
            return 0;
        handles++;
    }
    return handles > 0;
}

/* The target of `target = <n>` when n is an assignment's whole right side, into b; "" otherwise. */
static void bound_target(ctx *c, TSNode n, afd_buf *b)
{
    TSNode p = afd_gate_ancestor(c, 1);
    b->len = 0;
    if (!ts_node_is_null(p) && afd_gate_kind_of(c, p) == K_ASSIGN &&
        ts_node_eq(afd_pyast_field(p, AFD_PYF_RIGHT), n))
        afd_gate_norm(c, afd_pyast_field(p, AFD_PYF_LEFT), b);
    afd_buf_put_u8(b, 0);
    b->len--;
}

static int is_zero_delay(const ctx *c, TSNode args)
{
    if (ts_node_is_null(args) || ts_node_named_child_count(args) != 1)
        return 0;
    TSNode a = ts_node_named_child(args, 0);
    uint8_t k = afd_gate_kind_of(c, a);
    if (k != K_INTEGER && k != K_FLOAT)
        return 0;
    size_t l = 0;
    const char *t = afd_pyast_text(c->src, c->len, a, &l);
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
    if (!(afd_gate_in_list(q, YIELD_SLEEPS) && zero))
        afd_gate_add_fact_str(c, C_SLEEP, text);
    /* Polling: a sleep (a zero one too: a busy wait) inside a while loop of the same function. */
    for (size_t i = 1; i <= MAX_ANCESTOR_HOPS; i++) {
        TSNode a = afd_gate_ancestor(c, i);
        if (ts_node_is_null(a) || afd_gate_is_scope_kind(afd_gate_kind_of(c, a)))
            break;
        if (afd_gate_kind_of(c, a) == K_WHILE) {
            afd_gate_norm(c, afd_pyast_field(a, AFD_PYF_CONDITION), t);
            char ptext[sizeof text + MAX_NORM + 16];
            snprintf(ptext, sizeof ptext, "while %s: %s", t->data ? (const char *)t->data : "", text);
            afd_gate_add_fact_str(c, C_POLL, ptext);
            break;
        }
    }
}

static void visit_sleep(ctx *c, const char *q, TSNode args)
{
    afd_gate_norm(c, args, &c->tmp2);
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
    if (afd_gate_dotted(c, fnarg, &c->tmp))
        snprintf(q, sizeof q, "%s", (const char *)c->tmp.data);
    else {
        afd_gate_norm(c, fnarg, &c->tmp);
        snprintf(q, sizeof q, "%s", c->tmp.data ? (const char *)c->tmp.data : "");
    }
    afd_gate_add_fact_str(c, C_OFFLOAD, q);
    if (!afd_gate_in_list(q, SLEEPS))
        return;
    char argtext[MAX_NORM + 8] = "()";
    if (k > skip + 1) {
        /* the text from the first argument after F to the last, as a call would have it */
        TSNode first = ts_node_named_child(args, skip + 1), last = ts_node_named_child(args, k - 1);
        size_t len;
        const char *t = afd_pyast_text(c->src, c->len, first, &len);
        size_t span = ts_node_end_byte(last) - ts_node_start_byte(first);
        afd_buf *b = &c->tmp2;
        b->len = 0;
        afd_buf_put_u8(b, '(');
        int sp = 0;
        for (size_t i = 0; i < span && b->len < MAX_NORM; i++) {
            if (afd_gate_is_space(t[i])) {
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
    if (afd_gate_dotted(c, fn, &c->tmp))
        snprintf(q, sizeof q, "%s", (const char *)c->tmp.data);
    const char *meth = NULL;
    char methbuf[64] = "";
    if (afd_gate_kind_of(c, fn) == K_ATTR) {
        TSNode a = afd_pyast_field(fn, AFD_PYF_ATTRIBUTE);
        size_t l = 0;
        const char *t = ts_node_is_null(a) ? "" : afd_pyast_text(c->src, c->len, a, &l);
        if (!ts_node_is_null(a) && l < sizeof methbuf) {
            memcpy(methbuf, t, l);
            methbuf[l] = 0;
            meth = methbuf;
        }
    }
    afd_gate_visit_cancel_call(c, n, q, meth);
    if (afd_gate_in_list(q, SLEEPS) ||
        (meth && (strcmp(meth, "call_later") == 0 || strcmp(meth, "call_at") == 0))) {
        visit_sleep(c, q[0] ? q : meth, args);
        return;
    }
    if (strcmp(q, "asyncio.to_thread") == 0 || (meth && strcmp(meth, "run_in_executor") == 0)) {
        visit_offload(c, args, strcmp(q, "asyncio.to_thread") == 0 ? 0 : 1);
        return;
    }
    if (afd_gate_in_list(q, TIMEOUTS)) {
        afd_gate_norm(c, n, &c->tmp2);
        afd_gate_add_fact_str(c, C_TIMEOUT, (const char *)c->tmp2.data);
    } else if (strcmp(q, "pytest.approx") == 0) {
        afd_gate_norm(c, n, &c->tmp2);
        afd_gate_add_fact_str(c, C_APPROX, (const char *)c->tmp2.data);
    } else if (strcmp(q, "contextlib.suppress") == 0) {
        afd_gate_norm(c, n, &c->tmp2);
        afd_gate_add_fact_str(c, C_SUPPRESS, (const char *)c->tmp2.data);
    } else if (afd_gate_in_list(q, SKIP_CALLS)) {
        afd_gate_add_fact_str(c, C_SKIP, q);
    } else if (afd_gate_in_list(q, PRIMS)) {
        bound_target(c, n, &c->tmp2);
        char text[MAX_NORM + 64];
        snprintf(text, sizeof text, "%s\x1f%s", afd_gate_last_part(q), (const char *)c->tmp2.data);
        afd_gate_add_fact_str(c, C_CREATE, text);
    } else if (afd_gate_in_list(q, TASK_MAKERS) || (meth && strcmp(meth, "create_task") == 0)) {
        bound_target(c, n, &c->tmp2);
        if (c->tmp2.len)
            afd_gate_add_fact(c, C_TASKBIND, (const char *)c->tmp2.data, c->tmp2.len,
                              afd_gate_enclosing_fn(c), ts_node_start_byte(n), 0);
    }
    if (meth) {
        static const char *const USES[][2] = {
            {"acquire", "acq"},   {"set", "set"},           {"wait", "wait"}, {"wait_for", "wait"},
            {"notify", "notify"}, {"notify_all", "notify"}, {"put", "put"},   {"put_nowait", "put"},
            {"get", "get"},       {"get_nowait", "get"},
        };
        for (size_t i = 0; i < sizeof USES / sizeof USES[0]; i++)
            if (strcmp(meth, USES[i][0]) == 0) {
                afd_gate_norm(c, afd_pyast_field(fn, AFD_PYF_OBJECT), &c->tmp2);
                char text[MAX_NORM + 64];
                snprintf(text, sizeof text, "%s\x1f%s", USES[i][1], (const char *)c->tmp2.data);
                afd_gate_add_fact_str(c, C_USE, text);
                break;
            }
        if (strncmp(meth, "assert", 6) == 0) { /* unittest's self.assertEqual(...) */
            afd_gate_norm(c, n, &c->tmp2);
            afd_gate_add_fact_str(c, C_ASSERT, (const char *)c->tmp2.data);
        }
    }
}

static void visit_decorator(ctx *c, TSNode n)
{
    TSNode e = ts_node_named_child_count(n) ? ts_node_named_child(n, 0) : n;
    TSNode args;
    memset(&args, 0, sizeof args);
    if (afd_gate_kind_of(c, e) == K_CALL) {
        args = afd_pyast_field(e, AFD_PYF_ARGUMENTS);
        e = afd_pyast_field(e, AFD_PYF_FUNCTION);
    }
    if (!afd_gate_dotted(c, e, &c->tmp))
        return;
    char q[MAX_DOTTED];
    snprintf(q, sizeof q, "%s", (const char *)c->tmp.data);
    const char *last = afd_gate_last_part(q);
    size_t first_len = strcspn(q, ".");
    afd_gate_norm(c, n, &c->tmp2);
    if (strcmp(q, "pytest.mark.timeout") == 0) {
        double v = INFINITY; /* a non-literal timeout counts as the largest */
        if (!ts_node_is_null(args) && ts_node_named_child_count(args) > 0) {
            TSNode a = ts_node_named_child(args, 0);
            uint8_t k = afd_gate_kind_of(c, a);
            size_t l = 0;
            const char *t = afd_pyast_text(c->src, c->len, a, &l);
            char buf[32];
            if ((k == K_INTEGER || k == K_FLOAT) && l < sizeof buf) {
                memcpy(buf, t, l);
                buf[l] = 0;
                v = strtod(buf, NULL);
            }
        }
        afd_gate_add_fact(c, C_TMARK, (const char *)c->tmp2.data, c->tmp2.len, 0, 0, v);
    } else if (strcmp(last, "flaky") == 0 || strcmp(last, "retry") == 0 ||
               strcmp(q, "pytest.mark.repeat") == 0 || (first_len == 7 && strncmp(q, "backoff", 7) == 0) ||
               (first_len == 8 && strncmp(q, "tenacity", 8) == 0) ||
               (first_len == 8 && strncmp(q, "retrying", 8) == 0) || strstr(q, "retry") != NULL) {
        afd_gate_add_fact_str(c, C_RETRY_DEC, (const char *)c->tmp2.data);
    } else if (afd_gate_kind_of(c, e) == K_IDENT && afd_gate_in_list(q, SKIP_MARKS)) {
        afd_gate_add_fact_str(c, C_SKIP, q); /* attributes are counted by visit_attribute */
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
        if (!ts_node_is_null(v) && afd_gate_kind_of(c, v) == K_AS_PATTERN && ts_node_named_child_count(v))
            v = ts_node_named_child(v, 0);
        uint8_t k = ts_node_is_null(v) ? K_OTHER : afd_gate_kind_of(c, v);
        if (k != K_IDENT && k != K_ATTR)
            continue;
        afd_gate_norm(c, v, &c->tmp2);
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
    for (const char *s = (const char *)mine.data; s < (const char *)mine.data + mine.len;
         s += strlen(s) + 1) {
        char text[MAX_NORM + 64];
        afd_gate_add_fact_str(c, C_AWITH, s);
        snprintf(text, sizeof text, "acq\x1f%s", s);
        afd_gate_add_fact_str(c, C_USE, text);
        if (prev) {
            afd_gate_add_edge(c, prev, s);
            unsorted |= strcmp(prev, s) > 0;
        }
        prev = s;
    }
    if (unsorted) {
        TSNode clause = ts_node_named_child_count(n) ? ts_node_named_child(n, 0) : n;
        afd_gate_norm(c, clause, &c->tmp2);
        afd_gate_add_fact_str(c, C_UNSORTED, (const char *)c->tmp2.data);
    }
    /* Nesting: an edge from every lock of every enclosing async with of the same function. */
    afd_buf outer;
    afd_buf_init(&outer);
    for (size_t i = 1; i <= MAX_ANCESTOR_HOPS && !c->rc && !c->out->edges_overflow; i++) {
        TSNode a = afd_gate_ancestor(c, i);
        if (ts_node_is_null(a) || afd_gate_is_scope_kind(afd_gate_kind_of(c, a)))
            break;
        if (afd_gate_kind_of(c, a) != K_WITH || lock_items(c, a, &outer) == 0)
            continue;
        if (outer.err) {
            c->rc = outer.err;
            break;
        }
        for (const char *o = (const char *)outer.data; o < (const char *)outer.data + outer.len;
             o += strlen(o) + 1)
            for (const char *s = (const char *)mine.data; s < (const char *)mine.data + mine.len;
                 s += strlen(s) + 1)
                afd_gate_add_edge(c, o, s);
    }
    afd_buf_finish(&outer);
    afd_buf_finish(&mine);
}

static int is_broad_type(const ctx *c, TSNode t)
{
    static const char *const BROAD[] = {"Exception", "BaseException", "AssertionError", NULL};
    uint8_t k = afd_gate_kind_of(c, t);
    if (k == K_TUPLE || k == K_PAREN) {
        uint32_t nc = ts_node_named_child_count(t);
        for (uint32_t i = 0; i < nc; i++) {
            TSNode e = ts_node_named_child(t, i);
            uint8_t ek = afd_gate_kind_of(c, e);
            if ((ek == K_IDENT || ek == K_ATTR) && is_broad_type(c, e))
                return 1;
        }
        return 0;
    }
    if (k == K_AS_PATTERN && ts_node_named_child_count(t))
        return is_broad_type(c, ts_node_named_child(t, 0));
    if (k == K_IDENT) {
        for (size_t i = 0; BROAD[i]; i++)
            if (afd_pyast_text_is(c->src, c->len, t, BROAD[i]))
                return 1;
    } else if (k == K_ATTR) {
        TSNode a = afd_pyast_field(t, AFD_PYF_ATTRIBUTE);
        return !ts_node_is_null(a) && (afd_pyast_text_is(c->src, c->len, a, "Exception") ||
                                       afd_pyast_text_is(c->src, c->len, a, "BaseException"));
    }
    return 0;
}

/* A handler statement that does nothing about the error: pass, `...`, continue, return, or a call
 * to print or a logger. */
static int is_idle_stmt(const ctx *c, TSNode s)
{
    uint8_t k = afd_gate_kind_of(c, s);
    if (k == K_PASS || k == K_CONTINUE || k == K_RETURN)
        return 1;
    if (k != K_EXPR_STMT || ts_node_named_child_count(s) != 1)
        return 0;
    TSNode e = ts_node_named_child(s, 0);
    if (afd_gate_kind_of(c, e) == K_ELLIPSIS)
        return 1;
    if (afd_gate_kind_of(c, e) == K_AWAIT && ts_node_named_child_count(e))
        e = ts_node_named_child(e, 0);
    if (afd_gate_kind_of(c, e) != K_CALL)
        return 0;
    afd_buf b;
    afd_buf_init(&b);
    int idle = 0;
    /* dotted sets data when it answers 1; testing it too tells the compiler so */
    if (afd_gate_dotted(c, afd_pyast_field(e, AFD_PYF_FUNCTION), &b) && b.data) {
        const char *q = (const char *)b.data;
        char head[64];
        size_t hl = strcspn(q, ".");
        snprintf(head, sizeof head, "%.*s", (int)(hl < 63 ? hl : 63), q);
        idle = afd_gate_in_list(head, LOG_HEADS) ||
               (strchr(q, '.') && afd_gate_in_list(afd_gate_last_part(q), LOG_METHODS) &&
                (strstr(q, "log") || strstr(q, "LOG")));
    }
    afd_buf_finish(&b);
    return idle;
}

static void visit_except(ctx *c, TSNode n)
{
    TSNode type = afd_pyast_field(n, AFD_PYF_VALUE);
    TSNode body = afd_gate_block_child(c, n);
    int swallow = 0;
    if (ts_node_is_null(body))
        return;
    if (afd_gate_block_statements_all(c, body, is_idle_stmt))
        swallow = 1;
    else if ((ts_node_is_null(type) || is_broad_type(c, type)) &&
             !afd_gate_block_has_top(c, body, K_RAISE, K_RAISE, K_RAISE))
        swallow = 1;
    if (!swallow)
        return;
    afd_gate_norm(c, n, &c->tmp2);
    afd_gate_add_fact_str(c, C_SWALLOW, (const char *)c->tmp2.data);
}

/* A try inside a loop (of the same function) around an await or an assert, with a handler that
 * neither raises nor leaves the loop: the loop goes round and tries again. */
static void visit_try(ctx *c, TSNode n)
{
    TSNode loop;
    memset(&loop, 0, sizeof loop);
    for (size_t i = 1; i <= MAX_ANCESTOR_HOPS; i++) {
        TSNode a = afd_gate_ancestor(c, i);
        if (ts_node_is_null(a) || afd_gate_is_scope_kind(afd_gate_kind_of(c, a)))
            break;
        if (afd_gate_kind_of(c, a) == K_WHILE || afd_gate_kind_of(c, a) == K_FOR) {
            loop = a;
            break;
        }
    }
    if (ts_node_is_null(loop))
        return;
    TSNode body = afd_pyast_field(n, AFD_PYF_BODY);
    if (ts_node_is_null(body) || !afd_gate_subtree_has(c, body, K_AWAIT, K_ASSERT))
        return;
    uint32_t nc = ts_node_named_child_count(n);
    for (uint32_t i = 0; i < nc; i++) {
        TSNode h = ts_node_named_child(n, i);
        if (afd_gate_kind_of(c, h) != K_EXCEPT)
            continue;
        TSNode hb = afd_gate_block_child(c, h);
        if (ts_node_is_null(hb) || afd_gate_block_has_top(c, hb, K_RAISE, K_BREAK, K_RETURN))
            continue;
        afd_gate_norm(c, h, &c->tmp2);
        char text[MAX_NORM + 32];
        snprintf(text, sizeof text, "loop: %s", (const char *)c->tmp2.data);
        afd_gate_add_fact_str(c, C_RETRY_LOOP, text);
    }
}

static void put_token(ctx *c, TSNode n)
{
    size_t l = 0;
    const char *t = afd_pyast_text(c->src, c->len, n, &l);
    while (l && afd_gate_is_space(*t)) {
        t++;
        l--;
    }
    while (l && afd_gate_is_space(t[l - 1]))
        l--;
    if (l == 0)
        return;
    afd_buf_put(&c->out->toks, t, l);
    afd_buf_put_u8(&c->out->toks, 0x1f);
}

/* Visits n on the way down; returns whether to descend. */
static int visit(ctx *c, TSNode n)
{
    uint8_t k = afd_gate_kind_of(c, n);
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
        if (afd_gate_dotted(c, n, &c->tmp) && afd_gate_in_list((const char *)c->tmp.data, SKIP_MARKS))
            afd_gate_add_fact_str(c, C_SKIP, (const char *)c->tmp.data);
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
    case K_WHILE:
    case K_FOR:
        afd_gate_visit_wake_loop(c, n);
        break;
    case K_EXCEPT:
        visit_except(c, n);
        afd_gate_visit_cancel_except(c, n);
        break;
    case K_ASSERT:
        afd_gate_norm(c, n, &c->tmp2);
        afd_gate_add_fact_str(c, C_ASSERT, (const char *)c->tmp2.data);
        break;
    case K_FUNCDEF: {
        TSNode name = afd_pyast_field(n, AFD_PYF_NAME);
        size_t l = 0;
        const char *t = ts_node_is_null(name) ? "" : afd_pyast_text(c->src, c->len, name, &l);
        if (!ts_node_is_null(name) && l >= 4 && memcmp(t, "test", 4) == 0)
            afd_gate_add_fact(c, C_TESTNAME, t, l, 0, 0, 0);
        break;
    }
    case K_AWAIT:
        if (ts_node_named_child_count(n)) {
            TSNode e = ts_node_named_child(n, 0);
            uint8_t ek = afd_gate_kind_of(c, e);
            if (ek == K_IDENT || ek == K_ATTR) {
                afd_gate_norm(c, e, &c->tmp2);
                afd_gate_add_fact(c, C_AWAIT, (const char *)c->tmp2.data, c->tmp2.len,
                                  afd_gate_enclosing_fn(c), ts_node_start_byte(n), 0);
            } else if (ek == K_CALL && awaits_handles(c, e)) {
                afd_gate_norm(c, n, &c->tmp2);
                afd_gate_add_fact_str(c, C_TASKAWAIT, (const char *)c->tmp2.data);
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
    if (afd_gate_kind_of(c, n) == K_BLOCK)
        afd_buf_put(&c->out->toks, "}\x1f", 2);
}

/* The first pass only records imports (every later name is resolved through them); the second
 * visits everything. Both keep the ancestor stack: the enter function pushes, leave pops. */
static int enter_imports(void *vc, TSNode n)
{
    ctx *c = vc;
    if (afd_array_grow((void **)&c->anc, &c->cap_anc, c->n_anc + 1, sizeof *c->anc, 16) < 0)
        return AFD_ENOMEM;
    c->anc[c->n_anc++] = n;
    uint8_t k = afd_gate_kind_of(c, n);
    if (k == K_IMPORT || k == K_IMPORT_FROM)
        afd_gate_visit_import(c, n, k == K_IMPORT_FROM);
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
    if (afd_array_grow((void **)&c->anc, &c->cap_anc, c->n_anc + 1, sizeof *c->anc, 16) < 0)
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

int afd_gate_walk(ctx *c, TSNode root, int imports_only)
{
    c->n_anc = 0;
    int rc = imports_only ? afd_pyast_walk(&c->cur, root, enter_imports, leave_imports, c)
                          : afd_pyast_walk(&c->cur, root, enter_all, leave_all, c);
    return rc < 0 ? rc : c->rc;
}
