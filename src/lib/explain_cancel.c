/* explain_cancel.c -- a run's cancellations, hand-offs and final waiters, read off its trace (see
 * explain_cancel.h).
 *
 * One pass over the events. Each fact is matched to the ones it completes through per-task
 * tables: the latest cancel of a task and the latest hand-off to it, each linked to the previous
 * one of the same task, so a CANCEL_DELIVERED finds its CANCEL and a RESUME its HANDOFF by walking
 * back a few links at most (WALK_MAX). Invariant: every table is sized by the trace's own events
 * (the largest task id a TASK event names, the number of CANCEL, HANDOFF and WAITFOR events), never
 * by an id an event claims. Workload: one build per failing or passing run explained; a run holds
 * a handful of cancellations and at most a few thousand hand-offs. */
#include "explain_cancel.h"
#include "afd.h"

#include <stdlib.h>
#include <string.h>

#define WALK_MAX 64u /* earlier facts of one task a match looks back through */
#define HOW_BACK 64u /* events a hand-off looks back through, in its step, for its completer's SYNC */

typedef struct cbuild {
    afd_cancel_view *cv;    /* Borrowed: the facts being read. */
    const afd_trace *tr;    /* Borrowed. */
    uint32_t *last_cancel;  /* Owned: by task id, the latest cancel of it (an index), AFD_NOPOS */
    uint32_t *last_handoff; /* Owned: by task id, the latest hand-off to it (an index), AFD_NOPOS */
    uint32_t *last_site;    /* Owned: by task id, where it last suspended, AFD_NOSTR */
    uint32_t cap_cancels, cap_handoffs, cap_waiters;
    uint64_t bound;              /* afd_trace_id_bound of the trace */
    uint32_t pos;                /* the current step's position: the STEP events seen so far */
    uint32_t index;              /* the current step's WAKE index, AFD_NOPOS outside a step */
    uint32_t step_first;         /* the event index of the current step's WAKE */
    uint32_t line_file, line_no; /* the current step's last LINE event (AFD_NOSTR, 0: none yet) */
    int in_step, deadlocked;
    uint32_t dl_task, dl_cancel, dl_at; /* the CancelledError delivered in this step, to whom */
    int timeout_pending;                /* a TIMEOUT event waits for the CANCEL it announces */
    uint32_t timeout_task, timeout_site;
    uint8_t timeout_flags;
} cbuild;

static int known(const cbuild *b, uint32_t task)
{
    return task && task < b->cv->n_tasks;
}

static uint32_t here(const cbuild *b)
{
    return b->in_step ? b->pos : AFD_NOPOS;
}

/* Whether two hand-offs are of one thing: the same primitive, or plain futures of one label
 * (futures made at one line are the same kind of thing: a pool's, a request's). */
static int same_thing(const cbuild *b, const afd_xhandoff *h, uint32_t label, uint32_t object)
{
    if (object || h->object)
        return object == h->object;
    return label != AFD_NOSTR && h->label != AFD_NOSTR &&
           strcmp(afd_trace_string(b->tr, label), afd_trace_string(b->tr, h->label)) == 0;
}

/* The cancel of `task` a delivery (or, with `delivered` set, a catch) refers to: a1 = 1 + the
 * cancelling step's index, 0 when unknown (then the latest one that fits). */
static afd_xcancel *find_cancel(cbuild *b, uint32_t task, uint32_t a1, int delivered)
{
    afd_cancel_view *cv = b->cv;
    uint32_t at = b->last_cancel[task];
    for (uint32_t n = 0; at != AFD_NOPOS && n < WALK_MAX; n++) {
        afd_xcancel *c = &cv->cancels[at];
        int fits =
            delivered ? c->delivered != AFD_NOPOS && c->caught == AFD_NOPOS : c->delivered == AFD_NOPOS;
        if (fits && (!a1 || c->index == a1 - 1))
            return c;
        at = c->prev;
    }
    return NULL;
}

