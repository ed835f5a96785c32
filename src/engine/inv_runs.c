/* inv_runs.c -- the investigation's runs: batches on the pool, every run remembered, and the first
 * three stages (sample: the natural runs; search: the portfolio until a schedule fails;
 * reproduce: that schedule replayed, and a failure that outlasted a deadline checked below it).
 *
 * Every run an investigation makes goes through remember(), which keeps its summary for Ochiai and
 * the blocking-call predicate; a batch keeps at most one run whole (v->keep). Runs dominate the
 * cost: the bookkeeping here is a view and a summary per run. */
#include "afd.h"
#include "inv.h"
#include "runs.h"
#include "stats.h"
#include "timing.h"
#include "token.h"
#include "trace.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void inv_kept_finish(kept_run *k)
{
    if (!k)
        return;
    free(k->failure);
    if (k->have_trace)
        afd_trace_finish(&k->tr);
    memset(k, 0, sizeof *k);
}

static int remember(inv *v, const afd_run_result *res, const afd_trace *tr)
{
    v->total_runs++;
    v->step_limited += res->outcome == AFD_OUT_STEP_LIMIT;
    v->truncated += tr && (tr->flags & AFD_TRACE_TRUNCATED);
    if (!tr)
        return 0;
    if (afd_runs_is_failure(res->outcome))
        v->failing_flags |= tr->flags;
    afd_view view;
    if (afd_view_build_src(&view, tr, v->srcs) < 0)
        return AFD_ENOMEM;
    if (v->n_sums == v->cap_sums) {
        size_t ncap = v->cap_sums ? v->cap_sums * 2 : 256;
        afd_run_summary *ns = realloc(v->sums, ncap * sizeof *ns);
        if (!ns) {
            afd_view_finish(&view);
            return AFD_ENOMEM;
        }
        v->sums = ns;
        uint8_t *nb = realloc(v->blocked, ncap);
        if (!nb) {
            afd_view_finish(&view);
            return AFD_ENOMEM;
        }
        v->blocked = nb;
        uint8_t *nn = realloc(v->natural, ncap);
        if (!nn) {
            afd_view_finish(&view);
            return AFD_ENOMEM;
        }
        v->natural = nn;
        v->cap_sums = ncap;
    }
    int rc = afd_view_summary_build(&v->sums[v->n_sums], &view, afd_runs_is_failure(res->outcome));
    uint8_t blocked = 0;
    uint64_t slow = (uint64_t)(v->cli->slow_step_ms * 1e6);
    for (uint32_t i = 0; i < view.n_steps; i++) {
        const afd_xstep *st = &view.steps[i];
        int is_block = st->blocked_ns >= 1000000u && st->block_site != AFD_NOSTR;
        if (!is_block && !(v->in_natural && st->wall >= slow))
            continue;
        blocked = 1;
        uint64_t ns = is_block ? st->blocked_ns : st->wall;
        if (v->in_natural && afd_runs_is_failure(res->outcome) && ns > v->block_ns) {
            uint32_t site = is_block ? st->block_site : st->site;
            free(v->block_site);
            free(v->block_task);
            const char *at = afd_trace_known(tr, site);
            v->block_site = strdup(at ? at : ""); /* "": the step was outside the user's code */
            v->block_task = strdup(afd_trace_task_label(tr, st->task));
            v->block_ns = ns;
            if (!v->block_site || !v->block_task)
                rc = AFD_ENOMEM;
        }
    }
    afd_view_finish(&view);
    if (rc < 0)
        return rc;
    v->blocked[v->n_sums] = blocked;
    v->natural[v->n_sums] = (uint8_t)v->in_natural;
    v->n_sums++;
    return 0;
}

static int keep_run(kept_run *k, const afd_run_result *res, const afd_trace *tr)
{
    inv_kept_finish(k);
    k->outcome = res->outcome;
    k->failure = afd_runs_text_dup(res->failure, res->failure_len, &k->failure_len);
    if (!k->failure)
        return AFD_ENOMEM;
    if (tr) {
        afd_buf b;
        afd_buf_init(&b);
        int rc = afd_trace_encode(tr, &b);
        if (rc == 0 && !b.err)
            rc = afd_trace_decode(&k->tr, b.data, b.len);
        afd_buf_finish(&b);
        if (rc < 0)
            return rc;
        k->have_trace = 1;
        k->digest = afd_trace_digest(&k->tr);
    }
    return 0;
}

