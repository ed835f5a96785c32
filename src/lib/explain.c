/* explain.c -- a run's view: its steps and the accesses its tasks made, built from a trace and,
 * for traced lines, from the source (see explain.h; the relations between accesses are in
 * explain_pairs.c).
 *
 * Invariant: every table is sized by the trace's event count (afd_trace_id_bound), never by an id
 * the trace claims, and the accesses stop at AFD_EXPLAIN_MAX_ACCESSES while steps and edges go on.
 * Workload: one view per failing and per passing run kept, built in one pass over the events. */
#include "explain.h"
#include "afd.h"
#include "fileio.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a tiny u64 -> u32 counter table ---- */

typedef struct ctab {
    uint64_t *k; /* Owned: keys, 0 in an empty slot. */
    uint32_t *v; /* Owned: the counts, parallel to k. */
    size_t cap, used;
} ctab;

static int ctab_bump(ctab *t, uint64_t key, uint32_t *before)
{
    if ((t->used + 1) * 2 > t->cap) {
        size_t ncap = t->cap ? t->cap * 2 : 64;
        uint64_t *nk = calloc(ncap, sizeof *nk);
        uint32_t *nv = calloc(ncap, sizeof *nv);
        if (!nk || !nv) {
            free(nk);
            free(nv);
            return AFD_ENOMEM;
        }
        for (size_t i = 0; i < t->cap; i++) {
            if (!t->k[i])
                continue;
            size_t j = (size_t)afd_mix64(t->k[i]) & (ncap - 1);
            while (nk[j])
                j = (j + 1) & (ncap - 1);
            nk[j] = t->k[i];
            nv[j] = t->v[i];
        }
        free(t->k);
        free(t->v);
        t->k = nk;
        t->v = nv;
        t->cap = ncap;
    }
    if (!key)
        key = 1; /* 0 marks an empty slot */
    size_t j = (size_t)afd_mix64(key) & (t->cap - 1);
    while (t->k[j] && t->k[j] != key)
        j = (j + 1) & (t->cap - 1);
    if (!t->k[j]) {
        t->k[j] = key;
        t->v[j] = 0;
        t->used++;
    }
    *before = t->v[j]++;
    return 0;
}

static void ctab_free(ctab *t)
{
    if (!t)
        return;
    free(t->k);
    free(t->v);
}

/* ---- building a view ---- */

typedef struct objstate {
    uint32_t label;
    uint32_t last_release; /* lock or semaphore */
    uint32_t last_set;     /* event */
    uint32_t puts, gets;   /* queue: counts, to match the k-th get with the k-th put */
    uint32_t *put_steps;   /* Owned: the step of each put, in order. */
    uint32_t cap_puts;
} objstate;

static uint64_t hash_str(uint64_t h, const char *s)
{
    h = afd_fnv1a(h, s, strlen(s));
    return afd_fnv1a(h, "\x1f", 1);
}

static int add_edge(afd_view *v, uint32_t from, uint32_t to)
{
    if (from == AFD_NOPOS || from >= to)
        return 0;
    if (v->n_edges == v->cap_edges) {
        uint32_t ncap = v->cap_edges ? v->cap_edges * 2 : 64;
        uint32_t *f = realloc(v->edge_from, ncap * sizeof *f);
        if (!f)
            return AFD_ENOMEM;
        v->edge_from = f;
        uint32_t *t = realloc(v->edge_to, ncap * sizeof *t);
        if (!t)
            return AFD_ENOMEM;
        v->edge_to = t;
        v->cap_edges = ncap;
    }
    v->edge_from[v->n_edges] = from;
    v->edge_to[v->n_edges] = to;
    v->n_edges++;
    return 0;
}

static int add_access(afd_view *v, ctab *occ, const char **labels, uint32_t n_labels, uint32_t task,
                      const char *name, const char *resource, int write, int sync)
{
    if (v->n_acc >= AFD_EXPLAIN_MAX_ACCESSES)
        return AFD_EFULL;
    const char *label = task < n_labels && labels[task] ? labels[task]
                        : task ? "an unlabelled task" /* the trace holds no creation event for it */
                               : "code outside any loop step";
    uint64_t h = hash_str(hash_str(hash_str(AFD_FNV_INIT, label), name), resource);
    uint32_t n;
    int rc = ctab_bump(occ, h, &n);
    if (rc < 0)
        return rc;
    afd_xaccess *a = &v->acc[v->n_acc++];
    a->step = v->n_steps;
    a->task = task;
    a->label = label;
    a->name = name;
    a->resource = resource;
    a->write = (uint8_t)write;
    a->sync = (uint8_t)sync;
    a->inferred = 0;
    a->root = 0;
    a->role = 0;
    a->line = 0;
    a->file = NULL;
    a->root_name = NULL;
    a->occurrence = n;
    a->key = afd_mix64(h ^ ((uint64_t)n * 0x9e3779b97f4a7c15ULL));
    a->chain = AFD_NOSTR;
    return 0;
}

