/* schedule.c -- the cost of each step and the lateness of each idle wake-up under a schedule.
 *
 * Main invariant: every decision is a pure function of the schedule and of the decision's identity
 * (step label and ordinal, step index, or wake index). Randomness is counter-based: each draw is
 * afd_mix64 of (seed, identity, a constant per kind of decision), never a sequential stream, so
 * removing one explicit delay or one step never reshuffles the others.
 * Workload: afd_schedule_step_cost runs once per step of the controlled loop (millions per search),
 * so it allocates nothing and costs a few mixes; the portfolio is called once per run. */
#include "schedule.h"
#include "afd.h"

#include <math.h>

/* One constant per kind of decision keeps the draws of different kinds independent even when
 * their counters coincide (an ordinal equal to a wake index, say). */
#define KEY_JITTER_COST 0x6a09e667f3bcc908ULL
#define KEY_JITTER_LATE 0xbb67ae8584caa73bULL
#define KEY_PCT_POINT 0x3c6ef372fe94f82bULL
#define KEY_RANDOM 0xa54ff53a5f1d36f1ULL

#define US 1000.0
#define MS_NS 1000000ULL

/* The jitter cost: with probability 0.85 an exponential of mean 20 us, otherwise a Pareto tail. */
#define JITTER_EXP_P 0.85
#define JITTER_EXP_MEAN_NS (20.0 * US)
#define JITTER_PARETO_XM_NS (100.0 * US)
#define JITTER_PARETO_ALPHA 1.2
#define JITTER_CAP_NS (50.0 * 1000.0 * US)
/* The wake-up latency added after epoll's round-up. */
#define LATE_EXP_MEAN_NS (30.0 * US)

/* A token can carry any pct_depth, but the step path must stay cheap: beyond this many change
 * points a schedule is no longer pct in any useful sense, so the count is clamped. */
#define PCT_MAX_POINTS 64

/* An exponential of the given mean from a uniform u in [0, 1); 1 - u is never 0, so the log is
 * finite. */
static double exponential(double mean, double u)
{
    return -mean * log1p(-u);
}

/* Compares a borrowed, length-delimited label with a NUL-terminated one without reading past the
 * end of either. */
static int label_equals(const char *cstr, const char *label, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (cstr[i] == 0 || cstr[i] != label[i])
            return 0;
    return cstr[len] == 0;
}

static int find_delay(const afd_schedule *self, const afd_step_id *step, uint64_t *cost)
{
    for (uint32_t i = 0; i < self->n_delays; i++) {
        const afd_delay *d = &self->delays[i];
        if (d->ordinal == step->ordinal && d->label && label_equals(d->label, step->label, step->label_len)) {
            *cost = d->cost_ns;
            return 1;
        }
    }
    return 0;
}

static uint64_t jitter_cost(const afd_schedule *self, const afd_step_id *step)
{
    /* Chained mixes rather than one xor of the inputs, so no two identities cancel each other. */
    uint64_t key = afd_mix64(self->seed ^ KEY_JITTER_COST);
    key = afd_mix64(afd_mix64(key ^ step->label_hash) ^ step->ordinal);
    double pick = afd_unit(key);
    double u = afd_unit(afd_mix64(key));
    double ns;
    if (pick < JITTER_EXP_P)
        ns = exponential(JITTER_EXP_MEAN_NS, u);
    else
        ns = JITTER_PARETO_XM_NS * pow(1.0 - u, -1.0 / JITTER_PARETO_ALPHA);
    if (!(ns < JITTER_CAP_NS)) /* Capped in double, before the conversion could overflow. */
        ns = JITTER_CAP_NS;
    return (uint64_t)ns;
}

/* Whether step index idx is one of pct's change points: min(d - 1, steps) distinct draws in
 * [0, steps), a collision moving to the next free index (wrapping), which keeps the set a pure
 * function of (seed, d, steps). Point j depends only on the points before it, so a hit ends the
 * scan early. */
static int pct_is_change_point(const afd_schedule *self, uint64_t idx)
{
    uint64_t steps = self->pct_steps;
    if (self->pct_depth <= 1 || idx >= steps)
        return 0;
    uint64_t count = self->pct_depth - 1;
    if (count > PCT_MAX_POINTS)
        count = PCT_MAX_POINTS;
    if (count >= steps)
        return 1; /* Every index is a change point; probing below could never find a free one. */
    uint64_t points[PCT_MAX_POINTS];
    uint64_t base = afd_mix64(self->seed ^ KEY_PCT_POINT);
    for (uint64_t j = 0; j < count; j++) {
        uint64_t c = afd_mix64(base ^ j) % steps;
        for (uint64_t k = 0; k < j;) {
            if (points[k] == c) {
                c = c + 1 == steps ? 0 : c + 1;
                k = 0; /* The moved point must be checked against every earlier one again. */
            } else {
                k++;
            }
        }
        if (c == idx)
            return 1;
        points[j] = c;
    }
    return 0;
}

uint64_t afd_schedule_below_stall(uint64_t ahead_ns, uint64_t stall_ns)
{
    uint64_t gap = (stall_ns > ahead_ns ? stall_ns : ahead_ns) / 10;
    if (gap > AFD_PCT_MARGIN_NS)
        gap = AFD_PCT_MARGIN_NS;
    if (gap == 0)
        gap = 1;
    return ahead_ns > gap ? ahead_ns - gap : 0;
}

