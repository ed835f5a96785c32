/* test_cause_cancel_shapes.c -- the second shapes of the cancellation kinds, on hand-built runs:
 * an item got from a queue and lost with the task cancelled while it held it; a chain of wake-ups
 * broken by a waiter cancelled where others then wait forever; a read the cancelling step makes
 * after its cancel(); a swallowed cancel named by the task's handle and the await that caught it.
 * Beside each, the near misses that must not be that kind. */
#include "afd.h"
#include "cancel_fixture.h"
#include "cause.h"
#include "explain.h"
#include "harness.h"
#include "trace.h"
#include "tracebuild.h"

/* How the holder of a queue's item ends in item_run. */
enum item_end {
    ITEM_LOST,     /* the CancelledError leaves the task: the item it got goes with it */
    ITEM_PUT_BACK, /* its except clause puts the item back and re-raises */
    ITEM_WENT_ON,  /* it catches the error and waits at the queue again */
};

/* acquire#0 gets an item from Queue@p.py:30 at p.py:41 in _acquire, then awaits connect() at
 * p.py:43 (suspended at p.py:19 inside it); a wait_for timeout cancels it there. */
static void item_run(afd_trace *t, enum item_end end)
{
    uint32_t label = tb_str(t, "Queue@p.py:30"), file = tb_str(t, "p.py"), s19 = tb_str(t, "p.py:19");
    uint32_t s41 = tb_str(t, "p.py:41"), s40 = tb_str(t, "t.py:40");
    uint32_t chain = tb_str(t, "p.py:43 _acquire\np.py:19 connect");
    tb_task(t, 1, 0, tb_str(t, "acquire#0"));
    tb_ev(t, AFD_EV_TASK, 1, 2, 0, tb_str(t, "timeout-callback#0"));
    tb_wake(t, 1, 0, 1);
    tb_evx(t, AFD_EV_LINE, 0, 1, file, 41, 0, AFD_NOSTR, 0);
    tb_sync(t, 1, AFD_SYNC_QUEUE_GET, 1, label);
    tb_step(t, 1, 0, s19);
    tb_ev(t, AFD_EV_CHAIN, 0, 1, chain, 2);
    tb_wake(t, 2, 0, 2);
    tb_ev(t, AFD_EV_TIMEOUT, AFD_TIMEOUT_WAIT_FOR, 1, 1, s40);
    tb_ev(t, AFD_EV_CANCEL, AFD_CANCEL_TIMEOUT, 2, 1, AFD_NOSTR);
    tb_step(t, 2, 0, AFD_NOSTR);
    tb_wake(t, 1, 2, 3);
    tb_ev(t, AFD_EV_CANCEL_DELIVERED, 0, 1, 2, s19);
    tb_ev(t, AFD_EV_CHAIN, 0, 1, chain, 2);
    if (end == ITEM_PUT_BACK)
        tb_sync(t, 1, AFD_SYNC_QUEUE_PUT, 1, label);
    if (end == ITEM_WENT_ON)
        tb_ev(t, AFD_EV_CANCEL_CAUGHT, 0, 1, 2, s41);
    tb_step(t, 1, 1, end == ITEM_WENT_ON ? s41 : AFD_NOSTR);
    if (end == ITEM_WENT_ON) { /* woken again, it waits there once more */
        tb_wake(t, 1, 3, 4);
        tb_step(t, 1, 2, s41);
    }
}

/* An item got from a queue by a task cancelled while it held it, and never put back, is lost; the
 * await named is the one in the frame that got it. */
TEST(cancelled_handoff_of_an_item_got_from_a_queue)
{
    fixture x;
    fixture_init(&x);
    item_run(&x.tf, ITEM_LOST);
    decide(&x);
    CHECK_EQ_INT(x.c.kind, AFD_CAUSE_CANCELLED_HANDOFF);
    CHECK_EQ_STR(x.c.resource, "Queue@p.py:30");
    CHECK_EQ_STR(x.c.await_site, "p.py:43");
    CHECK_EQ_STR(
        x.c.summary,
        "cancelled hand-off of an item of Queue@p.py:30: acquire#0 got it at p.py:41 and was cancelled by "
        "wait_for (t.py:40) at p.py:43 while it held it: it never put it back or passed it on, so the "
        "item is lost");
    CHECK_EQ_INT(x.c.n_ops, 3);
    check_op(&x.c.ops[0], AFD_CAUSE_ACCESS_HANDOFF, "acquire#0", "get()", "Queue@p.py:30", "p.py:41");
    check_op(&x.c.ops[2], AFD_CAUSE_ACCESS_HANDOFF, "acquire#0", "resume into CancelledError",
             "Queue@p.py:30", "p.py:43");
    fixture_finish(&x);
    /* put back before re-raising: nothing lost */
    fixture_init(&x);
    item_run(&x.tf, ITEM_PUT_BACK);
    decide(&x);
    CHECK_EQ_INT(x.c.kind, AFD_CAUSE_OTHER);
    fixture_finish(&x);
    /* the cancel did not take effect: a swallowed cancel, not a lost item */
    fixture_init(&x);
    item_run(&x.tf, ITEM_WENT_ON);
    decide(&x);
    CHECK_EQ_INT(x.c.kind, AFD_CAUSE_CANCEL_SWALLOWED);
    fixture_finish(&x);
    /* lost in the passing run as well: not what fails */
    fixture_init(&x);
    item_run(&x.tf, ITEM_LOST);
    item_run(&x.tp, ITEM_LOST);
    x.have_p = 1;
    decide(&x);
    CHECK_EQ_INT(x.c.kind, AFD_CAUSE_OTHER);
    fixture_finish(&x);
}

