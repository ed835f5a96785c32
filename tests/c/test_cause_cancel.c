/* test_cause_cancel.c -- the cancellation and hand-off kinds of afd_cause_decide on hand-built
 * runs (the events of trace.h's contract, 18-24): each kind with its resource, await, sentence,
 * operations and rows, and beside each a near miss that must not be that kind; the facts
 * explain_cancel.c reads; bad ids that must be ignored, never crash. */
#include "afd.h"
#include "cause.h"
#include "explain.h"
#include "explain_cancel.h"
#include "harness.h"
#include "trace.h"
#include "tracebuild.h"
#include "cancel_fixture.h"

/* ---- the runs ---- */

enum { WORKER = 1, WAITER = 2, OTHER_WAITER = 3, TIMER = 4 };

/* How the waiter of a hand-off ends. */
enum handoff_end {
    END_CANCELLED,   /* a timeout cancels it after the hand-off: it resumes into CancelledError */
    END_RESUMED,     /* it resumes with what it was handed */
    END_PASSED_ON,   /* cancelled, but its except clause hands the thing to the next waiter */
    END_BY_CALLBACK, /* cancelled, but the future was completed by a timer callback, not a task */
};

/* lock_waiter#1 suspends at pool.py:30 awaiting a future of pool.py:28; worker#0 completes it
 * (set_result, or release() of Lock@pool.py:12, object 1, when `primitive`); a wait_for armed at
 * pool.py:40 expires in a timer callback and cancels the waiter, whose wake-up is already
 * scheduled; the waiter then resumes. lock_waiter#2 waits at pool.py:30 too. */
static void handoff_run(afd_trace *t, enum handoff_end end, int primitive)
{
    uint32_t lw = tb_str(t, "worker#0"), l1 = tb_str(t, "lock_waiter#1"), l2 = tb_str(t, "lock_waiter#2");
    uint32_t lt = tb_str(t, "timeout-callback#0");
    uint32_t label = tb_str(t, primitive ? "Lock@pool.py:12" : "Future@pool.py:28");
    uint32_t s30 = tb_str(t, "pool.py:30"), s40 = tb_str(t, "pool.py:40"), s50 = tb_str(t, "pool.py:50");
    uint32_t object = primitive ? 1 : 0;
    uint8_t cb = end == END_BY_CALLBACK;
    tb_task(t, WORKER, 0, lw);
    tb_task(t, WAITER, 0, l1);
    tb_task(t, OTHER_WAITER, 0, l2);
    tb_ev(t, AFD_EV_TASK, 1, TIMER, 0, lt); /* a plain callback */
    tb_wake(t, WAITER, 0, 1);
    tb_step(t, WAITER, 0, s30);
    tb_wake(t, OTHER_WAITER, 0, 2);
    tb_step(t, OTHER_WAITER, 0, s30);
    /* index 2: the completion, by worker#0 or (END_BY_CALLBACK) by the timer callback */
    uint32_t completer = cb ? TIMER : WORKER;
    tb_wake(t, completer, 0, 3);
    if (primitive)
        tb_sync(t, completer, AFD_SYNC_LOCK_RELEASE, object, label);
    tb_evx(t, AFD_EV_HANDOFF, 0, completer, WAITER, label, 0, object, 0);
    tb_step(t, completer, 0, cb ? AFD_NOSTR : s50);
    if (end != END_RESUMED) { /* index 3: the timeout expires */
        tb_wake(t, TIMER, 0, 4);
        tb_ev(t, AFD_EV_TIMEOUT, AFD_TIMEOUT_WAIT_FOR, WAITER, 1, s40);
        tb_ev(t, AFD_EV_CANCEL, AFD_CANCEL_TIMEOUT | AFD_CANCEL_WOKEN, TIMER, WAITER, AFD_NOSTR);
        tb_step(t, TIMER, cb ? 1 : 0, AFD_NOSTR);
    }
    /* index 4: the waiter resumes */
    tb_wake(t, WAITER, 3, 5);
    tb_ev(t, AFD_EV_RESUME, end == END_RESUMED ? 0 : AFD_RESUME_CANCELLED, WAITER, 3, label);
    if (end != END_RESUMED)
        tb_ev(t, AFD_EV_CANCEL_DELIVERED, 0, WAITER, 4, s30);
    if (end == END_PASSED_ON)
        tb_evx(t, AFD_EV_HANDOFF, 0, WAITER, OTHER_WAITER, label, 0, object, 0);
    if (end == END_RESUMED && primitive)
        tb_sync(t, WAITER, AFD_SYNC_LOCK_ACQUIRE, object, label);
    tb_step(t, WAITER, 1, end == END_RESUMED && primitive ? s50 : AFD_NOSTR);
}

/* The run ends as a deadlock: lock_waiter#2 waits for the hand-off's object (0: a plain future)
 * held by `holder`. */
