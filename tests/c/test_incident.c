/* test_incident.c -- the incident document: every key read back and written out byte for byte,
 * bad documents refused with a reason naming the key, and the verdict table's columns. */
#include "afd.h"
#include "harness.h"
#include "incident.h"

#include <math.h>

/* A document that holds every key the engine writes, each optional part present (check, timing,
 * window, a cause with every kind of operation, races, fix with every tier, stages), a failure
 * with a NUL byte and a non-ASCII character: in the writer's own format, so to_json(from_json(x))
 * must be x exactly. */
static const char FULL[] =
    "{\"incident\": null, \"report\": null, \"schema\": 1, \"nodeid\": \"t.py::test_x\", \"check\": "
    "{\"file\": "
    "\"app.py\", \"class\": \"Cache\", \"method\": \"get\", \"calls\": 8}, \"verdict\": "
    "\"timing_sensitive\", \"timing\": "
    "{\"summary\": \"fails only when one step takes longer than the 0.1 s timer armed at t.py:4: a "
    "slow machine, not a race\", \"duration_us\": 100000, \"site\": \"t.py:4\", \"check_runs\": 10, "
    "\"check_passed\": "
    "10}, \"natural\": {\"runs\": 50, \"failed\": 3, \"ci95\": [0.0206, 0.16217]}, \"token\": \"afd1:abc\", "
    "\"replay\": {\"runs\": 10, \"failed\": 10, \"identical_traces\": false}, \"passing_token\": null, "
    "\"passing_replay\": "
    "{\"runs\": 0, \"passed\": 0}, \"window_us\": 12.5, \"window\": {\"task\": \"w#0\", \"step\": 2, "
    "\"wakes\": "
    "\"r#1\", \"passes_at_us\": 12.4, \"fails_at_us\": 12.5, \"delays_before\": 3, \"delays_after\": 1, "
    "\"runs\": "
    "7, \"searched_one_delay\": false, \"probes\": [{\"delay_us\": 0, \"failed\": false}, {\"delay_us\": 25, "
    "\"failed\": true}]}, \"cause\": {\"kind\": \"starvation\", \"resource\": \"event loop\", "
    "\"await_site\": "
    "null, \"summary\": \"s\", \"operations\": [{\"task\": \"a#0\", \"operation\": \"blocking call\", "
    "\"resource\": "
    "\"event loop\", \"access\": \"block\", \"site\": \"t.py:9\"}, {\"task\": \"a#0\", \"operation\": "
    "\"acquire\", "
    "\"resource\": \"L\", \"access\": \"wait\"}, {\"operation\": \"acquire\", \"resource\": \"L\", "
    "\"access\": \"lock\"}, "
    "{\"run\": \"passing\", \"task\": \"b#1\", \"operation\": \"write\", \"resource\": \"X.v\", \"access\": "
    "\"write\", "
    "\"step\": 1, \"occurrence\": 0, \"observed\": false}], \"await_chain\": [{\"file\": \"u.py\", "
    "\"line\": 8, \"function\": \"io\"}]}, \"evidence\": [{\"claim\": \"c\", \"measured\": "
    "\"m\", "
    "\"strength\": \"observed\"}], \"races\": [{\"resource\": \"X.v\", \"operations\": [{\"run\": "
    "\"failing\", \"task\": "
    "\"a#0\", \"operation\": \"read\", \"resource\": \"X.v\", \"access\": \"read\", \"step\": 0, "
    "\"occurrence\": 1, "
    "\"observed\": true, \"file\": \"t.py\", \"line\": 3}, {\"run\": \"failing\", \"task\": \"b#1\", "
    "\"operation\": "
    "\"write\", \"resource\": \"X.v\", \"access\": \"write\", \"step\": 1, \"occurrence\": 0, \"observed\": "
    "true, "
    "\"file\": \"t.py\", \"line\": 5}]}], \"fix\": {\"kind\": \"LOCK\", \"why_none\": null, \"diff\": \"--- "
    "a/t.py\\n+++ "
    "b/t.py\\n\", \"gate\": [{\"check\": \"parses\", \"group\": \"syntax\", \"passed\": true, \"reason\": "
    "\"ok\"}], "
    "\"tiers\": {\"replay\": {\"token_failed_before\": \"10/10\", \"runs\": 10, \"passed\": 10}, "
    "\"exploration\": "
    "{\"schedules\": 100, \"failed_before\": 40, \"failed_after\": 0}, \"natural\": {\"runs\": 200, "
    "\"failed\": "
    "0, \"rate_below\": 0.015}, \"overhead\": {\"median_ms_before\": 1.25, \"median_ms_after\": 1.5}}, "
    "\"regression_test\": "
    "{\"node\": \"t.py::test_regression\", \"fails_before\": true, \"passes_after\": \"not attempted\"}, "
    "\"candidates\": "
    "[{\"kind\": \"LOCK\", \"changed_lines\": 4, \"tried\": true, \"gate_passed\": true, \"verified\": "
    "true}], "
    "\"verified\": true, \"applied\": false, \"apply\": null}, \"failure\": \"boom\\u0000after NUL \xc3"
    "\xa9"
    "\", \"environment\": "
    "{\"python\": \"CPython 3.11.7\", \"hash_seed\": \"0\", \"platform\": \"Linux\"}, \"step_limit_runs\": "
    "1, "
    "\"truncated_traces\": 2, \"runs\": 123, \"seconds\": 4.56, \"stages\": [{\"name\": \"sample\", "
    "\"seconds\": "
    "0.5, \"runs\": 50}]}\n";

