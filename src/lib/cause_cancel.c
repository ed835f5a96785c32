/* cause_cancel.c -- the causes that cancellations and hand-offs explain, decided from the facts
 * explain_cancel.c reads off the minimal failing run (and its nearest passing run).
 *
 * Four kinds, tried in this order, the first that holds named:
 *   cancelled_handoff  a task was handed X (a future it awaited was completed for it) and was
 *                      cancelled before it resumed, and never passed X on: X is lost. X is lost
 *                      when it was a plain future's result a task handed over (its only copy), or
 *                      when X is a primitive still held by the cancelled waiter at the end.
 *   lost_wakeup        the run hung with tasks waiting for X that nobody holds, after a wake-up
 *                      for X went to a task that never took X (cancelled, or woke and left) and
 *                      never passed it on.
 *   cancel_ordering    a task cancelled another (or its child was cancelled) and read state that
 *                      the cancelled task's cleanup, after its CancelledError, then wrote.
 *   cancel_swallowed   a cancellation was caught without being re-raised or uncancelled and the
 *                      task went on, or cancel() came just after its target's last step while both
 *                      were ready at once (cancel() returned False).
 * Main invariant: a fact the nearest passing run shows as well (the same tasks, by label, and the
 * same thing) does not explain the failure and names nothing; a deadlock whose wait-for graph has
 * a cycle is left to the deadlock kind, and what happens after a deadlock was found (the engine's
 * teardown cancels every task) is never read. Workload: one decision per investigation, linear in
 * the facts except cancel_ordering, which pairs the accesses of two tasks (bounded by the view's). */
#include "afd.h"
#include "cause_impl.h"
#include "explain_cancel.h"
#include "trace.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct cdec {
    const afd_cause_input *in; /* Borrowed */
    const afd_view *f, *p;     /* Borrowed: in->fail, in->pass (NULL when none) */
    afd_cancel_view cf, cp;    /* Owned: the facts of both runs (cp empty without a passing run) */
    afd_cause *c;              /* Borrowed: the result */
    afd_evidence *ev;          /* Borrowed */
    afd_buf *sentence, *resource, *await_site; /* Borrowed */
    int err;
} cdec;

static const char *task_label(const afd_cancel_view *cv, uint32_t task)
{
    return task ? afd_trace_task_label(cv->v->tr, task) : "code outside any task";
}

static const char *string(const afd_cancel_view *cv, uint32_t id)
{
    return afd_trace_string(cv->v->tr, id);
}

static const char *site(const afd_cancel_view *cv, uint32_t id)
{
    return afd_trace_known(cv->v->tr, id);
}

/* Two string ids of two traces name the same place or thing. */
static int same_str(const afd_cancel_view *a, uint32_t x, const afd_cancel_view *b, uint32_t y)
{
    return x != AFD_NOSTR && y != AFD_NOSTR && strcmp(string(a, x), string(b, y)) == 0;
}

static int same_task(const afd_cancel_view *a, uint32_t x, const afd_cancel_view *b, uint32_t y)
{
    return strcmp(task_label(a, x), task_label(b, y)) == 0;
}

static char *dup_or_null(cdec *d, const char *s)
{
    char *copy = s ? strdup(s) : NULL;
    if (s && !copy)
        d->err = AFD_ENOMEM;
    return copy;
}

static void add_op(cdec *d, afd_cause_access access, const char *task, const char *operation,
                   const char *resource, const char *where)
{
    afd_cause_op *op = afd_cause_add_op(d->c);
    if (!op) {
        d->err = AFD_ENOMEM;
        return;
    }
    op->access = access;
    op->task = dup_or_null(d, task);
    op->operation = dup_or_null(d, operation);
    op->resource = dup_or_null(d, resource);
    op->site = dup_or_null(d, where);
}

