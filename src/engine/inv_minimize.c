/* inv_minimize.c -- the minimize stage: the failing schedule rewritten as explicit per-step
 * delays, ddmin to a 1-minimal set, and each remaining delay bisected to the threshold where
 * failure starts (the collision window). When the failure needs no delay at all (the program's
 * `random` decided it), one delay is searched for under a seed that passes, so the window is
 * still a delay of one step. A test that fails under every schedule is told apart first: either
 * it does not depend on timing, or its tasks race the same way every time.
 *
 * Every oracle call is one run: ddmin costs O(n^2) runs in the worst case over n delays (n is at
 * most AFD_TOKEN_MAX_DELAYS), each bisection about log2(delay / BISECT_PRECISION_NS). */
#include "afd.h"
#include "explain.h"
#include "inv.h"
#include "minimize.h"
#include "runs.h"
#include "schedule.h"
#include "token.h"
#include "trace.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BISECT_PRECISION_NS 100u
#define MAX_FALLBACK_SEEDS 8u
#define MAX_FALLBACK_STEPS 400u

/* every_schedule_fails(): the failure is a race all the same (not a return code of a stage) */
#define EVERY_TIME_RACE 3

/* ---- explicit delays ---- */

void inv_delay_set_finish(delay_set *ds)
{
    if (!ds)
        return;
    for (uint32_t i = 0; i < ds->n; i++)
        free(ds->d[i].label);
    free(ds->d);
    free(ds->cost);
    afd_schedule_finish(&ds->base);
    memset(ds, 0, sizeof *ds);
}

static int delay_push(delay_set *ds, const char *label, uint32_t ordinal, uint64_t cost)
{
    afd_delay *nd = realloc(ds->d, ((size_t)ds->n + 1) * sizeof *nd);
    if (!nd)
        return AFD_ENOMEM;
    ds->d = nd;
    uint64_t *nc = realloc(ds->cost, ((size_t)ds->n + 1) * sizeof *nc);
    if (!nc)
        return AFD_ENOMEM;
    ds->cost = nc;
    ds->d[ds->n].label = strdup(label);
    if (!ds->d[ds->n].label)
        return AFD_ENOMEM;
    ds->d[ds->n].ordinal = ordinal;
    ds->d[ds->n].cost_ns = cost;
    ds->cost[ds->n] = cost;
    ds->n++;
    return 0;
}

/* The failing run's costs and latenesses as explicit delays. A late idle wake-up becomes extra
 * cost of the step before it: the clock then reaches the same deadline-plus-lateness without the
 * idle jump, and every timer due by then is ready in the same deadline order. */
static int delays_from_trace(delay_set *ds, const afd_trace *tr, uint64_t seed)
{
    memset(ds, 0, sizeof *ds);
    afd_schedule_init(&ds->base);
    ds->base.strategy = AFD_STRAT_ZERO;
    ds->base.seed = seed;
    int32_t last = -1; /* delay index of the last step, or -1 if it had no cost */
    const afd_event *last_step = NULL;
    for (uint32_t i = 0; i < tr->n_events; i++) {
        const afd_event *e = &tr->events[i];
        if (e->kind == AFD_EV_STEP) {
            last_step = e;
            last = -1;
            if (e->cost) {
                int rc = delay_push(ds, afd_trace_task_label(tr, e->task), e->a, e->cost);
                if (rc < 0)
                    return rc;
                last = (int32_t)ds->n - 1;
            }
        } else if (e->kind == AFD_EV_IDLE && e->a && last_step) {
            if (last < 0) {
                int rc = delay_push(ds, afd_trace_task_label(tr, last_step->task), last_step->a, 0);
                if (rc < 0)
                    return rc;
                last = (int32_t)ds->n - 1;
            }
            ds->d[last].cost_ns += e->cost;
            ds->cost[last] += e->cost;
        }
    }
    return ds->n > AFD_TOKEN_MAX_DELAYS ? AFD_EFULL : 0;
}

static int delay_schedule(const delay_set *ds, afd_schedule *out)
{
    int rc = afd_schedule_copy(out, &ds->base);
    for (uint32_t i = 0; rc == 0 && i < ds->n; i++)
        if (!ds->keep || ds->keep[i])
            rc = afd_schedule_add_delay(out, ds->d[i].label, ds->d[i].ordinal, ds->cost[i]);
    if (rc < 0)
        afd_schedule_finish(out);
    return rc;
}

