/* trace_format.c -- the human form of one trace event: what explain, replay --events and the
 * reports print around a divergence. Split from trace.c (the record, its codec and its digest).
 *
 * Every line is exact and identical on every platform: times are printed from integers, tasks by
 * their label or, when the trace never named them, by their id. */
#include "trace.h"
#include "afd.h"
#include "buf.h"

#include <inttypes.h>
#include <stdbool.h>
#include <string.h>

/* Milliseconds with three decimals, rounded to the nearest microsecond in integers so the text is
 * exact and identical on every platform. */
static void put_ms(afd_buf *out, uint64_t ns)
{
    uint64_t us = ns / 1000 + (ns % 1000 >= 500);
    afd_buf_printf(out, "%" PRIu64 ".%03" PRIu64 "ms", us / 1000, us % 1000);
}

/* A task by its label, or by its id when the trace never named it. */
static void put_task(afd_buf *out, const afd_trace *self, uint32_t task)
{
    const char *label = afd_trace_task_known(self, task);
    if (!label)
        afd_buf_printf(out, "task-%" PRIu32, task);
    else
        afd_buf_printf(out, "%s", label);
}

static const char *uncontrolled_source(uint32_t bit)
{
    switch (bit) {
    case AFD_TRACE_THREADS:
        return "a thread called back into the loop";
    case AFD_TRACE_REAL_IO:
        return "a real file descriptor became ready";
    case AFD_TRACE_WALL_CLOCK:
        return "the program read the wall clock";
    case AFD_TRACE_NO_LOOP:
        return "no event loop ran";
    case AFD_TRACE_REAL_WAIT:
        return "the loop blocked on real time";
    case AFD_TRACE_FOREIGN_LOOP:
        return "an event loop affidavit does not control ran";
    case AFD_TRACE_SHARED:
        return "the run touched what another copy of the test would share";
    case AFD_TRACE_UNWOKEN:
        return "a thread queued a callback with call_soon, not call_soon_threadsafe, while the loop waited";
    default:
        return NULL;
    }
}

const char *afd_sync_kind_name(int kind)
{
    static const char *const names[AFD_SYNC__COUNT] = {
        "create", "acquire", "release", "set",     "clear",       "observe set",
        "put",    "get",     "acquire", "release", "check unset", "check size",
    };
    return kind >= 0 && kind < AFD_SYNC__COUNT ? names[kind] : "?";
}

/* The place or label a cancellation event names in b, or `fallback` when it has none. */
static const char *known_or(const afd_trace *self, uint32_t id, const char *fallback)
{
    const char *s = afd_trace_known(self, id);
    return s ? s : fallback;
}

/* An await chain: one frame per line in its string, written on one line here, outermost first. */
static void format_chain_event(const afd_trace *self, const afd_event *ev, afd_buf *out)
{
    afd_buf_printf(out, "await chain of task ");
    put_task(out, self, ev->task);
    afd_buf_printf(out, " (%" PRIu32 " frames): ", ev->b);
    const char *c = afd_trace_string(self, ev->a);
    for (const char *nl; (nl = strchr(c, '\n')); c = nl + 1)
        afd_buf_printf(out, "%.*s -> ", (int)(nl - c), c);
    afd_buf_printf(out, "%s", c);
}

/* " by <the step's task>" of an event a task's step made (CANCEL, UNCANCEL, HANDOFF). */
static void put_caller(const afd_trace *self, const afd_event *ev, afd_buf *out)
{
    afd_buf_printf(out, " by ");
    if (ev->task)
        put_task(out, self, ev->task);
    else
        afd_buf_printf(out, "code outside any step");
}

/* The lines of the cancellation and hand-off events (kinds CANCEL to RESUME). A step is named by
 * its index, as WAKE events number them (a field holding 1 + that index, 0 for none). */
