/* investigate.c -- `affidavit investigate NODEID`: the pipeline as its eight stages, in order.
 *
 * Every figure printed is a count of runs executed here. Each stage is a function in a file of its
 * own, sharing the state in inv.h:
 *   1. sample (inv_runs.c): natural runs, the flake rate with its Wilson interval;
 *   2. search (inv_runs.c): the portfolio until a schedule fails (within --runs and --seconds);
 *   3. reproduce (inv_runs.c): that schedule replayed R times: R/R must fail alike, or we abstain
 *      and name the likely uncontrolled source;
 *   4. minimize (inv_minimize.c): the schedule as explicit per-step delays, ddmin to a 1-minimal
 *      set, each remaining delay bisected to the collision window;
 *   5. explain (inv_explain.c, with explain() here): the minimal failing run and its nearest
 *      passing run, both replayed R times, compared;
 *   6. repair (inv_repair.c) and 7. verify (inv_verify.c): --fix's candidates, gated and verified
 *      in a mirror of the project;
 *   8. report (here): the incident document, stored and printed.
 * A stage returns 0 to go on, INV_STOP when it concluded, INV_QUIT when it printed why nothing can
 * be reported, or a negative code; afd_cmd_investigate alone decides between the report and the
 * error line, and inv_finish is the one cleanup path. The stages' measures are in inv_stages.c. */
#include "afd.h"
#include "apply.h"
#include "cmds.h"
#include "explain.h"
#include "fix.h"
#include "gate.h"
#include "incident.h"
#include "inv.h"
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
#include <errno.h>
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
#include <sys/utsname.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_PAIRS 64u

/* ---- the result ---- */


/* afd_buf_printf keeps the text NUL-terminated. */
const char *bstr(afd_buf *b)
{
    return b->len && b->data ? (const char *)b->data : "";
}

static void buf_reset(afd_buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = 0;
}


void ev_add(evidence *e, const char *claim, const char *measured, const char *strength)
{
    afd_buf_printf(&e->json, "%s{\"claim\": ", e->n ? ", " : "");
    afd_json_str(&e->json, claim);
    afd_buf_printf(&e->json, ", \"measured\": ");
    afd_json_str(&e->json, measured);
    afd_buf_printf(&e->json, ", \"strength\": ");
    afd_json_str(&e->json, strength);
    afd_buf_printf(&e->json, "}");
    afd_buf_printf(&e->text, "    - %s: %s [%s]\n", claim, measured, strength);
    e->n++;
}


static void acc_text(afd_buf *b, const afd_xaccess *a)
{
    afd_buf_printf(b, "%s %s %s", a->label, a->write ? "writes" : "reads", a->resource);
    if (strcmp(a->name, a->write ? "write" : "read") != 0)
        afd_buf_printf(b, " (%s)", a->name);
}

/* An operation of the cause: "run" says which run's trace holds it ("failing", or "passing" for
 * the write that only the nearest passing run made), "step" is its task's step ordinal there, and
 * "file"/"line" where in the source it is, when known. */
static void op_json(afd_buf *b, int *n, const afd_view *v, const afd_xaccess *a, const char *run)
{
    afd_buf_printf(b, "%s{\"run\": \"%s\", \"task\": ", (*n)++ ? ", " : "", run);
    afd_json_str(b, a->label);
    afd_buf_printf(b, ", \"operation\": ");
    afd_json_str(b, a->name);
    afd_buf_printf(b, ", \"resource\": ");
    afd_json_str(b, a->resource);
    afd_buf_printf(b, ", \"access\": \"%s\", \"step\": %" PRIu32 ", \"occurrence\": %" PRIu32
                      ", \"observed\": %s",
                   a->write ? "write" : "read", v->steps[a->step].ordinal, a->occurrence,
                   a->inferred ? "false" : "true");
    if (a->file && a->line) {
        afd_buf_printf(b, ", \"file\": ");
        afd_json_str(b, a->file);
        afd_buf_printf(b, ", \"line\": %" PRIu32, a->line);
    }
    afd_buf_printf(b, "}");
}

/* The await the task of access x resumed from just before x: the suspension site of its
 * previous step. */
static uint32_t await_before(const afd_view *v, const afd_xaccess *x)
{
    for (uint32_t i = x->step; i-- > 0;)
        if (v->steps[i].task == x->task)
            return v->steps[i].site;
    return AFD_NOSTR;
}

/* Whether x's task ran a step before the one that made access x. */
static int stepped_before(const afd_view *v, const afd_xaccess *x)
{
    for (uint32_t i = x->step; i-- > 0;)
        if (v->steps[i].task == x->task)
            return 1;
    return 0;
}

/* The clause of an order violation that says where the early side went wrong, in what is known:
 * the await x resumed from too early; else the await y had not yet resumed from (yv is the view y
 * belongs to); else what x is, since there is no await to name: a loop callback, a task in its
 * first step, or a task suspended only inside library code. The site named, if any, becomes the
 * cause's await site. */
static void order_await(cause *c, const afd_view *f, const afd_view *yv, const afd_xaccess *x, const afd_xaccess *y)
{
    const char *xs = afd_trace_known(f->tr, await_before(f, x));
    const char *ys = xs ? NULL : afd_trace_known(yv->tr, await_before(yv, y));
    if (xs || ys)
        afd_buf_printf(&c->await_site, "%s", xs ? xs : ys);
    if (xs)
        afd_buf_printf(&c->sentence, "; %s resumed too early from the await at %s", x->label, xs);
    else if (ys)
        afd_buf_printf(&c->sentence, "; %s had not yet resumed from the await at %s", y->label, ys);
    else if (afd_trace_task_is_callback(f->tr, x->task))
        afd_buf_printf(&c->sentence, "; %s is a loop callback (call_soon or call_later), not a task: no await of "
                                     "its own decides when it runs", x->label);
    else if (!stepped_before(f, x))
        afd_buf_printf(&c->sentence, "; %s ran it in its first step, before any await", x->label);
    else
        afd_buf_printf(&c->sentence, "; %s resumed too early from an await inside library code", x->label);
}

static const afd_xaccess *pair_y(const afd_view *fail, const afd_view *pass, const afd_xpair *p)
{
    return p->y_pass ? &pass->acc[p->y] : &fail->acc[p->y];
}

