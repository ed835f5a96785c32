/* test_report.c -- the report renderers on the real investigation documents in data/ and on
 * hand-made traces: every HTML section, the outlined pair and the "never ran" mark, the gate's
 * groups, tiers that were not attempted, escaping of hostile names, malformed and empty documents,
 * the step cap, SARIF's shape and the Chrome trace's events.
 *
 * Set AFD_REPORT_SAMPLE=/path.html to also write the lost-update page there for a look. */
#include "afd.h"
#include "harness.h"
#include "report.h"
#include "trace.h"
#include "tracebuild.h"

#include <jansson.h>

/* ---- fixtures ---- */

/* meson compiles this file by a path relative to the build directory, and the binary lives in
 * that directory's tree: try the path beside the executable first, then as written. */
static char *read_fixture(const char *name)
{
    char dir[2048], path[8192];
    snprintf(dir, sizeof dir, "%s", __FILE__);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = 0;
    else
        snprintf(dir, sizeof dir, ".");
    FILE *f = NULL;
    if (dir[0] != '/') {
        char exe[2048];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (n > 0) {
            exe[n] = 0;
            char *e = strrchr(exe, '/');
            if (e)
                *e = 0;
            snprintf(path, sizeof path, "%s/%s/data/%s", exe, dir, name);
            f = fopen(path, "rb");
        }
    }
    if (!f) {
        snprintf(path, sizeof path, "%s/data/%s", dir, name);
        f = fopen(path, "rb");
    }
    if (!f)
        FAIL_AT("cannot open fixture %s", name);
    CHECK(fseek(f, 0, SEEK_END) == 0);
    long len = ftell(f);
    CHECK(len > 0);
    rewind(f);
    char *text = malloc((size_t)len + 1);
    CHECK(text != NULL);
    CHECK_EQ_INT(fread(text, 1, (size_t)len, f), len);
    text[len] = 0;
    fclose(f);
    return text;
}

static void task(afd_trace *t, uint32_t id, const char *label)
{
    tb_task(t, id, 0, tb_str(t, label));
}

/* A step of task id: its ordinal, suspension site (NULL: none), start and cost in microseconds. */
static void step(afd_trace *t, uint32_t id, uint32_t ordinal, const char *site, uint64_t start_us,
                 uint64_t cost_us)
{
    uint32_t at = site ? tb_str(t, site) : AFD_NOSTR;
    tb_evx(t, AFD_EV_STEP, 0, id, ordinal, at, start_us * 1000, cost_us * 1000, 0);
}

/* The lost update's two runs: in the failing one deposit#1 reads (its step 1) before deposit#0
 * writes (its step 2) and then writes back (its step 2); in the passing one deposit#0 finishes
 * first. The failing run has 8 steps, the passing run 8. */
