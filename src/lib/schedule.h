/* schedule.h -- what a schedule decides for each step and each idle wake-up of the controlled loop.
 *
 * These functions are called from the loop's hot path, once per step, so they allocate nothing and
 * are pure: the cost of a step depends only on the schedule and on the step's identity, never on
 * the decisions made before it (counter-based randomness, afd_mix64). That keeps replay exact and
 * lets a minimizer remove one delay without reshuffling every other random draw.
 *
 * Time is virtual nanoseconds. */
#ifndef AFD_SCHEDULE_H
#define AFD_SCHEDULE_H

#include "token.h"

#include <stddef.h>
#include <stdint.h>

/* The delay pct gives a change-point step, beyond the latest pending timer. */
#define AFD_PCT_MARGIN_NS 1000000ULL
/* The floor of a pct delay when no timer is pending. */
#define AFD_PCT_MIN_NS 10000000ULL

/* The identity of one step, as the loop knows it when the step has just run. */
typedef struct afd_step_id {
    const char *label; /* Borrowed. Task label "qualname#n", or a plain callback's qualname. */
    size_t label_len;
    uint64_t label_hash; /* afd_fnv1a(AFD_FNV_INIT, label, label_len), cached by the caller. */
    uint32_t ordinal;    /* This task's step number, from 0. */
    uint64_t index;      /* The step's position among all steps of the run, from 0. */
} afd_step_id;

/* The pending timers as a step that has just run sees them, each distance from the current virtual
 * time in ns. A deadline is a timer the program armed to guard something (a timeout, a TTL, a
 * lease: any timer that is not a sleeping task's wake-up). */
typedef struct afd_horizon {
    uint64_t latest_ns;   /* the latest pending timer of any kind (0 if none) */
    uint64_t plain_ns;    /* the latest pending timer that is not a deadline (0 if none) */
    uint64_t deadline_ns; /* the earliest pending deadline; AFD_NO_DEADLINE if none */
    /* The earliest pending time a step may not outlast as a matter of course: the earliest
     * deadline, or the earliest other timer more than a millisecond ahead (a stall that overtakes
     * a time the program set is a threshold, not a race); AFD_NO_DEADLINE if none. */
    uint64_t threshold_ns;
    /* The stall the schedule needs to reach threshold_ns's timer: its distance without the delays
     * the schedule added since it was armed (>= threshold_ns; 0 when threshold_ns is none). */
    uint64_t stall_ns;
} afd_horizon;
#define AFD_NO_DEADLINE UINT64_MAX

/* The virtual cost of a step that has just run.
 * horizon_ns: how far the latest pending timer lies beyond the current virtual time (0 if none);
 * pct uses it so that its delay outlasts every pending timer.
 * An explicit delay for (label, ordinal) overrides the base strategy.
 * This is afd_schedule_step_cost_within with no deadline known. */
uint64_t afd_schedule_step_cost(const afd_schedule *self, const afd_step_id *step, uint64_t horizon_ns);

/* The virtual cost of a step that has just run, given the pending timers. Without
 * AFD_SCHED_BELOW_DEADLINES pct's delay outlasts every pending timer (h->latest_ns), deadlines
 * included, as version-1 tokens always meant. With it pct's delay outlasts the pending timers that
 * are not deadlines, and every cost (jitter's, pct's, an explicit delay's) is capped just below the
 * earliest pending threshold: afd_schedule_cap_below(self, h->threshold_ns, h->stall_ns). */
uint64_t afd_schedule_step_cost_within(const afd_schedule *self, const afd_step_id *step,
                                       const afd_horizon *h);

/* The largest cost that keeps a step short of a deadline deadline_ns away: deadline_ns less a
 * tenth of it, at most AFD_PCT_MARGIN_NS and at least 1 ns (0 for a deadline due now). */
uint64_t afd_schedule_below(uint64_t deadline_ns);
/* The same for a timer ahead_ns away that a stall of stall_ns (>= ahead_ns: its distance without
 * the delays the schedule already added since it was armed) overtakes: the margin is a tenth of the
 * stall, at most AFD_PCT_MARGIN_NS, so delays that approach one timer in several steps keep the same
 * margin as one delay would (not a tenth of what is left each time, which reaches the timer to the
 * microsecond, where a real wait's length decides whether it fires). */
uint64_t afd_schedule_below_stall(uint64_t ahead_ns, uint64_t stall_ns);
/* The cap a schedule keeps below a threshold ahead_ns away: afd_schedule_below_stall's, or under
 * AFD_SCHED_WELL_BELOW a margin of a tenth of the stall with no upper bound. */
uint64_t afd_schedule_cap_below(const afd_schedule *self, uint64_t ahead_ns, uint64_t stall_ns);

/* The lateness of the wake_index-th idle wake-up (from 0): nothing was ready, the loop went idle at
 * now_ns and the earliest deadline is deadline_ns (>= now_ns). The clock then jumps to
 * deadline_ns + lateness. zero and pct: 0. jitter models epoll's round-up of the timeout to whole
 * milliseconds plus a small exponential wake-up latency, so timers within one millisecond of each
 * other fire in one batch, as on a real Linux machine. */
uint64_t afd_schedule_lateness(const afd_schedule *self, uint64_t wake_index, uint64_t now_ns,
                               uint64_t deadline_ns);

/* The seed for the program's `random` module under this schedule. */
uint64_t afd_schedule_random_seed(const afd_schedule *self);

/* How many of the portfolio's first schedules keep below the pending deadlines
 * (AFD_SCHED_BELOW_DEADLINES); after them every other jitter and pct schedule goes beyond. */
#define AFD_PORTFOLIO_BELOW_SHARE 16

/* The portfolio: the i-th schedule of a search, for a master seed. i == 0 is `zero`; then jitter
 * and pct (d cycling through 2, 3, 4) alternate with seeds derived from (master_seed, i). The
 * first AFD_PORTFOLIO_BELOW_SHARE schedules stay below every pending deadline, so a failure that
 * needs no step to outlast a timeout, a TTL or a lease is searched for first; after them the pct
 * and jitter schedules with an odd i / 2 go beyond (no flag: the old meaning).
 * est_steps is the step count of a baseline run (pct's horizon of change points; at least 1).
 * `only` restricts the portfolio to one strategy, or is -1 for the mix. With AFD_STRAT_ZERO every
 * schedule has zero costs and only the seed (and so the program's `random`) varies: master_seed for
 * i == 0, a derived seed after that. The schedule is initialized here. */
int afd_schedule_portfolio(afd_schedule *out, uint64_t master_seed, uint64_t i, uint32_t est_steps, int only);

#endif