static objstate *object(objstate **objs, uint32_t *n_objs, uint32_t number)
{
    if (number >= *n_objs) {
        if (number > UINT32_MAX - 16) /* number + 16 would wrap: a table too small for number */
            return NULL;
        uint32_t ncap = number + 16;
        objstate *no = realloc(*objs, ncap * sizeof *no);
        if (!no)
            return NULL;
        for (uint32_t i = *n_objs; i < ncap; i++) {
            memset(&no[i], 0, sizeof no[i]);
            no[i].label = AFD_NOSTR;
            no[i].last_release = no[i].last_set = AFD_NOPOS;
        }
        *objs = no;
        *n_objs = ncap;
    }
    return &(*objs)[number];
}

int afd_view_build(afd_view *v, const afd_trace *tr)
{
    return afd_view_build_src(v, tr, NULL);
}

static const char *intern_resource(afd_view *v, const char *res);

/* The name a fix guards: the global's name, or the first attribute after self/cls. */
static const char *root_name_of(afd_view *v, const afd_pyaccess *pa)
{
    if (pa->root != AFD_ROOT_SELF && pa->root != AFD_ROOT_CLS)
        return intern_resource(v, pa->name);
    char attr[256];
    const char *p = pa->path[0] == '.' ? pa->path + 1 : pa->path;
    size_t n = strcspn(p, ".[");
    if (n >= sizeof attr)
        n = sizeof attr - 1;
    memcpy(attr, p, n);
    attr[n] = 0;
    return intern_resource(v, attr);
}

static const char *intern_resource(afd_view *v, const char *res)
{
    for (uint32_t i = v->n_names; i-- > 0 && i + 256 >= v->n_names;) /* recent names: loops repeat */
        if (strcmp(v->names[i], res) == 0)
            return v->names[i];
    if (v->n_names == v->cap_names) {
        uint32_t ncap = v->cap_names ? v->cap_names * 2 : 32;
        char **nn = realloc(v->names, ncap * sizeof *nn);
        if (!nn)
            return NULL;
        v->names = nn;
        v->cap_names = ncap;
    }
    char *copy = strdup(res);
    if (!copy)
        return NULL;
    v->names[v->n_names++] = copy;
    return copy;
}

/* An observed access (an asyncio primitive's operation, an annotated operation's end) placed at
 * the line of user code its step was running (the last traced line before it, in that step), and
 * given, from the source, the first module-level or attribute root that line touches -- preferring
 * one with the same access -- so a fix knows where the access is and what it is on. Not inferred:
 * the access itself was observed. */
static int place_at_line(afd_view *v, afd_srcmap *src, const afd_trace *tr, uint32_t file, uint32_t line)
{
    afd_xaccess *xa = &v->acc[v->n_acc - 1];
    if (file == AFD_NOSTR || !line)
        return 0;
    xa->file = afd_trace_string(tr, file);
    xa->line = line;
    const afd_pyscan *ps = src ? afd_view_srcmap_get(src, xa->file) : NULL;
    if (!ps)
        return 0;
    const afd_pyaccess *pick = NULL;
    size_t first, count;
    if (!xa->sync) {
        /* An annotation -- `access("BALANCE.amount", "read")` -- stands next to the access it
         * names: the nearest line (this one, then one, two, three lines either way) that touches
         * the annotated resource's root, preferring the same kind of access. */
        char root[128];
        size_t rl = strcspn(xa->resource, ".[");
        if (rl && rl < sizeof root) {
            memcpy(root, xa->resource, rl);
            root[rl] = 0;
            for (int d = 0; d <= 6 && !pick; d++) {
                long at = (long)line + (d % 2 ? (d + 1) / 2 : -(d / 2));
                if (at < 1)
                    continue;
                afd_pyscan_line(ps, (uint32_t)at, &first, &count);
                for (size_t k = 0; k < count; k++) {
                    const afd_pyaccess *pa = &ps->acc[first + k];
                    const char *name = pa->root == AFD_ROOT_GLOBAL ? pa->name
                                       : pa->root == AFD_ROOT_SELF ? root_name_of(v, pa)
                                                                   : NULL;
                    if (name && !strcmp(name, root) &&
                        (!pick || (pa->write == xa->write && pick->write != xa->write)))
                        pick = pa;
                }
                if (pick)
                    xa->line = (uint32_t)at;
            }
        }
    }
    if (!pick) {
        afd_pyscan_line(ps, line, &first, &count);
        for (size_t k = 0; k < count; k++) {
            const afd_pyaccess *pa = &ps->acc[first + k];
            if (pa->root == AFD_ROOT_CLS)
                continue;
            if (!pick || (pa->write == xa->write && pick->write != xa->write))
                pick = pa;
        }
    }
    if (!pick)
        return 0;
    xa->root = pick->root;
    xa->root_name = root_name_of(v, pick);
    return xa->root_name ? 0 : AFD_ENOMEM;
}

