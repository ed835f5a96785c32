/* systematic.c -- the systematic search on a pool (systematic.h) and `explore --strategy systematic`.
 *
 * Each round of the enumeration is one batch: its runs go to the workers in the round's order and
 * come back in any order; the enumeration uses them in the round's order. The first failure is the
 * failing run earliest in that order, so which schedule is named does not depend on which worker
 * was faster. */
#include "systematic.h"
#include "afd.h"
#include "iclass.h"
#include "shell.h"
#include "syscov.h"
#include "token.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct sys_ctx {
    afd_sysenum *e;
    afd_sys_result *r;
    uint64_t round_no, taken;
    uint64_t run_base; /* runs made before this round */
    uint64_t fail_i;   /* the round's earliest failing item (no deadline outlasted), UINT64_MAX */
    uint64_t cand_i;   /* ... that outlasted a deadline */
    int stop_on_failure;
    take_fn observe;
    void *observe_ctx;
    int error;
    afd_fired_sites normal; /* the deadlines the zero schedule's run (round 0) saw fire */
} sys_ctx;

static int make_sys(void *vctx, uint64_t i, uint8_t *mode, char **token, uint64_t *mark_lo, uint32_t *mark_n)
{
    sys_ctx *c = vctx;
    int repeat;
    *mode = AFD_MODE_CONTROLLED;
    return afd_sysenum_item(c->e, i, token, mark_lo, mark_n, &repeat);
}

static void keep_failure(sys_ctx *c, uint64_t i, const afd_run_result *res, const afd_trace *tr, int crossed)
{
    afd_sys_result *r = c->r;
    uint32_t nd;
    afd_sysenum_item_delays(c->e, i, &nd);
    free(r->fail_token);
    free(r->failure);
    r->fail_token = strdup(tr->token);
    r->failure = afd_runs_text_dup(res->failure, res->failure_len, &r->failure_len);
    r->fail_outcome = res->outcome;
    r->fail_delays = nd;
    r->fail_run = c->run_base + i + 1;
    if (crossed)
        afd_timing_from_trace(&r->timing, tr, &c->normal);
    else
        memset(&r->timing, 0, sizeof r->timing);
}

static int take_sys(void *vctx, uint64_t i, afd_run_result *res, afd_trace *tr)
{
    sys_ctx *c = vctx;
    c->taken++;
    if (c->round_no == 0 && i == 0 && tr)
        afd_fired_sites_from_trace(&c->normal, tr);
    if (c->observe)
        (void)c->observe(c->observe_ctx, c->run_base + i, res, tr);
    uint64_t order = tr ? afd_trace_order_digest(tr) : 0, klass = 0;
    uint32_t n_access = 0;
    if (tr && afd_iclass_fingerprint(tr, &klass, &n_access) < 0)
        klass = order;
    int failed = afd_runs_is_failure(res->outcome);
    int rc = afd_sysenum_take(c->e, i, tr, order, klass, failed);
    if (rc < 0) {
        c->error = rc;
        return 1;
    }
    if (!failed || !tr)
        return 0;
    afd_timing tm;
    afd_timing_from_trace(&tm, tr, &c->normal);
    /* Which failure is kept is decided by enumeration order alone: a clean failure beats one that
     * outlasted a deadline, an earlier round beats a later one, a lower item a higher one. */
    afd_sys_result *r = c->r;
    int clean_kept = r->fail_run && !r->timing.crossed;
    if (!tm.crossed) {
        int earlier_round = clean_kept && r->fail_run <= c->run_base;
        if (!earlier_round && (c->fail_i == UINT64_MAX || i < c->fail_i)) {
            c->fail_i = i;
            keep_failure(c, i, res, tr, 0);
        }
        return c->stop_on_failure;
    }
    int cand_earlier_round = r->fail_run && r->timing.crossed && r->fail_run <= c->run_base;
    if (!clean_kept && !cand_earlier_round && (c->cand_i == UINT64_MAX || i < c->cand_i)) {
        c->cand_i = i;
        keep_failure(c, i, res, tr, 1);
    }
    return 0;
}