static void format_cancel_event(const afd_trace *self, const afd_event *ev, afd_buf *out)
{
    switch (ev->kind) {
    case AFD_EV_CANCEL:
        afd_buf_printf(out, "cancel of task ");
        put_task(out, self, ev->a);
        put_caller(self, ev, out);
        afd_buf_printf(out, " at t=");
        put_ms(out, ev->vtime);
        if (afd_trace_known(self, ev->b))
            afd_buf_printf(out, ", message \"%s\"", afd_trace_string(self, ev->b));
        if (ev->flags & AFD_CANCEL_TIMEOUT)
            afd_buf_printf(out, " (a timeout expired)");
        if (ev->flags & AFD_CANCEL_WOKEN)
            afd_buf_printf(out, " (its wake-up was already scheduled)");
        if (ev->flags & AFD_CANCEL_DONE)
            afd_buf_printf(out, " (it had already finished)");
        break;
    case AFD_EV_CANCEL_DELIVERED:
        afd_buf_printf(out, "CancelledError thrown into task ");
        put_task(out, self, ev->task);
        afd_buf_printf(out, " at %s", known_or(self, ev->b, "an unknown await"));
        if (ev->a)
            afd_buf_printf(out, " (cancelled in step %" PRIu32 ")", ev->a - 1);
        break;
    case AFD_EV_CANCEL_CAUGHT:
        afd_buf_printf(out, "task ");
        put_task(out, self, ev->task);
        afd_buf_printf(out, " caught CancelledError");
        if (ev->a)
            afd_buf_printf(out, " (cancelled in step %" PRIu32 ")", ev->a - 1);
        if (ev->flags & 1)
            afd_buf_printf(out, " and returned");
        else if (afd_trace_known(self, ev->b))
            afd_buf_printf(out, " and suspended at %s", afd_trace_string(self, ev->b));
        else
            afd_buf_printf(out, " and finished with another exception");
        if (ev->flags & 2)
            afd_buf_printf(out, ", calling uncancel()");
        break;
    case AFD_EV_UNCANCEL:
        afd_buf_printf(out, "uncancel of task ");
        put_task(out, self, ev->a);
        put_caller(self, ev, out);
        if (afd_trace_known(self, ev->b))
            afd_buf_printf(out, " at %s", afd_trace_string(self, ev->b));
        afd_buf_printf(out, " (%" PRIu64 " cancel requests left)", ev->cost);
        break;
    case AFD_EV_TIMEOUT:
        afd_buf_printf(out, "%s expired at t=",
                       (ev->flags & AFD_TIMEOUT_WAIT_FOR)  ? "wait_for timeout"
                       : (ev->flags & AFD_TIMEOUT_CONTEXT) ? "asyncio.timeout"
                                                           : "timeout");
        put_ms(out, ev->vtime);
        if (ev->a)
            afd_buf_printf(out, " (deadline #%" PRIu32 ")", ev->a);
        afd_buf_printf(out, " armed at %s: cancels task ", known_or(self, ev->b, "?"));
        put_task(out, self, ev->task);
        break;
    case AFD_EV_HANDOFF:
        afd_buf_printf(out, "hand-off of %s to task ", known_or(self, ev->b, "a future"));
        put_task(out, self, ev->a);
        put_caller(self, ev, out);
        if (ev->flags & AFD_HANDOFF_CANCELLED)
            afd_buf_printf(out, " (the future was cancelled)");
        else if (ev->flags & AFD_HANDOFF_EXCEPTION)
            afd_buf_printf(out, " (an exception)");
        break;
    default: /* AFD_EV_RESUME */
        afd_buf_printf(out, "task ");
        put_task(out, self, ev->task);
        if (ev->flags & AFD_RESUME_CANCELLED)
            afd_buf_printf(out, " resumed into CancelledError instead of the hand-off of %s",
                           known_or(self, ev->b, "a future"));
        else
            afd_buf_printf(out, " resumed with the hand-off of %s", known_or(self, ev->b, "a future"));
        if (ev->a)
            afd_buf_printf(out, " (handed in step %" PRIu32 ")", ev->a - 1);
        break;
    }
}

