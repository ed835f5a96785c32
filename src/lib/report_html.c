/* report_html.c -- the incident as one self-contained HTML page: its head, the verdict, the
 * timeline of both runs, the evidence and the collision window, and the page's assembly
 * (afd_report_html; the fix's sections are report_fix.c's).
 *
 * The page draws at most MAX_RECTS step bars per run (the steps of the cause always) and says
 * how many it left out, so a run of hundreds of thousands of steps stays under about a megabyte. */
#include "report_int.h"
#include "afd.h"
#include "incident.h"
#include "shell.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int lane_find(const lanes *l, const char *label)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->label[i], label) == 0)
            return (int)i;
    return LANE_NONE;
}

static void lanes_assign(lanes *l, run_view *v, int run)
{
    if (!v->t)
        return;
    for (uint32_t i = 0; i < v->t->n_events; i++) {
        const afd_event *ev = &v->t->events[i];
        if (ev->kind != AFD_EV_TASK && ev->kind != AFD_EV_STEP)
            continue;
        task_ref *r = report_view_task(v, ev->task);
        if (!r || r->lane != LANE_UNSET)
            continue;
        r->lane = lane_find(l, report_task_name(r));
        if (r->lane == LANE_NONE && l->n < MAX_LANES) {
            l->label[l->n] = report_task_name(r);
            r->lane = (int)l->n++;
        }
        if (r->lane == LANE_NONE)
            l->dropped_tasks++;
        else
            l->present[run][r->lane] = 1;
    }
}

static void ops_collect(page *pg)
{
    const afd_cause *c = &pg->inc->cause;
    for (size_t i = 0; i < c->n_ops && pg->n_ops < MAX_OPS; i++) {
        const afd_cause_op *o = &c->ops[i];
        if (!o->task || o->step == AFD_INCIDENT_UNSET32)
            continue; /* e.g. a deadlock's waits: no step to outline */
        op_ref *r = &pg->ops[pg->n_ops++];
        memset(r, 0, sizeof *r);
        r->run = o->run && strcmp(o->run, "passing") == 0 ? RUN_PASSING : RUN_FAILING;
        r->task = o->task;
        r->step = o->step;
        r->lane = lane_find(&pg->lanes, o->task);
    }
}

/* Finds the step of each operation in one run (its first occurrence). */
static void ops_locate(page *pg, int run)
{
    const run_view *v = &pg->run[run];
    if (!v->t || !pg->n_ops)
        return;
    for (uint32_t i = 0; i < v->t->n_events; i++) {
        const afd_event *ev = &v->t->events[i];
        if (ev->kind != AFD_EV_STEP)
            continue;
        const task_ref *r = report_view_task(v, ev->task);
        if (!r || r->lane < 0)
            continue;
        for (size_t k = 0; k < pg->n_ops; k++) {
            op_ref *op = &pg->ops[k];
            if (op->lane == r->lane && op->step == (int64_t)ev->a && !op->found[run]) {
                op->found[run] = 1;
                op->vtime[run] = ev->vtime;
                op->cost[run] = ev->cost;
            }
        }
    }
}

/* Whether the step (lane, ordinal) of a run is one of the cause's operations in that run. */
static int is_op(const page *pg, int run, int lane, uint32_t ordinal)
{
    for (size_t k = 0; k < pg->n_ops; k++)
        if (pg->ops[k].run == run && pg->ops[k].lane == lane && pg->ops[k].step == (int64_t)ordinal)
            return 1;
    return 0;
}

/* ---- the page ---- */

