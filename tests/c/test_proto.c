/* test_proto.c -- frame writers and payload decoders, incremental reassembly, and the blocking
 * pipe helpers under short reads and writes, interruptions and early EOF. */
#include "afd.h"
#include "buf.h"
#include "proto.h"
#include "trace.h"
#include "harness.h"

#include <errno.h>
#include <fcntl.h>

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t rnd_state;
static uint64_t rnd(void)
{
    return afd_mix64(rnd_state++);
}

static afd_hello sample_hello(void)
{
    afd_hello h = {.pid = -12345,
                   .python = "3.12.1",
                   .hash_seed = "42",
                   .error = "",
                   .nodeid = "tests/test_x.py::test_report[a-b]"};
    return h;
}

static afd_run_req sample_run(void)
{
    afd_run_req r = {.run_id = 0x0102030405060708ULL,
                     .mode = AFD_MODE_CONTROLLED,
                     .timeout_ms = 30000,
                     .max_steps = 1000000,
                     .token = "afd1:abcdefgh",
                     .mark_lo = 0x1112131415161718ULL,
                     .mark_n = 64,
                     .item = "tests/test_x.py::test_a[1]"};
    return r;
}

static uint8_t trace_bytes[] = {'A', 'F', 'D', 'T', 0, 1, 2, 0xff, 0, 7};

static afd_run_result sample_result(void)
{
    afd_run_result r = {.run_id = 99,
                        .outcome = AFD_OUT_FAIL,
                        .status = -9,
                        .wall_ns = 123456789012ULL,
                        .failure = "AssertionError: 1 != 2",
                        .trace = trace_bytes,
                        .trace_len = sizeof trace_bytes};
    return r;
}

/* Checks a writer's frame header and returns the payload's offset (always 5). */
static size_t check_frame(const afd_buf *b, uint8_t type)
{
    CHECK_EQ_INT(b->err, 0);
    CHECK(b->len >= 5);
    CHECK_EQ_U64(get32(b->data), b->len - 4);
    CHECK_EQ_INT(b->data[4], type);
    return 5;
}

TEST(hello_roundtrip)
{
    afd_hello h = sample_hello(), d;
    afd_buf b;
    afd_buf_init(&b);
    afd_proto_put_hello(&b, &h);
    size_t off = check_frame(&b, AFD_MSG_HELLO);
    CHECK_EQ_INT(afd_proto_get_hello(&d, b.data + off, b.len - off), 0);
    CHECK_EQ_INT(d.pid, -12345);
    CHECK_EQ_STR(d.python, "3.12.1");
    CHECK_EQ_STR(d.hash_seed, "42");
    CHECK_EQ_STR(d.error, "");
    CHECK_EQ_STR(d.nodeid, "tests/test_x.py::test_report[a-b]");
    afd_hello_finish(&d);
    CHECK(d.python == NULL);
    afd_hello_finish(NULL);

    /* A worker that could not prepare its test says why; NULL strings are sent as empty. */
    afd_hello e = {.pid = 7, .error = "SyntaxError: invalid syntax (test_x.py, line 3)"};
    b.len = 0;
    afd_proto_put_hello(&b, &e);
    off = check_frame(&b, AFD_MSG_HELLO);
    CHECK_EQ_INT(afd_proto_get_hello(&d, b.data + off, b.len - off), 0);
    CHECK_EQ_STR(d.error, "SyntaxError: invalid syntax (test_x.py, line 3)");
    CHECK_EQ_STR(d.python, "");
    CHECK_EQ_STR(d.nodeid, "");
    afd_hello_finish(&d);
    afd_buf_finish(&b);
}

TEST(run_roundtrip)
{
    afd_run_req r = sample_run(), d;
    afd_buf b;
    afd_buf_init(&b);
    afd_proto_put_run(&b, &r);
    size_t off = check_frame(&b, AFD_MSG_RUN);
    CHECK_EQ_INT(afd_proto_get_run(&d, b.data + off, b.len - off), 0);
    CHECK_EQ_U64(d.run_id, 0x0102030405060708ULL);
    CHECK_EQ_INT(d.mode, AFD_MODE_CONTROLLED);
    CHECK_EQ_U64(d.timeout_ms, 30000);
    CHECK_EQ_U64(d.max_steps, 1000000);
    CHECK_EQ_STR(d.token, "afd1:abcdefgh");
    CHECK_EQ_U64(d.mark_lo, 0x1112131415161718ULL);
    CHECK_EQ_U64(d.mark_n, 64);
    CHECK_EQ_STR(d.item, "tests/test_x.py::test_a[1]");
    afd_run_req_finish(&d);
    CHECK(d.token == NULL && d.item == NULL && d.mark_lo == 0 && d.mark_n == 0);
    afd_run_req_finish(NULL);

    /* A natural run carries an empty token; no item is the worker's only test. */
    r.mode = AFD_MODE_NATURAL;
    r.token = "";
    r.item = NULL;
    b.len = 0;
    afd_proto_put_run(&b, &r);
    off = check_frame(&b, AFD_MSG_RUN);
    CHECK_EQ_INT(afd_proto_get_run(&d, b.data + off, b.len - off), 0);
    CHECK_EQ_INT(d.mode, AFD_MODE_NATURAL);
    CHECK_EQ_STR(d.token, "");
    CHECK_EQ_STR(d.item, "");
    afd_run_req_finish(&d);

    /* No measurement: the fields are still sent, as zeros. */
    r.mark_lo = 0;
    r.mark_n = 0;
    b.len = 0;
    afd_proto_put_run(&b, &r);
    off = check_frame(&b, AFD_MSG_RUN);
    CHECK_EQ_INT(afd_proto_get_run(&d, b.data + off, b.len - off), 0);
    CHECK_EQ_U64(d.mark_lo, 0);
    CHECK_EQ_U64(d.mark_n, 0);
    afd_run_req_finish(&d);
    afd_buf_finish(&b);
}