/* How the wake-ups at l.py:26 go in chain_run. */
enum chain_shape {
    CHAIN_BROKEN,      /* first#0 is woken there; w1#0, waiting there, is cancelled and leaves */
    CHAIN_NEVER_WOKEN, /* nobody is ever woken there: the wake-up is missing, not lost */
    CHAIN_STILL_WAITS, /* w1#0 catches the cancel and waits there again */
};

/* first#0, w1#0 and w2#0 wait at l.py:26 (futures of Future@l.py:23); holder#0 wakes first#0 (a
 * set_result, no primitive); a wait_for timeout cancels w1#0 while it waits; then nothing wakes
 * anyone and the run hangs with w2#0 waiting at l.py:26, held by nobody. */
static void chain_run(afd_trace *t, enum chain_shape shape)
{
    enum { HOLDER = 1, W1 = 2, W2 = 3, CB = 4, FIRST = 5 };
    uint32_t label = tb_str(t, "Future@l.py:23"), s26 = tb_str(t, "l.py:26"), s40 = tb_str(t, "t.py:40");
    uint32_t s57 = tb_str(t, "l.py:57");
    tb_task(t, HOLDER, 0, tb_str(t, "holder#0"));
    tb_task(t, W1, 0, tb_str(t, "w1#0"));
    tb_task(t, W2, 0, tb_str(t, "w2#0"));
    tb_ev(t, AFD_EV_TASK, 1, CB, 0, tb_str(t, "timeout-callback#0"));
    tb_task(t, FIRST, 0, tb_str(t, "first#0"));
    tb_wake(t, FIRST, 0, 1);
    tb_step(t, FIRST, 0, s26);
    tb_wake(t, W1, 0, 2);
    tb_step(t, W1, 0, s26);
    tb_wake(t, W2, 0, 3);
    tb_step(t, W2, 0, s26);
    tb_wake(t, HOLDER, 0, 4);
    if (shape != CHAIN_NEVER_WOKEN)
        tb_evx(t, AFD_EV_HANDOFF, 0, HOLDER, FIRST, label, 0, 0, 0);
    tb_step(t, HOLDER, 0, s57);
    if (shape != CHAIN_NEVER_WOKEN) {
        tb_wake(t, FIRST, 4, 5);
        tb_ev(t, AFD_EV_RESUME, 0, FIRST, 4, label);
        tb_step(t, FIRST, 1, AFD_NOSTR);
    }
    tb_wake(t, CB, 0, 6);
    tb_ev(t, AFD_EV_TIMEOUT, AFD_TIMEOUT_WAIT_FOR, W1, 1, s40);
    tb_ev(t, AFD_EV_CANCEL, AFD_CANCEL_TIMEOUT, CB, W1, AFD_NOSTR);
    tb_step(t, CB, 0, AFD_NOSTR);
    tb_wake(t, W1, 6, 7);
    tb_ev(t, AFD_EV_CANCEL_DELIVERED, 0, W1, 6, s26);
    if (shape == CHAIN_STILL_WAITS)
        tb_ev(t, AFD_EV_CANCEL_CAUGHT, 0, W1, 6, s26);
    tb_step(t, W1, 1, shape == CHAIN_STILL_WAITS ? s26 : AFD_NOSTR);
    t->outcome = AFD_OUT_HANG;
    t->flags |= AFD_TRACE_DEADLOCK;
    tb_ev(t, AFD_EV_WAITFOR, 0, W2, 0, 0);
    if (shape == CHAIN_STILL_WAITS)
        tb_ev(t, AFD_EV_WAITFOR, 0, W1, 0, 0);
}

