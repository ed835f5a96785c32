/* runs.c -- what the engine's commands share (runs.h): the clock, the pool started from the
 * command line, batches of runs dispatched to it, and the tally every command keeps of them.
 *
 * A run is "failed" when the test failed, errored, hung or crashed; a skip or a run stopped at the
 * step limit is neither a pass nor a failure and is counted apart. The tally records each run in
 * the investigation's run log when the caller gave it one (tally.log). */
#include "cmds.h"
#include "runs.h"
#include "timing.h"
#include "afd.h"
#include "delays.h"
#include "out.h"
#include "pool.h"
#include "schedule.h"
#include "shell.h"
#include "stats.h"
#include "token.h"
#include "trace.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

uint64_t afd_runs_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

int afd_runs_is_failure(int outcome)
{
    return outcome == AFD_OUT_FAIL || outcome == AFD_OUT_ERROR || outcome == AFD_OUT_HANG ||
           outcome == AFD_OUT_CRASH;
}

/* The last error line, for a run over several tests, which reports each test's error with it. */
static char last_error[4096];

const char *afd_runs_last_error(void)
{
    return last_error;
}

void afd_runs_clear_error(void)
{
    last_error[0] = 0;
}

void afd_runs_error_line(const char *fmt, const char *a, const char *b)
{
    /* The arguments are often the user's (a node id, the worker's collection error), so the line
     * goes through the terminal filter; a line too long for the buffer is cut, not lost. */
    char *line = last_error;
    int n = snprintf(line, sizeof last_error, fmt, a, b);
    size_t len = n < 0 ? 0 : (size_t)n < sizeof last_error ? (size_t)n : sizeof last_error - 1;
    fputs("affidavit: error: ", stderr);
    afd_term_write(stderr, line, len);
    fputc('\n', stderr);
}

char *afd_runs_text_dup(const char *s, size_t len, size_t *out_len)
{
    if (!s)
        len = 0;
    char *p = malloc(len + 1);
    if (p) {
        if (len)
            memcpy(p, s, len);
        p[len] = 0;
    }
    *out_len = p ? len : 0;
    return p;
}

void afd_tally_finish(tally *t)
{
    free(t->steps);
    free(t->wall);
    free(t->first_failure);
    free(t->foreign_loop);
    free(t->thread);
    free(t->unwoken);
    free(t->shared);
}

void afd_runlog_finish(runlog *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++)
        free((char *)r->v[i].token);
    free(r->v);
    memset(r, 0, sizeof *r);
}

static void runlog_add(runlog *r, const afd_run_result *res, const afd_trace *tr, uint64_t digest)
{
    if (r->n == r->cap) {
        size_t ncap = r->cap ? r->cap * 2 : 256;
        afd_store_run *nv = realloc(r->v, ncap * sizeof *nv);
        if (!nv)
            return; /* the incident then lists fewer runs; the investigation goes on */
        r->v = nv;
        r->cap = ncap;
    }
    char *token = strdup(tr && tr->token ? tr->token : "");
    if (!token)
        return;
    r->v[r->n] = (afd_store_run){
        .index = r->n, .token = token, .outcome = res->outcome, .wall_ns = res->wall_ns, .digest = digest};
    r->n++;
}

