/* cmds.c -- sample and replay (explore: explore.c): runs dispatched to the pool, counted, and reported.
 *
 * Every number printed here is a count of runs that were executed, or a statistic computed from
 * such counts (stats.h). A run is "failed" when the test failed, errored, hung or crashed; a skip
 * or a run stopped at the step limit is neither a pass nor a failure and is reported separately. */
#include "cmds.h"
#include "runs.h"
#include "afd.h"
#include "delays.h"
#include "out.h"
#include "pool.h"
#include "schedule.h"
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
        *cli->summary = (afd_item_summary){t.runs, t.failed, 0, 0, 0, 0};
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
    rc = afd_runs_batch_alone(pool, 0, cli->n, 0, make_replay_token, take_replay_events, &rctx, &prog, &t);
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