TEST(run_marks_bounded)
{
    /* A run measures at most 64 steps (one bit each of a mask): 65 is a protocol error, and the
     * message is left zeroed. */
    afd_run_req r = sample_run(), d;
    afd_buf b;
    afd_buf_init(&b);
    r.mark_n = AFD_PROTO_MAX_MARKS + 1;
    afd_proto_put_run(&b, &r);
    size_t off = check_frame(&b, AFD_MSG_RUN);
    CHECK_EQ_INT(afd_proto_get_run(&d, b.data + off, b.len - off), AFD_EPROTO);
    CHECK(d.token == NULL && d.run_id == 0 && d.mark_lo == 0 && d.mark_n == 0);
    /* The largest count passes, and so does any first index. */
    r.mark_n = AFD_PROTO_MAX_MARKS;
    r.mark_lo = UINT64_MAX;
    b.len = 0;
    afd_proto_put_run(&b, &r);
    off = check_frame(&b, AFD_MSG_RUN);
    CHECK_EQ_INT(afd_proto_get_run(&d, b.data + off, b.len - off), 0);
    CHECK_EQ_U64(d.mark_lo, UINT64_MAX);
    CHECK_EQ_U64(d.mark_n, AFD_PROTO_MAX_MARKS);
    afd_run_req_finish(&d);
    /* A frame of the old layout (no mark fields) is refused: both ends change together. */
    b.len = 0;
    afd_proto_put_run(&b, &r);
    off = check_frame(&b, AFD_MSG_RUN);
    CHECK_EQ_INT(afd_proto_get_run(&d, b.data + off, b.len - off - 12), AFD_EPROTO);
    afd_buf_finish(&b);
}

TEST(result_roundtrip)
{
    afd_run_result r = sample_result(), d;
    afd_buf b;
    afd_buf_init(&b);
    afd_proto_put_result(&b, &r);
    size_t off = check_frame(&b, AFD_MSG_RESULT);
    CHECK_EQ_INT(afd_proto_get_result(&d, b.data + off, b.len - off), 0);
    CHECK_EQ_U64(d.run_id, 99);
    CHECK_EQ_INT(d.outcome, AFD_OUT_FAIL);
    CHECK_EQ_INT(d.status, -9);
    CHECK_EQ_U64(d.wall_ns, 123456789012ULL);
    CHECK_EQ_STR(d.failure, "AssertionError: 1 != 2");
    CHECK_EQ_INT(d.trace_len, sizeof trace_bytes);
    CHECK(d.trace != NULL);
    CHECK_EQ_INT(memcmp(d.trace, trace_bytes, sizeof trace_bytes), 0); /* NULs included */
    afd_run_result_finish(&d);
    CHECK(d.trace == NULL && d.failure == NULL);
    afd_run_result_finish(NULL);

    /* No trace: NULL and 0 after decoding; the failure is "" rather than NULL. */
    afd_run_result e = {.run_id = 1, .outcome = AFD_OUT_STEP_LIMIT, .status = 0};
    b.len = 0;
    afd_proto_put_result(&b, &e);
    off = check_frame(&b, AFD_MSG_RESULT);
    CHECK_EQ_INT(afd_proto_get_result(&d, b.data + off, b.len - off), 0);
    CHECK(d.trace == NULL);
    CHECK_EQ_INT(d.trace_len, 0);
    CHECK_EQ_STR(d.failure, "");
    CHECK_EQ_INT(d.outcome, AFD_OUT_STEP_LIMIT);
    afd_run_result_finish(&d);
    afd_buf_finish(&b);
}

/* A failure text with NUL bytes crosses the protocol whole when its length is given. */
TEST(result_failure_keeps_nul_bytes)
{
    static const char text[] = "x.py:3: AssertionError: a\0b\x1b[31mc";
    afd_run_result r = sample_result(), d;
    r.failure = (char *)text;
    r.failure_len = sizeof text - 1;
    afd_buf b;
    afd_buf_init(&b);
    afd_proto_put_result(&b, &r);
    size_t off = check_frame(&b, AFD_MSG_RESULT);
    CHECK_EQ_INT(afd_proto_get_result(&d, b.data + off, b.len - off), 0);
    CHECK_EQ_U64(d.failure_len, sizeof text - 1);
    CHECK_EQ_INT(memcmp(d.failure, text, sizeof text - 1), 0);
    CHECK_EQ_INT(d.failure[d.failure_len], 0);
    afd_run_result_finish(&d);
    afd_buf_finish(&b);
}

