/* report.c -- what every report writer shares: escaping for HTML, reading the investigation's
 * document, and the tasks of a run as the timeline and the Chrome trace see them. The writers
 * themselves are report_html.c and report_fix.c (the HTML page), report_json.c (SARIF 2.1.0 and
 * the Chrome trace-event file); see report.h.
 *
 * Every renderer reads the investigation's document through the lenient incident reader
 * (incident.h), which treats every key as optional and of any type: a report of a half-finished
 * investigation (no fix, no window, no traces) is still a report, with a short note where the
 * missing part would be. Every string that
 * reaches the HTML goes through report_esc(), in text, attributes, SVG <title> and <text> alike, so one
 * function decides what is inert; numbers are the only thing printed around it. The JSON outputs
 * are built with jansson, which escapes for JSON; strings from traces are made valid UTF-8 first
 * because jansson refuses anything else.
 *
 * Workload: one incident at a time, on demand. A trace may hold hundreds of thousands of steps, so
 * the page draws at most MAX_RECTS step bars per run (the steps of the cause always), says how
 * many it left out, and stays under about a megabyte. The Chrome trace is streamed one event at a
 * time, so its memory does not grow with a jansson tree of the whole run. */
#include "report_int.h"
#include "text.h"
#include "afd.h"
#include "shell.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- small helpers ---- */

void report_set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* The caller's buffer is reused, not freed: it may be the caller's long-lived output buffer. */
void report_reset(afd_buf *out)
{
    out->len = 0;
    out->err = 0;
    if (out->data)
        out->data[0] = 0;
}

void report_put(afd_buf *out, const char *s)
{
    afd_buf_put(out, s, strlen(s));
}

/* The one HTML escaper (text.h): the five markup characters as entities, controls as their
 * pictures and bytes that are not UTF-8 (trace strings are bytes) as U+FFFD, so the page is always
 * text. */
void report_esc_n(afd_buf *out, const char *s, size_t n)
{
    afd_html_strn(out, s, n);
}

void report_esc(afd_buf *out, const char *s)
{
    if (s)
        report_esc_n(out, s, strlen(s));
}

/* At most max characters of s, cut at a character boundary and marked with an ellipsis. */
void report_esc_cut(afd_buf *out, const char *s, size_t max)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s), i = 0, chars = 0;
    while (i < n && chars < max - 1) {
        size_t k = afd_utf8_len(p + i, n - i);
        i += k ? k : 1;
        chars++;
    }
    if (i >= n || (chars == max - 1 && i + afd_utf8_len(p + i, n - i) >= n)) {
        report_esc(out, s);
        return;
    }
    report_esc_n(out, s, i);
    report_put(out, "&hellip;");
}

void report_na(afd_buf *out)
{
    report_put(out, "<span class=\"na\">not available</span>");
}

void report_dash(afd_buf *out)
{
    report_put(out, "<span class=\"na\">&mdash;</span>");
}

/* s escaped, or the "not available" note. */
void report_esc_or_na(afd_buf *out, const char *s)
{
    if (s && *s)
        report_esc(out, s);
    else
        report_na(out);
}

/* ---- reading the document ---- */

int report_begin(const afd_report_in *in, afd_buf *out, afd_incident *inc, char *err, size_t errlen)
{
    afd_incident_init(inc);
    if (!in || !out) {
        report_set_err(err, errlen, "no report input");
        return AFD_EINVAL;
    }
    report_reset(out);
    if (!in->json) {
        report_set_err(err, errlen, "no investigation document to render");
        return AFD_EINVAL;
    }
    char why[300] = "";
    int rc = afd_incident_from_json_lenient(in->json, strlen(in->json), inc, NULL, why, sizeof why);
    if (rc)
        report_set_err(err, errlen, "cannot read the investigation's document: %s", why);
    return rc;
}

void report_put_count(afd_buf *out, uint64_t n)
{
    if (n == AFD_INCIDENT_UNSET)
        report_dash(out);
    else
        afd_buf_printf(out, "%" PRIu64, n);
}

void report_put_text(afd_buf *out, const char *s)
{
    if (s && *s)
        report_esc(out, s);
    else
        report_dash(out);
}

/* A fraction as a percentage with three significant digits: 0.66 -> "66", 0.5215 -> "52.2". */
void report_put_pct(afd_buf *out, double frac)
{
    double v = frac * 100.0;
    afd_buf_printf(out, "%.3g", fabs(v) < 1e-3 ? 0.0 : v); /* never "1e-05" */
}

/* Virtual nanoseconds as milliseconds with three decimals, rounded to the microsecond. */
void report_put_ms(afd_buf *out, uint64_t ns)
{
    uint64_t us = ns / 1000 + (ns % 1000 >= 500);
    afd_buf_printf(out, "%" PRIu64 ".%03" PRIu64 " ms", us / 1000, us % 1000);
}

/* A round step (1, 2 or 5 times a power of ten) that cuts range into about target pieces. */
double report_nice_step(double range, int target)
{
    double raw = range / target;
    if (!(raw > 0) || !isfinite(raw))
        return 1;
    double mag = pow(10, floor(log10(raw))), f = raw / mag;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

/* Decimals that print every multiple of step exactly. */
int report_step_decimals(double step)
{
    if (step >= 1)
        return 0;
    int d = (int)ceil(-log10(step) - 1e-9);
    return d < 0 ? 0 : d > 9 ? 9 : d;
}

/* SVG shapes; cls is always a literal of ours. A rect is left open for a <title> or a "/>". */
void report_svg_line(afd_buf *out, const char *cls, double x1, double y1, double x2, double y2)
{
    afd_buf_printf(out, "<line class=\"%s\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", cls, x1, y1,
                   x2, y2);
}

void report_svg_rect(afd_buf *out, const char *cls, double x, double y, double w, double h)
{
    afd_buf_printf(out, "<rect class=\"%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"", cls, x, y,
                   w, h);
}

/* ---- the runs as the timeline sees them ---- */

const char *report_task_name(const task_ref *r)
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

uint64_t report_step_end(const afd_event *ev)
{
    return ev->cost > UINT64_MAX - ev->vtime ? UINT64_MAX : ev->vtime + ev->cost;
}

/* Collects the tasks of a trace from its TASK events and from the STEP events of tasks that were
 * never announced (their TASK event was dropped), one entry per id. */
int report_view_build(run_view *v, const afd_trace *t)
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
            if (report_step_end(ev) > v->end)
                v->end = report_step_end(ev);
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

void report_view_free(run_view *v)
{
    free(v->tasks);
    v->tasks = NULL;
}

task_ref *report_view_task(const run_view *v, uint32_t id)
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

/* The incident's number: the store's, else the document's own. */
int64_t report_incident_id(const afd_report_in *in, const afd_incident *inc)
{
    return in->id > 0 ? in->id : inc->id;
}

const char *report_cause_kind(const afd_incident *inc)
{
    const char *kind = afd_cause_kind_name(inc->cause.kind);
    return kind ? kind : inc->cause_kind_text;
}