int afd_systematic(afd_pool *pool, const afd_sys_opts *o, afd_progress *prog, tally *t, afd_sys_result *r)
{
    memset(r, 0, sizeof *r);
    sys_ctx c = {
        .r = r, .stop_on_failure = o->stop_on_failure, .observe = o->observe, .observe_ctx = o->observe_ctx};
    int rc = afd_sysenum_new(&c.e, o->max_delays, o->prune_classes, o->seed);
    if (rc < 0)
        return rc;
    uint64_t start = afd_runs_now_ns();
    for (;;) {
        uint64_t n;
        rc = afd_sysenum_round(c.e, &n);
        if (rc < 0 || n == 0)
            break;
        double left = 0;
        if (o->seconds > 0) {
            left = o->seconds - (double)(afd_runs_now_ns() - start) / 1e9;
            if (left <= 0) {
                r->budget_spent = 1;
                break;
            }
        }
        uint64_t ask = n;
        if (o->max_runs) {
            if (r->runs >= o->max_runs) {
                r->budget_spent = 1;
                break;
            }
            if (ask > o->max_runs - r->runs)
                ask = o->max_runs - r->runs;
        }
        c.taken = 0;
        c.fail_i = c.cand_i = UINT64_MAX;
        c.run_base = r->runs;
        rc = afd_runs_batch_marked(pool, 0, ask, left, make_sys, take_sys, &c, prog, t);
        r->runs += c.taken;
        c.round_no++;
        if (rc < 0 || c.error)
            break;
        if (o->stop_on_failure && c.fail_i != UINT64_MAX) {
            r->stopped_at_failure = 1;
            break;
        }
        if (c.taken < n) {
            r->budget_spent = 1;
            break;
        }
    }
    if (rc == 0 && c.error)
        rc = c.error;
    int stop_rc = afd_sysenum_stop(c.e);
    if (rc == 0)
        rc = stop_rc;
    r->n_levels = afd_sysenum_levels(c.e, r->levels, AFD_SYS_MAX_DELAYS + 1);
    r->clock_reads = afd_sysenum_clock_reads(c.e);
    afd_sysenum_free(c.e);
    afd_fired_sites_finish(&c.normal);
    return rc;
}

void afd_sys_result_finish(afd_sys_result *r)
{
    if (!r)
        return;
    free(r->fail_token);
    free(r->failure);
    r->fail_token = r->failure = NULL;
}

/* ---- coverage ---- */

static const char *why_not(const afd_sys_result *r, const afd_sys_level *lv)
{
    return lv->exhausted           ? NULL
           : !lv->started          ? (r->budget_spent ? "budget spent before it began" : "not begun")
           : r->stopped_at_failure ? "stopped at the first failure"
           : lv->uncontrolled      ? "runs used threads, sockets or real waits, which no schedule controls"
           : lv->capped            ? "a sweep was cut at its slot bound"
           : lv->unmeasured        ? "a run came back without its measured slot"
                                   : "budget spent";
}

void afd_sys_incident_finish(afd_incident_sys *s)
{
    for (uint32_t L = 0; L < AFD_INCIDENT_SYS_LEVELS; L++) {
        free(s->levels[L].why_not);
        s->levels[L].why_not = NULL;
    }
}

int afd_sys_to_incident(const afd_sys_result *r, const afd_sys_opts *o, afd_incident_sys *out)
{
    memset(out, 0, sizeof *out);
    out->max_delays = o->max_delays;
    out->pruning = o->prune_classes != 0;
    out->runs = r->runs;
    out->budget_spent = r->budget_spent;
    out->clock_reads = r->clock_reads;
    for (uint32_t L = 0; L < r->n_levels && L < AFD_INCIDENT_SYS_LEVELS; L++) {
        const afd_sys_level *lv = &r->levels[L];
        afd_incident_sys_level *d = &out->levels[L];
        d->delays = lv->delays;
        d->schedules = lv->schedules;
        d->cum_schedules = lv->cum_schedules;
        d->orders = lv->cum_orders;
        d->classes = lv->cum_classes;
        d->failed = lv->failed;
        d->no_slot = lv->no_slot;
        d->pruned = lv->pruned;
        d->exhausted = lv->exhausted;
        d->estimated_total = lv->estimated_total;
        const char *why = why_not(r, lv);
        out->n_levels = L + 1;
        if (why && !(d->why_not = strdup(why)))
            return AFD_ENOMEM;
    }
    return 0;
}