/* ---- sources ---- */

struct afd_srcmap {
    char **paths;      /* Owned, each string owned: the paths as the trace names them. */
    afd_pyscan *scans; /* Owned, parallel to paths. */
    uint8_t *ok;       /* Owned, parallel to paths: 1 when the file was read and scanned. */
    size_t n, cap;
};

afd_srcmap *afd_view_srcmap_new(void)
{
    return calloc(1, sizeof(afd_srcmap));
}

void afd_view_srcmap_free(afd_srcmap *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n; i++) {
        free(m->paths[i]);
        afd_pyscan_finish(&m->scans[i]);
    }
    free(m->paths);
    free(m->scans);
    free(m->ok);
    free(m);
}

const afd_pyscan *afd_view_srcmap_get(afd_srcmap *m, const char *path)
{
    for (size_t i = 0; i < m->n; i++)
        if (strcmp(m->paths[i], path) == 0)
            return m->ok[i] ? &m->scans[i] : NULL;
    if (m->n == m->cap) {
        size_t ncap = m->cap ? m->cap * 2 : 16;
        char **np = realloc(m->paths, ncap * sizeof *np);
        if (!np)
            return NULL;
        m->paths = np;
        afd_pyscan *ns = realloc(m->scans, ncap * sizeof *ns);
        if (!ns)
            return NULL;
        m->scans = ns;
        uint8_t *no = realloc(m->ok, ncap);
        if (!no)
            return NULL;
        m->ok = no;
        m->cap = ncap;
    }
    char *copy = strdup(path);
    if (!copy)
        return NULL;
    size_t i = m->n++;
    m->paths[i] = copy;
    memset(&m->scans[i], 0, sizeof m->scans[i]);
    size_t len = 0;
    char *text = NULL;
    m->ok[i] = afd_file_read(path, AFD_PYSCAN_MAX_SOURCE, &text, &len) == 0 &&
               afd_pyscan_source(text, len, &m->scans[i]) == 0;
    free(text);
    return m->ok[i] ? &m->scans[i] : NULL;
}

/* The resource an inferred access names: "Store#0.sessions[*]" for an attribute of a method's
 * receiver, "module.NAME[...]" for a module global (a local variable's object is named by the
 * caller from the LOCAL events). Written into out (NUL-terminated). */
static void inferred_resource(const afd_trace *tr, const afd_event *e, const afd_pyaccess *a, char *out,
                              size_t cap)
{
    if (a->root == AFD_ROOT_GLOBAL) {
        const char *file = afd_trace_string(tr, e->a);
        const char *base = strrchr(file, '/');
        base = base ? base + 1 : file;
        size_t n = strlen(base);
        if (n > 3 && strcmp(base + n - 3, ".py") == 0)
            n -= 3;
        snprintf(out, cap, "%.*s.%s%s", (int)n, base, a->name, a->path);
    } else {
        const char *recv = e->cost != AFD_NOSTR ? afd_trace_string(tr, (uint32_t)e->cost) : a->name;
        snprintf(out, cap, "%s%s", recv, a->path);
    }
}

static int has_explicit_ops(const afd_trace *tr)
{
    for (uint32_t i = 0; i < tr->n_events; i++)
        if (tr->events[i].kind == AFD_EV_OP_END)
            return 1;
    return 0;
}