TEST(quit_frame)
{
    afd_buf b;
    afd_buf_init(&b);
    afd_buf_put(&b, "xy", 2); /* writers append */
    afd_proto_put_quit(&b);
    CHECK_EQ_INT(b.err, 0);
    CHECK_EQ_INT(b.len, 7);
    CHECK_EQ_INT(memcmp(b.data, "xy\x01\x00\x00\x00\x04", 7), 0);
    afd_buf_finish(&b);
}

TEST(writer_refuses_oversize_frame)
{
    afd_run_result r = sample_result();
    r.trace_len = AFD_PROTO_MAX_FRAME; /* plus the other fields: over the bound */
    r.trace = calloc(1, r.trace_len);
    CHECK(r.trace != NULL);
    afd_buf b;
    afd_buf_init(&b);
    afd_proto_put_quit(&b);
    afd_proto_put_result(&b, &r);
    CHECK_EQ_INT(b.err, AFD_EFULL);
    CHECK_EQ_INT(b.len, 5); /* the refused frame was taken back out */
    free(r.trace);
    afd_buf_finish(&b);
}

/* A stream of frames of every type and many sizes, with the expected (type, payload) list. */
typedef struct expect {
    uint8_t type;
    size_t off, len; /* the payload within the stream */
} expect;

static size_t build_stream(afd_buf *b, expect *ex, size_t max)
{
    afd_buf_init(b);
    size_t n = 0;
    char text[3000];
    uint8_t blob[5000];
    for (size_t i = 0; i < max; i++) {
        size_t start = b->len;
        switch (i % 4) {
        case 0: {
            afd_hello h = sample_hello();
            afd_proto_put_hello(b, &h);
            break;
        }
        case 1: {
            size_t k = (size_t)(rnd() % sizeof text);
            memset(text, 'a' + (int)(i % 26), k);
            text[k] = 0;
            afd_run_req r = sample_run();
            r.run_id = i;
            r.token = text;
            afd_proto_put_run(b, &r);
            break;
        }
        case 2: {
            afd_run_result r = sample_result();
            r.run_id = i;
            r.trace_len = (size_t)(rnd() % sizeof blob);
            for (size_t k = 0; k < r.trace_len; k++)
                blob[k] = (uint8_t)rnd();
            r.trace = blob;
            afd_proto_put_result(b, &r);
            break;
        }
        case 3:
            afd_proto_put_quit(b);
            break;
        }
        CHECK_EQ_INT(b->err, 0);
        ex[n].type = b->data[start + 4];
        ex[n].off = start + 5;
        ex[n].len = b->len - start - 5;
        n++;
    }
    return n;
}

/* Feeds the stream in chunks from chunk() and checks every frame comes out whole and in order. */
static void run_framer(const afd_buf *s, const expect *ex, size_t n, size_t (*chunk)(void))
{
    afd_framer f;
    afd_framer_init(&f);
    size_t got = 0, pos = 0;
    while (pos < s->len) {
        size_t k = chunk();
        if (k > s->len - pos)
            k = s->len - pos;
        CHECK_EQ_INT(afd_framer_feed(&f, s->data + pos, k), 0);
        pos += k;
        uint8_t type;
        const uint8_t *payload;
        size_t len;
        int rc;
        while ((rc = afd_framer_next(&f, &type, &payload, &len)) == 1) {
            CHECK(got < n);
            CHECK_EQ_INT(type, ex[got].type);
            CHECK_EQ_INT(len, ex[got].len);
            CHECK_EQ_INT(memcmp(payload, s->data + ex[got].off, len), 0);
            got++;
        }
        CHECK_EQ_INT(rc, 0);
    }
    CHECK_EQ_INT(got, n);
    afd_framer_finish(&f);
    afd_framer_finish(NULL);
}

static size_t one_byte(void)
{
    return 1;
}

static size_t random_chunk(void)
{
    uint64_t r = rnd();
    return (r & 3) == 0 ? 1 + (size_t)(r >> 8) % 8 : 1 + (size_t)(r >> 8) % 6000;
}

TEST(framer_one_byte_at_a_time)
{
    rnd_state = 1;
    afd_buf s;
    expect ex[64];
    size_t n = build_stream(&s, ex, 64);
    run_framer(&s, ex, n, one_byte);
    afd_buf_finish(&s);
}

TEST(framer_random_chunks)
{
    rnd_state = 2;
    afd_buf s;
    expect ex[200];
    size_t n = build_stream(&s, ex, 200);
    for (int round = 0; round < 20; round++)
        run_framer(&s, ex, n, random_chunk);
    afd_buf_finish(&s);
}

