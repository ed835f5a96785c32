/* cause.c -- the cause an investigation names, decided from the minimal failing run, its nearest
 * passing run and every run seen: its kind, its operations, its racing pairs, its evidence rows.
 *
 * The decision takes the first kind that holds, in a fixed order: the cancellation and hand-off
 * kinds (cause_cancel.c: a wait-for cycle still makes a deadlock), a deadlock (the run hung), a
 * lost update, else a check-then-act, starvation (a blocking call), a check-then-act that an
 * inverted pair shows as one decision made by two tasks (explain_stale.c: the highest-ranked such
 * pair), an order violation (the conflicting pair inverted against the passing run that ranks
 * highest by Ochiai), a lock-order cycle, other.
 *
 * Main invariant: an afd_cause owns every string it holds (copied out of the views it was decided
 * from), so it outlives the traces; afd_cause_finish frees them all and leaves the struct empty.
 * Workload: one decision and a few dozen evidence rows per investigation, over views of at most
 * AFD_EXPLAIN_MAX_ACCESSES accesses. */
#include "cause.h"
#include "afd.h"
#include "cause_impl.h"
#include "buf.h"
#include "stats.h"
#include "trace.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AFD_CAUSE_ROW_(e, name, words, css) [AFD_CAUSE_##e] = {name, words, css},
#define AFD_CAUSE_ACCESS_ROW_(e, name) [AFD_CAUSE_ACCESS_##e] = name,

static const struct {
    const char *name, *words, *css;
} kinds[] = {[AFD_CAUSE_NONE] = {NULL, NULL, NULL}, AFD_CAUSE_KINDS(AFD_CAUSE_ROW_)};

static const char *const accesses[] = {AFD_CAUSE_ACCESSES(AFD_CAUSE_ACCESS_ROW_)};

#undef AFD_CAUSE_ROW_
#undef AFD_CAUSE_ACCESS_ROW_

const char *afd_cause_kind_name(afd_cause_kind k)
{
    return (unsigned)k < AFD_CAUSE__COUNT ? kinds[k].name : NULL;
}

const char *afd_cause_kind_words(afd_cause_kind k)
{
    return (unsigned)k < AFD_CAUSE__COUNT ? kinds[k].words : NULL;
}

const char *afd_cause_kind_css(afd_cause_kind k)
{
    return (unsigned)k < AFD_CAUSE__COUNT ? kinds[k].css : NULL;
}

afd_cause_kind afd_cause_kind_parse(const char *name)
{
    for (int k = AFD_CAUSE_NONE + 1; name && k < AFD_CAUSE__COUNT; k++)
        if (strcmp(kinds[k].name, name) == 0)
            return (afd_cause_kind)k;
    return AFD_CAUSE_NONE;
}

const char *afd_cause_access_name(afd_cause_access a)
{
    return (unsigned)a < AFD_CAUSE_ACCESS__COUNT ? accesses[a] : NULL;
}

int afd_cause_access_has_site(afd_cause_access a)
{
    return a == AFD_CAUSE_ACCESS_BLOCK || a == AFD_CAUSE_ACCESS_HANDOFF || a == AFD_CAUSE_ACCESS_CANCEL;
}

int afd_cause_access_parse(const char *name, afd_cause_access *out)
{
    for (int a = 0; name && a < AFD_CAUSE_ACCESS__COUNT; a++)
        if (strcmp(accesses[a], name) == 0) {
            *out = (afd_cause_access)a;
            return 0;
        }
    return AFD_EINVAL;
}

void afd_evidence_init(afd_evidence *self)
{
    memset(self, 0, sizeof *self);
}

void afd_evidence_finish(afd_evidence *self)
{
    if (!self)
        return;
    for (size_t i = 0; i < self->n; i++) {
        free(self->rows[i].claim);
        free(self->rows[i].measured);
        free(self->rows[i].strength);
    }
    free(self->rows);
    afd_evidence_init(self);
}

int afd_evidence_add(afd_evidence *self, const char *claim, const char *measured, const char *strength)
{
    if (self->n == self->cap) {
        size_t cap = self->cap ? self->cap * 2 : 8;
        afd_evidence_row *rows = realloc(self->rows, cap * sizeof *rows);
        if (!rows)
            return self->err = AFD_ENOMEM;
        self->rows = rows;
        self->cap = cap;
    }
    afd_evidence_row row = {strdup(claim ? claim : ""), strdup(measured ? measured : ""),
                            strdup(strength ? strength : "")};
    if (!row.claim || !row.measured || !row.strength) {
        free(row.claim);
        free(row.measured);
        free(row.strength);
        return self->err = AFD_ENOMEM;
    }
    self->rows[self->n++] = row;
    return 0;
}

void afd_cause_init(afd_cause *self)
{
    memset(self, 0, sizeof *self);
    self->kind = AFD_CAUSE_NONE;
    self->early = AFD_NOPOS;
}

static void op_finish(afd_cause_op *op)
{
    free(op->task);
    free(op->operation);
    free(op->resource);
    free(op->file);
    free(op->site);
}

