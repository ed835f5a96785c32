/* cause_cancel_items.c -- the cancelled hand-offs of a queue's items (see cause_cancel.c for the
 * kinds and their order): an item a task got and lost when it was cancelled holding it, and a
 * reply a cancelled task was owed that the queue's next taker got instead.
 *
 * Both read the facts explain_cancel.c keeps (a cancel's delivery, the item its target held) and
 * the trace's SYNC events of queues; a reply's item is followed by its position in the queue
 * (items leave an asyncio.Queue in the order they entered). Workload: two passes over the trace's
 * events per cancellation looked at, and per put into the queue a walk up the chain of steps that
 * scheduled one another, at most DESCENT_MAX steps. */
#include "afd.h"
#include "cause_cancel_impl.h"
#include "explain_cancel.h"
#include "trace.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The second shape of a cancelled hand-off: an item got from a queue and lost with the task that
 * held it. The task got an item (its latest get() from the queue, not followed by a put() of its
 * own into it), then a CancelledError reached it and took effect (it was not caught to go on),
 * and it never put the item back: nobody else can reach the item, which is as lost as a hand-off
 * cancelled before its waiter resumed. */
static int item_lost(const afd_cancel_view *cv, const afd_xcancel *c)
{
    return !c->late && c->delivered != AFD_NOPOS && c->held_object && !c->held_put_back &&
           !(c->caught != AFD_NOPOS && c->caught < cv->v->n_steps && cc_went_on(cv, c));
}

/* Where the holder of a lost item got it, as a frame: the traced line the get ran on (its
 * function unknown), else the innermost frame of the get's chain, else the await the get's step
 * had resumed from (a get right where a step resumes runs on a line traced in an earlier step).
 * 0 when the trace says none of these. */
static int got_frame(const cdec *d, const afd_xcancel *c, afd_xframe *out)
{
    const afd_cancel_view *cv = &d->cf;
    const char *file = cc_site(cv, c->held_file);
    memset(out, 0, sizeof *out);
    if (file && c->held_line) {
        snprintf(out->file, sizeof out->file, "%s", file);
        out->line = c->held_line;
        return 1;
    }
    afd_xframe *fr = malloc(AFD_CHAIN_MAX_FRAMES * sizeof *fr);
    size_t n = fr ? afd_view_chain(cv->v->tr, c->held_chain, fr, AFD_CHAIN_MAX_FRAMES) : 0;
    if (n)
        *out = fr[n - 1];
    free(fr);
    return n ? 1 : cc_site_frame(cc_site(cv, c->held_site), out) > 0;
}

/* Where the holder of a lost item was cancelled, in the frame that got the item: of the delivery's
 * chain, the deepest frame of the get's function when the get's chain names it, else the frame in
 * the get's file at the smallest line at or after the get's (the frame that got the item has
 * moved on from the get but not out of its function; frames of other functions in that file lie
 * wholly before or after it), else the await the error was thrown at. */
static void holding_await(const cdec *d, const afd_xcancel *c, const afd_xframe *got, char *out, size_t cap)
{
    const afd_cancel_view *cv = &d->cf;
    const char *dat = cc_site(cv, c->delivered_at);
    snprintf(out, cap, "%s", dat ? dat : "");
    afd_xframe *fr = got->line ? malloc(AFD_CHAIN_MAX_FRAMES * sizeof *fr) : NULL;
    size_t n = fr ? afd_view_chain(cv->v->tr, c->delivered_chain, fr, AFD_CHAIN_MAX_FRAMES) : 0, best = n;
    for (size_t i = 0; got->function[0] && i < n; i++)
        if (strcmp(fr[i].file, got->file) == 0 && strcmp(fr[i].function, got->function) == 0)
            best = i;
    int by_function = best < n;
    for (size_t i = 0; !by_function && i < n; i++)
        if (strcmp(fr[i].file, got->file) == 0 && fr[i].line >= got->line &&
            (best == n || fr[i].line < fr[best].line))
            best = i;
    if (best < n)
        snprintf(out, cap, "%s:%" PRIu32, fr[best].file, fr[best].line);
    free(fr);
}