static void deadlock_end(afd_trace *t, uint32_t object, uint32_t holder)
{
    t->outcome = AFD_OUT_HANG;
    t->flags |= AFD_TRACE_DEADLOCK;
    tb_ev(t, AFD_EV_WAITFOR, 0, OTHER_WAITER, object, holder);
}

/* ---- cancelled_handoff ---- */

TEST(cancelled_handoff_of_a_future_result)
{
    fixture x;
    fixture_init(&x);
    handoff_run(&x.tf, END_CANCELLED, 0);
    decide(&x);
    CHECK_EQ_INT(x.c.kind, AFD_CAUSE_CANCELLED_HANDOFF);
    CHECK_EQ_STR(x.c.resource, "Future@pool.py:28");
    CHECK_EQ_STR(x.c.await_site, "pool.py:30");
    CHECK_EQ_STR(x.c.summary,
                 "cancelled hand-off of Future@pool.py:28: lock_waiter#1 was handed Future@pool.py:28 by "
                 "set_result() in worker#0 and cancelled by wait_for (pool.py:40) before it resumed at "
                 "pool.py:30: what it was handed is lost (lock_waiter#1 never passed it on)");
    CHECK_EQ_INT(x.c.n_ops, 3);
    check_op(&x.c.ops[0], AFD_CAUSE_ACCESS_HANDOFF, "worker#0", "set_result()", "Future@pool.py:28", NULL);
    check_op(&x.c.ops[1], AFD_CAUSE_ACCESS_CANCEL, "wait_for", "cancel", "lock_waiter#1", "pool.py:40");
    check_op(&x.c.ops[2], AFD_CAUSE_ACCESS_HANDOFF, "lock_waiter#1", "resume into CancelledError",
             "Future@pool.py:28", "pool.py:30");
    check_row(&x.ev, 0,
              "lock_waiter#1 was handed Future@pool.py:28 by worker#0 and cancelled before it resumed",
              "handed in worker#0 step 0; resumed into CancelledError", "observed");
    check_row(&x.ev, 1,
              "lock_waiter#1 never passed Future@pool.py:28 on (no later hand-off or release of it)",
              "in the minimal failing run", "observed");
    check_row(&x.ev, 2, "the schedule that loses the hand-off fails every time it is replayed",
              "10/10 failed", "confirmed");
    CHECK_EQ_INT(x.ev.n, 3);
    fixture_finish(&x);
}

/* The brief's shape: a primitive handed over by release(), still held by the cancelled waiter
 * while another task waits for it forever. */
TEST(cancelled_handoff_of_a_lock_still_held)
{
    fixture x;
    fixture_init(&x);
    handoff_run(&x.tf, END_CANCELLED, 1);
    deadlock_end(&x.tf, 1, WAITER);
    x.in.k_fail = 3;
    x.in.n_fail = 4;
    decide(&x);
    CHECK_EQ_INT(x.c.kind, AFD_CAUSE_CANCELLED_HANDOFF);
    CHECK_EQ_STR(x.c.resource, "Lock@pool.py:12");
    CHECK_EQ_STR(x.c.summary,
                 "cancelled hand-off of Lock@pool.py:12: lock_waiter#1 was handed Lock@pool.py:12 by "
                 "release() in worker#0 and cancelled by wait_for (pool.py:40) before it resumed at "
                 "pool.py:30: Lock@pool.py:12 stays held by lock_waiter#1, which never releases it");
    check_op(&x.c.ops[0], AFD_CAUSE_ACCESS_HANDOFF, "worker#0", "release()", "Lock@pool.py:12", NULL);
    check_row(&x.ev, 2, "at the end, tasks wait for Lock@pool.py:12 held by lock_waiter#1",
              "in the minimal failing run", "observed");
    check_row(&x.ev, 3, "the schedule that loses the hand-off fails every time it is replayed", "3/4 failed",
              "weaker");
    CHECK_EQ_INT(x.c.n_races, 0); /* a deadlock's run: no pairs are read */
    fixture_finish(&x);
}

/* Near misses: the waiter resumed with the result; it passed the hand-off on; the future was
 * completed by a timer callback (a sleep's wake-up carries nothing to lose). */
TEST(cancelled_handoff_near_misses)
{
    static const enum handoff_end ends[] = {END_RESUMED, END_PASSED_ON, END_BY_CALLBACK};
    for (size_t i = 0; i < sizeof ends / sizeof ends[0]; i++) {
        fixture x;
        fixture_init(&x);
        handoff_run(&x.tf, ends[i], 0);
        decide(&x);
        CHECK_EQ_INT(x.c.kind, AFD_CAUSE_OTHER);
        fixture_finish(&x);
    }
    /* a primitive whose waiter was cancelled but holds nothing at the end: the lock is free */
    fixture x;
    fixture_init(&x);
    handoff_run(&x.tf, END_CANCELLED, 1);
    decide(&x);
    CHECK(x.c.kind != AFD_CAUSE_CANCELLED_HANDOFF);
    fixture_finish(&x);
}