void afd_cause_finish(afd_cause *self)
{
    if (!self)
        return;
    free(self->resource);
    free(self->await_site);
    free(self->summary);
    for (size_t i = 0; i < self->n_ops; i++)
        op_finish(&self->ops[i]);
    free(self->ops);
    for (size_t i = 0; i < self->n_races; i++) {
        free(self->races[i].resource);
        op_finish(&self->races[i].ops[0]);
        op_finish(&self->races[i].ops[1]);
    }
    free(self->races);
    for (size_t i = 0; i < self->n_await_chain; i++) {
        free(self->await_chain[i].file);
        free(self->await_chain[i].function);
    }
    free(self->await_chain);
    afd_cause_init(self);
}

afd_cause_op *afd_cause_add_op(afd_cause *self)
{
    afd_cause_op *ops = realloc(self->ops, (self->n_ops + 1) * sizeof *ops);
    if (!ops)
        return NULL;
    self->ops = ops;
    memset(&ops[self->n_ops], 0, sizeof ops[0]);
    return &ops[self->n_ops++];
}

afd_cause_race *afd_cause_add_race(afd_cause *self)
{
    afd_cause_race *races = realloc(self->races, (self->n_races + 1) * sizeof *races);
    if (!races)
        return NULL;
    self->races = races;
    memset(&races[self->n_races], 0, sizeof races[0]);
    return &races[self->n_races++];
}

/* ---- the operations of a cause, from the accesses of a view ---- */

static void acc_text(afd_buf *b, const afd_xaccess *a)
{
    afd_buf_printf(b, "%s %s %s", a->label, a->write ? "writes" : "reads", a->resource);
    if (strcmp(a->name, a->write ? "write" : "read") != 0)
        afd_buf_printf(b, " (%s)", a->name);
}

/* A heap copy of s (NULL stays NULL); *err becomes AFD_ENOMEM when the copy fails. */
static char *dup_str(const char *s, int *err)
{
    char *d = s ? strdup(s) : NULL;
    if (s && !d)
        *err = AFD_ENOMEM;
    return d;
}

/* The text written into b, as a heap string the caller owns (NULL when b is empty); b is left
 * empty. *err becomes AFD_ENOMEM when b lost a write or the string cannot be made. */
static char *buf_take(afd_buf *b, int *err)
{
    if (b->err)
        *err = b->err;
    if (!b->len) {
        afd_buf_finish(b);
        return NULL;
    }
    afd_buf_put_u8(b, 0);
    size_t len;
    char *s = b->err ? NULL : (char *)afd_buf_steal(b, &len);
    if (!s)
        *err = AFD_ENOMEM;
    afd_buf_finish(b);
    return s;
}

/* An operation of the cause: "run" says which run's trace holds it ("failing", or "passing" for
 * the write that only the nearest passing run made), "step" is its task's step ordinal there, and
 * "file"/"line" where in the source it is, when known. */
static void op_fill(afd_cause_op *op, const afd_view *v, const afd_xaccess *a, const char *run, int *err)
{
    op->access = a->write ? AFD_CAUSE_ACCESS_WRITE : AFD_CAUSE_ACCESS_READ;
    op->run = run;
    op->task = dup_str(a->label, err);
    op->operation = dup_str(a->name, err);
    op->resource = dup_str(a->resource, err);
    op->write = a->write;
    op->step = v->steps[a->step].ordinal;
    op->occurrence = a->occurrence;
    op->observed = !a->inferred;
    if (a->file && a->line) {
        op->file = dup_str(a->file, err);
        op->line = a->line;
    }
}

static void add_access(afd_cause *c, const afd_view *v, const afd_xaccess *a, const char *run, int *err)
{
    afd_cause_op *op = afd_cause_add_op(c);
    if (op)
        op_fill(op, v, a, run, err);
    else
        *err = AFD_ENOMEM;
}

/* One operation of a deadlock, a blocking call or a lock-order cycle (not a run's access). */
static afd_cause_op *add_other(afd_cause *c, afd_cause_access access, const char *task, const char *operation,
                               const char *resource, int *err)
{
    afd_cause_op *op = afd_cause_add_op(c);
    if (!op) {
        *err = AFD_ENOMEM;
        return NULL;
    }
    op->access = access;
    op->task = dup_str(task, err);
    op->operation = dup_str(operation, err);
    op->resource = dup_str(resource, err);
    return op;
}

/* The previous step of the task of access x (the one whose suspension x resumed from), or NULL. */
static const afd_xstep *step_before(const afd_view *v, const afd_xaccess *x)
{
    for (uint32_t i = x->step; i-- > 0;)
        if (v->steps[i].task == x->task)
            return &v->steps[i];
    return NULL;
}

/* The await the task of access x resumed from just before x: the suspension site of its
 * previous step. */
static uint32_t await_before(const afd_view *v, const afd_xaccess *x)
{
    const afd_xstep *s = step_before(v, x);
    return s ? s->site : AFD_NOSTR;
}

/* The await named for access x resumed from step s, when its chain explains it better than the
 * innermost frame (afd_cause_chain_await): 1 with the site and its text written, else 0. */
