/* inv_report.c -- the investigation's last stage: the outcome as an incident, stored and printed.
 *
 * The outcome is turned into an afd_incident once (incident.h); the JSON document (what --json
 * prints and the store keeps) and the terminal text both come from that struct, so the two cannot
 * disagree about what was found. A store that cannot be written loses nothing of what is printed.
 * Workload: once per investigation. */
#include "inv_report.h"
#include "syscov.h"

#include "afd.h"
#include "incident.h"
#include "out.h"
#include "shell.h"
#include "stats.h"
#include "storedir.h"
#include "store.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>

/* *dst = a copy of s (NULL stays NULL); 1 when the copy could not be made. */
static int dup_to(char **dst, const char *s)
{
    *dst = s ? strdup(s) : NULL;
    return s && !*dst;
}

static int dup_n_to(char **dst, const char *s, size_t n)
{
    *dst = NULL;
    if (!s)
        return 0;
    *dst = malloc(n + 1);
    if (!*dst)
        return 1;
    memcpy(*dst, s, n);
    (*dst)[n] = 0;
    return 0;
}

/* afd_buf_printf keeps the text NUL-terminated. */
static const char *buf_text(const afd_buf *b)
{
    return b->len && b->data && !b->err ? (const char *)b->data : "";
}

static int fill_window(afd_incident *inc, const window *w)
{
    if (!w->found)
        return 0;
    afd_incident_window *iw = &inc->window;
    inc->has_window = 1;
    int bad = dup_to(&iw->task, w->label) | dup_to(&iw->wakes, w->wakes);
    iw->step = w->ordinal;
    iw->passes_at_ns = w->lo;
    iw->fails_at_ns = w->hi;
    iw->delays_before = w->n_delays_before;
    iw->delays_after = w->n_delays_after;
    iw->runs = w->runs;
    iw->searched_one_delay = w->via_fallback;
    /* the full delay (it fails) and each bisection probe: one replay each, deterministic */
    if (w->n_probes && !(iw->probes = calloc(w->n_probes, sizeof *iw->probes)))
        return 1;
    for (uint32_t i = 0; i < w->n_probes; i++)
        iw->probes[i] = (afd_incident_probe){(double)w->probes[i].delay / 1e3, w->probes[i].failed};
    iw->n_probes = w->n_probes;
    return bad;
}

static int fill_tiers(afd_incident_fix *f, const outcome *o)
{
    if (!o->verified_ran)
        return 0;
    char before[48];
    snprintf(before, sizeof before, "%" PRIu64 "/%" PRIu64, o->replay_failed, o->replay_runs);
    f->tiers_ran = 1;
    f->replay_runs = o->v_replay_runs;
    f->replay_passed = o->v_replay_passed;
    f->explore_schedules = o->v_explore_n;
    f->explore_failed_before = o->v_explore_failed_before;
    f->explore_failed_after = o->v_explore_failed_after;
    f->natural_runs = o->v_natural_runs;
    f->natural_failed = o->v_natural_failed;
    f->natural_rate_below = o->v_natural_failed ? 1.0 : afd_stats_rule_of_three(o->v_natural_runs);
    f->median_ms_before = o->v_wall_before_ms;
    f->median_ms_after = o->v_wall_after_ms;
    int bad = 0;
    if (o->v_sys_ran) {
        f->has_sys_tier = 1;
        bad |= afd_sys_to_incident(&o->v_sys_before, &o->v_sys_opts, &f->sys_before) < 0;
        bad |= afd_sys_to_incident(&o->v_sys_after, &o->v_sys_opts, &f->sys_after) < 0;
    }
    return bad | dup_to(&f->token_failed_before, before);
}

/* How the failing schedule was searched for: the random portfolio's runs, the systematic search's
 * coverage when it ran, and which of them found it. */
static int fill_search(afd_incident *inc, const outcome *o)
{
    if (!o->search_random_runs && !o->sys_ran)
        return 0;
    inc->has_search = 1;
    inc->search_random_runs = o->search_random_runs;
    int bad = dup_to(&inc->found_by, o->sys_found_run ? "systematic" : o->token ? "random" : NULL);
    if (o->sys_ran) {
        inc->has_search_sys = 1;
        bad |= afd_sys_to_incident(&o->sys, &o->sys_opts, &inc->search_sys) < 0;
    }
    return bad;
}

