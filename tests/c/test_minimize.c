/* test_minimize.c -- ddmin and bisection against oracles whose answers are known in advance.
 *
 * Every oracle here records the candidates it was asked about, so the tests check the "never run
 * twice" promise and the 1-minimality of the answer directly, not through the library's cache. */
#include "afd.h"
#include "harness.h"
#include "minimize.h"

/* A recording oracle around a predicate over the keep vector. */
typedef struct oracle {
    int (*fails)(const struct oracle *o, const uint8_t *keep, size_t n);
    const size_t *need; /* The elements the predicates look at. */
    size_t n_need;
    uint64_t seed;
    uint64_t calls, error_at; /* error_at: the call (1-based) that returns AFD_EIO; 0 never. */
    uint8_t **seen;
    size_t n_seen, cap_seen;
} oracle;

static int fails_all(const oracle *o, const uint8_t *keep, size_t n)
{
    for (size_t i = 0; i < o->n_need; i++)
        if (o->need[i] >= n || !keep[o->need[i]])
            return 0;
    return 1;
}

static int fails_any(const oracle *o, const uint8_t *keep, size_t n)
{
    for (size_t i = 0; i < o->n_need; i++)
        if (o->need[i] < n && keep[o->need[i]])
            return 1;
    return 0;
}

static int fails_always(const oracle *o, const uint8_t *keep, size_t n)
{
    (void)o, (void)keep, (void)n;
    return 1;
}

/* Non-monotone: a pseudo-random third of the subsets fail (and the full set, which ddmin assumes).
 * Removing an element can turn a pass into a failure, so ddmin alone is not 1-minimal here. */
static int fails_random(const oracle *o, const uint8_t *keep, size_t n)
{
    size_t count = 0;
    for (size_t i = 0; i < n; i++)
        count += keep[i];
    if (count == n)
        return 1;
    uint64_t h = afd_fnv1a(AFD_FNV_INIT ^ o->seed, keep, n);
    return afd_mix64(h) % 3 == 0;
}

static int record(void *ctx, const uint8_t *keep, size_t n)
{
    oracle *o = ctx;
    o->calls++;
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        CHECK(keep[i] == 0 || keep[i] == 1);
        count += keep[i];
    }
    if (count == n)
        FAIL_AT("the full set was re-tested");
    for (size_t i = 0; i < o->n_seen; i++)
        if (memcmp(o->seen[i], keep, n) == 0)
            FAIL_AT("candidate tested twice (call %" PRIu64 ")", o->calls);
    if (o->n_seen == o->cap_seen) {
        o->cap_seen = o->cap_seen ? o->cap_seen * 2 : 64;
        o->seen = realloc(o->seen, o->cap_seen * sizeof *o->seen);
        CHECK(o->seen != NULL);
    }
    uint8_t *copy = malloc(n);
    CHECK(copy != NULL);
    memcpy(copy, keep, n);
    o->seen[o->n_seen++] = copy;
    if (o->error_at && o->calls == o->error_at)
        return AFD_EIO;
    return o->fails(o, keep, n);
}

static void oracle_free(oracle *o)
{
    for (size_t i = 0; i < o->n_seen; i++)
        free(o->seen[i]);
    free(o->seen);
}

/* The answer fails, and removing any one of its elements passes: checked with the predicate
 * itself, outside the library. */
static void check_one_minimal(const oracle *o, const uint8_t *keep, size_t n)
{
    uint8_t *tmp = malloc(n + 1);
    CHECK(tmp != NULL);
    memcpy(tmp, keep, n);
    size_t count = 0;
    for (size_t i = 0; i < n; i++)
        count += keep[i];
    CHECK(count == n || o->fails(o, tmp, n)); /* ddmin may keep the full set, known to fail. */
    for (size_t i = 0; i < n; i++) {
        if (!keep[i])
            continue;
        tmp[i] = 0;
        if (o->fails(o, tmp, n))
            FAIL_AT("removing element %zu still fails: not 1-minimal", i);
        tmp[i] = 1;
    }
    free(tmp);
}