static void ochiai_rank(inv *v, const afd_view *fail, const afd_view *pass, afd_xpair *pairs, size_t n)
{
    uint64_t total_failed = 0;
    for (size_t r = 0; r < v->n_sums; r++)
        total_failed += v->sums[r].failed;
    for (size_t i = 0; i < n; i++) {
        uint64_t kx = fail->acc[pairs[i].x].key, ky = pair_y(fail, pass, &pairs[i])->key;
        for (size_t r = 0; r < v->n_sums; r++) {
            /* "x ran, and y had not run before it" */
            int order = afd_summary_order(&v->sums[r], kx, ky);
            if (order == 1 || (order == -1 && afd_summary_has(&v->sums[r], kx))) {
                if (v->sums[r].failed)
                    pairs[i].fail_with++;
                else
                    pairs[i].pass_with++;
            }
        }
        pairs[i].ochiai = afd_stats_ochiai(pairs[i].fail_with, pairs[i].pass_with, total_failed);
    }
    /* insertion sort, highest first, stable */
    for (size_t i = 1; i < n; i++) {
        afd_xpair p = pairs[i];
        size_t j = i;
        while (j > 0 && pairs[j - 1].ochiai < p.ochiai) {
            pairs[j] = pairs[j - 1];
            j--;
        }
        pairs[j] = p;
    }
}

/* Over the natural runs (what happens without steering): how strongly "a blocking call or a slow
 * step happened" goes with failure. */
static double blocking_ochiai(const inv *v, uint64_t *fw, uint64_t *pw)
{
    uint64_t total_failed = 0;
    *fw = *pw = 0;
    for (size_t r = 0; r < v->n_sums; r++) {
        if (!v->natural[r])
            continue;
        total_failed += v->sums[r].failed;
        if (v->blocked[r]) {
            if (v->sums[r].failed)
                (*fw)++;
            else
                (*pw)++;
        }
    }
    return afd_stats_ochiai(*fw, *pw, total_failed);
}

/* Decides the cause from the minimal failing run (f) and its nearest passing run (p, may be
 * NULL), filling c and the evidence. confirm_fail / confirm_pass: the replay counts of both. */