static void on_cancel(cbuild *b, const afd_event *e, uint32_t i)
{
    afd_cancel_view *cv = b->cv;
    if (cv->n_cancels == b->cap_cancels) {
        cv->truncated = 1;
        return;
    }
    uint32_t idx = cv->n_cancels++;
    afd_xcancel *c = &cv->cancels[idx];
    *c = (afd_xcancel){.canceller = b->in_step ? e->task : 0,
                       .target = e->a,
                       .message = e->b,
                       .flags = e->flags,
                       .late = (uint8_t)b->deadlocked,
                       .step = here(b),
                       .timeout_site = AFD_NOSTR,
                       .delivered = AFD_NOPOS,
                       .delivered_at = AFD_NOSTR,
                       .delivered_chain = AFD_NOSTR,
                       .caught = AFD_NOPOS,
                       .caught_at = AFD_NOSTR,
                       .index = b->index,
                       .prev = AFD_NOPOS,
                       .held_label = AFD_NOSTR,
                       .held_file = AFD_NOSTR,
                       .held_chain = AFD_NOSTR,
                       .held_site = AFD_NOSTR,
                       .event = i};
    if ((e->flags & AFD_CANCEL_TIMEOUT) && b->timeout_pending && b->timeout_task == e->a) {
        c->timeout_flags = b->timeout_flags;
        c->timeout_site = b->timeout_site;
        b->timeout_pending = 0;
    }
    if (!known(b, e->a))
        return;
    c->prev = b->last_cancel[e->a];
    b->last_cancel[e->a] = idx;
    /* A target whose wake-up is already scheduled (a hand-off in flight) resumes into the
     * CancelledError instead of what it was handed. */
    uint32_t h = b->last_handoff[e->a];
    if ((e->flags & AFD_CANCEL_WOKEN) && h != AFD_NOPOS && cv->handoffs[h].resumed == AFD_NOPOS &&
        cv->handoffs[h].cancel == AFD_NOPOS)
        cv->handoffs[h].cancel = idx;
}

/* The chain of user frames beneath event i: the CHAIN event right after it, of the same task. */
static uint32_t chain_after(const cbuild *b, uint32_t i)
{
    const afd_trace *tr = b->tr;
    if (i + 1 >= tr->n_events)
        return AFD_NOSTR;
    const afd_event *c = &tr->events[i + 1];
    return c->kind == AFD_EV_CHAIN && c->task == tr->events[i].task && c->a < tr->n_strings ? c->a
                                                                                            : AFD_NOSTR;
}

static void on_delivered(cbuild *b, const afd_event *e, uint32_t i)
{
    afd_cancel_view *cv = b->cv;
    if (!known(b, e->task))
        return;
    afd_xcancel *c = find_cancel(b, e->task, e->a, 0);
    uint32_t idx = c ? (uint32_t)(c - cv->cancels) : AFD_NOPOS;
    if (c) {
        c->delivered = here(b);
        c->delivered_at = e->b;
        c->delivered_chain = chain_after(b, i);
        c->held_object = cv->got_object[e->task];
        c->held_label = cv->got_label[e->task];
        c->held_file = cv->got_file[e->task];
        c->held_line = cv->got_line[e->task];
        c->held_chain = cv->got_chain[e->task];
        c->held_site = cv->got_site[e->task];
    }
    b->dl_task = e->task;
    b->dl_cancel = idx;
    b->dl_at = e->b;
    uint32_t h = b->last_handoff[e->task];
    if (h != AFD_NOPOS && b->in_step && cv->handoffs[h].resumed == b->pos) { /* its RESUME came first */
        cv->handoffs[h].delivered_at = e->b;
        if (cv->handoffs[h].cancel == AFD_NOPOS)
            cv->handoffs[h].cancel = idx;
    }
}

static void on_caught(cbuild *b, const afd_event *e)
{
    if (!known(b, e->task))
        return;
    afd_xcancel *c = find_cancel(b, e->task, e->a, 1);
    if (!c)
        return;
    c->caught = here(b);
    c->caught_at = e->b;
    c->caught_flags = e->flags;
    if (e->flags & 2)
        c->uncancelled = 1;
}

static void on_uncancel(cbuild *b, const afd_event *e)
{
    if (!known(b, e->a))
        return;
    uint32_t at = b->last_cancel[e->a];
    for (uint32_t n = 0; at != AFD_NOPOS && n < WALK_MAX; n++) {
        b->cv->cancels[at].uncancelled = 1;
        at = b->cv->cancels[at].prev;
    }
}

/* The latest hand-off to `task` of the thing (label, object) not yet marked taken (want_taken) or
 * passed on (otherwise). */
static afd_xhandoff *find_handoff_to(cbuild *b, uint32_t task, uint32_t label, uint32_t object,
                                     int want_taken)
{
    afd_cancel_view *cv = b->cv;
    uint32_t at = b->last_handoff[task];
    for (uint32_t n = 0; at != AFD_NOPOS && n < WALK_MAX; n++) {
        afd_xhandoff *h = &cv->handoffs[at];
        uint32_t mark = want_taken ? h->taken : h->passed_on;
        if (mark == AFD_NOPOS && same_thing(b, h, label, object))
            return h;
        at = h->prev;
    }
    return NULL;
}

