/* test_cause.c -- afd_cause_decide on hand-built runs: every kind of AFD_CAUSE_KINDS with its
 * resource, await site, sentence, operations and evidence rows; the kinds' precedence; the
 * struct's own life cycle (the NONE kind, names, finish). */
#include "afd.h"
#include "cause.h"
#include "explain.h"
#include "harness.h"
#include "trace.h"
#include "tracebuild.h"

/* One decision over hand-built views: the failing run, the passing one (optional) and a history
 * of runs for Ochiai. */
typedef struct fixture {
    afd_trace tf, tp;
    afd_view f, p;
    int have_p;
    afd_run_summary sums[8];
    uint8_t blocked[8], natural[8];
    size_t n_sums;
    afd_cause_input in;
    afd_cause c;
    afd_evidence ev;
} fixture;

static void fixture_init(fixture *x)
{
    memset(x, 0, sizeof *x);
    CHECK_EQ_INT(afd_trace_init(&x->tf), 0);
    CHECK_EQ_INT(afd_trace_init(&x->tp), 0);
    afd_cause_init(&x->c);
    afd_evidence_init(&x->ev);
    x->in.k_fail = x->in.n_fail = 10;
    x->in.k_pass = x->in.n_pass = 10;
    x->in.window_found = 1;
    x->in.hist.slow_step_ms = 1e9; /* no step is slow unless a test says so */
}

/* Before a shared run of tracebuild.h, which initialises the trace it is given. */
static void reset_traces(fixture *x)
{
    afd_trace_finish(&x->tf);
    afd_trace_finish(&x->tp);
}

/* Records a run of the history: its view, whether it failed, blocked, ran naturally. */
static void fixture_run(fixture *x, const afd_view *v, int failed, int blocked, int natural)
{
    CHECK(x->n_sums < 8);
    CHECK_EQ_INT(afd_view_summary_build(&x->sums[x->n_sums], v, failed), 0);
    x->blocked[x->n_sums] = (uint8_t)blocked;
    x->natural[x->n_sums] = (uint8_t)natural;
    x->n_sums++;
}

/* Decides over the views built (decide builds them; a test that gives their accesses what a
 * scan of the source would calls this after it). */
static void decide_views(fixture *x)
{
    x->in.fail = &x->f;
    x->in.pass = x->have_p ? &x->p : NULL;
    x->in.hist.sums = x->sums;
    x->in.hist.blocked = x->blocked;
    x->in.hist.natural = x->natural;
    x->in.hist.n = x->n_sums;
    CHECK_EQ_INT(afd_cause_decide(&x->in, &x->c, &x->ev), 0);
}

/* Builds the views of the traces as they are now and decides. */
static void decide(fixture *x)
{
    tb_view(&x->f, &x->tf);
    if (x->have_p)
        tb_view(&x->p, &x->tp);
    decide_views(x);
}

static void fixture_finish(fixture *x)
{
    afd_cause_finish(&x->c);
    CHECK_EQ_INT(x->c.kind, AFD_CAUSE_NONE);
    CHECK(x->c.ops == NULL && x->c.n_ops == 0 && x->c.summary == NULL);
    afd_evidence_finish(&x->ev);
    CHECK(x->ev.rows == NULL && x->ev.n == 0);
    for (size_t i = 0; i < x->n_sums; i++)
        afd_view_summary_finish(&x->sums[i]);
    afd_view_finish(&x->f);
    afd_view_finish(&x->p);
    afd_trace_finish(&x->tf);
    afd_trace_finish(&x->tp);
}

/* The row at i, checked whole. */
static void check_row(const afd_evidence *ev, size_t i, const char *claim, const char *measured,
                      const char *strength)
{
    CHECK(i < ev->n);
    CHECK_EQ_STR(ev->rows[i].claim, claim);
    CHECK_EQ_STR(ev->rows[i].measured, measured);
    CHECK_EQ_STR(ev->rows[i].strength, strength);
}

/* Whether some row makes this claim. */
static int has_claim(const afd_evidence *ev, const char *claim)
{
    for (size_t i = 0; i < ev->n; i++)
        if (strcmp(ev->rows[i].claim, claim) == 0)
            return 1;
    return 0;
}

/* A run's access as the cause names it. */
static void check_access(const afd_cause_op *op, const char *run, const char *task, const char *resource,
                         int write, uint32_t step)
{
    CHECK_EQ_INT(op->access, write ? AFD_CAUSE_ACCESS_WRITE : AFD_CAUSE_ACCESS_READ);
    CHECK_EQ_INT(op->write, write);
    CHECK_EQ_STR(op->run, run);
    CHECK_EQ_STR(op->task, task);
    CHECK_EQ_STR(op->operation, write ? "write" : "read");
    CHECK_EQ_STR(op->resource, resource);
    CHECK_EQ_INT(op->step, step);
    CHECK_EQ_INT(op->observed, 1);
    CHECK(op->file == NULL && op->site == NULL);
}

/* deposit#0 and deposit#1 each read BALANCE, await, and write it back: deposit#0 writes between
 * deposit#1's read and its write. */