static const char CSS[] =
    ":root{color-scheme:light dark;--bg:#fff;--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;"
    "--panel:#f6f8fa;--accent:#0969da;--pass:#1a7f37;--fail:#cf222e;--pair:#8250df;"
    "--bar-pass:#57a773;--bar-fail:#d2645c;--add:#dafbe1;--add-fg:#116329;--del:#ffebe9;"
    "--del-fg:#82071e;--window:#fff0b3}\n"
    "@media (prefers-color-scheme: dark){:root{--bg:#0d1117;--fg:#e6edf3;--muted:#9198a1;"
    "--line:#3d444d;--panel:#151b23;--accent:#4493f8;--pass:#3fb950;--fail:#f85149;--pair:#d2a8ff;"
    "--bar-pass:#2e7d4a;--bar-fail:#a8463f;--add:#12261e;--add-fg:#aff5b4;--del:#2d1519;"
    "--del-fg:#ffdcd7;--window:#4a3b00}}\n"
    "*{box-sizing:border-box}\n"
    "body{margin:0;background:var(--bg);color:var(--fg);"
    "font:16px/1.5 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;-webkit-text-size-adjust:100%}\n"
    "main{max-width:1100px;margin:0 auto;padding:16px}\n"
    "h1{font-size:1.25rem;margin:.2em 0;overflow-wrap:anywhere}\n"
    "h1 code{font-size:1.05rem}\n"
    "h2{font-size:1.15rem;margin:0 0 .5em;padding-bottom:.2em;border-bottom:1px solid var(--line)}\n"
    "h3{font-size:1rem;margin:1em 0 .3em}\n"
    "section{margin:0 0 32px}\n"
    "p,li,dd{overflow-wrap:anywhere}\n"
    "code,pre{font:13px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}\n"
    "pre{background:var(--panel);border:1px solid var(--line);border-radius:6px;padding:10px;"
    "overflow-x:auto;margin:.5em 0}\n"
    ".kicker,.note,.lead{color:var(--muted)}\n"
    ".na{color:var(--muted);font-style:italic}\n"
    ".verdict-line{font-size:1.15rem;margin:.4em 0}\n"
    ".verdict-word{font-weight:700;letter-spacing:.03em}\n"
    ".reproduced .verdict-word,.deterministic .verdict-word{color:var(--fail)}\n"
    ".no-failure .verdict-word{color:var(--pass)}\n"
    ".timing-sensitive .verdict-word{color:var(--warn,#a15c00)}\n"
    ".facts{padding-left:1.2em}\n"
    ".table-wrap,.svg-wrap{overflow-x:auto;-webkit-overflow-scrolling:touch}\n"
    "table{border-collapse:collapse;width:100%;min-width:520px}\n"
    "th,td{text-align:left;vertical-align:top;padding:6px 8px;border-bottom:1px solid var(--line)}\n"
    ".badge{display:inline-block;padding:0 8px;border-radius:10px;font-size:12px;"
    "border:1px solid var(--line);white-space:nowrap}\n"
    ".badge.confirmed{background:var(--pass);border-color:var(--pass);color:#fff}\n"
    ".badge.observed{border-color:var(--accent);color:var(--accent)}\n"
    ".badge.weaker{color:var(--muted)}\n"
    "svg{display:block;width:100%;height:auto}\n"
    "svg.timeline{min-width:720px}\n"
    "svg.window-plot{min-width:520px;max-width:820px}\n"
    "svg text{font:14px system-ui,sans-serif;fill:var(--fg)}\n"
    "svg .run-title{font-weight:600;font-size:15px}\n"
    "svg .run-meta,svg .lane-label.absent,svg .tick-label{fill:var(--muted)}\n"
    ".lane-bg{fill:var(--panel)}\n"
    ".grid{stroke:var(--line);stroke-width:1}\n"
    ".axis{stroke:var(--muted);stroke-width:1}\n"
    ".step{fill:var(--bar-pass)}\n"
    ".run.failing .step{fill:var(--bar-fail)}\n"
    ".step.peer{stroke:var(--pair);stroke-width:1.5;stroke-opacity:.7}\n"
    ".step.pair{stroke:var(--pair);stroke-width:3}\n"
    ".never-ran{fill:none;stroke:var(--fail);stroke-width:2;stroke-dasharray:5 3}\n"
    "svg text.never-ran-label{fill:var(--fail);font-weight:600}\n"
    ".window{fill:var(--window)}\n"
    ".probe.failed{fill:var(--fail)}\n"
    ".probe.passed{fill:var(--bg);stroke:var(--pass);stroke-width:2}\n"
    ".legend{font-size:14px;color:var(--muted)}\n"
    ".key{display:inline-block;width:18px;height:10px;vertical-align:middle;margin:0 4px 0 10px}\n"
    ".key.k-step{background:var(--bar-fail)}\n"
    ".key.k-pair{border:3px solid var(--pair)}\n"
    ".key.k-never{border:2px dashed var(--fail)}\n"
    ".gate-group ul,ul.tiers{list-style:none;padding-left:0;margin:.3em 0}\n"
    ".gate-group li,ul.tiers li{padding:3px 0}\n"
    ".mark{display:inline-block;width:1.3em;font-weight:700}\n"
    "li.pass .mark{color:var(--pass)}\n"
    "li.fail .mark{color:var(--fail)}\n"
    ".not-attempted{color:var(--muted);font-style:italic}\n"
    "pre.diff .add{background:var(--add);color:var(--add-fg)}\n"
    "pre.diff .del{background:var(--del);color:var(--del-fg)}\n"
    "pre.diff .hunk{color:var(--accent)}\n"
    "pre.diff .ctx{color:var(--fg)}\n"
    "pre.failure,pre.replay{white-space:pre-wrap;overflow-wrap:anywhere}\n"
    "dl.env{display:grid;grid-template-columns:max-content 1fr;gap:4px 16px;margin:0}\n"
    "dl.env dt{color:var(--muted)}\n"
    "dl.env dd{margin:0}\n"
    "footer{color:var(--muted);font-size:13px;border-top:1px solid var(--line);padding-top:8px}\n"
    "@media (max-width:600px){main{padding:10px}dl.env{grid-template-columns:1fr}"
    "dl.env dd{margin-bottom:6px}}\n";