int afd_tally_add(tally *t, const afd_run_result *res, const afd_trace *tr)
{
    if (t->runs == t->cap) {
        uint64_t ncap = t->cap ? t->cap * 2 : 64;
        uint64_t *s = realloc(t->steps, ncap * sizeof *s);
        if (!s)
            return AFD_ENOMEM;
        t->steps = s;
        uint64_t *w = realloc(t->wall, ncap * sizeof *w);
        if (!w)
            return AFD_ENOMEM;
        t->wall = w;
        t->cap = ncap;
    }
    /* In a controlled run, only a loop the run controlled counts: a loop's last LOOP event says
     * whether it stayed controlled (flags; a loop that gave control up records a second one). */
    uint8_t ctl[64] = {0};
    int loops = 0;
    for (uint32_t i = 0; tr && i < tr->n_events; i++) {
        const afd_event *e = &tr->events[i];
        if (e->kind == AFD_EV_LOOP && tr->mode == AFD_MODE_CONTROLLED && e->a < sizeof ctl) {
            loops += (e->flags != 0) - ctl[e->a];
            ctl[e->a] = e->flags != 0;
        } else {
            loops += e->kind == AFD_EV_LOOP && (e->flags || tr->mode != AFD_MODE_CONTROLLED);
        }
        if (e->kind == AFD_EV_UNCONTROLLED && e->a == AFD_TRACE_FOREIGN_LOOP && !t->foreign_loop &&
            !(t->foreign_loop = strdup(afd_trace_string(tr, e->b))))
            return AFD_ENOMEM;
        if (e->kind == AFD_EV_UNCONTROLLED && e->a == AFD_TRACE_SHARED && e->b != AFD_NOSTR && !t->shared &&
            !(t->shared = strdup(afd_trace_string(tr, e->b))))
            return AFD_ENOMEM;
        if (e->kind == AFD_EV_UNCONTROLLED && e->a == AFD_TRACE_THREADS && e->b != AFD_NOSTR && !t->thread &&
            !(t->thread = strdup(afd_trace_string(tr, e->b))))
            return AFD_ENOMEM;
        if (e->kind == AFD_EV_UNCONTROLLED && e->a == AFD_TRACE_UNWOKEN && !t->unwoken &&
            !(t->unwoken = strdup(e->b != AFD_NOSTR ? afd_trace_string(tr, e->b) : "")))
            return AFD_ENOMEM;
    }
    t->steps[t->runs] = tr ? tr->steps : 0;
    t->wall[t->runs] = res->wall_ns;
    uint64_t digest = tr ? afd_trace_digest(tr) : 0;
    if (t->log)
        runlog_add(t->log, res, tr, digest);
    if (t->runs == 0)
        t->first_digest = digest;
    else if (digest != t->first_digest)
        t->digests_differ = 1;
    t->runs++;
    if (res->outcome < AFD_OUT__COUNT)
        t->by_outcome[res->outcome]++;
    if (tr)
        t->flags_union |= tr->flags;
    if (tr && (tr->flags & AFD_TRACE_TRUNCATED))
        t->truncated++;
    if (!loops && (res->outcome == AFD_OUT_PASS || res->outcome == AFD_OUT_FAIL))
        t->no_loop++;
    if (afd_runs_is_failure(res->outcome)) {
        t->failed++;
        if (!t->first_failure) {
            t->first_failure = afd_runs_text_dup(res->failure, res->failure_len, &t->first_failure_len);
            t->first_failure_outcome = res->outcome;
        }
    }
    return 0;
}

void afd_runs_json_outcomes(afd_buf *o, const tally *t)
{
    afd_buf_printf(o, "\"outcomes\": {");
    for (int k = 0; k < AFD_OUT__COUNT; k++)
        afd_buf_printf(o, "%s\"%s\": %" PRIu64, k ? ", " : "", afd_outcome_name(k), t->by_outcome[k]);
    /* a run's trace that hit the size bound lost events: said, never silent */
    afd_buf_printf(o, "}, \"truncated_traces\": %" PRIu64, t->truncated);
}

void afd_runs_json_uncontrolled(afd_buf *o, uint32_t flags)
{
    afd_buf_printf(o, "\"uncontrolled\": [");
    int n = 0;
    if (flags & AFD_TRACE_THREADS)
        afd_buf_printf(o, "%s\"threads\"", n++ ? ", " : "");
    if (flags & AFD_TRACE_REAL_IO)
        afd_buf_printf(o, "%s\"real-io\"", n++ ? ", " : "");
    if (flags & AFD_TRACE_REAL_WAIT)
        afd_buf_printf(o, "%s\"real-time-wait\"", n++ ? ", " : "");
    afd_buf_printf(o, "]");
}

const char *afd_runs_uncontrolled_words(uint32_t flags)
{
    if (flags & AFD_TRACE_THREADS)
        return "threads, which work in real time";
    if (flags & AFD_TRACE_REAL_IO)
        return "real file descriptors (sockets, pipes)";
    if (flags & AFD_TRACE_REAL_WAIT)
        return "waits on real time (I/O, executors, or a wait nothing could end)";
    if (flags & AFD_TRACE_FOREIGN_LOOP)
        return "an event loop affidavit does not control";
    return NULL;
}

