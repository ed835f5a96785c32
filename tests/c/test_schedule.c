/* test_sched.c -- step costs, idle lateness, the random seed and the portfolio. */
#include "afd.h"
#include "harness.h"
#include "schedule.h"
#include "token.h"

#define MS 1000000ULL
#define US 1000ULL

static afd_step_id step_of(const char *label, uint32_t ordinal, uint64_t index)
{
    size_t len = strlen(label);
    return (afd_step_id){.label = label,
                         .label_len = len,
                         .label_hash = afd_fnv1a(AFD_FNV_INIT, label, len),
                         .ordinal = ordinal,
                         .index = index};
}

static uint64_t cost_of(const afd_schedule *s, const char *label, uint32_t ordinal, uint64_t index,
                        uint64_t horizon)
{
    afd_step_id id = step_of(label, ordinal, index);
    return afd_schedule_step_cost(s, &id, horizon);
}

static void jitter_schedule(afd_schedule *s, uint64_t seed)
{
    afd_schedule_init(s);
    s->strategy = AFD_STRAT_JITTER;
    s->seed = seed;
}

static void pct_schedule(afd_schedule *s, uint64_t seed, uint32_t depth, uint32_t steps)
{
    afd_schedule_init(s);
    s->strategy = AFD_STRAT_PCT;
    s->seed = seed;
    s->pct_depth = depth;
    s->pct_steps = steps;
}

static uint32_t count_change_points(const afd_schedule *s, uint64_t upto)
{
    uint32_t n = 0;
    for (uint64_t i = 0; i < upto; i++)
        n += cost_of(s, "t#0", (uint32_t)i, i, 0) != 0;
    return n;
}

TEST(zero_is_zero)
{
    afd_schedule s;
    afd_schedule_init(&s);
    s.seed = 12345;
    for (uint32_t i = 0; i < 1000; i++) {
        CHECK_EQ_U64(cost_of(&s, "main#0", i, i, 50 * MS), 0);
        CHECK_EQ_U64(afd_schedule_lateness(&s, i, i * US, i * US + 300 * US), 0);
    }
}

TEST(explicit_delay_overrides_exact_step)
{
    afd_schedule s;
    jitter_schedule(&s, 77);
    CHECK_EQ_INT(afd_schedule_add_delay(&s, "task#1", 3, 777), 0);
    CHECK_EQ_INT(afd_schedule_add_delay(&s, "other#0", 0, 0), 0);
    CHECK_EQ_U64(cost_of(&s, "task#1", 3, 0, 0), 777);
    CHECK_EQ_U64(cost_of(&s, "task#1", 3, 99999, 5 * MS), 777); /* Not keyed on index. */
    /* A zero-cost delay still overrides: the jitter cost of that step is almost never 0. */
    CHECK_EQ_U64(cost_of(&s, "other#0", 0, 0, 0), 0);
    afd_schedule plain;
    jitter_schedule(&plain, 77);
    CHECK(cost_of(&plain, "other#0", 0, 0, 0) != 0);
    /* Neighbouring identities keep the base strategy's cost. */
    const char *labels[] = {"task#1", "task#10", "task#", "task#2", "Task#1", "task#1 "};
    const uint32_t ords[] = {2, 3, 3, 3, 3, 3};
    for (size_t i = 0; i < sizeof ords / sizeof ords[0]; i++)
        CHECK_EQ_U64(cost_of(&s, labels[i], ords[i], 0, 0), cost_of(&plain, labels[i], ords[i], 0, 0));
    /* The label is compared over label_len bytes, not up to a terminator. */
    const char *buf = "task#1xyz";
    afd_step_id id = step_of("task#1", 3, 0);
    id.label = buf;
    CHECK_EQ_U64(afd_schedule_step_cost(&s, &id, 0), 777);
    id.label_len = 5; /* "task#" */
    id.label_hash = afd_fnv1a(AFD_FNV_INIT, buf, 5);
    CHECK(afd_schedule_step_cost(&s, &id, 0) != 777);

    /* Overrides apply to zero and pct schedules too. */
    afd_schedule z;
    afd_schedule_init(&z);
    CHECK_EQ_INT(afd_schedule_add_delay(&z, "task#1", 3, 5 * MS), 0);
    CHECK_EQ_U64(cost_of(&z, "task#1", 3, 0, 0), 5 * MS);
    CHECK_EQ_U64(cost_of(&z, "task#1", 4, 1, 0), 0);
    afd_schedule p;
    pct_schedule(&p, 1, 1, 10); /* No change points at all. */
    CHECK_EQ_INT(afd_schedule_add_delay(&p, "x", 0, 42), 0);
    CHECK_EQ_U64(cost_of(&p, "x", 0, 0, 0), 42);
    CHECK_EQ_U64(cost_of(&p, "x", 1, 1, 0), 0);
    afd_schedule_finish(&s);
    afd_schedule_finish(&z);
    afd_schedule_finish(&p);
}

