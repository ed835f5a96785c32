/* investigate.c -- `affidavit investigate NODEID`: sample, search, reproduce, minimize, explain.
 *
 * Every figure printed is a count of runs executed here. The pipeline (DESIGN.md, steps 1-5):
 *   1. natural runs: the flake rate with its Wilson interval;
 *   2. the portfolio until a schedule fails (within --runs and --seconds);
 *   3. that schedule replayed R times: R/R must fail alike, or we abstain and name the likely
 *      uncontrolled source;
 *   4. the schedule rewritten as explicit per-step delays, ddmin to a 1-minimal set, and each
 *      remaining delay bisected to the threshold where failure starts (the collision window);
 *      when the failure needs no delay at all (the program's `random` decided it), one delay is
 *      searched for under a seed that passes, so the window is still a delay of one step;
 *   5. the minimal failing run and its nearest passing run (the same delay just under the
 *      threshold), both replayed R times, compared: divergence, inverted conflicting pairs ranked
 *      by Ochiai over every run seen, happens-before races, lost updates, lock-order and wait-for
 *      cycles, blocking calls and slow steps. */
#include "afd.h"
#include "apply.h"
#include "cmds.h"
#include "explain.h"
#include "fix.h"
#include "gate.h"
#include "inv.h"
#include "inv_report.h"
#include "minimize.h"
#include "out.h"
#include "pool.h"
#include "runs.h"
#include "schedule.h"
#include "shell.h"
#include "stats.h"
#include "timing.h"
#include "token.h"
#include "trace.h"
#include "udiff.h"

#include <dirent.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BISECT_PRECISION_NS 100u
#define MAX_FALLBACK_SEEDS 8u
#define MAX_FALLBACK_STEPS 400u


