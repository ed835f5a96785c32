/* timing_clock.c -- a failure that is the time slow steps take, not the order they cause.
 *
 * A race needs two orders of events. Scale every delay of a failing schedule by a factor from 0
 * (no delay: the run passes) to 1 (the failing run) and bisect the factor to where the outcome
 * flips (AFD_SCHED_SCALED). Where a timer's order decides the failure, the two runs either side of
 * the flip part between steps: one began a step the other did not yet. Where they did the same
 * things in the same order up to the inside of one step, which then went another way, nothing
 * decided the failure but how much time had passed when that step ran: a clock reading compared
 * with a time of the test's own (elapsed < 3 s, an entry's age against a TTL). A slow machine
 * crosses it; no order of events does. The verdict is claimed only when the failing run fails as
 * the run beside the flip with more time does: the same assertion at the same place. The deadline check
 * (timing.c) covers the thresholds a timer guards; this one those only a clock read sees, and one
 * more a timer decides: where the two runs part at a timer, and a timeout of the program's (a
 * wait_for, a timeout scope: a deadline, deadlines.c) that the passing run saw run out never does in
 * the failing run as found -- the steps before its arming took longer, so what it guards finished
 * within it: a limit of the test's own measured the time. Two plain sleeps that change places stay
 * an order (a write that lands before a read, however long either waited), and so does a timeout
 * that runs out in both (a hand-off and a cancel in one iteration, bpo-27585).
 *
 * Measured, as every verdict: the failing token, the runs of the bisection and the passing side
 * AFD_TIMING_CHECK_RUNS times, one run at a time. Runs a thread or a foreign loop had a say in are
 * not judged. Runs that used real descriptors are, but where the loop also waited in real time
 * (a handshake, an ACK, a child's output on its way: AFD_TRACE_REAL_WAIT) what arrives when is the
 * world's, and a next step the ready queue brought may be an arrival's: there a parting counts
 * inside a step, at a timer (as above), or at the next steps the last step both began alike
 * scheduled. Workload: once per failure no deadline explains; about 30 runs and two passes over
 * traces. */
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

/* Whether the next step tr begins at or after event i was scheduled by a step (the ready queue's
 * FIFO), not brought by a timer or a wake of the loop's self-pipe: 1 too when no step follows. */
static int next_step_scheduled(const afd_trace *tr, uint32_t i)
{
    for (; i < tr->n_events; i++)
        if (tr->events[i].kind == AFD_EV_WAKE)
            return !(tr->events[i].flags & (AFD_WAKE_TIMER | AFD_WAKE_SELF_PIPE));
    return 1;
}

/* The step that scheduled the next step tr begins at or after event i (its WAKE's origin), or
 * UINT32_MAX when a timer or the self-pipe brought it, or no step follows. */
static uint32_t next_step_origin(const afd_trace *tr, uint32_t i)
{
    for (; i < tr->n_events; i++)
        if (tr->events[i].kind == AFD_EV_WAKE)
            return tr->events[i].flags & (AFD_WAKE_TIMER | AFD_WAKE_SELF_PIPE) ? UINT32_MAX : tr->events[i].a;
    return UINT32_MAX;
}

/* Whether a deadline (a timeout of the program's, not a sleep) fired at site in tr. */
static int deadline_fired_at(const afd_trace *tr, const char *site)
{
    for (uint32_t i = 0; i < tr->n_events; i++) {
        const afd_event *e = &tr->events[i];
        if (e->kind == AFD_EV_DEADLINE_LATE && (e->flags & AFD_LATE_FIRED) && e->a != 0 &&
            afd_trace_known(tr, e->b) && !strcmp(afd_trace_string(tr, e->b), site))
            return 1;
    }
    return 0;
}

/* A deadline that fired in `passing` and never in `found` (the failing run as found): the test
 * counted on that timeout running out, and with the found run's stalls what it guards finished
 * first. Its site, or NULL. */
static const char *timeout_missed(const afd_trace *passing, const afd_trace *found)
{
    for (uint32_t i = 0; i < passing->n_events; i++) {
        const afd_event *e = &passing->events[i];
        if (e->kind == AFD_EV_DEADLINE_LATE && (e->flags & AFD_LATE_FIRED) && e->a != 0 &&
            afd_trace_known(passing, e->b) && !deadline_fired_at(found, afd_trace_string(passing, e->b)))
            return afd_trace_string(passing, e->b);
    }
    return NULL;
}

/* Whether two runs did the same things in the same order up to where one step did otherwise: the
 * first difference between their events, times aside, is inside a step both began alike, or is
 * which step begins next where neither next step was brought by a timer (the ready queue's order
 * is what the same steps scheduled), or where a timer brought it while a timeout the passing run
 * saw run out never did in the run as found (*deadline: its site). Traces cut short (dropped
 * events) answer 0. */
