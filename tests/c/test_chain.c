/* test_chain.c -- await chains (AFD_EV_CHAIN): their strings parsed back, the view attaching them to
 * steps and accesses, and the frame a cause names with them (afd_cause_chain_await through
 * afd_cause_decide) on hand-built runs. */
#include "afd.h"
#include "cause.h"
#include "explain.h"
#include "harness.h"
#include "trace.h"
#include "tracebuild.h"

/* ---- parsing ---- */

TEST(chain_strings_parse_outermost_first)
{
    afd_trace t;
    CHECK_EQ_INT(afd_trace_init(&t), 0);
    uint32_t c = tb_str(&t, "app/conn.py:41 send\nlib dir/util.py:8 io");
    afd_xframe f[AFD_CHAIN_MAX_FRAMES];
    CHECK_EQ_INT(afd_view_chain(&t, c, f, AFD_CHAIN_MAX_FRAMES), 2);
    CHECK_EQ_STR(f[0].file, "app/conn.py");
    CHECK_EQ_INT(f[0].line, 41);
    CHECK_EQ_STR(f[0].function, "send");
    CHECK_EQ_STR(f[1].file, "lib dir/util.py"); /* a space in the path: the function is after the last */
    CHECK_EQ_INT(f[1].line, 8);
    CHECK_EQ_STR(f[1].function, "io");
    /* bounded by the caller's room */
    CHECK_EQ_INT(afd_view_chain(&t, c, f, 1), 1);
    /* none, out of range, and malformed lines (which end the chain where they stand) */
    CHECK_EQ_INT(afd_view_chain(&t, AFD_NOSTR, f, AFD_CHAIN_MAX_FRAMES), 0);
    CHECK_EQ_INT(afd_view_chain(&t, 999, f, AFD_CHAIN_MAX_FRAMES), 0);
    const char *bad[] = {"", "a.py:1", "a.py: f", ":3 f", "a.py:x f", "a.py:99999999999 f", "nocolon f"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_EQ_INT(afd_view_chain(&t, tb_str(&t, bad[i]), f, AFD_CHAIN_MAX_FRAMES), 0);
    CHECK_EQ_INT(afd_view_chain(&t, tb_str(&t, "a.py:1 f\nbroken\nc.py:3 h"), f, AFD_CHAIN_MAX_FRAMES), 1);
    afd_trace_finish(&t);
}

/* ---- the view ---- */

TEST(view_attaches_chains_to_steps_and_accesses)
{
    afd_trace t;
    CHECK_EQ_INT(afd_trace_init(&t), 0);
    uint32_t res = tb_str(&t, "X"), ev = tb_str(&t, "Event@a.py:1");
    uint32_t sc = tb_str(&t, "a.py:5 main\na.py:9 io"), oc = tb_str(&t, "a.py:4 main\na.py:12 check");
    uint32_t yc = tb_str(&t, "a.py:6 main\na.py:15 ping");
    tb_task(&t, 1, 0, tb_str(&t, "main#0"));
    tb_task(&t, 2, 0, tb_str(&t, "other#0"));
    tb_wake(&t, 1, 0, 1);
    tb_ev(&t, AFD_EV_OP_BEGIN, 0, 1, AFD_NOSTR, res);
    tb_ev(&t, AFD_EV_CHAIN, 0, 1, oc, 2);
    tb_ev(&t, AFD_EV_OP_END, 0, 1, AFD_NOSTR, res);
    tb_sync(&t, 1, AFD_SYNC_EVENT_SET, 1, ev);
    tb_ev(&t, AFD_EV_CHAIN, 0, 1, yc, 2);
    tb_step(&t, 1, 0, tb_str(&t, "a.py:9"));
    tb_ev(&t, AFD_EV_CHAIN, 0, 1, sc, 2);
    tb_wake(&t, 2, 0, 2);
    tb_ev(&t, AFD_EV_OP_BEGIN, 1, 2, AFD_NOSTR, res);
    tb_ev(&t, AFD_EV_CHAIN, 0, 1, sc, 2); /* another task's chain: not this access's */
    tb_ev(&t, AFD_EV_OP_END, 1, 2, AFD_NOSTR, res);
    tb_step(&t, 2, 0, AFD_NOSTR);
    afd_view v;
    tb_view(&v, &t);
    CHECK_EQ_INT(v.n_steps, 2);
    CHECK_EQ_INT(v.steps[0].chain, sc);
    CHECK_EQ_INT(v.steps[1].chain, AFD_NOSTR);
    CHECK_EQ_INT(v.n_acc, 3);
    CHECK_EQ_INT(v.acc[0].chain, oc); /* the operation's OP_BEGIN chain, at its OP_END */
    CHECK_EQ_INT(v.acc[1].chain, yc); /* the SYNC's */
    CHECK_EQ_INT(v.acc[2].chain, AFD_NOSTR);
    afd_view_finish(&v);
    afd_trace_finish(&t);
}

TEST(trace_codec_keeps_chains_and_formats_them)
{
    afd_trace t, back;
    CHECK_EQ_INT(afd_trace_init(&t), 0);
    tb_task(&t, 1, 0, tb_str(&t, "main#0"));
    tb_ev(&t, AFD_EV_CHAIN, 0, 1, tb_str(&t, "a.py:5 main\na.py:9 io"), 2);
    afd_buf b;
    afd_buf_init(&b);
    CHECK_EQ_INT(afd_trace_encode(&t, &b), 0);
    CHECK_EQ_INT(afd_trace_decode(&back, b.data, b.len), 0);
    CHECK_EQ_INT(back.n_events, 2);
    CHECK_EQ_INT(back.events[1].kind, AFD_EV_CHAIN);
    afd_buf line;
    afd_buf_init(&line);
    afd_trace_format_event(&back, &back.events[1], &line);
    afd_buf_put_u8(&line, 0);
    CHECK_EQ_STR((const char *)line.data, "await chain of task main#0 (2 frames): a.py:5 main -> a.py:9 io");
    /* a chain naming no string is refused */
    t.events[1].a = 77;
    b.len = 0;
    CHECK(afd_trace_encode(&t, &b) < 0);
    afd_buf_finish(&line);
    afd_buf_finish(&b);
    afd_trace_finish(&back);
    afd_trace_finish(&t);
}

/* ---- the await a cause names ---- */

typedef struct decided {
    afd_trace t;
    afd_view v;
    afd_cause c;
    afd_evidence ev;
} decided;

static void decide(decided *d)
{
    tb_view(&d->v, &d->t);
    afd_cause_input in = {.fail = &d->v, .k_fail = 10, .n_fail = 10, .k_pass = 10, .n_pass = 10};
    in.hist.slow_step_ms = 1e9;
    afd_cause_init(&d->c);
    afd_evidence_init(&d->ev);
    CHECK_EQ_INT(afd_cause_decide(&in, &d->c, &d->ev), 0);
}

static void decided_finish(decided *d)
{
    afd_cause_finish(&d->c);
    CHECK(d->c.await_chain == NULL && d->c.n_await_chain == 0);
    afd_evidence_finish(&d->ev);
    afd_view_finish(&d->v);
    afd_trace_finish(&d->t);
}

/* deposit#0 and deposit#1 each read BALANCE in one step and write it in their next; deposit#0
 * writes between deposit#1's read and write. Each task's first step suspends with `chain1` (of
 * n1 frames, or none) at `site`; the reads and the writes carry rchain and wchain (or none). */
static void lost_update(afd_trace *t, const char *site, const char *chain1, const char *rchain,
                        const char *wchain)
{
    CHECK_EQ_INT(afd_trace_init(t), 0);
    uint32_t bal = tb_str(t, "BALANCE"), s = tb_str(t, site);
    uint32_t sc = chain1 ? tb_str(t, chain1) : AFD_NOSTR;
    uint32_t rc = rchain ? tb_str(t, rchain) : AFD_NOSTR, wc = wchain ? tb_str(t, wchain) : AFD_NOSTR;
    tb_task(t, 1, 0, tb_str(t, "deposit#0"));
    tb_task(t, 2, 0, tb_str(t, "deposit#1"));
    for (uint32_t task = 1; task <= 2; task++) {
        tb_wake(t, task, 0, task);
        tb_ev(t, AFD_EV_OP_BEGIN, 0, task, AFD_NOSTR, bal);
        if (rc != AFD_NOSTR)
            tb_ev(t, AFD_EV_CHAIN, 0, task, rc, 2);
        tb_ev(t, AFD_EV_OP_END, 0, task, AFD_NOSTR, bal);
        tb_step(t, task, 0, s);
        if (sc != AFD_NOSTR)
            tb_ev(t, AFD_EV_CHAIN, 0, task, sc, 3);
    }
    for (uint32_t task = 1; task <= 2; task++) {
        tb_wake(t, task, task, 2 + task);
        tb_ev(t, AFD_EV_OP_BEGIN, 1, task, AFD_NOSTR, bal);
        if (wc != AFD_NOSTR)
            tb_ev(t, AFD_EV_CHAIN, 0, task, wc, 2);
        tb_ev(t, AFD_EV_OP_END, 1, task, AFD_NOSTR, bal);
        tb_step(t, task, 1, AFD_NOSTR);
    }
}

static void check_frame(const afd_cause_frame *f, const char *file, uint32_t line, const char *function)
{
    CHECK_EQ_STR(f->file, file);
    CHECK_EQ_INT(f->line, line);
    CHECK_EQ_STR(f->function, function);
}

/* The read and the write in deposit (one user frame each); its `await save()` runs down to io():
 * the await named is deposit's, with save() and io() beneath. */
TEST(lost_update_names_the_await_of_the_function_holding_read_and_write)
{
    decided d;
    lost_update(&d.t, "util.py:8", "bank.py:20 deposit\nbank.py:30 save\nutil.py:8 io", NULL, NULL);
    decide(&d);
    CHECK_EQ_INT(d.c.kind, AFD_CAUSE_LOST_UPDATE);
    CHECK_EQ_STR(d.c.await_site, "bank.py:20");
    CHECK_EQ_INT(d.c.n_await_chain, 2);
    check_frame(&d.c.await_chain[0], "bank.py", 30, "save");
    check_frame(&d.c.await_chain[1], "util.py", 8, "io");
    CHECK_EQ_STR(d.c.summary,
                 "lost update on BALANCE: deposit#1 reads it, yields at bank.py:20, via save() at "
                 "bank.py:30, io() at util.py:8, deposit#0 writes it, then deposit#1 writes back "
                 "the stale value");
    decided_finish(&d);
}

/* Without a chain (one user frame) the innermost await stays named, as before chains. */
TEST(lost_update_without_a_chain_is_unchanged)
{
    decided d;
    lost_update(&d.t, "bank.py:11", NULL, NULL, NULL);
    decide(&d);
    CHECK_EQ_STR(d.c.await_site, "bank.py:11");
    CHECK_EQ_INT(d.c.n_await_chain, 0);
    CHECK_EQ_STR(d.c.summary, "lost update on BALANCE: deposit#1 reads it, yields at bank.py:11, deposit#0 "
                              "writes it, then deposit#1 writes back the stale value");
    decided_finish(&d);
}

/* The read, the await and the write all in update(), which deposit calls: update's await is the
 * innermost user frame already, so nothing changes. */
TEST(lost_update_in_the_innermost_frame_is_unchanged)
{
    decided d;
    lost_update(&d.t, "bank.py:31", "bank.py:20 deposit\nbank.py:31 update",
                "bank.py:20 deposit\nbank.py:30 update", "bank.py:20 deposit\nbank.py:32 update");
    decide(&d);
    CHECK_EQ_STR(d.c.await_site, "bank.py:31");
    CHECK_EQ_INT(d.c.n_await_chain, 0);
    decided_finish(&d);
}

/* The read and the write in update() (called from deposit at line 20), whose await goes down
 * through io(): the frame named is update's, the middle of the chain, with io() beneath. */
TEST(lost_update_names_the_lowest_common_frame)
{
    decided d;
    lost_update(&d.t, "util.py:8", "bank.py:20 deposit\nbank.py:31 update\nutil.py:8 io",
                "bank.py:20 deposit\nbank.py:30 update", "bank.py:20 deposit\nbank.py:32 update");
    decide(&d);
    CHECK_EQ_STR(d.c.await_site, "bank.py:31");
    CHECK_EQ_INT(d.c.n_await_chain, 1);
    check_frame(&d.c.await_chain[0], "util.py", 8, "io");
    decided_finish(&d);
}

/* The check in a helper (has_room, called from reserve at line 5), the write in reserve after its
 * `await backend()`: paired through reserve, whose await is named; the read's helper is named too. */
TEST(check_in_a_helper_is_paired_through_the_caller)
{
    decided d;
    lost_update(&d.t, "slots.py:9", "slots.py:6 reserve\nslots.py:9 backend",
                "slots.py:5 reserve\nslots.py:2 has_room", NULL);
    decide(&d);
    CHECK_EQ_STR(d.c.await_site, "slots.py:6");
    CHECK_EQ_INT(d.c.n_await_chain, 1);
    check_frame(&d.c.await_chain[0], "slots.py", 9, "backend");
    CHECK_EQ_STR(d.c.summary,
                 "lost update on BALANCE: deposit#1 reads it (in has_room() at slots.py:2), yields "
                 "at slots.py:6, via backend() at slots.py:9, deposit#0 writes it, then deposit#1 "
                 "writes back the stale value");
    decided_finish(&d);
}

/* The read and the write in two calls of one helper (different lines of deposit): no common frame
 * below deposit, so deposit's await is named. */
TEST(two_activations_of_one_helper_meet_in_their_caller)
{
    decided d;
    lost_update(&d.t, "util.py:8", "bank.py:21 deposit\nbank.py:31 touch\nutil.py:8 io",
                "bank.py:20 deposit\nbank.py:30 touch", "bank.py:22 deposit\nbank.py:30 touch");
    decide(&d);
    CHECK_EQ_STR(d.c.await_site, "bank.py:21");
    CHECK_EQ_INT(d.c.n_await_chain, 2);
    decided_finish(&d);
}

/* Chains that do not start in one function (the access's outermost frame is in another file than
 * the suspension's) do not meet: the innermost await stays named. */
TEST(chains_that_do_not_meet_change_nothing)
{
    decided d;
    lost_update(&d.t, "util.py:8", "bank.py:20 deposit\nutil.py:8 io", "other.py:3 job\nother.py:4 read",
                NULL);
    decide(&d);
    CHECK_EQ_STR(d.c.await_site, "util.py:8");
    CHECK_EQ_INT(d.c.n_await_chain, 0);
    decided_finish(&d);
}

/* reader#0 awaits load() (which awaits io()), then reads X; writer#0 writes X. Failing: the read
 * comes first; passing: the write does. */
static void order_run(afd_trace *t, int failing)
{
    CHECK_EQ_INT(afd_trace_init(t), 0);
    uint32_t x = tb_str(t, "X");
    tb_task(t, 1, 0, tb_str(t, "reader#0"));
    tb_task(t, 2, 0, tb_str(t, "writer#0"));
    tb_wake(t, 1, 0, 1);
    tb_step(t, 1, 0, tb_str(t, "util.py:8"));
    tb_ev(t, AFD_EV_CHAIN, 0, 1, tb_str(t, "r.py:5 reader\nr.py:9 load\nutil.py:8 io"), 3);
    if (!failing) {
        tb_wake(t, 2, 0, 2);
        tb_op(t, 2, AFD_NOSTR, x, 1);
        tb_step(t, 2, 0, AFD_NOSTR);
    }
    tb_wake(t, 1, 1, 3);
    tb_op(t, 1, AFD_NOSTR, x, 0);
    tb_step(t, 1, 1, AFD_NOSTR);
    if (failing) {
        tb_wake(t, 2, 0, 4);
        tb_op(t, 2, AFD_NOSTR, x, 1);
        tb_step(t, 2, 0, AFD_NOSTR);
    }
}

/* An order violation names the await in the reader's own frame (`await load()`), load() and io()
 * beneath it. */
TEST(order_violation_names_the_readers_own_await)
{
    decided d;
    afd_trace tp;
    afd_view vp;
    order_run(&d.t, 1);
    order_run(&tp, 0);
    tb_view(&d.v, &d.t);
    tb_view(&vp, &tp);
    afd_cause_input in = {.fail = &d.v, .pass = &vp, .k_fail = 10, .n_fail = 10, .k_pass = 10, .n_pass = 10};
    in.hist.slow_step_ms = 1e9;
    afd_cause_init(&d.c);
    afd_evidence_init(&d.ev);
    CHECK_EQ_INT(afd_cause_decide(&in, &d.c, &d.ev), 0);
    CHECK_EQ_INT(d.c.kind, AFD_CAUSE_ORDER_VIOLATION);
    CHECK_EQ_STR(d.c.await_site, "r.py:5");
    CHECK_EQ_INT(d.c.n_await_chain, 2);
    check_frame(&d.c.await_chain[0], "r.py", 9, "load");
    check_frame(&d.c.await_chain[1], "util.py", 8, "io");
    CHECK_EQ_STR(d.c.summary,
                 "order violation on X: reader#0 reads X before writer#0 writes X; reader#0 resumed "
                 "too early from the await at r.py:5, via load() at r.py:9, io() at util.py:8");
    afd_view_finish(&vp);
    afd_trace_finish(&tp);
    decided_finish(&d);
}

/* A source file for the common function's kind: deposit (lines 3-6) is `async def` when
 * is_async, else a plain def; its path into path (a template). */
static void write_bank(char *path, int is_async)
{
    int fd = mkstemps(path, 3);
    CHECK(fd >= 0);
    const char *src = is_async ? "import asyncio\n\n"
                                 "async def deposit(self):\n"
                                 "    if self.check():\n"
                                 "        await self.io()\n"
                                 "        self.store()\n"
                               : "import asyncio\n\n"
                                 "def deposit(self):\n"
                                 "    if self.check():\n"
                                 "        self.io()\n"
                                 "        self.store()\n";
    CHECK_EQ_INT(write(fd, src, strlen(src)), (long)strlen(src));
    close(fd);
}

/* The common function's statements for deposit#1's read (in check(), called at line 4) and its
 * write (in store(), called at line 6), from afd_cause_chain_await on the view. */
static void common_of(const char *file, const char *rtail, const char *wtail, afd_cause_await *aw)
{
    char sc[700], rc[700], wc[700];
    snprintf(sc, sizeof sc, "%s:5 deposit\nutil.py:8 io", file);
    snprintf(rc, sizeof rc, "%s:4 deposit\n%s", file, rtail);
    snprintf(wc, sizeof wc, "%s:6 deposit\n%s", file, wtail);
    afd_trace t;
    lost_update(&t, "util.py:8", sc, rc, wc);
    afd_view v;
    tb_view(&v, &t);
    CHECK_EQ_INT(v.n_acc, 4);
    afd_cause c;
    afd_cause_init(&c);
    /* deposit#1's read (access 1) and write (access 3) */
    CHECK(afd_cause_chain_await(&c, &v, &v.acc[1], &v.acc[3], &v.steps[v.acc[1].step], aw) >= 0);
    afd_cause_finish(&c);
    afd_view_finish(&v);
    afd_trace_finish(&t);
}

TEST(common_statements_of_the_lowest_common_function)
{
    char path[] = "/tmp/afd_chain_XXXXXX.py";
    write_bank(path, 1);
    afd_cause_await aw;
    common_of(path, "bank.py:30 check", "bank.py:40 store", &aw);
    CHECK_EQ_STR(aw.common_file, path);
    CHECK_EQ_INT(aw.common_first_line, 4);
    CHECK_EQ_INT(aw.common_second_line, 6);
    CHECK_EQ_INT(aw.common_async, 1);
    /* the write made in deposit itself (its innermost frame): the line is the write's own */
    common_of(path, "bank.py:30 check", "", &aw);
    CHECK_EQ_INT(aw.common_first_line, 4);
    CHECK_EQ_INT(aw.common_second_line, 6);
    unlink(path);
    /* a plain def holds them: not async, so no `async with` can go there */
    char plain[] = "/tmp/afd_chain_XXXXXX.py";
    write_bank(plain, 0);
    common_of(plain, "bank.py:30 check", "bank.py:40 store", &aw);
    CHECK_EQ_INT(aw.common_first_line, 4);
    CHECK_EQ_INT(aw.common_async, 0);
    unlink(plain);
}

TEST(no_common_statements_when_the_chains_do_not_meet)
{
    afd_trace t;
    lost_update(&t, "util.py:8", "bank.py:20 deposit\nutil.py:8 io", "other.py:3 job\nother.py:4 read",
                "bank.py:22 deposit\nbank.py:40 store");
    afd_view v;
    tb_view(&v, &t);
    afd_cause c;
    afd_cause_init(&c);
    afd_cause_await aw;
    CHECK(afd_cause_chain_await(&c, &v, &v.acc[1], &v.acc[3], &v.steps[v.acc[1].step], &aw) >= 0);
    CHECK_EQ_STR(aw.common_file, "");
    CHECK_EQ_INT(aw.common_first_line, 0);
    CHECK_EQ_INT(aw.common_second_line, 0);
    /* an access with neither a chain nor a line (an explicit operation): nothing known */
    afd_cause_finish(&c);
    afd_view_finish(&v);
    afd_trace_finish(&t);
    lost_update(&t, "util.py:8", "bank.py:20 deposit\nutil.py:8 io", "bank.py:21 deposit\nbank.py:30 check",
                NULL);
    tb_view(&v, &t);
    afd_cause_init(&c);
    CHECK(afd_cause_chain_await(&c, &v, &v.acc[1], &v.acc[3], &v.steps[v.acc[1].step], &aw) >= 0);
    CHECK_EQ_INT(aw.common_first_line, 0);
    afd_cause_finish(&c);
    afd_view_finish(&v);
    afd_trace_finish(&t);
}

int main(void)
{
    RUN_TESTS("chain", T(chain_strings_parse_outermost_first), T(view_attaches_chains_to_steps_and_accesses),
              T(trace_codec_keeps_chains_and_formats_them),
              T(lost_update_names_the_await_of_the_function_holding_read_and_write),
              T(lost_update_without_a_chain_is_unchanged), T(lost_update_in_the_innermost_frame_is_unchanged),
              T(lost_update_names_the_lowest_common_frame), T(check_in_a_helper_is_paired_through_the_caller),
              T(two_activations_of_one_helper_meet_in_their_caller),
              T(chains_that_do_not_meet_change_nothing), T(order_violation_names_the_readers_own_await),
              T(common_statements_of_the_lowest_common_function),
              T(no_common_statements_when_the_chains_do_not_meet));
}
