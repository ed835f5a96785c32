/* delays.h -- which of a schedule's explicit delays a run actually reached.
 *
 * A delay is addressed by (task label, step ordinal). A token replayed on a test that never creates
 * that task, or whose task takes fewer steps (another test, or code that changed since the token
 * was found), applies nothing: its runs prove nothing about the schedule. The replay command uses
 * this to say so instead of reporting passes. */
#ifndef AFD_DELAYS_H
#define AFD_DELAYS_H

#include "token.h"
#include "trace.h"

#include <stdint.h>

/* Sets ran[i] to 1 for each delay i of sched whose step (label, ordinal) has a STEP event in tr;
 * leaves the other entries as they are, so one array can collect several runs. ran has
 * sched->n_delays entries (caller-allocated). A trace that dropped events (AFD_TRACE_TRUNCATED)
 * may miss a step that ran: the caller decides what an unmarked delay means then.
 * Returns 0 or AFD_ENOMEM. Cost: O((steps + delays) log delays). */
int afd_delays_mark_ran(const afd_schedule *sched, const afd_trace *tr, uint8_t *ran);

#endif