static int same_order(const afd_trace *failing, const afd_trace *passing, const afd_trace *found,
                      const char **deadline)
{
    int world = ((failing->flags | passing->flags) & AFD_TRACE_REAL_WAIT) != 0;
    int in_step = 0;        /* between a WAKE both runs began alike and its STEP */
    uint32_t last_step = 0; /* the number of the last step both runs began alike */
    *deadline = NULL;
    for (uint32_t i = 0, j = 0;; i++, j++) {
        const afd_event *a = next_compared(failing, &i), *b = next_compared(passing, &j);
        if (a && b && same_event(failing, a, passing, b)) {
            if (a->kind == AFD_EV_WAKE) {
                in_step = 1;
                last_step = a->b;
            } else if (a->kind == AFD_EV_STEP)
                in_step = 0;
            continue;
        }
        if (failing->dropped || passing->dropped)
            return 0; /* a record cut short proves nothing about what followed */
        /* The first difference. Inside a step both began after the same history, it is what that
         * step did: only a time it read can differ. Between steps, the step each run begins next
         * (or its callback, first seen) differs: a timer brought it (a delay also moves the timers
         * armed after it against those armed before: another order), or the ready queue did, which
         * holds what the same steps scheduled, in their order: one of them went another way
         * without an event to show it, and only a time it read can have made it. */
        if (in_step || (!world && next_step_scheduled(failing, i) && next_step_scheduled(passing, j)))
            return 1;
        /* with real descriptors, only what the last step both began alike scheduled itself (an
         * arrival is scheduled by no step) */
        if (world && last_step && next_step_origin(failing, i) == last_step &&
            next_step_origin(passing, j) == last_step)
            return 1;
        /* A timer brought it: two timers changed places, an order -- unless a timeout of the
         * program's the passing run saw run out never did in the run as found (the test counted
         * on it: the time before it was armed decided, a job's 0.6 s sleep ending before a 0.2 s
         * wait for it armed 0.4 s late). A timeout that runs out in both (bpo-27585's hand-off and
         * cancel in one iteration) is part of the race, not its threshold. */
        *deadline = timeout_missed(passing, found);
        return *deadline != NULL;
    }
}

/* Identical behaviour: the same events in the same order, times aside, to the end of both. */
static int same_run(const afd_trace *x, const afd_trace *y)
{
    if (x->dropped || y->dropped || x->outcome != y->outcome)
        return 0;
    for (uint32_t i = 0, j = 0;; i++, j++) {
        const afd_event *a = next_compared(x, &i), *b = next_compared(y, &j);
        if (!a || !b)
            return !a && !b;
        if (!same_event(x, a, y, b))
            return 0;
    }
}

/* The same failure: the same outcome at the same place ("file:line: ..." up to its ": "). */
static int same_failure(const afd_trace *x, const afd_trace *y)
{
    const char *a = strstr(x->failure, ": "), *b = strstr(y->failure, ": ");
    if (x->outcome != y->outcome || !a || !b || a - x->failure != b - y->failure)
        return 0;
    return !memcmp(x->failure, y->failure, (size_t)(a - x->failure)) && strchr(x->failure, ':') < a;
}

/* One run of the schedule with its delays scaled (AFD_SCALE_ONE: as it is). */
typedef struct scaled_run {
    int ran, failed;
    uint32_t flags; /* AFD_TRACE_* */
    afd_trace tr;   /* Owned when have. */
    int have;
} scaled_run;

typedef struct run_ctx {
    const char *token; /* Borrowed. */
    scaled_run *out;   /* Borrowed. */
} run_ctx;

static int make_run(void *vctx, uint64_t i, uint8_t *mode, char **token)
{
    (void)i;
    run_ctx *c = vctx;
    *mode = AFD_MODE_CONTROLLED;
    *token = strdup(c->token);
    return *token ? 0 : AFD_ENOMEM;
}

static int take_run(void *vctx, uint64_t i, afd_run_result *res, afd_trace *tr)
{
    (void)i;
    scaled_run *o = ((run_ctx *)vctx)->out;
    o->ran = 1;
    o->failed = afd_runs_is_failure(res->outcome);
    if (tr && !o->have) {
        o->flags = tr->flags;
        o->tr = *tr; /* taken over: the batch finishes what is left, nothing */
        memset(tr, 0, sizeof *tr);
        o->have = 1;
    }
    return 0;
}

static void run_finish(scaled_run *r)
{
    if (r->have)
        afd_trace_finish(&r->tr);
    memset(r, 0, sizeof *r);
}

