/* cmds.c -- sample, explore and replay: runs dispatched to the pool, counted, and reported.
 *
 * Every number printed here is a count of runs that were executed, or a statistic computed from
 * such counts (stats.h). A run is "failed" when the test failed, errored, hung or crashed; a skip
 * or a run stopped at the step limit is neither a pass nor a failure and is reported separately. */
#include "cmds.h"
#include "runs.h"
#include "timing.h"
#include "afd.h"
#include "delays.h"
#include "out.h"
#include "pool.h"
#include "schedule.h"
#include "shell.h"
#include "iclass.h"
#include "stats.h"
#include "systematic.h"
#include "token.h"
#include "trace.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- sample ---- */

int afd_cmd_sample(const afd_cli *cli)
{
    afd_pool *pool;
    int rc = afd_runs_start_pool(cli, &pool);
    if (rc)
        return rc;
    tally t = {0};
    afd_progress prog;
    afd_progress_init(&prog, "sample");
    rc = afd_runs_batch(pool, 0, cli->n, 0, afd_runs_make_natural, afd_runs_take_none, NULL, &prog, &t);
    afd_progress_done(&prog);
    afd_runs_stop_pool(cli, pool);
    if (rc == AFD_EIO) {
        rc = afd_runs_interrupted_exit(&t);
        afd_tally_finish(&t);
        return rc;
    }
    if (rc < 0 || afd_runs_report_no_loop(cli, &t)) {
        afd_tally_finish(&t);
        return rc < 0 ? AFD_EXIT_INTERNAL : AFD_EXIT_USAGE;
    }
    double lo, hi, med_steps = 0, med_wall = 0;
    afd_stats_wilson(t.failed, t.runs, &lo, &hi);
    afd_stats_median_u64(t.steps, t.runs, &med_steps);
    afd_stats_median_u64(t.wall, t.runs, &med_wall);
    double rate = t.runs ? (double)t.failed / (double)t.runs : 0;
    afd_buf o;
    afd_buf_init(&o);
    if (cli->json) {
        afd_buf_printf(&o, "{\"schema\": 1, \"nodeid\": ");
        afd_json_str(&o, cli->nodeid);
        afd_buf_printf(&o, ", \"runs\": %" PRIu64 ", \"failed\": %" PRIu64 ", \"rate\": ", t.runs, t.failed);
        afd_json_num(&o, rate);
        afd_buf_printf(&o, ", \"ci95\": [");
        afd_json_num(&o, lo);
        afd_buf_printf(&o, ", ");
        afd_json_num(&o, hi);
        afd_buf_printf(&o, "], \"median_steps\": ");
        afd_json_num(&o, med_steps);
        afd_buf_printf(&o, ", \"median_wall_ms\": ");
        afd_json_num(&o, med_wall / 1e6);
        afd_buf_printf(&o, ", ");
        afd_runs_json_outcomes(&o, &t);
        afd_buf_printf(&o, ", \"failure\": ");
        afd_json_strn(&o, t.first_failure, t.first_failure_len);
        afd_buf_printf(&o, "}\n");
    } else {
        afd_buf_printf(&o,
                       "%s: %" PRIu64 " natural runs, %" PRIu64 " failed (%.1f%%, 95%% CI %.1f%%-%.1f%%)\n",
                       cli->nodeid, t.runs, t.failed, 100 * rate, 100 * lo, 100 * hi);
        afd_buf_printf(&o, "  median %.0f steps, %.2f ms per run\n", med_steps, med_wall / 1e6);
        if (t.first_failure) {
            afd_buf_printf(&o, "  first failure (%s): ", afd_outcome_name(t.first_failure_outcome));
            afd_term_strn(&o, t.first_failure, t.first_failure_len);
            afd_buf_printf(&o, "\n");
        }
        afd_runs_step_limit_line(&o, &t, cli->max_steps);
        afd_runs_truncated_line(&o, &t);
    }
    if (cli->json)
        fwrite(o.data, 1, o.len, stdout);
    else
        afd_term_write(stdout, o.data, o.len);
    afd_buf_finish(&o);
    rc = t.failed ? AFD_EXIT_FAILURE : AFD_EXIT_CLEAN;
    if (cli->summary)
        *cli->summary = (afd_item_summary){t.runs, t.failed, 0};
    afd_tally_finish(&t);
    return rc;
}