/* A run's access, as cause.c names the accesses of the other kinds. */
static void add_access(cdec *d, const afd_xaccess *a)
{
    afd_cause_op *op = afd_cause_add_op(d->c);
    if (!op) {
        d->err = AFD_ENOMEM;
        return;
    }
    op->access = a->write ? AFD_CAUSE_ACCESS_WRITE : AFD_CAUSE_ACCESS_READ;
    op->run = "failing";
    op->task = dup_or_null(d, a->label);
    op->operation = dup_or_null(d, a->name);
    op->resource = dup_or_null(d, a->resource);
    op->write = a->write;
    op->step = d->f->steps[a->step].ordinal;
    op->occurrence = a->occurrence;
    op->observed = !a->inferred;
    if (a->file && a->line) {
        op->file = dup_or_null(d, a->file);
        op->line = a->line;
    }
}

/* The task's step ordinal at a view position, for the evidence ("worker#0 step 3"). */
static uint32_t ordinal(const afd_view *v, uint32_t pos)
{
    return pos < v->n_steps ? v->steps[pos].ordinal : 0;
}

/* Who asked for a cancel, in words: "wait_for (pool.py:40)", "asyncio.timeout", "main#0". */
static void put_canceller(afd_buf *b, const afd_cancel_view *cv, const afd_xcancel *c)
{
    if (!c) {
        afd_buf_printf(b, "a cancel() the trace does not name");
        return;
    }
    if (c->flags & AFD_CANCEL_TIMEOUT) {
        const char *at = site(cv, c->timeout_site);
        afd_buf_printf(b, "%s",
                       (c->timeout_flags & AFD_TIMEOUT_WAIT_FOR)  ? "wait_for"
                       : (c->timeout_flags & AFD_TIMEOUT_CONTEXT) ? "asyncio.timeout"
                                                                  : "a timeout");
        if (at)
            afd_buf_printf(b, " (%s)", at);
        return;
    }
    afd_buf_printf(b, "%s", task_label(cv, c->canceller));
}

/* The canceller as an operation's task: the task that called cancel(), or the timeout. */
static const char *canceller_task(const afd_cancel_view *cv, const afd_xcancel *c)
{
    if (c->flags & AFD_CANCEL_TIMEOUT)
        return (c->timeout_flags & AFD_TIMEOUT_CONTEXT) ? "asyncio.timeout" : "wait_for";
    return task_label(cv, c->canceller);
}

/* The row every kind ends with: the failing schedule replayed. */
static void replay_row(cdec *d, const char *claim)
{
    char buf[96];
    const afd_cause_input *in = d->in;
    snprintf(buf, sizeof buf, "%" PRIu64 "/%" PRIu64 " failed", in->k_fail, in->n_fail);
    afd_evidence_add(d->ev, claim, buf, in->n_fail && in->k_fail == in->n_fail ? "confirmed" : "weaker");
}

static void pass_row(cdec *d, const char *claim)
{
    if (d->p)
        afd_evidence_add(d->ev, claim, "in the nearest passing run", "observed");
}

/* ---- cancelled_handoff ---- */

static int handoff_cancelled(const afd_xhandoff *h)
{
    return h->resume_cancelled || (h->cancel != AFD_NOPOS && h->resumed == AFD_NOPOS);
}

/* Whether a task waits at the end for the primitive `object` held by `holder`. */
static int held_at_end(const afd_cancel_view *cv, uint32_t object, uint32_t holder)
{
    for (uint32_t i = 0; i < cv->n_waiters; i++)
        if (cv->waiters[i].object == object && cv->waiters[i].holder == holder)
            return 1;
    return 0;
}

static int handoff_lost(const afd_cancel_view *cv, const afd_xhandoff *h)
{
    if (h->late || (h->flags & (AFD_HANDOFF_EXCEPTION | AFD_HANDOFF_CANCELLED)) || !handoff_cancelled(h) ||
        h->passed_on != AFD_NOPOS)
        return 0;
    if (!h->object) /* a plain future's result, handed over by a task: the only copy of it */
        return h->by_task;
    return held_at_end(cv, h->object, h->waiter);
}

static const char *handoff_how(const afd_xhandoff *h)
{
    switch (h->how) {
    case AFD_SYNC_LOCK_RELEASE:
    case AFD_SYNC_SEM_RELEASE:
        return "release()";
    case AFD_SYNC_QUEUE_PUT:
        return "put()";
    case AFD_SYNC_EVENT_SET:
        return "set()";
    default:
        return h->object ? "a completion" : "set_result()";
    }
}