/* A deadline armed or outlasted, and a delayed step's measured slot: the time model's events. */
static void format_time_event(const afd_trace *self, const afd_event *ev, afd_buf *out)
{
    if (ev->kind == AFD_EV_SLOT) {
        afd_buf_printf(out, "slot of step %" PRIu32 " (task ", ev->b - 1);
        put_task(out, self, ev->task);
        afd_buf_printf(out, " #%" PRIu32 "): cost %" PRIu64 " ns, ", ev->a, ev->vtime);
        if (ev->cost == UINT64_MAX)
            afd_buf_printf(out, "no larger cost flips a comparison");
        else
            afd_buf_printf(out, "%" PRIu64 " ns more flips a comparison", ev->cost);
        afd_buf_printf(out, ", %" PRIu64 " clock reads", ev->wall);
        return;
    }
    if (ev->kind == AFD_EV_DEADLINE_LATE && (ev->flags & AFD_LATE_FIRED)) {
        if (ev->a)
            afd_buf_printf(out, "%sdeadline #%" PRIu32 " fired (",
                           ev->flags & AFD_LATE_BROUGHT_DUE ? "stalls brought it due: " : "", ev->a);
        else
            afd_buf_printf(out, "%sa sleep's wake-up fired (",
                           ev->flags & AFD_LATE_BROUGHT_DUE ? "stalls brought it due: " : "");
        put_ms(out, ev->cost);
        afd_buf_printf(out, ", armed at %s)", ev->b == AFD_NOSTR ? "?" : afd_trace_string(self, ev->b));
        return;
    }
    if (ev->kind == AFD_EV_DEADLINE)
        afd_buf_printf(out, "deadline #%" PRIu32 " of ", ev->a);
    else if (ev->task == 0)
        afd_buf_printf(out, "%s",
                       ev->flags & AFD_LATE_REAL_WAIT ? "a real wait, after a stall," : "a late wake-up");
    else
        afd_buf_printf(out, "task ");
    if (ev->kind == AFD_EV_DEADLINE) {
        put_ms(out, ev->cost);
        afd_buf_printf(out, " armed at %s by task ",
                       ev->b == AFD_NOSTR ? "?" : afd_trace_string(self, ev->b));
        put_task(out, self, ev->task);
    } else {
        if (ev->task)
            put_task(out, self, ev->task);
        if (ev->a)
            afd_buf_printf(out, " outlasted deadline #%" PRIu32 " (", ev->a);
        else
            afd_buf_printf(out, " outlasted a sleep's wake-up (");
        put_ms(out, ev->cost);
        afd_buf_printf(out, ", armed at %s)", ev->b == AFD_NOSTR ? "?" : afd_trace_string(self, ev->b));
    }
}

/* The header asks for "one line"; it is read as one line without a trailing newline, so callers
 * can put the text inside a larger line or a table cell. */