/* The smallest document the reader accepts: no --fix, no check, nothing found. */
static const char SMALL[] =
    "{\"nodeid\": \"t.py::t\", \"verdict\": \"no_failure\", \"timing\": null, \"natural\": {\"runs\": 5, "
    "\"failed\": 0, \"ci95\": [0, 0.434482]}, \"token\": null, \"replay\": {\"runs\": 0, \"failed\": 0, "
    "\"identical_traces\": null}, \"passing_token\": null, \"passing_replay\": {\"runs\": 0, \"passed\": 0}, "
    "\"window_us\": null, \"window\": null, \"cause\": null, \"evidence\": [], \"races\": [], \"failure\": "
    "\"\", "
    "\"environment\": {\"python\": \"CPython 3.11.7\", \"hash_seed\": \"0\", \"platform\": \"Linux\"}, "
    "\"step_limit_runs\": 0, \"truncated_traces\": 0, \"runs\": 5, \"seconds\": 0.25}\n";

/* to_json(from_json(text)) as a heap string (the caller frees it). */
static char *round_trip(const char *text, size_t len, afd_incident *inc)
{
    char err[300];
    int rc = afd_incident_from_json(text, len, inc, err, sizeof err);
    if (rc < 0)
        FAIL_AT("refused: %s", err);
    char *out = NULL;
    size_t out_len = 0;
    CHECK_EQ_INT(afd_incident_to_json(inc, &out, &out_len), 0);
    CHECK_EQ_U64(out_len, strlen(out));
    return out;
}

TEST(full_document_round_trips_byte_for_byte)
{
    afd_incident inc;
    char *out = round_trip(FULL, sizeof FULL - 1, &inc);
    CHECK_EQ_STR(out, FULL);
    /* and the struct holds what the keys say */
    CHECK_EQ_INT(inc.verdict, AFD_VERDICT_TIMING_SENSITIVE);
    CHECK_EQ_INT(inc.cause.kind, AFD_CAUSE_STARVATION);
    CHECK_EQ_U64(inc.cause.n_ops, 4);
    CHECK_EQ_INT(inc.cause.ops[0].access, AFD_CAUSE_ACCESS_BLOCK);
    CHECK_EQ_STR(inc.cause.ops[0].site, "t.py:9");
    CHECK_EQ_STR(inc.cause.ops[3].run, "passing");
    CHECK(inc.cause.ops[3].file == NULL);
    CHECK_EQ_U64(inc.cause.n_races, 1);
    CHECK_EQ_U64(inc.cause.races[0].ops[1].line, 5);
    CHECK_EQ_U64(inc.failure_len, 17); /* "boom", NUL, "after NUL ", two bytes of U+00E9 */
    CHECK(inc.failure[4] == 0);
    CHECK_EQ_INT(inc.identical_traces, 0);
    CHECK_EQ_INT(inc.fix.fails_before, AFD_TRI_TRUE);
    CHECK_EQ_INT(inc.fix.passes_after, AFD_TRI_NOT_ATTEMPTED);
    CHECK_NEAR(inc.window.probes[1].delay_us, 25.0, 1e-9);
    CHECK_EQ_U64(inc.window.passes_at_ns, 12400);
    CHECK_EQ_U64(inc.n_stages, 1);
    CHECK_EQ_STR(inc.stages[0].name, "sample");
    free(out);
    afd_incident_finish(&inc);
}