const char *afd_runs_find_python(const afd_cli *cli, char *buf, size_t len)
{
    if (cli->python)
        return cli->python;
    const char *env = getenv("AFFIDAVIT_PYTHON");
    if (env && *env)
        return env;
    ssize_t n = readlink("/proc/self/exe", buf, len - 16);
    if (n > 0) {
        buf[n] = 0;
        char *slash = strrchr(buf, '/');
        if (slash) {
            const char *names[] = {"python3", "python"};
            for (int i = 0; i < 2; i++) {
                snprintf(slash + 1, len - (size_t)(slash + 1 - buf), "%s", names[i]);
                if (access(buf, X_OK) == 0)
                    return buf;
            }
        }
    }
    return "python3";
}

int afd_runs_start_pool(const afd_cli *cli, afd_pool **pool)
{
    if (cli->pool) {
        *pool = cli->pool;
        int rc = afd_pool_set_item(cli->pool, cli->nodeid);
        if (rc == 0)
            return 0;
        const char *why =
            rc != AFD_EINVAL ? afd_strerror(rc)
            : afd_pool_other_ids(cli->pool, cli->nodeid)
                ? "the workers collected its function under other parameter ids: an id made from an "
                  "object's repr (a memory address) changes with every process"
                : "no test of that node id";
        afd_runs_error_line(rc == AFD_EINVAL ? "%s was not collected (%s)" : "%s: %s", cli->nodeid, why);
        return rc == AFD_EINVAL ? AFD_EXIT_USAGE : AFD_EXIT_INTERNAL;
    }
    return afd_runs_start_pool_in(cli, pool, NULL);
}

void afd_runs_stop_pool(const afd_cli *cli, afd_pool *pool)
{
    if (pool != cli->pool)
        afd_pool_free(pool);
}

int afd_runs_start_pool_in(const afd_cli *cli, afd_pool **pool, const char *cwd)
{
    char pybuf[4096], abs_py[2 * PATH_MAX + 2];
    const char *python = afd_runs_find_python(cli, pybuf, sizeof pybuf);
    /* workers in another directory need the interpreter's path made absolute from this one --
     * not resolved: a venv's python is a symlink, and its path is what makes it the venv's */
    char here[PATH_MAX];
    if (cwd && python[0] != '/' && strchr(python, '/') && getcwd(here, sizeof here)) {
        snprintf(abs_py, sizeof abs_py, "%s/%s", here, python);
        python = abs_py;
    }
    /* `check` builds its object while the harness is imported: a constructor that never returns
     * shows up as a collection that never ends, and the message should point at it. */
    char import_hint[400] = "";
    if (cli->check_cls)
        snprintf(import_hint, sizeof import_hint, "%s() (or --init) or the module that defines %s",
                 cli->check_cls, cli->check_cls);
    afd_pool_opts o = {
        .cwd = cwd,
        .python = python,
        .nodeid = cli->nodeid,
        .workers = cli->workers,
        .timeout_ms = (uint32_t)(cli->timeout_s * 1000.0),
        .max_steps = cli->max_steps,
        .max_memory_mb = cli->max_memory_mb,
        .import_hint = cli->check_cls ? import_hint : NULL,
        .pytest_args = cli->pytest_args,
        .n_pytest_args = cli->n_pytest_args,
        .collect = cli->collect,
        .n_collect = cli->n_collect,
    };
    char err[8192] = ""; /* the worker's message whole: pytest's usage errors run long */
    int rc = afd_pool_new(pool, &o, err, sizeof err);
    if (rc < 0) {
        if (afd_interrupted) {
            /* Ctrl-C while the workers start: nothing ran, and the user is told so */
            fprintf(stderr, "affidavit: interrupted while the workers were starting, before any run\n");
            return AFD_EXIT_INTERRUPTED;
        }
        afd_runs_error_line("%s%s", err, "");
        return rc == AFD_EIO || rc == AFD_EINVAL ? AFD_EXIT_USAGE : AFD_EXIT_INTERNAL;
    }
    return 0;
}

