/* inv_repair_drain.c -- the repair stage's candidates for a reader that waits for a task it holds
 * no handle to (see inv.h and fix_drain.h): AWAIT_TASK after the cancel of that task, and
 * DRAIN_TASKS.
 *
 * Both read the failing run's trace, not only the cause: the line that cancelled the task, and the
 * chain of calls from the reader's function down to the line that spawned it, are the last traced
 * line of user code of the calling task before its CANCEL or TASK event (and that line's CHAIN).
 * The rules, stated for every case they touch:
 *   - a task whose write the reader read too early was cancelled by a task, at a line that is a
 *     statement `h.cancel()` of an async function: that function goes on only once h has unwound
 *     (`await asyncio.wait([h])` after the cancel; the real fix of bpo-32751's wait_for);
 *   - else, the writer's task was spawned in calls the reader's task made (directly or through the
 *     tasks it spawned) and the spawning function kept its handle on an object reached from one of
 *     its parameters: the reader's function, which reaches that object through the arguments of
 *     the calls, awaits the task (or gathers its container) right before the read.
 * For an order violation they run only when AWAIT_TASK and EVENT_GATE found no candidate, so an
 * answer those give stays as it was. A trace holds few tasks and calls: the walks are linear. */
#include "afd.h"
#include "fix_drain.h"
#include "inv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FRAMES 32
#define MAX_HOPS 8

/* The last LINE event of task's step that holds event i (after that step's WAKE): its file and
 * line, and the chain of user frames recorded with it (AFD_NOSTR: the line's frame alone). */
static int line_before(const afd_trace *tr, uint32_t i, uint32_t task, const char **file, uint32_t *line,
                       uint32_t *chain)
{
    for (uint32_t j = i; j-- > 0;) {
        const afd_event *e = &tr->events[j];
        if (e->task != task)
            continue;
        if (e->kind == AFD_EV_WAKE)
            return 0;
        if (e->kind == AFD_EV_LINE) {
            const afd_event *n = j + 1 < tr->n_events ? &tr->events[j + 1] : NULL;
            *file = afd_trace_known(tr, e->a);
            *line = e->b;
            *chain = n && n->kind == AFD_EV_CHAIN && n->task == task ? n->a : AFD_NOSTR;
            return *file != NULL && *line != 0;
        }
    }
    return 0;
}

/* "Uploader.upload#1" -> "upload": the function a task's coroutine runs. */
static void label_function(const char *label, char *out, size_t cap)
{
    snprintf(out, cap, "%s", label);
    char *hash = strrchr(out, '#');
    if (hash)
        *hash = 0;
    char *dot = strrchr(out, '.');
    if (dot)
        memmove(out, dot + 1, strlen(dot + 1) + 1);
}

static uint32_t task_by_label(const afd_trace *tr, const char *label)
{
    for (uint32_t i = 0; i < tr->n_events; i++)
        if (tr->events[i].kind == AFD_EV_TASK && !strcmp(afd_trace_string(tr, tr->events[i].b), label))
            return tr->events[i].task;
    return 0;
}

static uint32_t task_event(const afd_trace *tr, uint32_t task)
{
    for (uint32_t i = 0; i < tr->n_events; i++)
        if (tr->events[i].kind == AFD_EV_TASK && tr->events[i].task == task)
            return i;
    return AFD_NOPOS;
}

/* ---- AWAIT_TASK after a cancel ---- */

/* The cancels of task `target` in the failing run, each tried at the line that asked for it; a
 * cancel asked for after the early read (when there is one) cannot have let it run early. 1 when
 * a candidate was added. */
static int propose_after_cancel(const afd_view *f, outcome *o, uint32_t target, char *why, size_t whylen)
{
    const afd_trace *tr = f->tr;
    uint32_t read_step = o->c.early != AFD_NOPOS ? f->acc[o->c.early].step : AFD_NOPOS;
    uint32_t step = 0; /* the view's position of the step that holds event i */
    for (uint32_t i = 0; i < tr->n_events; i++) {
        const afd_event *e = &tr->events[i];
        if (e->kind == AFD_EV_STEP)
            step++;
        if (read_step != AFD_NOPOS && step > read_step)
            break;
        const char *file = NULL;
        uint32_t line = 0, chain = AFD_NOSTR;
        if (e->kind != AFD_EV_CANCEL || e->a != target || !e->task || (e->flags & AFD_CANCEL_DONE) ||
            !line_before(tr, i, e->task, &file, &line, &chain))
            continue;
        size_t len = 0;
        char *before = inv_read_source(o, file, &len);
        if (!before)
            continue;
        afd_buf after;
        afd_buf_init(&after);
        int ok = afd_fix_await_cancelled(before, len, line, &after, why, whylen) == 0;
        if (ok)
            inv_add_candidate(o, "AWAIT_TASK", file, before, len, &after);
        afd_buf_finish(&after);
        free(before);
        if (ok)
            return 1;
    }
    if (!why[0])
        snprintf(why, whylen, "no task cancelled the writer's task at a traced line");
    return 0;
}

