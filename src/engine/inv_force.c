/* inv_force.c -- forcing evidence for a cancellation cause: the cancel moved one step earlier
 * and one step later, each by a schedule that differs from the minimal failing one in one delay,
 * and each such schedule replayed R times.
 *
 * A cancellation cause (cancelled_handoff, lost_wakeup, cancel_swallowed, cancel_ordering) rests
 * on where one cancel landed between two steps of the minimal failing run:
 *   anchor A  the step the cancel came after: the hand-off to the cancelled task when the cause
 *             has one (the completer's step), else its target's last step when the cancel found
 *             the target finished (cancel() returned False), else the target's step that
 *             suspended at the await the CancelledError was thrown in at;
 *   anchor B  the target's step the CancelledError was thrown into (none when it never was).
 * "One step earlier" is a run whose cancelling step runs before A; "one step later" a run whose
 * cancelling step runs after B ran (the target resumed from that await on its own), or in which
 * B ran and no cancel of the target was asked for at all (it finished first: a wait_for whose
 * operation completed). Steps are matched across runs by task label and ordinal, as tokens name
 * them; the cancel compared is the first one of the program whose target has the same label.
 *
 * What may move the cancel is the schedule model's only input: the virtual cost of a step. A
 * schedule here is the minimal failing one with exactly one delay changed (the window's delay set
 * to the cost its bisection found passing, an explicit delay's cost scaled) or added (one step's
 * cost set so the clock reaches the cancelling step's time, or past every timer): the ready queue
 * is never reordered, so every run is one the real loop can produce. The probes run smallest
 * change first and the first that makes a move is the one reported for it, whatever its outcome. A
 * timer-issued cancel (wait_for, asyncio.timeout, a sleeping canceller) moves because the clock reaches its
 * deadline a step sooner or later; a cancel issued by a step that a call_soon chain schedules may not move at
 * all, and then the rows say no such schedule was found. Strength: "confirmed" only when every replay of the
 * moved schedule passes (the outcome flips R/R) with one trace; "weaker" otherwise.
 *
 * Workload: at most MAX_PROBES probe runs (each one traced run of one schedule), stopping once
 * both moves were seen, then R replays of each move found. Each probe builds one view. */
#include "afd.h"
#include "explain_cancel.h"
#include "inv.h"
#include "runs.h"
#include "schedule.h"
#include "token.h"
#include "trace.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PROBES 64u
#define MAX_STEPS_BACK 32u
#define CLOCK_MARGIN_NS 1000u

/* A step of the failing run, named as tokens name it. */
typedef struct anchor {
    const char *label; /* Borrowed from the failing view's trace; NULL: no such anchor */
    uint32_t ordinal;
    const char *what; /* Borrowed literal: what the step is, for the claim */
} anchor;

/* One move being looked for, and the schedule that made it. */
typedef struct move {
    anchor at;
    char *token; /* Owned: the first probe's schedule that moved the cancel so, or NULL */
    char change[300];
    uint32_t nth;    /* which probe it was, from 1 */
    int none_issued; /* later: no cancel of the target was issued in that run */
} move;

/* One schedule tried: the failing one with one delay changed or added. */
typedef struct probe {
    const char *label; /* Borrowed */
    uint32_t ordinal;
    uint64_t cost, old_cost;
    int added;
} probe;

static int cancel_kind(afd_cause_kind k)
{
    return k == AFD_CAUSE_CANCELLED_HANDOFF || k == AFD_CAUSE_LOST_WAKEUP ||
           k == AFD_CAUSE_CANCEL_SWALLOWED || k == AFD_CAUSE_CANCEL_ORDERING;
}

/* The target the cause's cancel op names (the first CANCEL op asking for a cancel). */
static const char *cause_target(const afd_cause *c)
{
    for (size_t i = 0; i < c->n_ops; i++)
        if (c->ops[i].access == AFD_CAUSE_ACCESS_CANCEL && c->ops[i].operation &&
            strcmp(c->ops[i].operation, "cancel") == 0 && c->ops[i].resource)
            return c->ops[i].resource;
    return NULL;
}

/* The first cancel of the program (not the teardown's) whose target has this label, or NULL. */
static const afd_xcancel *find_cancel(const afd_cancel_view *cv, const char *target, uint32_t *index)
{
    for (uint32_t i = 0; i < cv->n_cancels; i++) {
        const afd_xcancel *c = &cv->cancels[i];
        if (!c->late && c->target && strcmp(afd_trace_task_label(cv->v->tr, c->target), target) == 0) {
            if (index)
                *index = i;
            return c;
        }
    }
    return NULL;
}