static void head(page *pg, int64_t id)
{
    afd_buf *out = pg->out;
    report_put(out, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                    "<meta name=\"viewport\" content=\"width=device-width\">\n<title>affidavit");
    if (id > 0)
        afd_buf_printf(out, " incident %" PRId64, id);
    report_put(out, ": ");
    report_esc_or_na(out, pg->inc->nodeid);
    report_put(out, "</title>\n<style>\n");
    report_put(out, CSS);
    report_put(out, "</style>\n</head>\n<body>\n<main>\n");
}

/* ---- 1. verdict ---- */

/* A cause kind for people: "lost_update" -> "lost update" (cause.h's words); a kind this version
 * does not know is shown with its underscores as spaces. */
static void put_kind(afd_buf *out, const char *kind)
{
    afd_cause_kind k = afd_cause_kind_parse(kind);
    if (k != AFD_CAUSE_NONE) {
        report_put(out, afd_cause_kind_words(k));
        return;
    }
    for (const char *p = kind; *p;) {
        size_t n = strcspn(p, "_");
        report_esc_n(out, p, n);
        p += n;
        if (*p == '_') {
            report_put(out, " ");
            p++;
        }
    }
}

static void verdict_line(page *pg)
{
    afd_buf *out = pg->out;
    const afd_incident *inc = pg->inc;
    afd_verdict vi = inc->verdict;
    const char *v = vi ? afd_verdict_name(vi) : inc->verdict_text;
    const char *kind = report_cause_kind(inc), *res = inc->cause.resource;
    report_put(out, "<p class=\"verdict-line\"><span class=\"verdict-word\">");
    if (vi)
        report_put(out, afd_verdict_word(vi));
    else if (v)
        report_esc(out, v);
    else
        report_put(out, "NO VERDICT");
    report_put(out, "</span>");
    if (kind) {
        report_put(out, ": ");
        put_kind(out, kind);
        if (res) {
            report_put(out, " on ");
            report_esc(out, res);
        }
    } else if (vi == AFD_VERDICT_DETERMINISTIC) {
        report_put(out, ": the test fails on every run; it is not flaky");
    } else if (vi == AFD_VERDICT_TIMING_SENSITIVE) {
        /* The engine's sentence names the threshold and where it was armed; no race is claimed. */
        const char *summary = inc->has_timing ? inc->timing.summary : NULL;
        report_put(out, ": ");
        if (summary)
            report_esc(out, summary);
        else
            report_put(
                out,
                "fails only when one step outlasts a deadline the test armed: a slow machine, not a race");
    } else if (vi == AFD_VERDICT_NO_FAILURE) {
        report_put(out, ": the test did not fail");
    } else if (!vi && !v) {
        report_put(out, ": the document records none");
    }
    report_put(out, "</p>\n");
}

static void natural_fact(afd_buf *out, const afd_incident *inc)
{
    report_put(out, "<li>Natural runs: ");
    if (inc->natural_runs == AFD_INCIDENT_UNSET || inc->natural_failed == AFD_INCIDENT_UNSET) {
        report_na(out);
        report_put(out, "</li>\n");
        return;
    }
    double runs = (double)inc->natural_runs, failed = (double)inc->natural_failed, rate = inc->natural_rate;
    afd_buf_printf(out, "%.0f/%.0f failed", failed, runs);
    int have_rate = !isnan(rate);
    if (!have_rate && runs > 0) {
        rate = failed / runs;
        have_rate = 1;
    }
    int have_ci = !isnan(inc->ci95_lo) && !isnan(inc->ci95_hi);
    if (have_rate || have_ci)
        report_put(out, " (");
    if (have_rate) {
        report_put_pct(out, rate);
        report_put(out, "%");
    }
    if (have_ci) {
        report_put(out, have_rate ? ", 95% CI " : "95% CI ");
        report_put_pct(out, inc->ci95_lo);
        report_put(out, "&ndash;");
        report_put_pct(out, inc->ci95_hi);
        report_put(out, "%");
    }
    if (have_rate || have_ci)
        report_put(out, ")");
    report_put(out, "</li>\n");
}

/* "failed 10/10" or "passed 10/10": k of runs. */
static void replay_fact(afd_buf *out, const char *what, uint64_t runs, uint64_t k, const char *key)
{
    afd_buf_printf(out, "<li>%s: ", what);
    if (runs != AFD_INCIDENT_UNSET && k != AFD_INCIDENT_UNSET)
        afd_buf_printf(out, "%s %.0f/%.0f", key, (double)k, (double)runs);
    else
        report_na(out);
    report_put(out, "</li>\n");
}

