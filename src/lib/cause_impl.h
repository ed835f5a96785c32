/* cause_impl.h -- what cause.c shares with the files that decide its other kinds; not part of the
 * library's interface. */
#ifndef AFD_CAUSE_IMPL_H
#define AFD_CAUSE_IMPL_H

#include "buf.h"
#include "cause.h"

/* The cancellation and hand-off kinds (cause_cancel.c): cancelled_handoff, lost_wakeup,
 * cancel_ordering, cancel_swallowed, tried in that order on in->fail. When one holds, its kind,
 * operations and evidence rows go into c and ev, and its sentence, resource and await site are
 * written into the three buffers (Borrowed: the caller makes the cause's strings from them).
 * Returns 1 when a kind was named, 0 when none holds (c, ev and the buffers are untouched), or
 * AFD_ENOMEM. */
int afd_cause_cancel_name(const afd_cause_input *in, afd_cause *c, afd_evidence *ev, afd_buf *sentence,
                          afd_buf *resource, afd_buf *await_site);

#endif