TEST(jitter_is_deterministic_and_seeded)
{
    afd_schedule a, b, c;
    jitter_schedule(&a, 1);
    jitter_schedule(&b, 1);
    jitter_schedule(&c, 2);
    int differ = 0;
    for (uint32_t i = 0; i < 200; i++) {
        uint64_t x = cost_of(&a, "worker#4", i, i, 0);
        CHECK_EQ_U64(x, cost_of(&a, "worker#4", i, i, 0));
        CHECK_EQ_U64(x, cost_of(&b, "worker#4", i, i, 0));
        /* The cost belongs to (label, ordinal): step index and horizon do not change it. */
        CHECK_EQ_U64(x, cost_of(&a, "worker#4", i, 1000000 + i, 7 * MS));
        differ += x != cost_of(&c, "worker#4", i, i, 0);
    }
    CHECK(differ > 190);
    /* Labels and ordinals both matter. */
    int by_label = 0, by_ord = 0;
    for (uint32_t i = 0; i < 200; i++) {
        by_label += cost_of(&a, "worker#4", i, 0, 0) != cost_of(&a, "worker#5", i, 0, 0);
        by_ord += cost_of(&a, "worker#4", i, 0, 0) != cost_of(&a, "worker#4", i + 1, 0, 0);
    }
    CHECK(by_label > 190);
    CHECK(by_ord > 190);
}

TEST(jitter_distribution)
{
    afd_schedule s;
    jitter_schedule(&s, 0xc0ffee);
    const int n = 100000;
    double sum = 0;
    uint64_t max = 0;
    int above_100us = 0, tiny = 0;
    for (int i = 0; i < n; i++) {
        char label[32];
        snprintf(label, sizeof label, "t#%d", i % 97);
        uint64_t c = cost_of(&s, label, (uint32_t)(i / 97), (uint64_t)i, 0);
        sum += (double)c;
        if (c > max)
            max = c;
        above_100us += c > 100 * US;
        tiny += c < 20 * US;
    }
    double mean_us = sum / n / 1000.0;
    /* 0.85 * 20 us + 0.15 * E[min(Pareto(100 us, 1.2), 50 ms)] = 17 + 0.15 * 455.8 = 85.4 us; the
     * standard error over 100k draws is about 2.3 us. */
    if (!(mean_us > 75.0 && mean_us < 96.0))
        FAIL_AT("mean %.2f us outside [75, 96]", mean_us);
    CHECK(max <= 50 * MS);
    /* P(cost > 100 us) = 0.15 + 0.85 * e^-5, about 15.6 %. */
    if (!(above_100us > n * 0.13 && above_100us < n * 0.18))
        FAIL_AT("%d of %d above 100 us", above_100us, n);
    /* P(cost < 20 us) = 0.85 * (1 - 1/e), about 53.7 %. */
    if (!(tiny > n * 0.51 && tiny < n * 0.56))
        FAIL_AT("%d of %d below 20 us", tiny, n);
}

