/* test_closure.c -- the zero run's measure (closure.h) on hand-built runs: closed only when every
 * step is measured and none can change the run; each way a run stays open, named; windows of
 * repeats in any order; a repeat that ran differently. */
#include "afd.h"
#include "closure.h"
#include "harness.h"
#include "sysenum.h"
#include "trace.h"
#include "tracebuild.h"

#include <string.h>

#define NONE UINT64_MAX

/* A run of n steps (task 1 runs them all) measuring [lo, lo + AFD_SYS_WINDOW): step i's margin is
 * margin[i] (NULL: none for every step), its flags flags[i] (NULL: 0), its loop.time() reads
 * reads_at (a step index, or -1 for none). */
static void run(afd_trace *t, uint32_t n, uint64_t lo, const uint64_t *margin, const uint8_t *flags,
                int64_t reads_at)
{
    CHECK_EQ_INT(afd_trace_init(t), 0);
    tb_task(t, 1, 0, tb_str(t, "main#0"));
    for (uint32_t i = 0; i < n; i++) {
        tb_wake(t, 1, 0, i + 1);
        tb_step(t, 1, i, AFD_NOSTR);
    }
    t->steps = n;
    for (uint32_t i = 0; i < n; i++) {
        if (i < lo || i >= lo + AFD_SYS_WINDOW)
            continue;
        tb_evx(t, AFD_EV_SLOT, flags ? flags[i] : 0, 1, i, i + 1, 250, margin ? margin[i] : NONE,
               (int64_t)i == reads_at ? 1 : 0);
    }
}

static int take(afd_closure *z, uint32_t n, uint64_t lo, const uint64_t *margin, const uint8_t *flags,
                int64_t reads_at, uint32_t trace_flags)
{
    afd_trace t;
    run(&t, n, lo, margin, flags, reads_at);
    t.flags |= trace_flags;
    int st = afd_closure_take(z, &t, lo);
    afd_trace_finish(&t);
    return st;
}

TEST(a_run_whose_steps_flip_nothing_is_closed)
{
    afd_closure z;
    afd_closure_init(&z);
    CHECK_EQ_INT(take(&z, 8, 0, NULL, NULL, -1, 0), AFD_CLOSURE_CLOSED);
    CHECK_EQ_U64(z.steps, 8);
    CHECK_EQ_U64(z.measured, 8);
    CHECK_EQ_U64(afd_closure_windows(&z), 1);
    CHECK_EQ_STR(afd_closure_name(z.state), "closed");
    /* final: a later run changes nothing */
    CHECK_EQ_INT(take(&z, 8, 0, NULL, NULL, 3, 0), AFD_CLOSURE_CLOSED);
}

TEST(each_way_to_stay_open_is_named)
{
    uint64_t margin[8] = {NONE, NONE, NONE, 5000, NONE, NONE, NONE, NONE};
    uint8_t deadline[8] = {0, 0, 0, AFD_SLOT_DEADLINE, 0, 0, 0, 0};
    afd_closure z;
    afd_closure_init(&z);
    CHECK_EQ_INT(take(&z, 8, 0, margin, NULL, -1, 0), AFD_CLOSURE_SLOT);
    CHECK_EQ_U64(z.steps, 8);
    CHECK_EQ_U64(z.measured, 0);
    /* a slot at a program's deadline whose step also moves another comparison: open */
    afd_closure_init(&z);
    CHECK_EQ_INT(take(&z, 8, 0, margin, deadline, -1, 0), AFD_CLOSURE_SLOT);
    afd_closure_init(&z);
    CHECK_EQ_INT(take(&z, 8, 0, NULL, NULL, 2, 0), AFD_CLOSURE_CLOCK_READ);
    afd_closure_init(&z);
    CHECK_EQ_INT(take(&z, 8, 0, NULL, NULL, -1, AFD_TRACE_RANDOM), AFD_CLOSURE_RANDOM);
    afd_closure_init(&z);
    CHECK_EQ_INT(take(&z, 8, 0, NULL, NULL, -1, AFD_TRACE_THREADS), AFD_CLOSURE_UNCONTROLLED);
    afd_closure_init(&z);
    CHECK_EQ_INT(take(&z, 8, 0, NULL, NULL, -1, AFD_TRACE_REAL_WAIT), AFD_CLOSURE_UNCONTROLLED);
    afd_closure_init(&z);
    CHECK_EQ_INT(take(&z, 8, 0, NULL, NULL, -1, AFD_TRACE_TRUNCATED), AFD_CLOSURE_UNMEASURED);
    afd_closure_init(&z);
    CHECK_EQ_INT(take(&z, 8, 0, NULL, NULL, -1, AFD_TRACE_STEP_LIMIT), AFD_CLOSURE_UNMEASURED);
    afd_closure_init(&z);
    CHECK_EQ_INT(afd_closure_take(&z, NULL, 0), AFD_CLOSURE_UNMEASURED);
    CHECK_EQ_STR(afd_closure_name(AFD_CLOSURE_CLOCK_READ), "clock_read");
    CHECK(strstr(afd_closure_words(AFD_CLOSURE_RANDOM), "random") != NULL);
}

TEST(an_idle_wake_up_keeps_it_open)
{
    afd_closure z;
    afd_closure_init(&z);
    afd_trace t;
    run(&t, 4, 0, NULL, NULL, -1);
    tb_evx(&t, AFD_EV_IDLE, 0, 0, 0, 0, 1000, 5000, 0);
    CHECK_EQ_INT(afd_closure_take(&z, &t, 0), AFD_CLOSURE_IDLE);
    afd_trace_finish(&t);
}

