/* stats.h -- the few statistics the reports print: Wilson intervals, medians, the rule of three.
 *
 * Every figure affidavit prints about a rate comes from these functions and from counted runs. */
#ifndef AFD_STATS_H
#define AFD_STATS_H

#include <stddef.h>
#include <stdint.h>

/* Wilson score interval for k successes in n trials at 95% (z = 1.959964). n == 0 gives [0, 1]. */
void afd_stats_wilson(uint64_t k, uint64_t n, double *lo, double *hi);
/* The median of n values (sorted copy; the input is not modified). n == 0 gives 0. Returns
 * AFD_ENOMEM on allocation failure, with *out 0. Even n: the mean of the two middle values. */
int afd_stats_median_u64(const uint64_t *v, size_t n, double *out);
/* 0 failures in n runs: the one-sided 95% upper bound on the rate, 3/n (1 for n == 0). */
double afd_stats_rule_of_three(uint64_t n);
/* Ochiai suspiciousness of a predicate ("A ran before B") against failure:
 * failed_with / sqrt(total_failed * (failed_with + passed_with)), where failed_with and
 * passed_with count the failing and the passing runs in which the predicate held. 0 when the
 * denominator is 0. In [0, 1]; 1 means the predicate held in exactly the failing runs. */
double afd_stats_ochiai(uint64_t failed_with, uint64_t passed_with, uint64_t total_failed);

#endif
