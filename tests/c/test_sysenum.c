/* test_sysenum.c -- the systematic enumeration against a model program whose slots are known.
 *
 * The model: N steps, task t<i>#0 running step i; step i's cost flips a comparison at each of its
 * thresholds (ns, increasing). A run measures the steps of its window: a step of cost c has the
 * margin (smallest threshold above c) - c, or none. The run's behaviour is, per delayed step, how
 * many of its thresholds its cost passed: the slot it lies in. So with K = 1 the distinct runs are
 * one per threshold of each step, with K = 2 one per pair of thresholds of two steps, and the
 * enumeration must run exactly those, each once. */
#include "afd.h"
#include "harness.h"
#include "sysenum.h"
#include "trace.h"
#include "tracebuild.h"

#include <stdlib.h>
#include <string.h>

#define FLOOR 250ULL
#define MAXT 4

typedef struct model {
    uint32_t n_steps;
    uint32_t n_thr[128];
    uint64_t thr[128][MAXT];
    int fail_slot[2]; /* fails when step fail_slot[0]'s cost lies past its threshold fail_slot[1] */
} model;

static uint32_t model_slot_of(const model *m, uint32_t step, uint64_t cost)
{
    uint32_t k = 0;
    while (k < m->n_thr[step] && cost >= m->thr[step][k])
        k++;
    return k;
}

/* The run of one schedule of the model, as the runtime would record it. */
static void model_run(const model *m, const afd_sys_delay *d, uint32_t nd, uint64_t lo, uint32_t nmark,
                      afd_trace *t, uint64_t *order, int *failed)
{
    CHECK_EQ_INT(afd_trace_init(t), 0);
    uint64_t cost[128];
    for (uint32_t i = 0; i < m->n_steps; i++)
        cost[i] = FLOOR;
    for (uint32_t j = 0; j < nd; j++) {
        CHECK(d[j].index < m->n_steps);
        CHECK_EQ_INT((int)d[j].ordinal, 0);
        cost[d[j].index] = d[j].cost > FLOOR ? d[j].cost : FLOOR;
    }
    for (uint32_t i = 0; i < m->n_steps; i++) {
        char label[16];
        snprintf(label, sizeof label, "t%u#0", i);
        tb_task(t, i + 1, 0, tb_str(t, label));
    }
    t->steps = m->n_steps;
    uint64_t h = AFD_FNV_INIT;
    for (uint32_t i = 0; i < m->n_steps; i++) {
        uint32_t s = model_slot_of(m, i, cost[i]);
        h = afd_fnv1a(h, &s, sizeof s);
    }
    *order = h;
    *failed = m->fail_slot[0] >= 0 &&
              model_slot_of(m, (uint32_t)m->fail_slot[0], cost[m->fail_slot[0]]) > (uint32_t)m->fail_slot[1];
    for (uint32_t i = 0; i < m->n_steps; i++) {
        if (i < lo || i >= lo + nmark)
            continue;
        uint32_t s = model_slot_of(m, i, cost[i]);
        uint64_t margin = s < m->n_thr[i] ? m->thr[i][s] - cost[i] : UINT64_MAX;
        tb_evx(t, AFD_EV_SLOT, 0, i + 1, 0, i + 1, cost[i], margin, 3);
    }
}

typedef struct outcome {
    uint64_t runs, repeats, failed;
    uint64_t seen[4096];
    uint32_t n_seen;
    int dup;
} outcome;

/* Runs the enumeration to its end (or `budget` runs), taking each round's results in reverse order
 * when reverse is set. */
