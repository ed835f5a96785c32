/* make_seeds.c -- writes the seed corpora of fuzz_token, fuzz_trace and fuzz_proto with the
 * library's own encoders.
 *
 * Seeds made by the encoders are valid by construction and stay valid when a format changes: run
 * `make_seeds fuzz/corpus` (meson builds it as fuzz_make_seeds) and commit what changed. Each
 * corpus also gets a few refused inputs (bad checksum, other version, cut short), since the paths
 * that refuse are fuzzed as much as the ones that accept. Seeds named regress-* are crashes the
 * fuzzers found; they are kept by hand and never written here. The udiff corpus holds real diffs
 * from git and diff(1) instead, so it is not generated. */
#include "afd.h"
#include "buf.h"
#include "proto.h"
#include "token.h"
#include "trace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *out_dir;

static void die(const char *what, int rc)
{
    fprintf(stderr, "make_seeds: %s: %s\n", what, rc < 0 ? afd_strerror(rc) : strerror(rc));
    exit(1);
}

static void write_seed(const char *corpus, const char *name, const void *data, size_t len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", out_dir, corpus);
    if (mkdir(path, 0755) < 0 && errno != EEXIST)
        die(path, errno);
    snprintf(path, sizeof path, "%s/%s/%s", out_dir, corpus, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0)
        die(path, errno);
}

/* ---- tokens ---- */

static char *token_of(const afd_schedule *s)
{
    char *t = NULL;
    int rc = afd_token_encode(s, &t);
    if (rc)
        die("afd_token_encode", rc);
    return t;
}

static void seed_token(const char *name, const afd_schedule *s)
{
    char *t = token_of(s);
    write_seed("token", name, t, strlen(t));
    free(t);
}

static void add_delay(afd_schedule *s, const char *label, uint32_t ordinal, uint64_t cost)
{
    int rc = afd_schedule_add_delay(s, label, ordinal, cost);
    if (rc)
        die("afd_schedule_add_delay", rc);
}

static void tokens(void)
{
    afd_schedule s;
    afd_schedule_init(&s);
    seed_token("zero", &s);
    s.seed = 7;
    seed_token("zero-seed", &s);
    s.strategy = AFD_STRAT_JITTER;
    s.seed = 42;
    seed_token("jitter", &s);
    s.strategy = AFD_STRAT_PCT;
    s.seed = 1234;
    s.pct_depth = 3;
    s.pct_steps = 200;
    seed_token("pct", &s);
    s.seed = UINT64_MAX;
    s.pct_depth = UINT32_MAX;
    s.pct_steps = UINT32_MAX;
    seed_token("pct-max", &s);
    s.seed = 1234;
    s.pct_depth = 3;
    s.pct_steps = 200;
    add_delay(&s, "finalize_report#0", 1, 5000000);
    seed_token("pct-one-delay", &s);
    /* The spellings decode accepts besides the canonical one: surrounding whitespace, uppercase. */
    char *t = token_of(&s);
    char spaced[1024];
    int n = snprintf(spaced, sizeof spaced, " \t%s\r\n", t);
    write_seed("token", "spaces", spaced, (size_t)n);
    for (size_t i = 5; t[i]; i++)
        if (t[i] >= 'a' && t[i] <= 'z')
            t[i] = (char)(t[i] - 'a' + 'A');
    write_seed("token", "uppercase", t, strlen(t));
    free(t);
    afd_schedule_finish(&s);

    afd_schedule_init(&s);
    s.strategy = AFD_STRAT_JITTER;
    s.seed = 99;
    add_delay(&s, "", 0, 0);
    add_delay(&s, "caf\xc3\xa9#1", 7, UINT64_MAX);
    add_delay(&s, "test_transfer.<locals>.worker#2", UINT32_MAX, 1000);
    seed_token("delays", &s);
    afd_schedule_finish(&s);

    afd_schedule_init(&s);
    char label[AFD_TOKEN_MAX_LABEL + 1];
    memset(label, 'x', AFD_TOKEN_MAX_LABEL);
    label[AFD_TOKEN_MAX_LABEL] = 0;
    add_delay(&s, label, 3, 42);
    seed_token("longest-label", &s);
    afd_schedule_finish(&s);

    afd_schedule_init(&s);
    s.strategy = AFD_STRAT_PCT;
    s.pct_depth = 2;
    s.pct_steps = 50;
    for (uint32_t i = 0; i < 40; i++) {
        char l[32];
        snprintf(l, sizeof l, "worker#%u", i % 5);
        add_delay(&s, l, i, (uint64_t)i * 250000);
    }
    seed_token("many-delays", &s);

    /* Refusals: a damaged checksum, another version, a cut token, no token at all. */
    t = token_of(&s);
    size_t len = strlen(t);
    t[len - 3] = t[len - 3] == 'a' ? 'b' : 'a';
    write_seed("token", "bad-checksum", t, len);
    t[3] = '2';
    write_seed("token", "other-version", t, len);
    free(t);
    afd_schedule_finish(&s);
    afd_schedule_init(&s);
    s.strategy = AFD_STRAT_JITTER;
    t = token_of(&s);
    write_seed("token", "cut", t, strlen(t) - 6);
    free(t);
    write_seed("token", "not-a-token", "pct(seed=42, d=3)", 17);
}

