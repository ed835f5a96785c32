/* test_iclass.c -- interleaving-class fingerprints over hand-built traces. */
#include "afd.h"
#include "harness.h"
#include "iclass.h"
#include "tracebuild.h"

#include <stdlib.h>

/* One access of a script: the task's label, 'r' or 'w', the resource. */
typedef struct spec {
    const char *task;
    char rw;
    const char *res;
} spec;

#define MAX_TASKS 8

/* A run of the script: `pad` unused strings (to move every string index), each task created (in
 * the order of labels[], with the ids given), then one step per access, each an explicit
 * operation. */
static void build(afd_trace *t, int pad, const char *const *labels, const uint32_t *ids, int n_tasks,
                  const spec *s, int n)
{
    CHECK_EQ_INT(afd_trace_init(t), 0);
    for (int i = 0; i < pad; i++)
        tb_str(t, "unused");
    for (int i = 0; i < n_tasks; i++)
        tb_task(t, ids[i], 0, tb_str(t, labels[i]));
    for (int k = 0; k < n; k++) {
        uint32_t id = 0;
        for (int i = 0; i < n_tasks; i++)
            if (strcmp(labels[i], s[k].task) == 0)
                id = ids[i];
        CHECK(id != 0);
        tb_wake(t, id, 0, (uint32_t)k + 1);
        tb_op(t, id, AFD_NOSTR, tb_str(t, s[k].res), s[k].rw == 'w');
        tb_step(t, id, (uint32_t)k, AFD_NOSTR);
    }
}

static const char *const ABC[] = {"a#0", "b#0", "c#0"};
static const uint32_t IDS[] = {1, 2, 3};

static uint64_t fp_of(const spec *s, int n, uint32_t *n_access)
{
    afd_trace t;
    build(&t, 0, ABC, IDS, 3, s, n);
    uint64_t fp = 0;
    CHECK_EQ_INT(afd_iclass_fingerprint(&t, &fp, n_access), 0);
    afd_trace_finish(&t);
    return fp;
}

#define N(arr) ((int)(sizeof arr / sizeof arr[0]))

TEST(reads_permuted_between_writes_are_one_class)
{
    const spec one[] = {{"a#0", 'w', "X"}, {"b#0", 'r', "X"}, {"c#0", 'r', "X"},
                        {"a#0", 'w', "X"}, {"c#0", 'r', "X"}, {"b#0", 'r', "X"}};
    const spec two[] = {{"a#0", 'w', "X"}, {"c#0", 'r', "X"}, {"b#0", 'r', "X"},
                        {"a#0", 'w', "X"}, {"b#0", 'r', "X"}, {"c#0", 'r', "X"}};
    uint32_t n1 = 0, n2 = 0;
    CHECK_EQ_U64(fp_of(one, N(one), &n1), fp_of(two, N(two), &n2));
    CHECK_EQ_INT(n1, 6);
    CHECK_EQ_INT(n2, 6);
}

TEST(two_writes_swapped_differ)
{
    const spec one[] = {{"a#0", 'w', "X"}, {"b#0", 'w', "X"}, {"c#0", 'r', "X"}};
    const spec two[] = {{"b#0", 'w', "X"}, {"a#0", 'w', "X"}, {"c#0", 'r', "X"}};
    CHECK(fp_of(one, N(one), NULL) != fp_of(two, N(two), NULL));
}

TEST(a_read_moved_across_a_write_differs)
{
    const spec before[] = {{"b#0", 'r', "X"}, {"a#0", 'w', "X"}};
    const spec after[] = {{"a#0", 'w', "X"}, {"b#0", 'r', "X"}};
    CHECK(fp_of(before, N(before), NULL) != fp_of(after, N(after), NULL));
    /* the same task's two reads: one on each side of the write, or both before it */
    const spec split[] = {{"b#0", 'r', "X"}, {"a#0", 'w', "X"}, {"b#0", 'r', "X"}};
    const spec both[] = {{"b#0", 'r', "X"}, {"b#0", 'r', "X"}, {"a#0", 'w', "X"}};
    CHECK(fp_of(split, N(split), NULL) != fp_of(both, N(both), NULL));
}

