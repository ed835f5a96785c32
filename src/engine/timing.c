/* timing.c -- the timing_sensitive verdict: a failure that needs one step to outlast a deadline.
 *
 * Main invariant: the verdict is given only on measured runs: the failing trace's own record of
 * the outlasted deadline, and AFD_TIMING_CHECK_RUNS runs of the same schedule kept below the
 * deadlines, every one of which passed. Workload: once per failing search; a few runs. */
#include "timing.h"
#include "afd.h"
#include "token.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* What identifies a time the program set that fired: a deadline's site, or a sleep's site with
 * the task that armed it (another task's sleep at the same line is another time: crash_after(0.1)
 * and crash_after(10) sleep at one line in two tasks, and the zero run firing the first says
 * nothing of the second; the same task sleeping there again, however long, is the program's own
 * operation). NULL when the site is unknown. */
static const char *fired_key(const afd_trace *tr, const afd_event *e, char *buf, size_t n)
{
    const char *site = afd_trace_known(tr, e->b);
    const char *task = site && !e->a && e->task ? afd_trace_task_known(tr, e->task) : NULL;
    if (!task)
        return site;
    snprintf(buf, n, "%s in %s", site, task);
    return buf;
}

void afd_fired_sites_from_trace(afd_fired_sites *self, const afd_trace *tr)
{
    afd_fired_sites_finish(self);
    if (!tr)
        return;
    self->known = 1;
    for (uint32_t i = 0; i < tr->n_events; i++) {
        const afd_event *e = &tr->events[i];
        char buf[1100];
        const char *site = e->kind == AFD_EV_DEADLINE_LATE && (e->flags & AFD_LATE_FIRED)
                               ? fired_key(tr, e, buf, sizeof buf)
                               : NULL;
        if (!site || afd_fired_sites_has(self, site))
            continue;
        char **grown = realloc(self->site, (self->n + 1) * sizeof *grown);
        char *copy = strdup(site);
        if (!grown || !copy) { /* a site forgotten only makes a firing look brought due: checked */
            free(copy);
            if (grown)
                self->site = grown;
            return;
        }
        self->site = grown;
        self->site[self->n++] = copy;
    }
}

int afd_fired_sites_has(const afd_fired_sites *self, const char *site)
{
    for (size_t i = 0; self && site && i < self->n; i++)
        if (!strcmp(self->site[i], site))
            return 1;
    return 0;
}

void afd_fired_sites_finish(afd_fired_sites *self)
{
    for (size_t i = 0; i < self->n; i++)
        free(self->site[i]);
    free(self->site);
    memset(self, 0, sizeof *self);
}

/* Whether a DEADLINE_LATE event says the run crossed a time the program set: a step or a wake-up
 * that outlasted it, or a deadline the schedule's stalls brought due that the zero schedule's run
 * never reached (one it reached is the program's own operation: a poll's timeout, a retry). */
int afd_timing_crossing(const afd_trace *tr, const afd_event *e, const afd_fired_sites *normal)
{
    if (!(e->flags & AFD_LATE_FIRED))
        return 1;
    if (!(e->flags & AFD_LATE_BROUGHT_DUE))
        return 0;
    char buf[1100];
    const char *key = fired_key(tr, e, buf, sizeof buf);
    return !(normal && normal->known && key && afd_fired_sites_has(normal, key));
}

int afd_timing_same_deadline(const afd_trace *x, const afd_event *a, const afd_trace *y, const afd_event *b)
{
    if ((a->a != 0) != (b->a != 0) || (a->a && a->cost != b->cost))
        return 0; /* a sleep's cost is the stall that overtook it, a deadline's its duration */
    const char *sa = afd_trace_known(x, a->b), *sb = afd_trace_known(y, b->b);
    if (sa || sb)
        return sa && sb && !strcmp(sa, sb);
    return a->a == b->a;
}

size_t afd_timing_crossings(const afd_trace *tr, const afd_fired_sites *normal, const afd_event **out,
                            size_t max)
{
    size_t n = 0;
    for (uint32_t i = 0; tr && i < tr->n_events && n < max; i++) {
        const afd_event *e = &tr->events[i];
        if (e->kind != AFD_EV_DEADLINE_LATE || !afd_timing_crossing(tr, e, normal))
            continue;
        size_t k = 0;
        while (k < n && !afd_timing_same_deadline(tr, out[k], tr, e))
            k++;
        if (k == n)
            out[n++] = e;
    }
    return n;
}

