/* test_explain_flow.c -- the kinds of atoms where values flow through calls: a read returned to
 * a caller that tests it (afd_view_caller_tests, a check-then-act), a pop's take and its put-back
 * (a lost update), and which atom comes first (the tightest). Views are built from hand-made
 * traces over real source files, as the engine builds them (afd_view_build_src). */
#include "harness.h"
#include "tracebuild.h"

#include "afd.h"
#include "explain.h"
#include "pyscan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Writes src to a fresh temporary .py file; its path into path. */
static void write_source(char *path, size_t cap, const char *src)
{
    snprintf(path, cap, "/tmp/afd_flow_XXXXXX.py");
    int fd = mkstemps(path, 3);
    CHECK(fd >= 0);
    size_t n = strlen(src);
    CHECK(write(fd, src, n) == (ssize_t)n);
    close(fd);
}

/* One step of task id: LINE events at lines[0..n) of file (the receiver labelled recv), each
 * with the chain "file:call function\nfile:line inner" when call is not 0, then its STEP. */
static void flow_step(afd_trace *t, uint32_t id, uint32_t index1, uint32_t ordinal, const char *path,
                      const uint32_t *lines, size_t n, uint32_t call, const char *outer, const char *inner,
                      const char *site)
{
    uint32_t file = tb_str(t, path), recv = tb_str(t, "Cache#0");
    tb_wake(t, id, 0, index1);
    for (size_t i = 0; i < n; i++) {
        tb_evx(t, AFD_EV_LINE, 0, id, file, lines[i], 7, recv, 0);
        if (call) {
            char chain[1024];
            snprintf(chain, sizeof chain, "%s:%u %s\n%s:%u %s", path, call, outer, path, lines[i], inner);
            tb_ev(t, AFD_EV_CHAIN, 0, id, tb_str(t, chain), 2);
        }
    }
    char at[600];
    snprintf(at, sizeof at, "%s:%s", path, site ? site : "");
    tb_step(t, id, ordinal, site ? tb_str(t, at) : AFD_NOSTR);
}

/* a#0 and b#0 both read the cache (line 3, called from line 7), both yield at line 10, then
 * both store (line 5, called from line 11): b#0's read is stale when it stores. */
static void cache_run(afd_trace *t, const char *path)
{
    CHECK_EQ_INT(afd_trace_init(t), 0);
    t->flags |= AFD_TRACE_LINES;
    tb_task(t, 1, 0, tb_str(t, "a#0"));
    tb_task(t, 2, 0, tb_str(t, "b#0"));
    uint32_t get = 3, put = 5;
    flow_step(t, 1, 1, 0, path, &get, 1, 7, "fetch", "get", "10");
    flow_step(t, 2, 2, 0, path, &get, 1, 7, "fetch", "get", "10");
    flow_step(t, 1, 3, 1, path, &put, 1, 11, "fetch", "put", NULL);
    flow_step(t, 2, 4, 1, path, &put, 1, 11, "fetch", "put", NULL);
}

/* The cache stampede through calls: `get` returns the stored value, `fetch` tests it and stores a
 * computed one through `put`. With the test in the caller (`if value is not None:`) the read is a
 * check, and the atom a check-then-act; when the caller only computes with the value, it stays a
 * lost update. */
TEST(read_returned_to_a_caller_that_tests_it_is_a_check)
{
    const char *head = "class Cache:\n"
                       "    async def get(self, k):\n"
                       "        return self.store.get(k)\n" /* 3 */
                       "    async def put(self, k, v):\n"
                       "        self.store[k] = v\n" /* 5 */
                       "async def fetch(cache, k):\n"
                       "    value = await cache.get(k)\n"; /* 7 */
    const char *tested = "    if value is not None:\n"
                         "        return value\n";
    const char *used = "    log(value)\n"
                       "    log(k)\n";
    const char *tail = "    v = await compute()\n" /* 10 */
                       "    await cache.put(k, v)\n";
    for (int test = 0; test < 2; test++) {
        char src[1024], path[64];
        snprintf(src, sizeof src, "%s%s%s", head, test ? tested : used, tail);
        write_source(path, sizeof path, src);
        afd_trace t;
        cache_run(&t, path);
        afd_srcmap *m = afd_view_srcmap_new();
        CHECK(m);
        afd_view v;
        CHECK_EQ_INT(afd_view_build_src(&v, &t, m), 0);
        CHECK_EQ_INT(v.n_acc, 4); /* a reads, b reads, a writes, b writes */
        CHECK_EQ_INT(!!(v.acc[1].role & AFD_XROLE_CALLER_TESTS), test);
        CHECK_EQ_INT(v.acc[2].role & AFD_XROLE_CALLER_TESTS, 0); /* a write: no flow */
        afd_xatom lost[4], stale[4];
        size_t n_lost = 0, n_stale = 0;
        CHECK_EQ_INT(afd_view_lost_updates(&v, lost, 4, &n_lost), 0);
        CHECK_EQ_INT(afd_view_stale_checks(&v, stale, 4, &n_stale), 0);
        CHECK_EQ_INT(n_lost, test ? 0 : 1);
        CHECK_EQ_INT(n_stale, test ? 1 : 0);
        const afd_xatom *a = test ? &stale[0] : &lost[0];
        CHECK_EQ_INT(a->r, 1);
        CHECK_EQ_INT(a->u, 2);
        CHECK_EQ_INT(a->w, 3);
        CHECK_EQ_STR(v.acc[a->r].resource, "Cache#0.store");
        afd_view_finish(&v);
        afd_view_srcmap_free(m);
        afd_trace_finish(&t);
        unlink(path);
    }
}