/* What one afd_view_build_src pass keeps besides the view: the tables the event handlers share. */
typedef struct builder {
    afd_view *v;         /* Borrowed: the view being built. */
    afd_srcmap *src;     /* Borrowed; NULL when no source is read. */
    const char **labels; /* Owned: a task's label by task id (each borrowed from the trace). */
    uint32_t n_labels;
    objstate *objs; /* Owned: synchronization objects by number. */
    uint32_t n_objs;
    ctab occ;                    /* occurrences of (task, name, resource), for the access keys */
    uint64_t bound;              /* afd_trace_id_bound of the trace */
    uint32_t line_file, line_no; /* the step's last traced line of user code */
    uint32_t op_chain;           /* the chain of the step's last OP_BEGIN, for its OP_END */
} builder;

/* The chain of user frames beneath event i: the CHAIN event right after it, of the same task. */
static uint32_t chain_after(const afd_trace *tr, uint32_t i)
{
    if (i + 1 >= tr->n_events)
        return AFD_NOSTR;
    const afd_event *c = &tr->events[i + 1];
    return c->kind == AFD_EV_CHAIN && c->task == tr->events[i].task && c->a < tr->n_strings ? c->a
                                                                                            : AFD_NOSTR;
}

/* The accesses the source says the traced line at event i makes. */
static int infer_line(builder *bd, uint32_t i)
{
    afd_view *v = bd->v;
    const afd_trace *tr = v->tr;
    const afd_event *e = &tr->events[i];
    const afd_pyscan *ps = afd_view_srcmap_get(bd->src, afd_trace_string(tr, e->a));
    size_t first, count;
    if (!ps)
        return 0;
    afd_pyscan_line(ps, e->b, &first, &count);
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < count; k++) {
        const afd_pyaccess *pa = &ps->acc[first + k];
        char res[512];
        if (pa->root == AFD_ROOT_LOCAL) {
            /* the object the variable held, from the LOCAL events right after the line */
            const char *holder = NULL;
            uint32_t j = i + 1;
            if (j < tr->n_events && tr->events[j].kind == AFD_EV_CHAIN)
                j++; /* the line's chain comes before its LOCAL events */
            for (; j < tr->n_events && tr->events[j].kind == AFD_EV_LOCAL; j++)
                if (tr->events[j].b == e->b && strcmp(afd_trace_string(tr, tr->events[j].a), pa->name) == 0 &&
                    tr->events[j].cost != AFD_NOSTR)
                    holder = afd_trace_string(tr, (uint32_t)tr->events[j].cost);
            if (!holder)
                continue; /* a plain value, or not recorded: no shared state */
            snprintf(res, sizeof res, "%s%s", holder, pa->path);
        } else {
            inferred_resource(tr, e, pa, res, sizeof res);
        }
        const char *stored = intern_resource(v, res);
        if (!stored)
            return AFD_ENOMEM;
        rc = add_access(v, &bd->occ, bd->labels, bd->n_labels, e->task, pa->write ? "write" : "read", stored,
                        pa->write, 0);
        if (rc == 0) {
            afd_xaccess *xa = &v->acc[v->n_acc - 1];
            xa->inferred = 1;
            xa->root = pa->root;
            xa->role = pa->flags;
            xa->line = e->b;
            xa->file = afd_trace_string(tr, e->a);
            xa->root_name = root_name_of(v, pa);
            xa->chain = chain_after(tr, i);
            if (!pa->write && afd_view_caller_tests(bd->src, tr, ps, e->b, xa->chain))
                xa->role |= AFD_XROLE_CALLER_TESTS;
            if (!xa->root_name)
                rc = AFD_ENOMEM;
        }
    }
    return rc;
}

