/* test_trace.c -- the trace record: building, codec round trips, refusal of every malformed input,
 * the digest's inclusions and exclusions, and the human form of events. */
#include "afd.h"
#include "buf.h"
#include "trace.h"
#include "harness.h"
#include "tracebuild.h"

/* String ids of the sample trace, in the order sample() adds them. */
enum { S_TEST, S_FINALIZE, S_SITE, S_OPNAME, S_RESOURCE, S__COUNT };

/* A trace with every event kind, every header field set and the truncation recorded. */
static void sample(afd_trace *t)
{
    CHECK_EQ_INT(afd_trace_init(t), 0);
    t->mode = AFD_MODE_CONTROLLED;
    t->outcome = AFD_OUT_FAIL;
    t->flags = AFD_TRACE_TRUNCATED | AFD_TRACE_THREADS;
    t->steps = 123456;
    t->dropped = 17;
    CHECK_EQ_INT(afd_trace_set_str(t, &t->token, "afd1:abcdef", 11), 0);
    CHECK_EQ_INT(afd_trace_set_str(t, &t->python, "3.12.1 (main)", 13), 0);
    CHECK_EQ_INT(afd_trace_set_str(t, &t->hash_seed, "0", 1), 0);
    CHECK_EQ_INT(afd_trace_set_str(t, &t->failure, "AssertionError: x", 17), 0);
    const char *strs[S__COUNT] = {"test_x#0", "finalize_report#0", "test_x.py:14", "finalize",
                                  "report.status"};
    for (uint32_t i = 0; i < S__COUNT; i++) {
        uint32_t id = 99;
        CHECK_EQ_INT(afd_trace_add_string(t, strs[i], strlen(strs[i]), &id), 0);
        CHECK_EQ_INT(id, i);
    }
    afd_event evs[] = {
        tb_event_timed(AFD_EV_LOOP, 0, 0, 1, 0, 0, 0, 11),
        tb_event_timed(AFD_EV_TASK, 0, 1, 0, S_TEST, 0, 0, 12),
        tb_event_timed(AFD_EV_TASK, 0, 2, 1, S_FINALIZE, 0, 0, 13),
        tb_event_timed(AFD_EV_STEP, 0, 2, 1, S_SITE, 1250000, 200000, 14),
        tb_event_timed(AFD_EV_STEP, 0, 1, 0, AFD_NOSTR, 1450000, 1000, 15),
        tb_event_timed(AFD_EV_IDLE, 0, 0, 300000, 0, 1000000, 5000000, 16),
        tb_event_timed(AFD_EV_OP_BEGIN, 1, 2, S_OPNAME, S_RESOURCE, 6000000, 0, 17),
        tb_event_timed(AFD_EV_OP_END, 3, 2, S_OPNAME, S_RESOURCE, 6000000, 0, 18),
        tb_event_timed(AFD_EV_ASSERT_BEGIN, 0, 1, 0, S_RESOURCE, 6100000, 0, 19),
        tb_event_timed(AFD_EV_ASSERT_END, 0, 1, 0, S_RESOURCE, 6100000, 0, 20),
        tb_event_timed(AFD_EV_UNCONTROLLED, 0, 0, AFD_TRACE_THREADS, 0, 7000000, 0, 21),
        tb_event_timed(AFD_EV_WAKE, 1, 2, 1, 2, 7000000, 0, 22),
        tb_event_timed(AFD_EV_SYNC, AFD_SYNC_LOCK_ACQUIRE, 2, 1, S_RESOURCE, 7000000, 0, 23),
        tb_event_timed(AFD_EV_BLOCK, 0, 2, AFD_BLOCK_SLEEP, S_SITE, 7000000, 5000000, 24),
        tb_event_timed(AFD_EV_WAITFOR, 0, 2, 1, 1, 7000000, 0, 25),
        tb_event_timed(AFD_EV_LINE, 0, 2, S_SITE, 14, 3, S_TEST, 26),
        tb_event_timed(AFD_EV_LOCAL, 0, 2, S_OPNAME, 14, 4, S_RESOURCE, 27),
        tb_event_timed(AFD_EV_DEADLINE, 0, 2, 1, S_SITE, 7000000, 100000000, 28),
        tb_event_timed(AFD_EV_DEADLINE_LATE, 0, 2, 1, AFD_NOSTR, 8000000, 100000000, 29),
        tb_event_timed(AFD_EV_TIMEOUT, AFD_TIMEOUT_WAIT_FOR, 2, 1, S_SITE, 8000000, 0, 30),
        tb_event_timed(AFD_EV_CANCEL, AFD_CANCEL_TIMEOUT | AFD_CANCEL_WOKEN, 1, 2, S_OPNAME, 8000000, 0, 31),
        tb_event_timed(AFD_EV_CANCEL_DELIVERED, 0, 2, 5, S_SITE, 8100000, 0, 32),
        tb_event_timed(AFD_EV_UNCANCEL, 0, 2, 2, S_SITE, 8100000, 0, 33),
        tb_event_timed(AFD_EV_CANCEL_CAUGHT, 2, 2, 5, S_SITE, 8100000, 0, 34),
        tb_event_timed(AFD_EV_HANDOFF, AFD_HANDOFF_EXCEPTION, 1, 2, S_RESOURCE, 8200000, 1, 35),
        tb_event_timed(AFD_EV_SLOT, 0, 2, 1, 2, 200000, 499750, 3),
        tb_event_timed(AFD_EV_RESUME, AFD_RESUME_CANCELLED, 2, 7, S_RESOURCE, 8300000, 0, 36),
    };
    CHECK_EQ_INT(afd_trace_add_events(t, evs, (uint32_t)(sizeof evs / sizeof evs[0])), 0);
}