static void sec_verdict(page *pg, int64_t id)
{
    afd_buf *out = pg->out;
    const afd_incident *inc = pg->inc;
    afd_verdict vi = inc->verdict;
    afd_buf_printf(out, "<section id=\"verdict\" class=\"%s\">\n", vi ? afd_verdict_css(vi) : "unknown");
    report_put(out, "<p class=\"kicker\">affidavit incident");
    if (id > 0)
        afd_buf_printf(out, " #%" PRId64, id);
    if (pg->in->created > 0) {
        time_t tt = (time_t)pg->in->created;
        struct tm tm;
        char date[64];
        if (gmtime_r(&tt, &tm) && strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", &tm))
            afd_buf_printf(out, " &middot; %s", date);
    }
    report_put(out, "</p>\n<h1><code>");
    report_esc_or_na(out, inc->nodeid);
    report_put(out, "</code></h1>\n");
    verdict_line(pg);
    report_put(out, "<ul class=\"facts\">\n");
    natural_fact(out, inc);
    replay_fact(out, "Replay of the failing schedule", inc->replay_runs, inc->replay_failed, "failed");
    replay_fact(out, "Replay of the passing schedule", inc->passing_runs, inc->passing_passed, "passed");
    if (!isnan(inc->window_us))
        afd_buf_printf(out, "<li>Collision window: %.1f &micro;s</li>\n", inc->window_us);
    report_put(out, "</ul>\n");
    if (inc->cause.summary) {
        report_put(out, "<p class=\"summary\">");
        report_esc(out, inc->cause.summary);
        report_put(out, "</p>\n");
    }
    if (inc->failure && inc->failure_len) {
        report_put(out, "<pre class=\"failure\">");
        report_esc_n(out, inc->failure, inc->failure_len); /* NUL bytes included */
        report_put(out, "</pre>\n");
    }
    report_put(out, "</section>\n");
}

/* ---- 2. timeline ---- */

enum {
    TL_W = 1000,
    TL_LABEL = 190,
    TL_PAD_R = 24,
    TL_LANE = 22,
    TL_BAR = 14,
    TL_HEAD = 30,
    TL_GAP = 12,
    TL_AXIS = 34
};

typedef struct timeline {
    uint64_t t_start; /* ns at the left edge: the earliest step of either run */
    uint64_t t_end;   /* ns at the right edge */
    double plot_w;
    uint64_t not_drawn[2];
} timeline;

static double tl_x(const timeline *tl, uint64_t ns)
{
    double rel = ns > tl->t_start ? (double)(ns - tl->t_start) : 0;
    return TL_LABEL + tl->plot_w * (rel / (double)(tl->t_end - tl->t_start));
}

/* The bar of one step; pair and peer mark the cause's operations in this run and in the other. */
static void tl_step(afd_buf *out, const timeline *tl, const afd_trace *t, const afd_event *ev,
                    const task_ref *r, double y, int pair, int peer)
{
    double x = tl_x(tl, ev->vtime), w = tl_x(tl, report_step_end(ev)) - x;
    if (w < 2)
        w = 2; /* a step of no virtual time is still a step */
    report_svg_rect(out, pair ? "step pair" : peer ? "step peer" : "step", x, y, w, TL_BAR);
    report_put(out, "><title>");
    report_esc(out, report_task_name(r));
    afd_buf_printf(out, " step #%" PRIu32 ": ", ev->a);
    report_put_ms(out, ev->vtime > tl->t_start ? ev->vtime - tl->t_start : 0);
    report_put(out, " to ");
    report_put_ms(out, report_step_end(ev) > tl->t_start ? report_step_end(ev) - tl->t_start : 0);
    if (ev->b != AFD_NOSTR && ev->b < t->n_strings) {
        report_put(out, ", suspended at ");
        report_esc(out, afd_trace_string(t, ev->b));
    }
    if (pair)
        report_put(out, " (an operation of the cause)");
    report_put(out, "</title></rect>\n");
}

static void tl_lane_labels(page *pg, int run, double y0)
{
    afd_buf *out = pg->out;
    for (size_t k = 0; k < pg->lanes.n; k++) {
        double ly = y0 + TL_HEAD + (double)k * TL_LANE;
        if (k % 2 == 0) {
            report_svg_rect(out, "lane-bg", TL_LABEL, ly + 1, TL_W - TL_LABEL - TL_PAD_R, TL_LANE - 2);
            report_put(out, "/>\n");
        }
        /* anchored at the left edge: a long label is cut, never pushed out of the picture */
        afd_buf_printf(out, "<text class=\"lane-label%s\" x=\"0\" y=\"%.1f\">",
                       pg->lanes.present[run][k] ? "" : " absent", ly + 15);
        report_esc_cut(out, pg->lanes.label[k], LABEL_CHARS);
        report_put(out, "<title>");
        report_esc(out, pg->lanes.label[k]);
        report_put(out, pg->lanes.present[run][k] ? "" : " (not in this run)");
        report_put(out, "</title></text>\n");
    }
}

static void tl_never_ran(page *pg, const timeline *tl, double y0)
{
    afd_buf *out = pg->out;
    for (size_t k = 0; k < pg->n_ops; k++) {
        const op_ref *op = &pg->ops[k];
        if (op->run != RUN_PASSING || op->lane < 0 || op->found[RUN_FAILING] || !op->found[RUN_PASSING])
            continue;
        afd_event ran = {.vtime = op->vtime[RUN_PASSING], .cost = op->cost[RUN_PASSING]};
        double x = tl_x(tl, ran.vtime), w = tl_x(tl, report_step_end(&ran)) - x;
        double y = y0 + TL_HEAD + (double)op->lane * TL_LANE + (TL_LANE - TL_BAR) / 2.0;
        if (w < 6)
            w = 6;
        report_svg_rect(out, "never-ran", x, y, w, TL_BAR);
        report_put(out, "><title>");
        report_esc(out, op->task);
        afd_buf_printf(out, " step #%" PRId64 " ran at ", op->step);
        report_put_ms(out, op->vtime[RUN_PASSING] - tl->t_start);
        report_put(out, " in the passing run and never ran in the failing run</title></rect>\n");
        int right = x + w + 80 > TL_W;
        afd_buf_printf(out, "<text class=\"never-ran-label\" x=\"%.1f\" y=\"%.1f\"%s>never ran</text>\n",
                       right ? x - 4 : x + w + 4, y + 11, right ? " text-anchor=\"end\"" : "");
    }
}

static void tl_run(page *pg, timeline *tl, int run, double y0)
{
    afd_buf *out = pg->out;
    const run_view *v = &pg->run[run];
    const afd_trace *t = v->t;
    afd_buf_printf(out, "<g class=\"run %s\">\n", run == RUN_PASSING ? "passing" : "failing");
    afd_buf_printf(out, "<text class=\"run-title\" x=\"0\" y=\"%.1f\">%s run</text>\n", y0 + 20,
                   run == RUN_PASSING ? "Passing" : "Failing");
    afd_buf_printf(out, "<text class=\"run-meta\" x=\"%d\" y=\"%.1f\">%" PRIu64 " steps in ", TL_LABEL,
                   y0 + 20, v->steps);
    report_put_ms(out, v->end - v->start);
    report_put(out, ", outcome: ");
    report_esc(out, afd_outcome_name(t->outcome));
    report_put(out, "</text>\n");
    tl_lane_labels(pg, run, y0);
    uint64_t drawn = 0;
    for (uint32_t i = 0; i < t->n_events; i++) {
        const afd_event *ev = &t->events[i];
        if (ev->kind != AFD_EV_STEP)
            continue;
        const task_ref *r = report_view_task(v, ev->task);
        if (!r || r->lane < 0) {
            tl->not_drawn[run]++;
            continue;
        }
        int pair = is_op(pg, run, r->lane, ev->a), peer = !pair && is_op(pg, !run, r->lane, ev->a);
        if (!pair && drawn >= MAX_RECTS) {
            tl->not_drawn[run]++;
            continue;
        }
        drawn++;
        double y = y0 + TL_HEAD + (double)r->lane * TL_LANE + (TL_LANE - TL_BAR) / 2.0;
        tl_step(out, tl, t, ev, r, y, pair, peer);
    }
    if (run == RUN_FAILING)
        tl_never_ran(pg, tl, y0);
    report_put(out, "</g>\n");
}

static void tl_axis(page *pg, const timeline *tl, double y_top, double y_axis)
{
    afd_buf *out = pg->out;
    double end_ms = (double)(tl->t_end - tl->t_start) / 1e6, step = report_nice_step(end_ms, 5);
    int dec = report_step_decimals(step);
    report_put(out, "<g class=\"time-axis\">\n");
    report_svg_line(out, "axis", TL_LABEL, y_axis, TL_W - TL_PAD_R, y_axis);
    for (int i = 0; i <= 50; i++) {
        double v = i * step;
        if (v > end_ms * (1 + 1e-9))
            break;
        double x = TL_LABEL + tl->plot_w * (v / end_ms);
        report_svg_line(out, "grid", x, y_top, x, y_axis + 5);
        afd_buf_printf(out,
                       "<text class=\"tick-label\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\">"
                       "%.*f ms</text>\n",
                       x, y_axis + 20, x > TL_W - 40 ? "end" : "middle", dec, v);
    }
    report_put(out, "</g>\n");
}

static void tl_notes(page *pg, const timeline *tl)
{
    afd_buf *out = pg->out;
    static const char *const names[2] = {"passing", "failing"};
    for (int run = 0; run < 2; run++)
        if (tl->not_drawn[run])
            afd_buf_printf(out,
                           "<p class=\"note\">%" PRIu64 " steps not drawn in the %s run (the page "
                           "draws at most %u per run, and %u task lanes).</p>\n",
                           tl->not_drawn[run], names[run], MAX_RECTS, MAX_LANES);
    if (pg->lanes.dropped_tasks)
        afd_buf_printf(out, "<p class=\"note\">%" PRIu64 " tasks have no lane of their own.</p>\n",
                       pg->lanes.dropped_tasks);
    for (size_t k = 0; k < pg->n_ops; k++) {
        const op_ref *op = &pg->ops[k];
        if (op->found[op->run] || !pg->run[op->run].t)
            continue;
        report_put(out, "<p class=\"note\">The operation of ");
        report_esc(out, op->task);
        afd_buf_printf(out, " at step #%" PRId64 " has no step in the %s run's trace.</p>\n", op->step,
                       names[op->run]);
    }
}

static void sec_timeline(page *pg)
{
    afd_buf *out = pg->out;
    report_put(out, "<section id=\"timeline\">\n<h2>Where the two runs diverge</h2>\n");
    if (!pg->run[RUN_PASSING].t && !pg->run[RUN_FAILING].t) {
        report_put(out, "<p class=\"na\">No traces of the runs are available, so there is no timeline.</p>\n"
                        "</section>\n");
        return;
    }
    if (!pg->lanes.n) {
        report_put(out, "<p class=\"na\">The traces hold no task steps to draw.</p>\n</section>\n");
        return;
    }
    report_put(out,
               "<p class=\"lead\">The same test twice on a shared virtual-time axis: the nearest passing run "
               "above, the minimal failing run below, one lane per task. The outlined steps are the "
               "operations of the cause (the inverted pair); hover a bar for its step and suspension "
               "site.</p>\n");
    for (int run = 0; run < 2; run++)
        if (!pg->run[run].t)
            afd_buf_printf(out, "<p class=\"note\">The %s run's trace is not available.</p>\n",
                           run == RUN_PASSING ? "passing" : "failing");
    timeline tl = {0};
    int any = 0;
    for (int run = 0; run < 2; run++) {
        const run_view *rv = &pg->run[run];
        if (!rv->t || !rv->steps)
            continue;
        if (!any || rv->start < tl.t_start)
            tl.t_start = rv->start;
        if (rv->end > tl.t_end)
            tl.t_end = rv->end;
        any = 1;
    }
    if (tl.t_end < tl.t_start + 1000)
        tl.t_end = tl.t_start + 1000; /* a run of no virtual time still gets a 1 us axis */
    tl.plot_w = TL_W - TL_LABEL - TL_PAD_R;
    int groups = (pg->run[0].t != NULL) + (pg->run[1].t != NULL);
    double group_h = TL_HEAD + (double)pg->lanes.n * TL_LANE + TL_GAP, height = groups * group_h + TL_AXIS;
    afd_buf_printf(out,
                   "<div class=\"svg-wrap\">\n<svg class=\"timeline\" viewBox=\"0 0 %d %.0f\" "
                   "width=\"100%%\" role=\"img\" aria-label=\"the passing and the failing run\">\n",
                   TL_W, height);
    double y = 0;
    tl_axis(pg, &tl, TL_HEAD - 4, groups * group_h);
    for (int run = 0; run < 2; run++) {
        if (!pg->run[run].t)
            continue;
        tl_run(pg, &tl, run, y);
        y += group_h;
    }
    report_put(out, "</svg>\n</div>\n");
    report_put(out, "<p class=\"legend\"><span class=\"key k-step\"></span>a step of a task"
                    "<span class=\"key k-pair\"></span>an operation of the cause"
                    "<span class=\"key k-never\"></span>never ran in the failing run</p>\n");
    tl_notes(pg, &tl);
    report_put(out, "</section>\n");
}

/* ---- 3. evidence ---- */

static const char *strength_class(const char *s)
{
    static const char *const known[] = {"confirmed", "observed", "weaker"};
    for (size_t i = 0; s && i < sizeof known / sizeof known[0]; i++)
        if (strcmp(s, known[i]) == 0)
            return known[i];
    return "other";
}

static void sec_evidence(page *pg)
{
    afd_buf *out = pg->out;
    const afd_evidence *ev = &pg->inc->evidence;
    report_put(out, "<section id=\"evidence\">\n<h2>Evidence</h2>\n");
    if (!ev->n) {
        report_put(out, "<p class=\"na\">No evidence was recorded.</p>\n</section>\n");
        return;
    }
    report_put(out,
               "<p class=\"lead\">Suspicion comes from comparing runs; the decision comes from forcing the "
               "ordering and seeing what happens.</p>\n");
    report_put(out, "<div class=\"table-wrap\"><table class=\"evidence\">\n"
                    "<thead><tr><th>Claim</th><th>Measured</th><th>Strength</th></tr></thead>\n<tbody>\n");
    for (size_t i = 0; i < ev->n; i++) {
        const afd_evidence_row *e = &ev->rows[i];
        const char *strength = e->strength;
        report_put(out, "<tr><td>");
        report_esc_or_na(out, e->claim);
        report_put(out, "</td><td>");
        report_esc_or_na(out, e->measured);
        report_put(out, "</td><td>");
        if (strength) {
            afd_buf_printf(out, "<span class=\"badge %s\">", strength_class(strength));
            report_esc(out, strength);
            report_put(out, "</span>");
        } else {
            report_dash(out);
        }
        report_put(out, "</td></tr>\n");
    }
    report_put(out, "</tbody>\n</table></div>\n</section>\n");
}

/* ---- 4. collision window ---- */

typedef struct probe {
    double delay;
    int failed;
} probe;

enum { WP_W = 760, WP_H = 200, WP_L = 86, WP_R = 24, WP_T = 16, WP_PLOT_H = 140 };

typedef struct wplot {
    double lo, hi; /* x range, us */
    int have_win;
    double w0, w1;   /* the window, us */
    const char *cls; /* Borrowed: the svg's class. */
} wplot;

static double wp_x(const wplot *p, double us)
{
    double x = WP_L + (WP_W - WP_L - WP_R) * ((us - p->lo) / (p->hi - p->lo));
    return x < WP_L ? WP_L : x > WP_W - WP_R ? WP_W - WP_R : x;
}

static void wp_axes(afd_buf *out, const wplot *p)
{
    double y_fail = WP_T + 30, y_pass = WP_T + 110, y_axis = WP_T + WP_PLOT_H;
    double step = report_nice_step(p->hi - p->lo, 6);
    int dec = report_step_decimals(step);
    report_svg_line(out, "grid", WP_L, y_fail, WP_W - WP_R, y_fail);
    report_svg_line(out, "grid", WP_L, y_pass, WP_W - WP_R, y_pass);
    afd_buf_printf(out, "<text x=\"%d\" y=\"%.0f\" text-anchor=\"end\">1 failed</text>\n", WP_L - 8,
                   y_fail + 4);
    afd_buf_printf(out, "<text x=\"%d\" y=\"%.0f\" text-anchor=\"end\">0 passed</text>\n", WP_L - 8,
                   y_pass + 4);
    report_svg_line(out, "axis", WP_L, y_axis, WP_W - WP_R, y_axis);
    report_svg_line(out, "axis", WP_L, WP_T, WP_L, y_axis);
    double first = ceil(p->lo / step - 1e-9) * step;
    for (int i = 0; i <= 40; i++) {
        double v = first + i * step;
        if (v > p->hi * (1 + 1e-12) + 1e-12)
            break;
        double x = wp_x(p, v);
        report_svg_line(out, "axis", x, y_axis, x, y_axis + 5);
        afd_buf_printf(out,
                       "<text class=\"tick-label\" x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">"
                       "%.*f</text>\n",
                       x, y_axis + 19, dec, v);
    }
    afd_buf_printf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">injected delay (&micro;s)</text>\n",
                   (WP_L + WP_W - WP_R) / 2, WP_H - 6);
    afd_buf_printf(out,
                   "<text transform=\"rotate(-90)\" x=\"%.0f\" y=\"14\" text-anchor=\"middle\">"
                   "failure</text>\n",
                   -(WP_T + WP_PLOT_H / 2.0));
}

