/* test_hb.c -- happens-before by vector clocks, against hand-built runs and a brute-force closure. */
#include "afd.h"
#include "harness.h"
#include "hb.h"

static afd_hb *make(uint32_t n, const uint32_t *tasks)
{
    afd_hb *hb = afd_hb_new(n, tasks);
    CHECK(hb != NULL);
    return hb;
}

TEST(program_order)
{
    const uint32_t tasks[] = {7, 7, 7};
    afd_hb *hb = make(3, tasks);
    CHECK_EQ_INT(afd_hb_compute(hb), 0);
    CHECK_EQ_INT(afd_hb_before(hb, 0, 1), 1);
    CHECK_EQ_INT(afd_hb_before(hb, 1, 2), 1);
    CHECK_EQ_INT(afd_hb_before(hb, 0, 2), 1);
    CHECK_EQ_INT(afd_hb_before(hb, 2, 0), 0);
    CHECK_EQ_INT(afd_hb_before(hb, 1, 0), 0);
    CHECK_EQ_INT(afd_hb_before(hb, 1, 1), 0); /* Irreflexive. */
    CHECK_EQ_INT(afd_hb_concurrent(hb, 0, 2), 0);
    CHECK_EQ_INT(afd_hb_concurrent(hb, 1, 1), 0);
    CHECK_EQ_INT(afd_hb_tasks(hb), 1);
    afd_hb_free(hb);
}

TEST(cross_task_edge)
{
    /* 0:A 1:B 2:A 3:B, no edges: A's and B's steps are pairwise concurrent. */
    const uint32_t tasks[] = {1, 2, 1, 2};
    afd_hb *hb = make(4, tasks);
    CHECK_EQ_INT(afd_hb_compute(hb), 0);
    CHECK_EQ_INT(afd_hb_concurrent(hb, 0, 1), 1);
    CHECK_EQ_INT(afd_hb_concurrent(hb, 0, 3), 1);
    CHECK_EQ_INT(afd_hb_concurrent(hb, 2, 1), 1);
    CHECK_EQ_INT(afd_hb_concurrent(hb, 0, 2), 0);
    afd_hb_free(hb);

    /* An edge 0 -> 3 (A releases, B acquires) orders A0 before B1 but nothing else. */
    hb = make(4, tasks);
    CHECK_EQ_INT(afd_hb_edge(hb, 0, 3), 0);
    CHECK_EQ_INT(afd_hb_compute(hb), 0);
    CHECK_EQ_INT(afd_hb_before(hb, 0, 3), 1);
    CHECK_EQ_INT(afd_hb_before(hb, 3, 0), 0);
    CHECK_EQ_INT(afd_hb_concurrent(hb, 0, 3), 0);
    CHECK_EQ_INT(afd_hb_concurrent(hb, 0, 1), 1);
    CHECK_EQ_INT(afd_hb_concurrent(hb, 2, 3), 1);
    CHECK_EQ_INT(afd_hb_concurrent(hb, 1, 2), 1);
    afd_hb_free(hb);
}

TEST(transitive_three_tasks)
{
    /* 0:X 1:Y 2:Z 3:X, edges X0 -> Y1 -> Z2: X0 before Z2 through Y, though no edge joins them. */
    const uint32_t tasks[] = {100, 200, 300, 100};
    afd_hb *hb = make(4, tasks);
    CHECK_EQ_INT(afd_hb_edge(hb, 1, 2), 0); /* Edges in any order. */
    CHECK_EQ_INT(afd_hb_edge(hb, 0, 1), 0);
    CHECK_EQ_INT(afd_hb_compute(hb), 0);
    CHECK_EQ_INT(afd_hb_before(hb, 0, 2), 1);
    CHECK_EQ_INT(afd_hb_before(hb, 2, 0), 0);
    CHECK_EQ_INT(afd_hb_before(hb, 0, 1), 1);
    CHECK_EQ_INT(afd_hb_before(hb, 1, 2), 1);
    CHECK_EQ_INT(afd_hb_concurrent(hb, 3, 2), 1);
    CHECK_EQ_INT(afd_hb_concurrent(hb, 3, 1), 1);
    CHECK_EQ_INT(afd_hb_tasks(hb), 3);
    afd_hb_free(hb);
}