static void kept_finish(kept_run *k)
{
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
    if (is_failure(res->outcome))
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
    int rc = afd_summary_build(&v->sums[v->n_sums], &view, is_failure(res->outcome));
    uint8_t blocked = 0;
    uint64_t slow = (uint64_t)(v->cli->slow_step_ms * 1e6);
    for (uint32_t i = 0; i < view.n_steps; i++) {
        const afd_xstep *st = &view.steps[i];
        int is_block = st->blocked_ns >= 1000000u && st->block_site != AFD_NOSTR;
        if (!is_block && !(v->in_natural && st->wall >= slow))
            continue;
        blocked = 1;
        uint64_t ns = is_block ? st->blocked_ns : st->wall;
        if (v->in_natural && is_failure(res->outcome) && ns > v->block_ns) {
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
    kept_finish(k);
    k->outcome = res->outcome;
    k->failure = text_dup(res->failure, res->failure_len, &k->failure_len);
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
    if (is_failure(res->outcome) && !v->keep.failure && keep_run(&v->keep, res, tr) < 0)
        v->error = AFD_ENOMEM;
    return v->error != 0;
}

static int make_portfolio_inv(void *ctx, uint64_t i, uint8_t *mode, char **token)
{
    inv *v = ctx;
    return portfolio_token(v->seed, i, v->est_steps, -1, mode, token);
}

static int take_search(void *ctx, uint64_t i, afd_run_result *res, afd_trace *tr)
{
    inv *v = ctx;
    if (remember(v, res, tr) < 0)
        v->error = AFD_ENOMEM;
    if (i == 0 && tr)
        v->est_steps = tr->steps ? (uint32_t)(tr->steps > UINT32_MAX ? UINT32_MAX : tr->steps) : 1;
    afd_timing tm;
    afd_timing_from_trace(&tm, is_failure(res->outcome) ? tr : NULL);
    if (tm.crossed) {
        /* A failure that outlasted a deadline is named only if nothing fails without doing so. */
        if (i < v->cand_index) {
            v->cand_index = i;
            free(v->cand_token);
            free(v->cand_failure);
            v->cand_token = strdup(tr->token);
            v->cand_failure = text_dup(res->failure, res->failure_len, &v->cand_failure_len);
            v->timing = tm;
            if (!v->cand_token)
                v->error = AFD_ENOMEM;
        }
        return v->error != 0;
    }
    if (is_failure(res->outcome) && tr && i < v->found_index) {
        v->found_index = i;
        free(v->found_token);
        v->found_token = strdup(tr->token);
        if (!v->found_token || keep_run(&v->keep, res, tr) < 0)
            v->error = AFD_ENOMEM;
    }
    return v->error != 0 || is_failure(res->outcome);
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

/* Runs token n times. *t receives the tally (the caller finishes it); v->keep the first run. */
static int replay(inv *v, const char *token, uint64_t n, tally *t)
{
    memset(t, 0, sizeof *t);
    kept_finish(&v->keep);
    replay_ctx r = {v, token};
    int rc = run_batch(v->pool, 0, n, 0, make_token, take_replay, &r, &v->prog, t);
    return rc < 0 ? rc : v->error;
}

/* Replays the found token with its costs capped below the deadlines, AFD_TIMING_CHECK_RUNS times,
 * and gives *out the outlasted deadline and the verdict (timing.h). */
static int check_timing(inv *v, afd_timing *out)
{
    *out = v->timing;
    out->sensitive = 0;
    char *capped = NULL;
    int rc = afd_timing_capped_token(v->found_token, &capped);
    if (rc < 0)
        return rc;
    tally t;
    rc = replay(v, capped, AFD_TIMING_CHECK_RUNS, &t);
    free(capped);
    kept_finish(&v->keep);
    out->check_runs = t.runs;
    out->check_passed = t.by_outcome[AFD_OUT_PASS];
    out->sensitive = rc == 0 && t.runs == AFD_TIMING_CHECK_RUNS && t.by_outcome[AFD_OUT_PASS] == t.runs;
    tally_finish(&t);
    return rc;
}

/* One run of one schedule: 1 when it failed, 0 when it passed, negative on error. */
static int run_schedule(inv *v, const afd_schedule *s, kept_run *keep)
{
    char *token = NULL;
    int rc = afd_token_encode(s, &token);
    if (rc < 0)
        return rc;
    tally t;
    rc = replay(v, token, 1, &t);
    free(token);
    int failed = t.failed > 0;
    tally_finish(&t);
    if (rc < 0)
        return rc;
    if (keep) {
        kept_finish(keep);
        *keep = v->keep;
        memset(&v->keep, 0, sizeof v->keep);
    }
    return failed;
}

/* ---- explicit delays ---- */


static void delay_set_finish(delay_set *ds)
{
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
    rc = run_schedule(o->v, &s, NULL);
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
    rc = run_schedule(o->v, &s, NULL);
    afd_schedule_finish(&s);
    afd_progress_update(&o->v->prog, o->v->total_runs, 0, 0);
    if (rc >= 0 && o->record && o->record->n_probes < sizeof o->record->probes / sizeof o->record->probes[0]) {
        o->record->probes[o->record->n_probes].delay = value;
        o->record->probes[o->record->n_probes++].failed = rc == 1;
    }
    return rc;
}

static int is_callback_task(const afd_trace *tr, uint32_t task)
{
    for (uint32_t i = 0; i < tr->n_events; i++)
        if (tr->events[i].kind == AFD_EV_TASK && tr->events[i].task == task)
            return tr->events[i].flags & 1;
    return 0;
}

/* ---- the command ---- */


char *afd_read_source_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    afd_buf b;
    afd_buf_init(&b);
    char chunk[65536];
    size_t got;
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0 && b.len < AFD_PYSCAN_MAX_SOURCE)
        afd_buf_put(&b, chunk, got);
    fclose(f);
    if (b.err || b.len >= AFD_PYSCAN_MAX_SOURCE) {
        afd_buf_finish(&b);
        return NULL;
    }
    afd_buf_put_u8(&b, 0); /* a C string too; the length does not count the terminator */
    char *text = (char *)afd_buf_steal(&b, len);
    if (text)
        (*len)--;
    return text;
}

/* The file a fix edits, or NULL with the reason in o->fix_why. */
static char *read_source(outcome *o, const char *file, size_t *len)
{
    char *text = afd_read_source_file(file, len);
    if (!text)
        snprintf(o->fix_why, sizeof o->fix_why, "cannot read %.200s", file);
    return text;
}

static void finish_proposal(outcome *o, const afd_cli *cli, const char *kind, const char *file, const char *before,
                            size_t len, const afd_buf *after)
{
    o->fix_kind = kind;
    o->fix_file = strdup(file);
    afd_buf_put(&o->fix_text, after->data, after->len);
    afd_buf_put(&o->fix_before, before, len);
    /* the regression test is part of the diff when the fix is in the test's own file */
    const char *sep = strstr(cli->nodeid, "::");
    size_t flen = sep ? (size_t)(sep - cli->nodeid) : 0;
    if (sep && strlen(file) == flen && !strncmp(file, cli->nodeid, flen) && !strstr(sep + 2, "::") && o->token) {
        afd_buf with, bug;
        afd_buf_init(&with);
        afd_buf_init(&bug);
        char why[256];
        const char *summary = o->c.summary ? o->c.summary : "";
        if (afd_fix_regression_test((const char *)after->data, after->len, sep + 2, o->token, summary, &with, why,
                                    sizeof why) == 0 &&
            afd_fix_regression_test(before, len, sep + 2, o->token, summary, &bug, why, sizeof why) == 0) {
            o->fix_text.len = 0;
            afd_buf_put(&o->fix_text, with.data, with.len);
            afd_buf_put(&o->buggy_with_test, bug.data, bug.len);
            size_t nl = strlen(cli->nodeid) + 32;
            o->regression_node = malloc(nl);
            if (o->regression_node)
                snprintf(o->regression_node, nl, "%s_affidavit_replay", cli->nodeid);
        } else {
            snprintf(o->regression_why, sizeof o->regression_why, "no regression test: %s", why);
        }
        afd_buf_finish(&with);
        afd_buf_finish(&bug);
    } else {
        snprintf(o->regression_why, sizeof o->regression_why, "no regression test: the fix is not in the test's file");
    }
    afd_udiff_make(file, before, len, (const char *)o->fix_text.data, o->fix_text.len, &o->fix_diff);
    afd_gate_file gf = {file, before, len, (const char *)o->fix_text.data, o->fix_text.len};
    o->gate_ran = afd_gate_run(&gf, 1, cli->allow_src, o->gate) == 0;
}

/* Keeps a synthesized fix as a candidate (the file's text is copied). */
static void add_candidate(outcome *o, const char *kind, const char *file, const char *before, size_t len,
                          const afd_buf *after)
{
    if (o->n_cand >= sizeof o->cand / sizeof o->cand[0])
        return;
    struct candidate *c = &o->cand[o->n_cand];
    memset(c, 0, sizeof *c);
    c->kind = kind;
    c->file = strdup(file);
    c->before = malloc(len + 1);
    if (!c->file || !c->before) {
        free(c->file);
        free(c->before);
        return;
    }
    memcpy(c->before, before, len);
    c->before[len] = 0;
    c->len = len;
    afd_buf_init(&c->after);
    afd_buf_put(&c->after, after->data, after->len);
    afd_buf d;
    afd_buf_init(&d);
    afd_udiff_make(file, before, len, (const char *)after->data, after->len, &d);
    for (size_t i = 0; i + 1 < d.len; i++)
        if (d.data[i] == '\n' && (d.data[i + 1] == '+' || d.data[i + 1] == '-') &&
            !(i + 3 < d.len && d.data[i + 2] == d.data[i + 1] && d.data[i + 3] == d.data[i + 1]))
            c->changed++;
    afd_buf_finish(&d);
    o->n_cand++;
}

static void candidates_finish(outcome *o)
{
    for (size_t i = 0; i < o->n_cand; i++) {
        free(o->cand[i].file);
        free(o->cand[i].before);
        afd_buf_finish(&o->cand[i].after);
    }
    o->n_cand = 0;
}

/* --fix for an order violation: when the early reader holds a handle to the writer's task,
 * AWAIT_TASK (await it right before the read). */
static void propose_await_task(const afd_view *f, outcome *o, const afd_cli *cli)
{
    if (o->c.early == AFD_NOPOS || !o->c.writer[0]) {
        snprintf(o->fix_why, sizeof o->fix_why, "the order violation names no reader and writer to order");
        return;
    }
    const afd_xaccess *x = &f->acc[o->c.early];
    if (x->write && o->c.writer_writes) {
        snprintf(o->fix_why, sizeof o->fix_why,
                 "the failure depends on which of two concurrent writes comes first (an order-dependent "
                 "assertion): forcing one order would serialize tasks the test runs concurrently, and accepting "
                 "either order would weaken the assertion, which the policy refuses");
        return;
    }
    if (!x->file || !x->line) {
        snprintf(o->fix_why, sizeof o->fix_why, "the early access was not placed at a line of the source (no "
                 "traced line of user code ran before it in its step): no line to place an await before");
        return;
    }
    /* "refresh_token#0" -> "refresh_token"; "Connection.open#0" -> "open" */
    char writer[256];
    snprintf(writer, sizeof writer, "%s", o->c.writer);
    char *hash = strrchr(writer, '#');
    if (hash)
        *hash = 0;
    const char *dot = strrchr(writer, '.');
    const char *name = dot ? dot + 1 : writer;
    size_t len = 0;
    char *before = read_source(o, x->file, &len);
    if (!before)
        return;
    afd_buf after;
    afd_buf_init(&after);
    char why[256], why2[256] = "";
    int is_event = x->sync && !strncmp(x->resource, "Event@", 6);
    int is_queue = x->sync && !strncmp(x->resource, "Queue@", 6) && o->c.writer_sync;
    if (afd_fix_await_task(before, len, x->line, name, &after, why, sizeof why) == 0)
        add_candidate(o, "AWAIT_TASK", x->file, before, len, &after);
    if (is_event) {
        /* the program's own event: wait for it where the flag is tested */
        if (afd_fix_event_wait(before, len, x->line, &after, why2, sizeof why2) == 0)
            add_candidate(o, "EVENT_GATE", x->file, before, len, &after);
    } else {
        /* EVENT_GATE: module state (or a queue the test made), the write and the read in the
         * test's own file */
        const char *sep = strstr(cli->nodeid, "::");
        size_t flen = sep ? (size_t)(sep - cli->nodeid) : 0;
        int same_file = sep && o->c.writer_placed && strlen(x->file) == flen && !strncmp(x->file, cli->nodeid, flen) &&
                        !strcmp(o->c.writer_file, x->file);
        int same_global = o->c.writer_root == AFD_ROOT_GLOBAL && x->root == AFD_ROOT_GLOBAL && x->root_name &&
                          !strcmp(x->root_name, o->c.writer_name);
        /* a queue reached through a parameter has no module name: its event is named after its type */
        const char *gname = x->root_name && *x->root_name ? x->root_name : "queue";
        if (!same_file || !(same_global || is_queue) || strstr(sep + 2, "::"))
            snprintf(why2, sizeof why2, "EVENT_GATE needs module state (or a queue) written and read in the test's own "
                                        "file");
        else if (afd_fix_event_gate(before, len, sep + 2, o->c.writer_line, x->line, gname, is_queue, &after,
                                    why2, sizeof why2) == 0)
            add_candidate(o, "EVENT_GATE", x->file, before, len, &after);
    }
    if (!o->n_cand)
        snprintf(o->fix_why, sizeof o->fix_why, "AWAIT_TASK not possible: %.230s%s%.230s", why, why2[0] ? "; " : "",
                 why2);
    afd_buf_finish(&after);
    free(before);
}

/* --fix for a deadlock or a lock-order cycle: the places where one lock was taken while another
 * was held, in the failing run and the passing one (a deadlocked run never completes the inner
 * acquisition). When they are all one place -- one function taking the two locks it is given, in
 * the order given -- LOCK_ORDER takes them in one global order. */
static void propose_lock_order(const afd_view *f, const afd_view *p, outcome *o)
{
    afd_lock_nesting nest[64];
    const char *file = NULL;
    uint32_t outer = 0, inner = 0;
    int sites = 0, unplaced = 0;
    const afd_view *views[2] = {f, p};
    for (int k = 0; k < 2; k++) {
        size_t n = 0;
        if (!views[k] || afd_view_lock_nestings(views[k], nest, 64, &n) < 0)
            continue;
        for (size_t i = 0; i < n && i < 64; i++) {
            if (!nest[i].file) {
                unplaced++;
                continue;
            }
            if (!sites || strcmp(file, nest[i].file) != 0 || outer != nest[i].outer_line || inner != nest[i].inner_line)
                sites++;
            file = nest[i].file;
            outer = nest[i].outer_line;
            inner = nest[i].inner_line;
        }
    }
    if (sites != 1 || unplaced) {
        const char *untraced = unplaced ? " (and at some the runs traced no line)" : "";
        if (sites)
            snprintf(o->fix_why, sizeof o->fix_why, "the locks are nested at %d places%s: reordering several "
                     "functions is not synthesized", sites, untraced);
        else
            snprintf(o->fix_why, sizeof o->fix_why, "no nested acquisition of the locks was placed at a line of the "
                     "source%s", untraced);
        return;
    }
    size_t len = 0;
    char *before = read_source(o, file, &len);
    if (!before)
        return;
    afd_buf after;
    afd_buf_init(&after);
    char why[256];
    if (afd_fix_lock_order(before, len, outer, inner, &after, why, sizeof why) == 0)
        add_candidate(o, "LOCK_ORDER", file, before, len, &after);
    else
        snprintf(o->fix_why, sizeof o->fix_why, "LOCK_ORDER not possible here: %s", why);
    afd_buf_finish(&after);
    free(before);
}

/* --fix for starvation: the blocking call the cause names ("file:line") moved to a worker thread. */
static void propose_offload(outcome *o)
{
    char file[512];
    snprintf(file, sizeof file, "%s", o->c.await_site ? o->c.await_site : "");
    char *colon = strrchr(file, ':');
    unsigned long line = colon ? strtoul(colon + 1, NULL, 10) : 0;
    if (!colon || !line || line > UINT32_MAX) {
        snprintf(o->fix_why, sizeof o->fix_why, "the blocking call was not placed at a line of the source");
        return;
    }
    *colon = 0;
    size_t len = 0;
    char *before = read_source(o, file, &len);
    if (!before)
        return;
    afd_buf after;
    afd_buf_init(&after);
    char why[256];
    if (afd_fix_offload(before, len, (uint32_t)line, &after, why, sizeof why) == 0)
        add_candidate(o, "OFFLOAD", file, before, len, &after);
    else
        snprintf(o->fix_why, sizeof o->fix_why, "OFFLOAD not possible here: %s", why);
    afd_buf_finish(&after);
    free(before);
}

/* --fix for a lost update whose accesses were read off the source: LOCK around the read and the
 * write of the task that lost the update (and of every other resource it lost in the same code),
 * then the policy gate over the before and after text. The user's file is only read. */
static void propose_fix(const afd_view *f, const afd_view *p, outcome *o, const afd_cli *cli)
{
    o->fix_tried = 1;
    afd_cause_kind kind = o->c.kind;
    if (kind == AFD_CAUSE_ORDER_VIOLATION) {
        propose_await_task(f, o, cli);
        return;
    }
    if (kind == AFD_CAUSE_DEADLOCK || kind == AFD_CAUSE_LOCK_ORDER) {
        propose_lock_order(f, p, o);
        return;
    }
    if (kind == AFD_CAUSE_STARVATION) {
        propose_offload(o);
        return;
    }
    int stale = kind == AFD_CAUSE_CHECK_THEN_ACT;
    if (kind != AFD_CAUSE_LOST_UPDATE && !stale) {
        const char *name = afd_cause_kind_name(kind);
        snprintf(o->fix_why, sizeof o->fix_why, "no fix is synthesized for a%s %s cause yet (LOCK for a lost update "
                 "or a check-then-act, "
                 "AWAIT_TASK and EVENT_GATE for an order violation, LOCK_ORDER for a deadlock or lock-order cycle, "
                 "OFFLOAD for starvation are)",
                 name && strchr("aeiou", name[0]) ? "n" : "", name ? name : "missing");
        return;
    }
    afd_xatom atoms[16];
    size_t n_atoms = 0;
    if (stale)
        afd_view_stale_checks(f, atoms, 16, &n_atoms);
    else
        afd_view_lost_updates(f, atoms, 16, &n_atoms);
    afd_lock_site sites[16];
    size_t n_sites = 0;
    const char *file = NULL;
    uint32_t loser = n_atoms ? f->acc[atoms[0].w].task : 0;
    for (size_t i = 0; i < n_atoms && i < 16; i++) {
        const afd_xaccess *r = &f->acc[atoms[i].r], *w = &f->acc[atoms[i].w];
        if (w->task != loser || !r->root_name || !w->root_name || !r->file || !w->file || strcmp(r->file, w->file) != 0 ||
            r->root != w->root || (r->root != AFD_ROOT_SELF && r->root != AFD_ROOT_GLOBAL) ||
            strcmp(r->root_name, w->root_name) != 0)
            continue;
        if (file && strcmp(file, r->file) != 0)
            continue;
        int dup = 0;
        for (size_t k = 0; k < n_sites; k++)
            dup |= strcmp(sites[k].name, r->root_name) == 0;
        if (dup)
            continue;
        file = r->file;
        sites[n_sites++] = (afd_lock_site){r->line, w->line, r->root, r->root_name, stale ? "check-then-act" : NULL};
    }
    if (!n_sites) {
        snprintf(o->fix_why, sizeof o->fix_why, "the %s's accesses are not placed at lines of the source "
                 "that touch module or instance state: no place to put a lock", stale ? "check-then-act" : "lost update");
        return;
    }
    size_t len = 0;
    char *before = read_source(o, file, &len);
    if (!before)
        return;
    afd_buf after;
    afd_buf_init(&after);
    char why[256];
    if (afd_fix_lock(before, len, sites, n_sites, &after, why, sizeof why) < 0)
        snprintf(o->fix_why, sizeof o->fix_why, "LOCK not possible here: %s", why);
    else
        add_candidate(o, "LOCK", file, before, len, &after);
    afd_buf_finish(&after);
    free(before);
}

/* ---- verification: the patched source in a mirror of the project ---- */

/* A directory that looks like the working directory: every entry a symlink to the original,
 * except along the path of the patched file, whose directories are real and whose file holds the
 * patched text. Workers started there import the patch; the user's files are never written. */
static int mirror_entries(const char *src_dir, const char *dst_dir, const char *rel, const char *text, size_t len)
{
    const char *slash = strchr(rel, '/');
    size_t first_len = slash ? (size_t)(slash - rel) : strlen(rel);
    DIR *d = opendir(src_dir);
    if (!d)
        return AFD_EIO;
    struct dirent *e;
    int rc = 0;
    char a[PATH_MAX], b[PATH_MAX];
    while (rc == 0 && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (strlen(e->d_name) == first_len && !strncmp(e->d_name, rel, first_len))
            continue;
        snprintf(a, sizeof a, "%s/%s", src_dir, e->d_name);
        snprintf(b, sizeof b, "%s/%s", dst_dir, e->d_name);
        if (symlink(a, b) < 0)
            rc = AFD_EIO;
    }
    closedir(d);
    if (rc)
        return rc;
    snprintf(a, sizeof a, "%s/%.*s", src_dir, (int)first_len, rel);
    snprintf(b, sizeof b, "%s/%.*s", dst_dir, (int)first_len, rel);
    if (slash) {
        if (mkdir(b, 0700) < 0)
            return AFD_EIO;
        return mirror_entries(a, b, slash + 1, text, len);
    }
    FILE *f = fopen(b, "wb");
    if (!f)
        return AFD_EIO;
    size_t wrote = fwrite(text, 1, len, f);
    if (fclose(f) != 0 || wrote != len)
        return AFD_EIO;
    return 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    /* FTW_PHYS: symlinks are removed, never followed */
    return flag == FTW_DP ? rmdir(path) : unlink(path);
}

static void remove_mirror(const char *dir)
{
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

typedef struct portfolio_ctx {
    uint64_t seed;
    uint32_t est_steps;
    uint64_t failed;
} portfolio_ctx;

static int make_portfolio_plain(void *ctx, uint64_t i, uint8_t *mode, char **token)
{
    portfolio_ctx *c = ctx;
    return portfolio_token(c->seed, i, c->est_steps, -1, mode, token);
}

static int take_count(void *ctx, uint64_t i, afd_run_result *res, afd_trace *tr)
{
    portfolio_ctx *c = ctx;
    c->failed += is_failure(res->outcome);
    return 0;
}

static int make_same_token(void *ctx, uint64_t i, uint8_t *mode, char **token)
{
    *mode = AFD_MODE_CONTROLLED;
    *token = strdup((const char *)ctx);
    return *token ? 0 : AFD_ENOMEM;
}

/* The tiers, each counted: the minimal failing token R times after the patch; M exploration
 * schedules after, next to the same M before; N natural runs after; the median run time before
 * and after. A tier that could not run is left at zero runs and reported as not attempted. */
/* A new verification mirror's directory in $TMPDIR (default /tmp): its path in dir, or -1. */
static int make_mirror_dir(char *dir, size_t len)
{
    const char *tmp = getenv("TMPDIR");
    int n = snprintf(dir, len, "%s/affidavit-verify-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    return n > 0 && (size_t)n < len && mkdtemp(dir) ? 0 : -1;
}

static void verify_fix(inv *v, outcome *o, const afd_cli *cli, uint32_t est_steps)
{
    char cwd[PATH_MAX], dir[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd) || make_mirror_dir(dir, sizeof dir) < 0) {
        snprintf(o->v_error, sizeof o->v_error, "cannot make the verification directory");
        return;
    }
    if (mirror_entries(cwd, dir, o->fix_file, (const char *)o->fix_text.data, o->fix_text.len) < 0) {
        snprintf(o->v_error, sizeof o->v_error, "cannot mirror the project to verify the patch");
        remove_mirror(dir);
        return;
    }
    afd_pool *after = NULL;
    if (start_pool_in(cli, &after, dir) != 0) {
        snprintf(o->v_error, sizeof o->v_error, "the patched test cannot be collected");
        remove_mirror(dir);
        return;
    }
    o->verified_ran = 1;
    tally t = {0};
    uint64_t m = 200;
    /* 1. the minimal failing token */
    int rc = run_batch(after, 0, cli->replays, 0, make_same_token, take_none, (void *)o->token, &v->prog, &t);
    o->v_replay_runs = t.runs;
    o->v_replay_passed = t.by_outcome[AFD_OUT_PASS];
    tally_finish(&t);
    memset(&t, 0, sizeof t);
    /* 2. exploration, the same schedules before and after */
    portfolio_ctx pb = {.seed = v->seed ^ 0xf1eULL, .est_steps = est_steps ? est_steps : 1};
    portfolio_ctx pa = pb;
    if (rc == 0)
        rc = run_batch(v->pool, 0, m, 0, make_portfolio_plain, take_count, &pb, &v->prog, &t);
    tally_finish(&t);
    memset(&t, 0, sizeof t);
    if (rc == 0)
        rc = run_batch(after, 0, m, 0, make_portfolio_plain, take_count, &pa, &v->prog, &t);
    if (rc == 0) {
        o->v_explore_n = t.runs;
        o->v_explore_failed_before = pb.failed;
        o->v_explore_failed_after = pa.failed;
    }
    tally_finish(&t);
    memset(&t, 0, sizeof t);
    /* 3. natural runs after, and the run time */
    if (rc == 0)
        rc = run_batch(after, 0, cli->natural, 0, make_natural, take_none, NULL, &v->prog, &t);
    if (rc == 0) {
        o->v_natural_runs = t.runs;
        o->v_natural_failed = t.failed;
        double before_ms = 0, after_ms = 0;
        afd_stats_median_u64(o->natural.wall, o->natural.runs, &before_ms);
        afd_stats_median_u64(t.wall, t.runs, &after_ms);
        o->v_wall_before_ms = before_ms / 1e6;
        o->v_wall_after_ms = after_ms / 1e6;
    }
    tally_finish(&t);
    afd_pool_free(after);
    remove_mirror(dir);
}

/* Runs `python -m pytest -q NODE` in dir, quietly, with a time limit: its exit code, or -1. */
static int run_pytest(const afd_cli *cli, const char *dir, const char *node)
{
    char pybuf[4096], abs_py[2 * PATH_MAX + 2], here[PATH_MAX];
    const char *python = find_python(cli, pybuf, sizeof pybuf);
    if (python[0] != '/' && strchr(python, '/') && getcwd(here, sizeof here)) {
        snprintf(abs_py, sizeof abs_py, "%s/%s", here, python);
        python = abs_py;
    }
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int devnull = open("/dev/null", O_RDWR);
        if (devnull >= 0) {
            dup2(devnull, 0);
            dup2(devnull, 1);
            dup2(devnull, 2);
        }
        if (chdir(dir) < 0)
            _exit(127);
        setenv("PYTHONDONTWRITEBYTECODE", "1", 1);
        if (!getenv("PYTHONHASHSEED"))
            setenv("PYTHONHASHSEED", "0", 1);
        execlp(python, python, "-m", "pytest", "-q", "-p", "no:cacheprovider", node, (char *)NULL);
        _exit(127);
    }
    for (int waited = 0; waited < 1200; waited++) { /* 120 s */
        int status;
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        if (r < 0 || afd_interrupted)
            break;
        struct timespec ts = {0, 100000000};
        nanosleep(&ts, NULL);
    }
    kill(-pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return -1;
}

/* The regression test, run with pytest: against the original code (it must fail) and against the
 * fix (it must pass), each in its own mirror of the project. */
static void verify_regression_test(outcome *o, const afd_cli *cli)
{
    if (!o->regression_node)
        return;
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        return;
    for (int fixed = 0; fixed < 2; fixed++) {
        char dir[PATH_MAX];
        if (make_mirror_dir(dir, sizeof dir) < 0)
            return;
        const afd_buf *text = fixed ? &o->fix_text : &o->buggy_with_test;
        if (mirror_entries(cwd, dir, o->fix_file, (const char *)text->data, text->len) == 0) {
            int rc = run_pytest(cli, dir, o->regression_node);
            if (fixed)
                o->reg_passes_after = rc == 0;
            else
                o->reg_fails_before = rc == 1;
            o->reg_ran = 1;
        }
        remove_mirror(dir);
    }
}


/* The candidates in order of size (lines changed), each gated and, when the gate passes,
 * verified; the first verified one is the proposal. When none is, the proposal is the smallest
 * that passed the gate (verified again only if a later one replaced its results), else the
 * smallest. */
static void reset_proposal(outcome *o)
{
    o->fix_kind = NULL;
    free(o->fix_file);
    o->fix_file = NULL;
    o->fix_diff.len = o->fix_text.len = o->buggy_with_test.len = o->fix_before.len = 0;
    free(o->regression_node);
    o->regression_node = NULL;
    o->regression_why[0] = 0;
    o->reg_ran = o->reg_fails_before = o->reg_passes_after = 0;
    o->gate_ran = 0;
    o->verified_ran = 0;
    o->v_replay_runs = o->v_replay_passed = o->v_explore_n = o->v_explore_failed_before = 0;
    o->v_explore_failed_after = o->v_natural_runs = o->v_natural_failed = 0;
    o->v_wall_before_ms = o->v_wall_after_ms = 0;
    o->v_error[0] = 0;
}

static void try_candidates(inv *v, outcome *o, const afd_cli *cli)
{
    for (size_t i = 1; i < o->n_cand; i++) /* stable insertion sort by size */
        for (size_t j = i; j > 0 && o->cand[j].changed < o->cand[j - 1].changed; j--) {
            struct candidate t = o->cand[j];
            o->cand[j] = o->cand[j - 1];
            o->cand[j - 1] = t;
        }
    for (size_t i = 0; i < o->n_cand; i++) {
        struct candidate *c = &o->cand[i];
        reset_proposal(o);
        finish_proposal(o, cli, c->kind, c->file, c->before, c->len, &c->after);
        c->tried = 1;
        c->gate_passed = o->gate_ran && afd_gate_passed(o->gate);
        if (c->gate_passed && o->token) {
            verify_fix(v, o, cli, v->est_steps);
            verify_regression_test(o, cli);
        }
        c->verified = inv_fix_verified(o);
        if (c->verified || afd_interrupted)
            return;
    }
    /* none verified: show the smallest that passed the gate (its tiers run again), else the smallest */
    size_t pick = 0;
    for (size_t i = 0; i < o->n_cand; i++)
        if (o->cand[i].gate_passed) {
            pick = i;
            break;
        }
    if (o->n_cand > 1 && pick != o->n_cand - 1) {
        struct candidate *c = &o->cand[pick];
        reset_proposal(o);
        finish_proposal(o, cli, c->kind, c->file, c->before, c->len, &c->after);
        if (c->gate_passed && o->token) {
            verify_fix(v, o, cli, v->est_steps);
            verify_regression_test(o, cli);
        }
    }
}

/* --apply: only a verified fix, and only onto the very text it was computed from (apply.c). */
static void apply_fix(outcome *o)
{
    if (!inv_fix_verified(o)) {
        snprintf(o->apply_note, sizeof o->apply_note, "not applied: the fix is not verified");
        return;
    }
    afd_apply_req req = {
        .file = o->fix_file,
        .analysed = o->fix_before.data ? (const char *)o->fix_before.data : "",
        .analysed_len = o->fix_before.len,
        .first_seen = o->first_seen,
        .first_seen_len = o->first_seen_len,
        .first_path = o->first_path,
        .text = (const char *)o->fix_text.data,
        .text_len = o->fix_text.len,
    };
    o->applied = !o->fix_before.err && afd_apply_fix(&req, o->apply_note, sizeof o->apply_note) == 0;
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
        int rc = afd_sched_portfolio(&z, v->seed ^ 0x5eedULL, i, 1, AFD_STRAT_ZERO);
        if (rc < 0)
            return rc;
        kept_run pass = {0};
        rc = run_schedule(v, &z, &pass);
        uint64_t seed = z.seed;
        if (rc == 0 && !*pass_token)
            rc = afd_token_encode(&z, pass_token);
        afd_schedule_finish(&z);
        w->runs++;
        if (rc < 0 || rc == 1 || !pass.have_trace) {
            kept_finish(&pass);
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
                if (e->kind != AFD_EV_STEP || is_callback_task(&pass.tr, e->task) != want_cb)
                    continue;
                tried++;
                delay_set_finish(ds);
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
                rc = run_schedule(v, &s, NULL);
                afd_schedule_finish(&s);
                w->runs++;
                afd_progress_update(&v->prog, v->total_runs, 0, 0);
                if (rc != 0)
                    break;
            }
        }
        kept_finish(&pass);
        if (rc < 0)
            return rc;
        if (rc == 1) {
            w->via_fallback = 1;
            return 1;
        }
        break; /* one passing seed is enough: its steps were all tried */
    }
    delay_set_finish(ds);
    return 0;
}

