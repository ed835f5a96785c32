/* explain.c -- views of runs and the analyses that explain a failure (see explain.h). */
#include "explain.h"
#include "afd.h"
#include "fileio.h"
#include "graph.h"
#include "hb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a tiny u64 -> u32 counter table ---- */

typedef struct ctab {
    uint64_t *k;
    uint32_t *v;
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
    free(t->k);
    free(t->v);
}

/* ---- building a view ---- */

/* Ids in a trace (task ids, step indices, object numbers) are handed out one per recorded (or
 * dropped) event at most; anything larger comes from a corrupt producer and is ignored, so no
 * table is sized by it. */
static uint64_t id_bound(const afd_trace *tr)
{
    return (uint64_t)tr->n_events + tr->dropped + 1;
}

typedef struct objstate {
    uint32_t label;
    uint32_t last_release; /* lock or semaphore */
    uint32_t last_set;     /* event */
    uint32_t puts, gets;   /* queue: counts, to match the k-th get with the k-th put */
    uint32_t *put_steps;
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
    a->line = 0;
    a->file = NULL;
    a->root_name = NULL;
    a->occurrence = n;
    a->key = afd_mix64(h ^ ((uint64_t)n * 0x9e3779b97f4a7c15ULL));
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
    const afd_pyscan *ps = src ? afd_srcmap_get(src, xa->file) : NULL;
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
                                       : pa->root == AFD_ROOT_SELF ? root_name_of(v, pa) : NULL;
                    if (name && !strcmp(name, root) && (!pick || (pa->write == xa->write && pick->write != xa->write)))
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
    char **paths;
    afd_pyscan *scans;
    uint8_t *ok;
    size_t n, cap;
};

afd_srcmap *afd_srcmap_new(void)
{
    return calloc(1, sizeof(afd_srcmap));
}

void afd_srcmap_free(afd_srcmap *m)
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

const afd_pyscan *afd_srcmap_get(afd_srcmap *m, const char *path)
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