static void lost_update_traces(afd_trace *failing, afd_trace *passing)
{
    CHECK_EQ_INT(afd_trace_init(failing), 0);
    CHECK_EQ_INT(afd_trace_init(passing), 0);
    failing->outcome = AFD_OUT_FAIL;
    afd_trace *both[2] = {failing, passing};
    for (int i = 0; i < 2; i++) {
        afd_trace *t = both[i];
        task(t, 1, "test_concurrent_deposits");
        step(t, 1, 0, "examples/test_lost_update.py:28", 0, 20);
        task(t, 2, "deposit#0");
        task(t, 3, "deposit#1");
    }
    step(failing, 2, 0, "examples/test_lost_update.py:14", 20, 0);
    step(failing, 3, 0, "examples/test_lost_update.py:14", 20, 0);
    step(failing, 3, 1, "examples/test_lost_update.py:17", 600, 10);
    step(failing, 2, 1, "examples/test_lost_update.py:17", 900, 10);
    step(failing, 2, 2, NULL, 1100, 10);
    step(failing, 3, 2, NULL, 1110, 10);
    step(failing, 1, 1, "examples/test_lost_update.py:28", 1120, 5);

    step(passing, 2, 0, "examples/test_lost_update.py:14", 20, 0);
    step(passing, 3, 0, "examples/test_lost_update.py:14", 20, 0);
    step(passing, 2, 1, "examples/test_lost_update.py:17", 300, 10);
    step(passing, 2, 2, NULL, 800, 10);
    step(passing, 3, 1, "examples/test_lost_update.py:17", 1500, 10);
    step(passing, 3, 2, NULL, 2000, 10);
    step(passing, 1, 1, "examples/test_lost_update.py:28", 2010, 5);
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* The text of the section with this id, up to the next section (a borrowed pointer into html,
 * cut with a NUL in a copy the caller frees). */
static char *section(const char *html, const char *id)
{
    char key[64];
    snprintf(key, sizeof key, "id=\"%s\"", id);
    const char *p = strstr(html, key);
    if (!p)
        FAIL_AT("no section %s", id);
    const char *end = strstr(p, "</section>");
    CHECK(end != NULL);
    return strndup(p, (size_t)(end - p));
}

static char *render_html(const char *json, const afd_trace *failing, const afd_trace *passing)
{
    afd_report_in in = {.id = 7, .created = 1700000000, .json = json, .failing = failing, .passing = passing};
    afd_buf out;
    afd_buf_init(&out);
    char err[256] = "";
    int rc = afd_report_html(&in, &out, err, sizeof err);
    if (rc)
        FAIL_AT("afd_report_html: %d %s", rc, err);
    CHECK_EQ_INT(strlen((const char *)out.data), out.len); /* text, no NUL inside */
    return (char *)afd_buf_steal(&out, NULL);
}

/* The fixture with one key replaced (path "fix.tiers.exploration"), as a new JSON text. */
static char *with_value(const char *json, const char *path, json_t *value)
{
    json_t *root = json_loads(json, 0, NULL);
    CHECK(root != NULL);
    json_t *o = root;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    char *save = NULL, *key = strtok_r(buf, ".", &save), *next;
    while ((next = strtok_r(NULL, ".", &save))) {
        o = json_object_get(o, key);
        CHECK(o != NULL);
        key = next;
    }
    CHECK_EQ_INT(json_object_set_new(o, key, value), 0);
    char *s = json_dumps(root, 0);
    CHECK(s != NULL);
    json_decref(root);
    return s;
}

static const char *const SECTIONS[] = {"verdict", "timeline", "evidence", "window",     "gate",
                                       "tiers",   "diff",     "replay",   "environment"};

/* ---- HTML ---- */

TEST(html_lost_update_every_section)
{
    char *json = read_fixture("incident_lost_update.json");
    afd_trace f, p;
    lost_update_traces(&f, &p);
    char *html = render_html(json, &f, &p);
    for (size_t i = 0; i < sizeof SECTIONS / sizeof SECTIONS[0]; i++) {
        char key[64];
        snprintf(key, sizeof key, "id=\"%s\"", SECTIONS[i]);
        CHECK_EQ_INT(count(html, key), 1);
    }
    CHECK(strncmp(html, "<!DOCTYPE html>", 15) == 0);
    CHECK(strstr(html, "<meta name=\"viewport\" content=\"width=device-width\">"));
    CHECK(strstr(html, "@media (prefers-color-scheme: dark)"));
    /* self-contained: nothing to load, nothing to run */
    CHECK(!strstr(html, "<script") && !strstr(html, "http://") && !strstr(html, "https://"));
    CHECK(!strstr(html, "<link") && !strstr(html, "<img") && !strstr(html, "url("));

    char *v = section(html, "verdict");
    CHECK(strstr(v, "examples/test_lost_update.py::test_concurrent_deposits"));
    CHECK(strstr(v, "REPRODUCED</span>: lost update on BALANCE.amount"));
    CHECK(strstr(v, "33/50 failed (66%, 95% CI 52.2&ndash;77.6%)"));
    CHECK(strstr(v, "failed 10/10"));
    CHECK(strstr(v, "passed 10/10"));
    CHECK(strstr(v, "assert 20 == 30"));
    free(v);

    char *tl = section(html, "timeline");
    CHECK_EQ_INT(count(tl, "<svg class=\"timeline\""), 1);
    CHECK(strstr(tl, "viewBox=\"0 0 1000 "));
    CHECK_EQ_INT(count(tl, "<g class=\"run passing\">"), 1);
    CHECK_EQ_INT(count(tl, "<g class=\"run failing\">"), 1);
    /* every step a bar: 8 + 8; the cause's three operations outlined in the failing run, and the
     * same steps of the passing run marked as their counterparts */
    CHECK_EQ_INT(count(tl, "<rect class=\"step"), 16);
    CHECK_EQ_INT(count(tl, "class=\"step pair\""), 3);
    CHECK_EQ_INT(count(tl, "class=\"step peer\""), 3);
    CHECK(strstr(tl, "deposit#1 step #1: 0.600 ms to 0.610 ms, suspended at examples/test_lost_update.py:17 "
                     "(an operation of the cause)</title>"));
    CHECK(strstr(tl, ">deposit#0<title>"));
    CHECK(strstr(tl, " ms</text>")); /* tick labels */
    CHECK(!strstr(tl, "never-ran"));
    CHECK(!strstr(tl, "not drawn"));
    free(tl);

    char *ev = section(html, "evidence");
    CHECK_EQ_INT(count(ev, "<tr><td>"), 7);
    CHECK_EQ_INT(count(ev, "<span class=\"badge confirmed\">confirmed</span>"), 3);
    CHECK_EQ_INT(count(ev, "<span class=\"badge observed\">observed</span>"), 4);
    free(ev);

    char *w = section(html, "window");
    CHECK_EQ_INT(count(w, "<svg class=\"window-plot\""), 1);
    CHECK_EQ_INT(count(w, "<svg class=\"window-plot zoom\""), 1); /* 0.1 us out of 13 ms */
    CHECK(strstr(w, "<rect class=\"window\""));
    CHECK(strstr(w, "injected delay (&micro;s)"));
    CHECK(strstr(w, "passes with 527.496 &micro;s and fails with 527.595 &micro;s"));
    /* 19 probes in the full plot: 6 pass, 13 fail */
    CHECK(count(w, "class=\"probe failed\"") >= 13);
    CHECK(count(w, "class=\"probe passed\"") >= 6);
    free(w);

    char *g = section(html, "gate");
    const char *h1 = strstr(g, "<h3>Refused shortcuts</h3>"), *h2 = strstr(g, "<h3>Required substance</h3>");
    const char *h3 = strstr(g, "<h3>Structural safety</h3>");
    CHECK(h1 && h2 && h3 && h1 < h2 && h2 < h3);
    CHECK_EQ_INT(count(g, "<li class=\"pass\">"), 13);
    CHECK_EQ_INT(count(g, "<li class=\"fail\">"), 0);
    CHECK(strstr(g, "All 13 checks passed."));
    /* the six shortcuts are listed under their heading, before the next one */
    const char *sleep = strstr(g, "<code>no_sleep</code>"), *cycle = strstr(g, "<code>no_lock_cycle</code>");
    CHECK(sleep && sleep > h1 && sleep < h2 && cycle && cycle > h3);
    free(g);

    char *t = section(html, "tiers");
    CHECK(strstr(t, "the failing token failed 10/10 before the fix; after it, passed 10/10"));
    CHECK(strstr(t, "200 schedules explored: 100 failed before the fix, 0 failed after it"));
    CHECK(strstr(t, "50 runs after the fix, 0 failed: the failure rate is below 6% (rule of three"));
    CHECK(strstr(t, "median 25.49 ms per run before the fix, 11.89 ms after"));
    CHECK(strstr(t, "test_concurrent_deposits_affidavit_replay</code>; fails before the fix: yes; "
                    "passes after: yes"));
    CHECK(!strstr(t, "class=\"not-attempted\""));
    free(t);

    char *d = section(html, "diff");
    CHECK(strstr(d, "<pre class=\"diff\">"));
    CHECK(strstr(d, "<span class=\"hunk\">--- a/examples/test_lost_update.py</span>"));
    CHECK(strstr(d, "<span class=\"hunk\">@@ -6,16 +6,19 @@</span>"));
    CHECK(strstr(d, "<span class=\"add\">+import affidavit</span>"));
    CHECK(strstr(d, "<span class=\"del\">-    current = BALANCE[&quot;amount&quot;]</span>"));
    CHECK(strstr(d, "<span class=\"ctx\"> import pytest</span>"));
    CHECK_EQ_INT(count(d, "<span class=\"add\">"), 11);
    CHECK_EQ_INT(count(d, "<span class=\"del\">"), 4);
    free(d);

    char *r = section(html, "replay");
    CHECK(strstr(r, "<pre class=\"replay\">affidavit replay "
                    "afd1:aeafohfoowlcfddqaaaaaaaaaaaaaaiaaaaasaaaabsgk4dponuxiizraaaaaahlbqeaaaaaaaacr2qv5q "
                    "examples/test_lost_update.py::test_concurrent_deposits</pre>"));
    free(r);

    char *e = section(html, "environment");
    CHECK(strstr(e, "CPython 3.11.7") && strstr(e, "Linux 6.18.44-fc-v657 x86_64"));
    CHECK(strstr(e, "<dt>Hash seed</dt><dd>0</dd>"));
    CHECK(strstr(e, "<code>afd1:aeafohfoowlcfddqaaaaaaaaaaaaaaiaaaaasaaaabsgk4dponuxiizraaaaaahlbqeaaaa"));
    free(e);

    const char *sample = getenv("AFD_REPORT_SAMPLE");
    if (sample) {
        FILE *out = fopen(sample, "wb");
        CHECK(out != NULL);
        fputs(html, out);
        fclose(out);
    }
    free(html);
    afd_trace_finish(&f);
    afd_trace_finish(&p);
    free(json);
}

TEST(html_order_violation_without_window_or_traces)
{
    char *json = read_fixture("incident_order_violation.json");
    char *html = render_html(json, NULL, NULL);
    for (size_t i = 0; i < sizeof SECTIONS / sizeof SECTIONS[0]; i++) {
        char key[64];
        snprintf(key, sizeof key, "id=\"%s\"", SECTIONS[i]);
        CHECK(strstr(html, key));
    }
    CHECK(strstr(html, "REPRODUCED</span>: order violation on REPORT.status"));
    char *w = section(html, "window");
    CHECK(strstr(w, "No collision window was measured"));
    CHECK(!strstr(w, "<svg"));
    free(w);
    char *tl = section(html, "timeline");
    CHECK(strstr(tl, "No traces of the runs are available"));
    CHECK(!strstr(tl, "<svg"));
    free(tl);
    char *ev = section(html, "evidence");
    CHECK_EQ_INT(count(ev, "<span class=\"badge weaker\">weaker</span>"), 2);
    free(ev);
    CHECK(strstr(html, "AssertionError: assert &#39;missing&#39; == &#39;done&#39;"));
    free(html);
    free(json);
}

/* The operation of the cause that ran in the passing run only: a dashed mark in the failing run,
 * in the lane of its task, at the time it ran when the test passed. */
TEST(html_marks_what_never_ran)
{
    char *fixture = read_fixture("incident_order_violation.json");
    json_t *ops = json_pack("[{s:s, s:s, s:i}, {s:s, s:s, s:i}]", "run", "failing", "task", "read_status#0",
                            "step", 1, "run", "passing", "task", "finalize_report#0", "step", 1);
    char *json = with_value(fixture, "cause.operations", ops);
    afd_trace f, p;
    CHECK_EQ_INT(afd_trace_init(&f), 0);
    CHECK_EQ_INT(afd_trace_init(&p), 0);
    task(&p, 1, "test_report_is_finalized");
    task(&p, 2, "finalize_report#0");
    task(&p, 3, "read_status#0");
    step(&p, 1, 0, "t.py:30", 0, 10);
    step(&p, 2, 0, "t.py:14", 10, 0);
    step(&p, 3, 0, "t.py:20", 10, 0);
    step(&p, 2, 1, NULL, 700, 0);
    step(&p, 3, 1, NULL, 1000, 0);
    task(&f, 1, "test_report_is_finalized");
    task(&f, 3, "read_status#0");
    step(&f, 1, 0, "t.py:30", 0, 10);
    step(&f, 3, 0, "t.py:20", 10, 0);
    step(&f, 3, 1, NULL, 1000, 0);
    char *html = render_html(json, &f, &p);
    char *tl = section(html, "timeline");
    CHECK_EQ_INT(count(tl, "<rect class=\"never-ran\""), 1);
    CHECK_EQ_INT(count(tl, ">never ran</text>"), 1);
    CHECK(strstr(tl, "finalize_report#0 step #1 ran at 0.700 ms in the passing run and never ran in the "
                     "failing run"));
    /* the mark is inside the failing run's group */
    CHECK(strstr(tl, "<g class=\"run failing\">") < strstr(tl, "class=\"never-ran\""));
    /* read_status#0 in the failing run, finalize_report#0 in the passing one */
    CHECK_EQ_INT(count(tl, "class=\"step pair\""), 2);
    /* finalize_report#0 has a lane in the failing run too, marked absent */
    CHECK_EQ_INT(count(tl, "class=\"lane-label absent\""), 1);
    free(tl);
    free(html);
    afd_trace_finish(&f);
    afd_trace_finish(&p);
    free(json);
    free(fixture);
}

TEST(html_tier_not_attempted_is_never_a_pass)
{
    char *fixture = read_fixture("incident_lost_update.json");
    char *json1 = with_value(fixture, "fix.tiers.exploration", json_string("not attempted"));
    char *json = with_value(json1, "fix.tiers.natural", json_string("not attempted"));
    char *html = render_html(json, NULL, NULL);
    char *t = section(html, "tiers");
    CHECK_EQ_INT(count(t, "<span class=\"not-attempted\">not attempted</span>"), 2);
    CHECK(!strstr(t, "schedules explored"));
    CHECK(!strstr(t, "rule of three"));
    const char *li = strstr(t, "id=\"tier-exploration\"");
    CHECK(li);
    char *line = strndup(li, strcspn(li, "\n"));
    CHECK(strstr(line, "not attempted") && !strstr(line, "passed") && !strstr(line, "failed"));
    free(line);
    CHECK(strstr(t, "passed 10/10")); /* the replay tier still reports */
    free(t);
    free(html);
    free(json);
    free(json1);
    free(fixture);
}

TEST(html_escapes_hostile_text_everywhere)
{
    const char *evil = "<script>alert(1)</script>\"'</svg>&";
    json_t *doc =
        json_pack("{s:s, s:s, s:s, s:{s:s, s:s, s:s, s:[{s:s, s:s, s:i}]}, s:[{s:s, s:s, s:s}],"
                  " s:{s:s, s:[{s:s, s:s, s:b, s:s}], s:{s:s}}, s:s, s:{s:s, s:s, s:s}}",
                  "nodeid", "tests/x.py::test_hostile[<script>alert(1)</script>\"'</svg>&]", "failure", evil,
                  "verdict", evil, "cause", "kind", evil, "resource", evil, "summary", evil, "operations",
                  "run", "failing", "task", evil, "step", 0, "evidence", "claim", evil, "measured", evil,
                  "strength", evil, "fix", "diff", "+<script>alert(1)</script>\n", "gate", "check", evil,
                  "group", evil, "passed", 0, "reason", evil, "tiers", "replay", evil, "token", "afd1:x'y",
                  "environment", "python", evil, "platform", evil, "hash_seed", evil);
    CHECK(doc != NULL);
    char *json = json_dumps(doc, 0);
    json_decref(doc);
    afd_trace f;
    CHECK_EQ_INT(afd_trace_init(&f), 0);
    task(&f, 1, evil);
    step(&f, 1, 0, "</svg><script>x()</script>", 0, 5);
    step(&f, 2, 0, evil, 5, 5); /* an unnamed task */
    char *html = render_html(json, &f, NULL);
    CHECK(!strstr(html, "<script"));
    CHECK(!strstr(html, "<SCRIPT"));
    /* every </svg> closes one of ours */
    CHECK_EQ_INT(count(html, "</svg>"), count(html, "<svg "));
    CHECK(count(html, "<svg ") >= 1);
    CHECK(strstr(html, "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&lt;/svg&gt;&amp;"));
    /* the suspension site, in a <title> */
    CHECK(strstr(html, "&lt;/svg&gt;&lt;script&gt;x()&lt;/script&gt;"));
    /* the pair was found by its (hostile) task label */
    CHECK_EQ_INT(count(html, "class=\"step pair\""), 1);
    /* no attribute can be closed early: every quote in the page is one of ours */
    CHECK(!strstr(html, "\"'"));
    /* the shell command quotes the name and the token */
    CHECK(strstr(
        html,
        "affidavit replay &#39;afd1:x&#39;&quot;&#39;&quot;&#39;y&#39; &#39;tests/x.py::test_hostile["));
    free(html);
    free(json);
    afd_trace_finish(&f);
}

TEST(html_refuses_a_malformed_document)
{
    static const char *const bad[] = {"{not json", "", "[1, 2]", "\"text\"", "{\"nodeid\": \"a\",}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        afd_report_in in = {.json = bad[i]};
        afd_buf out;
        afd_buf_init(&out);
        char err[256] = "";
        CHECK(afd_report_html(&in, &out, err, sizeof err) < 0);
        CHECK(strlen(err) > 10 && !strchr(err, '\n'));
        CHECK(afd_report_sarif(&in, &out, err, sizeof err) < 0);
        afd_buf_finish(&out);
    }
    afd_report_in none = {.json = NULL};
    afd_buf out;
    afd_buf_init(&out);
    char err[256] = "";
    CHECK_EQ_INT(afd_report_html(&none, &out, err, sizeof err), AFD_EINVAL);
    CHECK(strstr(err, "no investigation document"));
    CHECK_EQ_INT(afd_report_html(NULL, &out, NULL, 0), AFD_EINVAL);
    afd_buf_finish(&out);
}

TEST(html_renders_an_empty_document)
{
    char *html = render_html("{}", NULL, NULL);
    for (size_t i = 0; i < sizeof SECTIONS / sizeof SECTIONS[0]; i++) {
        char key[64];
        snprintf(key, sizeof key, "id=\"%s\"", SECTIONS[i]);
        CHECK(strstr(html, key));
    }
    CHECK(strstr(html, "not available"));
    CHECK(strstr(html, "No collision window was measured"));
    CHECK(strstr(html, "No traces of the runs are available"));
    CHECK(strstr(html, "nothing to replay"));
    CHECK(strstr(html, "</html>"));
    free(html);
}

/* Lines are classified by each hunk's counts: a removed line that reads "--- x" is a removal. */
TEST(html_diff_gate_failure_and_other_verdicts)
{
    const char *json =
        "{\"verdict\": \"no_failure\", \"fix\": {\"diff\": \"--- a/t.py\\n+++ b/t.py\\n@@ -1,3 +1,2 @@\\n"
        " keep\\n--- x\\n+++ y\\n-gone\\n\\\\ No newline at end of file\\n\","
        " \"gate\": [{\"check\": \"no_sleep\", \"group\": \"refused shortcut\", \"passed\": false,"
        " \"reason\": \"adds asyncio.sleep(0.1)\"},"
        " {\"check\": \"odd\", \"group\": \"elsewhere\", \"passed\": true}]}}";
    char *html = render_html(json, NULL, NULL);
    char *d = section(html, "diff");
    CHECK(strstr(d, "<span class=\"hunk\">--- a/t.py</span>\n<span class=\"hunk\">+++ b/t.py</span>\n"
                    "<span class=\"hunk\">@@ -1,3 +1,2 @@</span>\n<span class=\"ctx\"> keep</span>\n"
                    "<span class=\"del\">--- x</span>\n<span class=\"add\">+++ y</span>\n"
                    "<span class=\"del\">-gone</span>\n"
                    "<span class=\"ctx\">\\ No newline at end of file</span>"));
    free(d);
    char *g = section(html, "gate");
    CHECK(strstr(g, "1 of 2 checks failed"));
    CHECK(strstr(g, "<li class=\"fail\"><span class=\"mark\" aria-hidden=\"true\">&#10007;</span>"
                    "<code>no_sleep"));
    CHECK(strstr(g, "<h3>Other checks</h3>"));
    CHECK(strstr(g, "<h3>Structural safety</h3>\n<p class=\"na\">No checks in this group.</p>"));
    free(g);
    CHECK(strstr(html, "<section id=\"verdict\" class=\"no-failure\">"));
    CHECK(strstr(html, "NO FAILURE</span>: the test did not fail"));
    free(html);
    html = render_html("{\"verdict\": \"deterministic\", \"fix\": {\"why_none\": \"the test fails on every "
                       "run\"}}",
                       NULL, NULL);
    CHECK(strstr(html, "DETERMINISTIC</span>: the test fails on every run; it is not flaky"));
    CHECK(strstr(html, "No fix is proposed: the test fails on every run."));
    free(html);
}

/* Every verdict the engine writes has its word and class on the page (they come from incident.h's
 * table), the interrupted one included. */
TEST(html_every_verdict_has_its_word)
{
    static const char *const want[][3] = {
        {"reproduced", "reproduced", "REPRODUCED"},
        {"no_failure", "no-failure", "NO FAILURE"},
        {"abstained", "abstained", "ABSTAINED"},
        {"deterministic", "deterministic", "DETERMINISTIC"},
        {"timing_sensitive", "timing-sensitive", "TIMING-SENSITIVE"},
        {"interrupted", "interrupted", "INTERRUPTED"},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        char json[100], cls[100], word[100];
        snprintf(json, sizeof json, "{\"verdict\": \"%s\"}", want[i][0]);
        snprintf(cls, sizeof cls, "<section id=\"verdict\" class=\"%s\">", want[i][1]);
        snprintf(word, sizeof word, "<span class=\"verdict-word\">%s</span>", want[i][2]);
        char *html = render_html(json, NULL, NULL);
        CHECK(strstr(html, cls));
        CHECK(strstr(html, word));
        free(html);
    }
    char *html = render_html("{\"verdict\": \"flaky\"}", NULL, NULL);
    CHECK(strstr(html, "<section id=\"verdict\" class=\"unknown\">"));
    CHECK(strstr(html, "<span class=\"verdict-word\">flaky</span>"));
    free(html);
}

/* Every key present with the wrong type: still a page, no crash (run under ASan). */
TEST(html_renders_wrong_types)
{
    const char *json =
        "{\"nodeid\": 5, \"verdict\": [], \"natural\": \"x\", \"replay\": {\"runs\": \"ten\"},"
        " \"window_us\": \"w\", \"window\": {\"probes\": [1, {\"delay_us\": \"x\"},"
        " {\"delay_us\": 5, \"failed\": \"yes\"}],"
        " \"passes_at_us\": 3}, \"cause\": {\"operations\": [1, {\"task\": 3, \"step\": \"x\"}],"
        " \"kind\": 4}, \"evidence\": {\"a\": 1}, \"races\": 3, \"fix\": {\"gate\": [1, {\"check\": 2}],"
        " \"tiers\": [], \"diff\": 7, \"why_none\": 3, \"regression_test\": \"x\"}, \"environment\": 3,"
        " \"failure\": null, \"token\": 9, \"runs\": \"x\", \"incident\": \"x\"}";
    char *html = render_html(json, NULL, NULL);
    CHECK(strstr(html, "id=\"environment\""));
    CHECK(strstr(html, "<li class=\"fail\">")); /* a check that does not say it passed did not */
    free(html);
    afd_report_in in = {.json = json};
    afd_buf out;
    afd_buf_init(&out);
    char err[256] = "";
    CHECK_EQ_INT(afd_report_sarif(&in, &out, err, sizeof err), 0);
    afd_buf_finish(&out);
}

TEST(html_caps_the_steps_it_draws)
{
    char *fixture = read_fixture("incident_lost_update.json");
    /* one operation of the cause far past the cap: it is drawn all the same */
    json_t *ops = json_pack("[{s:s, s:s, s:i}]", "run", "failing", "task", "deposit#1", "step", 9000);
    char *json = with_value(fixture, "cause.operations", ops);
    afd_trace f;
    CHECK_EQ_INT(afd_trace_init(&f), 0);
    task(&f, 2, "deposit#0");
    task(&f, 3, "deposit#1");
    uint32_t site = tb_str(&f, "examples/test_lost_update.py:17");
    for (uint32_t i = 0; i < 20000; i++) {
        afd_event ev = {.kind = AFD_EV_STEP,
                        .task = 2 + (i % 2),
                        .a = i / 2,
                        .b = site,
                        .vtime = (uint64_t)i * 1000,
                        .cost = 500};
        CHECK_EQ_INT(afd_trace_add_events(&f, &ev, 1), 0);
    }
    char *html = render_html(json, &f, &f);
    CHECK_EQ_INT(count(html, "<rect class=\"step"), 2 * 2500 + 1);
    CHECK_EQ_INT(count(html, "class=\"step pair\""), 1);
    CHECK(strstr(html, "deposit#1 step #9000: 18.001 ms to 18.002 ms"));
    CHECK(strstr(html, "17499 steps not drawn in the failing run"));
    CHECK(strstr(html, "17500 steps not drawn in the passing run"));
    CHECK(strlen(html) < 1024 * 1024);
    free(html);
    afd_trace_finish(&f);
    free(json);
    free(fixture);
}

/* ---- SARIF ---- */

static json_t *render_sarif(const char *json)
{
    afd_report_in in = {.id = 3, .json = json};
    afd_buf out;
    afd_buf_init(&out);
    char err[256] = "";
    int rc = afd_report_sarif(&in, &out, err, sizeof err);
    if (rc)
        FAIL_AT("afd_report_sarif: %d %s", rc, err);
    json_error_t jerr;
    json_t *doc = json_loadb((const char *)out.data, out.len, 0, &jerr);
    if (!doc)
        FAIL_AT("SARIF does not parse: %s", jerr.text);
    afd_buf_finish(&out);
    /* the top level holds only what the schema allows */
    const char *key;
    json_t *v;
    json_object_foreach(doc, key, v)
        CHECK(!strcmp(key, "$schema") || !strcmp(key, "version") || !strcmp(key, "runs"));
    CHECK_EQ_STR(json_string_value(json_object_get(doc, "version")), "2.1.0");
    CHECK_EQ_STR(json_string_value(json_object_get(doc, "$schema")),
                 "https://json.schemastore.org/sarif-2.1.0.json");
    CHECK_EQ_INT(json_array_size(json_object_get(doc, "runs")), 1);
    json_t *driver =
        json_object_get(json_object_get(json_array_get(json_object_get(doc, "runs"), 0), "tool"), "driver");
    CHECK_EQ_STR(json_string_value(json_object_get(driver, "name")), "affidavit");
    CHECK(!json_object_get(driver, "informationUri"));
    return doc;
}

static json_t *sarif_results(json_t *doc)
{
    return json_object_get(json_array_get(json_object_get(doc, "runs"), 0), "results");
}

/* results[i].locations[k].physicalLocation */
static json_t *sarif_place(json_t *doc, size_t i, size_t k)
{
    json_t *locs = json_object_get(json_array_get(sarif_results(doc), i), "locations");
    return json_object_get(json_array_get(locs, k), "physicalLocation");
}

/* Every result names a rule the driver lists, at its index, and has a message. */
static void check_rules(json_t *doc)
{
    json_t *run = json_array_get(json_object_get(doc, "runs"), 0);
    json_t *rules = json_object_get(json_object_get(json_object_get(run, "tool"), "driver"), "rules");
    size_t i;
    json_t *r;
    json_array_foreach(sarif_results(doc), i, r)
    {
        json_int_t idx = json_integer_value(json_object_get(r, "ruleIndex"));
        CHECK(idx >= 0 && (size_t)idx < json_array_size(rules));
        CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(rules, (size_t)idx), "id")),
                     json_string_value(json_object_get(r, "ruleId")));
        CHECK(json_string_length(json_object_get(json_object_get(r, "message"), "text")) > 10);
        CHECK(json_string_value(json_object_get(
            json_object_get(json_array_get(rules, (size_t)idx), "shortDescription"), "text")));
    }
}