static void enumerate(const model *m, uint32_t k, int prune, uint64_t budget, int reverse, afd_sysenum **out,
                      outcome *o)
{
    memset(o, 0, sizeof *o);
    afd_sysenum *e;
    CHECK_EQ_INT(afd_sysenum_new(&e, k, prune, 7), 0);
    for (;;) {
        uint64_t n;
        CHECK_EQ_INT(afd_sysenum_round(e, &n), 0);
        if (!n)
            break;
        int stop = 0;
        for (uint64_t r = 0; r < n; r++) {
            uint64_t i = reverse ? n - 1 - r : r;
            if (o->runs + o->repeats >= budget) {
                stop = 1;
                break;
            }
            char *token;
            uint64_t lo;
            uint32_t nmark;
            int repeat;
            CHECK_EQ_INT(afd_sysenum_item(e, i, &token, &lo, &nmark, &repeat), 0);
            CHECK(strncmp(token, "afd1:", 5) == 0);
            free(token);
            uint32_t nd;
            const afd_sys_delay *d = afd_sysenum_item_delays(e, i, &nd);
            afd_trace t;
            uint64_t order;
            int failed;
            model_run(m, d, nd, lo, nmark, &t, &order, &failed);
            if (repeat) {
                o->repeats++;
            } else {
                o->runs++;
                o->failed += failed;
                for (uint32_t s = 0; s < o->n_seen; s++)
                    o->dup |= o->seen[s] == order;
                if (o->n_seen < 4096)
                    o->seen[o->n_seen++] = order;
            }
            CHECK_EQ_INT(afd_sysenum_take(e, i, &t, order, order, failed), 0);
            afd_trace_finish(&t);
        }
        if (stop) {
            CHECK_EQ_INT(afd_sysenum_stop(e), 0);
            break;
        }
    }
    *out = e;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void three_steps(model *m)
{
    memset(m, 0, sizeof *m);
    m->n_steps = 3;
    m->fail_slot[0] = -1;
    m->n_thr[0] = 2; /* step 0: slots at 500 us and 1 ms */
    m->thr[0][0] = 500000;
    m->thr[0][1] = 1000000;
    m->n_thr[1] = 0; /* step 1: its delay flips nothing */
    m->n_thr[2] = 1; /* step 2: one slot at 2 ms */
    m->thr[2][0] = 2000000;
}

TEST(k1_runs_one_schedule_per_slot_and_is_exhausted)
{
    model m;
    three_steps(&m);
    afd_sysenum *e;
    outcome o;
    enumerate(&m, 1, 0, UINT64_MAX, 0, &e, &o);
    /* the zero schedule, then 2 slots of step 0 and 1 of step 2 */
    CHECK_EQ_U64(o.runs, 4);
    CHECK_EQ_U64(o.repeats, 0);
    CHECK(!o.dup);
    afd_sys_level lv[4];
    CHECK_EQ_INT((int)afd_sysenum_levels(e, lv, 4), 2);
    CHECK(lv[0].exhausted && lv[1].exhausted);
    CHECK_EQ_U64(lv[1].schedules, 3);
    CHECK_EQ_U64(lv[1].cum_schedules, 4);
    CHECK_EQ_U64(lv[1].cum_orders, 4);
    CHECK_EQ_U64(lv[1].no_slot, 1);
    CHECK_EQ_INT((int)lv[1].estimated_total, 3);
    CHECK_EQ_U64(afd_sysenum_clock_reads(e), 3);
    afd_sysenum_free(e);
}

TEST(k2_runs_every_pair_of_slots_once)
{
    model m;
    three_steps(&m);
    afd_sysenum *e;
    outcome o;
    enumerate(&m, 2, 0, UINT64_MAX, 0, &e, &o);
    /* 1 + (2 + 1) + 2 x 1 (step 0's two slots with step 2's one); step 1 adds nothing */
    CHECK_EQ_U64(o.runs, 6);
    CHECK(!o.dup);
    afd_sys_level lv[3];
    CHECK_EQ_INT((int)afd_sysenum_levels(e, lv, 3), 3);
    CHECK(lv[2].exhausted);
    CHECK_EQ_U64(lv[2].schedules, 2);
    CHECK_EQ_U64(lv[2].cum_orders, 6);
    afd_sysenum_free(e);
}

TEST(the_order_results_come_back_in_does_not_matter)
{
    model m;
    three_steps(&m);
    m.n_steps = 5;
    m.n_thr[3] = 3;
    m.thr[3][0] = 10;
    m.thr[3][1] = 300000;
    m.thr[3][2] = 900000;
    afd_sysenum *a, *b;
    outcome oa, ob;
    enumerate(&m, 2, 0, UINT64_MAX, 0, &a, &oa);
    enumerate(&m, 2, 0, UINT64_MAX, 1, &b, &ob);
    CHECK_EQ_U64(oa.runs, ob.runs);
    CHECK_EQ_INT((int)oa.n_seen, (int)ob.n_seen);
    /* the same schedules, whatever order each round's results were taken in */
    qsort(oa.seen, oa.n_seen, sizeof oa.seen[0], cmp_u64);
    qsort(ob.seen, ob.n_seen, sizeof ob.seen[0], cmp_u64);
    for (uint32_t i = 0; i < oa.n_seen; i++)
        CHECK_EQ_U64(oa.seen[i], ob.seen[i]);
    /* step 3's first threshold lies below the floor, so it has two slots above it: level 1 runs
     * 2 + 1 + 2, level 2 the pairs in step order (0,2) (0,3) (2,3): 2 x 1 + 2 x 2 + 1 x 2 */
    CHECK_EQ_U64(oa.runs, 1 + 5 + 8);
    afd_sysenum_free(a);
    afd_sysenum_free(b);
}

TEST(a_budget_cut_is_never_exhausted_and_estimates_the_rest)
{
    model m;
    three_steps(&m);
    afd_sysenum *e;
    outcome o;
    enumerate(&m, 2, 0, 3, 0, &e, &o);
    CHECK_EQ_U64(o.runs, 3);
    afd_sys_level lv[3];
    afd_sysenum_levels(e, lv, 3);
    CHECK(lv[0].exhausted);
    CHECK(!lv[1].exhausted && !lv[2].exhausted);
    CHECK_EQ_U64(lv[1].schedules, 2);
    /* step 0's sweep has run 1 slot (estimated at 2 with nothing finished), step 2's 1 slot */
    CHECK(lv[1].estimated_total >= 3);
    CHECK_EQ_INT((int)lv[2].estimated_total, -1); /* its parents are not all known */
    uint64_t n;
    CHECK_EQ_INT(afd_sysenum_round(e, &n), 0);
    CHECK_EQ_U64(n, 0);
    afd_sysenum_free(e);
}

TEST(steps_beyond_one_window_are_measured_by_repeats)
{
    model m;
    memset(&m, 0, sizeof m);
    m.fail_slot[0] = -1;
    m.n_steps = 100;
    m.n_thr[10] = 1;
    m.thr[10][0] = 1000;
    m.n_thr[90] = 1; /* beyond the first window of 64 */
    m.thr[90][0] = 5000;
    afd_sysenum *e;
    outcome o;
    enumerate(&m, 1, 0, UINT64_MAX, 0, &e, &o);
    CHECK_EQ_U64(o.runs, 3);
    CHECK_EQ_U64(o.repeats, 1);
    afd_sys_level lv[2];
    afd_sysenum_levels(e, lv, 2);
    CHECK(lv[1].exhausted);
    CHECK_EQ_U64(lv[0].measure_runs, 1);
    CHECK_EQ_U64(lv[1].no_slot, 98);
    afd_sysenum_free(e);
}

TEST(failures_are_counted_per_level)
{
    model m;
    three_steps(&m);
    m.fail_slot[0] = 0; /* fails once step 0 is past its second threshold (1 ms) */
    m.fail_slot[1] = 1;
    afd_sysenum *e;
    outcome o;
    enumerate(&m, 2, 0, UINT64_MAX, 0, &e, &o);
    afd_sys_level lv[3];
    afd_sysenum_levels(e, lv, 3);
    CHECK_EQ_U64(lv[0].failed, 0);
    CHECK_EQ_U64(lv[1].failed, 1);
    CHECK_EQ_U64(lv[2].failed, 1); /* (step 0 past 1 ms, step 2 past 2 ms) */
    CHECK_EQ_U64(lv[2].cum_failed, 2);
    afd_sysenum_free(e);
}

TEST(class_pruning_is_counted)
{
    model m;
    three_steps(&m);
    afd_sysenum *e;
    outcome o;
    /* every run has the same class here (the order doubles as class only in enumerate; take one
     * class for all by pruning against the zero schedule's): run by hand */
    CHECK_EQ_INT(afd_sysenum_new(&e, 2, 1, 7), 0);
    uint64_t runs = 0;
    for (;;) {
        uint64_t n;
        CHECK_EQ_INT(afd_sysenum_round(e, &n), 0);
        if (!n)
            break;
        for (uint64_t i = 0; i < n; i++) {
            char *token;
            uint64_t lo;
            uint32_t nmark;
            int repeat;
            CHECK_EQ_INT(afd_sysenum_item(e, i, &token, &lo, &nmark, &repeat), 0);
            free(token);
            uint32_t nd;
            const afd_sys_delay *d = afd_sysenum_item_delays(e, i, &nd);
            afd_trace t;
            uint64_t order;
            int failed;
            model_run(&m, d, nd, lo, nmark, &t, &order, &failed);
            CHECK_EQ_INT(afd_sysenum_take(e, i, &t, order, 42, failed), 0);
            afd_trace_finish(&t);
            runs++;
        }
    }
    (void)o;
    /* the zero schedule's class is new, so it is extended; every level-1 run lands in that class
     * again, so none is extended: no level-2 schedule runs, and the 3 skipped are counted */
    CHECK_EQ_U64(runs, 4);
    afd_sys_level lv[3];
    afd_sysenum_levels(e, lv, 3);
    CHECK_EQ_U64(lv[2].pruned, 3);
    CHECK_EQ_U64(lv[2].schedules, 0);
    CHECK(lv[2].exhausted); /* exhausted under pruning: the printer must say so */
    afd_sysenum_free(e);
}

TEST(bad_arguments)
{
    afd_sysenum *e;
    CHECK_EQ_INT(afd_sysenum_new(&e, AFD_SYS_MAX_DELAYS + 1, 0, 0), AFD_EINVAL);
    CHECK(e == NULL);
    CHECK_EQ_INT(afd_sysenum_new(&e, 1, 0, 0), 0);
    char *token;
    uint64_t lo;
    uint32_t nmark;
    int repeat;
    CHECK_EQ_INT(afd_sysenum_item(e, 0, &token, &lo, &nmark, &repeat), AFD_EINVAL); /* no round yet */
    uint64_t n;
    CHECK_EQ_INT(afd_sysenum_round(e, &n), 0);
    CHECK_EQ_U64(n, 1);
    CHECK_EQ_INT(afd_sysenum_take(e, 0, NULL, 1, 1, 0), 0);
    CHECK_EQ_INT(afd_sysenum_take(e, 0, NULL, 1, 1, 0), AFD_EINVAL); /* taken twice */
    CHECK_EQ_INT(afd_sysenum_round(e, &n), 0);
    CHECK_EQ_U64(n, 0); /* no trace: nothing measured, nothing to sweep */
    afd_sysenum_free(e);
    afd_sysenum_free(NULL);
}

int main(void)
{
    RUN_TESTS("sysenum", T(k1_runs_one_schedule_per_slot_and_is_exhausted),
              T(k2_runs_every_pair_of_slots_once), T(the_order_results_come_back_in_does_not_matter),
              T(a_budget_cut_is_never_exhausted_and_estimates_the_rest),
              T(steps_beyond_one_window_are_measured_by_repeats), T(failures_are_counted_per_level),
              T(class_pruning_is_counted), T(bad_arguments));
}