static void window_plot(afd_buf *out, const wplot *p, const probe *pr, size_t n)
{
    afd_buf_printf(out,
                   "<div class=\"svg-wrap\">\n<svg class=\"%s\" viewBox=\"0 0 %d %d\" width=\"100%%\" "
                   "role=\"img\" aria-label=\"probes of the collision window\">\n",
                   p->cls, WP_W, WP_H);
    if (p->have_win) {
        double x0 = wp_x(p, p->w0 < p->w1 ? p->w0 : p->w1), x1 = wp_x(p, p->w0 < p->w1 ? p->w1 : p->w0);
        if (x1 - x0 < 4)
            x0 = (x0 + x1) / 2 - 2, x1 = x0 + 4;
        report_svg_rect(out, "window", x0, WP_T, x1 - x0, WP_PLOT_H);
        afd_buf_printf(out, "><title>the window: %.6g to %.6g &micro;s</title></rect>\n", p->w0, p->w1);
    }
    wp_axes(out, p);
    for (size_t i = 0; i < n; i++) {
        if (pr[i].delay < p->lo || pr[i].delay > p->hi)
            continue;
        const char *what = pr[i].failed ? "failed" : "passed";
        afd_buf_printf(out,
                       "<circle class=\"probe %s\" cx=\"%.1f\" cy=\"%d\" r=\"6\"><title>probe %zu: "
                       "delay %.6g &micro;s, %s</title></circle>\n",
                       what, wp_x(p, pr[i].delay), pr[i].failed ? WP_T + 30 : WP_T + 110, i + 1, pr[i].delay,
                       what);
    }
    report_put(out, "</svg>\n</div>\n");
}