TEST(accesses_to_different_resources_commute)
{
    const spec one[] = {{"a#0", 'w', "X"}, {"b#0", 'w', "Y"}, {"a#0", 'r', "Y"},
                        {"b#0", 'r', "X"}, {"c#0", 'w', "Z"}, {"a#0", 'w', "X"}};
    const spec two[] = {{"c#0", 'w', "Z"}, {"b#0", 'w', "Y"}, {"a#0", 'w', "X"},
                        {"a#0", 'r', "Y"}, {"b#0", 'r', "X"}, {"a#0", 'w', "X"}};
    CHECK_EQ_U64(fp_of(one, N(one), NULL), fp_of(two, N(two), NULL));
    /* ... but not the order on one resource: b's read of X after a's second write */
    const spec three[] = {{"c#0", 'w', "Z"}, {"b#0", 'w', "Y"}, {"a#0", 'w', "X"},
                          {"a#0", 'r', "Y"}, {"a#0", 'w', "X"}, {"b#0", 'r', "X"}};
    CHECK(fp_of(one, N(one), NULL) != fp_of(three, N(three), NULL));
}

TEST(renumbered_tasks_with_the_same_labels_are_one_class)
{
    const spec s[] = {{"a#0", 'w', "X"}, {"b#0", 'r', "X"}, {"c#0", 'w', "X"}, {"b#0", 'w', "Y"}};
    afd_trace t1, t2;
    build(&t1, 0, ABC, IDS, 3, s, N(s));
    /* other ids, tasks created (and their labels interned) in another order */
    const char *const labels[] = {"c#0", "a#0", "b#0"};
    const uint32_t ids[] = {4, 9, 7};
    build(&t2, 5, labels, ids, 3, s, N(s)); /* and other string indices */
    uint64_t f1 = 0, f2 = 0;
    CHECK_EQ_INT(afd_iclass_fingerprint(&t1, &f1, NULL), 0);
    CHECK_EQ_INT(afd_iclass_fingerprint(&t2, &f2, NULL), 0);
    CHECK_EQ_U64(f1, f2);
    afd_trace_finish(&t1);
    afd_trace_finish(&t2);
}

TEST(different_labels_differ)
{
    const spec one[] = {{"a#0", 'w', "X"}, {"b#0", 'r', "X"}};
    const spec two[] = {{"a#0", 'w', "X"}, {"c#0", 'r', "X"}};
    CHECK(fp_of(one, N(one), NULL) != fp_of(two, N(two), NULL));
}

/* The primitives' events: which are reads, which writes, and CREATE is no access. */
static uint64_t sync_run(int first, int second, int with_create, uint32_t *n_access)
{
    afd_trace t;
    CHECK_EQ_INT(afd_trace_init(&t), 0);
    uint32_t ev = tb_str(&t, "Event@e.py:1");
    tb_task(&t, 1, 0, tb_str(&t, "setter#0"));
    tb_task(&t, 2, 0, tb_str(&t, "waiter#0"));
    if (with_create)
        tb_sync(&t, 1, AFD_SYNC_CREATE, 1, ev);
    tb_sync(&t, 1, first, 1, ev);
    tb_sync(&t, 2, second, 1, ev);
    uint64_t fp = 0;
    CHECK_EQ_INT(afd_iclass_fingerprint(&t, &fp, n_access), 0);
    afd_trace_finish(&t);
    return fp;
}

TEST(primitive_events_are_accesses_to_their_object)
{
    uint32_t n = 0;
    uint64_t base = sync_run(AFD_SYNC_EVENT_SET, AFD_SYNC_EVENT_CLEAR, 0, &n);
    CHECK_EQ_INT(n, 2);
    CHECK_EQ_U64(sync_run(AFD_SYNC_EVENT_SET, AFD_SYNC_EVENT_CLEAR, 1, &n), base); /* CREATE is not one */
    CHECK_EQ_INT(n, 2);
    CHECK(sync_run(AFD_SYNC_EVENT_SET, AFD_SYNC_EVENT_OBSERVE, 0, NULL) != base); /* its kind counts */
}

/* Two cancels of one target conflict (writes on "task:<label>"); a check of a queue and one of an
 * event are reads, so two of them commute. */