TEST(small_document_gains_only_the_schema_key)
{
    afd_incident inc;
    char *out = round_trip(SMALL, sizeof SMALL - 1, &inc);
    const char *want_head = "{\"schema\": 1, \"nodeid\": ";
    CHECK(strncmp(out, want_head, strlen(want_head)) == 0);
    CHECK_EQ_STR(out + strlen(want_head), SMALL + strlen("{\"nodeid\": "));
    CHECK_EQ_INT(inc.has_fix, 0);
    CHECK_EQ_INT(inc.with_ids, 0);
    CHECK_EQ_INT(inc.identical_traces, -1);
    free(out);
    afd_incident_finish(&inc);
}

/* Replaces the first occurrence of from in base with to, then expects a refusal whose reason is
 * want. */
static void check_refused_in(const char *base, const char *from, const char *to, const char *want)
{
    char doc[8192];
    const char *at = strstr(base, from);
    CHECK(at != NULL);
    snprintf(doc, sizeof doc, "%.*s%s%s", (int)(at - base), base, to, at + strlen(from));
    afd_incident inc;
    char err[300] = "unset";
    CHECK_EQ_INT(afd_incident_from_json(doc, strlen(doc), &inc, err, sizeof err), AFD_EINVAL);
    CHECK_EQ_STR(err, want);
    CHECK(strchr(err, '\n') == NULL);
    afd_incident_finish(&inc);
    /* The strict reader is the lenient one with its first note as the refusal. */
    afd_buf notes;
    afd_buf_init(&notes);
    CHECK_EQ_INT(afd_incident_from_json_lenient(doc, strlen(doc), &inc, &notes, err, sizeof err), 0);
    afd_buf_put(&notes, "", 1);
    const char *text = (const char *)notes.data;
    CHECK(text && strncmp(text, want, strlen(want)) == 0 && text[strlen(want)] == '\n');
    afd_buf_finish(&notes);
    afd_incident_finish(&inc);
}

static void check_refused(const char *from, const char *to, const char *want)
{
    check_refused_in(SMALL, from, to, want);
}

TEST(bad_documents_are_refused_naming_the_key)
{
    check_refused("\"nodeid\": \"t.py::t\", ", "", "nodeid: missing");
    check_refused("\"nodeid\": \"t.py::t\"", "\"nodeid\": 3", "nodeid: not a string");
    check_refused("\"no_failure\"", "\"flaky\"", "verdict: unknown: \"flaky\"");
    check_refused("\"runs\": 5, \"failed\"", "\"runs\": \"5\", \"failed\"", "natural.runs: not an integer");
    check_refused("\"runs\": 5, \"failed\"", "\"runs\": -5, \"failed\"", "natural.runs: out of range");
    check_refused("[0, 0.434482]", "[0]", "natural.ci95: not a pair");
    check_refused("\"cause\": null", "\"cause\": {\"kind\": 1}", "cause.kind: not a string");
    check_refused("\"cause\": null", "\"cause\": {\"kind\": \"flaky\", \"resource\": \"\"}",
                  "cause.kind: unknown: \"flaky\"");
    check_refused("\"evidence\": []", "\"evidence\": [{\"claim\": \"c\", \"measured\": \"m\"}]",
                  "evidence.strength: missing");
    check_refused("\"races\": []", "\"races\": {}", "races: not an array");
    check_refused("\"window\": null", "\"window\": []", "window: not an object or null");
    check_refused("\"seconds\": 0.25", "\"seconds\": true", "seconds: not a number");
    check_refused("{\"nodeid\"", "{\"schema\": 2, \"nodeid\"", "schema: version 2 is not 1");
    check_refused("\"runs\": 5, \"seconds\"", "\"runs\": 5, \"fix\": 1, \"seconds\"", "fix: not an object");
    check_refused("\"races\": []",
                  "\"races\": [{\"resource\": \"r\", \"operations\": [{\"access\": \"peek\"}, {}]}]",
                  "races.access: unknown: \"peek\"");
}

TEST(not_json_is_refused)
{
    afd_incident inc;
    char err[300];
    CHECK_EQ_INT(afd_incident_from_json("{\"nodeid\": ", 11, &inc, err, sizeof err), AFD_EINVAL);
    CHECK(strncmp(err, "not JSON: ", 10) == 0);
    afd_incident_finish(&inc);
    CHECK_EQ_INT(afd_incident_from_json("[1, 2]", 6, &inc, err, sizeof err), AFD_EINVAL);
    CHECK_EQ_STR(err, "document: not an object");
    afd_incident_finish(&inc);
}