/* The nearest passing run loses the same hand-off: it does not explain the failure. */
TEST(cancelled_handoff_also_in_the_passing_run_is_not_the_cause)
{
    fixture x;
    fixture_init(&x);
    handoff_run(&x.tf, END_CANCELLED, 0);
    handoff_run(&x.tp, END_CANCELLED, 0);
    x.have_p = 1;
    decide(&x);
    CHECK_EQ_INT(x.c.kind, AFD_CAUSE_OTHER);
    fixture_finish(&x);
    /* and when the passing run's waiter resumed with it, the failing run's loss is the cause */
    fixture_init(&x);
    handoff_run(&x.tf, END_CANCELLED, 0);
    handoff_run(&x.tp, END_RESUMED, 0);
    x.have_p = 1;
    decide(&x);
    CHECK_EQ_INT(x.c.kind, AFD_CAUSE_CANCELLED_HANDOFF);
    check_row(&x.ev, 2, "the passing run loses no hand-off of it", "in the nearest passing run", "observed");
    fixture_finish(&x);
}

/* ---- lost_wakeup ---- */

/* The lock's wake-up went to lock_waiter#1, cancelled before it took the lock (which nobody then
 * holds); lock_waiter#2 waits for it forever. */
TEST(lost_wakeup)
{
    fixture x;
    fixture_init(&x);
    handoff_run(&x.tf, END_CANCELLED, 1);
    deadlock_end(&x.tf, 1, 0);
    decide(&x);
    CHECK_EQ_INT(x.c.kind, AFD_CAUSE_LOST_WAKEUP);
    CHECK_EQ_STR(x.c.resource, "Lock@pool.py:12");
    CHECK_EQ_STR(x.c.await_site, "pool.py:30");
    CHECK_EQ_STR(x.c.summary,
                 "lost wake-up on Lock@pool.py:12: lock_waiter#1, waiting at pool.py:30, was woken for it by "
                 "release() in worker#0 and cancelled by wait_for (pool.py:40) without taking it or waking "
                 "another; lock_waiter#2 waits for it forever");
    CHECK_EQ_INT(x.c.n_ops, 4);
    check_op(&x.c.ops[0], AFD_CAUSE_ACCESS_HANDOFF, "worker#0", "release()", "Lock@pool.py:12", NULL);
    check_op(&x.c.ops[1], AFD_CAUSE_ACCESS_CANCEL, "wait_for", "cancel", "lock_waiter#1", "pool.py:40");
    check_op(&x.c.ops[2], AFD_CAUSE_ACCESS_HANDOFF, "lock_waiter#1", "resume into CancelledError",
             "Lock@pool.py:12", "pool.py:30");
    check_op(&x.c.ops[3], AFD_CAUSE_ACCESS_WAIT, "lock_waiter#2", "wait", "Lock@pool.py:12", NULL);
    check_row(&x.ev, 0, "the run hung: tasks wait for Lock@pool.py:12, which nobody holds",
              "1 waiting; 10/10 hung", "confirmed");
    check_row(&x.ev, 1, "lock_waiter#1 consumed the wake-up for Lock@pool.py:12 and never took it",
              "woken in worker#0 step 0; resumed into CancelledError", "observed");
    check_row(&x.ev, 2, "lock_waiter#1 woke no other waiter (no later hand-off or release of it)",
              "in the minimal failing run", "observed");
    fixture_finish(&x);
}

/* Marks the run's first hand-off as a future completed with None (AFD_HANDOFF_NONE). */
static void handoff_of_none(afd_trace *t)
{
    for (uint32_t i = 0; i < t->n_events; i++)
        if (t->events[i].kind == AFD_EV_HANDOFF) {
            t->events[i].flags |= AFD_HANDOFF_NONE;
            return;
        }
}

/* A plain future completed with None hands over only the wake-up: cancelled before it resumed,
 * the waiter lost no value, and while others wait forever at the same await it is a lost wake-up;
 * without the hang it is neither kind. */
TEST(lost_wakeup_of_a_none_result)
{
    fixture x;
    fixture_init(&x);
    handoff_run(&x.tf, END_CANCELLED, 0);
    handoff_of_none(&x.tf);
    deadlock_end(&x.tf, 0, 0);
    decide(&x);
    CHECK_EQ_INT(x.c.kind, AFD_CAUSE_LOST_WAKEUP);
    CHECK_EQ_STR(x.c.resource, "Future@pool.py:28");
    CHECK_EQ_STR(x.c.await_site, "pool.py:30");
    CHECK_EQ_STR(
        x.c.summary,
        "lost wake-up on Future@pool.py:28: lock_waiter#1, waiting at pool.py:30, was woken for it by "
        "set_result() in worker#0 and cancelled by wait_for (pool.py:40) without taking it or waking "
        "another; lock_waiter#2 waits for it forever");
    fixture_finish(&x);
    /* the same result, not None, is a value handed over and lost, hang or not */
    fixture_init(&x);
    handoff_run(&x.tf, END_CANCELLED, 0);
    deadlock_end(&x.tf, 0, 0);
    decide(&x);
    CHECK_EQ_INT(x.c.kind, AFD_CAUSE_CANCELLED_HANDOFF);
    fixture_finish(&x);
    fixture_init(&x);
    handoff_run(&x.tf, END_CANCELLED, 0);
    handoff_of_none(&x.tf);
    decide(&x);
    CHECK_EQ_INT(x.c.kind, AFD_CAUSE_OTHER);
    fixture_finish(&x);
}