static anchor anchor_at(const afd_view *f, uint32_t pos, const char *what)
{
    anchor a = {0};
    if (pos == AFD_NOPOS || pos >= f->n_steps)
        return a;
    a.label = afd_trace_task_label(f->tr, f->steps[pos].task);
    a.ordinal = f->steps[pos].ordinal;
    a.what = what;
    return a;
}

/* Anchors A and B of the file comment, read off the failing run's facts. */
static void anchors(const afd_cancel_view *cv, const afd_xcancel *c, uint32_t index, anchor *a, anchor *b)
{
    const afd_view *f = cv->v;
    *a = (anchor){0};
    for (uint32_t i = 0; i < cv->n_handoffs && !a->label; i++)
        if (cv->handoffs[i].cancel == index && !cv->handoffs[i].late)
            *a = anchor_at(f, cv->handoffs[i].step, "the hand-off to its target");
    if (!a->label && (c->flags & AFD_CANCEL_DONE))
        *a = anchor_at(f, afd_cancel_view_last_step(cv, c->target), "its target's last step");
    if (!a->label && c->delivered != AFD_NOPOS)
        for (uint32_t s = c->delivered; s-- > 0;)
            if (f->steps[s].task == c->target) {
                *a = anchor_at(f, s, "the step that suspended where it was cancelled");
                break;
            }
    *b = c->delivered != AFD_NOPOS ? anchor_at(f, c->delivered, "the step of its target it was thrown into")
                                   : (anchor){0};
}

/* The view position of the step (label, ordinal), or AFD_NOPOS. */
static uint32_t position(const afd_view *v, const anchor *a)
{
    for (uint32_t i = 0; a->label && i < v->n_steps; i++)
        if (v->steps[i].ordinal == a->ordinal &&
            strcmp(afd_trace_task_label(v->tr, v->steps[i].task), a->label) == 0)
            return i;
    return AFD_NOPOS;
}

/* The i-th probe of the failing schedule base and view f around the cancelling step at
 * position p, the smallest changes first: each explicit delay of base set to the cost the
 * bisection found passing (the window's delay) and then scaled, nearest scale first; then one
 * step before p (nearest first) given a cost that brings the clock to the cancelling step's time,
 * or one past every timer (a step after p cannot move it: a step's cost is added after the step).
 * Returns 1 with *out set, -1 when the i-th probe is not worth a run (a step with an explicit
 * delay, scaled above, or a cost the delay already has), 0 when there is no i-th probe. */
static int nth_probe(const afd_schedule *base, const window *w, const afd_view *f, uint32_t p, uint32_t i,
                     probe *out)
{
    /* the window's passing cost (scale 0 of 0: "lo"), then 3/4, 3/2, 1/2, 2, 1/4 and none */
    static const uint32_t num[] = {0, 3, 3, 1, 2, 1, 0}, den[] = {0, 4, 2, 2, 1, 4, 1};
    const uint32_t n_scale = sizeof num / sizeof num[0];
    if (i < base->n_delays * n_scale) {
        const afd_delay *d = &base->delays[i / n_scale];
        uint32_t k = i % n_scale;
        int is_window = w->found && w->label && d->ordinal == w->ordinal && strcmp(d->label, w->label) == 0;
        if (k == 0 && !is_window)
            return -1;
        uint64_t cost = k == 0 ? w->lo : d->cost_ns / den[k] * num[k];
        if (cost == d->cost_ns || (k > 0 && is_window && cost == w->lo))
            return -1;
        *out = (probe){.label = d->label, .ordinal = d->ordinal, .old_cost = d->cost_ns, .cost = cost};
        return 1;
    }
    i -= base->n_delays * n_scale;
    uint64_t end = 0;
    for (uint32_t s = 0; s < f->n_steps; s++)
        if (f->steps[s].vstart + f->steps[s].cost > end)
            end = f->steps[s].vstart + f->steps[s].cost;
    uint64_t big = 2 * (end - (f->n_steps ? f->steps[0].vstart : 0)) + AFD_PCT_MIN_NS;
    uint32_t back = i / 2 + 1;
    if (back > p || back > MAX_STEPS_BACK)
        return 0;
    const afd_xstep *st = &f->steps[p - back];
    const char *label = afd_trace_task_label(f->tr, st->task);
    for (uint32_t k = 0; k < base->n_delays; k++)
        if (base->delays[k].ordinal == st->ordinal && strcmp(base->delays[k].label, label) == 0)
            return -1;
    uint64_t at = st->vstart + st->cost, target = f->steps[p].vstart;
    *out = (probe){.label = label,
                   .ordinal = st->ordinal,
                   .old_cost = st->cost,
                   .added = 1,
                   .cost = i % 2 == 0 ? st->cost + (target > at ? target - at : 0) + CLOCK_MARGIN_NS : big};
    return 1;
}

