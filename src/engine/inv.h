/* inv.h -- the state `affidavit investigate` carries through its stages (see investigate.c).
 *
 * `inv` is the run-time side (the pool, every run seen, the search's finds, the stages' measures);
 * `outcome` is what the investigation concluded, from which the incident document is written.
 * Pointer fields say Owned (freed by the investigation's one cleanup path, inv_finish in
 * investigate.c, which accepts state filled only in part) or Borrowed. Each stage is a function
 * `int inv_STAGE(inv *, outcome *)` returning 0 to go on, INV_STOP or INV_QUIT to end the
 * sequence, or a negative AFD_E* code. */
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
#include "spans.h"
#include "systematic.h"
#include "timing.h"
#include "trace.h"

#include <stddef.h>
#include <stdint.h>

/* The random schedules investigate's search runs before the systematic search (at most half of --runs). */
#define INV_RANDOM_FIRST 50
/* The most random schedules the search runs in all (the first share and the rest after the
 * systematic search): the rest of --runs is the systematic search's. */
#define INV_RANDOM_MAX 1000

typedef struct delay_set {
    afd_schedule base; /* strategy zero with the failing seed, no delays */
    afd_delay *d;      /* Owned, with Owned labels. */
    uint32_t n;
    uint64_t *cost;      /* Owned: the current cost of each delay (bisection changes one) */
    const uint8_t *keep; /* Borrowed: the delays ddmin keeps (NULL: all) */
} delay_set;

/* The investigation's stages, in the order they run. */
enum {
    INV_SAMPLE,
    INV_SEARCH,
    INV_REPRODUCE,
    INV_MINIMIZE,
    INV_EXPLAIN,
    INV_REPAIR,
    INV_VERIFY,
    INV_REPORT,
    INV__STAGES
};

/* What a stage returns besides 0 (go on) and a negative AFD_E* code (the investigation failed,
 * or was interrupted: AFD_EIO). */
enum {
    INV_STOP = 1, /* concluded: report o->verdict, exit with v->exit */
    INV_QUIT = 2  /* no report: the stage printed why; exit with v->exit */
};

/* One stage's measure: its time on the monotonic clock and the runs it made. */
struct inv_stage {
    const char *name; /* Borrowed: a string literal. */
    double seconds;
    uint64_t runs;
    int ran;
    uint64_t start_ns, start_runs; /* while it runs: its start, and the runs made before it */
    int open;                      /* it runs now (the report stage, while the report is written) */
};

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
    const afd_cli *cli; /* Borrowed. */
    afd_pool *pool;     /* Owned. */
    afd_progress prog;
    uint64_t total_runs;
    uint64_t step_limited; /* runs stopped at --max-steps: neither passes nor failures */
    uint64_t truncated;    /* runs whose trace hit its size bound */
    /* every run seen, for Ochiai and the blocking-call predicate */
    afd_run_summary *sums; /* Owned: n_sums of cap_sums, each finished by inv_finish */
    uint8_t *blocked;      /* Owned: per run: it made a blocking call of >= 1 ms or had a slow step */
    uint8_t *natural;      /* Owned: per run: a natural run */
    size_t n_sums, cap_sums;
    int in_natural;   /* the natural phase is running */
    char *block_site; /* Owned: the longest blocking call of a failing natural run: "file:line" */
    char *block_task; /* Owned: its task's label */
    uint64_t block_ns;
    uint32_t failing_flags; /* uncontrolled sources seen in failing runs */
    /* search */
    uint64_t seed;
    uint32_t est_steps;
    afd_fired_sites normal; /* the deadlines the zero schedule's run (search run 0) saw fire */
    uint64_t found_index;
    uint64_t index_offset; /* added to a search batch's index to make it the run's place in the search */
    char *found_token;     /* Owned: the first failing search schedule's token */
    /* the lowest failing search run that outlasted a deadline, kept aside (timing.h) */
    uint64_t cand_index;
    char *cand_token;   /* Owned. */
    char *cand_failure; /* Owned; may hold NUL bytes. */
    size_t cand_failure_len;
    afd_timing timing;
    /* a batch's kept run (first failing, or first of a replay) */
    kept_run keep;
    int keep_failing_only;
    int error;
    int trace_lines;  /* replays record the lines of user code (for inferred accesses) */
    afd_srcmap *srcs; /* Owned: the sources traced runs ran, scanned once */
    /* the pipeline */
    int exit;        /* the exit code, once a stage concluded or quit */
    int interrupted; /* an interrupted investigation is being reported */
    uint64_t t0;     /* when the investigation started (afd_runs_now_ns) */
    struct inv_stage stages[INV__STAGES];
    uint64_t tier_runs;          /* runs of the patched program (the verification's, not the incident's) */
    runlog log;                  /* every run of the incident, for the store */
    afd_spans *spans;            /* Owned: the pipeline's spans (--trace-out), or NULL */
    delay_set ds;                /* minimize: the failing run's delays, then the minimal set */
    kept_run fail_run, pass_run; /* the minimal failing run and its nearest passing run */
    afd_view fv, pv;             /* explain: the views of both, which repair reads */
    int have_fv, have_pv;        /* fv built; pv built and passing (else repair gets NULL) */
} inv;