uint64_t afd_schedule_cap_below(const afd_schedule *self, uint64_t ahead_ns, uint64_t stall_ns)
{
    if (!(self->flags & AFD_SCHED_WELL_BELOW))
        return afd_schedule_below_stall(ahead_ns, stall_ns);
    uint64_t gap = (stall_ns > ahead_ns ? stall_ns : ahead_ns) / 10;
    if (gap == 0)
        gap = 1;
    return ahead_ns > gap ? ahead_ns - gap : 0;
}

uint64_t afd_schedule_below(uint64_t deadline_ns)
{
    return afd_schedule_below_stall(deadline_ns, deadline_ns);
}

static uint64_t base_cost(const afd_schedule *self, const afd_step_id *step, const afd_horizon *h)
{
    uint64_t cost;
    if (self->n_delays && self->delays && find_delay(self, step, &cost))
        return cost;
    switch (self->strategy) {
    case AFD_STRAT_JITTER:
        return jitter_cost(self, step);
    case AFD_STRAT_PCT: {
        if (!pct_is_change_point(self, step->index))
            return 0;
        /* Below deadlines, the delay need only outlast the timers that wake sleeping tasks: a
         * timeout's timer firing first would make the test fail on its own threshold. */
        uint64_t horizon = self->flags & AFD_SCHED_BELOW_DEADLINES ? h->plain_ns : h->latest_ns;
        cost = horizon > UINT64_MAX - AFD_PCT_MARGIN_NS ? UINT64_MAX : horizon + AFD_PCT_MARGIN_NS;
        return cost > AFD_PCT_MIN_NS ? cost : AFD_PCT_MIN_NS;
    }
    default:
        return 0;
    }
}

uint64_t afd_schedule_step_cost_within(const afd_schedule *self, const afd_step_id *step,
                                       const afd_horizon *h)
{
    uint64_t cost = base_cost(self, step, h);
    if ((self->flags & AFD_SCHED_BELOW_DEADLINES) && h->threshold_ns != AFD_NO_DEADLINE) {
        uint64_t cap = afd_schedule_cap_below(self, h->threshold_ns, h->stall_ns);
        if (cost > cap)
            cost = cap;
    }
    return cost;
}

uint64_t afd_schedule_step_cost(const afd_schedule *self, const afd_step_id *step, uint64_t horizon_ns)
{
    afd_horizon h = {.latest_ns = horizon_ns,
                     .plain_ns = horizon_ns,
                     .deadline_ns = AFD_NO_DEADLINE,
                     .threshold_ns = AFD_NO_DEADLINE};
    return afd_schedule_step_cost_within(self, step, &h);
}

uint64_t afd_schedule_lateness(const afd_schedule *self, uint64_t wake_index, uint64_t now_ns,
                               uint64_t deadline_ns)
{
    if (self->strategy != AFD_STRAT_JITTER)
        return 0;
    /* A deadline in the past is treated as due now, as epoll_wait treats a zero timeout. */
    uint64_t timeout = deadline_ns > now_ns ? deadline_ns - now_ns : 0;
    /* Rounding via the remainder, so a timeout near UINT64_MAX cannot overflow. */
    uint64_t rem = timeout % MS_NS;
    uint64_t round_up = rem ? MS_NS - rem : 0;
    uint64_t key = afd_mix64(afd_mix64(self->seed ^ KEY_JITTER_LATE) ^ wake_index);
    return round_up + (uint64_t)exponential(LATE_EXP_MEAN_NS, afd_unit(key));
}

uint64_t afd_schedule_random_seed(const afd_schedule *self)
{
    return afd_mix64(self->seed ^ KEY_RANDOM);
}

int afd_schedule_portfolio(afd_schedule *out, uint64_t master_seed, uint64_t i, uint32_t est_steps, int only)
{
    if (!out)
        return AFD_EINVAL;
    afd_schedule_init(out);
    if (only != -1 && (only < 0 || only >= AFD_STRAT__COUNT))
        return AFD_EINVAL;
    uint32_t steps = est_steps ? est_steps : 1;
    uint64_t derived = afd_mix64(master_seed ^ afd_mix64(i));

    if (i == 0 && (only == -1 || only == AFD_STRAT_ZERO)) {
        out->seed = master_seed;
        return 0;
    }
    out->seed = derived;
    if (only == AFD_STRAT_ZERO) {
        /* zero has one timing, but its seed also seeds the program's `random`: varying it explores
         * the data nondeterminism that `random` brings, at the zero schedule's timing (every step
         * costs the floor). */
        return 0;
    }
    /* The first share stays below every pending deadline; after it, every other schedule of each
     * strategy goes beyond them (i / 2 alternates within jitter's odd and pct's even indices). */
    if (i < AFD_PORTFOLIO_BELOW_SHARE || (i / 2) % 2 == 0)
        out->flags = AFD_SCHED_BELOW_DEADLINES;
    if (only == AFD_STRAT_JITTER || (only == -1 && i % 2 == 1)) {
        out->strategy = AFD_STRAT_JITTER;
        return 0;
    }
    /* pct: in the mix it takes the even i >= 2, so its own counter is i / 2 - 1. */
    uint64_t k = only == AFD_STRAT_PCT ? i : i / 2 - 1;
    out->strategy = AFD_STRAT_PCT;
    out->pct_depth = (uint32_t)(2 + k % 3);
    out->pct_steps = steps;
    return 0;
}