TEST(cancels_conflict_and_checks_commute)
{
    uint64_t fps[2];
    for (int order = 0; order < 2; order++) {
        afd_trace t;
        CHECK_EQ_INT(afd_trace_init(&t), 0);
        tb_task(&t, 1, 0, tb_str(&t, "a#0"));
        tb_task(&t, 2, 0, tb_str(&t, "b#0"));
        tb_task(&t, 3, 0, tb_str(&t, "victim#0"));
        tb_ev(&t, AFD_EV_CANCEL, 0, order ? 2 : 1, 3, AFD_NOSTR);
        tb_ev(&t, AFD_EV_CANCEL, 0, order ? 1 : 2, 3, AFD_NOSTR);
        uint32_t n = 0;
        CHECK_EQ_INT(afd_iclass_fingerprint(&t, &fps[order], &n), 0);
        CHECK_EQ_INT(n, 2);
        afd_trace_finish(&t);
    }
    CHECK(fps[0] != fps[1]);
    /* two checks of a queue by two tasks, in either order: reads, one class */
    afd_trace t;
    uint64_t q[2];
    for (int order = 0; order < 2; order++) {
        CHECK_EQ_INT(afd_trace_init(&t), 0);
        uint32_t qq = tb_str(&t, "Queue@q.py:1");
        tb_task(&t, 1, 0, tb_str(&t, "a#0"));
        tb_task(&t, 2, 0, tb_str(&t, "b#0"));
        tb_sync(&t, order ? 2 : 1, AFD_SYNC_QUEUE_CHECK, 1, qq);
        tb_sync(&t, order ? 1 : 2, AFD_SYNC_QUEUE_CHECK, 1, qq);
        CHECK_EQ_INT(afd_iclass_fingerprint(&t, &q[order], NULL), 0);
        afd_trace_finish(&t);
    }
    CHECK_EQ_U64(q[0], q[1]);
}

TEST(an_empty_run_has_a_fingerprint)
{
    afd_trace t;
    CHECK_EQ_INT(afd_trace_init(&t), 0);
    uint64_t fp = 0;
    uint32_t n = 7;
    CHECK_EQ_INT(afd_iclass_fingerprint(&t, &fp, &n), 0);
    CHECK_EQ_INT(n, 0);
    const spec one[] = {{"a#0", 'r', "X"}};
    CHECK(fp != fp_of(one, 1, NULL));
    afd_trace_finish(&t);
}

/* A long run: 60,000 reads by three tasks in groups between 600 writes, then the same run with the
 * reads of every group shuffled: one class (and in n log n, or the harness's timeout ends it). */
TEST(a_long_run_with_shuffled_reads_is_one_class)
{
    enum { GROUPS = 600, READS = 100 };
    spec *s = malloc((size_t)GROUPS * (READS + 1) * sizeof *s);
    CHECK(s != NULL);
    uint64_t fps[2];
    for (int shuffled = 0; shuffled < 2; shuffled++) {
        int n = 0;
        for (int g = 0; g < GROUPS; g++) {
            s[n++] = (spec){"a#0", 'w', g % 2 ? "X" : "Y"};
            for (int r = 0; r < READS; r++)
                s[n++] = (spec){r % 3 ? "b#0" : "c#0", 'r', g % 2 ? "X" : "Y"};
            for (int r = 0; shuffled && r < READS; r++) { /* Fisher-Yates over the group's reads */
                uint64_t j = afd_mix64((uint64_t)g * READS + (uint64_t)r) % (uint64_t)(READS - r);
                spec tmp = s[n - READS + r];
                s[n - READS + r] = s[n - READS + r + (int)j];
                s[n - READS + r + (int)j] = tmp;
            }
        }
        uint32_t count = 0;
        fps[shuffled] = fp_of(s, n, &count);
        CHECK_EQ_INT(count, GROUPS * (READS + 1));
    }
    CHECK_EQ_U64(fps[0], fps[1]);
    free(s);
}

int main(void)
{
    RUN_TESTS("iclass", T(reads_permuted_between_writes_are_one_class), T(two_writes_swapped_differ),
              T(a_read_moved_across_a_write_differs), T(accesses_to_different_resources_commute),
              T(renumbered_tasks_with_the_same_labels_are_one_class), T(different_labels_differ),
              T(primitive_events_are_accesses_to_their_object), T(cancels_conflict_and_checks_commute),
              T(an_empty_run_has_a_fingerprint), T(a_long_run_with_shuffled_reads_is_one_class));
}
