/* syscov.c -- the systematic search's coverage lines and its verification tier's sentence.
 *
 * A level's line counts the schedules with at most k delays (cum_schedules, orders, classes) and,
 * when the level was not exhausted, how far its own schedules (exactly k delays) got against the
 * estimate of their number. A heuristic reduction is named wherever it applied, so "exhausted" is
 * never read as a claim about the full space. A handful of lines per search: clarity over speed. */
#include "syscov.h"

#include <inttypes.h>
#include <string.h>

static const char *plural(uint64_t n)
{
    return n == 1 ? "" : "s";
}

/* A count, or "?" when a lenient read left it unset. */
static void put_n(afd_buf *b, uint64_t n)
{
    if (n == AFD_INCIDENT_UNSET)
        afd_buf_put(b, "?", 1);
    else
        afd_buf_printf(b, "%" PRIu64, n);
}

static void put_delays(afd_buf *b, uint32_t k)
{
    if (k == AFD_INCIDENT_UNSET32)
        afd_buf_printf(b, "? delays");
    else
        afd_buf_printf(b, "%" PRIu32 " delay%s", k, plural(k));
}

/* "N thing(s)": the count and its noun. */
static void put_counted(afd_buf *b, uint64_t n, const char *noun)
{
    put_n(b, n);
    afd_buf_printf(b, " %s%s", noun, plural(n));
}

/* Whether class pruning left out a schedule at level i or below: what it exhausted is then only
 * what the pruning kept. */
static int pruned_upto(const afd_incident_sys *s, uint32_t i)
{
    if (s->pruning != 1)
        return 0;
    for (uint32_t j = 0; j <= i && j < s->n_levels; j++)
        if (s->levels[j].pruned && s->levels[j].pruned != AFD_INCIDENT_UNSET)
            return 1;
    return 0;
}

static uint32_t n_levels(const afd_incident_sys *s)
{
    return s->n_levels < AFD_INCIDENT_SYS_LEVELS ? s->n_levels : AFD_INCIDENT_SYS_LEVELS;
}

static void level_line(const afd_incident_sys *s, uint32_t i, afd_buf *b, const char *indent)
{
    const afd_incident_sys_level *lv = &s->levels[i];
    int pruned = pruned_upto(s, i);
    afd_buf_printf(b, "%severy schedule with at most ", indent);
    put_delays(b, lv->delays);
    afd_buf_printf(b, ": ");
    put_n(b, lv->cum_schedules);
    afd_buf_printf(b, " run, ");
    put_counted(b, lv->orders, "distinct trace");
    afd_buf_printf(b, ", ");
    put_counted(b, lv->classes, "distinct interleaving");
    afd_buf_printf(b, ", ");
    if (lv->exhausted == 1) {
        afd_buf_printf(b, "exhausted%s", pruned ? " under class pruning" : "");
    } else {
        put_delays(b, lv->delays);
        afd_buf_printf(b, ": ");
        put_n(b, lv->schedules);
        if (lv->estimated_total >= 0)
            afd_buf_printf(b, " of an estimated %" PRId64 ", ", lv->estimated_total);
        else
            afd_buf_printf(b, " of an unknown number, ");
        afd_buf_printf(b, "%s%s",
                       lv->why_not            ? lv->why_not
                       : s->budget_spent == 1 ? "budget spent"
                                              : "not exhausted",
                       pruned ? ", under class pruning" : "");
    }
    if (lv->failed && lv->failed != AFD_INCIDENT_UNSET)
        afd_buf_printf(b, "; %" PRIu64 " of them failed", lv->failed);
    afd_buf_put_u8(b, '\n');
}