int cc_name_item_lost(cdec *d)
{
    const afd_cancel_view *cv = &d->cf;
    for (uint32_t i = 0; i < cv->n_cancels; i++) {
        const afd_xcancel *c = &cv->cancels[i];
        if (!item_lost(cv, c))
            continue;
        int in_pass = 0;
        for (uint32_t j = 0; j < d->cp.n_cancels && !in_pass; j++) {
            const afd_xcancel *g = &d->cp.cancels[j];
            in_pass = item_lost(&d->cp, g) && cc_same_task(cv, c->target, &d->cp, g->target) &&
                      cc_same_str(cv, c->held_label, &d->cp, g->held_label);
        }
        if (in_pass)
            continue;
        char at[640], got[600];
        afd_xframe gf;
        int got_known = got_frame(d, c, &gf);
        holding_await(d, c, &gf, at, sizeof at);
        snprintf(got, sizeof got, "%s:%" PRIu32, gf.file, gf.line);
        const char *x = cc_string(cv, c->held_label), *w = cc_task_label(cv, c->target);
        d->c->kind = AFD_CAUSE_CANCELLED_HANDOFF;
        afd_buf_printf(d->resource, "%s", x);
        afd_buf_printf(d->await_site, "%s", at);
        afd_buf_printf(d->sentence,
                       "cancelled hand-off of an item of %s: %s got it%s%s and was cancelled by ", x, w,
                       got_known ? " at " : "", got_known ? got : "");
        cc_put_canceller(d->sentence, cv, c);
        afd_buf_printf(d->sentence,
                       "%s%s while it held it: it never put it back or passed it on, so the item is lost",
                       at[0] ? " at " : "", at);
        cc_add_op(d, AFD_CAUSE_ACCESS_HANDOFF, w, "get()", x, got_known ? got : NULL);
        cc_add_op(d, AFD_CAUSE_ACCESS_CANCEL, cc_canceller_task(cv, c), "cancel", w,
                  cc_site(cv, c->timeout_site));
        cc_add_op(d, AFD_CAUSE_ACCESS_HANDOFF, w, "resume into CancelledError", x, at[0] ? at : NULL);
        char claim[512];
        snprintf(claim, sizeof claim, "%.120s got an item of %.200s and was cancelled before it put it back",
                 w, x);
        afd_evidence_add(d->ev, claim, "in the minimal failing run", "observed");
        cc_pass_row(d, "the passing run loses no item of it");
        cc_replay_row(d, "the schedule that loses the item fails every time it is replayed");
        return 1;
    }
    return 0;
}

/* ---- a reply taken by the next taker ---- */

/* The third shape of a cancelled hand-off: a reply owed to a cancelled task, taken by the next
 * taker. Task T, in the step where it last suspended before the CancelledError reached it, asked
 * for something and waited for it on a queue: its last operation on the queue in that step was
 * the empty() check get() makes before it waits. A put into that queue later came from that step
 * (the putting step descends from it through the steps that scheduled one another: T created the
 * task that answers, or woke it), so the item is the reply T was owed. T was cancelled before it
 * took it, and the get that took the item (the k-th get takes the k-th put: an asyncio.Queue is
 * first in, first out; a LifoQueue or PriorityQueue is not read so) was another task's, or T's own
 * after the cancellation reached it: the next request got the reply meant for the cancelled one. A
 * reply still in the queue at the end, or one T took itself before it was cancelled, is not this. */
typedef struct reply {
    uint32_t queue, label;    /* the queue's object number and label */
    uint32_t wait;            /* T's step that asked and waited (view position) */
    uint32_t child;           /* the step it scheduled that leads to the put (its first step) */
    uint32_t put, put_task;   /* the put of the reply */
    uint32_t take, take_task; /* the get that took it */
    uint32_t request_chain;   /* the chain of the line that created the answering task, or AFD_NOSTR */
    uint32_t request_file, request_line; /* that line (AFD_NOSTR, 0: not traced) */
} reply;

/* The trace's events of view position pos: [*first, *end), end the index of its STEP event. */
static int step_events(const afd_trace *tr, uint32_t pos, uint32_t *first, uint32_t *end)
{
    uint32_t seen = 0;
    *first = 0;
    for (uint32_t i = 0; i < tr->n_events; i++) {
        if (tr->events[i].kind != AFD_EV_STEP)
            continue;
        if (seen == pos) {
            *end = i;
            return 1;
        }
        seen++;
        *first = i + 1;
    }
    return 0;
}

static int is_queue_op(const afd_event *e)
{
    return e->kind == AFD_EV_SYNC && (e->flags == AFD_SYNC_QUEUE_GET || e->flags == AFD_SYNC_QUEUE_PUT ||
                                      e->flags == AFD_SYNC_QUEUE_CHECK);
}

/* Steps a descent walks up at most: a put many steps of other work away from the asking step is not
 * its answer, and each put looked at costs at most this many hops. */
#define DESCENT_MAX 1024u

/* Whether step s descends from step anc through the steps that scheduled one another; *child is
 * then the step of that line anc scheduled itself. */