/* base with the probe's one delay changed or added, into out (initialized here). */
static int probe_schedule(const afd_schedule *base, const probe *pr, afd_schedule *out)
{
    int rc = afd_schedule_copy(out, base);
    if (rc < 0)
        return rc;
    for (uint32_t k = 0; k < out->n_delays; k++)
        if (out->delays[k].ordinal == pr->ordinal && strcmp(out->delays[k].label, pr->label) == 0) {
            out->delays[k].cost_ns = pr->cost;
            return 0;
        }
    rc = afd_schedule_add_delay(out, pr->label, pr->ordinal, pr->cost);
    if (rc < 0)
        afd_schedule_finish(out);
    return rc;
}

/* Where the cancel of target landed in one probe run, against the two anchors: sets *earlier
 * when its cancelling step ran before A, *later to 1 when it ran after B, to 2 when B ran and no
 * cancel of the target was issued at all. */
static int locate(const afd_trace *tr, const char *target, const anchor *a, const anchor *b, int *earlier,
                  int *later)
{
    afd_view pv;
    *earlier = *later = 0;
    int rc = afd_view_build(&pv, tr);
    if (rc < 0)
        return rc;
    afd_cancel_view cv;
    rc = afd_cancel_view_build(&cv, &pv);
    if (rc < 0) {
        afd_view_finish(&pv);
        return rc;
    }
    const afd_xcancel *c = find_cancel(&cv, target, NULL);
    uint32_t pa = position(&pv, a), pb = position(&pv, b);
    if (c && c->step != AFD_NOPOS) {
        *earlier = pa != AFD_NOPOS && c->step < pa;
        *later = pb != AFD_NOPOS && c->step > pb;
    } else if (!c && pb != AFD_NOPOS) {
        /* The target ran B on its own and finished before any cancel of it was asked for (a
         * wait_for whose operation completed first): the cancel moved past its last chance. */
        *later = 2;
    }
    afd_cancel_view_finish(&cv);
    afd_view_finish(&pv);
    return 0;
}

static void describe(char *buf, size_t size, const probe *pr)
{
    if (pr->added)
        snprintf(buf, size, "%.120s step %" PRIu32 " given a cost of %.3f us (%.3f us in the failing run)",
                 pr->label, pr->ordinal, (double)pr->cost / 1e3, (double)pr->old_cost / 1e3);
    else
        snprintf(buf, size, "the delay of %.120s step %" PRIu32 " changed from %.3f us to %.3f us", pr->label,
                 pr->ordinal, (double)pr->old_cost / 1e3, (double)pr->cost / 1e3);
}

/* Runs probes until both moves were seen or MAX_PROBES ran; *tried gets the probes run. */
static int search_moves(inv *v, const afd_schedule *base, const window *w, const afd_view *f, uint32_t p,
                        const char *target, move *early, move *late, uint32_t *tried)
{
    int rc = 0;
    *tried = 0;
    for (uint32_t i = 0; *tried < MAX_PROBES && (!early->token || !late->token); i++) {
        probe pr;
        int have = nth_probe(base, w, f, p, i, &pr);
        if (have == 0)
            break;
        if (have < 0)
            continue;
        afd_schedule s;
        rc = probe_schedule(base, &pr, &s);
        if (rc == AFD_EINVAL || rc == AFD_EFULL) { /* a label or a delay more than a token holds */
            rc = 0;
            continue;
        }
        if (rc < 0)
            break;
        kept_run run = {0};
        rc = inv_run_schedule(v, &s, &run);
        (*tried)++;
        int earlier = 0, later = 0;
        if (rc >= 0 && run.have_trace)
            rc = locate(&run.tr, target, &early->at, &late->at, &earlier, &later);
        inv_kept_finish(&run);
        move *m = earlier && !early->token ? early : later && !late->token ? late : NULL;
        if (rc >= 0 && m) {
            rc = afd_token_encode(&s, &m->token);
            describe(m->change, sizeof m->change, &pr);
            m->nth = *tried;
            m->none_issued = m == late && later == 2;
        }
        afd_schedule_finish(&s);
        if (rc < 0)
            break;
    }
    return rc < 0 ? rc : 0;
}