/* What the reports read: every key missing or mistyped, and the read still succeeds with each
 * part unset and noted. */
TEST(lenient_read_leaves_what_it_cannot_read_unset)
{
    static const char doc[] =
        "{\"nodeid\": 5, \"verdict\": \"flaky\", \"natural\": {\"runs\": 4, \"failed\": \"x\"},"
        " \"window_us\": \"w\", \"window\": {\"task\": \"a#0\", \"passes_at_us\": 3},"
        " \"cause\": {\"kind\": \"odd_kind\", \"operations\": [1, {\"task\": \"a#0\", \"step\": 2}]},"
        " \"evidence\": [{\"claim\": \"c\"}], \"races\": [{\"operations\": [{\"task\": \"b\"}]}],"
        " \"fix\": {\"tiers\": {\"replay\": {\"runs\": 3}, \"natural\": \"skipped\"}, \"verified\": 1},"
        " \"runs\": \"x\", \"incident\": \"x\", \"unknown_key\": []}";
    afd_incident inc;
    afd_buf notes;
    afd_buf_init(&notes);
    char err[300] = "";
    CHECK_EQ_INT(afd_incident_from_json_lenient(doc, strlen(doc), &inc, &notes, err, sizeof err), 0);
    afd_buf_put(&notes, "", 1);
    const char *n = (const char *)notes.data;
    CHECK(
        strncmp(
            n,
            "incident: not an integer\nreport: missing\nnodeid: not a string\nverdict: unknown: \"flaky\"\n",
            strlen("incident: not an integer\nreport: missing\nnodeid: not a string\nverdict: unknown: "
                   "\"flaky\"\n")) == 0);
    CHECK(strstr(n, "\nnatural.failed: not an integer\n"));
    CHECK(strstr(n, "\nwindow_us: not a number\n"));
    CHECK(strstr(n, "\ncause.kind: unknown: \"odd_kind\"\n"));
    CHECK(strstr(n, "\nraces.operations: not a pair\n"));
    CHECK(strstr(n, "\nfix.tiers.natural: not an object\n"));
    CHECK(!strstr(n, "unknown_key"));
    CHECK(inc.nodeid == NULL);
    CHECK_EQ_INT(inc.verdict, AFD_VERDICT_NONE);
    CHECK_EQ_STR(inc.verdict_text, "flaky");
    CHECK_EQ_U64(inc.natural_runs, 4);
    CHECK_EQ_U64(inc.natural_failed, AFD_INCIDENT_UNSET);
    CHECK_EQ_U64(inc.replay_runs, AFD_INCIDENT_UNSET);
    CHECK(isnan(inc.window_us) && isnan(inc.ci95_lo) && isnan(inc.natural_rate));
    CHECK_EQ_INT(inc.has_window, 1);
    CHECK_EQ_U64(inc.window.passes_at_ns, 3000);
    CHECK_EQ_U64(inc.window.fails_at_ns, AFD_INCIDENT_UNSET);
    CHECK_EQ_INT(inc.window.step, AFD_INCIDENT_UNSET32);
    CHECK_EQ_INT(inc.has_cause, 1);
    CHECK_EQ_INT(inc.cause.kind, AFD_CAUSE_NONE);
    CHECK_EQ_STR(inc.cause_kind_text, "odd_kind");
    CHECK_EQ_INT(inc.cause.n_ops, 2);
    CHECK(inc.cause.ops[0].task == NULL && inc.cause.ops[0].step == AFD_INCIDENT_UNSET32);
    CHECK_EQ_STR(inc.cause.ops[1].task, "a#0");
    CHECK_EQ_INT(inc.cause.ops[1].step, 2);
    CHECK(inc.cause.ops[1].run == NULL && inc.cause.ops[1].line == 0 && inc.cause.ops[1].file == NULL);
    CHECK_EQ_INT(inc.evidence.n, 1);
    CHECK_EQ_STR(inc.evidence.rows[0].claim, "c");
    CHECK(inc.evidence.rows[0].strength == NULL);
    CHECK_EQ_INT(inc.cause.n_races, 1);
    CHECK_EQ_INT(inc.race_ops[0], 1);
    CHECK_EQ_STR(inc.cause.races[0].ops[0].task, "b");
    CHECK_EQ_INT(inc.has_fix, 1);
    CHECK(inc.fix.tier_ran[AFD_TIER_REPLAY] && !inc.fix.tier_ran[AFD_TIER_EXPLORATION]);
    CHECK_EQ_U64(inc.fix.replay_runs, 3);
    CHECK_EQ_U64(inc.fix.replay_passed, AFD_INCIDENT_UNSET);
    CHECK_EQ_STR(inc.fix.tier_text[AFD_TIER_NATURAL], "skipped");
    CHECK(inc.fix.tier_text[AFD_TIER_EXPLORATION] == NULL);
    CHECK_EQ_INT(inc.fix.verified, -1);
    CHECK_EQ_INT(inc.fix.has_regression_test, 0);
    CHECK_EQ_U64(inc.runs, AFD_INCIDENT_UNSET);
    CHECK_EQ_INT(inc.id, 0);
    CHECK(inc.failure == NULL && inc.python == NULL);
    afd_buf_finish(&notes);
    afd_incident_finish(&inc);
    /* The strict reader refuses the same document with the first note. */
    CHECK_EQ_INT(afd_incident_from_json(doc, strlen(doc), &inc, err, sizeof err), AFD_EINVAL);
    CHECK_EQ_STR(err, "incident: not an integer");
    afd_incident_finish(&inc);
}

