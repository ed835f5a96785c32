/* cause_cancel.c -- the causes that cancellations and hand-offs explain, decided from the facts
 * explain_cancel.c reads off the minimal failing run (and its nearest passing run).
 *
 * Four kinds, tried in this order, the first that holds named:
 *   cancelled_handoff  a task was handed X (a future it awaited was completed for it) and was
 *                      cancelled before it resumed, and never passed X on: X is lost. X is lost
 *                      when it was a plain future's result other than None a task handed over
 *                      (its only copy: an item, a connection, a grant), or when X is a primitive
 *                      still held by the cancelled waiter at the end. A plain future's X is named
 *                      by the state the completer took it from when the source says (handed_from).
 *                      Its queue shapes (cause_cancel_items.c): an item a cancelled task held and
 *                      never put back; a reply a cancelled task was owed, taken by the next taker.
 *   lost_wakeup        the run hung with tasks waiting for X that nobody holds, after a wake-up
 *                      for X went to a task that never took X (cancelled, or woke and left) and
 *                      never passed it on (a future's None result is such a wake-up: it hands
 *                      nothing but "you may go now"); or after the wake-ups at the await they wait
 *                      at stopped with a task cancelled while it waited there.
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
#include "cause_cancel_impl.h"
#include "cause_impl.h"
#include "explain_cancel.h"
#include "trace.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *cc_task_label(const afd_cancel_view *cv, uint32_t task)
{
    return task ? afd_trace_task_label(cv->v->tr, task) : "code outside any task";
}

const char *cc_string(const afd_cancel_view *cv, uint32_t id)
{
    return afd_trace_string(cv->v->tr, id);
}

const char *cc_site(const afd_cancel_view *cv, uint32_t id)
{
    return afd_trace_known(cv->v->tr, id);
}

/* Two string ids of two traces name the same place or thing. */
int cc_same_str(const afd_cancel_view *a, uint32_t x, const afd_cancel_view *b, uint32_t y)
{
    return x != AFD_NOSTR && y != AFD_NOSTR && strcmp(cc_string(a, x), cc_string(b, y)) == 0;
}

int cc_same_task(const afd_cancel_view *a, uint32_t x, const afd_cancel_view *b, uint32_t y)
{
    return strcmp(cc_task_label(a, x), cc_task_label(b, y)) == 0;
}

static char *dup_or_null(cdec *d, const char *s)
{
    char *copy = s ? strdup(s) : NULL;
    if (s && !copy)
        d->err = AFD_ENOMEM;
    return copy;
}