TEST(lost_wakeup_when_a_cancelled_waiter_breaks_the_chain_of_wakeups)
{
    fixture x;
    fixture_init(&x);
    chain_run(&x.tf, CHAIN_BROKEN);
    decide(&x);
    CHECK_EQ_INT(x.c.kind, AFD_CAUSE_LOST_WAKEUP);
    CHECK_EQ_STR(x.c.resource, "Future@l.py:23");
    CHECK_EQ_STR(x.c.await_site, "l.py:26");
    CHECK_EQ_STR(x.c.summary,
                 "lost wake-up on Future@l.py:23: w1#0, waiting for it at l.py:26, was cancelled by wait_for "
                 "(t.py:40) and left without taking it or waking another; no wake-up reaches l.py:26 after "
                 "that: w2#0 waits for it forever");
    CHECK_EQ_INT(x.c.n_ops, 3);
    check_op(&x.c.ops[0], AFD_CAUSE_ACCESS_CANCEL, "wait_for", "cancel", "w1#0", "t.py:40");
    check_op(&x.c.ops[1], AFD_CAUSE_ACCESS_HANDOFF, "w1#0", "resume into CancelledError", "Future@l.py:23",
             "l.py:26");
    check_op(&x.c.ops[2], AFD_CAUSE_ACCESS_WAIT, "w2#0", "wait", "Future@l.py:23", "l.py:26");
    check_row(&x.ev, 1, "wake-ups of Future@l.py:23 went from task to task until w1#0 was cancelled there",
              "the last in holder#0 step 0; none after the cancel", "observed");
    fixture_finish(&x);
    /* never woken there at all: a plain hang; the cancelled waiter caught the cancel and waits there
     * again: it swallowed the cancel, it lost no wake-up */
    fixture_init(&x);
    chain_run(&x.tf, CHAIN_NEVER_WOKEN);
    decide(&x);
    CHECK_EQ_INT(x.c.kind, AFD_CAUSE_DEADLOCK);
    fixture_finish(&x);
    fixture_init(&x);
    chain_run(&x.tf, CHAIN_STILL_WAITS);
    decide(&x);
    CHECK_EQ_INT(x.c.kind, AFD_CAUSE_CANCEL_SWALLOWED);
    fixture_finish(&x);
}

/* main#0 resumes from m.py:3 and, in that one step, cancels worker#0 and reads Conn.closed after
 * the cancel() (as code after a wait_for that raised TimeoutError does), or -- the near miss --
 * reads it before the cancel(); worker#0's cleanup writes it later. */
static void same_step_ordering_run(afd_trace *t, int read_first)
{
    uint32_t res = tb_str(t, "Conn.closed"), s3 = tb_str(t, "m.py:3"), s5 = tb_str(t, "w.py:5");
    tb_task(t, 1, 0, tb_str(t, "main#0"));
    tb_task(t, 2, 1, tb_str(t, "worker#0"));
    tb_wake(t, 2, 0, 1);
    tb_step(t, 2, 0, s5);
    tb_wake(t, 1, 0, 2);
    tb_step(t, 1, 0, s3);
    tb_wake(t, 1, 0, 3);
    if (read_first)
        tb_op(t, 1, AFD_NOSTR, res, 0);
    tb_ev(t, AFD_EV_CANCEL, 0, 1, 2, AFD_NOSTR);
    if (!read_first)
        tb_op(t, 1, AFD_NOSTR, res, 0);
    tb_step(t, 1, 1, AFD_NOSTR);
    tb_wake(t, 2, 3, 4);
    tb_ev(t, AFD_EV_CANCEL_DELIVERED, 0, 2, 3, s5);
    tb_op(t, 2, AFD_NOSTR, res, 1);
    tb_step(t, 2, 1, AFD_NOSTR);
}

TEST(cancel_ordering_read_in_the_cancelling_step)
{
    fixture x;
    fixture_init(&x);
    same_step_ordering_run(&x.tf, 0);
    decide(&x);
    CHECK_EQ_INT(x.c.kind, AFD_CAUSE_CANCEL_ORDERING);
    CHECK_EQ_STR(x.c.resource, "Conn.closed");
    CHECK_EQ_STR(x.c.await_site, "m.py:3");
    fixture_finish(&x);
    /* read before it cancelled: the read did not go on before a cleanup it had asked for */
    fixture_init(&x);
    same_step_ordering_run(&x.tf, 1);
    decide(&x);
    CHECK(x.c.kind != AFD_CAUSE_CANCEL_ORDERING);
    fixture_finish(&x);
}

/* main#0 creates worker#0 at w.py:22 (a LINE event of its step before the TASK event); worker#0
 * suspends in _execute at w.py:25, called from _run at w.py:32; main#0 cancels it; the error is
 * thrown at w.py:25, caught, and worker#0 suspends again: at w.py:30 in _run (a lone frame: _run
 * caught it), or, when `inner`, at w.py:27 still inside _execute (_execute caught it). */
