/* test_trace_cancel.c -- the trace's cancellation and hand-off events (kinds CANCEL to RESUME):
 * their human lines, with each optional part present and absent, and the codec's refusal of
 * flags and strings the contract does not allow. */
#include "afd.h"
#include "buf.h"
#include "trace.h"
#include "harness.h"
#include "tracebuild.h"

#include <string.h>

enum { S_TEST, S_FINALIZE, S_SITE, S_OPNAME, S_RESOURCE, S__COUNT };

/* Two tasks and one event of each cancellation kind, every optional field set. */
static void sample(afd_trace *t)
{
    CHECK_EQ_INT(afd_trace_init(t), 0);
    t->mode = AFD_MODE_CONTROLLED;
    const char *strs[S__COUNT] = {"test_x#0", "finalize_report#0", "test_x.py:14", "finalize",
                                  "report.status"};
    for (uint32_t i = 0; i < S__COUNT; i++) {
        uint32_t id = 99;
        CHECK_EQ_INT(afd_trace_add_string(t, strs[i], strlen(strs[i]), &id), 0);
        CHECK_EQ_INT(id, i);
    }
    afd_event evs[] = {
        tb_event_timed(AFD_EV_TIMEOUT, AFD_TIMEOUT_WAIT_FOR, 2, 1, S_SITE, 8000000, 0, 30),
        tb_event_timed(AFD_EV_CANCEL, AFD_CANCEL_TIMEOUT | AFD_CANCEL_WOKEN, 1, 2, S_OPNAME, 8000000, 0, 31),
        tb_event_timed(AFD_EV_CANCEL_DELIVERED, 0, 2, 5, S_SITE, 8100000, 0, 32),
        tb_event_timed(AFD_EV_UNCANCEL, 0, 2, 2, S_SITE, 8100000, 0, 33),
        tb_event_timed(AFD_EV_CANCEL_CAUGHT, 2, 2, 5, S_SITE, 8100000, 0, 34),
        tb_event_timed(AFD_EV_HANDOFF, AFD_HANDOFF_EXCEPTION, 1, 2, S_RESOURCE, 8200000, 1, 35),
        tb_event_timed(AFD_EV_RESUME, AFD_RESUME_CANCELLED, 2, 7, S_RESOURCE, 8300000, 0, 36),
        tb_event_timed(AFD_EV_TASK, 0, 1, 0, S_TEST, 0, 0, 12),
        tb_event_timed(AFD_EV_TASK, 0, 2, 1, S_FINALIZE, 0, 0, 13),
    };
    CHECK_EQ_INT(afd_trace_add_events(t, evs, (uint32_t)(sizeof evs / sizeof evs[0])), 0);
}

static void check_line(const afd_trace *t, const afd_event *ev, const char *want)
{
    afd_buf b;
    afd_buf_init(&b);
    afd_trace_format_event(t, ev, &b);
    CHECK_EQ_INT(b.err, 0);
    CHECK_EQ_STR((const char *)b.data, want); /* the buffer keeps a NUL after its bytes */
    afd_buf_finish(&b);
}

/* Each cancellation and hand-off event, as its line reads with every optional part present, then
 * with each absent: a line never names a message, a place or a step the event does not carry. */
