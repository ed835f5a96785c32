/* hb.c -- happens-before over the steps of one run, by vector clocks.
 *
 * Main invariant: after afd_hb_compute, clock[s][t] is the number of steps of task t that happen
 * before or at step s, so a happens before b exactly when b's clock has counted a's own step.
 * Workload: one relation per analysed run, a few thousand steps over a few dozen tasks, with
 * about as many edges as steps; the clocks (steps x tasks u32) dominate memory, hence the cap in
 * the header. Edges arrive in any order while the run is replayed, then one forward pass. */
#include "hb.h"
#include "afd.h"

#include <stdlib.h>
#include <string.h>

#define NO_EDGE UINT32_MAX

/* One incoming edge, in a singly linked list per target step: edges arrive in any order, and the
 * pass needs, for each step, the sources of the edges into it. */
typedef struct hb_edge {
    uint32_t from;
    uint32_t next; /* The next edge into the same step, or NO_EDGE. */
} hb_edge;

struct afd_hb {
    uint32_t n_steps, n_tasks;
    uint32_t *task;    /* Dense task index of each step. */
    uint32_t *in_head; /* First edge into each step, or NO_EDGE. */
    hb_edge *edges;
    uint32_t n_edges, cap_edges;
    uint32_t *clock; /* n_steps rows of n_tasks, after afd_hb_compute. */
};

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Replaces task ids by their rank among the distinct ids: dense indices make a clock an array
 * rather than a map, and ranks depend only on the ids, not on the order steps list them. */
static int densify(afd_hb *self, const uint32_t *task_of_step)
{
    uint32_t n = self->n_steps;
    uint32_t *ids = malloc(((size_t)n + 1) * sizeof *ids);
    if (!ids)
        return AFD_ENOMEM;
    if (n) /* An empty run may pass task_of_step NULL, which memcpy must never see. */
        memcpy(ids, task_of_step, (size_t)n * sizeof *ids);
    qsort(ids, n, sizeof *ids, cmp_u32);
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++)
        if (k == 0 || ids[k - 1] != ids[i])
            ids[k++] = ids[i];
    for (uint32_t i = 0; i < n; i++) {
        const uint32_t *hit = bsearch(&task_of_step[i], ids, k, sizeof *ids, cmp_u32);
        self->task[i] = (uint32_t)(hit - ids);
    }
    self->n_tasks = k;
    free(ids);
    return 0;
}

afd_hb *afd_hb_new(uint32_t n_steps, const uint32_t *task_of_step)
{
    if (n_steps && !task_of_step)
        return NULL;
    afd_hb *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->n_steps = n_steps;
    /* One extra element keeps malloc(0) out of the picture for an empty run. */
    self->task = malloc(((size_t)n_steps + 1) * sizeof *self->task);
    self->in_head = malloc(((size_t)n_steps + 1) * sizeof *self->in_head);
    if (!self->task || !self->in_head || densify(self, task_of_step) < 0 ||
        (uint64_t)n_steps * self->n_tasks > AFD_HB_MAX_CELLS) {
        afd_hb_free(self);
        return NULL;
    }
    for (uint32_t i = 0; i < n_steps; i++)
        self->in_head[i] = NO_EDGE;
    return self;
}

void afd_hb_free(afd_hb *self)
{
    if (!self)
        return;
    free(self->task);
    free(self->in_head);
    free(self->edges);
    free(self->clock);
    free(self);
}

int afd_hb_edge(afd_hb *self, uint32_t from, uint32_t to)
{
    /* Edges after the clocks exist would silently not count; refusing them surfaces the bug. */
    if (!self || from >= to || to >= self->n_steps || self->clock)
        return AFD_EINVAL;
    /* A duplicate of the newest edge into `to` is the common case (a replay reporting the same
     * wake twice) and costs nothing to skip; older duplicates are harmless in the max. */
    if (self->in_head[to] != NO_EDGE && self->edges[self->in_head[to]].from == from)
        return 0;
    if (self->n_edges == self->cap_edges) {
        if (self->cap_edges >= NO_EDGE / 2)
            return AFD_EFULL;
        uint32_t cap = self->cap_edges ? self->cap_edges * 2 : 64;
        hb_edge *e = realloc(self->edges, (size_t)cap * sizeof *e);
        if (!e)
            return AFD_ENOMEM;
        self->edges = e;
        self->cap_edges = cap;
    }
    self->edges[self->n_edges] = (hb_edge){.from = from, .next = self->in_head[to]};
    self->in_head[to] = self->n_edges++;
    return 0;
}

int afd_hb_compute(afd_hb *self)
{
    if (!self)
        return AFD_EINVAL;
    if (self->clock)
        return 0; /* Edges cannot change after the first compute, so the clocks still hold. */
    size_t w = self->n_tasks;
    uint32_t *clock = calloc((size_t)self->n_steps * w + 1, sizeof *clock);
    uint32_t *last = malloc((w + 1) * sizeof *last); /* Each task's latest step so far. */
    if (!clock || !last) {
        free(clock);
        free(last);
        return AFD_ENOMEM;
    }
    for (size_t t = 0; t < w; t++)
        last[t] = NO_EDGE;
    /* Every edge points forward, so execution order is a topological order: the clocks of all
     * of a step's predecessors are final when the step is reached. */
    for (uint32_t s = 0; s < self->n_steps; s++) {
        uint32_t t = self->task[s];
        uint32_t *row = clock + (size_t)s * w;
        if (last[t] != NO_EDGE)
            memcpy(row, clock + (size_t)last[t] * w, w * sizeof *row);
        for (uint32_t e = self->in_head[s]; e != NO_EDGE; e = self->edges[e].next) {
            const uint32_t *src = clock + (size_t)self->edges[e].from * w;
            for (size_t k = 0; k < w; k++)
                if (src[k] > row[k])
                    row[k] = src[k];
        }
        row[t]++; /* At most n_steps < 2^32 steps per task: no overflow. */
        last[t] = s;
    }
    free(last);
    self->clock = clock;
    return 0;
}

int afd_hb_before(const afd_hb *self, uint32_t a, uint32_t b)
{
    if (!self || !self->clock || a == b || a >= self->n_steps || b >= self->n_steps)
        return 0;
    size_t w = self->n_tasks, t = self->task[a];
    return self->clock[(size_t)a * w + t] <= self->clock[(size_t)b * w + t];
}

int afd_hb_concurrent(const afd_hb *self, uint32_t a, uint32_t b)
{
    if (!self || !self->clock || a == b || a >= self->n_steps || b >= self->n_steps)
        return 0;
    return !afd_hb_before(self, a, b) && !afd_hb_before(self, b, a);
}

uint32_t afd_hb_tasks(const afd_hb *self)
{
    return self ? self->n_tasks : 0;
}