/* ---- traces ---- */

static afd_event ev(uint8_t kind, uint8_t flags, uint32_t task, uint32_t a, uint32_t b, uint64_t vtime,
                    uint64_t cost)
{
    return (afd_event){.kind = kind,
                       .flags = flags,
                       .task = task,
                       .a = a,
                       .b = b,
                       .vtime = vtime,
                       .cost = cost,
                       .wall = vtime / 3 + 17};
}

static uint32_t str_id(afd_trace *t, const char *s)
{
    uint32_t id = 0;
    int rc = afd_trace_add_string(t, s, strlen(s), &id);
    if (rc)
        die("afd_trace_add_string", rc);
    return id;
}

static void add(afd_trace *t, afd_event e)
{
    int rc = afd_trace_add_events(t, &e, 1);
    if (rc)
        die("afd_trace_add_events", rc);
}

static void set(afd_trace *t, char **field, const char *s)
{
    int rc = afd_trace_set_str(t, field, s, strlen(s));
    if (rc)
        die("afd_trace_set_str", rc);
}

static void new_trace(afd_trace *t, uint8_t mode, uint8_t outcome)
{
    int rc = afd_trace_init(t);
    if (rc)
        die("afd_trace_init", rc);
    t->mode = mode;
    t->outcome = outcome;
    set(t, &t->python, "3.11.2 (main, Mar 13 2023, 12:18:29) [GCC 12.2.0]");
    set(t, &t->hash_seed, "0");
}

static void seed_trace(const char *name, afd_trace *t, afd_buf *keep)
{
    afd_buf b;
    afd_buf_init(&b);
    int rc = afd_trace_encode(t, &b);
    if (rc)
        die("afd_trace_encode", rc);
    write_seed("trace", name, b.data, b.len);
    if (keep)
        *keep = b;
    else
        afd_buf_finish(&b);
    afd_trace_finish(t);
}

/* The trace of a controlled run with every event kind; its encoding also goes into a RESULT. */
static void full_trace(afd_trace *t)
{
    new_trace(t, AFD_MODE_CONTROLLED, AFD_OUT_FAIL);
    afd_schedule s;
    afd_schedule_init(&s);
    s.strategy = AFD_STRAT_PCT;
    s.seed = 5;
    s.pct_depth = 3;
    s.pct_steps = 100;
    char *tok = token_of(&s);
    set(t, &t->token, tok);
    free(tok);
    set(t, &t->failure,
        "Traceback (most recent call last):\n  File \"test_bank.py\", line 14, in test_transfer\n"
        "    assert a.balance + b.balance == 200\nAssertionError: assert 150 == 200");
    t->flags = AFD_TRACE_LINES;
    t->steps = 9;
    uint32_t test = str_id(t, "test_transfer#0"), worker = str_id(t, "worker#1"),
             site = str_id(t, "test_bank.py:9"), op = str_id(t, "withdraw"),
             res = str_id(t, "Account#0.balance"), lock = str_id(t, "Lock@test_bank.py:5"),
             file = str_id(t, "test_bank.py"), self = str_id(t, "Account#0"), local = str_id(t, "acct");
    add(t, ev(AFD_EV_LOOP, 0, 0, 1, 0, 0, 0));
    add(t, ev(AFD_EV_TASK, 0, 1, 0, test, 0, 0));
    add(t, ev(AFD_EV_WAKE, 0, 1, 0, 1, 0, 0));
    add(t, ev(AFD_EV_TASK, 0, 2, 1, worker, 0, 0));
    add(t, ev(AFD_EV_STEP, 0, 1, 0, site, 0, 120000));
    add(t, ev(AFD_EV_WAKE, 1, 2, 1, 2, 120000, 0));
    add(t, ev(AFD_EV_SYNC, AFD_SYNC_LOCK_ACQUIRE, 2, 1, lock, 120000, 0));
    add(t, ev(AFD_EV_OP_BEGIN, 0, 2, op, res, 120000, 0));
    add(t, ev(AFD_EV_LINE, 0, 2, file, 9, 1, self));
    add(t, ev(AFD_EV_LOCAL, 0, 2, local, 9, 1, self));
    add(t, ev(AFD_EV_OP_END, 1, 2, op, res, 130000, 0));
    add(t, ev(AFD_EV_BLOCK, AFD_BLOCK_VIRTUAL, 2, AFD_BLOCK_SLEEP, site, 130000, 10000000));
    add(t, ev(AFD_EV_SYNC, AFD_SYNC_LOCK_RELEASE, 2, 1, lock, 10130000, 0));
    add(t, ev(AFD_EV_STEP, 0, 2, 0, AFD_NOSTR, 120000, 10010000));
    add(t, ev(AFD_EV_IDLE, 0, 0, 1500, 0, 10130000, 2000000));
    add(t, ev(AFD_EV_UNCONTROLLED, 0, 0, AFD_TRACE_THREADS, 0, 12130000, 0));
    add(t, ev(AFD_EV_ASSERT_BEGIN, 0, 1, 0, res, 12130000, 0));
    add(t, ev(AFD_EV_ASSERT_END, 0, 1, 0, res, 12130000, 0));
    add(t, ev(AFD_EV_SLOT, 0, 2, 0, 2, 250, 499750));
}

