/* report_fix.c -- the HTML page's sections about the fix and how to reproduce: the policy gate,
 * the verification tiers, the diff, the replay command and the environment.
 *
 * Each section reads its keys as optional (a report of an investigation without --fix says so in
 * one line), and every string reaches the page through report_esc. */
#include "report_int.h"
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
    const char *g = report_jstr(check, "group");
    for (size_t i = 0; g && i + 1 < N_GATE_GROUPS; i++)
        if (strcmp(GATE_GROUPS[i].group, g) == 0)
            return i;
    return N_GATE_GROUPS - 1;
}

static void gate_check(afd_buf *out, const json_t *c)
{
    int passed = report_jbool(c, "passed") == 1; /* a check that does not say it passed did not */
    afd_buf_printf(out, "<li class=\"%s\"><span class=\"mark\" aria-hidden=\"true\">%s</span><code>",
                   passed ? "pass" : "fail", passed ? "&#10003;" : "&#10007;");
    report_esc_or_na(out, report_jstr(c, "check"));
    report_put(out, "</code> &mdash; ");
    const char *reason = report_jstr(c, "reason");
    if (reason)
        report_esc(out, reason);
    else
        report_put(out, passed ? "passed" : "failed");
    report_put(out, "</li>\n");
}

void report_sec_gate(page *pg)
{
    afd_buf *out = pg->out;
    const json_t *fix = json_object_get(pg->doc, "fix");
    const json_t *gate = json_object_get(fix, "gate");
    report_put(out, "<section id=\"gate\">\n<h2>Policy gate</h2>\n");
    if (!json_is_object(fix)) {
        report_put(out, "<p class=\"na\">No fix was attempted, so no gate ran (the investigation ran without "
                        "<code>--fix</code>).</p>\n</section>\n");
        return;
    }
    if (!json_array_size(gate)) {
        report_put(out, "<p class=\"na\">No gate checks were recorded.</p>\n</section>\n");
        return;
    }
    size_t total = json_array_size(gate), failed = 0, i, counts[N_GATE_GROUPS] = {0};
    json_t *c;
    json_array_foreach(gate, i, c)
    {
        failed += report_jbool(c, "passed") != 1;
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
            report_put(out, "<p class=\"na\">No checks in this group.</p>\n");
        else
            report_put(out, "<ul>\n");
        json_array_foreach(gate, i, c) if (gate_group_of(c) == g) gate_check(out, c);
        report_put(out, counts[g] ? "</ul>\n</div>\n" : "</div>\n");
    }
    report_put(out, "</section>\n");
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
        report_put(out, "<span class=\"not-attempted\">not attempted</span>");
    } else if (json_is_string(t)) {
        report_put(out, "<span class=\"not-attempted\">");
        report_esc(out, json_string_value(t));
        report_put(out, "</span>");
    } else {
        report_na(out);
    }
    report_put(out, "</li>\n");
    return NULL;
}

static void tier_replay(afd_buf *out, const json_t *tiers)
{
    const json_t *t = tier_open(out, tiers, "replay", "Replay");
    if (!t)
        return;
    report_put(out, "the failing token failed ");
    report_put_key(out, t, "token_failed_before");
    report_put(out, " before the fix; after it, passed ");
    report_put_key(out, t, "passed");
    report_put(out, "/");
    report_put_key(out, t, "runs");
    report_put(out, " under the identical schedule</li>\n");
}

static void tier_exploration(afd_buf *out, const json_t *tiers)
{
    const json_t *t = tier_open(out, tiers, "exploration", "Exploration");
    if (!t)
        return;
    report_put_key(out, t, "schedules");
    report_put(out, " schedules explored: ");
    report_put_key(out, t, "failed_before");
    report_put(out, " failed before the fix, ");
    report_put_key(out, t, "failed_after");
    report_put(out, " failed after it</li>\n");
}

