/* tracebuild.h -- hand-built traces for the C tests: the events a recorder would write, one call
 * each, and the small runs several tests share.
 *
 * Every builder CHECKs its own library call, so a test that cannot build its trace fails there
 * (harness.h) instead of testing a half-built one. String arguments are interned in the trace;
 * string ids (AFD_NOSTR for none) are what the event fields hold. */
#ifndef AFD_TEST_TRACEBUILD_H
#define AFD_TEST_TRACEBUILD_H

#include "explain.h"
#include "trace.h"

#include <stdint.h>

/* An event by value, for arrays of events; tb_event's times are zero. */
afd_event tb_event(uint8_t kind, uint8_t flags, uint32_t task, uint32_t a, uint32_t b);
afd_event tb_event_timed(uint8_t kind, uint8_t flags, uint32_t task, uint32_t a, uint32_t b, uint64_t vtime,
                         uint64_t cost, uint64_t wall);

/* The id of string s in t (added once). */
uint32_t tb_str(afd_trace *t, const char *s);

/* Appends one event. */
void tb_evx(afd_trace *t, uint8_t kind, uint8_t flags, uint32_t task, uint32_t a, uint32_t b, uint64_t vtime,
            uint64_t cost, uint64_t wall);
void tb_ev(afd_trace *t, uint8_t kind, uint8_t flags, uint32_t task, uint32_t a, uint32_t b);

/* A task is created: its id, its parent's (0: none) and its label's string id. */
void tb_task(afd_trace *t, uint32_t id, uint32_t parent, uint32_t label);
/* A step begins: origin = 1 + index of the scheduling step (0: none), index1 = 1 + its index. */
void tb_wake(afd_trace *t, uint32_t id, uint32_t origin, uint32_t index1);
/* A step ends: the task's step ordinal and the await it suspended at (a string id or AFD_NOSTR). */
void tb_step(afd_trace *t, uint32_t id, uint32_t ordinal, uint32_t site);
/* An explicit operation of `name` (AFD_NOSTR: "read"/"write") on `resource`. */
void tb_op(afd_trace *t, uint32_t id, uint32_t name, uint32_t resource, int write);
/* An asyncio primitive's event (AFD_SYNC_*) on object number `object` labelled `label`. */
void tb_sync(afd_trace *t, uint32_t id, int kind, uint32_t object, uint32_t label);

/* afd_view_build, checked. */
void tb_view(afd_view *v, const afd_trace *t);

/* Three tasks over X and LOG. failing: logger writes LOG; reader reads X, writes LOG; writer
 * writes X (unless !with_writer). Passing: logger writes LOG; writer writes X; reader reads X,
 * writes LOG. */
void tb_inversion_run(afd_trace *t, int failing, int with_writer);

/* one#0 takes Lock@l.py:1 then Lock@l.py:2 (still holding the first when nested), in one step;
 * two#0 takes them in the same order, or the other when inverted, holding the first across an
 * await. */
void tb_lock_run(afd_trace *t, int inverted, int nested);

#endif