/* ---- batches ---- */

static int take_sample(void *ctx, uint64_t i, afd_run_result *res, afd_trace *tr)
{
    inv *v = ctx;
    if (remember(v, res, tr) < 0)
        v->error = AFD_ENOMEM;
    if (afd_runs_is_failure(res->outcome) && !v->keep.failure && keep_run(&v->keep, res, tr) < 0)
        v->error = AFD_ENOMEM;
    return v->error != 0;
}

static int make_portfolio_inv(void *ctx, uint64_t i, uint8_t *mode, char **token)
{
    inv *v = ctx;
    return afd_runs_portfolio_token(v->seed, i, v->est_steps, -1, mode, token);
}

static int take_search(void *ctx, uint64_t i, afd_run_result *res, afd_trace *tr)
{
    inv *v = ctx;
    if (remember(v, res, tr) < 0)
        v->error = AFD_ENOMEM;
    if (i == 0 && tr) {
        v->est_steps = afd_trace_program_steps(tr);
        afd_fired_sites_from_trace(&v->normal, tr);
    }
    i += v->index_offset;
    afd_timing tm;
    afd_timing_from_trace(&tm, afd_runs_is_failure(res->outcome) ? tr : NULL, &v->normal);
    if (tm.crossed) {
        /* A failure that outlasted a deadline is named only if nothing fails without doing so. */
        if (i < v->cand_index) {
            v->cand_index = i;
            free(v->cand_token);
            free(v->cand_failure);
            v->cand_token = strdup(tr->token);
            v->cand_failure = afd_runs_text_dup(res->failure, res->failure_len, &v->cand_failure_len);
            v->timing = tm;
            if (!v->cand_token)
                v->error = AFD_ENOMEM;
        }
        return v->error != 0;
    }
    if (afd_runs_is_failure(res->outcome) && tr && i < v->found_index) {
        v->found_index = i;
        free(v->found_token);
        v->found_token = strdup(tr->token);
        if (!v->found_token || keep_run(&v->keep, res, tr) < 0)
            v->error = AFD_ENOMEM;
    }
    return v->error != 0 || afd_runs_is_failure(res->outcome);
}

typedef struct replay_ctx {
    inv *v;
    const char *token;
} replay_ctx;

static int make_token(void *ctx, uint64_t i, uint8_t *mode, char **token)
{
    replay_ctx *r = ctx;
    *mode = (uint8_t)(AFD_MODE_CONTROLLED | (r->v->trace_lines ? AFD_MODE_TRACE_LINES : 0));
    *token = strdup(r->token);
    return *token ? 0 : AFD_ENOMEM;
}

static int take_replay(void *ctx, uint64_t i, afd_run_result *res, afd_trace *tr)
{
    replay_ctx *r = ctx;
    if (remember(r->v, res, tr) < 0)
        r->v->error = AFD_ENOMEM;
    if (!r->v->keep.failure && keep_run(&r->v->keep, res, tr) < 0)
        r->v->error = AFD_ENOMEM;
    return r->v->error != 0;
}

int inv_replay(inv *v, const char *token, uint64_t n, tally *t)
{
    memset(t, 0, sizeof *t);
    t->log = &v->log;
    t->spans = v->spans;
    inv_kept_finish(&v->keep);
    replay_ctx r = {v, token};
    int rc = afd_runs_batch_alone(v->pool, 0, n, 0, make_token, take_replay, &r, &v->prog, t);
    return rc < 0 ? rc : v->error;
}

/* Replays the found token with its costs capped below the deadlines, AFD_TIMING_CHECK_RUNS times,
 * and gives *out the outlasted deadline and the verdict (timing.h). */