static void tier_natural(afd_buf *out, const json_t *tiers)
{
    const json_t *t = tier_open(out, tiers, "natural", "Natural runs");
    double below;
    if (!t)
        return;
    report_put_key(out, t, "runs");
    report_put(out, " runs after the fix, ");
    report_put_key(out, t, "failed");
    report_put(out, " failed");
    if (report_jnum(t, "rate_below", &below)) {
        report_put(out, ": the failure rate is below ");
        report_put_pct(out, below);
        report_put(out, "% (rule of three, 95% confidence)");
    }
    report_put(out, "</li>\n");
}

static void put_ms_key(afd_buf *out, const json_t *t, const char *key)
{
    double v;
    if (report_jnum(t, key, &v))
        afd_buf_printf(out, "%.2f ms", v);
    else
        report_dash(out);
}

static void tier_overhead(afd_buf *out, const json_t *tiers)
{
    const json_t *t = tier_open(out, tiers, "overhead", "Overhead");
    if (!t)
        return;
    report_put(out, "median ");
    put_ms_key(out, t, "median_ms_before");
    report_put(out, " per run before the fix, ");
    put_ms_key(out, t, "median_ms_after");
    report_put(out, " after</li>\n");
}

static const char *yes_no(int b)
{
    return b == 1 ? "yes" : b == 0 ? "no" : "not recorded";
}

void report_sec_tiers(page *pg)
{
    afd_buf *out = pg->out;
    const json_t *fix = json_object_get(pg->doc, "fix");
    report_put(out, "<section id=\"tiers\">\n<h2>Verification</h2>\n");
    if (!json_is_object(fix)) {
        report_put(out, "<p class=\"na\">No fix was verified: the investigation ran without "
                        "<code>--fix</code>.</p>\n</section>\n");
        return;
    }
    const json_t *tiers = json_object_get(fix, "tiers");
    report_put(out, "<p class=\"lead\">What was established, and how. A tier that was not attempted is not "
                    "claimed.</p>\n<ul class=\"tiers\">\n");
    tier_replay(out, tiers);
    tier_exploration(out, tiers);
    tier_natural(out, tiers);
    tier_overhead(out, tiers);
    const json_t *rt = json_object_get(fix, "regression_test");
    report_put(out, "<li class=\"tier\" id=\"tier-regression\"><strong>Regression test</strong>: ");
    if (json_is_object(rt)) {
        report_put(out, "<code>");
        report_esc_or_na(out, report_jstr(rt, "node"));
        afd_buf_printf(out, "</code>; fails before the fix: %s; passes after: %s",
                       yes_no(report_jbool(rt, "fails_before")), yes_no(report_jbool(rt, "passes_after")));
    } else {
        report_na(out);
    }
    report_put(out, "</li>\n");
    afd_buf_printf(out,
                   "<li class=\"tier\" id=\"tier-verdict\"><strong>Verified</strong>: %s; "
                   "<strong>applied</strong>: %s</li>\n",
                   yes_no(report_jbool(fix, "verified")), yes_no(report_jbool(fix, "applied")));
    report_put(out, "</ul>\n</section>\n");
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
    report_put(out, "<pre class=\"diff\">");
    for (const char *p = diff; *p;) {
        size_t n = strcspn(p, "\n");
        afd_buf_printf(out, "<span class=\"%s\">", diff_class(&st, p, n));
        report_esc_n(out, p, n);
        report_put(out, "</span>");
        p += n;
        if (*p == '\n') {
            report_put(out, "\n");
            p++;
        }
    }
    report_put(out, "</pre>\n");
}