/* ---- explore ---- */

typedef struct explore_ctx {
    uint64_t seed;
    uint64_t shard_k, shard_n; /* this shard runs portfolio schedules k, k+n, k+2n... (0-based k) */
    uint64_t *indices;         /* the portfolio index of each run made, in run order */
    uint64_t n_indices;
    int only;
    uint32_t est_steps;
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
    char *last_error;
    uint64_t offset;   /* added to a batch index to make it a run number (the runs of the systematic part
                          come between the portfolio's first share and the rest) */
    uint64_t sys_base; /* the runs made before the systematic part */
    uint64_t *classes; /* Owned: the interleaving class of each run with a trace (iclass.h) */
    uint64_t n_classes, cap_classes;
} explore_ctx;

/* Notes run's interleaving class (the portfolio's coverage, in the systematic search's terms). */
static void note_class(explore_ctx *c, const afd_trace *tr)
{
    uint64_t fp;
    uint32_t n;
    if (!tr || afd_iclass_fingerprint(tr, &fp, &n) < 0)
        return;
    if (c->n_classes == c->cap_classes) {
        uint64_t ncap = c->cap_classes ? c->cap_classes * 2 : 256;
        uint64_t *nv = realloc(c->classes, ncap * sizeof *nv);
        if (!nv)
            return;
        c->classes = nv;
        c->cap_classes = ncap;
    }
    c->classes[c->n_classes++] = fp;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* How many distinct classes the noted runs fell into. */
static uint64_t distinct_classes(explore_ctx *c)
{
    if (!c->n_classes)
        return 0;
    qsort(c->classes, c->n_classes, sizeof c->classes[0], cmp_u64);
    uint64_t n = 1;
    for (uint64_t i = 1; i < c->n_classes; i++)
        n += c->classes[i] != c->classes[i - 1];
    return n;
}

static int make_portfolio(void *vctx, uint64_t i, uint8_t *mode, char **token)
{
    explore_ctx *c = vctx;
    uint64_t index = i * c->shard_n + c->shard_k;
    uint64_t *ni = realloc(c->indices, (c->n_indices + 1) * sizeof *ni);
    if (!ni)
        return AFD_ENOMEM;
    c->indices = ni;
    c->indices[c->n_indices++] = index;
    return afd_runs_portfolio_token(c->seed, index, c->est_steps, c->only, mode, token);
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

static int take_explore(void *vctx, uint64_t i, afd_run_result *res, afd_trace *tr)
{
    explore_ctx *c = vctx;
    if (i == 0 && tr)
        c->est_steps = tr->steps > 0 ? (uint32_t)(tr->steps > UINT32_MAX ? UINT32_MAX : tr->steps) : 1;
    note_class(c, tr);
    if (!afd_runs_is_failure(res->outcome))
        return 0;
    /* A run whose worker died with it (the test killed its worker) has no trace: its schedule is
     * the one this run was made from, which is the token to replay. */
    char *made = NULL;
    uint8_t mode;
    if (!tr && afd_runs_portfolio_token(c->seed, i * c->shard_n + c->shard_k, c->est_steps, c->only, &mode,
                                        &made) < 0)
        made = NULL;
    const char *run_token = tr ? tr->token : made;
    i += c->offset;
    afd_timing tm;
    afd_timing_from_trace(&tm, tr);
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

/* The lines every failing explore result ends with: the failure, its token, the replay command. */
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
    int rc = afd_runs_batch(pool, 0, 1, 0, make_portfolio, take_explore, c, prog, t);
    if (rc || c->best_index != UINT64_MAX || cli->n <= 1 || t->no_loop == t->runs)
        return rc;
    int with_sys = c->only == -1 && !cli->shard_n;
    uint64_t random_n = with_sys ? (cli->n + 1) / 2 : cli->n;
    rc = afd_runs_batch(pool, 1, random_n - 1, cli->seconds, make_portfolio, take_explore, c, prog, t);
    if (rc || !with_sys || c->best_index != UINT64_MAX || t->runs < random_n)
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

/* explore's JSON document (docs/schema/explore.schema.json). */
static void explore_json(afd_buf *o, const afd_cli *cli, explore_ctx *c, const tally *t, const char *desc,
                         int found, int sys_ran, const afd_sys_result *sr, const afd_sys_opts *so)
{
    afd_buf_printf(o, "{\"schema\": 1, \"nodeid\": ");
    afd_json_str(o, cli->nodeid);
    afd_buf_printf(o, ", \"found\": %s, \"token\": ", found ? "true" : "false");
    if (found)
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
    for (uint64_t k = 0; k < c->n_indices; k++)
        afd_buf_printf(o, "%s%" PRIu64, k ? ", " : "", c->indices[k]);
    afd_buf_printf(o, "], ");
    afd_runs_json_outcomes(o, t);
    afd_buf_printf(o, ", \"verdict\": \"%s\", \"timing\": ",
                   !found                ? "no_failure"
                   : c->timing.sensitive ? "timing_sensitive"
                                         : "failure");
    afd_timing_json(&c->timing, o);
    /* the random portfolio's runs only: the systematic part counts its own */
    afd_buf_printf(o, ", \"classes\": %" PRIu64 ", \"systematic\": ", distinct_classes(c));
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
    afd_progress_done(&prog);
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
    int found = c.best_index != UINT64_MAX;
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
        afd_buf_printf(&o,
                       "\n  checked: the same schedule kept below the deadline passed %" PRIu64 "/%" PRIu64
                       " runs\n",
                       c.timing.check_passed, c.timing.check_runs);
        failing_lines(&o, &c, cli->nodeid);
    } else if (found) {
        afd_buf_printf(&o, "%s: failing schedule found at run %" PRIu64 " of %" PRIu64 "%s%s%s\n",
                       cli->nodeid, c.best_index + 1, t.runs, desc ? " (" : "", desc ? desc : "",
                       desc ? ")" : "");
        failing_lines(&o, &c, cli->nodeid);
    } else {
        afd_buf_printf(&o, "%s: no failing schedule in %" PRIu64 " runs\n", cli->nodeid, t.runs);
    }
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
    rc = found ? AFD_EXIT_FAILURE : AFD_EXIT_CLEAN;
    if (cli->summary)
        *cli->summary = (afd_item_summary){t.runs, t.failed, found && c.timing.sensitive};
out:
    afd_sys_result_finish(&sr);
    free(c.classes);
    free(c.indices);
    free(c.best_token);
    free(c.best_failure);
    free(c.cand_token);
    free(c.cand_failure);
    afd_tally_finish(&t);
    return rc;
}

/* ---- replay ---- */

static int make_replay(void *vctx, uint64_t i, uint8_t *mode, char **token)
{
    *mode = AFD_MODE_CONTROLLED;
    *token = strdup((const char *)vctx);
    return *token ? 0 : AFD_ENOMEM;
}

typedef struct replay_ctx {
    const char *token;
    int events;                /* print the first run's events */
    const afd_schedule *sched; /* Borrowed: the token's schedule, whose delays are checked. */
    uint8_t *ran;              /* Borrowed: per delay, 1 once a run's trace shows its step ran */
    uint64_t complete;         /* runs whose trace kept every event, so an absent step did not run */
    int err;                   /* the first error marking the delays (AFD_ENOMEM) */
} replay_ctx;

static int make_replay_token(void *vctx, uint64_t i, uint8_t *mode, char **token)
{
    return make_replay((void *)((replay_ctx *)vctx)->token, i, mode, token);
}

static int take_replay_events(void *vctx, uint64_t i, afd_run_result *res, afd_trace *tr)
{
    replay_ctx *c = vctx;
    if (tr && c->sched->n_delays) {
        int rc = afd_delays_mark_ran(c->sched, tr, c->ran);
        if (rc < 0 && !c->err)
            c->err = rc;
        if (rc == 0 && !(tr->flags & AFD_TRACE_TRUNCATED))
            c->complete++;
    }
    if (!c->events || !tr)
        return 0;
    c->events = 0;
    afd_buf b;
    afd_buf_init(&b);
    afd_buf_printf(&b, "events of run %" PRIu64 " (%s):\n", i + 1, afd_outcome_name(res->outcome));
    for (uint32_t k = 0; k < tr->n_events; k++) {
        afd_buf_printf(&b, "  ");
        afd_trace_format_event(tr, &tr->events[k], &b);
        afd_buf_printf(&b, "\n");
    }
    afd_term_write(stderr, b.data, b.len); /* operation and task names are the user's text */
    afd_buf_finish(&b);
    return 0;
}

/* The delays of the token that no run reached, as lines "  stale: delay on LABEL step N never
 * ran: ..." (at most 20, then how many more). */
static void never_ran_lines(afd_buf *o, const afd_schedule *s, const uint8_t *ran)
{
    uint32_t shown = 0, missing = 0;
    for (uint32_t i = 0; i < s->n_delays; i++) {
        if (ran[i])
            continue;
        missing++;
        if (shown++ < 20)
            afd_buf_printf(o,
                           "  stale: delay on %s step %" PRIu32
                           " never ran: this schedule is not from this test "
                           "(or the code changed)\n",
                           s->delays[i].label, s->delays[i].ordinal);
    }
    if (missing > 20)
        afd_buf_printf(o, "  stale: %" PRIu32 " more delays never ran\n", missing - 20);
}

typedef struct replay_summary {
    const char *verdict; /* reproduced | no_failure | abstained | stale */
    const char *desc;    /* Borrowed: the schedule's description, or NULL. */
    int identical;       /* every run's trace digest was the same */
    int checked;         /* at least one complete trace: a delay it lacks never ran */
} replay_summary;

static void replay_json(afd_buf *o, const afd_cli *cli, const tally *t, const replay_summary *r,
                        const afd_schedule *s, const uint8_t *ran)
{
    afd_buf_printf(o, "{\"schema\": 1, \"nodeid\": ");
    afd_json_str(o, cli->nodeid);
    afd_buf_printf(o,
                   ", \"verdict\": \"%s\", \"runs\": %" PRIu64 ", \"failed\": %" PRIu64
                   ", \"identical_traces\": %s, \"digest\": ",
                   r->verdict, t->runs, t->failed, r->identical ? "true" : "false");
    if (r->identical)
        afd_buf_printf(o, "\"%016" PRIx64 "\"", t->first_digest);
    else
        afd_buf_printf(o, "null");
    afd_buf_printf(o, ", \"schedule\": ");
    afd_json_str(o, r->desc ? r->desc : "");
    /* the token's explicit delays, and those no run reached (null: no complete trace to tell) */
    afd_buf_printf(o, ", \"delays\": %" PRIu32 ", \"delays_never_ran\": ", s->n_delays);
    if (r->checked || !s->n_delays) {
        afd_buf_printf(o, "[");
        for (uint32_t i = 0, k = 0; i < s->n_delays; i++) {
            if (ran[i])
                continue;
            afd_buf_printf(o, "%s{\"task\": ", k++ ? ", " : "");
            afd_json_str(o, s->delays[i].label);
            afd_buf_printf(o, ", \"step\": %" PRIu32 "}", s->delays[i].ordinal);
        }
        afd_buf_printf(o, "]");
    } else {
        afd_buf_printf(o, "null");
    }
    afd_buf_printf(o, ", \"failure\": ");
    afd_json_strn(o, t->first_failure, t->first_failure_len);
    afd_buf_printf(o, ", ");
    afd_runs_json_outcomes(o, t);
    afd_buf_printf(o, ", ");
    afd_runs_json_uncontrolled(o, t->flags_union);
    afd_buf_printf(o, "}\n");
}

/* Replays the token n times. A token whose explicit delays never ran in this test (it was found on
 * another test, or the code changed) is stale: its runs say nothing about the schedule, so it gets
 * its own verdict and exit code however the runs ended, and the steps that never ran are named. */
int afd_cmd_replay(const afd_cli *cli)
{
    afd_schedule s;
    int rc = afd_token_decode(&s, cli->token);
    if (rc < 0) {
        afd_runs_error_line("invalid token: %s%s", afd_strerror(rc), "");
        return AFD_EXIT_USAGE;
    }
    char *desc = afd_schedule_describe(&s);
    /* Re-encode so that whitespace or case the user's terminal added does not reach the trace. */
    char *canon = NULL;
    afd_token_encode(&s, &canon);
    uint8_t *ran = calloc(s.n_delays ? s.n_delays : 1, 1);
    tally t = {0};
    if (!ran) {
        afd_runs_error_line("%s%s", afd_strerror(AFD_ENOMEM), "");
        rc = AFD_EXIT_INTERNAL;
        goto out;
    }
    afd_pool *pool;
    rc = afd_runs_start_pool(cli, &pool);
    if (rc)
        goto out;
    afd_progress prog;
    afd_progress_init(&prog, "replay");
    replay_ctx rctx = {.token = canon ? canon : cli->token, .events = cli->events, .sched = &s, .ran = ran};
    rc = afd_runs_batch(pool, 0, cli->n, 0, make_replay_token, take_replay_events, &rctx, &prog, &t);
    afd_progress_done(&prog);
    afd_runs_stop_pool(cli, pool);
    if (rc == AFD_EIO) {
        rc = afd_runs_interrupted_exit(&t);
        goto out;
    }
    if (rc == 0)
        rc = rctx.err;
    if (rc < 0) {
        afd_runs_error_line("%s%s", afd_strerror(rc), "");
        rc = AFD_EXIT_INTERNAL;
        goto out;
    }
    if (afd_runs_report_no_loop(cli, &t)) {
        rc = AFD_EXIT_USAGE;
        goto out;
    }
    uint32_t never_ran = 0;
    for (uint32_t i = 0; i < s.n_delays; i++)
        never_ran += !ran[i];
    replay_summary r = {
        .desc = desc, .identical = t.runs > 0 && !t.digests_differ, .checked = rctx.complete > 0};
    int stale = never_ran && r.checked;
    int mixed = t.failed && t.failed < t.runs;
    r.verdict = stale ? "stale" : mixed ? "abstained" : t.failed ? "reproduced" : "no_failure";
    afd_buf o;
    afd_buf_init(&o);
    if (cli->json) {
        replay_json(&o, cli, &t, &r, &s, ran);
    } else {
        afd_buf_printf(
            &o, "%s: replayed %s %" PRIu64 " times: %" PRIu64 " failed, %" PRIu64 " passed; traces %s\n",
            cli->nodeid, desc ? desc : "schedule", t.runs, t.failed, t.by_outcome[AFD_OUT_PASS],
            r.identical ? "identical" : "differ");
        if (t.first_failure) {
            afd_buf_printf(&o, "  %s: ", afd_outcome_name(t.first_failure_outcome));
            afd_term_strn(&o, t.first_failure, t.first_failure_len);
            afd_buf_printf(&o, "\n");
        }
        if (r.identical)
            afd_buf_printf(&o, "  trace digest %016" PRIx64 "\n", t.first_digest);
        if (stale)
            never_ran_lines(&o, &s, ran);
        afd_runs_step_limit_line(&o, &t, cli->max_steps);
        afd_runs_truncated_line(&o, &t);
    }
    if (cli->json)
        fwrite(o.data, 1, o.len, stdout);
    else
        afd_term_write(stdout, o.data, o.len);
    afd_buf_finish(&o);
    if (stale) {
        afd_buf e;
        afd_buf_init(&e);
        afd_buf_printf(&e,
                       "affidavit: stale schedule: %" PRIu32 " of its %" PRIu32 " delays never ran in %s, so "
                       "these runs say nothing about it\n",
                       never_ran, s.n_delays, cli->nodeid);
        afd_term_write(stderr, e.data,
                       e.len); /* the node id is the user's: no control byte reaches the terminal */
        afd_buf_finish(&e);
        rc = AFD_EXIT_STALE;
    } else if (mixed) {
        const char *why = afd_runs_uncontrolled_words(t.flags_union);
        fprintf(stderr, "affidavit: replay is not deterministic (%" PRIu64 "/%" PRIu64 " failed)%s%s\n",
                t.failed, t.runs, why ? "; uncontrolled source: " : "", why ? why : "");
        rc = AFD_EXIT_ABSTAIN;
    } else {
        rc = t.failed ? AFD_EXIT_FAILURE : AFD_EXIT_CLEAN;
    }
out:
    afd_schedule_finish(&s);
    free(ran);
    free(desc);
    free(canon);
    afd_tally_finish(&t);
    return rc;
}