/* The cancel that reached the waiter of h after the hand-off (NULL when the trace does not say
 * which: the waiter resumed into a CancelledError whose CANCEL was not recorded). */
static const afd_xcancel *handoff_cancel(const afd_cancel_view *cv, const afd_xhandoff *h)
{
    return h->cancel != AFD_NOPOS ? &cv->cancels[h->cancel] : NULL;
}

static int name_cancelled_handoff(cdec *d)
{
    const afd_cancel_view *cv = &d->cf;
    for (uint32_t i = 0; i < cv->n_handoffs; i++) {
        const afd_xhandoff *h = &cv->handoffs[i];
        if (!handoff_lost(cv, h))
            continue;
        int in_pass = 0;
        for (uint32_t j = 0; j < d->cp.n_handoffs && !in_pass; j++) {
            const afd_xhandoff *g = &d->cp.handoffs[j];
            in_pass = handoff_lost(&d->cp, g) && same_task(cv, h->waiter, &d->cp, g->waiter) &&
                      same_str(cv, h->label, &d->cp, g->label);
        }
        if (in_pass)
            continue;
        const afd_xcancel *c = handoff_cancel(cv, h);
        const char *x = string(cv, h->label), *w = task_label(cv, h->waiter),
                   *k = task_label(cv, h->completer);
        const char *at = site(cv, h->delivered_at) ? site(cv, h->delivered_at) : site(cv, h->waited_at);
        d->c->kind = AFD_CAUSE_CANCELLED_HANDOFF;
        afd_buf_printf(d->resource, "%s", x);
        afd_buf_printf(d->await_site, "%s", at ? at : "");
        afd_buf_printf(d->sentence,
                       "cancelled hand-off of %s: %s was handed %s by %s in %s and cancelled by ", x, w, x,
                       handoff_how(h), k);
        put_canceller(d->sentence, cv, c);
        afd_buf_printf(d->sentence, " before it resumed%s%s: ", at ? " at " : "", at ? at : "");
        if (h->object)
            afd_buf_printf(d->sentence, "%s stays held by %s, which never releases it", x, w);
        else
            afd_buf_printf(d->sentence, "what it was handed is lost (%s never passed it on)", w);
        add_op(d, AFD_CAUSE_ACCESS_HANDOFF, k, handoff_how(h), x, NULL);
        if (c)
            add_op(d, AFD_CAUSE_ACCESS_CANCEL, canceller_task(cv, c), "cancel", w, site(cv, c->timeout_site));
        add_op(d, AFD_CAUSE_ACCESS_HANDOFF, w, "resume into CancelledError", x, at);
        char claim[512], measured[256];
        snprintf(claim, sizeof claim, "%.120s was handed %.200s by %.120s and cancelled before it resumed", w,
                 x, k);
        snprintf(measured, sizeof measured, "handed in %.60s step %" PRIu32 "%s", k, ordinal(d->f, h->step),
                 h->resume_cancelled ? "; resumed into CancelledError" : "; never resumed");
        afd_evidence_add(d->ev, claim, measured, "observed");
        snprintf(claim, sizeof claim, "%.120s never passed %.200s on (no later hand-off or release of it)", w,
                 x);
        afd_evidence_add(d->ev, claim, "in the minimal failing run", "observed");
        if (h->object) {
            snprintf(claim, sizeof claim, "at the end, tasks wait for %.200s held by %.120s", x, w);
            afd_evidence_add(d->ev, claim, "in the minimal failing run", "observed");
        }
        pass_row(d, "the passing run loses no hand-off of it");
        replay_row(d, "the schedule that loses the hand-off fails every time it is replayed");
        return 1;
    }
    return 0;
}

/* ---- lost_wakeup ---- */

