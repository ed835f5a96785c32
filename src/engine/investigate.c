/* investigate.c -- `affidavit investigate NODEID`: the pipeline as its eight stages, in order.
 *
 * Every figure printed is a count of runs executed here. Each stage is a function in a file of its
 * own, sharing the state in inv.h:
 *   1. sample (inv_runs.c): natural runs, the flake rate with its Wilson interval;
 *   2. search (inv_runs.c): the portfolio until a schedule fails (within --runs and --seconds);
 *   3. reproduce (inv_runs.c): that schedule replayed R times: R/R must fail alike, or we abstain
 *      and name the likely uncontrolled source;
 *   4. minimize (inv_minimize.c): the schedule as explicit per-step delays, ddmin to a 1-minimal
 *      set, each remaining delay bisected to the collision window;
 *   5. explain (inv_explain.c, the decision in src/lib/cause.c): the minimal failing run and its
 *      nearest passing run, both replayed R times, compared;
 *   6. repair (inv_repair.c) and 7. verify (inv_verify.c): --fix's candidates, gated and verified
 *      in a mirror of the project;
 *   8. report (inv_report.c): the incident (src/lib/incident.c), stored and printed.
 * A stage returns 0 to go on, INV_STOP when it concluded, INV_QUIT when it printed why nothing can
 * be reported, or a negative code; afd_cmd_investigate alone decides between the report and the
 * error line, and inv_finish is the one cleanup path. The stages' measures are in inv_stages.c. */
#include "afd.h"
#include "apply.h"
#include "cmds.h"
#include "explain.h"
#include "fix.h"
#include "gate.h"
#include "incident.h"
#include "inv.h"
#include "inv_report.h"
#include "minimize.h"
#include "out.h"
#include "pool.h"
#include "runs.h"
#include "schedule.h"
#include "shell.h"
#include "stats.h"
#include "timing.h"
#include "token.h"
#include "trace.h"
#include "udiff.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* --apply: the test's file as it is before any run, so that a change made while the investigation
 * runs (by the user, or by the test itself) is seen at apply time even when it happened before the
 * fix read the file. Not kept when unreadable: the check against the fix's own text remains. */
static void remember_test_file(outcome *o, const char *nodeid)
{
    const char *sep = strstr(nodeid, "::");
    size_t n = sep ? (size_t)(sep - nodeid) : strlen(nodeid);
    o->first_path = strndup(nodeid, n);
    if (o->first_path)
        o->first_seen = afd_read_source_file(o->first_path, &o->first_seen_len);
}

/* ---- the sequence ---- */

/* The state before any run: every buffer initialized, so that inv_finish can free it whatever
 * stage the investigation stopped in. 0, or INV_QUIT with v->exit set when the trace cannot be
 * written (before any run, a usage error) or the pool does not start (afd_runs_start_pool said why). */
static int inv_init(inv *v, outcome *o, const afd_cli *cli)
{
    *v = (inv){
        .cli = cli, .seed = cli->seed, .est_steps = 1, .found_index = UINT64_MAX, .cand_index = UINT64_MAX};
    v->t0 = afd_runs_now_ns();
    inv_stages_init(v);
    memset(o, 0, sizeof *o);
    afd_cause_init(&o->c);
    afd_evidence_init(&o->ev);
    afd_buf_init(&o->fix_diff);
    afd_buf_init(&o->fix_text);
    afd_buf_init(&o->buggy_with_test);
    afd_buf_init(&o->fix_before);
    if (cli->apply)
        remember_test_file(o, cli->nodeid);
    if (cli->trace_out) {
        int rc = afd_spans_open(cli->trace_out, &v->spans);
        if (rc < 0) {
            afd_runs_error_line("cannot write the trace to %s: %s", cli->trace_out,
                                rc == AFD_ENOMEM ? afd_strerror(rc) : strerror(errno));
            v->exit = AFD_EXIT_USAGE;
            return INV_QUIT;
        }
    }
    v->srcs = afd_view_srcmap_new();
    int rc = v->srcs ? afd_runs_start_pool(cli, &v->pool) : AFD_EXIT_INTERNAL;
    if (rc) {
        v->exit = rc;
        return INV_QUIT;
    }
    afd_progress_init(&v->prog, "investigate");
    return 0;
}

