/* syscov.h -- the systematic search's coverage in words: the one wording the terminal, the HTML
 * report and the verification tier share.
 *
 * Every sentence says what was enumerated and no more: "every schedule" only of a level that was
 * exhausted, "under class pruning" whenever the heuristic pruning left a schedule out, and the
 * raw count (schedules run) beside the distinct traces and interleaving classes they fell into.
 * A count a lenient read left unset (AFD_INCIDENT_UNSET) is written as "?". */
#ifndef AFD_SYSCOV_H
#define AFD_SYSCOV_H

#include "buf.h"
#include "incident.h"

/* One line per level k >= 1, each starting with indent and ending in "\n", e.g.
 * "every schedule with at most 1 delay: 37 run, 9 distinct traces, 5 distinct interleavings,
 * exhausted"; then a line for the delayed steps that changed no comparison and one for the
 * loop.time() reads the measure cannot see, when there are any. Appends to b. */
void afd_sys_coverage_lines(const afd_incident_sys *s, afd_buf *b, const char *indent);

/* The verification tier in one sentence, without a newline: "systematic: every schedule with at
 * most 2 delays passes after the fix (61 schedules, 7 interleavings, exhausted); 12 of them failed
 * before", or how many still fail after the fix. before may be NULL (the sentence then says nothing
 * of it). Appends to b. */
void afd_sys_tier_sentence(const afd_incident_sys *before, const afd_incident_sys *after, afd_buf *b);

#endif
