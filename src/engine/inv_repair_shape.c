/* inv_repair_shape.c -- the repair stage's LOCK_CALLER, RECHECK and SINGLE_FLIGHT candidates (see
 * inv.h), for a lost update or a check-then-act, proposed before LOCK; RECHECK alone for an order
 * violation (a lazy init's check read before the init wrote).
 *
 * The synthesizers are keyed on the source shape and the accesses (the read, the write, the
 * resource), never on which of the two kinds the cause was named: both kinds are a read that a
 * task acted on after another task wrote in between. The lines a fix edits are those of the lowest
 * function both accesses' await chains share (afd_cause_await's common_* fields): a check made in
 * a helper and a write made in another callee are fixed where the caller makes both calls. The
 * user's files are only read. Workload: once per investigation with --fix. */
#include "cause.h"
#include "fix.h"
#include "fix_recheck.h"
#include "inv.h"
#include "pyscan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Where a fix for the read r and the write w goes: the file and the lines, in the lowest common
 * function, of the statements that make or call down to them; else, both accesses in one file,
 * their own lines. Returns 0 when neither is known. */
static int fix_span(const afd_view *f, const afd_xaccess *r, const afd_xaccess *w, char *file, size_t cap,
                    uint32_t *first, uint32_t *second)
{
    afd_cause scratch;
    afd_cause_await aw;
    afd_cause_init(&scratch);
    int rc = afd_cause_chain_await(&scratch, f, r, w, &f->steps[r->step], &aw);
    afd_cause_finish(&scratch);
    if (rc >= 0 && aw.common_file[0] && aw.common_first_line && aw.common_second_line) {
        snprintf(file, cap, "%s", aw.common_file);
        *first = aw.common_first_line;
        *second = aw.common_second_line;
        return 1;
    }
    if (!r->file || !w->file || strcmp(r->file, w->file) != 0 || !r->line || !w->line)
        return 0;
    snprintf(file, cap, "%s", r->file);
    *first = r->line;
    *second = w->line;
    return 1;
}

/* Lines of one file a fix may edit: the statements making (or calling down to) a read and a write. */
typedef struct span {
    char file[512];
    uint32_t first, second;
} span;

/* For accesses of two tasks, whose chains start in different functions (a poll and a command
 * both reaching one helper): the function both chains pass through that is deepest in the read's
 * chain, with the lines each chain is at in it. Returns 0 when no such function is known. */
static int shared_function(const afd_view *f, const afd_xaccess *r, const afd_xaccess *w, span *out)
{
    afd_xframe af[AFD_CHAIN_MAX_FRAMES], bf[AFD_CHAIN_MAX_FRAMES];
    size_t na = afd_view_chain(f->tr, r->chain, af, AFD_CHAIN_MAX_FRAMES);
    size_t nb = afd_view_chain(f->tr, w->chain, bf, AFD_CHAIN_MAX_FRAMES);
    for (size_t i = na; i-- > 0;)
        for (size_t j = nb; j-- > 0;)
            if (af[i].function[0] && af[i].line && bf[j].line && !strcmp(af[i].function, bf[j].function) &&
                !strcmp(af[i].file, bf[j].file)) {
                snprintf(out->file, sizeof out->file, "%s", af[i].file);
                out->first = af[i].line;
                out->second = bf[j].line;
                return 1;
            }
    return 0;
}

/* The spans to try for r and w, best first, without repeats: the lowest common function's
 * statements (fix_span), the function two tasks' chains share (shared_function), the accesses'
 * own lines. Returns their number (at most 3). */
static size_t candidate_spans(const afd_view *f, const afd_xaccess *r, const afd_xaccess *w, span *out)
{
    span s[3];
    size_t n = 0, k = 0;
    if (fix_span(f, r, w, s[n].file, sizeof s[n].file, &s[n].first, &s[n].second))
        n++;
    if (shared_function(f, r, w, &s[n]))
        n++;
    if (r->file && w->file && !strcmp(r->file, w->file) && r->line && w->line) {
        snprintf(s[n].file, sizeof s[n].file, "%s", r->file);
        s[n].first = r->line;
        s[n].second = w->line;
        n++;
    }
    for (size_t i = 0; i < n; i++) {
        int dup = 0;
        for (size_t j = 0; j < k; j++)
            dup |=
                !strcmp(out[j].file, s[i].file) && out[j].first == s[i].first && out[j].second == s[i].second;
        if (!dup)
            out[k++] = s[i];
    }
    return k;
}

/* The class instance state belongs to, from its resource name ("TaskQueue#0._initialized" ->
 * "TaskQueue"), into out; "" when the name does not say. */