static int run_scaled(afd_pool *pool, const afd_schedule *base, uint32_t scale, afd_progress *prog,
                      scaled_run *out)
{
    run_finish(out);
    afd_schedule s;
    int rc = afd_schedule_copy(&s, base);
    char *token = NULL;
    if (rc == 0 && scale != AFD_SCALE_ONE) {
        s.flags |= AFD_SCHED_SCALED;
        s.scale_ppb = scale;
    }
    if (rc == 0)
        rc = afd_token_encode(&s, &token);
    afd_schedule_finish(&s);
    if (rc < 0)
        return rc;
    run_ctx c = {token, out};
    tally t = {0};
    rc = afd_runs_batch_alone(pool, 0, 1, 0, make_run, take_run, &c, prog, &t);
    out->flags |= t.flags_union;
    afd_tally_finish(&t);
    free(token);
    return rc;
}

/* A run the check can judge: it ran, its trace was read, and no thread or foreign loop had a say
 * in it (real descriptors may have: same_order counts with them). */
static int judged(const scaled_run *r)
{
    return r->ran && r->have && !(r->flags & (AFD_TRACE_THREADS | AFD_TRACE_FOREIGN_LOOP));
}

/* How close the neighbours of a bisection that may settle early must be (a thousandth of the
 * delays: a 5 s stall's flip known to 5 ms). */
#define SETTLE_WIDTH (AFD_SCALE_ONE / 1024)

/* Bisects the scale between a passing *lo (scale 0) and a failing *hi (scale 1) down to
 * neighbours, or (settled) to neighbours SETTLE_WIDTH apart that settled says are enough; 0 when
 * every run could be judged. */
static int bisect(afd_pool *pool, const afd_schedule *s, afd_progress *prog, scaled_run *lo, scaled_run *hi,
                  uint32_t *lo_scale, int *ok, int (*settled)(const scaled_run *lo, const scaled_run *hi))
{
    uint32_t l = 0, h = AFD_SCALE_ONE;
    *ok = 0;
    while (h - l > 1) {
        if (settled && h - l <= SETTLE_WIDTH && lo->have && hi->have && settled(lo, hi))
            break;
        uint32_t m = l + (h - l) / 2;
        scaled_run mid = {0};
        int rc = run_scaled(pool, s, m, prog, &mid);
        if (rc < 0 || !judged(&mid)) {
            run_finish(&mid);
            return rc;
        }
        scaled_run *side = mid.failed ? hi : lo;
        run_finish(side);
        *side = mid;
        *(mid.failed ? &h : &l) = m;
    }
    *lo_scale = l;
    *ok = 1;
    return 0;
}

int afd_timing_clock_check(afd_timing *self, afd_pool *pool, const char *token, int outcome,
                           afd_progress *prog)
{
    if (outcome != AFD_OUT_FAIL)
        return 0; /* a crash, a hang or a setup's error is not a comparison the test made */
    afd_schedule s;
    int rc = afd_token_decode(&s, token);
    if (rc < 0)
        return rc;
    scaled_run one = {0}, lo = {0}, hi = {0};
    uint32_t lo_scale = 0;
    int ok = 0;
    if (!(s.flags & AFD_SCHED_SCALED))
        rc = run_scaled(pool, &s, AFD_SCALE_ONE, prog, &one);
    if (rc == 0 && judged(&one) && one.failed)
        rc = run_scaled(pool, &s, 0, prog, &lo);
    if (rc == 0 && judged(&lo) && !lo.failed)
        rc = bisect(pool, &s, prog, &lo, &hi, &lo_scale, &ok, NULL);
    /* The flip is inside one step, and the failing run fails where the run beside the flip with
     * more time does: the same assertion, which the same order passes with less time (hi holds
     * nothing when the flip is next to scale 1); or the failing run outlasted a deadline of the
     * program's (self->crossed, whose check below it failed there): every failure from the flip up
     * is one threshold of the test's or the next, a 20 s timeout above a 10 s budget. Past the flip the
     * delays may also wake a timer sooner (a keep-alive, a poll) without a say in that assertion; they cross
     * the threshold all the same, which is what the verdict says. */
    const afd_trace *fail_side = hi.have ? &hi.tr : &one.tr;
    uint64_t passed = 1;
    const char *deadline = NULL;
    if (rc == 0 && ok && same_order(fail_side, &lo.tr, &one.tr, &deadline) &&
        (same_run(fail_side, &one.tr) || same_failure(fail_side, &one.tr) || self->crossed)) {
        /* the passing side, again; where real waits added the machine's time to the clock, a tenth
         * further from the flip, which they could otherwise push across */
        uint32_t again_scale =
            (lo.flags | one.flags) & AFD_TRACE_REAL_WAIT ? lo_scale - lo_scale / 10 : lo_scale;
        for (int k = 1; rc == 0 && k < AFD_TIMING_CHECK_RUNS; k++) {
            scaled_run again = {0};
            rc = run_scaled(pool, &s, again_scale, prog, &again);
            passed += rc == 0 && judged(&again) && !again.failed;
            run_finish(&again);
        }
        if (rc == 0 && passed == AFD_TIMING_CHECK_RUNS) {
            self->sensitive = self->clock = 1;
            if (deadline)
                snprintf(self->site, sizeof self->site, "%s", deadline);
            self->check_runs = AFD_TIMING_CHECK_RUNS;
            self->check_passed = passed;
        }
    }
    run_finish(&one);
    run_finish(&lo);
    run_finish(&hi);
    afd_schedule_finish(&s);
    return rc;
}