/* Only text that is not a JSON object fails a lenient read; notes may be NULL. */
TEST(lenient_read_refuses_only_what_is_not_an_object)
{
    afd_incident inc;
    char err[300] = "";
    CHECK_EQ_INT(afd_incident_from_json_lenient("{\"nodeid\": ", 11, &inc, NULL, err, sizeof err),
                 AFD_EINVAL);
    CHECK(strncmp(err, "not JSON: ", 10) == 0);
    afd_incident_finish(&inc);
    CHECK_EQ_INT(afd_incident_from_json_lenient("[1]", 3, &inc, NULL, err, sizeof err), AFD_EINVAL);
    CHECK_EQ_STR(err, "document: not an object");
    afd_incident_finish(&inc);
    CHECK_EQ_INT(afd_incident_from_json_lenient("{}", 2, &inc, NULL, err, sizeof err), 0);
    CHECK(inc.nodeid == NULL && inc.natural_runs == AFD_INCIDENT_UNSET && !inc.has_fix && !inc.has_cause);
    afd_incident_finish(&inc);
    /* A full document reads leniently with no note at all. */
    afd_buf notes;
    afd_buf_init(&notes);
    CHECK_EQ_INT(afd_incident_from_json_lenient(FULL, sizeof FULL - 1, &inc, &notes, err, sizeof err), 0);
    CHECK_EQ_INT(notes.len, 0);
    CHECK_EQ_INT(inc.race_ops[0], 2);
    CHECK(inc.fix.tier_ran[AFD_TIER_OVERHEAD] && inc.fix.has_regression_test);
    afd_buf_finish(&notes);
    afd_incident_finish(&inc);
}

TEST(writer_replaces_bytes_that_are_not_utf8)
{
    afd_incident inc;
    afd_incident_init(&inc);
    inc.verdict = AFD_VERDICT_REPRODUCED;
    inc.nodeid = strdup("t.py::t[\xff]");
    inc.failure = malloc(4);
    memcpy(inc.failure, "a\0\xc3z", 4);
    inc.failure_len = 4;
    inc.ci95_lo = NAN;
    inc.seconds = 3;
    char *out = NULL;
    CHECK_EQ_INT(afd_incident_to_json(&inc, &out, NULL), 0);
    CHECK(strstr(out, "\"nodeid\": \"t.py::t[\xef\xbf\xbd]\"") != NULL);
    CHECK(strstr(out, "\"failure\": \"a\\u0000\xef\xbf\xbdz\"") != NULL);
    CHECK(strstr(out, "\"ci95\": [null, 0]") != NULL);
    CHECK(strstr(out, "\"seconds\": 3}") != NULL);
    free(out);
    inc.verdict = AFD_VERDICT_NONE; /* a verdict must be decided before the document is written */
    CHECK_EQ_INT(afd_incident_to_json(&inc, &out, NULL), AFD_EINVAL);
    CHECK(out == NULL);
    afd_incident_finish(&inc);
    afd_incident_finish(NULL);
}