/* A SYNC event: the happens-before edge and the access an asyncio primitive's operation makes. */
static int sync_event(builder *bd, uint32_t i)
{
    const afd_event *e = &bd->v->tr->events[i];
    afd_view *v = bd->v;
    const afd_trace *tr = v->tr;
    if (e->a > bd->bound)
        return 0; /* not a number the recorder can have given */
    objstate *o = object(&bd->objs, &bd->n_objs, e->a);
    if (!o)
        return AFD_ENOMEM;
    if (o->label == AFD_NOSTR)
        o->label = e->b;
    const char *res = afd_trace_string(tr, e->b);
    const char *what = afd_sync_kind_name(e->flags);
    uint32_t n_before = v->n_acc;
    uint32_t here = v->n_steps;
    ctab *occ = &bd->occ;
    const char **labels = bd->labels;
    uint32_t n_labels = bd->n_labels;
    int rc = 0;
    switch (e->flags) {
    case AFD_SYNC_LOCK_ACQUIRE:
    case AFD_SYNC_SEM_ACQUIRE:
        rc = add_edge(v, o->last_release, here);
        break;
    case AFD_SYNC_LOCK_RELEASE:
    case AFD_SYNC_SEM_RELEASE:
        o->last_release = here;
        break;
    case AFD_SYNC_EVENT_SET:
        o->last_set = here;
        rc = add_access(v, occ, labels, n_labels, e->task, what, res, 1, 1);
        break;
    case AFD_SYNC_EVENT_CLEAR:
        rc = add_access(v, occ, labels, n_labels, e->task, what, res, 1, 1);
        break;
    case AFD_SYNC_EVENT_OBSERVE:
        rc = add_edge(v, o->last_set, here);
        if (rc == 0)
            rc = add_access(v, occ, labels, n_labels, e->task, "check", res, 0, 1);
        break;
    case AFD_SYNC_EVENT_CHECK:
    case AFD_SYNC_QUEUE_CHECK:
        rc = add_access(v, occ, labels, n_labels, e->task, "check", res, 0, 1);
        break;
    case AFD_SYNC_QUEUE_PUT:
        if (o->puts == o->cap_puts) {
            uint32_t ncap = o->cap_puts ? o->cap_puts * 2 : 8;
            uint32_t *np = realloc(o->put_steps, ncap * sizeof *np);
            if (!np) {
                rc = AFD_ENOMEM;
                break;
            }
            o->put_steps = np;
            o->cap_puts = ncap;
        }
        o->put_steps[o->puts++] = here;
        rc = add_access(v, occ, labels, n_labels, e->task, what, res, 1, 1);
        break;
    case AFD_SYNC_QUEUE_GET:
        if (o->gets < o->puts)
            rc = add_edge(v, o->put_steps[o->gets], here);
        o->gets++;
        if (rc == 0)
            rc = add_access(v, occ, labels, n_labels, e->task, what, res, 1, 1);
        break;
    default:
        break;
    }
    if (rc == 0 && v->n_acc > n_before) {
        v->acc[v->n_acc - 1].chain = chain_after(tr, i);
        rc = place_at_line(v, bd->src, tr, bd->line_file, bd->line_no);
    }
    if (rc == AFD_EFULL) /* the accesses are bounded; the steps and edges go on */
        rc = 0;
    return rc;
}