/* Near misses: the cancelled waiter woke the next one (then the hang is not its doing); the
 * waiter took the lock and holds it (a plain deadlock on a held lock); it took it and nobody holds
 * it at the end. */
TEST(lost_wakeup_near_misses)
{
    fixture x;
    fixture_init(&x);
    handoff_run(&x.tf, END_PASSED_ON, 1);
    deadlock_end(&x.tf, 1, 0);
    decide(&x);
    CHECK_EQ_INT(x.c.kind, AFD_CAUSE_DEADLOCK);
    CHECK_EQ_STR(x.c.summary, "deadlock: every task is blocked and nothing can wake one");
    fixture_finish(&x);
    fixture_init(&x);
    handoff_run(&x.tf, END_RESUMED, 1);
    deadlock_end(&x.tf, 1, WAITER);
    decide(&x);
    CHECK_EQ_INT(x.c.kind, AFD_CAUSE_DEADLOCK);
    fixture_finish(&x);
    /* it took what it was woken for (a queue's item: the queue has no holder), and the other waits
     * for more: nothing was lost on the way */
    fixture_init(&x);
    handoff_run(&x.tf, END_RESUMED, 1);
    deadlock_end(&x.tf, 1, 0);
    decide(&x);
    CHECK_EQ_INT(x.c.kind, AFD_CAUSE_DEADLOCK);
    fixture_finish(&x);
}

/* A wait-for cycle is a deadlock whatever was lost on the way; what the teardown cancels after
 * the deadlock was found is never read. */
TEST(deadlock_with_a_cycle_and_teardown_cancels_stays_a_deadlock)
{
    fixture x;
    fixture_init(&x);
    afd_trace *t = &x.tf;
    handoff_run(t, END_CANCELLED, 1);
    t->outcome = AFD_OUT_HANG;
    t->flags |= AFD_TRACE_DEADLOCK;
    tb_ev(t, AFD_EV_WAITFOR, 0, WAITER, 1, OTHER_WAITER);
    tb_ev(t, AFD_EV_WAITFOR, 0, OTHER_WAITER, 1, WAITER);
    decide(&x);
    CHECK_EQ_INT(x.c.kind, AFD_CAUSE_DEADLOCK);
    fixture_finish(&x);
    /* no cycle, the program cancelled nothing itself: the teardown's cancels that follow the
     * WAITFOR events (caught, delivered, swallowed-looking) name nothing */
    fixture_init(&x);
    t = &x.tf;
    uint32_t la = tb_str(t, "a#0"), lb = tb_str(t, "b#0"), site = tb_str(t, "d.py:3");
    tb_task(t, 1, 0, la);
    tb_task(t, 2, 0, lb);
    tb_wake(t, 1, 0, 1);
    tb_step(t, 1, 0, site);
    tb_wake(t, 2, 0, 2);
    tb_step(t, 2, 0, site);
    t->outcome = AFD_OUT_HANG;
    t->flags |= AFD_TRACE_DEADLOCK;
    tb_ev(t, AFD_EV_WAITFOR, 0, 1, 0, 0);
    tb_ev(t, AFD_EV_WAITFOR, 0, 2, 0, 0);
    tb_ev(t, AFD_EV_CANCEL, 0, 0, 1, AFD_NOSTR);
    tb_wake(t, 1, 0, 3);
    tb_ev(t, AFD_EV_CANCEL_DELIVERED, 0, 1, 0, site);
    tb_ev(t, AFD_EV_CANCEL_CAUGHT, 0, 1, 0, site);
    tb_step(t, 1, 1, site);
    tb_wake(t, 1, 0, 4);
    tb_step(t, 1, 2, site);
    decide(&x);
    CHECK_EQ_INT(x.c.kind, AFD_CAUSE_DEADLOCK);
    fixture_finish(&x);
}

/* ---- cancel_ordering ---- */

/* main#0 cancels its child worker#0 and awaits something else (m.py:10); worker#0's cleanup
 * (after the CancelledError at w.py:5) awaits at w.py:8, then writes Conn.closed. main#0 reads
 * Conn.closed before that write, or (awaited) after it. */