static int check_timing(inv *v, afd_timing *out)
{
    *out = v->timing;
    out->sensitive = 0;
    char *capped = NULL;
    int rc = afd_timing_capped_token(v->found_token, out->real_wait || out->fired, &capped);
    if (rc < 0)
        return rc;
    tally t;
    rc = inv_replay(v, capped, AFD_TIMING_CHECK_RUNS, &t);
    free(capped);
    inv_kept_finish(&v->keep);
    out->check_runs = t.runs;
    out->check_passed = t.by_outcome[AFD_OUT_PASS];
    out->sensitive = rc == 0 && t.runs == AFD_TIMING_CHECK_RUNS && t.by_outcome[AFD_OUT_PASS] == t.runs;
    afd_tally_finish(&t);
    if (rc == 0 && out->sensitive)
        rc = afd_timing_name(out, v->pool, v->found_token, &v->prog);
    return rc;
}

int inv_run_schedule(inv *v, const afd_schedule *s, kept_run *keep)
{
    char *token = NULL;
    int rc = afd_token_encode(s, &token);
    if (rc < 0)
        return rc;
    tally t;
    rc = inv_replay(v, token, 1, &t);
    free(token);
    int failed = t.failed > 0;
    afd_tally_finish(&t);
    if (rc < 0)
        return rc;
    if (keep) {
        inv_kept_finish(keep);
        *keep = v->keep;
        memset(&v->keep, 0, sizeof v->keep);
    }
    return failed;
}

/* The task is a plain callback (a loop callback that is not a coroutine's step). */
int inv_callback_task(const afd_trace *tr, uint32_t task)
{
    for (uint32_t i = 0; i < tr->n_events; i++)
        if (tr->events[i].kind == AFD_EV_TASK && tr->events[i].task == task)
            return tr->events[i].flags & 1;
    return 0;
}

/* Why replays of one schedule did not all fail: the uncontrolled source recorded, or else the
 * sources no run records (every replay path says the same, the first or the minimized one). */
const char *inv_nondeterministic_reason(uint32_t flags)
{
    const char *why = afd_runs_uncontrolled_words(flags);
    return why ? why
               : "replay is not deterministic and no thread, socket or real wait was recorded: the "
                 "likely source is a wall-clock read or unseeded entropy (os.urandom, uuid4, secrets)";
}

/* Replays that all fail, but not with one trace: the failure is reproduced (that is what was
 * measured), and what the schedule does not fix is said beside it as a qualification, once. */
void inv_note_traces_differ(outcome *o, const tally *t, uint32_t flags)
{
    if (o->traces_differ)
        return;
    o->traces_differ = 1;
    const char *why = afd_runs_uncontrolled_words(flags);
    char buf[400];
    snprintf(buf, sizeof buf, "%" PRIu64 "/%" PRIu64 " failed, not all with the same trace; %s%s", t->failed,
             t->runs, why ? "recorded: " : "",
             why ? why
                 : "no thread, socket or real wait was recorded: likely a wall-clock read (time.time, "
                   "time.monotonic) or unseeded entropy changes steps around the failure");
    afd_evidence_add(
        &o->ev,
        "the schedule reproduces the failure every time, but something it does not control changes "
        "what else runs",
        buf, "observed");
}

/* ---- the stages ---- */

/* 1. natural runs: the flake rate with its Wilson interval. */
int inv_sample(inv *v, outcome *o)
{
    const afd_cli *cli = v->cli;
    o->natural.log = &v->log;
    o->natural.spans = v->spans;
    v->in_natural = 1;
    int rc = afd_runs_batch(v->pool, 0, cli->natural, 0, afd_runs_make_natural, take_sample, v, &v->prog,
                            &o->natural);
    v->in_natural = 0;
    if (rc < 0 || v->error)
        return rc < 0 ? rc : v->error;
    if (afd_runs_report_no_loop(cli, &o->natural)) {
        v->exit = AFD_EXIT_USAGE;
        return INV_QUIT;
    }
    afd_stats_wilson(o->natural.failed, o->natural.runs, &o->lo, &o->hi);
    if (o->natural.first_failure)
        o->failure =
            afd_runs_text_dup(o->natural.first_failure, o->natural.first_failure_len, &o->failure_len);
    return 0;
}

