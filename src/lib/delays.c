/* delays.c -- matching a schedule's explicit delays against the steps a run recorded (delays.h).
 *
 * Runs once per replayed run, after the run: a trace has up to a few hundred thousand events and a
 * token up to AFD_TOKEN_MAX_DELAYS delays, so the delays are sorted by ordinal once and each STEP
 * event is looked up by binary search rather than compared with every delay. */
#include "delays.h"
#include "afd.h"

#include <stdlib.h>
#include <string.h>

typedef struct by_ordinal {
    uint32_t ordinal;
    uint32_t index; /* into sched->delays */
} by_ordinal;

static int cmp_ordinal(const void *a, const void *b)
{
    const by_ordinal *x = a, *y = b;
    return x->ordinal < y->ordinal ? -1 : x->ordinal > y->ordinal;
}

/* The label of each task id that has a TASK event (NULL elsewhere), indexed by id; ids above the
 * number of events cannot be a recorder's and are left out. *out is the caller's to free. */
static int task_labels(const afd_trace *tr, const char ***out, uint32_t *n_out)
{
    uint32_t n = tr->n_events + 1;
    const char **labels = calloc(n, sizeof *labels);
    if (!labels)
        return AFD_ENOMEM;
    for (uint32_t i = 0; i < tr->n_events; i++) {
        const afd_event *e = &tr->events[i];
        if (e->kind == AFD_EV_TASK && e->task < n && e->b != AFD_NOSTR && e->b < tr->n_strings)
            labels[e->task] = tr->strings[e->b];
    }
    *out = labels;
    *n_out = n;
    return 0;
}

int afd_delays_mark_ran(const afd_schedule *sched, const afd_trace *tr, uint8_t *ran)
{
    if (!sched->n_delays || !tr->n_events)
        return 0;
    int rc = 0;
    const char **labels = NULL;
    uint32_t n_labels = 0;
    by_ordinal *order = malloc(sched->n_delays * sizeof *order);
    if (!order) {
        rc = AFD_ENOMEM;
        goto out;
    }
    for (uint32_t i = 0; i < sched->n_delays; i++)
        order[i] = (by_ordinal){sched->delays[i].ordinal, i};
    qsort(order, sched->n_delays, sizeof *order, cmp_ordinal);
    rc = task_labels(tr, &labels, &n_labels);
    if (rc < 0)
        goto out;
    for (uint32_t i = 0; i < tr->n_events; i++) {
        const afd_event *e = &tr->events[i];
        if (e->kind != AFD_EV_STEP || e->task >= n_labels || !labels[e->task])
            continue;
        /* the first delay with this ordinal, then every delay that shares it */
        size_t lo = 0, hi = sched->n_delays;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (order[mid].ordinal < e->a)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (size_t k = lo; k < sched->n_delays && order[k].ordinal == e->a; k++)
            if (strcmp(sched->delays[order[k].index].label, labels[e->task]) == 0)
                ran[order[k].index] = 1;
    }
out:
    free(order);
    free(labels);
    return rc;
}
