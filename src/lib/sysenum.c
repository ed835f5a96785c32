/* sysenum.c -- the systematic search's enumeration (sysenum.h): rounds of schedules, each delay
 * swept across its measured slots, one level of delays after another.
 *
 * Main invariant: a round's results are used in the round's order, never in the order they came
 * back, so the schedules enumerated (and, under a run budget, the prefix of them that was run) are a
 * function of the program and the seed alone. */
#include "sysenum.h"
#include "afd.h"
#include "token.h"

#include <stdlib.h>
#include <string.h>

typedef struct slot {
    uint64_t index;
    char *label; /* Owned. */
    uint32_t ordinal;
    uint64_t cost, margin;
    int at_deadline; /* the boundary moves a program deadline (AFD_SLOT_DEADLINE) */
} slot;

typedef struct node {
    afd_sys_delay *d; /* Owned; d[n - 1] is the delay being swept. */
    uint32_t n;
    uint64_t mark_lo;
    uint32_t chain; /* the sweep it belongs to, UINT32_MAX for the zero schedule */
    uint8_t repeat; /* a measuring run of a schedule already counted */
    /* the result */
    uint8_t taken, failed;
    uint64_t order, klass, steps, reads;
    slot *slots; /* Owned. */
    uint32_t n_slots;
} node;

typedef struct nodelist {
    node *v;
    size_t n, cap;
} nodelist;

typedef struct chain {
    uint32_t level;
    uint64_t len;
    uint8_t done;
} chain;

/* A set of 64-bit values (open addressing; 0 is kept aside). */
typedef struct u64set {
    uint64_t *v;
    size_t cap, n;
    uint8_t has_zero;
} u64set;

struct afd_sysenum {
    uint32_t k;
    int prune;
    uint64_t seed;
    uint32_t level;
    nodelist cur;
    nodelist next[AFD_SYS_MAX_DELAYS + 1];
    chain *chains;
    size_t n_chains, cap_chains;
    afd_sys_level lv[AFD_SYS_MAX_DELAYS + 1];
    u64set orders, classes;
    int stopped, done;
    int uncontrolled; /* a run recorded a source no schedule controls (threads, sockets, real waits) */
    uint64_t clock_reads;
};

/* ---- small containers ---- */

static size_t set_size(const u64set *s)
{
    return s->n + s->has_zero;
}

/* Adds x; returns 1 when it was new, 0 when present, AFD_ENOMEM. */
static int set_add(u64set *s, uint64_t x)
{
    if (x == 0) {
        int fresh = !s->has_zero;
        s->has_zero = 1;
        return fresh;
    }
    if ((s->n + 1) * 2 > s->cap) {
        size_t ncap = s->cap ? s->cap * 2 : 64;
        uint64_t *nv = calloc(ncap, sizeof *nv);
        if (!nv)
            return AFD_ENOMEM;
        for (size_t i = 0; i < s->cap; i++) {
            if (!s->v[i])
                continue;
            size_t j = afd_mix64(s->v[i]) & (ncap - 1);
            while (nv[j])
                j = (j + 1) & (ncap - 1);
            nv[j] = s->v[i];
        }
        free(s->v);
        s->v = nv;
        s->cap = ncap;
    }
    size_t j = afd_mix64(x) & (s->cap - 1);
    while (s->v[j]) {
        if (s->v[j] == x)
            return 0;
        j = (j + 1) & (s->cap - 1);
    }
    s->v[j] = x;
    s->n++;
    return 1;
}

static void node_finish(node *nd)
{
    for (uint32_t i = 0; i < nd->n; i++)
        free(nd->d[i].label);
    free(nd->d);
    for (uint32_t i = 0; i < nd->n_slots; i++)
        free(nd->slots[i].label);
    free(nd->slots);
    memset(nd, 0, sizeof *nd);
}

static void list_clear(nodelist *l)
{
    for (size_t i = 0; i < l->n; i++)
        node_finish(&l->v[i]);
    free(l->v);
    memset(l, 0, sizeof *l);
}

/* Appends a node built from `n` delays copied from d (and, when extra is not NULL, one more);
 * returns it or NULL when out of memory. */