static int fill_fix(afd_incident *inc, const outcome *o)
{
    if (!o->fix_tried)
        return 0;
    afd_incident_fix *f = &inc->fix;
    inc->has_fix = 1;
    int bad = dup_to(&f->kind, o->fix_kind) | dup_to(&f->why_none, o->fix_kind ? NULL : o->fix_why) |
              dup_to(&f->diff, buf_text(&o->fix_diff)) |
              dup_to(&f->apply, o->apply_note[0] ? o->apply_note : NULL);
    if (o->gate_ran && !(f->gate = calloc(AFD_GATE__COUNT, sizeof *f->gate)))
        return 1;
    for (int k = 0; o->gate_ran && k < AFD_GATE__COUNT; k++) {
        afd_incident_gate *g = &f->gate[f->n_gate++];
        bad |= dup_to(&g->check, o->gate[k].name) | dup_to(&g->group, o->gate[k].group) |
               dup_to(&g->reason, o->gate[k].reason);
        g->passed = o->gate[k].passed;
    }
    bad |= fill_tiers(f, o);
    if (o->regression_node) {
        bad |= dup_to(&f->regression_node, o->regression_node);
        f->fails_before = !o->reg_ran           ? AFD_TRI_NOT_ATTEMPTED
                          : o->reg_fails_before ? AFD_TRI_TRUE
                                                : AFD_TRI_FALSE;
        f->passes_after = !o->reg_ran           ? AFD_TRI_NOT_ATTEMPTED
                          : o->reg_passes_after ? AFD_TRI_TRUE
                                                : AFD_TRI_FALSE;
    } else {
        bad |= dup_to(&f->regression_why, o->regression_why);
    }
    if (o->n_cand && !(f->candidates = calloc(o->n_cand, sizeof *f->candidates)))
        return 1;
    for (size_t i = 0; i < o->n_cand; i++) {
        afd_incident_candidate *c = &f->candidates[f->n_candidates++];
        bad |= dup_to(&c->kind, o->cand[i].kind);
        c->changed_lines = o->cand[i].changed;
        c->tried = o->cand[i].tried;
        c->gate_passed = o->cand[i].gate_passed;
        c->verified = o->cand[i].verified;
    }
    f->verified = inv_fix_verified(o);
    f->applied = o->applied;
    return bad;
}

static int fill_environment(afd_incident *inc, const inv *v)
{
    struct utsname un;
    char plat[400] = "";
    if (uname(&un) == 0)
        snprintf(plat, sizeof plat, "%s %s %s", un.sysname, un.release, un.machine);
    return dup_to(&inc->python, v->pool ? afd_pool_python(v->pool) : "") |
           dup_to(&inc->hash_seed, v->pool ? afd_pool_hash_seed(v->pool) : "") | dup_to(&inc->platform, plat);
}

/* The outcome as an incident. The cause and the evidence are moved into it (the outcome is left
 * with empty ones); everything else is copied. Returns 0 or AFD_ENOMEM. */