static void check_kept(const uint8_t *keep, size_t n, const size_t *want, size_t n_want)
{
    for (size_t i = 0; i < n; i++) {
        int wanted = 0;
        for (size_t j = 0; j < n_want; j++)
            wanted |= want[j] == i;
        if (keep[i] != wanted)
            FAIL_AT("keep[%zu] == %d, want %d", i, keep[i], wanted);
    }
}

TEST(ddmin_needs_two)
{
    const size_t need[] = {3, 7};
    oracle o = {.fails = fails_all, .need = need, .n_need = 2};
    uint8_t keep[16];
    uint64_t runs = 0;
    CHECK_EQ_INT(afd_ddmin(16, record, &o, keep, &runs), 0);
    check_kept(keep, 16, need, 2);
    check_one_minimal(&o, keep, 16);
    CHECK_EQ_U64(runs, o.calls);
    CHECK(runs > 0 && runs < 16 * 16);
    oracle_free(&o);
}

TEST(ddmin_needs_either)
{
    const size_t need[] = {2, 5};
    oracle o = {.fails = fails_any, .need = need, .n_need = 2};
    uint8_t keep[16];
    uint64_t runs = 0;
    CHECK_EQ_INT(afd_ddmin(16, record, &o, keep, &runs), 0);
    size_t count = 0;
    for (size_t i = 0; i < 16; i++)
        count += keep[i];
    CHECK_EQ_INT(count, 1);
    CHECK(keep[2] || keep[5]);
    check_one_minimal(&o, keep, 16);
    CHECK_EQ_U64(runs, o.calls);
    oracle_free(&o);
}

TEST(ddmin_empty_fails)
{
    oracle o = {.fails = fails_always};
    uint8_t keep[10];
    memset(keep, 7, sizeof keep);
    uint64_t runs = 0;
    CHECK_EQ_INT(afd_ddmin(10, record, &o, keep, &runs), 0);
    check_kept(keep, 10, NULL, 0);
    CHECK_EQ_U64(runs, o.calls);
    /* The empty set was among the candidates tried. */
    int saw_empty = 0;
    for (size_t i = 0; i < o.n_seen; i++) {
        size_t c = 0;
        for (size_t j = 0; j < 10; j++)
            c += o.seen[i][j];
        saw_empty |= c == 0;
    }
    CHECK(saw_empty);
    oracle_free(&o);
}

TEST(ddmin_zero_and_one)
{
    oracle o = {.fails = fails_always};
    uint64_t runs = 99;
    CHECK_EQ_INT(afd_ddmin(0, record, &o, NULL, &runs), 0);
    CHECK_EQ_U64(runs, 0);
    CHECK_EQ_U64(o.calls, 0);

    /* One element that matters: only the empty set is left to try, and it passes. */
    const size_t need[] = {0};
    oracle one = {.fails = fails_all, .need = need, .n_need = 1};
    uint8_t keep[1] = {0};
    CHECK_EQ_INT(afd_ddmin(1, record, &one, keep, &runs), 0);
    CHECK_EQ_INT(keep[0], 1);
    CHECK_EQ_U64(runs, 1);
    oracle_free(&one);

    /* One element that does not matter: the empty set fails and is the answer. */
    keep[0] = 1;
    CHECK_EQ_INT(afd_ddmin(1, record, &o, keep, &runs), 0);
    CHECK_EQ_INT(keep[0], 0);
    CHECK_EQ_U64(runs, 1);
    oracle_free(&o);

    /* runs may be NULL. */
    oracle again = {.fails = fails_all, .need = need, .n_need = 1};
    CHECK_EQ_INT(afd_ddmin(1, record, &again, keep, NULL), 0);
    CHECK_EQ_INT(keep[0], 1);
    oracle_free(&again);
}

TEST(ddmin_non_monotone_is_one_minimal)
{
    /* Many oracles where ddmin's own loop can stop short of 1-minimality; the final pass must
     * repair it, and no candidate may run twice however often the search revisits a set. */
    for (uint64_t seed = 1; seed <= 300; seed++) {
        size_t n = 3 + (size_t)(seed % 14);
        oracle o = {.fails = fails_random, .seed = seed};
        uint8_t keep[16];
        uint64_t runs = 0;
        CHECK_EQ_INT(afd_ddmin(n, record, &o, keep, &runs), 0);
        check_one_minimal(&o, keep, n);
        CHECK_EQ_U64(runs, o.calls);
        oracle_free(&o);
    }
}