/* A waiter at the end that waits for the thing h woke its task for, which nobody holds. */
static int stuck_on(const afd_cancel_view *cv, const afd_xhandoff *h, const afd_xwaiter *w)
{
    if (w->holder || w->task == h->waiter)
        return 0;
    if (h->object)
        return w->object == h->object;
    return !w->object && same_str(cv, w->site, cv, h->waited_at);
}

static int wakeup_lost(const afd_cancel_view *cv, const afd_xhandoff *h)
{
    if (h->late || (h->flags & AFD_HANDOFF_CANCELLED) || h->passed_on != AFD_NOPOS)
        return 0;
    if (h->object ? h->taken != AFD_NOPOS : !handoff_cancelled(h))
        return 0; /* it took what it was woken for */
    for (uint32_t i = 0; i < cv->n_waiters; i++) {
        const afd_xwaiter *w = &cv->waiters[i];
        if (w->task == h->waiter &&
            (h->object ? w->object == h->object : same_str(cv, w->site, cv, h->waited_at)))
            return 0; /* it still waits for it itself: it did not leave */
    }
    for (uint32_t i = 0; i < cv->n_waiters; i++)
        if (stuck_on(cv, h, &cv->waiters[i]))
            return 1;
    return 0;
}

static int name_lost_wakeup(cdec *d)
{
    const afd_cancel_view *cv = &d->cf;
    if (!(d->f->tr->flags & AFD_TRACE_DEADLOCK))
        return 0;
    for (uint32_t i = 0; i < cv->n_handoffs; i++) {
        const afd_xhandoff *h = &cv->handoffs[i];
        if (!wakeup_lost(cv, h))
            continue;
        const afd_xcancel *c = handoff_cancel(cv, h);
        int cancelled = handoff_cancelled(h);
        const char *x = string(cv, h->label), *w = task_label(cv, h->waiter),
                   *k = task_label(cv, h->completer);
        const char *at = site(cv, h->waited_at) ? site(cv, h->waited_at) : site(cv, h->delivered_at);
        d->c->kind = AFD_CAUSE_LOST_WAKEUP;
        afd_buf_printf(d->resource, "%s", x);
        afd_buf_printf(d->await_site, "%s", at ? at : "");
        afd_buf_printf(d->sentence, "lost wake-up on %s: %s%s%s%s was woken for it by %s in %s and ", x, w,
                       at ? ", waiting at " : "", at ? at : "", at ? "," : "", handoff_how(h), k);
        if (cancelled) {
            afd_buf_printf(d->sentence, "cancelled by ");
            put_canceller(d->sentence, cv, c);
        } else {
            afd_buf_printf(d->sentence, "left");
        }
        afd_buf_printf(d->sentence, " without taking it or waking another; ");
        uint32_t n = 0;
        add_op(d, AFD_CAUSE_ACCESS_HANDOFF, k, handoff_how(h), x, NULL);
        if (c)
            add_op(d, AFD_CAUSE_ACCESS_CANCEL, canceller_task(cv, c), "cancel", w, site(cv, c->timeout_site));
        add_op(d, AFD_CAUSE_ACCESS_HANDOFF, w,
               cancelled ? "resume into CancelledError" : "resume without taking it", x, at);
        for (uint32_t j = 0; j < cv->n_waiters; j++) {
            const afd_xwaiter *s = &cv->waiters[j];
            if (!stuck_on(cv, h, s))
                continue;
            if (n < 3)
                afd_buf_printf(d->sentence, "%s%s", n ? ", " : "", task_label(cv, s->task));
            n++;
            add_op(d, AFD_CAUSE_ACCESS_WAIT, task_label(cv, s->task), "wait", x, NULL);
        }
        if (n > 3)
            afd_buf_printf(d->sentence, " and %" PRIu32 " more", n - 3);
        afd_buf_printf(d->sentence, " wait%s for it forever", n == 1 ? "s" : "");
        char claim[512], measured[256];
        snprintf(claim, sizeof claim, "the run hung: tasks wait for %.200s, which nobody holds", x);
        snprintf(measured, sizeof measured, "%" PRIu32 " waiting; %" PRIu64 "/%" PRIu64 " hung", n,
                 d->in->k_fail, d->in->n_fail);
        afd_evidence_add(d->ev, claim, measured,
                         d->in->n_fail && d->in->k_fail == d->in->n_fail ? "confirmed" : "weaker");
        snprintf(claim, sizeof claim, "%.120s consumed the wake-up for %.200s and never took it", w, x);
        snprintf(measured, sizeof measured, "woken in %.60s step %" PRIu32 "%s", k, ordinal(d->f, h->step),
                 cancelled ? "; resumed into CancelledError" : "; resumed and left");
        afd_evidence_add(d->ev, claim, measured, "observed");
        snprintf(claim, sizeof claim, "%.120s woke no other waiter (no later hand-off or release of it)", w);
        afd_evidence_add(d->ev, claim, "in the minimal failing run", "observed");
        return 1;
    }
    return 0;
}

