/* iclass.c -- interleaving-class fingerprints (see iclass.h for the relation and the form).
 *
 * Main invariant: the fingerprint is a function of the canonical form alone -- it reads strings,
 * never the ids a run hands out (task ids, object numbers, string indices), so renumbered runs of
 * one class hash alike. Workload: one fingerprint per explored run, a few thousand events each;
 * two sorts of the accesses dominate, hence O(n log n). */
#include "iclass.h"
#include "afd.h"

#include <stdlib.h>
#include <string.h>

typedef struct access {
    const char *res;   /* Borrowed: a trace string, or one of the owned "task:" names. */
    const char *label; /* Borrowed: the task's label. */
    const char *kind;  /* Borrowed: a trace string or a static name. */
    uint32_t seq;      /* The event's index: the order the run made the accesses in. */
    uint32_t occ;      /* Occurrence number among this task's accesses to this resource. */
    uint8_t write;
} access;

typedef struct task_label {
    uint32_t id;
    uint32_t seq;      /* The TASK event's index: the first one of an id wins, as in the trace's lookup. */
    const char *label; /* Borrowed. */
} task_label;

typedef struct labels {
    task_label *v; /* Owned, sorted by (id, seq). */
    uint32_t n;
} labels;

static int cmp_label(const void *pa, const void *pb)
{
    const task_label *a = pa, *b = pb;
    if (a->id != b->id)
        return a->id < b->id ? -1 : 1;
    return (a->seq > b->seq) - (a->seq < b->seq);
}

static int labels_build(labels *self, const afd_trace *tr)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < tr->n_events; i++)
        n += tr->events[i].kind == AFD_EV_TASK;
    self->n = 0;
    self->v = malloc(((size_t)n + 1) * sizeof *self->v);
    if (!self->v)
        return AFD_ENOMEM;
    for (uint32_t i = 0; i < tr->n_events; i++) {
        const afd_event *ev = &tr->events[i];
        if (ev->kind == AFD_EV_TASK)
            self->v[self->n++] = (task_label){ev->task, i, afd_trace_string(tr, ev->b)};
    }
    qsort(self->v, self->n, sizeof *self->v, cmp_label);
    return 0;
}

