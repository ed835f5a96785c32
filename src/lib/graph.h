/* graph.h -- a small directed graph and its cycles: the lock-order graph (an edge L1 -> L2 when
 * a task acquired L2 while holding L1; a cycle is a potential deadlock even if no run deadlocked)
 * and the wait-for graph of a hang (an edge T1 -> T2 when task T1 waits for something T2 holds). */
#ifndef AFD_GRAPH_H
#define AFD_GRAPH_H

#include <stddef.h>
#include <stdint.h>

typedef struct afd_graph afd_graph;

/* A graph over nodes 0..n_nodes-1 without edges. NULL on allocation failure. */
afd_graph *afd_graph_new(uint32_t n_nodes);
void afd_graph_free(afd_graph *self); /* Accepts NULL. */

/* Adds the edge u -> v (duplicates are ignored; a self-loop u -> u is a cycle of length 1).
 * AFD_EINVAL when u or v is out of range. */
int afd_graph_edge(afd_graph *self, uint32_t u, uint32_t v);

/* Finds one cycle, deterministically: the cycle reached by a depth-first search that starts from
 * the lowest-numbered node and visits successors in the order their edges were added. Writes its
 * nodes in edge order (cycle[0] -> cycle[1] -> ... -> cycle[len-1] -> cycle[0]) into cycle[0..cap),
 * rotated so that the smallest node id comes first, and its length into *len (which may exceed
 * cap: then only the first cap nodes are written). Returns 1 when a cycle exists, 0 when the graph
 * is acyclic, a negative AFD_E* code on allocation failure. Iterative: deep graphs do not overflow
 * the stack. */
int afd_graph_find_cycle(const afd_graph *self, uint32_t *cycle, size_t cap, size_t *len);

#endif