static void swallow_chain_run(afd_trace *t, int inner, int with_lines)
{
    uint32_t lm = tb_str(t, "main#0"), lw = tb_str(t, "worker#0"), file = tb_str(t, "w.py");
    uint32_t s25 = tb_str(t, "w.py:25"), s27 = tb_str(t, "w.py:27"), s30 = tb_str(t, "w.py:30");
    uint32_t s9 = tb_str(t, "m.py:9");
    uint32_t deep = tb_str(t, "w.py:32 _run\nw.py:25 _execute");
    uint32_t again = tb_str(t, "w.py:32 _run\nw.py:27 _execute");
    tb_task(t, 1, 0, lm);
    tb_wake(t, 1, 0, 1);
    if (with_lines)
        tb_evx(t, AFD_EV_LINE, 0, 1, file, 22, 0, AFD_NOSTR, 0);
    tb_task(t, 2, 1, lw);
    tb_step(t, 1, 0, s9);
    tb_wake(t, 2, 1, 2);
    tb_step(t, 2, 0, s25);
    tb_ev(t, AFD_EV_CHAIN, 0, 2, deep, 2);
    tb_wake(t, 1, 0, 3);
    tb_ev(t, AFD_EV_CANCEL, AFD_CANCEL_WOKEN, 1, 2, AFD_NOSTR);
    tb_step(t, 1, 1, s9);
    tb_wake(t, 2, 3, 4);
    tb_ev(t, AFD_EV_CANCEL_DELIVERED, 0, 2, 3, s25);
    tb_ev(t, AFD_EV_CHAIN, 0, 2, deep, 2);
    tb_ev(t, AFD_EV_CANCEL_CAUGHT, 0, 2, 3, inner ? s27 : s30);
    tb_step(t, 2, 1, inner ? s27 : s30);
    if (inner)
        tb_ev(t, AFD_EV_CHAIN, 0, 2, again, 2);
    tb_wake(t, 2, 4, 5);
    tb_step(t, 2, 2, s30);
}

/* The task is named by its handle, Task@ the line that created it; the await named is the one in
 * the frame that caught the error (the deepest frame of the delivery's chain still on the stack
 * when the task suspends again), not the one it was thrown at. */
TEST(cancel_swallowed_names_the_task_handle_and_the_catching_await)
{
    fixture x;
    fixture_init(&x);
    swallow_chain_run(&x.tf, 0, 1);
    decide(&x);
    CHECK_EQ_INT(x.c.kind, AFD_CAUSE_CANCEL_SWALLOWED);
    CHECK_EQ_STR(x.c.resource, "Task@w.py:22");
    CHECK_EQ_STR(x.c.await_site, "w.py:32");
    CHECK_EQ_STR(x.c.summary,
                 "cancel swallowed: main#0 cancelled worker#0, which caught the CancelledError at w.py:32 "
                 "(thrown at w.py:25) and went on (suspended again at w.py:30) without re-raising it: the "
                 "cancellation asked for never took effect");
    check_op(&x.c.ops[1], AFD_CAUSE_ACCESS_CANCEL, "worker#0", "catch without re-raising", "worker#0",
             "w.py:32");
    fixture_finish(&x);
    /* caught inside _execute, which still runs when the task suspends again */
    fixture_init(&x);
    swallow_chain_run(&x.tf, 1, 1);
    decide(&x);
    CHECK_EQ_INT(x.c.kind, AFD_CAUSE_CANCEL_SWALLOWED);
    CHECK_EQ_STR(x.c.await_site, "w.py:25");
    fixture_finish(&x);
    /* without line events the task's creation line is unknown: its label names it */
    fixture_init(&x);
    swallow_chain_run(&x.tf, 0, 0);
    decide(&x);
    CHECK_EQ_STR(x.c.resource, "worker#0");
    fixture_finish(&x);
}

/* How much of where view#0's get ran the trace of got_run says. */
enum got_known {
    GOT_CHAIN, /* the get's SYNC event has its chain (the step resumed at the get: no LINE) */
    GOT_SITE,  /* a lone frame: only the await the step resumed from (p.py:41) */
    GOT_NONE,  /* neither: the get ran in the task's first step, no line traced */
};

/* view#0 (t.py:29) enters an @asynccontextmanager generator `connection` (p.py:55) that calls
 * getconn, which waits at its get() at p.py:41; woken, it gets an item of Queue@p.py:32 (no line
 * event: the line was traced in the step before) and checks it: suspended at p.py:19 in execute,
 * through getconn's p.py:43 and check's p.py:26; a wait_for timeout cancels it there. */
