/* timing_clock.c -- a failure that is the time slow steps take, not the order they cause.
 *
 * A race needs two orders of events. On the controlled loop a schedule's delay changes the order
 * only through the timers it brings due: the ready queue is FIFO whatever the delays. So cut every
 * delay of a failing schedule to the least that brings due the same timers
 * (AFD_SCHED_LEAST_STALL): the run takes the same order with less time between its steps. If that
 * run passes, and it did what the failing run did, event for event, up to a step that then took
 * another path, then nothing decided the failure but how much time had passed when that step ran:
 * a clock reading compared with a time of the test's own (elapsed < 3 s, an entry's age against a
 * TTL). A slow machine crosses it; no order of events does. The deadline check (timing.c) covers
 * the thresholds a timer guards; this one those only a clock read sees.
 *
 * Measured, as every verdict: one more run of the failing token and AFD_TIMING_CHECK_RUNS runs of
 * the cut one, one at a time, every one of which passed. Runs that waited on threads, sockets or
 * real time are not judged: what differs there may be the world's. Workload: once per failure
 * found; a few runs and one pass over two traces. */
#include "timing.h"
#include "afd.h"
#include "token.h"

#include <stdlib.h>
#include <string.h>

/* Events that say what the run did, not when: not the measurements, idle jumps, lateness or
 * crossings (how much time passed is what the two runs differ in by construction). */
static int compared(const afd_event *e)
{
    return e->kind != AFD_EV_SLOT && e->kind != AFD_EV_DEADLINE_LATE && e->kind != AFD_EV_IDLE &&
           e->kind != AFD_EV_UNCONTROLLED;
}

/* Two values of one field: equal, or string ids of equal strings (the two string tables can
 * differ in order where a measurement interned a site in one run only). */
static int same_value(const afd_trace *f, uint32_t x, const afd_trace *r, uint32_t y)
{
    if (x == y)
        return 1;
    return x < f->n_strings && y < r->n_strings && !strcmp(f->strings[x], r->strings[y]);
}

/* A WAKE's fields are indices (no strings): compared as they are, so that a different step never
 * passes for the same one. */
static int same_event(const afd_trace *f, const afd_event *a, const afd_trace *r, const afd_event *b)
{
    if (a->kind != b->kind || a->flags != b->flags || a->task != b->task)
        return 0;
    if (a->kind == AFD_EV_WAKE)
        return a->a == b->a && a->b == b->b;
    return same_value(f, a->a, r, b->a) && same_value(f, a->b, r, b->b);
}

static const afd_event *next_compared(const afd_trace *tr, uint32_t *i)
{
    while (*i < tr->n_events && !compared(&tr->events[*i]))
        (*i)++;
    return *i < tr->n_events ? &tr->events[*i] : NULL;
}

int afd_timing_same_order(const afd_trace *failing, const afd_trace *passing)
{
    for (uint32_t i = 0, j = 0;; i++, j++) {
        const afd_event *a = next_compared(failing, &i), *b = next_compared(passing, &j);
        if (a && b && same_event(failing, a, passing, b))
            continue;
        /* the first difference: a step begun in one run and not the other is another order; any
         * other is what one step did after the same history (or the end of one run's record) */
        if ((a && a->kind == AFD_EV_WAKE) || (b && b->kind == AFD_EV_WAKE))
            return 0;
        if (failing->dropped || passing->dropped)
            return 0; /* a record cut short proves nothing about what followed */
        return 1;
    }
}

typedef struct clock_ctx {
    const char *failing, *cut; /* Borrowed tokens. */
    afd_trace traces[2];       /* run 0 (the failing token) and run 1 (the first cut run) */
    int have[2];
    uint64_t failed0, passed;
} clock_ctx;

static int make_run(void *vctx, uint64_t i, uint8_t *mode, char **token)
{
    clock_ctx *c = vctx;
    *mode = AFD_MODE_CONTROLLED;
    *token = strdup(i == 0 ? c->failing : c->cut);
    return *token ? 0 : AFD_ENOMEM;
}

static int take_run(void *vctx, uint64_t i, afd_run_result *res, afd_trace *tr)
{
    clock_ctx *c = vctx;
    if (i == 0)
        c->failed0 = afd_runs_is_failure(res->outcome);
    else if (res->outcome == AFD_OUT_PASS)
        c->passed++;
    if (i < 2 && tr && !c->have[i]) {
        c->traces[i] = *tr; /* taken over: the batch finishes what is left, nothing */
        memset(tr, 0, sizeof *tr);
        c->have[i] = 1;
    }
    return 0;
}

int afd_timing_clock_check(afd_timing *self, afd_pool *pool, const char *token, afd_progress *prog)
{
    afd_schedule s;
    int rc = afd_token_decode(&s, token);
    if (rc < 0)
        return rc;
    s.flags |= AFD_SCHED_LEAST_STALL;
    char *cut = NULL;
    rc = afd_token_encode(&s, &cut);
    afd_schedule_finish(&s);
    if (rc < 0)
        return rc;
    clock_ctx c = {.failing = token, .cut = cut};
    tally t = {0};
    rc = afd_runs_batch_alone(pool, 0, 1 + AFD_TIMING_CHECK_RUNS, 0, make_run, take_run, &c, prog, &t);
    int judged = rc == 0 && t.runs == 1 + AFD_TIMING_CHECK_RUNS && c.failed0 &&
                 c.passed == AFD_TIMING_CHECK_RUNS && c.have[0] && c.have[1] &&
                 !((c.traces[0].flags | c.traces[1].flags | t.flags_union) & AFD_TRACE_UNCONTROLLED);
    if (judged && afd_timing_same_order(&c.traces[0], &c.traces[1])) {
        self->sensitive = self->clock = 1;
        self->check_runs = AFD_TIMING_CHECK_RUNS;
        self->check_passed = c.passed;
    }
    for (int i = 0; i < 2; i++)
        if (c.have[i])
            afd_trace_finish(&c.traces[i]);
    afd_tally_finish(&t);
    free(cut);
    return rc;
}
