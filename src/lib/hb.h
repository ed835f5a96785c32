/* hb.h -- happens-before over the steps of one run, by vector clocks.
 *
 * A run is a sequence of steps (0..n-1 in execution order), each belonging to one task. Steps of
 * one task are ordered by program order; every other ordering comes from explicit edges added by
 * the caller (a step that scheduled another, a lock release before an acquire, an event set before
 * a wait returned, a queue put before the get of its item). Edges always point forward in
 * execution order (from < to), so execution order is a topological order and one pass computes the
 * clocks: VC(s) = max(VC(previous step of s's task), VC(source of every edge into s)), then the
 * component of s's task is incremented.
 *
 * Two steps a != b are ordered when a happens-before b or b happens-before a; a pair of
 * conflicting accesses in two unordered steps is a race. */
#ifndef AFD_HB_H
#define AFD_HB_H

#include <stddef.h>
#include <stdint.h>

typedef struct afd_hb afd_hb;

/* A happens-before relation for n_steps steps; task_of_step[i] is the task of step i (any u32
 * ids; tasks are numbered internally). Copies task_of_step. Returns NULL on allocation failure or
 * when n_steps x distinct tasks exceeds AFD_HB_MAX_CELLS. */
#define AFD_HB_MAX_CELLS (64u * 1024u * 1024u)
afd_hb *afd_hb_new(uint32_t n_steps, const uint32_t *task_of_step);
void afd_hb_free(afd_hb *self); /* Accepts NULL. */

/* Step `from` happens before step `to`. Requires from < to < n_steps (else AFD_EINVAL); adding the
 * same edge twice is harmless. Must be called before afd_hb_compute. */
int afd_hb_edge(afd_hb *self, uint32_t from, uint32_t to);

/* Computes every step's vector clock. Returns 0 or AFD_ENOMEM. */
int afd_hb_compute(afd_hb *self);

/* 1 when step a happens before step b (a != b, both in range), else 0. After afd_hb_compute. */
int afd_hb_before(const afd_hb *self, uint32_t a, uint32_t b);
/* 1 when a != b and neither happens before the other. */
int afd_hb_concurrent(const afd_hb *self, uint32_t a, uint32_t b);

uint32_t afd_hb_tasks(const afd_hb *self); /* The number of distinct tasks. */

#endif