static void lost_update_run(afd_trace *t)
{
    uint32_t l0 = tb_str(t, "deposit#0"), l1 = tb_str(t, "deposit#1"), bal = tb_str(t, "BALANCE");
    uint32_t site0 = tb_str(t, "bank.py:10"), site1 = tb_str(t, "bank.py:11");
    tb_task(t, 1, 0, l0);
    tb_task(t, 2, 0, l1);
    tb_wake(t, 1, 0, 1);
    tb_op(t, 1, AFD_NOSTR, bal, 0);
    tb_step(t, 1, 0, site0);
    tb_wake(t, 2, 0, 2);
    tb_op(t, 2, AFD_NOSTR, bal, 0);
    tb_step(t, 2, 0, site1);
    tb_wake(t, 1, 1, 3);
    tb_op(t, 1, AFD_NOSTR, bal, 1);
    tb_step(t, 1, 1, AFD_NOSTR);
    tb_wake(t, 2, 2, 4);
    tb_op(t, 2, AFD_NOSTR, bal, 1);
    tb_step(t, 2, 1, AFD_NOSTR);
}

/* ---- the kinds ---- */

TEST(lost_update)
{
    fixture x;
    fixture_init(&x);
    lost_update_run(&x.tf);
    decide(&x);
    CHECK_EQ_INT(x.c.kind, AFD_CAUSE_LOST_UPDATE);
    CHECK_EQ_STR(x.c.resource, "BALANCE");
    CHECK_EQ_STR(x.c.await_site, "bank.py:11");
    CHECK_EQ_STR(x.c.summary,
                 "lost update on BALANCE: deposit#1 reads it, yields at bank.py:11, deposit#0 writes "
                 "it, then deposit#1 writes back the stale value");
    CHECK_EQ_INT(x.c.n_ops, 3);
    check_access(&x.c.ops[0], "failing", "deposit#1", "BALANCE", 0, 0);
    check_access(&x.c.ops[1], "failing", "deposit#0", "BALANCE", 1, 1);
    check_access(&x.c.ops[2], "failing", "deposit#1", "BALANCE", 1, 1);
    CHECK_EQ_INT(x.c.early, AFD_NOPOS); /* not an order violation: nothing for its fix */
    /* nothing orders the two tasks' steps: their conflicting accesses race */
    CHECK(x.c.n_races > 0);
    CHECK_EQ_STR(x.c.races[0].resource, "BALANCE");
    CHECK_EQ_STR(x.c.races[0].ops[0].run, "failing");
    check_row(&x.ev, 0, "a task wrote between another task's read and its write (atomicity violation)",
              "in the minimal failing run", "observed");
    CHECK_EQ_STR(x.ev.rows[1].claim, "the conflicting accesses are unordered by happens-before (a race)");
    CHECK_EQ_STR(x.ev.rows[1].strength, "observed");
    CHECK_EQ_INT(x.ev.n, 2);
    fixture_finish(&x);
}

/* withdraw: `if balance >= a: await ...; balance -= a` -- the write re-reads, so no update is
 * lost, but withdraw#1 acts on a check withdraw#0 made stale. */
TEST(check_then_act)
{
    fixture x;
    fixture_init(&x);
    afd_trace *t = &x.tf;
    uint32_t l0 = tb_str(t, "withdraw#0"), l1 = tb_str(t, "withdraw#1"), bal = tb_str(t, "balance");
    uint32_t site0 = tb_str(t, "acct.py:5"), site1 = tb_str(t, "acct.py:6");
    tb_task(t, 1, 0, l0);
    tb_task(t, 2, 0, l1);
    tb_wake(t, 1, 0, 1);
    tb_op(t, 1, AFD_NOSTR, bal, 0); /* withdraw#0 checks */
    tb_step(t, 1, 0, site0);
    tb_wake(t, 2, 0, 2);
    tb_op(t, 2, AFD_NOSTR, bal, 0); /* withdraw#1 checks */
    tb_step(t, 2, 0, site1);
    tb_wake(t, 1, 1, 3);
    tb_op(t, 1, AFD_NOSTR, bal, 0); /* withdraw#0 re-reads and writes */
    tb_op(t, 1, AFD_NOSTR, bal, 1);
    tb_step(t, 1, 1, AFD_NOSTR);
    tb_wake(t, 2, 2, 4);
    tb_op(t, 2, AFD_NOSTR, bal, 0); /* withdraw#1 re-reads and writes on its stale check */
    tb_op(t, 2, AFD_NOSTR, bal, 1);
    tb_step(t, 2, 1, AFD_NOSTR);
    decide(&x);
    CHECK_EQ_INT(x.c.kind, AFD_CAUSE_CHECK_THEN_ACT);
    CHECK_EQ_STR(x.c.resource, "balance");
    CHECK_EQ_STR(x.c.await_site, "acct.py:6");
    CHECK_EQ_STR(x.c.summary,
                 "check-then-act on balance: withdraw#1 reads it, yields at acct.py:6, withdraw#0 "
                 "writes it, then withdraw#1 acts on what it read and writes it");
    CHECK_EQ_INT(x.c.n_ops, 3);
    check_access(&x.c.ops[0], "failing", "withdraw#1", "balance", 0, 0);
    check_access(&x.c.ops[1], "failing", "withdraw#0", "balance", 1, 1);
    check_access(&x.c.ops[2], "failing", "withdraw#1", "balance", 1, 1);
    /* the atomicity row is a lost update's only */
    CHECK(!has_claim(&x.ev, "a task wrote between another task's read and its write (atomicity violation)"));
    fixture_finish(&x);
}