static void got_run(afd_trace *t, enum got_known known)
{
    uint32_t label = tb_str(t, "Queue@p.py:32"), s19 = tb_str(t, "p.py:19"), s41 = tb_str(t, "p.py:41");
    uint32_t s40 = tb_str(t, "t.py:40");
    uint32_t at_get = tb_str(t, "t.py:29 view\np.py:55 connection\np.py:41 getconn");
    uint32_t deep =
        tb_str(t, "t.py:29 view\np.py:55 connection\np.py:43 getconn\np.py:26 check\np.py:19 execute");
    tb_task(t, 1, 0, tb_str(t, "view#0"));
    tb_ev(t, AFD_EV_TASK, 1, 2, 0, tb_str(t, "timeout-callback#0"));
    if (known != GOT_NONE) {
        tb_wake(t, 1, 0, 1);
        tb_step(t, 1, 0, s41);
        if (known == GOT_CHAIN)
            tb_ev(t, AFD_EV_CHAIN, 0, 1, at_get, 3);
    }
    tb_wake(t, 1, 0, 2);
    tb_sync(t, 1, AFD_SYNC_QUEUE_GET, 1, label);
    if (known == GOT_CHAIN)
        tb_ev(t, AFD_EV_CHAIN, 0, 1, at_get, 3);
    tb_step(t, 1, 1, s19);
    tb_ev(t, AFD_EV_CHAIN, 0, 1, deep, 5);
    tb_wake(t, 2, 0, 3);
    tb_ev(t, AFD_EV_TIMEOUT, AFD_TIMEOUT_WAIT_FOR, 1, 1, s40);
    tb_ev(t, AFD_EV_CANCEL, AFD_CANCEL_TIMEOUT, 2, 1, AFD_NOSTR);
    tb_step(t, 2, 0, AFD_NOSTR);
    tb_wake(t, 1, 3, 4);
    tb_ev(t, AFD_EV_CANCEL_DELIVERED, 0, 1, 3, s19);
    tb_ev(t, AFD_EV_CHAIN, 0, 1, deep, 5);
    tb_step(t, 1, 2, AFD_NOSTR);
}

/* A get that ran where its step resumed has no traced line: its chain (or the await it resumed
 * from) places it, and the await named is the one of the frame that got the item, inside an
 * @asynccontextmanager generator, not the one the error was thrown at. */
TEST(a_lost_item_got_where_a_step_resumed_is_placed_by_its_chain)
{
    fixture x;
    fixture_init(&x);
    got_run(&x.tf, GOT_CHAIN);
    decide(&x);
    CHECK_EQ_INT(x.c.kind, AFD_CAUSE_CANCELLED_HANDOFF);
    CHECK_EQ_STR(x.c.await_site, "p.py:43");
    CHECK_EQ_STR(x.c.summary,
                 "cancelled hand-off of an item of Queue@p.py:32: view#0 got it at p.py:41 and was "
                 "cancelled by wait_for (t.py:40) at p.py:43 while it held it: it never put it back "
                 "or passed it on, so the item is lost");
    check_op(&x.c.ops[0], AFD_CAUSE_ACCESS_HANDOFF, "view#0", "get()", "Queue@p.py:32", "p.py:41");
    fixture_finish(&x);
    /* a lone frame: the await the step resumed from places the get */
    fixture_init(&x);
    got_run(&x.tf, GOT_SITE);
    decide(&x);
    CHECK_EQ_INT(x.c.kind, AFD_CAUSE_CANCELLED_HANDOFF);
    CHECK_EQ_STR(x.c.await_site, "p.py:43");
    fixture_finish(&x);
    /* nothing places it: the await the error was thrown at */
    fixture_init(&x);
    got_run(&x.tf, GOT_NONE);
    decide(&x);
    CHECK_EQ_INT(x.c.kind, AFD_CAUSE_CANCELLED_HANDOFF);
    CHECK_EQ_STR(x.c.await_site, "p.py:19");
    fixture_finish(&x);
}

/* How reply_run goes. */
enum reply_shape {
    REPLY_TO_NEXT,   /* get#0 asks (creates answer#0), is cancelled; main#0's get takes the reply */
    REPLY_TO_ITSELF, /* one task: cancelled, it goes on and its next get takes the old reply */
    REPLY_NOT_ASKED, /* answer#0 was created by main#0: the reply was not get#0's */
    REPLY_LEFT,      /* nobody takes the reply: it stays in the queue */
};

/* Redis-like: Connection._replies is Queue@p.py:41. The asking task, in one step, runs
 * execute_command (p.py:59 -> send_command p.py:44 -> submit p.py:29, which creates answer#0),
 * then waits in read_response's get() (its empty() check) at p.py:47, via execute_command's
 * p.py:60. A wait_for timeout cancels it there; answer#0 then puts the reply, and a get takes it. */