TEST(ddmin_error_propagates)
{
    const size_t need[] = {3, 7};
    for (uint64_t at = 1; at <= 6; at++) {
        oracle o = {.fails = fails_all, .need = need, .n_need = 2, .error_at = at};
        uint8_t keep[16];
        uint64_t runs = 0;
        CHECK_EQ_INT(afd_ddmin(16, record, &o, keep, &runs), AFD_EIO);
        CHECK_EQ_U64(runs, at);
        CHECK_EQ_U64(o.calls, at);
        /* keep still marks a set known to fail. */
        CHECK(fails_all(&o, keep, 16));
        oracle_free(&o);
    }
}

TEST(ddmin_invalid)
{
    oracle o = {.fails = fails_always};
    uint8_t keep[4];
    uint64_t runs = 5;
    CHECK_EQ_INT(afd_ddmin(AFD_DDMIN_MAX + 1, record, &o, keep, &runs), AFD_EINVAL);
    CHECK_EQ_U64(runs, 0);
    CHECK_EQ_INT(afd_ddmin(4, NULL, &o, keep, &runs), AFD_EINVAL);
    CHECK_EQ_INT(afd_ddmin(4, record, &o, NULL, &runs), AFD_EINVAL);
    CHECK_EQ_U64(o.calls, 0);
}

TEST(ddmin_larger)
{
    const size_t need[] = {17, 101, 180};
    oracle o = {.fails = fails_all, .need = need, .n_need = 3};
    uint8_t keep[200];
    uint64_t runs = 0;
    CHECK_EQ_INT(afd_ddmin(200, record, &o, keep, &runs), 0);
    check_kept(keep, 200, need, 3);
    check_one_minimal(&o, keep, 200);
    CHECK_EQ_U64(runs, o.calls);
    /* ddmin finds a few needles in O(k log n) runs, far below n^2. */
    CHECK(runs < 200);
    oracle_free(&o);
}

/* At the size limit, with an oracle that does not record (n^2 memcmp would be slow). */
static int needs_two_at_max(void *ctx, const uint8_t *keep, size_t n)
{
    uint64_t *calls = ctx;
    (*calls)++;
    return n == AFD_DDMIN_MAX && keep[5] && keep[AFD_DDMIN_MAX - 1];
}

TEST(ddmin_at_max)
{
    uint8_t *keep = malloc(AFD_DDMIN_MAX);
    CHECK(keep != NULL);
    uint64_t calls = 0, runs = 0;
    CHECK_EQ_INT(afd_ddmin(AFD_DDMIN_MAX, needs_two_at_max, &calls, keep, &runs), 0);
    const size_t need[] = {5, AFD_DDMIN_MAX - 1};
    check_kept(keep, AFD_DDMIN_MAX, need, 2);
    CHECK_EQ_U64(runs, calls);
    free(keep);
}

/* A threshold oracle for bisection: fails at and above the threshold. */
typedef struct threshold {
    uint64_t at, lo, hi; /* lo/hi: the bracket the library should be keeping. */
    uint64_t calls, error_at;
} threshold;

static int over_threshold(void *ctx, uint64_t value)
{
    threshold *t = ctx;
    t->calls++;
    /* Every value tested lies strictly inside the current bracket, so none repeats. */
    if (!(value > t->lo && value < t->hi))
        FAIL_AT("value %" PRIu64 " outside (%" PRIu64 ", %" PRIu64 ")", value, t->lo, t->hi);
    if (t->error_at && t->calls == t->error_at)
        return AFD_EIO;
    int fails = value >= t->at;
    if (fails)
        t->hi = value;
    else
        t->lo = value;
    return fails;
}

