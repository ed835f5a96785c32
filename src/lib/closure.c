/* closure.c -- the zero run's windows of measured steps, checked one by one (closure.h). */
#include "closure.h"

#include "sysenum.h"

#include <string.h>

void afd_closure_init(afd_closure *self)
{
    memset(self, 0, sizeof *self);
}

uint64_t afd_closure_windows(const afd_closure *self)
{
    if (!self->runs)
        return 0;
    return self->steps ? (self->steps + AFD_SYS_WINDOW - 1) / AFD_SYS_WINDOW : 1;
}

/* What the run as a whole rules out, before its slots are looked at. */
static int whole_run(const afd_closure *self, const afd_trace *tr)
{
    if (!tr || (tr->flags & (AFD_TRACE_TRUNCATED | AFD_TRACE_STEP_LIMIT | AFD_TRACE_NO_LOOP)) || tr->dropped)
        return AFD_CLOSURE_UNMEASURED;
    if (tr->flags & AFD_TRACE_UNCONTROLLED)
        return AFD_CLOSURE_UNCONTROLLED;
    if (tr->flags & AFD_TRACE_RANDOM)
        return AFD_CLOSURE_RANDOM;
    if (self->runs && (tr->steps != self->steps || afd_trace_order_digest(tr) != self->order))
        return AFD_CLOSURE_DIFFERS;
    return AFD_CLOSURE_PENDING;
}

static int went_idle(const afd_trace *tr)
{
    for (uint32_t j = 0; j < tr->n_events; j++)
        if (tr->events[j].kind == AFD_EV_IDLE)
            return 1;
    return 0;
}

/* The window [lo, end) of tr's SLOT events: each step once, none open (a step that moves only
 * deadlines counted in *deadlines). */
static int window(const afd_trace *tr, uint64_t lo, uint64_t end, uint64_t *deadlines)
{
    uint64_t crossing = 0;
    uint64_t seen = 0, next = lo;
    int why = AFD_CLOSURE_PENDING;
    for (uint32_t j = 0; j < tr->n_events; j++) {
        const afd_event *ev = &tr->events[j];
        if (ev->kind != AFD_EV_SLOT || ev->b == 0)
            continue;
        uint64_t index = (uint64_t)ev->b - 1;
        if (index < lo || index >= end)
            continue;
        if (index != next) /* recorded in step order, one per step that ran */
            return AFD_CLOSURE_UNMEASURED;
        next++;
        seen++;
        if (ev->cost != UINT64_MAX && (ev->flags & AFD_SLOT_CROSSING))
            crossing++;
        else if (why == AFD_CLOSURE_PENDING && ev->cost != UINT64_MAX)
            why = AFD_CLOSURE_SLOT;
        if (why == AFD_CLOSURE_PENDING && ev->wall > 0)
            why = AFD_CLOSURE_CLOCK_READ;
    }
    if (seen != end - lo)
        return AFD_CLOSURE_UNMEASURED;
    if (why == AFD_CLOSURE_PENDING)
        *deadlines += crossing;
    return why;
}

int afd_closure_take(afd_closure *self, const afd_trace *tr, uint64_t lo)
{
    if (self->state != AFD_CLOSURE_PENDING)
        return self->state;
    int why = whole_run(self, tr);
    if (why == AFD_CLOSURE_PENDING && (self->runs ? lo == 0 : lo != 0))
        why = AFD_CLOSURE_UNMEASURED; /* the first window first, and once */
    if (!self->runs && tr)
        self->steps = tr->steps;
    if (why == AFD_CLOSURE_PENDING) {
        if (!self->runs)
            self->order = afd_trace_order_digest(tr);
        if (lo % AFD_SYS_WINDOW || (lo && lo >= self->steps)) {
            why = AFD_CLOSURE_UNMEASURED;
        } else {
            uint64_t end = self->steps - lo > AFD_SYS_WINDOW ? lo + AFD_SYS_WINDOW : self->steps;
            why = window(tr, lo, end, &self->deadlines);
            if (why == AFD_CLOSURE_PENDING && went_idle(tr))
                why = AFD_CLOSURE_IDLE;
            if (why == AFD_CLOSURE_PENDING) {
                self->measured += end - lo;
                if (self->measured == self->steps)
                    why = self->deadlines ? AFD_CLOSURE_DEADLINES : AFD_CLOSURE_CLOSED;
            }
        }
    }
    self->runs++;
    self->state = why;
    return why;
}

static const char *const names[AFD_CLOSURE__COUNT] = {
    [AFD_CLOSURE_PENDING] = "pending",
    [AFD_CLOSURE_CLOSED] = "closed",
    [AFD_CLOSURE_DEADLINES] = "closed_below_deadlines",
    [AFD_CLOSURE_SLOT] = "slot",
    [AFD_CLOSURE_CLOCK_READ] = "clock_read",
    [AFD_CLOSURE_RANDOM] = "random",
    [AFD_CLOSURE_UNCONTROLLED] = "uncontrolled",
    [AFD_CLOSURE_IDLE] = "idle",
    [AFD_CLOSURE_UNMEASURED] = "unmeasured",
    [AFD_CLOSURE_DIFFERS] = "differs",
};

static const char *const words[AFD_CLOSURE__COUNT] = {
    [AFD_CLOSURE_PENDING] = "not measured to the end",
    [AFD_CLOSURE_CLOSED] = "no step's delay flips a time comparison, no loop.time() read follows one, "
                           "nothing drawn from `random`",
    [AFD_CLOSURE_DEADLINES] = "no step's delay flips a time comparison but a deadline the test armed (a "
                              "timeout, a TTL) expiring, no loop.time() read follows one, nothing drawn "
                              "from `random`",
    [AFD_CLOSURE_SLOT] = "a step's delay flips a time comparison",
    [AFD_CLOSURE_CLOCK_READ] = "the test reads loop.time() after a step whose delay moves it",
    [AFD_CLOSURE_RANDOM] = "the test draws from `random`, which each schedule seeds",
    [AFD_CLOSURE_UNCONTROLLED] = "threads, real I/O or real waits call into the loop",
    [AFD_CLOSURE_IDLE] = "the loop waits for a timer, and a schedule sets how late it wakes",
    [AFD_CLOSURE_UNMEASURED] = "a step went unmeasured",
    [AFD_CLOSURE_DIFFERS] = "the zero schedule ran two different interleavings",
};

const char *afd_closure_name(int state)
{
    return state >= 0 && state < AFD_CLOSURE__COUNT ? names[state] : "unknown";
}

const char *afd_closure_words(int state)
{
    return state >= 0 && state < AFD_CLOSURE__COUNT ? words[state] : "unknown";
}