/* ---- DRAIN_TASKS ---- */

/* A bounded copy (the frame fields are shorter than the chain's). */
static void copy_str(char *dst, size_t cap, const char *src)
{
    size_t l = strlen(src);
    if (l >= cap)
        l = cap - 1;
    memcpy(dst, src, l);
    dst[l] = 0;
}

typedef struct dframe {
    char file[512];
    uint32_t line;
    char function[128];
} dframe;

/* The frames from the reader's function down to the line that spawned task `writer`: the chains
 * of the lines that created each task, from the writer's up to one the reader's task created.
 * Outermost first into fr; their number, or 0 with the reason in why. */
static size_t spawn_frames(const afd_trace *tr, uint32_t writer, uint32_t reader, dframe *fr, char *why,
                           size_t whylen)
{
    size_t n = 0;
    uint32_t t = writer;
    for (int hop = 0; hop < MAX_HOPS; hop++) {
        uint32_t ti = task_event(tr, t);
        uint32_t parent = ti == AFD_NOPOS ? 0 : tr->events[ti].a;
        const char *file = NULL;
        uint32_t line = 0, chain = AFD_NOSTR;
        if (!parent) {
            snprintf(why, whylen,
                     "the writer's task was not spawned in calls the reader's task (%.100s) made",
                     afd_trace_task_label(tr, reader));
            return 0;
        }
        if (!line_before(tr, ti, parent, &file, &line, &chain)) {
            snprintf(why, whylen, "the line that spawned %.100s's task was not traced",
                     afd_trace_task_label(tr, t));
            return 0;
        }
        afd_xframe xf[AFD_CHAIN_MAX_FRAMES];
        size_t k = afd_view_chain(tr, chain, xf, AFD_CHAIN_MAX_FRAMES);
        if (!k) { /* the line's frame alone: the parent's coroutine */
            snprintf(xf[0].file, sizeof xf[0].file, "%s", file);
            xf[0].line = line;
            label_function(afd_trace_task_label(tr, parent), xf[0].function, sizeof xf[0].function);
            k = 1;
        }
        if (n + k > MAX_FRAMES) {
            snprintf(why, whylen, "the calls down to the spawn are too deep");
            return 0;
        }
        memmove(fr + k, fr, n * sizeof *fr);
        for (size_t i = 0; i < k; i++) {
            copy_str(fr[i].file, sizeof fr[i].file, xf[i].file);
            fr[i].line = xf[i].line;
            copy_str(fr[i].function, sizeof fr[i].function, xf[i].function);
        }
        if (!fr[0].function[0])
            label_function(afd_trace_task_label(tr, parent), fr[0].function, sizeof fr[0].function);
        n += k;
        if (parent == reader)
            return n;
        t = parent;
    }
    snprintf(why, whylen, "the writer's task was not spawned in calls the reader's task made");
    return 0;
}

/* The expression the reader's function (fr[0]) names the spawned task's home by, into home;
 * 0, or AFD_EINVAL with the reason in why. */
static int home_in_reader(outcome *o, const dframe *fr, size_t n, afd_drain_store *st, char *home, size_t cap,
                          char *why, size_t whylen)
{
    size_t len = 0;
    char *src = inv_read_source(o, fr[n - 1].file, &len);
    if (!src) {
        snprintf(why, whylen, "cannot read %.200s", fr[n - 1].file);
        return AFD_EINVAL;
    }
    int rc = afd_fix_drain_store(src, len, fr[n - 1].line, st, why, whylen);
    free(src);
    afd_drain_ref ref = st->base;
    char arg[256] = "";
    for (size_t i = n - 1; rc == 0 && i-- > 0;) {
        afd_drain_ref up;
        if (!(src = inv_read_source(o, fr[i].file, &len))) {
            snprintf(why, whylen, "cannot read %.200s", fr[i].file);
            return AFD_EINVAL;
        }
        rc = afd_fix_drain_arg(src, len, fr[i].line, fr[i + 1].function, &ref, arg, sizeof arg, &up, why,
                               whylen);
        free(src);
        if (rc == 0 && i > 0 && up.index < -1) {
            snprintf(why, whylen, "%.60s passes `%.60s` to %.60s, which is not one of its parameters",
                     fr[i].function, arg, fr[i + 1].function);
            rc = AFD_EINVAL;
        }
        ref = up;
    }
    if (rc == 0 && n == 1) /* the reader's own function spawned it: the parameter is in scope */
        snprintf(arg, sizeof arg, "%s", st->base.index == -1 ? "self" : st->base.name);
    if (rc == 0)
        snprintf(home, cap, "%s%s", arg, st->path);
    return rc;
}