TEST(no_edges_concurrent)
{
    const uint32_t tasks[] = {5, 9, 9, 5, 5, 9};
    afd_hb *hb = make(6, tasks);
    CHECK_EQ_INT(afd_hb_compute(hb), 0);
    for (uint32_t a = 0; a < 6; a++)
        for (uint32_t b = 0; b < 6; b++) {
            int same = tasks[a] == tasks[b];
            CHECK_EQ_INT(afd_hb_concurrent(hb, a, b), a != b && !same);
            CHECK_EQ_INT(afd_hb_before(hb, a, b), a < b && same);
        }
    afd_hb_free(hb);
}

TEST(lost_update)
{
    /* A0 spawns B (edge to B0); then A1 and B1 both read-modify-write: unordered, a race. */
    const uint32_t tasks[] = {0xa, 0xb, 0xa, 0xb};
    afd_hb *hb = make(4, tasks);
    CHECK_EQ_INT(afd_hb_edge(hb, 0, 1), 0);
    CHECK_EQ_INT(afd_hb_compute(hb), 0);
    CHECK_EQ_INT(afd_hb_concurrent(hb, 2, 3), 1);
    CHECK_EQ_INT(afd_hb_concurrent(hb, 3, 2), 1);
    CHECK_EQ_INT(afd_hb_before(hb, 0, 3), 1); /* A0 -> B0 -> B1. */
    CHECK_EQ_INT(afd_hb_concurrent(hb, 1, 2), 1);
    afd_hb_free(hb);
}

TEST(invalid_edges)
{
    const uint32_t tasks[] = {1, 2, 3};
    afd_hb *hb = make(3, tasks);
    CHECK_EQ_INT(afd_hb_edge(hb, 2, 1), AFD_EINVAL); /* Backwards in execution order. */
    CHECK_EQ_INT(afd_hb_edge(hb, 1, 1), AFD_EINVAL);
    CHECK_EQ_INT(afd_hb_edge(hb, 0, 3), AFD_EINVAL); /* Out of range. */
    CHECK_EQ_INT(afd_hb_edge(hb, 5, 9), AFD_EINVAL);
    CHECK_EQ_INT(afd_hb_edge(NULL, 0, 1), AFD_EINVAL);
    CHECK_EQ_INT(afd_hb_edge(hb, 0, 2), 0);
    CHECK_EQ_INT(afd_hb_edge(hb, 0, 2), 0); /* Twice is harmless. */
    CHECK_EQ_INT(afd_hb_edge(hb, 0, 1), 0);
    CHECK_EQ_INT(afd_hb_edge(hb, 0, 2), 0);
    /* Before compute, nothing is ordered. */
    CHECK_EQ_INT(afd_hb_before(hb, 0, 2), 0);
    CHECK_EQ_INT(afd_hb_compute(hb), 0);
    CHECK_EQ_INT(afd_hb_compute(hb), 0);
    CHECK_EQ_INT(afd_hb_before(hb, 0, 2), 1);
    CHECK_EQ_INT(afd_hb_concurrent(hb, 1, 2), 1);
    /* After compute an edge could not count any more: refused. */
    CHECK_EQ_INT(afd_hb_edge(hb, 1, 2), AFD_EINVAL);
    /* Out-of-range queries are neither ordered nor concurrent. */
    CHECK_EQ_INT(afd_hb_before(hb, 0, 3), 0);
    CHECK_EQ_INT(afd_hb_before(hb, 3, 0), 0);
    CHECK_EQ_INT(afd_hb_concurrent(hb, 0, 3), 0);
    CHECK_EQ_INT(afd_hb_concurrent(hb, UINT32_MAX, 1), 0);
    CHECK_EQ_INT(afd_hb_before(NULL, 0, 1), 0);
    afd_hb_free(hb);
    afd_hb_free(NULL);
}