/* The one cleanup path: frees whatever the stages filled, in whatever stage they stopped. */
static void inv_finish(inv *v, outcome *o)
{
    afd_pool_free(v->pool);
    afd_runlog_finish(&v->log);
    afd_tally_finish(&o->natural);
    afd_view_finish(&v->fv);
    afd_view_finish(&v->pv);
    inv_kept_finish(&v->fail_run);
    inv_kept_finish(&v->pass_run);
    inv_kept_finish(&v->keep);
    inv_delay_set_finish(&v->ds);
    afd_view_srcmap_free(v->srcs);
    afd_spans_free(v->spans);
    for (size_t i = 0; i < v->n_sums; i++)
        afd_view_summary_finish(&v->sums[i]);
    free(v->sums);
    free(v->blocked);
    free(v->natural);
    free(v->block_site);
    free(v->block_task);
    free(v->found_token);
    free(v->cand_token);
    afd_fired_sites_finish(&v->normal);
    free(v->cand_failure);
    free(o->token);
    free(o->pass_token);
    free(o->failure);
    free(o->win.label);
    free(o->win.wakes);
    afd_cause_finish(&o->c);
    afd_evidence_finish(&o->ev);
    inv_candidates_finish(o);
    afd_buf_finish(&o->fix_diff);
    afd_buf_finish(&o->fix_text);
    afd_buf_finish(&o->buggy_with_test);
    afd_buf_finish(&o->fix_before);
    free(o->first_seen);
    free(o->first_path);
    free(o->fix_file);
    free(o->regression_node);
    afd_sys_result_finish(&o->sys);
    afd_sys_result_finish(&o->v_sys_before);
    afd_sys_result_finish(&o->v_sys_after);
}

/* A stage failed. Ctrl-C keeps what was measured: the runs so far are reported and stored, as
 * an incident whose verdict says it was interrupted (INV_STOP). Any other error is one line and
 * no report (INV_QUIT). */
static int inv_failed(inv *v, outcome *o, int rc)
{
    if (rc == AFD_EIO || afd_interrupted) {
        v->interrupted = 1;
        o->verdict = "interrupted";
        afd_stats_wilson(o->natural.failed, o->natural.runs, &o->lo, &o->hi);
        if (!o->failure && o->natural.first_failure)
            o->failure =
                afd_runs_text_dup(o->natural.first_failure, o->natural.first_failure_len, &o->failure_len);
        if (!o->token && v->found_token)
            o->token = strdup(v->found_token);
        return INV_STOP;
    }
    afd_runs_error_line("investigation failed: %s%s", afd_strerror(rc), "");
    v->exit = AFD_EXIT_INTERNAL;
    return INV_QUIT;
}

/* 8. report: the incident (inv_report.c), stored with every run of it and printed. */
static void report_stage(inv *v, outcome *o)
{
    if (inv_report(v->cli, v, o, afd_runs_now_ns() - v->t0, &v->fail_run, &v->pass_run, &v->log) < 0) {
        afd_runs_error_line("investigation failed: %s%s", afd_strerror(AFD_ENOMEM), "");
        v->exit = AFD_EXIT_INTERNAL;
    }
    if (v->interrupted || afd_interrupted) {
        fflush(stdout);
        fprintf(stderr, "affidavit: interrupted after %" PRIu64 " runs%s\n", v->total_runs,
                o->natural.runs ? "; the runs so far are reported above" : "");
        v->exit = AFD_EXIT_INTERRUPTED;
    }
}

/* --trace-out: the spans so far, whatever the investigation concluded. A trace that cannot be
 * written loses nothing of what was printed: a warning says so. */
static void inv_write_trace(inv *v)
{
    if (v->spans && afd_spans_commit(v->spans) < 0)
        fprintf(stderr, "affidavit: warning: cannot write the trace to %s: %s\n", v->cli->trace_out,
                strerror(errno));
}

/* --fix's two stages run for an explained failure only, verify when there is a candidate. */
static int inv_wanted(const inv *v, const outcome *o, int k)
{
    if (k == INV_REPAIR)
        return v->cli->fix && v->have_fv;
    if (k == INV_VERIFY)
        return v->stages[INV_REPAIR].ran && o->n_cand > 0;
    return 1;
}

int afd_cmd_investigate(const afd_cli *cli)
{
    static int (*const stage[INV_REPORT])(inv *, outcome *) = {
        inv_sample, inv_search, inv_reproduce, inv_minimize, inv_explain, inv_repair, inv_verify,
    };
    inv v;
    outcome o;
    int rc = inv_init(&v, &o, cli);
    for (int k = 0; rc == 0 && k < INV_REPORT; k++) {
        if (!inv_wanted(&v, &o, k))
            continue;
        inv_stage_begin(&v, k);
        rc = stage[k](&v, &o);
        inv_stage_end(&v, k);
    }
    if (rc == 0) {
        o.verdict = "reproduced";
        v.exit = AFD_EXIT_FAILURE;
        rc = INV_STOP;
    }
    afd_progress_done(&v.prog);
    if (rc < 0)
        rc = inv_failed(&v, &o, rc);
    if (rc == INV_STOP) {
        inv_stage_begin(&v, INV_REPORT);
        report_stage(&v, &o);
        inv_stage_end(&v, INV_REPORT);
    }
    inv_write_trace(&v);
    rc = v.exit;
    inv_finish(&v, &o);
    return rc;
}