static node *list_push(nodelist *l, const afd_sys_delay *d, uint32_t n, const afd_sys_delay *extra)
{
    if (l->n == l->cap) {
        size_t ncap = l->cap ? l->cap * 2 : 16;
        node *nv = realloc(l->v, ncap * sizeof *nv);
        if (!nv)
            return NULL;
        l->v = nv;
        l->cap = ncap;
    }
    node *nd = &l->v[l->n];
    memset(nd, 0, sizeof *nd);
    uint32_t total = n + (extra ? 1 : 0);
    if (total) {
        nd->d = calloc(total, sizeof *nd->d);
        if (!nd->d)
            return NULL;
    }
    for (uint32_t i = 0; i < total; i++) {
        const afd_sys_delay *src = i < n ? &d[i] : extra;
        nd->d[i] = *src;
        nd->d[i].label = strdup(src->label ? src->label : "");
        if (!nd->d[i].label) {
            nd->n = i;
            node_finish(nd);
            return NULL;
        }
        nd->n = i + 1;
    }
    nd->chain = UINT32_MAX;
    l->n++;
    return nd;
}

static int new_chain(afd_sysenum *e, uint32_t level, uint32_t *id)
{
    if (e->n_chains == e->cap_chains) {
        size_t ncap = e->cap_chains ? e->cap_chains * 2 : 64;
        chain *nc = realloc(e->chains, ncap * sizeof *nc);
        if (!nc)
            return AFD_ENOMEM;
        e->chains = nc;
        e->cap_chains = ncap;
    }
    if (e->n_chains >= UINT32_MAX)
        return AFD_EFULL;
    e->chains[e->n_chains] = (chain){.level = level};
    *id = (uint32_t)e->n_chains++;
    return 0;
}

/* ---- the public calls ---- */

int afd_sysenum_new(afd_sysenum **out, uint32_t max_delays, int prune_classes, uint64_t seed)
{
    *out = NULL;
    if (max_delays > AFD_SYS_MAX_DELAYS)
        return AFD_EINVAL;
    afd_sysenum *e = calloc(1, sizeof *e);
    if (!e)
        return AFD_ENOMEM;
    e->k = max_delays;
    e->prune = prune_classes;
    e->seed = seed;
    for (uint32_t i = 0; i <= max_delays; i++) {
        e->lv[i].delays = i;
        e->lv[i].estimated_total = i == 0 ? 1 : -1;
    }
    if (!list_push(&e->next[0], NULL, 0, NULL)) {
        afd_sysenum_free(e);
        return AFD_ENOMEM;
    }
    *out = e;
    return 0;
}

void afd_sysenum_free(afd_sysenum *self)
{
    if (!self)
        return;
    list_clear(&self->cur);
    for (uint32_t i = 0; i <= AFD_SYS_MAX_DELAYS; i++)
        list_clear(&self->next[i]);
    free(self->chains);
    free(self->orders.v);
    free(self->classes.v);
    free(self);
}

static uint32_t mark_n_of(const afd_sysenum *e, const node *nd)
{
    return nd->n < e->k ? AFD_SYS_WINDOW : nd->n ? 1 : 0;
}

int afd_sysenum_item(afd_sysenum *self, uint64_t i, char **token, uint64_t *mark_lo, uint32_t *mark_n,
                     int *repeat)
{
    *token = NULL;
    if (i >= self->cur.n)
        return AFD_EINVAL;
    const node *nd = &self->cur.v[i];
    afd_schedule s;
    afd_schedule_init(&s);
    s.strategy = AFD_STRAT_ZERO;
    s.seed = self->seed;
    int rc = 0;
    for (uint32_t j = 0; j < nd->n && rc == 0; j++)
        rc = afd_schedule_add_delay(&s, nd->d[j].label, nd->d[j].ordinal, nd->d[j].cost);
    if (rc == 0)
        rc = afd_token_encode(&s, token);
    afd_schedule_finish(&s);
    *mark_lo = nd->mark_lo;
    *mark_n = mark_n_of(self, nd);
    *repeat = nd->repeat;
    return rc;
}

const afd_sys_delay *afd_sysenum_item_delays(const afd_sysenum *self, uint64_t i, uint32_t *n)
{
    *n = 0;
    if (i >= self->cur.n)
        return NULL;
    *n = self->cur.v[i].n;
    return self->cur.v[i].d;
}