static void encode(const afd_trace *t, afd_buf *out)
{
    afd_buf_init(out);
    CHECK_EQ_INT(afd_trace_encode(t, out), 0);
    CHECK_EQ_INT(out->err, 0);
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* Rewrites the trailing CRC so that a deliberate change reaches the parser instead of stopping at
 * the checksum. */
static void reseal(uint8_t *p, size_t len)
{
    put32(p + len - 4, afd_crc32(0, p, len - 4));
}

/* Offset of event i in an encoding of a trace with n events. */
static size_t event_off(size_t len, uint32_t n, uint32_t i)
{
    return len - 4 - (size_t)n * 40 + (size_t)i * 40;
}

static int decode_rc(const uint8_t *p, size_t len)
{
    afd_trace t;
    int rc = afd_trace_decode(&t, p, len);
    if (rc == 0)
        afd_trace_finish(&t);
    else
        CHECK(t.token == NULL && t.n_events == 0 && t.events == NULL && t.strings == NULL);
    return rc;
}

static void check_same(const afd_trace *a, const afd_trace *b)
{
    CHECK_EQ_INT(a->mode, b->mode);
    CHECK_EQ_INT(a->outcome, b->outcome);
    CHECK_EQ_U64(a->flags, b->flags);
    CHECK_EQ_U64(a->steps, b->steps);
    CHECK_EQ_U64(a->dropped, b->dropped);
    CHECK_EQ_STR(a->token, b->token);
    CHECK_EQ_STR(a->python, b->python);
    CHECK_EQ_STR(a->hash_seed, b->hash_seed);
    CHECK_EQ_STR(a->failure, b->failure);
    CHECK_EQ_INT(a->n_strings, b->n_strings);
    for (uint32_t i = 0; i < a->n_strings; i++)
        CHECK_EQ_STR(a->strings[i], b->strings[i]);
    CHECK_EQ_INT(a->n_events, b->n_events);
    for (uint32_t i = 0; i < a->n_events; i++) {
        const afd_event *x = &a->events[i], *y = &b->events[i];
        CHECK_EQ_INT(x->kind, y->kind);
        CHECK_EQ_INT(x->flags, y->flags);
        CHECK_EQ_INT(y->pad, 0);
        CHECK_EQ_U64(x->task, y->task);
        CHECK_EQ_U64(x->a, y->a);
        CHECK_EQ_U64(x->b, y->b);
        CHECK_EQ_U64(x->vtime, y->vtime);
        CHECK_EQ_U64(x->cost, y->cost);
        CHECK_EQ_U64(x->wall, y->wall);
    }
}

TEST(init_finish)
{
    afd_trace t;
    CHECK_EQ_INT(afd_trace_init(&t), 0);
    CHECK_EQ_STR(t.token, "");
    CHECK_EQ_STR(t.python, "");
    CHECK_EQ_STR(t.hash_seed, "");
    CHECK_EQ_STR(t.failure, "");
    CHECK_EQ_INT(t.n_strings, 0);
    CHECK_EQ_INT(t.n_events, 0);
    afd_trace_finish(&t);
    afd_trace_finish(&t);
    afd_trace_finish(NULL);
}

TEST(roundtrip_every_kind)
{
    afd_trace t, d;
    sample(&t);
    afd_buf b, b2;
    encode(&t, &b);
    CHECK_EQ_INT(memcmp(b.data, "AFDT", 4), 0);
    CHECK_EQ_U64(get32(b.data + 4), AFD_TRACE_VERSION);
    CHECK_EQ_INT(afd_trace_decode(&d, b.data, b.len), 0);
    check_same(&t, &d);
    CHECK(d.flags & AFD_TRACE_TRUNCATED);
    CHECK_EQ_U64(d.dropped, 17);
    for (int k = AFD_EV_TASK; k < AFD_EV__COUNT; k++) {
        if (k == AFD_EV_CHAIN) /* its rules and its sample live with the await-chain recording */
            continue;
        int seen = 0;
        for (uint32_t i = 0; i < d.n_events; i++)
            seen |= d.events[i].kind == k;
        CHECK(seen);
    }
    CHECK_EQ_U64(afd_trace_digest(&d), afd_trace_digest(&t));
    /* A decoded trace re-encodes to the same bytes. */
    encode(&d, &b2);
    CHECK_EQ_INT(b2.len, b.len);
    CHECK_EQ_INT(memcmp(b.data, b2.data, b.len), 0);
    afd_buf_finish(&b);
    afd_buf_finish(&b2);
    afd_trace_finish(&t);
    afd_trace_finish(&d);
}

TEST(roundtrip_empty_and_appended)
{
    afd_trace t, d;
    CHECK_EQ_INT(afd_trace_init(&t), 0);
    afd_buf b;
    afd_buf_init(&b);
    afd_buf_put(&b, "prefix", 6); /* encode appends, and its CRC covers only the trace */
    CHECK_EQ_INT(afd_trace_encode(&t, &b), 0);
    CHECK_EQ_INT(afd_trace_decode(&d, b.data + 6, b.len - 6), 0);
    check_same(&t, &d);
    CHECK(d.strings == NULL && d.events == NULL);
    CHECK_EQ_U64(afd_trace_digest(&d), afd_trace_digest(&t));
    afd_buf_finish(&b);
    afd_trace_finish(&t);
    afd_trace_finish(&d);
}

TEST(large_trace_grows_amortized)
{
    afd_trace t, d;
    CHECK_EQ_INT(afd_trace_init(&t), 0);
    uint32_t id;
    CHECK_EQ_INT(afd_trace_add_string(&t, "t#0", 3, &id), 0);
    CHECK_EQ_INT(afd_trace_add_events(&t, NULL, 0), 0);
    for (uint32_t i = 0; i < 300000; i++) {
        afd_event ev = tb_event_timed(AFD_EV_STEP, 0, 1, i, id, (uint64_t)i * 1000, 7, i);
        CHECK_EQ_INT(afd_trace_add_events(&t, &ev, 1), 0);
    }
    CHECK(t.cap_events >= t.n_events && t.cap_events < 2 * t.n_events);
    afd_buf b;
    encode(&t, &b);
    CHECK_EQ_INT(b.len, 32 + 16 + 4 + 7 + 4 + 300000 * 40 + 4);
    CHECK_EQ_INT(afd_trace_decode(&d, b.data, b.len), 0);
    CHECK_EQ_INT(d.n_events, 300000);
    CHECK_EQ_U64(d.events[299999].vtime, 299999000ULL);
    CHECK_EQ_U64(afd_trace_digest(&d), afd_trace_digest(&t));
    afd_buf_finish(&b);
    afd_trace_finish(&t);
    afd_trace_finish(&d);
}

TEST(strings_and_labels)
{
    afd_trace t;
    sample(&t);
    CHECK_EQ_STR(afd_trace_string(&t, S_SITE), "test_x.py:14");
    CHECK_EQ_STR(afd_trace_string(&t, AFD_NOSTR), "?");
    CHECK_EQ_STR(afd_trace_string(&t, S__COUNT), "?");
    CHECK_EQ_STR(afd_trace_task_label(&t, 2), "finalize_report#0");
    CHECK_EQ_STR(afd_trace_task_label(&t, 1), "test_x#0");
    CHECK_EQ_STR(afd_trace_task_label(&t, 42), "?");
    /* a place is named only when known */
    CHECK(afd_trace_known(&t, AFD_NOSTR) == NULL);
    CHECK(afd_trace_known(&t, S__COUNT) == NULL);
    CHECK_EQ_STR(afd_trace_known(&t, S_SITE), "test_x.py:14");
    CHECK_EQ_INT(afd_trace_task_is_callback(&t, 2), 0);
    CHECK_EQ_INT(afd_trace_task_is_callback(&t, 42), 0);
    CHECK_EQ_STR(afd_outcome_name(AFD_OUT_PASS), "pass");
    CHECK_EQ_STR(afd_outcome_name(AFD_OUT_FAIL), "fail");
    CHECK_EQ_STR(afd_outcome_name(AFD_OUT_ERROR), "error");
    CHECK_EQ_STR(afd_outcome_name(AFD_OUT_SKIP), "skip");
    CHECK_EQ_STR(afd_outcome_name(AFD_OUT_HANG), "hang");
    CHECK_EQ_STR(afd_outcome_name(AFD_OUT_CRASH), "crash");
    CHECK_EQ_STR(afd_outcome_name(AFD_OUT_STEP_LIMIT), "step-limit");
    CHECK(afd_outcome_name(AFD_OUT__COUNT) != NULL);
    CHECK(afd_outcome_name(-1) != NULL);
    /* The string is copied, and bytes past len are not. */
    char src[] = "abcdef";
    uint32_t id;
    CHECK_EQ_INT(afd_trace_add_string(&t, src, 3, &id), 0);
    src[0] = 'X';
    CHECK_EQ_STR(afd_trace_string(&t, id), "abc");
    CHECK_EQ_INT(afd_trace_add_string(&t, NULL, 0, &id), 0);
    CHECK_EQ_STR(afd_trace_string(&t, id), "");
    afd_trace_finish(&t);
}

TEST(producer_limits)
{
    afd_trace t;
    sample(&t);
    size_t big = AFD_TRACE_MAX_FAILURE + 1;
    char *s = malloc(big);
    CHECK(s != NULL);
    memset(s, 'x', big);
    uint32_t id;
    CHECK_EQ_INT(afd_trace_add_string(&t, s, AFD_TRACE_MAX_STRING + 1, &id), AFD_EFULL);
    CHECK_EQ_INT(afd_trace_add_string(&t, s, AFD_TRACE_MAX_STRING, &id), 0);
    CHECK_EQ_INT(afd_trace_set_str(&t, &t.failure, s, AFD_TRACE_MAX_FAILURE + 1), AFD_EFULL);
    CHECK_EQ_STR(t.failure, "AssertionError: x");
    CHECK_EQ_INT(afd_trace_set_str(&t, &t.python, s, AFD_TRACE_MAX_STRING + 1), AFD_EFULL);
    CHECK_EQ_INT(afd_trace_set_str(&t, &t.failure, s, AFD_TRACE_MAX_FAILURE), 0);
    /* Only the four header strings may be replaced. */
    CHECK_EQ_INT(afd_trace_set_str(&t, &t.strings[0], "x", 1), AFD_EINVAL);
    /* What was accepted also decodes. */
    afd_buf b;
    encode(&t, &b);
    CHECK_EQ_INT(decode_rc(b.data, b.len), 0);
    afd_buf_finish(&b);
    free(s);
    afd_trace_finish(&t);
}

TEST(encode_refuses_what_decode_would)
{
    afd_trace t;
    sample(&t);
    afd_buf b;
    afd_buf_init(&b);
    afd_event good = t.events[3];

    t.events[3].b = S__COUNT; /* a string index past the table */
    CHECK_EQ_INT(afd_trace_encode(&t, &b), AFD_EINVAL);
    t.events[3] = good;
    t.events[3].kind = AFD_EV__COUNT;
    CHECK_EQ_INT(afd_trace_encode(&t, &b), AFD_EINVAL);
    t.events[3] = good;
    t.events[3].pad = 1;
    CHECK_EQ_INT(afd_trace_encode(&t, &b), AFD_EINVAL);
    t.events[3] = good;
    t.outcome = AFD_OUT__COUNT;
    CHECK_EQ_INT(afd_trace_encode(&t, &b), AFD_EINVAL);
    t.outcome = AFD_OUT_PASS;
    t.mode = 2;
    CHECK_EQ_INT(afd_trace_encode(&t, &b), AFD_EINVAL);
    t.mode = AFD_MODE_NATURAL;
    /* A string planted past the producer's checks is still refused. */
    char *big = malloc(AFD_TRACE_MAX_STRING + 2);
    CHECK(big != NULL);
    memset(big, 'y', AFD_TRACE_MAX_STRING + 1);
    big[AFD_TRACE_MAX_STRING + 1] = 0;
    char *old = t.strings[0];
    t.strings[0] = big;
    CHECK_EQ_INT(afd_trace_encode(&t, &b), AFD_EFULL);
    t.strings[0] = old;
    free(big);
    CHECK_EQ_INT(b.len, 0); /* nothing was written by the refused calls */
    CHECK_EQ_INT(afd_trace_encode(&t, &b), 0);
    afd_buf_finish(&b);
    afd_trace_finish(&t);
}

TEST(digest_ignores_wall_python_failure)
{
    afd_trace a, b;
    sample(&a);
    sample(&b);
    uint64_t d0 = afd_trace_digest(&a);
    CHECK_EQ_U64(afd_trace_digest(&b), d0);
    for (uint32_t i = 0; i < b.n_events; i++)
        b.events[i].wall = b.events[i].wall * 7919 + 13;
    CHECK_EQ_INT(afd_trace_set_str(&b, &b.python, "3.13.0 (other build)", 20), 0);
    CHECK_EQ_INT(afd_trace_set_str(&b, &b.failure, "", 0), 0);
    CHECK_EQ_U64(afd_trace_digest(&b), d0);
    /* The digest is a function of the content, not of memory: a decoded copy agrees. */
    afd_buf buf;
    encode(&b, &buf);
    afd_trace d;
    CHECK_EQ_INT(afd_trace_decode(&d, buf.data, buf.len), 0);
    CHECK_EQ_U64(afd_trace_digest(&d), d0);
    afd_buf_finish(&buf);
    afd_trace_finish(&d);
    afd_trace_finish(&a);
    afd_trace_finish(&b);
}

/* The digest of sample() as the code computed it before SLOT events existed (sample() had no SLOT
 * then): a trace without SLOT events digests exactly as before, and the SLOT event sample() now
 * holds changes nothing. */
#define SAMPLE_DIGEST_BEFORE_SLOTS 0xcffc5f481b6aa1e2ULL

/* sample() without its SLOT events. */
static void drop_slots(afd_trace *t)
{
    uint32_t j = 0;
    for (uint32_t i = 0; i < t->n_events; i++)
        if (t->events[i].kind != AFD_EV_SLOT)
            t->events[j++] = t->events[i];
    t->n_events = j;
}

TEST(digests_skip_slot_events)
{
    afd_trace t;
    sample(&t);
    CHECK_EQ_U64(afd_trace_digest(&t), SAMPLE_DIGEST_BEFORE_SLOTS);
    uint64_t order = afd_trace_order_digest(&t);
    /* Any SLOT field, or the SLOT itself, is measurement: neither digest moves. */
    for (uint32_t i = 0; i < t.n_events; i++) {
        afd_event *e = &t.events[i];
        if (e->kind != AFD_EV_SLOT)
            continue;
        e->cost = UINT64_MAX;
        e->vtime++;
        e->task = 1;
        e->a += 3;
        e->b += 5;
    }
    CHECK_EQ_U64(afd_trace_digest(&t), SAMPLE_DIGEST_BEFORE_SLOTS);
    CHECK_EQ_U64(afd_trace_order_digest(&t), order);
    drop_slots(&t);
    CHECK_EQ_U64(afd_trace_digest(&t), SAMPLE_DIGEST_BEFORE_SLOTS);
    CHECK_EQ_U64(afd_trace_order_digest(&t), order);
    /* More SLOT events, anywhere, neither. */
    afd_event slot = tb_event_timed(AFD_EV_SLOT, 0, 1, 0, 1, 250, 17, 0);
    CHECK_EQ_INT(afd_trace_add_events(&t, &slot, 1), 0);
    CHECK_EQ_U64(afd_trace_digest(&t), SAMPLE_DIGEST_BEFORE_SLOTS);
    CHECK_EQ_U64(afd_trace_order_digest(&t), order);
    /* The order digest is not the digest. */
    CHECK(order != SAMPLE_DIGEST_BEFORE_SLOTS);
    afd_trace_finish(&t);
}

TEST(order_digest_ignores_times)
{
    afd_trace base, t;
    sample(&base);
    uint64_t d0 = afd_trace_order_digest(&base);
    sample(&t);
    /* Every time field of every event, the token, the flags, the step count, the failure text and
     * python: none is order. */
    for (uint32_t i = 0; i < t.n_events; i++) {
        afd_event *e = &t.events[i];
        e->vtime = e->vtime * 3 + 7;
        e->wall = ~e->wall;
        if (e->kind != AFD_EV_LINE && e->kind != AFD_EV_LOCAL) /* their cost is a string id */
            e->cost += 1000;
        if (e->kind == AFD_EV_IDLE)
            e->a += 12345; /* the lateness */
    }
    CHECK_EQ_INT(afd_trace_set_str(&t, &t.token, "afd1:zzzzzz", 11), 0);
    CHECK_EQ_INT(afd_trace_set_str(&t, &t.failure, "AssertionError: 3 ms", 20), 0);
    CHECK_EQ_INT(afd_trace_set_str(&t, &t.python, "3.13.0", 6), 0);
    t.steps++;
    t.flags = 0;
    CHECK_EQ_U64(afd_trace_order_digest(&t), d0);
    CHECK(afd_trace_digest(&t) != afd_trace_digest(&base));
    afd_trace_finish(&t);
    afd_trace_finish(&base);
}

TEST(order_digest_sees_order_and_identity)
{
    afd_trace base;
    sample(&base);
    uint64_t d0 = afd_trace_order_digest(&base);
    for (int change = 0; change < 9; change++) {
        afd_trace t;
        sample(&t);
        afd_event *step = &t.events[3];
        switch (change) {
        case 0: /* a step of another task */
            step->task = 1;
            break;
        case 1: /* another ordinal */
            step->a++;
            break;
        case 2: /* another suspension site */
            step->b = S_OPNAME;
            break;
        case 3: /* two steps swap places */
        {
            afd_event tmp = t.events[3];
            t.events[3] = t.events[4];
            t.events[4] = tmp;
            break;
        }
        case 4: /* a wake-up scheduled by another step */
            t.events[11].a++;
            break;
        case 5: /* a write instead of a read */
            t.events[6].flags ^= 1;
            break;
        case 6:
            t.outcome = AFD_OUT_PASS;
            break;
        case 7: /* another string */
            t.strings[S_SITE][0] = 'T';
            break;
        case 8: /* an event fewer (not a SLOT) */
            t.n_events--;
            break;
        }
        if (afd_trace_order_digest(&t) == d0)
            FAIL_AT("change %d left the order digest unchanged", change);
        afd_trace_finish(&t);
    }
    afd_trace_finish(&base);
}

TEST(digest_sees_every_other_field)
{
    afd_trace base;
    sample(&base);
    uint64_t d0 = afd_trace_digest(&base);
    for (int change = 0; change < 20; change++) {
        afd_trace t;
        sample(&t);
        afd_event *step = &t.events[3];
        switch (change) {
        case 0:
            step->vtime++;
            break;
        case 1:
            step->cost++;
            break;
        case 2:
            step->task = 1;
            break;
        case 3:
            step->a++;
            break;
        case 4:
            step->b = S_OPNAME;
            break;
        case 5:
            step->flags = 1;
            break;
        case 6:
            step->kind = AFD_EV_ASSERT_BEGIN;
            break;
        case 7:
            t.outcome = AFD_OUT_PASS;
            break;
        case 8:
            t.mode = AFD_MODE_NATURAL;
            break;
        case 9:
            t.flags = 0;
            break;
        case 10:
            t.steps++;
            break;
        case 11:
            t.dropped = 0;
            break;
        case 12:
            CHECK_EQ_INT(afd_trace_set_str(&t, &t.token, "afd1:abcdeg", 11), 0);
            break;
        case 13:
            CHECK_EQ_INT(afd_trace_set_str(&t, &t.hash_seed, "1", 1), 0);
            break;
        case 14:
            t.strings[S_SITE][0] = 'T';
            break;
        case 15:
            t.n_events--;
            break; /* the last event is gone */
        case 16: { /* two events swap places */
            afd_event tmp = t.events[3];
            t.events[3] = t.events[4];
            t.events[4] = tmp;
            break;
        }
        case 17: { /* one more string, even unused */
            uint32_t id;
            CHECK_EQ_INT(afd_trace_add_string(&t, "", 0, &id), 0);
            break;
        }
        case 18: { /* a byte moves from one string to the next: "test_x#0","finalize..." */
            free(t.strings[S_TEST]);
            free(t.strings[S_FINALIZE]);
            t.strings[S_TEST] = strdup("test_x#0f");
            t.strings[S_FINALIZE] = strdup("inalize_report#0");
            CHECK(t.strings[S_TEST] && t.strings[S_FINALIZE]);
            break;
        }
        case 19:
            t.events[5].a++;
            break; /* the idle lateness */
        }
        if (afd_trace_digest(&t) == d0)
            FAIL_AT("change %d left the digest unchanged", change);
        afd_trace_finish(&t);
    }
    afd_trace_finish(&base);
}

TEST(decode_bad_magic_and_version)
{
    afd_trace t;
    sample(&t);
    afd_buf b;
    encode(&t, &b);
    CHECK_EQ_INT(decode_rc(b.data, b.len), 0);
    CHECK_EQ_INT(decode_rc(NULL, 0), AFD_ETRACE_MAGIC);
    CHECK_EQ_INT(decode_rc((const uint8_t *)"AFD", 3), AFD_ETRACE_MAGIC);
    b.data[0] = 'X';
    CHECK_EQ_INT(decode_rc(b.data, b.len), AFD_ETRACE_MAGIC);
    b.data[0] = 'A';
    put32(b.data + 4, AFD_TRACE_VERSION + 1);
    reseal(b.data, b.len);
    CHECK_EQ_INT(decode_rc(b.data, b.len), AFD_ETRACE_VERSION);
    put32(b.data + 4, 0);
    CHECK_EQ_INT(decode_rc(b.data, b.len), AFD_ETRACE_VERSION);
    CHECK_EQ_INT(decode_rc(b.data, 8), AFD_ETRACE_VERSION);
    put32(b.data + 4, AFD_TRACE_VERSION);
    CHECK_EQ_INT(decode_rc(b.data, b.len), AFD_ETRACE_CORRUPT); /* the CRC still has version 0 */
    reseal(b.data, b.len);
    CHECK_EQ_INT(decode_rc(b.data, b.len), 0);
    afd_buf_finish(&b);
    afd_trace_finish(&t);
}

TEST(decode_flipped_byte_anywhere)
{
    afd_trace t;
    sample(&t);
    afd_buf b;
    encode(&t, &b);
    for (size_t i = 0; i < b.len; i++) {
        for (int bit = 0; bit < 8; bit++) {
            b.data[i] ^= (uint8_t)(1u << bit);
            int rc = decode_rc(b.data, b.len);
            if (rc >= 0)
                FAIL_AT("flipping bit %d of byte %zu was accepted", bit, i);
            b.data[i] ^= (uint8_t)(1u << bit);
        }
    }
    CHECK_EQ_INT(decode_rc(b.data, b.len), 0);
    afd_buf_finish(&b);
    afd_trace_finish(&t);
}

TEST(decode_truncated_at_every_length)
{
    afd_trace t;
    sample(&t);
    afd_buf b;
    encode(&t, &b);
    uint8_t *cut = malloc(b.len);
    CHECK(cut != NULL);
    for (size_t n = 0; n < b.len; n++) {
        /* Cut as it is, and cut with a fresh CRC so the parser itself must notice. */
        if (decode_rc(b.data, n) >= 0)
            FAIL_AT("a trace cut to %zu of %zu bytes was accepted", n, b.len);
        if (n >= 12 && n < b.len - 4) {
            memcpy(cut, b.data, n - 4);
            put32(cut + n - 4, afd_crc32(0, cut, n - 4));
            if (decode_rc(cut, n) != AFD_ETRACE_CORRUPT)
                FAIL_AT("a resealed trace cut to %zu bytes was not refused as corrupt", n);
        }
    }
    free(cut);
    afd_buf_finish(&b);
    afd_trace_finish(&t);
}

/* Builds a trace byte by byte, to reach inputs encode would never write. */
static void raw_header(afd_buf *b, uint32_t n_failure, uint8_t failure_byte)
{
    afd_buf_init(b);
    afd_buf_put(b, "AFDT", 4);
    afd_buf_put_u32(b, AFD_TRACE_VERSION);
    afd_buf_put_u8(b, AFD_MODE_NATURAL);
    afd_buf_put_u8(b, AFD_OUT_PASS);
    afd_buf_put_u16(b, 0);
    afd_buf_put_u32(b, 0);
    afd_buf_put_u64(b, 0);
    afd_buf_put_u64(b, 0);
    afd_buf_put_str(b, "", 0);
    afd_buf_put_str(b, "", 0);
    afd_buf_put_str(b, "", 0);
    afd_buf_put_u32(b, n_failure);
    for (uint32_t i = 0; i < n_failure; i++)
        afd_buf_put_u8(b, failure_byte);
}

static int raw_finish(afd_buf *b)
{
    afd_buf_put_u32(b, afd_crc32(0, b->data, b->len));
    CHECK_EQ_INT(b->err, 0);
    int rc = decode_rc(b->data, b->len);
    afd_buf_finish(b);
    return rc;
}

TEST(decode_huge_counts_without_allocating)
{
    /* Were the counts trusted, these would ask for 32 GiB and 160 GiB; such a request fails on any
     * test machine (and aborts under ASan), so AFD_ETRACE_CORRUPT proves the check came first. */
    afd_buf b;
    raw_header(&b, 0, 0);
    afd_buf_put_u32(&b, 0xffffffffu);
    CHECK_EQ_INT(raw_finish(&b), AFD_ETRACE_CORRUPT);

    raw_header(&b, 0, 0);
    afd_buf_put_u32(&b, 0);
    afd_buf_put_u32(&b, 0xffffffffu);
    CHECK_EQ_INT(raw_finish(&b), AFD_ETRACE_CORRUPT);

    /* A string count one larger than the bytes left could hold. */
    raw_header(&b, 0, 0);
    afd_buf_put_u32(&b, 3);
    afd_buf_put_u32(&b, 0);
    afd_buf_put_u32(&b, 0);
    CHECK_EQ_INT(raw_finish(&b), AFD_ETRACE_CORRUPT);
    raw_header(&b, 0, 0);
    afd_buf_put_u32(&b, 2);
    afd_buf_put_u32(&b, 0);
    afd_buf_put_u32(&b, 0);
    afd_buf_put_u32(&b, 0);
    CHECK_EQ_INT(raw_finish(&b), 0);

    /* A string length beyond the input. */
    raw_header(&b, 0, 0);
    afd_buf_put_u32(&b, 1);
    afd_buf_put_u32(&b, 0xfffffff0u);
    afd_buf_put_u32(&b, 0);
    CHECK_EQ_INT(raw_finish(&b), AFD_ETRACE_CORRUPT);
}

TEST(decode_string_bounds)
{
    afd_buf b;
    raw_header(&b, AFD_TRACE_MAX_FAILURE, 'f');
    afd_buf_put_u32(&b, 0);
    afd_buf_put_u32(&b, 0);
    CHECK_EQ_INT(raw_finish(&b), 0);
    raw_header(&b, AFD_TRACE_MAX_FAILURE + 1, 'f');
    afd_buf_put_u32(&b, 0);
    afd_buf_put_u32(&b, 0);
    CHECK_EQ_INT(raw_finish(&b), AFD_ETRACE_CORRUPT);

    char *big = malloc(AFD_TRACE_MAX_STRING + 1);
    CHECK(big != NULL);
    memset(big, 's', AFD_TRACE_MAX_STRING + 1);
    raw_header(&b, 0, 0);
    afd_buf_put_u32(&b, 1);
    afd_buf_put_str(&b, big, AFD_TRACE_MAX_STRING);
    afd_buf_put_u32(&b, 0);
    CHECK_EQ_INT(raw_finish(&b), 0);
    raw_header(&b, 0, 0);
    afd_buf_put_u32(&b, 1);
    afd_buf_put_str(&b, big, AFD_TRACE_MAX_STRING + 1);
    afd_buf_put_u32(&b, 0);
    CHECK_EQ_INT(raw_finish(&b), AFD_ETRACE_CORRUPT);
    free(big);

    /* A NUL inside a string cannot come from encode. */
    raw_header(&b, 0, 0);
    afd_buf_put_u32(&b, 1);
    afd_buf_put_str(&b, "a\0b", 3);
    afd_buf_put_u32(&b, 0);
    CHECK_EQ_INT(raw_finish(&b), AFD_ETRACE_CORRUPT);
    /* In the failure text it can: a test's message is arbitrary, and its NULs are part of it. */
    raw_header(&b, 2, 0);
    afd_buf_put_u32(&b, 0);
    afd_buf_put_u32(&b, 0);
    CHECK_EQ_INT(raw_finish(&b), 0);
}

/* A failure text with NUL bytes survives set_str, encode and decode whole. */
TEST(failure_keeps_nul_bytes)
{
    afd_trace t, d;
    CHECK_EQ_INT(afd_trace_init(&t), 0);
    static const char text[] = "a\0b\x1b]0;x\x07c";
    CHECK_EQ_INT(afd_trace_set_str(&t, &t.failure, text, sizeof text - 1), 0);
    CHECK_EQ_INT((long long)t.failure_len, (long long)(sizeof text - 1));
    afd_buf b;
    afd_buf_init(&b);
    CHECK_EQ_INT(afd_trace_encode(&t, &b), 0);
    CHECK_EQ_INT(afd_trace_decode(&d, b.data, b.len), 0);
    CHECK_EQ_INT((long long)d.failure_len, (long long)(sizeof text - 1));
    CHECK(memcmp(d.failure, text, sizeof text - 1) == 0);
    CHECK_EQ_INT(d.failure[d.failure_len], 0);
    afd_trace_finish(&d);
    afd_trace_finish(&t);
    afd_buf_finish(&b);
}

/* Applies one change to the sample's encoding, reseals it and returns decode's verdict. */
static int decode_patched(size_t off, const void *bytes, size_t n, size_t extra_tail)
{
    afd_trace t;
    sample(&t);
    afd_buf b;
    encode(&t, &b);
    afd_trace_finish(&t);
    memcpy(b.data + off, bytes, n);
    if (extra_tail) { /* trailing bytes between the events and the CRC */
        afd_buf_put(&b, "\0\0\0\0\0\0\0\0", extra_tail);
    }
    reseal(b.data, b.len);
    int rc = decode_rc(b.data, b.len);
    afd_buf_finish(&b);
    return rc;
}

TEST(decode_refuses_bad_fields)
{
    afd_trace t;
    sample(&t);
    afd_buf b;
    encode(&t, &b);
    size_t len = b.len;
    uint32_t n = t.n_events;
    afd_buf_finish(&b);
    afd_trace_finish(&t);

    uint8_t v = 2;
    CHECK_EQ_INT(decode_patched(8, &v, 1, 0), AFD_ETRACE_CORRUPT); /* mode */
    v = AFD_OUT__COUNT;
    CHECK_EQ_INT(decode_patched(9, &v, 1, 0), AFD_ETRACE_CORRUPT); /* outcome */
    v = 1;
    CHECK_EQ_INT(decode_patched(10, &v, 1, 0), AFD_ETRACE_CORRUPT); /* header pad */
    CHECK_EQ_INT(decode_patched(11, &v, 1, 0), AFD_ETRACE_CORRUPT);
    CHECK_EQ_INT(decode_patched(0, "AFDT", 4, 4), AFD_ETRACE_CORRUPT); /* trailing bytes */
    CHECK_EQ_INT(decode_patched(0, "AFDT", 4, 8), AFD_ETRACE_CORRUPT);
    v = AFD_OUT_STEP_LIMIT;
    CHECK_EQ_INT(decode_patched(9, &v, 1, 0), 0);

    /* Event i of the sample, field offsets within an event: kind 0, pad 2, a 8, b 12. */
    size_t loop = event_off(len, n, 0), task = event_off(len, n, 1), step = event_off(len, n, 3);
    size_t op_begin = event_off(len, n, 6), op_end = event_off(len, n, 7);
    size_t as_begin = event_off(len, n, 8), as_end = event_off(len, n, 9);
    size_t unc = event_off(len, n, 10), idle = event_off(len, n, 5);
    v = 0;
    CHECK_EQ_INT(decode_patched(step, &v, 1, 0), AFD_ETRACE_CORRUPT);
    v = AFD_EV__COUNT;
    CHECK_EQ_INT(decode_patched(step, &v, 1, 0), AFD_ETRACE_CORRUPT);
    v = 0xff;
    CHECK_EQ_INT(decode_patched(step, &v, 1, 0), AFD_ETRACE_CORRUPT);
    v = 1;
    CHECK_EQ_INT(decode_patched(step + 2, &v, 1, 0), AFD_ETRACE_CORRUPT);
    CHECK_EQ_INT(decode_patched(step + 3, &v, 1, 0), AFD_ETRACE_CORRUPT);

    uint8_t past[4], nostr[4], last[4];
    put32(past, S__COUNT);
    put32(nostr, AFD_NOSTR);
    put32(last, S__COUNT - 1);
    const size_t refs[] = {task + 12,  step + 12,   op_begin + 8,  op_begin + 12,
                           op_end + 8, op_end + 12, as_begin + 12, as_end + 12};
    for (size_t i = 0; i < sizeof refs / sizeof refs[0]; i++) {
        if (decode_patched(refs[i], past, 4, 0) != AFD_ETRACE_CORRUPT)
            FAIL_AT("string reference %zu past the table was accepted", i);
        CHECK_EQ_INT(decode_patched(refs[i], nostr, 4, 0), 0);
        CHECK_EQ_INT(decode_patched(refs[i], last, 4, 0), 0);
    }
    /* Fields that hold numbers, not strings, take any value. */
    const size_t numbers[] = {loop + 8, loop + 12, task + 8,     step + 8,
                              idle + 8, unc + 8,   as_begin + 8, as_end + 8};
    for (size_t i = 0; i < sizeof numbers / sizeof numbers[0]; i++)
        CHECK_EQ_INT(decode_patched(numbers[i], past, 4, 0), 0);
    /* A SLOT's only flags are AFD_SLOT_DEADLINE and AFD_SLOT_CROSSING, and its b is 1 + a step
     * index: never 0. */
    size_t slot = event_off(len, n, n - 2);
    v = AFD_SLOT_DEADLINE;
    CHECK_EQ_INT(decode_patched(slot + 1, &v, 1, 0), 0);
    v = AFD_SLOT_DEADLINE | AFD_SLOT_CROSSING;
    CHECK_EQ_INT(decode_patched(slot + 1, &v, 1, 0), 0);
    v = AFD_SLOT_CROSSING << 1;
    CHECK_EQ_INT(decode_patched(slot + 1, &v, 1, 0), AFD_ETRACE_CORRUPT);
    uint8_t zero[4] = {0, 0, 0, 0};
    CHECK_EQ_INT(decode_patched(slot + 12, zero, 4, 0), AFD_ETRACE_CORRUPT);
    CHECK_EQ_INT(decode_patched(slot + 12, nostr, 4, 0), 0);
    CHECK_EQ_INT(decode_patched(slot + 8, nostr, 4, 0), 0);
}

/* A counter-based generator: the mutation sequence depends only on the seed. */
static uint64_t rnd_state;
static uint64_t rnd(void)
{
    return afd_mix64(rnd_state++);
}

TEST(mutation_robustness)
{
    afd_trace t;
    sample(&t);
    afd_buf b;
    encode(&t, &b);
    afd_trace_finish(&t);
    size_t cap = b.len + 64;
    uint8_t *m = malloc(cap);
    CHECK(m != NULL);
    rnd_state = 0x5eed;
    int accepted = 0, reached_parser = 0;
    for (int iter = 0; iter < 40000; iter++) {
        size_t len = b.len;
        memcpy(m, b.data, len);
        int edits = 1 + (int)(rnd() % 4);
        for (int e = 0; e < edits; e++) {
            uint64_t r = rnd();
            size_t pos = (size_t)(r >> 8) % len;
            switch (r % 6) {
            case 0:
                m[pos] = (uint8_t)(r >> 40);
                break;
            case 1:
                m[pos] ^= (uint8_t)(1u << (r >> 40) % 8);
                break;
            case 2: /* a little-endian word set to an extreme or small value */
                if (pos + 4 <= len)
                    put32(m + pos,
                          (r >> 40) & 1 ? 0xffffffffu - (uint32_t)(r >> 48 & 3) : (uint32_t)(r >> 48 & 7));
                break;
            case 3:
                len = pos + 1;
                break; /* truncation */
            case 4:    /* insertion of a byte */
                if (len < cap) {
                    memmove(m + pos + 1, m + pos, len - pos);
                    m[pos] = (uint8_t)(r >> 40);
                    len++;
                }
                break;
            case 5: /* deletion of a byte */
                if (len > 1) {
                    memmove(m + pos, m + pos + 1, len - pos - 1);
                    len--;
                }
                break;
            }
        }
        /* Most mutants get a fresh CRC, or the checksum alone would stop them. */
        if (rnd() % 4 != 0 && len >= 12)
            reseal(m, len);
        afd_trace d;
        int rc = afd_trace_decode(&d, m, len);
        if (rc > 0)
            FAIL_AT("decode returned %d", rc);
        if (rc == AFD_ETRACE_CORRUPT || rc == 0)
            reached_parser++;
        if (rc == 0) {
            /* Whatever decode accepts must re-encode to the same bytes and be usable. */
            accepted++;
            afd_buf again, line;
            encode(&d, &again);
            CHECK_EQ_INT(again.len, len);
            CHECK_EQ_INT(memcmp(again.data, m, len), 0);
            afd_buf_init(&line);
            for (uint32_t i = 0; i < d.n_events; i++)
                afd_trace_format_event(&d, &d.events[i], &line);
            CHECK_EQ_INT(line.err, 0);
            (void)afd_trace_digest(&d);
            afd_buf_finish(&again);
            afd_buf_finish(&line);
            afd_trace_finish(&d);
        }
    }
    CHECK(accepted > 100); /* the loop did reach past the parser's checks */
    CHECK(reached_parser > 20000);
    free(m);
    afd_buf_finish(&b);
}

static void check_line(const afd_trace *t, const afd_event *ev, const char *want)
{
    afd_buf b;
    afd_buf_init(&b);
    afd_buf_put(&b, "> ", 2); /* format_event appends */
    afd_trace_format_event(t, ev, &b);
    CHECK_EQ_INT(b.err, 0);
    CHECK_EQ_STR((const char *)b.data + 2, want);
    CHECK_EQ_INT(memcmp(b.data, "> ", 2), 0);
    afd_buf_finish(&b);
}

TEST(format_event_lines)
{
    afd_trace t;
    sample(&t);
    check_line(&t, &t.events[0], "event loop 1 started");
    check_line(&t, &t.events[1], "task test_x#0 created");
    check_line(&t, &t.events[2], "task finalize_report#0 created by test_x#0");
    check_line(&t, &t.events[3],
               "step finalize_report#0 #1 at t=1.250ms cost 0.200ms (suspended at test_x.py:14)");
    check_line(&t, &t.events[4], "step test_x#0 #0 at t=1.450ms cost 0.001ms");
    check_line(&t, &t.events[5], "idle: clock jumps 5.000ms to t=6.000ms (0.300ms late)");
    check_line(&t, &t.events[6], "write report.status by task finalize_report#0 (operation finalize)");
    check_line(&t, &t.events[7], "write report.status by task finalize_report#0 raised (operation finalize)");
    check_line(&t, &t.events[8], "assertion on report.status by task test_x#0");
    check_line(&t, &t.events[9], "assertion on report.status by task test_x#0 raised");
    check_line(&t, &t.events[10], "uncontrolled at t=7.000ms: a thread called back into the loop");
    check_line(
        &t, &t.events[t.n_events - 2],
        "slot of step 1 (task finalize_report#0 #1): cost 200000 ns, 499750 ns more flips a comparison, "
        "3 clock reads");

    afd_event ev = tb_event_timed(AFD_EV_OP_END, 0, 42, AFD_NOSTR, S_RESOURCE, 0, 0, 0);
    check_line(&t, &ev, "read report.status by task task-42 ended");
    ev = tb_event_timed(AFD_EV_IDLE, 0, 0, 0, 0, 1999999, 1234, 0);
    check_line(&t, &ev, "idle: clock jumps 0.001ms to t=2.001ms");
    ev = tb_event_timed(AFD_EV_IDLE, 0, 0, 0, 0, 0, 499, 0);
    check_line(&t, &ev, "idle: clock jumps 0.000ms to t=0.000ms");
    ev = tb_event_timed(AFD_EV_ASSERT_END, 1, 2, 0, AFD_NOSTR, 0, 0, 0);
    check_line(&t, &ev, "assertion by task finalize_report#0 passed"); /* no "?" for a missing name */
    ev = tb_event_timed(AFD_EV_STEP, 0, 2, 3, AFD_NOSTR, 0, 0, 0);
    check_line(&t, &ev, "step finalize_report#0 #3 at t=0.000ms cost 0.000ms");
    ev = tb_event_timed(AFD_EV_BLOCK, 0, 2, 0, AFD_NOSTR, 0, 2000000, 0);
    check_line(&t, &ev, "blocking time.sleep(2.000ms) in task finalize_report#0");
    ev = tb_event_timed(AFD_EV_UNCONTROLLED, 0, 0, AFD_TRACE_FOREIGN_LOOP, 0, 0, 0, 0);
    check_line(&t, &ev, "uncontrolled at t=0.000ms: an event loop affidavit does not control ran");
    ev = tb_event_timed(AFD_EV_UNCONTROLLED, 0, 0, 1u << 10, 0, 0, 0, 0);
    check_line(&t, &ev, "uncontrolled at t=0.000ms: source 0x400");
    ev = tb_event_timed(AFD_EV_SLOT, 0, 1, 0, 5, 250, UINT64_MAX, 0);
    check_line(
        &t, &ev,
        "slot of step 4 (task test_x#0 #0): cost 250 ns, no larger cost flips a comparison, 0 clock reads");
    ev = tb_event_timed(77, 0, 0, 0, 0, 0, 0, 0);
    check_line(&t, &ev, "event of unknown kind 77");
    afd_trace_finish(&t);
}

TEST(program_steps_leave_out_self_pipe_reads)
{
    afd_trace t;
    CHECK_EQ_INT(afd_trace_init(&t), 0);
    CHECK_EQ_U64(afd_trace_program_steps(&t), 1); /* no step at all: pct needs one to spread over */
    t.steps = 5;
    afd_event ev[5] = {0};
    for (uint32_t i = 0; i < 5; i++)
        ev[i] = (afd_event){.kind = AFD_EV_WAKE, .task = 1, .b = i + 1};
    ev[1].flags = AFD_WAKE_TIMER;
    ev[2].flags = AFD_WAKE_SELF_PIPE;
    ev[4].flags = AFD_WAKE_SELF_PIPE | AFD_WAKE_TIMER;
    CHECK_EQ_INT(afd_trace_add_events(&t, ev, 5), 0);
    CHECK_EQ_U64(afd_trace_program_steps(&t), 3);
    t.steps = 1; /* a trace whose count says less than its events never goes below one */
    CHECK_EQ_U64(afd_trace_program_steps(&t), 1);
    afd_trace_finish(&t);
}

int main(void)
{
    RUN_TESTS("trace", T(init_finish), T(roundtrip_every_kind), T(roundtrip_empty_and_appended),
              T(large_trace_grows_amortized), T(strings_and_labels), T(producer_limits),
              T(encode_refuses_what_decode_would), T(digest_ignores_wall_python_failure),
              T(digest_sees_every_other_field), T(digests_skip_slot_events), T(order_digest_ignores_times),
              T(order_digest_sees_order_and_identity), T(decode_bad_magic_and_version),
              T(decode_flipped_byte_anywhere), T(decode_truncated_at_every_length),
              T(decode_huge_counts_without_allocating), T(decode_string_bounds), T(failure_keeps_nul_bytes),
              T(decode_refuses_bad_fields), T(mutation_robustness), T(format_event_lines),
              T(program_steps_leave_out_self_pipe_reads));
}