void explain(inv *v, const afd_view *f, const afd_view *p, cause *c, evidence *ev, uint64_t k_fail,
             uint64_t n_fail, uint64_t k_pass, uint64_t n_pass, int same_data)
{
    const afd_trace *tr = f->tr;
    char buf[512];
    afd_buf m;
    afd_buf_init(&m);
    int n_ops = 0;
    /* deadlock */
    if (tr->flags & AFD_TRACE_DEADLOCK) {
        uint32_t tasks[16], labels[16];
        size_t len = 0;
        int cyc = afd_view_wait_cycle(f, tasks, labels, 16, &len);
        c->kind = "deadlock";
        afd_buf_printf(&c->sentence, "deadlock: ");
        if (cyc > 0) {
            for (size_t i = 0; i < len && i < 16; i++) {
                const char *res = afd_trace_string(tr, labels[i]);
                afd_buf_printf(&c->sentence, "%s%s waits for %s held by %s", i ? "; " : "",
                               afd_trace_task_label(tr, tasks[i]), res,
                               afd_trace_task_label(tr, tasks[(i + 1) % len]));
                afd_buf_printf(&c->resource, "%s%s", i ? ", " : "", res);
                afd_buf_printf(&c->ops, "%s{\"task\": ", i ? ", " : "");
                afd_json_str(&c->ops, afd_trace_task_label(tr, tasks[i]));
                afd_buf_printf(&c->ops, ", \"operation\": \"acquire\", \"resource\": ");
                afd_json_str(&c->ops, res);
                afd_buf_printf(&c->ops, ", \"access\": \"wait\"}");
            }
            /* where the first task of the cycle is blocked: the suspension site of its last step
             * before the deadlock was detected (steps after it are the cancellation's) */
            uint32_t site = AFD_NOSTR;
            for (uint32_t i = 0; i < tr->n_events && tr->events[i].kind != AFD_EV_WAITFOR; i++)
                if (tr->events[i].kind == AFD_EV_STEP && tr->events[i].task == tasks[0])
                    site = tr->events[i].b;
            if (afd_trace_known(tr, site))
                afd_buf_printf(&c->await_site, "%s", afd_trace_string(tr, site));
            ev_add(ev, "every task blocked; the wait-for graph has a cycle",
                   (snprintf(buf, sizeof buf, "%" PRIu64 "/%" PRIu64 " hung", k_fail, n_fail), buf),
                   k_fail == n_fail ? "confirmed" : "weaker");
        } else {
            afd_buf_printf(&c->sentence, "every task is blocked and nothing can wake one");
        }
        afd_buf_finish(&m);
        return;
    }
    /* lost update */
    afd_xatom atoms[8], stale[8];
    size_t n_atoms = 0, n_stale = 0;
    afd_view_lost_updates(f, atoms, 8, &n_atoms);
    if (!n_atoms)
        afd_view_stale_checks(f, stale, 8, &n_stale);
    afd_xpair inv_pairs[MAX_PAIRS];
    size_t n_inv = 0;
    if (p) {
        afd_inverted_pairs(f, p, inv_pairs, MAX_PAIRS, &n_inv);
        ochiai_rank(v, f, p, inv_pairs, n_inv);
    }
    afd_xpair races[MAX_PAIRS];
    size_t n_races = 0;
    afd_view_races(f, races, MAX_PAIRS, &n_races);
    for (size_t i = 0; i < n_races; i++) {
        int n_race_ops = 0;
        afd_buf_printf(&c->races, "%s{\"resource\": ", i ? ", " : "");
        afd_json_str(&c->races, f->acc[races[i].x].resource);
        afd_buf_printf(&c->races, ", \"operations\": [");
        op_json(&c->races, &n_race_ops, f, &f->acc[races[i].x], "failing");
        op_json(&c->races, &n_race_ops, f, &f->acc[races[i].y], "failing");
        afd_buf_printf(&c->races, "]}");
    }
    uint64_t bfw, bpw;
    double b_ochiai = blocking_ochiai(v, &bfw, &bpw);
    uint32_t block_site = AFD_NOSTR;
    uint64_t block_ns = 0;
    const afd_xstep *block_step = NULL;
    for (uint32_t i = 0; i < f->n_steps; i++)
        if (f->steps[i].blocked_ns > block_ns) {
            block_ns = f->steps[i].blocked_ns;
            block_site = f->steps[i].block_site;
            block_step = &f->steps[i];
        }
    if (n_atoms || n_stale) { /* a lost update, else a check-then-act: the same three accesses */
        const afd_xatom *a = n_atoms ? &atoms[0] : &stale[0];
        const afd_xaccess *r = &f->acc[a->r], *u = &f->acc[a->u], *w = &f->acc[a->w];
        c->kind = n_atoms ? "lost_update" : "check_then_act";
        afd_buf_printf(&c->resource, "%s", r->resource);
        const char *yield_at = afd_trace_known(tr, a->await_site); /* NULL: outside the user's code */
        afd_buf_printf(&c->await_site, "%s", yield_at ? yield_at : "");
        afd_buf_printf(&c->sentence, "%s on %s: %s reads it, yields%s%s, %s writes it, then %s %s",
                       n_atoms ? "lost update" : "check-then-act", r->resource, r->label, yield_at ? " at " : "",
                       yield_at ? yield_at : "", u->label, w->label,
                       n_atoms ? "writes back the stale value" : "acts on what it read and writes it");
        op_json(&c->ops, &n_ops, f, r, "failing");
        op_json(&c->ops, &n_ops, f, u, "failing");
        op_json(&c->ops, &n_ops, f, w, "failing");
    } else if ((block_site != AFD_NOSTR && block_ns >= 1000000u) || (v->block_site && b_ochiai >= 0.8)) {
        /* a blocking call in the minimal failing run, or in the failing natural runs and strongly
         * associated with failure there */
        const char *site = block_site != AFD_NOSTR ? afd_trace_known(tr, block_site)
                                                   : v->block_site[0] ? v->block_site : NULL;
        const char *task = block_site != AFD_NOSTR ? afd_trace_task_label(tr, block_step->task) : v->block_task;
        double ms = (double)(block_site != AFD_NOSTR ? block_ns : v->block_ns) / 1e6;
        c->kind = "starvation";
        afd_buf_printf(&c->resource, "event loop");
        afd_buf_printf(&c->await_site, "%s", site ? site : "");
        afd_buf_printf(&c->sentence, "starvation: %s blocks the event loop for %.1f ms%s%s (a blocking call inside "
                                     "a coroutine: every other task waits)",
                       task, ms, site ? " at " : "", site ? site : "");
        afd_buf_printf(&c->ops, "{\"task\": ");
        afd_json_str(&c->ops, task);
        afd_buf_printf(&c->ops, ", \"operation\": \"blocking call\", \"resource\": \"event loop\", \"access\": \"block\", "
                                "\"site\": ");
        afd_json_str(&c->ops, site);
        afd_buf_printf(&c->ops, "}");
    } else if (n_inv) {
        const afd_xaccess *x = &f->acc[inv_pairs[0].x], *y = pair_y(f, p, &inv_pairs[0]);
        c->kind = "order_violation";
        c->early = inv_pairs[0].x;
        c->writer_writes = y->write;
        c->writer_placed = y->file && y->line;
        if (c->writer_placed) {
            c->writer_root = y->root;
            c->writer_line = y->line;
            c->writer_sync = y->sync;
            snprintf(c->writer_file, sizeof c->writer_file, "%s", y->file);
            snprintf(c->writer_name, sizeof c->writer_name, "%s", y->root_name ? y->root_name : "");
        }
        snprintf(c->writer, sizeof c->writer, "%s", y->label);
        afd_buf_printf(&c->resource, "%s", x->resource);
        afd_buf_printf(&c->sentence, "order violation on %s: ", x->resource);
        acc_text(&c->sentence, x);
        afd_buf_printf(&c->sentence, " before ");
        acc_text(&c->sentence, y);
        if (inv_pairs[0].y_pass)
            afd_buf_printf(&c->sentence, " (which then never ran)");
        order_await(c, f, inv_pairs[0].y_pass ? p : f, x, y);
        op_json(&c->ops, &n_ops, f, x, "failing");
        op_json(&c->ops, &n_ops, inv_pairs[0].y_pass ? p : f, y, inv_pairs[0].y_pass ? "passing" : "failing");
    } else {
        uint32_t locks[16], labels[16];
        size_t len = 0;
        const afd_view *lv = NULL;
        if (afd_view_lock_cycle(f, locks, labels, 16, &len) > 0)
            lv = f;
        else if (p && afd_view_lock_cycle(p, locks, labels, 16, &len) > 0)
            lv = p;
        if (lv) {
            const afd_trace *ltr = lv->tr;
            c->kind = "lock_order";
            afd_buf_printf(&c->sentence, "lock-order cycle (a potential deadlock): ");
            for (size_t i = 0; i < len && i < 16; i++) {
                const char *res = afd_trace_string(ltr, labels[i]);
                afd_buf_printf(&c->sentence, "%s%s", i ? " -> " : "", res);
                afd_buf_printf(&c->resource, "%s%s", i ? ", " : "", res);
                afd_buf_printf(&c->ops, "%s{\"operation\": \"acquire\", \"resource\": ", i ? ", " : "");
                afd_json_str(&c->ops, res);
                afd_buf_printf(&c->ops, ", \"access\": \"lock\"}");
            }
            afd_buf_printf(&c->sentence, " -> %s (taken in one order by one task and in the other by another)",
                           afd_trace_string(ltr, labels[0]));
            /* the await inside the first lock's critical section: in the task that took locks[1]
             * while holding locks[0], the suspension site of the step before that acquisition */
            uint32_t step = 0, task = 0, holder0 = 0;
            for (uint32_t i = 0; len > 1 && i < ltr->n_events; i++) {
                const afd_event *e = &ltr->events[i];
                if (e->kind == AFD_EV_STEP)
                    step++;
                if (e->kind != AFD_EV_SYNC || e->a != locks[0] || (e->flags != AFD_SYNC_LOCK_ACQUIRE &&
                                                                    e->flags != AFD_SYNC_LOCK_RELEASE)) {
                    if (e->kind == AFD_EV_SYNC && e->a == locks[1] && e->flags == AFD_SYNC_LOCK_ACQUIRE &&
                        holder0 == e->task + 1) {
                        task = e->task;
                        break;
                    }
                    continue;
                }
                holder0 = e->flags == AFD_SYNC_LOCK_ACQUIRE ? e->task + 1 : 0;
            }
            for (uint32_t i = step; task && i-- > 0;)
                if (lv->steps[i].task == task) {
                    const char *at = afd_trace_known(ltr, lv->steps[i].site);
                    afd_buf_printf(&c->await_site, "%s", at ? at : "");
                    break;
                }
        } else {
            c->kind = "other";
            afd_buf_printf(&c->sentence, "no conflicting operations were recorded: annotate shared state with "
                                         "affidavit.access() or affidavit.operation() to name the cause");
        }
    }
    /* evidence */
    if (n_inv) {
        const afd_xaccess *x = &f->acc[inv_pairs[0].x], *y = pair_y(f, p, &inv_pairs[0]);
        buf_reset(&m);
        acc_text(&m, x);
        afd_buf_printf(&m, " before ");
        acc_text(&m, y);
        afd_buf_printf(&m, ": forcing this order fails");
        snprintf(buf, sizeof buf, "%" PRIu64 "/%" PRIu64 " failed", k_fail, n_fail);
        /* Causal only when the two runs differ in one delay and nothing else; runs that also
         * differ in the values drawn from `random` show the orders, not that the order alone
         * decides. */
        ev_add(ev, bstr(&m), buf, same_data && k_fail == n_fail && n_fail ? "confirmed" : "weaker");
        buf_reset(&m);
        afd_buf_printf(&m, "the opposite order passes%s", same_data ? "" : " (in a run with other random values)");
        snprintf(buf, sizeof buf, "%" PRIu64 "/%" PRIu64 " passed", k_pass, n_pass);
        ev_add(ev, bstr(&m), buf, same_data && k_pass == n_pass && n_pass ? "confirmed" : "weaker");
        snprintf(buf, sizeof buf, "Ochiai %.2f (%" PRIu64 " failing, %" PRIu64 " passing runs)", inv_pairs[0].ochiai,
                 inv_pairs[0].fail_with, inv_pairs[0].pass_with);
        ev_add(ev, "the order is suspicious over every run seen", buf, "observed");
    }
    if (n_atoms)
        ev_add(ev, "a task wrote between another task's read and its write (atomicity violation)",
               "in the minimal failing run", "observed");
    uint32_t n_inferred = 0;
    for (uint32_t i = 0; i < f->n_acc; i++)
        n_inferred += f->acc[i].inferred;
    if (n_inferred)
        ev_add(ev, "accesses inferred from the traced lines and the source (no annotations): the lines ran, "
                   "what they touch is read off the code",
               (snprintf(buf, sizeof buf, "%" PRIu32 " of %" PRIu32 " accesses", n_inferred, f->n_acc), buf),
               "inferred");
    int race_on_cause = 0;
    for (size_t i = 0; i < n_races; i++)
        if (c->resource.len && strcmp(f->acc[races[i].x].resource, bstr(&c->resource)) == 0)
            race_on_cause = 1;
    if (n_races)
        ev_add(ev, race_on_cause ? "the conflicting accesses are unordered by happens-before (a race)"
                                 : "conflicting accesses unordered by happens-before exist",
               (snprintf(buf, sizeof buf, "%zu racing pair%s", n_races, n_races == 1 ? "" : "s"), buf), "observed");
    if (block_site != AFD_NOSTR) {
        const char *at = afd_trace_known(tr, block_site);
        snprintf(buf, sizeof buf, "%.1f ms%s%.300s", (double)block_ns / 1e6, at ? " at " : "", at ? at : "");
        ev_add(ev, "blocking call (time.sleep) inside a coroutine, in the minimal failing run", buf, "observed");
    }
    if (v->block_site) {
        snprintf(buf, sizeof buf, "%.1f ms%s%.300s", (double)v->block_ns / 1e6, v->block_site[0] ? " at " : "",
                 v->block_site);
        ev_add(ev, "a blocking call or slow step in a failing natural run", buf, "observed");
        snprintf(buf, sizeof buf, "Ochiai %.2f (%" PRIu64 " failing, %" PRIu64 " passing natural runs)", b_ochiai, bfw,
                 bpw);
        ev_add(ev, "natural runs with a blocking call (1 ms or more) or a slow step fail", buf, "observed");
    }
    uint64_t slow = (uint64_t)(v->cli->slow_step_ms * 1e6);
    for (uint32_t i = 0; i < f->n_steps; i++)
        if (f->steps[i].wall >= slow) {
            snprintf(buf, sizeof buf, "%.1f ms wall", (double)f->steps[i].wall / 1e6);
            buf_reset(&m);
            afd_buf_printf(&m, "slow step: %s step %" PRIu32 " (over --slow-step)",
                           afd_trace_task_label(tr, f->steps[i].task), f->steps[i].ordinal);
                ev_add(ev, bstr(&m), buf, "observed");
            break;
        }
    if (strcmp(c->kind, "lock_order") != 0) {
        uint32_t locks[16], labels[16];
        size_t len = 0;
        if (afd_view_lock_cycle(f, locks, labels, 16, &len) > 0)
            ev_add(ev, "the lock-order graph has a cycle (a potential deadlock)", "in the minimal failing run",
                   "observed");
    }
    afd_buf_finish(&m);
}

