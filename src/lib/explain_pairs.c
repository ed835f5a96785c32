/* explain_pairs.c -- the relations that explain a failure, over views (see explain.h): inverted
 * and racing pairs of conflicting accesses, atomicity violations, lock-order and wait-for cycles,
 * and the run summaries that outlive their traces.
 *
 * Invariant: every analysis writes at most cap results and says AFD_EFULL when there were more,
 * never dropping them silently. Workload: a few views of at most AFD_EXPLAIN_MAX_ACCESSES
 * accesses per investigation; the pairwise analyses are quadratic in them by design. */
#include "explain.h"
#include "afd.h"
#include "graph.h"
#include "hb.h"

#include <stdlib.h>
#include <string.h>

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

int afd_view_resources_overlap(const char *a, const char *b)
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

int afd_view_access_conflict(const afd_xaccess *x, const afd_xaccess *y)
{
    return (x->write || y->write) && strcmp(x->label, y->label) != 0 &&
           afd_view_resources_overlap(x->resource, y->resource);
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

int afd_view_inverted_pairs(const afd_view *fail, const afd_view *pass, afd_xpair *out, size_t cap, size_t *n)
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
            if (where[j] == AFD_NOPOS || !afd_view_access_conflict(&fail->acc[i], &fail->acc[j]))
                continue;
            if (where[j] < where[i])
                push_pair(out, cap, n, i, j);
        }
        /* y never ran in the failing run but ran before x in the passing one */
        for (uint32_t j = 0; j < where[i] && j < pass->n_acc; j++) {
            if (afd_view_find(fail, pass->acc[j].key) != AFD_NOPOS ||
                !afd_view_access_conflict(&fail->acc[i], &pass->acc[j]))
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
            if (afd_view_access_conflict(&v->acc[i], &v->acc[j]) && v->acc[i].step != v->acc[j].step &&
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
        if (ua->write && ua->task != ra->task && afd_view_resources_overlap(ua->resource, ra->resource)) {
            if (*n < cap)
                out[*n] = (afd_xatom){r, u, w, v->steps[ra->step].site};
            (*n)++;
            return;
        }
    }
}