TEST(framer_whole_stream_at_once)
{
    rnd_state = 3;
    afd_buf s;
    expect ex[50];
    size_t n = build_stream(&s, ex, 50);
    afd_framer f;
    afd_framer_init(&f);
    CHECK_EQ_INT(afd_framer_feed(&f, s.data, s.len), 0);
    uint8_t type;
    const uint8_t *payload;
    size_t len;
    for (size_t i = 0; i < n; i++) {
        CHECK_EQ_INT(afd_framer_next(&f, &type, &payload, &len), 1);
        CHECK_EQ_INT(type, ex[i].type);
        CHECK_EQ_INT(len, ex[i].len);
    }
    CHECK_EQ_INT(afd_framer_next(&f, &type, &payload, &len), 0);
    CHECK_EQ_INT(afd_framer_next(&f, &type, &payload, &len), 0);
    afd_framer_finish(&f);
    afd_buf_finish(&s);
}

TEST(framer_rejects_oversize_and_empty)
{
    afd_framer f;
    uint8_t type;
    const uint8_t *payload;
    size_t len;
    uint8_t hdr[4];

    /* Refused from the length alone, without waiting for 64 MiB to arrive. */
    afd_framer_init(&f);
    put32(hdr, AFD_PROTO_MAX_FRAME + 1);
    CHECK_EQ_INT(afd_framer_feed(&f, hdr, 4), 0);
    CHECK_EQ_INT(afd_framer_next(&f, &type, &payload, &len), AFD_EPROTO);
    CHECK_EQ_INT(afd_framer_next(&f, &type, &payload, &len), AFD_EPROTO);
    afd_framer_finish(&f);

    afd_framer_init(&f);
    put32(hdr, 0xffffffffu);
    CHECK_EQ_INT(afd_framer_feed(&f, hdr, 4), 0);
    CHECK_EQ_INT(afd_framer_next(&f, &type, &payload, &len), AFD_EPROTO);
    afd_framer_finish(&f);

    /* A frame without even a type byte. */
    afd_framer_init(&f);
    put32(hdr, 0);
    CHECK_EQ_INT(afd_framer_feed(&f, hdr, 4), 0);
    CHECK_EQ_INT(afd_framer_next(&f, &type, &payload, &len), AFD_EPROTO);
    afd_framer_finish(&f);

    /* The largest allowed length only waits for more bytes; a short header waits too. */
    afd_framer_init(&f);
    put32(hdr, AFD_PROTO_MAX_FRAME);
    CHECK_EQ_INT(afd_framer_feed(&f, hdr, 3), 0);
    CHECK_EQ_INT(afd_framer_next(&f, &type, &payload, &len), 0);
    CHECK_EQ_INT(afd_framer_feed(&f, hdr + 3, 1), 0);
    CHECK_EQ_INT(afd_framer_next(&f, &type, &payload, &len), 0);
    afd_framer_finish(&f);

    /* A type byte alone is a valid, empty frame. */
    afd_framer_init(&f);
    CHECK_EQ_INT(afd_framer_feed(&f, "\x01\x00\x00\x00\x09", 5), 0);
    CHECK_EQ_INT(afd_framer_next(&f, &type, &payload, &len), 1);
    CHECK_EQ_INT(type, 9);
    CHECK_EQ_INT(len, 0);
    afd_framer_finish(&f);
}

TEST(framer_memory_stays_bounded)
{
    /* A long session in which a partial frame is always pending: without compaction the buffer
     * would grow by every byte ever received. */
    afd_buf one;
    afd_buf_init(&one);
    afd_run_req r = sample_run();
    afd_proto_put_run(&one, &r);
    CHECK_EQ_INT(one.err, 0);
    afd_framer f;
    afd_framer_init(&f);
    size_t frames = 0;
    rnd_state = 4;
    for (int i = 0; i < 200000; i++) {
        size_t cut = 1 + (size_t)(rnd() % (one.len - 1));
        CHECK_EQ_INT(afd_framer_feed(&f, one.data, cut), 0);
        CHECK_EQ_INT(afd_framer_feed(&f, one.data + cut, one.len - cut), 0);
        uint8_t type;
        const uint8_t *payload;
        size_t len;
        while (afd_framer_next(&f, &type, &payload, &len) == 1)
            frames++;
    }
    CHECK_EQ_INT(frames, 200000);
    CHECK(f.in.cap <= 4096);

    /* A large frame's buffer is given back once it has been handed out. */
    afd_buf big;
    afd_buf_init(&big);
    afd_run_result res = sample_result();
    res.trace_len = 8u << 20;
    res.trace = calloc(1, res.trace_len);
    CHECK(res.trace != NULL);
    afd_proto_put_result(&big, &res);
    CHECK_EQ_INT(big.err, 0);
    CHECK_EQ_INT(afd_framer_feed(&f, big.data, big.len), 0);
    uint8_t type;
    const uint8_t *payload;
    size_t len;
    CHECK_EQ_INT(afd_framer_next(&f, &type, &payload, &len), 1);
    CHECK_EQ_INT(len, big.len - 5);
    CHECK(f.in.cap > (8u << 20));
    CHECK_EQ_INT(afd_framer_feed(&f, one.data, one.len), 0);
    CHECK(f.in.cap < (1u << 20));
    CHECK_EQ_INT(afd_framer_next(&f, &type, &payload, &len), 1);
    CHECK_EQ_INT(type, AFD_MSG_RUN);
    free(res.trace);
    afd_buf_finish(&big);
    afd_buf_finish(&one);
    afd_framer_finish(&f);
}