/* ---- the command ---- */

static void cause_init(cause *c)
{
    c->kind = NULL;
    afd_buf_init(&c->resource);
    afd_buf_init(&c->await_site);
    afd_buf_init(&c->sentence);
    afd_buf_init(&c->ops);
    afd_buf_init(&c->races);
    c->early = AFD_NOPOS;
    c->writer[0] = 0;
}

static void cause_finish(cause *c)
{
    afd_buf_finish(&c->resource);
    afd_buf_finish(&c->await_site);
    afd_buf_finish(&c->sentence);
    afd_buf_finish(&c->ops);
    afd_buf_finish(&c->races);
}

/* The investigation as one JSON document (what --json prints, and what the store keeps). */
static void json_document(const afd_cli *cli, inv *v, outcome *o, uint64_t elapsed_ns, afd_buf *b_out)
{
    afd_buf b = *b_out;
    afd_buf_printf(&b, "{\"nodeid\": ");
    afd_json_str(&b, cli->nodeid);
    if (cli->check_file) { /* affidavit check: the target the harness test was built from */
        afd_buf_printf(&b, ", \"check\": {\"file\": ");
        afd_json_str(&b, cli->check_file);
        afd_buf_printf(&b, ", \"class\": ");
        afd_json_str(&b, cli->check_cls);
        afd_buf_printf(&b, ", \"method\": ");
        afd_json_str(&b, cli->check_method);
        afd_buf_printf(&b, ", \"calls\": %" PRIu64 "}", cli->check_calls);
    }
    afd_buf_printf(&b, ", \"verdict\": \"%s\", \"timing\": ", o->verdict);
    afd_timing_json(&o->timing, &b);
    afd_buf_printf(&b, ", \"natural\": {\"runs\": %" PRIu64 ", \"failed\": %" PRIu64 ", \"ci95\": [",
                   o->natural.runs, o->natural.failed);
    afd_json_num(&b, o->lo);
    afd_buf_printf(&b, ", ");
    afd_json_num(&b, o->hi);
    afd_buf_printf(&b, "]}, \"token\": ");
    if (o->token)
        afd_json_str(&b, o->token);
    else
        afd_buf_printf(&b, "null");
    afd_buf_printf(&b, ", \"replay\": {\"runs\": %" PRIu64 ", \"failed\": %" PRIu64 ", \"identical_traces\": %s}",
                   o->replay_runs, o->replay_failed, !o->replay_runs ? "null" : o->traces_differ ? "false" : "true");
    afd_buf_printf(&b, ", \"passing_token\": ");
    if (o->pass_token)
        afd_json_str(&b, o->pass_token);
    else
        afd_buf_printf(&b, "null");
    afd_buf_printf(&b, ", \"passing_replay\": {\"runs\": %" PRIu64 ", \"passed\": %" PRIu64 "}", o->pass_runs,
                   o->pass_passed);
    afd_buf_printf(&b, ", \"window_us\": ");
    if (o->win.found)
        afd_json_num(&b, (double)o->win.hi / 1e3);
    else
        afd_buf_printf(&b, "null");
    afd_buf_printf(&b, ", \"window\": ");
    if (o->win.found) {
        afd_buf_printf(&b, "{\"task\": ");
        afd_json_str(&b, o->win.label);
        afd_buf_printf(&b, ", \"step\": %" PRIu32 ", \"wakes\": ", o->win.ordinal);
        if (o->win.wakes)
            afd_json_str(&b, o->win.wakes);
        else
            afd_buf_printf(&b, "null");
        afd_buf_printf(&b, ", \"passes_at_us\": ");
        afd_json_num(&b, (double)o->win.lo / 1e3);
        afd_buf_printf(&b, ", \"fails_at_us\": ");
        afd_json_num(&b, (double)o->win.hi / 1e3);
        afd_buf_printf(&b, ", \"delays_before\": %" PRIu32 ", \"delays_after\": %" PRIu32
                           ", \"runs\": %" PRIu64 ", \"searched_one_delay\": %s, \"probes\": [",
                       o->win.n_delays_before, o->win.n_delays_after, o->win.runs,
                       o->win.via_fallback ? "true" : "false");
        /* the full delay (it fails) and each bisection probe: one replay each, deterministic */
        for (uint32_t i = 0; i < o->win.n_probes; i++) {
            afd_buf_printf(&b, "%s{\"delay_us\": ", i ? ", " : "");
            afd_json_num(&b, (double)o->win.probes[i].delay / 1e3);
            afd_buf_printf(&b, ", \"failed\": %s}", o->win.probes[i].failed ? "true" : "false");
        }
        afd_buf_printf(&b, "]}");
    } else {
        afd_buf_printf(&b, "null");
    }
    afd_buf_printf(&b, ", \"cause\": ");
    if (o->c.kind) {
        afd_buf_printf(&b, "{\"kind\": \"%s\", \"resource\": ", o->c.kind);
        afd_json_str(&b, bstr(&o->c.resource));
        afd_buf_printf(&b, ", \"await_site\": ");
        if (o->c.await_site.len)
            afd_json_str(&b, bstr(&o->c.await_site));
        else
            afd_buf_printf(&b, "null");
        afd_buf_printf(&b, ", \"summary\": ");
        afd_json_str(&b, bstr(&o->c.sentence));
        afd_buf_printf(&b, ", \"operations\": [%s]}", bstr(&o->c.ops));
    } else {
        afd_buf_printf(&b, "null");
    }
    afd_buf_printf(&b, ", \"evidence\": [%s]", bstr(&o->ev.json));
    afd_buf_printf(&b, ", \"races\": [%s]", bstr(&o->c.races));
    if (o->fix_tried) {
        afd_buf_printf(&b, ", \"fix\": {\"kind\": ");
        if (o->fix_kind)
            afd_json_str(&b, o->fix_kind);
        else
            afd_buf_printf(&b, "null");
        afd_buf_printf(&b, ", \"why_none\": ");
        if (o->fix_kind)
            afd_buf_printf(&b, "null");
        else
            afd_json_str(&b, o->fix_why);
        afd_buf_printf(&b, ", \"diff\": ");
        afd_json_str(&b, bstr(&o->fix_diff));
        afd_buf_printf(&b, ", \"gate\": [");
        for (int k = 0; o->gate_ran && k < AFD_GATE__COUNT; k++) {
            afd_buf_printf(&b, "%s{\"check\": \"%s\", \"group\": \"%s\", \"passed\": %s, \"reason\": ",
                           k ? ", " : "", o->gate[k].name, o->gate[k].group, o->gate[k].passed ? "true" : "false");
            afd_json_str(&b, o->gate[k].reason);
            afd_buf_printf(&b, "}");
        }
        afd_buf_printf(&b, "], \"tiers\": ");
        if (!o->verified_ran) {
            afd_buf_printf(&b, "{\"replay\": \"not attempted\", \"exploration\": \"not attempted\", "
                               "\"natural\": \"not attempted\", \"overhead\": \"not attempted\"}");
        } else {
            afd_buf_printf(&b, "{\"replay\": {\"token_failed_before\": \"%" PRIu64 "/%" PRIu64 "\", \"runs\": %" PRIu64
                               ", \"passed\": %" PRIu64 "}, \"exploration\": {\"schedules\": %" PRIu64
                               ", \"failed_before\": %" PRIu64 ", \"failed_after\": %" PRIu64
                               "}, \"natural\": {\"runs\": %" PRIu64 ", \"failed\": %" PRIu64 ", \"rate_below\": ",
                           o->replay_failed, o->replay_runs, o->v_replay_runs, o->v_replay_passed, o->v_explore_n,
                           o->v_explore_failed_before, o->v_explore_failed_after, o->v_natural_runs,
                           o->v_natural_failed);
            afd_json_num(&b, o->v_natural_failed ? 1.0 : afd_stats_rule_of_three(o->v_natural_runs));
            afd_buf_printf(&b, "}, \"overhead\": {\"median_ms_before\": ");
            afd_json_num(&b, o->v_wall_before_ms);
            afd_buf_printf(&b, ", \"median_ms_after\": ");
            afd_json_num(&b, o->v_wall_after_ms);
            afd_buf_printf(&b, "}}");
        }
        afd_buf_printf(&b, ", \"regression_test\": ");
        if (o->regression_node) {
            afd_buf_printf(&b, "{\"node\": ");
            afd_json_str(&b, o->regression_node);
            afd_buf_printf(&b, ", \"fails_before\": %s, \"passes_after\": %s}",
                           o->reg_ran ? (o->reg_fails_before ? "true" : "false") : "\"not attempted\"",
                           o->reg_ran ? (o->reg_passes_after ? "true" : "false") : "\"not attempted\"");
        } else {
            afd_json_str(&b, o->regression_why);
        }
        afd_buf_printf(&b, ", \"candidates\": [");
        for (size_t i = 0; i < o->n_cand; i++)
            afd_buf_printf(&b, "%s{\"kind\": \"%s\", \"changed_lines\": %zu, \"tried\": %s, \"gate_passed\": %s, "
                               "\"verified\": %s}",
                           i ? ", " : "", o->cand[i].kind, o->cand[i].changed, o->cand[i].tried ? "true" : "false",
                           o->cand[i].gate_passed ? "true" : "false", o->cand[i].verified ? "true" : "false");
        afd_buf_printf(&b, "]");
        afd_buf_printf(&b, ", \"verified\": %s, \"applied\": %s, \"apply\": ", fix_verified(o) ? "true" : "false",
                       o->applied ? "true" : "false");
        if (o->apply_note[0])
            afd_json_str(&b, o->apply_note);
        else
            afd_buf_printf(&b, "null");
        afd_buf_printf(&b, "}");
    }
    afd_buf_printf(&b, ", \"failure\": ");
    afd_json_strn(&b, o->failure, o->failure_len);
    afd_buf_printf(&b, ", \"environment\": {\"python\": ");
    afd_json_str(&b, v->pool ? afd_pool_python(v->pool) : "");
    afd_buf_printf(&b, ", \"hash_seed\": ");
    afd_json_str(&b, v->pool ? afd_pool_hash_seed(v->pool) : "");
    struct utsname un;
    char plat[400] = "";
    if (uname(&un) == 0)
        snprintf(plat, sizeof plat, "%s %s %s", un.sysname, un.release, un.machine);
    afd_buf_printf(&b, ", \"platform\": ");
    afd_json_str(&b, plat);
    afd_buf_printf(&b, "}");
    afd_buf_printf(&b, ", \"step_limit_runs\": %" PRIu64 ", \"truncated_traces\": %" PRIu64, v->step_limited,
                   v->truncated);
    afd_buf_printf(&b, ", \"runs\": %" PRIu64 ", \"seconds\": ", v->total_runs);
    afd_json_num(&b, (double)elapsed_ns / 1e9);
    inv_stages_json(v, &b);
    afd_buf_printf(&b, "}\n");
    *b_out = b;
}