/* ---- cancel_ordering ---- */

/* The task that waits on a cancelled task's cleanup: the task that cancelled it, else its parent. */
static uint32_t caller_of(const afd_cancel_view *cv, const afd_xcancel *c)
{
    if (afd_cancel_view_is_task(cv, c->canceller) && c->canceller != c->target)
        return c->canceller;
    return afd_cancel_view_parent(cv, c->target);
}

/* The first read by the caller, after the cancel, of what the cancelled task's cleanup writes
 * after it. Writes the pair's access indices; 1 when there is one. */
static int early_read(const afd_view *f, const afd_xcancel *c, uint32_t caller, uint32_t *r_out,
                      uint32_t *w_out)
{
    uint32_t after = c->step != AFD_NOPOS ? c->step : c->delivered;
    for (uint32_t wi = 0; wi < f->n_acc; wi++) {
        const afd_xaccess *w = &f->acc[wi];
        if (w->task != c->target || !w->write || w->step < c->delivered)
            continue;
        for (uint32_t ri = 0; ri < f->n_acc && f->acc[ri].step < w->step; ri++) {
            const afd_xaccess *r = &f->acc[ri];
            if (r->task == caller && !r->write && r->step > after &&
                afd_view_resources_overlap(r->resource, w->resource)) {
                *r_out = ri;
                *w_out = wi;
                return 1;
            }
        }
    }
    return 0;
}

static int name_cancel_ordering(cdec *d)
{
    const afd_cancel_view *cv = &d->cf;
    const afd_view *f = d->f;
    for (uint32_t i = 0; i < cv->n_cancels; i++) {
        const afd_xcancel *c = &cv->cancels[i];
        uint32_t caller = caller_of(cv, c), ri = 0, wi = 0;
        if (c->late || (c->flags & AFD_CANCEL_DONE) || c->delivered == AFD_NOPOS || !caller ||
            !early_read(f, c, caller, &ri, &wi))
            continue;
        const afd_xaccess *r = &f->acc[ri], *w = &f->acc[wi];
        int reversed = 0;
        if (d->p) { /* the same read and write in the passing run, in the same order: not the cause */
            uint32_t pr = afd_view_find(d->p, r->key), pw = afd_view_find(d->p, w->key);
            if (pr != AFD_NOPOS && pw != AFD_NOPOS && d->p->acc[pr].step < d->p->acc[pw].step)
                continue;
            reversed = pr != AFD_NOPOS && pw != AFD_NOPOS;
        }
        const char *t = task_label(cv, c->target), *k = task_label(cv, caller);
        const char *dat = site(cv, c->delivered_at);
        uint32_t resumed_at = AFD_NOSTR;
        for (uint32_t s = r->step; s-- > 0;)
            if (f->steps[s].task == caller) {
                resumed_at = f->steps[s].site;
                break;
            }
        const char *at = site(cv, resumed_at);
        d->c->kind = AFD_CAUSE_CANCEL_ORDERING;
        afd_buf_printf(d->resource, "%s", w->resource);
        afd_buf_printf(d->await_site, "%s", at ? at : dat ? dat : "");
        afd_buf_printf(d->sentence, "cancel ordering on %s: %s ", w->resource, k);
        if (c->canceller == caller && !(c->flags & AFD_CANCEL_TIMEOUT))
            afd_buf_printf(d->sentence, "cancelled %s", t);
        else {
            afd_buf_printf(d->sentence, "saw %s cancelled by ", t);
            put_canceller(d->sentence, cv, c);
        }
        afd_buf_printf(d->sentence,
                       ", resumed%s%s and read it before %s's cleanup after the CancelledError%s%s wrote "
                       "it: the caller went on before the cancelled task finished cleaning up",
                       at ? " at " : "", at ? at : "", t, dat ? " at " : "", dat ? dat : "");
        add_op(d, AFD_CAUSE_ACCESS_CANCEL, canceller_task(cv, c), "cancel", t, site(cv, c->timeout_site));
        add_access(d, r);
        add_access(d, w);
        char claim[512], measured[256];
        snprintf(claim, sizeof claim,
                 "%.120s read %.200s after %.120s was cancelled and before its cleanup wrote it", k,
                 w->resource, t);
        snprintf(measured, sizeof measured,
                 "read in %.60s step %" PRIu32 ", cleanup write in %.60s step %" PRIu32, k,
                 ordinal(f, r->step), t, ordinal(f, w->step));
        afd_evidence_add(d->ev, claim, measured, "observed");
        if (reversed)
            pass_row(d, "the passing run reads it after the cleanup wrote it");
        replay_row(d, "the schedule that reads before the cleanup fails every time it is replayed");
        return 1;
    }
    return 0;
}

