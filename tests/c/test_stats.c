/* test_stats.c -- Wilson intervals, medians and the rule of three against known values. */
#include "afd.h"
#include "harness.h"
#include "stats.h"

static void check_wilson(uint64_t k, uint64_t n, double want_lo, double want_hi)
{
    double lo = -1, hi = -1;
    afd_stats_wilson(k, n, &lo, &hi);
    CHECK_NEAR(lo, want_lo, 1e-5);
    CHECK_NEAR(hi, want_hi, 1e-5);
}

TEST(wilson_known_values)
{
    /* Reference values from the closed form evaluated in Python with z = 1.959964. */
    check_wilson(0, 10, 0.0, 0.277533);
    check_wilson(5, 10, 0.236593, 0.763407);
    check_wilson(10, 10, 0.722467, 1.0);
    check_wilson(1, 3, 0.061492, 0.792340);
    check_wilson(3, 100, 0.010255, 0.084519);
    check_wilson(0, 0, 0.0, 1.0);
}

TEST(wilson_exact_edges)
{
    /* No rate was observed below 0 or above 1, so the edges are exact, not merely close. */
    double lo, hi;
    for (uint64_t n = 1; n < 2000; n += 37) {
        afd_stats_wilson(0, n, &lo, &hi);
        CHECK(lo == 0.0);
        CHECK(hi > 0.0 && hi < 1.0);
        afd_stats_wilson(n, n, &lo, &hi);
        CHECK(hi == 1.0);
        CHECK(lo > 0.0 && lo < 1.0);
    }
    afd_stats_wilson(0, 0, &lo, &hi);
    CHECK(lo == 0.0 && hi == 1.0);
}

TEST(wilson_contains_rate_and_narrows)
{
    for (uint64_t n = 1; n <= 200; n++) {
        for (uint64_t k = 0; k <= n; k++) {
            double lo, hi, p = (double)k / (double)n;
            afd_stats_wilson(k, n, &lo, &hi);
            CHECK(0.0 <= lo && lo <= p && p <= hi && hi <= 1.0);
        }
    }
    double lo1, hi1, lo2, hi2;
    afd_stats_wilson(10, 100, &lo1, &hi1);
    afd_stats_wilson(100, 1000, &lo2, &hi2);
    CHECK(hi2 - lo2 < hi1 - lo1);
    /* Symmetry: k failures mirror k successes. */
    afd_stats_wilson(3, 17, &lo1, &hi1);
    afd_stats_wilson(14, 17, &lo2, &hi2);
    CHECK_NEAR(lo1, 1.0 - hi2, 1e-12);
    CHECK_NEAR(hi1, 1.0 - lo2, 1e-12);
}

TEST(median)
{
    double m = -1;
    const uint64_t odd[] = {9, 1, 5, 3, 7};
    CHECK_EQ_INT(afd_stats_median_u64(odd, 5, &m), 0);
    CHECK_NEAR(m, 5.0, 0);
    CHECK_EQ_U64(odd[0], 9); /* The input is left as it was. */
    CHECK_EQ_U64(odd[4], 7);

    const uint64_t even[] = {10, 4, 1, 7};
    CHECK_EQ_INT(afd_stats_median_u64(even, 4, &m), 0);
    CHECK_NEAR(m, 5.5, 0);

    const uint64_t one[] = {42};
    CHECK_EQ_INT(afd_stats_median_u64(one, 1, &m), 0);
    CHECK_NEAR(m, 42.0, 0);

    m = -1;
    CHECK_EQ_INT(afd_stats_median_u64(NULL, 0, &m), 0);
    CHECK_NEAR(m, 0.0, 0);
    CHECK_EQ_INT(afd_stats_median_u64(odd, 0, &m), 0);
    CHECK_NEAR(m, 0.0, 0);

    const uint64_t dup[] = {3, 3, 3, 1, 100, 3};
    CHECK_EQ_INT(afd_stats_median_u64(dup, 6, &m), 0);
    CHECK_NEAR(m, 3.0, 0);

    /* Two huge middle values do not overflow into a small mean. */
    const uint64_t big[] = {UINT64_MAX, UINT64_MAX - 2048};
    CHECK_EQ_INT(afd_stats_median_u64(big, 2, &m), 0);
    CHECK(m > 1.8e19);
}

TEST(rule_of_three)
{
    CHECK_NEAR(afd_stats_rule_of_three(0), 1.0, 0);
    /* 3 / n above 1 is clamped: a rate cannot exceed 1. */
    CHECK_NEAR(afd_stats_rule_of_three(1), 1.0, 0);
    CHECK_NEAR(afd_stats_rule_of_three(2), 1.0, 0);
    CHECK_NEAR(afd_stats_rule_of_three(3), 1.0, 0);
    CHECK_NEAR(afd_stats_rule_of_three(4), 0.75, 1e-15);
    CHECK_NEAR(afd_stats_rule_of_three(30), 0.1, 1e-15);
    CHECK_NEAR(afd_stats_rule_of_three(300), 0.01, 1e-15);
    CHECK_NEAR(afd_stats_rule_of_three(1000000), 3e-6, 1e-18);
}

TEST(ochiai)
{
    /* Held in exactly the failing runs: exactly 1. */
    CHECK(afd_stats_ochiai(5, 0, 5) == 1.0);
    CHECK(afd_stats_ochiai(1, 0, 1) == 1.0);
    CHECK(afd_stats_ochiai(UINT64_MAX, 0, UINT64_MAX) == 1.0);
    /* Never held in a failing run: 0. */
    CHECK(afd_stats_ochiai(0, 3, 5) == 0.0);
    /* 2 / sqrt(4 * (2 + 2)). */
    CHECK_NEAR(afd_stats_ochiai(2, 2, 4), 0.5, 1e-15);
    /* 3 / sqrt(6 * (3 + 1)) = 0.6123724356957946. */
    CHECK_NEAR(afd_stats_ochiai(3, 1, 6), 0.6123724356957946, 1e-15);
    /* 1 / sqrt(10 * (1 + 9)) = 0.1. */
    CHECK_NEAR(afd_stats_ochiai(1, 9, 10), 0.1, 1e-15);
    /* Held in every failing run and in passing ones too: below 1. 4 / sqrt(4 * 5). */
    CHECK_NEAR(afd_stats_ochiai(4, 1, 4), 0.8944271909999159, 1e-15);
}

TEST(ochiai_zero_denominator)
{
    /* No failing run, or a predicate that never held: the denominator is 0, the score 0. */
    CHECK(afd_stats_ochiai(0, 0, 0) == 0.0);
    CHECK(afd_stats_ochiai(0, 7, 0) == 0.0);
    CHECK(afd_stats_ochiai(0, 0, 9) == 0.0);
    /* More failing runs with the predicate than failing runs is a caller bug; still in [0, 1]. */
    double s = afd_stats_ochiai(5, 0, 0);
    CHECK(s >= 0.0 && s <= 1.0);
    s = afd_stats_ochiai(9, 1, 3);
    CHECK(s >= 0.0 && s <= 1.0);
    /* Huge counts neither overflow nor leave [0, 1]. */
    s = afd_stats_ochiai(UINT64_MAX / 2, UINT64_MAX / 2, UINT64_MAX);
    CHECK_NEAR(s, 0.5, 1e-9);
}

int main(void)
{
    RUN_TESTS("stats", T(wilson_known_values), T(wilson_exact_edges), T(wilson_contains_rate_and_narrows),
              T(median), T(rule_of_three), T(ochiai), T(ochiai_zero_denominator));
}