/* Decodes a payload with the decoder for type; the message is freed here. */
static int decode_payload(uint8_t type, const uint8_t *p, size_t len)
{
    int rc;
    switch (type) {
    case AFD_MSG_HELLO: {
        afd_hello m;
        rc = afd_proto_get_hello(&m, p, len);
        if (rc)
            CHECK(m.python == NULL && m.hash_seed == NULL && m.error == NULL && m.nodeid == NULL);
        afd_hello_finish(&m);
        break;
    }
    case AFD_MSG_RUN: {
        afd_run_req m;
        rc = afd_proto_get_run(&m, p, len);
        if (rc)
            CHECK(m.token == NULL && m.run_id == 0);
        afd_run_req_finish(&m);
        break;
    }
    case AFD_MSG_RESULT: {
        afd_run_result m;
        rc = afd_proto_get_result(&m, p, len);
        if (rc)
            CHECK(m.failure == NULL && m.trace == NULL && m.trace_len == 0);
        else
            CHECK(m.failure != NULL && (m.trace == NULL) == (m.trace_len == 0));
        afd_run_result_finish(&m);
        break;
    }
    default:
        rc = 0;
        break;
    }
    return rc;
}

TEST(decoders_refuse_trailing_and_truncated)
{
    afd_buf frames[3];
    afd_hello h = sample_hello();
    afd_run_req r = sample_run();
    afd_run_result res = sample_result();
    for (int i = 0; i < 3; i++)
        afd_buf_init(&frames[i]);
    afd_proto_put_hello(&frames[0], &h);
    afd_proto_put_run(&frames[1], &r);
    afd_proto_put_result(&frames[2], &res);
    for (int i = 0; i < 3; i++) {
        afd_buf *b = &frames[i];
        uint8_t type = b->data[4];
        size_t n = b->len - 5;
        CHECK_EQ_INT(decode_payload(type, b->data + 5, n), 0);
        for (size_t k = 0; k < n; k++)
            if (decode_payload(type, b->data + 5, k) != AFD_EPROTO)
                FAIL_AT("type %d payload cut to %zu of %zu bytes was accepted", type, k, n);
        afd_buf_put(b, "\0", 1);
        CHECK_EQ_INT(decode_payload(type, b->data + 5, n + 1), AFD_EPROTO);
        afd_buf_put(b, "garbage", 7);
        CHECK_EQ_INT(decode_payload(type, b->data + 5, n + 8), AFD_EPROTO);
        afd_buf_finish(b);
    }
}

TEST(decoders_refuse_bad_values)
{
    afd_buf b;
    afd_buf_init(&b);
    afd_run_req r = sample_run();
    r.mode = 2;
    afd_proto_put_run(&b, &r);
    CHECK_EQ_INT(decode_payload(AFD_MSG_RUN, b.data + 5, b.len - 5), AFD_EPROTO);

    b.len = 0;
    afd_run_result res = sample_result();
    res.outcome = AFD_OUT__COUNT;
    afd_proto_put_result(&b, &res);
    CHECK_EQ_INT(decode_payload(AFD_MSG_RESULT, b.data + 5, b.len - 5), AFD_EPROTO);

    /* Text fields have bounds: a version string of 4097 bytes is not a version. */
    char *big = malloc(AFD_TRACE_MAX_FAILURE + 2);
    CHECK(big != NULL);
    memset(big, 'v', AFD_TRACE_MAX_FAILURE + 1);
    big[4096] = 0;
    afd_hello h = sample_hello();
    h.python = big;
    b.len = 0;
    afd_proto_put_hello(&b, &h);
    CHECK_EQ_INT(decode_payload(AFD_MSG_HELLO, b.data + 5, b.len - 5), 0);
    big[4096] = 'v';
    big[4097] = 0;
    b.len = 0;
    afd_proto_put_hello(&b, &h);
    CHECK_EQ_INT(decode_payload(AFD_MSG_HELLO, b.data + 5, b.len - 5), AFD_EPROTO);

    /* The failure text may be as long as a trace's, and no longer. */
    big[4097] = 'v';
    big[AFD_TRACE_MAX_FAILURE] = 0;
    res = sample_result();
    res.failure = big;
    b.len = 0;
    afd_proto_put_result(&b, &res);
    CHECK_EQ_INT(decode_payload(AFD_MSG_RESULT, b.data + 5, b.len - 5), 0);
    big[AFD_TRACE_MAX_FAILURE] = 'v';
    big[AFD_TRACE_MAX_FAILURE + 1] = 0;
    b.len = 0;
    afd_proto_put_result(&b, &res);
    CHECK_EQ_INT(decode_payload(AFD_MSG_RESULT, b.data + 5, b.len - 5), AFD_EPROTO);

    /* A declared string length far beyond the payload. */
    b.len = 0;
    afd_proto_put_run(&b, &r);
    put32(b.data + b.len - 4 - strlen(r.token), 0xfffffff0u);
    CHECK_EQ_INT(decode_payload(AFD_MSG_RUN, b.data + 5, b.len - 5), AFD_EPROTO);
    free(big);
    afd_buf_finish(&b);
}

/* Applies one to six random edits (byte writes, bit flips, small or extreme little-endian words,
 * a cut) to m[0..len) and returns the new length. */