/* Runs make(i) for i in [first, first + n) on the pool, calling take() for each result in
 * completion order. Stops submitting when take() returns nonzero or the time budget is spent.
 * Returns 0, or AFD_EIO if interrupted. */

static int batch_runs(afd_pool *pool, uint64_t first, uint64_t n, double seconds, make_marked_fn make,
                      take_fn take, void *ctx, afd_progress *prog, tally *t)
{
    uint64_t next = first, end = first + n;
    uint64_t deadline = seconds > 0 ? afd_runs_now_ns() + (uint64_t)(seconds * 1e9) : 0;
    int stop = 0;
    for (;;) {
        /* Copies of one test side by side only while its runs keep to themselves: two copies
         * share its files, its ports and its lock files, which no pytest run does (pool.h). */
        while (!stop && next < end && afd_pool_may_start(pool)) {
            if (deadline && afd_runs_now_ns() >= deadline) {
                stop = 1;
                break;
            }
            uint8_t mode;
            char *token = NULL;
            uint64_t mark_lo = 0;
            uint32_t mark_n = 0;
            int rc = make(ctx, next, &mode, &token, &mark_lo, &mark_n);
            if (rc < 0)
                return rc;
            rc = afd_pool_submit_marked(pool, next, mode, token ? token : "", mark_lo, mark_n);
            free(token);
            if (rc < 0)
                break;
            next++;
        }
        if (afd_pool_busy(pool) == 0)
            break;
        afd_run_result res;
        int rc = afd_pool_next(pool, &res);
        if (rc == AFD_EINVAL)
            break;
        if (rc < 0)
            return rc;
        afd_trace tr;
        int have = res.trace_len && afd_trace_decode(&tr, res.trace, res.trace_len) == 0;
        afd_pool_note_run(pool, have, have ? tr.flags : 0);
        if (afd_tally_add(t, &res, have ? &tr : NULL) < 0) {
            afd_run_result_finish(&res);
            if (have)
                afd_trace_finish(&tr);
            return AFD_ENOMEM;
        }
        if (take(ctx, res.run_id, &res, have ? &tr : NULL))
            stop = 1;
        afd_progress_update(prog, t->runs, n, t->failed);
        afd_run_result_finish(&res);
        if (have)
            afd_trace_finish(&tr);
        if (deadline && afd_runs_now_ns() >= deadline)
            stop = 1;
    }
    return 0;
}

/* afd_runs_batch's make and ctx, behind a make_marked_fn whose runs measure nothing. */
typedef struct unmarked {
    make_fn make;
    take_fn take;
    void *ctx;
} unmarked;

static int make_unmarked(void *ctx, uint64_t i, uint8_t *mode, char **token, uint64_t *mark_lo,
                         uint32_t *mark_n)
{
    const unmarked *u = ctx;
    *mark_lo = 0;
    *mark_n = 0;
    return u->make(u->ctx, i, mode, token);
}

static int take_unmarked(void *ctx, uint64_t i, afd_run_result *res, afd_trace *tr)
{
    const unmarked *u = ctx;
    return u->take(u->ctx, i, res, tr);
}

int afd_runs_batch(afd_pool *pool, uint64_t first, uint64_t n, double seconds, make_fn make, take_fn take,
                   void *ctx, afd_progress *prog, tally *t)
{
    unmarked u = {.make = make, .take = take, .ctx = ctx};
    return afd_runs_batch_marked(pool, first, n, seconds, make_unmarked, take_unmarked, &u, prog, t);
}

int afd_runs_batch_alone(afd_pool *pool, uint64_t first, uint64_t n, double seconds, make_fn make,
                         take_fn take, void *ctx, afd_progress *prog, tally *t)
{
    int was = afd_pool_alone(pool, 1);
    int rc = afd_runs_batch(pool, first, n, seconds, make, take, ctx, prog, t);
    afd_pool_alone(pool, was);
    return rc;
}