static int propose_drain_tasks(const afd_view *f, outcome *o, uint32_t writer, char *why, size_t whylen)
{
    if (o->c.early == AFD_NOPOS) {
        snprintf(why, whylen, "no early read to place a drain before");
        return 0;
    }
    const afd_xaccess *x = &f->acc[o->c.early];
    if (x->write && o->c.writer_writes) {
        snprintf(why, whylen,
                 "the early access is a write: which of two writes comes first is no read to drain");
        return 0;
    }
    dframe fr[MAX_FRAMES];
    size_t n = spawn_frames(f->tr, writer, x->task, fr, why, whylen);
    if (!n)
        return 0;
    if (!x->file || strcmp(x->file, fr[0].file) != 0) {
        snprintf(why, whylen, "the read is not in the function whose call spawned the writer's task");
        return 0;
    }
    afd_drain_store st;
    char home[512];
    if (home_in_reader(o, fr, n, &st, home, sizeof home, why, whylen) < 0)
        return 0;
    size_t len = 0;
    char *before = inv_read_source(o, x->file, &len);
    if (!before)
        return 0;
    afd_buf after;
    afd_buf_init(&after);
    int ok = afd_fix_drain_tasks(before, len, x->line, fr[0].line, home, st.shape, &after, why, whylen) == 0;
    if (ok)
        inv_add_candidate(o, "DRAIN_TASKS", x->file, before, len, &after);
    afd_buf_finish(&after);
    free(before);
    return ok;
}

/* The labels of the tasks whose cleanup or write the reader went on without: the order
 * violation's writer, and a cancel_ordering cause's cancelled task and writer. */
static size_t writer_labels(const outcome *o, const char **out, size_t cap)
{
    size_t n = 0;
    if (o->c.writer[0] && n < cap)
        out[n++] = o->c.writer;
    for (size_t i = 0; i < o->c.n_ops && n < cap; i++) {
        const afd_cause_op *op = &o->c.ops[i];
        if (op->access == AFD_CAUSE_ACCESS_CANCEL && op->resource && *op->resource)
            out[n++] = op->resource;
        else if (op->access == AFD_CAUSE_ACCESS_WRITE && op->task && *op->task)
            out[n++] = op->task;
    }
    return n;
}

void inv_propose_drain(const afd_view *f, const afd_view *p, outcome *o, const afd_cli *cli)
{
    (void)p;
    (void)cli;
    if (o->n_cand || !f || !f->tr)
        return; /* AWAIT_TASK or EVENT_GATE found one: that answer stays */
    if (o->c.kind == AFD_CAUSE_ORDER_VIOLATION && o->c.early != AFD_NOPOS && o->c.early < f->n_acc &&
        f->acc[o->c.early].write && o->c.writer_writes)
        return; /* two writes in either order: AWAIT_TASK's reason (the policy's) is the whole answer */
    const char *labels[8];
    size_t n = writer_labels(o, labels, 8);
    char why_cancel[256] = "", why_drain[256] = "";
    for (size_t i = 0; i < n && !o->n_cand; i++) {
        uint32_t t = task_by_label(f->tr, labels[i]);
        if (t && !propose_after_cancel(f, o, t, why_cancel, sizeof why_cancel) &&
            o->c.kind == AFD_CAUSE_ORDER_VIOLATION)
            propose_drain_tasks(f, o, t, why_drain, sizeof why_drain);
    }
    if (o->n_cand)
        return;
    char prev[sizeof o->fix_why];
    snprintf(prev, sizeof prev, "%s", o->fix_why);
    if (!n)
        snprintf(o->fix_why, sizeof o->fix_why, "%.300s%sno task to await names the writer", prev,
                 prev[0] ? "; " : "");
    else if (o->c.kind == AFD_CAUSE_ORDER_VIOLATION)
        snprintf(o->fix_why, sizeof o->fix_why, "%.330s%sDRAIN_TASKS not possible: %.150s", prev,
                 prev[0] ? "; " : "", why_drain[0] ? why_drain : why_cancel);
    else
        snprintf(o->fix_why, sizeof o->fix_why, "AWAIT_TASK not possible: %.300s", why_cancel);
}