void cc_add_op(cdec *d, afd_cause_access access, const char *task, const char *operation,
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
uint32_t cc_ordinal(const afd_view *v, uint32_t pos)
{
    return pos < v->n_steps ? v->steps[pos].ordinal : 0;
}

/* Who asked for a cancel, in words: "wait_for (pool.py:40)", "asyncio.timeout", "main#0". */
void cc_put_canceller(afd_buf *b, const afd_cancel_view *cv, const afd_xcancel *c)
{
    if (!c) {
        afd_buf_printf(b, "a cancel() the trace does not name");
        return;
    }
    if (c->flags & AFD_CANCEL_TIMEOUT) {
        const char *at = cc_site(cv, c->timeout_site);
        afd_buf_printf(b, "%s",
                       (c->timeout_flags & AFD_TIMEOUT_WAIT_FOR)  ? "wait_for"
                       : (c->timeout_flags & AFD_TIMEOUT_CONTEXT) ? "asyncio.timeout"
                                                                  : "a timeout");
        if (at)
            afd_buf_printf(b, " (%s)", at);
        return;
    }
    afd_buf_printf(b, "%s", cc_task_label(cv, c->canceller));
}

/* The canceller as an operation's task: the task that called cancel(), or the timeout. */
const char *cc_canceller_task(const afd_cancel_view *cv, const afd_xcancel *c)
{
    if (c->flags & AFD_CANCEL_TIMEOUT)
        return (c->timeout_flags & AFD_TIMEOUT_CONTEXT) ? "asyncio.timeout" : "wait_for";
    return cc_task_label(cv, c->canceller);
}

/* The row every kind ends with: the failing schedule replayed. */
void cc_replay_row(cdec *d, const char *claim)
{
    char buf[96];
    const afd_cause_input *in = d->in;
    snprintf(buf, sizeof buf, "%" PRIu64 "/%" PRIu64 " failed", in->k_fail, in->n_fail);
    afd_evidence_add(d->ev, claim, buf, in->n_fail && in->k_fail == in->n_fail ? "confirmed" : "weaker");
}

void cc_pass_row(cdec *d, const char *claim)
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
    /* A plain future's result, handed over by a task, is the only copy of it, unless the result was
     * None: then what was handed was only "you may go now", and what the waiter was to take (a slot,
     * a permit) stays with the waker's own state. Losing that is a lost wake-up when others then
     * wait forever (lost_wakeup below), not a lost value. */
    if (!h->object)
        return h->by_task && !(h->flags & AFD_HANDOFF_NONE);
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

/* The function of a chain's innermost frame into out ("" for no chain: a lone frame). */
static void innermost_function(const afd_trace *tr, uint32_t chain, char *out, size_t cap)
{
    afd_xframe *fr = malloc(AFD_CHAIN_MAX_FRAMES * sizeof *fr);
    size_t n = fr ? afd_view_chain(tr, chain, fr, AFD_CHAIN_MAX_FRAMES) : 0;
    snprintf(out, cap, "%s", n ? fr[n - 1].function : "");
    free(fr);
}

/* What a plain future's result was taken from, a heuristic: a completer hands a value over by
 * updating shared state (it pops the value from a deque, appends a new connection to the pool's
 * list, marks a lock free) and then completes the future with it. Of the completer's writes in the
 * completing step, in the function that completed the future (the frame of the step's last traced
 * line before the HANDOFF event), the one at the greatest line before that line names the state
 * the handed value came from: an index into the view's accesses, with the completing line in
 * *line, or AFD_NOPOS when the step traced no line there or wrote nothing before it. */
static uint32_t handed_from(const cdec *d, const afd_xhandoff *h, uint32_t *line)
{
    const afd_view *f = d->f;
    const afd_trace *tr = f->tr;
    uint32_t li = AFD_NOPOS, best = AFD_NOPOS;
    if (h->object || h->step >= f->n_steps || h->event >= tr->n_events)
        return AFD_NOPOS;
    for (uint32_t i = h->event; i-- > 0 && li == AFD_NOPOS;) {
        const afd_event *e = &tr->events[i];
        if (e->kind == AFD_EV_STEP || e->kind == AFD_EV_WAKE)
            break;
        if (e->kind == AFD_EV_LINE && e->task == h->completer)
            li = i;
    }
    if (li == AFD_NOPOS)
        return AFD_NOPOS;
    const afd_event *l = &tr->events[li], *ch = li + 1 < tr->n_events ? &tr->events[li + 1] : NULL;
    const char *file = afd_trace_string(tr, l->a);
    char fn[128], afn[128];
    innermost_function(tr, ch && ch->kind == AFD_EV_CHAIN && ch->task == h->completer ? ch->a : AFD_NOSTR, fn,
                       sizeof fn);
    for (uint32_t i = 0; i < f->n_acc; i++) {
        const afd_xaccess *a = &f->acc[i];
        if (a->step != h->step || a->task != h->completer || !a->write || !a->file || !a->line ||
            a->line >= l->b || strcmp(a->file, file) != 0 ||
            (best != AFD_NOPOS && a->line < f->acc[best].line))
            continue;
        innermost_function(tr, a->chain, afn, sizeof afn);
        if (strcmp(afn, fn) == 0)
            best = i;
    }
    *line = l->b;
    return best;
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
            in_pass = handoff_lost(&d->cp, g) && cc_same_task(cv, h->waiter, &d->cp, g->waiter) &&
                      cc_same_str(cv, h->label, &d->cp, g->label);
        }
        if (in_pass)
            continue;
        const afd_xcancel *c = handoff_cancel(cv, h);
        uint32_t set_line = 0, from = handed_from(d, h, &set_line);
        const afd_xaccess *src = from != AFD_NOPOS ? &d->f->acc[from] : NULL;
        const char *fut = cc_string(cv, h->label), *x = src ? src->resource : fut;
        const char *w = cc_task_label(cv, h->waiter), *k = cc_task_label(cv, h->completer);
        const char *at =
            cc_site(cv, h->delivered_at) ? cc_site(cv, h->delivered_at) : cc_site(cv, h->waited_at);
        d->c->kind = AFD_CAUSE_CANCELLED_HANDOFF;
        afd_buf_printf(d->resource, "%s", x);
        afd_buf_printf(d->await_site, "%s", at ? at : "");
        if (src)
            afd_buf_printf(
                d->sentence,
                "cancelled hand-off of %s: %s was handed what %s handed over through it (the result of %s, "
                "by %s at %s:%" PRIu32 ") and cancelled by ",
                x, w, k, fut, handoff_how(h), src->file, set_line);
        else
            afd_buf_printf(d->sentence,
                           "cancelled hand-off of %s: %s was handed %s by %s in %s and cancelled by ", x, w,
                           x, handoff_how(h), k);
        cc_put_canceller(d->sentence, cv, c);
        afd_buf_printf(d->sentence, " before it resumed%s%s: ", at ? " at " : "", at ? at : "");
        if (h->object)
            afd_buf_printf(d->sentence, "%s stays held by %s, which never releases it", x, w);
        else
            afd_buf_printf(d->sentence, "what it was handed is lost (%s never passed it on)", w);
        cc_add_op(d, AFD_CAUSE_ACCESS_HANDOFF, k, handoff_how(h), x, NULL);
        if (c)
            cc_add_op(d, AFD_CAUSE_ACCESS_CANCEL, cc_canceller_task(cv, c), "cancel", w,
                      cc_site(cv, c->timeout_site));
        cc_add_op(d, AFD_CAUSE_ACCESS_HANDOFF, w, "resume into CancelledError", x, at);
        char claim[640], measured[256];
        snprintf(claim, sizeof claim, "%.120s was handed %.200s by %.120s and cancelled before it resumed", w,
                 x, k);
        snprintf(measured, sizeof measured, "handed in %.60s step %" PRIu32 "%s", k,
                 cc_ordinal(d->f, h->step),
                 h->resume_cancelled ? "; resumed into CancelledError" : "; never resumed");
        afd_evidence_add(d->ev, claim, measured, "observed");
        snprintf(claim, sizeof claim, "%.120s never passed %.200s on (no later hand-off or release of it)", w,
                 x);
        afd_evidence_add(d->ev, claim, "in the minimal failing run", "observed");
        if (src) {
            snprintf(claim, sizeof claim,
                     "what was handed came from %.120s: the completing function wrote it at %.150s:%" PRIu32
                     " just before it completed %.150s at line %" PRIu32,
                     x, src->file, src->line, fut, set_line);
            snprintf(measured, sizeof measured, "in %.60s step %" PRIu32, k, cc_ordinal(d->f, h->step));
            afd_evidence_add(d->ev, claim, measured, "inferred");
        }
        if (h->object) {
            snprintf(claim, sizeof claim, "at the end, tasks wait for %.200s held by %.120s", x, w);
            afd_evidence_add(d->ev, claim, "in the minimal failing run", "observed");
        }
        cc_pass_row(d, "the passing run loses no hand-off of it");
        cc_replay_row(d, "the schedule that loses the hand-off fails every time it is replayed");
        return 1;
    }
    return cc_name_item_lost(d) || cc_name_reply_taken(d);
}