static int chain_named(afd_cause *c, const afd_view *v, const afd_xaccess *x, const afd_xstep *s,
                       afd_buf *await_site, afd_buf *text, int *err)
{
    afd_cause_await aw;
    int named = s ? afd_cause_chain_await(c, v, x, x, s, &aw) : 0;
    if (named < 0)
        *err = named;
    if (named <= 0)
        return 0;
    afd_buf_printf(await_site, "%s", aw.site);
    afd_cause_await_text(text, c, &aw);
    return 1;
}

/* Whether x's task ran a step before the one that made access x. */
static int stepped_before(const afd_view *v, const afd_xaccess *x)
{
    for (uint32_t i = x->step; i-- > 0;)
        if (v->steps[i].task == x->task)
            return 1;
    return 0;
}

/* The clause of an order violation that says where the early side went wrong, in what is known:
 * the await x resumed from too early; else the await y had not yet resumed from (yv is the view y
 * belongs to); else what x is, since there is no await to name: a loop callback, a task in its
 * first step, or a task suspended only inside library code. The site named, if any, becomes the
 * cause's await site. */
static void order_await(afd_cause *c, afd_buf *sentence, afd_buf *await_site, const afd_view *f,
                        const afd_view *yv, const afd_xaccess *x, const afd_xaccess *y, int *err)
{
    const char *xs = afd_trace_known(f->tr, await_before(f, x));
    const char *ys = xs ? NULL : afd_trace_known(yv->tr, await_before(yv, y));
    afd_buf at; /* the await named, with the chain beneath it when one explains it better */
    afd_buf_init(&at);
    if (xs || ys) {
        const afd_view *sv = xs ? f : yv;
        const afd_xaccess *sa = xs ? x : y;
        if (!chain_named(c, sv, sa, step_before(sv, sa), await_site, &at, err)) {
            afd_buf_printf(await_site, "%s", xs ? xs : ys);
            afd_buf_printf(&at, "%s", xs ? xs : ys);
        }
        if (at.err)
            *err = at.err;
    }
    const char *at_text = at.len ? (const char *)at.data : "";
    if (xs)
        afd_buf_printf(sentence, "; %s resumed too early from the await at %.*s", x->label, (int)at.len,
                       at_text);
    else if (ys)
        afd_buf_printf(sentence, "; %s had not yet resumed from the await at %.*s", y->label, (int)at.len,
                       at_text);
    else if (afd_trace_task_is_callback(f->tr, x->task))
        afd_buf_printf(sentence,
                       "; %s is a loop callback (call_soon or call_later), not a task: no await of "
                       "its own decides when it runs",
                       x->label);
    else if (!stepped_before(f, x))
        afd_buf_printf(sentence, "; %s ran it in its first step, before any await", x->label);
    else
        afd_buf_printf(sentence, "; %s resumed too early from an await inside library code", x->label);
    afd_buf_finish(&at);
}

static const afd_xaccess *pair_y(const afd_view *fail, const afd_view *pass, const afd_xpair *p)
{
    return p->y_pass ? &pass->acc[p->y] : &fail->acc[p->y];
}

static void ochiai_rank(const afd_cause_history *h, const afd_view *fail, const afd_view *pass,
                        afd_xpair *pairs, size_t n)
{
    uint64_t total_failed = 0;
    for (size_t r = 0; r < h->n; r++)
        total_failed += h->sums[r].failed;
    for (size_t i = 0; i < n; i++) {
        uint64_t kx = fail->acc[pairs[i].x].key, ky = pair_y(fail, pass, &pairs[i])->key;
        for (size_t r = 0; r < h->n; r++) {
            /* "x ran, and y had not run before it" */
            int order = afd_view_summary_order(&h->sums[r], kx, ky);
            if (order == 1 || (order == -1 && afd_view_summary_has(&h->sums[r], kx))) {
                if (h->sums[r].failed)
                    pairs[i].fail_with++;
                else
                    pairs[i].pass_with++;
            }
        }
        pairs[i].ochiai = afd_stats_ochiai(pairs[i].fail_with, pairs[i].pass_with, total_failed);
    }
    /* insertion sort, highest first, stable */
    for (size_t i = 1; i < n; i++) {
        afd_xpair p = pairs[i];
        size_t j = i;
        while (j > 0 && pairs[j - 1].ochiai < p.ochiai) {
            pairs[j] = pairs[j - 1];
            j--;
        }
        pairs[j] = p;
    }
}

/* Over the natural runs (what happens without steering): how strongly "a blocking call or a slow
 * step happened" goes with failure. */
static double blocking_ochiai(const afd_cause_history *h, uint64_t *fw, uint64_t *pw)
{
    uint64_t total_failed = 0;
    *fw = *pw = 0;
    for (size_t r = 0; r < h->n; r++) {
        if (!h->natural[r])
            continue;
        total_failed += h->sums[r].failed;
        if (h->blocked[r]) {
            if (h->sums[r].failed)
                (*fw)++;
            else
                (*pw)++;
        }
    }
    return afd_stats_ochiai(*fw, *pw, total_failed);
}