static void owner_class(const char *resource, char *out, size_t cap)
{
    out[0] = 0;
    const char *hash = resource ? strchr(resource, '#') : NULL;
    if (hash && hash > resource && (size_t)(hash - resource) < cap)
        snprintf(out, cap, "%.*s", (int)(hash - resource), resource);
}

/* A read and a write of one resource that a fix puts in one critical section. */
typedef struct rw_pair {
    const afd_xaccess *r, *w; /* Borrowed from the failing view */
} rw_pair;

/* RECHECK at one span for the check r; 1 when a candidate was added. */
static int try_recheck(outcome *o, const span *sp, const afd_xaccess *r, char *why, size_t whylen)
{
    char owner[128];
    owner_class(r->resource, owner, sizeof owner);
    afd_lock_site site = {sp->first, sp->second, r->root, r->root_name, "check-then-act"};
    size_t len = 0;
    char *before = inv_read_source(o, sp->file, &len);
    if (!before)
        return 0;
    afd_buf after;
    afd_buf_init(&after);
    int ok = afd_fix_recheck(before, len, &site, r->root == AFD_ROOT_SELF && owner[0] ? owner : NULL, &after,
                             why, whylen) == 0;
    if (ok)
        inv_add_candidate(o, "RECHECK", sp->file, before, len, &after);
    afd_buf_finish(&after);
    free(before);
    return ok;
}

/* RECHECK for the first pair whose check is the condition of an `if` the synthesizer can double
 * check (fix_recheck.h), then for an order violation's early read and the write it came before
 * (the write ran only in the passing run: a lazy init's check, read before the init wrote); the
 * reason the last one was refused in why. Returns 1 when a candidate was added. */
static int propose_recheck(const afd_view *f, outcome *o, const rw_pair *pairs, size_t n, char *why,
                           size_t whylen)
{
    for (size_t i = 0; i < n; i++) {
        const afd_xaccess *r = pairs[i].r, *w = pairs[i].w;
        if (!r->root_name || (r->root != AFD_ROOT_SELF && r->root != AFD_ROOT_GLOBAL))
            continue;
        span spans[3];
        size_t ns = candidate_spans(f, r, w, spans);
        for (size_t k = 0; k < ns; k++)
            if (try_recheck(o, &spans[k], r, why, whylen))
                return 1;
    }
    /* the early read of an order violation, or of a check-then-act two tasks' checks show (the
     * atoms' kinds leave early unset) */
    if ((o->c.kind != AFD_CAUSE_ORDER_VIOLATION && o->c.kind != AFD_CAUSE_CHECK_THEN_ACT) ||
        o->c.early == AFD_NOPOS || o->c.early >= f->n_acc)
        return 0;
    const afd_xaccess *x = &f->acc[o->c.early];
    if (x->write || !x->file || !x->line || !x->root_name || !o->c.writer_placed || !o->c.writer_line ||
        strcmp(o->c.writer_file, x->file) != 0 || o->c.writer_root != x->root ||
        strcmp(o->c.writer_name, x->root_name) != 0 ||
        (x->root != AFD_ROOT_SELF && x->root != AFD_ROOT_GLOBAL))
        return 0;
    span sp;
    snprintf(sp.file, sizeof sp.file, "%s", x->file);
    sp.first = x->line;
    sp.second = o->c.writer_line;
    return try_recheck(o, &sp, x, why, whylen);
}

/* LOCK_CALLER for the first atom whose accesses meet in a common async caller below them (or,
 * in one function, whose write is already made under a lock the read could be moved under:
 * LOCK then, with that lock). Returns 1 when a candidate was added. */
static int propose_lock_caller(const afd_view *f, outcome *o, const rw_pair *pairs, size_t n, char *why,
                               size_t whylen)
{
    for (size_t i = 0; i < n; i++) {
        const afd_xaccess *r = pairs[i].r, *w = pairs[i].w;
        if (!r->root_name || (r->root != AFD_ROOT_SELF && r->root != AFD_ROOT_GLOBAL))
            continue;
        char file[512], owner[128];
        uint32_t first = 0, second = 0;
        if (!fix_span(f, r, w, file, sizeof file, &first, &second))
            continue;
        /* both accesses made by the function itself: LOCK's own case, unless a lock is reused */
        int in_caller = !r->file || !w->file || strcmp(r->file, file) != 0 || strcmp(w->file, file) != 0 ||
                        r->line != first || w->line != second;
        owner_class(r->resource, owner, sizeof owner);
        afd_lock_site site = {first, second, r->root, r->root_name,
                              o->c.kind == AFD_CAUSE_CHECK_THEN_ACT ? "check-then-act" : NULL};
        size_t len = 0;
        char *before = inv_read_source(o, file, &len);
        if (!before)
            continue;
        afd_buf after;
        afd_buf_init(&after);
        int reused = 0;
        int ok = afd_fix_lock_caller(before, len, &site, r->root == AFD_ROOT_SELF && owner[0] ? owner : NULL,
                                     &reused, &after, why, whylen) == 0 &&
                 (in_caller || reused);
        if (ok)
            inv_add_candidate(o, in_caller ? "LOCK_CALLER" : "LOCK", file, before, len, &after);
        afd_buf_finish(&after);
        free(before);
        if (ok)
            return 1;
    }
    return 0;
}