/* Gives access i of v what a scan of the source tells of it: inferred, at file:line, with roles. */
static void infer_access(afd_view *v, uint32_t i, const char *file, uint32_t line, uint8_t role)
{
    CHECK(i < v->n_acc);
    v->acc[i].inferred = 1;
    v->acc[i].file = file;
    v->acc[i].line = line;
    v->acc[i].role = role;
}

/* The lazy init `if not self.ready: await build(); self.ready = True`: deposit#0's accesses are
 * the lost update's shape (no re-read before the write), but both tasks store the same literal,
 * so the overwrite loses nothing: what the stale check let deposit#1 do is the harm, a
 * check-then-act. With a computed value stored by the other task, the same run stays a lost
 * update. */
TEST(same_literal_overwrite_is_check_then_act)
{
    for (int literal = 0; literal < 2; literal++) {
        fixture x;
        fixture_init(&x);
        lost_update_run(&x.tf);
        tb_view(&x.f, &x.tf);
        CHECK_EQ_INT(x.f.n_acc, 4); /* #0 reads, #1 reads, #0 writes, #1 writes */
        infer_access(&x.f, 0, "q.py", 32, AFD_PYACC_TEST);
        infer_access(&x.f, 1, "q.py", 32, AFD_PYACC_TEST);
        infer_access(&x.f, 2, "q.py", 36, literal ? AFD_PYACC_LITERAL : 0);
        infer_access(&x.f, 3, "q.py", 36, literal ? AFD_PYACC_LITERAL : 0);
        decide_views(&x);
        CHECK_EQ_INT(x.c.kind, literal ? AFD_CAUSE_CHECK_THEN_ACT : AFD_CAUSE_LOST_UPDATE);
        CHECK_EQ_STR(x.c.resource, "BALANCE");
        CHECK_EQ_STR(x.c.await_site, "bank.py:11");
        CHECK_EQ_INT(x.c.n_ops, 3);
        CHECK_EQ_STR(x.c.ops[0].task, "deposit#1");
        CHECK_EQ_INT(x.c.ops[2].line, 36);
        CHECK(strncmp(x.c.summary, literal ? "check-then-act on BALANCE" : "lost update on BALANCE", 20) ==
              0);
        fixture_finish(&x);
    }
    /* Two literal writes at different lines may store different values: still a lost update. */
    fixture x;
    fixture_init(&x);
    lost_update_run(&x.tf);
    tb_view(&x.f, &x.tf);
    infer_access(&x.f, 2, "q.py", 36, AFD_PYACC_LITERAL);
    infer_access(&x.f, 3, "q.py", 38, AFD_PYACC_LITERAL);
    decide_views(&x);
    CHECK_EQ_INT(x.c.kind, AFD_CAUSE_LOST_UPDATE);
    fixture_finish(&x);
}

/* The check-then-act run of TEST(check_then_act) (the write re-reads in its step), with the
 * source's roles: when the stale read sits in a condition it is a check-then-act; when it is a
 * value read (`count = len(self.events)`, then `self.events = self.events[:count]`), what the task
 * writes is computed from the stale value: a lost update. Annotated accesses (no role known) keep
 * the structural answer, which TEST(check_then_act) shows. */
static void stale_value_run(afd_trace *t)
{
    uint32_t l0 = tb_str(t, "withdraw#0"), l1 = tb_str(t, "withdraw#1"), bal = tb_str(t, "balance");
    uint32_t site0 = tb_str(t, "acct.py:5"), site1 = tb_str(t, "acct.py:6");
    tb_task(t, 1, 0, l0);
    tb_task(t, 2, 0, l1);
    tb_wake(t, 1, 0, 1);
    tb_op(t, 1, AFD_NOSTR, bal, 0);
    tb_step(t, 1, 0, site0);
    tb_wake(t, 2, 0, 2);
    tb_op(t, 2, AFD_NOSTR, bal, 0);
    tb_step(t, 2, 0, site1);
    tb_wake(t, 1, 1, 3);
    tb_op(t, 1, AFD_NOSTR, bal, 0);
    tb_op(t, 1, AFD_NOSTR, bal, 1);
    tb_step(t, 1, 1, AFD_NOSTR);
    tb_wake(t, 2, 2, 4);
    tb_op(t, 2, AFD_NOSTR, bal, 0);
    tb_op(t, 2, AFD_NOSTR, bal, 1);
    tb_step(t, 2, 1, AFD_NOSTR);
}