static void on_handoff(cbuild *b, const afd_event *e, uint32_t i)
{
    afd_cancel_view *cv = b->cv;
    const afd_trace *tr = b->tr;
    if (cv->n_handoffs == b->cap_handoffs) {
        cv->truncated = 1;
        return;
    }
    uint32_t completer = b->in_step ? e->task : 0;
    uint32_t object = e->cost <= b->bound ? (uint32_t)e->cost : 0;
    /* Handing it on: the completer was itself handed the same thing and passes it to another. */
    if (known(b, completer) && b->in_step) {
        afd_xhandoff *own = find_handoff_to(b, completer, e->b, object, 0);
        if (own)
            own->passed_on = b->pos;
    }
    uint32_t idx = cv->n_handoffs++;
    afd_xhandoff *h = &cv->handoffs[idx];
    *h = (afd_xhandoff){.completer = completer,
                        .by_task = (uint8_t)afd_cancel_view_is_task(cv, completer),
                        .flags = e->flags,
                        .late = (uint8_t)b->deadlocked,
                        .how = -1,
                        .waiter = e->a,
                        .label = e->b,
                        .object = object,
                        .step = here(b),
                        .index = b->index,
                        .waited_at = known(b, e->a) ? b->last_site[e->a] : AFD_NOSTR,
                        .resumed = AFD_NOPOS,
                        .delivered_at = AFD_NOSTR,
                        .cancel = AFD_NOPOS,
                        .passed_on = AFD_NOPOS,
                        .taken = AFD_NOPOS,
                        .prev = AFD_NOPOS,
                        .event = i};
    /* What the completer did to the primitive just before: release(), put(), set() ... */
    for (uint32_t j = i, n = 0; object && b->in_step && j-- > b->step_first && n < HOW_BACK; n++) {
        const afd_event *s = &tr->events[j];
        if (s->kind == AFD_EV_SYNC && s->task == completer && s->a == object) {
            h->how = s->flags;
            break;
        }
    }
    if (!known(b, e->a))
        return;
    h->prev = b->last_handoff[e->a];
    b->last_handoff[e->a] = idx;
}

static void on_resume(cbuild *b, const afd_event *e)
{
    afd_cancel_view *cv = b->cv;
    if (!known(b, e->task))
        return;
    uint32_t at = b->last_handoff[e->task];
    for (uint32_t n = 0; at != AFD_NOPOS && n < WALK_MAX; n++) {
        afd_xhandoff *h = &cv->handoffs[at];
        if (h->resumed == AFD_NOPOS && (!e->a || h->index == e->a - 1)) {
            h->resumed = here(b);
            h->resume_cancelled = (e->flags & AFD_RESUME_CANCELLED) != 0;
            if (b->dl_task == e->task) { /* its CANCEL_DELIVERED came first */
                h->delivered_at = b->dl_at;
                if (h->cancel == AFD_NOPOS)
                    h->cancel = b->dl_cancel;
            }
            return;
        }
        at = h->prev;
    }
}

/* A primitive's operation by a task that was handed it: taking it (the hand-off was used), or
 * releasing it (passing it on). */
/* A task's gets from and puts into queues: the item it holds (the latest get not followed by its
 * own put into that queue), and, once a CancelledError reached it, whether it put into the queue
 * of the item it held then (gave it back). */
static void on_queue(cbuild *b, const afd_event *e, uint32_t i)
{
    afd_cancel_view *cv = b->cv;
    if (e->flags == AFD_SYNC_QUEUE_GET) {
        cv->got_object[e->task] = e->a;
        cv->got_label[e->task] = e->b;
        cv->got_file[e->task] = b->line_file;
        cv->got_line[e->task] = b->line_no;
        cv->got_chain[e->task] = chain_after(b, i);
        cv->got_site[e->task] = b->last_site[e->task];
        return;
    }
    if (cv->got_object[e->task] == e->a)
        cv->got_object[e->task] = 0;
    uint32_t at = b->last_cancel[e->task];
    for (uint32_t n = 0; at != AFD_NOPOS && n < WALK_MAX; n++, at = cv->cancels[at].prev)
        if (cv->cancels[at].delivered != AFD_NOPOS && cv->cancels[at].held_object == e->a)
            cv->cancels[at].held_put_back = 1;
}