static int subset_oracle(void *ctx, const uint8_t *keep, size_t n)
{
    oracle_ctx *o = ctx;
    o->ds->keep = keep;
    afd_schedule s;
    int rc = delay_schedule(o->ds, &s);
    o->ds->keep = NULL;
    if (rc < 0)
        return rc;
    rc = inv_run_schedule(o->v, &s, NULL);
    afd_schedule_finish(&s);
    afd_progress_update(&o->v->prog, o->v->total_runs, 0, 0);
    return rc;
}

static int value_oracle(void *ctx, uint64_t value)
{
    oracle_ctx *o = ctx;
    uint64_t saved = o->ds->cost[o->which];
    o->ds->cost[o->which] = value;
    afd_schedule s;
    int rc = delay_schedule(o->ds, &s);
    o->ds->cost[o->which] = saved;
    if (rc < 0)
        return rc;
    rc = inv_run_schedule(o->v, &s, NULL);
    afd_schedule_finish(&s);
    afd_progress_update(&o->v->prog, o->v->total_runs, 0, 0);
    if (rc >= 0 && o->record &&
        o->record->n_probes < sizeof o->record->probes / sizeof o->record->probes[0]) {
        o->record->probes[o->record->n_probes].delay = value;
        o->record->probes[o->record->n_probes++].failed = rc == 1;
    }
    return rc;
}

/* Searches one delay under a seed whose zero schedule passes: the failure needed no delay under
 * the failing seed (the program's random values decided it), so the window is measured where
 * timing alone decides. Task steps are tried before plain callbacks (a delay of a task's step is
 * what a reader can act on). Fills ds (base + one delay) and w and returns 1 when found; returns 0
 * when no single delay fails, with *pass_token set to the first passing schedule (the nearest
 * passing run then differs only in the values drawn from `random`). */
static int fallback_one_delay(inv *v, delay_set *ds, window *w, char **pass_token)
{
    for (uint64_t i = 1; i <= MAX_FALLBACK_SEEDS; i++) {
        afd_schedule z;
        int rc = afd_schedule_portfolio(&z, v->seed ^ 0x5eedULL, i, 1, AFD_STRAT_ZERO);
        if (rc < 0)
            return rc;
        kept_run pass = {0};
        rc = inv_run_schedule(v, &z, &pass);
        uint64_t seed = z.seed;
        if (rc == 0 && !*pass_token)
            rc = afd_token_encode(&z, pass_token);
        afd_schedule_finish(&z);
        w->runs++;
        if (rc < 0 || rc == 1 || !pass.have_trace) {
            inv_kept_finish(&pass);
            if (rc < 0)
                return rc;
            continue;
        }
        /* the passing run's steps, each tried with one large delay */
        uint64_t span = 0;
        for (uint32_t k = 0; k < pass.tr.n_events; k++) {
            const afd_event *e = &pass.tr.events[k];
            if ((e->kind == AFD_EV_STEP || e->kind == AFD_EV_IDLE) && e->vtime + e->cost > span)
                span = e->vtime + e->cost;
        }
        uint64_t first = pass.tr.n_events ? pass.tr.events[0].vtime : 0;
        uint64_t big = 2 * (span > first ? span - first : 0) + AFD_PCT_MIN_NS;
        uint32_t tried = 0;
        for (int want_cb = 0; want_cb < 2 && rc == 0; want_cb++) {
            for (uint32_t k = 0; k < pass.tr.n_events && tried < MAX_FALLBACK_STEPS; k++) {
                const afd_event *e = &pass.tr.events[k];
                if (e->kind != AFD_EV_STEP || inv_callback_task(&pass.tr, e->task) != want_cb)
                    continue;
                tried++;
                inv_delay_set_finish(ds);
                afd_schedule_init(&ds->base);
                ds->base.strategy = AFD_STRAT_ZERO;
                ds->base.seed = seed;
                rc = delay_push(ds, afd_trace_task_label(&pass.tr, e->task), e->a, big);
                if (rc < 0)
                    break;
                afd_schedule s;
                rc = delay_schedule(ds, &s);
                if (rc < 0)
                    break;
                rc = inv_run_schedule(v, &s, NULL);
                afd_schedule_finish(&s);
                w->runs++;
                afd_progress_update(&v->prog, v->total_runs, 0, 0);
                if (rc != 0)
                    break;
            }
        }
        inv_kept_finish(&pass);
        if (rc < 0)
            return rc;
        if (rc == 1) {
            w->via_fallback = 1;
            return 1;
        }
        break; /* one passing seed is enough: its steps were all tried */
    }
    inv_delay_set_finish(ds);
    return 0;
}

