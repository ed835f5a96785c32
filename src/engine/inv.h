/* inv.h -- the state `affidavit investigate` carries through its stages (see investigate.c).
 *
 * `inv` is the run-time side (the pool, every run seen, the search's finds); `outcome` is what the
 * investigation concluded, from which the incident document is written. Pointer fields say Owned
 * (freed by the investigation's one cleanup path) or Borrowed. */
#ifndef AFD_ENGINE_INV_H
#define AFD_ENGINE_INV_H

#include "buf.h"
#include "cause.h"
#include "cmds.h"
#include "explain.h"
#include "gate.h"
#include "out.h"
#include "pool.h"
#include "runs.h"
#include "schedule.h"
#include "timing.h"
#include "trace.h"

#include <stddef.h>
#include <stdint.h>

/* One finished run kept whole: its outcome, failure text and trace. */
typedef struct kept_run {
    int outcome;
    char *failure; /* Owned; may hold NUL bytes: failure_len is its length. */
    size_t failure_len;
    afd_trace tr;
    int have_trace;
    uint64_t digest;
} kept_run;

typedef struct inv {
    const afd_cli *cli;
    afd_pool *pool;
    afd_progress prog;
    uint64_t total_runs;
    uint64_t step_limited; /* runs stopped at --max-steps: neither passes nor failures */
    uint64_t truncated;    /* runs whose trace hit its size bound */
    /* every run seen, for Ochiai and the blocking-call predicate */
    afd_run_summary *sums;
    uint8_t *blocked; /* per run: it made a blocking call of >= 1 ms or had a slow step */
    uint8_t *natural; /* per run: a natural run */
    size_t n_sums, cap_sums;
    int in_natural;   /* the natural phase is running */
    char *block_site; /* the longest blocking call of a failing natural run: "file:line" */
    char *block_task;
    uint64_t block_ns;
    uint32_t failing_flags; /* uncontrolled sources seen in failing runs */
    /* search */
    uint64_t seed;
    uint32_t est_steps;
    uint64_t found_index;
    char *found_token;
    /* the lowest failing search run that outlasted a deadline, kept aside (timing.h) */
    uint64_t cand_index;
    char *cand_token;
    char *cand_failure; /* Owned; may hold NUL bytes. */
    size_t cand_failure_len;
    afd_timing timing;
    /* a batch's kept run (first failing, or first of a replay) */
    kept_run keep;
    int keep_failing_only;
    int error;
    int trace_lines; /* replays record the lines of user code (for inferred accesses) */
    afd_srcmap *srcs; /* the sources traced runs ran, scanned once */
} inv;

typedef struct delay_set {
    afd_schedule base;  /* strategy zero with the failing seed, no delays */
    afd_delay *d;       /* Owned labels. */
    uint32_t n;
    uint64_t *cost;     /* the current cost of each delay (bisection changes one) */
    const uint8_t *keep; /* NULL: all */
} delay_set;

typedef struct window {
    int found;
    char *label;      /* the delayed step's task */
    uint32_t ordinal;
    uint64_t lo, hi;  /* passes at lo, fails at hi (ns) */
    uint64_t runs;    /* oracle runs spent minimizing and bisecting */
    uint32_t n_delays_before, n_delays_after;
    int via_fallback; /* found by searching one delay under a passing seed */
    char *wakes;      /* a plain callback's window: the task that callback wakes (or NULL) */
    struct {
        uint64_t delay;
        int failed;
    } probes[64];     /* the bisection of the named delay: each delay tried and whether it failed */
    uint32_t n_probes;
} window;

typedef struct oracle_ctx {
    inv *v;
    delay_set *ds;
    uint32_t which; /* bisection: the delay whose cost varies */
    uint64_t runs;
    window *record; /* when set, each probe of the bisection is kept here */
} oracle_ctx;

typedef struct outcome {
    const char *verdict; /* reproduced | no_failure | abstained | deterministic | timing_sensitive */
    afd_timing timing;   /* set for timing_sensitive */
    tally natural;
    double lo, hi;
    char *token;         /* the minimal failing token (or the searched one) */
    char *pass_token;
    uint64_t replay_runs, replay_failed, pass_runs, pass_passed;
    window win;
    afd_cause c;
    afd_evidence ev;
    char *failure; /* Owned; may hold NUL bytes: failure_len is its length. */
    size_t failure_len;
    const char *abstain_reason;
    int traces_differ; /* the failing replays all failed, but not with one trace */
    /* --fix */
    int fix_tried;
    const char *fix_kind;   /* "LOCK" or NULL */
    afd_buf fix_diff;
    char fix_why[512];      /* why no fix was proposed */
    afd_gate_check gate[AFD_GATE__COUNT];
    int gate_ran;
    char *fix_file;         /* the file the fix patches (relative path) */
    afd_buf fix_text;       /* the patched text */
    afd_buf buggy_with_test; /* the original text with only the regression test added */
    char *regression_node;  /* the regression test's node id, or NULL when none was written */
    char regression_why[300];
    int reg_ran, reg_fails_before, reg_passes_after;
    /* verification tiers (run only for a gated fix) */
    int verified_ran;
    uint64_t v_replay_runs, v_replay_passed;
    uint64_t v_explore_n, v_explore_failed_before, v_explore_failed_after;
    uint64_t v_natural_runs, v_natural_failed;
    double v_wall_before_ms, v_wall_after_ms;
    char v_error[256];
    int applied;
    char apply_note[600];   /* what --apply did, or why it did not */
    afd_buf fix_before;     /* the text the proposed fix was computed from (--apply checks it) */
    char *first_seen;       /* --apply: the test's file when the investigation started (Owned) */
    size_t first_seen_len;
    char *first_path;       /* Owned: that file's path */
    /* every candidate fix synthesized, smallest first; each tried in turn until one is verified */
    struct candidate {
        const char *kind;
        char *file, *before;
        size_t len;
        afd_buf after;
        size_t changed;       /* lines added or removed, the regression test not counted */
        int tried, gate_passed, verified;
    } cand[4];
    size_t n_cand;
} outcome;

#endif