static void on_sync(cbuild *b, const afd_event *e, uint32_t i)
{
    if (!b->in_step || !known(b, e->task) || !e->a || e->a > b->bound)
        return;
    if (e->flags == AFD_SYNC_QUEUE_GET || e->flags == AFD_SYNC_QUEUE_PUT)
        on_queue(b, e, i);
    int take = e->flags == AFD_SYNC_LOCK_ACQUIRE || e->flags == AFD_SYNC_SEM_ACQUIRE ||
               e->flags == AFD_SYNC_QUEUE_GET || e->flags == AFD_SYNC_EVENT_OBSERVE;
    int give = e->flags == AFD_SYNC_LOCK_RELEASE || e->flags == AFD_SYNC_SEM_RELEASE ||
               e->flags == AFD_SYNC_QUEUE_PUT || e->flags == AFD_SYNC_EVENT_SET;
    if (!take && !give)
        return;
    afd_xhandoff *h = find_handoff_to(b, e->task, AFD_NOSTR, e->a, take);
    if (h && take)
        h->taken = b->pos;
    else if (h)
        h->passed_on = b->pos;
}

static void on_waitfor(cbuild *b, const afd_event *e)
{
    afd_cancel_view *cv = b->cv;
    b->deadlocked = 1;
    if (cv->n_waiters == b->cap_waiters)
        return;
    cv->waiters[cv->n_waiters++] = (afd_xwaiter){
        .task = e->task,
        .object = e->a <= b->bound ? e->a : 0,
        .holder = e->b,
        .site = known(b, e->task) ? b->last_site[e->task] : AFD_NOSTR,
    };
}

static void on_event(cbuild *b, const afd_event *e, uint32_t i)
{
    afd_cancel_view *cv = b->cv;
    switch (e->kind) {
    case AFD_EV_TASK:
        if (e->task < cv->n_tasks) {
            cv->parent[e->task] = e->a < cv->n_tasks ? e->a : 0;
            cv->callback[e->task] = e->flags & 1;
            /* A task made in a step was made by the user line that step ran last. */
            if (b->in_step && b->line_no) {
                cv->made_file[e->task] = b->line_file;
                cv->made_line[e->task] = b->line_no;
            }
        }
        break;
    case AFD_EV_LINE:
        if (b->in_step && e->a < b->tr->n_strings) {
            b->line_file = e->a;
            b->line_no = e->b;
        }
        break;
    case AFD_EV_WAKE:
        b->in_step = 1;
        b->index = e->b ? e->b - 1 : AFD_NOPOS;
        b->step_first = i;
        b->dl_task = 0;
        b->line_file = AFD_NOSTR;
        b->line_no = 0;
        break;
    case AFD_EV_STEP:
        if (known(b, e->task)) {
            b->last_site[e->task] = e->b;
            cv->last[e->task] = b->pos;
        }
        b->pos++;
        b->in_step = 0;
        b->index = AFD_NOPOS;
        break;
    case AFD_EV_TIMEOUT:
        b->timeout_pending = 1;
        b->timeout_task = e->task;
        b->timeout_site = e->b;
        b->timeout_flags = e->flags;
        break;
    case AFD_EV_CANCEL:
        on_cancel(b, e, i);
        break;
    case AFD_EV_CANCEL_DELIVERED:
        on_delivered(b, e, i);
        break;
    case AFD_EV_CANCEL_CAUGHT:
        on_caught(b, e);
        break;
    case AFD_EV_UNCANCEL:
        on_uncancel(b, e);
        break;
    case AFD_EV_HANDOFF:
        on_handoff(b, e, i);
        break;
    case AFD_EV_RESUME:
        on_resume(b, e);
        break;
    case AFD_EV_SYNC:
        on_sync(b, e, i);
        break;
    case AFD_EV_WAITFOR:
        on_waitfor(b, e);
        break;
    default:
        break;
    }
}