void report_sec_diff(page *pg)
{
    afd_buf *out = pg->out;
    const json_t *fix = json_object_get(pg->doc, "fix");
    report_put(out, "<section id=\"diff\">\n<h2>Proposed change</h2>\n");
    if (!json_is_object(fix)) {
        report_put(out, "<p class=\"na\">No fix was attempted: the investigation ran without "
                        "<code>--fix</code>.</p>\n</section>\n");
        return;
    }
    const char *diff = report_jstr(fix, "diff"), *kind = report_jstr(fix, "kind"),
               *why = report_jstr(fix, "why_none");
    if (diff && *diff) {
        report_put(out, "<p>");
        if (kind) {
            report_put(out, "A fix of kind <code>");
            report_esc(out, kind);
            report_put(out, "</code>");
        } else {
            report_put(out, "A fix");
        }
        afd_buf_printf(out,
                       "; verified: %s; applied: %s. Nothing is merged automatically: this is a diff "
                       "for a person to review.</p>\n",
                       yes_no(report_jbool(fix, "verified")), yes_no(report_jbool(fix, "applied")));
        put_diff(out, diff);
    } else {
        report_put(out, "<p class=\"why-none\">No fix is proposed");
        if (why && *why) {
            report_put(out, ": ");
            report_esc(out, why);
        }
        report_put(out, ".</p>\n");
    }
    report_put(out, "</section>\n");
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
    report_esc_n(out, cmd.data ? (const char *)cmd.data : "", cmd.len);
    report_put(out, "</pre>\n");
    if (cmd.err)
        out->err = cmd.err;
    afd_buf_finish(&cmd);
}

void report_sec_replay(page *pg)
{
    afd_buf *out = pg->out;
    const char *token = report_jstr(pg->doc, "token"), *ptoken = report_jstr(pg->doc, "passing_token");
    const char *nodeid = report_jstr(pg->doc, "nodeid");
    report_put(out, "<section id=\"replay\">\n<h2>Reproduce</h2>\n");
    if (token && *token) {
        report_put(out, "<p>Replays the failing schedule, deterministically:</p>\n");
        replay_command(out, "replay", token, nodeid);
    } else {
        report_put(out,
                   "<p class=\"na\">No failing schedule was recorded, so there is nothing to replay.</p>\n");
    }
    if (ptoken && *ptoken) {
        report_put(out, "<p>The nearest passing schedule:</p>\n");
        replay_command(out, "replay passing", ptoken, nodeid);
    }
    report_put(out, "</section>\n");
}

static void env_row(afd_buf *out, const char *name, const char *value)
{
    afd_buf_printf(out, "<dt>%s</dt><dd>", name);
    report_esc_or_na(out, value);
    report_put(out, "</dd>\n");
}

void report_sec_environment(page *pg, int64_t id)
{
    afd_buf *out = pg->out;
    const json_t *env = json_object_get(pg->doc, "environment");
    const afd_trace *t = pg->in->failing ? pg->in->failing : pg->in->passing;
    const char *python = report_jstr(env, "python"), *seed = report_jstr(env, "hash_seed");
    /* The traces carry the interpreter and the seed too: they fill in for an older document. */
    if (!python && t && *t->python)
        python = t->python;
    if (!seed && t && *t->hash_seed)
        seed = t->hash_seed;
    report_put(out, "<section id=\"environment\">\n<h2>Environment</h2>\n<dl class=\"env\">\n");
    env_row(out, "Python", python);
    env_row(out, "Platform", report_jstr(env, "platform"));
    env_row(out, "Hash seed", seed);
    report_put(out, "<dt>Token</dt><dd><code>");
    report_esc_or_na(out, report_jstr(pg->doc, "token"));
    report_put(out, "</code></dd>\n");
    double runs, secs;
    report_put(out, "<dt>Investigation</dt><dd>");
    if (report_jnum(pg->doc, "runs", &runs))
        afd_buf_printf(out, "%.0f runs", runs);
    else
        report_na(out);
    if (report_jnum(pg->doc, "seconds", &secs))
        afd_buf_printf(out, " in %.1f s", secs);
    report_put(out, "</dd>\n");
    if (id > 0)
        afd_buf_printf(out, "<dt>Incident</dt><dd>#%" PRId64 "</dd>\n", id);
    report_put(out, "</dl>\n</section>\n");
}