/* The investigation for a person reading a terminal. */
static void text_document(const afd_cli *cli, inv *v, outcome *o, uint64_t elapsed_ns, afd_buf *b_out)
{
    afd_buf b = *b_out;
    const char *head = !strcmp(o->verdict, "reproduced")      ? "REPRODUCED"
                       : !strcmp(o->verdict, "no_failure")    ? "NO FAILURE FOUND"
                       : !strcmp(o->verdict, "deterministic") ? "FAILS UNDER EVERY SCHEDULE TRIED: NOT TIMING-DEPENDENT"
                       : !strcmp(o->verdict, "interrupted")   ? "INTERRUPTED (the runs so far)"
                       : !strcmp(o->verdict, "timing_sensitive") ? "TIMING-SENSITIVE: A THRESHOLD, NOT A RACE"
                                                              : "ABSTAINED";
    if (cli->check_file)
        afd_buf_printf(&b, "check %s %s.%s, %" PRIu64 " concurrent calls: %s\n  harness:  %s\n", cli->check_file,
                       cli->check_cls, cli->check_method, cli->check_calls, head, cli->nodeid);
    else
        afd_buf_printf(&b, "%s: %s\n", cli->nodeid, head);
    afd_buf_printf(&b, "  natural:  %" PRIu64 "/%" PRIu64 " failed (%.1f%%, 95%% CI %.1f%%-%.1f%%)\n",
                   o->natural.failed, o->natural.runs,
                   o->natural.runs ? 100.0 * (double)o->natural.failed / (double)o->natural.runs : 0.0,
                   100 * o->lo, 100 * o->hi);
    if (o->abstain_reason)
        afd_buf_printf(&b, "  why:      %s\n", o->abstain_reason);
    if (o->timing.sensitive) {
        afd_buf_printf(&b, "  timing:   ");
        afd_timing_summary(&o->timing, &b);
        afd_buf_printf(&b, "\n  checked:  the same schedule kept below the deadline passed %" PRIu64 "/%" PRIu64
                           " runs; no race cause, no fix\n",
                       o->timing.check_passed, o->timing.check_runs);
    }
    if (o->failure && o->failure_len) {
        /* At most 300 bytes, cut back to a character boundary; NUL bytes and escape sequences
         * are shown, never passed to the terminal. */
        size_t n = o->failure_len < 300 ? o->failure_len : 300;
        while (n < o->failure_len && n > 0 && ((unsigned char)o->failure[n] & 0xc0) == 0x80)
            n--;
        afd_buf_printf(&b, "  failure:  ");
        afd_term_strn(&b, o->failure, n);
        afd_buf_printf(&b, "\n");
    }
    if (o->c.kind) {
        afd_buf_printf(&b, "  cause:    %s\n", bstr(&o->c.sentence));
        if (o->c.await_site.len)
            afd_buf_printf(&b, "  await:    %s\n", bstr(&o->c.await_site));
    }
    if (o->win.found) {
        /* rounded outward to 0.1 us, so the printed bounds stay on their measured sides */
        afd_buf_printf(&b, "  window:   fails exactly when ");
        if (o->win.wakes)
            afd_buf_printf(&b, "the callback that wakes %s (%s, call %" PRIu32 ")", o->win.wakes, o->win.label,
                           o->win.ordinal);
        else
            afd_buf_printf(&b, "%s, step %" PRIu32 ",", o->win.label, o->win.ordinal);
        afd_buf_printf(&b, " is delayed by more than %.1f us (measured: passes at %.1f us, fails at %.1f us)\n",
                       floor((double)o->win.lo / 100.0) / 10.0,
                       floor((double)o->win.lo / 100.0) / 10.0, ceil((double)o->win.hi / 100.0) / 10.0);
    }
    if (o->token) {
        afd_buf_printf(&b, "  replayed: %" PRIu64 "/%" PRIu64 " failed%s", o->replay_failed, o->replay_runs,
                       o->traces_differ ? " (the traces differ between replays: see the evidence)" : "");
        if (o->pass_runs)
            afd_buf_printf(&b, "; nearest passing schedule %" PRIu64 "/%" PRIu64 " passed", o->pass_passed,
                           o->pass_runs);
        afd_buf_printf(&b, "\n  token:    %s\n", o->token);
    }
    if (o->ev.n)
        afd_buf_printf(&b, "  evidence:\n%s", bstr(&o->ev.text));
    if (o->token) {
        afd_buf_printf(&b, "  replay:   ");
        afd_shell_replay_command(&b, o->token, cli->nodeid);
        afd_buf_put_u8(&b, '\n');
    }
    if (o->fix_tried && !o->fix_kind)
        afd_buf_printf(&b, "  fix:      none proposed: %s\n", o->fix_why);
    if (o->fix_kind) {
        int passed = o->gate_ran && afd_gate_passed(o->gate);
        afd_buf_printf(&b, "  fix:      %s proposed; policy gate %s; %s; %s\n", o->fix_kind,
                       passed ? "passed" : "FAILED",
                       !o->verified_ran ? "verification not attempted" : fix_verified(o) ? "VERIFIED" : "NOT verified",
                       o->apply_note[0] ? o->apply_note : "not applied (--apply writes it, with a backup)");
        if (o->verified_ran) {
            afd_buf_printf(&b, "    replay   the failing token: %" PRIu64 "/%" PRIu64 " failed before, %" PRIu64 "/%" PRIu64
                               " passed after\n",
                           o->replay_failed, o->replay_runs, o->v_replay_passed, o->v_replay_runs);
            afd_buf_printf(&b, "    explore  %" PRIu64 " schedules: %" PRIu64 " failed before, %" PRIu64 " after\n",
                           o->v_explore_n, o->v_explore_failed_before, o->v_explore_failed_after);
            if (o->v_natural_runs)
                afd_buf_printf(&b, "    natural  %" PRIu64 " runs, %" PRIu64 " failed%s", o->v_natural_runs,
                               o->v_natural_failed, o->v_natural_failed ? "\n" : "");
            if (o->v_natural_runs && !o->v_natural_failed)
                afd_buf_printf(&b, " (rate below %.1f%% at 95%%, rule of three)\n",
                               100 * afd_stats_rule_of_three(o->v_natural_runs));
            afd_buf_printf(&b, "    overhead median run %.2f ms before, %.2f ms after\n", o->v_wall_before_ms,
                           o->v_wall_after_ms);
            if (o->regression_node)
                afd_buf_printf(&b, "    regression test %s: %s before the fix, %s after\n", o->regression_node,
                               !o->reg_ran ? "not attempted" : o->reg_fails_before ? "fails" : "DOES NOT FAIL",
                               !o->reg_ran ? "not attempted" : o->reg_passes_after ? "passes" : "FAILS");
            else
                afd_buf_printf(&b, "    %s\n", o->regression_why);
        } else if (o->v_error[0]) {
            afd_buf_printf(&b, "    verification not attempted: %s\n", o->v_error);
        }
        for (int k = 0; o->gate_ran && k < AFD_GATE__COUNT; k++)
            afd_buf_printf(&b, "    %s %-22s %s\n", o->gate[k].passed ? "pass" : "FAIL", o->gate[k].name,
                           o->gate[k].reason);
        afd_buf_printf(&b, "%s", bstr(&o->fix_diff));
    }
    if (v->step_limited)
        afd_buf_printf(&b, "  step limit reached (%" PRIu64 " steps) in %" PRIu64 " of %" PRIu64
                           " runs: neither passes nor failures\n", cli->max_steps, v->step_limited, v->total_runs);
    if (v->truncated)
        afd_buf_printf(&b, "  trace truncated at its size bound in %" PRIu64 " of %" PRIu64 " runs\n", v->truncated,
                       v->total_runs);
    afd_buf_printf(&b, "  (%" PRIu64 " runs in %.1f s)\n", v->total_runs, (double)elapsed_ns / 1e9);
    inv_stages_text(v, &b);
    *b_out = b;
}

