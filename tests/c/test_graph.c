/* test_graph.c -- cycles in directed graphs: exact answers by hand, deep graphs, random graphs. */
#include "afd.h"
#include "graph.h"
#include "harness.h"

static afd_graph *make(uint32_t n)
{
    afd_graph *g = afd_graph_new(n);
    CHECK(g != NULL);
    return g;
}

static void check_cycle(const uint32_t *got, size_t len, const uint32_t *want, size_t n_want)
{
    CHECK_EQ_INT(len, n_want);
    for (size_t i = 0; i < n_want; i++)
        if (got[i] != want[i])
            FAIL_AT("cycle[%zu] == %u, want %u", i, got[i], want[i]);
}

TEST(acyclic)
{
    afd_graph *g = make(5);
    uint32_t cycle[5];
    size_t len = 99;
    CHECK_EQ_INT(afd_graph_find_cycle(g, cycle, 5, &len), 0);
    CHECK_EQ_INT(len, 0);
    /* A diamond with a shared sink is not a cycle, though DFS meets node 3 twice. */
    CHECK_EQ_INT(afd_graph_edge(g, 0, 1), 0);
    CHECK_EQ_INT(afd_graph_edge(g, 0, 2), 0);
    CHECK_EQ_INT(afd_graph_edge(g, 1, 3), 0);
    CHECK_EQ_INT(afd_graph_edge(g, 2, 3), 0);
    CHECK_EQ_INT(afd_graph_edge(g, 4, 0), 0);
    CHECK_EQ_INT(afd_graph_find_cycle(g, cycle, 5, &len), 0);
    CHECK_EQ_INT(len, 0);
    afd_graph_free(g);

    g = make(0);
    CHECK_EQ_INT(afd_graph_find_cycle(g, NULL, 0, &len), 0);
    CHECK_EQ_INT(afd_graph_edge(g, 0, 0), AFD_EINVAL);
    afd_graph_free(g);
    afd_graph_free(NULL);
}

TEST(two_cycle)
{
    /* The lock-order inversion: L1 -> L2 in one task, L2 -> L1 in another. */
    afd_graph *g = make(3);
    CHECK_EQ_INT(afd_graph_edge(g, 2, 1), 0);
    CHECK_EQ_INT(afd_graph_edge(g, 1, 2), 0);
    uint32_t cycle[4];
    size_t len = 0;
    CHECK_EQ_INT(afd_graph_find_cycle(g, cycle, 4, &len), 1);
    const uint32_t want[] = {1, 2};
    check_cycle(cycle, len, want, 2);
    afd_graph_free(g);
}

TEST(three_cycle_rotated)
{
    /* DFS goes 0 -> 4 -> 2 -> 3 and meets grey 4: the stack segment is 4, 2, 3, reported from its
     * smallest node in edge order: 2 -> 3 -> 4 (-> 2). */
    afd_graph *g = make(6);
    CHECK_EQ_INT(afd_graph_edge(g, 0, 4), 0);
    CHECK_EQ_INT(afd_graph_edge(g, 4, 2), 0);
    CHECK_EQ_INT(afd_graph_edge(g, 2, 3), 0);
    CHECK_EQ_INT(afd_graph_edge(g, 3, 4), 0);
    CHECK_EQ_INT(afd_graph_edge(g, 5, 5), 0); /* A later cycle: not the one reported. */
    uint32_t cycle[6];
    size_t len = 0;
    CHECK_EQ_INT(afd_graph_find_cycle(g, cycle, 6, &len), 1);
    const uint32_t want[] = {2, 3, 4};
    check_cycle(cycle, len, want, 3);
    afd_graph_free(g);
}

TEST(edge_order_decides)
{
    /* Two cycles through 0: 0 -> 1 -> 0 and 0 -> 2 -> 3 -> 0. The first edge added from 0 wins. */
    afd_graph *g = make(4);
    CHECK_EQ_INT(afd_graph_edge(g, 0, 2), 0);
    CHECK_EQ_INT(afd_graph_edge(g, 0, 1), 0);
    CHECK_EQ_INT(afd_graph_edge(g, 1, 0), 0);
    CHECK_EQ_INT(afd_graph_edge(g, 2, 3), 0);
    CHECK_EQ_INT(afd_graph_edge(g, 3, 0), 0);
    uint32_t cycle[4];
    size_t len = 0;
    CHECK_EQ_INT(afd_graph_find_cycle(g, cycle, 4, &len), 1);
    const uint32_t want[] = {0, 2, 3};
    check_cycle(cycle, len, want, 3);
    afd_graph_free(g);
}