TEST(a_step_without_its_slot_is_unmeasured)
{
    afd_closure z;
    afd_closure_init(&z);
    afd_trace t;
    run(&t, 4, 0, NULL, NULL, -1);
    t.steps = 5; /* a fifth step ran and reported no slot */
    CHECK_EQ_INT(afd_closure_take(&z, &t, 0), AFD_CLOSURE_UNMEASURED);
    afd_trace_finish(&t);
    /* the first run must measure the first window */
    afd_closure_init(&z);
    CHECK_EQ_INT(take(&z, 100, AFD_SYS_WINDOW, NULL, NULL, -1, 0), AFD_CLOSURE_UNMEASURED);
}

TEST(steps_beyond_one_window_close_with_repeats_in_any_order)
{
    uint32_t n = 3 * AFD_SYS_WINDOW + 5;
    afd_closure z;
    afd_closure_init(&z);
    CHECK_EQ_INT(take(&z, n, 0, NULL, NULL, -1, 0), AFD_CLOSURE_PENDING);
    CHECK_EQ_U64(afd_closure_windows(&z), 4);
    CHECK_EQ_INT(take(&z, n, 3 * AFD_SYS_WINDOW, NULL, NULL, -1, 0), AFD_CLOSURE_PENDING);
    CHECK_EQ_INT(take(&z, n, AFD_SYS_WINDOW, NULL, NULL, -1, 0), AFD_CLOSURE_PENDING);
    CHECK_EQ_U64(z.measured, AFD_SYS_WINDOW + 5 + AFD_SYS_WINDOW);
    CHECK_EQ_INT(take(&z, n, 2 * AFD_SYS_WINDOW, NULL, NULL, -1, 0), AFD_CLOSURE_CLOSED);
    CHECK_EQ_U64(z.runs, 4);
    /* a slot in a later window opens it */
    uint64_t margin[3 * AFD_SYS_WINDOW + 5];
    for (uint32_t i = 0; i < n; i++)
        margin[i] = i == 2 * AFD_SYS_WINDOW + 7 ? 10 : NONE;
    afd_closure_init(&z);
    CHECK_EQ_INT(take(&z, n, 0, margin, NULL, -1, 0), AFD_CLOSURE_PENDING);
    CHECK_EQ_INT(take(&z, n, 2 * AFD_SYS_WINDOW, margin, NULL, -1, 0), AFD_CLOSURE_SLOT);
}

TEST(a_repeat_that_ran_differently_keeps_it_open)
{
    uint32_t n = AFD_SYS_WINDOW + 3;
    afd_closure z;
    afd_closure_init(&z);
    CHECK_EQ_INT(take(&z, n, 0, NULL, NULL, -1, 0), AFD_CLOSURE_PENDING);
    CHECK_EQ_INT(take(&z, n + 1, AFD_SYS_WINDOW, NULL, NULL, -1, 0), AFD_CLOSURE_DIFFERS);
    afd_closure_init(&z);
    CHECK_EQ_INT(take(&z, n, 0, NULL, NULL, -1, 0), AFD_CLOSURE_PENDING);
    afd_trace t;
    run(&t, n, AFD_SYS_WINDOW, NULL, NULL, -1);
    tb_op(&t, 1, AFD_NOSTR, tb_str(&t, "x"), 1); /* same steps, another order of events */
    CHECK_EQ_INT(afd_closure_take(&z, &t, AFD_SYS_WINDOW), AFD_CLOSURE_DIFFERS);
    afd_trace_finish(&t);
}

TEST(steps_that_move_only_deadlines_close_below_them)
{
    uint64_t margin[6] = {NONE, 900, NONE, 400, NONE, NONE};
    uint8_t crossing[6] = {
        0, AFD_SLOT_DEADLINE | AFD_SLOT_CROSSING, 0, AFD_SLOT_DEADLINE | AFD_SLOT_CROSSING, 0, 0};
    afd_closure z;
    afd_closure_init(&z);
    CHECK_EQ_INT(take(&z, 6, 0, margin, crossing, -1, 0), AFD_CLOSURE_DEADLINES);
    CHECK_EQ_U64(z.deadlines, 2);
    CHECK_EQ_STR(afd_closure_name(z.state), "closed_below_deadlines");
    /* one step that also moves something else keeps it open */
    crossing[3] = AFD_SLOT_DEADLINE;
    afd_closure_init(&z);
    CHECK_EQ_INT(take(&z, 6, 0, margin, crossing, -1, 0), AFD_CLOSURE_SLOT);
    CHECK_EQ_U64(z.deadlines, 0);
    /* and a loop.time() read still does */
    crossing[3] = AFD_SLOT_DEADLINE | AFD_SLOT_CROSSING;
    afd_closure_init(&z);
    CHECK_EQ_INT(take(&z, 6, 0, margin, crossing, 4, 0), AFD_CLOSURE_CLOCK_READ);
}

int main(void)
{
    RUN_TESTS("closure", T(a_run_whose_steps_flip_nothing_is_closed), T(each_way_to_stay_open_is_named),
              T(an_idle_wake_up_keeps_it_open), T(a_step_without_its_slot_is_unmeasured),
              T(steps_beyond_one_window_close_with_repeats_in_any_order),
              T(a_repeat_that_ran_differently_keeps_it_open),
              T(steps_that_move_only_deadlines_close_below_them));
}