/* Replays that all fail, but not with one trace: the failure is reproduced (that is what was
 * measured), and what the schedule does not fix is said beside it as a qualification, once. */
static void note_traces_differ(outcome *o, const tally *t, uint32_t flags)
{
    if (o->traces_differ)
        return;
    o->traces_differ = 1;
    const char *why = uncontrolled_words(flags);
    char buf[400];
    snprintf(buf, sizeof buf, "%" PRIu64 "/%" PRIu64 " failed, not all with the same trace; %s%s", t->failed, t->runs,
             why ? "recorded: " : "",
             why ? why
                 : "no thread, socket or real wait was recorded: likely a wall-clock read (time.time, "
                   "time.monotonic) or unseeded entropy changes steps around the failure");
    afd_evidence_add(&o->ev, "the schedule reproduces the failure every time, but something it does not control changes "
                   "what else runs",
           buf, "observed");
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

/* --apply: the test's file as it is before any run, so that a change made while the investigation
 * runs (by the user, or by the test itself) is seen at apply time even when it happened before the
 * fix read the file. Not kept when unreadable: the check against the fix's own text remains. */
static void remember_test_file(outcome *o, const char *nodeid)
{
    const char *sep = strstr(nodeid, "::");
    size_t n = sep ? (size_t)(sep - nodeid) : strlen(nodeid);
    o->first_path = strndup(nodeid, n);
    if (o->first_path)
        o->first_seen = afd_read_source_file(o->first_path, &o->first_seen_len);
}

int afd_cmd_investigate(const afd_cli *cli)
{
    uint64_t t0 = now_ns();
    int interrupted = 0;
    inv v = {.cli = cli, .seed = cli->seed, .est_steps = 1, .found_index = UINT64_MAX, .cand_index = UINT64_MAX};
    outcome o;
    memset(&o, 0, sizeof o);
    afd_cause_init(&o.c);
    afd_evidence_init(&o.ev);
    afd_buf_init(&o.fix_diff);
    afd_buf_init(&o.fix_text);
    afd_buf_init(&o.buggy_with_test);
    afd_buf_init(&o.fix_before);
    if (cli->apply)
        remember_test_file(&o, cli->nodeid);
    delay_set ds = {0};
    kept_run fail_run = {0}, pass_run = {0};
    tally t = {0}, search = {0};
    runlog rl = {0};
    active_runlog = &rl;
    v.srcs = afd_srcmap_new();
    int rc = v.srcs ? start_pool(cli, &v.pool) : AFD_EXIT_INTERNAL;
    if (rc)
        goto done_early;
    afd_progress_init(&v.prog, "investigate");

    /* 1. natural runs */
    v.in_natural = 1;
    rc = run_batch(v.pool, 0, cli->natural, 0, make_natural, take_sample, &v, &v.prog, &o.natural);
    v.in_natural = 0;
    if (rc < 0 || v.error)
        goto fail;
    if (report_no_loop(cli, &o.natural)) {
        rc = AFD_EXIT_USAGE;
        goto out;
    }
    afd_stats_wilson(o.natural.failed, o.natural.runs, &o.lo, &o.hi);
    if (o.natural.first_failure)
        o.failure = text_dup(o.natural.first_failure, o.natural.first_failure_len, &o.failure_len);

    /* 2. search */
    kept_finish(&v.keep);
    rc = run_batch(v.pool, 0, 1, 0, make_portfolio_inv, take_search, &v, &v.prog, &search);
    if (rc == 0 && !v.error && v.found_index == UINT64_MAX && cli->n > 1)
        rc = run_batch(v.pool, 1, cli->n - 1, cli->seconds, make_portfolio_inv, take_search, &v, &v.prog, &search);
    if (rc < 0 || v.error)
        goto fail;
    if (v.found_index == UINT64_MAX && v.cand_index != UINT64_MAX) {
        /* Nothing failed without outlasting a deadline: the failure that did is reproduced and
         * then checked below the deadline (step 3). */
        v.found_index = v.cand_index;
        v.found_token = v.cand_token;
        v.cand_token = NULL;
        kept_finish(&v.keep);
        v.keep.failure = v.cand_failure;
        v.keep.failure_len = v.cand_failure_len;
        v.cand_failure = NULL;
    } else {
        v.timing.crossed = 0;
    }
    if (v.found_index == UINT64_MAX) {
        if (o.natural.failed) {
            o.verdict = "abstained";
            const char *why = uncontrolled_words(v.failing_flags);
            o.abstain_reason = why ? why
                                   : "it failed naturally but under no controlled schedule: the likely source is "
                                     "one affidavit does not control (threads, real sockets, wall-clock reads, "
                                     "os.urandom or other unseeded entropy)";
            rc = AFD_EXIT_ABSTAIN;
        } else {
            o.verdict = "no_failure";
            rc = AFD_EXIT_CLEAN;
        }
        goto report;
    }
    free(o.failure);
    o.failure = text_dup(v.keep.failure, v.keep.failure_len, &o.failure_len);
    kept_finish(&v.keep);

    /* 3. reproduce */
    rc = replay(&v, v.found_token, cli->replays, &t);
    if (rc < 0)
        goto fail;
    o.replay_runs = t.runs;
    o.replay_failed = t.failed;
    if (t.failed == t.runs && t.digests_differ)
        note_traces_differ(&o, &t, t.flags_union | v.failing_flags);
    if (t.failed != t.runs) {
        o.verdict = "abstained";
        const char *why = uncontrolled_words(t.flags_union | v.failing_flags);
        o.abstain_reason = why ? why
                               : "replay is not deterministic and no thread, socket or real wait was recorded: the "
                                 "likely source is a wall-clock read or unseeded entropy (os.urandom, uuid4, secrets)";
        o.token = strdup(v.found_token);
        rc = AFD_EXIT_ABSTAIN;
        goto report;
    }
    fail_run = v.keep;
    memset(&v.keep, 0, sizeof v.keep);
    tally_finish(&t);
    memset(&t, 0, sizeof t);

    /* A failure that needs one step to outlast a deadline: no race to explain, no fix to make. */
    if (v.timing.crossed) {
        rc = check_timing(&v, &o.timing);
        if (rc < 0)
            goto fail;
        if (o.timing.sensitive) {
            o.verdict = "timing_sensitive";
            o.token = strdup(v.found_token);
            rc = o.token ? AFD_EXIT_FAILURE : AFD_ENOMEM;
            if (rc < 0)
                goto fail;
            goto report;
        }
    }

    /* deterministic failure: every natural run failed and so does the zero schedule */
    if (o.natural.runs >= 5 && o.natural.failed == o.natural.runs && v.found_index == 0) {
        uint64_t all = 1, failed = 1;
        for (uint64_t i = 1; i < 10; i++) {
            afd_schedule s;
            rc = afd_sched_portfolio(&s, v.seed, i, v.est_steps, -1);
            if (rc < 0)
                goto fail;
            rc = run_schedule(&v, &s, NULL);
            afd_schedule_finish(&s);
            if (rc < 0)
                goto fail;
            all++;
            failed += (uint64_t)rc;
        }
        if (failed == all) {
            char buf[128];
            snprintf(buf, sizeof buf, "%" PRIu64 "/%" PRIu64 " natural, %" PRIu64 "/%" PRIu64 " controlled failed",
                     o.natural.failed, o.natural.runs, failed, all);
            /* Failing every time is not the same as not being a race: tasks that all read before
             * any of them writes lose updates under every schedule. One traced run tells. */
            v.trace_lines = 1;
            rc = replay(&v, v.found_token, 1, &t);
            v.trace_lines = 0;
            if (rc < 0)
                goto fail;
            tally_finish(&t);
            memset(&t, 0, sizeof t);
            size_t n_lost = 0;
            int stale_every_time = 0;
            afd_view dv;
            if (v.keep.have_trace && afd_view_build_src(&dv, &v.keep.tr, v.srcs) == 0) {
                afd_xatom tmp[1];
                afd_view_lost_updates(&dv, tmp, 1, &n_lost);
                if (!n_lost) { /* a check every task passes before any acts on it fails every time too */
                    afd_view_stale_checks(&dv, tmp, 1, &n_lost);
                    stale_every_time = n_lost > 0;
                }
                afd_view_finish(&dv);
            }
            kept_finish(&v.keep);
            if (!n_lost) {
                o.verdict = "deterministic";
                afd_evidence_add(&o.ev, "it fails under every schedule tried: the failure does not depend on timing", buf,
                       "observed");
                rc = AFD_EXIT_FAILURE;
                goto report;
            }
            afd_evidence_add(&o.ev,
                   stale_every_time ? "it fails under every schedule tried, and its tasks act on checks another task "
                                      "made stale: a race that shows every time (no timing window to measure)"
                                    : "it fails under every schedule tried, and its tasks lose updates: a race that "
                                      "shows every time (no timing window to measure)",
                   buf, "observed");
            o.token = strdup(v.found_token);
            if (!o.token) {
                rc = AFD_ENOMEM;
                goto fail;
            }
            goto explain_runs;
        }
    }

    /* 4. minimize */
    afd_schedule found;
    rc = afd_token_decode(&found, v.found_token);
    if (rc < 0)
        goto fail;
    uint64_t fseed = found.seed;
    afd_schedule_finish(&found);
    rc = delays_from_trace(&ds, &fail_run.tr, fseed);
    int explicit_ok = 0;
    if (rc == 0) {
        afd_schedule s;
        rc = delay_schedule(&ds, &s);
        if (rc == 0) {
            rc = run_schedule(&v, &s, NULL);
            afd_schedule_finish(&s);
            o.win.runs++;
        }
        explicit_ok = rc == 1;
    }
    if (rc < 0 && rc != AFD_EFULL)
        goto fail;
    rc = 0;
    if (explicit_ok) {
        o.win.n_delays_before = ds.n;
        uint8_t *keep = calloc(ds.n + 1, 1);
        if (!keep) {
            rc = AFD_ENOMEM;
            goto fail;
        }
        oracle_ctx oc = {.v = &v, .ds = &ds};
        uint64_t runs = 0;
        rc = afd_ddmin(ds.n, subset_oracle, &oc, keep, &runs);
        o.win.runs += runs;
        if (rc < 0) {
            free(keep);
            goto fail;
        }
        /* keep only the minimal set */
        uint32_t m = 0;
        for (uint32_t i = 0; i < ds.n; i++) {
            if (keep[i]) {
                ds.d[m] = ds.d[i];
                ds.cost[m] = ds.cost[i];
                m++;
            } else {
                free(ds.d[i].label);
            }
        }
        ds.n = m;
        free(keep);
        o.win.n_delays_after = m;
        if (m == 0) {
            delay_set_finish(&ds);
            rc = fallback_one_delay(&v, &ds, &o.win, &o.pass_token);
            if (rc < 0)
                goto fail;
        } else {
            rc = 1;
        }
        if (rc == 1) {
            /* bisect each remaining delay; the first is the one the sentence names */
            for (uint32_t i = 0; i < ds.n; i++) {
                uint64_t lo = 0, hi = ds.cost[i];
                oracle_ctx bc = {.v = &v, .ds = &ds, .which = i, .record = i == 0 ? &o.win : NULL};
                if (i == 0) {
                    /* the two ends were run already: without the delay it passes (the set is
                     * 1-minimal), with all of it it fails */
                    o.win.probes[0].delay = 0;
                    o.win.probes[0].failed = 0;
                    o.win.probes[1].delay = hi;
                    o.win.probes[1].failed = 1;
                    o.win.n_probes = 2;
                }
                uint64_t runs2 = 0;
                if (hi > BISECT_PRECISION_NS)
                    rc = afd_bisect(&lo, &hi, BISECT_PRECISION_NS, value_oracle, &bc, &runs2);
                else
                    rc = 0;
                o.win.runs += runs2;
                if (rc < 0)
                    goto fail;
                if (i == 0) {
                    o.win.found = 1;
                    o.win.label = strdup(ds.d[0].label);
                    o.win.ordinal = ds.d[0].ordinal;
                    o.win.lo = lo;
                    o.win.hi = hi;
                }
            }
        }
        rc = 0;
    }

    /* the minimal failing and the nearest passing schedules, replayed */
    if (o.win.found) {
        free(o.pass_token);
        o.pass_token = NULL;
        ds.cost[0] = o.win.hi;
        rc = schedule_token(&ds, &o.token);
        if (rc == 0) {
            ds.cost[0] = o.win.lo;
            rc = schedule_token(&ds, &o.pass_token);
        }
    } else {
        o.token = strdup(v.found_token);
        rc = o.token ? 0 : AFD_ENOMEM;
    }
    if (rc < 0)
        goto fail;
explain_runs:
    /* the runs the explanation reads record the lines of user code they run */
    v.trace_lines = 1;
    rc = replay(&v, o.token, cli->replays, &t);
    if (rc < 0)
        goto fail;
    o.replay_runs = t.runs;
    o.replay_failed = t.failed;
    kept_finish(&fail_run);
    fail_run = v.keep;
    memset(&v.keep, 0, sizeof v.keep);
    if (t.failed == t.runs && t.digests_differ)
        note_traces_differ(&o, &t, t.flags_union | v.failing_flags);
    if (t.failed != t.runs) {
        o.verdict = "abstained";
        o.abstain_reason = "the minimized schedule does not replay deterministically";
        rc = AFD_EXIT_ABSTAIN;
        goto report;
    }
    tally_finish(&t);
    memset(&t, 0, sizeof t);
    if (o.pass_token) {
        rc = replay(&v, o.pass_token, cli->replays, &t);
        if (rc < 0)
            goto fail;
        o.pass_runs = t.runs;
        o.pass_passed = t.by_outcome[AFD_OUT_PASS];
        pass_run = v.keep;
        memset(&v.keep, 0, sizeof v.keep);
        tally_finish(&t);
        memset(&t, 0, sizeof t);
    }
    free(o.failure);
    o.failure = text_dup(fail_run.failure, fail_run.failure_len, &o.failure_len);

    /* 5. explain */
    afd_view fv = {0}, pv = {0};
    int have_p = pass_run.have_trace && o.pass_passed == o.pass_runs && o.pass_runs > 0;
    int vrc = fail_run.have_trace ? afd_view_build_src(&fv, &fail_run.tr, v.srcs) : AFD_EINVAL;
    if (vrc < 0) {
        /* say so rather than print no cause: the runs were counted, the explanation is missing */
        char why[200];
        snprintf(why, sizeof why, "no explanation: %s",
                 fail_run.have_trace ? afd_strerror(vrc) : "the minimal failing run returned no readable trace");
        o.c.kind = AFD_CAUSE_OTHER;
        o.c.summary = strdup(why);
        fprintf(stderr, "affidavit: warning: %s\n", why);
    }
    if (vrc == 0) {
        if (have_p && afd_view_build_src(&pv, &pass_run.tr, v.srcs) < 0)
            have_p = 0;
        afd_cause_input in = {.fail = &fv, .pass = have_p ? &pv : NULL,
                              .hist = {.sums = v.sums, .blocked = v.blocked, .natural = v.natural, .n = v.n_sums,
                                       .block_site = v.block_site, .block_task = v.block_task,
                                       .block_ns = v.block_ns, .slow_step_ms = cli->slow_step_ms},
                              .k_fail = o.replay_failed, .n_fail = o.replay_runs, .k_pass = o.pass_passed,
                              .n_pass = o.pass_runs, .window_found = o.win.found};
        int erc = afd_cause_decide(&in, &o.c, &o.ev);
        if (erc < 0) {
            afd_view_finish(&fv);
            afd_view_finish(&pv);
            rc = erc;
            goto fail;
        }
        /* a plain callback's delay is named by the task it wakes */
        for (uint32_t i = 0; o.win.found && !o.win.wakes && i < fv.n_steps; i++) {
            const afd_xstep *st = &fv.steps[i];
            if (st->ordinal != o.win.ordinal || strcmp(afd_trace_task_label(fv.tr, st->task), o.win.label) != 0 ||
                !is_callback_task(fv.tr, st->task))
                continue;
            for (uint32_t j = i + 1; j < fv.n_steps; j++)
                if (fv.steps[j].origin == i && !is_callback_task(fv.tr, fv.steps[j].task)) {
                    o.win.wakes = strdup(afd_trace_task_label(fv.tr, fv.steps[j].task));
                    break;
                }
        }
        if (have_p) {
            uint32_t d = afd_view_divergence(&fv, &pv);
            if (d != AFD_NOPOS && d < fv.n_steps) {
                char buf[512];
                snprintf(buf, sizeof buf, "step %" PRIu32 ": %s step %" PRIu32 " runs instead of %s step %" PRIu32,
                         d, afd_trace_task_label(fv.tr, fv.steps[d].task), fv.steps[d].ordinal,
                         d < pv.n_steps ? afd_trace_task_label(pv.tr, pv.steps[d].task) : "(end)",
                         d < pv.n_steps ? pv.steps[d].ordinal : 0);
                afd_evidence_add(&o.ev, "the failing and the passing run first diverge", buf, "observed");
            }
            uint32_t only_f = 0, only_p = 0;
            for (uint32_t i = 0; i < fv.n_acc; i++)
                only_f += afd_view_find(&pv, fv.acc[i].key) == AFD_NOPOS;
            for (uint32_t i = 0; i < pv.n_acc; i++)
                only_p += afd_view_find(&fv, pv.acc[i].key) == AFD_NOPOS;
            if (only_f || only_p) {
                char buf[128];
                snprintf(buf, sizeof buf, "%" PRIu32 " only when failing, %" PRIu32 " only when passing", only_f,
                         only_p);
                afd_evidence_add(&o.ev, "operations that ran in one run and never in the other", buf, "observed");
            }
        }
    }
    if (cli->fix && vrc == 0) {
        propose_fix(&fv, have_p ? &pv : NULL, &o, cli);
        active_runlog = NULL; /* the patched program's runs are the tiers', not the incident's */
        try_candidates(&v, &o, cli);
        active_runlog = &rl;
        if (cli->apply && o.fix_kind)
            apply_fix(&o);
    }
    afd_view_finish(&fv);
    afd_view_finish(&pv);
    if (!o.win.found && o.pass_token && o.pass_runs)
        afd_evidence_add(&o.ev, "no single delay makes it fail: the values the program draws from `random` decide it; "
                      "the passing run compared differs in those values (another seed)",
               "no window", "observed");
    if (o.win.found) {
        char buf[160], claim[400];
        snprintf(buf, sizeof buf, "%.1f us (+-%.1f us, %" PRIu64 " runs)", (double)o.win.hi / 1e3,
                 (double)(o.win.hi - o.win.lo) / 1e3, o.win.runs);
        if (o.win.wakes)
            snprintf(claim, sizeof claim, "collision window: fails when the callback that wakes %.100s (%.100s, call "
                     "%" PRIu32 ") is delayed by more", o.win.wakes, o.win.label, o.win.ordinal);
        else
            snprintf(claim, sizeof claim, "collision window: fails when %.200s step %" PRIu32 " is delayed by more",
                     o.win.label, o.win.ordinal);
        afd_evidence_add(&o.ev, claim, buf, "confirmed");
    }
    o.verdict = "reproduced";
    rc = AFD_EXIT_FAILURE;

report:
    afd_progress_done(&v.prog);
    active_runlog = NULL;
    {
        uint64_t elapsed = now_ns() - t0;
        if (inv_report(cli, &v, &o, elapsed, &fail_run, &pass_run, &rl) < 0) {
            error_line("investigation failed: %s%s", afd_strerror(AFD_ENOMEM), "");
            rc = AFD_EXIT_INTERNAL;
        }
    }
    if (interrupted || afd_interrupted) {
        fflush(stdout);
        fprintf(stderr, "affidavit: interrupted after %" PRIu64 " runs%s\n", v.total_runs,
                o.natural.runs ? "; the runs so far are reported above" : "");
        rc = AFD_EXIT_INTERRUPTED;
    }
    goto out;
fail:
    afd_progress_done(&v.prog);
    if ((rc == AFD_EIO || afd_interrupted) && !interrupted) {
        /* Ctrl-C keeps what was measured: the runs so far are reported and stored, as an
         * incident whose verdict says it was interrupted. */
        interrupted = 1;
        o.verdict = "interrupted";
        afd_stats_wilson(o.natural.failed, o.natural.runs, &o.lo, &o.hi);
        if (!o.failure && o.natural.first_failure)
            o.failure = text_dup(o.natural.first_failure, o.natural.first_failure_len, &o.failure_len);
        if (!o.token && v.found_token)
            o.token = strdup(v.found_token);
        goto report;
    } else {
        error_line("investigation failed: %s%s", afd_strerror(rc < 0 ? rc : v.error), "");
        rc = AFD_EXIT_INTERNAL;
    }
out:
    afd_pool_free(v.pool);
done_early:
    active_runlog = NULL;
    runlog_finish(&rl);
    tally_finish(&t);
    tally_finish(&search);
    tally_finish(&o.natural);
    kept_finish(&fail_run);
    kept_finish(&pass_run);
    kept_finish(&v.keep);
    delay_set_finish(&ds);
    afd_srcmap_free(v.srcs);
    for (size_t i = 0; i < v.n_sums; i++)
        afd_summary_finish(&v.sums[i]);
    free(v.sums);
    free(v.blocked);
    free(v.natural);
    free(v.block_site);
    free(v.block_task);
    free(v.found_token);
    free(v.cand_token);
    free(v.cand_failure);
    free(o.token);
    free(o.pass_token);
    free(o.failure);
    free(o.win.label);
    free(o.win.wakes);
    afd_cause_finish(&o.c);
    afd_evidence_finish(&o.ev);
    candidates_finish(&o);
    afd_buf_finish(&o.fix_diff);
    afd_buf_finish(&o.fix_text);
    afd_buf_finish(&o.buggy_with_test);
    afd_buf_finish(&o.fix_before);
    free(o.first_seen);
    free(o.first_path);
    free(o.fix_file);
    free(o.regression_node);
    return rc;
}