static size_t mutate(uint8_t *m, size_t len)
{
    int edits = 1 + (int)(rnd() % 6);
    for (int e = 0; e < edits && len > 0; e++) {
        uint64_t r = rnd();
        size_t pos = (size_t)(r >> 8) % len;
        switch (r % 5) {
        case 0:
            m[pos] = (uint8_t)(r >> 40);
            break;
        case 1:
            m[pos] ^= (uint8_t)(1u << (r >> 40) % 8);
            break;
        case 2:
            if (pos + 4 <= len)
                put32(m + pos, (uint32_t)(r >> 32) % 64);
            break;
        case 3:
            if (pos + 4 <= len)
                put32(m + pos, 0xffffffffu - (uint32_t)(r >> 32) % 4);
            break;
        case 4:
            len = pos;
            break;
        }
    }
    return len;
}

TEST(mutation_robustness)
{
    /* Whole streams through the framer: a damaged length desynchronizes everything after it, which
     * must end in AFD_EPROTO or a wait for more bytes, never in a read out of bounds. */
    rnd_state = 5;
    afd_buf s;
    expect ex[40];
    build_stream(&s, ex, 40);
    uint8_t *m = malloc(s.len);
    CHECK(m != NULL);
    int frames = 0, stopped = 0;
    for (int iter = 0; iter < 2000; iter++) {
        memcpy(m, s.data, s.len);
        if (iter % 2) { /* aim at a frame's length or type, which random edits rarely hit */
            uint64_t r = rnd();
            m[ex[r % 40].off - 5 + (r >> 32) % 5] ^= (uint8_t)(1 + (r >> 40) % 255);
        }
        size_t len = mutate(m, s.len);
        afd_framer f;
        afd_framer_init(&f);
        size_t pos = 0;
        int rc = 0;
        while (pos < len && rc >= 0) {
            size_t k = random_chunk();
            if (k > len - pos)
                k = len - pos;
            CHECK_EQ_INT(afd_framer_feed(&f, m + pos, k), 0);
            pos += k;
            uint8_t type;
            const uint8_t *payload;
            size_t plen;
            while ((rc = afd_framer_next(&f, &type, &payload, &plen)) == 1) {
                int drc = decode_payload(type, payload, plen);
                CHECK(drc == 0 || drc == AFD_EPROTO);
                frames++;
            }
            CHECK(rc == 0 || rc == AFD_EPROTO);
        }
        stopped += rc == AFD_EPROTO;
        afd_framer_finish(&f);
    }
    CHECK(frames > 10000 && stopped > 200);
    free(m);
    afd_buf_finish(&s);

    /* Single messages straight into their decoders, where most edits land in structure. */
    afd_buf one[3];
    afd_hello h = sample_hello();
    afd_run_req r = sample_run();
    afd_run_result res = sample_result();
    for (int i = 0; i < 3; i++)
        afd_buf_init(&one[i]);
    afd_proto_put_hello(&one[0], &h);
    afd_proto_put_run(&one[1], &r);
    afd_proto_put_result(&one[2], &res);
    int accepted = 0, refused = 0;
    for (int iter = 0; iter < 30000; iter++) {
        afd_buf *b = &one[iter % 3];
        uint8_t msg[256];
        size_t n = b->len - 5;
        CHECK(n <= sizeof msg);
        memcpy(msg, b->data + 5, n);
        n = mutate(msg, n);
        int drc = decode_payload(b->data[4], msg, n);
        CHECK(drc == 0 || drc == AFD_EPROTO);
        accepted += drc == 0;
        refused += drc != 0;
    }
    CHECK(accepted > 1000 && refused > 10000);
    for (int i = 0; i < 3; i++)
        afd_buf_finish(&one[i]);
}

TEST(pipe_roundtrip)
{
    int fds[2];
    CHECK_EQ_INT(pipe(fds), 0);
    afd_buf out, frame;
    afd_buf_init(&out);
    afd_buf_init(&frame);
    afd_run_req r = sample_run();
    afd_proto_put_run(&out, &r);
    afd_proto_put_quit(&out);
    CHECK_EQ_INT(afd_proto_write_all(fds[1], out.data, out.len), 0);
    CHECK_EQ_INT(afd_proto_write_all(fds[1], NULL, 0), 0);
    uint8_t type = 0;
    CHECK_EQ_INT(afd_proto_read_frame(fds[0], &frame, &type), 0);
    CHECK_EQ_INT(type, AFD_MSG_RUN);
    CHECK_EQ_INT(frame.data[0], AFD_MSG_RUN);
    afd_run_req d;
    CHECK_EQ_INT(afd_proto_get_run(&d, frame.data + 1, frame.len - 1), 0);
    CHECK_EQ_STR(d.token, "afd1:abcdefgh");
    afd_run_req_finish(&d);
    /* The buffer is reused: the next frame replaces the previous one. */
    CHECK_EQ_INT(afd_proto_read_frame(fds[0], &frame, &type), 0);
    CHECK_EQ_INT(type, AFD_MSG_QUIT);
    CHECK_EQ_INT(frame.len, 1);
    close(fds[1]);
    CHECK_EQ_INT(afd_proto_read_frame(fds[0], &frame, &type), AFD_EOF);
    close(fds[0]);
    afd_buf_finish(&out);
    afd_buf_finish(&frame);
}