static size_t probes_read(const afd_incident_window *w, probe *pr)
{
    size_t n = 0;
    for (size_t i = 0; i < w->n_probes && n < MAX_PROBES; i++) {
        double d = w->probes[i].delay_us;
        if (!isfinite(d))
            continue;
        pr[n].delay = d;
        pr[n].failed = w->probes[i].failed == 1;
        n++;
    }
    return n;
}

static void window_text(afd_buf *out, const afd_incident_window *w, int have_win, double w0, double w1)
{
    const char *task = w->task;
    report_put(out, "<p>Delaying ");
    if (task) {
        report_put(out, "<code>");
        report_esc(out, task);
        report_put(out, "</code>");
    } else {
        report_put(out, "the task");
    }
    if (w->step != AFD_INCIDENT_UNSET32)
        afd_buf_printf(out, " step %" PRIu32, w->step);
    if (have_win)
        afd_buf_printf(out,
                       ": it passes with %.6g &micro;s and fails with %.6g &micro;s "
                       "(a window of %.3g &micro;s)",
                       w0, w1, fabs(w1 - w0));
    else
        report_put(out, ": the window's edges are not available");
    if (w->runs != AFD_INCIDENT_UNSET)
        afd_buf_printf(out, ", measured in %.0f runs", (double)w->runs);
    report_put(out, ". Each probe is one deterministic replay with that delay injected.</p>\n");
}