TEST(stale_value_read_is_lost_update)
{
    for (int test = 0; test < 2; test++) {
        fixture x;
        fixture_init(&x);
        stale_value_run(&x.tf);
        tb_view(&x.f, &x.tf);
        CHECK_EQ_INT(x.f.n_acc, 6);
        uint8_t role = test ? AFD_PYACC_TEST : 0;
        infer_access(&x.f, 0, "acct.py", 4, role); /* the stale reads */
        infer_access(&x.f, 1, "acct.py", 4, role);
        for (uint32_t i = 2; i < 6; i++) /* the re-reads and the writes */
            infer_access(&x.f, i, "acct.py", 8, 0);
        decide_views(&x);
        CHECK_EQ_INT(x.c.kind, test ? AFD_CAUSE_CHECK_THEN_ACT : AFD_CAUSE_LOST_UPDATE);
        CHECK_EQ_STR(x.c.resource, "balance");
        CHECK_EQ_STR(x.c.await_site, "acct.py:6");
        CHECK_EQ_INT(x.c.n_ops, 3);
        CHECK_EQ_STR(x.c.ops[0].task, "withdraw#1");
        CHECK_EQ_INT(x.c.ops[0].line, 4);
        CHECK_EQ_INT(x.c.ops[2].write, 1);
        CHECK_EQ_STR(x.c.summary,
                     test ? "check-then-act on balance: withdraw#1 reads it, yields at acct.py:6, withdraw#0 "
                            "writes it, then withdraw#1 acts on what it read and writes it"
                          : "lost update on balance: withdraw#1 reads it, yields at acct.py:6, withdraw#0 "
                            "writes it, then withdraw#1 writes back the stale value");
        fixture_finish(&x);
    }
}

/* reader#0 reads X before writer#0 writes it in the failing run, after it in the passing run. */
TEST(order_violation)
{
    fixture x;
    fixture_init(&x);
    reset_traces(&x); /* the shared runs initialise their traces */
    tb_inversion_run(&x.tf, 1, 1);
    tb_inversion_run(&x.tp, 0, 1);
    x.have_p = 1;
    /* the history: the two runs themselves, the failing one failed */
    afd_view f, p;
    tb_view(&f, &x.tf);
    tb_view(&p, &x.tp);
    fixture_run(&x, &f, 1, 0, 0);
    fixture_run(&x, &p, 0, 0, 0);
    afd_view_finish(&f);
    afd_view_finish(&p);
    decide(&x);
    CHECK_EQ_INT(x.c.kind, AFD_CAUSE_ORDER_VIOLATION);
    CHECK_EQ_STR(x.c.resource, "X");
    CHECK(x.c.await_site == NULL); /* no step of the trace suspended at a known await */
    CHECK_EQ_STR(x.c.summary,
                 "order violation on X: reader#0 reads X before writer#0 writes X; reader#0 ran it in "
                 "its first step, before any await");
    CHECK_EQ_INT(x.c.n_ops, 2);
    check_access(&x.c.ops[0], "failing", "reader#0", "X", 0, 0);
    check_access(&x.c.ops[1], "failing", "writer#0", "X", 1, 0);
    /* what the fix orders */
    CHECK_EQ_INT(x.c.early, 1);
    CHECK_EQ_STR(x.c.writer, "writer#0");
    CHECK_EQ_INT(x.c.writer_writes, 1);
    CHECK_EQ_INT(x.c.writer_placed, 0);
    check_row(&x.ev, 0, "reader#0 reads X before writer#0 writes X: forcing this order fails", "10/10 failed",
              "confirmed");
    check_row(&x.ev, 1, "the opposite order passes", "10/10 passed", "confirmed");
    check_row(&x.ev, 2, "the order is suspicious over every run seen",
              "Ochiai 1.00 (1 failing, 0 passing runs)", "observed");
    fixture_finish(&x);
}

/* The writer ran only in the passing run; without a window (other random values) the orders are
 * only observed, not confirmed. */
TEST(order_violation_writer_only_in_the_passing_run)
{
    fixture x;
    fixture_init(&x);
    reset_traces(&x);
    tb_inversion_run(&x.tf, 1, 0);
    tb_inversion_run(&x.tp, 0, 1);
    x.have_p = 1;
    x.in.window_found = 0;
    decide(&x);
    CHECK_EQ_INT(x.c.kind, AFD_CAUSE_ORDER_VIOLATION);
    CHECK_EQ_STR(x.c.summary,
                 "order violation on X: reader#0 reads X before writer#0 writes X (which then never "
                 "ran); reader#0 ran it in its first step, before any await");
    CHECK_EQ_INT(x.c.n_ops, 2);
    check_access(&x.c.ops[0], "failing", "reader#0", "X", 0, 0);
    check_access(&x.c.ops[1], "passing", "writer#0", "X", 1, 0);
    check_row(&x.ev, 0, "reader#0 reads X before writer#0 writes X: forcing this order fails", "10/10 failed",
              "weaker");
    check_row(&x.ev, 1, "the opposite order passes (in a run with other random values)", "10/10 passed",
              "weaker");
    fixture_finish(&x);
}