/* Writes raw bytes to a fresh pipe, closes it, and returns read_frame's verdict. */
static int read_from(const void *bytes, size_t len)
{
    int fds[2];
    CHECK_EQ_INT(pipe(fds), 0);
    CHECK_EQ_INT(afd_proto_write_all(fds[1], bytes, len), 0);
    close(fds[1]);
    afd_buf frame;
    afd_buf_init(&frame);
    uint8_t type;
    int rc = afd_proto_read_frame(fds[0], &frame, &type);
    close(fds[0]);
    afd_buf_finish(&frame);
    return rc;
}

TEST(read_frame_eof_and_bad_lengths)
{
    CHECK_EQ_INT(read_from(NULL, 0), AFD_EOF);                       /* before any byte */
    CHECK_EQ_INT(read_from("\x05\x00", 2), AFD_EOF);                 /* inside the length */
    CHECK_EQ_INT(read_from("\x05\x00\x00\x00\x02\x01", 6), AFD_EOF); /* inside the frame */
    CHECK_EQ_INT(read_from("\x00\x00\x00\x00\x02", 5), AFD_EPROTO);  /* no type byte */
    CHECK_EQ_INT(read_from("\x01\x00\x00\x04\x02", 5), AFD_EPROTO);  /* 64 MiB + 1 */
    CHECK_EQ_INT(read_from("\xff\xff\xff\xff", 4), AFD_EPROTO);
    CHECK_EQ_INT(read_from("\x01\x00\x00\x00\x04", 5), 0);
    afd_buf frame;
    afd_buf_init(&frame);
    uint8_t type;
    CHECK_EQ_INT(afd_proto_read_frame(-1, &frame, &type), AFD_EIO);
    afd_buf_finish(&frame);
}

TEST(write_all_broken_pipe)
{
    signal(SIGPIPE, SIG_IGN); /* as every caller does */
    int fds[2];
    CHECK_EQ_INT(pipe(fds), 0);
    close(fds[0]);
    CHECK_EQ_INT(afd_proto_write_all(fds[1], "abc", 3), AFD_EIO);
    close(fds[1]);
    CHECK_EQ_INT(afd_proto_write_all(-1, "abc", 3), AFD_EIO);
}

static volatile sig_atomic_t interrupts;
/* When >= 0, the handler acknowledges each signal with a byte here, so a sender can wait for one
 * signal to be handled before it sends the next (two pending SIGUSR1 merge into one under load). */
static volatile sig_atomic_t ack_fd = -1;

static void on_usr1(int sig)
{
    (void)sig;
    interrupts++;
    if (ack_fd >= 0) {
        char c = 1;
        ssize_t w = write(ack_fd, &c, 1);
        (void)w;
    }
}

/* SIGUSR1 without SA_RESTART, so a blocked read or write returns early with EINTR or short. */
static void catch_usr1(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;
    CHECK_EQ_INT(sigaction(SIGUSR1, &sa, NULL), 0);
}

static void fill(uint8_t *p, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)afd_mix64(seed + i / 8);
}

/* A RESULT frame of about 4 MiB, far larger than a pipe's buffer. */
static void big_result(afd_buf *out, uint8_t *trace, size_t n)
{
    fill(trace, n, 77);
    afd_run_result r = sample_result();
    r.trace = trace;
    r.trace_len = n;
    afd_buf_init(out);
    afd_proto_put_result(out, &r);
    CHECK_EQ_INT(out->err, 0);
}

#define BIG (4u << 20)

TEST(large_frame_from_forked_child)
{
    catch_usr1();
    int fds[2];
    CHECK_EQ_INT(pipe(fds), 0);
    pid_t parent = getpid();
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        /* The writer sends a piece, waits until the reader is surely blocked on the empty pipe,
         * and interrupts it there, so the reader sees both short reads and EINTR; exits 0 only if
         * every byte went out. */
        close(fds[0]);
        uint8_t *trace = malloc(BIG);
        if (!trace)
            _exit(2);
        afd_buf out;
        big_result(&out, trace, BIG);
        size_t pos = 0;
        while (pos < out.len) {
            size_t k = out.len - pos < 50000 ? out.len - pos : 50000;
            if (afd_proto_write_all(fds[1], out.data + pos, k) != 0)
                _exit(3);
            pos += k;
            usleep(2000);
            kill(parent, SIGUSR1);
            usleep(1000);
        }
        free(trace);
        afd_buf_finish(&out);
        _exit(0);
    }
    close(fds[1]);
    afd_buf frame;
    afd_buf_init(&frame);
    uint8_t type;
    CHECK_EQ_INT(afd_proto_read_frame(fds[0], &frame, &type), 0);
    CHECK_EQ_INT(type, AFD_MSG_RESULT);
    afd_run_result d;
    CHECK_EQ_INT(afd_proto_get_result(&d, frame.data + 1, frame.len - 1), 0);
    CHECK_EQ_INT(d.trace_len, BIG);
    uint8_t *want = malloc(BIG);
    CHECK(want != NULL);
    fill(want, BIG, 77);
    CHECK_EQ_INT(memcmp(d.trace, want, BIG), 0);
    CHECK_EQ_INT(afd_proto_read_frame(fds[0], &frame, &type), AFD_EOF);
    int st;
    CHECK_EQ_INT(waitpid(pid, &st, 0), pid);
    CHECK(WIFEXITED(st));
    CHECK_EQ_INT(WEXITSTATUS(st), 0);
    CHECK(interrupts > 0);
    free(want);
    afd_run_result_finish(&d);
    afd_buf_finish(&frame);
    close(fds[0]);
}