TEST(bisect_threshold)
{
    threshold t = {.at = 500000, .lo = 0, .hi = 1000000};
    uint64_t lo = 0, hi = 1000000, runs = 0;
    CHECK_EQ_INT(afd_bisect(&lo, &hi, 100, over_threshold, &t, &runs), 0);
    CHECK(lo < 500000 && 500000 <= hi);
    CHECK(hi - lo <= 100);
    CHECK_EQ_U64(runs, t.calls);
    /* Each run halves the bracket: 10^6 / 2^13 > 100 >= 10^6 / 2^14. */
    CHECK_EQ_U64(runs, 14);
}

TEST(bisect_precision_one)
{
    threshold t = {.at = 500000, .lo = 0, .hi = 1000000};
    uint64_t lo = 0, hi = 1000000, runs = 0;
    CHECK_EQ_INT(afd_bisect(&lo, &hi, 1, over_threshold, &t, &runs), 0);
    CHECK_EQ_U64(lo, 499999);
    CHECK_EQ_U64(hi, 500000);
    CHECK(runs >= 19 && runs <= 20); /* ceil(log2(10^6)) == 20. */

    /* A bracket already within precision costs no run. */
    threshold u = {.at = 10, .lo = 9, .hi = 10};
    lo = 9, hi = 10;
    CHECK_EQ_INT(afd_bisect(&lo, &hi, 1, over_threshold, &u, &runs), 0);
    CHECK_EQ_U64(runs, 0);
    CHECK_EQ_U64(u.calls, 0);
    CHECK(lo == 9 && hi == 10);
}

TEST(bisect_full_range)
{
    /* The midpoint of a bracket near UINT64_MAX must not overflow. */
    threshold t = {.at = UINT64_MAX - 3, .lo = 0, .hi = UINT64_MAX};
    uint64_t lo = 0, hi = UINT64_MAX, runs = 0;
    CHECK_EQ_INT(afd_bisect(&lo, &hi, 1, over_threshold, &t, &runs), 0);
    CHECK_EQ_U64(lo, UINT64_MAX - 4);
    CHECK_EQ_U64(hi, UINT64_MAX - 3);
    CHECK(runs <= 64);
    CHECK_EQ_INT(afd_bisect(&lo, &hi, 1, over_threshold, &t, NULL), 0);
}

TEST(bisect_error_propagates)
{
    threshold t = {.at = 500000, .lo = 0, .hi = 1000000, .error_at = 3};
    uint64_t lo = 0, hi = 1000000, runs = 0;
    CHECK_EQ_INT(afd_bisect(&lo, &hi, 100, over_threshold, &t, &runs), AFD_EIO);
    CHECK_EQ_U64(runs, 3);
    /* The bracket still holds: lo passed and hi failed in the runs before the error. */
    CHECK_EQ_U64(lo, t.lo);
    CHECK_EQ_U64(hi, t.hi);
    CHECK(lo < 500000 && 500000 <= hi);
}

TEST(bisect_invalid)
{
    threshold t = {.at = 5, .lo = 0, .hi = 10};
    uint64_t lo = 0, hi = 10, runs = 7;
    CHECK_EQ_INT(afd_bisect(&lo, &hi, 0, over_threshold, &t, &runs), AFD_EINVAL);
    CHECK_EQ_U64(runs, 0);
    lo = 10;
    CHECK_EQ_INT(afd_bisect(&lo, &hi, 1, over_threshold, &t, &runs), AFD_EINVAL);
    lo = 0;
    CHECK_EQ_INT(afd_bisect(&lo, &hi, 1, NULL, &t, &runs), AFD_EINVAL);
    CHECK_EQ_INT(afd_bisect(NULL, &hi, 1, over_threshold, &t, &runs), AFD_EINVAL);
    CHECK_EQ_U64(t.calls, 0);
}

int main(void)
{
    RUN_TESTS("minimize", T(ddmin_needs_two), T(ddmin_needs_either), T(ddmin_empty_fails),
              T(ddmin_zero_and_one), T(ddmin_non_monotone_is_one_minimal), T(ddmin_error_propagates),
              T(ddmin_invalid), T(ddmin_larger), T(ddmin_at_max), T(bisect_threshold),
              T(bisect_precision_one), T(bisect_full_range), T(bisect_error_propagates), T(bisect_invalid));
}