int afd_runs_batch_marked(afd_pool *pool, uint64_t first, uint64_t n, double seconds, make_marked_fn make,
                          take_fn take, void *ctx, afd_progress *prog, tally *t)
{
    uint64_t start = afd_runs_now_ns(), runs_before = t->runs;
    int rc = batch_runs(pool, first, n, seconds, make, take, ctx, prog, t);
    if (t->spans) {
        char args[160];
        snprintf(args, sizeof args, "{\"first\": %" PRIu64 ", \"asked\": %" PRIu64 ", \"runs\": %" PRIu64 "}",
                 first, n, t->runs - runs_before);
        afd_spans_add(t->spans, "batch", "runs", start, afd_runs_now_ns(), args);
    }
    return rc;
}

/* A test over several (many.c) that ran, but not on a loop affidavit controls: not a usage error. */
static void mark_not_explorable(const afd_cli *cli)
{
    if (cli->summary)
        cli->summary->not_explorable = 1;
}

int afd_runs_report_no_loop(const afd_cli *cli, const tally *t)
{
    if (t->runs && t->no_loop == t->runs && t->foreign_loop) {
        mark_not_explorable(cli);
        /* The test's own loop ran on real time: nothing of it can be scheduled, counted or replayed. */
        afd_runs_error_line(
            "%s ran its own event loop (%s), which affidavit does not control: it can neither "
            "schedule nor replay that loop's steps",
            cli->nodeid, t->foreign_loop);
        return 1;
    }
    if (t->runs && t->no_loop == t->runs && t->failed && t->first_failure) {
        /* It ran, and failed before any loop did: its own failure says more than "no loop". */
        char failure[600];
        size_t n = 0;
        for (size_t i = 0; i < t->first_failure_len && t->first_failure[i] != '\n' && n + 1 < sizeof failure;
             i++)
            failure[n++] = t->first_failure[i] ? t->first_failure[i] : ' ';
        failure[n] = 0;
        mark_not_explorable(cli);
        afd_runs_error_line("%s ran no asyncio event loop, and failed on its own: %s", cli->nodeid, failure);
        return 1;
    }
    if (t->runs && t->no_loop == t->runs) {
        mark_not_explorable(cli);
        afd_runs_error_line(
            "%s ran no asyncio event loop: affidavit controls asyncio's loop (is the test async?)%s",
            cli->nodeid, "");
        return 1;
    }
    return 0;
}

void afd_runs_step_limit_line(afd_buf *o, const tally *t, uint64_t max_steps)
{
    uint64_t n = t->by_outcome[AFD_OUT_STEP_LIMIT];
    if (n)
        afd_buf_printf(o,
                       "  step limit reached (%" PRIu64 " steps) in %" PRIu64 " of %" PRIu64
                       " runs: neither passes nor failures\n",
                       max_steps, n, t->runs);
}

void afd_runs_truncated_line(afd_buf *o, const tally *t)
{
    if (t->truncated)
        afd_buf_printf(o,
                       "  trace truncated at its size bound in %" PRIu64 " of %" PRIu64
                       " runs (events were dropped)\n",
                       t->truncated, t->runs);
}

int afd_runs_interrupted_exit(const tally *t)
{
    fprintf(stderr, "affidavit: interrupted after %" PRIu64 " runs (%" PRIu64 " failed)\n", t->runs,
            t->failed);
    return AFD_EXIT_INTERRUPTED;
}

/* ---- the runs of every command ---- */

int afd_runs_make_natural(void *ctx, uint64_t i, uint8_t *mode, char **token)
{
    *mode = AFD_MODE_NATURAL;
    *token = NULL;
    return 0;
}

int afd_runs_take_none(void *ctx, uint64_t i, afd_run_result *res, afd_trace *tr)
{
    return 0;
}

int afd_runs_portfolio_token(uint64_t seed, uint64_t i, uint32_t est_steps, int only, uint8_t *mode,
                             char **token)
{
    afd_schedule s;
    int rc = afd_schedule_portfolio(&s, seed, i, est_steps, only);
    if (rc < 0)
        return rc;
    rc = afd_token_encode(&s, token);
    afd_schedule_finish(&s);
    *mode = AFD_MODE_CONTROLLED;
    return rc;
}