/* ---- the decision ---- */

#define MAX_PAIRS 64u

/* What one decision reads and builds: the views, the analyses of the failing run, and the text of
 * the cause as it is written. */
typedef struct decision {
    const afd_cause_input *in; /* Borrowed */
    const afd_view *f, *p;     /* Borrowed: in->fail, in->pass */
    afd_cause *c;              /* Borrowed: the result */
    afd_evidence *ev;          /* Borrowed: the rows are appended here */
    afd_buf sentence, resource, await_site;
    int err;
    afd_xatom atoms[8], stale[8]; /* lost updates, else check-then-acts */
    size_t n_atoms, n_stale;
    afd_xpair inv_pairs[MAX_PAIRS]; /* inverted against the passing run, by Ochiai, highest first */
    size_t n_inv;
    size_t chosen;  /* the inverted pair the cause names (its evidence rows are about it) */
    afd_xtwin twin; /* an inverted pair that is one decision made by two tasks, when twin_found */
    int twin_found, twin_named;
    afd_xpair races[MAX_PAIRS];
    size_t n_races;
    uint64_t bfw, bpw; /* failing and passing natural runs with a blocking call */
    double b_ochiai;
    uint32_t block_site; /* the failing run's longest blocking call: its line, or AFD_NOSTR */
    uint64_t block_ns;
    const afd_xstep *block_step; /* Borrowed: the step that made it */
} decision;

/* Every task blocked: names the wait-for cycle. */
static void name_deadlock(decision *d)
{
    const afd_view *f = d->f;
    const afd_trace *tr = f->tr;
    afd_cause *c = d->c;
    char buf[512];
    uint32_t tasks[16], labels[16];
    size_t len = 0;
    int cyc = afd_view_wait_cycle(f, tasks, labels, 16, &len);
    c->kind = AFD_CAUSE_DEADLOCK;
    afd_buf_printf(&d->sentence, "deadlock: ");
    if (cyc > 0) {
        for (size_t i = 0; i < len && i < 16; i++) {
            const char *res = afd_trace_string(tr, labels[i]);
            afd_buf_printf(&d->sentence, "%s%s waits for %s held by %s", i ? "; " : "",
                           afd_trace_task_label(tr, tasks[i]), res,
                           afd_trace_task_label(tr, tasks[(i + 1) % len]));
            afd_buf_printf(&d->resource, "%s%s", i ? ", " : "", res);
            add_other(c, AFD_CAUSE_ACCESS_WAIT, afd_trace_task_label(tr, tasks[i]), "acquire", res, &d->err);
        }
        /* where the first task of the cycle is blocked: the suspension site of its last step
         * before the deadlock was detected (steps after it are the cancellation's) */
        uint32_t site = AFD_NOSTR;
        for (uint32_t i = 0; i < tr->n_events && tr->events[i].kind != AFD_EV_WAITFOR; i++)
            if (tr->events[i].kind == AFD_EV_STEP && tr->events[i].task == tasks[0])
                site = tr->events[i].b;
        if (afd_trace_known(tr, site))
            afd_buf_printf(&d->await_site, "%s", afd_trace_string(tr, site));
        afd_evidence_add(
            d->ev, "every task blocked; the wait-for graph has a cycle",
            (snprintf(buf, sizeof buf, "%" PRIu64 "/%" PRIu64 " hung", d->in->k_fail, d->in->n_fail), buf),
            d->in->k_fail == d->in->n_fail ? "confirmed" : "weaker");
    } else {
        afd_buf_printf(&d->sentence, "every task is blocked and nothing can wake one");
    }
}

/* What the starvation rule reads: the failing run's longest blocking call, and how strongly a
 * blocking call or a slow step goes with failure over the natural runs. */
static void analyse_blocking(decision *d)
{
    const afd_view *f = d->f;
    d->b_ochiai = blocking_ochiai(&d->in->hist, &d->bfw, &d->bpw);
    d->block_site = AFD_NOSTR;
    for (uint32_t i = 0; i < f->n_steps; i++)
        if (f->steps[i].blocked_ns > d->block_ns) {
            d->block_ns = f->steps[i].blocked_ns;
            d->block_site = f->steps[i].block_site;
            d->block_step = &f->steps[i];
        }
}

/* The starvation rule: a blocking call of 1 ms or more in the minimal failing run, or one (or a
 * slow step) in the failing natural runs and strongly associated with failure there. */
static int starvation_shown(const decision *d)
{
    return (d->block_site != AFD_NOSTR && d->block_ns >= 1000000u) ||
           (d->in->hist.block_site && d->b_ochiai >= 0.8);
}