/* Stores the investigation as an incident (its JSON document, every run, the failing and the
 * nearest passing traces, the patch) and writes its HTML report. A store that cannot be written
 * (a read-only project, a full disk) loses nothing of what is printed: a warning says why, and
 * the result is printed with no incident number. */
static int64_t record_incident(const afd_cli *cli, outcome *o, const afd_buf *json, const kept_run *fail_run,
                               const kept_run *pass_run, const runlog *runs, char *report_path, size_t pathlen)
{
    report_path[0] = 0;
    char err[600] = "";
    afd_store *st = NULL;
    int64_t id = 0;
    afd_buf fb, pb;
    afd_buf_init(&fb);
    afd_buf_init(&pb);
    afd_store_trace traces[2];
    size_t n_traces = 0;
    afd_buf tb;
    afd_buf_init(&tb);
    if (o->timing.sensitive)
        afd_timing_summary(&o->timing, &tb);
    const char *timing_text = tb.err || !tb.data ? "" : (const char *)tb.data;
    if (fail_run->have_trace && afd_trace_encode(&fail_run->tr, &fb) == 0)
        traces[n_traces++] = (afd_store_trace){"failing", fb.data, fb.len};
    if (pass_run->have_trace && afd_trace_encode(&pass_run->tr, &pb) == 0)
        traces[n_traces++] = (afd_store_trace){"passing", pb.data, pb.len};
    afd_store_incident inc = {
        .nodeid = cli->nodeid,
        .verdict = o->verdict ? o->verdict : "",
        .cause_kind = o->c.kind ? o->c.kind : "",
        .summary = o->timing.sensitive ? timing_text : bstr(&o->c.sentence),
        .token = o->token ? o->token : "",
        .rate = o->natural.runs ? (double)o->natural.failed / (double)o->natural.runs : 0,
        .natural_runs = o->natural.runs,
        .natural_failed = o->natural.failed,
        .created = (int64_t)time(NULL),
        .json = bstr((afd_buf *)json),
    };
    afd_store_patch patch = {
        .kind = o->fix_kind,
        .file = o->fix_file ? o->fix_file : "",
        .diff = bstr(&o->fix_diff),
        .gate_passed = o->gate_ran && afd_gate_passed(o->gate),
        .verified = fix_verified(o),
        .applied = o->applied,
    };
    int rc = incident_open_store(&st, err, sizeof err);
    if (rc == 0)
        rc = afd_store_add(st, &inc, runs->v, runs->n, traces, n_traces, o->fix_kind ? &patch : NULL, &id, err,
                           sizeof err);
    afd_store_close(st);
    if (rc < 0) {
        fprintf(stderr, "affidavit: warning: the incident was not stored: %s\n", err[0] ? err : afd_strerror(rc));
        id = 0;
    } else if (incident_write_report(id, inc.created, inc.json, fail_run->have_trace ? &fail_run->tr : NULL,
                                     pass_run->have_trace ? &pass_run->tr : NULL, report_path, pathlen, err,
                                     sizeof err) < 0) {
        fprintf(stderr, "affidavit: warning: no HTML report for incident %" PRId64 ": %s\n", id, err);
    }
    afd_buf_finish(&fb);
    afd_buf_finish(&pb);
    afd_buf_finish(&tb);
    return id;
}