static int incident_from_outcome(const afd_cli *cli, const inv *v, outcome *o, uint64_t elapsed_ns,
                                 afd_incident *inc)
{
    afd_incident_init(inc);
    int bad = dup_to(&inc->nodeid, cli->nodeid);
    if (cli->check_file) { /* affidavit check: the target the harness test was built from */
        inc->has_check = 1;
        bad |= dup_to(&inc->check.file, cli->check_file) | dup_to(&inc->check.cls, cli->check_cls) |
               dup_to(&inc->check.method, cli->check_method);
        inc->check.calls = cli->check_calls;
    }
    inc->verdict = afd_verdict_parse(o->verdict);
    if (o->timing.sensitive) {
        afd_buf summary;
        afd_buf_init(&summary);
        afd_timing_summary(&o->timing, &summary);
        inc->has_timing = 1;
        bad |= summary.err | dup_to(&inc->timing.summary, buf_text(&summary));
        afd_buf_finish(&summary);
        inc->timing.duration_us = o->timing.duration_ns / 1000 + (o->timing.duration_ns % 1000 >= 500);
        bad |= dup_to(&inc->timing.site, o->timing.site[0] ? o->timing.site : NULL);
        inc->timing.check_runs = o->timing.check_runs;
        inc->timing.check_passed = o->timing.check_passed;
    }
    inc->natural_runs = o->natural.runs;
    inc->natural_failed = o->natural.failed;
    inc->ci95_lo = o->lo;
    inc->ci95_hi = o->hi;
    bad |= dup_to(&inc->token, o->token) | dup_to(&inc->passing_token, o->pass_token);
    inc->replay_runs = o->replay_runs;
    inc->replay_failed = o->replay_failed;
    inc->identical_traces = !o->replay_runs ? -1 : !o->traces_differ;
    inc->passing_runs = o->pass_runs;
    inc->passing_passed = o->pass_passed;
    bad |= fill_window(inc, &o->win);
    afd_cause_finish(&inc->cause);
    inc->cause = o->c;
    afd_cause_init(&o->c);
    afd_evidence_finish(&inc->evidence);
    inc->evidence = o->ev;
    afd_evidence_init(&o->ev);
    bad |= fill_search(inc, o);
    bad |= fill_fix(inc, o);
    bad |= dup_n_to(&inc->failure, o->failure, o->failure_len);
    inc->failure_len = o->failure ? o->failure_len : 0;
    bad |= fill_environment(inc, v);
    inc->step_limit_runs = v->step_limited;
    inc->truncated_traces = v->truncated;
    inc->runs = v->total_runs;
    inc->seconds = (double)elapsed_ns / 1e9;
    inc->abstain_reason = o->abstain_reason;
    inc->max_steps = cli->max_steps;
    bad |= dup_to(&inc->verify_error, o->v_error[0] ? o->v_error : NULL);
    for (int k = 0; k < INV__STAGES && !bad; k++) {
        const char *name;
        double seconds;
        uint64_t runs;
        inv_stage_measure(v, k, &name, &seconds, &runs);
        bad |= afd_incident_add_stage(inc, name, seconds, runs) < 0;
    }
    return bad || inc->evidence.err ? AFD_ENOMEM : 0;
}

/* The fix's part of the terminal text: the proposal, its verification tiers, its gate, its diff. */
static void text_fix(const afd_incident *inc, afd_buf *b)
{
    const afd_incident_fix *f = &inc->fix;
    if (inc->has_fix && !f->kind)
        afd_buf_printf(b, "  fix:      none proposed: %s\n", f->why_none ? f->why_none : "");
    if (!f->kind)
        return;
    /* Only a verified fix is proposed: a candidate the gate refused or verification failed is
     * reported as such, with what ran, so that nobody reads it as a fix. */
    if (!afd_incident_gate_passed(inc)) {
        int src = 0;
        for (size_t i = 0; i < f->n_gate; i++)
            src |= !f->gate[i].passed && f->gate[i].check && !strcmp(f->gate[i].check, "src_allowed");
        afd_buf_printf(
            b, "  fix:      %s candidate refused by the policy gate: not verified, not proposed%s\n", f->kind,
            src ? " (it edits code that is not a test file; --allow-src lets a fix do that)" : "");
    } else if (!f->tiers_ran)
        afd_buf_printf(
            b, "  fix:      %s candidate; policy gate passed; verification not attempted: not proposed\n",
            f->kind);
    else if (!f->verified)
        afd_buf_printf(b, "  fix:      %s candidate; policy gate passed; verification FAILED: not proposed\n",
                       f->kind);
    else
        afd_buf_printf(b, "  fix:      %s proposed; policy gate passed; VERIFIED; %s\n", f->kind,
                       f->apply ? f->apply : "not applied (--apply writes it, with a backup)");
    if (f->tiers_ran) {
        afd_buf_printf(b,
                       "    replay   the failing token: %" PRIu64 "/%" PRIu64 " failed before, %" PRIu64
                       "/%" PRIu64 " passed after\n",
                       inc->replay_failed, inc->replay_runs, f->replay_passed, f->replay_runs);
        afd_buf_printf(b,
                       "    explore  %" PRIu64 " schedules: %" PRIu64 " failed before, %" PRIu64 " after\n",
                       f->explore_schedules, f->explore_failed_before, f->explore_failed_after);
        if (f->has_sys_tier) {
            afd_buf_printf(b, "    ");
            afd_sys_tier_sentence(&f->sys_before, &f->sys_after, b);
            afd_buf_put_u8(b, '\n');
        }
        if (f->natural_runs)
            afd_buf_printf(b, "    natural  %" PRIu64 " runs, %" PRIu64 " failed%s", f->natural_runs,
                           f->natural_failed, f->natural_failed ? "\n" : "");
        if (f->natural_runs && !f->natural_failed)
            afd_buf_printf(b, " (rate below %.1f%% at 95%%, rule of three)\n", 100 * f->natural_rate_below);
        afd_buf_printf(b, "    overhead median run %.2f ms before, %.2f ms after\n", f->median_ms_before,
                       f->median_ms_after);
        if (f->regression_node)
            afd_buf_printf(b, "    regression test %s: %s before the fix, %s after\n", f->regression_node,
                           f->fails_before == AFD_TRI_NOT_ATTEMPTED ? "not attempted"
                           : f->fails_before == AFD_TRI_TRUE        ? "fails"
                                                                    : "DOES NOT FAIL",
                           f->passes_after == AFD_TRI_NOT_ATTEMPTED ? "not attempted"
                           : f->passes_after == AFD_TRI_TRUE        ? "passes"
                                                                    : "FAILS");
        else
            afd_buf_printf(b, "    %s\n", f->regression_why ? f->regression_why : "");
    } else if (inc->verify_error) {
        afd_buf_printf(b, "    verification not attempted: %s\n", inc->verify_error);
    }
    for (size_t k = 0; k < f->n_gate; k++)
        afd_buf_printf(b, "    %s %-22s %s\n", f->gate[k].passed ? "pass" : "FAIL", f->gate[k].check,
                       f->gate[k].reason);
    afd_buf_printf(b, "%s", f->diff ? f->diff : "");
}