/* a#0 (task 7) holds lock 2 and waits for lock 1; b#0 (task 4) holds lock 1 and waits for lock 2. */
TEST(deadlock)
{
    fixture x;
    fixture_init(&x);
    afd_trace *t = &x.tf;
    t->outcome = AFD_OUT_HANG;
    t->flags = AFD_TRACE_DEADLOCK;
    uint32_t la = tb_str(t, "a#0"), lb = tb_str(t, "b#0");
    uint32_t lab1 = tb_str(t, "Lock@w.py:1"), lab2 = tb_str(t, "Lock@w.py:2"), site = tb_str(t, "w.py:9");
    tb_task(t, 7, 0, la);
    tb_task(t, 4, 0, lb);
    tb_wake(t, 7, 0, 1);
    tb_sync(t, 7, AFD_SYNC_CREATE, 1, lab1);
    tb_sync(t, 7, AFD_SYNC_LOCK_ACQUIRE, 2, lab2);
    tb_step(t, 7, 0, AFD_NOSTR);
    tb_wake(t, 4, 0, 2);
    tb_sync(t, 4, AFD_SYNC_LOCK_ACQUIRE, 1, lab1);
    tb_step(t, 4, 0, site);
    tb_ev(t, AFD_EV_WAITFOR, 0, 7, 1, 4);
    tb_ev(t, AFD_EV_WAITFOR, 0, 4, 2, 7);
    x.in.k_fail = 3;
    x.in.n_fail = 3;
    decide(&x);
    CHECK_EQ_INT(x.c.kind, AFD_CAUSE_DEADLOCK);
    /* the cycle starts at the smallest task id: b#0 */
    CHECK_EQ_STR(x.c.summary,
                 "deadlock: b#0 waits for Lock@w.py:2 held by a#0; a#0 waits for Lock@w.py:1 held by b#0");
    CHECK_EQ_STR(x.c.resource, "Lock@w.py:2, Lock@w.py:1");
    CHECK_EQ_STR(x.c.await_site, "w.py:9"); /* where b#0 last suspended */
    CHECK_EQ_INT(x.c.n_ops, 2);
    const char *tasks[2] = {"b#0", "a#0"}, *locks[2] = {"Lock@w.py:2", "Lock@w.py:1"};
    for (size_t i = 0; i < 2; i++) {
        CHECK_EQ_INT(x.c.ops[i].access, AFD_CAUSE_ACCESS_WAIT);
        CHECK_EQ_STR(x.c.ops[i].task, tasks[i]);
        CHECK_EQ_STR(x.c.ops[i].operation, "acquire");
        CHECK_EQ_STR(x.c.ops[i].resource, locks[i]);
        CHECK(x.c.ops[i].run == NULL);
    }
    /* a deadlock is decided alone: no races, one row */
    CHECK_EQ_INT(x.c.n_races, 0);
    CHECK_EQ_INT(x.ev.n, 1);
    check_row(&x.ev, 0, "every task blocked; the wait-for graph has a cycle", "3/3 hung", "confirmed");
    fixture_finish(&x);
}

/* one#0 takes lock 1, awaits at l.py:5 holding it, then takes lock 2; two#0 takes lock 2, awaits
 * at l.py:12 holding it, then takes lock 1. The run completes: a potential deadlock. */
TEST(lock_order)
{
    fixture x;
    fixture_init(&x);
    afd_trace *t = &x.tf;
    uint32_t l1 = tb_str(t, "one#0"), l2 = tb_str(t, "two#0");
    uint32_t lab1 = tb_str(t, "Lock@l.py:1"), lab2 = tb_str(t, "Lock@l.py:2");
    uint32_t s5 = tb_str(t, "l.py:5"), s12 = tb_str(t, "l.py:12");
    tb_task(t, 1, 0, l1);
    tb_task(t, 2, 0, l2);
    tb_wake(t, 1, 0, 1);
    tb_sync(t, 1, AFD_SYNC_CREATE, 1, lab1);
    tb_sync(t, 1, AFD_SYNC_CREATE, 2, lab2);
    tb_sync(t, 1, AFD_SYNC_LOCK_ACQUIRE, 1, lab1);
    tb_step(t, 1, 0, s5);
    tb_wake(t, 1, 1, 2);
    tb_sync(t, 1, AFD_SYNC_LOCK_ACQUIRE, 2, lab2);
    tb_sync(t, 1, AFD_SYNC_LOCK_RELEASE, 2, lab2);
    tb_sync(t, 1, AFD_SYNC_LOCK_RELEASE, 1, lab1);
    tb_step(t, 1, 1, AFD_NOSTR);
    tb_wake(t, 2, 0, 3);
    tb_sync(t, 2, AFD_SYNC_LOCK_ACQUIRE, 2, lab2);
    tb_step(t, 2, 0, s12);
    tb_wake(t, 2, 3, 4);
    tb_sync(t, 2, AFD_SYNC_LOCK_ACQUIRE, 1, lab1);
    tb_sync(t, 2, AFD_SYNC_LOCK_RELEASE, 1, lab1);
    tb_sync(t, 2, AFD_SYNC_LOCK_RELEASE, 2, lab2);
    tb_step(t, 2, 1, AFD_NOSTR);
    decide(&x);
    CHECK_EQ_INT(x.c.kind, AFD_CAUSE_LOCK_ORDER);
    CHECK_EQ_STR(x.c.summary,
                 "lock-order cycle (a potential deadlock): Lock@l.py:1 -> Lock@l.py:2 -> Lock@l.py:1 "
                 "(taken in one order by one task and in the other by another)");
    CHECK_EQ_STR(x.c.resource, "Lock@l.py:1, Lock@l.py:2");
    /* the await inside the first lock's critical section: one#0 held lock 1 across it */
    CHECK_EQ_STR(x.c.await_site, "l.py:5");
    CHECK_EQ_INT(x.c.n_ops, 2);
    const char *locks[2] = {"Lock@l.py:1", "Lock@l.py:2"};
    for (size_t i = 0; i < 2; i++) {
        CHECK_EQ_INT(x.c.ops[i].access, AFD_CAUSE_ACCESS_LOCK);
        CHECK(x.c.ops[i].task == NULL && x.c.ops[i].run == NULL);
        CHECK_EQ_STR(x.c.ops[i].operation, "acquire");
        CHECK_EQ_STR(x.c.ops[i].resource, locks[i]);
    }
    /* the cycle is the cause, so it is not repeated as a side row */
    CHECK(!has_claim(&x.ev, "the lock-order graph has a cycle (a potential deadlock)"));
    fixture_finish(&x);
}

