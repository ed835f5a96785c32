/* minimize.c -- ddmin over a failing schedule's delays, and bisection of one delay.
 *
 * Main invariant: the oracle never sees the same candidate twice, and the set ddmin returns is
 * one it saw fail (or the full set, which the caller saw fail), so every figure a report prints
 * about a minimized schedule comes from an actual run.
 * Workload: each oracle call is a whole program run (milliseconds to seconds), so the bookkeeping
 * here is negligible next to it; what matters is the number of calls. n is a schedule's delay
 * count: a few dozen at most in practice, AFD_DDMIN_MAX by contract. */
#include "minimize.h"
#include "afd.h"

#include <stdlib.h>
#include <string.h>

/* The tested candidates, as bitsets of `words` uint64 each, in an open-addressing table keyed by
 * their FNV-1a hash. Whole sets are stored and compared, not just hashes: a hash collision must
 * not return another candidate's result, since that could make ddmin keep a set that passes. */
typedef struct cache_slot {
    uint64_t hash;
    size_t set; /* Index of the stored set plus 1; 0 marks an empty slot. */
    int failed;
} cache_slot;

typedef struct cache {
    size_t words;
    uint64_t *sets;
    size_t n_sets, cap_sets;
    cache_slot *slots;
    size_t n_slots; /* A power of two, at least twice n_sets, so probes stay short and end. */
} cache;

typedef struct ddmin_state {
    size_t n;
    afd_subset_fn test;
    void *ctx;
    uint8_t *cand;  /* The candidate handed to the oracle, n bytes. */
    uint64_t *bits; /* The candidate as a bitset, for the cache. */
    uint64_t runs;
    cache c;
} ddmin_state;

static void cache_free(cache *c)
{
    free(c->sets);
    free(c->slots);
}

static cache_slot *cache_find(const cache *c, const uint64_t *bits, uint64_t hash)
{
    size_t mask = c->n_slots - 1;
    for (size_t i = (size_t)hash & mask;; i = (i + 1) & mask) {
        cache_slot *s = &c->slots[i];
        if (!s->set)
            return s;
        if (s->hash == hash && memcmp(c->sets + (s->set - 1) * c->words, bits, c->words * sizeof *bits) == 0)
            return s;
    }
}

/* Makes room for one more set before the oracle runs, so that an allocation failure cannot throw
 * away a run's result. */
static int cache_reserve(cache *c)
{
    if (c->n_sets == c->cap_sets) {
        size_t cap = c->cap_sets ? c->cap_sets * 2 : 64;
        if (cap > SIZE_MAX / sizeof(uint64_t) / c->words)
            return AFD_ENOMEM;
        uint64_t *sets = realloc(c->sets, cap * c->words * sizeof *sets);
        if (!sets)
            return AFD_ENOMEM;
        c->sets = sets;
        c->cap_sets = cap;
    }
    if ((c->n_sets + 1) * 2 > c->n_slots) {
        size_t n_slots = c->n_slots ? c->n_slots * 2 : 128;
        if (n_slots > SIZE_MAX / sizeof(cache_slot))
            return AFD_ENOMEM;
        cache_slot *slots = calloc(n_slots, sizeof *slots);
        if (!slots)
            return AFD_ENOMEM;
        cache old = *c;
        c->slots = slots;
        c->n_slots = n_slots;
        for (size_t i = 0; i < old.n_slots; i++)
            if (old.slots[i].set)
                *cache_find(c, old.sets + (old.slots[i].set - 1) * old.words, old.slots[i].hash) =
                    old.slots[i];
        free(old.slots);
    }
    return 0;
}

/* Stores a set in the empty slot cache_find returned for it; cache_reserve must have run. */
static void cache_put(cache *c, cache_slot *slot, const uint64_t *bits, uint64_t hash, int failed)
{
    memcpy(c->sets + c->n_sets * c->words, bits, c->words * sizeof *bits);
    c->n_sets++;
    *slot = (cache_slot){.hash = hash, .set = c->n_sets, .failed = failed};
}

/* Tests the candidate made of two runs of indices, a[0..na) and b[0..nb) (a subset is one run; a
 * complement is the part before a chunk and the part after it). Returns 1 fail, 0 pass, or the
 * oracle's negative code; a cached candidate costs no run. */
static int probe(ddmin_state *st, const uint32_t *a, size_t na, const uint32_t *b, size_t nb)
{
    cache *c = &st->c;
    memset(st->bits, 0, c->words * sizeof *st->bits);
    for (size_t i = 0; i < na; i++)
        st->bits[a[i] / 64] |= 1ULL << (a[i] % 64);
    for (size_t i = 0; i < nb; i++)
        st->bits[b[i] / 64] |= 1ULL << (b[i] % 64);
    uint64_t hash = afd_fnv1a(AFD_FNV_INIT, st->bits, c->words * sizeof *st->bits);
    cache_slot *slot = cache_find(c, st->bits, hash);
    if (slot->set)
        return slot->failed;
    int rc = cache_reserve(c);
    if (rc < 0)
        return rc;
    memset(st->cand, 0, st->n);
    for (size_t i = 0; i < na; i++)
        st->cand[a[i]] = 1;
    for (size_t i = 0; i < nb; i++)
        st->cand[b[i]] = 1;
    st->runs++;
    rc = st->test(st->ctx, st->cand, st->n);
    if (rc < 0)
        return rc;
    rc = rc > 0; /* Any positive answer is a failure; the contract says 1, but be lenient. */
    /* The reserve may have rehashed the table, so the slot is looked up again. */
    cache_put(c, cache_find(c, st->bits, hash), st->bits, hash, rc);
    return rc;
}