TEST(jitter_lateness_rounds_to_whole_ms)
{
    afd_schedule s;
    jitter_schedule(&s, 9);
    for (uint64_t w = 0; w < 2000; w++) {
        uint64_t now = w * 123457;
        /* Deadlines within one millisecond of the idle time wake at one absolute time. */
        uint64_t l1 = afd_schedule_lateness(&s, w, now, now + 300 * US);
        uint64_t l2 = afd_schedule_lateness(&s, w, now, now + 700 * US);
        CHECK(l1 >= 700 * US);
        CHECK(l2 >= 300 * US);
        CHECK_EQ_U64(now + 300 * US + l1, now + 700 * US + l2);
        CHECK(now + 300 * US + l1 >= now + MS);
        /* A whole-millisecond timeout is not rounded, and neither is a zero one. */
        uint64_t extra = l1 - 700 * US;
        CHECK_EQ_U64(afd_schedule_lateness(&s, w, now, now + 2 * MS), extra);
        CHECK_EQ_U64(afd_schedule_lateness(&s, w, now, now), extra);
        CHECK_EQ_U64(afd_schedule_lateness(&s, w, now, now + 1), MS - 1 + extra);
        /* The rounding follows the timeout, not the absolute clock. */
        CHECK_EQ_U64(afd_schedule_lateness(&s, w, 5, 5 + 1500 * US), 500 * US + extra);
        CHECK_EQ_U64(l1, afd_schedule_lateness(&s, w, now, now + 300 * US));
    }
    /* No overflow on the largest timeout. */
    uint64_t big = afd_schedule_lateness(&s, 0, 0, UINT64_MAX);
    CHECK(big >= MS - UINT64_MAX % MS);
    CHECK(big < 2 * MS + 50 * MS);
}

TEST(jitter_lateness_latency)
{
    afd_schedule s, t;
    jitter_schedule(&s, 3);
    jitter_schedule(&t, 4);
    double sum = 0;
    int differ = 0;
    const int n = 50000;
    for (int w = 0; w < n; w++) {
        uint64_t l = afd_schedule_lateness(&s, (uint64_t)w, 0, 0);
        sum += (double)l;
        differ += l != afd_schedule_lateness(&t, (uint64_t)w, 0, 0);
    }
    double mean_us = sum / n / 1000.0;
    if (!(mean_us > 28.5 && mean_us < 31.5))
        FAIL_AT("mean wake-up latency %.2f us outside [28.5, 31.5]", mean_us);
    CHECK(differ > n - 100);
}

TEST(pct_change_points)
{
    for (uint64_t seed = 0; seed < 200; seed++) {
        for (uint32_t d = 0; d <= 10; d++) {
            uint32_t steps = 1 + (uint32_t)(afd_mix64(seed * 31 + d) % 40);
            afd_schedule s;
            pct_schedule(&s, seed, d, steps);
            uint32_t want = d <= 1 ? 0 : d - 1 < steps ? d - 1 : steps;
            CHECK_EQ_U64(count_change_points(&s, steps), want);
            /* Nothing beyond pct_steps. */
            CHECK_EQ_U64(count_change_points(&s, steps + 50) - count_change_points(&s, steps), 0);
        }
    }
    afd_schedule s;
    pct_schedule(&s, 42, 4, 1000);
    CHECK_EQ_U64(count_change_points(&s, 1000), 3);
    pct_schedule(&s, 42, 4, 0);
    CHECK_EQ_U64(count_change_points(&s, 100), 0);
}

