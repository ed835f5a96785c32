/* report_json.c -- the incident as SARIF 2.1.0 and a run as a Chrome trace-event file (Perfetto).
 *
 * The SARIF log is written from the incident (read by report_begin), the Chrome trace from the
 * run's trace alone. Both are built with jansson, which escapes for JSON; strings from traces are made valid
 * UTF-8 first because jansson refuses anything else. The Chrome trace is streamed one event at a time, so its
 * memory does not grow with a jansson tree of the whole run. */
#include "report_int.h"
#include "text.h"
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

/* ---- SARIF 2.1.0 ---- */

/* A JSON string from bytes that may not be UTF-8 (trace strings): bad bytes become U+FFFD. */
static json_t *jtext(const char *s)
{
    if (!s)
        s = "";
    json_t *j = json_string(s);
    if (j)
        return j;
    afd_buf b;
    afd_buf_init(&b);
    afd_utf8_clean(&b, s, strlen(s), AFD_UTF8_REPLACEMENT, 0);
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
    {"cancelled_handoff", "Cancelled hand-off: a task handed a result or a resource is cancelled before it "
                          "resumes, and what it was handed is lost"},
    {"lost_wakeup", "Lost wake-up: a task woken for a resource never takes it, and the others wait forever"},
    {"cancel_swallowed", "Cancel swallowed: a cancellation is caught or lost and never takes effect"},
    {"cancel_ordering",
     "Cancel ordering: a task goes on before the task it cancelled has finished its cleanup"},
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

/* Whether the operation names its line (a lenient read may leave it unset). */
static int op_has_line(const afd_cause_op *o)
{
    return o->line != AFD_INCIDENT_UNSET32;
}

/* The located operations, once per (file, line); without any, the test's own file. */
static json_t *sarif_locations(int *bad, const afd_cause_op *ops, size_t n_ops, const char *nodeid)
{
    json_t *locs = json_array();
    const char *seen_file[MAX_LOCATIONS];
    int64_t seen_line[MAX_LOCATIONS];
    size_t n = 0;
    for (size_t i = 0; i < n_ops; i++) {
        const char *file = ops[i].file;
        int64_t line = ops[i].line;
        if (!file || !*file || !op_has_line(&ops[i]) || line < 1 || n == MAX_LOCATIONS)
            continue;
        size_t k = 0;
        while (k < n && !(seen_line[k] == line && strcmp(seen_file[k], file) == 0))
            k++;
        if (k < n)
            continue;
        seen_file[n] = file;
        seen_line[n++] = line;
        jpush(bad, locs, sarif_location(bad, file, line));
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
static void put_op_text(afd_buf *b, const afd_cause_op *o)
{
    const char *task = o->task, *what = o->operation ? o->operation : afd_cause_access_name(o->access),
               *file = o->file;
    afd_buf_printf(b, "%s", task ? task : "a task");
    if (what)
        afd_buf_printf(b, " %s", what);
    if (file && op_has_line(o))
        afd_buf_printf(b, " (%s:%" PRIu32 ")", file, o->line);
    else if (file)
        afd_buf_printf(b, " (%s)", file);
}

static json_t *sarif_result(int *bad, json_t *rules, const char *kind, const char *level, const char *text,
                            const afd_cause_op *ops, size_t n_ops, const afd_incident *inc)
{
    json_t *r = json_object();
    size_t index = sarif_rule_index(bad, rules, kind);
    char id[160];
    snprintf(id, sizeof id, "affidavit/%s", kind);
    jset(bad, r, "ruleId", jtext(id));
    jset(bad, r, "ruleIndex", json_integer((json_int_t)index));
    jset(bad, r, "level", json_string(level));
    jset(bad, r, "message", jmessage(bad, text));
    json_t *locs = sarif_locations(bad, ops, n_ops, inc->nodeid);
    if (json_array_size(locs))
        jset(bad, r, "locations", locs);
    else
        json_decref(locs);
    json_t *props = json_object();
    if (inc->nodeid)
        jset(bad, props, "nodeid", jtext(inc->nodeid));
    if (inc->token)
        jset(bad, props, "token", jtext(inc->token));
    jset(bad, r, "properties", props);
    return r;
}

static void sarif_cause(int *bad, json_t *rules, json_t *results, const afd_incident *inc)
{
    if (!inc->has_cause)
        return;
    const char *kind = report_cause_kind(inc), *summary = inc->cause.summary, *nodeid = inc->nodeid,
               *token = inc->token;
    afd_buf text;
    afd_buf_init(&text);
    if (!summary || !*summary)
        summary = "the failure depends on how the tasks interleave";
    afd_buf_printf(&text, "%s", summary);
    if (nodeid)
        afd_buf_printf(&text, " (test %s", nodeid);
    if (token) {
        afd_buf_printf(&text, "%sreplay with: ", nodeid ? "; " : " (");
        afd_shell_replay_command(&text, token, nodeid);
    }
    if (nodeid || token)
        afd_buf_printf(&text, ")");
    if (text.err)
        *bad = 1;
    else
        jpush(bad, results,
              sarif_result(bad, rules, kind && *kind ? kind : "flaky", "error", (const char *)text.data,
                           inc->cause.ops, inc->cause.n_ops, inc));
    afd_buf_finish(&text);
}

static void sarif_races(int *bad, json_t *rules, json_t *results, const afd_incident *inc)
{
    const char *nodeid = inc->nodeid;
    for (size_t i = 0; i < inc->cause.n_races; i++) {
        const afd_cause_race *race = &inc->cause.races[i];
        size_t n = inc->race_ops ? inc->race_ops[i] : 2;
        const char *res = race->resource;
        afd_buf text;
        afd_buf_init(&text);
        afd_buf_printf(&text, "Race on %s: ", res ? res : "shared state");
        if (!n)
            afd_buf_printf(&text, "conflicting accesses");
        for (size_t j = 0; j < n; j++) {
            if (j)
                afd_buf_printf(&text, j + 1 == n ? " and " : ", ");
            put_op_text(&text, &race->ops[j]);
        }
        afd_buf_printf(&text, "%s not ordered by happens-before", n == 1 ? " is" : " are");
        if (nodeid)
            afd_buf_printf(&text, " (test %s)", nodeid);
        if (text.err)
            *bad = 1;
        else
            jpush(bad, results,
                  sarif_result(bad, rules, "race", "warning", (const char *)text.data, race->ops, n, inc));
        afd_buf_finish(&text);
    }
}

/* What the run was about, so a log without results (a deterministic failure) still names its test. */
static json_t *sarif_run_properties(int *bad, const afd_incident *inc, int64_t id)
{
    json_t *p = json_object();
    const char *verdict = inc->verdict ? afd_verdict_name(inc->verdict) : inc->verdict_text;
    if (inc->nodeid)
        jset(bad, p, "nodeid", jtext(inc->nodeid));
    if (verdict)
        jset(bad, p, "verdict", jtext(verdict));
    if (inc->token)
        jset(bad, p, "token", jtext(inc->token));
    /* With its length: a failure message may hold NUL bytes, which a C string would end at. */
    if (inc->failure)
        jset(bad, p, "failure", json_stringn(inc->failure, inc->failure_len));
    if (id > 0)
        jset(bad, p, "incident", json_integer((json_int_t)id));
    return p;
}

int afd_report_sarif(const afd_report_in *in, afd_buf *out, char *err, size_t errlen)
{
    afd_incident inc;
    int rc = report_begin(in, out, &inc, err, errlen);
    if (rc) {
        afd_incident_finish(&inc);
        return rc;
    }
    int bad = 0;
    json_t *root = json_object(), *run = json_object(), *runs = json_array(), *tool = json_object();
    json_t *driver = json_object(), *rules = json_array(), *results = json_array();
    jset(&bad, root, "$schema", json_string("https://json.schemastore.org/sarif-2.1.0.json"));
    jset(&bad, root, "version", json_string("2.1.0"));
    sarif_cause(&bad, rules, results, &inc);
    sarif_races(&bad, rules, results, &inc);
    jset(&bad, driver, "name", json_string("affidavit"));
    jset(&bad, driver, "rules", rules);
    jset(&bad, tool, "driver", driver);
    jset(&bad, run, "tool", tool);
    jset(&bad, run, "results", results);
    jset(&bad, run, "properties", sarif_run_properties(&bad, &inc, report_incident_id(in, &inc)));
    jpush(&bad, runs, run);
    jset(&bad, root, "runs", runs);
    char *text = bad ? NULL : json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (text) {
        report_put(out, text);
        report_put(out, "\n");
    }
    rc = !text || out->err ? AFD_ENOMEM : 0;
    free(text);
    json_decref(root);
    afd_incident_finish(&inc);
    if (rc)
        report_set_err(err, errlen, "cannot render the SARIF log: %s", afd_strerror(rc));
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
    report_put(out, *first ? "\n" : ",\n");
    report_put(out, s);
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
        json_t *ev = thread_name(&bad, v->tasks[i].id, report_task_name(&v->tasks[i]));
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
        const task_ref *r = report_view_task(v, e->task);
        json_t *ev = step_event(&bad, t, e, r ? report_task_name(r) : "task");
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
        report_set_err(err, errlen, "no report input");
        return AFD_EINVAL;
    }
    report_reset(out);
    const afd_trace *t;
    if (!which || strcmp(which, "failing") == 0) {
        which = "failing";
        t = in->failing;
    } else if (strcmp(which, "passing") == 0) {
        t = in->passing;
    } else {
        report_set_err(err, errlen, "unknown run '%.40s': choose failing or passing", which);
        return AFD_EINVAL;
    }
    if (!t) {
        /* Not found rather than invalid: an incident stored without this trace (a test that never
         * failed, an abstained investigation) is a well-formed incident that lacks the thing asked
         * for, so the dashboard answers 404 and `report` exits as for a missing incident. */
        report_set_err(err, errlen,
                       "the %s run's trace is not available (the incident was stored without one)", which);
        return AFD_ENOTFOUND;
    }
    run_view v;
    int rc = report_view_build(&v, t);
    if (rc == 0) {
        report_put(out, "{\"traceEvents\": [");
        rc = chrome_events(out, &v, which);
        report_put(out, "\n], \"displayTimeUnit\": \"ms\"}\n");
        if (rc == 0)
            rc = out->err;
    }
    report_view_free(&v);
    if (rc) {
        report_reset(out);
        report_set_err(err, errlen, "cannot render the Chrome trace: %s", afd_strerror(rc));
    }
    return rc;
}
