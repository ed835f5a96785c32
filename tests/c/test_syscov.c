/* test_syscov.c -- the systematic search's coverage lines and its tier sentence, word for word:
 * "every" only of what was exhausted, class pruning named where it left a schedule out, singular
 * and plural, an unknown estimate, and the verification tier before and after a fix. */
#include "harness.h"
#include "incident.h"
#include "syscov.h"

/* Level 0 (the zero schedule) and level 1 exhausted with 37 schedules at most 1 delay; level 2
 * (exactly 2 delays: 412 of an estimated 1900) cut by the budget. */
static afd_incident_sys two_levels(void)
{
    afd_incident_sys s;
    memset(&s, 0, sizeof s);
    s.max_delays = 2;
    s.runs = 480;
    s.budget_spent = 1;
    s.n_levels = 3;
    s.levels[0] = (afd_incident_sys_level){0, 1, 1, 1, 1, 0, 0, 0, 1, 1, NULL};
    s.levels[1] = (afd_incident_sys_level){1, 36, 37, 9, 5, 0, 4, 0, 1, 36, NULL};
    s.levels[2] = (afd_incident_sys_level){2, 412, 449, 40, 12, 3, 0, 0, 0, 1900, NULL};
    return s;
}

/* The text the function appended, NUL-terminated (b keeps it; the caller finishes b). */
static const char *text_of(afd_buf *b)
{
    afd_buf_put(b, "", 1);
    CHECK_EQ_INT(b->err, 0);
    return (const char *)b->data;
}

static void check_lines(const afd_incident_sys *s, const char *indent, const char *want)
{
    afd_buf b;
    afd_buf_init(&b);
    afd_sys_coverage_lines(s, &b, indent);
    CHECK_EQ_STR(text_of(&b), want);
    afd_buf_finish(&b);
}

static void check_tier(const afd_incident_sys *before, const afd_incident_sys *after, const char *want)
{
    afd_buf b;
    afd_buf_init(&b);
    afd_sys_tier_sentence(before, after, &b);
    CHECK_EQ_STR(text_of(&b), want);
    afd_buf_finish(&b);
}

TEST(coverage_one_line_per_level_with_a_delay)
{
    afd_incident_sys s = two_levels();
    check_lines(
        &s, "  ",
        "  every schedule with at most 1 delay: 37 run, 9 distinct traces, 5 distinct interleavings, "
        "exhausted\n"
        "  every schedule with at most 2 delays: 449 run, 40 distinct traces, 12 distinct "
        "interleavings, 2 delays: 412 of an estimated 1900, budget spent; 3 of them failed\n"
        "  4 step delays flip no time comparison at any length: the same run as no delay, not run again\n");
}

TEST(coverage_says_why_not_an_unknown_estimate_and_the_clock_reads)
{
    afd_incident_sys s = two_levels();
    char why[] = "not begun";
    s.levels[1].no_slot = 0;
    s.levels[1].orders = 1;
    s.levels[1].classes = 1;
    s.levels[2].estimated_total = -1;
    s.levels[2].why_not = why;
    s.levels[2].failed = 0;
    s.clock_reads = 1;
    check_lines(&s, "",
                "every schedule with at most 1 delay: 37 run, 1 distinct trace, 1 distinct interleaving, "
                "exhausted\n"
                "every schedule with at most 2 delays: 449 run, 40 distinct traces, 12 distinct "
                "interleavings, 2 delays: 412 of an unknown number, not begun\n"
                "the program read loop.time() 1 time while a delay was in the clock: a comparison it makes "
                "with such a reading is not measured\n");
}

TEST(coverage_names_class_pruning_from_the_level_it_pruned)
{
    afd_incident_sys s = two_levels();
    s.pruning = 1;
    s.levels[1].no_slot = 0;
    s.levels[2].exhausted = 1;
    s.levels[2].pruned = 30; /* schedules of one delay not extended: level 1 itself is complete */
    check_lines(&s, "",
                "every schedule with at most 1 delay: 37 run, 9 distinct traces, 5 distinct interleavings, "
                "exhausted\n"
                "every schedule with at most 2 delays: 449 run, 40 distinct traces, 12 distinct "
                "interleavings, exhausted under class pruning; 3 of them failed\n");
    s.levels[2].exhausted = 0;
    check_lines(&s, "",
                "every schedule with at most 1 delay: 37 run, 9 distinct traces, 5 distinct interleavings, "
                "exhausted\n"
                "every schedule with at most 2 delays: 449 run, 40 distinct traces, 12 distinct "
                "interleavings, 2 delays: 412 of an estimated 1900, budget spent, under class pruning; 3 of "
                "them failed\n");
    s.pruning = 0; /* pruned counts without the pruning are not a claim of it */
    s.levels[2].exhausted = 1;
    check_lines(&s, "",
                "every schedule with at most 1 delay: 37 run, 9 distinct traces, 5 distinct interleavings, "
                "exhausted\n"
                "every schedule with at most 2 delays: 449 run, 40 distinct traces, 12 distinct "
                "interleavings, exhausted; 3 of them failed\n");
}

