/* minimize.h -- shrinking a failing schedule: ddmin over its delays, bisection of one delay.
 *
 * Both algorithms are generic: the caller's oracle runs the program under a candidate schedule and
 * says whether it failed. They never run the oracle on a candidate twice (results are cached), and
 * they count the oracle's calls so a report can say how many runs a figure cost. */
#ifndef AFD_MINIMIZE_H
#define AFD_MINIMIZE_H

#include <stddef.h>
#include <stdint.h>

/* Runs the candidate made of the elements i with keep[i] == 1 (of n). Returns 1 when the run
 * failed, 0 when it passed, a negative AFD_E* code to abort the search (returned as is). */
typedef int (*afd_subset_fn)(void *ctx, const uint8_t *keep, size_t n);

/* ddmin (Zeller and Hildebrandt, TSE 2002) over n elements whose full set fails (not re-tested).
 * On return keep[0..n) marks a 1-minimal failing subset: it fails, and removing any one of its
 * elements passes (each such complement was tested, unless the subset is empty). keep is the
 * caller's array of n bytes. *runs (may be NULL) receives the number of oracle calls.
 * n == 0 returns 0 with nothing kept. Limits: n <= AFD_DDMIN_MAX. */
#define AFD_DDMIN_MAX 4096
int afd_ddmin(size_t n, afd_subset_fn test, void *ctx, uint8_t *keep, uint64_t *runs);

/* Runs the program with one value (a delay in ns). 1 fail, 0 pass, negative AFD_E* to abort. */
typedef int (*afd_value_fn)(void *ctx, uint64_t value);

/* Bisection to a threshold. Precondition (not re-tested): *lo passes, *hi fails, *lo < *hi.
 * On return *lo still passes and *hi still fails, with *hi - *lo <= precision (precision >= 1).
 * Each step tests the midpoint and moves lo or hi to it. *runs (may be NULL) receives the number
 * of oracle calls. Returns 0 or the oracle's negative code. */
int afd_bisect(uint64_t *lo, uint64_t *hi, uint64_t precision, afd_value_fn test, void *ctx, uint64_t *runs);

#endif