typedef struct window {
    int found;
    char *label; /* Owned: the delayed step's task */
    uint32_t ordinal;
    uint64_t lo, hi; /* passes at lo, fails at hi (ns) */
    uint64_t runs;   /* oracle runs spent minimizing and bisecting */
    uint32_t n_delays_before, n_delays_after;
    int via_fallback; /* found by searching one delay under a passing seed */
    char *wakes;      /* Owned: a plain callback's window: the task that callback wakes (or NULL) */
    struct {
        uint64_t delay;
        int failed;
    } probes[64]; /* the bisection of the named delay: each delay tried and whether it failed */
    uint32_t n_probes;
} window;

typedef struct oracle_ctx {
    inv *v;         /* Borrowed. */
    delay_set *ds;  /* Borrowed. */
    uint32_t which; /* bisection: the delay whose cost varies */
    uint64_t runs;
    window *record; /* Borrowed: when set, each probe of the bisection is kept here */
} oracle_ctx;

typedef struct outcome {
    const char *verdict; /* Borrowed literal: reproduced | no_failure | abstained | deterministic |
                          * timing_sensitive | interrupted */
    afd_timing timing;   /* set for timing_sensitive */
    tally natural;
    double lo, hi;
    /* the search: runs of the random portfolio, and the systematic search when it ran */
    uint64_t search_random_runs;
    int sys_ran;
    afd_sys_opts sys_opts;
    afd_sys_result sys;     /* its fail_token and failure are moved out when adopted */
    uint64_t sys_found_run; /* 1-based among the search's runs when the systematic search found it */
    char *token;            /* Owned: the minimal failing token (or the searched one) */
    char *pass_token;       /* Owned: the nearest passing run's token, or NULL */
    uint64_t replay_runs, replay_failed, pass_runs, pass_passed;
    window win;
    afd_cause c;
    afd_evidence ev;
    char *failure; /* Owned; may hold NUL bytes: failure_len is its length. */
    size_t failure_len;
    const char *abstain_reason; /* Borrowed: a literal, afd_runs_uncontrolled_words' text or abstain_buf */
    char abstain_buf[300];
    int traces_differ; /* the failing replays all failed, but not with one trace */
    /* --fix */
    int fix_tried;
    const char *fix_kind; /* Borrowed literal: "LOCK" ... or NULL */
    afd_buf fix_diff;
    char fix_why[512]; /* why no fix was proposed */
    afd_gate_check gate[AFD_GATE__COUNT];
    int gate_ran;
    char *fix_file;          /* Owned: the file the fix patches (relative path) */
    afd_buf fix_text;        /* the patched text */
    afd_buf buggy_with_test; /* the original text with only the regression test added */
    char *regression_node;   /* Owned: the regression test's node id, or NULL when none was written */
    char regression_why[300];
    int reg_ran, reg_fails_before, reg_passes_after;
    /* verification tiers (run only for a gated fix) */
    int verified_ran;
    uint64_t v_replay_runs, v_replay_passed;
    uint64_t v_explore_n, v_explore_failed_before, v_explore_failed_after;
    /* the systematic tier: the same bounded enumeration before the fix (every schedule run, failures
     * counted) and after it (stopped at a failure) */
    int v_sys_ran, v_sys_before_ran;
    afd_sys_opts v_sys_opts;
    afd_sys_result v_sys_before, v_sys_after;
    uint64_t v_natural_runs, v_natural_failed;
    double v_wall_before_ms, v_wall_after_ms;
    char v_error[256];
    int applied;
    char apply_note[600]; /* what --apply did, or why it did not */
    afd_buf fix_before;   /* the text the proposed fix was computed from (--apply checks it) */
    char *first_seen;     /* --apply: the test's file when the investigation started (Owned) */
    size_t first_seen_len;
    char *first_path; /* Owned: that file's path */
    /* every candidate fix synthesized, smallest first; each tried in turn until one is verified */
    struct candidate {
        const char *kind;    /* Borrowed literal. */
        char *file, *before; /* Owned. */
        size_t len;
        afd_buf after;
        size_t changed; /* lines added or removed, the regression test not counted */
        int tried, gate_passed, verified;
    } cand[8];
    size_t n_cand;
} outcome;