/* The row of one direction: the moved schedule replayed R times, or why there is none. */
static int move_row(inv *v, outcome *o, const move *m, const char *dir, const char *none_why, uint32_t tried)
{
    char claim[600], measured[500];
    if (!m->at.label) {
        snprintf(claim, sizeof claim, "the cancel one step %s: no such move (%s)", dir, none_why);
        return afd_evidence_add(&o->ev, claim, "not run", "observed");
    }
    if (!m->token) {
        snprintf(
            claim, sizeof claim,
            "the cancel one step %s (%s %.200s, %.120s step %" PRIu32
            "): none of the schedules tried that differ from the failing one in one delay moves it there",
            dir, dir[0] == 'e' ? "before" : "after", m->at.what, m->at.label, m->at.ordinal);
        snprintf(measured, sizeof measured, "%" PRIu32 " schedule%s tried", tried, tried == 1 ? "" : "s");
        return afd_evidence_add(&o->ev, claim, measured, "observed");
    }
    tally t;
    int rc = inv_replay(v, m->token, v->cli->replays, &t);
    inv_kept_finish(&v->keep);
    if (rc < 0) {
        afd_tally_finish(&t);
        return rc;
    }
    uint64_t passed = t.by_outcome[AFD_OUT_PASS];
    int flips = t.runs && passed == t.runs && !t.digests_differ;
    snprintf(claim, sizeof claim, "the cancel one step %s (%s %.200s, %.120s step %" PRIu32 "): %s", dir,
             dir[0] == 'e' ? "before" : "after", m->at.what, m->at.label, m->at.ordinal,
             passed == t.runs && t.runs ? "passes"
             : passed                   ? "passes only sometimes"
                                        : "still fails");
    snprintf(measured, sizeof measured,
             "%" PRIu64 "/%" PRIu64 " passed%s; one delay differs: %s (schedule %" PRIu32 " of %" PRIu32
             " tried)%s",
             passed, t.runs, t.digests_differ ? ", not all with one trace" : "", m->change, m->nth, tried,
             m->none_issued ? "; there its target finished before any cancel of it was asked for" : "");
    afd_tally_finish(&t);
    return afd_evidence_add(&o->ev, claim, measured, flips ? "confirmed" : "weaker");
}

int inv_force_cancel(inv *v, outcome *o)
{
    if (!cancel_kind(o->c.kind) || !v->have_fv || !o->token)
        return 0;
    const afd_view *f = &v->fv;
    const char *target = cause_target(&o->c);
    afd_cancel_view cv;
    int rc = afd_cancel_view_build(&cv, f);
    if (rc < 0)
        return rc;
    uint32_t index = 0;
    const afd_xcancel *c = target ? find_cancel(&cv, target, &index) : NULL;
    if (!c || c->step == AFD_NOPOS || c->step >= f->n_steps) {
        afd_cancel_view_finish(&cv);
        return afd_evidence_add(&o->ev,
                                "the cancel one step earlier or later: no such move (the cause names no "
                                "cancel issued by a step of the failing run)",
                                "not run", "observed");
    }
    move early = {0}, late = {0};
    anchors(&cv, c, index, &early.at, &late.at);
    uint32_t p = c->step;
    afd_cancel_view_finish(&cv);
    afd_schedule base;
    rc = afd_token_decode(&base, o->token);
    if (rc < 0)
        return rc;
    int saved_lines = v->trace_lines;
    v->trace_lines = 0; /* the probes read cancels and steps only */
    uint32_t tried = 0;
    rc = search_moves(v, &base, &o->win, f, p, target, &early, &late, &tried);
    afd_schedule_finish(&base);
    if (rc == 0)
        rc = move_row(v, o, &early, "earlier", "nothing the cause rests on ran before it", tried);
    if (rc == 0)
        rc = move_row(v, o, &late, "later", "its target had already finished when it was issued", tried);
    v->trace_lines = saved_lines;
    free(early.token);
    free(late.token);
    return rc;
}