/* ---- lost_wakeup ---- */

/* A waiter at the end that waits for the thing h woke its task for, which nobody holds. */
static int stuck_on(const afd_cancel_view *cv, const afd_xhandoff *h, const afd_xwaiter *w)
{
    if (w->holder || w->task == h->waiter)
        return 0;
    if (h->object)
        return w->object == h->object;
    return !w->object && cc_same_str(cv, w->site, cv, h->waited_at);
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
            (h->object ? w->object == h->object : cc_same_str(cv, w->site, cv, h->waited_at)))
            return 0; /* it still waits for it itself: it did not leave */
    }
    for (uint32_t i = 0; i < cv->n_waiters; i++)
        if (stuck_on(cv, h, &cv->waiters[i]))
            return 1;
    return 0;
}

static int name_wakeup_chain_broken(cdec *d);

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
        const char *x = cc_string(cv, h->label), *w = cc_task_label(cv, h->waiter),
                   *k = cc_task_label(cv, h->completer);
        const char *at = cc_site(cv, h->waited_at) ? cc_site(cv, h->waited_at) : cc_site(cv, h->delivered_at);
        d->c->kind = AFD_CAUSE_LOST_WAKEUP;
        afd_buf_printf(d->resource, "%s", x);
        afd_buf_printf(d->await_site, "%s", at ? at : "");
        afd_buf_printf(d->sentence, "lost wake-up on %s: %s%s%s%s was woken for it by %s in %s and ", x, w,
                       at ? ", waiting at " : "", at ? at : "", at ? "," : "", handoff_how(h), k);
        if (cancelled) {
            afd_buf_printf(d->sentence, "cancelled by ");
            cc_put_canceller(d->sentence, cv, c);
        } else {
            afd_buf_printf(d->sentence, "left");
        }
        afd_buf_printf(d->sentence, " without taking it or waking another; ");
        uint32_t n = 0;
        cc_add_op(d, AFD_CAUSE_ACCESS_HANDOFF, k, handoff_how(h), x, NULL);
        if (c)
            cc_add_op(d, AFD_CAUSE_ACCESS_CANCEL, cc_canceller_task(cv, c), "cancel", w,
                      cc_site(cv, c->timeout_site));
        cc_add_op(d, AFD_CAUSE_ACCESS_HANDOFF, w,
                  cancelled ? "resume into CancelledError" : "resume without taking it", x, at);
        for (uint32_t j = 0; j < cv->n_waiters; j++) {
            const afd_xwaiter *s = &cv->waiters[j];
            if (!stuck_on(cv, h, s))
                continue;
            if (n < 3)
                afd_buf_printf(d->sentence, "%s%s", n ? ", " : "", cc_task_label(cv, s->task));
            n++;
            cc_add_op(d, AFD_CAUSE_ACCESS_WAIT, cc_task_label(cv, s->task), "wait", x, NULL);
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
        snprintf(measured, sizeof measured, "woken in %.60s step %" PRIu32 "%s", k, cc_ordinal(d->f, h->step),
                 cancelled ? "; resumed into CancelledError" : "; resumed and left");
        afd_evidence_add(d->ev, claim, measured, "observed");
        snprintf(claim, sizeof claim, "%.120s woke no other waiter (no later hand-off or release of it)", w);
        afd_evidence_add(d->ev, claim, "in the minimal failing run", "observed");
        return 1;
    }
    return name_wakeup_chain_broken(d);
}

