/* store_stress.c -- writes incidents in a loop and prints each id once its commit returned.
 *
 *   store_stress DBPATH N
 *
 * Each incident carries 50 runs, a 200 KB pseudo-random failing trace (incompressible, so a write
 * takes a moment) and a passing trace. A durability test SIGKILLs this program at random moments,
 * then checks that the database is intact and that every id printed here is in it: an id is
 * printed (and flushed) only after afd_store_add returned, i.e. after its COMMIT. */
#include "afd.h"
#include "store.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N_RUNS 50
#define FAILING_LEN (200u * 1024u)
#define PASSING_LEN (64u * 1024u)

/* Different bytes for every incident (seeded by its number), the same on every invocation. */
static void fill(uint8_t *p, size_t n, uint64_t seed, unsigned repeat)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)afd_mix64(seed ^ (i / repeat));
}

static int parse_count(const char *s, uint64_t *n)
{
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-')
        return -1;
    *n = v;
    return 0;
}

static int add_one(afd_store *st, uint64_t k, uint8_t *failing, uint8_t *passing, int64_t *id, char *err,
                   size_t errlen)
{
    char node[64], summary[96];
    snprintf(node, sizeof node, "tests/test_stress.py::test_%" PRIu64, k);
    snprintf(summary, sizeof summary, "stress incident %" PRIu64 ": 'quoted' <b>text</b>", k);
    afd_store_run runs[N_RUNS];
    for (unsigned i = 0; i < N_RUNS; i++)
        runs[i] = (afd_store_run){
            .index = i,
            .token = i % 2 ? "afd1:stress" : "",
            .outcome = (uint8_t)(i % 3 == 0),
            .wall_ns = afd_mix64(k * N_RUNS + i) % 1000000000u,
            .digest = afd_mix64(~(k * N_RUNS + i)),
        };
    fill(failing, FAILING_LEN, afd_mix64(k), 1);
    fill(passing, PASSING_LEN, afd_mix64(k + 0x5eed), 16);
    afd_store_trace traces[2] = {{"failing", failing, FAILING_LEN}, {"passing", passing, PASSING_LEN}};
    afd_store_patch patch = {"LOCK", "pkg/stress.py", "--- a/pkg/stress.py\n+++ b/pkg/stress.py\n", 1, 1, 0};
    afd_store_incident inc = {
        .nodeid = node,
        .verdict = "reproduced",
        .cause_kind = "ORDER",
        .summary = summary,
        .token = "afd1:stress",
        .rate = 0.5,
        .natural_runs = N_RUNS,
        .natural_failed = N_RUNS / 3,
        .created = (int64_t)time(NULL),
        .json = "{\"stress\":true}",
    };
    return afd_store_add(st, &inc, runs, N_RUNS, traces, 2, k % 2 ? &patch : NULL, id, err, errlen);
}

int main(int argc, char **argv)
{
    uint64_t n = 0;
    if (argc != 3 || parse_count(argv[2], &n) != 0) {
        fprintf(stderr, "usage: store_stress DBPATH N\n");
        return 1;
    }
    char err[512];
    afd_store *st = NULL;
    int rc = afd_store_open(&st, argv[1], err, sizeof err);
    if (rc) {
        fprintf(stderr, "store_stress: %s\n", err);
        return 1;
    }
    uint8_t *failing = malloc(FAILING_LEN), *passing = malloc(PASSING_LEN);
    if (!failing || !passing) {
        fprintf(stderr, "store_stress: out of memory\n");
        free(failing);
        free(passing);
        afd_store_close(st);
        return 1;
    }
    for (uint64_t k = 0; k < n && rc == 0; k++) {
        int64_t id = 0;
        rc = add_one(st, k, failing, passing, &id, err, sizeof err);
        if (rc) {
            fprintf(stderr, "store_stress: %s\n", err);
            break;
        }
        printf("%" PRId64 "\n", id);
        fflush(stdout);
    }
    free(failing);
    free(passing);
    afd_store_close(st);
    return rc ? 1 : 0;
}