/* ---- cancel_swallowed ---- */

/* Whether the target went on after catching: it returned normally from the delivering step, ran
 * a later step that suspended again (not only finished), or still waited at the end. */
static int went_on(const afd_cancel_view *cv, const afd_xcancel *c)
{
    const afd_view *v = cv->v;
    if (c->caught_flags & 1)
        return 1;
    for (uint32_t s = c->caught + 1; s < v->n_steps; s++)
        if (v->steps[s].task == c->target && v->steps[s].site != AFD_NOSTR)
            return 1;
    for (uint32_t i = 0; i < cv->n_waiters; i++)
        if (cv->waiters[i].task == c->target)
            return 1;
    return 0;
}

/* 1: caught and not re-raised; 2: asked for just after the target's last step (cancel() returned
 * False) while the caller's step was already scheduled; 0: neither. */
static int swallowed(const afd_cancel_view *cv, const afd_xcancel *c)
{
    const afd_view *v = cv->v;
    if (c->late)
        return 0;
    if (c->caught != AFD_NOPOS && c->caught < v->n_steps && !c->uncancelled && went_on(cv, c))
        return 1;
    uint32_t last = afd_cancel_view_last_step(cv, c->target);
    if ((c->flags & AFD_CANCEL_DONE) && afd_cancel_view_is_task(cv, c->canceller) && c->step < v->n_steps &&
        last != AFD_NOPOS && last < c->step && v->steps[c->step].origin != AFD_NOPOS &&
        v->steps[c->step].origin < last)
        return 2;
    return 0;
}

