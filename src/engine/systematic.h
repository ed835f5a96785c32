/* systematic.h -- the systematic search run on a pool: the enumeration of sysenum.h, round by round,
 * within a run and time budget, and the coverage it reaches, in text and JSON.
 *
 * Every schedule it runs is the zero schedule with explicit delays, so every token it prints
 * replays, and every failure it finds is one stock asyncio can produce (the ready queue is never
 * reordered; only step costs change). */
#ifndef AFD_ENGINE_SYSTEMATIC_H
#define AFD_ENGINE_SYSTEMATIC_H

#include "incident.h"
#include "runs.h"
#include "sysenum.h"
#include "timing.h"

#include <stdint.h>

#define AFD_SYS_DEFAULT_DELAYS 2

typedef struct afd_sys_opts {
    uint32_t max_delays;
    int prune_classes;
    uint64_t seed;
    uint64_t max_runs; /* 0: no bound */
    double seconds;    /* 0: no bound */
    int stop_on_failure;
    /* Sees every result before the search does (investigate remembers each run); may be NULL. Its
     * return value is ignored: only the search decides when to stop. */
    take_fn observe;
    void *observe_ctx;
} afd_sys_opts;

typedef struct afd_sys_result {
    afd_sys_level levels[AFD_SYS_MAX_DELAYS + 1];
    uint32_t n_levels;
    uint64_t runs;        /* every run made, measuring repeats included */
    uint64_t clock_reads; /* the most loop.time() reads a run made while a measured delay was in its clock */
    int budget_spent;     /* the run or time budget ended the search before the enumeration did */
    int stopped_at_failure; /* the search stopped at its first failure (stop_on_failure) */
    /* the first failing schedule (in enumeration order) that needs no deadline outlasted, else the
     * first that does (timing.crossed), checked below its deadline */
    uint64_t fail_run; /* 1-based number among the runs, 0: none failed */
    char *fail_token;  /* Owned. */
    char *failure;     /* Owned; may hold NUL bytes. */
    size_t failure_len;
    int fail_outcome;
    uint32_t fail_delays;
    afd_timing timing;
} afd_sys_result;

/* Runs the search. Returns 0, AFD_EIO when interrupted, or a negative AFD_E* code. */
int afd_systematic(afd_pool *pool, const afd_sys_opts *o, afd_progress *prog, tally *t, afd_sys_result *r);
void afd_sys_result_finish(afd_sys_result *r); /* Accepts NULL. */

/* One line per level, e.g. "every schedule with at most 1 delay: 37 run, 5 distinct interleavings,
 * exhausted", each starting with indent. */
void afd_sys_coverage_text(const afd_sys_result *r, const afd_sys_opts *o, afd_buf *b, const char *indent);
/* {"max_delays": K, "pruning": "none"|"classes", "levels": [...], "clock_reads": N, "runs": N,
 *  "budget_spent": bool} */
void afd_sys_coverage_json(const afd_sys_result *r, const afd_sys_opts *o, afd_buf *b);
/* The result as the incident's coverage (levels, why each is not exhausted). Returns 0 or
 * AFD_ENOMEM; either way out is freed with afd_sys_incident_finish (or, once it is part of an
 * incident, by afd_incident_finish). */
int afd_sys_to_incident(const afd_sys_result *r, const afd_sys_opts *o, afd_incident_sys *out);
void afd_sys_incident_finish(afd_incident_sys *s);

/* explore --strategy systematic */
int afd_cmd_explore_systematic(const afd_cli *cli);

#endif