/* The last hand-off, before view position `before`, to a task waiting at await `at`: the wake-ups
 * that await receives (index into handoffs), or AFD_NOPOS. With `before` AFD_NOPOS, whether any
 * hand-off after position `after` went to a waiter there. */
static uint32_t wakeup_at(const afd_cancel_view *cv, uint32_t at, uint32_t after, uint32_t before)
{
    uint32_t found = AFD_NOPOS;
    for (uint32_t i = 0; i < cv->n_handoffs; i++) {
        const afd_xhandoff *h = &cv->handoffs[i];
        if (h->late || h->step == AFD_NOPOS || !cc_same_str(cv, h->waited_at, cv, at))
            continue;
        if ((after == AFD_NOPOS || h->step > after) && (before == AFD_NOPOS || h->step < before))
            found = i;
    }
    return found;
}

/* The second shape of a lost wake-up: the wake-up a cancelled waiter was owed, never passed on.
 * The run hung with tasks waiting at an await nobody will wake; the wake-ups that await received
 * (hand-offs to tasks suspended there) went from task to task until a task waiting there was
 * cancelled, and there they stop: no hand-off reaches that await after the cancel, and the
 * cancelled task, which no longer waits there, woke nobody. Whether the waker skipped the
 * cancelled waiter's future, or woke it and the cancel consumed the wake-up, the wake-up is gone
 * with the task that was cancelled. A run where the await was never woken at all is not this (the
 * wake-up mechanism never ran: nothing was lost, it was missing). */