int afd_view_build_src(afd_view *v, const afd_trace *tr, afd_srcmap *src)
{
    memset(v, 0, sizeof *v);
    v->tr = tr;
    uint32_t max_task = 0, max_index = 0, n_steps = 0, n_acc = 0;
    uint64_t bound = id_bound(tr);
    for (uint32_t i = 0; i < tr->n_events; i++) {
        const afd_event *e = &tr->events[i];
        if (e->kind == AFD_EV_TASK && e->task > max_task && e->task <= bound)
            max_task = e->task;
        if (e->kind == AFD_EV_WAKE && e->b > max_index && e->b <= bound)
            max_index = e->b;
        n_steps += e->kind == AFD_EV_STEP;
        n_acc += e->kind == AFD_EV_OP_END || e->kind == AFD_EV_SYNC;
    }
    int infer = src && (tr->flags & AFD_TRACE_LINES) && !has_explicit_ops(tr);
    if (infer) /* a traced line makes a few accesses at most; grown below when not */
        n_acc = AFD_EXPLAIN_MAX_ACCESSES;
    if (n_acc > AFD_EXPLAIN_MAX_ACCESSES)
        n_acc = AFD_EXPLAIN_MAX_ACCESSES;
    const char **labels = calloc((size_t)max_task + 1, sizeof *labels);
    uint32_t *pos_of_index = malloc(((size_t)max_index + 1) * sizeof *pos_of_index);
    v->steps = calloc((size_t)n_steps + 1, sizeof *v->steps);
    v->acc = calloc((size_t)n_acc + 1, sizeof *v->acc);
    objstate *objs = NULL;
    uint32_t n_objs = 0;
    ctab occ = {0};
    int rc = (labels && pos_of_index && v->steps && v->acc) ? 0 : AFD_ENOMEM;
    for (uint32_t i = 0; rc == 0 && i <= max_index; i++)
        pos_of_index[i] = AFD_NOPOS;
    uint32_t origin = AFD_NOPOS;
    uint64_t blocked = 0;
    uint32_t block_site = AFD_NOSTR;
    uint32_t line_file = AFD_NOSTR, line_no = 0; /* the step's last traced line of user code */
    for (uint32_t i = 0; rc == 0 && i < tr->n_events; i++) {
        const afd_event *e = &tr->events[i];
        switch (e->kind) {
        case AFD_EV_TASK:
            if (e->task <= max_task)
                labels[e->task] = afd_trace_string(tr, e->b);
            break;
        case AFD_EV_WAKE:
            origin = (e->a && e->a <= max_index) ? pos_of_index[e->a] : AFD_NOPOS;
            if (e->b && e->b <= max_index)
                pos_of_index[e->b] = v->n_steps;
            blocked = 0;
            block_site = AFD_NOSTR;
            line_file = AFD_NOSTR;
            line_no = 0;
            break;
        case AFD_EV_BLOCK:
            if (block_site == AFD_NOSTR)
                block_site = e->b;
            blocked += e->cost;
            break;
        case AFD_EV_LINE: {
            line_file = e->a;
            line_no = e->b;
            if (!infer || e->a == AFD_NOSTR)
                break;
            const afd_pyscan *ps = afd_srcmap_get(src, afd_trace_string(tr, e->a));
            size_t first, count;
            if (!ps)
                break;
            afd_pyscan_line(ps, e->b, &first, &count);
            for (size_t k = 0; rc == 0 && k < count; k++) {
                const afd_pyaccess *pa = &ps->acc[first + k];
                char res[512];
                if (pa->root == AFD_ROOT_LOCAL) {
                    /* the object the variable held, from the LOCAL events right after the line */
                    const char *holder = NULL;
                    for (uint32_t j = i + 1; j < tr->n_events && tr->events[j].kind == AFD_EV_LOCAL; j++)
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
                if (!stored) {
                    rc = AFD_ENOMEM;
                    break;
                }
                rc = add_access(v, &occ, labels, max_task + 1, e->task, pa->write ? "write" : "read", stored,
                                pa->write, 0);
                if (rc == 0) {
                    afd_xaccess *xa = &v->acc[v->n_acc - 1];
                    xa->inferred = 1;
                    xa->root = pa->root;
                    xa->line = e->b;
                    xa->file = afd_trace_string(tr, e->a);
                    xa->root_name = root_name_of(v, pa);
                    if (!xa->root_name)
                        rc = AFD_ENOMEM;
                }
            }
            break;
        }
        case AFD_EV_OP_END: /* an operation's effect is visible when it ends */
            rc = add_access(v, &occ, labels, max_task + 1, e->task,
                            e->a == AFD_NOSTR ? ((e->flags & 1) ? "write" : "read") : afd_trace_string(tr, e->a),
                            afd_trace_string(tr, e->b), e->flags & 1, 0);
            if (rc == 0)
                rc = place_at_line(v, src, tr, line_file, line_no);
            break;
        case AFD_EV_SYNC: {
            if (e->a > bound)
                break; /* not a number the recorder can have given */
            objstate *o = object(&objs, &n_objs, e->a);
            if (!o) {
                rc = AFD_ENOMEM;
                break;
            }
            if (o->label == AFD_NOSTR)
                o->label = e->b;
            const char *res = afd_trace_string(tr, e->b);
            const char *what = afd_sync_kind_name(e->flags);
            uint32_t n_before = v->n_acc;
            uint32_t here = v->n_steps;
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
                rc = add_access(v, &occ, labels, max_task + 1, e->task, what, res, 1, 1);
                break;
            case AFD_SYNC_EVENT_CLEAR:
                rc = add_access(v, &occ, labels, max_task + 1, e->task, what, res, 1, 1);
                break;
            case AFD_SYNC_EVENT_OBSERVE:
                rc = add_edge(v, o->last_set, here);
                if (rc == 0)
                    rc = add_access(v, &occ, labels, max_task + 1, e->task, "check", res, 0, 1);
                break;
            case AFD_SYNC_EVENT_CHECK:
            case AFD_SYNC_QUEUE_CHECK:
                rc = add_access(v, &occ, labels, max_task + 1, e->task, "check", res, 0, 1);
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
                rc = add_access(v, &occ, labels, max_task + 1, e->task, what, res, 1, 1);
                break;
            case AFD_SYNC_QUEUE_GET:
                if (o->gets < o->puts)
                    rc = add_edge(v, o->put_steps[o->gets], here);
                o->gets++;
                if (rc == 0)
                    rc = add_access(v, &occ, labels, max_task + 1, e->task, what, res, 1, 1);
                break;
            default:
                break;
            }
            if (rc == 0 && v->n_acc > n_before)
                rc = place_at_line(v, src, tr, line_file, line_no);
            if (rc == AFD_EFULL) /* the accesses are bounded; the steps and edges go on */
                rc = 0;
            break;
        }
        case AFD_EV_STEP: {
            afd_xstep *s = &v->steps[v->n_steps++];
            s->task = e->task;
            s->ordinal = e->a;
            s->site = e->b;
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
    for (uint32_t i = 0; i < n_objs; i++)
        free(objs[i].put_steps);
    free(objs);
    free(labels);
    free(pos_of_index);
    ctab_free(&occ);
    if (rc < 0)
        afd_view_finish(v);
    return rc;
}

void afd_view_finish(afd_view *v)
{
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

static int at_boundary(char c)
{
    return c == 0 || c == '.' || c == '[';
}

/* Skips one "[...]" segment starting at s (s[0] == '['), honouring quotes inside the key. */
static const char *skip_key(const char *s)
{
    char quote = 0;
    for (s++; *s; s++) {
        if (quote) {
            if (*s == '\\' && s[1])
                s++;
            else if (*s == quote)
                quote = 0;
        } else if (*s == '"' || *s == '\'') {
            quote = *s;
        } else if (*s == ']') {
            return s + 1;
        }
    }
    return s;
}

int afd_resources_overlap(const char *a, const char *b)
{
    for (;;) {
        if (*a == '[' && *b == '[' && (strncmp(a, "[*]", 3) == 0 || strncmp(b, "[*]", 3) == 0)) {
            a = skip_key(a);
            b = skip_key(b);
            continue;
        }
        if (*a == 0 || *b == 0) /* one names a part of the other (or both the same) */
            return at_boundary(*a) && at_boundary(*b);
        if (*a != *b)
            return 0;
        a++;
        b++;
    }
}

int afd_access_conflict(const afd_xaccess *x, const afd_xaccess *y)
{
    return (x->write || y->write) && strcmp(x->label, y->label) != 0 && afd_resources_overlap(x->resource, y->resource);
}

static int push_pair(afd_xpair *out, size_t cap, size_t *n, uint32_t x, uint32_t y)
{
    if (*n < cap) {
        out[*n].x = x;
        out[*n].y = y;
        out[*n].y_pass = 0;
        out[*n].ochiai = 0;
        out[*n].fail_with = out[*n].pass_with = 0;
    }
    (*n)++;
    return 0;
}

int afd_inverted_pairs(const afd_view *fail, const afd_view *pass, afd_xpair *out, size_t cap, size_t *n)
{
    *n = 0;
    uint32_t *where = malloc(((size_t)fail->n_acc + 1) * sizeof *where);
    if (!where)
        return AFD_ENOMEM;
    for (uint32_t i = 0; i < fail->n_acc; i++)
        where[i] = afd_view_find(pass, fail->acc[i].key);
    for (uint32_t i = 0; i < fail->n_acc; i++) {
        if (where[i] == AFD_NOPOS)
            continue;
        for (uint32_t j = i + 1; j < fail->n_acc; j++) {
            if (where[j] == AFD_NOPOS || !afd_access_conflict(&fail->acc[i], &fail->acc[j]))
                continue;
            if (where[j] < where[i])
                push_pair(out, cap, n, i, j);
        }
        /* y never ran in the failing run but ran before x in the passing one */
        for (uint32_t j = 0; j < where[i] && j < pass->n_acc; j++) {
            if (afd_view_find(fail, pass->acc[j].key) != AFD_NOPOS ||
                !afd_access_conflict(&fail->acc[i], &pass->acc[j]))
                continue;
            size_t k = *n;
            push_pair(out, cap, n, i, j);
            if (k < cap)
                out[k].y_pass = 1;
        }
    }
    free(where);
    if (*n > cap) {
        *n = cap;
        return AFD_EFULL;
    }
    return 0;
}

static afd_hb *view_hb(const afd_view *v)
{
    uint32_t *tasks = malloc(((size_t)v->n_steps + 1) * sizeof *tasks);
    if (!tasks)
        return NULL;
    for (uint32_t i = 0; i < v->n_steps; i++)
        tasks[i] = v->steps[i].task;
    afd_hb *hb = afd_hb_new(v->n_steps, tasks);
    free(tasks);
    if (!hb)
        return NULL;
    int rc = 0;
    for (uint32_t i = 0; rc == 0 && i < v->n_steps; i++)
        if (v->steps[i].origin != AFD_NOPOS && v->steps[i].origin < i)
            rc = afd_hb_edge(hb, v->steps[i].origin, i);
    for (uint32_t i = 0; rc == 0 && i < v->n_edges; i++)
        if (v->edge_to[i] < v->n_steps)
            rc = afd_hb_edge(hb, v->edge_from[i], v->edge_to[i]);
    if (rc == 0)
        rc = afd_hb_compute(hb);
    if (rc < 0) {
        afd_hb_free(hb);
        return NULL;
    }
    return hb;
}

int afd_view_races(const afd_view *v, afd_xpair *out, size_t cap, size_t *n)
{
    *n = 0;
    if (v->n_steps == 0)
        return 0;
    afd_hb *hb = view_hb(v);
    if (!hb)
        return AFD_ENOMEM;
    for (uint32_t i = 0; i < v->n_acc; i++)
        for (uint32_t j = i + 1; j < v->n_acc; j++)
            if (afd_access_conflict(&v->acc[i], &v->acc[j]) && v->acc[i].step != v->acc[j].step &&
                !(v->acc[i].sync && v->acc[j].sync && v->acc[i].write && v->acc[j].write) &&
                afd_hb_concurrent(hb, v->acc[i].step, v->acc[j].step))
                push_pair(out, cap, n, i, j);
    afd_hb_free(hb);
    if (*n > cap) {
        *n = cap;
        return AFD_EFULL;
    }
    return 0;
}

/* When another task wrote read r's resource between r and access `until`, counts (and, with room,
 * stores) the atom {r, that write, w}. */
static void overwritten(const afd_view *v, uint32_t r, uint32_t until, uint32_t w, afd_xatom *out, size_t cap,
                        size_t *n)
{
    const afd_xaccess *ra = &v->acc[r];
    for (uint32_t u = r + 1; u < until; u++) {
        const afd_xaccess *ua = &v->acc[u];
        if (ua->write && ua->task != ra->task && afd_resources_overlap(ua->resource, ra->resource)) {
            if (*n < cap)
                out[*n] = (afd_xatom){r, u, w, v->steps[ra->step].site};
            (*n)++;
            return;
        }
    }
}

int afd_view_lost_updates(const afd_view *v, afd_xatom *out, size_t cap, size_t *n)
{
    *n = 0;
    for (uint32_t r = 0; r < v->n_acc; r++) {
        const afd_xaccess *ra = &v->acc[r];
        if (ra->write || ra->sync)
            continue;
        /* the same task's next write of the resource, in a later step */
        uint32_t w = AFD_NOPOS;
        for (uint32_t j = r + 1; j < v->n_acc; j++) {
            const afd_xaccess *wa = &v->acc[j];
            if (wa->task == ra->task && afd_resources_overlap(wa->resource, ra->resource)) {
                if (wa->write)
                    w = j;
                break; /* a re-read by the task starts a new read-modify-write */
            }
        }
        if (w == AFD_NOPOS || v->acc[w].step == ra->step)
            continue;
        overwritten(v, r, w, w, out, cap, n);
    }
    if (*n > cap) {
        *n = cap;
        return AFD_EFULL;
    }
    return 0;
}

int afd_view_stale_checks(const afd_view *v, afd_xatom *out, size_t cap, size_t *n)
{
    *n = 0;
    for (uint32_t r = 0; r < v->n_acc; r++) {
        const afd_xaccess *ra = &v->acc[r];
        if (ra->write || ra->sync)
            continue;
        /* the task's next access of the resource in a later step: a re-read (a write there is a
         * lost update's, and a write in r's own step means r was acted on at once) */
        uint32_t j = AFD_NOPOS;
        int acted = 0;
        for (uint32_t k = r + 1; k < v->n_acc; k++) {
            const afd_xaccess *ka = &v->acc[k];
            if (ka->task != ra->task || !afd_resources_overlap(ka->resource, ra->resource))
                continue;
            if (ka->step == ra->step) {
                acted |= ka->write;
                continue;
            }
            j = k;
            break;
        }
        if (acted || j == AFD_NOPOS || v->acc[j].write)
            continue;
        /* ... followed by the task's write in that same step */
        uint32_t w = AFD_NOPOS;
        for (uint32_t k = j + 1; k < v->n_acc && v->acc[k].step == v->acc[j].step; k++)
            if (v->acc[k].task == ra->task && v->acc[k].write && afd_resources_overlap(v->acc[k].resource, ra->resource)) {
                w = k;
                break;
            }
        if (w == AFD_NOPOS)
            continue;
        overwritten(v, r, j, w, out, cap, n);
    }
    if (*n > cap) {
        *n = cap;
        return AFD_EFULL;
    }
    return 0;
}

uint32_t afd_view_object_label(const afd_view *v, uint32_t object)
{
    for (uint32_t i = 0; i < v->tr->n_events; i++) {
        const afd_event *e = &v->tr->events[i];
        if (e->kind == AFD_EV_SYNC && e->a == object)
            return e->b;
    }
    return AFD_NOSTR;
}

int afd_view_lock_cycle(const afd_view *v, uint32_t *locks, uint32_t *labels, size_t cap, size_t *len)
{
    *len = 0;
    const afd_trace *tr = v->tr;
    uint32_t max_obj = 0, max_task = 0;
    for (uint32_t i = 0; i < tr->n_events; i++) {
        const afd_event *e = &tr->events[i];
        if (e->kind == AFD_EV_SYNC && (e->flags == AFD_SYNC_LOCK_ACQUIRE || e->flags == AFD_SYNC_LOCK_RELEASE) &&
            e->a <= id_bound(tr) && e->task <= id_bound(tr)) {
            if (e->a > max_obj)
                max_obj = e->a;
            if (e->task > max_task)
                max_task = e->task;
        }
    }
    if (!max_obj)
        return 0;
    /* holder[lock] = task holding it; a task's held set is the locks whose holder it is. */
    uint32_t *holder = calloc((size_t)max_obj + 1, sizeof *holder);
    afd_graph *g = afd_graph_new(max_obj + 1);
    int rc = (holder && g) ? 0 : AFD_ENOMEM;
    for (uint32_t i = 0; rc == 0 && i < tr->n_events; i++) {
        const afd_event *e = &tr->events[i];
        if (e->kind != AFD_EV_SYNC || !e->a || e->a > max_obj)
            continue;
        if (e->flags == AFD_SYNC_LOCK_ACQUIRE) {
            for (uint32_t l = 1; rc == 0 && l <= max_obj; l++)
                if (holder[l] == e->task + 1 && l != e->a)
                    rc = afd_graph_edge(g, l, e->a);
            holder[e->a] = e->task + 1;
        } else if (e->flags == AFD_SYNC_LOCK_RELEASE) {
            holder[e->a] = 0;
        }
    }
    int found = 0;
    if (rc == 0) {
        found = afd_graph_find_cycle(g, locks, cap, len);
        if (found < 0)
            rc = found;
    }
    for (size_t i = 0; found > 0 && i < *len && i < cap; i++)
        labels[i] = afd_view_object_label(v, locks[i]);
    free(holder);
    afd_graph_free(g);
    return rc < 0 ? rc : found;
}

int afd_view_lock_nestings(const afd_view *v, afd_lock_nesting *out, size_t cap, size_t *n)
{
    *n = 0;
    const afd_trace *tr = v->tr;
    uint32_t max_obj = 0;
    for (uint32_t i = 0; i < tr->n_events; i++) {
        const afd_event *e = &tr->events[i];
        if (e->kind == AFD_EV_SYNC && e->flags == AFD_SYNC_LOCK_ACQUIRE && e->a <= id_bound(tr) && e->a > max_obj)
            max_obj = e->a;
    }
    if (!max_obj)
        return 0;
    /* per lock: its holder (task + 1) and where it was taken */
    struct held {
        uint32_t holder, line, file;
    } *h = calloc((size_t)max_obj + 1, sizeof *h);
    if (!h)
        return AFD_ENOMEM;
    uint32_t line_file = AFD_NOSTR, line_no = 0;
    for (uint32_t i = 0; i < tr->n_events; i++) {
        const afd_event *e = &tr->events[i];
        if (e->kind == AFD_EV_WAKE) {
            line_file = AFD_NOSTR;
            line_no = 0;
        } else if (e->kind == AFD_EV_LINE) {
            line_file = e->a;
            line_no = e->b;
        } else if (e->kind == AFD_EV_SYNC && e->a && e->a <= max_obj) {
            if (e->flags == AFD_SYNC_LOCK_ACQUIRE) {
                for (uint32_t l = 1; l <= max_obj; l++) {
                    if (h[l].holder != e->task + 1 || l == e->a)
                        continue;
                    if (*n < cap) {
                        afd_lock_nesting *o = &out[*n];
                        o->task = e->task;
                        o->outer = l;
                        o->inner = e->a;
                        o->file = line_file != AFD_NOSTR && line_file == h[l].file ? afd_trace_string(tr, line_file)
                                                                                    : NULL;
                        o->outer_line = o->file ? h[l].line : 0;
                        o->inner_line = o->file ? line_no : 0;
                    }
                    (*n)++;
                }
                h[e->a] = (struct held){e->task + 1, line_no, line_file};
            } else if (e->flags == AFD_SYNC_LOCK_RELEASE) {
                h[e->a].holder = 0;
            }
        }
    }
    free(h);
    return 0;
}

int afd_view_wait_cycle(const afd_view *v, uint32_t *tasks, uint32_t *labels, size_t cap, size_t *len)
{
    *len = 0;
    const afd_trace *tr = v->tr;
    uint32_t max_task = 0;
    for (uint32_t i = 0; i < tr->n_events; i++) {
        const afd_event *e = &tr->events[i];
        if (e->kind == AFD_EV_WAITFOR && e->task <= id_bound(tr) && e->b <= id_bound(tr)) {
            if (e->task > max_task)
                max_task = e->task;
            if (e->b > max_task)
                max_task = e->b;
        }
    }
    if (!max_task)
        return 0;
    afd_graph *g = afd_graph_new(max_task + 1);
    if (!g)
        return AFD_ENOMEM;
    int rc = 0;
    for (uint32_t i = 0; rc == 0 && i < tr->n_events; i++) {
        const afd_event *e = &tr->events[i];
        if (e->kind == AFD_EV_WAITFOR && e->b && e->task <= max_task && e->b <= max_task)
            rc = afd_graph_edge(g, e->task, e->b);
    }
    int found = rc < 0 ? rc : afd_graph_find_cycle(g, tasks, cap, len);
    for (size_t i = 0; found > 0 && i < *len && i < cap; i++) {
        labels[i] = AFD_NOSTR;
        for (uint32_t k = 0; k < tr->n_events; k++) {
            const afd_event *e = &tr->events[k];
            if (e->kind == AFD_EV_WAITFOR && e->task == tasks[i] && e->a)
                labels[i] = afd_view_object_label(v, e->a);
        }
    }
    afd_graph_free(g);
    return found;
}

/* ---- summaries ---- */

typedef struct kp {
    uint64_t key;
    uint32_t pos;
} kp;

static int kp_cmp(const void *a, const void *b)
{
    uint64_t x = ((const kp *)a)->key, y = ((const kp *)b)->key;
    return x < y ? -1 : x > y;
}

int afd_summary_build(afd_run_summary *s, const afd_view *v, int failed)
{
    memset(s, 0, sizeof *s);
    s->failed = (uint8_t)(failed != 0);
    kp *tmp = malloc(((size_t)v->n_acc + 1) * sizeof *tmp);
    s->keys = malloc(((size_t)v->n_acc + 1) * sizeof *s->keys);
    s->pos = malloc(((size_t)v->n_acc + 1) * sizeof *s->pos);
    if (!tmp || !s->keys || !s->pos) {
        free(tmp);
        afd_summary_finish(s);
        return AFD_ENOMEM;
    }
    for (uint32_t i = 0; i < v->n_acc; i++) {
        tmp[i].key = v->acc[i].key;
        tmp[i].pos = i;
    }
    qsort(tmp, v->n_acc, sizeof *tmp, kp_cmp);
    for (uint32_t i = 0; i < v->n_acc; i++) {
        s->keys[i] = tmp[i].key;
        s->pos[i] = tmp[i].pos;
    }
    s->n = v->n_acc;
    free(tmp);
    return 0;
}

void afd_summary_finish(afd_run_summary *s)
{
    free(s->keys);
    free(s->pos);
    memset(s, 0, sizeof *s);
}

static uint32_t summary_pos(const afd_run_summary *s, uint64_t key)
{
    uint32_t lo = 0, hi = s->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (s->keys[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < s->n && s->keys[lo] == key ? s->pos[lo] : AFD_NOPOS;
}

int afd_summary_order(const afd_run_summary *s, uint64_t x, uint64_t y)
{
    uint32_t px = summary_pos(s, x), py = summary_pos(s, y);
    if (px == AFD_NOPOS || py == AFD_NOPOS)
        return -1;
    return px < py;
}

int afd_summary_has(const afd_run_summary *s, uint64_t x)
{
    return summary_pos(s, x) != AFD_NOPOS;
}