/* Prints the result, with the incident it was stored as (0: not stored) and its report. */
static void print_result(const afd_cli *cli, const afd_buf *json, inv *v, outcome *o, uint64_t elapsed_ns,
                         int64_t incident, const char *report_path)
{
    afd_buf b;
    afd_buf_init(&b);
    if (cli->json) {
        /* {"incident": N, "report": PATH, ...the document} */
        afd_buf_printf(&b, "{\"incident\": ");
        if (incident)
            afd_buf_printf(&b, "%" PRId64 ", ", incident);
        else
            afd_buf_printf(&b, "null, ");
        afd_buf_printf(&b, "\"report\": ");
        if (report_path && *report_path)
            afd_json_str(&b, report_path);
        else
            afd_buf_printf(&b, "null");
        afd_buf_printf(&b, ", ");
        if (json->len > 1)
            afd_buf_put(&b, json->data + 1, json->len - 1);
    } else {
        text_document(cli, v, o, elapsed_ns, &b);
        if (incident)
            afd_buf_printf(&b, "  incident: %" PRId64 " (affidavit show %" PRId64 ")%s%s\n", incident, incident,
                           report_path && *report_path ? "; report: " : "", report_path ? report_path : "");
    }
    if (cli->json)
        fwrite(b.data, 1, b.len, stdout);
    else
        afd_term_write(stdout, b.data, b.len);
    afd_buf_finish(&b);
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


/* ---- the sequence ---- */

/* The state before any run: every buffer initialized, so that inv_finish can free it whatever
 * stage the investigation stopped in. 0, or INV_QUIT with v->exit set when the trace cannot be
 * written (before any run, a usage error) or the pool does not start (start_pool said why). */
static int inv_init(inv *v, outcome *o, const afd_cli *cli)
{
    *v = (inv){.cli = cli, .seed = cli->seed, .est_steps = 1, .found_index = UINT64_MAX, .cand_index = UINT64_MAX};
    v->t0 = now_ns();
    inv_stages_init(v);
    memset(o, 0, sizeof *o);
    cause_init(&o->c);
    afd_buf_init(&o->ev.json);
    afd_buf_init(&o->ev.text);
    afd_buf_init(&o->fix_diff);
    afd_buf_init(&o->fix_text);
    afd_buf_init(&o->buggy_with_test);
    afd_buf_init(&o->fix_before);
    if (cli->apply)
        remember_test_file(o, cli->nodeid);
    if (cli->trace_out) {
        int rc = afd_spans_open(cli->trace_out, &v->spans);
        if (rc < 0) {
            error_line("cannot write the trace to %s: %s", cli->trace_out,
                       rc == AFD_ENOMEM ? afd_strerror(rc) : strerror(errno));
            v->exit = AFD_EXIT_USAGE;
            return INV_QUIT;
        }
    }
    v->srcs = afd_srcmap_new();
    int rc = v->srcs ? start_pool(cli, &v->pool) : AFD_EXIT_INTERNAL;
    if (rc) {
        v->exit = rc;
        return INV_QUIT;
    }
    afd_progress_init(&v->prog, "investigate");
    return 0;
}

/* The one cleanup path: frees whatever the stages filled, in whatever stage they stopped. */
static void inv_finish(inv *v, outcome *o)
{
    afd_pool_free(v->pool);
    runlog_finish(&v->log);
    tally_finish(&o->natural);
    afd_view_finish(&v->fv);
    afd_view_finish(&v->pv);
    inv_kept_finish(&v->fail_run);
    inv_kept_finish(&v->pass_run);
    inv_kept_finish(&v->keep);
    inv_delay_set_finish(&v->ds);
    afd_srcmap_free(v->srcs);
    afd_spans_free(v->spans);
    for (size_t i = 0; i < v->n_sums; i++)
        afd_summary_finish(&v->sums[i]);
    free(v->sums);
    free(v->blocked);
    free(v->natural);
    free(v->block_site);
    free(v->block_task);
    free(v->found_token);
    free(v->cand_token);
    free(v->cand_failure);
    free(o->token);
    free(o->pass_token);
    free(o->failure);
    free(o->win.label);
    free(o->win.wakes);
    cause_finish(&o->c);
    afd_buf_finish(&o->ev.json);
    afd_buf_finish(&o->ev.text);
    inv_candidates_finish(o);
    afd_buf_finish(&o->fix_diff);
    afd_buf_finish(&o->fix_text);
    afd_buf_finish(&o->buggy_with_test);
    afd_buf_finish(&o->fix_before);
    free(o->first_seen);
    free(o->first_path);
    free(o->fix_file);
    free(o->regression_node);
}

/* A stage failed. Ctrl-C keeps what was measured: the runs so far are reported and stored, as
 * an incident whose verdict says it was interrupted (INV_STOP). Any other error is one line and
 * no report (INV_QUIT). */
static int inv_failed(inv *v, outcome *o, int rc)
{
    if (rc == AFD_EIO || afd_interrupted) {
        v->interrupted = 1;
        o->verdict = "interrupted";
        afd_stats_wilson(o->natural.failed, o->natural.runs, &o->lo, &o->hi);
        if (!o->failure && o->natural.first_failure)
            o->failure = text_dup(o->natural.first_failure, o->natural.first_failure_len, &o->failure_len);
        if (!o->token && v->found_token)
            o->token = strdup(v->found_token);
        return INV_STOP;
    }
    error_line("investigation failed: %s%s", afd_strerror(rc), "");
    v->exit = AFD_EXIT_INTERNAL;
    return INV_QUIT;
}

/* 8. report: the document, stored as an incident (with every run of it) and printed. */
static void inv_report(inv *v, outcome *o)
{
    const afd_cli *cli = v->cli;
    uint64_t elapsed = now_ns() - v->t0;
    afd_buf doc;
    afd_buf_init(&doc);
    json_document(cli, v, o, elapsed, &doc);
    char report_path[512];
    int64_t id = record_incident(cli, o, &doc, &v->fail_run, &v->pass_run, &v->log, report_path, sizeof report_path);
    print_result(cli, &doc, v, o, elapsed, id, report_path);
    afd_buf_finish(&doc);
    if (v->interrupted || afd_interrupted) {
        fflush(stdout);
        fprintf(stderr, "affidavit: interrupted after %" PRIu64 " runs%s\n", v->total_runs,
                o->natural.runs ? "; the runs so far are reported above" : "");
        v->exit = AFD_EXIT_INTERRUPTED;
    }
}

/* --trace-out: the spans so far, whatever the investigation concluded. A trace that cannot be
 * written loses nothing of what was printed: a warning says so. */
static void inv_write_trace(inv *v)
{
    if (v->spans && afd_spans_commit(v->spans) < 0)
        fprintf(stderr, "affidavit: warning: cannot write the trace to %s: %s\n", v->cli->trace_out, strerror(errno));
}

/* --fix's two stages run for an explained failure only, verify when there is a candidate. */
static int inv_wanted(const inv *v, const outcome *o, int k)
{
    if (k == INV_REPAIR)
        return v->cli->fix && v->have_fv;
    if (k == INV_VERIFY)
        return v->stages[INV_REPAIR].ran && o->n_cand > 0;
    return 1;
}

int afd_cmd_investigate(const afd_cli *cli)
{
    static int (*const stage[INV_REPORT])(inv *, outcome *) = {
        inv_sample, inv_search, inv_reproduce, inv_minimize, inv_explain, inv_repair, inv_verify,
    };
    inv v;
    outcome o;
    int rc = inv_init(&v, &o, cli);
    for (int k = 0; rc == 0 && k < INV_REPORT; k++) {
        if (!inv_wanted(&v, &o, k))
            continue;
        inv_stage_begin(&v, k);
        rc = stage[k](&v, &o);
        inv_stage_end(&v, k);
    }
    if (rc == 0) {
        o.verdict = "reproduced";
        v.exit = AFD_EXIT_FAILURE;
        rc = INV_STOP;
    }
    afd_progress_done(&v.prog);
    if (rc < 0)
        rc = inv_failed(&v, &o, rc);
    if (rc == INV_STOP) {
        inv_stage_begin(&v, INV_REPORT);
        inv_report(&v, &o);
        inv_stage_end(&v, INV_REPORT);
    }
    inv_write_trace(&v);
    rc = v.exit;
    inv_finish(&v, &o);
    return rc;
}
