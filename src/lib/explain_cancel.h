/* explain_cancel.h -- a run's cancellations and hand-offs in the user's terms: who cancelled whom
 * and where the CancelledError landed, whether it was caught, which task handed a future's result
 * to which waiter and whether that waiter resumed with it, and who waited at the end.
 *
 * The facts are read off the trace's events 18-24 (trace.h) and its WAKE, STEP, SYNC and WAITFOR
 * events, matched to the view's step positions (the view's steps are the trace's STEP events in
 * order; the events between a WAKE and its STEP belong to that step). No decision is taken here:
 * cause_cancel.c reads these facts and names a cause.
 *
 * Bounded like the view: at most AFD_EXPLAIN_MAX_ACCESSES cancellations and as many hand-offs are
 * kept (`truncated` says when more were seen), every table is sized by the trace's own events,
 * and each match walks at most a fixed number of earlier facts of the same task. */
#ifndef AFD_EXPLAIN_CANCEL_H
#define AFD_EXPLAIN_CANCEL_H

#include "explain.h"

#include <stdint.h>

/* One Task.cancel() call, with what became of it. Positions are the view's step positions
 * (AFD_NOPOS: none; a position equal to the view's n_steps is the step the run ended inside, which
 * the view does not hold); string ids are the trace's (AFD_NOSTR: none). */
typedef struct afd_xcancel {
    uint32_t canceller;    /* the task of the step that called cancel() (0 outside any step) */
    uint32_t target;       /* the task cancelled */
    uint32_t message;      /* the cancel message */
    uint8_t flags;         /* AFD_CANCEL_* */
    uint8_t timeout_flags; /* AFD_TIMEOUT_* of the expiring timeout that issued it, 0 none */
    uint8_t caught_flags;  /* CANCEL_CAUGHT's flags: 1 returned normally, 2 uncancel() in that step */
    uint8_t uncancelled;   /* Task.uncancel() was called on the target after the cancel */
    uint8_t late;          /* issued after the run's deadlock was found: the teardown's, not the program's */
    uint32_t step;         /* the step that called cancel() */
    uint32_t timeout_site; /* where the expiring timeout was armed */
    uint32_t delivered;    /* the target's step into which CancelledError was thrown */
    uint32_t delivered_at; /* the await it was thrown in at */
    uint32_t delivered_chain; /* the chain of user frames beneath delivered_at (its CHAIN event),
                                 AFD_NOSTR when it was thrown into a lone user frame */
    uint32_t caught;          /* the step that caught it without it leaving the task */
    uint32_t caught_at;       /* where the target then suspended (AFD_NOSTR: it returned) */
    uint32_t index;           /* the WAKE index of the calling step (AFD_NOPOS outside any step) */
    uint32_t prev;            /* the previous cancel of the same target, an index into cancels */
    /* The item the target held when the CancelledError reached it: its latest get() from a queue
     * (object number, 0 none) not followed by a put() of its own into that queue, with the user
     * line of the get (file string id, line; AFD_NOSTR, 0 when not traced), and whether the target
     * put into that queue after the delivery (it gave the item back). */
    uint32_t held_object, held_label, held_file, held_line;
    uint8_t held_put_back;
    /* Where that get ran when no traced line says it (a get right where a step resumed, the line
     * traced in an earlier step): the chain of user frames beneath the get's SYNC event (its
     * CHAIN, AFD_NOSTR with one user frame), and the await the step had resumed from ("file:line"
     * string id, AFD_NOSTR none). */
    uint32_t held_chain, held_site;
    uint32_t event; /* the CANCEL event's index in the trace */
} afd_xcancel;