int afd_view_build_src(afd_view *v, const afd_trace *tr, afd_srcmap *src)
{
    memset(v, 0, sizeof *v);
    v->tr = tr;
    uint32_t max_task = 0, max_index = 0, n_steps = 0, n_acc = 0;
    builder bd = {
        .v = v, .src = src, .bound = afd_trace_id_bound(tr), .line_file = AFD_NOSTR, .op_chain = AFD_NOSTR};
    for (uint32_t i = 0; i < tr->n_events; i++) {
        const afd_event *e = &tr->events[i];
        if (e->kind == AFD_EV_TASK && e->task > max_task && e->task <= bd.bound)
            max_task = e->task;
        if (e->kind == AFD_EV_WAKE && e->b > max_index && e->b <= bd.bound)
            max_index = e->b;
        n_steps += e->kind == AFD_EV_STEP;
        n_acc += e->kind == AFD_EV_OP_END || e->kind == AFD_EV_SYNC;
    }
    int infer = src && (tr->flags & AFD_TRACE_LINES) && !has_explicit_ops(tr);
    if (infer) /* a traced line makes a few accesses at most; grown below when not */
        n_acc = AFD_EXPLAIN_MAX_ACCESSES;
    if (n_acc > AFD_EXPLAIN_MAX_ACCESSES)
        n_acc = AFD_EXPLAIN_MAX_ACCESSES;
    bd.labels = calloc((size_t)max_task + 1, sizeof *bd.labels);
    bd.n_labels = max_task + 1;
    uint32_t *pos_of_index = malloc(((size_t)max_index + 1) * sizeof *pos_of_index);
    v->steps = calloc((size_t)n_steps + 1, sizeof *v->steps);
    v->acc = calloc((size_t)n_acc + 1, sizeof *v->acc);
    int rc = (bd.labels && pos_of_index && v->steps && v->acc) ? 0 : AFD_ENOMEM;
    for (uint32_t i = 0; rc == 0 && i <= max_index; i++)
        pos_of_index[i] = AFD_NOPOS;
    uint32_t origin = AFD_NOPOS;
    uint64_t blocked = 0;
    uint32_t block_site = AFD_NOSTR;
    for (uint32_t i = 0; rc == 0 && i < tr->n_events; i++) {
        const afd_event *e = &tr->events[i];
        switch (e->kind) {
        case AFD_EV_TASK:
            if (e->task <= max_task)
                bd.labels[e->task] = afd_trace_string(tr, e->b);
            break;
        case AFD_EV_WAKE:
            origin = (e->a && e->a <= max_index) ? pos_of_index[e->a] : AFD_NOPOS;
            if (e->b && e->b <= max_index)
                pos_of_index[e->b] = v->n_steps;
            blocked = 0;
            block_site = AFD_NOSTR;
            bd.line_file = AFD_NOSTR;
            bd.line_no = 0;
            bd.op_chain = AFD_NOSTR;
            break;
        case AFD_EV_OP_BEGIN:
            bd.op_chain = chain_after(tr, i);
            break;
        case AFD_EV_BLOCK:
            if (block_site == AFD_NOSTR)
                block_site = e->b;
            blocked += e->cost;
            break;
        case AFD_EV_LINE:
            bd.line_file = e->a;
            bd.line_no = e->b;
            if (infer && e->a != AFD_NOSTR)
                rc = infer_line(&bd, i);
            break;
        case AFD_EV_OP_END: /* an operation's effect is visible when it ends */
            rc = add_access(v, &bd.occ, bd.labels, bd.n_labels, e->task,
                            e->a == AFD_NOSTR ? ((e->flags & 1) ? "write" : "read")
                                              : afd_trace_string(tr, e->a),
                            afd_trace_string(tr, e->b), e->flags & 1, 0);
            if (rc == 0) {
                v->acc[v->n_acc - 1].chain = bd.op_chain;
                rc = place_at_line(v, src, tr, bd.line_file, bd.line_no);
            }
            bd.op_chain = AFD_NOSTR;
            break;
        case AFD_EV_SYNC:
            rc = sync_event(&bd, i);
            break;
        case AFD_EV_STEP: {
            afd_xstep *s = &v->steps[v->n_steps++];
            s->task = e->task;
            s->ordinal = e->a;
            s->site = e->b;
            s->chain = chain_after(tr, i);
            s->origin = origin;
            s->vstart = e->vtime;
            s->cost = e->cost;
            s->wall = e->wall;
            s->blocked_ns = blocked;
            s->block_site = block_site;
            origin = AFD_NOPOS;
            blocked = 0;
            block_site = AFD_NOSTR;
            break;
        }
        default:
            break;
        }
        if (rc == AFD_EFULL)
            rc = 0;
    }
    /* Accesses recorded after the last STEP belong to no step (the run ended inside one). */
    while (rc == 0 && v->n_acc && v->acc[v->n_acc - 1].step >= v->n_steps)
        v->n_acc--;
    for (uint32_t i = 0; i < bd.n_objs; i++)
        free(bd.objs[i].put_steps);
    free(bd.objs);
    free(bd.labels);
    free(pos_of_index);
    ctab_free(&bd.occ);
    if (rc < 0)
        afd_view_finish(v);
    return rc;
}

void afd_view_finish(afd_view *v)
{
    if (!v)
        return;
    for (uint32_t i = 0; i < v->n_names; i++)
        free(v->names[i]);
    free(v->names);
    free(v->steps);
    free(v->acc);
    free(v->edge_from);
    free(v->edge_to);
    memset(v, 0, sizeof *v);
}

uint32_t afd_view_divergence(const afd_view *a, const afd_view *b)
{
    uint32_t n = a->n_steps < b->n_steps ? a->n_steps : b->n_steps;
    for (uint32_t i = 0; i < n; i++) {
        const char *la = afd_trace_task_label(a->tr, a->steps[i].task);
        const char *lb = afd_trace_task_label(b->tr, b->steps[i].task);
        if (a->steps[i].ordinal != b->steps[i].ordinal || strcmp(la, lb) != 0)
            return i;
    }
    return a->n_steps == b->n_steps ? AFD_NOPOS : n;
}

uint32_t afd_view_find(const afd_view *v, uint64_t key)
{
    for (uint32_t i = 0; i < v->n_acc; i++)
        if (v->acc[i].key == key)
            return i;
    return AFD_NOPOS;
}