TEST(coverage_of_a_search_without_delays_is_empty)
{
    afd_incident_sys s = two_levels();
    s.n_levels = 1;
    check_lines(&s, "  ", "");
}

/* After the fix: 61 schedules with at most 2 delays, 7 interleavings, none failed; before: 12
 * failures among as many schedules. */
static void tier_pair(afd_incident_sys *before, afd_incident_sys *after)
{
    *before = two_levels();
    *after = two_levels();
    for (int i = 0; i < 3; i++)
        before->levels[i].exhausted = after->levels[i].exhausted = 1;
    before->levels[2].cum_schedules = after->levels[2].cum_schedules = 61;
    before->levels[1].failed = 9;
    before->levels[2].failed = 3;
    after->levels[2].failed = 0;
    after->levels[2].classes = 7;
}

TEST(tier_sentence_passes_after_the_fix)
{
    afd_incident_sys before, after;
    tier_pair(&before, &after);
    check_tier(&before, &after,
               "systematic: every schedule with at most 2 delays passes after the fix (61 schedules, 7 "
               "interleavings, exhausted); 12 of them failed before");
    after.pruning = 1;
    after.levels[2].pruned = 5;
    check_tier(&before, &after,
               "systematic: every schedule with at most 2 delays passes after the fix (61 schedules, 7 "
               "interleavings, exhausted under class pruning); 12 of them failed before");
    check_tier(NULL, &after,
               "systematic: every schedule with at most 2 delays passes after the fix (61 schedules, 7 "
               "interleavings, exhausted under class pruning)");
}

TEST(tier_sentence_never_says_every_when_not_exhausted)
{
    afd_incident_sys before, after;
    char why[] = "budget spent";
    tier_pair(&before, &after);
    after.levels[2].exhausted = 0;
    after.levels[2].why_not = why;
    before.levels[2].cum_schedules = 58;
    check_tier(&before, &after,
               "systematic: no schedule with at most 2 delays failed after the fix (61 schedules, 7 "
               "interleavings, not exhausted: budget spent); 12 of 58 failed before");
    after.levels[2].why_not = NULL;
    after.levels[2].cum_schedules = 1;
    after.levels[2].classes = 1;
    check_tier(NULL, &after,
               "systematic: no schedule with at most 2 delays failed after the fix (1 schedule, 1 "
               "interleaving, not exhausted)");
}

TEST(tier_sentence_counts_what_still_fails)
{
    afd_incident_sys before, after;
    tier_pair(&before, &after);
    after.levels[1].failed = 2;
    after.levels[2].failed = 1;
    check_tier(&before, &after,
               "systematic: 3 of 61 schedules with at most 2 delays still fail after the fix (7 "
               "interleavings, exhausted); 12 of them failed before");
    after.levels[1].failed = 0;
    after.n_levels = 2; /* a search of at most 1 delay */
    after.levels[1].cum_schedules = 37;
    after.levels[1].failed = 1;
    after.levels[2].failed = 0;
    check_tier(NULL, &after,
               "systematic: 1 of 37 schedules with at most 1 delay still fails after the fix (5 "
               "interleavings, exhausted)");
}

TEST(unset_counts_are_question_marks)
{
    afd_incident_sys s = two_levels();
    s.levels[1].cum_schedules = AFD_INCIDENT_UNSET;
    s.levels[1].no_slot = AFD_INCIDENT_UNSET;
    s.levels[1].exhausted = -1;
    s.n_levels = 2;
    check_lines(&s, "",
                "every schedule with at most 1 delay: ? run, 9 distinct traces, 5 distinct interleavings, 1 "
                "delay: 36 of an estimated 36, budget spent\n");
    s.levels[0].failed = AFD_INCIDENT_UNSET;
    check_tier(NULL, &s,
               "systematic: the schedules with at most 1 delay after the fix: how many failed is not "
               "recorded (? schedules, 5 interleavings, not exhausted)");
    s.n_levels = 0;
    check_tier(NULL, &s, "systematic: no schedule was run after the fix");
}

int main(void)
{
    RUN_TESTS("syscov", T(coverage_one_line_per_level_with_a_delay),
              T(coverage_says_why_not_an_unknown_estimate_and_the_clock_reads),
              T(coverage_names_class_pruning_from_the_level_it_pruned),
              T(coverage_of_a_search_without_delays_is_empty), T(tier_sentence_passes_after_the_fix),
              T(tier_sentence_never_says_every_when_not_exhausted), T(tier_sentence_counts_what_still_fails),
              T(unset_counts_are_question_marks));
}