int afd_sysenum_take(afd_sysenum *self, uint64_t i, const afd_trace *tr, uint64_t order, uint64_t klass,
                     int failed)
{
    if (i >= self->cur.n || self->cur.v[i].taken)
        return AFD_EINVAL;
    node *nd = &self->cur.v[i];
    nd->taken = 1;
    nd->failed = failed != 0;
    nd->order = order;
    nd->klass = klass;
    if (!tr)
        return 0;
    if (tr->flags & AFD_TRACE_UNCONTROLLED)
        self->uncontrolled = 1;
    nd->steps = tr->steps;
    uint32_t n = 0;
    for (uint32_t j = 0; j < tr->n_events; j++)
        n += tr->events[j].kind == AFD_EV_SLOT && tr->events[j].b > 0;
    if (!n)
        return 0;
    nd->slots = calloc(n, sizeof *nd->slots);
    if (!nd->slots)
        return AFD_ENOMEM;
    for (uint32_t j = 0; j < tr->n_events; j++) {
        const afd_event *ev = &tr->events[j];
        if (ev->kind != AFD_EV_SLOT || ev->b == 0)
            continue;
        slot *s = &nd->slots[nd->n_slots];
        s->label = strdup(afd_trace_task_label(tr, ev->task));
        if (!s->label)
            return AFD_ENOMEM;
        s->index = (uint64_t)ev->b - 1;
        s->ordinal = ev->a;
        s->cost = ev->vtime;
        s->margin = ev->cost;
        s->at_deadline = (ev->flags & AFD_SLOT_DEADLINE) != 0;
        nd->n_slots++;
        if (ev->wall > nd->reads)
            nd->reads = ev->wall;
    }
    return 0;
}

/* The next slot of the delay node nd sweeps, as a node of the next round (or the end of its sweep). */
static int sweep_on(afd_sysenum *e, const node *nd)
{
    uint32_t L = nd->n;
    chain *c = &e->chains[nd->chain];
    const afd_sys_delay *tail = &nd->d[L - 1];
    const slot *s = NULL;
    for (uint32_t j = 0; j < nd->n_slots && !s; j++)
        if (nd->slots[j].index == tail->index)
            s = &nd->slots[j];
    if (!s || s->ordinal != tail->ordinal || strcmp(s->label, tail->label) != 0) {
        e->lv[L].unmeasured++;
        c->done = 1;
        return 0;
    }
    if (s->margin == UINT64_MAX) {
        c->done = 1;
        return 0;
    }
    if (s->at_deadline) {
        e->lv[L].at_deadline++;
        c->done = 1;
        return 0;
    }
    if (c->len >= AFD_SYS_MAX_SLOTS || s->margin >= AFD_SYS_MAX_COST - s->cost) {
        e->lv[L].capped++;
        c->done = 1;
        return 0;
    }
    afd_sys_delay next = *tail;
    next.cost = s->cost + s->margin;
    node *succ = list_push(&e->next[L], nd->d, L - 1, &next);
    if (!succ)
        return AFD_ENOMEM;
    succ->chain = nd->chain;
    succ->mark_lo = tail->index;
    return 0;
}

/* One more delay after nd's last, for each measured step that has a slot; and a measuring repeat of
 * nd when its run had steps beyond the window. */
static int extend(afd_sysenum *e, const node *nd)
{
    uint32_t L = nd->n;
    uint64_t after = L ? nd->d[L - 1].index + 1 : 0;
    for (uint32_t j = 0; j < nd->n_slots; j++) {
        const slot *s = &nd->slots[j];
        if (s->index < after)
            continue;
        if (s->margin == UINT64_MAX) {
            e->lv[L + 1].no_slot++;
            continue;
        }
        if (s->at_deadline) {
            e->lv[L + 1].at_deadline++;
            continue;
        }
        if (s->margin >= AFD_SYS_MAX_COST - s->cost) {
            e->lv[L + 1].capped++;
            continue;
        }
        afd_sys_delay d = {
            .label = s->label, .ordinal = s->ordinal, .index = s->index, .cost = s->cost + s->margin};
        node *child = list_push(&e->next[L + 1], nd->d, L, &d);
        if (!child)
            return AFD_ENOMEM;
        int rc = new_chain(e, L + 1, &child->chain);
        if (rc < 0)
            return rc;
        child->mark_lo = s->index;
    }
    uint64_t end = nd->mark_lo + AFD_SYS_WINDOW;
    if (nd->steps > end) {
        node *again = list_push(&e->next[L], nd->d, L, NULL);
        if (!again)
            return AFD_ENOMEM;
        again->chain = nd->chain;
        again->mark_lo = end;
        again->repeat = 1;
    }
    return 0;
}

/* Counts node nd's run and plans what follows from it. */
static int use(afd_sysenum *e, node *nd)
{
    uint32_t L = nd->n;
    afd_sys_level *lv = &e->lv[L];
    if (nd->reads > e->clock_reads)
        e->clock_reads = nd->reads;
    int fresh_class = 1; /* a repeat exists only for a schedule that may be extended */
    if (nd->repeat) {
        lv->measure_runs++;
    } else {
        lv->schedules++;
        lv->failed += nd->failed;
        int rc = set_add(&e->orders, nd->order);
        if (rc < 0)
            return rc;
        rc = set_add(&e->classes, nd->klass);
        if (rc < 0)
            return rc;
        fresh_class = rc;
        if (nd->chain != UINT32_MAX)
            e->chains[nd->chain].len++;
        if (L >= 1) {
            rc = sweep_on(e, nd);
            if (rc < 0)
                return rc;
        }
    }
    if (L >= e->k)
        return 0;
    if (e->prune && !fresh_class) {
        if (!nd->repeat)
            e->lv[L + 1].pruned++;
        return 0;
    }
    return extend(e, nd);
}