/* Names the starvation the rule found: the blocking task, how long it blocked, its line. */
static void name_starvation(decision *d)
{
    const afd_trace *tr = d->f->tr;
    const afd_cause_history *h = &d->in->hist;
    afd_cause *c = d->c;
    int here = d->block_site != AFD_NOSTR;
    const char *site = here ? afd_trace_known(tr, d->block_site) : h->block_site[0] ? h->block_site : NULL;
    const char *task = here ? afd_trace_task_label(tr, d->block_step->task) : h->block_task;
    double ms = (double)(here ? d->block_ns : h->block_ns) / 1e6;
    c->kind = AFD_CAUSE_STARVATION;
    afd_buf_printf(&d->resource, "event loop");
    afd_buf_printf(&d->await_site, "%s", site ? site : "");
    afd_buf_printf(&d->sentence,
                   "starvation: %s blocks the event loop for %.1f ms%s%s (a blocking call inside "
                   "a coroutine: every other task waits)",
                   task, ms, site ? " at " : "", site ? site : "");
    afd_cause_op *op = add_other(c, AFD_CAUSE_ACCESS_BLOCK, task, "blocking call", "event loop", &d->err);
    if (op)
        op->site = dup_str(site, &d->err);
}

/* The analyses of the failing run (against the passing one) the kinds and the evidence read. */
static void analyse(decision *d)
{
    const afd_view *f = d->f, *p = d->p;
    afd_view_lost_updates(f, d->atoms, 8, &d->n_atoms);
    if (!d->n_atoms)
        afd_view_stale_checks(f, d->stale, 8, &d->n_stale);
    if (p) {
        afd_view_inverted_pairs(f, p, d->inv_pairs, MAX_PAIRS, &d->n_inv);
        ochiai_rank(&d->in->hist, f, p, d->inv_pairs, d->n_inv);
        d->twin_found = afd_view_twin_check(f, p, d->inv_pairs, d->n_inv, &d->twin) > 0;
    }
    afd_view_races(f, d->races, MAX_PAIRS, &d->n_races);
    for (size_t i = 0; i < d->n_races; i++) {
        afd_cause_race *race = afd_cause_add_race(d->c);
        if (!race) {
            d->err = AFD_ENOMEM;
            break;
        }
        race->resource = dup_str(f->acc[d->races[i].x].resource, &d->err);
        op_fill(&race->ops[0], f, &f->acc[d->races[i].x], "failing", &d->err);
        op_fill(&race->ops[1], f, &f->acc[d->races[i].y], "failing", &d->err);
    }
    analyse_blocking(d);
}

/* A lock-order cycle in the failing run, else in the passing one; else no kind the runs show. */
static void name_lock_order(decision *d)
{
    const afd_view *f = d->f, *p = d->p;
    afd_cause *c = d->c;
    uint32_t locks[16], labels[16];
    size_t len = 0;
    const afd_view *lv = NULL;
    if (afd_view_lock_cycle(f, locks, labels, 16, &len) > 0)
        lv = f;
    else if (p && afd_view_lock_cycle(p, locks, labels, 16, &len) > 0)
        lv = p;
    if (!lv) {
        c->kind = AFD_CAUSE_OTHER;
        afd_buf_printf(&d->sentence, "no conflicting operations were recorded: annotate shared state with "
                                     "affidavit.access() or affidavit.operation() to name the cause");
        return;
    }
    const afd_trace *ltr = lv->tr;
    c->kind = AFD_CAUSE_LOCK_ORDER;
    afd_buf_printf(&d->sentence, "lock-order cycle (a potential deadlock): ");
    for (size_t i = 0; i < len && i < 16; i++) {
        const char *res = afd_trace_string(ltr, labels[i]);
        afd_buf_printf(&d->sentence, "%s%s", i ? " -> " : "", res);
        afd_buf_printf(&d->resource, "%s%s", i ? ", " : "", res);
        add_other(c, AFD_CAUSE_ACCESS_LOCK, NULL, "acquire", res, &d->err);
    }
    afd_buf_printf(&d->sentence, " -> %s (taken in one order by one task and in the other by another)",
                   afd_trace_string(ltr, labels[0]));
    /* the await inside the first lock's critical section: in the task that took locks[1]
     * while holding locks[0], the suspension site of the step before that acquisition */
    uint32_t step = 0, task = 0, holder0 = 0;
    for (uint32_t i = 0; len > 1 && i < ltr->n_events; i++) {
        const afd_event *e = &ltr->events[i];
        if (e->kind == AFD_EV_STEP)
            step++;
        if (e->kind != AFD_EV_SYNC || e->a != locks[0] ||
            (e->flags != AFD_SYNC_LOCK_ACQUIRE && e->flags != AFD_SYNC_LOCK_RELEASE)) {
            if (e->kind == AFD_EV_SYNC && e->a == locks[1] && e->flags == AFD_SYNC_LOCK_ACQUIRE &&
                holder0 == e->task + 1) {
                task = e->task;
                break;
            }
            continue;
        }
        holder0 = e->flags == AFD_SYNC_LOCK_ACQUIRE ? e->task + 1 : 0;
    }
    for (uint32_t i = step; task && i-- > 0;)
        if (lv->steps[i].task == task) {
            const char *at = afd_trace_known(ltr, lv->steps[i].site);
            afd_buf_printf(&d->await_site, "%s", at ? at : "");
            break;
        }
}

/* The early access of an inverted pair and the other side (y), which the fixes that order two
 * tasks or re-check a lazy init's condition read. */
