/* inv_explain.c -- the explain stage: the minimal failing run and its nearest passing run (the
 * same delay just under the threshold), both replayed R times, then compared (explain() in
 * investigate.c: divergence, inverted conflicting pairs ranked by Ochiai over every run seen,
 * happens-before races, lost updates, lock-order and wait-for cycles, blocking calls and slow
 * steps), with the collision window stated last.
 *
 * The views of both runs are kept in v->fv and v->pv: the repair stage reads them. The cost is
 * the 2R replays; the comparison itself is linear in the runs' events. A failure every schedule
 * shows is not explained here but in the minimize stage's one traced run, by the starvation rule
 * alone (inv_explain_deterministic). */
#include "afd.h"
#include "explain.h"
#include "inv.h"
#include "runs.h"
#include "trace.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The minimal failing schedule and the nearest passing one, replayed R times each; the runs the
 * explanation reads record the lines of user code they run. INV_STOP when the failing one does
 * not replay deterministically. */
static int replay_minimal(inv *v, outcome *o)
{
    const afd_cli *cli = v->cli;
    tally t;
    v->trace_lines = 1;
    int rc = inv_replay(v, o->token, cli->replays, &t);
    if (rc < 0) {
        afd_tally_finish(&t);
        return rc;
    }
    o->replay_runs = t.runs;
    o->replay_failed = t.failed;
    inv_kept_finish(&v->fail_run);
    v->fail_run = v->keep;
    memset(&v->keep, 0, sizeof v->keep);
    if (t.failed == t.runs && t.digests_differ)
        inv_note_traces_differ(o, &t, t.flags_union | v->failing_flags);
    if (t.failed != t.runs) {
        o->verdict = "abstained";
        /* The minimized schedule failed once and then not every time: the same uncontrolled
         * source as an unreproduced first schedule, said in the same words. */
        o->abstain_reason = inv_nondeterministic_reason(t.flags_union | v->failing_flags);
        v->exit = AFD_EXIT_ABSTAIN;
        afd_tally_finish(&t);
        return INV_STOP;
    }
    afd_tally_finish(&t);
    if (o->pass_token) {
        rc = inv_replay(v, o->pass_token, cli->replays, &t);
        if (rc < 0) {
            afd_tally_finish(&t);
            return rc;
        }
        o->pass_runs = t.runs;
        o->pass_passed = t.by_outcome[AFD_OUT_PASS];
        v->pass_run = v->keep;
        memset(&v->keep, 0, sizeof v->keep);
        afd_tally_finish(&t);
    }
    free(o->failure);
    o->failure = afd_runs_text_dup(v->fail_run.failure, v->fail_run.failure_len, &o->failure_len);
    return 0;
}

/* What the failing and the passing views differ in, as evidence: where they first diverge, and
 * the operations that ran in one only. */
static void compare_runs(const afd_view *fv, const afd_view *pv, outcome *o)
{
    uint32_t d = afd_view_divergence(fv, pv);
    if (d != AFD_NOPOS && d < fv->n_steps) {
        char buf[512];
        snprintf(buf, sizeof buf, "step %" PRIu32 ": %s step %" PRIu32 " runs instead of %s step %" PRIu32, d,
                 afd_trace_task_label(fv->tr, fv->steps[d].task), fv->steps[d].ordinal,
                 d < pv->n_steps ? afd_trace_task_label(pv->tr, pv->steps[d].task) : "(end)",
                 d < pv->n_steps ? pv->steps[d].ordinal : 0);
        afd_evidence_add(&o->ev, "the failing and the passing run first diverge", buf, "observed");
    }
    uint32_t only_f = 0, only_p = 0;
    for (uint32_t i = 0; i < fv->n_acc; i++)
        only_f += afd_view_find(pv, fv->acc[i].key) == AFD_NOPOS;
    for (uint32_t i = 0; i < pv->n_acc; i++)
        only_p += afd_view_find(fv, pv->acc[i].key) == AFD_NOPOS;
    if (only_f || only_p) {
        char buf[128];
        snprintf(buf, sizeof buf, "%" PRIu32 " only when failing, %" PRIu32 " only when passing", only_f,
                 only_p);
        afd_evidence_add(&o->ev, "operations that ran in one run and never in the other", buf, "observed");
    }
}

/* The window's evidence, stated after the cause's: the delay that makes it fail, or that no
 * single delay does. */