/* Investigate's systematic search sees every run, as the portfolio's batches do. */
static int observe_sys(void *ctx, uint64_t i, afd_run_result *res, afd_trace *tr)
{
    inv *v = ctx;
    if (remember(v, res, tr) < 0)
        v->error = AFD_ENOMEM;
    return 0;
}

/* The systematic search with what the search's budget left, its failure adopted as the search's
 * find (a clean one as found, one that outlasted a deadline as the candidate). */
static int search_systematic(inv *v, outcome *o, tally *search, double left)
{
    const afd_cli *cli = v->cli;
    /* The random portfolio keeps its share: up to INV_RANDOM_MAX random schedules in all, and at
     * least half of what is left, so a search the systematic bound does not end in time still runs
     * the random schedules that found failures before it existed. */
    uint64_t left_runs = cli->n - search->runs;
    uint64_t random_left =
        o->search_random_runs < INV_RANDOM_MAX ? INV_RANDOM_MAX - o->search_random_runs : 0;
    uint64_t sys_runs = left_runs > random_left ? left_runs - random_left : 0;
    if (sys_runs < left_runs / 2)
        sys_runs = left_runs / 2;
    /* The time left is shared as the runs are: where --seconds binds before --runs (a slow test, a
     * loaded machine), the systematic search would otherwise spend all of it and the random
     * schedules after it would never run. */
    double sys_seconds = left > 0 && left_runs ? left * (double)sys_runs / (double)left_runs : left;
    o->sys_opts = (afd_sys_opts){.max_delays = cli->max_delays_set ? cli->max_delays : AFD_SYS_DEFAULT_DELAYS,
                                 .prune_classes = cli->prune_classes,
                                 .seed = v->seed,
                                 .max_runs = sys_runs ? sys_runs : 1,
                                 .seconds = sys_seconds,
                                 .stop_on_failure = 1,
                                 .observe = observe_sys,
                                 .observe_ctx = v};
    uint64_t base = search->runs;
    int rc = afd_systematic(v->pool, &o->sys_opts, &v->prog, search, &o->sys);
    o->sys_ran = 1;
    if (rc < 0 || v->error || !o->sys.fail_run)
        return rc < 0 ? rc : v->error;
    afd_sys_result *r = &o->sys;
    uint64_t index = base + r->fail_run - 1;
    if (r->timing.crossed && v->cand_index != UINT64_MAX)
        return 0; /* the portfolio's earlier one stays the candidate */
    if (r->timing.crossed) {
        v->cand_index = index;
        free(v->cand_token);
        free(v->cand_failure);
        v->cand_token = r->fail_token;
        v->cand_failure = r->failure;
        v->cand_failure_len = r->failure_len;
        v->timing = r->timing;
    } else {
        v->found_index = index;
        free(v->found_token);
        v->found_token = r->fail_token;
        inv_kept_finish(&v->keep);
        v->keep.failure = r->failure;
        v->keep.failure_len = r->failure_len;
        v->keep.outcome = r->fail_outcome;
        o->sys_found_run = index + 1;
    }
    r->fail_token = r->failure = NULL;
    return 0;
}

/* 2. the search: a short random portfolio, then the systematic search (every schedule with at most
 * K delays), then the random portfolio again with what the budget left, up to INV_RANDOM_MAX random
 * schedules in all (within --runs and --seconds), until a schedule fails. */