void afd_sys_coverage_text(const afd_sys_result *r, const afd_sys_opts *o, afd_buf *b, const char *indent)
{
    afd_incident_sys is;
    if (afd_sys_to_incident(r, o, &is) == 0)
        afd_sys_coverage_lines(&is, b, indent);
    afd_sys_incident_finish(&is);
    uint64_t at = 0;
    for (uint32_t L = 0; L < r->n_levels; L++)
        at += r->levels[L].at_deadline;
    if (at)
        afd_buf_printf(b,
                       "%s%" PRIu64
                       " sweep%s stopped where a longer delay would move a deadline the program armed "
                       "(a timeout, a TTL: a threshold, not a race)\n",
                       indent, at, at == 1 ? "" : "s");
}

void afd_sys_coverage_json(const afd_sys_result *r, const afd_sys_opts *o, afd_buf *b)
{
    afd_buf_printf(b,
                   "{\"max_delays\": %u, \"pruning\": \"%s\", \"runs\": %" PRIu64 ", \"budget_spent\": %s, "
                   "\"clock_reads\": %" PRIu64 ", \"levels\": [",
                   o->max_delays, o->prune_classes ? "classes" : "none", r->runs,
                   r->budget_spent ? "true" : "false", r->clock_reads);
    for (uint32_t L = 0; L < r->n_levels; L++) {
        const afd_sys_level *lv = &r->levels[L];
        afd_buf_printf(b,
                       "%s{\"delays\": %u, \"schedules\": %" PRIu64 ", \"failed\": %" PRIu64
                       ", \"cum_schedules\": %" PRIu64 ", \"orders\": %" PRIu64 ", \"classes\": %" PRIu64
                       ", \"cum_failed\": %" PRIu64 ", \"no_slot\": %" PRIu64 ", \"pruned\": %" PRIu64
                       ", \"capped\": %" PRIu64 ", \"at_deadline\": %" PRIu64 ", \"unmeasured\": %" PRIu64
                       ", \"measure_runs\": %" PRIu64 ", \"exhausted\": %s, \"estimated_total\": ",
                       L ? ", " : "", L, lv->schedules, lv->failed, lv->cum_schedules, lv->cum_orders,
                       lv->cum_classes, lv->cum_failed, lv->no_slot, lv->pruned, lv->capped, lv->at_deadline,
                       lv->unmeasured, lv->measure_runs, lv->exhausted ? "true" : "false");
        if (lv->estimated_total >= 0)
            afd_buf_printf(b, "%" PRId64 "}", lv->estimated_total);
        else
            afd_buf_printf(b, "null}");
    }
    afd_buf_printf(b, "]}");
}

/* ---- explore --strategy systematic ---- */

static void explore_json(afd_buf *o, const afd_cli *cli, const afd_sys_opts *so, const afd_sys_result *r,
                         const tally *t, const char *desc)
{
    int found = r->fail_run != 0;
    afd_buf_printf(o, "{\"schema\": 1, \"nodeid\": ");
    afd_json_str(o, cli->nodeid);
    afd_buf_printf(o, ", \"strategy\": \"systematic\", \"found\": %s, \"token\": ", found ? "true" : "false");
    if (found)
        afd_json_str(o, r->fail_token);
    else
        afd_buf_printf(o, "null");
    afd_buf_printf(o, ", \"runs\": %" PRIu64 ", \"failure\": ", t->runs);
    if (found)
        afd_json_strn(o, r->failure, r->failure_len);
    else
        afd_buf_printf(o, "null");
    afd_buf_printf(o, ", \"outcome\": ");
    afd_json_str(o, found                               ? afd_outcome_name(r->fail_outcome)
                    : t->by_outcome[AFD_OUT_STEP_LIMIT] ? afd_outcome_name(AFD_OUT_STEP_LIMIT)
                                                        : "pass");
    afd_buf_printf(o, ", \"schedule\": ");
    afd_json_str(o, desc ? desc : "");
    afd_buf_printf(o, ", \"failing_run\": ");
    if (found)
        afd_buf_printf(o, "%" PRIu64, r->fail_run);
    else
        afd_buf_printf(o, "null");
    /* the portfolio's keys, for one contract: no shard, no portfolio indices */
    afd_buf_printf(o, ", \"shard\": \"1/1\", \"schedules\": [], ");
    afd_runs_json_outcomes(o, t);
    afd_buf_printf(o, ", \"verdict\": \"%s\", \"timing\": ",
                   !found                ? "no_failure"
                   : r->timing.sensitive ? "timing_sensitive"
                                         : "failure");
    afd_timing_json(&r->timing, o);
    afd_buf_printf(o, ", \"systematic\": ");
    afd_sys_coverage_json(r, so, o);
    afd_buf_printf(o, "}\n");
}