TEST(self_loop)
{
    afd_graph *g = make(4);
    CHECK_EQ_INT(afd_graph_edge(g, 0, 1), 0);
    CHECK_EQ_INT(afd_graph_edge(g, 1, 3), 0);
    CHECK_EQ_INT(afd_graph_edge(g, 3, 3), 0);
    uint32_t cycle[2] = {9, 9};
    size_t len = 0;
    CHECK_EQ_INT(afd_graph_find_cycle(g, cycle, 2, &len), 1);
    const uint32_t want[] = {3};
    check_cycle(cycle, len, want, 1);
    CHECK_EQ_INT(cycle[1], 9);
    afd_graph_free(g);
}

TEST(duplicates_and_range)
{
    afd_graph *g = make(3);
    for (int i = 0; i < 5; i++) {
        CHECK_EQ_INT(afd_graph_edge(g, 0, 1), 0);
        CHECK_EQ_INT(afd_graph_edge(g, 1, 2), 0);
    }
    uint32_t cycle[3];
    size_t len = 0;
    CHECK_EQ_INT(afd_graph_find_cycle(g, cycle, 3, &len), 0);
    CHECK_EQ_INT(afd_graph_edge(g, 2, 0), 0);
    CHECK_EQ_INT(afd_graph_edge(g, 2, 0), 0);
    CHECK_EQ_INT(afd_graph_find_cycle(g, cycle, 3, &len), 1);
    const uint32_t want[] = {0, 1, 2};
    check_cycle(cycle, len, want, 3);
    CHECK_EQ_INT(afd_graph_edge(g, 3, 0), AFD_EINVAL);
    CHECK_EQ_INT(afd_graph_edge(g, 0, 3), AFD_EINVAL);
    CHECK_EQ_INT(afd_graph_edge(NULL, 0, 0), AFD_EINVAL);
    CHECK_EQ_INT(afd_graph_find_cycle(NULL, cycle, 3, &len), AFD_EINVAL);
    CHECK_EQ_INT(afd_graph_find_cycle(g, NULL, 3, &len), AFD_EINVAL);
    afd_graph_free(g);
}

TEST(many_duplicates_one_node)
{
    /* A node with many successors, each edge added many times: duplicates must stay ignored as
     * the edge set grows and rehashes. */
    enum { N = 3000 };
    afd_graph *g = make(N);
    for (int round = 0; round < 3; round++)
        for (uint32_t v = 1; v < N; v++)
            CHECK_EQ_INT(afd_graph_edge(g, 0, v), 0);
    CHECK_EQ_INT(afd_graph_edge(g, N - 1, 0), 0);
    uint32_t cycle[4];
    size_t len = 0;
    CHECK_EQ_INT(afd_graph_find_cycle(g, cycle, 4, &len), 1);
    const uint32_t want[] = {0, N - 1};
    check_cycle(cycle, len, want, 2);
    afd_graph_free(g);
}

TEST(cap_smaller_than_cycle)
{
    afd_graph *g = make(5);
    for (uint32_t i = 0; i < 5; i++)
        CHECK_EQ_INT(afd_graph_edge(g, (i + 3) % 5, (i + 4) % 5), 0);
    uint32_t cycle[4] = {77, 77, 77, 77};
    size_t len = 0;
    CHECK_EQ_INT(afd_graph_find_cycle(g, cycle, 2, &len), 1);
    CHECK_EQ_INT(len, 5);
    CHECK_EQ_INT(cycle[0], 0);
    CHECK_EQ_INT(cycle[1], 1);
    CHECK_EQ_INT(cycle[2], 77);
    /* No room at all still reports the length; len may be NULL. */
    CHECK_EQ_INT(afd_graph_find_cycle(g, NULL, 0, &len), 1);
    CHECK_EQ_INT(len, 5);
    CHECK_EQ_INT(afd_graph_find_cycle(g, cycle, 4, NULL), 1);
    afd_graph_free(g);
}