static void set_early(afd_cause *c, const afd_xpair *pair, const afd_xaccess *y)
{
    c->early = pair->x;
    c->writer_writes = y->write;
    c->writer_placed = y->file && y->line;
    if (c->writer_placed) {
        c->writer_root = y->root;
        c->writer_line = y->line;
        c->writer_sync = y->sync;
        snprintf(c->writer_file, sizeof c->writer_file, "%s", y->file);
        snprintf(c->writer_name, sizeof c->writer_name, "%s", y->root_name ? y->root_name : "");
    }
    snprintf(c->writer, sizeof c->writer, "%s", y->label);
}

/* A check-then-act that one decision made by two tasks shows (afd_view_twin_check): T checked
 * the state and suspended inside the branch it took; U, which had made the same check, writes the
 * state as its own act. The await named is where T's check and that suspension part (the
 * function holding the `if`), else the suspension site. */
static void name_twin_check(decision *d)
{
    const afd_view *f = d->f, *p = d->p;
    afd_cause *c = d->c;
    const afd_xpair *pair = &d->inv_pairs[d->twin.pair];
    const afd_view *yv = pair->y_pass ? p : f;
    const afd_xaccess *x = &f->acc[pair->x], *y = pair_y(f, p, pair), *uc = &yv->acc[d->twin.check];
    const char *run = pair->y_pass ? "passing" : "failing";
    d->chosen = d->twin.pair;
    d->twin_named = 1;
    c->kind = AFD_CAUSE_CHECK_THEN_ACT;
    set_early(c, pair, y);
    afd_buf_printf(&d->resource, "%s", x->resource);
    afd_cause_await aw;
    int named = afd_cause_chain_await(c, f, x, x, &f->steps[x->step], &aw);
    if (named < 0)
        d->err = named;
    const char *site = named > 0 ? aw.site : afd_trace_known(f->tr, f->steps[x->step].site);
    afd_buf_printf(&d->await_site, "%s", site ? site : "");
    afd_buf_printf(&d->sentence, "check-then-act on %s: %s checks it", x->resource, x->label);
    if (named > 0 && aw.read_in[0])
        afd_buf_printf(&d->sentence, " (in %s)", aw.read_in);
    afd_buf_printf(&d->sentence, " and, in the branch the check took, yields at ");
    if (named > 0)
        afd_cause_await_text(&d->sentence, c, &aw);
    else
        afd_buf_printf(&d->sentence, "%s", site ? site : "an await inside library code");
    afd_buf_printf(&d->sentence, "; %s, which made the same check, ", y->label);
    if (pair->y_pass)
        afd_buf_printf(&d->sentence, "had not written it yet (that write then never ran)");
    else
        afd_buf_printf(&d->sentence, "writes it after %s's check", x->label);
    afd_buf_printf(&d->sentence, ": both tasks act on one decision, and %s's is stale", x->label);
    add_access(c, f, x, "failing", &d->err);
    add_access(c, yv, uc, run, &d->err);
    add_access(c, yv, y, run, &d->err);
}

/* The kind, in order of precedence: a lost update (else a check-then-act), starvation, one
 * decision made by two tasks (a check-then-act), an order violation, a lock-order cycle, other. */
static void name_kind(decision *d)
{
    const afd_view *f = d->f, *p = d->p;
    const afd_trace *tr = f->tr;
    afd_cause *c = d->c;
    if (d->n_atoms || d->n_stale) { /* a lost update, else a check-then-act: the same three accesses */
        int lost = d->n_atoms > 0;
        const afd_xatom *a = lost ? &d->atoms[0] : &d->stale[0];
        const afd_xaccess *r = &f->acc[a->r], *u = &f->acc[a->u], *w = &f->acc[a->w];
        c->kind = lost ? AFD_CAUSE_LOST_UPDATE : AFD_CAUSE_CHECK_THEN_ACT;
        afd_buf_printf(&d->resource, "%s", r->resource);
        afd_cause_await aw;
        int named = afd_cause_chain_await(c, f, r, w, &f->steps[r->step], &aw);
        if (named < 0)
            d->err = named;
        const char *yield_at = named > 0 ? aw.site : afd_trace_known(tr, a->await_site); /* NULL: outside */
        afd_buf_printf(&d->await_site, "%s", yield_at ? yield_at : "");
        afd_buf_printf(&d->sentence, "%s on %s: %s reads it", lost ? "lost update" : "check-then-act",
                       r->resource, r->label);
        if (named > 0 && aw.read_in[0])
            afd_buf_printf(&d->sentence, " (in %s)", aw.read_in);
        afd_buf_printf(&d->sentence, ", yields");
        if (named > 0) {
            afd_buf_printf(&d->sentence, " at ");
            afd_cause_await_text(&d->sentence, c, &aw);
        } else if (yield_at) {
            afd_buf_printf(&d->sentence, " at %s", yield_at);
        }
        afd_buf_printf(&d->sentence, ", %s writes it, then %s %s", u->label, w->label,
                       lost ? "writes back the stale value" : "acts on what it read and writes it");
        if (named > 0 && aw.write_in[0])
            afd_buf_printf(&d->sentence, " (in %s)", aw.write_in);
        add_access(c, f, r, "failing", &d->err);
        add_access(c, f, u, "failing", &d->err);
        add_access(c, f, w, "failing", &d->err);
    } else if (starvation_shown(d)) {
        name_starvation(d);
    } else if (d->twin_found) {
        name_twin_check(d);
    } else if (d->n_inv) {
        const afd_xpair *pair = &d->inv_pairs[0];
        const afd_xaccess *x = &f->acc[pair->x], *y = pair_y(f, p, pair);
        c->kind = AFD_CAUSE_ORDER_VIOLATION;
        set_early(c, pair, y);
        afd_buf_printf(&d->resource, "%s", x->resource);
        afd_buf_printf(&d->sentence, "order violation on %s: ", x->resource);
        acc_text(&d->sentence, x);
        afd_buf_printf(&d->sentence, " before ");
        acc_text(&d->sentence, y);
        if (pair->y_pass)
            afd_buf_printf(&d->sentence, " (which then never ran)");
        order_await(c, &d->sentence, &d->await_site, f, pair->y_pass ? p : f, x, y, &d->err);
        add_access(c, f, x, "failing", &d->err);
        add_access(c, pair->y_pass ? p : f, y, pair->y_pass ? "passing" : "failing", &d->err);
    } else {
        name_lock_order(d);
    }
}