TEST(sarif_lost_update)
{
    char *json = read_fixture("incident_lost_update.json");
    json_t *doc = render_sarif(json);
    json_t *results = sarif_results(doc);
    CHECK_EQ_INT(json_array_size(results), 3); /* the cause and two races */
    check_rules(doc);
    json_t *cause = json_array_get(results, 0);
    CHECK_EQ_STR(json_string_value(json_object_get(cause, "ruleId")), "affidavit/lost_update");
    CHECK_EQ_STR(json_string_value(json_object_get(cause, "level")), "error");
    CHECK(strstr(json_string_value(json_object_get(json_object_get(cause, "message"), "text")),
                 "lost update on BALANCE.amount: deposit#1 reads it"));
    /* the read at line 15 and the writes at line 18, once each */
    json_t *locs = json_object_get(cause, "locations");
    CHECK_EQ_INT(json_array_size(locs), 2);
    json_t *phys = sarif_place(doc, 0, 0);
    CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(phys, "artifactLocation"), "uri")),
                 "examples/test_lost_update.py");
    CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(phys, "region"), "startLine")), 15);
    phys = sarif_place(doc, 0, 1);
    CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(phys, "region"), "startLine")), 18);
    for (size_t i = 1; i < 3; i++) {
        json_t *race = json_array_get(results, i);
        CHECK_EQ_STR(json_string_value(json_object_get(race, "ruleId")), "affidavit/race");
        CHECK_EQ_STR(json_string_value(json_object_get(race, "level")), "warning");
        CHECK(strstr(json_string_value(json_object_get(json_object_get(race, "message"), "text")),
                     "Race on BALANCE.amount: deposit#"));
    }
    json_t *props = json_object_get(json_array_get(json_object_get(doc, "runs"), 0), "properties");
    CHECK_EQ_STR(json_string_value(json_object_get(props, "nodeid")),
                 "examples/test_lost_update.py::test_concurrent_deposits");
    CHECK_EQ_INT(json_integer_value(json_object_get(props, "incident")), 3);
    json_decref(doc);
    free(json);
}