static void traces(afd_buf *keep)
{
    afd_trace t;
    new_trace(&t, AFD_MODE_NATURAL, AFD_OUT_PASS);
    seed_trace("empty-pass", &t, NULL);

    full_trace(&t);
    seed_trace("every-kind", &t, keep);

    /* A waiter handed a lock and cancelled before it resumes, then a timeout caught and uncancelled:
     * every cancellation and hand-off kind, in the order a run records them. */
    new_trace(&t, AFD_MODE_CONTROLLED, AFD_OUT_FAIL);
    t.steps = 3;
    uint32_t ht = str_id(&t, "test_handoff#0"), hw = str_id(&t, "waiter#0"),
             hl = str_id(&t, "Lock@test_h.py:4"), hs = str_id(&t, "test_h.py:9"), hm = str_id(&t, "shutdown");
    add(&t, ev(AFD_EV_TASK, 0, 1, 0, ht, 0, 0));
    add(&t, ev(AFD_EV_TASK, 0, 2, 1, hw, 0, 0));
    add(&t, ev(AFD_EV_WAKE, 0, 1, 0, 1, 0, 0));
    add(&t, ev(AFD_EV_SYNC, AFD_SYNC_LOCK_RELEASE, 1, 1, hl, 0, 0));
    add(&t, ev(AFD_EV_HANDOFF, 0, 1, 2, hl, 0, 1));
    add(&t, ev(AFD_EV_CANCEL, AFD_CANCEL_WOKEN, 1, 2, hm, 0, 0));
    add(&t, ev(AFD_EV_STEP, 0, 1, 0, hs, 0, 1000));
    add(&t, ev(AFD_EV_WAKE, 0, 2, 1, 2, 1000, 0));
    add(&t, ev(AFD_EV_RESUME, AFD_RESUME_CANCELLED, 2, 1, hl, 1000, 0));
    add(&t, ev(AFD_EV_CANCEL_DELIVERED, 0, 2, 1, hs, 1000, 0));
    add(&t, ev(AFD_EV_STEP, 0, 2, 0, AFD_NOSTR, 1000, 1000));
    add(&t, ev(AFD_EV_TIMEOUT, AFD_TIMEOUT_CONTEXT, 1, 1, hs, 2000, 0));
    add(&t, ev(AFD_EV_CANCEL, AFD_CANCEL_TIMEOUT, 0, 1, AFD_NOSTR, 2000, 0));
    add(&t, ev(AFD_EV_WAKE, 0, 1, 0, 3, 2000, 0));
    add(&t, ev(AFD_EV_CANCEL_DELIVERED, 0, 1, 0, hs, 2000, 0));
    add(&t, ev(AFD_EV_UNCANCEL, 0, 1, 1, hs, 2000, 0));
    add(&t, ev(AFD_EV_CANCEL_CAUGHT, 3, 1, 0, AFD_NOSTR, 2000, 0));
    add(&t, ev(AFD_EV_STEP, 0, 1, 1, AFD_NOSTR, 2000, 1000));
    seed_trace("cancel-kinds", &t, NULL);

    new_trace(&t, AFD_MODE_CONTROLLED, AFD_OUT_PASS);
    t.flags = AFD_TRACE_TRUNCATED;
    t.steps = 100000;
    t.dropped = 99990;
    uint32_t id = str_id(&t, "spin#0");
    add(&t, ev(AFD_EV_TASK, 0, 1, 0, id, 0, 0));
    for (uint32_t i = 0; i < 9; i++)
        add(&t, ev(AFD_EV_STEP, 0, 1, i, AFD_NOSTR, (uint64_t)i * 1000, 1000));
    seed_trace("truncated", &t, NULL);

    new_trace(&t, AFD_MODE_CONTROLLED, AFD_OUT_HANG);
    t.flags = AFD_TRACE_DEADLOCK;
    uint32_t a = str_id(&t, "taker#0"), b = str_id(&t, "giver#1"), l = str_id(&t, "Lock@test_dl.py:3"),
             q = str_id(&t, "Queue@test_dl.py:4");
    add(&t, ev(AFD_EV_TASK, 0, 1, 0, a, 0, 0));
    add(&t, ev(AFD_EV_TASK, 0, 2, 0, b, 0, 0));
    add(&t, ev(AFD_EV_SYNC, AFD_SYNC_CREATE, 1, 1, l, 0, 0));
    add(&t, ev(AFD_EV_SYNC, AFD_SYNC_CREATE, 2, 2, q, 0, 0));
    add(&t, ev(AFD_EV_SYNC, AFD_SYNC_LOCK_ACQUIRE, 1, 1, l, 0, 0));
    add(&t, ev(AFD_EV_WAITFOR, 0, 1, 2, 0, 500, 0));
    add(&t, ev(AFD_EV_WAITFOR, 0, 2, 1, 1, 500, 0));
    add(&t, ev(AFD_EV_WAITFOR, 0, 3, 0, 0, 500, 0));
    seed_trace("deadlock", &t, NULL);

    new_trace(&t, AFD_MODE_CONTROLLED, AFD_OUT_PASS);
    uint32_t o = str_id(&t, "Event@test_sync.py:8");
    for (uint8_t k = 0; k < AFD_SYNC__COUNT; k++)
        add(&t, ev(AFD_EV_SYNC, k, 1 + k % 3, 1, o, k * 100u, 0));
    seed_trace("sync-kinds", &t, NULL);

    new_trace(&t, AFD_MODE_NATURAL, AFD_OUT_CRASH);
    t.flags = AFD_TRACE_REAL_IO | AFD_TRACE_REAL_WAIT | AFD_TRACE_WALL_CLOCK | AFD_TRACE_NO_LOOP;
    set(&t, &t.failure, "killed by signal 11");
    add(&t, ev(AFD_EV_UNCONTROLLED, 0, 0, AFD_TRACE_REAL_IO, 0, 0, 0));
    add(&t, ev(AFD_EV_UNCONTROLLED, 0, 0, AFD_TRACE_REAL_WAIT, 0, 5, 0));
    add(&t, ev(AFD_EV_UNCONTROLLED, 0, 0, 1u << 20, 0, UINT64_MAX, 0));
    add(&t, ev(AFD_EV_IDLE, 0, 0, UINT32_MAX, 0, UINT64_MAX - 5, 100));
    seed_trace("uncontrolled", &t, NULL);

    new_trace(&t, AFD_MODE_CONTROLLED, AFD_OUT_STEP_LIMIT);
    t.flags = AFD_TRACE_STEP_LIMIT;
    t.steps = 64;
    id = str_id(&t, "loop_forever#0");
    add(&t, ev(AFD_EV_TASK, 0, 1, 0, id, 0, 0));
    for (uint32_t i = 0; i < 64; i++) {
        add(&t, ev(AFD_EV_WAKE, i & 1, 1, i, i + 1, (uint64_t)i * 10, 0));
        add(&t, ev(AFD_EV_STEP, 0, 1, i, AFD_NOSTR, (uint64_t)i * 10, 10));
    }
    seed_trace("step-limit", &t, NULL);

    new_trace(&t, AFD_MODE_NATURAL, AFD_OUT_SKIP);
    add(&t, ev(AFD_EV_TASK, 0, 7, 0, AFD_NOSTR, 0, 0));
    add(&t, ev(AFD_EV_OP_BEGIN, 0, 7, AFD_NOSTR, AFD_NOSTR, 0, 0));
    add(&t, ev(AFD_EV_LINE, 0, 7, AFD_NOSTR, 0, 0, AFD_NOSTR));
    add(&t, ev(AFD_EV_LOCAL, 0, 7, AFD_NOSTR, 0, 0, AFD_NOSTR));
    seed_trace("no-strings", &t, NULL);

    /* Refusals: a flipped checksum, another version, a cut trace. */
    afd_buf *k = keep;
    uint8_t *bad = malloc(k->len);
    if (!bad)
        die("malloc", ENOMEM);
    memcpy(bad, k->data, k->len);
    bad[k->len - 1] ^= 0x40;
    write_seed("trace", "bad-checksum", bad, k->len);
    bad[k->len - 1] ^= 0x40;
    bad[4] = 1;
    write_seed("trace", "version-1", bad, k->len);
    write_seed("trace", "cut", k->data, k->len / 2);
    free(bad);
}