TEST(task_ids)
{
    const uint32_t tasks[] = {7, UINT32_MAX, 7, 42, 0, UINT32_MAX};
    afd_hb *hb = make(6, tasks);
    CHECK_EQ_INT(afd_hb_tasks(hb), 4);
    CHECK_EQ_INT(afd_hb_compute(hb), 0);
    CHECK_EQ_INT(afd_hb_before(hb, 1, 5), 1);
    CHECK_EQ_INT(afd_hb_before(hb, 0, 2), 1);
    CHECK_EQ_INT(afd_hb_concurrent(hb, 3, 4), 1);
    afd_hb_free(hb);
    CHECK_EQ_INT(afd_hb_tasks(NULL), 0);

    /* An empty run is valid; a missing task list for steps is not. */
    hb = afd_hb_new(0, NULL);
    CHECK(hb != NULL);
    CHECK_EQ_INT(afd_hb_tasks(hb), 0);
    CHECK_EQ_INT(afd_hb_compute(hb), 0);
    CHECK_EQ_INT(afd_hb_before(hb, 0, 0), 0);
    afd_hb_free(hb);
    CHECK(afd_hb_new(3, NULL) == NULL);
}

TEST(cell_cap)
{
    /* 9000 steps over 9000 distinct tasks is 81M cells, above the cap. */
    uint32_t n = 9000;
    uint32_t *tasks = malloc(n * sizeof *tasks);
    CHECK(tasks != NULL);
    for (uint32_t i = 0; i < n; i++)
        tasks[i] = i;
    CHECK(afd_hb_new(n, tasks) == NULL);
    /* The same steps over 2 tasks are fine. */
    for (uint32_t i = 0; i < n; i++)
        tasks[i] = i % 2;
    afd_hb *hb = afd_hb_new(n, tasks);
    CHECK(hb != NULL);
    CHECK_EQ_INT(afd_hb_compute(hb), 0);
    CHECK_EQ_INT(afd_hb_before(hb, 0, n - 2), 1);
    CHECK_EQ_INT(afd_hb_concurrent(hb, 0, n - 1), 1);
    afd_hb_free(hb);
    free(tasks);
}

TEST(matches_brute_force)
{
    /* Random runs: happens-before must equal reachability over program order and the edges. */
    enum { N = 40 };
    for (uint64_t seed = 1; seed <= 200; seed++) {
        uint32_t tasks[N];
        uint32_t n_tasks = 1 + (uint32_t)(afd_mix64(seed) % 6);
        for (uint32_t i = 0; i < N; i++)
            tasks[i] = 1000 + 17 * (uint32_t)(afd_mix64(seed * 1000 + i) % n_tasks);
        static uint8_t reach[N][N];
        memset(reach, 0, sizeof reach);
        afd_hb *hb = make(N, tasks);
        for (uint32_t a = 0; a < N; a++)
            for (uint32_t b = a + 1; b < N; b++) {
                if (tasks[a] == tasks[b])
                    reach[a][b] = 1;
                if (afd_mix64(seed << 32 ^ (uint64_t)(a * 131u + b)) % 23 == 0) {
                    reach[a][b] = 1;
                    CHECK_EQ_INT(afd_hb_edge(hb, a, b), 0);
                }
            }
        for (uint32_t k = 0; k < N; k++) /* Warshall's closure. */
            for (uint32_t a = 0; a < N; a++)
                for (uint32_t b = 0; b < N; b++)
                    if (reach[a][k] && reach[k][b])
                        reach[a][b] = 1;
        CHECK_EQ_INT(afd_hb_compute(hb), 0);
        for (uint32_t a = 0; a < N; a++)
            for (uint32_t b = 0; b < N; b++) {
                CHECK_EQ_INT(afd_hb_before(hb, a, b), reach[a][b]);
                CHECK_EQ_INT(afd_hb_concurrent(hb, a, b), a != b && !reach[a][b] && !reach[b][a]);
            }
        afd_hb_free(hb);
    }
}

int main(void)
{
    RUN_TESTS("hb", T(program_order), T(cross_task_edge), T(transitive_three_tasks), T(no_edges_concurrent),
              T(lost_update), T(invalid_edges), T(task_ids), T(cell_cap), T(matches_brute_force));
}