TEST(large_write_to_slow_reader)
{
    /* The reverse direction: write_all must push 4 MiB through short writes and interruptions. */
    catch_usr1();
    interrupts = 0;
    int fds[2], ack[2];
    CHECK_EQ_INT(pipe(fds), 0);
    CHECK_EQ_INT(pipe(ack), 0);
    ack_fd = ack[1];
    pid_t parent = getpid();
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        /* The reader lets the pipe fill and interrupts the blocked writer a few times, each signal
         * once the previous one was handled: the first cuts a write short, the next ones find a
         * write that made no progress (EINTR). Then it reads in small slow pieces and the rest at
         * once; exits 0 only if it received exactly the frame. */
        close(fds[1]);
        close(ack[1]);
        uint8_t *trace = malloc(BIG);
        if (!trace)
            _exit(2);
        afd_buf want;
        big_result(&want, trace, BIG);
        uint8_t *got = malloc(want.len + 1);
        if (!got)
            _exit(2);
        for (int i = 0; i < 5; i++) {
            usleep(2000);
            kill(parent, SIGUSR1);
            char c;
            while (read(ack[0], &c, 1) < 0 && errno == EINTR)
                ;
        }
        size_t pos = 0;
        for (int i = 0;; i++) {
            if (i < 20)
                usleep(500);
            ssize_t n = read(fds[0], got + pos, i < 20 ? 4096 : want.len + 1 - pos);
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0)
                _exit(3);
            if (n == 0)
                break;
            pos += (size_t)n;
        }
        int same = pos == want.len && memcmp(got, want.data, pos) == 0;
        free(got);
        free(trace);
        afd_buf_finish(&want);
        _exit(same ? 0 : 4);
    }
    close(fds[0]);
    close(ack[0]);
    uint8_t *trace = malloc(BIG);
    CHECK(trace != NULL);
    afd_buf out;
    big_result(&out, trace, BIG);
    CHECK_EQ_INT(afd_proto_write_all(fds[1], out.data, out.len), 0);
    close(fds[1]);
    int st;
    CHECK_EQ_INT(waitpid(pid, &st, 0), pid);
    ack_fd = -1;
    close(ack[1]);
    CHECK(WIFEXITED(st));
    CHECK_EQ_INT(WEXITSTATUS(st), 0);
    CHECK(interrupts > 1);
    free(trace);
    afd_buf_finish(&out);
}

TEST(write_all_nonblocking_fd)
{
    /* A non-blocking pipe fills up at once; write_all waits for room instead of failing. */
    int fds[2];
    CHECK_EQ_INT(pipe2(fds, O_NONBLOCK), 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        close(fds[1]);
        int fl = fcntl(fds[0], F_GETFL);
        fcntl(fds[0], F_SETFL, fl & ~O_NONBLOCK);
        afd_buf frame;
        afd_buf_init(&frame);
        uint8_t type;
        usleep(20000);
        int rc = afd_proto_read_frame(fds[0], &frame, &type);
        size_t got = frame.len;
        afd_buf_finish(&frame);
        _exit(rc == 0 && type == AFD_MSG_RESULT && got == BIG + 52 ? 0 : 1);
    }
    close(fds[0]);
    uint8_t *trace = malloc(BIG);
    CHECK(trace != NULL);
    afd_buf out;
    big_result(&out, trace, BIG);
    CHECK_EQ_INT(afd_proto_write_all(fds[1], out.data, out.len), 0);
    close(fds[1]);
    int st;
    CHECK_EQ_INT(waitpid(pid, &st, 0), pid);
    CHECK(WIFEXITED(st));
    CHECK_EQ_INT(WEXITSTATUS(st), 0);
    free(trace);
    afd_buf_finish(&out);
}

int main(void)
{
    RUN_TESTS("proto", T(hello_roundtrip), T(run_roundtrip), T(run_marks_bounded), T(result_roundtrip),
              T(result_failure_keeps_nul_bytes), T(quit_frame), T(writer_refuses_oversize_frame),
              T(framer_one_byte_at_a_time), T(framer_random_chunks), T(framer_whole_stream_at_once),
              T(framer_rejects_oversize_and_empty), T(framer_memory_stays_bounded),
              T(decoders_refuse_trailing_and_truncated), T(decoders_refuse_bad_values),
              T(mutation_robustness), T(pipe_roundtrip), T(read_frame_eof_and_bad_lengths),
              T(write_all_broken_pipe), T(large_frame_from_forked_child), T(large_write_to_slow_reader),
              T(write_all_nonblocking_fd));
}