static int descends(const afd_view *v, uint32_t s, uint32_t anc, uint32_t *child)
{
    for (uint32_t n = 0; s != AFD_NOPOS && s < v->n_steps && s > anc && n < DESCENT_MAX; n++) {
        if (v->steps[s].origin == anc) {
            *child = s;
            return 1;
        }
        s = v->steps[s].origin;
    }
    return 0;
}

/* The line of T's waiting step that created the task of `child` (the step's last LINE before the
 * TASK event) and its chain: where the request was made. */
static void request_line(const afd_trace *tr, const afd_view *v, uint32_t first, uint32_t end, uint32_t task,
                         reply *r)
{
    uint32_t made = v->steps[r->child].task, line = AFD_NOPOS;
    for (uint32_t i = first; i < end; i++) {
        const afd_event *e = &tr->events[i];
        if (e->kind == AFD_EV_LINE && e->task == task)
            line = i;
        if (e->kind == AFD_EV_TASK && e->task == made && line != AFD_NOPOS) {
            const afd_event *l = &tr->events[line], *ch = line + 1 < end ? &tr->events[line + 1] : NULL;
            r->request_file = l->a;
            r->request_line = l->b;
            if (ch && ch->kind == AFD_EV_CHAIN && ch->task == task)
                r->request_chain = ch->a;
            return;
        }
    }
}

/* Finds the reply c's target was owed and lost (see above) into r; 1 when there is one. */
static int reply_taken(const afd_cancel_view *cv, const afd_xcancel *c, reply *r)
{
    const afd_view *v = cv->v;
    const afd_trace *tr = v->tr;
    uint32_t first = 0, end = 0;
    *r = (reply){.wait = AFD_NOPOS,
                 .put = AFD_NOPOS,
                 .take = AFD_NOPOS,
                 .request_chain = AFD_NOSTR,
                 .request_file = AFD_NOSTR};
    if (c->late || c->delivered == AFD_NOPOS || c->delivered > v->n_steps)
        return 0;
    for (uint32_t s = c->delivered; s-- > 0 && r->wait == AFD_NOPOS;)
        if (v->steps[s].task == c->target)
            r->wait = s;
    if (r->wait == AFD_NOPOS || !step_events(tr, r->wait, &first, &end))
        return 0;
    const afd_event *last = NULL;
    for (uint32_t i = first; i < end; i++)
        if (is_queue_op(&tr->events[i]) && tr->events[i].task == c->target)
            last = &tr->events[i];
    if (!last || last->flags != AFD_SYNC_QUEUE_CHECK)
        return 0;
    r->queue = last->a;
    r->label = last->b;
    const char *name = cc_string(cv, r->label);
    if (!strncmp(name, "LifoQueue@", 10) || !strncmp(name, "PriorityQueue@", 14))
        return 0;
    uint32_t pos = 0, puts = 0, gets = 0, owed = AFD_NOPOS;
    for (uint32_t i = 0; i < tr->n_events; i++) {
        const afd_event *e = &tr->events[i];
        if (e->kind == AFD_EV_STEP)
            pos++;
        if (e->kind != AFD_EV_SYNC || e->a != r->queue || pos >= v->n_steps)
            continue;
        if (e->flags == AFD_SYNC_QUEUE_PUT) {
            if (owed == AFD_NOPOS && pos > r->wait && descends(v, pos, r->wait, &r->child)) {
                owed = puts;
                r->put = pos;
                r->put_task = e->task;
            }
            puts++;
        } else if (e->flags == AFD_SYNC_QUEUE_GET) {
            if (owed != AFD_NOPOS && gets == owed) {
                r->take = pos;
                r->take_task = e->task;
                break;
            }
            gets++;
        }
    }
    if (r->take == AFD_NOPOS || (r->take_task == c->target && r->take <= c->delivered))
        return 0;
    request_line(tr, v, first, end, c->target, r);
    return 1;
}

/* The await named: in the delivery's chain, the frame where the request and the wait for its
 * reply meet (the lowest frame the request's chain shares: the same calls above it, the same
 * function at it), the function that asked and then waited; else the await the error was thrown
 * at. */
