/* report.c -- an incident as a reviewer reads it: one self-contained HTML page, SARIF 2.1.0, and a
 * Chrome trace-event file (see report.h).
 *
 * Every renderer reads the investigation's JSON document with jansson and treats every key as
 * optional and of any type: a report of a half-finished investigation (no fix, no window, no
 * traces) is still a report, with a short note where the missing part would be. Every string that
 * reaches the HTML goes through esc(), in text, attributes, SVG <title> and <text> alike, so one
 * function decides what is inert; numbers are the only thing printed around it. The JSON outputs
 * are built with jansson, which escapes for JSON; strings from traces are made valid UTF-8 first
 * because jansson refuses anything else.
 *
 * Workload: one incident at a time, on demand. A trace may hold hundreds of thousands of steps, so
 * the page draws at most MAX_RECTS step bars per run (the steps of the cause always), says how
 * many it left out, and stays under about a megabyte. The Chrome trace is streamed one event at a
 * time, so its memory does not grow with a jansson tree of the whole run. */
#include "report.h"
#include "afd.h"
#include "shell.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Step bars drawn per run: about 150 bytes each, so two full runs stay near 750 KB. */
#define MAX_RECTS 2500u
/* Task lanes in the timeline; the steps of tasks beyond them are counted as not drawn. */
#define MAX_LANES 48u
/* Operations of the cause outlined in the timeline (a cause names two or three). */
#define MAX_OPS 32u
/* Probes drawn in the window plot (a bisection makes about twenty). */
#define MAX_PROBES 256u
/* Characters of a lane label before it is cut (the full label is in its tooltip). */
#define LABEL_CHARS 22u
/* Locations listed per SARIF result. */
#define MAX_LOCATIONS 16u

#define REPLACEMENT "\xef\xbf\xbd" /* U+FFFD, for bytes that are not text */

enum { RUN_PASSING = 0, RUN_FAILING = 1 };

/* ---- small helpers ---- */

static void set_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* The caller's buffer is reused, not freed: it may be the caller's long-lived output buffer. */
static void reset(afd_buf *out)
{
    out->len = 0;
    out->err = 0;
    if (out->data)
        out->data[0] = 0;
}

static void put(afd_buf *out, const char *s)
{
    afd_buf_put(out, s, strlen(s));
}

/* The length of the valid UTF-8 sequence at p (at most left bytes), or 0 when it is not one:
 * overlong forms, surrogates and code points above U+10FFFF are refused, as jansson does. */
static size_t utf8_seq(const unsigned char *p, size_t left)
{
    unsigned char c = p[0], lo = 0x80, hi = 0xbf;
    size_t n;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        lo = c == 0xe0 ? 0xa0 : 0x80;
        hi = c == 0xed ? 0x9f : 0xbf;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        lo = c == 0xf0 ? 0x90 : 0x80;
        hi = c == 0xf4 ? 0x8f : 0xbf;
    } else {
        return 0;
    }
    if (left < n || p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xbf)
            return 0;
    return n;
}

/* The one HTML escaper. Besides the five markup characters it replaces control characters and
 * bytes that are not UTF-8 (trace strings are bytes) with U+FFFD, so the page is always text. */
static void esc_n(afd_buf *out, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, start = 0;
    char picture[16];
    while (i < n) {
        const char *rep = NULL;
        size_t step = 1;
        switch (p[i]) {
        case '&': rep = "&amp;"; break;
        case '<': rep = "&lt;"; break;
        case '>': rep = "&gt;"; break;
        case '"': rep = "&quot;"; break;
        case '\'': rep = "&#39;"; break;
        case '\n': case '\t': case '\r': break;
        default:
            if (p[i] < 0x20 || p[i] == 0x7f) {
                /* A control is shown as its Unicode picture (NUL as U+2400), as on the terminal:
                 * a NUL in a failure message is part of what the reviewer must see. */
                snprintf(picture, sizeof picture, "&#x%x;", p[i] == 0x7f ? 0x2421u : 0x2400u + p[i]);
                rep = picture;
            } else if (p[i] >= 0x80) {
                step = utf8_seq(p + i, n - i);
                if (!step) {
                    rep = REPLACEMENT;
                    step = 1;
                }
            }
        }
        if (rep) {
            afd_buf_put(out, s + start, i - start);
            put(out, rep);
            start = i + step;
        }
        i += step;
    }
    afd_buf_put(out, s + start, n - start);
}

static void esc(afd_buf *out, const char *s)
{
    if (s)
        esc_n(out, s, strlen(s));
}

/* At most max characters of s, cut at a character boundary and marked with an ellipsis. */
static void esc_cut(afd_buf *out, const char *s, size_t max)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s), i = 0, chars = 0;
    while (i < n && chars < max - 1) {
        size_t k = utf8_seq(p + i, n - i);
        i += k ? k : 1;
        chars++;
    }
    if (i >= n || (chars == max - 1 && i + utf8_seq(p + i, n - i) >= n)) {
        esc(out, s);
        return;
    }
    esc_n(out, s, i);
    put(out, "&hellip;");
}

static void na(afd_buf *out)
{
    put(out, "<span class=\"na\">not available</span>");
}

static void dash(afd_buf *out)
{
    put(out, "<span class=\"na\">&mdash;</span>");
}

/* s escaped, or the "not available" note. */
static void esc_or_na(afd_buf *out, const char *s)
{
    if (s && *s)
        esc(out, s);
    else
        na(out);
}

/* ---- reading the document ---- */

