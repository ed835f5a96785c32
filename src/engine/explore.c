/* explore.c -- explore: controlled schedules until one fails, then its token.
 *
 * Run 0 is the zero schedule, alone: the baseline whose step count sets pct's range, measured step by
 * step. When that measure proves every schedule runs the zero schedule's interleaving (closure.h), the
 * search ends there: the rest of the budget would run the same run again. When it proves that every
 * schedule keeping the program's deadlines runs it, only the portfolio's schedules that go beyond
 * them run (run_beyond). Otherwise the random portfolio, the systematic search and the portfolio's
 * rest follow (explore_search). Every number printed is a count of runs that were executed. */
#include "cmds.h"
#include "runs.h"
#include "timing.h"
#include "afd.h"
#include "buf.h"
#include "closure.h"
#include "out.h"
#include "pool.h"
#include "schedule.h"
#include "shell.h"
#include "iclass.h"
#include "systematic.h"
#include "sysenum.h"
#include "token.h"
#include "trace.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A growing array of numbers (afd_array_grow). Owned by its holder. */
typedef struct u64_list {
    uint64_t *v;
    size_t n, cap;
} u64_list;

static int push(u64_list *l, uint64_t x)
{
    if (afd_array_grow((void **)&l->v, &l->cap, l->n + 1, sizeof *l->v, 256) < 0)
        return AFD_ENOMEM;
    l->v[l->n++] = x;
    return 0;
}

typedef struct explore_ctx {
    uint64_t seed;
    uint64_t shard_k, shard_n; /* this shard runs portfolio schedules k, k+n, k+2n... (0-based k) */
    u64_list indices;          /* the portfolio index of each run made, in run order */
    int only;
    uint32_t est_steps;
    uint32_t zero_flags; /* the AFD_TRACE_* flags of run 0, the zero schedule's */
    uint64_t best_index; /* lowest failing run index, UINT64_MAX if none */
    char *best_token;
    char *best_failure; /* Owned; may hold NUL bytes: best_failure_len is its length. */
    size_t best_failure_len;
    int best_outcome;
    /* The lowest failing run that outlasted a deadline: kept aside while the search goes on for a
     * failure that needs no deadline outlasted, and named only if none is found. */
    uint64_t cand_index; /* UINT64_MAX if none */
    char *cand_token;
    char *cand_failure; /* Owned; may hold NUL bytes. */
    size_t cand_failure_len;
    int cand_outcome;
    afd_timing timing; /* the candidate's deadline, then the check below it */
    /* The failing schedule replayed alone (AFD_CONFIRM_RUNS runs): it is printed as failing only
     * when every replay failed. */
    afd_confirm confirm;
    int abstained;   /* the replays had a thread working in real time: its progress decides them */
    int unconfirmed; /* otherwise, it did not fail again every time */
    int unreplayed;  /* timing_sensitive through a real wait, its replays not all failing or a thread
                      * deciding them: no token */
    int most_alive;  /* the most runs of the test alive at once (afd_pool_most_alive) */
    char *last_error;
    uint64_t offset;        /* added to a batch index to make it a run number (the runs of the systematic part
                               come between the portfolio's first share and the rest) */
    uint64_t sys_base;      /* the runs made before the systematic part */
    u64_list orders;        /* the order digest of each run with a trace (afd_trace_order_digest) */
    u64_list classes;       /* the interleaving class of each run with a trace (iclass.h) */
    u64_list within;        /* the order digests of the runs that outlasted no deadline */
    int closure_on;         /* run 0 measures its steps, and repeats of it the rest, for closure.h */
    afd_closure closure;    /* what those runs proved */
    uint64_t measuring;     /* the repeats of run 0 made to measure further windows */
    uint64_t skipped;       /* closed below the deadlines: the budget's schedules kept below them, not run */
    afd_fired_sites normal; /* the deadlines the zero schedule's run (run 0) saw fire */
} explore_ctx;

/* Notes run's interleaving class and order digest (the portfolio's coverage, in the systematic
 * search's terms). */