static void reply_await(const cdec *d, const afd_xcancel *c, const reply *r, char *out, size_t cap)
{
    const afd_cancel_view *cv = &d->cf;
    const char *dat = cc_site(cv, c->delivered_at);
    snprintf(out, cap, "%s", dat ? dat : "");
    afd_xframe *a = malloc(2 * AFD_CHAIN_MAX_FRAMES * sizeof *a), *b = a ? a + AFD_CHAIN_MAX_FRAMES : NULL;
    size_t na = a ? afd_view_chain(cv->v->tr, c->delivered_chain, a, AFD_CHAIN_MAX_FRAMES) : 0;
    size_t nb = na ? afd_view_chain(cv->v->tr, r->request_chain, b, AFD_CHAIN_MAX_FRAMES) : 0;
    if (na && !nb && r->request_line && cc_site(cv, r->request_file)) { /* asked in the task's own frame */
        memset(b, 0, sizeof *b);
        snprintf(b->file, sizeof b->file, "%s", cc_site(cv, r->request_file));
        b->line = r->request_line;
        nb = 1;
    }
    if (nb && strcmp(a[0].file, b[0].file) == 0) {
        size_t k = 0;
        while (k + 1 < na && k + 1 < nb && a[k].line == b[k].line && !strcmp(a[k].function, b[k].function) &&
               !strcmp(a[k + 1].function, b[k + 1].function) && !strcmp(a[k + 1].file, b[k + 1].file))
            k++;
        snprintf(out, cap, "%s:%" PRIu32, a[k].file, a[k].line);
    }
    free(a);
}

int cc_name_reply_taken(cdec *d)
{
    const afd_cancel_view *cv = &d->cf;
    for (uint32_t i = 0; i < cv->n_cancels; i++) {
        const afd_xcancel *c = &cv->cancels[i];
        reply r, g;
        if (!reply_taken(cv, c, &r))
            continue;
        int in_pass = 0;
        for (uint32_t j = 0; j < d->cp.n_cancels && !in_pass; j++)
            in_pass = reply_taken(&d->cp, &d->cp.cancels[j], &g) &&
                      cc_same_task(cv, c->target, &d->cp, d->cp.cancels[j].target) &&
                      cc_same_str(cv, r.label, &d->cp, g.label);
        if (in_pass)
            continue;
        char at[640];
        reply_await(d, c, &r, at, sizeof at);
        const char *x = cc_string(cv, r.label), *w = cc_task_label(cv, c->target);
        const char *p = cc_task_label(cv, r.put_task), *t = cc_task_label(cv, r.take_task);
        const afd_view *f = d->f;
        d->c->kind = AFD_CAUSE_CANCELLED_HANDOFF;
        afd_buf_printf(d->resource, "%s", x);
        afd_buf_printf(d->await_site, "%s", at);
        afd_buf_printf(d->sentence,
                       "cancelled hand-off of a reply through %s: %s asked for it and was cancelled by ", x,
                       w);
        cc_put_canceller(d->sentence, cv, c);
        afd_buf_printf(d->sentence,
                       "%s%s before it took it; %s put it there and %s%s took it instead: the next taker got "
                       "the reply meant for the cancelled task",
                       at[0] ? " at " : "", at, p, r.take_task == c->target ? "later " : "", t);
        cc_add_op(d, AFD_CAUSE_ACCESS_HANDOFF, w, "ask and wait for the reply (get())", x, at[0] ? at : NULL);
        cc_add_op(d, AFD_CAUSE_ACCESS_CANCEL, cc_canceller_task(cv, c), "cancel", w,
                  cc_site(cv, c->timeout_site));
        cc_add_op(d, AFD_CAUSE_ACCESS_HANDOFF, p, "put()", x, NULL);
        cc_add_op(d, AFD_CAUSE_ACCESS_HANDOFF, t, "get()", x, NULL);
        char claim[512], measured[256];
        snprintf(claim, sizeof claim,
                 "the put of the reply into %.200s comes from %.120s's step that then waited for it", x, w);
        snprintf(measured, sizeof measured,
                 "put in %.60s step %" PRIu32 ", scheduled from %.60s step %" PRIu32
                 " through %.60s step %" PRIu32,
                 p, cc_ordinal(f, r.put), w, cc_ordinal(f, r.wait), cc_task_label(cv, f->steps[r.child].task),
                 cc_ordinal(f, r.child));
        afd_evidence_add(d->ev, claim, measured, "observed");
        snprintf(claim, sizeof claim, "%.120s was cancelled before it took the reply; %.120s took it", w, t);
        snprintf(measured, sizeof measured, "taken in %.60s step %" PRIu32 " (first in, first out)", t,
                 cc_ordinal(f, r.take));
        afd_evidence_add(d->ev, claim, measured, "observed");
        cc_pass_row(d, "the passing run hands no reply to another taker");
        cc_replay_row(d,
                      "the schedule that hands the reply to the next taker fails every time it is replayed");
        return 1;
    }
    return 0;
}