static void ordering_run(afd_trace *t, int awaited)
{
    uint32_t lm = tb_str(t, "main#0"), lw = tb_str(t, "worker#0"), res = tb_str(t, "Conn.closed");
    uint32_t s5 = tb_str(t, "w.py:5"), s8 = tb_str(t, "w.py:8"), s10 = tb_str(t, "m.py:10");
    tb_task(t, 1, 0, lm);
    tb_task(t, 2, 1, lw);
    tb_wake(t, 2, 0, 1);
    tb_step(t, 2, 0, s5);
    tb_wake(t, 1, 0, 2);
    tb_ev(t, AFD_EV_CANCEL, 0, 1, 2, AFD_NOSTR);
    tb_step(t, 1, 0, s10);
    tb_wake(t, 2, 2, 3);
    tb_ev(t, AFD_EV_CANCEL_DELIVERED, 0, 2, 2, s5);
    tb_step(t, 2, 1, s8);
    if (!awaited) {
        tb_wake(t, 1, 2, 4);
        tb_op(t, 1, AFD_NOSTR, res, 0);
        tb_step(t, 1, 1, AFD_NOSTR);
    }
    tb_wake(t, 2, 3, 5);
    tb_op(t, 2, AFD_NOSTR, res, 1);
    tb_step(t, 2, 2, AFD_NOSTR);
    if (awaited) {
        tb_wake(t, 1, 5, 6);
        tb_op(t, 1, AFD_NOSTR, res, 0);
        tb_step(t, 1, 1, AFD_NOSTR);
    }
}

TEST(cancel_ordering)
{
    fixture x;
    fixture_init(&x);
    ordering_run(&x.tf, 0);
    ordering_run(&x.tp, 1);
    x.have_p = 1;
    decide(&x);
    CHECK_EQ_INT(x.c.kind, AFD_CAUSE_CANCEL_ORDERING);
    CHECK_EQ_STR(x.c.resource, "Conn.closed");
    CHECK_EQ_STR(x.c.await_site, "m.py:10");
    CHECK_EQ_STR(x.c.summary,
                 "cancel ordering on Conn.closed: main#0 cancelled worker#0, resumed at m.py:10 and read it "
                 "before worker#0's cleanup after the CancelledError at w.py:5 wrote it: the caller went on "
                 "before the cancelled task finished cleaning up");
    CHECK_EQ_INT(x.c.n_ops, 3);
    check_op(&x.c.ops[0], AFD_CAUSE_ACCESS_CANCEL, "main#0", "cancel", "worker#0", NULL);
    CHECK_EQ_INT(x.c.ops[1].access, AFD_CAUSE_ACCESS_READ);
    CHECK_EQ_STR(x.c.ops[1].task, "main#0");
    CHECK_EQ_STR(x.c.ops[1].run, "failing");
    CHECK_EQ_INT(x.c.ops[1].step, 1);
    CHECK_EQ_INT(x.c.ops[2].access, AFD_CAUSE_ACCESS_WRITE);
    CHECK_EQ_STR(x.c.ops[2].task, "worker#0");
    CHECK_EQ_INT(x.c.ops[2].step, 2);
    check_row(&x.ev, 0,
              "main#0 read Conn.closed after worker#0 was cancelled and before its cleanup wrote it",
              "read in main#0 step 1, cleanup write in worker#0 step 2", "observed");
    check_row(&x.ev, 1, "the passing run reads it after the cleanup wrote it", "in the nearest passing run",
              "observed");
    check_row(&x.ev, 2, "the schedule that reads before the cleanup fails every time it is replayed",
              "10/10 failed", "confirmed");
    CHECK(x.c.n_races > 0); /* nothing orders the read and the write: the incident lists the race */
    fixture_finish(&x);
}

/* Near misses: the caller awaited the cancelled task and read after its cleanup; the passing run
 * reads before the cleanup too (the order does not decide the outcome). */
TEST(cancel_ordering_near_misses)
{
    fixture x;
    fixture_init(&x);
    ordering_run(&x.tf, 1);
    decide(&x);
    CHECK(x.c.kind != AFD_CAUSE_CANCEL_ORDERING);
    fixture_finish(&x);
    fixture_init(&x);
    ordering_run(&x.tf, 0);
    ordering_run(&x.tp, 0);
    x.have_p = 1;
    decide(&x);
    CHECK(x.c.kind != AFD_CAUSE_CANCEL_ORDERING);
    fixture_finish(&x);
}

/* ---- cancel_swallowed ---- */

/* How the poller's step that receives the CancelledError ends. */
enum catch_end {
    CATCH_WENT_ON,    /* caught, not re-raised; it awaits again at p.py:20 and again after */
    CATCH_RERAISED,   /* it propagated out of the task */
    CATCH_UNCANCELED, /* asyncio.timeout caught its own cancel and uncancel()ed it */
    CATCH_CLEANUP,    /* caught to await a cleanup at p.py:25, then the task ends (re-raised) */
};