TEST(pct_cost_and_determinism)
{
    afd_schedule s;
    pct_schedule(&s, 1234, 3, 500);
    uint64_t points[2];
    int n = 0;
    for (uint64_t i = 0; i < 500; i++) {
        if (cost_of(&s, "a#0", 0, i, 0) == 0)
            continue;
        CHECK(n < 2);
        points[n++] = i;
    }
    CHECK_EQ_INT(n, 2);
    for (int j = 0; j < n; j++) {
        uint64_t i = points[j];
        CHECK_EQ_U64(cost_of(&s, "a#0", 0, i, 0), AFD_PCT_MIN_NS);
        CHECK_EQ_U64(cost_of(&s, "a#0", 0, i, 3 * MS), AFD_PCT_MIN_NS);
        CHECK_EQ_U64(cost_of(&s, "b#7", 9, i, 20 * MS), 20 * MS + AFD_PCT_MARGIN_NS);
        CHECK(cost_of(&s, "z", 1, i, 60 * MS) >= 60 * MS + AFD_PCT_MARGIN_NS);
        CHECK_EQ_U64(cost_of(&s, "z", 1, i, UINT64_MAX), UINT64_MAX); /* Saturates. */
        CHECK_EQ_U64(afd_schedule_lateness(&s, i, 0, 300 * US), 0);
    }
    /* The same schedule always picks the same points; other seeds pick other sets. */
    afd_schedule again;
    pct_schedule(&again, 1234, 3, 500);
    for (uint64_t i = 0; i < 500; i++)
        CHECK_EQ_U64(cost_of(&s, "a#0", 0, i, 0), cost_of(&again, "q#1", 5, i, 0));
    int moved = 0;
    for (uint64_t seed = 0; seed < 50; seed++) {
        afd_schedule o;
        pct_schedule(&o, seed, 3, 500);
        moved += cost_of(&o, "a#0", 0, points[0], 0) == 0 || cost_of(&o, "a#0", 0, points[1], 0) == 0;
    }
    CHECK(moved > 40);
}

TEST(pct_points_spread_uniformly)
{
    /* Over many seeds every index of a short horizon is picked about equally often. */
    enum { STEPS = 10, SEEDS = 20000 };
    int hits[STEPS] = {0};
    for (uint64_t seed = 0; seed < SEEDS; seed++) {
        afd_schedule s;
        pct_schedule(&s, seed, 3, STEPS);
        for (uint64_t i = 0; i < STEPS; i++)
            hits[i] += cost_of(&s, "t", 0, i, 0) != 0;
    }
    for (int i = 0; i < STEPS; i++) /* Expected 2 * SEEDS / STEPS = 4000 each. */
        if (hits[i] < 3700 || hits[i] > 4300)
            FAIL_AT("index %d picked %d times, expected about 4000", i, hits[i]);
}

TEST(pct_huge_depth_stays_cheap)
{
    afd_schedule s;
    pct_schedule(&s, 5, UINT32_MAX, UINT32_MAX);
    uint64_t c = 0;
    for (uint64_t i = 0; i < 20000; i++)
        c += cost_of(&s, "t", 0, i, 0) != 0;
    CHECK(c <= 64);
    pct_schedule(&s, 5, UINT32_MAX, 1000); /* The count is clamped to 64 change points. */
    CHECK_EQ_U64(count_change_points(&s, 1000), 64);
    pct_schedule(&s, 5, UINT32_MAX, 30);
    CHECK_EQ_U64(count_change_points(&s, 30), 30);
}

TEST(random_seed_is_stable)
{
    afd_schedule a, b;
    afd_schedule_init(&a);
    afd_schedule_init(&b);
    a.seed = b.seed = 42;
    CHECK_EQ_U64(afd_schedule_random_seed(&a), afd_schedule_random_seed(&b));
    CHECK(afd_schedule_random_seed(&a) != 42);
    b.seed = 43;
    CHECK(afd_schedule_random_seed(&a) != afd_schedule_random_seed(&b));
}