static int name_wakeup_chain_broken(cdec *d)
{
    const afd_cancel_view *cv = &d->cf;
    for (uint32_t i = 0; i < cv->n_cancels; i++) {
        const afd_xcancel *c = &cv->cancels[i];
        uint32_t at = c->delivered_at, after = c->step != AFD_NOPOS ? c->step : c->delivered;
        if (c->late || c->delivered == AFD_NOPOS || !cc_site(cv, at) || after == AFD_NOPOS)
            continue;
        uint32_t n = 0, left = 1;
        for (uint32_t j = 0; j < cv->n_waiters; j++) {
            const afd_xwaiter *s = &cv->waiters[j];
            if (s->task == c->target && cc_same_str(cv, s->site, cv, at))
                left = 0; /* it still waits there itself: it did not leave */
            n += s->task != c->target && !s->holder && cc_same_str(cv, s->site, cv, at);
        }
        uint32_t prior = wakeup_at(cv, at, AFD_NOPOS, after);
        if (!left || !n || prior == AFD_NOPOS || wakeup_at(cv, at, after, AFD_NOPOS) != AFD_NOPOS)
            continue;
        const char *x = cc_string(cv, cv->handoffs[prior].label), *w = cc_task_label(cv, c->target);
        const char *a = cc_site(cv, at);
        d->c->kind = AFD_CAUSE_LOST_WAKEUP;
        afd_buf_printf(d->resource, "%s", x);
        afd_buf_printf(d->await_site, "%s", a);
        afd_buf_printf(d->sentence, "lost wake-up on %s: %s, waiting for it at %s, was cancelled by ", x, w,
                       a);
        cc_put_canceller(d->sentence, cv, c);
        afd_buf_printf(d->sentence,
                       " and left without taking it or waking another; no wake-up reaches %s after "
                       "that: ",
                       a);
        cc_add_op(d, AFD_CAUSE_ACCESS_CANCEL, cc_canceller_task(cv, c), "cancel", w,
                  cc_site(cv, c->timeout_site));
        cc_add_op(d, AFD_CAUSE_ACCESS_HANDOFF, w, "resume into CancelledError", x, a);
        uint32_t k = 0;
        for (uint32_t j = 0; j < cv->n_waiters; j++) {
            const afd_xwaiter *s = &cv->waiters[j];
            if (s->task == c->target || s->holder || !cc_same_str(cv, s->site, cv, at))
                continue;
            if (k < 3)
                afd_buf_printf(d->sentence, "%s%s", k ? ", " : "", cc_task_label(cv, s->task));
            k++;
            cc_add_op(d, AFD_CAUSE_ACCESS_WAIT, cc_task_label(cv, s->task), "wait", x, a);
        }
        if (n > 3)
            afd_buf_printf(d->sentence, " and %" PRIu32 " more", n - 3);
        afd_buf_printf(d->sentence, " wait%s for it forever", n == 1 ? "s" : "");
        char claim[512], measured[256];
        snprintf(claim, sizeof claim, "the run hung: tasks wait at %.200s, which nothing wakes", a);
        snprintf(measured, sizeof measured, "%" PRIu32 " waiting; %" PRIu64 "/%" PRIu64 " hung", n,
                 d->in->k_fail, d->in->n_fail);
        afd_evidence_add(d->ev, claim, measured,
                         d->in->n_fail && d->in->k_fail == d->in->n_fail ? "confirmed" : "weaker");
        snprintf(claim, sizeof claim,
                 "wake-ups of %.200s went from task to task until %.120s was cancelled there", x, w);
        snprintf(measured, sizeof measured, "the last in %.60s step %" PRIu32 "; none after the cancel",
                 cc_task_label(cv, cv->handoffs[prior].completer),
                 cc_ordinal(d->f, cv->handoffs[prior].step));
        afd_evidence_add(d->ev, claim, measured, "observed");
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

/* Whether read r, made in the step that called cancel(), came after the cancel() call: an
 * operation or a traced line of it among the step's events after the CANCEL event. */
static int read_after_cancel(const afd_trace *tr, const afd_xcancel *c, const afd_xaccess *r)
{
    for (uint32_t i = c->event + 1; i < tr->n_events && tr->events[i].kind != AFD_EV_STEP; i++) {
        const afd_event *e = &tr->events[i];
        if (e->task != r->task)
            continue;
        if (r->inferred && e->kind == AFD_EV_LINE && e->b == r->line && r->file &&
            strcmp(afd_trace_string(tr, e->a), r->file) == 0)
            return 1;
        if (!r->inferred && (e->kind == AFD_EV_OP_BEGIN || e->kind == AFD_EV_SYNC) &&
            strcmp(afd_trace_string(tr, e->b), r->resource) == 0)
            return 1;
    }
    return 0;
}

/* The first read by the caller, after the cancel, of what the cancelled task's cleanup writes
 * after it. The read may come in a later step of the caller, or in the very step that called
 * cancel(), after the call (a wait_for that cancels its inner task and raises TimeoutError hands
 * control straight back to the code that reads). Writes the pair's access indices; 1 when there
 * is one. */
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
            if (r->task != caller || r->write || !afd_view_resources_overlap(r->resource, w->resource))
                continue;
            if (r->step > after ||
                (r->step == c->step && c->step != AFD_NOPOS && read_after_cancel(f->tr, c, r))) {
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
        const char *t = cc_task_label(cv, c->target), *k = cc_task_label(cv, caller);
        const char *dat = cc_site(cv, c->delivered_at);
        uint32_t resumed_at = AFD_NOSTR;
        for (uint32_t s = r->step; s-- > 0;)
            if (f->steps[s].task == caller) {
                resumed_at = f->steps[s].site;
                break;
            }
        const char *at = cc_site(cv, resumed_at);
        d->c->kind = AFD_CAUSE_CANCEL_ORDERING;
        afd_buf_printf(d->resource, "%s", w->resource);
        afd_buf_printf(d->await_site, "%s", at ? at : dat ? dat : "");
        afd_buf_printf(d->sentence, "cancel ordering on %s: %s ", w->resource, k);
        if (c->canceller == caller && !(c->flags & AFD_CANCEL_TIMEOUT))
            afd_buf_printf(d->sentence, "cancelled %s", t);
        else {
            afd_buf_printf(d->sentence, "saw %s cancelled by ", t);
            cc_put_canceller(d->sentence, cv, c);
        }
        afd_buf_printf(d->sentence,
                       ", resumed%s%s and read it before %s's cleanup after the CancelledError%s%s wrote "
                       "it: the caller went on before the cancelled task finished cleaning up",
                       at ? " at " : "", at ? at : "", t, dat ? " at " : "", dat ? dat : "");
        cc_add_op(d, AFD_CAUSE_ACCESS_CANCEL, cc_canceller_task(cv, c), "cancel", t,
                  cc_site(cv, c->timeout_site));
        add_access(d, r);
        add_access(d, w);
        char claim[512], measured[256];
        snprintf(claim, sizeof claim,
                 "%.120s read %.200s after %.120s was cancelled and before its cleanup wrote it", k,
                 w->resource, t);
        snprintf(measured, sizeof measured,
                 "read in %.60s step %" PRIu32 ", cleanup write in %.60s step %" PRIu32, k,
                 cc_ordinal(f, r->step), t, cc_ordinal(f, w->step));
        afd_evidence_add(d->ev, claim, measured, "observed");
        if (reversed)
            cc_pass_row(d, "the passing run reads it after the cleanup wrote it");
        cc_replay_row(d, "the schedule that reads before the cleanup fails every time it is replayed");
        return 1;
    }
    return 0;
}

/* ---- cancel_swallowed ---- */

/* Whether the target went on after catching: it returned normally from the delivering step, ran
 * a later step that suspended again (not only finished), or still waited at the end. */
int cc_went_on(const afd_cancel_view *cv, const afd_xcancel *c)
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
    if (c->caught != AFD_NOPOS && c->caught < v->n_steps && !c->uncancelled && cc_went_on(cv, c))
        return 1;
    uint32_t last = afd_cancel_view_last_step(cv, c->target);
    if ((c->flags & AFD_CANCEL_DONE) && afd_cancel_view_is_task(cv, c->canceller) && c->step < v->n_steps &&
        last != AFD_NOPOS && last < c->step && v->steps[c->step].origin != AFD_NOPOS &&
        v->steps[c->step].origin < last)
        return 2;
    return 0;
}