static void reply_run(afd_trace *t, enum reply_shape shape)
{
    enum { MAIN = 1, GET = 2, ANSWER = 3, CB = 4, ANSWER2 = 5 };
    uint32_t q = tb_str(t, "Queue@p.py:41"), file = tb_str(t, "p.py"), s47 = tb_str(t, "p.py:47");
    uint32_t s28 = tb_str(t, "t.py:28"), s34 = tb_str(t, "p.py:34");
    int one = shape == REPLY_TO_ITSELF;
    uint32_t asker = one ? MAIN : GET;
    uint32_t req =
        tb_str(t, one ? "t.py:28 test\np.py:66 get\np.py:59 execute_command\np.py:44 send_command\n"
                        "p.py:29 submit"
                      : "p.py:66 get\np.py:59 execute_command\np.py:44 send_command\np.py:29 submit");
    uint32_t wait =
        tb_str(t, one ? "t.py:28 test\np.py:66 get\np.py:60 execute_command\np.py:47 read_response"
                      : "p.py:66 get\np.py:60 execute_command\np.py:47 read_response");
    tb_task(t, MAIN, 0, tb_str(t, "main#0"));
    tb_ev(t, AFD_EV_TASK, 1, CB, 0, tb_str(t, "timeout-callback#0"));
    tb_wake(t, MAIN, 0, 1); /* step 0 */
    if (!one)
        tb_task(t, GET, MAIN, tb_str(t, "get#0"));
    if (shape == REPLY_NOT_ASKED)
        tb_task(t, ANSWER, MAIN, tb_str(t, "answer#0"));
    if (!one) {
        tb_step(t, MAIN, 0, s28);
        tb_wake(t, GET, 1, 2); /* step 1 */
    }
    tb_evx(t, AFD_EV_LINE, 0, asker, file, 29, 0, AFD_NOSTR, 0);
    tb_ev(t, AFD_EV_CHAIN, 0, asker, req, 5);
    if (shape != REPLY_NOT_ASKED)
        tb_task(t, ANSWER, asker, tb_str(t, "answer#0"));
    tb_evx(t, AFD_EV_LINE, 0, asker, file, 47, 0, AFD_NOSTR, 0);
    tb_sync(t, asker, AFD_SYNC_QUEUE_CHECK, 1, q);
    tb_step(t, asker, 0, s47);
    tb_ev(t, AFD_EV_CHAIN, 0, asker, wait, 4);
    uint32_t ask = one ? 1 : 2;                                /* 1 + the asking step's index */
    tb_wake(t, ANSWER, shape == REPLY_NOT_ASKED ? 1 : ask, 3); /* step 2 */
    tb_step(t, ANSWER, 0, s34);
    tb_wake(t, CB, 1, 4); /* step 3 */
    tb_ev(t, AFD_EV_TIMEOUT, AFD_TIMEOUT_WAIT_FOR, asker, 1, s28);
    tb_ev(t, AFD_EV_CANCEL, AFD_CANCEL_TIMEOUT, CB, asker, AFD_NOSTR);
    tb_step(t, CB, 0, AFD_NOSTR);
    tb_wake(t, asker, 4, 5); /* step 4 */
    tb_ev(t, AFD_EV_CANCEL_DELIVERED, 0, asker, 4, s47);
    tb_ev(t, AFD_EV_CHAIN, 0, asker, wait, 4);
    if (one) { /* asyncio.timeout turns it into TimeoutError; the test goes on to its next command */
        tb_ev(t, AFD_EV_CANCEL_CAUGHT, 2, MAIN, 4, s47);
        tb_task(t, ANSWER2, MAIN, tb_str(t, "answer#1"));
        tb_sync(t, MAIN, AFD_SYNC_QUEUE_CHECK, 1, q);
        tb_step(t, MAIN, 1, s47);
    } else {
        tb_step(t, GET, 1, AFD_NOSTR);
    }
    tb_wake(t, ANSWER, 3, 6); /* step 5 */
    tb_sync(t, ANSWER, AFD_SYNC_QUEUE_PUT, 1, q);
    tb_step(t, ANSWER, 1, AFD_NOSTR);
    if (shape != REPLY_LEFT) {
        tb_wake(t, MAIN, one ? 6 : 5, 7); /* step 6 */
        tb_sync(t, MAIN, AFD_SYNC_QUEUE_GET, 1, q);
        tb_step(t, MAIN, one ? 2 : 1, AFD_NOSTR);
    }
}