TEST(portfolio_mix)
{
    const uint64_t master = 0xabcdef;
    afd_schedule s;
    CHECK_EQ_INT(afd_schedule_portfolio(&s, master, 0, 500, -1), 0);
    CHECK_EQ_INT(s.strategy, AFD_STRAT_ZERO);
    CHECK_EQ_U64(s.seed, master);
    CHECK_EQ_U64(s.n_delays, 0);
    afd_schedule_finish(&s);
    const uint32_t depth_of[] = {0, 0, 2, 0, 3, 0, 4, 0, 2, 0, 3, 0, 4};
    for (uint64_t i = 1; i <= 12; i++) {
        CHECK_EQ_INT(afd_schedule_portfolio(&s, master, i, 500, -1), 0);
        CHECK_EQ_U64(s.seed, afd_mix64(master ^ afd_mix64(i)));
        CHECK_EQ_U64(s.n_delays, 0);
        if (i % 2) {
            CHECK_EQ_INT(s.strategy, AFD_STRAT_JITTER);
        } else {
            CHECK_EQ_INT(s.strategy, AFD_STRAT_PCT);
            CHECK_EQ_U64(s.pct_depth, depth_of[i]);
            CHECK_EQ_U64(s.pct_steps, 500);
        }
        afd_schedule_finish(&s);
    }
    CHECK_EQ_INT(afd_schedule_portfolio(&s, master, 2, 0, -1), 0);
    CHECK_EQ_U64(s.pct_steps, 1); /* At least one step. */
    afd_schedule t;
    CHECK_EQ_INT(afd_schedule_portfolio(&t, master + 1, 2, 0, -1), 0);
    CHECK(s.seed != t.seed);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

TEST(portfolio_only)
{
    const uint64_t master = 7;
    afd_schedule s;
    for (uint64_t i = 0; i < 9; i++) {
        CHECK_EQ_INT(afd_schedule_portfolio(&s, master, i, 100, AFD_STRAT_JITTER), 0);
        CHECK_EQ_INT(s.strategy, AFD_STRAT_JITTER);
        CHECK_EQ_U64(s.seed, afd_mix64(master ^ afd_mix64(i)));
        CHECK_EQ_INT(afd_schedule_portfolio(&s, master, i, 100, AFD_STRAT_PCT), 0);
        CHECK_EQ_INT(s.strategy, AFD_STRAT_PCT);
        CHECK_EQ_U64(s.seed, afd_mix64(master ^ afd_mix64(i)));
        CHECK_EQ_U64(s.pct_depth, 2 + i % 3);
        CHECK_EQ_U64(s.pct_steps, 100);
        CHECK_EQ_INT(afd_schedule_portfolio(&s, master, i, 100, AFD_STRAT_ZERO), 0);
        CHECK_EQ_INT(s.strategy, AFD_STRAT_ZERO);
        CHECK_EQ_U64(s.seed, i == 0 ? master : afd_mix64(master ^ afd_mix64(i)));
    }
    CHECK_EQ_INT(afd_schedule_portfolio(&s, master, 0, 100, AFD_STRAT__COUNT), AFD_EINVAL);
    CHECK_EQ_INT(afd_schedule_portfolio(&s, master, 0, 100, -2), AFD_EINVAL);
    CHECK_EQ_INT(afd_schedule_portfolio(NULL, master, 0, 100, -1), AFD_EINVAL);
    /* Seeds of a search never repeat in its first thousands of schedules. */
    enum { N = 3000 };
    static uint64_t seeds[N];
    seeds[0] = master;
    for (uint64_t i = 1; i < N; i++) {
        afd_schedule a;
        CHECK_EQ_INT(afd_schedule_portfolio(&a, master, i, 100, -1), 0);
        seeds[i] = a.seed;
    }
    qsort(seeds, N, sizeof seeds[0], cmp_u64);
    for (int i = 1; i < N; i++)
        CHECK(seeds[i - 1] != seeds[i]);
}

static uint64_t cost_within(const afd_schedule *s, const char *label, uint32_t ordinal, uint64_t index,
                            uint64_t latest, uint64_t plain, uint64_t deadline)
{
    afd_step_id id = step_of(label, ordinal, index);
    afd_horizon h = {
        .latest_ns = latest, .plain_ns = plain, .deadline_ns = deadline, .threshold_ns = deadline};
    return afd_schedule_step_cost_within(s, &id, &h);
}

/* The cap is the threshold, which a pending sleep's wake-up can bring before the first deadline. */
TEST(below_deadlines_caps_at_the_threshold)
{
    afd_schedule s;
    pct_schedule(&s, 9, 2, 1);
    s.flags = AFD_SCHED_BELOW_DEADLINES;
    afd_step_id id = step_of("t#0", 0, 0);
    afd_horizon h = {
        .latest_ns = 300 * MS, .plain_ns = 300 * MS, .deadline_ns = AFD_NO_DEADLINE, .threshold_ns = 11 * MS};
    CHECK_EQ_U64(afd_schedule_step_cost_within(&s, &id, &h), afd_schedule_below(11 * MS));
    s.flags = 0;
    CHECK_EQ_U64(afd_schedule_step_cost_within(&s, &id, &h), 301 * MS);
    afd_schedule_finish(&s);
}

TEST(below_is_just_short_of_the_deadline)
{
    CHECK_EQ_U64(afd_schedule_below(0), 0);
    CHECK_EQ_U64(afd_schedule_below(1), 0);
    CHECK_EQ_U64(afd_schedule_below(5), 4);
    CHECK_EQ_U64(afd_schedule_below(100 * US), 90 * US);
    CHECK_EQ_U64(afd_schedule_below(300 * MS), 299 * MS);
    CHECK_EQ_U64(afd_schedule_below(UINT64_MAX - 1), UINT64_MAX - 1 - MS);
}

/* The point of the flag: pct's delay outlasts the sleeps' timers, not the timeout's. */
TEST(pct_below_deadlines_outlasts_only_plain_timers)
{
    afd_schedule s;
    pct_schedule(&s, 9, 2, 1);
    /* Step 0 is the only index of a one-step range, so it is the change point. */
    CHECK_EQ_U64(cost_within(&s, "t#0", 0, 0, 300 * MS, 20 * MS, 300 * MS), 301 * MS); /* old meaning */
    s.flags = AFD_SCHED_BELOW_DEADLINES;
    CHECK_EQ_U64(cost_within(&s, "t#0", 0, 0, 300 * MS, 20 * MS, 300 * MS), 21 * MS);
    /* No room: a sleep beyond the deadline is not outlasted; the step stays just short of it. */
    CHECK_EQ_U64(cost_within(&s, "t#0", 0, 0, 300 * MS, 200 * MS, 15 * MS), 14 * MS);
    /* The floor applies below the cap, and no deadline means no cap. */
    CHECK_EQ_U64(cost_within(&s, "t#0", 0, 0, 0, 0, 300 * MS), AFD_PCT_MIN_NS);
    CHECK_EQ_U64(cost_within(&s, "t#0", 0, 0, 0, 0, AFD_NO_DEADLINE), AFD_PCT_MIN_NS);
    CHECK_EQ_U64(cost_within(&s, "t#0", 0, 0, 40 * MS, 40 * MS, AFD_NO_DEADLINE), 41 * MS);
    /* A deadline due now admits no cost at all. */
    CHECK_EQ_U64(cost_within(&s, "t#0", 0, 0, 40 * MS, 40 * MS, 0), 0);
    afd_schedule_finish(&s);
}

/* The timing check of a failure a real wait carried past a deadline: a tenth of the distance is
 * kept, not at most a millisecond (a TLS handshake's answer outlasts 1 ms of a 60 s timeout). */
TEST(well_below_keeps_a_tenth)
{
    afd_schedule s;
    pct_schedule(&s, 9, 2, 1);
    s.flags = AFD_SCHED_BELOW_DEADLINES;
    CHECK_EQ_U64(cost_within(&s, "t#0", 0, 0, 90000 * MS, 90000 * MS, 60000 * MS), 59999 * MS);
    s.flags = AFD_SCHED_BELOW_DEADLINES | AFD_SCHED_WELL_BELOW;
    CHECK_EQ_U64(cost_within(&s, "t#0", 0, 0, 90000 * MS, 90000 * MS, 60000 * MS), 54000 * MS);
    CHECK_EQ_U64(afd_schedule_cap_below(&s, 60000 * MS, 60000 * MS), 54000 * MS);
    CHECK_EQ_U64(afd_schedule_cap_below(&s, 5, 5), 4); /* at least 1 ns */
    CHECK_EQ_U64(afd_schedule_cap_below(&s, 0, 0), 0);
    s.flags = AFD_SCHED_BELOW_DEADLINES;
    CHECK_EQ_U64(afd_schedule_cap_below(&s, 60000 * MS, 60000 * MS), afd_schedule_below(60000 * MS));
    char *desc = afd_schedule_describe(&(afd_schedule){
        .strategy = AFD_STRAT_ZERO, .flags = AFD_SCHED_BELOW_DEADLINES | AFD_SCHED_WELL_BELOW});
    CHECK_EQ_STR(desc, "zero, well below deadlines");
    free(desc);
    afd_schedule_finish(&s);
}

TEST(jitter_and_explicit_delays_capped_below_deadlines)
{
    afd_schedule s;
    jitter_schedule(&s, 77);
    uint64_t over = 0;
    for (uint32_t i = 0; i < 2000; i++)
        over += cost_within(&s, "w#0", i, i, 0, 0, AFD_NO_DEADLINE) > 50 * US;
    CHECK(over > 0); /* the tail does reach past 50 us uncapped */
    s.flags = AFD_SCHED_BELOW_DEADLINES;
    for (uint32_t i = 0; i < 2000; i++) {
        uint64_t plain = cost_within(&s, "w#0", i, i, 0, 0, AFD_NO_DEADLINE);
        uint64_t capped = cost_within(&s, "w#0", i, i, 0, 0, 50 * US);
        CHECK(capped <= afd_schedule_below(50 * US));
        CHECK_EQ_U64(capped, plain < afd_schedule_below(50 * US) ? plain : afd_schedule_below(50 * US));
    }
    CHECK_EQ_INT(afd_schedule_add_delay(&s, "w#0", 3, 2 * MS), 0);
    CHECK_EQ_U64(cost_within(&s, "w#0", 3, 3, 0, 0, 1 * MS), afd_schedule_below(1 * MS));
    s.flags = 0;
    CHECK_EQ_U64(cost_within(&s, "w#0", 3, 3, 0, 0, 1 * MS), 2 * MS);
    afd_schedule_finish(&s);
}

TEST(portfolio_below_deadlines_first)
{
    const uint64_t master = 0x5151;
    afd_schedule s;
    CHECK_EQ_INT(afd_schedule_portfolio(&s, master, 0, 50, -1), 0);
    CHECK_EQ_INT(s.flags, 0); /* zero has nothing to cap */
    for (uint64_t i = 1; i < AFD_PORTFOLIO_BELOW_SHARE; i++) {
        CHECK_EQ_INT(afd_schedule_portfolio(&s, master, i, 50, -1), 0);
        CHECK_EQ_INT(s.flags, AFD_SCHED_BELOW_DEADLINES);
    }
    /* After the share, each strategy alternates: below, beyond, below... */
    uint32_t beyond_jitter = 0, beyond_pct = 0, below = 0;
    for (uint64_t i = AFD_PORTFOLIO_BELOW_SHARE; i < AFD_PORTFOLIO_BELOW_SHARE + 40; i++) {
        CHECK_EQ_INT(afd_schedule_portfolio(&s, master, i, 50, -1), 0);
        int flagged = s.flags == AFD_SCHED_BELOW_DEADLINES;
        CHECK_EQ_INT(flagged, (i / 2) % 2 == 0);
        below += flagged;
        beyond_jitter += !flagged && s.strategy == AFD_STRAT_JITTER;
        beyond_pct += !flagged && s.strategy == AFD_STRAT_PCT;
    }
    CHECK_EQ_U64(below, 20);
    CHECK_EQ_U64(beyond_jitter, 10);
    CHECK_EQ_U64(beyond_pct, 10);
    for (uint64_t i = 0; i < 40; i++) {
        CHECK_EQ_INT(afd_schedule_portfolio(&s, master, i, 50, AFD_STRAT_ZERO), 0);
        CHECK_EQ_INT(s.flags, 0);
    }
}

int main(void)
{
    RUN_TESTS("sched", T(below_is_just_short_of_the_deadline), T(below_deadlines_caps_at_the_threshold),
              T(pct_below_deadlines_outlasts_only_plain_timers),
              T(jitter_and_explicit_delays_capped_below_deadlines), T(well_below_keeps_a_tenth),
              T(portfolio_below_deadlines_first), T(zero_is_zero), T(explicit_delay_overrides_exact_step),
              T(jitter_is_deterministic_and_seeded), T(jitter_distribution),
              T(jitter_lateness_rounds_to_whole_ms), T(jitter_lateness_latency), T(pct_change_points),
              T(pct_cost_and_determinism), T(pct_points_spread_uniformly), T(pct_huge_depth_stays_cheap),
              T(random_seed_is_stable), T(portfolio_mix), T(portfolio_only));
}