TEST(long_chain)
{
    enum { N = 100000 };
    afd_graph *g = make(N);
    for (uint32_t i = 0; i + 1 < N; i++)
        CHECK_EQ_INT(afd_graph_edge(g, i, i + 1), 0);
    size_t len = 1;
    CHECK_EQ_INT(afd_graph_find_cycle(g, NULL, 0, &len), 0);
    CHECK_EQ_INT(len, 0);
    afd_graph_free(g);
}

TEST(long_cycle)
{
    /* Added from the middle, so the search starts at 0 but the stack segment begins mid-cycle:
     * node 0 is in the cycle, and the rotation must put it first. */
    enum { N = 100000 };
    afd_graph *g = make(N);
    for (uint32_t k = 0; k < N; k++) {
        uint32_t i = (k + N / 2) % N;
        CHECK_EQ_INT(afd_graph_edge(g, i, (i + 1) % N), 0);
    }
    uint32_t *cycle = malloc(N * sizeof *cycle);
    CHECK(cycle != NULL);
    size_t len = 0;
    CHECK_EQ_INT(afd_graph_find_cycle(g, cycle, N, &len), 1);
    CHECK_EQ_INT(len, N);
    for (uint32_t i = 0; i < N; i++)
        if (cycle[i] != i)
            FAIL_AT("cycle[%u] == %u", i, cycle[i]);
    afd_graph_free(g);

    /* A tail leading into the cycle: 0 -> 1 -> ... -> 999 -> 1000 -> ... -> N-1 -> 1000. */
    g = make(N);
    for (uint32_t i = 0; i + 1 < N; i++)
        CHECK_EQ_INT(afd_graph_edge(g, i, i + 1), 0);
    CHECK_EQ_INT(afd_graph_edge(g, N - 1, 1000), 0);
    CHECK_EQ_INT(afd_graph_find_cycle(g, cycle, N, &len), 1);
    CHECK_EQ_INT(len, N - 1000);
    for (uint32_t i = 0; i < N - 1000; i++)
        if (cycle[i] != 1000 + i)
            FAIL_AT("cycle[%u] == %u", i, cycle[i]);
    afd_graph_free(g);
    free(cycle);
}

TEST(random_graphs)
{
    /* A cycle is reported exactly when the closure has a node reaching itself, and what is
     * reported is a real cycle: distinct nodes, each edge present, smallest first. */
    enum { N = 12 };
    for (uint64_t seed = 1; seed <= 500; seed++) {
        static uint8_t adj[N][N], reach[N][N];
        memset(adj, 0, sizeof adj);
        afd_graph *g = make(N);
        uint64_t density = 5 + seed % 20;
        for (uint32_t e = 0; e < 3 * N; e++) {
            uint64_t r = afd_mix64(seed << 16 ^ e);
            if (r % 100 >= density * 3)
                continue;
            uint32_t u = (uint32_t)(r >> 20) % N, v = (uint32_t)(r >> 40) % N;
            adj[u][v] = 1;
            CHECK_EQ_INT(afd_graph_edge(g, u, v), 0);
        }
        memcpy(reach, adj, sizeof reach);
        for (uint32_t k = 0; k < N; k++)
            for (uint32_t a = 0; a < N; a++)
                for (uint32_t b = 0; b < N; b++)
                    if (reach[a][k] && reach[k][b])
                        reach[a][b] = 1;
        int cyclic = 0;
        for (uint32_t a = 0; a < N; a++)
            cyclic |= reach[a][a];
        uint32_t cycle[N];
        size_t len = 0;
        CHECK_EQ_INT(afd_graph_find_cycle(g, cycle, N, &len), cyclic);
        if (cyclic) {
            CHECK(len >= 1 && len <= N);
            uint8_t used[N] = {0};
            for (size_t i = 0; i < len; i++) {
                CHECK(cycle[i] < N && !used[cycle[i]]);
                used[cycle[i]] = 1;
                CHECK(cycle[i] >= cycle[0]);
                CHECK(adj[cycle[i]][cycle[(i + 1) % len]]);
            }
        }
        afd_graph_free(g);
    }
}

int main(void)
{
    RUN_TESTS("graph", T(acyclic), T(two_cycle), T(three_cycle_rotated), T(edge_order_decides), T(self_loop),
              T(duplicates_and_range), T(many_duplicates_one_node), T(cap_smaller_than_cycle), T(long_chain),
              T(long_cycle), T(random_graphs));
}