/* A cancelled task as the resource of its cancellation: its handle, Task@ the user line that
 * created it (where the user finds the task in the code: the attribute or variable it is stored in
 * is on that line), or its label when the trace ran without line events. */
static void put_task_handle(afd_buf *b, const afd_cancel_view *cv, uint32_t task)
{
    uint32_t file = AFD_NOSTR, line = 0;
    if (afd_cancel_view_made_at(cv, task, &file, &line))
        afd_buf_printf(b, "Task@%s:%" PRIu32, cc_string(cv, file), line);
    else
        afd_buf_printf(b, "%s", cc_task_label(cv, task));
}

/* Whether two frames are the same frame of a stack: the same file and, when both name it, the
 * same function. */
static int same_frame(const afd_xframe *x, const afd_xframe *y)
{
    return strcmp(x->file, y->file) == 0 &&
           (!x->function[0] || !y->function[0] || !strcmp(x->function, y->function));
}

/* One frame from a "file:line" site (a lone user frame, whose function the trace does not name). */
size_t cc_site_frame(const char *s, afd_xframe *out)
{
    const char *colon = s ? strrchr(s, ':') : NULL;
    if (!colon || (size_t)(colon - s) >= sizeof out->file)
        return 0;
    memset(out, 0, sizeof *out);
    memcpy(out->file, s, (size_t)(colon - s));
    out->line = (uint32_t)strtoul(colon + 1, NULL, 10);
    return 1;
}