/* ---- protocol frames ---- */

static void seed_frames(const char *name, const afd_buf *b)
{
    if (b->err)
        die(name, b->err);
    write_seed("proto", name, b->data, b->len);
}

static void protos(const afd_buf *trace)
{
    afd_buf b, session;
    afd_buf_init(&b);
    afd_buf_init(&session);

    afd_hello h = {.pid = 4242,
                   .python = "3.11.2",
                   .hash_seed = "0",
                   .error = "",
                   .nodeid = "tests/test_bank.py::test_transfer"};
    afd_proto_put_hello(&b, &h);
    seed_frames("hello", &b);
    afd_buf_put(&session, b.data, b.len);
    b.len = 0;
    h.pid = -1;
    h.error = "ERROR: not found: tests/test_bank.py::test_gone\n(no match in any of [<Module test_bank.py>])";
    h.nodeid = "";
    afd_proto_put_hello(&b, &h);
    seed_frames("hello-error", &b);

    b.len = 0;
    afd_run_req r = {
        .run_id = 1, .mode = AFD_MODE_NATURAL, .timeout_ms = 10000, .max_steps = 100000, .token = ""};
    afd_proto_put_run(&b, &r);
    seed_frames("run-natural", &b);
    afd_buf_put(&session, b.data, b.len);
    b.len = 0;
    afd_schedule s;
    afd_schedule_init(&s);
    s.strategy = AFD_STRAT_PCT;
    s.seed = 77;
    s.pct_depth = 2;
    s.pct_steps = 100;
    add_delay(&s, "worker#1", 2, 3000000);
    char *tok = token_of(&s);
    afd_schedule_finish(&s);
    r = (afd_run_req){.run_id = UINT64_MAX,
                      .mode = AFD_MODE_CONTROLLED | AFD_MODE_TRACE_LINES,
                      .timeout_ms = UINT32_MAX,
                      .max_steps = UINT64_MAX,
                      .token = tok,
                      .mark_lo = 3,
                      .mark_n = 8};
    afd_proto_put_run(&b, &r);
    seed_frames("run-controlled", &b);
    afd_buf_put(&session, b.data, b.len);
    free(tok);

    b.len = 0;
    afd_run_result res = {
        .run_id = 1, .outcome = AFD_OUT_PASS, .status = 0, .wall_ns = 1234567, .failure = ""};
    afd_proto_put_result(&b, &res);
    seed_frames("result-pass", &b);
    afd_buf_put(&session, b.data, b.len);
    b.len = 0;
    res = (afd_run_result){.run_id = UINT64_MAX,
                           .outcome = AFD_OUT_FAIL,
                           .status = -11,
                           .wall_ns = 99,
                           .failure = "AssertionError: assert 150 == 200",
                           .trace = trace->data,
                           .trace_len = trace->len};
    afd_proto_put_result(&b, &res);
    seed_frames("result-trace", &b);
    afd_buf_put(&session, b.data, b.len);

    b.len = 0;
    afd_proto_put_quit(&b);
    seed_frames("quit", &b);
    afd_buf_put(&session, b.data, b.len);
    seed_frames("session", &session);

    /* Refusals and partial input: a frame cut short, an empty frame, one above the bound. */
    write_seed("proto", "cut", session.data, session.len - 7);
    write_seed("proto", "empty-frame", "\x00\x00\x00\x00\x04", 5);
    write_seed("proto", "too-large", "\x01\x00\x00\x04\x03", 5);
    afd_buf_finish(&b);
    afd_buf_finish(&session);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_seeds CORPUS_DIR (fuzz/corpus)\n");
        return 2;
    }
    out_dir = argv[1];
    tokens();
    afd_buf trace;
    afd_buf_init(&trace);
    traces(&trace);
    protos(&trace);
    afd_buf_finish(&trace);
    return 0;
}