int afd_cancel_view_build(afd_cancel_view *self, const afd_view *v)
{
    const afd_trace *tr = v->tr;
    memset(self, 0, sizeof *self);
    self->v = v;
    cbuild b = {
        .cv = self, .tr = tr, .bound = afd_trace_id_bound(tr), .index = AFD_NOPOS, .line_file = AFD_NOSTR};
    uint32_t max_task = 0;
    for (uint32_t i = 0; i < tr->n_events; i++) {
        const afd_event *e = &tr->events[i];
        if (e->kind == AFD_EV_TASK && e->task > max_task && e->task <= b.bound)
            max_task = e->task;
        b.cap_cancels += e->kind == AFD_EV_CANCEL && b.cap_cancels < AFD_EXPLAIN_MAX_ACCESSES;
        b.cap_handoffs += e->kind == AFD_EV_HANDOFF && b.cap_handoffs < AFD_EXPLAIN_MAX_ACCESSES;
        b.cap_waiters += e->kind == AFD_EV_WAITFOR && b.cap_waiters < AFD_EXPLAIN_MAX_ACCESSES;
    }
    size_t nt = (size_t)max_task + 1;
    self->n_tasks = max_task + 1;
    self->cancels = malloc(((size_t)b.cap_cancels + 1) * sizeof *self->cancels);
    self->handoffs = malloc(((size_t)b.cap_handoffs + 1) * sizeof *self->handoffs);
    self->waiters = malloc(((size_t)b.cap_waiters + 1) * sizeof *self->waiters);
    self->parent = calloc(nt, sizeof *self->parent);
    self->last = malloc(nt * sizeof *self->last);
    self->callback = calloc(nt, 1);
    self->made_file = malloc(nt * sizeof *self->made_file);
    self->made_line = calloc(nt, sizeof *self->made_line);
    self->got_object = calloc(nt, sizeof *self->got_object);
    self->got_label = malloc(nt * sizeof *self->got_label);
    self->got_file = malloc(nt * sizeof *self->got_file);
    self->got_line = calloc(nt, sizeof *self->got_line);
    self->got_chain = malloc(nt * sizeof *self->got_chain);
    self->got_site = malloc(nt * sizeof *self->got_site);
    b.last_cancel = malloc(nt * sizeof *b.last_cancel);
    b.last_handoff = malloc(nt * sizeof *b.last_handoff);
    b.last_site = malloc(nt * sizeof *b.last_site);
    int rc = self->cancels && self->handoffs && self->waiters && self->parent && self->last &&
                     self->callback && self->made_file && self->made_line && self->got_object &&
                     self->got_label && self->got_file && self->got_line && self->got_chain &&
                     self->got_site && b.last_cancel && b.last_handoff && b.last_site
                 ? 0
                 : AFD_ENOMEM;
    for (size_t t = 0; rc == 0 && t < nt; t++) {
        self->last[t] = b.last_cancel[t] = b.last_handoff[t] = AFD_NOPOS;
        b.last_site[t] = self->made_file[t] = self->got_label[t] = self->got_file[t] = AFD_NOSTR;
        self->got_chain[t] = self->got_site[t] = AFD_NOSTR;
    }
    /* Tasks are created before they run, so a TASK event precedes the facts about its task. */
    for (uint32_t i = 0; rc == 0 && i < tr->n_events; i++)
        on_event(&b, &tr->events[i], i);
    free(b.last_cancel);
    free(b.last_handoff);
    free(b.last_site);
    if (rc < 0)
        afd_cancel_view_finish(self);
    return rc;
}

void afd_cancel_view_finish(afd_cancel_view *self)
{
    if (!self)
        return;
    free(self->cancels);
    free(self->handoffs);
    free(self->waiters);
    free(self->parent);
    free(self->last);
    free(self->callback);
    free(self->made_file);
    free(self->made_line);
    free(self->got_object);
    free(self->got_label);
    free(self->got_file);
    free(self->got_line);
    free(self->got_chain);
    free(self->got_site);
    memset(self, 0, sizeof *self);
}

int afd_cancel_view_empty(const afd_cancel_view *self)
{
    return !self->n_cancels && !self->n_handoffs;
}

uint32_t afd_cancel_view_parent(const afd_cancel_view *self, uint32_t task)
{
    return task < self->n_tasks ? self->parent[task] : 0;
}

uint32_t afd_cancel_view_last_step(const afd_cancel_view *self, uint32_t task)
{
    return task < self->n_tasks ? self->last[task] : AFD_NOPOS;
}

int afd_cancel_view_is_task(const afd_cancel_view *self, uint32_t task)
{
    return task && task < self->n_tasks && !self->callback[task];
}

int afd_cancel_view_made_at(const afd_cancel_view *self, uint32_t task, uint32_t *file, uint32_t *line)
{
    if (task >= self->n_tasks || !self->made_line || !self->made_line[task] ||
        self->made_file[task] == AFD_NOSTR)
        return 0;
    *file = self->made_file[task];
    *line = self->made_line[task];
    return 1;
}