/* One future completed while a task awaited it (a hand-off), with what the waiter did. */
typedef struct afd_xhandoff {
    uint32_t completer;       /* the task of the completing step (0 outside any step) */
    uint8_t by_task;          /* the completer is an asyncio Task (not a callback, not outside a step) */
    uint8_t flags;            /* AFD_HANDOFF_* */
    uint8_t resume_cancelled; /* the waiter resumed into CancelledError instead of the result */
    uint8_t late;             /* after the run's deadlock was found */
    int how;                  /* the completer's own SYNC kind on the object in that step, or -1 */
    uint32_t waiter;
    uint32_t label;        /* the future's label, "Future@x.py:3" or the primitive's */
    uint32_t object;       /* the primitive's object number, 0 for a plain future */
    uint32_t step;         /* the completing step */
    uint32_t index;        /* its WAKE index */
    uint32_t waited_at;    /* where the waiter was suspended when it was handed the future */
    uint32_t resumed;      /* the waiter's step that resumed from the hand-off */
    uint32_t delivered_at; /* where CancelledError was thrown into the waiter instead */
    uint32_t cancel;       /* the cancel that reached the waiter after the hand-off (index), or AFD_NOPOS */
    uint32_t passed_on;    /* the waiter's step that passed it on (a hand-off or release of it) */
    uint32_t taken;        /* the waiter's step that took the primitive (acquire, get, observe) */
    uint32_t prev;         /* the previous hand-off to the same waiter, an index into handoffs */
    uint32_t event;        /* the HANDOFF event's index in the trace */
} afd_xhandoff;

/* A task waiting when the run deadlocked (WAITFOR), and the await it was suspended at. */
typedef struct afd_xwaiter {
    uint32_t task, object, holder; /* object 0: not a primitive's; holder 0: nobody */
    uint32_t site;
} afd_xwaiter;

typedef struct afd_cancel_view {
    const afd_view *v;    /* Borrowed: the view the facts were read beside. */
    afd_xcancel *cancels; /* Owned, in the order of the calls. */
    uint32_t n_cancels;
    afd_xhandoff *handoffs; /* Owned, in the order of the completions. */
    uint32_t n_handoffs;
    afd_xwaiter *waiters; /* Owned, as the WAITFOR events list them. */
    uint32_t n_waiters;
    uint32_t *parent;     /* Owned: a task's parent by task id (0 none), n_tasks entries. */
    uint32_t *last;       /* Owned: a task's last step position by task id (AFD_NOPOS none). */
    uint8_t *callback;    /* Owned: 1 when the task id is a plain callback, not an asyncio Task. */
    uint32_t *made_file;  /* Owned: by task id, the file (string id) of the user line that created
                             it, the creating step's last LINE event; AFD_NOSTR when unknown. */
    uint32_t *made_line;  /* Owned: by task id, that line (0 when unknown). */
    uint32_t *got_object; /* Owned: by task id, the queue of its latest get() not followed by its own
                             put() into it (0 none); got_label/got_file/got_line as in afd_xcancel */
    uint32_t *got_label, *got_file, *got_line; /* Owned: by task id. */
    uint32_t *got_chain, *got_site;            /* Owned: by task id, as held_chain, held_site */
    uint32_t n_tasks;
    int truncated; /* more cancellations or hand-offs than the bound: the later ones are not here */
} afd_cancel_view;

/* Reads the facts of v's trace into self (all fields set here). Returns 0 or AFD_ENOMEM (self is
 * then finished and empty). v must outlive self. */
int afd_cancel_view_build(afd_cancel_view *self, const afd_view *v);
void afd_cancel_view_finish(afd_cancel_view *self); /* Accepts NULL and a zeroed view. */

/* Whether any cancellation or hand-off fact was read. */
int afd_cancel_view_empty(const afd_cancel_view *self);
/* The parent, last step position and callback-ness of a task id (0, AFD_NOPOS and 0 when the
 * trace holds no creation event for it). */
uint32_t afd_cancel_view_parent(const afd_cancel_view *self, uint32_t task);
uint32_t afd_cancel_view_last_step(const afd_cancel_view *self, uint32_t task);
int afd_cancel_view_is_task(const afd_cancel_view *self, uint32_t task);
/* The user line that created a task, as its file's string id and its line, when the trace ran
 * with line events; returns 0 and sets neither when it is not known. */
int afd_cancel_view_made_at(const afd_cancel_view *self, uint32_t task, uint32_t *file, uint32_t *line);

#endif
