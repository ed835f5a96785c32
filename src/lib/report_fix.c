/* report_fix.c -- the HTML page's sections about the fix and how to reproduce: the policy gate,
 * the verification tiers, the diff, the replay command and the environment.
 *
 * Each section reads the incident's fields as possibly unset (a report of an investigation
 * without --fix says so in one line), and every string reaches the page through report_esc. */
#include "report_int.h"
#include "afd.h"
#include "shell.h"
#include "syscov.h"

#include <inttypes.h>
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

static size_t gate_group_of(const afd_incident_gate *check)
{
    const char *g = check->group;
    for (size_t i = 0; g && i + 1 < N_GATE_GROUPS; i++)
        if (strcmp(GATE_GROUPS[i].group, g) == 0)
            return i;
    return N_GATE_GROUPS - 1;
}

static void gate_check(afd_buf *out, const afd_incident_gate *c)
{
    int passed = c->passed == 1; /* a check that does not say it passed did not */
    afd_buf_printf(out, "<li class=\"%s\"><span class=\"mark\" aria-hidden=\"true\">%s</span><code>",
                   passed ? "pass" : "fail", passed ? "&#10003;" : "&#10007;");
    report_esc_or_na(out, c->check);
    report_put(out, "</code> &mdash; ");
    const char *reason = c->reason;
    if (reason)
        report_esc(out, reason);
    else
        report_put(out, passed ? "passed" : "failed");
    report_put(out, "</li>\n");
}

void report_sec_gate(page *pg)
{
    afd_buf *out = pg->out;
    const afd_incident_fix *fix = &pg->inc->fix;
    const afd_incident_gate *gate = fix->gate;
    report_put(out, "<section id=\"gate\">\n<h2>Policy gate</h2>\n");
    if (!pg->inc->has_fix) {
        report_put(out, "<p class=\"na\">No fix was attempted, so no gate ran (the investigation ran without "
                        "<code>--fix</code>).</p>\n</section>\n");
        return;
    }
    if (!fix->n_gate) {
        report_put(out, "<p class=\"na\">No gate checks were recorded.</p>\n</section>\n");
        return;
    }
    size_t total = fix->n_gate, failed = 0, counts[N_GATE_GROUPS] = {0};
    for (size_t i = 0; i < total; i++) {
        failed += gate[i].passed != 1;
        counts[gate_group_of(&gate[i])]++;
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
        for (size_t i = 0; i < total; i++)
            if (gate_group_of(&gate[i]) == g)
                gate_check(out, &gate[i]);
        report_put(out, counts[g] ? "</ul>\n</div>\n" : "</div>\n");
    }
    report_put(out, "</section>\n");
}

/* ---- 6. verification tiers ---- */

/* A tier the document gives as a string ("not attempted") is printed as that string and never as a
 * result; a missing tier is not available. Returns whether the tier has results to print. */
static int tier_open(afd_buf *out, const afd_incident_fix *f, int tier, const char *key, const char *title)
{
    afd_buf_printf(out, "<li class=\"tier\" id=\"tier-%s\"><strong>%s</strong>: ", key, title);
    if (f->tier_ran[tier])
        return 1;
    if (f->tier_text[tier]) {
        report_put(out, "<span class=\"not-attempted\">");
        report_esc(out, f->tier_text[tier]);
        report_put(out, "</span>");
    } else {
        report_na(out);
    }
    report_put(out, "</li>\n");
    return 0;
}

static void tier_replay(afd_buf *out, const afd_incident_fix *f)
{
    if (!tier_open(out, f, AFD_TIER_REPLAY, "replay", "Replay"))
        return;
    report_put(out, "the failing token failed ");
    report_put_text(out, f->token_failed_before);
    report_put(out, " before the fix; after it, passed ");
    report_put_count(out, f->replay_passed);
    report_put(out, "/");
    report_put_count(out, f->replay_runs);
    report_put(out, " under the identical schedule</li>\n");
}

static void tier_exploration(afd_buf *out, const afd_incident_fix *f)
{
    if (!tier_open(out, f, AFD_TIER_EXPLORATION, "exploration", "Exploration"))
        return;
    report_put_count(out, f->explore_schedules);
    report_put(out, " schedules explored: ");
    report_put_count(out, f->explore_failed_before);
    report_put(out, " failed before the fix, ");
    report_put_count(out, f->explore_failed_after);
    report_put(out, " failed after it</li>\n");
}

/* The systematic tier in syscov.c's sentence (its "systematic: " is the item's title here); only
 * a document that gives the tier lists it. */
static void tier_systematic(afd_buf *out, const afd_incident_fix *f)
{
    static const char lead[] = "systematic: ";
    if (!f->has_sys_tier)
        return;
    afd_buf s;
    afd_buf_init(&s);
    afd_sys_tier_sentence(&f->sys_before, &f->sys_after, &s);
    const char *text = s.data ? (const char *)s.data : "";
    size_t n = s.len;
    if (n >= sizeof lead - 1 && memcmp(text, lead, sizeof lead - 1) == 0)
        text += sizeof lead - 1, n -= sizeof lead - 1;
    report_put(out, "<li class=\"tier\" id=\"tier-systematic\"><strong>Systematic</strong>: ");
    report_esc_n(out, text, n);
    report_put(out, "</li>\n");
    if (s.err)
        out->err = s.err;
    afd_buf_finish(&s);
}