static void explore_text(afd_buf *o, const afd_cli *cli, const afd_sys_opts *so, const afd_sys_result *r,
                         const tally *t, const char *desc)
{
    if (!r->fail_run) {
        afd_buf_printf(o, "%s: no failing schedule in %" PRIu64 " systematic runs\n", cli->nodeid, t->runs);
    } else {
        afd_buf_printf(o, "%s: %sfailing schedule found at run %" PRIu64 " of %" PRIu64 " (%s)\n",
                       cli->nodeid, r->timing.sensitive ? "timing-sensitive: a " : "", r->fail_run, t->runs,
                       desc ? desc : "zero");
        if (r->timing.sensitive) {
            afd_buf_printf(o, "  ");
            afd_timing_summary(&r->timing, o);
            afd_buf_printf(o, "\n  checked: " AFD_TIMING_CHECKED " passed %" PRIu64 "/%" PRIu64 " runs\n",
                           r->timing.check_passed, r->timing.check_runs);
        }
    }
    afd_sys_coverage_text(r, so, o, "  ");
    if (r->fail_run) {
        afd_buf_printf(o, "  %s: ", afd_outcome_name(r->fail_outcome));
        afd_term_strn(o, r->failure, r->failure_len);
        afd_buf_printf(o, "\n  token:  %s\n  replay: ", r->fail_token);
        afd_shell_replay_command(o, r->fail_token, cli->nodeid);
        afd_buf_put_u8(o, '\n');
    }
    afd_runs_step_limit_line(o, t, cli->max_steps);
    afd_runs_truncated_line(o, t);
}

int afd_cmd_explore_systematic(const afd_cli *cli)
{
    if (cli->shard_n) {
        afd_runs_error_line("--shard applies to the random portfolio; the systematic search is one ordered "
                            "enumeration%s%s",
                            "", "");
        return AFD_EXIT_USAGE;
    }
    afd_sys_opts so = {.max_delays = cli->max_delays_set ? cli->max_delays : AFD_SYS_DEFAULT_DELAYS,
                       .prune_classes = cli->prune_classes,
                       .seed = cli->seed,
                       .max_runs = cli->n,
                       .seconds = cli->seconds,
                       .stop_on_failure = 1};
    afd_pool *pool;
    int rc = afd_runs_start_pool(cli, &pool);
    if (rc)
        return rc;
    tally t = {0};
    afd_progress prog;
    afd_progress_init(&prog, "systematic");
    afd_sys_result r;
    rc = afd_systematic(pool, &so, &prog, &t, &r);
    if (rc == 0 && r.fail_run && r.timing.crossed)
        rc = afd_timing_check(&r.timing, pool, r.fail_token, &prog);
    if (rc == 0 && r.fail_run && !r.timing.sensitive)
        rc = afd_timing_clock_check(&r.timing, pool, r.fail_token, r.fail_outcome, &prog);
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
    char *desc = NULL;
    afd_schedule s;
    if (r.fail_run && afd_token_decode(&s, r.fail_token) == 0) {
        desc = afd_schedule_describe(&s);
        afd_schedule_finish(&s);
    }
    afd_buf o;
    afd_buf_init(&o);
    if (cli->json)
        explore_json(&o, cli, &so, &r, &t, desc);
    else
        explore_text(&o, cli, &so, &r, &t, desc);
    if (cli->json)
        fwrite(o.data, 1, o.len, stdout);
    else
        afd_term_write(stdout, o.data, o.len);
    afd_buf_finish(&o);
    free(desc);
    rc = r.fail_run ? AFD_EXIT_FAILURE : AFD_EXIT_CLEAN;
    if (cli->summary)
        *cli->summary = (afd_item_summary){t.runs, t.failed, r.fail_run && r.timing.sensitive, 0, 0, 0};
out:
    afd_sys_result_finish(&r);
    afd_tally_finish(&t);
    return rc;
}