/* The next crossing event of tr at or after *i, or NULL. */
static const afd_event *next_crossing(const afd_trace *tr, uint32_t *i)
{
    for (; *i < tr->n_events; (*i)++) {
        const afd_event *e = &tr->events[*i];
        if (e->kind == AFD_EV_DEADLINE_LATE && afd_timing_crossing(tr, e, NULL))
            return e;
    }
    return NULL;
}

/* Where the crossings of the runs either side of the flip first part (a deadline, or how it was
 * crossed: a step outlasting it, stalls bringing it due), the deadline hi records there, or NULL.
 * Just below the flip the stall ends short of that deadline and it is crossed later or not at all;
 * just above, the stall carries the clock past it: the time that decides the outcome. */
static const afd_event *parting_crossing(const afd_trace *hi, const afd_trace *lo)
{
    for (uint32_t i = 0, j = 0;; i++, j++) {
        const afd_event *h = next_crossing(hi, &i), *l = next_crossing(lo, &j);
        if (!h)
            return NULL;
        if (!l || h->flags != l->flags || !afd_timing_same_deadline(hi, h, lo, l))
            return h;
    }
}

/* Whether hi and lo cross the same deadlines the same way but for `at`'s: the flip is that one's. */
static int parts_only_at(const afd_trace *hi, const afd_trace *lo, const afd_event *at)
{
    for (uint32_t i = 0, j = 0;; i++, j++) {
        const afd_event *h = next_crossing(hi, &i), *l = next_crossing(lo, &j);
        while (h && afd_timing_same_deadline(hi, h, hi, at))
            h = (++i, next_crossing(hi, &i));
        while (l && afd_timing_same_deadline(lo, l, hi, at))
            l = (++j, next_crossing(lo, &j));
        if (!h || !l)
            return !h && !l;
        if (h->flags != l->flags || !afd_timing_same_deadline(hi, h, lo, l))
            return 0;
    }
}

/* The naming bisection may stop where the neighbours part at one deadline only. */
static int settled_on_one(const scaled_run *lo, const scaled_run *hi)
{
    if (lo->failed || !hi->failed)
        return 0;
    const afd_event *e = parting_crossing(&hi->tr, &lo->tr);
    return e && parts_only_at(&hi->tr, &lo->tr, e);
}

int afd_timing_name(afd_timing *self, afd_pool *pool, const char *token, afd_progress *prog)
{
    /* Runs over real descriptors or beside threads are the world's as much as the schedule's, and
     * slow: their bisection would cost seconds per verdict (aresponses: 43 s -> 123 s); the summary
     * then says which deadline the failure needs was not measured. */
    if (!self->sensitive || self->clock || self->n_crossed < 2 || self->real_wait)
        return 0;
    afd_schedule s;
    int rc = afd_token_decode(&s, token);
    if (rc < 0)
        return rc;
    scaled_run lo = {0}, hi = {0};
    uint32_t lo_scale = 0;
    int ok = 0;
    if (!(s.flags & AFD_SCHED_SCALED))
        rc = bisect(pool, &s, prog, &lo, &hi, &lo_scale, &ok, settled_on_one);
    /* a neighbour the bisection never ran is an end: no delay (passes), or the run as found */
    if (rc == 0 && ok && !lo.have)
        rc = run_scaled(pool, &s, 0, prog, &lo);
    if (rc == 0 && ok && !hi.have)
        rc = run_scaled(pool, &s, AFD_SCALE_ONE, prog, &hi);
    if (rc == 0 && ok && judged(&lo) && !lo.failed && judged(&hi) && hi.failed) {
        const afd_event *e = parting_crossing(&hi.tr, &lo.tr);
        if (e) { /* its duration and site; how the failing run crossed (the verdict's terms) stays */
            afd_timing named;
            afd_timing_take_crossing(&named, &hi.tr, e);
            self->duration_ns = named.duration_ns;
            memcpy(self->site, named.site, sizeof self->site);
            self->named = 1;
        }
    }
    run_finish(&lo);
    run_finish(&hi);
    afd_schedule_finish(&s);
    return rc;
}