/* A lost update beside a lock-order cycle: the lost update is the cause, the cycle a row. */
TEST(lock_order_cycle_beside_another_kind_is_evidence)
{
    fixture x;
    fixture_init(&x);
    reset_traces(&x);
    tb_lock_run(&x.tf, 1, 1);
    CHECK_EQ_INT(afd_trace_init(&x.tp), 0);
    afd_trace *t = &x.tf;
    uint32_t l0 = tb_str(t, "deposit#0"), bal = tb_str(t, "BALANCE"), l3 = tb_str(t, "deposit#1");
    tb_task(t, 3, 0, l0);
    tb_task(t, 4, 0, l3);
    tb_wake(t, 3, 0, 4);
    tb_op(t, 3, AFD_NOSTR, bal, 0);
    tb_step(t, 3, 0, AFD_NOSTR);
    tb_wake(t, 4, 0, 5);
    tb_op(t, 4, AFD_NOSTR, bal, 1);
    tb_step(t, 4, 0, AFD_NOSTR);
    tb_wake(t, 3, 5, 6);
    tb_op(t, 3, AFD_NOSTR, bal, 1);
    tb_step(t, 3, 1, AFD_NOSTR);
    decide(&x);
    CHECK_EQ_INT(x.c.kind, AFD_CAUSE_LOST_UPDATE);
    CHECK_EQ_STR(x.c.resource, "BALANCE");
    CHECK(x.c.await_site == NULL); /* deposit#0 yielded at no known await */
    check_row(&x.ev, x.ev.n - 1, "the lock-order graph has a cycle (a potential deadlock)",
              "in the minimal failing run", "observed");
    fixture_finish(&x);
}

/* reload#0 calls time.sleep for 30 ms inside a step, at s.py:7. */
TEST(starvation)
{
    fixture x;
    fixture_init(&x);
    afd_trace *t = &x.tf;
    uint32_t lr = tb_str(t, "reload#0"), lh = tb_str(t, "heartbeat#0"), site = tb_str(t, "s.py:7");
    tb_task(t, 1, 0, lr);
    tb_task(t, 2, 0, lh);
    tb_wake(t, 2, 0, 1);
    tb_step(t, 2, 0, AFD_NOSTR);
    tb_wake(t, 1, 0, 2);
    tb_evx(t, AFD_EV_BLOCK, 0, 1, AFD_BLOCK_SLEEP, site, 0, 30000000u, 0);
    tb_evx(t, AFD_EV_STEP, 0, 1, 0, AFD_NOSTR, 0, 30000000u, 150000000u); /* 150 ms of wall time */
    x.in.hist.slow_step_ms = 100;
    decide(&x);
    CHECK_EQ_INT(x.c.kind, AFD_CAUSE_STARVATION);
    CHECK_EQ_STR(x.c.resource, "event loop");
    CHECK_EQ_STR(x.c.await_site, "s.py:7");
    CHECK_EQ_STR(x.c.summary,
                 "starvation: reload#0 blocks the event loop for 30.0 ms at s.py:7 (a blocking call "
                 "inside a coroutine: every other task waits)");
    CHECK_EQ_INT(x.c.n_ops, 1);
    const afd_cause_op *op = &x.c.ops[0];
    CHECK_EQ_INT(op->access, AFD_CAUSE_ACCESS_BLOCK);
    CHECK_EQ_STR(op->task, "reload#0");
    CHECK_EQ_STR(op->operation, "blocking call");
    CHECK_EQ_STR(op->resource, "event loop");
    CHECK_EQ_STR(op->site, "s.py:7");
    check_row(&x.ev, 0, "blocking call (time.sleep) inside a coroutine, in the minimal failing run",
              "30.0 ms at s.py:7", "observed");
    check_row(&x.ev, 1, "slow step: reload#0 step 0 (over --slow-step)", "150.0 ms wall", "observed");
    CHECK_EQ_INT(x.ev.n, 2);
    fixture_finish(&x);
}