/* The collision window's line, rounded outward to 0.1 us, so the printed bounds stay on their
 * measured sides. */
static void text_window(const afd_incident_window *w, afd_buf *b)
{
    afd_buf_printf(b, "  window:   fails exactly when ");
    if (w->wakes)
        afd_buf_printf(b, "the callback that wakes %s (%s, call %" PRIu32 ")", w->wakes, w->task, w->step);
    else
        afd_buf_printf(b, "%s, step %" PRIu32 ",", w->task, w->step);
    afd_buf_printf(b, " is delayed by more than %.1f us (measured: passes at %.1f us, fails at %.1f us)\n",
                   floor((double)w->passes_at_ns / 100.0) / 10.0,
                   floor((double)w->passes_at_ns / 100.0) / 10.0,
                   ceil((double)w->fails_at_ns / 100.0) / 10.0);
}

/* The investigation for a person reading a terminal. */
static void text_document(const afd_incident *inc, afd_buf *b)
{
    const char *head = afd_verdict_head(inc->verdict) ? afd_verdict_head(inc->verdict) : "ABSTAINED";
    if (inc->has_check)
        afd_buf_printf(b, "check %s %s.%s, %" PRIu64 " concurrent calls: %s\n  harness:  %s\n",
                       inc->check.file, inc->check.cls, inc->check.method, inc->check.calls, head,
                       inc->nodeid);
    else
        afd_buf_printf(b, "%s: %s\n", inc->nodeid, head);
    afd_buf_printf(b, "  natural:  %" PRIu64 "/%" PRIu64 " failed (%.1f%%, 95%% CI %.1f%%-%.1f%%)\n",
                   inc->natural_failed, inc->natural_runs,
                   inc->natural_runs ? 100.0 * (double)inc->natural_failed / (double)inc->natural_runs : 0.0,
                   100 * inc->ci95_lo, 100 * inc->ci95_hi);
    if (inc->abstain_reason)
        afd_buf_printf(b, "  why:      %s\n", inc->abstain_reason);
    if (inc->has_search_sys) {
        afd_buf_printf(b, "  search:   %" PRIu64 " random schedules and the systematic search%s:\n",
                       inc->search_random_runs,
                       inc->found_by && !strcmp(inc->found_by, "systematic") ? " (which found it)" : "");
        afd_sys_coverage_lines(&inc->search_sys, b, "            ");
    }
    if (inc->has_timing)
        afd_buf_printf(b,
                       "  timing:   %s\n  checked:  " AFD_TIMING_CHECKED " passed %" PRIu64 "/%" PRIu64
                       " runs; no race cause, no fix\n",
                       inc->timing.summary, inc->timing.check_passed, inc->timing.check_runs);
    if (inc->failure && inc->failure_len) {
        /* At most 300 bytes, cut back to a character boundary; NUL bytes and escape sequences
         * are shown, never passed to the terminal. */
        size_t n = inc->failure_len < 300 ? inc->failure_len : 300;
        while (n < inc->failure_len && n > 0 && ((unsigned char)inc->failure[n] & 0xc0) == 0x80)
            n--;
        afd_buf_printf(b, "  failure:  ");
        afd_term_strn(b, inc->failure, n);
        afd_buf_printf(b, "\n");
    }
    if (inc->cause.kind != AFD_CAUSE_NONE) {
        afd_buf_printf(b, "  cause:    %s\n", inc->cause.summary ? inc->cause.summary : "");
        if (inc->cause.await_site && *inc->cause.await_site)
            afd_buf_printf(b, "  await:    %s\n", inc->cause.await_site);
        /* the frames beneath the await named, down to the innermost user await */
        for (size_t i = 0; i < inc->cause.n_await_chain; i++) {
            const afd_cause_frame *f = &inc->cause.await_chain[i];
            afd_buf_printf(b, "  %s", i ? "          " : "via:      ");
            afd_term_strn(b, f->function, strlen(f->function));
            afd_buf_printf(b, "() at ");
            afd_term_strn(b, f->file, strlen(f->file));
            afd_buf_printf(b, ":%" PRIu32 "\n", f->line);
        }
    }
    if (inc->has_window)
        text_window(&inc->window, b);
    if (inc->token) {
        afd_buf_printf(
            b, "  replayed: %" PRIu64 "/%" PRIu64 " failed%s", inc->replay_failed, inc->replay_runs,
            inc->identical_traces == 0 ? " (the traces differ between replays: see the evidence)" : "");
        if (inc->passing_runs)
            afd_buf_printf(b, "; nearest passing schedule %" PRIu64 "/%" PRIu64 " passed",
                           inc->passing_passed, inc->passing_runs);
        afd_buf_printf(b, "\n  token:    %s\n", inc->token);
    }
    if (inc->evidence.n)
        afd_buf_printf(b, "  evidence:\n");
    for (size_t i = 0; i < inc->evidence.n; i++)
        afd_buf_printf(b, "    - %s: %s [%s]\n", inc->evidence.rows[i].claim, inc->evidence.rows[i].measured,
                       inc->evidence.rows[i].strength);
    if (inc->token) {
        afd_buf_printf(b, "  replay:   ");
        afd_shell_replay_command(b, inc->token, inc->nodeid);
        afd_buf_put_u8(b, '\n');
    }
    text_fix(inc, b);
    if (inc->step_limit_runs)
        afd_buf_printf(b,
                       "  step limit reached (%" PRIu64 " steps) in %" PRIu64 " of %" PRIu64
                       " runs: neither passes nor failures\n",
                       inc->max_steps, inc->step_limit_runs, inc->runs);
    if (inc->truncated_traces)
        afd_buf_printf(b, "  trace truncated at its size bound in %" PRIu64 " of %" PRIu64 " runs\n",
                       inc->truncated_traces, inc->runs);
    afd_buf_printf(b, "  (%" PRIu64 " runs in %.1f s)\n", inc->runs, inc->seconds);
    /* the pipeline's stages; one that did not run was measured as nothing at all */
    for (size_t k = 0; k < inc->n_stages; k++) {
        const afd_incident_stage *st = &inc->stages[k];
        afd_buf_printf(b, "  [%zu/%zu] %s ... ", k + 1, inc->n_stages, st->name);
        if (st->seconds > 0 || st->runs)
            afd_buf_printf(b, "%.2f s (%" PRIu64 " run%s)\n", st->seconds, st->runs,
                           st->runs == 1 ? "" : "s");
        else
            afd_buf_printf(b, "skipped\n");
    }
}