/* inv_runs.c: runs, batches, and the first three stages */
void inv_kept_finish(kept_run *k); /* Accepts NULL. */
/* Runs token n times. *t receives the tally (the caller finishes it); v->keep the first run. */
int inv_replay(inv *v, const char *token, uint64_t n, tally *t);
/* One run of one schedule: 1 when it failed, 0 when it passed, negative on error. */
int inv_run_schedule(inv *v, const afd_schedule *s, kept_run *keep);
int inv_callback_task(const afd_trace *tr, uint32_t task);
void inv_note_traces_differ(outcome *o, const tally *t, uint32_t flags);
const char *inv_nondeterministic_reason(uint32_t flags);
int inv_sample(inv *v, outcome *o);
int inv_search(inv *v, outcome *o);
int inv_reproduce(inv *v, outcome *o);

/* inv_minimize.c: the deterministic-failure check, ddmin and bisection */
void inv_delay_set_finish(delay_set *ds); /* Accepts NULL. */
int inv_minimize(inv *v, outcome *o);

/* inv_explain.c: the minimal runs replayed and compared */
int inv_explain(inv *v, outcome *o);
/* A failure every schedule shows: the starvation rule alone over view (Borrowed: one traced run of
 * the failing schedule) and every run seen, naming the blocking call in o->c when it holds. */
int inv_explain_deterministic(inv *v, outcome *o, const afd_view *view);

/* inv_force.c: for a cancellation cause (o->c, decided from v->fv), the cancel moved one step
 * earlier and one step later by schedules that differ from o->token in one delay, each replayed
 * cli->replays times, as two evidence rows in o->ev (or rows saying no such move was found).
 * Returns 0 (nothing done for another kind), or a negative AFD_E* code. */
int inv_force_cancel(inv *v, outcome *o);

/* inv_repair.c: --fix's candidates */
void inv_candidates_finish(outcome *o); /* Accepts NULL. */
int inv_repair(inv *v, outcome *o);
/* The file a fix edits (Owned by the caller), or NULL with the reason in o->fix_why. */
char *inv_read_source(outcome *o, const char *file, size_t *len);
/* Keeps a synthesized fix as a candidate: kind is a literal, the texts are copied; a candidate
 * past the last slot is dropped. */
void inv_add_candidate(outcome *o, const char *kind, const char *file, const char *before, size_t len,
                       const afd_buf *after);

/* The proposers beside LOCK, AWAIT_TASK, EVENT_GATE, LOCK_ORDER and OFFLOAD (inv_repair.c). Each
 * reads the failing view f (and the passing one p, NULL when none) and o->c, adds its candidates
 * with inv_add_candidate, and when it adds none and o->n_cand is 0 says why in o->fix_why.
 * inv_repair_shape.c: LOCK_CALLER, RECHECK, SINGLE_FLIGHT for a lost update or a check-then-act
 * (called before LOCK). */
void inv_propose_lock_shapes(const afd_view *f, const afd_view *p, outcome *o, const afd_cli *cli);
/* inv_repair_handoff.c: HANDOFF_AT_WAKEUP and HANDOFF_CLEANUP for a cancelled hand-off or a lost
 * wake-up. */
void inv_propose_handoff(const afd_view *f, const afd_view *p, outcome *o, const afd_cli *cli);
/* inv_repair_drain.c: DRAIN_TASKS (await the background tasks the test does not hold) for an order
 * violation (after AWAIT_TASK and EVENT_GATE), and the fixes for a cancel_ordering cause. */
void inv_propose_drain(const afd_view *f, const afd_view *p, outcome *o, const afd_cli *cli);

/* inv_verify.c: each candidate gated and verified; --apply */
int inv_fix_verified(const outcome *o);
int inv_verify(inv *v, outcome *o);

/* inv_stages.c: the stages' measures, in the progress line, the documents and the trace */
void inv_stages_init(inv *v);
void inv_stage_begin(inv *v, int k);
void inv_stage_end(inv *v, int k);
/* Stage k's name, seconds and runs (0 and 0 for a stage that did not run; the stage still running,
 * the report while its documents are written, counts up to now). */
void inv_stage_measure(const inv *v, int k, const char **name, double *seconds, uint64_t *runs);

#endif