int inv_search(inv *v, outcome *o)
{
    const afd_cli *cli = v->cli;
    tally search = {.log = &v->log, .spans = v->spans};
    inv_kept_finish(&v->keep);
    uint64_t start = afd_runs_now_ns();
    uint64_t random_n = cli->n < 2 * INV_RANDOM_FIRST ? (cli->n + 1) / 2 : INV_RANDOM_FIRST;
    int rc = afd_runs_batch(v->pool, 0, 1, 0, make_portfolio_inv, take_search, v, &v->prog, &search);
    if (rc == 0 && !v->error && v->found_index == UINT64_MAX && random_n > 1)
        rc = afd_runs_batch(v->pool, 1, random_n - 1, cli->seconds, make_portfolio_inv, take_search, v,
                            &v->prog, &search);
    o->search_random_runs = search.runs;
    double left = 0;
    int time_left = 1;
    if (cli->seconds > 0) {
        left = cli->seconds - (double)(afd_runs_now_ns() - start) / 1e9;
        time_left = left > 0;
    }
    if (rc == 0 && !v->error && v->found_index == UINT64_MAX && time_left && search.runs == random_n &&
        search.runs < cli->n)
        rc = search_systematic(v, o, &search, left);
    if (cli->seconds > 0) {
        left = cli->seconds - (double)(afd_runs_now_ns() - start) / 1e9;
        time_left = left > 0;
    }
    uint64_t random_more =
        o->search_random_runs < INV_RANDOM_MAX ? INV_RANDOM_MAX - o->search_random_runs : 0;
    if (random_more > cli->n - search.runs)
        random_more = cli->n - search.runs;
    if (rc == 0 && !v->error && v->found_index == UINT64_MAX && time_left && random_more) {
        uint64_t before = search.runs;
        v->index_offset = before - random_n;
        rc = afd_runs_batch(v->pool, random_n, random_more, left, make_portfolio_inv, take_search, v,
                            &v->prog, &search);
        v->index_offset = 0;
        o->search_random_runs += search.runs - before;
    }
    afd_tally_finish(&search);
    if (rc < 0 || v->error)
        return rc < 0 ? rc : v->error;
    int cut_by_time =
        cli->seconds > 0 && search.runs < cli->n && (double)(afd_runs_now_ns() - start) / 1e9 >= cli->seconds;
    if (v->found_index == UINT64_MAX && v->cand_index != UINT64_MAX) {
        /* Nothing failed without outlasting a deadline: the failure that did is reproduced and
         * then checked below the deadline (the reproduce stage). */
        v->found_index = v->cand_index;
        v->found_token = v->cand_token;
        v->cand_token = NULL;
        inv_kept_finish(&v->keep);
        v->keep.failure = v->cand_failure;
        v->keep.failure_len = v->cand_failure_len;
        v->cand_failure = NULL;
    } else {
        v->timing.crossed = 0;
    }
    if (v->found_index == UINT64_MAX) {
        if (o->natural.failed) {
            o->verdict = "abstained";
            const char *why = afd_runs_uncontrolled_words(v->failing_flags);
            if (!why && cut_by_time)
                why = "it failed naturally but under none of the controlled schedules the search ran "
                      "before its --seconds budget ran out (fewer than --runs): a longer search may "
                      "find one; failing that, the likely source is one affidavit does not control "
                      "(threads, real sockets, wall-clock reads, os.urandom or other unseeded entropy)";
            o->abstain_reason =
                why ? why
                    : "it failed naturally but under no controlled schedule: the likely source is "
                      "one affidavit does not control (threads, real sockets, wall-clock reads, "
                      "os.urandom or other unseeded entropy)";
            v->exit = AFD_EXIT_ABSTAIN;
        } else {
            o->verdict = "no_failure";
            v->exit = AFD_EXIT_CLEAN;
        }
        return INV_STOP;
    }
    free(o->failure);
    o->failure = afd_runs_text_dup(v->keep.failure, v->keep.failure_len, &o->failure_len);
    inv_kept_finish(&v->keep);
    return 0;
}

/* What a replay saw a thread do that asyncio does not allow: queue a callback with call_soon while
 * the loop waited (an Event set or a future resolved from the thread), which stock asyncio's
 * select() does not wake for. An evidence row naming the thread and the user's line, or nothing. */
static int unwoken_evidence(outcome *o, const tally *t)
{
    if (!t->unwoken)
        return 0;
    char measured[400];
    snprintf(measured, sizeof measured,
             "%s%s did so in a replay; the callback runs only when a timer or a descriptor wakes the loop "
             "(loop.call_soon_threadsafe wakes it)",
             t->unwoken[0] ? "the thread " : "a thread", t->unwoken);
    return afd_evidence_add(&o->ev,
                            "a thread queued a callback with call_soon, not call_soon_threadsafe, while the "
                            "loop waited: asyncio's loop is not woken by it",
                            measured, "observed") < 0
               ? AFD_ENOMEM
               : 0;
}

