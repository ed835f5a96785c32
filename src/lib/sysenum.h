/* sysenum.h -- the systematic search: every schedule with at most K delayed steps, each delay swept
 * across the slots the controlled loop measured, enumerated in rounds.
 *
 * The quotient. With the rest of a schedule fixed, the cost of one step changes a run only where
 * it flips a time comparison the loop makes afterwards (a timer expired or not at an iteration's
 * start, the order of two timers, an idle wake-up). A run asked to measure a window of steps reports,
 * for each, its slot: the smallest increase of its cost that flips one (AFD_EV_SLOT). Sweeping a
 * step's cost from its floor across those boundaries, one run per slot, until no comparison is left
 * to flip, runs one schedule per distinct outcome of the loop's comparisons: every cost in a slot
 * gives the same run (exact, not a sample). A step whose cost flips nothing (no slot) is the zero
 * delay and is not run again: an exact reduction, counted.
 *
 * The order: level 0 is the zero schedule; level k + 1 delays one more step, after the last delay of
 * a level-k schedule, in that schedule's run. A level is finished before the next starts (fewest
 * delays first); within one, each round runs the next slot of every sweep in progress, earliest
 * steps first. Rounds make the enumeration deterministic however many workers run a round: results
 * are taken in any order and used in round order.
 *
 * What K = 2 covers: for each slot of the first delay (measured with the second at zero), every slot
 * of the second. A boundary of the first delay that moves only when the second is non-zero is not
 * swept: the stated space is this nested sweep, and "exhausted" means it was run in full.
 *
 * Timeouts bound the space: a sweep ends where a larger delay would move a timeout the program
 * armed (asyncio.timeout, wait_for, wait(timeout=): the slot says so, AFD_SLOT_DEADLINE). A failure
 * that needs the program to outlast its own timeout is a threshold a slow machine crosses, not a
 * race; the portfolio's schedules beyond deadlines, with the timing check, look for those. So
 * "exhausted" is said of the schedules that keep every timeout where the zero schedule has it.
 *
 * The optional heuristic, class pruning: a schedule whose run lands in an interleaving class already
 * seen is not extended by one more delay. Whoever prints the coverage says it was used. */
#ifndef AFD_SYSENUM_H
#define AFD_SYSENUM_H

#include "trace.h"

#include <stddef.h>
#include <stdint.h>

#define AFD_SYS_MAX_DELAYS 4
#define AFD_SYS_WINDOW 64      /* steps one run measures (the mask width of the runtime) */
#define AFD_SYS_MAX_SLOTS 4096 /* slots swept per delay before a sweep is cut (and said so) */
#define AFD_SYS_MAX_COST (1ULL << 62)

typedef struct afd_sys_delay {
    char *label; /* Owned. The step's task label. */
    uint32_t ordinal;
    uint64_t index; /* The step's index in the run: a delay changes nothing before its step ends. */
    uint64_t cost;  /* ns */
} afd_sys_delay;

/* Coverage of the schedules with exactly `delays` delays (schedules, failed, estimated_total) and
 * of those with at most that many (the cumulative fields). */
typedef struct afd_sys_level {
    uint32_t delays;
    uint64_t schedules;     /* schedules of exactly this many delays that were run */
    uint64_t cum_schedules; /* ... of at most this many */
    uint64_t cum_orders;    /* distinct order digests among those runs */
    uint64_t cum_classes;   /* distinct interleaving classes among those runs */
    uint64_t failed;        /* runs of exactly this many delays that failed */
    uint64_t cum_failed;
    uint64_t no_slot;      /* steps (after their parent's last delay) whose delay flips nothing */
    uint64_t pruned;       /* schedules of one delay fewer not extended (class pruning) */
    uint64_t capped;       /* sweeps cut at AFD_SYS_MAX_SLOTS */
    uint64_t at_deadline;  /* sweeps ended where a longer delay would move a program deadline */
    uint64_t unmeasured;   /* runs that came back without the slot they were asked to measure */
    uint64_t measure_runs; /* extra runs of a schedule already run, to measure further steps */
    int uncontrolled;      /* a run recorded threads, sockets or real waits: never exhausted */
    int started;
    int exhausted;           /* every schedule of this level (under pruning, when used) was run */
    int64_t estimated_total; /* this level's schedules, estimated from the sweeps so far; -1 unknown */
} afd_sys_level;

typedef struct afd_sysenum afd_sysenum;

/* max_delays in [0, AFD_SYS_MAX_DELAYS]; seed goes into every token (the program's `random`). */
int afd_sysenum_new(afd_sysenum **out, uint32_t max_delays, int prune_classes, uint64_t seed);
void afd_sysenum_free(afd_sysenum *self); /* Accepts NULL. */

/* Uses the results of the round before (in its order) and prepares the next: *n runs, 0 when the
 * enumeration is over. */
int afd_sysenum_round(afd_sysenum *self, uint64_t *n);
/* Run i of the current round: its token (the caller frees it), the window of steps it measures, and
 * whether it is a measuring run of a schedule already counted (*repeat). */
int afd_sysenum_item(afd_sysenum *self, uint64_t i, char **token, uint64_t *mark_lo, uint32_t *mark_n,
                     int *repeat);
/* The delays of run i of the current round (borrowed until the next round). */
const afd_sys_delay *afd_sysenum_item_delays(const afd_sysenum *self, uint64_t i, uint32_t *n);
/* The result of run i of the current round: its trace (NULL when none came back), its order digest
 * and interleaving class (afd_trace_order_digest, afd_iclass_fingerprint), whether it failed. */
int afd_sysenum_take(afd_sysenum *self, uint64_t i, const afd_trace *tr, uint64_t order, uint64_t klass,
                     int failed);
/* The budget is spent: the round's results in so far are used, and nothing after is exhausted. */
int afd_sysenum_stop(afd_sysenum *self);
/* The coverage of levels 0..max_delays into out (cap entries); returns how many were written. */
uint32_t afd_sysenum_levels(const afd_sysenum *self, afd_sys_level *out, uint32_t cap);
/* The program's loop.time() reads while a measured delay was in the clock, the most one run saw. */
uint64_t afd_sysenum_clock_reads(const afd_sysenum *self);

#endif