static void tier_natural(afd_buf *out, const afd_incident_fix *f)
{
    if (!tier_open(out, f, AFD_TIER_NATURAL, "natural", "Natural runs"))
        return;
    report_put_count(out, f->natural_runs);
    report_put(out, " runs after the fix, ");
    report_put_count(out, f->natural_failed);
    report_put(out, " failed");
    if (!isnan(f->natural_rate_below)) {
        report_put(out, ": the failure rate is below ");
        report_put_pct(out, f->natural_rate_below);
        report_put(out, "% (rule of three, 95% confidence)");
    }
    report_put(out, "</li>\n");
}

static void put_ms(afd_buf *out, double v)
{
    if (!isnan(v))
        afd_buf_printf(out, "%.2f ms", v);
    else
        report_dash(out);
}

static void tier_overhead(afd_buf *out, const afd_incident_fix *f)
{
    if (!tier_open(out, f, AFD_TIER_OVERHEAD, "overhead", "Overhead"))
        return;
    report_put(out, "median ");
    put_ms(out, f->median_ms_before);
    report_put(out, " per run before the fix, ");
    put_ms(out, f->median_ms_after);
    report_put(out, " after</li>\n");
}

static const char *yes_no(int b)
{
    return b == 1 ? "yes" : b == 0 ? "no" : "not recorded";
}

void report_sec_tiers(page *pg)
{
    afd_buf *out = pg->out;
    const afd_incident_fix *fix = &pg->inc->fix;
    report_put(out, "<section id=\"tiers\">\n<h2>Verification</h2>\n");
    if (!pg->inc->has_fix) {
        report_put(out, "<p class=\"na\">No fix was verified: the investigation ran without "
                        "<code>--fix</code>.</p>\n</section>\n");
        return;
    }
    report_put(out, "<p class=\"lead\">What was established, and how. A tier that was not attempted is not "
                    "claimed.</p>\n<ul class=\"tiers\">\n");
    tier_replay(out, fix);
    tier_exploration(out, fix);
    tier_systematic(out, fix);
    tier_natural(out, fix);
    tier_overhead(out, fix);
    report_put(out, "<li class=\"tier\" id=\"tier-regression\"><strong>Regression test</strong>: ");
    if (fix->has_regression_test) {
        report_put(out, "<code>");
        report_esc_or_na(out, fix->regression_node);
        afd_buf_printf(out, "</code>; fails before the fix: %s; passes after: %s",
                       yes_no((int)fix->fails_before), yes_no((int)fix->passes_after));
    } else {
        report_na(out);
    }
    report_put(out, "</li>\n");
    afd_buf_printf(out,
                   "<li class=\"tier\" id=\"tier-verdict\"><strong>Verified</strong>: %s; "
                   "<strong>applied</strong>: %s</li>\n",
                   yes_no(fix->verified), yes_no(fix->applied));
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
    const afd_incident_fix *fix = &pg->inc->fix;
    report_put(out, "<section id=\"diff\">\n<h2>Proposed change</h2>\n");
    if (!pg->inc->has_fix) {
        report_put(out, "<p class=\"na\">No fix was attempted: the investigation ran without "
                        "<code>--fix</code>.</p>\n</section>\n");
        return;
    }
    const char *diff = fix->diff, *kind = fix->kind, *why = fix->why_none;
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
                       yes_no(fix->verified), yes_no(fix->applied));
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
    const char *token = pg->inc->token, *ptoken = pg->inc->passing_token, *nodeid = pg->inc->nodeid;
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
    const afd_incident *inc = pg->inc;
    const afd_trace *t = pg->in->failing ? pg->in->failing : pg->in->passing;
    const char *python = inc->python, *seed = inc->hash_seed;
    /* The traces carry the interpreter and the seed too: they fill in for an older document. */
    if (!python && t && *t->python)
        python = t->python;
    if (!seed && t && *t->hash_seed)
        seed = t->hash_seed;
    report_put(out, "<section id=\"environment\">\n<h2>Environment</h2>\n<dl class=\"env\">\n");
    env_row(out, "Python", python);
    env_row(out, "Platform", inc->platform);
    env_row(out, "Hash seed", seed);
    report_put(out, "<dt>Token</dt><dd><code>");
    report_esc_or_na(out, inc->token);
    report_put(out, "</code></dd>\n");
    report_put(out, "<dt>Investigation</dt><dd>");
    if (inc->runs != AFD_INCIDENT_UNSET)
        afd_buf_printf(out, "%.0f runs", (double)inc->runs);
    else
        report_na(out);
    if (!isnan(inc->seconds))
        afd_buf_printf(out, " in %.1f s", inc->seconds);
    report_put(out, "</dd>\n");
    if (id > 0)
        afd_buf_printf(out, "<dt>Incident</dt><dd>#%" PRId64 "</dd>\n", id);
    report_put(out, "</dl>\n</section>\n");
}