TEST(cancelled_handoff_of_a_reply_taken_by_the_next_taker)
{
    fixture x;
    fixture_init(&x);
    reply_run(&x.tf, REPLY_TO_NEXT);
    decide(&x);
    CHECK_EQ_INT(x.c.kind, AFD_CAUSE_CANCELLED_HANDOFF);
    CHECK_EQ_STR(x.c.resource, "Queue@p.py:41");
    CHECK_EQ_STR(x.c.await_site, "p.py:60");
    CHECK_EQ_STR(
        x.c.summary,
        "cancelled hand-off of a reply through Queue@p.py:41: get#0 asked for it and was cancelled by "
        "wait_for (t.py:28) at p.py:60 before it took it; answer#0 put it there and main#0 took it "
        "instead: the next taker got the reply meant for the cancelled task");
    CHECK_EQ_INT(x.c.n_ops, 4);
    check_op(&x.c.ops[0], AFD_CAUSE_ACCESS_HANDOFF, "get#0", "ask and wait for the reply (get())",
             "Queue@p.py:41", "p.py:60");
    check_op(&x.c.ops[3], AFD_CAUSE_ACCESS_HANDOFF, "main#0", "get()", "Queue@p.py:41", NULL);
    check_row(&x.ev, 0,
              "the put of the reply into Queue@p.py:41 comes from get#0's step that then waited for it",
              "put in answer#0 step 1, scheduled from get#0 step 0 through answer#0 step 0", "observed");
    fixture_finish(&x);
    /* the task that asked, cancelled, goes on and takes the old reply with its next get (wait_for as
     * asyncio.timeout runs it from 3.12: the coroutine in the caller's own task) */
    fixture_init(&x);
    reply_run(&x.tf, REPLY_TO_ITSELF);
    decide(&x);
    CHECK_EQ_INT(x.c.kind, AFD_CAUSE_CANCELLED_HANDOFF);
    CHECK_EQ_STR(x.c.await_site, "p.py:60");
    CHECK_EQ_STR(
        x.c.summary,
        "cancelled hand-off of a reply through Queue@p.py:41: main#0 asked for it and was cancelled by "
        "wait_for (t.py:28) at p.py:60 before it took it; answer#0 put it there and later main#0 took "
        "it instead: the next taker got the reply meant for the cancelled task");
    fixture_finish(&x);
    /* the put did not come from the cancelled task's step; the reply stayed in the queue; the same
     * in the passing run: none is a reply taken by the next taker */
    enum reply_shape misses[] = {REPLY_NOT_ASKED, REPLY_LEFT};
    for (size_t i = 0; i < 2; i++) {
        fixture_init(&x);
        reply_run(&x.tf, misses[i]);
        decide(&x);
        CHECK(x.c.kind != AFD_CAUSE_CANCELLED_HANDOFF);
        fixture_finish(&x);
    }
    fixture_init(&x);
    reply_run(&x.tf, REPLY_TO_NEXT);
    reply_run(&x.tp, REPLY_TO_NEXT);
    x.have_p = 1;
    decide(&x);
    CHECK(x.c.kind != AFD_CAUSE_CANCELLED_HANDOFF);
    fixture_finish(&x);
}

/* pool#0, in one step of _assign (called from request at p.py:76), closes a connection in close()
 * (a write of Conn#1.state at p.py:37), appends a new one to Pool#0._connections at p.py:62 and
 * completes request#2's future of Future@p.py:70 at p.py:63, then writes Pool#0.other at p.py:64;
 * a wait_for timeout cancels request#2, whose wake-up was already scheduled. */
static void handed_run(afd_trace *t)
{
    enum { POOL = 1, WAITER = 2, TIMER = 3 };
    uint32_t file = tb_str(t, "p.py"), label = tb_str(t, "Future@p.py:70"), s70 = tb_str(t, "p.py:70");
    uint32_t s40 = tb_str(t, "t.py:40");
    static const struct {
        uint32_t line;
        const char *chain, *resource;
    } lines[] = {{37, "p.py:73 request\np.py:37 close", "Conn#1.state"},
                 {62, "p.py:76 request\np.py:62 _assign", "Pool#0._connections"},
                 {63, "p.py:76 request\np.py:63 _assign", NULL},
                 {64, "p.py:76 request\np.py:64 _assign", "Pool#0.other"}};
    tb_task(t, POOL, 0, tb_str(t, "pool#0"));
    tb_task(t, WAITER, 0, tb_str(t, "request#2"));
    tb_ev(t, AFD_EV_TASK, 1, TIMER, 0, tb_str(t, "timeout-callback#0"));
    tb_wake(t, WAITER, 0, 1);
    tb_step(t, WAITER, 0, s70);
    tb_wake(t, POOL, 0, 2);
    for (size_t i = 0; i < 4; i++) {
        tb_evx(t, AFD_EV_LINE, 0, POOL, file, lines[i].line, 0, AFD_NOSTR, 0);
        tb_ev(t, AFD_EV_CHAIN, 0, POOL, tb_str(t, lines[i].chain), 2);
        if (lines[i].resource)
            tb_op(t, POOL, AFD_NOSTR, tb_str(t, lines[i].resource), 1);
        if (lines[i].line == 63)
            tb_evx(t, AFD_EV_HANDOFF, 0, POOL, WAITER, label, 0, 0, 0);
    }
    tb_step(t, POOL, 0, AFD_NOSTR);
    tb_wake(t, TIMER, 0, 3);
    tb_ev(t, AFD_EV_TIMEOUT, AFD_TIMEOUT_WAIT_FOR, WAITER, 1, s40);
    tb_ev(t, AFD_EV_CANCEL, AFD_CANCEL_TIMEOUT | AFD_CANCEL_WOKEN, TIMER, WAITER, AFD_NOSTR);
    tb_step(t, TIMER, 0, AFD_NOSTR);
    tb_wake(t, WAITER, 2, 4);
    tb_ev(t, AFD_EV_RESUME, AFD_RESUME_CANCELLED, WAITER, 2, label);
    tb_ev(t, AFD_EV_CANCEL_DELIVERED, 0, WAITER, 3, s70);
    tb_step(t, WAITER, 1, AFD_NOSTR);
}