/* afd_view_caller_tests itself: only a read on a return line flows out; a caller line that only
 * returns it again passes it on, one that does something else stops it; no chain, no caller. */
TEST(caller_tests_follows_returns_outward)
{
    const char *src = "def inner(self):\n"
                      "    return self.x\n" /* 2 */
                      "def middle(self):\n"
                      "    return inner(self)\n" /* 4 */
                      "def outer(self):\n"
                      "    while not middle(self):\n" /* 6 */
                      "        pass\n"
                      "    y = middle(self)\n"  /* 8 */
                      "    self.x.append(y)\n"; /* 9 */
    char path[64];
    write_source(path, sizeof path, src);
    afd_srcmap *m = afd_view_srcmap_new();
    const afd_pyscan *ps = afd_view_srcmap_get(m, path);
    CHECK(ps);
    afd_trace t;
    CHECK_EQ_INT(afd_trace_init(&t), 0);
    char chain[1024];
    snprintf(chain, sizeof chain, "%s:6 outer\n%s:4 middle\n%s:2 inner", path, path, path);
    uint32_t tested = tb_str(&t, chain);
    snprintf(chain, sizeof chain, "%s:8 outer\n%s:4 middle\n%s:2 inner", path, path, path);
    uint32_t stored = tb_str(&t, chain);
    snprintf(chain, sizeof chain, "%s:6 outer\n%s:2 inner", path, path);
    uint32_t direct = tb_str(&t, chain);
    CHECK_EQ_INT(afd_view_caller_tests(m, &t, ps, 2, tested), 1);
    CHECK_EQ_INT(afd_view_caller_tests(m, &t, ps, 2, direct), 1);
    CHECK_EQ_INT(afd_view_caller_tests(m, &t, ps, 2, stored), 0); /* y is never tested */
    CHECK_EQ_INT(afd_view_caller_tests(m, &t, ps, 9, tested), 0); /* not a return line */
    CHECK_EQ_INT(afd_view_caller_tests(m, &t, ps, 4, tested), 0); /* not the chain's own line */
    CHECK_EQ_INT(afd_view_caller_tests(m, &t, ps, 2, AFD_NOSTR), 0);
    CHECK_EQ_INT(afd_view_caller_tests(NULL, &t, ps, 2, tested), 0);
    afd_trace_finish(&t);
    afd_view_srcmap_free(m);
    unlink(path);
}

/* The reconnect: each task takes the connection out (`pop`, in a helper whose result the caller
 * tests), yields at the connect, and puts its own back. The take's own write is part of the read;
 * the put in the later step completes the read-modify-write, and the other task's take in between
 * is overwritten: a lost update, although the value taken is tested (a take is no mere check). */