/* The lost updates by structure alone: the task's write follows its read with no re-read. */
static int structural_lost(const afd_view *v, afd_xatom *out, size_t cap, size_t *n)
{
    *n = 0;
    for (uint32_t r = 0; r < v->n_acc; r++) {
        const afd_xaccess *ra = &v->acc[r];
        if (ra->write || ra->sync)
            continue;
        /* the same task's next write of the resource, in a later step. A taking read (a pop:
         * inferred, AFD_PYACC_TAKE) writes the receiver at once, in the same call: that write is
         * the take's own, and the write that completes its read-modify-write is the task's next
         * one, the put that follows in a later step (`old = d.pop(k)`, await, `d[k] = new`). */
        uint32_t w = AFD_NOPOS;
        int take = ra->inferred && (ra->role & AFD_PYACC_TAKE);
        for (uint32_t j = r + 1; j < v->n_acc; j++) {
            const afd_xaccess *wa = &v->acc[j];
            if (take && wa->step == ra->step && wa->write && wa->line == ra->line)
                continue;
            if (wa->task == ra->task && afd_view_resources_overlap(wa->resource, ra->resource)) {
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

/* The check-then-acts by structure alone: the task re-read and wrote in a later step. */
static int structural_stale(const afd_view *v, afd_xatom *out, size_t cap, size_t *n)
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
            if (ka->task != ra->task || !afd_view_resources_overlap(ka->resource, ra->resource))
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
            if (v->acc[k].task == ra->task && v->acc[k].write &&
                afd_view_resources_overlap(v->acc[k].resource, ra->resource)) {
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

/* Whether atom a (found_lost: by structural_lost, else by structural_stale) is a lost update
 * rather than a check-then-act. Where the source tells the accesses' roles (inferred accesses),
 * the kind follows what went wrong. When the two writes are the same assignment of a literal
 * constant (`self.ready = True` by both tasks), the overwrite loses no value: the harm is what
 * the stale check let the task do, a check-then-act. A taking read (a pop) removed what it read:
 * with the task's later put it is one read-modify-write, a lost update whatever is decided on
 * the value taken. A structurally lost read whose value is returned to a caller that tests it
 * (AFD_XROLE_CALLER_TESTS: `return self._store.get(k)` in one function, `if value is not None:`
 * in the caller that called it) is a check made through a call: the caller decided on it, and
 * what the task writes later is the act of that decision, a check-then-act (a read tested in its
 * own function, `if self.conn is None: ... self.conn = c`, keeps the structural answer). When the
 * task re-read before writing but its stale read sits in no condition, its own or a caller's,
 * that read was a value the task computed with (a count, a copy), not a decision, and what it
 * writes is built from the stale value: a lost update. Otherwise (annotated accesses, or no role
 * known) the structure decides. */
static int atom_is_lost(const afd_view *v, const afd_xatom *a, int found_lost)
{
    const afd_xaccess *r = &v->acc[a->r], *u = &v->acc[a->u], *w = &v->acc[a->w];
    if (u->inferred && w->inferred && (u->role & AFD_PYACC_LITERAL) && (w->role & AFD_PYACC_LITERAL) &&
        u->line == w->line && u->file && w->file && strcmp(u->file, w->file) == 0)
        return 0;
    if (r->inferred && (r->role & AFD_PYACC_TAKE))
        return 1;
    if (found_lost && r->inferred && (r->role & AFD_XROLE_CALLER_TESTS))
        return 0;
    if (!found_lost && r->inferred && !(r->role & (AFD_PYACC_TEST | AFD_XROLE_CALLER_TESTS)))
        return 1;
    return found_lost;
}

/* How many steps of the reading task ran between atom a's read and its write: 0 when the write
 * is in the task's very next step (it spans one suspension, the one named). */
static uint32_t atom_span(const afd_view *v, const afd_xatom *a)
{
    const afd_xaccess *r = &v->acc[a->r], *w = &v->acc[a->w];
    uint32_t n = 0;
    for (uint32_t s = r->step + 1; s < w->step && s < v->n_steps; s++)
        n += v->steps[s].task == r->task;
    return n;
}

/* The atoms of both structural shapes whose kind (atom_is_lost) is `lost`, the structurally lost
 * ones first; within each shape the tightest first (atom_span: the fewest steps of the task
 * between its read and its write, the atomicity violation the one suspension named spans, rather
 * than one the task's later steps only complete), then in read order. */
static int atoms_of_kind(const afd_view *v, int lost, afd_xatom *out, size_t cap, size_t *n)
{
    *n = 0;
    size_t room = cap < 64 ? 64 : cap; /* every atom of the view is ranked, not the first cap */
    afd_xatom *tmp = malloc((room + 1) * sizeof *tmp);
    uint32_t *span = malloc((room + 1) * sizeof *span);
    if (!tmp || !span) {
        free(tmp);
        free(span);
        return AFD_ENOMEM;
    }
    int full = 0;
    for (int shape = 1; shape >= 0; shape--) {
        size_t m = 0, k = 0;
        int rc = shape ? structural_lost(v, tmp, room, &m) : structural_stale(v, tmp, room, &m);
        full |= rc == AFD_EFULL;
        for (size_t i = 0; i < m; i++)
            if (atom_is_lost(v, &tmp[i], shape) == lost) {
                tmp[k] = tmp[i];
                span[k++] = atom_span(v, &tmp[i]);
            }
        for (size_t i = 1; i < k; i++) { /* stable insertion sort by span: atoms are few */
            afd_xatom x = tmp[i];
            uint32_t sx = span[i];
            size_t j = i;
            for (; j > 0 && span[j - 1] > sx; j--) {
                tmp[j] = tmp[j - 1];
                span[j] = span[j - 1];
            }
            tmp[j] = x;
            span[j] = sx;
        }
        for (size_t i = 0; i < k; i++) {
            if (*n < cap)
                out[*n] = tmp[i];
            (*n)++;
        }
    }
    free(tmp);
    free(span);
    if (*n > cap) {
        *n = cap;
        full = 1;
    }
    return full ? AFD_EFULL : 0;
}

int afd_view_lost_updates(const afd_view *v, afd_xatom *out, size_t cap, size_t *n)
{
    return atoms_of_kind(v, 1, out, cap, n);
}

int afd_view_stale_checks(const afd_view *v, afd_xatom *out, size_t cap, size_t *n)
{
    return atoms_of_kind(v, 0, out, cap, n);
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
        if (e->kind == AFD_EV_SYNC &&
            (e->flags == AFD_SYNC_LOCK_ACQUIRE || e->flags == AFD_SYNC_LOCK_RELEASE) &&
            e->a <= afd_trace_id_bound(tr) && e->task <= afd_trace_id_bound(tr)) {
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
        if (e->kind == AFD_EV_SYNC && e->flags == AFD_SYNC_LOCK_ACQUIRE && e->a <= afd_trace_id_bound(tr) &&
            e->a > max_obj)
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
                        o->file = line_file != AFD_NOSTR && line_file == h[l].file
                                      ? afd_trace_string(tr, line_file)
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
        if (e->kind == AFD_EV_WAITFOR && e->task <= afd_trace_id_bound(tr) &&
            e->b <= afd_trace_id_bound(tr)) {
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

int afd_view_summary_build(afd_run_summary *s, const afd_view *v, int failed)
{
    memset(s, 0, sizeof *s);
    s->failed = (uint8_t)(failed != 0);
    kp *tmp = malloc(((size_t)v->n_acc + 1) * sizeof *tmp);
    s->keys = malloc(((size_t)v->n_acc + 1) * sizeof *s->keys);
    s->pos = malloc(((size_t)v->n_acc + 1) * sizeof *s->pos);
    if (!tmp || !s->keys || !s->pos) {
        free(tmp);
        afd_view_summary_finish(s);
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

void afd_view_summary_finish(afd_run_summary *s)
{
    if (!s)
        return;
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

int afd_view_summary_order(const afd_run_summary *s, uint64_t x, uint64_t y)
{
    uint32_t px = summary_pos(s, x), py = summary_pos(s, y);
    if (px == AFD_NOPOS || py == AFD_NOPOS)
        return -1;
    return px < py;
}

int afd_view_summary_has(const afd_run_summary *s, uint64_t x)
{
    return summary_pos(s, x) != AFD_NOPOS;
}
