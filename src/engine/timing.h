/* timing.h -- whether a failure is only a timing threshold: one step outlasting a deadline the
 * program armed (a timeout, a TTL, a lease), which a slow machine can do and no order of events
 * explains.
 *
 * The verdict `timing_sensitive` needs two measured facts: the failing run's trace shows a step
 * whose cost carried the clock past a pending deadline (AFD_EV_DEADLINE_LATE, recorded by the
 * runtime), and the very same schedule with every cost capped just below the earliest pending
 * deadline (AFD_SCHED_BELOW_DEADLINES) passes in every one of AFD_TIMING_CHECK_RUNS runs. A
 * failure that still shows below the deadline is a failure like any other. */
#ifndef AFD_ENGINE_TIMING_H
#define AFD_ENGINE_TIMING_H

#include "runs.h"

#include <stdint.h>

/* Runs of the capped schedule. A controlled run replays exactly, so one would decide; three show
 * that it does not vary. */
#define AFD_TIMING_CHECK_RUNS 3

typedef struct afd_timing {
    int crossed;          /* the failing run outlasted a pending deadline */
    uint64_t duration_ns; /* that deadline's duration (0: unknown) */
    char site[512];       /* the user's site that armed it, "" when unknown */
    int real_wait;        /* the run waited in real time (I/O, a thread): the check keeps a tenth */
    int fired;            /* it fired on time, brought due by stalls of at least half its duration */
    uint32_t n_crossed;   /* distinct deadlines the failing run crossed (the first is named until
                             afd_timing_name finds the one the failure needs) */
    int named;            /* afd_timing_name measured which crossing the failure needs */
    uint64_t check_runs, check_passed;
    int sensitive; /* the verdict: crossed, and every capped run passed (or clock) */
    int clock;     /* the verdict came from afd_timing_clock_check: a threshold only a clock read sees, or
                      (site set) a timeout the test counted on that the failing run never saw run out */
} afd_timing;

/* The sites of the deadlines the zero schedule's run saw fire: a fast machine reaches them, so a
 * later run's firing of one is the program's own operation, never a threshold. known: that run was
 * read (before it, every deadline the stalls brought due counts as a crossing, and is checked). */
typedef struct afd_fired_sites {
    char **site; /* Owned: n strings, each owned. */
    size_t n;
    int known;
} afd_fired_sites;
/* Replaces self with the deadlines that fired in tr (NULL: forgets them; known stays 0). */
void afd_fired_sites_from_trace(afd_fired_sites *self, const afd_trace *tr);
int afd_fired_sites_has(const afd_fired_sites *self, const char *site);
void afd_fired_sites_finish(afd_fired_sites *self);

/* Whether a DEADLINE_LATE event e of tr is a crossing (normal: as afd_timing_from_trace). */
int afd_timing_crossing(const afd_trace *tr, const afd_event *e, const afd_fired_sites *normal);
/* Whether two crossing events name the same deadline (its site and duration; a sleep's by site). */
int afd_timing_same_deadline(const afd_trace *x, const afd_event *a, const afd_trace *y, const afd_event *b);
/* The distinct deadlines tr crossed, first crossing each, in order: at most max into out (a run
 * that crossed more counts as max). */
#define AFD_TIMING_MAX_CROSSINGS 32
size_t afd_timing_crossings(const afd_trace *tr, const afd_fired_sites *normal, const afd_event **out,
                            size_t max);
/* Sets self's crossing fields (crossed, real_wait, fired, duration_ns, site) from e, a crossing
 * event of tr; the rest of self is left as it is. */
void afd_timing_take_crossing(afd_timing *self, const afd_trace *tr, const afd_event *e);
/* Reads the first crossing of a failing run's trace (tr may be NULL) into self, which is reset
 * first: a step or a wake-up that outlasted a timer, or a deadline the stalls brought due whose site
 * is not in normal (NULL: none known). */
void afd_timing_from_trace(afd_timing *self, const afd_trace *tr, const afd_fired_sites *normal);
/* The failing token with its costs capped below the deadlines (the caller frees *out); well_below
 * (the failing run's crossing was a real wait after a stall): by a tenth of the distance. */