TEST(take_then_put_back_is_a_lost_update)
{
    const char *src = "class M:\n"
                      "    def take(self, k):\n"
                      "        return self.conns.pop(k, None)\n" /* 3 */
                      "    async def reconnect(self, k, conn):\n"
                      "        old = self.take(k)\n" /* 5 */
                      "        if old is not None:\n"
                      "            old.close()\n"
                      "        await conn.connect()\n"  /* 8 */
                      "        self.conns[k] = conn\n"; /* 9 */
    char path[64];
    write_source(path, sizeof path, src);
    afd_trace t;
    CHECK_EQ_INT(afd_trace_init(&t), 0);
    t.flags |= AFD_TRACE_LINES;
    tb_task(&t, 1, 0, tb_str(&t, "a#0"));
    tb_task(&t, 2, 0, tb_str(&t, "b#0"));
    uint32_t take = 3, put = 9;
    flow_step(&t, 1, 1, 0, path, &take, 1, 5, "reconnect", "take", "8");
    flow_step(&t, 2, 2, 0, path, &take, 1, 5, "reconnect", "take", "8");
    flow_step(&t, 1, 3, 1, path, &put, 1, 0, NULL, NULL, NULL);
    flow_step(&t, 2, 4, 1, path, &put, 1, 0, NULL, NULL, NULL);
    afd_srcmap *m = afd_view_srcmap_new();
    afd_view v;
    CHECK_EQ_INT(afd_view_build_src(&v, &t, m), 0);
    CHECK_EQ_INT(v.n_acc, 6); /* a's take (read, write), b's take, a's put, b's put */
    CHECK_EQ_INT(v.acc[0].write, 0);
    CHECK(v.acc[0].role & AFD_PYACC_TAKE);
    CHECK(v.acc[0].role & AFD_XROLE_CALLER_TESTS);
    CHECK_EQ_INT(v.acc[1].write, 1);
    afd_xatom out[4];
    size_t n = 0;
    CHECK_EQ_INT(afd_view_lost_updates(&v, out, 4, &n), 0);
    CHECK_EQ_INT(n, 2);
    CHECK_EQ_INT(out[0].r, 0); /* a took, b's take wrote, a put back */
    CHECK_EQ_INT(out[0].u, 3);
    CHECK_EQ_INT(out[0].w, 4);
    CHECK_EQ_INT(out[1].r, 2); /* b took, a's put wrote, b put back */
    CHECK_EQ_INT(out[1].u, 4);
    CHECK_EQ_INT(out[1].w, 5);
    CHECK_EQ_INT(afd_view_stale_checks(&v, out, 4, &n), 0);
    CHECK_EQ_INT(n, 0);
    afd_view_finish(&v);
    afd_view_srcmap_free(m);
    afd_trace_finish(&t);
    unlink(path);
}

/* Two lost updates: a#0 reads X, yields twice, writes X; b#0 reads Y later and writes it in its
 * very next step. The tighter atom (b's, spanning the one suspension named) comes first, though
 * its read is later. */
TEST(tightest_atom_first)
{
    afd_trace t;
    CHECK_EQ_INT(afd_trace_init(&t), 0);
    uint32_t x = tb_str(&t, "X"), y = tb_str(&t, "Y"), site = tb_str(&t, "s.py:1");
    tb_task(&t, 1, 0, tb_str(&t, "a#0"));
    tb_task(&t, 2, 0, tb_str(&t, "b#0"));
    tb_task(&t, 3, 0, tb_str(&t, "c#0"));
    tb_wake(&t, 1, 0, 1);
    tb_op(&t, 1, AFD_NOSTR, x, 0); /* 0: a reads X */
    tb_step(&t, 1, 0, site);
    tb_wake(&t, 2, 0, 2);
    tb_op(&t, 2, AFD_NOSTR, y, 0); /* 1: b reads Y */
    tb_step(&t, 2, 0, site);
    tb_wake(&t, 3, 0, 3);
    tb_op(&t, 3, AFD_NOSTR, x, 1); /* 2, 3: c writes both */
    tb_op(&t, 3, AFD_NOSTR, y, 1);
    tb_step(&t, 3, 0, AFD_NOSTR);
    tb_wake(&t, 2, 0, 4);
    tb_op(&t, 2, AFD_NOSTR, y, 1); /* 4: b writes Y in its next step */
    tb_step(&t, 2, 1, AFD_NOSTR);
    tb_wake(&t, 1, 0, 5); /* a's next step touches neither */
    tb_step(&t, 1, 1, site);
    tb_wake(&t, 1, 0, 6);
    tb_op(&t, 1, AFD_NOSTR, x, 1); /* 5: a writes X two steps later */
    tb_step(&t, 1, 2, AFD_NOSTR);
    afd_view v;
    tb_view(&v, &t);
    afd_xatom out[4];
    size_t n = 0;
    CHECK_EQ_INT(afd_view_lost_updates(&v, out, 4, &n), 0);
    CHECK_EQ_INT(n, 2);
    CHECK_EQ_INT(out[0].r, 1);
    CHECK_EQ_INT(out[0].w, 4);
    CHECK_EQ_INT(out[1].r, 0);
    CHECK_EQ_INT(out[1].w, 5);
    CHECK_EQ_INT(afd_view_lost_updates(&v, out, 1, &n), AFD_EFULL); /* ranked over all, then cut */
    CHECK_EQ_INT(out[0].r, 1);
    afd_view_finish(&v);
    afd_trace_finish(&t);
}

int main(void)
{
    RUN_TESTS("explain_flow", T(read_returned_to_a_caller_that_tests_it_is_a_check),
              T(caller_tests_follows_returns_outward), T(take_then_put_back_is_a_lost_update),
              T(tightest_atom_first));
}