TEST(verdict_table)
{
    CHECK_EQ_INT(afd_verdict_exit(AFD_VERDICT_REPRODUCED), 1);
    CHECK_EQ_INT(afd_verdict_exit(AFD_VERDICT_NO_FAILURE), 0);
    CHECK_EQ_INT(afd_verdict_exit(AFD_VERDICT_ABSTAINED), 4);
    CHECK_EQ_INT(afd_verdict_exit(AFD_VERDICT_DETERMINISTIC), 1);
    CHECK_EQ_INT(afd_verdict_exit(AFD_VERDICT_TIMING_SENSITIVE), 1);
    CHECK_EQ_INT(afd_verdict_exit(AFD_VERDICT_INTERRUPTED), 130);
    CHECK_EQ_INT(afd_verdict_exit(AFD_VERDICT_NONE), -1);
    CHECK_EQ_STR(afd_verdict_head(AFD_VERDICT_NO_FAILURE), "NO FAILURE FOUND");
    CHECK_EQ_STR(afd_verdict_word(AFD_VERDICT_NO_FAILURE), "NO FAILURE");
    CHECK_EQ_STR(afd_verdict_css(AFD_VERDICT_TIMING_SENSITIVE), "timing-sensitive");
    CHECK_EQ_STR(afd_verdict_word(AFD_VERDICT_INTERRUPTED), "INTERRUPTED");
    CHECK(afd_verdict_name(AFD_VERDICT_NONE) == NULL);
    CHECK(afd_verdict_name(AFD_VERDICT__COUNT) == NULL);
    for (int v = 1; v < AFD_VERDICT__COUNT; v++) {
        CHECK_EQ_INT(afd_verdict_parse(afd_verdict_name((afd_verdict)v)), v);
        CHECK(afd_verdict_head((afd_verdict)v) && afd_verdict_word((afd_verdict)v) &&
              afd_verdict_css((afd_verdict)v));
    }
    CHECK_EQ_INT(afd_verdict_parse("REPRODUCED"), AFD_VERDICT_NONE);
    CHECK_EQ_INT(afd_verdict_parse(NULL), AFD_VERDICT_NONE);
}

/* ---- the search and the systematic tier (optional keys) ---- */

static void sys_fill(afd_incident_sys *s, uint64_t seed, int exhausted)
{
    s->max_delays = 2;
    s->pruning = (int)(seed & 1);
    s->runs = 100 + seed;
    s->budget_spent = !exhausted;
    s->clock_reads = seed;
    s->n_levels = 3;
    for (uint32_t k = 0; k < 3; k++) {
        afd_incident_sys_level *lv = &s->levels[k];
        lv->delays = k;
        lv->schedules = 10 * k + seed;
        lv->cum_schedules = 11 * k + seed;
        lv->orders = 5 * k + 1;
        lv->classes = 3 * k + 1;
        lv->failed = k * seed;
        lv->no_slot = k;
        lv->pruned = k * (seed & 1);
        lv->exhausted = exhausted || k < 2;
        lv->estimated_total = k == 2 && !exhausted ? -1 : (int64_t)lv->schedules;
        lv->why_not = lv->exhausted ? NULL : strdup("budget spent");
    }
}

/* An incident with the search (found by the systematic search, its coverage) and a fix whose tiers
 * ran, the systematic one included. */
static void searched_incident(afd_incident *inc)
{
    afd_incident_init(inc);
    inc->verdict = AFD_VERDICT_REPRODUCED;
    inc->nodeid = strdup("t.py::t");
    inc->token = strdup("afd1:abc");
    inc->ci95_lo = inc->ci95_hi = 0.5;
    inc->seconds = 2;
    inc->has_search = 1;
    inc->search_random_runs = 200;
    inc->found_by = strdup("systematic");
    inc->has_search_sys = 1;
    sys_fill(&inc->search_sys, 3, 0);
    inc->has_fix = 1;
    inc->fix.kind = strdup("LOCK");
    inc->fix.tiers_ran = 1;
    for (int i = 0; i < AFD_TIER__COUNT; i++)
        inc->fix.tier_ran[i] = 1;
    inc->fix.token_failed_before = strdup("10/10");
    inc->fix.natural_rate_below = NAN;
    inc->fix.median_ms_before = inc->fix.median_ms_after = NAN;
    inc->fix.regression_why = strdup("none");
    inc->fix.has_sys_tier = 1;
    sys_fill(&inc->fix.sys_before, 4, 1);
    sys_fill(&inc->fix.sys_after, 0, 1);
}

