/* test_delays.c -- which delays of a schedule a recorded run reached. */
#include "afd.h"
#include "delays.h"
#include "harness.h"
#include "token.h"
#include "trace.h"
#include "tracebuild.h"

/* A run of two tasks: refresh#0 (task 1) takes steps 0-2, use#0 (task 2) steps 0-1. */
static void two_tasks(afd_trace *t)
{
    CHECK_EQ_INT(afd_trace_init(t), 0);
    uint32_t refresh, use;
    CHECK_EQ_INT(afd_trace_add_string(t, "refresh#0", 9, &refresh), 0);
    CHECK_EQ_INT(afd_trace_add_string(t, "use#0", 5, &use), 0);
    afd_event evs[] = {
        tb_event(AFD_EV_TASK, 0, 1, 0, refresh),
        tb_event(AFD_EV_STEP, 0, 1, 0, AFD_NOSTR),
        tb_event(AFD_EV_TASK, 0, 2, 1, use),
        tb_event(AFD_EV_STEP, 0, 2, 0, AFD_NOSTR),
        tb_event(AFD_EV_STEP, 0, 1, 1, AFD_NOSTR),
        tb_event(AFD_EV_STEP, 0, 2, 1, AFD_NOSTR),
        tb_event(AFD_EV_STEP, 0, 1, 2, AFD_NOSTR),
        /* a step of a task with no TASK event, and a task id no recorder gives: never a match */
        tb_event(AFD_EV_STEP, 0, 7, 5, AFD_NOSTR),
        tb_event(AFD_EV_STEP, 0, 0xffffffffu, 5, AFD_NOSTR),
    };
    CHECK_EQ_INT(afd_trace_add_events(t, evs, (uint32_t)(sizeof evs / sizeof evs[0])), 0);
}

TEST(marks_exactly_the_steps_that_ran)
{
    afd_trace t;
    two_tasks(&t);
    afd_schedule s;
    afd_schedule_init(&s);
    CHECK_EQ_INT(afd_schedule_add_delay(&s, "refresh#0", 2, 1000), 0); /* ran */
    CHECK_EQ_INT(afd_schedule_add_delay(&s, "refresh#0", 3, 1000), 0); /* one step too many */
    CHECK_EQ_INT(afd_schedule_add_delay(&s, "use#0", 1, 1000), 0);     /* ran */
    CHECK_EQ_INT(afd_schedule_add_delay(&s, "use#1", 0, 1000), 0);     /* no such task */
    CHECK_EQ_INT(afd_schedule_add_delay(&s, "refresh#0", 0, 1000), 0); /* ran; same ordinal as use#0 0 */
    CHECK_EQ_INT(afd_schedule_add_delay(&s, "refresh", 0, 1000), 0);   /* a prefix is another label */
    CHECK_EQ_INT(afd_schedule_add_delay(&s, "task-7", 5, 1000), 0);    /* unnamed task */
    uint8_t ran[7] = {0};
    CHECK_EQ_INT(afd_delays_mark_ran(&s, &t, ran), 0);
    const uint8_t want[7] = {1, 0, 1, 0, 1, 0, 0};
    for (int i = 0; i < 7; i++)
        CHECK_EQ_INT(ran[i], want[i]);
    afd_schedule_finish(&s);
    afd_trace_finish(&t);
}

TEST(accumulates_over_runs_and_handles_empty_input)
{
    afd_trace t;
    two_tasks(&t);
    afd_schedule s;
    afd_schedule_init(&s);
    uint8_t none = 7;
    CHECK_EQ_INT(afd_delays_mark_ran(&s, &t, &none), 0); /* no delays: nothing to mark */
    CHECK_EQ_INT(none, 7);
    CHECK_EQ_INT(afd_schedule_add_delay(&s, "use#0", 9, 1), 0);
    uint8_t ran[1] = {1}; /* marked by an earlier run: stays marked */
    CHECK_EQ_INT(afd_delays_mark_ran(&s, &t, ran), 0);
    CHECK_EQ_INT(ran[0], 1);
    afd_trace empty;
    CHECK_EQ_INT(afd_trace_init(&empty), 0);
    ran[0] = 0;
    CHECK_EQ_INT(afd_delays_mark_ran(&s, &empty, ran), 0);
    CHECK_EQ_INT(ran[0], 0);
    afd_trace_finish(&empty);
    afd_schedule_finish(&s);
    afd_trace_finish(&t);
}

TEST(many_delays_on_one_ordinal)
{
    /* Every delay shares ordinal 0: the binary search must still visit each of them. */
    afd_trace t;
    CHECK_EQ_INT(afd_trace_init(&t), 0);
    afd_schedule s;
    afd_schedule_init(&s);
    char label[32];
    for (uint32_t i = 1; i <= 300; i++) {
        snprintf(label, sizeof label, "worker#%u", (unsigned)i);
        CHECK_EQ_INT(afd_schedule_add_delay(&s, label, i % 2 ? 0 : 1, 5), 0);
        uint32_t id;
        CHECK_EQ_INT(afd_trace_add_string(&t, label, strlen(label), &id), 0);
        afd_event e[2] = {tb_event(AFD_EV_TASK, 0, i, 0, id), tb_event(AFD_EV_STEP, 0, i, 0, AFD_NOSTR)};
        CHECK_EQ_INT(afd_trace_add_events(&t, e, 2), 0);
    }
    uint8_t ran[300] = {0};
    CHECK_EQ_INT(afd_delays_mark_ran(&s, &t, ran), 0);
    for (uint32_t i = 1; i <= 300; i++)
        CHECK_EQ_INT(ran[i - 1], i % 2); /* the odd ones are on step 0, which ran; step 1 never did */
    afd_schedule_finish(&s);
    afd_trace_finish(&t);
}

int main(void)
{
    RUN_TESTS("delays", T(marks_exactly_the_steps_that_ran), T(accumulates_over_runs_and_handles_empty_input),
              T(many_delays_on_one_ordinal));
}