static const char *jstr(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

static int jnum(const json_t *o, const char *key, double *v)
{
    const json_t *x = json_object_get(o, key);
    if (!json_is_number(x))
        return 0;
    *v = json_number_value(x);
    return 1;
}

/* 1 or 0 for a boolean, -1 when the key is missing or not a boolean. */
static int jbool(const json_t *o, const char *key)
{
    const json_t *x = json_object_get(o, key);
    return json_is_boolean(x) ? json_is_true(x) : -1;
}

static int parse_doc(const afd_report_in *in, json_t **doc, char *err, size_t errlen)
{
    *doc = NULL;
    if (!in->json) {
        set_err(err, errlen, "no investigation document to render");
        return AFD_EINVAL;
    }
    json_error_t jerr;
    /* A failure message may hold NUL bytes, which the engine writes as \u0000: they are text. */
    json_t *root = json_loads(in->json, JSON_ALLOW_NUL, &jerr);
    if (!root) {
        set_err(err, errlen, "the investigation's JSON does not parse: %s (line %d, column %d)", jerr.text,
                jerr.line, jerr.column);
        return AFD_EINVAL;
    }
    if (!json_is_object(root)) {
        json_decref(root);
        set_err(err, errlen, "the investigation's JSON is not an object");
        return AFD_EINVAL;
    }
    *doc = root;
    return 0;
}

/* A count or measure as the document gives it: integers exactly, reals with six digits, strings
 * ("10/10") as text; anything else is a dash. */
static void put_value(afd_buf *out, const json_t *v)
{
    if (json_is_integer(v))
        afd_buf_printf(out, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    else if (json_is_real(v))
        afd_buf_printf(out, "%.6g", json_real_value(v));
    else if (json_is_string(v) && *json_string_value(v))
        esc(out, json_string_value(v));
    else
        dash(out);
}

static void put_key(afd_buf *out, const json_t *o, const char *key)
{
    put_value(out, json_object_get(o, key));
}

/* A fraction as a percentage with three significant digits: 0.66 -> "66", 0.5215 -> "52.2". */
static void put_pct(afd_buf *out, double frac)
{
    double v = frac * 100.0;
    afd_buf_printf(out, "%.3g", fabs(v) < 1e-3 ? 0.0 : v); /* never "1e-05" */
}

/* Virtual nanoseconds as milliseconds with three decimals, rounded to the microsecond. */
static void put_ms(afd_buf *out, uint64_t ns)
{
    uint64_t us = ns / 1000 + (ns % 1000 >= 500);
    afd_buf_printf(out, "%" PRIu64 ".%03" PRIu64 " ms", us / 1000, us % 1000);
}

/* A round step (1, 2 or 5 times a power of ten) that cuts range into about target pieces. */
static double nice_step(double range, int target)
{
    double raw = range / target;
    if (!(raw > 0) || !isfinite(raw))
        return 1;
    double mag = pow(10, floor(log10(raw))), f = raw / mag;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

/* Decimals that print every multiple of step exactly. */
static int step_decimals(double step)
{
    if (step >= 1)
        return 0;
    int d = (int)ceil(-log10(step) - 1e-9);
    return d < 0 ? 0 : d > 9 ? 9 : d;
}

/* SVG shapes; cls is always a literal of ours. A rect is left open for a <title> or a "/>". */
static void svg_line(afd_buf *out, const char *cls, double x1, double y1, double x2, double y2)
{
    afd_buf_printf(out, "<line class=\"%s\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", cls, x1, y1,
                   x2, y2);
}

static void svg_rect(afd_buf *out, const char *cls, double x, double y, double w, double h)
{
    afd_buf_printf(out, "<rect class=\"%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"", cls,
                   x, y, w, h);
}

/* ---- the runs as the timeline sees them ---- */

typedef struct task_ref {
    uint32_t id;
    uint32_t first;     /* index of its first event: the earliest TASK event names the task */
    const char *label;  /* Borrowed from the trace, or NULL when the trace never named the task. */
    char fallback[24];  /* "task-N" for an unnamed task */
    int lane;           /* LANE_UNSET until assigned, LANE_NONE beyond MAX_LANES */
} task_ref;

enum { LANE_UNSET = -2, LANE_NONE = -1 };

typedef struct run_view {
    const afd_trace *t; /* Borrowed; NULL when the run's trace is not available. */
    task_ref *tasks;    /* Owned, sorted by id, one per task id. */
    size_t n_tasks;
    uint64_t steps;     /* STEP events */
    uint64_t start;     /* the earliest start of a step, virtual ns (the clock starts at an epoch) */
    uint64_t end;       /* the latest end of a step, virtual ns */
} run_view;

static const char *task_name(const task_ref *r)
{
    return r->label ? r->label : r->fallback;
}

static int by_id_then_first(const void *a, const void *b)
{
    const task_ref *x = a, *y = b;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return x->first < y->first ? -1 : x->first > y->first;
}

static uint64_t step_end(const afd_event *ev)
{
    return ev->cost > UINT64_MAX - ev->vtime ? UINT64_MAX : ev->vtime + ev->cost;
}

/* Collects the tasks of a trace from its TASK events and from the STEP events of tasks that were
 * never announced (their TASK event was dropped), one entry per id. */
static int view_build(run_view *v, const afd_trace *t)
{
    memset(v, 0, sizeof *v);
    v->t = t;
    if (!t)
        return 0;
    size_t n = 0;
    for (uint32_t i = 0; i < t->n_events; i++)
        n += t->events[i].kind == AFD_EV_TASK || t->events[i].kind == AFD_EV_STEP;
    if (!n)
        return 0;
    task_ref *r = calloc(n, sizeof *r);
    if (!r)
        return AFD_ENOMEM;
    size_t k = 0;
    for (uint32_t i = 0; i < t->n_events; i++) {
        const afd_event *ev = &t->events[i];
        if (ev->kind == AFD_EV_STEP) {
            if (!v->steps || ev->vtime < v->start)
                v->start = ev->vtime;
            v->steps++;
            if (step_end(ev) > v->end)
                v->end = step_end(ev);
        } else if (ev->kind != AFD_EV_TASK) {
            continue;
        }
        r[k].id = ev->task;
        r[k].first = i;
        r[k].label = ev->kind == AFD_EV_TASK && ev->b < t->n_strings ? afd_trace_string(t, ev->b) : NULL;
        k++;
    }
    qsort(r, n, sizeof *r, by_id_then_first);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m && r[m - 1].id == r[i].id) {
            if (!r[m - 1].label)
                r[m - 1].label = r[i].label;
            continue;
        }
        r[m++] = r[i];
    }
    for (size_t i = 0; i < m; i++) {
        snprintf(r[i].fallback, sizeof r[i].fallback, "task-%" PRIu32, r[i].id);
        r[i].lane = LANE_UNSET;
    }
    v->tasks = r;
    v->n_tasks = m;
    return 0;
}

static void view_free(run_view *v)
{
    free(v->tasks);
    v->tasks = NULL;
}

static task_ref *view_task(const run_view *v, uint32_t id)
{
    size_t lo = 0, hi = v->n_tasks;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v->tasks[mid].id == id)
            return &v->tasks[mid];
        if (v->tasks[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* Lanes are shared by both runs, one per task label, so a task sits at the same height in the
 * passing and the failing run and the eye compares straight down. */
typedef struct lanes {
    const char *label[MAX_LANES]; /* Borrowed from the run views. */
    unsigned char present[2][MAX_LANES];
    size_t n;
    uint64_t dropped_tasks;
} lanes;

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
        task_ref *r = view_task(v, ev->task);
        if (!r || r->lane != LANE_UNSET)
            continue;
        r->lane = lane_find(l, task_name(r));
        if (r->lane == LANE_NONE && l->n < MAX_LANES) {
            l->label[l->n] = task_name(r);
            r->lane = (int)l->n++;
        }
        if (r->lane == LANE_NONE)
            l->dropped_tasks++;
        else
            l->present[run][r->lane] = 1;
    }
}

/* One operation of the cause, located in the runs. */
typedef struct op_ref {
    int run;         /* the run the document names */
    const char *task; /* Borrowed from the document. */
    int64_t step;    /* the task's step ordinal */
    int lane;
    int found[2];
    uint64_t vtime[2], cost[2];
} op_ref;

typedef struct page {
    afd_buf *out;             /* Borrowed. */
    const json_t *doc;        /* Borrowed. */
    const afd_report_in *in;  /* Borrowed. */
    run_view run[2];
    lanes lanes;
    op_ref ops[MAX_OPS];
    size_t n_ops;
} page;

static void ops_collect(page *pg)
{
    const json_t *ops = json_object_get(json_object_get(pg->doc, "cause"), "operations");
    size_t i;
    json_t *o;
    json_array_foreach(ops, i, o) {
        const char *task = jstr(o, "task"), *run = jstr(o, "run");
        const json_t *st = json_object_get(o, "step");
        if (pg->n_ops == MAX_OPS)
            break;
        if (!task || !json_is_integer(st))
            continue; /* e.g. a deadlock's waits: no step to outline */
        op_ref *r = &pg->ops[pg->n_ops++];
        memset(r, 0, sizeof *r);
        r->run = run && strcmp(run, "passing") == 0 ? RUN_PASSING : RUN_FAILING;
        r->task = task;
        r->step = json_integer_value(st);
        r->lane = lane_find(&pg->lanes, task);
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
        const task_ref *r = view_task(v, ev->task);
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
    put(out, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
             "<meta name=\"viewport\" content=\"width=device-width\">\n<title>affidavit");
    if (id > 0)
        afd_buf_printf(out, " incident %" PRId64, id);
    put(out, ": ");
    esc_or_na(out, jstr(pg->doc, "nodeid"));
    put(out, "</title>\n<style>\n");
    put(out, CSS);
    put(out, "</style>\n</head>\n<body>\n<main>\n");
}

/* ---- 1. verdict ---- */

typedef struct verdict_info {
    const char *name, *word, *cls;
} verdict_info;

static const verdict_info VERDICTS[] = {
    {"reproduced", "REPRODUCED", "reproduced"},
    {"no_failure", "NO FAILURE", "no-failure"},
    {"abstained", "ABSTAINED", "abstained"},
    {"deterministic", "DETERMINISTIC", "deterministic"},
    {"timing_sensitive", "TIMING-SENSITIVE", "timing-sensitive"},
};

static const verdict_info *verdict_of(const char *v)
{
    for (size_t i = 0; v && i < sizeof VERDICTS / sizeof VERDICTS[0]; i++)
        if (strcmp(VERDICTS[i].name, v) == 0)
            return &VERDICTS[i];
    return NULL;
}

/* A cause kind for people: "lost_update" -> "lost update". */
static void put_kind(afd_buf *out, const char *kind)
{
    for (const char *p = kind; *p;) {
        size_t n = strcspn(p, "_");
        esc_n(out, p, n);
        p += n;
        if (*p == '_') {
            put(out, " ");
            p++;
        }
    }
}

static void verdict_line(page *pg)
{
    afd_buf *out = pg->out;
    const char *v = jstr(pg->doc, "verdict");
    const verdict_info *vi = verdict_of(v);
    const json_t *cause = json_object_get(pg->doc, "cause");
    const char *kind = jstr(cause, "kind"), *res = jstr(cause, "resource");
    put(out, "<p class=\"verdict-line\"><span class=\"verdict-word\">");
    if (vi)
        put(out, vi->word);
    else if (v)
        esc(out, v);
    else
        put(out, "NO VERDICT");
    put(out, "</span>");
    if (kind) {
        put(out, ": ");
        put_kind(out, kind);
        if (res) {
            put(out, " on ");
            esc(out, res);
        }
    } else if (vi && strcmp(vi->name, "deterministic") == 0) {
        put(out, ": the test fails on every run; it is not flaky");
    } else if (vi && strcmp(vi->name, "timing_sensitive") == 0) {
        /* The engine's sentence names the threshold and where it was armed; no race is claimed. */
        const char *summary = jstr(json_object_get(pg->doc, "timing"), "summary");
        put(out, ": ");
        if (summary)
            esc(out, summary);
        else
            put(out, "fails only when one step outlasts a deadline the test armed: a slow machine, not a race");
    } else if (vi && strcmp(vi->name, "no_failure") == 0) {
        put(out, ": the test did not fail");
    } else if (!vi && !v) {
        put(out, ": the document records none");
    }
    put(out, "</p>\n");
}

static void natural_fact(afd_buf *out, const json_t *nat)
{
    double runs = 0, failed = 0, rate = 0;
    int have_runs = jnum(nat, "runs", &runs), have_failed = jnum(nat, "failed", &failed);
    put(out, "<li>Natural runs: ");
    if (!have_runs || !have_failed) {
        na(out);
        put(out, "</li>\n");
        return;
    }
    afd_buf_printf(out, "%.0f/%.0f failed", failed, runs);
    int have_rate = jnum(nat, "rate", &rate);
    if (!have_rate && runs > 0) {
        rate = failed / runs;
        have_rate = 1;
    }
    const json_t *ci = json_object_get(nat, "ci95");
    int have_ci = json_array_size(ci) == 2 && json_is_number(json_array_get(ci, 0)) &&
                  json_is_number(json_array_get(ci, 1));
    if (have_rate || have_ci)
        put(out, " (");
    if (have_rate) {
        put_pct(out, rate);
        put(out, "%");
    }
    if (have_ci) {
        put(out, have_rate ? ", 95% CI " : "95% CI ");
        put_pct(out, json_number_value(json_array_get(ci, 0)));
        put(out, "&ndash;");
        put_pct(out, json_number_value(json_array_get(ci, 1)));
        put(out, "%");
    }
    if (have_rate || have_ci)
        put(out, ")");
    put(out, "</li>\n");
}

/* "failed 10/10" or "passed 10/10" from {runs, failed|passed}. */
static void replay_fact(afd_buf *out, const char *what, const json_t *r, const char *key)
{
    double runs, k;
    afd_buf_printf(out, "<li>%s: ", what);
    if (jnum(r, "runs", &runs) && jnum(r, key, &k))
        afd_buf_printf(out, "%s %.0f/%.0f", key, k, runs);
    else
        na(out);
    put(out, "</li>\n");
}

static void sec_verdict(page *pg, int64_t id)
{
    afd_buf *out = pg->out;
    const verdict_info *vi = verdict_of(jstr(pg->doc, "verdict"));
    afd_buf_printf(out, "<section id=\"verdict\" class=\"%s\">\n", vi ? vi->cls : "unknown");
    put(out, "<p class=\"kicker\">affidavit incident");
    if (id > 0)
        afd_buf_printf(out, " #%" PRId64, id);
    if (pg->in->created > 0) {
        time_t tt = (time_t)pg->in->created;
        struct tm tm;
        char date[64];
        if (gmtime_r(&tt, &tm) && strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", &tm))
            afd_buf_printf(out, " &middot; %s", date);
    }
    put(out, "</p>\n<h1><code>");
    esc_or_na(out, jstr(pg->doc, "nodeid"));
    put(out, "</code></h1>\n");
    verdict_line(pg);
    put(out, "<ul class=\"facts\">\n");
    natural_fact(out, json_object_get(pg->doc, "natural"));
    replay_fact(out, "Replay of the failing schedule", json_object_get(pg->doc, "replay"), "failed");
    replay_fact(out, "Replay of the passing schedule", json_object_get(pg->doc, "passing_replay"), "passed");
    double w;
    if (jnum(pg->doc, "window_us", &w))
        afd_buf_printf(out, "<li>Collision window: %.1f &micro;s</li>\n", w);
    put(out, "</ul>\n");
    const char *summary = jstr(json_object_get(pg->doc, "cause"), "summary");
    if (summary) {
        put(out, "<p class=\"summary\">");
        esc(out, summary);
        put(out, "</p>\n");
    }
    const json_t *failure = json_object_get(pg->doc, "failure");
    if (json_is_string(failure) && json_string_length(failure)) {
        put(out, "<pre class=\"failure\">");
        esc_n(out, json_string_value(failure), json_string_length(failure)); /* NUL bytes included */
        put(out, "</pre>\n");
    }
    put(out, "</section>\n");
}

/* ---- 2. timeline ---- */

enum { TL_W = 1000, TL_LABEL = 190, TL_PAD_R = 24, TL_LANE = 22, TL_BAR = 14, TL_HEAD = 30,
       TL_GAP = 12, TL_AXIS = 34 };

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
    double x = tl_x(tl, ev->vtime), w = tl_x(tl, step_end(ev)) - x;
    if (w < 2)
        w = 2; /* a step of no virtual time is still a step */
    svg_rect(out, pair ? "step pair" : peer ? "step peer" : "step", x, y, w, TL_BAR);
    put(out, "><title>");
    esc(out, task_name(r));
    afd_buf_printf(out, " step #%" PRIu32 ": ", ev->a);
    put_ms(out, ev->vtime > tl->t_start ? ev->vtime - tl->t_start : 0);
    put(out, " to ");
    put_ms(out, step_end(ev) > tl->t_start ? step_end(ev) - tl->t_start : 0);
    if (ev->b != AFD_NOSTR && ev->b < t->n_strings) {
        put(out, ", suspended at ");
        esc(out, afd_trace_string(t, ev->b));
    }
    if (pair)
        put(out, " (an operation of the cause)");
    put(out, "</title></rect>\n");
}

static void tl_lane_labels(page *pg, int run, double y0)
{
    afd_buf *out = pg->out;
    for (size_t k = 0; k < pg->lanes.n; k++) {
        double ly = y0 + TL_HEAD + (double)k * TL_LANE;
        if (k % 2 == 0) {
            svg_rect(out, "lane-bg", TL_LABEL, ly + 1, TL_W - TL_LABEL - TL_PAD_R, TL_LANE - 2);
            put(out, "/>\n");
        }
        /* anchored at the left edge: a long label is cut, never pushed out of the picture */
        afd_buf_printf(out, "<text class=\"lane-label%s\" x=\"0\" y=\"%.1f\">",
                       pg->lanes.present[run][k] ? "" : " absent", ly + 15);
        esc_cut(out, pg->lanes.label[k], LABEL_CHARS);
        put(out, "<title>");
        esc(out, pg->lanes.label[k]);
        put(out, pg->lanes.present[run][k] ? "" : " (not in this run)");
        put(out, "</title></text>\n");
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
        double x = tl_x(tl, ran.vtime), w = tl_x(tl, step_end(&ran)) - x;
        double y = y0 + TL_HEAD + (double)op->lane * TL_LANE + (TL_LANE - TL_BAR) / 2.0;
        if (w < 6)
            w = 6;
        svg_rect(out, "never-ran", x, y, w, TL_BAR);
        put(out, "><title>");
        esc(out, op->task);
        afd_buf_printf(out, " step #%" PRId64 " ran at ", op->step);
        put_ms(out, op->vtime[RUN_PASSING] - tl->t_start);
        put(out, " in the passing run and never ran in the failing run</title></rect>\n");
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
    put_ms(out, v->end - v->start);
    put(out, ", outcome: ");
    esc(out, afd_outcome_name(t->outcome));
    put(out, "</text>\n");
    tl_lane_labels(pg, run, y0);
    uint64_t drawn = 0;
    for (uint32_t i = 0; i < t->n_events; i++) {
        const afd_event *ev = &t->events[i];
        if (ev->kind != AFD_EV_STEP)
            continue;
        const task_ref *r = view_task(v, ev->task);
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
    put(out, "</g>\n");
}

static void tl_axis(page *pg, const timeline *tl, double y_top, double y_axis)
{
    afd_buf *out = pg->out;
    double end_ms = (double)(tl->t_end - tl->t_start) / 1e6, step = nice_step(end_ms, 5);
    int dec = step_decimals(step);
    put(out, "<g class=\"time-axis\">\n");
    svg_line(out, "axis", TL_LABEL, y_axis, TL_W - TL_PAD_R, y_axis);
    for (int i = 0; i <= 50; i++) {
        double v = i * step;
        if (v > end_ms * (1 + 1e-9))
            break;
        double x = TL_LABEL + tl->plot_w * (v / end_ms);
        svg_line(out, "grid", x, y_top, x, y_axis + 5);
        afd_buf_printf(out, "<text class=\"tick-label\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\">"
                            "%.*f ms</text>\n",
                       x, y_axis + 20, x > TL_W - 40 ? "end" : "middle", dec, v);
    }
    put(out, "</g>\n");
}

static void tl_notes(page *pg, const timeline *tl)
{
    afd_buf *out = pg->out;
    static const char *const names[2] = {"passing", "failing"};
    for (int run = 0; run < 2; run++)
        if (tl->not_drawn[run])
            afd_buf_printf(out, "<p class=\"note\">%" PRIu64 " steps not drawn in the %s run (the page "
                                "draws at most %u per run, and %u task lanes).</p>\n",
                           tl->not_drawn[run], names[run], MAX_RECTS, MAX_LANES);
    if (pg->lanes.dropped_tasks)
        afd_buf_printf(out, "<p class=\"note\">%" PRIu64 " tasks have no lane of their own.</p>\n",
                       pg->lanes.dropped_tasks);
    for (size_t k = 0; k < pg->n_ops; k++) {
        const op_ref *op = &pg->ops[k];
        if (op->found[op->run] || !pg->run[op->run].t)
            continue;
        put(out, "<p class=\"note\">The operation of ");
        esc(out, op->task);
        afd_buf_printf(out, " at step #%" PRId64 " has no step in the %s run's trace.</p>\n", op->step,
                       names[op->run]);
    }
}

static void sec_timeline(page *pg)
{
    afd_buf *out = pg->out;
    put(out, "<section id=\"timeline\">\n<h2>Where the two runs diverge</h2>\n");
    if (!pg->run[RUN_PASSING].t && !pg->run[RUN_FAILING].t) {
        put(out, "<p class=\"na\">No traces of the runs are available, so there is no timeline.</p>\n"
                 "</section>\n");
        return;
    }
    if (!pg->lanes.n) {
        put(out, "<p class=\"na\">The traces hold no task steps to draw.</p>\n</section>\n");
        return;
    }
    put(out, "<p class=\"lead\">The same test twice on a shared virtual-time axis: the nearest passing run "
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
    afd_buf_printf(out, "<div class=\"svg-wrap\">\n<svg class=\"timeline\" viewBox=\"0 0 %d %.0f\" "
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
    put(out, "</svg>\n</div>\n");
    put(out, "<p class=\"legend\"><span class=\"key k-step\"></span>a step of a task"
             "<span class=\"key k-pair\"></span>an operation of the cause"
             "<span class=\"key k-never\"></span>never ran in the failing run</p>\n");
    tl_notes(pg, &tl);
    put(out, "</section>\n");
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
    const json_t *ev = json_object_get(pg->doc, "evidence");
    put(out, "<section id=\"evidence\">\n<h2>Evidence</h2>\n");
    if (!json_array_size(ev)) {
        put(out, "<p class=\"na\">No evidence was recorded.</p>\n</section>\n");
        return;
    }
    put(out, "<p class=\"lead\">Suspicion comes from comparing runs; the decision comes from forcing the "
             "ordering and seeing what happens.</p>\n");
    put(out, "<div class=\"table-wrap\"><table class=\"evidence\">\n"
             "<thead><tr><th>Claim</th><th>Measured</th><th>Strength</th></tr></thead>\n<tbody>\n");
    size_t i;
    json_t *e;
    json_array_foreach(ev, i, e) {
        const char *strength = jstr(e, "strength");
        put(out, "<tr><td>");
        esc_or_na(out, jstr(e, "claim"));
        put(out, "</td><td>");
        esc_or_na(out, jstr(e, "measured"));
        put(out, "</td><td>");
        if (strength) {
            afd_buf_printf(out, "<span class=\"badge %s\">", strength_class(strength));
            esc(out, strength);
            put(out, "</span>");
        } else {
            dash(out);
        }
        put(out, "</td></tr>\n");
    }
    put(out, "</tbody>\n</table></div>\n</section>\n");
}

/* ---- 4. collision window ---- */

typedef struct probe {
    double delay;
    int failed;
} probe;

enum { WP_W = 760, WP_H = 200, WP_L = 86, WP_R = 24, WP_T = 16, WP_PLOT_H = 140 };

typedef struct wplot {
    double lo, hi;          /* x range, us */
    int have_win;
    double w0, w1;          /* the window, us */
    const char *cls;        /* Borrowed: the svg's class. */
} wplot;

static double wp_x(const wplot *p, double us)
{
    double x = WP_L + (WP_W - WP_L - WP_R) * ((us - p->lo) / (p->hi - p->lo));
    return x < WP_L ? WP_L : x > WP_W - WP_R ? WP_W - WP_R : x;
}

static void wp_axes(afd_buf *out, const wplot *p)
{
    double y_fail = WP_T + 30, y_pass = WP_T + 110, y_axis = WP_T + WP_PLOT_H;
    double step = nice_step(p->hi - p->lo, 6);
    int dec = step_decimals(step);
    svg_line(out, "grid", WP_L, y_fail, WP_W - WP_R, y_fail);
    svg_line(out, "grid", WP_L, y_pass, WP_W - WP_R, y_pass);
    afd_buf_printf(out, "<text x=\"%d\" y=\"%.0f\" text-anchor=\"end\">1 failed</text>\n", WP_L - 8,
                   y_fail + 4);
    afd_buf_printf(out, "<text x=\"%d\" y=\"%.0f\" text-anchor=\"end\">0 passed</text>\n", WP_L - 8,
                   y_pass + 4);
    svg_line(out, "axis", WP_L, y_axis, WP_W - WP_R, y_axis);
    svg_line(out, "axis", WP_L, WP_T, WP_L, y_axis);
    double first = ceil(p->lo / step - 1e-9) * step;
    for (int i = 0; i <= 40; i++) {
        double v = first + i * step;
        if (v > p->hi * (1 + 1e-12) + 1e-12)
            break;
        double x = wp_x(p, v);
        svg_line(out, "axis", x, y_axis, x, y_axis + 5);
        afd_buf_printf(out, "<text class=\"tick-label\" x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">"
                            "%.*f</text>\n",
                       x, y_axis + 19, dec, v);
    }
    afd_buf_printf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">injected delay (&micro;s)</text>\n",
                   (WP_L + WP_W - WP_R) / 2, WP_H - 6);
    afd_buf_printf(out, "<text transform=\"rotate(-90)\" x=\"%.0f\" y=\"14\" text-anchor=\"middle\">"
                        "failure</text>\n", -(WP_T + WP_PLOT_H / 2.0));
}

static void window_plot(afd_buf *out, const wplot *p, const probe *pr, size_t n)
{
    afd_buf_printf(out, "<div class=\"svg-wrap\">\n<svg class=\"%s\" viewBox=\"0 0 %d %d\" width=\"100%%\" "
                        "role=\"img\" aria-label=\"probes of the collision window\">\n",
                   p->cls, WP_W, WP_H);
    if (p->have_win) {
        double x0 = wp_x(p, p->w0 < p->w1 ? p->w0 : p->w1), x1 = wp_x(p, p->w0 < p->w1 ? p->w1 : p->w0);
        if (x1 - x0 < 4)
            x0 = (x0 + x1) / 2 - 2, x1 = x0 + 4;
        svg_rect(out, "window", x0, WP_T, x1 - x0, WP_PLOT_H);
        afd_buf_printf(out, "><title>the window: %.6g to %.6g &micro;s</title></rect>\n", p->w0, p->w1);
    }
    wp_axes(out, p);
    for (size_t i = 0; i < n; i++) {
        if (pr[i].delay < p->lo || pr[i].delay > p->hi)
            continue;
        const char *what = pr[i].failed ? "failed" : "passed";
        afd_buf_printf(out, "<circle class=\"probe %s\" cx=\"%.1f\" cy=\"%d\" r=\"6\"><title>probe %zu: "
                            "delay %.6g &micro;s, %s</title></circle>\n",
                       what, wp_x(p, pr[i].delay), pr[i].failed ? WP_T + 30 : WP_T + 110, i + 1, pr[i].delay,
                       what);
    }
    put(out, "</svg>\n</div>\n");
}

static size_t probes_read(const json_t *w, probe *pr)
{
    size_t n = 0, i;
    json_t *o;
    json_array_foreach(json_object_get(w, "probes"), i, o) {
        double d;
        if (n == MAX_PROBES)
            break;
        if (!jnum(o, "delay_us", &d) || !isfinite(d))
            continue;
        pr[n].delay = d;
        pr[n].failed = jbool(o, "failed") == 1;
        n++;
    }
    return n;
}

static void window_text(afd_buf *out, const json_t *w, int have_win, double w0, double w1)
{
    const char *task = jstr(w, "task");
    double runs;
    put(out, "<p>Delaying ");
    if (task) {
        put(out, "<code>");
        esc(out, task);
        put(out, "</code>");
    } else {
        put(out, "the task");
    }
    if (json_is_integer(json_object_get(w, "step")))
        afd_buf_printf(out, " step %" JSON_INTEGER_FORMAT, json_integer_value(json_object_get(w, "step")));
    if (have_win)
        afd_buf_printf(out, ": it passes with %.6g &micro;s and fails with %.6g &micro;s "
                            "(a window of %.3g &micro;s)",
                       w0, w1, fabs(w1 - w0));
    else
        put(out, ": the window's edges are not available");
    if (jnum(w, "runs", &runs))
        afd_buf_printf(out, ", measured in %.0f runs", runs);
    put(out, ". Each probe is one deterministic replay with that delay injected.</p>\n");
}

static void sec_window(page *pg)
{
    afd_buf *out = pg->out;
    const json_t *w = json_object_get(pg->doc, "window");
    put(out, "<section id=\"window\">\n<h2>Collision window</h2>\n");
    if (!json_is_object(w)) {
        put(out, "<p class=\"na\">No collision window was measured for this incident.</p>\n</section>\n");
        return;
    }
    wplot p = {.cls = "window-plot"};
    p.have_win = jnum(w, "passes_at_us", &p.w0) && jnum(w, "fails_at_us", &p.w1) && isfinite(p.w0) &&
                 isfinite(p.w1);
    window_text(out, w, p.have_win, p.w0, p.w1);
    probe *pr = malloc(MAX_PROBES * sizeof *pr);
    if (!pr) {
        out->err = AFD_ENOMEM;
        return;
    }
    size_t n = probes_read(w, pr);
    if (!n && !p.have_win) {
        put(out, "<p class=\"na\">No probes were recorded.</p>\n</section>\n");
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
        put(out, "<p class=\"note\">Up close around the window:</p>\n");
        window_plot(out, &z, pr, n);
    }
    free(pr);
    put(out, "</section>\n");
}

/* ---- 5. gate ---- */

typedef struct gate_group {
    const char *group, *title;
} gate_group;

static const gate_group GATE_GROUPS[] = {
    {"refused shortcut", "Refused shortcuts"},
    {"required substance", "Required substance"},
    {"structural safety", "Structural safety"},
    {NULL, "Other checks"},
};
#define N_GATE_GROUPS (sizeof GATE_GROUPS / sizeof GATE_GROUPS[0])

static size_t gate_group_of(const json_t *check)
{
    const char *g = jstr(check, "group");
    for (size_t i = 0; g && i + 1 < N_GATE_GROUPS; i++)
        if (strcmp(GATE_GROUPS[i].group, g) == 0)
            return i;
    return N_GATE_GROUPS - 1;
}

static void gate_check(afd_buf *out, const json_t *c)
{
    int passed = jbool(c, "passed") == 1; /* a check that does not say it passed did not */
    afd_buf_printf(out, "<li class=\"%s\"><span class=\"mark\" aria-hidden=\"true\">%s</span><code>",
                   passed ? "pass" : "fail", passed ? "&#10003;" : "&#10007;");
    esc_or_na(out, jstr(c, "check"));
    put(out, "</code> &mdash; ");
    const char *reason = jstr(c, "reason");
    if (reason)
        esc(out, reason);
    else
        put(out, passed ? "passed" : "failed");
    put(out, "</li>\n");
}

static void sec_gate(page *pg)
{
    afd_buf *out = pg->out;
    const json_t *fix = json_object_get(pg->doc, "fix");
    const json_t *gate = json_object_get(fix, "gate");
    put(out, "<section id=\"gate\">\n<h2>Policy gate</h2>\n");
    if (!json_is_object(fix)) {
        put(out, "<p class=\"na\">No fix was attempted, so no gate ran (the investigation ran without "
                 "<code>--fix</code>).</p>\n</section>\n");
        return;
    }
    if (!json_array_size(gate)) {
        put(out, "<p class=\"na\">No gate checks were recorded.</p>\n</section>\n");
        return;
    }
    size_t total = json_array_size(gate), failed = 0, i, counts[N_GATE_GROUPS] = {0};
    json_t *c;
    json_array_foreach(gate, i, c) {
        failed += jbool(c, "passed") != 1;
        counts[gate_group_of(c)]++;
    }
    if (failed)
        afd_buf_printf(out, "<p>%zu of %zu checks failed: the patch was not allowed to run.</p>\n", failed,
                       total);
    else
        afd_buf_printf(out, "<p>All %zu checks passed. A patch runs only when every one of them does.</p>\n",
                       total);
    for (size_t g = 0; g < N_GATE_GROUPS; g++) {
        if (!counts[g] && !GATE_GROUPS[g].group)
            continue;
        afd_buf_printf(out, "<div class=\"gate-group\">\n<h3>%s</h3>\n", GATE_GROUPS[g].title);
        if (!counts[g])
            put(out, "<p class=\"na\">No checks in this group.</p>\n");
        else
            put(out, "<ul>\n");
        json_array_foreach(gate, i, c)
            if (gate_group_of(c) == g)
                gate_check(out, c);
        put(out, counts[g] ? "</ul>\n</div>\n" : "</div>\n");
    }
    put(out, "</section>\n");
}

/* ---- 6. verification tiers ---- */

/* A tier the document gives as a string ("not attempted") is printed as that string and never as a
 * result; a missing tier is not available. Returns the tier's object, or NULL when it has none. */
static const json_t *tier_open(afd_buf *out, const json_t *tiers, const char *key, const char *title)
{
    const json_t *t = json_object_get(tiers, key);
    afd_buf_printf(out, "<li class=\"tier\" id=\"tier-%s\"><strong>%s</strong>: ", key, title);
    if (json_is_object(t))
        return t;
    if (json_is_string(t) && strcmp(json_string_value(t), "not attempted") == 0) {
        put(out, "<span class=\"not-attempted\">not attempted</span>");
    } else if (json_is_string(t)) {
        put(out, "<span class=\"not-attempted\">");
        esc(out, json_string_value(t));
        put(out, "</span>");
    } else {
        na(out);
    }
    put(out, "</li>\n");
    return NULL;
}

static void tier_replay(afd_buf *out, const json_t *tiers)
{
    const json_t *t = tier_open(out, tiers, "replay", "Replay");
    if (!t)
        return;
    put(out, "the failing token failed ");
    put_key(out, t, "token_failed_before");
    put(out, " before the fix; after it, passed ");
    put_key(out, t, "passed");
    put(out, "/");
    put_key(out, t, "runs");
    put(out, " under the identical schedule</li>\n");
}

static void tier_exploration(afd_buf *out, const json_t *tiers)
{
    const json_t *t = tier_open(out, tiers, "exploration", "Exploration");
    if (!t)
        return;
    put_key(out, t, "schedules");
    put(out, " schedules explored: ");
    put_key(out, t, "failed_before");
    put(out, " failed before the fix, ");
    put_key(out, t, "failed_after");
    put(out, " failed after it</li>\n");
}

static void tier_natural(afd_buf *out, const json_t *tiers)
{
    const json_t *t = tier_open(out, tiers, "natural", "Natural runs");
    double below;
    if (!t)
        return;
    put_key(out, t, "runs");
    put(out, " runs after the fix, ");
    put_key(out, t, "failed");
    put(out, " failed");
    if (jnum(t, "rate_below", &below)) {
        put(out, ": the failure rate is below ");
        put_pct(out, below);
        put(out, "% (rule of three, 95% confidence)");
    }
    put(out, "</li>\n");
}

static void put_ms_key(afd_buf *out, const json_t *t, const char *key)
{
    double v;
    if (jnum(t, key, &v))
        afd_buf_printf(out, "%.2f ms", v);
    else
        dash(out);
}

static void tier_overhead(afd_buf *out, const json_t *tiers)
{
    const json_t *t = tier_open(out, tiers, "overhead", "Overhead");
    if (!t)
        return;
    put(out, "median ");
    put_ms_key(out, t, "median_ms_before");
    put(out, " per run before the fix, ");
    put_ms_key(out, t, "median_ms_after");
    put(out, " after</li>\n");
}

static const char *yes_no(int b)
{
    return b == 1 ? "yes" : b == 0 ? "no" : "not recorded";
}

static void sec_tiers(page *pg)
{
    afd_buf *out = pg->out;
    const json_t *fix = json_object_get(pg->doc, "fix");
    put(out, "<section id=\"tiers\">\n<h2>Verification</h2>\n");
    if (!json_is_object(fix)) {
        put(out, "<p class=\"na\">No fix was verified: the investigation ran without "
                 "<code>--fix</code>.</p>\n</section>\n");
        return;
    }
    const json_t *tiers = json_object_get(fix, "tiers");
    put(out, "<p class=\"lead\">What was established, and how. A tier that was not attempted is not "
             "claimed.</p>\n<ul class=\"tiers\">\n");
    tier_replay(out, tiers);
    tier_exploration(out, tiers);
    tier_natural(out, tiers);
    tier_overhead(out, tiers);
    const json_t *rt = json_object_get(fix, "regression_test");
    put(out, "<li class=\"tier\" id=\"tier-regression\"><strong>Regression test</strong>: ");
    if (json_is_object(rt)) {
        put(out, "<code>");
        esc_or_na(out, jstr(rt, "node"));
        afd_buf_printf(out, "</code>; fails before the fix: %s; passes after: %s",
                       yes_no(jbool(rt, "fails_before")), yes_no(jbool(rt, "passes_after")));
    } else {
        na(out);
    }
    put(out, "</li>\n");
    afd_buf_printf(out, "<li class=\"tier\" id=\"tier-verdict\"><strong>Verified</strong>: %s; "
                        "<strong>applied</strong>: %s</li>\n",
                   yes_no(jbool(fix, "verified")), yes_no(jbool(fix, "applied")));
    put(out, "</ul>\n</section>\n");
}

/* ---- 7. diff ---- */

/* Classifies unified-diff lines by counting each hunk's lines from its header, so a removed line
 * that reads "--- x" is still a removal and not a file header. */
typedef struct diff_state {
    long old_left, new_left;
} diff_state;

static long hunk_count(const char **p)
{
    long start = strtol(*p, (char **)p, 10), n = 1;
    (void)start;
    if (**p == ',')
        n = strtol(*p + 1, (char **)p, 10);
    return n < 0 ? 0 : n;
}

static const char *diff_class(diff_state *st, const char *line, size_t len)
{
    if (st->old_left > 0 || st->new_left > 0) {
        char c = len ? line[0] : ' ';
        if (c == '+') {
            st->new_left--;
            return "add";
        }
        if (c == '-') {
            st->old_left--;
            return "del";
        }
        if (c == '\\')
            return "ctx";
        st->old_left--;
        st->new_left--;
        return "ctx";
    }
    if (len >= 4 && memcmp(line, "@@ -", 4) == 0) {
        const char *p = line + 4;
        st->old_left = hunk_count(&p);
        if (strncmp(p, " +", 2) == 0) {
            p += 2;
            st->new_left = hunk_count(&p);
        }
        return "hunk";
    }
    if (len && line[0] == '\\')
        return "ctx";
    return "hunk"; /* file headers and anything between hunks */
}

static void put_diff(afd_buf *out, const char *diff)
{
    diff_state st = {0, 0};
    put(out, "<pre class=\"diff\">");
    for (const char *p = diff; *p;) {
        size_t n = strcspn(p, "\n");
        afd_buf_printf(out, "<span class=\"%s\">", diff_class(&st, p, n));
        esc_n(out, p, n);
        put(out, "</span>");
        p += n;
        if (*p == '\n') {
            put(out, "\n");
            p++;
        }
    }
    put(out, "</pre>\n");
}

static void sec_diff(page *pg)
{
    afd_buf *out = pg->out;
    const json_t *fix = json_object_get(pg->doc, "fix");
    put(out, "<section id=\"diff\">\n<h2>Proposed change</h2>\n");
    if (!json_is_object(fix)) {
        put(out, "<p class=\"na\">No fix was attempted: the investigation ran without "
                 "<code>--fix</code>.</p>\n</section>\n");
        return;
    }
    const char *diff = jstr(fix, "diff"), *kind = jstr(fix, "kind"), *why = jstr(fix, "why_none");
    if (diff && *diff) {
        put(out, "<p>");
        if (kind) {
            put(out, "A fix of kind <code>");
            esc(out, kind);
            put(out, "</code>");
        } else {
            put(out, "A fix");
        }
        afd_buf_printf(out, "; verified: %s; applied: %s. Nothing is merged automatically: this is a diff "
                            "for a person to review.</p>\n",
                       yes_no(jbool(fix, "verified")), yes_no(jbool(fix, "applied")));
        put_diff(out, diff);
    } else {
        put(out, "<p class=\"why-none\">No fix is proposed");
        if (why && *why) {
            put(out, ": ");
            esc(out, why);
        }
        put(out, ".</p>\n");
    }
    put(out, "</section>\n");
}

/* ---- 8. replay, 9. environment ---- */

/* The replay command, quoted for a POSIX shell (shell.h) and then escaped for HTML: what a reader
 * copies from the page is exactly what the terminal summary prints. */
static void replay_command(afd_buf *out, const char *cls, const char *token, const char *nodeid)
{
    afd_buf cmd;
    afd_buf_init(&cmd);
    afd_shell_replay_command(&cmd, token, nodeid);
    afd_buf_printf(out, "<pre class=\"%s\">", cls);
    esc_n(out, cmd.data ? (const char *)cmd.data : "", cmd.len);
    put(out, "</pre>\n");
    if (cmd.err)
        out->err = cmd.err;
    afd_buf_finish(&cmd);
}

static void sec_replay(page *pg)
{
    afd_buf *out = pg->out;
    const char *token = jstr(pg->doc, "token"), *ptoken = jstr(pg->doc, "passing_token");
    const char *nodeid = jstr(pg->doc, "nodeid");
    put(out, "<section id=\"replay\">\n<h2>Reproduce</h2>\n");
    if (token && *token) {
        put(out, "<p>Replays the failing schedule, deterministically:</p>\n");
        replay_command(out, "replay", token, nodeid);
    } else {
        put(out, "<p class=\"na\">No failing schedule was recorded, so there is nothing to replay.</p>\n");
    }
    if (ptoken && *ptoken) {
        put(out, "<p>The nearest passing schedule:</p>\n");
        replay_command(out, "replay passing", ptoken, nodeid);
    }
    put(out, "</section>\n");
}

static void env_row(afd_buf *out, const char *name, const char *value)
{
    afd_buf_printf(out, "<dt>%s</dt><dd>", name);
    esc_or_na(out, value);
    put(out, "</dd>\n");
}

static void sec_environment(page *pg, int64_t id)
{
    afd_buf *out = pg->out;
    const json_t *env = json_object_get(pg->doc, "environment");
    const afd_trace *t = pg->in->failing ? pg->in->failing : pg->in->passing;
    const char *python = jstr(env, "python"), *seed = jstr(env, "hash_seed");
    /* The traces carry the interpreter and the seed too: they fill in for an older document. */
    if (!python && t && *t->python)
        python = t->python;
    if (!seed && t && *t->hash_seed)
        seed = t->hash_seed;
    put(out, "<section id=\"environment\">\n<h2>Environment</h2>\n<dl class=\"env\">\n");
    env_row(out, "Python", python);
    env_row(out, "Platform", jstr(env, "platform"));
    env_row(out, "Hash seed", seed);
    put(out, "<dt>Token</dt><dd><code>");
    esc_or_na(out, jstr(pg->doc, "token"));
    put(out, "</code></dd>\n");
    double runs, secs;
    put(out, "<dt>Investigation</dt><dd>");
    if (jnum(pg->doc, "runs", &runs))
        afd_buf_printf(out, "%.0f runs", runs);
    else
        na(out);
    if (jnum(pg->doc, "seconds", &secs))
        afd_buf_printf(out, " in %.1f s", secs);
    put(out, "</dd>\n");
    if (id > 0)
        afd_buf_printf(out, "<dt>Incident</dt><dd>#%" PRId64 "</dd>\n", id);
    put(out, "</dl>\n</section>\n");
}

/* The incident's number: the store's, else the document's own. */
static int64_t incident_id(const afd_report_in *in, const json_t *doc)
{
    if (in->id > 0)
        return in->id;
    const json_t *n = json_object_get(doc, "incident");
    return json_is_integer(n) ? (int64_t)json_integer_value(n) : 0;
}

static int page_prepare(page *pg)
{
    int rc = view_build(&pg->run[RUN_PASSING], pg->in->passing);
    if (rc == 0)
        rc = view_build(&pg->run[RUN_FAILING], pg->in->failing);
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
    if (!in || !out) {
        set_err(err, errlen, "no report input");
        return AFD_EINVAL;
    }
    reset(out);
    json_t *doc;
    int rc = parse_doc(in, &doc, err, errlen);
    if (rc)
        return rc;
    page *pg = calloc(1, sizeof *pg);
    if (!pg) {
        json_decref(doc);
        set_err(err, errlen, "out of memory");
        return AFD_ENOMEM;
    }
    pg->out = out;
    pg->doc = doc;
    pg->in = in;
    rc = page_prepare(pg);
    if (rc == 0) {
        int64_t id = incident_id(in, doc);
        head(pg, id);
        sec_verdict(pg, id);
        sec_timeline(pg);
        sec_evidence(pg);
        sec_window(pg);
        sec_gate(pg);
        sec_tiers(pg);
        sec_diff(pg);
        sec_replay(pg);
        sec_environment(pg, id);
        put(out, "<footer>Written by affidavit. This page is self-contained: it loads nothing.</footer>\n"
                 "</main>\n</body>\n</html>\n");
        rc = out->err;
    }
    view_free(&pg->run[RUN_PASSING]);
    view_free(&pg->run[RUN_FAILING]);
    free(pg);
    json_decref(doc);
    if (rc)
        set_err(err, errlen, "cannot render the HTML report: %s", afd_strerror(rc));
    return rc;
}

/* ---- SARIF 2.1.0 ---- */

/* A JSON string from bytes that may not be UTF-8 (trace strings): bad bytes become U+FFFD. */
static json_t *jtext(const char *s)
{
    if (!s)
        s = "";
    json_t *j = json_string(s);
    if (j)
        return j;
    size_t n = strlen(s);
    afd_buf b;
    afd_buf_init(&b);
    for (size_t i = 0; i < n;) {
        size_t k = utf8_seq((const unsigned char *)s + i, n - i);
        if (k) {
            afd_buf_put(&b, s + i, k);
            i += k;
        } else {
            put(&b, REPLACEMENT);
            i++;
        }
    }
    j = b.err ? NULL : json_stringn(b.data ? (const char *)b.data : "", b.len);
    afd_buf_finish(&b);
    return j;
}

/* Sets o[key] = v; a failure (v NULL after an allocation failed) is remembered in *bad. */
static void jset(int *bad, json_t *o, const char *key, json_t *v)
{
    if (!o || !v || json_object_set_new(o, key, v) != 0)
        *bad = 1;
}

static void jpush(int *bad, json_t *a, json_t *v)
{
    if (!a || !v || json_array_append_new(a, v) != 0)
        *bad = 1;
}

static json_t *jmessage(int *bad, const char *text)
{
    json_t *m = json_object();
    jset(bad, m, "text", jtext(text));
    return m;
}

typedef struct rule_info {
    const char *kind, *text;
} rule_info;

static const rule_info RULES[] = {
    {"lost_update", "Lost update: a read and a write of shared state span an await, and another task's "
                    "write in between is lost"},
    {"check_then_act", "Check-then-act: a task checks shared state, awaits, and acts on the check after "
                       "another task has changed what it checked"},
    {"order_violation", "Order violation: a task reads shared state before the task that writes it has run"},
    {"deadlock", "Deadlock: every task waits for something no running task will provide"},
    {"lock_order", "Lock-order cycle: tasks acquire locks in opposite orders (a potential deadlock)"},
    {"starvation", "Starvation: a blocking call inside a coroutine stalls the event loop"},
    {"race", "Race: conflicting accesses to shared state that happens-before does not order"},
};

static json_t *sarif_rule(int *bad, const char *id, const char *kind)
{
    const char *text = "Flaky asyncio test: the outcome depends on how the tasks interleave";
    for (size_t i = 0; i < sizeof RULES / sizeof RULES[0]; i++)
        if (strcmp(RULES[i].kind, kind) == 0)
            text = RULES[i].text;
    json_t *r = json_object();
    jset(bad, r, "id", jtext(id));
    jset(bad, r, "shortDescription", jmessage(bad, text));
    json_t *cfg = json_object();
    jset(bad, cfg, "level", json_string(strcmp(kind, "race") == 0 ? "warning" : "error"));
    jset(bad, r, "defaultConfiguration", cfg);
    return r;
}

/* The rule's index in driver.rules, adding it when it is new. */
static size_t sarif_rule_index(int *bad, json_t *rules, const char *kind)
{
    char id[160];
    snprintf(id, sizeof id, "affidavit/%s", kind);
    for (size_t i = 0; i < json_array_size(rules); i++) {
        const char *have = json_string_value(json_object_get(json_array_get(rules, i), "id"));
        if (have && strcmp(have, id) == 0)
            return i;
    }
    jpush(bad, rules, sarif_rule(bad, id, kind));
    return json_array_size(rules) ? json_array_size(rules) - 1 : 0;
}

/* A relative path as a URI reference: characters a URI cannot hold are percent-encoded, so an
 * ordinary path comes out as given. */
static json_t *juri(const char *path)
{
    static const char keep[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                               "-._~/!$&'()*+,;=:@";
    afd_buf b;
    afd_buf_init(&b);
    for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
        if (strchr(keep, *p))
            afd_buf_put(&b, p, 1);
        else
            afd_buf_printf(&b, "%%%02X", *p);
    }
    json_t *j = b.err ? NULL : json_stringn(b.data ? (const char *)b.data : "", b.len);
    afd_buf_finish(&b);
    return j;
}

static json_t *sarif_location(int *bad, const char *file, int64_t line)
{
    json_t *loc = json_object(), *phys = json_object(), *art = json_object();
    jset(bad, art, "uri", juri(file));
    jset(bad, phys, "artifactLocation", art);
    if (line > 0) {
        json_t *region = json_object();
        jset(bad, region, "startLine", json_integer((json_int_t)line));
        jset(bad, phys, "region", region);
    }
    jset(bad, loc, "physicalLocation", phys);
    return loc;
}

/* The located operations, once per (file, line); without any, the test's own file. */
static json_t *sarif_locations(int *bad, const json_t *ops, const char *nodeid)
{
    json_t *locs = json_array();
    const char *seen_file[MAX_LOCATIONS];
    int64_t seen_line[MAX_LOCATIONS];
    size_t n = 0, i;
    json_t *o;
    json_array_foreach(ops, i, o) {
        const char *file = jstr(o, "file");
        const json_t *line = json_object_get(o, "line");
        if (!file || !*file || !json_is_integer(line) || json_integer_value(line) < 1 || n == MAX_LOCATIONS)
            continue;
        size_t k = 0;
        while (k < n && !(seen_line[k] == json_integer_value(line) && strcmp(seen_file[k], file) == 0))
            k++;
        if (k < n)
            continue;
        seen_file[n] = file;
        seen_line[n++] = json_integer_value(line);
        jpush(bad, locs, sarif_location(bad, file, json_integer_value(line)));
    }
    if (!n && nodeid && *nodeid) {
        const char *sep = strstr(nodeid, "::");
        size_t len = sep ? (size_t)(sep - nodeid) : strlen(nodeid);
        char *file = strndup(nodeid, len);
        if (!file)
            *bad = 1;
        else
            jpush(bad, locs, sarif_location(bad, file, 0));
        free(file);
    }
    return locs;
}

/* "deposit#1 read (examples/x.py:15)" for a race's message. */
static void put_op_text(afd_buf *b, const json_t *o)
{
    const char *task = jstr(o, "task"), *what = jstr(o, "operation"), *file = jstr(o, "file");
    const json_t *line = json_object_get(o, "line");
    afd_buf_printf(b, "%s", task ? task : "a task");
    if (what || jstr(o, "access"))
        afd_buf_printf(b, " %s", what ? what : jstr(o, "access"));
    if (file && json_is_integer(line))
        afd_buf_printf(b, " (%s:%" JSON_INTEGER_FORMAT ")", file, json_integer_value(line));
    else if (file)
        afd_buf_printf(b, " (%s)", file);
}

static json_t *sarif_result(int *bad, json_t *rules, const char *kind, const char *level, const char *text,
                            const json_t *ops, const json_t *doc)
{
    json_t *r = json_object();
    size_t index = sarif_rule_index(bad, rules, kind);
    char id[160];
    snprintf(id, sizeof id, "affidavit/%s", kind);
    jset(bad, r, "ruleId", jtext(id));
    jset(bad, r, "ruleIndex", json_integer((json_int_t)index));
    jset(bad, r, "level", json_string(level));
    jset(bad, r, "message", jmessage(bad, text));
    json_t *locs = sarif_locations(bad, ops, jstr(doc, "nodeid"));
    if (json_array_size(locs))
        jset(bad, r, "locations", locs);
    else
        json_decref(locs);
    json_t *props = json_object();
    if (jstr(doc, "nodeid"))
        jset(bad, props, "nodeid", jtext(jstr(doc, "nodeid")));
    if (jstr(doc, "token"))
        jset(bad, props, "token", jtext(jstr(doc, "token")));
    jset(bad, r, "properties", props);
    return r;
}

static void sarif_cause(int *bad, json_t *rules, json_t *results, const json_t *doc)
{
    const json_t *cause = json_object_get(doc, "cause");
    if (!json_is_object(cause))
        return;
    const char *kind = jstr(cause, "kind"), *summary = jstr(cause, "summary"), *nodeid = jstr(doc, "nodeid");
    afd_buf text;
    afd_buf_init(&text);
    if (!summary || !*summary)
        summary = "the failure depends on how the tasks interleave";
    afd_buf_printf(&text, "%s", summary);
    if (nodeid)
        afd_buf_printf(&text, " (test %s", nodeid);
    if (jstr(doc, "token")) {
        afd_buf_printf(&text, "%sreplay with: ", nodeid ? "; " : " (");
        afd_shell_replay_command(&text, jstr(doc, "token"), nodeid);
    }
    if (nodeid || jstr(doc, "token"))
        afd_buf_printf(&text, ")");
    if (text.err)
        *bad = 1;
    else
        jpush(bad, results, sarif_result(bad, rules, kind && *kind ? kind : "flaky", "error",
                                         (const char *)text.data, json_object_get(cause, "operations"), doc));
    afd_buf_finish(&text);
}

static void sarif_races(int *bad, json_t *rules, json_t *results, const json_t *doc)
{
    size_t i, j;
    json_t *race, *o;
    const char *nodeid = jstr(doc, "nodeid");
    json_array_foreach(json_object_get(doc, "races"), i, race) {
        const json_t *ops = json_object_get(race, "operations");
        const char *res = jstr(race, "resource");
        afd_buf text;
        afd_buf_init(&text);
        afd_buf_printf(&text, "Race on %s: ", res ? res : "shared state");
        if (!json_array_size(ops))
            afd_buf_printf(&text, "conflicting accesses");
        json_array_foreach(ops, j, o) {
            if (j)
                afd_buf_printf(&text, j + 1 == json_array_size(ops) ? " and " : ", ");
            put_op_text(&text, o);
        }
        afd_buf_printf(&text, "%s not ordered by happens-before", json_array_size(ops) == 1 ? " is" : " are");
        if (nodeid)
            afd_buf_printf(&text, " (test %s)", nodeid);
        if (text.err)
            *bad = 1;
        else
            jpush(bad, results,
                  sarif_result(bad, rules, "race", "warning", (const char *)text.data, ops, doc));
        afd_buf_finish(&text);
    }
}

/* What the run was about, so a log without results (a deterministic failure) still names its test. */
static json_t *sarif_run_properties(int *bad, const json_t *doc, int64_t id)
{
    static const char *const keys[] = {"nodeid", "verdict", "token", "failure"};
    json_t *p = json_object();
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        /* The document's own string, shared: a copy through a C string would end a failure
         * message at its first NUL byte. */
        json_t *v = json_object_get(doc, keys[i]);
        if (json_is_string(v))
            jset(bad, p, keys[i], json_incref(v));
    }
    if (id > 0)
        jset(bad, p, "incident", json_integer((json_int_t)id));
    return p;
}

int afd_report_sarif(const afd_report_in *in, afd_buf *out, char *err, size_t errlen)
{
    if (!in || !out) {
        set_err(err, errlen, "no report input");
        return AFD_EINVAL;
    }
    reset(out);
    json_t *doc;
    int rc = parse_doc(in, &doc, err, errlen);
    if (rc)
        return rc;
    int bad = 0;
    json_t *root = json_object(), *run = json_object(), *runs = json_array(), *tool = json_object();
    json_t *driver = json_object(), *rules = json_array(), *results = json_array();
    jset(&bad, root, "$schema", json_string("https://json.schemastore.org/sarif-2.1.0.json"));
    jset(&bad, root, "version", json_string("2.1.0"));
    sarif_cause(&bad, rules, results, doc);
    sarif_races(&bad, rules, results, doc);
    jset(&bad, driver, "name", json_string("affidavit"));
    jset(&bad, driver, "rules", rules);
    jset(&bad, tool, "driver", driver);
    jset(&bad, run, "tool", tool);
    jset(&bad, run, "results", results);
    jset(&bad, run, "properties", sarif_run_properties(&bad, doc, incident_id(in, doc)));
    jpush(&bad, runs, run);
    jset(&bad, root, "runs", runs);
    char *text = bad ? NULL : json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (text) {
        put(out, text);
        put(out, "\n");
    }
    rc = !text || out->err ? AFD_ENOMEM : 0;
    free(text);
    json_decref(root);
    json_decref(doc);
    if (rc)
        set_err(err, errlen, "cannot render the SARIF log: %s", afd_strerror(rc));
    return rc;
}

/* ---- Chrome trace events ---- */

/* Appends one event as compact JSON (and takes the object); 0 or AFD_ENOMEM. */
static int emit(afd_buf *out, json_t *ev, int *first)
{
    char *s = ev ? json_dumps(ev, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15)) : NULL;
    json_decref(ev);
    if (!s)
        return AFD_ENOMEM;
    put(out, *first ? "\n" : ",\n");
    put(out, s);
    free(s);
    *first = 0;
    return out->err;
}

static json_t *thread_name(int *bad, uint32_t tid, const char *name)
{
    json_t *ev = json_object(), *args = json_object();
    jset(bad, ev, "ph", json_string("M"));
    jset(bad, ev, "name", json_string("thread_name"));
    jset(bad, ev, "pid", json_integer(1));
    jset(bad, ev, "tid", json_integer(tid));
    jset(bad, args, "name", jtext(name));
    jset(bad, ev, "args", args);
    return ev;
}

static json_t *step_event(int *bad, const afd_trace *t, const afd_event *e, const char *label)
{
    afd_buf name;
    afd_buf_init(&name);
    afd_buf_printf(&name, "%s #%" PRIu32, label, e->a);
    json_t *ev = json_object(), *args = json_object();
    jset(bad, ev, "ph", json_string("X"));
    jset(bad, ev, "name", name.err ? NULL : jtext((const char *)name.data));
    afd_buf_finish(&name);
    jset(bad, ev, "pid", json_integer(1));
    jset(bad, ev, "tid", json_integer(e->task));
    jset(bad, ev, "ts", json_real((double)e->vtime / 1000.0));
    jset(bad, ev, "dur", json_real((double)e->cost / 1000.0));
    int sited = e->b != AFD_NOSTR && e->b < t->n_strings;
    jset(bad, args, "suspended_at", sited ? jtext(afd_trace_string(t, e->b)) : json_null());
    jset(bad, ev, "args", args);
    return ev;
}

static int chrome_events(afd_buf *out, const run_view *v, const char *which)
{
    const afd_trace *t = v->t;
    int first = 1, bad = 0, rc = 0;
    char pname[64];
    snprintf(pname, sizeof pname, "affidavit: the %s run", which);
    json_t *p = json_object(), *args = json_object();
    jset(&bad, p, "ph", json_string("M"));
    jset(&bad, p, "name", json_string("process_name"));
    jset(&bad, p, "pid", json_integer(1));
    jset(&bad, args, "name", json_string(pname));
    jset(&bad, p, "args", args);
    if (bad) {
        json_decref(p);
        return AFD_ENOMEM;
    }
    rc = emit(out, p, &first);
    for (size_t i = 0; rc == 0 && i < v->n_tasks; i++) {
        json_t *ev = thread_name(&bad, v->tasks[i].id, task_name(&v->tasks[i]));
        if (bad) {
            json_decref(ev);
            return AFD_ENOMEM;
        }
        rc = emit(out, ev, &first);
    }
    for (uint32_t i = 0; rc == 0 && i < t->n_events; i++) {
        const afd_event *e = &t->events[i];
        if (e->kind != AFD_EV_STEP)
            continue;
        const task_ref *r = view_task(v, e->task);
        json_t *ev = step_event(&bad, t, e, r ? task_name(r) : "task");
        if (bad) {
            json_decref(ev);
            return AFD_ENOMEM;
        }
        rc = emit(out, ev, &first);
    }
    return rc;
}

int afd_report_chrome_trace(const afd_report_in *in, const char *which, afd_buf *out, char *err,
                            size_t errlen)
{
    if (!in || !out) {
        set_err(err, errlen, "no report input");
        return AFD_EINVAL;
    }
    reset(out);
    const afd_trace *t;
    if (!which || strcmp(which, "failing") == 0) {
        which = "failing";
        t = in->failing;
    } else if (strcmp(which, "passing") == 0) {
        t = in->passing;
    } else {
        set_err(err, errlen, "unknown run '%.40s': choose failing or passing", which);
        return AFD_EINVAL;
    }
    if (!t) {
        /* Not found rather than invalid: an incident stored without this trace (a test that never
         * failed, an abstained investigation) is a well-formed incident that lacks the thing asked
         * for, so the dashboard answers 404 and `report` exits as for a missing incident. */
        set_err(err, errlen, "the %s run's trace is not available (the incident was stored without one)",
                which);
        return AFD_ENOTFOUND;
    }
    run_view v;
    int rc = view_build(&v, t);
    if (rc == 0) {
        put(out, "{\"traceEvents\": [");
        rc = chrome_events(out, &v, which);
        put(out, "\n], \"displayTimeUnit\": \"ms\"}\n");
        if (rc == 0)
            rc = out->err;
    }
    view_free(&v);
    if (rc) {
        reset(out);
        set_err(err, errlen, "cannot render the Chrome trace: %s", afd_strerror(rc));
    }
    return rc;
}