/* The evidence for an inverted pair: the order forced, the opposite order, its Ochiai score. */
static void pair_evidence(decision *d, afd_buf *m)
{
    const afd_cause_input *in = d->in;
    const afd_xpair *pair = &d->inv_pairs[d->chosen];
    const afd_xaccess *x = &d->f->acc[pair->x], *y = pair_y(d->f, d->p, pair);
    int same_data = in->window_found;
    char buf[512];
    m->len = 0;
    acc_text(m, x);
    afd_buf_printf(m, " before ");
    acc_text(m, y);
    afd_buf_printf(m, ": forcing this order fails");
    snprintf(buf, sizeof buf, "%" PRIu64 "/%" PRIu64 " failed", in->k_fail, in->n_fail);
    /* Causal only when the two runs differ in one delay and nothing else; runs that also
     * differ in the values drawn from `random` show the orders, not that the order alone
     * decides. */
    afd_evidence_add(d->ev, (const char *)m->data, buf,
                     same_data && in->k_fail == in->n_fail && in->n_fail ? "confirmed" : "weaker");
    m->len = 0;
    afd_buf_printf(m, "the opposite order passes%s", same_data ? "" : " (in a run with other random values)");
    snprintf(buf, sizeof buf, "%" PRIu64 "/%" PRIu64 " passed", in->k_pass, in->n_pass);
    afd_evidence_add(d->ev, (const char *)m->data, buf,
                     same_data && in->k_pass == in->n_pass && in->n_pass ? "confirmed" : "weaker");
    snprintf(buf, sizeof buf, "Ochiai %.2f (%" PRIu64 " failing, %" PRIu64 " passing runs)", pair->ochiai,
             pair->fail_with, pair->pass_with);
    afd_evidence_add(d->ev, "the order is suspicious over every run seen", buf, "observed");
}

/* The rows about blocking: the failing run's blocking call, the natural runs' one and its
 * association with failure, the failing run's first slow step. m is scratch. */
static void blocking_evidence(decision *d, afd_buf *m)
{
    const afd_view *f = d->f;
    const afd_trace *tr = f->tr;
    const afd_cause_history *h = &d->in->hist;
    afd_evidence *ev = d->ev;
    char buf[512];
    if (d->block_site != AFD_NOSTR) {
        const char *at = afd_trace_known(tr, d->block_site);
        snprintf(buf, sizeof buf, "%.1f ms%s%.300s", (double)d->block_ns / 1e6, at ? " at " : "",
                 at ? at : "");
        afd_evidence_add(ev, "blocking call (time.sleep) inside a coroutine, in the minimal failing run", buf,
                         "observed");
    }
    if (h->block_site) {
        snprintf(buf, sizeof buf, "%.1f ms%s%.300s", (double)h->block_ns / 1e6,
                 h->block_site[0] ? " at " : "", h->block_site);
        afd_evidence_add(ev, "a blocking call or slow step in a failing natural run", buf, "observed");
        snprintf(buf, sizeof buf, "Ochiai %.2f (%" PRIu64 " failing, %" PRIu64 " passing natural runs)",
                 d->b_ochiai, d->bfw, d->bpw);
        afd_evidence_add(ev, "natural runs with a blocking call (1 ms or more) or a slow step fail", buf,
                         "observed");
    }
    uint64_t slow = (uint64_t)(h->slow_step_ms * 1e6);
    for (uint32_t i = 0; i < f->n_steps; i++)
        if (f->steps[i].wall >= slow) {
            snprintf(buf, sizeof buf, "%.1f ms wall", (double)f->steps[i].wall / 1e6);
            m->len = 0;
            afd_buf_printf(m, "slow step: %s step %" PRIu32 " (over --slow-step)",
                           afd_trace_task_label(tr, f->steps[i].task), f->steps[i].ordinal);
            afd_evidence_add(ev, (const char *)m->data, buf, "observed");
            break;
        }
}

