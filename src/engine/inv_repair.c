/* inv_repair.c -- the repair stage (--fix): the fixes synthesized for the cause, each kept as a
 * candidate with its patched text; the verify stage gates and verifies them, smallest first.
 *
 * LOCK for a lost update or a check-then-act, AWAIT_TASK and EVENT_GATE for an order violation,
 * LOCK_ORDER for a deadlock or a lock-order cycle, OFFLOAD for starvation. The user's files are
 * only read here; at most eight candidates are kept (inv.h names the proposers beside these). */
#include "afd.h"
#include "explain.h"
#include "fix.h"
#include "fileio.h"
#include "inv.h"
#include "pyscan.h"
#include "udiff.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *afd_read_source_file(const char *path, size_t *len)
{
    char *text = NULL;
    return afd_file_read(path, AFD_PYSCAN_MAX_SOURCE - 1, &text, len) < 0 ? NULL : text;
}

/* The file a fix edits, or NULL with the reason in o->fix_why. */
char *inv_read_source(outcome *o, const char *file, size_t *len)
{
    char *text = afd_read_source_file(file, len);
    if (!text)
        snprintf(o->fix_why, sizeof o->fix_why, "cannot read %.200s", file);
    return text;
}

void inv_add_candidate(outcome *o, const char *kind, const char *file, const char *before, size_t len,
                       const afd_buf *after)
{
    if (o->n_cand >= sizeof o->cand / sizeof o->cand[0])
        return;
    struct candidate *c = &o->cand[o->n_cand];
    memset(c, 0, sizeof *c);
    c->kind = kind;
    c->file = strdup(file);
    c->before = malloc(len + 1);
    if (!c->file || !c->before) {
        free(c->file);
        free(c->before);
        return;
    }
    memcpy(c->before, before, len);
    c->before[len] = 0;
    c->len = len;
    afd_buf_init(&c->after);
    afd_buf_put(&c->after, after->data, after->len);
    afd_buf d;
    afd_buf_init(&d);
    afd_udiff_make(file, before, len, (const char *)after->data, after->len, &d);
    for (size_t i = 0; i + 1 < d.len; i++)
        if (d.data[i] == '\n' && (d.data[i + 1] == '+' || d.data[i + 1] == '-') &&
            !(i + 3 < d.len && d.data[i + 2] == d.data[i + 1] && d.data[i + 3] == d.data[i + 1]))
            c->changed++;
    afd_buf_finish(&d);
    o->n_cand++;
}

void inv_candidates_finish(outcome *o)
{
    if (!o)
        return;
    for (size_t i = 0; i < o->n_cand; i++) {
        free(o->cand[i].file);
        free(o->cand[i].before);
        afd_buf_finish(&o->cand[i].after);
    }
    o->n_cand = 0;
}

/* --fix for an order violation: when the early reader holds a handle to the writer's task,
 * AWAIT_TASK (await it right before the read). */
static void propose_await_task(const afd_view *f, outcome *o, const afd_cli *cli)
{
    if (o->c.early == AFD_NOPOS || !o->c.writer[0]) {
        snprintf(o->fix_why, sizeof o->fix_why, "the order violation names no reader and writer to order");
        return;
    }
    const afd_xaccess *x = &f->acc[o->c.early];
    if (x->write && o->c.writer_writes) {
        snprintf(
            o->fix_why, sizeof o->fix_why,
            "the failure depends on which of two concurrent writes comes first (an order-dependent "
            "assertion): forcing one order would serialize tasks the test runs concurrently, and accepting "
            "either order would weaken the assertion, which the policy refuses");
        return;
    }
    if (!x->file || !x->line) {
        snprintf(o->fix_why, sizeof o->fix_why,
                 "the early access was not placed at a line of the source (no "
                 "traced line of user code ran before it in its step): no line to place an await before");
        return;
    }
    /* "refresh_token#0" -> "refresh_token"; "Connection.open#0" -> "open" */
    char writer[256];
    snprintf(writer, sizeof writer, "%s", o->c.writer);
    char *hash = strrchr(writer, '#');
    if (hash)
        *hash = 0;
    const char *dot = strrchr(writer, '.');
    const char *name = dot ? dot + 1 : writer;
    size_t len = 0;
    char *before = inv_read_source(o, x->file, &len);
    if (!before)
        return;
    afd_buf after;
    afd_buf_init(&after);
    char why[256], why2[256] = "";
    int is_event = x->sync && !strncmp(x->resource, "Event@", 6);
    int is_queue = x->sync && !strncmp(x->resource, "Queue@", 6) && o->c.writer_sync;
    if (afd_fix_await_task(before, len, x->line, name, &after, why, sizeof why) == 0)
        inv_add_candidate(o, "AWAIT_TASK", x->file, before, len, &after);
    if (is_event) {
        /* the program's own event: wait for it where the flag is tested */
        if (afd_fix_event_wait(before, len, x->line, &after, why2, sizeof why2) == 0)
            inv_add_candidate(o, "EVENT_GATE", x->file, before, len, &after);
    } else {
        /* EVENT_GATE: module state (or a queue the test made), the write and the read in the
         * test's own file */
        const char *sep = strstr(cli->nodeid, "::");
        size_t flen = sep ? (size_t)(sep - cli->nodeid) : 0;
        int same_file = sep && o->c.writer_placed && strlen(x->file) == flen &&
                        !strncmp(x->file, cli->nodeid, flen) && !strcmp(o->c.writer_file, x->file);
        int same_global = o->c.writer_root == AFD_ROOT_GLOBAL && x->root == AFD_ROOT_GLOBAL && x->root_name &&
                          !strcmp(x->root_name, o->c.writer_name);
        /* a queue reached through a parameter has no module name: its event is named after its type */
        const char *gname = x->root_name && *x->root_name ? x->root_name : "queue";
        if (!same_file || !(same_global || is_queue) || strstr(sep + 2, "::"))
            snprintf(why2, sizeof why2,
                     "EVENT_GATE needs module state (or a queue) written and read in the test's own "
                     "file");
        else if (afd_fix_event_gate(before, len, sep + 2, o->c.writer_line, x->line, gname, is_queue, &after,
                                    why2, sizeof why2) == 0)
            inv_add_candidate(o, "EVENT_GATE", x->file, before, len, &after);
    }
    if (!o->n_cand)
        snprintf(o->fix_why, sizeof o->fix_why, "AWAIT_TASK not possible: %.230s%s%.230s", why,
                 why2[0] ? "; " : "", why2);
    afd_buf_finish(&after);
    free(before);
}