static void sec_window(page *pg)
{
    afd_buf *out = pg->out;
    const afd_incident_window *w = &pg->inc->window;
    report_put(out, "<section id=\"window\">\n<h2>Collision window</h2>\n");
    if (!pg->inc->has_window) {
        report_put(out,
                   "<p class=\"na\">No collision window was measured for this incident.</p>\n</section>\n");
        return;
    }
    wplot p = {.cls = "window-plot"};
    p.have_win = w->passes_at_ns != AFD_INCIDENT_UNSET && w->fails_at_ns != AFD_INCIDENT_UNSET;
    p.w0 = p.have_win ? (double)w->passes_at_ns / 1e3 : 0;
    p.w1 = p.have_win ? (double)w->fails_at_ns / 1e3 : 0;
    window_text(out, w, p.have_win, p.w0, p.w1);
    probe *pr = malloc(MAX_PROBES * sizeof *pr);
    if (!pr) {
        out->err = AFD_ENOMEM;
        return;
    }
    size_t n = probes_read(w, pr);
    if (!n && !p.have_win) {
        report_put(out, "<p class=\"na\">No probes were recorded.</p>\n</section>\n");
        free(pr);
        return;
    }
    p.lo = 0;
    p.hi = 0;
    for (size_t i = 0; i < n; i++) {
        p.lo = pr[i].delay < p.lo ? pr[i].delay : p.lo;
        p.hi = pr[i].delay > p.hi ? pr[i].delay : p.hi;
    }
    if (p.have_win) {
        p.lo = fmin(p.lo, fmin(p.w0, p.w1));
        p.hi = fmax(p.hi, fmax(p.w0, p.w1));
    }
    p.hi = p.hi + (p.hi - p.lo) * 0.04;
    if (!(p.hi > p.lo))
        p.hi = p.lo + 1;
    window_plot(out, &p, pr, n);
    /* A bisection ends with a window far narrower than the range it searched: show its end up close. */
    double width = fabs(p.w1 - p.w0);
    if (p.have_win && width < (p.hi - p.lo) / 40) {
        double mid = (p.w0 + p.w1) / 2, half = fmax(width * 20, fmax((p.hi - p.lo) * 1e-4, 1e-3));
        wplot z = p;
        z.lo = mid - half;
        z.hi = mid + half;
        z.cls = "window-plot zoom";
        report_put(out, "<p class=\"note\">Up close around the window:</p>\n");
        window_plot(out, &z, pr, n);
    }
    free(pr);
    report_put(out, "</section>\n");
}