/* The evidence rows beside the kind, in their fixed order. */
static void add_evidence(decision *d)
{
    const afd_view *f = d->f;
    afd_evidence *ev = d->ev;
    char buf[512];
    afd_buf m;
    afd_buf_init(&m);
    if (d->n_inv)
        pair_evidence(d, &m);
    if (d->n_atoms)
        afd_evidence_add(ev, "a task wrote between another task's read and its write (atomicity violation)",
                         "in the minimal failing run", "observed");
    if (d->twin_named) {
        const afd_xpair *pair = &d->inv_pairs[d->chosen];
        const afd_xaccess *x = &f->acc[pair->x], *y = pair_y(f, d->p, pair);
        m.len = 0;
        afd_buf_printf(&m, "%s and %s both checked %s, each inside an `if` whose body holds its act",
                       x->label, y->label, x->resource);
        afd_evidence_add(ev, (const char *)m.data,
                         pair->y_pass ? "the minimal failing run and its nearest passing run"
                                      : "in the minimal failing run",
                         "inferred");
    }
    uint32_t n_inferred = 0;
    for (uint32_t i = 0; i < f->n_acc; i++)
        n_inferred += f->acc[i].inferred;
    if (n_inferred)
        afd_evidence_add(
            ev,
            "accesses inferred from the traced lines and the source (no annotations): the lines ran, "
            "what they touch is read off the code",
            (snprintf(buf, sizeof buf, "%" PRIu32 " of %" PRIu32 " accesses", n_inferred, f->n_acc), buf),
            "inferred");
    int race_on_cause = 0;
    for (size_t i = 0; i < d->n_races; i++)
        if (d->resource.len && strcmp(f->acc[d->races[i].x].resource, (const char *)d->resource.data) == 0)
            race_on_cause = 1;
    if (d->n_races)
        afd_evidence_add(
            ev,
            race_on_cause ? "the conflicting accesses are unordered by happens-before (a race)"
                          : "conflicting accesses unordered by happens-before exist",
            (snprintf(buf, sizeof buf, "%zu racing pair%s", d->n_races, d->n_races == 1 ? "" : "s"), buf),
            "observed");
    blocking_evidence(d, &m);
    if (d->c->kind != AFD_CAUSE_LOCK_ORDER) {
        uint32_t locks[16], labels[16];
        size_t len = 0;
        if (afd_view_lock_cycle(f, locks, labels, 16, &len) > 0)
            afd_evidence_add(ev, "the lock-order graph has a cycle (a potential deadlock)",
                             "in the minimal failing run", "observed");
    }
    if (m.err)
        d->err = m.err;
    afd_buf_finish(&m);
}

int afd_cause_decide(const afd_cause_input *in, afd_cause *out, afd_evidence *ev)
{
    decision d = {.in = in, .f = in->fail, .p = in->pass, .c = out, .ev = ev};
    afd_buf_init(&d.sentence);
    afd_buf_init(&d.resource);
    afd_buf_init(&d.await_site);
    int ev_err = ev->err; /* a row that failed before this decision is not its failure */
    int named = afd_cause_cancel_name(in, out, ev, &d.sentence, &d.resource, &d.await_site);
    if (named < 0) {
        d.err = named;
    } else if (named) {
        if (!(d.f->tr->flags & AFD_TRACE_DEADLOCK))
            analyse(&d); /* the racing pairs, which the incident lists whatever the kind */
    } else if (d.f->tr->flags & AFD_TRACE_DEADLOCK) {
        name_deadlock(&d);
    } else {
        analyse(&d);
        name_kind(&d);
        add_evidence(&d);
    }
    out->summary = buf_take(&d.sentence, &d.err);
    out->resource = buf_take(&d.resource, &d.err);
    out->await_site = buf_take(&d.await_site, &d.err);
    return d.err ? d.err : !ev_err && ev->err ? ev->err : 0;
}

int afd_cause_decide_starvation(const afd_cause_input *in, afd_cause *out, afd_evidence *ev)
{
    decision d = {.in = in, .f = in->fail, .p = NULL, .c = out, .ev = ev};
    afd_buf_init(&d.sentence);
    afd_buf_init(&d.resource);
    afd_buf_init(&d.await_site);
    int ev_err = ev->err;
    analyse_blocking(&d);
    if (starvation_shown(&d)) {
        afd_buf m;
        afd_buf_init(&m);
        name_starvation(&d);
        blocking_evidence(&d, &m);
        if (m.err)
            d.err = m.err;
        afd_buf_finish(&m);
    }
    out->summary = buf_take(&d.sentence, &d.err);
    out->resource = buf_take(&d.resource, &d.err);
    out->await_site = buf_take(&d.await_site, &d.err);
    return d.err ? d.err : !ev_err && ev->err ? ev->err : 0;
}