/* --fix for a deadlock or a lock-order cycle: the places where one lock was taken while another
 * was held, in the failing run and the passing one (a deadlocked run never completes the inner
 * acquisition). When they are all one place -- one function taking the two locks it is given, in
 * the order given -- LOCK_ORDER takes them in one global order. */
static void propose_lock_order(const afd_view *f, const afd_view *p, outcome *o)
{
    afd_lock_nesting nest[64];
    const char *file = NULL;
    uint32_t outer = 0, inner = 0;
    int sites = 0, unplaced = 0;
    const afd_view *views[2] = {f, p};
    for (int k = 0; k < 2; k++) {
        size_t n = 0;
        if (!views[k] || afd_view_lock_nestings(views[k], nest, 64, &n) < 0)
            continue;
        for (size_t i = 0; i < n && i < 64; i++) {
            if (!nest[i].file) {
                unplaced++;
                continue;
            }
            if (!sites || strcmp(file, nest[i].file) != 0 || outer != nest[i].outer_line ||
                inner != nest[i].inner_line)
                sites++;
            file = nest[i].file;
            outer = nest[i].outer_line;
            inner = nest[i].inner_line;
        }
    }
    if (sites != 1 || unplaced) {
        const char *untraced = unplaced ? " (and at some the runs traced no line)" : "";
        if (sites)
            snprintf(o->fix_why, sizeof o->fix_why,
                     "the locks are nested at %d places%s: reordering several "
                     "functions is not synthesized",
                     sites, untraced);
        else
            snprintf(o->fix_why, sizeof o->fix_why,
                     "no nested acquisition of the locks was placed at a line of the "
                     "source%s",
                     untraced);
        return;
    }
    size_t len = 0;
    char *before = inv_read_source(o, file, &len);
    if (!before)
        return;
    afd_buf after;
    afd_buf_init(&after);
    char why[256];
    if (afd_fix_lock_order(before, len, outer, inner, &after, why, sizeof why) == 0)
        inv_add_candidate(o, "LOCK_ORDER", file, before, len, &after);
    else
        snprintf(o->fix_why, sizeof o->fix_why, "LOCK_ORDER not possible here: %s", why);
    afd_buf_finish(&after);
    free(before);
}

/* --fix for starvation: the blocking call the cause names ("file:line") moved to a worker thread. */
static void propose_offload(outcome *o)
{
    char file[512];
    snprintf(file, sizeof file, "%s", o->c.await_site ? o->c.await_site : "");
    char *colon = strrchr(file, ':');
    unsigned long line = colon ? strtoul(colon + 1, NULL, 10) : 0;
    if (!colon || !line || line > UINT32_MAX) {
        snprintf(o->fix_why, sizeof o->fix_why, "the blocking call was not placed at a line of the source");
        return;
    }
    *colon = 0;
    size_t len = 0;
    char *before = inv_read_source(o, file, &len);
    if (!before)
        return;
    afd_buf after;
    afd_buf_init(&after);
    char why[256];
    if (afd_fix_offload(before, len, (uint32_t)line, &after, why, sizeof why) == 0)
        inv_add_candidate(o, "OFFLOAD", file, before, len, &after);
    else
        snprintf(o->fix_why, sizeof o->fix_why, "OFFLOAD not possible here: %s", why);
    afd_buf_finish(&after);
    free(before);
}