/* The crossing event e of tr as the verdict's deadline. */
void afd_timing_take_crossing(afd_timing *self, const afd_trace *tr, const afd_event *e)
{
    self->crossed = 1;
    /* A margin of a millisecond below the timer assumes what follows the stall is virtual. A run
     * that also waited on a thread or a socket spent the machine's time there, which no schedule
     * chooses: its check keeps a tenth of the timer for it, as for a crossing in a real wait. */
    self->real_wait = (e->flags & AFD_LATE_REAL_WAIT) != 0 ||
                      (tr->flags & (AFD_TRACE_REAL_WAIT | AFD_TRACE_THREADS | AFD_TRACE_REAL_IO)) != 0;
    self->fired = (e->flags & AFD_LATE_FIRED) != 0;
    self->duration_ns = e->cost;
    self->site[0] = 0;
    if (e->b != AFD_NOSTR)
        snprintf(self->site, sizeof self->site, "%s", afd_trace_string(tr, e->b));
}

void afd_timing_from_trace(afd_timing *self, const afd_trace *tr, const afd_fired_sites *normal)
{
    memset(self, 0, sizeof *self);
    const afd_event *seen[AFD_TIMING_MAX_CROSSINGS];
    size_t n = afd_timing_crossings(tr, normal, seen, AFD_TIMING_MAX_CROSSINGS);
    if (n)
        afd_timing_take_crossing(self, tr, seen[0]);
    self->n_crossed = (uint32_t)n;
}

int afd_timing_capped_token(const char *token, int well_below, char **out)
{
    *out = NULL;
    afd_schedule s;
    int rc = afd_token_decode(&s, token);
    if (rc < 0)
        return rc;
    s.flags |= AFD_SCHED_BELOW_DEADLINES | (well_below ? AFD_SCHED_WELL_BELOW : 0);
    rc = afd_token_encode(&s, out);
    afd_schedule_finish(&s);
    return rc;
}

typedef struct check_ctx {
    const char *token; /* Borrowed: the capped token. */
} check_ctx;

static int make_capped(void *vctx, uint64_t i, uint8_t *mode, char **token)
{
    check_ctx *c = vctx;
    *mode = AFD_MODE_CONTROLLED;
    *token = strdup(c->token);
    return *token ? 0 : AFD_ENOMEM;
}

int afd_timing_check(afd_timing *self, afd_pool *pool, const char *token, afd_progress *prog)
{
    self->sensitive = 0;
    if (!self->crossed)
        return 0;
    char *capped = NULL;
    int rc = afd_timing_capped_token(token, self->real_wait || self->fired, &capped);
    if (rc < 0)
        return rc;
    tally t = {0};
    check_ctx c = {capped};
    rc = afd_runs_batch(pool, 0, AFD_TIMING_CHECK_RUNS, 0, make_capped, afd_runs_take_none, &c, prog, &t);
    self->check_runs = t.runs;
    self->check_passed = t.by_outcome[AFD_OUT_PASS];
    /* Every run must have run and passed: an interrupted or partial check proves nothing. */
    self->sensitive = rc == 0 && t.runs == AFD_TIMING_CHECK_RUNS && t.by_outcome[AFD_OUT_PASS] == t.runs;
    afd_tally_finish(&t);
    free(capped);
    if (rc == 0 && self->sensitive)
        rc = afd_timing_name(self, pool, token, prog);
    return rc;
}

/* A duration as a person says it: "0.1 s", "250 ms", "1.5 ms", "40 us". */
static void put_duration(afd_buf *out, uint64_t ns)
{
    uint64_t us = ns / 1000 + (ns % 1000 >= 500);
    if (us >= 100000)
        afd_buf_printf(out, "%g s", (double)us / 1e6);
    else if (us >= 1000)
        afd_buf_printf(out, "%g ms", (double)us / 1e3);
    else
        afd_buf_printf(out, "%" PRIu64 " us", us);
}