/* main#0 cancels poller#0 (suspended at p.py:20) while its wake-up is scheduled. */
static void swallow_run(afd_trace *t, enum catch_end end)
{
    uint32_t lm = tb_str(t, "main#0"), lp = tb_str(t, "poller#0");
    uint32_t s20 = tb_str(t, "p.py:20"), s25 = tb_str(t, "p.py:25"), s9 = tb_str(t, "m.py:9");
    tb_task(t, 1, 0, lm);
    tb_task(t, 2, 1, lp);
    tb_wake(t, 2, 0, 1);
    tb_step(t, 2, 0, s20);
    tb_wake(t, 1, 0, 2);
    if (end == CATCH_UNCANCELED)
        tb_ev(t, AFD_EV_TIMEOUT, AFD_TIMEOUT_CONTEXT, 2, 1, s20);
    tb_ev(t, AFD_EV_CANCEL, end == CATCH_UNCANCELED ? AFD_CANCEL_TIMEOUT : AFD_CANCEL_WOKEN, 1, 2, AFD_NOSTR);
    tb_step(t, 1, 0, s9);
    tb_wake(t, 2, 1, 3);
    tb_ev(t, AFD_EV_CANCEL_DELIVERED, 0, 2, 2, s20);
    if (end == CATCH_UNCANCELED)
        tb_evx(t, AFD_EV_UNCANCEL, 0, 2, 2, s20, 0, 0, 0);
    if (end != CATCH_RERAISED)
        tb_ev(t, AFD_EV_CANCEL_CAUGHT, end == CATCH_UNCANCELED ? 2 : 0, 2, 2,
              end == CATCH_CLEANUP ? s25 : s20);
    tb_step(t, 2, 1, end == CATCH_RERAISED ? AFD_NOSTR : end == CATCH_CLEANUP ? s25 : s20);
    tb_wake(t, 2, 3, 4);
    tb_step(t, 2, 2, end == CATCH_WENT_ON || end == CATCH_UNCANCELED ? s20 : AFD_NOSTR);
}

TEST(cancel_swallowed_caught_and_went_on)
{
    fixture x;
    fixture_init(&x);
    swallow_run(&x.tf, CATCH_WENT_ON);
    decide(&x);
    CHECK_EQ_INT(x.c.kind, AFD_CAUSE_CANCEL_SWALLOWED);
    CHECK_EQ_STR(x.c.resource, "poller#0");
    CHECK_EQ_STR(x.c.await_site, "p.py:20");
    CHECK_EQ_STR(
        x.c.summary,
        "cancel swallowed: main#0 cancelled poller#0, which caught the CancelledError at p.py:20 and "
        "went on (suspended again at p.py:20) without re-raising it: the cancellation asked for "
        "never took effect");
    CHECK_EQ_INT(x.c.n_ops, 2);
    check_op(&x.c.ops[0], AFD_CAUSE_ACCESS_CANCEL, "main#0", "cancel", "poller#0", NULL);
    check_op(&x.c.ops[1], AFD_CAUSE_ACCESS_CANCEL, "poller#0", "catch without re-raising", "poller#0",
             "p.py:20");
    check_row(&x.ev, 0, "poller#0 caught the CancelledError and went on (no re-raise, no uncancel())",
              "ran on after catching it", "observed");
    check_row(&x.ev, 1, "the schedule that swallows the cancellation fails every time it is replayed",
              "10/10 failed", "confirmed");
    fixture_finish(&x);
}

/* Near misses: re-raised; a timeout's own cancel uncancel()ed (turned into TimeoutError); caught
 * only to clean up before the task ends. */
TEST(cancel_swallowed_near_misses)
{
    static const enum catch_end ends[] = {CATCH_RERAISED, CATCH_UNCANCELED, CATCH_CLEANUP};
    for (size_t i = 0; i < sizeof ends / sizeof ends[0]; i++) {
        fixture x;
        fixture_init(&x);
        swallow_run(&x.tf, ends[i]);
        decide(&x);
        CHECK_EQ_INT(x.c.kind, AFD_CAUSE_OTHER);
        fixture_finish(&x);
    }
    /* swallowed in the passing run too: not what fails */
    fixture x;
    fixture_init(&x);
    swallow_run(&x.tf, CATCH_WENT_ON);
    swallow_run(&x.tp, CATCH_WENT_ON);
    x.have_p = 1;
    decide(&x);
    CHECK_EQ_INT(x.c.kind, AFD_CAUSE_OTHER);
    fixture_finish(&x);
}

/* worker#0 and main#0 are both ready; worker#0's last step runs first and finishes it, then
 * main#0's step (scheduled before it, or -- the near miss -- by it) cancels it: cancel() returns
 * False. */