int afd_timing_capped_token(const char *token, int well_below, char **out);
/* Runs the capped schedule AFD_TIMING_CHECK_RUNS times on pool when self->crossed, and sets
 * self->sensitive. Returns 0, or a negative AFD_E* code (AFD_EIO when interrupted). */
int afd_timing_check(afd_timing *self, afd_pool *pool, const char *token, afd_progress *prog);
/* Which of several deadlines the failing run crossed the failure needs (self->sensitive, n_crossed
 * > 1, no real wait; timing_clock.c): bisects a scale of the token's delays to where the outcome
 * flips (stopping once the neighbours are a thousandth apart and part at one deadline only) and
 * puts the duration and site of the deadline where their crossings first part into self
 * (self->named); how the failing run crossed (real_wait, fired) stays. A stall long enough for a
 * 5 s wait_for outlasts a 10 ms timer on its way, and passing below the 10 ms one says nothing of
 * which decides. Leaves self alone when a run cannot be judged or no crossing parts the neighbours.
 * Returns 0, or a negative AFD_E* code. */
int afd_timing_name(afd_timing *self, afd_pool *pool, const char *token, afd_progress *prog);
/* The check of a failure no deadline explains (timing_clock.c), only of a test body's failure
 * (outcome AFD_OUT_FAIL: not a crash, a hang or a setup's error): runs the failing token once more,
 * then bisects a scale of its delays (AFD_SCHED_SCALED) from 0 (must pass) to 1 down to the two
 * neighbouring runs where the outcome flips, one run at a time. When every run could be judged (no
 * thread, socket or real wait), the two neighbours did the same things in the same order up to the
 * inside of a step, the failing neighbour did exactly what the failing run did, and the passing one
 * passes AFD_TIMING_CHECK_RUNS times, sets self->sensitive and self->clock (and the check's counts).
 * Leaves self alone otherwise. Returns 0, or a negative AFD_E* code (AFD_EIO when interrupted). */
int afd_timing_clock_check(afd_timing *self, afd_pool *pool, const char *token, int outcome,
                           afd_progress *prog);
/* What the timing check ran, for its "checked:" line: "the same schedule ... passed N/N runs". */
#define AFD_TIMING_CHECKED "the same schedule with its delays cut short of the threshold"
/* "fails only when one step takes longer than the 0.1 s timer armed at cache.py:40: a slow
 * machine, not a race" into out. */
void afd_timing_summary(const afd_timing *self, afd_buf *out);
/* The JSON value of "timing": null unless self->sensitive, else
 * {"summary": ..., "duration_us": N, "site": "..." or null, "check_runs": N, "check_passed": N}. */
void afd_timing_json(const afd_timing *self, afd_buf *out);

/* Runs a failing schedule must fail again, one at a time (no other run of the test alive), before
 * it is printed as a failing schedule: a controlled run replays exactly, so a token that passes
 * one of them depends on something no schedule controls (threads, sockets, real waits). */
#define AFD_CONFIRM_RUNS 3
typedef struct afd_confirm {
    uint64_t runs, failed;
    uint32_t flags;      /* the AFD_TRACE_* flags of the replays, together */
    char thread[128];    /* the first thread the replays saw working, "" for none */
    char unwoken[128];   /* the first thread that queued a callback with call_soon while the loop waited */
    int has_unwoken;     /* a replay recorded AFD_TRACE_UNWOKEN (unwoken may still be "": unnamed) */
    afd_timing crossing; /* the first crossing a failing replay showed (crossed 0: none) */
} afd_confirm;
/* Replays token AFD_CONFIRM_RUNS times on pool into *out, reading each failing replay's trace for a
 * crossing as the found run's was read (normal: the zero run's firings). Returns 0, or a negative
 * AFD_E* code (AFD_EIO when interrupted). */
int afd_timing_confirm(afd_pool *pool, const char *token, const afd_fired_sites *normal, afd_progress *prog,
                       afd_confirm *out);

#endif