TEST(sarif_order_violation_and_fallback_location)
{
    char *fixture = read_fixture("incident_order_violation.json");
    json_t *doc = render_sarif(fixture);
    CHECK_EQ_INT(json_array_size(sarif_results(doc)), 2);
    check_rules(doc);
    CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(sarif_results(doc), 0), "ruleId")),
                 "affidavit/order_violation");
    json_decref(doc);
    /* operations without source lines: the result points at the test's file, with no region */
    json_t *ops = json_pack("[{s:s, s:s}]", "task", "a#0", "operation", "read");
    char *json = with_value(fixture, "cause.operations", ops);
    char *json2 = with_value(json, "races", json_array());
    doc = render_sarif(json2);
    CHECK_EQ_INT(json_array_size(sarif_results(doc)), 1);
    json_t *phys = sarif_place(doc, 0, 0);
    CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(phys, "artifactLocation"), "uri")),
                 "examples/test_taskgroup_read.py");
    CHECK(!json_object_get(phys, "region"));
    json_decref(doc);
    free(json2);
    free(json);
    free(fixture);
}

TEST(sarif_empty_and_hostile)
{
    json_t *doc = render_sarif("{}");
    CHECK_EQ_INT(json_array_size(sarif_results(doc)), 0);
    json_decref(doc);
    /* a deterministic failure has no cause: the log still names the test, text as it is */
    doc = render_sarif("{\"nodeid\": \"t.py::x[<script>alert(1)</script>]\", \"verdict\": \"deterministic\","
                       " \"races\": [{\"resource\": \"R\", \"operations\": [{\"task\": \"a\","
                       " \"file\": \"dir with space/t.py\", \"line\": 3}]}]}");
    CHECK_EQ_INT(json_array_size(sarif_results(doc)), 1);
    json_t *props = json_object_get(json_array_get(json_object_get(doc, "runs"), 0), "properties");
    CHECK_EQ_STR(json_string_value(json_object_get(props, "nodeid")), "t.py::x[<script>alert(1)</script>]");
    json_t *art = json_object_get(sarif_place(doc, 0, 0), "artifactLocation");
    CHECK_EQ_STR(json_string_value(json_object_get(art, "uri")), "dir%20with%20space/t.py");
    json_decref(doc);
}