/* Stores the incident (its JSON document, every run, the failing and the nearest passing traces,
 * the patch of fix_file) and writes its HTML report. A store that cannot be written (a read-only
 * project, a full disk) loses nothing of what is printed: a warning says why, and the result is
 * printed with no incident number. */
static int64_t record_incident(const afd_incident *inc, const char *json, const char *fix_file,
                               const kept_run *fail_run, const kept_run *pass_run, const runlog *runs,
                               char *report_path, size_t pathlen)
{
    report_path[0] = 0;
    char err[600] = "";
    afd_store *st = NULL;
    int64_t id = 0;
    afd_buf fb, pb;
    afd_buf_init(&fb);
    afd_buf_init(&pb);
    afd_store_trace traces[2];
    size_t n_traces = 0;
    if (fail_run->have_trace && afd_trace_encode(&fail_run->tr, &fb) == 0)
        traces[n_traces++] = (afd_store_trace){"failing", fb.data, fb.len};
    if (pass_run->have_trace && afd_trace_encode(&pass_run->tr, &pb) == 0)
        traces[n_traces++] = (afd_store_trace){"passing", pb.data, pb.len};
    const char *kind = afd_cause_kind_name(inc->cause.kind);
    afd_store_incident row = {
        .nodeid = inc->nodeid,
        .verdict = afd_verdict_name(inc->verdict) ? afd_verdict_name(inc->verdict) : "",
        .cause_kind = kind ? kind : "",
        .summary = inc->has_timing      ? inc->timing.summary
                   : inc->cause.summary ? inc->cause.summary
                                        : "",
        .token = inc->token ? inc->token : "",
        .rate = inc->natural_runs ? (double)inc->natural_failed / (double)inc->natural_runs : 0,
        .natural_runs = inc->natural_runs,
        .natural_failed = inc->natural_failed,
        .created = (int64_t)time(NULL),
        .json = json,
    };
    afd_store_patch patch = {
        .kind = inc->fix.kind,
        .file = fix_file ? fix_file : "",
        .diff = inc->fix.diff ? inc->fix.diff : "",
        .gate_passed = afd_incident_gate_passed(inc),
        .verified = inc->fix.verified,
        .applied = inc->fix.applied,
    };
    int rc = afd_storedir_open(&st, err, sizeof err);
    if (rc == 0)
        rc = afd_store_add(st, &row, runs->v, runs->n, traces, n_traces, inc->fix.kind ? &patch : NULL, &id,
                           err, sizeof err);
    afd_store_close(st);
    if (rc < 0) {
        fprintf(stderr, "affidavit: warning: the incident was not stored: %s\n",
                err[0] ? err : afd_strerror(rc));
        id = 0;
    } else if (afd_storedir_write_report(
                   id, row.created, row.json, fail_run->have_trace ? &fail_run->tr : NULL,
                   pass_run->have_trace ? &pass_run->tr : NULL, report_path, pathlen, err, sizeof err) < 0) {
        fprintf(stderr, "affidavit: warning: no HTML report for incident %" PRId64 ": %s\n", id, err);
    }
    afd_buf_finish(&fb);
    afd_buf_finish(&pb);
    return id;
}