static int schedule_token(const delay_set *ds, char **token)
{
    afd_schedule s;
    int rc = delay_schedule(ds, &s);
    if (rc < 0)
        return rc;
    rc = afd_token_encode(&s, token);
    afd_schedule_finish(&s);
    return rc;
}

/* A failure every natural run shows and the zero schedule too: when ten controlled schedules all
 * fail, it is either not timing-dependent (INV_STOP, verdict "deterministic") or a race that shows
 * every time (EVERY_TIME_RACE, o->token set: there is no window to measure). 0 otherwise. */
static int every_schedule_fails(inv *v, outcome *o)
{
    if (!(o->natural.runs >= 5 && o->natural.failed == o->natural.runs && v->found_index == 0))
        return 0;
    uint64_t all = 1, failed = 1;
    for (uint64_t i = 1; i < 10; i++) {
        afd_schedule s;
        int rc = afd_schedule_portfolio(&s, v->seed, i, v->est_steps, -1);
        if (rc < 0)
            return rc;
        rc = inv_run_schedule(v, &s, NULL);
        afd_schedule_finish(&s);
        if (rc < 0)
            return rc;
        all++;
        failed += (uint64_t)rc;
    }
    if (failed != all)
        return 0;
    char buf[128];
    snprintf(buf, sizeof buf, "%" PRIu64 "/%" PRIu64 " natural, %" PRIu64 "/%" PRIu64 " controlled failed",
             o->natural.failed, o->natural.runs, failed, all);
    /* Failing every time is not the same as not being a race: tasks that all read before
     * any of them writes lose updates under every schedule. One traced run tells. */
    v->trace_lines = 1;
    tally t;
    int rc = inv_replay(v, v->found_token, 1, &t);
    v->trace_lines = 0;
    afd_tally_finish(&t);
    if (rc < 0)
        return rc;
    size_t n_lost = 0;
    int stale_every_time = 0;
    afd_view dv;
    int have_dv = v->keep.have_trace && afd_view_build_src(&dv, &v->keep.tr, v->srcs) == 0;
    if (have_dv) {
        afd_xatom tmp[1];
        afd_view_lost_updates(&dv, tmp, 1, &n_lost);
        if (!n_lost) { /* a check every task passes before any acts on it fails every time too */
            afd_view_stale_checks(&dv, tmp, 1, &n_lost);
            stale_every_time = n_lost > 0;
        }
    }
    if (!n_lost) {
        o->verdict = "deterministic";
        afd_evidence_add(&o->ev, "it fails under every schedule tried: the failure does not depend on timing",
                         buf, "observed");
        v->exit = AFD_EXIT_FAILURE;
        rc = have_dv ? inv_explain_deterministic(v, o, &dv) : 0;
    }
    if (have_dv)
        afd_view_finish(&dv);
    inv_kept_finish(&v->keep);
    if (!n_lost)
        return rc < 0 ? rc : INV_STOP;
    afd_evidence_add(&o->ev,
                     stale_every_time
                         ? "it fails under every schedule tried, and its tasks act on checks another task "
                           "made stale: a race that shows every time (no timing window to measure)"
                         : "it fails under every schedule tried, and its tasks lose updates: a race that "
                           "shows every time (no timing window to measure)",
                     buf, "observed");
    o->token = strdup(v->found_token);
    return o->token ? EVERY_TIME_RACE : AFD_ENOMEM;
}

