/* report_search.c -- the HTML page's "Search" section: how the failing schedule was searched for
 * (the random portfolio's runs, which search found it) and the systematic search's coverage.
 *
 * The coverage is syscov.c's wording, the same lines the terminal prints, one list item each and
 * escaped like every other text on the page. A document written before the search was recorded
 * has no "search" key, and the page then has no such section at all. */
#include "report_int.h"
#include "syscov.h"

#include <string.h>

/* The lines of text (each ending in "\n") as list items. */
static void put_lines(afd_buf *out, const afd_buf *text)
{
    const char *p = text->data ? (const char *)text->data : "", *end = p + text->len;
    report_put(out, "<ul class=\"coverage\">\n");
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        report_put(out, "<li>");
        report_esc_n(out, p, n);
        report_put(out, "</li>\n");
        p += n + (nl != NULL);
    }
    report_put(out, "</ul>\n");
}

static void found_by(afd_buf *out, const char *by)
{
    if (!by)
        report_put(out, "neither search found a failing schedule.");
    else if (strcmp(by, "random") == 0)
        report_put(out, "the failing schedule was found by the random portfolio.");
    else if (strcmp(by, "systematic") == 0)
        report_put(out, "the failing schedule was found by the systematic search.");
    else {
        report_put(out, "found by: ");
        report_esc(out, by); /* a search this version does not know, as the document names it */
        report_put(out, ".");
    }
}

static void systematic(afd_buf *out, const afd_incident_sys *s)
{
    report_put(out, "<p>The systematic search enumerates the schedules with at most ");
    report_put_count(out, s->max_delays == AFD_INCIDENT_UNSET32 ? AFD_INCIDENT_UNSET : s->max_delays);
    report_put(out, s->max_delays == 1 ? " delayed step" : " delayed steps");
    report_put(out, ", each delay swept across the slots the runs measured");
    if (s->pruning == 1)
        report_put(out, ", under class pruning (a schedule whose run lands in an interleaving class already "
                        "seen is not extended: a heuristic, so what it exhausted is what the pruning kept)");
    report_put(out, "; ");
    report_put_count(out, s->runs);
    report_put(out, s->runs == 1 ? " run" : " runs");
    if (s->budget_spent == 1)
        report_put(out, ", until the budget was spent");
    report_put(out, ".</p>\n");
    afd_buf text;
    afd_buf_init(&text);
    afd_sys_coverage_lines(s, &text, "");
    if (text.err)
        out->err = text.err;
    else if (text.len)
        put_lines(out, &text);
    else
        report_put(out, "<p class=\"na\">No level with a delay was recorded.</p>\n");
    afd_buf_finish(&text);
}

void report_sec_search(page *pg)
{
    afd_buf *out = pg->out;
    const afd_incident *inc = pg->inc;
    if (!inc->has_search)
        return;
    report_put(out, "<section id=\"search\">\n<h2>Search</h2>\n<p>The random portfolio ran ");
    report_put_count(out, inc->search_random_runs);
    report_put(out, inc->search_random_runs == 1 ? " schedule; " : " schedules; ");
    found_by(out, inc->found_by);
    report_put(out, "</p>\n");
    if (inc->has_search_sys)
        systematic(out, &inc->search_sys);
    else
        report_put(out, "<p class=\"na\">The systematic search did not run.</p>\n");
    report_put(out, "</section>\n");
}
