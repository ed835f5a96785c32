/* graph.c -- a small directed graph and one deterministic cycle in it.
 *
 * Main invariant: the cycle reported depends only on the nodes and the order edges were added,
 * so two analyses of the same run name the same deadlock in the same words.
 * Workload: lock-order and wait-for graphs of one run, tens to thousands of nodes; but a graph
 * built from a long trace can be a chain hundreds of thousands deep, so the search keeps its own
 * stack on the heap instead of recursing. */
#include "graph.h"
#include "afd.h"

#include <stdlib.h>
#include <string.h>

#define NO_EDGE UINT32_MAX
#define EMPTY_KEY UINT64_MAX /* (u << 32 | v) for u, v < n_nodes <= UINT32_MAX is never this. */

/* Out-edges live in one array and are chained per node from first added to last added, which is
 * the order the search must visit them in. */
typedef struct g_edge {
    uint32_t v;
    uint32_t next; /* The next edge out of the same node, or NO_EDGE. */
} g_edge;

struct afd_graph {
    uint32_t n_nodes;
    uint32_t *head, *tail; /* First and last edge out of each node, or NO_EDGE. */
    g_edge *edges;
    uint32_t n_edges, cap_edges;
    /* Every edge's key, open-addressed, so a duplicate costs O(1) to detect even at a node with
     * thousands of successors. Twice the edge capacity, so it is never more than half full. */
    uint64_t *keys;
    size_t n_keys;
};

afd_graph *afd_graph_new(uint32_t n_nodes)
{
    afd_graph *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->n_nodes = n_nodes;
    /* One extra element keeps malloc(0) out of the picture for an empty graph. */
    self->head = malloc(((size_t)n_nodes + 1) * sizeof *self->head);
    self->tail = malloc(((size_t)n_nodes + 1) * sizeof *self->tail);
    if (!self->head || !self->tail) {
        afd_graph_free(self);
        return NULL;
    }
    for (uint32_t i = 0; i < n_nodes; i++)
        self->head[i] = self->tail[i] = NO_EDGE;
    return self;
}

void afd_graph_free(afd_graph *self)
{
    if (!self)
        return;
    free(self->head);
    free(self->tail);
    free(self->edges);
    free(self->keys);
    free(self);
}

/* The key's slot: either the key itself (a duplicate) or the empty slot where it belongs. */
static uint64_t *key_slot(uint64_t *keys, size_t n_keys, uint64_t key)
{
    size_t mask = n_keys - 1;
    for (size_t i = (size_t)afd_mix64(key) & mask;; i = (i + 1) & mask)
        if (keys[i] == key || keys[i] == EMPTY_KEY)
            return &keys[i];
}

static int grow(afd_graph *self)
{
    if (self->cap_edges >= NO_EDGE / 2)
        return AFD_EFULL;
    uint32_t cap = self->cap_edges ? self->cap_edges * 2 : 32;
    size_t n_keys = (size_t)cap * 2;
    if (n_keys > SIZE_MAX / sizeof(uint64_t))
        return AFD_ENOMEM;
    uint64_t *keys = malloc(n_keys * sizeof *keys);
    if (!keys)
        return AFD_ENOMEM;
    g_edge *e = realloc(self->edges, (size_t)cap * sizeof *e);
    if (!e) {
        free(keys);
        return AFD_ENOMEM;
    }
    self->edges = e;
    self->cap_edges = cap;
    memset(keys, 0xff, n_keys * sizeof *keys); /* Every byte 0xff: EMPTY_KEY. */
    for (size_t i = 0; i < self->n_keys; i++)
        if (self->keys[i] != EMPTY_KEY)
            *key_slot(keys, n_keys, self->keys[i]) = self->keys[i];
    free(self->keys);
    self->keys = keys;
    self->n_keys = n_keys;
    return 0;
}

int afd_graph_edge(afd_graph *self, uint32_t u, uint32_t v)
{
    if (!self || u >= self->n_nodes || v >= self->n_nodes)
        return AFD_EINVAL;
    uint64_t key = (uint64_t)u << 32 | v;
    if (self->n_keys && *key_slot(self->keys, self->n_keys, key) == key)
        return 0;
    if (self->n_edges == self->cap_edges) {
        int rc = grow(self);
        if (rc < 0)
            return rc;
    }
    *key_slot(self->keys, self->n_keys, key) = key;
    uint32_t e = self->n_edges++;
    self->edges[e] = (g_edge){.v = v, .next = NO_EDGE};
    if (self->tail[u] == NO_EDGE)
        self->head[u] = e;
    else
        self->edges[self->tail[u]].next = e;
    self->tail[u] = e;
    return 0;
}

enum { WHITE, GREY, BLACK };

/* Writes the cycle stack[start..depth) rotated so its smallest node comes first. The stack holds
 * the path in edge order (each node was pushed by an edge from the one below it) and the edge that
 * found the grey node closes it, so a rotation keeps the edge order. */
static void emit_cycle(const uint32_t *stack, size_t start, size_t depth, uint32_t *cycle, size_t cap,
                       size_t *len)
{
    size_t n = depth - start, lowest = 0;
    for (size_t i = 1; i < n; i++)
        if (stack[start + i] < stack[start + lowest])
            lowest = i;
    for (size_t j = 0; j < n && j < cap; j++)
        cycle[j] = stack[start + (lowest + j) % n];
    if (len)
        *len = n;
}

int afd_graph_find_cycle(const afd_graph *self, uint32_t *cycle, size_t cap, size_t *len)
{
    if (len)
        *len = 0;
    if (!self || (cap && !cycle))
        return AFD_EINVAL;
    size_t n = self->n_nodes;
    uint8_t *color = calloc(n + 1, sizeof *color); /* calloc: every node starts WHITE. */
    uint32_t *stack = malloc((n + 1) * sizeof *stack);
    uint32_t *cursor = malloc((n + 1) * sizeof *cursor); /* Next edge to follow, per frame. */
    uint32_t *pos = malloc((n + 1) * sizeof *pos);       /* Stack depth of each grey node. */
    int rc = AFD_ENOMEM;
    if (!color || !stack || !cursor || !pos)
        goto out;
    rc = 0;
    for (uint32_t root = 0; root < n && !rc; root++) {
        if (color[root] != WHITE)
            continue;
        size_t depth = 1;
        stack[0] = root;
        cursor[0] = self->head[root];
        pos[root] = 0;
        color[root] = GREY;
        while (depth && !rc) {
            uint32_t u = stack[depth - 1], e = cursor[depth - 1];
            if (e == NO_EDGE) {
                color[u] = BLACK; /* Every path from u was explored: no cycle runs through it. */
                depth--;
                continue;
            }
            cursor[depth - 1] = self->edges[e].next;
            uint32_t v = self->edges[e].v;
            if (color[v] == WHITE) {
                /* A node is pushed only while WHITE and leaves as BLACK, so depth <= n. */
                stack[depth] = v;
                cursor[depth] = self->head[v];
                pos[v] = (uint32_t)depth;
                color[v] = GREY;
                depth++;
            } else if (color[v] == GREY) {
                emit_cycle(stack, pos[v], depth, cycle, cap, len);
                rc = 1;
            }
        }
    }
out:
    free(color);
    free(stack);
    free(cursor);
    free(pos);
    return rc;
}
