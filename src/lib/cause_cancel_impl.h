/* cause_cancel_impl.h -- what the files naming the cancellation kinds share (cause_cancel.c, the
 * kinds and their order; cause_cancel_items.c, the hand-offs of a queue's items); not part of the
 * library's interface. */
#ifndef AFD_CAUSE_CANCEL_IMPL_H
#define AFD_CAUSE_CANCEL_IMPL_H

#include "buf.h"
#include "cause.h"
#include "explain.h"
#include "explain_cancel.h"

#include <stddef.h>
#include <stdint.h>

typedef struct cdec {
    const afd_cause_input *in; /* Borrowed */
    const afd_view *f, *p;     /* Borrowed: in->fail, in->pass (NULL when none) */
    afd_cancel_view cf, cp;    /* Owned: the facts of both runs (cp empty without a passing run) */
    afd_cause *c;              /* Borrowed: the result */
    afd_evidence *ev;          /* Borrowed */
    afd_buf *sentence, *resource, *await_site; /* Borrowed */
    int err;
} cdec;

/* A task's label ("code outside any task" for 0), a string of the run, a place ("file:line") when
 * it is known and not empty (else NULL): all borrowed from the trace. */
const char *cc_task_label(const afd_cancel_view *cv, uint32_t task);
const char *cc_string(const afd_cancel_view *cv, uint32_t id);
const char *cc_site(const afd_cancel_view *cv, uint32_t id);
/* Two string ids (two task ids) of two runs name the same place or thing (the same task label). */
int cc_same_str(const afd_cancel_view *a, uint32_t x, const afd_cancel_view *b, uint32_t y);
int cc_same_task(const afd_cancel_view *a, uint32_t x, const afd_cancel_view *b, uint32_t y);
/* One operation of the cause (the strings are copied; d->err says when memory ran out). */
void cc_add_op(cdec *d, afd_cause_access access, const char *task, const char *operation,
               const char *resource, const char *where);
/* The task's step ordinal at a view position, for the evidence. */
uint32_t cc_ordinal(const afd_view *v, uint32_t pos);
/* Who asked for a cancel, in words ("wait_for (pool.py:40)"), and as an operation's task. */
void cc_put_canceller(afd_buf *b, const afd_cancel_view *cv, const afd_xcancel *c);
const char *cc_canceller_task(const afd_cancel_view *cv, const afd_xcancel *c);
/* The evidence rows every kind ends with: the failing schedule replayed; the passing run's. */
void cc_replay_row(cdec *d, const char *claim);
void cc_pass_row(cdec *d, const char *claim);
/* Whether the target of c went on after catching its CancelledError (cause_cancel.c). */
int cc_went_on(const afd_cancel_view *cv, const afd_xcancel *c);
/* One frame from a "file:line" site (its function unknown); 0 when s is not one. */
size_t cc_site_frame(const char *s, afd_xframe *out);

/* The cancelled hand-offs of a queue's items (cause_cancel_items.c), tried after the hand-offs
 * of futures: an item a cancelled task held and lost; a reply a cancelled task was owed, taken by
 * the next taker. Each names the kind into d and returns 1 when it holds, else 0. */
int cc_name_item_lost(cdec *d);
int cc_name_reply_taken(cdec *d);

#endif