/* The label of task id: "?" for an id no TASK event named (as afd_trace_task_label). */
static const char *labels_find(const labels *self, uint32_t id)
{
    uint32_t lo = 0, hi = self->n;
    while (lo < hi) { /* the first entry whose id is >= id */
        uint32_t mid = lo + (hi - lo) / 2;
        if (self->v[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < self->n && self->v[lo].id == id ? self->v[lo].label : "?";
}

static int is_access(const afd_event *ev)
{
    return ev->kind == AFD_EV_OP_BEGIN || ev->kind == AFD_EV_CANCEL ||
           (ev->kind == AFD_EV_SYNC && ev->flags != AFD_SYNC_CREATE);
}

static int sync_is_read(int kind)
{
    return kind == AFD_SYNC_EVENT_OBSERVE || kind == AFD_SYNC_EVENT_CHECK || kind == AFD_SYNC_QUEUE_CHECK;
}

/* "task:<label>", owned by the caller. */
static char *task_resource(const char *label)
{
    size_t n = strlen(label);
    char *s = malloc(n + 6);
    if (!s)
        return NULL;
    memcpy(s, "task:", 5);
    memcpy(s + 5, label, n + 1);
    return s;
}

/* Fills one access from event i; a CANCEL's resource name is allocated into *owned. */
static int access_of(const afd_trace *tr, const labels *lb, uint32_t i, access *out, char **owned)
{
    const afd_event *ev = &tr->events[i];
    *out = (access){.label = labels_find(lb, ev->task), .seq = i};
    switch (ev->kind) {
    case AFD_EV_OP_BEGIN:
        out->res = afd_trace_string(tr, ev->b);
        out->write = ev->flags & 1;
        out->kind = ev->a == AFD_NOSTR ? (out->write ? "write" : "read") : afd_trace_string(tr, ev->a);
        return 0;
    case AFD_EV_SYNC:
        out->res = afd_trace_string(tr, ev->b);
        out->write = !sync_is_read(ev->flags);
        out->kind = afd_sync_kind_name(ev->flags);
        return 0;
    default: /* AFD_EV_CANCEL */
        *owned = task_resource(labels_find(lb, ev->a));
        if (!*owned)
            return AFD_ENOMEM;
        out->res = *owned;
        out->write = 1;
        out->kind = "cancel";
        return 0;
    }
}

static int cmp_seq(uint32_t a, uint32_t b)
{
    return (a > b) - (a < b);
}

/* Groups each task's accesses to each resource together, in run order. */
static int cmp_res_label_seq(const void *pa, const void *pb)
{
    const access *a = pa, *b = pb;
    int c = strcmp(a->res, b->res);
    if (c)
        return c;
    c = strcmp(a->label, b->label);
    return c ? c : cmp_seq(a->seq, b->seq);
}

/* Each resource's accesses in run order, resources by name. */
static int cmp_res_seq(const void *pa, const void *pb)
{
    const access *a = pa, *b = pb;
    int c = strcmp(a->res, b->res);
    return c ? c : cmp_seq(a->seq, b->seq);
}

static int cmp_u64(const void *pa, const void *pb)
{
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return (a > b) - (a < b);
}

/* Integers are hashed as little-endian bytes, so a fingerprint means the same on every host. */
static uint64_t hash_u64(uint64_t h, uint64_t x)
{
    uint8_t b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(x >> (8 * i));
    return afd_fnv1a(h, b, sizeof b);
}

static uint64_t hash_str(uint64_t h, const char *s)
{
    return afd_fnv1a(h, s, strlen(s) + 1); /* the NUL separates consecutive strings */
}

static uint64_t identity(const access *a)
{
    uint64_t h = hash_str(hash_str(AFD_FNV_INIT, a->label), a->kind);
    return afd_mix64(hash_u64(h, ((uint64_t)a->write << 32) | a->occ));
}

/* Hashes a group of reads as a sorted multiset: a tag, its size, then the sorted identities. */
static uint64_t hash_reads(uint64_t h, uint64_t *reads, uint32_t n)
{
    if (!n)
        return h;
    qsort(reads, n, sizeof *reads, cmp_u64);
    h = hash_u64(afd_fnv1a(h, "R", 1), n);
    for (uint32_t i = 0; i < n; i++)
        h = hash_u64(h, reads[i]);
    return h;
}

/* The canonical form's hash over accesses sorted by (resource, run order); reads is scratch space
 * of n entries. */
static uint64_t hash_form(const access *acc, uint32_t n, uint64_t *reads)
{
    uint64_t h = AFD_FNV_INIT;
    uint32_t n_reads = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (i == 0 || strcmp(acc[i].res, acc[i - 1].res) != 0) {
            h = hash_reads(h, reads, n_reads);
            n_reads = 0;
            h = hash_str(afd_fnv1a(h, "S", 1), acc[i].res);
        }
        if (!acc[i].write) {
            reads[n_reads++] = identity(&acc[i]);
            continue;
        }
        h = hash_reads(h, reads, n_reads);
        n_reads = 0;
        h = hash_u64(afd_fnv1a(h, "W", 1), identity(&acc[i]));
    }
    return afd_mix64(hash_reads(h, reads, n_reads));
}

/* Occurrence numbers, over accesses sorted by (resource, label, run order). */
static void number_occurrences(access *acc, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        int same =
            i > 0 && strcmp(acc[i].res, acc[i - 1].res) == 0 && strcmp(acc[i].label, acc[i - 1].label) == 0;
        acc[i].occ = same ? acc[i - 1].occ + 1 : 0;
    }
}

int afd_iclass_fingerprint(const afd_trace *tr, uint64_t *fp, uint32_t *n_access)
{
    labels lb = {0};
    access *acc = NULL;
    char **owned = NULL;
    uint64_t *reads = NULL;
    uint32_t n = 0, n_owned = 0;
    int rc = labels_build(&lb, tr);
    if (rc)
        goto done;
    for (uint32_t i = 0; i < tr->n_events; i++)
        n += (uint32_t)is_access(&tr->events[i]);
    acc = malloc(((size_t)n + 1) * sizeof *acc);
    owned = calloc((size_t)n + 1, sizeof *owned);
    reads = malloc(((size_t)n + 1) * sizeof *reads);
    rc = acc && owned && reads ? 0 : AFD_ENOMEM;
    for (uint32_t i = 0, k = 0; !rc && i < tr->n_events; i++) {
        if (!is_access(&tr->events[i]))
            continue;
        rc = access_of(tr, &lb, i, &acc[k++], &owned[n_owned]);
        n_owned += owned[n_owned] != NULL;
    }
    if (rc)
        goto done;
    qsort(acc, n, sizeof *acc, cmp_res_label_seq);
    number_occurrences(acc, n);
    qsort(acc, n, sizeof *acc, cmp_res_seq);
    if (fp)
        *fp = hash_form(acc, n, reads);
    if (n_access)
        *n_access = n;
done:
    for (uint32_t i = 0; owned && i < n_owned; i++)
        free(owned[i]);
    free(owned);
    free(acc);
    free(reads);
    free(lb.v);
    return rc;
}
