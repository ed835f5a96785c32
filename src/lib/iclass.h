/* iclass.h -- the interleaving class of a run: a fingerprint of its dependent-access order.
 *
 * Two runs are equivalent (one Mazurkiewicz trace) when, on every resource, their conflicting
 * accesses (two accesses to one resource, at least one a write) happen in the same order. The
 * fingerprint hashes a canonical form of that order, so equivalent runs get one fingerprint and
 * runs that order two conflicting accesses differently get different ones (up to 64-bit hash
 * collisions).
 *
 * The accesses of a trace:
 *   - OP_BEGIN: resource = its b string, a write when flags bit 0 is set, kind = its operation name;
 *   - SYNC, except CREATE: resource = the object's label (b); EVENT_OBSERVE, EVENT_CHECK and
 *     QUEUE_CHECK are reads, every other kind a write;
 *   - CANCEL: a write on the target task, resource "task:<target's label>".
 * An access is identified by what a rerun would recognise as the same access, never by ids the run
 * hands out: (its task's label, its kind, read or write, its occurrence number among that task's
 * accesses to that resource). Task ids and object numbers may differ between equivalent runs.
 *
 * Canonical form: per resource, the writes in their order and, between two consecutive writes
 * (and before the first, after the last), the reads as a sorted multiset; resources sorted by name.
 * Cost: O(n log n) in the number of events. */
#ifndef AFD_ICLASS_H
#define AFD_ICLASS_H

#include "trace.h"

#include <stdint.h>

/* The class fingerprint of tr into *fp and the number of accesses it covers into *n_access
 * (either may be NULL). A trace without accesses has a fingerprint too (that of the empty form).
 * Returns 0, or AFD_ENOMEM (then *fp and *n_access are untouched). */
int afd_iclass_fingerprint(const afd_trace *tr, uint64_t *fp, uint32_t *n_access);

#endif
