/* stats.c -- Wilson intervals, medians, the rule of three and Ochiai scores for the reports.
 *
 * Main invariant: every rate interval stays inside [0, 1] and contains the observed rate k / n.
 * Workload: a handful of calls per report, on counts of at most a few thousand runs, so clarity
 * wins over speed (the median sorts a copy). */
#include "stats.h"
#include "afd.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define WILSON_Z 1.959964

void afd_stats_wilson(uint64_t k, uint64_t n, double *lo, double *hi)
{
    double l = 0.0, h = 1.0;
    if (n > 0) {
        if (k > n) /* More successes than trials is a caller bug; the rate cannot exceed 1. */
            k = n;
        double nn = (double)n, p = (double)k / nn, z2 = WILSON_Z * WILSON_Z;
        double denom = 1.0 + z2 / nn;
        double center = (p + z2 / (2.0 * nn)) / denom;
        double half = WILSON_Z / denom * sqrt(p * (1.0 - p) / nn + z2 / (4.0 * nn * nn));
        /* At k == 0 and k == n the bound is exactly 0 or 1 in theory; rounding must not make a
         * report print "0.0000001" for a rate that was never observed. */
        l = k == 0 ? 0.0 : fmax(0.0, center - half);
        h = k == n ? 1.0 : fmin(1.0, center + half);
    }
    if (lo)
        *lo = l;
    if (hi)
        *hi = h;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

int afd_stats_median_u64(const uint64_t *v, size_t n, double *out)
{
    if (!out)
        return AFD_EINVAL;
    *out = 0.0;
    if (n == 0)
        return 0;
    if (!v)
        return AFD_EINVAL;
    if (n > SIZE_MAX / sizeof(uint64_t))
        return AFD_ENOMEM;
    uint64_t *s = malloc(n * sizeof *s);
    if (!s)
        return AFD_ENOMEM;
    memcpy(s, v, n * sizeof *s);
    qsort(s, n, sizeof *s, cmp_u64);
    if (n % 2)
        *out = (double)s[n / 2];
    else /* Halving the difference, not the sum, keeps two huge values from overflowing. */
        *out = (double)s[n / 2 - 1] + ((double)s[n / 2] - (double)s[n / 2 - 1]) / 2.0;
    free(s);
    return 0;
}

double afd_stats_rule_of_three(uint64_t n)
{
    /* 3 / n exceeds 1 for n < 3; a rate bound above 1 says nothing, so it is clamped. */
    return n <= 3 ? 1.0 : 3.0 / (double)n;
}

double afd_stats_ochiai(uint64_t failed_with, uint64_t passed_with, uint64_t total_failed)
{
    if (failed_with > total_failed) /* A caller bug, as in Wilson: the score cannot exceed 1. */
        failed_with = total_failed;
    if (failed_with == 0)
        return 0.0; /* Also covers a 0 denominator, which needs failed_with == 0 or no failures. */
    /* The predicate held in exactly the failing runs: exactly 1, not sqrt's rounding of it. */
    if (passed_with == 0 && failed_with == total_failed)
        return 1.0;
    /* In doubles throughout: the product of two counts can overflow 64 bits. */
    double f = (double)failed_with;
    return fmin(1.0, f / sqrt((double)total_failed * (f + (double)passed_with)));
}