/* 3. that schedule replayed R times: R/R must fail alike, or we abstain and name the likely
 * uncontrolled source. A failure that needs one step to outlast a deadline has no race to
 * explain and no fix to make: it is checked below the deadline and reported as such. */
int inv_reproduce(inv *v, outcome *o)
{
    tally t;
    int rc = inv_replay(v, v->found_token, v->cli->replays, &t);
    if (rc < 0) {
        afd_tally_finish(&t);
        return rc;
    }
    o->replay_runs = t.runs;
    o->replay_failed = t.failed;
    if (unwoken_evidence(o, &t) < 0) {
        afd_tally_finish(&t);
        return AFD_ENOMEM;
    }
    if (t.failed == t.runs && t.digests_differ)
        inv_note_traces_differ(o, &t, t.flags_union | v->failing_flags);
    /* what the replays did, said where no token is printed (with the thread, if one was working) */
    char replays[300];
    int len = snprintf(replays, sizeof replays, "replayed alone it failed %" PRIu64 "/%" PRIu64 " times",
                       t.failed, t.runs);
    if (t.failed != t.runs) {
        /* A token is a failing schedule only when every replay of it fails: this one is not printed
         * (as explore's unconfirmed ones), and what its replays did is said instead. */
        o->verdict = "abstained";
        o->abstain_reason = inv_nondeterministic_reason(t.flags_union | v->failing_flags);
        v->exit = AFD_EXIT_ABSTAIN;
        afd_tally_finish(&t);
        return afd_evidence_add(&o->ev,
                                "not every replay of the failing schedule fails, so no token is printed",
                                replays, "observed") < 0
                   ? AFD_ENOMEM
                   : INV_STOP;
    }
    v->fail_run = v->keep;
    memset(&v->keep, 0, sizeof v->keep);
    uint32_t flags = t.flags_union;
    if (flags & AFD_TRACE_THREAD_RACE) {
        snprintf(o->abstain_buf, sizeof o->abstain_buf,
                 "a thread (%s) was still working when a timer fired or a delay passed in the failing "
                 "runs: what it had done by then depends on its speed, which no schedule decides",
                 t.thread ? t.thread : "unnamed");
        snprintf(replays + len, sizeof replays - (size_t)len,
                 ", with %s%s still working when a timer fired or a stall passed",
                 t.thread ? "the thread " : "a thread", t.thread ? t.thread : "");
    }
    afd_tally_finish(&t);
    if (v->timing.crossed) {
        rc = check_timing(v, &o->timing);
        if (rc < 0)
            return rc;
    }
    if (!o->timing.sensitive) { /* no deadline explains it: maybe the time slow steps take */
        afd_timing tm = {0};
        rc = afd_timing_clock_check(&tm, v->pool, v->found_token, v->fail_run.outcome, &v->prog);
        if (rc < 0)
            return rc;
        if (tm.sensitive)
            o->timing = tm;
    }
    /* A failure whose replays had a thread still working when a timer fired or a stall passed:
     * whether the next replay fails is that thread's speed, however many failed here, so its token
     * is no failing schedule and is not printed (as explore's). A threshold is that, thread or not;
     * otherwise the thread decides and the run is abstained. */
    if ((flags & AFD_TRACE_THREAD_RACE) &&
        afd_evidence_add(&o->ev, "a thread's speed decides each replay, so no token is printed", replays,
                         "observed") < 0)
        return AFD_ENOMEM;
    if (o->timing.sensitive) {
        o->verdict = "timing_sensitive";
        v->exit = AFD_EXIT_FAILURE;
        if (flags & AFD_TRACE_THREAD_RACE)
            return INV_STOP;
        o->token = strdup(v->found_token);
        return o->token ? INV_STOP : AFD_ENOMEM;
    }
    if (flags & AFD_TRACE_THREAD_RACE) {
        o->verdict = "abstained";
        o->abstain_reason = o->abstain_buf;
        v->exit = AFD_EXIT_ABSTAIN;
        return INV_STOP;
    }
    return 0;
}