static void done_run(afd_trace *t, int scheduled_by_last)
{
    uint32_t lm = tb_str(t, "main#0"), lw = tb_str(t, "worker#0");
    uint32_t s3 = tb_str(t, "w.py:3"), s4 = tb_str(t, "m.py:4");
    tb_task(t, 1, 0, lm);
    tb_task(t, 2, 1, lw);
    tb_wake(t, 2, 0, 1);
    tb_step(t, 2, 0, s3);
    tb_wake(t, 1, 0, 2);
    tb_step(t, 1, 0, s4);
    tb_wake(t, 2, 1, 3);
    tb_step(t, 2, 1, AFD_NOSTR);
    tb_wake(t, 1, scheduled_by_last ? 3 : 2, 4);
    tb_ev(t, AFD_EV_CANCEL, AFD_CANCEL_DONE, 1, 2, AFD_NOSTR);
    tb_step(t, 1, 1, AFD_NOSTR);
}

TEST(cancel_swallowed_by_a_completion_in_the_same_iteration)
{
    fixture x;
    fixture_init(&x);
    done_run(&x.tf, 0);
    decide(&x);
    CHECK_EQ_INT(x.c.kind, AFD_CAUSE_CANCEL_SWALLOWED);
    CHECK_EQ_STR(x.c.resource, "worker#0");
    CHECK_EQ_STR(x.c.await_site, "m.py:4");
    CHECK_EQ_STR(x.c.summary,
                 "cancel swallowed: main#0 cancelled worker#0 just after its last step had finished it "
                 "(cancel() returned False; both were ready at once): the cancellation asked for never took "
                 "effect");
    check_op(&x.c.ops[0], AFD_CAUSE_ACCESS_CANCEL, "main#0", "cancel", "worker#0", "m.py:4");
    check_op(&x.c.ops[1], AFD_CAUSE_ACCESS_CANCEL, "worker#0", "complete", "worker#0", NULL);
    check_row(&x.ev, 0,
              "worker#0 had completed in a step that ran while the cancelling step was already scheduled",
              "cancel() returned False", "observed");
    fixture_finish(&x);
    /* the cancelling step was woken by the last step itself: it came after, not at once */
    fixture_init(&x);
    done_run(&x.tf, 1);
    decide(&x);
    CHECK_EQ_INT(x.c.kind, AFD_CAUSE_OTHER);
    fixture_finish(&x);
}

/* ---- the facts ---- */

TEST(view_facts_of_a_cancelled_handoff)
{
    afd_trace t;
    CHECK_EQ_INT(afd_trace_init(&t), 0);
    handoff_run(&t, END_CANCELLED, 1);
    afd_view v;
    tb_view(&v, &t);
    afd_cancel_view cv;
    CHECK_EQ_INT(afd_cancel_view_build(&cv, &v), 0);
    CHECK_EQ_INT(cv.n_cancels, 1);
    const afd_xcancel *c = &cv.cancels[0];
    CHECK_EQ_INT(c->canceller, TIMER);
    CHECK_EQ_INT(c->target, WAITER);
    CHECK_EQ_INT(c->step, 3);
    CHECK_EQ_INT(c->timeout_flags, AFD_TIMEOUT_WAIT_FOR);
    CHECK_EQ_STR(afd_trace_string(&t, c->timeout_site), "pool.py:40");
    CHECK_EQ_INT(c->delivered, 4);
    CHECK_EQ_STR(afd_trace_string(&t, c->delivered_at), "pool.py:30");
    CHECK_EQ_INT(c->caught, AFD_NOPOS);
    CHECK_EQ_INT(cv.n_handoffs, 1);
    const afd_xhandoff *h = &cv.handoffs[0];
    CHECK_EQ_INT(h->completer, WORKER);
    CHECK_EQ_INT(h->by_task, 1);
    CHECK_EQ_INT(h->waiter, WAITER);
    CHECK_EQ_INT(h->object, 1);
    CHECK_EQ_INT(h->how, AFD_SYNC_LOCK_RELEASE);
    CHECK_EQ_INT(h->step, 2);
    CHECK_EQ_STR(afd_trace_string(&t, h->waited_at), "pool.py:30");
    CHECK_EQ_INT(h->resumed, 4);
    CHECK_EQ_INT(h->resume_cancelled, 1);
    CHECK_EQ_INT(h->cancel, 0);
    CHECK_EQ_INT(h->passed_on, AFD_NOPOS);
    CHECK_EQ_INT(h->taken, AFD_NOPOS);
    CHECK_EQ_INT(cv.n_waiters, 0);
    CHECK_EQ_INT(afd_cancel_view_is_task(&cv, TIMER), 0);
    CHECK_EQ_INT(afd_cancel_view_is_task(&cv, WORKER), 1);
    CHECK_EQ_INT(afd_cancel_view_last_step(&cv, WAITER), 4);
    CHECK_EQ_INT(afd_cancel_view_last_step(&cv, 999), AFD_NOPOS);
    afd_cancel_view_finish(&cv);
    afd_cancel_view_finish(&cv); /* twice, and NULL, are fine */
    afd_cancel_view_finish(NULL);
    afd_view_finish(&v);
    /* passed on, and taken */
    afd_trace_finish(&t);
    CHECK_EQ_INT(afd_trace_init(&t), 0);
    handoff_run(&t, END_PASSED_ON, 1);
    tb_view(&v, &t);
    CHECK_EQ_INT(afd_cancel_view_build(&cv, &v), 0);
    CHECK_EQ_INT(cv.n_handoffs, 2);
    CHECK_EQ_INT(cv.handoffs[0].passed_on, 4);
    CHECK_EQ_INT(cv.handoffs[1].waiter, OTHER_WAITER);
    afd_cancel_view_finish(&cv);
    afd_view_finish(&v);
    afd_trace_finish(&t);
    CHECK_EQ_INT(afd_trace_init(&t), 0);
    handoff_run(&t, END_RESUMED, 1);
    tb_view(&v, &t);
    CHECK_EQ_INT(afd_cancel_view_build(&cv, &v), 0);
    CHECK_EQ_INT(cv.handoffs[0].taken, 3);
    CHECK_EQ_INT(cv.handoffs[0].resume_cancelled, 0);
    afd_cancel_view_finish(&cv);
    afd_view_finish(&v);
    afd_trace_finish(&t);
}