TEST(format_cancel_lines)
{
    afd_trace t;
    sample(&t);
    check_line(&t, &t.events[0],
               "wait_for timeout expired at t=8.000ms (deadline #1) armed at test_x.py:14: cancels task "
               "finalize_report#0");
    check_line(&t, &t.events[1],
               "cancel of task finalize_report#0 by test_x#0 at t=8.000ms, message \"finalize\" (a timeout "
               "expired) (its wake-up was already scheduled)");
    check_line(&t, &t.events[2],
               "CancelledError thrown into task finalize_report#0 at test_x.py:14 (cancelled "
               "in step 4)");
    check_line(
        &t, &t.events[3],
        "uncancel of task finalize_report#0 by finalize_report#0 at test_x.py:14 (0 cancel requests left)");
    check_line(&t, &t.events[4],
               "task finalize_report#0 caught CancelledError (cancelled in step 4) and "
               "suspended at test_x.py:14, calling uncancel()");
    check_line(&t, &t.events[5],
               "hand-off of report.status to task finalize_report#0 by test_x#0 (an exception)");
    check_line(&t, &t.events[6],
               "task finalize_report#0 resumed into CancelledError instead of the hand-off of "
               "report.status (handed in step 6)");

    afd_event ev = tb_event_timed(AFD_EV_CANCEL, AFD_CANCEL_DONE, 0, 2, AFD_NOSTR, 0, 0, 0);
    check_line(&t, &ev,
               "cancel of task finalize_report#0 by code outside any step at t=0.000ms (it had already "
               "finished)");
    ev = tb_event_timed(AFD_EV_CANCEL_DELIVERED, 0, 1, 0, AFD_NOSTR, 0, 0, 0);
    check_line(&t, &ev, "CancelledError thrown into task test_x#0 at an unknown await");
    ev = tb_event_timed(AFD_EV_CANCEL_CAUGHT, 1, 1, 0, AFD_NOSTR, 0, 0, 0);
    check_line(&t, &ev, "task test_x#0 caught CancelledError and returned");
    ev = tb_event_timed(AFD_EV_CANCEL_CAUGHT, 0, 1, 3, AFD_NOSTR, 0, 0, 0);
    check_line(&t, &ev,
               "task test_x#0 caught CancelledError (cancelled in step 2) and finished with another "
               "exception");
    ev = tb_event_timed(AFD_EV_UNCANCEL, 0, 0, 1, AFD_NOSTR, 0, 2, 0);
    check_line(&t, &ev, "uncancel of task test_x#0 by code outside any step (2 cancel requests left)");
    ev = tb_event_timed(AFD_EV_TIMEOUT, AFD_TIMEOUT_CONTEXT, 1, 0, AFD_NOSTR, 0, 0, 0);
    check_line(&t, &ev, "asyncio.timeout expired at t=0.000ms armed at ?: cancels task test_x#0");
    ev = tb_event_timed(AFD_EV_TIMEOUT, 0, 1, 3, S_SITE, 0, 0, 0);
    check_line(&t, &ev,
               "timeout expired at t=0.000ms (deadline #3) armed at test_x.py:14: cancels task test_x#0");
    ev = tb_event_timed(AFD_EV_HANDOFF, AFD_HANDOFF_CANCELLED, 0, 1, AFD_NOSTR, 0, 0, 0);
    check_line(&t, &ev,
               "hand-off of a future to task test_x#0 by code outside any step (the future was cancelled)");
    ev = tb_event_timed(AFD_EV_RESUME, 0, 1, 0, S_RESOURCE, 0, 0, 0);
    check_line(&t, &ev, "task test_x#0 resumed with the hand-off of report.status");
    afd_trace_finish(&t);
}

/* The codec refuses a cancellation or hand-off event whose flags hold bits the contract does not
 * define, or whose string is outside the table, as it does for every other kind. */
TEST(cancel_events_checked)
{
    static const struct {
        uint8_t kind, bad_flags;
    } cases[] = {
        {AFD_EV_CANCEL, 1u << 3}, {AFD_EV_CANCEL_DELIVERED, 1}, {AFD_EV_CANCEL_CAUGHT, 1u << 2},
        {AFD_EV_UNCANCEL, 1},     {AFD_EV_TIMEOUT, 1u << 2},    {AFD_EV_HANDOFF, 1u << 3},
        {AFD_EV_RESUME, 1u << 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        afd_trace t;
        sample(&t);
        afd_event ok = tb_event_timed(cases[i].kind, 0, 1, 2, S_SITE, 0, 0, 0);
        CHECK_EQ_INT(afd_trace_add_events(&t, &ok, 1), 0);
        afd_buf b;
        afd_buf_init(&b);
        CHECK_EQ_INT(afd_trace_encode(&t, &b), 0);
        afd_trace d;
        CHECK_EQ_INT(afd_trace_decode(&d, b.data, b.len), 0);
        CHECK_EQ_INT(d.events[d.n_events - 1].kind, cases[i].kind);
        afd_trace_finish(&d);
        afd_buf_finish(&b);

        t.events[t.n_events - 1].flags = cases[i].bad_flags;
        afd_buf_init(&b);
        CHECK_EQ_INT(afd_trace_encode(&t, &b), AFD_EINVAL);
        afd_buf_finish(&b);
        t.events[t.n_events - 1].flags = 0;
        t.events[t.n_events - 1].b = S__COUNT; /* one past the table */
        afd_buf_init(&b);
        CHECK_EQ_INT(afd_trace_encode(&t, &b), AFD_EINVAL);
        afd_buf_finish(&b);
        afd_trace_finish(&t);
    }
}

int main(void)
{
    RUN_TESTS("trace_cancel", T(format_cancel_lines), T(cancel_events_checked));
}