/* The estimate of level L's total: every sweep of it is known once level L - 1 is exhausted; a sweep
 * still going is counted at its length so far plus one, or at the mean length of the finished ones
 * when that is larger. An estimate, printed as one. */
static void estimate(afd_sysenum *e, uint32_t L)
{
    if (L == 0 || !e->lv[L - 1].exhausted) {
        e->lv[L].estimated_total = L == 0 ? 1 : -1;
        return;
    }
    uint64_t done_len = 0, done_n = 0, total = 0;
    for (size_t i = 0; i < e->n_chains; i++)
        if (e->chains[i].level == L && e->chains[i].done) {
            done_len += e->chains[i].len;
            done_n++;
        }
    uint64_t mean = done_n ? (done_len + done_n - 1) / done_n : 0;
    for (size_t i = 0; i < e->n_chains; i++) {
        const chain *c = &e->chains[i];
        if (c->level != L)
            continue;
        uint64_t guess = c->len + 1 > mean ? c->len + 1 : mean;
        total += c->done ? c->len : guess;
    }
    e->lv[L].estimated_total = (int64_t)total;
}

static void snapshot(afd_sysenum *e, uint32_t L)
{
    afd_sys_level *lv = &e->lv[L];
    lv->cum_orders = set_size(&e->orders);
    lv->cum_classes = set_size(&e->classes);
    lv->cum_schedules = lv->schedules + (L ? e->lv[L - 1].cum_schedules : 0);
    lv->cum_failed = lv->failed + (L ? e->lv[L - 1].cum_failed : 0);
}

static int use_round(afd_sysenum *e)
{
    for (size_t i = 0; i < e->cur.n; i++) {
        if (!e->cur.v[i].taken)
            continue;
        int rc = use(e, &e->cur.v[i]);
        if (rc < 0)
            return rc;
    }
    list_clear(&e->cur);
    return 0;
}

int afd_sysenum_round(afd_sysenum *self, uint64_t *n)
{
    *n = 0;
    if (self->done)
        return 0;
    int rc = use_round(self);
    if (rc < 0)
        return rc;
    for (;;) {
        uint32_t L = self->level;
        if (self->next[L].n) {
            self->cur = self->next[L];
            memset(&self->next[L], 0, sizeof self->next[L]);
            self->lv[L].started = 1;
            *n = self->cur.n;
            return 0;
        }
        /* level L is finished: exhausted unless a sweep could not go on to its end */
        afd_sys_level *lv = &self->lv[L];
        lv->started = 1;
        /* a run the schedule did not determine proves nothing about the schedules not run */
        lv->exhausted =
            !lv->unmeasured && !lv->capped && !self->uncontrolled && (L == 0 || self->lv[L - 1].exhausted);
        lv->uncontrolled = self->uncontrolled;
        snapshot(self, L);
        estimate(self, L);
        if (lv->exhausted && L > 0)
            lv->estimated_total = (int64_t)lv->schedules;
        if (L >= self->k) {
            self->done = 1;
            return 0;
        }
        self->level = L + 1;
    }
}

int afd_sysenum_stop(afd_sysenum *self)
{
    if (self->done)
        return 0;
    int rc = use_round(self);
    self->stopped = 1;
    self->done = 1;
    for (uint32_t L = self->level; L <= self->k; L++) {
        self->lv[L].exhausted = 0;
        snapshot(self, L);
        estimate(self, L);
        list_clear(&self->next[L]);
    }
    return rc;
}

uint32_t afd_sysenum_levels(const afd_sysenum *self, afd_sys_level *out, uint32_t cap)
{
    uint32_t n = 0;
    for (uint32_t L = 0; L <= self->k && n < cap; L++) {
        out[n] = self->lv[L];
        /* a level still running (or not begun) counts what has been run so far */
        if (!self->done && L >= self->level) {
            out[n].cum_orders = set_size(&self->orders);
            out[n].cum_classes = set_size(&self->classes);
            out[n].cum_schedules = out[n].schedules + (L ? out[n - 1].cum_schedules : 0);
            out[n].cum_failed = out[n].failed + (L ? out[n - 1].cum_failed : 0);
        }
        n++;
    }
    return n;
}

uint64_t afd_sysenum_clock_reads(const afd_sysenum *self)
{
    return self->clock_reads;
}