/* ---- Chrome trace ---- */

static json_t *render_chrome(const afd_report_in *in, const char *which)
{
    afd_buf out;
    afd_buf_init(&out);
    char err[256] = "";
    int rc = afd_report_chrome_trace(in, which, &out, err, sizeof err);
    if (rc)
        FAIL_AT("afd_report_chrome_trace: %d %s", rc, err);
    json_error_t jerr;
    json_t *doc = json_loadb((const char *)out.data, out.len, 0, &jerr);
    if (!doc)
        FAIL_AT("the Chrome trace does not parse: %s", jerr.text);
    afd_buf_finish(&out);
    CHECK_EQ_STR(json_string_value(json_object_get(doc, "displayTimeUnit")), "ms");
    return doc;
}

static size_t count_events(json_t *doc, const char *ph, const char *name)
{
    size_t n = 0, i;
    json_t *e;
    json_array_foreach(json_object_get(doc, "traceEvents"), i, e) n +=
        !strcmp(json_string_value(json_object_get(e, "ph")), ph) &&
        (!name || !strcmp(json_string_value(json_object_get(e, "name")), name));
    return n;
}

TEST(chrome_trace_has_every_step)
{
    afd_trace f, p;
    lost_update_traces(&f, &p);
    step(&f, 9, 0, NULL, 1200, 1); /* a task whose TASK event was dropped */
    afd_report_in in = {.json = "{}", .failing = &f, .passing = &p};
    json_t *doc = render_chrome(&in, NULL);
    CHECK_EQ_INT(count_events(doc, "X", NULL), 9);
    CHECK_EQ_INT(count_events(doc, "M", "thread_name"), 4);
    size_t i;
    json_t *e;
    int seen_read = 0, seen_unnamed = 0;
    json_array_foreach(json_object_get(doc, "traceEvents"), i, e)
    {
        const char *name = json_string_value(json_object_get(json_object_get(e, "args"), "name"));
        if (!strcmp(json_string_value(json_object_get(e, "ph")), "M")) {
            CHECK(name != NULL);
            seen_unnamed += name && !strcmp(name, "task-9");
            continue;
        }
        CHECK_EQ_INT(json_integer_value(json_object_get(e, "pid")), 1);
        CHECK(json_real_value(json_object_get(e, "ts")) >= 0);
        CHECK(json_real_value(json_object_get(e, "dur")) >= 0);
        if (!strcmp(json_string_value(json_object_get(e, "name")), "deposit#1 #1")) {
            seen_read = 1;
            CHECK_EQ_INT(json_integer_value(json_object_get(e, "tid")), 3);
            CHECK_NEAR(json_real_value(json_object_get(e, "ts")), 600.0, 1e-9);
            CHECK_NEAR(json_real_value(json_object_get(e, "dur")), 10.0, 1e-9);
            CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(e, "args"), "suspended_at")),
                         "examples/test_lost_update.py:17");
        }
    }
    CHECK(seen_read && seen_unnamed);
    json_decref(doc);

    doc = render_chrome(&in, "passing");
    CHECK_EQ_INT(count_events(doc, "X", NULL), 8);
    CHECK_EQ_INT(count_events(doc, "M", "thread_name"), 3);
    json_decref(doc);

    afd_buf out;
    afd_buf_init(&out);
    char err[256] = "";
    CHECK_EQ_INT(afd_report_chrome_trace(&in, "sideways", &out, err, sizeof err), AFD_EINVAL);
    CHECK(strstr(err, "sideways"));
    afd_report_in only = {.json = "{}", .failing = &f};
    CHECK_EQ_INT(afd_report_chrome_trace(&only, "passing", &out, err, sizeof err), AFD_ENOTFOUND);
    CHECK(strstr(err, "passing run's trace is not available"));
    afd_buf_finish(&out);
    afd_trace_finish(&f);
    afd_trace_finish(&p);
}