/* Prints the result, with the incident it was stored as (0: not stored) and its report: --json
 * prints the document led by "incident" and "report". */
static int print_result(const afd_cli *cli, afd_incident *inc, int64_t id, const char *report_path)
{
    int rc = 0;
    if (cli->json) {
        char *doc = NULL;
        size_t len = 0;
        inc->with_ids = 1;
        inc->id = id;
        rc = dup_to(&inc->report, report_path && *report_path ? report_path : NULL) ? AFD_ENOMEM : 0;
        if (rc == 0)
            rc = afd_incident_to_json(inc, &doc, &len);
        if (rc == 0)
            fwrite(doc, 1, len, stdout);
        free(doc);
        return rc;
    }
    afd_buf b;
    afd_buf_init(&b);
    text_document(inc, &b);
    if (id)
        afd_buf_printf(&b, "  incident: %" PRId64 " (affidavit show %" PRId64 ")%s%s\n", id, id,
                       report_path && *report_path ? "; report: " : "", report_path ? report_path : "");
    rc = b.err;
    if (rc == 0)
        afd_term_write(stdout, b.data, b.len);
    afd_buf_finish(&b);
    return rc;
}

int inv_report(const afd_cli *cli, const inv *v, outcome *o, uint64_t elapsed_ns, const kept_run *fail_run,
               const kept_run *pass_run, const runlog *runs)
{
    afd_incident inc;
    char *json = NULL;
    int rc = incident_from_outcome(cli, v, o, elapsed_ns, &inc);
    if (rc == 0)
        rc = afd_incident_to_json(&inc, &json, NULL);
    if (rc == 0) {
        char report_path[512];
        int64_t id = record_incident(&inc, json, o->fix_file, fail_run, pass_run, runs, report_path,
                                     sizeof report_path);
        rc = print_result(cli, &inc, id, report_path);
    }
    free(json);
    afd_incident_finish(&inc);
    return rc;
}