/* Events 18-24 with ids no recorder can have given (unknown tasks, indices past every step,
 * object numbers past the bound, string ids out of range), and random runs of every kind of
 * event: the decision returns 0 with a valid kind, and ASan sees no bad access. */
TEST(bad_ids_are_ignored)
{
    fixture x;
    fixture_init(&x);
    afd_trace *t = &x.tf;
    uint32_t l = tb_str(t, "a#0");
    tb_task(t, 1, 0, l);
    tb_ev(t, AFD_EV_RESUME, AFD_RESUME_CANCELLED, 77, 5, 12345);
    tb_ev(t, AFD_EV_CANCEL_DELIVERED, 0, 1, 0xffffffffu, 999);
    tb_ev(t, AFD_EV_CANCEL_CAUGHT, 3, 0xffffffffu, 0, AFD_NOSTR);
    tb_evx(t, AFD_EV_HANDOFF, 0, 1, 0xfffffff0u, 4242, 0, UINT64_MAX, 0);
    tb_ev(t, AFD_EV_UNCANCEL, 0, 1, 0xffffffffu, AFD_NOSTR);
    tb_wake(t, 1, 0xffffffffu, 0xffffffffu);
    tb_ev(t, AFD_EV_CANCEL, AFD_CANCEL_DONE | AFD_CANCEL_WOKEN, 1, 1, 77777);
    tb_evx(t, AFD_EV_HANDOFF, 0, 1, 1, 4242, 0, 3, 0);
    tb_ev(t, AFD_EV_RESUME, 0, 1, 0, AFD_NOSTR);
    tb_step(t, 1, 0, 888);
    decide(&x);
    CHECK(x.c.kind > AFD_CAUSE_NONE && x.c.kind < AFD_CAUSE__COUNT);
    fixture_finish(&x);
    uint64_t seed = 0x9e3779b97f4a7c15ULL;
    for (int round = 0; round < 300; round++) {
        fixture_init(&x);
        t = &x.tf;
        for (int s = 0; s < 4; s++)
            tb_str(t, s % 2 ? "Lock@r.py:1" : "r.py:2");
        if (round % 3 == 0)
            t->flags |= AFD_TRACE_DEADLOCK;
        for (int i = 0; i < 60; i++) {
            seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
            uint32_t r = (uint32_t)(seed >> 33);
            uint8_t kind = (uint8_t)(1 + r % (AFD_EV__COUNT - 1));
            tb_evx(t, kind, (uint8_t)(r >> 8), (r >> 12) % 5, (r >> 15) % 7, (r >> 18) % 6, 0, (r >> 21) % 4,
                   0);
        }
        decide(&x);
        CHECK(x.c.kind > AFD_CAUSE_NONE && x.c.kind < AFD_CAUSE__COUNT);
        fixture_finish(&x);
    }
}

int main(void)
{
    RUN_TESTS("cause_cancel", T(cancelled_handoff_of_a_future_result),
              T(cancelled_handoff_of_a_lock_still_held), T(cancelled_handoff_near_misses),
              T(cancelled_handoff_also_in_the_passing_run_is_not_the_cause), T(lost_wakeup),
              T(lost_wakeup_near_misses), T(deadlock_with_a_cycle_and_teardown_cancels_stays_a_deadlock),
              T(cancel_ordering), T(cancel_ordering_near_misses), T(cancel_swallowed_caught_and_went_on),
              T(cancel_swallowed_near_misses), T(cancel_swallowed_by_a_completion_in_the_same_iteration),

              T(lost_wakeup_of_a_none_result), T(view_facts_of_a_cancelled_handoff), T(bad_ids_are_ignored));
}