TEST(search_and_systematic_tier_round_trip)
{
    afd_incident inc, back;
    searched_incident(&inc);
    char *first = NULL, *second = NULL, err[300] = "";
    CHECK_EQ_INT(afd_incident_to_json(&inc, &first, NULL), 0);
    CHECK(strstr(first,
                 "\"natural\": {\"runs\": 0, \"failed\": 0, \"ci95\": [0.5, 0.5]}, \"search\": "
                 "{\"random_runs\": 200, \"found_by\": \"systematic\", \"systematic\": {\"max_delays\": 2, "
                 "\"pruning\": \"classes\", \"runs\": 103, \"budget_spent\": true, \"clock_reads\": 3, "
                 "\"levels\": [{\"delays\": 0, \"schedules\": 3, \"cum_schedules\": 3, \"orders\": 1, "
                 "\"classes\": 1, \"failed\": 0, \"no_slot\": 0, \"pruned\": 0, \"exhausted\": true, "
                 "\"estimated_total\": 3, \"why_not\": null}, ") != NULL);
    CHECK(strstr(first, "\"exhausted\": false, \"estimated_total\": null, \"why_not\": \"budget spent\"}]}}, "
                        "\"token\": \"afd1:abc\"") != NULL);
    CHECK(strstr(first, "\"median_ms_after\": null}, \"systematic\": {\"before\": {\"max_delays\": 2, "
                        "\"pruning\": \"none\", \"runs\": 104,") != NULL);
    CHECK_EQ_INT(afd_incident_from_json(first, strlen(first), &back, err, sizeof err), 0);
    CHECK_EQ_STR(err, "");
    CHECK_EQ_INT(afd_incident_to_json(&back, &second, NULL), 0);
    CHECK_EQ_STR(second, first);
    CHECK_EQ_INT(back.has_search, 1);
    CHECK_EQ_U64(back.search_random_runs, 200);
    CHECK_EQ_STR(back.found_by, "systematic");
    CHECK_EQ_INT(back.has_search_sys, 1);
    CHECK_EQ_INT(back.search_sys.n_levels, 3);
    CHECK_EQ_INT(back.search_sys.pruning, 1);
    CHECK_EQ_INT(back.search_sys.levels[2].estimated_total, -1);
    CHECK_EQ_STR(back.search_sys.levels[2].why_not, "budget spent");
    CHECK(back.search_sys.levels[1].why_not == NULL);
    CHECK_EQ_U64(back.search_sys.levels[2].failed, 6);
    CHECK_EQ_INT(back.fix.has_sys_tier, 1);
    CHECK_EQ_U64(back.fix.sys_before.levels[2].failed, 8);
    CHECK_EQ_INT(back.fix.sys_after.levels[2].exhausted, 1);
    CHECK_EQ_INT(back.fix.sys_after.levels[2].estimated_total, 20);
    /* The tier is written after the other four whether or not they ran. */
    free(second);
    back.fix.tiers_ran = 0;
    CHECK_EQ_INT(afd_incident_to_json(&back, &second, NULL), 0);
    CHECK(strstr(second, "\"overhead\": \"not attempted\", \"systematic\": {\"before\": ") != NULL);
    afd_incident_finish(&back);
    CHECK_EQ_INT(afd_incident_from_json(second, strlen(second), &back, err, sizeof err), 0);
    CHECK_EQ_INT(back.fix.has_sys_tier, 1);
    CHECK_EQ_U64(back.fix.sys_before.runs, 104);
    free(first);
    free(second);
    afd_incident_finish(&back);
    afd_incident_finish(&inc);
}

TEST(documents_without_the_search_read_without_it)
{
    afd_incident inc;
    char *out = round_trip(SMALL, sizeof SMALL - 1, &inc);
    CHECK_EQ_INT(inc.has_search, 0);
    CHECK_EQ_INT(inc.has_search_sys, 0);
    CHECK(inc.found_by == NULL && !strstr(out, "\"search\""));
    free(out);
    afd_incident_finish(&inc);
    out = round_trip(FULL, sizeof FULL - 1, &inc);
    CHECK_EQ_INT(inc.has_search, 0);
    CHECK_EQ_INT(inc.fix.has_sys_tier, 0);
    CHECK(!strstr(out, "systematic"));
    free(out);
    afd_incident_finish(&inc);
}