void afd_trace_format_event(const afd_trace *self, const afd_event *ev, afd_buf *out)
{
    size_t start = out->len;
    switch (ev->kind) {
    case AFD_EV_TASK:
        afd_buf_printf(out, "task ");
        put_task(out, self, ev->task);
        afd_buf_printf(out, " created");
        if (ev->a != 0) {
            afd_buf_printf(out, " by ");
            put_task(out, self, ev->a);
        }
        break;
    case AFD_EV_STEP:
        afd_buf_printf(out, "step ");
        put_task(out, self, ev->task);
        afd_buf_printf(out, " #%" PRIu32 " at t=", ev->a);
        put_ms(out, ev->vtime);
        afd_buf_printf(out, " cost ");
        put_ms(out, ev->cost);
        if (afd_trace_known(self, ev->b))
            afd_buf_printf(out, " (suspended at %s)", afd_trace_string(self, ev->b));
        break;
    case AFD_EV_IDLE:
        afd_buf_printf(out, "idle: clock jumps ");
        put_ms(out, ev->cost);
        afd_buf_printf(out, " to t=");
        put_ms(out, ev->cost > UINT64_MAX - ev->vtime ? UINT64_MAX : ev->vtime + ev->cost);
        if (ev->a != 0) {
            afd_buf_printf(out, " (");
            put_ms(out, ev->a);
            afd_buf_printf(out, " late)");
        }
        break;
    case AFD_EV_OP_BEGIN:
    case AFD_EV_OP_END:
        afd_buf_printf(out, "%s %s by task ", (ev->flags & 1) ? "write" : "read",
                       afd_trace_known(self, ev->b) ? afd_trace_string(self, ev->b) : "unnamed state");
        put_task(out, self, ev->task);
        if (ev->kind == AFD_EV_OP_END)
            afd_buf_printf(out, " %s", (ev->flags & 2) ? "raised" : "ended");
        if (ev->a != AFD_NOSTR)
            afd_buf_printf(out, " (operation %s)", afd_trace_string(self, ev->a));
        break;
    case AFD_EV_ASSERT_BEGIN:
    case AFD_EV_ASSERT_END:
        if (afd_trace_known(self, ev->b))
            afd_buf_printf(out, "assertion on %s by task ", afd_trace_string(self, ev->b));
        else
            afd_buf_printf(out, "assertion by task ");
        put_task(out, self, ev->task);
        if (ev->kind == AFD_EV_ASSERT_END)
            afd_buf_printf(out, " %s", (ev->flags & 1) ? "passed" : "raised");
        break;
    case AFD_EV_UNCONTROLLED: {
        const char *what = uncontrolled_source(ev->a);
        afd_buf_printf(out, "uncontrolled at t=");
        put_ms(out, ev->vtime);
        if (what)
            afd_buf_printf(out, ": %s", what);
        else
            afd_buf_printf(out, ": source 0x%" PRIx32, ev->a);
        if (ev->a == AFD_TRACE_SHARED && ev->b != AFD_NOSTR && ev->b < self->n_strings)
            afd_buf_printf(out, " (%s)", afd_trace_string(self, ev->b));
        break;
    }
    case AFD_EV_LOOP:
        afd_buf_printf(out, "event loop %" PRIu32 " started", ev->a);
        break;
    case AFD_EV_WAKE:
        afd_buf_printf(out, "step %" PRIu32 " of task ", ev->b ? ev->b - 1 : 0);
        put_task(out, self, ev->task);
        if (ev->a)
            afd_buf_printf(out, " scheduled by step %" PRIu32, ev->a - 1);
        if (ev->flags & 1)
            afd_buf_printf(out, " (timer)");
        break;
    case AFD_EV_SYNC:
        afd_buf_printf(out, "%s %s by task ", afd_sync_kind_name(ev->flags),
                       afd_trace_known(self, ev->b) ? afd_trace_string(self, ev->b) : "an unnamed primitive");
        put_task(out, self, ev->task);
        break;
    case AFD_EV_BLOCK:
        afd_buf_printf(out, "blocking time.sleep(");
        put_ms(out, ev->cost);
        afd_buf_printf(out, ") in task ");
        put_task(out, self, ev->task);
        if (afd_trace_known(self, ev->b))
            afd_buf_printf(out, " at %s", afd_trace_string(self, ev->b));
        break;
    case AFD_EV_LINE:
        afd_buf_printf(out, "line %s:%" PRIu32 " in task ", afd_trace_string(self, ev->a), ev->b);
        put_task(out, self, ev->task);
        if (ev->cost != AFD_NOSTR)
            afd_buf_printf(out, " (self: %s)", afd_trace_string(self, (uint32_t)ev->cost));
        break;
    case AFD_EV_LOCAL:
        if (ev->cost != AFD_NOSTR)
            afd_buf_printf(out, "local %s at line %" PRIu32 " holds %s", afd_trace_string(self, ev->a), ev->b,
                           afd_trace_string(self, (uint32_t)ev->cost));
        else
            afd_buf_printf(out, "local %s at line %" PRIu32 " holds an unnamed object",
                           afd_trace_string(self, ev->a), ev->b);
        break;
    case AFD_EV_DEADLINE:
    case AFD_EV_DEADLINE_LATE:
    case AFD_EV_SLOT:
        format_time_event(self, ev, out);
        break;
    case AFD_EV_CHAIN:
        format_chain_event(self, ev, out);
        break;
    case AFD_EV_WAITFOR:
        afd_buf_printf(out, "deadlock: task ");
        put_task(out, self, ev->task);
        afd_buf_printf(out, " waits for %s", ev->a ? "object" : "task");
        if (ev->a)
            afd_buf_printf(out, " #%" PRIu32, ev->a);
        if (ev->b) {
            afd_buf_printf(out, " held by task ");
            put_task(out, self, ev->b);
        }
        break;
    case AFD_EV_CANCEL:
    case AFD_EV_CANCEL_DELIVERED:
    case AFD_EV_CANCEL_CAUGHT:
    case AFD_EV_UNCANCEL:
    case AFD_EV_TIMEOUT:
    case AFD_EV_HANDOFF:
    case AFD_EV_RESUME:
        format_cancel_event(self, ev, out);
        break;
    default:
        afd_buf_printf(out, "event of unknown kind %u", (unsigned)ev->kind);
        break;
    }
    /* The strings come from the traced program (labels, file names, attribute names) and may
     * hold any byte but NUL: control characters would break the line, or drive the terminal. */
    for (size_t i = start; !out->err && i < out->len; i++)
        if (out->data[i] < 0x20 || out->data[i] == 0x7f)
            out->data[i] = '?';
}