static int page_prepare(page *pg)
{
    int rc = report_view_build(&pg->run[RUN_PASSING], pg->in->passing);
    if (rc == 0)
        rc = report_view_build(&pg->run[RUN_FAILING], pg->in->failing);
    if (rc)
        return rc;
    lanes_assign(&pg->lanes, &pg->run[RUN_PASSING], RUN_PASSING);
    lanes_assign(&pg->lanes, &pg->run[RUN_FAILING], RUN_FAILING);
    ops_collect(pg);
    ops_locate(pg, RUN_PASSING);
    ops_locate(pg, RUN_FAILING);
    return 0;
}

int afd_report_html(const afd_report_in *in, afd_buf *out, char *err, size_t errlen)
{
    afd_incident inc;
    int rc = report_begin(in, out, &inc, err, errlen);
    page *pg = rc ? NULL : calloc(1, sizeof *pg);
    if (!pg) {
        afd_incident_finish(&inc);
        if (!rc)
            report_set_err(err, errlen, "out of memory");
        return rc ? rc : AFD_ENOMEM;
    }
    pg->out = out;
    pg->inc = &inc;
    pg->in = in;
    rc = page_prepare(pg);
    if (rc == 0) {
        int64_t id = report_incident_id(in, &inc);
        head(pg, id);
        sec_verdict(pg, id);
        sec_timeline(pg);
        sec_evidence(pg);
        report_sec_search(pg);
        sec_window(pg);
        report_sec_gate(pg);
        report_sec_tiers(pg);
        report_sec_diff(pg);
        report_sec_replay(pg);
        report_sec_environment(pg, id);
        report_put(out,
                   "<footer>Written by affidavit. This page is self-contained: it loads nothing.</footer>\n"
                   "</main>\n</body>\n</html>\n");
        rc = out->err;
    }
    report_view_free(&pg->run[RUN_PASSING]);
    report_view_free(&pg->run[RUN_FAILING]);
    free(pg);
    afd_incident_finish(&inc);
    if (rc)
        report_set_err(err, errlen, "cannot render the HTML report: %s", afd_strerror(rc));
    return rc;
}