/* No blocking call in the minimal failing run, but one in the failing natural runs, and only in
 * them: Ochiai 1.00 names starvation from the history. */
TEST(starvation_from_the_natural_runs)
{
    fixture x;
    fixture_init(&x);
    afd_trace *t = &x.tf;
    uint32_t l = tb_str(t, "heartbeat#0");
    tb_task(t, 1, 0, l);
    tb_wake(t, 1, 0, 1);
    tb_step(t, 1, 0, AFD_NOSTR);
    afd_view v;
    tb_view(&v, t);
    fixture_run(&x, &v, 1, 1, 1);
    fixture_run(&x, &v, 1, 1, 1);
    fixture_run(&x, &v, 0, 0, 1);
    fixture_run(&x, &v, 0, 1, 0); /* not a natural run: not counted */
    afd_view_finish(&v);
    x.in.hist.block_site = "s.py:7";
    x.in.hist.block_task = "reload#0";
    x.in.hist.block_ns = 25000000u;
    decide(&x);
    CHECK_EQ_INT(x.c.kind, AFD_CAUSE_STARVATION);
    CHECK_EQ_STR(x.c.await_site, "s.py:7");
    CHECK_EQ_STR(x.c.summary,
                 "starvation: reload#0 blocks the event loop for 25.0 ms at s.py:7 (a blocking call "
                 "inside a coroutine: every other task waits)");
    CHECK_EQ_INT(x.c.n_ops, 1);
    CHECK_EQ_STR(x.c.ops[0].task, "reload#0");
    CHECK_EQ_STR(x.c.ops[0].site, "s.py:7");
    check_row(&x.ev, 0, "a blocking call or slow step in a failing natural run", "25.0 ms at s.py:7",
              "observed");
    check_row(&x.ev, 1, "natural runs with a blocking call (1 ms or more) or a slow step fail",
              "Ochiai 1.00 (2 failing, 0 passing natural runs)", "observed");
    fixture_finish(&x);
}

/* Nothing the views can name: two tasks, no access, no lock, no blocking call. */
TEST(other)
{
    fixture x;
    fixture_init(&x);
    afd_trace *t = &x.tf;
    uint32_t la = tb_str(t, "a#0"), lb = tb_str(t, "b#0");
    tb_task(t, 1, 0, la);
    tb_task(t, 2, 0, lb);
    tb_wake(t, 1, 0, 1);
    tb_step(t, 1, 0, AFD_NOSTR);
    tb_wake(t, 2, 0, 2);
    tb_step(t, 2, 0, AFD_NOSTR);
    decide(&x);
    CHECK_EQ_INT(x.c.kind, AFD_CAUSE_OTHER);
    CHECK_EQ_STR(x.c.summary, "no conflicting operations were recorded: annotate shared state with "
                              "affidavit.access() or affidavit.operation() to name the cause");
    CHECK(x.c.resource == NULL && x.c.await_site == NULL);
    CHECK_EQ_INT(x.c.n_ops, 0);
    CHECK_EQ_INT(x.c.n_races, 0);
    CHECK_EQ_INT(x.ev.n, 0);
    fixture_finish(&x);
}

/* ---- the struct ---- */

/* No cause named: a fresh cause, an unknown name, NONE's names. */
TEST(none)
{
    afd_cause c;
    afd_cause_init(&c);
    CHECK_EQ_INT(c.kind, AFD_CAUSE_NONE);
    CHECK(c.summary == NULL && c.resource == NULL && c.await_site == NULL && c.n_ops == 0 && c.n_races == 0);
    CHECK_EQ_INT(c.early, AFD_NOPOS);
    CHECK(afd_cause_kind_name(AFD_CAUSE_NONE) == NULL);
    CHECK(afd_cause_kind_words(AFD_CAUSE_NONE) == NULL);
    CHECK(afd_cause_kind_css(AFD_CAUSE_NONE) == NULL);
    CHECK(afd_cause_kind_name(AFD_CAUSE__COUNT) == NULL);
    CHECK_EQ_INT(afd_cause_kind_parse(NULL), AFD_CAUSE_NONE);
    CHECK_EQ_INT(afd_cause_kind_parse("race"), AFD_CAUSE_NONE);
    CHECK_EQ_INT(afd_cause_kind_parse(""), AFD_CAUSE_NONE);
    afd_cause_finish(&c);
    afd_cause_finish(NULL);
    afd_evidence_finish(NULL);
}