/* Trace strings are bytes: a label that is not UTF-8 still makes valid JSON. */
TEST(chrome_trace_survives_bytes_that_are_not_text)
{
    afd_trace t;
    CHECK_EQ_INT(afd_trace_init(&t), 0);
    task(&t, 1, "bad\xff\xfe label \"q\"");
    step(&t, 1, 0, "x.py:\xc3", 0, 1);
    afd_report_in in = {.failing = &t};
    json_t *doc = render_chrome(&in, "failing");
    CHECK_EQ_INT(count_events(doc, "X", NULL), 1);
    CHECK_EQ_INT(count_events(doc, "M", "thread_name"), 1);
    json_decref(doc);
    char *html = render_html("{}", &t, NULL);
    CHECK(strstr(html, "bad\xef\xbf\xbd\xef\xbf\xbd label &quot;q&quot;"));
    free(html);
    afd_trace_finish(&t);
}

int main(void)
{
    RUN_TESTS("report", T(html_lost_update_every_section), T(html_order_violation_without_window_or_traces),
              T(html_marks_what_never_ran), T(html_tier_not_attempted_is_never_a_pass),
              T(html_escapes_hostile_text_everywhere), T(html_refuses_a_malformed_document),
              T(html_renders_an_empty_document), T(html_diff_gate_failure_and_other_verdicts),
              T(html_every_verdict_has_its_word), T(html_renders_wrong_types),
              T(html_caps_the_steps_it_draws), T(sarif_lost_update),
              T(sarif_order_violation_and_fallback_location), T(sarif_empty_and_hostile),
              T(chrome_trace_has_every_step), T(chrome_trace_survives_bytes_that_are_not_text));
}