static void note_class(explore_ctx *c, const afd_trace *tr)
{
    uint64_t fp;
    uint32_t n;
    if (!tr || afd_iclass_fingerprint(tr, &fp, &n) < 0)
        return;
    uint64_t order = afd_trace_order_digest(tr);
    afd_timing tm;
    afd_timing_from_trace(&tm, tr, &c->normal);
    /* a lost entry (out of memory) only makes a count smaller */
    if (push(&c->classes, fp) < 0 || push(&c->orders, order) < 0 || tm.crossed)
        return;
    push(&c->within, order);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* How many distinct values the list holds (sorts it). */
static uint64_t distinct(u64_list *l)
{
    if (!l->n)
        return 0;
    qsort(l->v, l->n, sizeof l->v[0], cmp_u64);
    uint64_t d = 1;
    for (size_t i = 1; i < l->n; i++)
        d += l->v[i] != l->v[i - 1];
    return d;
}

static int make_portfolio(void *vctx, uint64_t i, uint8_t *mode, char **token)
{
    explore_ctx *c = vctx;
    uint64_t index = i * c->shard_n + c->shard_k;
    if (push(&c->indices, index) < 0)
        return AFD_ENOMEM;
    return afd_runs_portfolio_token(c->seed, index, c->est_steps, c->only, mode, token);
}

/* Run 0, measuring its first window of steps when closure is checked. */
static int make_zero(void *vctx, uint64_t i, uint8_t *mode, char **token, uint64_t *mark_lo, uint32_t *mark_n)
{
    explore_ctx *c = vctx;
    *mark_lo = 0;
    *mark_n = c->closure_on ? AFD_SYS_WINDOW : 0;
    return make_portfolio(vctx, i, mode, token);
}

/* A repeat of run 0 measuring window i (i >= 1) of its steps. */
static int make_measure(void *vctx, uint64_t i, uint8_t *mode, char **token, uint64_t *mark_lo,
                        uint32_t *mark_n)
{
    explore_ctx *c = vctx;
    *mark_lo = i * AFD_SYS_WINDOW;
    *mark_n = AFD_SYS_WINDOW;
    if (push(&c->indices, 0) < 0)
        return AFD_ENOMEM;
    return afd_runs_portfolio_token(c->seed, 0, c->est_steps, c->only, mode, token);
}

/* Keeps run i's token (run_token), failure text and outcome when it is earlier than the run kept so
 * far (*index, UINT64_MAX if none); returns whether it did. The strings are owned by the caller's
 * context. */
static int keep_earliest(uint64_t i, const afd_run_result *res, const char *run_token, uint64_t *index,
                         char **token, char **failure, size_t *failure_len, int *outcome)
{
    if (i >= *index || !run_token)
        return 0;
    *index = i;
    free(*token);
    free(*failure);
    *token = strdup(run_token);
    *failure = afd_runs_text_dup(res->failure, res->failure_len, failure_len);
    *outcome = res->outcome;
    return 1;
}

/* The result of the portfolio's schedule `index`, made as run number i. */
static int take_portfolio(explore_ctx *c, uint64_t index, uint64_t i, afd_run_result *res, afd_trace *tr)
{
    if (index == 0 && tr) {
        c->est_steps = afd_trace_program_steps(tr);
        c->zero_flags = tr->flags;
        afd_fired_sites_from_trace(&c->normal, tr);
    }
    note_class(c, tr);
    if (!afd_runs_is_failure(res->outcome))
        return 0;
    /* A run whose worker died with it (the test killed its worker) has no trace: its schedule is
     * the one this run was made from, which is the token to replay. */
    char *made = NULL;
    uint8_t mode;
    if (!tr && afd_runs_portfolio_token(c->seed, index, c->est_steps, c->only, &mode, &made) < 0)
        made = NULL;
    const char *run_token = tr ? tr->token : made;
    afd_timing tm;
    afd_timing_from_trace(&tm, tr, &c->normal);
    if (tm.crossed) {
        if (keep_earliest(i, res, run_token, &c->cand_index, &c->cand_token, &c->cand_failure,
                          &c->cand_failure_len, &c->cand_outcome))
            c->timing = tm;
        free(made);
        return 0;
    }
    keep_earliest(i, res, run_token, &c->best_index, &c->best_token, &c->best_failure, &c->best_failure_len,
                  &c->best_outcome);
    free(made);
    return 1;
}

static int take_explore(void *vctx, uint64_t i, afd_run_result *res, afd_trace *tr)
{
    explore_ctx *c = vctx;
    return take_portfolio(c, i * c->shard_n + c->shard_k, i + c->offset, res, tr);
}

static int take_zero(void *vctx, uint64_t i, afd_run_result *res, afd_trace *tr)
{
    explore_ctx *c = vctx;
    if (c->closure_on)
        afd_closure_take(&c->closure, tr, 0);
    return take_explore(vctx, i, res, tr);
}

/* A measuring repeat of run 0: it is run number i (the repeats come right after run 0); a failure
 * (the zero schedule failing on a repeat) is kept as any other, and an open window ends the
 * measure. */
static int take_measure(void *vctx, uint64_t i, afd_run_result *res, afd_trace *tr)
{
    explore_ctx *c = vctx;
    c->measuring++;
    int st = afd_closure_take(&c->closure, tr, i * AFD_SYS_WINDOW);
    int open = st != AFD_CLOSURE_PENDING && st != AFD_CLOSURE_CLOSED && st != AFD_CLOSURE_DEADLINES;
    return take_portfolio(c, 0, i, res, tr) || open;
}

/* After run 0 measured its first window: the repeats that measure the rest, when run 0 left the
 * closure pending and they cost at most half the runs left (a run of many steps whose first window
 * closed may still open later: its repeats are not worth the whole budget). */
static int measure_rest(const afd_cli *cli, afd_pool *pool, explore_ctx *c, afd_progress *prog, tally *t)
{
    if (!c->closure_on || c->closure.state != AFD_CLOSURE_PENDING)
        return 0;
    uint64_t more = afd_closure_windows(&c->closure) - 1;
    if (more == 0 || more > (cli->n - t->runs) / 2)
        return 0;
    return afd_runs_batch_marked(pool, 1, more, cli->seconds, make_measure, take_measure, c, prog, t);
}

/* Closed below the test's deadlines: the portfolio's schedules that stay below them run the zero
 * run (closure.h) and are not run; those that go beyond are, as the portfolio would have (their
 * failures are the timing checks' to name). beyond[k] is the k-th such index. */
typedef struct beyond_ctx {
    explore_ctx *c;
    uint64_t *index;
    uint64_t first_run; /* the run number of beyond[0] */
} beyond_ctx;

static int make_beyond(void *vctx, uint64_t k, uint8_t *mode, char **token)
{
    beyond_ctx *b = vctx;
    explore_ctx *c = b->c;
    if (push(&c->indices, b->index[k]) < 0)
        return AFD_ENOMEM;
    return afd_runs_portfolio_token(c->seed, b->index[k], c->est_steps, c->only, mode, token);
}

static int take_beyond(void *vctx, uint64_t k, afd_run_result *res, afd_trace *tr)
{
    beyond_ctx *b = vctx;
    return take_portfolio(b->c, b->index[k], b->first_run + k, res, tr);
}

static int run_beyond(const afd_cli *cli, afd_pool *pool, explore_ctx *c, afd_progress *prog, tally *t,
                      double seconds)
{
    beyond_ctx b = {.c = c, .first_run = t->runs};
    b.index = calloc(cli->n, sizeof *b.index);
    if (!b.index)
        return AFD_ENOMEM;
    uint64_t n = 0;
    for (uint64_t i = 1; i < cli->n; i++) {
        afd_schedule s;
        if (afd_schedule_portfolio(&s, c->seed, i, c->est_steps, c->only) < 0)
            continue;
        if (!(s.flags & AFD_SCHED_BELOW_DEADLINES) && s.strategy != AFD_STRAT_ZERO)
            b.index[n++] = i;
        afd_schedule_finish(&s);
    }
    if (n > cli->n - t->runs)
        n = cli->n - t->runs;
    c->skipped = cli->n - t->runs - n;
    int rc = afd_runs_batch(pool, 0, n, seconds, make_beyond, take_beyond, &b, prog, t);
    free(b.index);
    return rc;
}

/* The lines every failing explore result ends with: the failure, its token, the replay command. */
/* What a replay saw a thread do that asyncio does not allow: hand the loop a callback with call_soon
 * while it waited (a future resolved or an Event set from the thread), which stock asyncio's
 * select does not wake for. */
/* The thread named for it: a replay's, else the search's; NULL when no run saw one. */
static const char *unwoken_thread(const afd_confirm *c, const tally *t)
{
    return c->has_unwoken ? c->unwoken : t->unwoken;
}

static void unwoken_line(afd_buf *o, const afd_confirm *c, const tally *t)
{
    const char *who = unwoken_thread(c, t);
    if (who)
        afd_buf_printf(o,
                       "  %s%s queued a callback with call_soon, not call_soon_threadsafe, while the loop "
                       "waited: asyncio's loop is not woken by it and runs it only when a timer or a "
                       "descriptor wakes it (loop.call_soon_threadsafe does)\n",
                       who[0] ? "the thread " : "a thread", who);
}

static void failing_lines(afd_buf *o, const explore_ctx *c, const char *nodeid)
{
    afd_buf_printf(o, "  %s: ", afd_outcome_name(c->best_outcome));
    afd_term_strn(o, c->best_failure, c->best_failure_len);
    afd_buf_printf(o, "\n  token:  %s\n  replay: ", c->best_token);
    afd_shell_replay_command(o, c->best_token, nodeid);
    afd_buf_put_u8(o, '\n');
}

/* A systematic failure as the explore result: the earliest clean one, else one that outlasted a
 * deadline (checked below it afterwards, as the portfolio's are). */
static void adopt_systematic(explore_ctx *c, afd_sys_result *sr, uint64_t base)
{
    if (!sr->fail_run)
        return;
    uint64_t index = base + sr->fail_run - 1;
    int crossed = sr->timing.crossed;
    if (crossed && c->cand_index != UINT64_MAX)
        return; /* the portfolio's earlier one stays the candidate */
    free(crossed ? c->cand_token : c->best_token);
    free(crossed ? c->cand_failure : c->best_failure);
    if (crossed) {
        c->cand_index = index;
        c->cand_token = sr->fail_token;
        c->cand_failure = sr->failure;
        c->cand_failure_len = sr->failure_len;
        c->cand_outcome = sr->fail_outcome;
        c->timing = sr->timing;
    } else {
        c->best_index = index;
        c->best_token = sr->fail_token;
        c->best_failure = sr->failure;
        c->best_failure_len = sr->failure_len;
        c->best_outcome = sr->fail_outcome;
    }
    sr->fail_token = sr->failure = NULL;
}

/* The portfolio: run 0 alone first (the deterministic baseline, whose step count sets pct's range),
 * then the random schedules. Unsharded and unrestricted, the random part takes half of the runs and,
 * when it finds nothing, the systematic search takes the rest; runs it leaves (its bound exhausted)
 * go back to the random portfolio. */
static int explore_search(const afd_cli *cli, afd_pool *pool, explore_ctx *c, afd_progress *prog, tally *t,
                          afd_sys_opts *so, afd_sys_result *sr, int *sys_ran)
{
    uint64_t start = afd_runs_now_ns();
    int with_sys = c->only == -1 && !cli->shard_n;
    c->closure_on = with_sys && cli->n > 1 && !cli->no_closure;
    int rc = afd_runs_batch_marked(pool, 0, 1, 0, make_zero, take_zero, c, prog, t);
    if (rc || c->best_index != UINT64_MAX || cli->n <= 1 || t->no_loop == t->runs)
        return rc;
    rc = measure_rest(cli, pool, c, prog, t);
    if (rc || c->best_index != UINT64_MAX || c->closure.state == AFD_CLOSURE_CLOSED)
        return rc;
    if (c->closure.state == AFD_CLOSURE_DEADLINES)
        return run_beyond(cli, pool, c, prog, t, cli->seconds);
    /* The systematic search enumerates the slots the zero run measured on the virtual clock. A run
     * that waited in real time or heard from a thread measured what the machine's speed decided
     * (a margin after a real wait is unmeasured), so how many schedules it would enumerate, and so
     * where the portfolio's runs fall, would change from session to session: the portfolio takes
     * the whole budget instead, and the same seed gives the same runs. */
    if (c->zero_flags & AFD_TRACE_UNCONTROLLED)
        with_sys = 0;
    uint64_t measured = t->runs - 1; /* the repeats: the portfolio's run numbers start after them */
    uint64_t random_n = with_sys ? (cli->n + 1) / 2 : cli->n;
    if (random_n > cli->n - measured)
        random_n = cli->n - measured;
    c->offset = measured;
    rc = afd_runs_batch(pool, 1, random_n - 1, cli->seconds, make_portfolio, take_explore, c, prog, t);
    if (rc || !with_sys || c->best_index != UINT64_MAX || t->runs < random_n + measured)
        return rc;
    double left = 0;
    if (cli->seconds > 0) {
        left = cli->seconds - (double)(afd_runs_now_ns() - start) / 1e9;
        if (left <= 0)
            return 0;
    }
    *so = (afd_sys_opts){.max_delays = cli->max_delays_set ? cli->max_delays : AFD_SYS_DEFAULT_DELAYS,
                         .prune_classes = cli->prune_classes,
                         .seed = cli->seed,
                         .max_runs = cli->n - t->runs,
                         .seconds = left,
                         .stop_on_failure = 1};
    uint64_t base = c->sys_base = t->runs;
    rc = afd_systematic(pool, so, prog, t, sr);
    *sys_ran = 1;
    if (rc)
        return rc;
    adopt_systematic(c, sr, base);
    if (c->best_index != UINT64_MAX || t->runs >= cli->n)
        return 0;
    if (cli->seconds > 0) {
        left = cli->seconds - (double)(afd_runs_now_ns() - start) / 1e9;
        if (left <= 0)
            return 0;
    }
    c->offset = t->runs - random_n;
    return afd_runs_batch(pool, random_n, cli->n - t->runs, left, make_portfolio, take_explore, c, prog, t);
}

/* Whether run 0's measure proved every schedule runs it (closure.h): null when not checked (a
 * shard, one strategy, one run), else what was measured and, when open, why. */
static void closure_json(afd_buf *o, const explore_ctx *c)
{
    const afd_closure *z = &c->closure;
    if (!c->closure_on || !z->runs) {
        afd_buf_printf(o, "null");
        return;
    }
    afd_buf_printf(o, "{\"state\": ");
    afd_json_str(o, afd_closure_name(z->state));
    afd_buf_printf(o,
                   ", \"closed\": %s, \"steps\": %" PRIu64 ", \"measured_steps\": %" PRIu64
                   ", \"deadline_steps\": %" PRIu64 ", \"measuring_runs\": %" PRIu32
                   ", \"skipped_below_deadlines\": %" PRIu64 "}",
                   z->state == AFD_CLOSURE_CLOSED ? "true" : "false", z->steps, z->measured, z->deadlines,
                   z->runs, c->skipped);
}

/* The text of a search closure ended: what was measured, and what it means. */
static void closure_text(afd_buf *o, const afd_cli *cli, const explore_ctx *c, const tally *t)
{
    const afd_closure *z = &c->closure;
    if (z->state == AFD_CLOSURE_CLOSED) {
        afd_buf_printf(o,
                       "%s: no failing schedule: every schedule runs as the zero schedule, proved in %" PRIu64
                       " run%s (of %" PRIu64 ")\n",
                       cli->nodeid, t->runs, t->runs == 1 ? "" : "s", cli->n);
        afd_buf_printf(
            o,
            "  all %" PRIu64 " steps measured: %s;\n  so any delays and any seed give this run "
            "(what no schedule controls, such as a thread joined inside one step, is not varied)\n",
            z->steps, afd_closure_words(z->state));
        return;
    }
    afd_buf_printf(o, "%s: no failing schedule in %" PRIu64 " runs\n", cli->nodeid, t->runs);
    afd_buf_printf(
        o,
        "  every schedule that keeps the test's deadlines (timeouts, TTLs) runs as the zero schedule, "
        "proved in %" PRIu32 " run%s:\n  all %" PRIu64 " steps measured: %s;\n  so of the %" PRIu64
        " runs asked for, the %" PRIu64 " schedules that outlast a deadline ran and the %" PRIu64
        " kept below them did not\n",
        z->runs, z->runs == 1 ? "" : "s", z->steps, afd_closure_words(z->state), cli->n, t->runs - z->runs,
        c->skipped);
}

/* explore's JSON document (docs/schema/explore.schema.json). */
static void explore_json(afd_buf *o, const afd_cli *cli, explore_ctx *c, const tally *t, const char *desc,
                         int found, int sys_ran, const afd_sys_result *sr, const afd_sys_opts *so)
{
    afd_buf_printf(o, "{\"schema\": 1, \"nodeid\": ");
    afd_json_str(o, cli->nodeid);
    afd_buf_printf(o, ", \"found\": %s, \"token\": ", found ? "true" : "false");
    if (found && !c->unreplayed)
        afd_json_str(o, c->best_token);
    else
        afd_buf_printf(o, "null");
    afd_buf_printf(o, ", \"runs\": %" PRIu64 ", \"failure\": ", t->runs);
    if (found)
        afd_json_strn(o, c->best_failure, c->best_failure_len);
    else
        afd_buf_printf(o, "null");
    afd_buf_printf(o, ", \"outcome\": ");
    /* nothing failed: "pass" only when every run passed; a step-limit stop is not a pass */
    afd_json_str(o, found                               ? afd_outcome_name(c->best_outcome)
                    : t->by_outcome[AFD_OUT_STEP_LIMIT] ? afd_outcome_name(AFD_OUT_STEP_LIMIT)
                    : t->by_outcome[AFD_OUT_PASS] < t->runs && t->by_outcome[AFD_OUT_SKIP] ? "skip"
                                                                                           : "pass");
    afd_buf_printf(o, ", \"schedule\": ");
    afd_json_str(o, desc ? desc : "");
    afd_buf_printf(o, ", \"failing_run\": ");
    if (found)
        afd_buf_printf(o, "%" PRIu64, c->best_index + 1);
    else
        afd_buf_printf(o, "null");
    /* which of the portfolio's schedules this run explored (shards explore disjoint ones) */
    afd_buf_printf(o, ", \"shard\": \"%" PRIu64 "/%" PRIu64 "\", \"schedules\": [", c->shard_k + 1,
                   c->shard_n);
    for (size_t k = 0; k < c->indices.n; k++)
        afd_buf_printf(o, "%s%" PRIu64, k ? ", " : "", c->indices.v[k]);
    afd_buf_printf(o, "], ");
    afd_runs_json_outcomes(o, t);
    afd_buf_printf(o, ", \"verdict\": \"%s\", \"timing\": ",
                   c->unconfirmed        ? "unconfirmed"
                   : c->abstained        ? "abstained"
                   : !found              ? "no_failure"
                   : c->timing.sensitive ? "timing_sensitive"
                                         : "failure");
    afd_timing_json(&c->timing, o);
    /* the failing schedule replayed alone: null when nothing failed */
    afd_buf_printf(o, ", \"confirm\": ");
    if (c->confirm.runs) {
        afd_buf_printf(o, "{\"runs\": %" PRIu64 ", \"failed\": %" PRIu64 ", \"thread\": ", c->confirm.runs,
                       c->confirm.failed);
        if (c->confirm.thread[0])
            afd_json_str(o, c->confirm.thread);
        else
            afd_buf_printf(o, "null");
        afd_buf_printf(o, ", \"unwoken\": ");
        if (unwoken_thread(&c->confirm, t))
            afd_json_str(o, unwoken_thread(&c->confirm, t));
        else
            afd_buf_printf(o, "null");
        afd_buf_printf(o, "}");
    } else
        afd_buf_printf(o, "null");
    /* copies of the test side by side, or one at a time because a run touched something shared */
    /* the failing schedule run with its delays kept below the deadline it crossed, whatever it gave */
    afd_buf_printf(o, ", \"threshold_check\": ");
    if (c->timing.check_runs)
        afd_buf_printf(o, "{\"runs\": %" PRIu64 ", \"passed\": %" PRIu64 "}", c->timing.check_runs,
                       c->timing.check_passed);
    else
        afd_buf_printf(o, "null");
    afd_buf_printf(o, ", \"copies\": {\"most_alive\": %d, \"shared\": ", c->most_alive);
    if (t->shared)
        afd_json_str(o, t->shared);
    else
        afd_buf_printf(o, "null");
    afd_buf_printf(o, "}");
    /* the random portfolio's runs only: the systematic part counts its own */
    afd_buf_printf(o, ", \"closure\": ");
    closure_json(o, c);
    afd_buf_printf(o,
                   ", \"classes\": %" PRIu64 ", \"orders\": %" PRIu64
                   ", \"orders_within_deadlines\": %" PRIu64 ", \"systematic\": ",
                   distinct(&c->classes), distinct(&c->orders), distinct(&c->within));
    if (sys_ran)
        afd_sys_coverage_json(sr, so, o);
    else
        afd_buf_printf(o, "null");
    afd_buf_printf(o, "}\n");
}

int afd_cmd_explore(const afd_cli *cli)
{
    explore_ctx c = {.seed = cli->seed,
                     .only = -1,
                     .est_steps = 1,
                     .best_index = UINT64_MAX,
                     .cand_index = UINT64_MAX,
                     .shard_k = cli->shard_n ? cli->shard_k - 1 : 0,
                     .shard_n = cli->shard_n ? cli->shard_n : 1};
    if (cli->strategy && !strcmp(cli->strategy, "systematic"))
        return afd_cmd_explore_systematic(cli);
    if (cli->strategy && strcmp(cli->strategy, "portfolio") != 0) {
        c.only = afd_strategy_parse(cli->strategy);
        if (c.only < 0) {
            afd_runs_error_line("unknown strategy '%s' (choose zero, jitter, pct, portfolio or systematic)%s",
                                cli->strategy, "");
            return AFD_EXIT_USAGE;
        }
    }
    afd_pool *pool;
    int rc = afd_runs_start_pool(cli, &pool);
    if (rc)
        return rc;
    tally t = {0};
    afd_progress prog;
    afd_progress_init(&prog, "explore");
    afd_sys_result sr = {0};
    afd_sys_opts so = {0};
    int sys_ran = 0;
    rc = explore_search(cli, pool, &c, &prog, &t, &so, &sr, &sys_ran);
    /* Only when nothing failed without outlasting a deadline is such a failure named, after the
     * same schedule has run below the deadline. */
    if (rc == 0 && c.best_index == UINT64_MAX && c.cand_index != UINT64_MAX && c.cand_token) {
        c.best_index = c.cand_index;
        c.best_token = c.cand_token;
        c.best_failure = c.cand_failure;
        c.best_failure_len = c.cand_failure_len;
        c.best_outcome = c.cand_outcome;
        c.cand_token = c.cand_failure = NULL;
        rc = afd_timing_check(&c.timing, pool, c.best_token, &prog);
    } else {
        c.timing.crossed = 0;
    }
    /* A failure no deadline explains may still be the time slow steps take (timing_clock.c). */
    if (rc == 0 && c.best_index != UINT64_MAX && !c.timing.sensitive)
        rc = afd_timing_clock_check(&c.timing, pool, c.best_token, c.best_outcome, &prog);
    if (rc == 0 && c.best_index != UINT64_MAX) {
        rc = afd_timing_confirm(pool, c.best_token, &c.normal, &prog, &c.confirm);
        /* The verdict must not depend on which run of the token was read: a replay that crossed a
         * deadline the found run did not is checked as the found run's crossing would have been. */
        if (rc == 0 && !c.timing.sensitive && !c.timing.crossed && c.confirm.crossing.crossed) {
            c.timing = c.confirm.crossing;
            rc = afd_timing_check(&c.timing, pool, c.best_token, &prog);
        }
        /* a thread working in real time decides such a run, failing every replay or not; a
         * failure that needs a step stalled past the test's own threshold is that, thread or not */
        c.abstained = rc == 0 && !c.timing.sensitive && (c.confirm.flags & AFD_TRACE_THREAD_RACE);
        c.unconfirmed = rc == 0 && !c.abstained && c.confirm.failed < AFD_CONFIRM_RUNS;
        /* A real wait carried the clock past a deadline a stall had brought within reach: a replay
         * fails or not as that wait is long or short, and the same schedule kept well below the
         * deadline passed every time. A threshold, whether or not every replay failed; its token
         * is printed as a failing schedule only if they all did. */
        if (c.unconfirmed && c.timing.sensitive && (c.timing.real_wait || c.timing.fired)) {
            c.unconfirmed = 0;
            c.unreplayed = 1;
        }
        /* A threshold whose replays had a thread still working when a timer fired or a delay
         * passed: whether the next replay fails is that thread's speed (a loaded machine finishes it
         * in time or not), so however many replays failed, its token is not a failing schedule. */
        if (rc == 0 && c.timing.sensitive && (c.confirm.flags & AFD_TRACE_THREAD_RACE))
            c.unreplayed = 1;
    }
    afd_progress_done(&prog);
    c.most_alive = afd_pool_most_alive(pool);
    afd_runs_stop_pool(cli, pool);
    if (rc == AFD_EIO) {
        rc = afd_runs_interrupted_exit(&t);
        goto out;
    }
    if (rc < 0) {
        afd_runs_error_line("%s%s", afd_strerror(rc), "");
        rc = AFD_EXIT_INTERNAL;
        goto out;
    }
    if (afd_runs_report_no_loop(cli, &t)) {
        rc = AFD_EXIT_USAGE;
        goto out;
    }
    int found = c.best_index != UINT64_MAX && !c.unconfirmed && !c.abstained;
    afd_buf o;
    afd_buf_init(&o);
    char *desc = NULL;
    if (found) {
        afd_schedule s;
        if (afd_token_decode(&s, c.best_token) == 0) {
            desc = afd_schedule_describe(&s);
            afd_schedule_finish(&s);
        }
    }
    if (cli->json) {
        explore_json(&o, cli, &c, &t, desc, found, sys_ran, &sr, &so);
    } else if (found && c.timing.sensitive) {
        afd_buf_printf(
            &o, "%s: timing-sensitive: a failing schedule found at run %" PRIu64 " of %" PRIu64 "%s%s%s\n",
            cli->nodeid, c.best_index + 1, t.runs, desc ? " (" : "", desc ? desc : "", desc ? ")" : "");
        afd_buf_printf(&o, "  ");
        afd_timing_summary(&c.timing, &o);
        afd_buf_printf(&o, "\n  checked: " AFD_TIMING_CHECKED " passed %" PRIu64 "/%" PRIu64 " runs\n",
                       c.timing.check_passed, c.timing.check_runs);
        if (c.unreplayed && (c.confirm.flags & AFD_TRACE_THREAD_RACE))
            afd_buf_printf(&o,
                           "  replayed alone it failed %" PRIu64 "/%" PRIu64
                           " times, with %s%s still working when a timer fired or a stall passed: "
                           "its speed decides each replay, so no token is printed\n",
                           c.confirm.failed, c.confirm.runs, c.confirm.thread[0] ? "the thread " : "a thread",
                           c.confirm.thread);
        else if (c.unreplayed)
            afd_buf_printf(&o,
                           "  replayed alone it failed %" PRIu64 "/%" PRIu64
                           " times (the real wait decides each): no token is printed\n",
                           c.confirm.failed, c.confirm.runs);
        else
            failing_lines(&o, &c, cli->nodeid);
    } else if (found) {
        afd_buf_printf(&o, "%s: failing schedule found at run %" PRIu64 " of %" PRIu64 "%s%s%s\n",
                       cli->nodeid, c.best_index + 1, t.runs, desc ? " (" : "", desc ? desc : "",
                       desc ? ")" : "");
        failing_lines(&o, &c, cli->nodeid);
    } else if (c.unconfirmed) {
        const char *why = afd_runs_uncontrolled_words(t.flags_union);
        afd_buf_printf(
            &o,
            "%s: unconfirmed: a schedule failed at run %" PRIu64 " of %" PRIu64 " but failed %" PRIu64
            "/%" PRIu64 " when replayed alone: not a failing schedule; the test depends on something no "
            "schedule controls%s%s%s%s%s\n",
            cli->nodeid, c.best_index + 1, t.runs, c.confirm.failed, c.confirm.runs, why ? " (" : "",
            why ? why : "", t.thread ? ": the thread " : "", t.thread ? t.thread : "", why ? ")" : "");
    } else if (c.abstained) {
        afd_buf_printf(&o,
                       "%s: abstained: a schedule fails (run %" PRIu64 " of %" PRIu64 ", %" PRIu64 "/%" PRIu64
                       " when replayed alone), but only with %s%s working in real time, whose progress no "
                       "schedule controls: not a failing schedule\n",
                       cli->nodeid, c.best_index + 1, t.runs, c.confirm.failed, c.confirm.runs,
                       c.confirm.thread[0] ? "the thread " : "a thread", c.confirm.thread);
    } else if (c.closure_on &&
               (c.closure.state == AFD_CLOSURE_CLOSED || c.closure.state == AFD_CLOSURE_DEADLINES)) {
        closure_text(&o, cli, &c, &t);
    } else {
        afd_buf_printf(&o, "%s: no failing schedule in %" PRIu64 " runs\n", cli->nodeid, t.runs);
    }
    if (!cli->json && c.best_index != UINT64_MAX) /* a schedule failed, whatever the verdict */
        unwoken_line(&o, &c.confirm, &t);
    if (!cli->json && sys_ran) {
        afd_buf_printf(&o, "  after %" PRIu64 " random schedules, the systematic search:\n", c.sys_base);
        afd_sys_coverage_text(&sr, &so, &o, "    ");
    }
    if (!cli->json) {
        afd_runs_step_limit_line(&o, &t, cli->max_steps);
        afd_runs_truncated_line(&o, &t);
    }
    if (cli->json)
        fwrite(o.data, 1, o.len, stdout);
    else
        afd_term_write(stdout, o.data, o.len);
    afd_buf_finish(&o);
    free(desc);
    rc = found ? AFD_EXIT_FAILURE : c.unconfirmed || c.abstained ? AFD_EXIT_ABSTAIN : AFD_EXIT_CLEAN;
    if (cli->summary)
        *cli->summary = (afd_item_summary){t.runs,
                                           t.failed,
                                           found && c.timing.sensitive,
                                           !found && c.closure_on && c.closure.state == AFD_CLOSURE_CLOSED,
                                           c.abstained,
                                           0};
out:
    afd_sys_result_finish(&sr);
    free(c.classes.v);
    free(c.orders.v);
    free(c.within.v);
    free(c.indices.v);
    free(c.best_token);
    free(c.best_failure);
    free(c.cand_token);
    free(c.cand_failure);
    afd_fired_sites_finish(&c.normal);
    afd_tally_finish(&t);
    return rc;
}