/* Bisects each delay of the minimal set; the first is the one the sentence names (o->win). */
static int bisect_delays(inv *v, outcome *o)
{
    delay_set *ds = &v->ds;
    for (uint32_t i = 0; i < ds->n; i++) {
        uint64_t lo = 0, hi = ds->cost[i];
        oracle_ctx bc = {.v = v, .ds = ds, .which = i, .record = i == 0 ? &o->win : NULL};
        if (i == 0) {
            /* the two ends were run already: without the delay it passes (the set is
             * 1-minimal), with all of it it fails */
            o->win.probes[0].delay = 0;
            o->win.probes[0].failed = 0;
            o->win.probes[1].delay = hi;
            o->win.probes[1].failed = 1;
            o->win.n_probes = 2;
        }
        uint64_t runs2 = 0;
        int rc = 0;
        if (hi > BISECT_PRECISION_NS)
            rc = afd_bisect(&lo, &hi, BISECT_PRECISION_NS, value_oracle, &bc, &runs2);
        o->win.runs += runs2;
        if (rc < 0)
            return rc;
        if (i == 0) {
            o->win.found = 1;
            o->win.label = strdup(ds->d[0].label);
            o->win.ordinal = ds->d[0].ordinal;
            o->win.lo = lo;
            o->win.hi = hi;
        }
    }
    return 0;
}

/* The failing run as explicit delays, shrunk by ddmin to a 1-minimal set and bisected. A
 * schedule that explicit delays do not reproduce (or with more delays than a token holds) is
 * left as it was found: 0, with no window. */
static int shrink(inv *v, outcome *o)
{
    delay_set *ds = &v->ds;
    afd_schedule found;
    int rc = afd_token_decode(&found, v->found_token);
    if (rc < 0)
        return rc;
    uint64_t fseed = found.seed;
    afd_schedule_finish(&found);
    rc = delays_from_trace(ds, &v->fail_run.tr, fseed);
    int explicit_ok = 0;
    if (rc == 0) {
        afd_schedule s;
        rc = delay_schedule(ds, &s);
        if (rc == 0) {
            rc = inv_run_schedule(v, &s, NULL);
            afd_schedule_finish(&s);
            o->win.runs++;
        }
        explicit_ok = rc == 1;
    }
    if (rc < 0 && rc != AFD_EFULL)
        return rc;
    if (!explicit_ok)
        return 0;
    o->win.n_delays_before = ds->n;
    uint8_t *keep = calloc(ds->n + 1, 1);
    if (!keep)
        return AFD_ENOMEM;
    oracle_ctx oc = {.v = v, .ds = ds};
    uint64_t runs = 0;
    rc = afd_ddmin(ds->n, subset_oracle, &oc, keep, &runs);
    o->win.runs += runs;
    if (rc < 0) {
        free(keep);
        return rc;
    }
    /* keep only the minimal set */
    uint32_t m = 0;
    for (uint32_t i = 0; i < ds->n; i++) {
        if (keep[i]) {
            ds->d[m] = ds->d[i];
            ds->cost[m] = ds->cost[i];
            m++;
        } else {
            free(ds->d[i].label);
        }
    }
    ds->n = m;
    free(keep);
    o->win.n_delays_after = m;
    if (m == 0) {
        inv_delay_set_finish(ds);
        rc = fallback_one_delay(v, ds, &o->win, &o->pass_token);
        if (rc < 0)
            return rc;
    } else {
        rc = 1;
    }
    return rc == 1 ? bisect_delays(v, o) : 0;
}

/* 4. minimize: the minimal failing schedule in o->token and, when a window was found, the
 * nearest passing one (the same delay just under the threshold) in o->pass_token. */
int inv_minimize(inv *v, outcome *o)
{
    int rc = every_schedule_fails(v, o);
    if (rc == EVERY_TIME_RACE)
        return 0;
    if (rc)
        return rc;
    rc = shrink(v, o);
    if (rc < 0)
        return rc;
    if (o->win.found) {
        free(o->pass_token);
        o->pass_token = NULL;
        v->ds.cost[0] = o->win.hi;
        rc = schedule_token(&v->ds, &o->token);
        if (rc == 0) {
            v->ds.cost[0] = o->win.lo;
            rc = schedule_token(&v->ds, &o->pass_token);
        }
    } else {
        o->token = strdup(v->found_token);
        rc = o->token ? 0 : AFD_ENOMEM;
    }
    return rc;
}