/* The classic ddmin loop over cur[0..*m): split into g chunks, keep a failing chunk (and restart at
 * granularity 2), else drop a chunk whose complement fails (and coarsen by one), else refine. */
static int ddmin_loop(ddmin_state *st, uint32_t *cur, size_t *m_io)
{
    size_t m = *m_io, g = 2;
    int rc = 0;
    while (m >= 2) {
        if (g > m)
            g = m;
        int reduced = 0;
        for (size_t i = 0; i < g && !reduced; i++) {
            size_t s = m * i / g, e = m * (i + 1) / g;
            rc = probe(st, cur + s, e - s, NULL, 0);
            if (rc < 0)
                goto out;
            if (rc) {
                memmove(cur, cur + s, (e - s) * sizeof *cur);
                m = e - s;
                g = 2;
                reduced = 1;
            }
        }
        /* At g == 2 each complement is the other chunk: the cache answers them without a run. */
        for (size_t i = 0; i < g && !reduced; i++) {
            size_t s = m * i / g, e = m * (i + 1) / g;
            rc = probe(st, cur, s, cur + e, m - e);
            if (rc < 0)
                goto out;
            if (rc) {
                memmove(cur + s, cur + e, (m - e) * sizeof *cur);
                m -= e - s;
                g = g > 3 ? g - 1 : 2;
                reduced = 1;
            }
        }
        if (!reduced) {
            if (g >= m)
                break; /* Single elements were tried: ddmin is done. */
            g = g * 2 < m ? g * 2 : m;
        }
    }
    rc = 0;
out:
    *m_io = m;
    return rc;
}

/* ddmin ends 1-minimal in theory, but only for a monotone oracle; a flaky or non-monotone program
 * can leave an element whose removal still fails. Removing such elements until every single
 * removal passes makes the guarantee hold for any oracle. It also tries the empty set, which
 * ddmin's chunks never are. */
static int one_minimal_pass(ddmin_state *st, uint32_t *cur, size_t *m_io)
{
    size_t m = *m_io;
    int changed, rc = 0;
    do {
        changed = 0;
        for (size_t i = 0; i < m;) {
            rc = probe(st, cur, i, cur + i + 1, m - i - 1);
            if (rc < 0)
                goto out;
            if (rc) {
                memmove(cur + i, cur + i + 1, (m - i - 1) * sizeof *cur);
                m--;
                changed = 1;
            } else {
                i++;
            }
        }
    } while (changed);
    rc = 0;
out:
    *m_io = m;
    return rc;
}

int afd_ddmin(size_t n, afd_subset_fn test, void *ctx, uint8_t *keep, uint64_t *runs)
{
    if (runs)
        *runs = 0;
    if (n > AFD_DDMIN_MAX)
        return AFD_EINVAL;
    if (n == 0)
        return 0;
    if (!test || !keep)
        return AFD_EINVAL;
    ddmin_state st = {.n = n, .test = test, .ctx = ctx};
    st.c.words = (n + 63) / 64;
    uint32_t *cur = malloc(n * sizeof *cur);
    st.cand = malloc(n);
    st.bits = malloc(st.c.words * sizeof *st.bits);
    int rc = AFD_ENOMEM;
    size_t m = n;
    if (!cur || !st.cand || !st.bits)
        goto out;
    for (size_t i = 0; i < n; i++)
        cur[i] = (uint32_t)i;
    /* The full set is known to fail: recording it keeps a complement equal to it from running. */
    rc = cache_reserve(&st.c);
    if (rc < 0)
        goto out;
    memset(st.bits, 0xff, st.c.words * sizeof *st.bits);
    if (n % 64)
        st.bits[st.c.words - 1] = (1ULL << (n % 64)) - 1;
    uint64_t hash = afd_fnv1a(AFD_FNV_INIT, st.bits, st.c.words * sizeof *st.bits);
    cache_put(&st.c, cache_find(&st.c, st.bits, hash), st.bits, hash, 1);

    rc = ddmin_loop(&st, cur, &m);
    if (rc == 0)
        rc = one_minimal_pass(&st, cur, &m);
out:
    /* Even after an error keep holds a set that failed: the smallest found so far (the full set
     * when nothing could be allocated). */
    memset(keep, cur ? 0 : 1, n);
    for (size_t i = 0; cur && i < m; i++)
        keep[cur[i]] = 1;
    if (runs)
        *runs = st.runs;
    free(cur);
    free(st.cand);
    free(st.bits);
    cache_free(&st.c);
    return rc;
}

int afd_bisect(uint64_t *lo, uint64_t *hi, uint64_t precision, afd_value_fn test, void *ctx, uint64_t *runs)
{
    if (runs)
        *runs = 0;
    /* precision 0 could never be reached once hi == lo + 1: the midpoint would be lo forever. */
    if (!lo || !hi || !test || precision == 0 || *lo >= *hi)
        return AFD_EINVAL;
    uint64_t count = 0;
    int rc = 0;
    while (*hi - *lo > precision) {
        /* lo + (hi - lo) / 2 cannot overflow, and lies strictly between lo and hi since
         * hi - lo >= 2 here; so no value is ever tested twice. */
        uint64_t mid = *lo + (*hi - *lo) / 2;
        count++;
        rc = test(ctx, mid);
        if (rc < 0)
            break;
        if (rc > 0)
            *hi = mid;
        else
            *lo = mid;
        rc = 0;
    }
    if (runs)
        *runs = count;
    return rc;
}