void afd_timing_summary(const afd_timing *self, afd_buf *out)
{
    if (self->clock && self->site[0]) {
        afd_buf_printf(out,
                       "fails only when its steps take longer: the same steps in the same order pass with "
                       "every delay cut to what that order needs, where the timeout armed at %s runs out; "
                       "with the delays as found, what it guards finishes within it: a time limit of the "
                       "test's own, a slow machine, not a race",
                       self->site);
        return;
    }
    if (self->clock) {
        afd_buf_printf(out,
                       "fails only when its steps take longer: the same steps in the same order pass with "
                       "every delay cut to what that order needs, so a clock reading meets a time limit "
                       "of the test's own: a slow machine, not a race");
        return;
    }
    afd_buf_printf(out, self->real_wait || self->fired ? "fails only when steps stall close to "
                                                       : "fails only when one step takes longer than ");
    if (self->duration_ns) {
        afd_buf_printf(out, "the ");
        put_duration(out, self->duration_ns);
        afd_buf_printf(out, " timer");
    } else {
        afd_buf_printf(out, "a timer");
    }
    if (self->site[0])
        afd_buf_printf(out, " armed at %s", self->site);
    if (self->n_crossed > 1 && !self->named)
        afd_buf_printf(out,
                       " (the first of %" PRIu32
                       " deadlines crossed; which one the failure needs was not measured)",
                       self->n_crossed);
    if (self->real_wait)
        afd_buf_printf(out, " and a real wait (a socket, a thread) then outlasts the rest");
    else if (self->fired)
        afd_buf_printf(out, " and the program's own waits then reach it");
    afd_buf_printf(out, ": a slow machine, not a race");
}

void afd_timing_json(const afd_timing *self, afd_buf *out)
{
    if (!self->sensitive) {
        afd_buf_printf(out, "null");
        return;
    }
    afd_buf summary;
    afd_buf_init(&summary);
    afd_timing_summary(self, &summary);
    afd_buf_printf(out, "{\"summary\": ");
    afd_json_strn(out, summary.err ? "" : (const char *)summary.data, summary.err ? 0 : summary.len);
    afd_buf_finish(&summary);
    afd_buf_printf(out, ", \"duration_us\": %" PRIu64 ", \"site\": ",
                   self->duration_ns / 1000 + (self->duration_ns % 1000 >= 500));
    if (self->site[0])
        afd_json_str(out, self->site);
    else
        afd_buf_printf(out, "null");
    afd_buf_printf(out, ", \"check_runs\": %" PRIu64 ", \"check_passed\": %" PRIu64 "}", self->check_runs,
                   self->check_passed);
}

typedef struct replay_ctx {
    const char *token;             /* Borrowed. */
    const afd_fired_sites *normal; /* Borrowed; NULL: none known. */
    afd_timing *crossing;          /* the first crossing a failing replay showed */
} replay_ctx;

static int make_replay(void *vctx, uint64_t i, uint8_t *mode, char **token)
{
    (void)i;
    replay_ctx *c = vctx;
    *mode = AFD_MODE_CONTROLLED;
    *token = strdup(c->token);
    return *token ? 0 : AFD_ENOMEM;
}

static int take_replay(void *vctx, uint64_t i, afd_run_result *res, afd_trace *tr)
{
    (void)i;
    replay_ctx *c = vctx;
    if (!c->crossing->crossed && tr && afd_runs_is_failure(res->outcome))
        afd_timing_from_trace(c->crossing, tr, c->normal);
    return 0;
}

int afd_timing_confirm(afd_pool *pool, const char *token, const afd_fired_sites *normal, afd_progress *prog,
                       afd_confirm *out)
{
    tally t = {0};
    afd_timing_from_trace(&out->crossing, NULL, NULL);
    replay_ctx c = {token, normal, &out->crossing};
    int rc = afd_runs_batch_alone(pool, 0, AFD_CONFIRM_RUNS, 0, make_replay, take_replay, &c, prog, &t);
    out->runs = t.runs;
    out->failed = t.failed;
    out->flags = t.flags_union;
    snprintf(out->thread, sizeof out->thread, "%s", t.thread ? t.thread : "");
    snprintf(out->unwoken, sizeof out->unwoken, "%s", t.unwoken ? t.unwoken : "");
    out->has_unwoken = t.unwoken != NULL;
    afd_tally_finish(&t);
    return rc;
}
