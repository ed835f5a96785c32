/* runs.h -- what the engine's commands share: the pool started from the command line, batches of
 * runs dispatched to it, and the tally every command keeps of their outcomes. */
#ifndef AFD_ENGINE_RUNS_H
#define AFD_ENGINE_RUNS_H

#include "buf.h"
#include "cmds.h"
#include "out.h"
#include "pool.h"
#include "spans.h"
#include "store.h"
#include "trace.h"

#include <stdint.h>

/* Every run an investigation made, for its incident: its token, outcome, duration and trace
 * digest. */
typedef struct runlog {
    afd_store_run *v; /* Owned array; each token owned. */
    size_t n, cap;
} runlog;

/* What every command accumulates over its runs. */
typedef struct tally {
    uint64_t runs, failed, no_loop, by_outcome[AFD_OUT__COUNT];
    uint64_t *steps, *wall; /* Owned arrays of `runs` entries. */
    uint64_t cap;
    uint32_t flags_union;
    uint64_t truncated; /* runs whose trace hit the size bound (AFD_TRACE_TRUNCATED) */
    uint64_t first_digest;
    int digests_differ;
    char *first_failure; /* Owned; may hold NUL bytes: first_failure_len is its length. */
    size_t first_failure_len;
    int first_failure_outcome;
    char *foreign_loop; /* Owned: the first run's description of a loop not affidavit's, or NULL. */
    char *thread;       /* Owned: the name of the first thread seen working while the loop waited, or NULL. */
    char *unwoken;      /* Owned: the first thread that queued a callback with call_soon while the loop waited
                           (AFD_TRACE_UNWOKEN), or NULL. */
    char *shared; /* Owned: what the first run that touched a shared resource did (AFD_TRACE_SHARED), or NULL.
                   */
    /* Set by the caller after zeroing the tally: afd_tally_add records each run in log (an
     * investigation's incident lists its runs), afd_runs_batch each batch as a span (--trace-out). */
    runlog *log;      /* Borrowed, or NULL. */
    afd_spans *spans; /* Borrowed, or NULL. */
} tally;

void afd_runlog_finish(runlog *r); /* Accepts NULL. */

uint64_t afd_runs_now_ns(void);
/* A NUL-terminated heap copy of the len bytes at s (NUL bytes inside kept; s NULL: ""), its length
 * in *out_len. The caller frees it. NULL (and *out_len 0) when out of memory. */
char *afd_runs_text_dup(const char *s, size_t len, size_t *out_len);
/* Failed, errored, hung or crashed: a skip or a step-limit stop is neither a pass nor a failure. */
int afd_runs_is_failure(int outcome);
/* "affidavit: error: " + fmt (two %s) on stderr. */
void afd_runs_error_line(const char *fmt, const char *a, const char *b);
void afd_tally_finish(tally *t);
int afd_tally_add(tally *t, const afd_run_result *res, const afd_trace *tr);
void afd_runs_json_outcomes(afd_buf *o, const tally *t);
void afd_runs_json_uncontrolled(afd_buf *o, uint32_t flags);
/* Words for the first uncontrolled source in flags, or NULL. */
const char *afd_runs_uncontrolled_words(uint32_t flags);
/* Starts the pool (or takes cli->pool, set to run cli->nodeid); on failure prints the one-line
 * error and returns the exit code. */
int afd_runs_start_pool(const afd_cli *cli, afd_pool **pool);
/* Frees a pool afd_runs_start_pool started; cli->pool is its owner's. */
void afd_runs_stop_pool(const afd_cli *cli, afd_pool *pool);
/* The last line afd_runs_error_line wrote (without its "affidavit: error: "), "" when none. */
const char *afd_runs_last_error(void);
void afd_runs_clear_error(void);
/* The interpreter workers run: --python, AFFIDAVIT_PYTHON, beside the engine, python3. */
const char *afd_runs_find_python(const afd_cli *cli, char *buf, size_t len);
/* The same with the workers in directory cwd (the verifier's mirror of the project). */
int afd_runs_start_pool_in(const afd_cli *cli, afd_pool **pool, const char *cwd);
int afd_runs_report_no_loop(const afd_cli *cli, const tally *t);
int afd_runs_interrupted_exit(const tally *t);
/* "  step limit reached ... in K of N runs" when any run stopped there; "  trace truncated ..."
 * when any run's trace hit its size bound. Nothing otherwise. */
void afd_runs_step_limit_line(afd_buf *o, const tally *t, uint64_t max_steps);
void afd_runs_truncated_line(afd_buf *o, const tally *t);

/* make(i) builds run i's mode and token (the token is the caller's to free); take() sees each
 * result in completion order with its decoded trace (NULL when none) and returns nonzero to stop
 * submitting. Returns 0, or AFD_EIO if interrupted. seconds > 0 bounds the batch in time. The
 * batch is one span of t->spans when that is set. */
typedef int (*make_fn)(void *ctx, uint64_t i, uint8_t *mode, char **token);
typedef int (*take_fn)(void *ctx, uint64_t i, afd_run_result *res, afd_trace *tr);
int afd_runs_batch(afd_pool *pool, uint64_t first, uint64_t n, double seconds, make_fn make, take_fn take,
                   void *ctx, afd_progress *prog, tally *t);
/* afd_runs_batch with no other run of the test alive at any time (afd_pool_alone): a failure's
 * confirmation, a replay. */
int afd_runs_batch_alone(afd_pool *pool, uint64_t first, uint64_t n, double seconds, make_fn make,
                         take_fn take, void *ctx, afd_progress *prog, tally *t);
/* The same batch whose runs may measure slots: make also sets the steps run i measures
 * (afd_pool_submit_marked's mark_lo, mark_n; both 0 for none). afd_runs_batch is this with every
 * run unmarked. */
typedef int (*make_marked_fn)(void *ctx, uint64_t i, uint8_t *mode, char **token, uint64_t *mark_lo,
                              uint32_t *mark_n);
int afd_runs_batch_marked(afd_pool *pool, uint64_t first, uint64_t n, double seconds, make_marked_fn make,
                          take_fn take, void *ctx, afd_progress *prog, tally *t);
int afd_runs_make_natural(void *ctx, uint64_t i, uint8_t *mode, char **token);
/* A take_fn that keeps nothing beyond the tally. */
int afd_runs_take_none(void *ctx, uint64_t i, afd_run_result *res, afd_trace *tr);
/* The portfolio's i-th schedule (afd_schedule_portfolio) as a controlled run's mode and token. */
int afd_runs_portfolio_token(uint64_t seed, uint64_t i, uint32_t est_steps, int only, uint8_t *mode,
                             char **token);

#endif