/* The writes of handed_run as a scan of the source infers them from the traced lines: placed at
 * their lines, with the chains of those lines. */
static void infer_handed(afd_view *v, afd_trace *t)
{
    static const struct {
        const char *resource, *chain;
        uint32_t line;
    } w[] = {{"Conn#1.state", "p.py:73 request\np.py:37 close", 37},
             {"Pool#0._connections", "p.py:76 request\np.py:62 _assign", 62},
             {"Pool#0.other", "p.py:76 request\np.py:64 _assign", 64}};
    for (size_t k = 0; k < 3; k++)
        for (uint32_t i = 0; i < v->n_acc; i++)
            if (!strcmp(v->acc[i].resource, w[k].resource)) {
                v->acc[i].inferred = 1;
                v->acc[i].file = "p.py";
                v->acc[i].line = w[k].line;
                v->acc[i].chain = tb_str(t, w[k].chain);
            }
}

/* A plain future's lost result is named by the state the completing function wrote just before it
 * completed the future (in that function, at a line before the completion), when the source says:
 * not a write in another function (close) nor one after the completion. */
TEST(cancelled_handoff_names_the_state_the_handed_value_came_from)
{
    fixture x;
    fixture_init(&x);
    handed_run(&x.tf);
    tb_view(&x.f, &x.tf);
    infer_handed(&x.f, &x.tf);
    x.in.fail = &x.f;
    CHECK_EQ_INT(afd_cause_decide(&x.in, &x.c, &x.ev), 0);
    CHECK_EQ_INT(x.c.kind, AFD_CAUSE_CANCELLED_HANDOFF);
    CHECK_EQ_STR(x.c.resource, "Pool#0._connections");
    CHECK_EQ_STR(x.c.await_site, "p.py:70");
    CHECK_EQ_STR(
        x.c.summary,
        "cancelled hand-off of Pool#0._connections: request#2 was handed what pool#0 handed over "
        "through it (the result of Future@p.py:70, by set_result() at p.py:63) and cancelled by "
        "wait_for (t.py:40) before it resumed at p.py:70: what it was handed is lost (request#2 never "
        "passed it on)");
    check_row(
        &x.ev, 2,
        "what was handed came from Pool#0._connections: the completing function wrote it at p.py:62 just "
        "before it completed Future@p.py:70 at line 63",
        "in pool#0 step 0", "inferred");
    fixture_finish(&x);
    /* the writes not placed at lines (no source read): the future names it */
    fixture_init(&x);
    handed_run(&x.tf);
    decide(&x);
    CHECK_EQ_INT(x.c.kind, AFD_CAUSE_CANCELLED_HANDOFF);
    CHECK_EQ_STR(x.c.resource, "Future@p.py:70");
    fixture_finish(&x);
}

int main(void)
{
    RUN_TESTS("cause_cancel_shapes", T(cancelled_handoff_of_an_item_got_from_a_queue),
              T(lost_wakeup_when_a_cancelled_waiter_breaks_the_chain_of_wakeups),
              T(cancel_ordering_read_in_the_cancelling_step),
              T(cancel_swallowed_names_the_task_handle_and_the_catching_await),
              T(a_lost_item_got_where_a_step_resumed_is_placed_by_its_chain),
              T(cancelled_handoff_of_a_reply_taken_by_the_next_taker),
              T(cancelled_handoff_names_the_state_the_handed_value_came_from));
}