static void window_evidence(outcome *o)
{
    if (!o->win.found && o->pass_token && o->pass_runs)
        afd_evidence_add(
            &o->ev,
            "no single delay makes it fail: the values the program draws from `random` decide it; "
            "the passing run compared differs in those values (another seed)",
            "no window", "observed");
    if (o->win.found) {
        char buf[160], claim[400];
        snprintf(buf, sizeof buf, "%.1f us (+-%.1f us, %" PRIu64 " runs)", (double)o->win.hi / 1e3,
                 (double)(o->win.hi - o->win.lo) / 1e3, o->win.runs);
        if (o->win.wakes)
            snprintf(claim, sizeof claim,
                     "collision window: fails when the callback that wakes %.100s (%.100s, call "
                     "%" PRIu32 ") is delayed by more",
                     o->win.wakes, o->win.label, o->win.ordinal);
        else
            snprintf(claim, sizeof claim,
                     "collision window: fails when %.200s step %" PRIu32 " is delayed by more", o->win.label,
                     o->win.ordinal);
        afd_evidence_add(&o->ev, claim, buf, "confirmed");
    }
}

/* Every run seen, as the cause's rules read it. */
static afd_cause_history history(const inv *v)
{
    return (afd_cause_history){.sums = v->sums,
                               .blocked = v->blocked,
                               .natural = v->natural,
                               .n = v->n_sums,
                               .block_site = v->block_site,
                               .block_task = v->block_task,
                               .block_ns = v->block_ns,
                               .slow_step_ms = v->cli->slow_step_ms};
}

/* A failure every schedule shows is no race, but a blocking call in it still starves the loop
 * every time: the heartbeat that misses its deadline on every schedule names the time.sleep that
 * delays it, whatever the rate. Only the starvation rule is asked: without a passing run an
 * order cannot be told from another, and the verdict keeps saying the failure is not timing's. */
int inv_explain_deterministic(inv *v, outcome *o, const afd_view *view)
{
    afd_cause_input in = {.fail = view, .pass = NULL, .hist = history(v), .k_fail = 1, .n_fail = 1};
    return afd_cause_decide_starvation(&in, &o->c, &o->ev);
}

/* 5. explain */
int inv_explain(inv *v, outcome *o)
{
    int rc = replay_minimal(v, o);
    if (rc)
        return rc;
    afd_view *fv = &v->fv, *pv = &v->pv;
    const kept_run *fail_run = &v->fail_run, *pass_run = &v->pass_run;
    int have_p = pass_run->have_trace && o->pass_passed == o->pass_runs && o->pass_runs > 0;
    int vrc = fail_run->have_trace ? afd_view_build_src(fv, &fail_run->tr, v->srcs) : AFD_EINVAL;
    if (vrc < 0) {
        /* say so rather than print no cause: the runs were counted, the explanation is missing */
        char why[200];
        snprintf(why, sizeof why, "no explanation: %s",
                 fail_run->have_trace ? afd_strerror(vrc)
                                      : "the minimal failing run returned no readable trace");
        o->c.kind = AFD_CAUSE_OTHER;
        o->c.summary = strdup(why);
        fprintf(stderr, "affidavit: warning: %s\n", why);
    }
    if (vrc == 0) {
        v->have_fv = 1;
        if (have_p && afd_view_build_src(pv, &pass_run->tr, v->srcs) < 0)
            have_p = 0;
        v->have_pv = have_p;
        afd_cause_input in = {.fail = fv,
                              .pass = have_p ? pv : NULL,
                              .hist = history(v),
                              .k_fail = o->replay_failed,
                              .n_fail = o->replay_runs,
                              .k_pass = o->pass_passed,
                              .n_pass = o->pass_runs,
                              .window_found = o->win.found};
        rc = afd_cause_decide(&in, &o->c, &o->ev);
        if (rc < 0)
            return rc;
        /* a plain callback's delay is named by the task it wakes */
        for (uint32_t i = 0; o->win.found && !o->win.wakes && i < fv->n_steps; i++) {
            const afd_xstep *st = &fv->steps[i];
            if (st->ordinal != o->win.ordinal ||
                strcmp(afd_trace_task_label(fv->tr, st->task), o->win.label) != 0 ||
                !inv_callback_task(fv->tr, st->task))
                continue;
            for (uint32_t j = i + 1; j < fv->n_steps; j++)
                if (fv->steps[j].origin == i && !inv_callback_task(fv->tr, fv->steps[j].task)) {
                    o->win.wakes = strdup(afd_trace_task_label(fv->tr, fv->steps[j].task));
                    break;
                }
        }
        if (have_p)
            compare_runs(fv, pv, o);
    }
    window_evidence(o);
    /* After every row of the runs compared: the cancel moved, in runs of their own. */
    return vrc == 0 ? inv_force_cancel(v, o) : 0;
}