void afd_sys_coverage_lines(const afd_incident_sys *s, afd_buf *b, const char *indent)
{
    uint64_t no_slot = 0;
    if (!indent)
        indent = "";
    for (uint32_t i = 0; i < n_levels(s); i++) {
        const afd_incident_sys_level *lv = &s->levels[i];
        if (lv->delays >= 1)
            level_line(s, i, b, indent);
        if (lv->no_slot != AFD_INCIDENT_UNSET)
            no_slot += lv->no_slot;
    }
    if (no_slot)
        afd_buf_printf(b,
                       "%s%" PRIu64
                       " step delay%s flip no time comparison at any length: the same run as no delay, "
                       "not run again\n",
                       indent, no_slot, plural(no_slot));
    if (s->clock_reads && s->clock_reads != AFD_INCIDENT_UNSET)
        afd_buf_printf(b,
                       "%sthe program read loop.time() %" PRIu64 " time%s while a delay was in the clock: a "
                       "comparison it makes with such a reading is not measured\n",
                       indent, s->clock_reads, plural(s->clock_reads));
}

/* The failures among every schedule run (the levels count those of exactly k delays); unset when
 * any level's count is. */
static uint64_t all_failed(const afd_incident_sys *s)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < n_levels(s); i++) {
        if (s->levels[i].failed == AFD_INCIDENT_UNSET)
            return AFD_INCIDENT_UNSET;
        n += s->levels[i].failed;
    }
    return n;
}

/* "(61 schedules, 7 interleavings, exhausted)" of the last level; without the schedules when the
 * sentence has counted them already. */
static void tier_coverage(const afd_incident_sys *s, int schedules, afd_buf *b)
{
    uint32_t last = n_levels(s) - 1;
    const afd_incident_sys_level *lv = &s->levels[last];
    afd_buf_printf(b, " (");
    if (schedules) {
        put_counted(b, lv->cum_schedules, "schedule");
        afd_buf_printf(b, ", ");
    }
    put_counted(b, lv->classes, "interleaving");
    if (lv->exhausted == 1)
        afd_buf_printf(b, ", exhausted%s)", pruned_upto(s, last) ? " under class pruning" : "");
    else if (lv->why_not)
        afd_buf_printf(b, ", not exhausted: %s)", lv->why_not);
    else
        afd_buf_printf(b, ", not exhausted)");
}

void afd_sys_tier_sentence(const afd_incident_sys *before, const afd_incident_sys *after, afd_buf *b)
{
    if (!n_levels(after)) {
        afd_buf_printf(b, "systematic: no schedule was run after the fix");
        return;
    }
    const afd_incident_sys_level *lv = &after->levels[n_levels(after) - 1];
    uint64_t failed = all_failed(after);
    if (failed && failed != AFD_INCIDENT_UNSET) {
        afd_buf_printf(b, "systematic: %" PRIu64 " of ", failed);
        put_n(b, lv->cum_schedules);
        afd_buf_printf(b, " schedule%s with at most ", plural(lv->cum_schedules));
        put_delays(b, lv->delays);
        afd_buf_printf(b, " still fail%s after the fix", failed == 1 ? "s" : "");
    } else if (failed == AFD_INCIDENT_UNSET) {
        afd_buf_printf(b, "systematic: the schedules with at most ");
        put_delays(b, lv->delays);
        afd_buf_printf(b, " after the fix: how many failed is not recorded");
    } else if (lv->exhausted == 1) {
        afd_buf_printf(b, "systematic: every schedule with at most ");
        put_delays(b, lv->delays);
        afd_buf_printf(b, " passes after the fix");
    } else {
        afd_buf_printf(b, "systematic: no schedule with at most ");
        put_delays(b, lv->delays);
        afd_buf_printf(b, " failed after the fix");
    }
    tier_coverage(after, !failed || failed == AFD_INCIDENT_UNSET, b);
    if (!before || !n_levels(before))
        return;
    const afd_incident_sys_level *bl = &before->levels[n_levels(before) - 1];
    afd_buf_printf(b, "; ");
    put_n(b, all_failed(before));
    if (bl->cum_schedules == lv->cum_schedules) {
        afd_buf_printf(b, " of them failed before");
    } else {
        afd_buf_printf(b, " of ");
        put_n(b, bl->cum_schedules);
        afd_buf_printf(b, " failed before");
    }
}