/* --fix for a lost update whose accesses were read off the source: LOCK around the read and the
 * write of the task that lost the update (and of every other resource it lost in the same code),
 * then the policy gate over the before and after text. The user's file is only read. */
static void propose_fix(const afd_view *f, const afd_view *p, outcome *o, const afd_cli *cli)
{
    o->fix_tried = 1;
    afd_cause_kind kind = o->c.kind;
    if (kind == AFD_CAUSE_ORDER_VIOLATION) {
        propose_await_task(f, o, cli);
        inv_propose_drain(f, p, o, cli);
        inv_propose_lock_shapes(f, p, o, cli); /* RECHECK: a lazy init's check read before its write */
        return;
    }
    if (kind == AFD_CAUSE_CANCEL_ORDERING) {
        inv_propose_drain(f, p, o, cli);
        return;
    }
    if (kind == AFD_CAUSE_CANCELLED_HANDOFF || kind == AFD_CAUSE_LOST_WAKEUP) {
        inv_propose_handoff(f, p, o, cli);
        return;
    }
    if (kind == AFD_CAUSE_DEADLOCK || kind == AFD_CAUSE_LOCK_ORDER) {
        propose_lock_order(f, p, o);
        return;
    }
    if (kind == AFD_CAUSE_STARVATION) {
        propose_offload(o);
        return;
    }
    int stale = kind == AFD_CAUSE_CHECK_THEN_ACT;
    if (kind != AFD_CAUSE_LOST_UPDATE && !stale) {
        const char *name = afd_cause_kind_name(kind);
        snprintf(o->fix_why, sizeof o->fix_why,
                 "no fix is synthesized for a%s %s cause yet (LOCK for a lost update "
                 "or a check-then-act, "
                 "AWAIT_TASK and EVENT_GATE for an order violation, LOCK_ORDER for a deadlock or lock-order "
                 "cycle, "
                 "OFFLOAD for starvation are)",
                 name && strchr("aeiou", name[0]) ? "n" : "", name ? name : "missing");
        return;
    }
    inv_propose_lock_shapes(f, p, o, cli);
    afd_xatom atoms[16];
    size_t n_atoms = 0;
    if (stale)
        afd_view_stale_checks(f, atoms, 16, &n_atoms);
    else
        afd_view_lost_updates(f, atoms, 16, &n_atoms);
    afd_lock_site sites[16];
    size_t n_sites = 0;
    const char *file = NULL;
    uint32_t loser = n_atoms ? f->acc[atoms[0].w].task : 0;
    for (size_t i = 0; i < n_atoms && i < 16; i++) {
        const afd_xaccess *r = &f->acc[atoms[i].r], *w = &f->acc[atoms[i].w];
        if (w->task != loser || !r->root_name || !w->root_name || !r->file || !w->file ||
            strcmp(r->file, w->file) != 0 || r->root != w->root ||
            (r->root != AFD_ROOT_SELF && r->root != AFD_ROOT_GLOBAL) ||
            strcmp(r->root_name, w->root_name) != 0)
            continue;
        if (file && strcmp(file, r->file) != 0)
            continue;
        int dup = 0;
        for (size_t k = 0; k < n_sites; k++)
            dup |= strcmp(sites[k].name, r->root_name) == 0;
        if (dup)
            continue;
        file = r->file;
        sites[n_sites++] =
            (afd_lock_site){r->line, w->line, r->root, r->root_name, stale ? "check-then-act" : NULL};
    }
    if (!n_sites) {
        snprintf(o->fix_why, sizeof o->fix_why,
                 "the %s's accesses are not placed at lines of the source "
                 "that touch module or instance state: no place to put a lock",
                 stale ? "check-then-act" : "lost update");
        return;
    }
    size_t len = 0;
    char *before = inv_read_source(o, file, &len);
    if (!before)
        return;
    afd_buf after;
    afd_buf_init(&after);
    char why[256];
    if (afd_fix_lock(before, len, sites, n_sites, &after, why, sizeof why) < 0)
        snprintf(o->fix_why, sizeof o->fix_why, "LOCK not possible here: %s", why);
    else
        inv_add_candidate(o, "LOCK", file, before, len, &after);
    afd_buf_finish(&after);
    free(before);
}

/* 6. repair: the candidates for the cause, read off the views of the explain stage */
int inv_repair(inv *v, outcome *o)
{
    propose_fix(&v->fv, v->have_pv ? &v->pv : NULL, o, v->cli);
    return 0;
}