/* The await that caught a cancellation, written into `out` as "file:line". The CancelledError is
 * thrown at the innermost await of the delivery's chain and unwinds frames until one catches it;
 * the frame that caught it is the deepest one of that chain still on the task's stack when the
 * task next suspends (the same frames, outermost first, as that suspension's chain), and its
 * await in the delivery's chain is the one that caught it. With no chain (one user frame) it is
 * the await the error was thrown at; when the task returned, its outermost user frame's. */
static void catching_await(const cdec *d, const afd_xcancel *c, char *out, size_t cap)
{
    const afd_cancel_view *cv = &d->cf;
    const afd_trace *tr = cv->v->tr;
    const char *dat = cc_site(cv, c->delivered_at);
    afd_xframe *fr = malloc(2 * AFD_CHAIN_MAX_FRAMES * sizeof *fr);
    size_t n = fr ? afd_view_chain(tr, c->delivered_chain, fr, AFD_CHAIN_MAX_FRAMES) : 0;
    snprintf(out, cap, "%s", dat ? dat : "");
    if (n) {
        afd_xframe *next = fr + AFD_CHAIN_MAX_FRAMES;
        size_t m = 0, depth = 0;
        if (c->caught < cv->v->n_steps && c->caught_at != AFD_NOSTR) {
            m = afd_view_chain(tr, cv->v->steps[c->caught].chain, next, AFD_CHAIN_MAX_FRAMES);
            if (!m)
                m = cc_site_frame(cc_site(cv, c->caught_at), next);
        }
        while (depth + 1 < n && depth + 1 < m && same_frame(&fr[depth + 1], &next[depth + 1]))
            depth++;
        snprintf(out, cap, "%s:%" PRIu32, fr[depth].file, fr[depth].line);
    }
    free(fr);
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
            in_pass = swallowed(&d->cp, g) == how && cc_same_task(cv, c->target, &d->cp, g->target) &&
                      cc_same_task(cv, c->canceller, &d->cp, g->canceller);
        }
        if (in_pass)
            continue;
        const char *t = cc_task_label(cv, c->target);
        const char *dat = cc_site(cv, c->delivered_at), *then = cc_site(cv, c->caught_at);
        d->c->kind = AFD_CAUSE_CANCEL_SWALLOWED;
        put_task_handle(d->resource, cv, c->target);
        afd_buf_printf(d->sentence, "cancel swallowed: ");
        cc_put_canceller(d->sentence, cv, c);
        char claim[512];
        if (how == 1) {
            char caught[640];
            catching_await(d, c, caught, sizeof caught);
            afd_buf_printf(d->await_site, "%s", caught);
            afd_buf_printf(d->sentence, " cancelled %s, which caught the CancelledError%s%s", t,
                           caught[0] ? " at " : "", caught);
            if (dat && strcmp(dat, caught) != 0)
                afd_buf_printf(d->sentence, " (thrown at %s)", dat);
            afd_buf_printf(d->sentence, " and ");
            if (c->caught_flags & 1)
                afd_buf_printf(d->sentence, "returned normally");
            else
                afd_buf_printf(d->sentence, "went on%s%s", then ? " (suspended again at " : "",
                               then ? then : "");
            afd_buf_printf(d->sentence,
                           "%s without re-raising it: the cancellation asked for never took effect",
                           then && !(c->caught_flags & 1) ? ")" : "");
            cc_add_op(d, AFD_CAUSE_ACCESS_CANCEL, cc_canceller_task(cv, c), "cancel", t,
                      cc_site(cv, c->timeout_site));
            cc_add_op(d, AFD_CAUSE_ACCESS_CANCEL, t, "catch without re-raising", t,
                      caught[0] ? caught : NULL);
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
            const char *at = cc_site(cv, before);
            afd_buf_printf(d->await_site, "%s", at ? at : "");
            afd_buf_printf(d->sentence,
                           " cancelled %s just after its last step had finished it (cancel() returned False; "
                           "both were ready at once): the cancellation asked for never took effect",
                           t);
            cc_add_op(d, AFD_CAUSE_ACCESS_CANCEL, cc_canceller_task(cv, c), "cancel", t, at);
            cc_add_op(d, AFD_CAUSE_ACCESS_CANCEL, t, "complete", t, NULL);
            snprintf(
                claim, sizeof claim,
                "%.120s had completed in a step that ran while the cancelling step was already scheduled", t);
            afd_evidence_add(d->ev, claim, "cancel() returned False", "observed");
        }
        cc_pass_row(d, "the passing run's cancellation takes effect");
        cc_replay_row(d, "the schedule that swallows the cancellation fails every time it is replayed");
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