static int name_cancel_swallowed(cdec *d)
{
    const afd_cancel_view *cv = &d->cf;
    for (uint32_t i = 0; i < cv->n_cancels; i++) {
        const afd_xcancel *c = &cv->cancels[i];
        int how = swallowed(cv, c), in_pass = 0;
        if (!how)
            continue;
        for (uint32_t j = 0; j < d->cp.n_cancels && !in_pass; j++) {
            const afd_xcancel *g = &d->cp.cancels[j];
            in_pass = swallowed(&d->cp, g) == how && same_task(cv, c->target, &d->cp, g->target) &&
                      same_task(cv, c->canceller, &d->cp, g->canceller);
        }
        if (in_pass)
            continue;
        const char *t = task_label(cv, c->target);
        const char *dat = site(cv, c->delivered_at), *then = site(cv, c->caught_at);
        d->c->kind = AFD_CAUSE_CANCEL_SWALLOWED;
        afd_buf_printf(d->resource, "%s", t);
        afd_buf_printf(d->sentence, "cancel swallowed: ");
        put_canceller(d->sentence, cv, c);
        char claim[512];
        if (how == 1) {
            afd_buf_printf(d->await_site, "%s", dat ? dat : "");
            afd_buf_printf(d->sentence, " cancelled %s, which caught the CancelledError%s%s and ", t,
                           dat ? " at " : "", dat ? dat : "");
            if (c->caught_flags & 1)
                afd_buf_printf(d->sentence, "returned normally");
            else
                afd_buf_printf(d->sentence, "went on%s%s", then ? " (suspended again at " : "",
                               then ? then : "");
            afd_buf_printf(d->sentence,
                           "%s without re-raising it: the cancellation asked for never took effect",
                           then && !(c->caught_flags & 1) ? ")" : "");
            add_op(d, AFD_CAUSE_ACCESS_CANCEL, canceller_task(cv, c), "cancel", t, site(cv, c->timeout_site));
            add_op(d, AFD_CAUSE_ACCESS_CANCEL, t, "catch without re-raising", t, dat);
            snprintf(claim, sizeof claim,
                     "%.120s caught the CancelledError and went on (no re-raise, no uncancel())", t);
            afd_evidence_add(d->ev, claim,
                             c->caught_flags & 1 ? "returned normally" : "ran on after catching it",
                             "observed");
        } else {
            uint32_t before = AFD_NOSTR;
            for (uint32_t s = c->step; s-- > 0;)
                if (cv->v->steps[s].task == c->canceller) {
                    before = cv->v->steps[s].site;
                    break;
                }
            const char *at = site(cv, before);
            afd_buf_printf(d->await_site, "%s", at ? at : "");
            afd_buf_printf(d->sentence,
                           " cancelled %s just after its last step had finished it (cancel() returned False; "
                           "both were ready at once): the cancellation asked for never took effect",
                           t);
            add_op(d, AFD_CAUSE_ACCESS_CANCEL, canceller_task(cv, c), "cancel", t, at);
            add_op(d, AFD_CAUSE_ACCESS_CANCEL, t, "complete", t, NULL);
            snprintf(
                claim, sizeof claim,
                "%.120s had completed in a step that ran while the cancelling step was already scheduled", t);
            afd_evidence_add(d->ev, claim, "cancel() returned False", "observed");
        }
        pass_row(d, "the passing run's cancellation takes effect");
        replay_row(d, "the schedule that swallows the cancellation fails every time it is replayed");
        return 1;
    }
    return 0;
}

/* A deadlock with a wait-for cycle is a deadlock, whatever was cancelled on the way. */
static int has_wait_cycle(const afd_view *f)
{
    uint32_t tasks[16], labels[16];
    size_t len = 0;
    return (f->tr->flags & AFD_TRACE_DEADLOCK) && afd_view_wait_cycle(f, tasks, labels, 16, &len) > 0;
}

int afd_cause_cancel_name(const afd_cause_input *in, afd_cause *c, afd_evidence *ev, afd_buf *sentence,
                          afd_buf *resource, afd_buf *await_site)
{
    cdec d = {.in = in, .f = in->fail, .p = in->pass, .c = c, .ev = ev};
    d.sentence = sentence;
    d.resource = resource;
    d.await_site = await_site;
    int rc = afd_cancel_view_build(&d.cf, d.f);
    if (rc == 0 && d.p)
        rc = afd_cancel_view_build(&d.cp, d.p);
    int named = 0;
    if (rc == 0 && !afd_cancel_view_empty(&d.cf) && !has_wait_cycle(d.f))
        named = name_cancelled_handoff(&d) || name_lost_wakeup(&d) || name_cancel_ordering(&d) ||
                name_cancel_swallowed(&d);
    if (named && d.cf.truncated)
        afd_evidence_add(
            ev, "more cancellations or hand-offs than the analysis keeps: the later ones were not read",
            "in the minimal failing run", "observed");
    afd_cancel_view_finish(&d.cf);
    afd_cancel_view_finish(&d.cp);
    if (rc < 0)
        return rc;
    if (d.err)
        return d.err;
    return named;
}