#define LEVEL0                                                                                               \
    "{\"delays\": 0, \"schedules\": 1, \"cum_schedules\": 1, \"orders\": 1, \"classes\": 1, \"failed\": 0, " \
    "\"no_slot\": 0, \"pruned\": 0, \"exhausted\": true, \"estimated_total\": 1, \"why_not\": null}"
#define SYS_HEAD                                                                                             \
    "{\"max_delays\": 0, \"pruning\": \"none\", \"runs\": 1, \"budget_spent\": false, \"clock_reads\": 0, "

TEST(bad_search_keys_are_refused_naming_the_key)
{
    const char *at = "\"token\": null";
    check_refused(
        at, "\"search\": {\"random_runs\": \"x\", \"found_by\": null, \"systematic\": null}, \"token\": null",
        "search.random_runs: not an integer");
    check_refused(at, "\"search\": [], \"token\": null", "search: not an object");
    check_refused(at, "\"search\": {\"random_runs\": 1, \"systematic\": null}, \"token\": null",
                  "search.found_by: missing");
    check_refused(
        at, "\"search\": {\"random_runs\": 1, \"found_by\": \"luck\", \"systematic\": null}, \"token\": null",
        "search.found_by: unknown: \"luck\"");
    check_refused(at,
                  "\"search\": {\"random_runs\": 1, \"found_by\": null, \"systematic\": 3}, \"token\": null",
                  "search.systematic: not an object or null");
    check_refused(at,
                  "\"search\": {\"random_runs\": 1, \"found_by\": null, \"systematic\": " SYS_HEAD
                  "\"pruning\": \"some\", \"levels\": []}}, \"token\": null",
                  "search.systematic.pruning: neither \"none\" nor \"classes\"");
    check_refused(at,
                  "\"search\": {\"random_runs\": 1, \"found_by\": null, \"systematic\": " SYS_HEAD
                  "\"levels\": [" LEVEL0 ", " LEVEL0 ", " LEVEL0 ", " LEVEL0 ", " LEVEL0 ", " LEVEL0
                  "]}}, \"token\": null",
                  "search.systematic.levels: more than 5 levels");
    check_refused(at,
                  "\"search\": {\"random_runs\": 1, \"found_by\": null, \"systematic\": " SYS_HEAD
                  "\"levels\": [{\"delays\": 0}]}}, \"token\": null",
                  "search.systematic.levels.schedules: missing");
    check_refused(at,
                  "\"search\": {\"random_runs\": 1, \"found_by\": null, \"systematic\": " SYS_HEAD
                  "\"levels\": [{\"delays\": 0, \"schedules\": 1, \"cum_schedules\": 1, \"orders\": 1, "
                  "\"classes\": 1, \"failed\": 0, \"no_slot\": 0, \"pruned\": 0, \"exhausted\": true, "
                  "\"estimated_total\": -2, \"why_not\": null}]}}, \"token\": null",
                  "search.systematic.levels.estimated_total: out of range");
    const char *tier = "\"median_ms_after\": 1.5}";
    check_refused_in(FULL, tier, "\"median_ms_after\": 1.5}, \"systematic\": []",
                     "fix.tiers.systematic: not an object");
    check_refused_in(FULL, tier,
                     "\"median_ms_after\": 1.5}, \"systematic\": {\"before\": " SYS_HEAD "\"levels\": []}}",
                     "fix.tiers.systematic.after: missing");
    check_refused_in(FULL, tier,
                     "\"median_ms_after\": 1.5}, \"systematic\": {\"before\": " SYS_HEAD
                     "\"levels\": []}, \"after\": {\"max_delays\": 0, \"pruning\": \"none\", \"runs\": 1, "
                     "\"budget_spent\": 1, \"clock_reads\": 0, \"levels\": [" LEVEL0 "]}}",
                     "fix.tiers.systematic.after.budget_spent: not a boolean");
}

int main(void)
{
    RUN_TESTS("incident", T(full_document_round_trips_byte_for_byte),
              T(small_document_gains_only_the_schema_key), T(bad_documents_are_refused_naming_the_key),
              T(not_json_is_refused), T(lenient_read_leaves_what_it_cannot_read_unset),
              T(lenient_read_refuses_only_what_is_not_an_object), T(writer_replaces_bytes_that_are_not_utf8),
              T(verdict_table), T(search_and_systematic_tier_round_trip),
              T(documents_without_the_search_read_without_it), T(bad_search_keys_are_refused_naming_the_key));
}