TEST(kind_and_access_names_round_trip)
{
    static const char *const names[] = {"lost_update",       "check_then_act", "order_violation",
                                        "deadlock",          "lock_order",     "starvation",
                                        "cancelled_handoff", "lost_wakeup",    "cancel_swallowed",
                                        "cancel_ordering",   "other"};
    CHECK_EQ_INT(sizeof names / sizeof names[0], AFD_CAUSE__COUNT - 1);
    for (int k = AFD_CAUSE_NONE + 1; k < AFD_CAUSE__COUNT; k++) {
        CHECK_EQ_STR(afd_cause_kind_name((afd_cause_kind)k), names[k - 1]);
        CHECK_EQ_INT(afd_cause_kind_parse(names[k - 1]), k);
        CHECK(afd_cause_kind_words((afd_cause_kind)k) != NULL &&
              afd_cause_kind_css((afd_cause_kind)k) != NULL);
    }
    CHECK_EQ_STR(afd_cause_kind_words(AFD_CAUSE_CHECK_THEN_ACT), "check then act");
    CHECK_EQ_STR(afd_cause_kind_css(AFD_CAUSE_LOST_UPDATE), "lost-update");
    CHECK_EQ_STR(afd_cause_kind_words(AFD_CAUSE_LOST_WAKEUP), "lost wake-up");
    CHECK_EQ_STR(afd_cause_kind_css(AFD_CAUSE_CANCELLED_HANDOFF), "cancelled-handoff");
    CHECK(afd_cause_access_has_site(AFD_CAUSE_ACCESS_BLOCK) &&
          afd_cause_access_has_site(AFD_CAUSE_ACCESS_CANCEL) &&
          afd_cause_access_has_site(AFD_CAUSE_ACCESS_HANDOFF) &&
          !afd_cause_access_has_site(AFD_CAUSE_ACCESS_WAIT));
    static const char *const accesses[] = {"read", "write", "wait", "block", "lock", "handoff", "cancel"};
    for (int a = 0; a < AFD_CAUSE_ACCESS__COUNT; a++) {
        afd_cause_access got = AFD_CAUSE_ACCESS__COUNT;
        CHECK_EQ_STR(afd_cause_access_name((afd_cause_access)a), accesses[a]);
        CHECK_EQ_INT(afd_cause_access_parse(accesses[a], &got), 0);
        CHECK_EQ_INT(got, a);
    }
    afd_cause_access got = AFD_CAUSE_ACCESS_READ;
    CHECK_EQ_INT(afd_cause_access_parse("acquire", &got), AFD_EINVAL);
    CHECK_EQ_INT(afd_cause_access_parse(NULL, &got), AFD_EINVAL);
    CHECK(afd_cause_access_name(AFD_CAUSE_ACCESS__COUNT) == NULL);
}

TEST(evidence_rows_keep_their_order_and_copies)
{
    afd_evidence ev;
    afd_evidence_init(&ev);
    char claim[32];
    for (int i = 0; i < 20; i++) { /* past the first growth */
        snprintf(claim, sizeof claim, "claim %d", i);
        CHECK_EQ_INT(afd_evidence_add(&ev, claim, i % 2 ? NULL : "m", "observed"), 0);
    }
    snprintf(claim, sizeof claim, "overwritten");
    CHECK_EQ_INT(ev.n, 20);
    CHECK_EQ_INT(ev.err, 0);
    check_row(&ev, 0, "claim 0", "m", "observed");
    check_row(&ev, 19, "claim 19", "", "observed"); /* NULL is kept as "" */
    afd_evidence_finish(&ev);
    CHECK(ev.rows == NULL && ev.n == 0 && ev.cap == 0);
    afd_evidence_finish(&ev); /* twice is fine */
}

TEST(cause_add_op_and_race)
{
    afd_cause c;
    afd_cause_init(&c);
    for (int i = 0; i < 5; i++) {
        afd_cause_op *op = afd_cause_add_op(&c);
        CHECK(op != NULL);
        CHECK(op->task == NULL && op->step == 0); /* zeroed */
        op->task = strdup("t#0");
        CHECK(op->task != NULL);
    }
    afd_cause_race *r = afd_cause_add_race(&c);
    CHECK(r != NULL);
    r->resource = strdup("X");
    r->ops[1].file = strdup("x.py");
    CHECK_EQ_INT(c.n_ops, 5);
    CHECK_EQ_INT(c.n_races, 1);
    CHECK_EQ_STR(c.ops[4].task, "t#0");
    afd_cause_finish(&c); /* frees every string stored (ASan checks) */
    CHECK(c.ops == NULL && c.races == NULL && c.n_ops == 0 && c.n_races == 0);
}

int main(void)
{
    RUN_TESTS("cause", T(lost_update), T(check_then_act), T(order_violation),
              T(order_violation_writer_only_in_the_passing_run), T(deadlock), T(lock_order),
              T(lock_order_cycle_beside_another_kind_is_evidence), T(starvation),
              T(starvation_from_the_natural_runs), T(other), T(none), T(kind_and_access_names_round_trip),
              T(evidence_rows_keep_their_order_and_copies), T(cause_add_op_and_race),
              T(same_literal_overwrite_is_check_then_act), T(stale_value_read_is_lost_update));
}