/* SINGLE_FLIGHT for the first pair whose read is a cache lookup and whose write the store after
 * the miss's computation (fix_recheck.h), at the spans of candidate_spans. Returns 1 when a
 * candidate was added. */
static int propose_single_flight(const afd_view *f, outcome *o, const rw_pair *pairs, size_t n, char *why,
                                 size_t whylen)
{
    for (size_t i = 0; i < n; i++) {
        span spans[3];
        size_t ns = candidate_spans(f, pairs[i].r, pairs[i].w, spans);
        for (size_t k = 0; k < ns; k++) {
            size_t len = 0;
            char *before = inv_read_source(o, spans[k].file, &len);
            if (!before)
                continue;
            afd_buf after;
            afd_buf_init(&after);
            int ok =
                afd_fix_single_flight(before, len, spans[k].first, spans[k].second, &after, why, whylen) == 0;
            if (ok)
                inv_add_candidate(o, "SINGLE_FLIGHT", spans[k].file, before, len, &after);
            afd_buf_finish(&after);
            free(before);
            if (ok)
                return 1;
        }
    }
    return 0;
}

/* The pairs to fix, best first: the cause's own atoms (a task's read and its own later write), then
 * the other kind's atoms, then -- for RECHECK only -- the failing run's racing read-write pairs of
 * two tasks: a check whose write is made by the other task at the line that initializes. */
static size_t collect_pairs(const afd_view *f, const outcome *o, int with_races, rw_pair *out, size_t cap)
{
    afd_xatom atoms[16];
    size_t n = 0, k = 0;
    int stale = o->c.kind == AFD_CAUSE_CHECK_THEN_ACT;
    for (int pass = 0; pass < 2; pass++) {
        int rc = (pass == 0) == stale ? afd_view_stale_checks(f, atoms, 16, &n)
                                      : afd_view_lost_updates(f, atoms, 16, &n);
        for (size_t i = 0; rc == 0 && i < n && i < 16 && k < cap; i++)
            out[k++] = (rw_pair){&f->acc[atoms[i].r], &f->acc[atoms[i].w]};
    }
    afd_xpair races[32];
    if (!with_races || afd_view_races(f, races, 32, &n) < 0)
        return k;
    for (size_t i = 0; i < n && i < 32 && k < cap; i++) {
        const afd_xaccess *x = &f->acc[races[i].x], *y = &f->acc[races[i].y];
        if (races[i].y_pass || x->write == y->write)
            continue;
        out[k++] = x->write ? (rw_pair){y, x} : (rw_pair){x, y};
    }
    return k;
}

void inv_propose_lock_shapes(const afd_view *f, const afd_view *p, outcome *o, const afd_cli *cli)
{
    (void)p;
    (void)cli;
    /* a lock cannot order two tasks: for an order violation only the lazy init's re-check is tried */
    int atomicity = o->c.kind == AFD_CAUSE_LOST_UPDATE || o->c.kind == AFD_CAUSE_CHECK_THEN_ACT;
    rw_pair pairs[64];
    size_t n = collect_pairs(f, o, 1, pairs, 64),
           m = atomicity ? collect_pairs(f, o, 0, pairs + n, 64 - n) : 0;
    char why[256] = "", why2[256] = "";
    int any = propose_recheck(f, o, pairs, n, why, sizeof why);
    if (atomicity) {
        char why3[256];
        any |= propose_single_flight(f, o, pairs + n, m, why3, sizeof why3);
        any |= propose_lock_caller(f, o, pairs + n, m, why2, sizeof why2);
    }
    /* an order violation keeps the reason its own fixes gave */
    if (atomicity && !any && !o->n_cand && (why[0] || why2[0]))
        snprintf(o->fix_why, sizeof o->fix_why, "RECHECK not possible here: %.200s; LOCK_CALLER: %.200s",
                 why[0] ? why : "no check to repeat", why2[0] ? why2 : "no common caller");
}
