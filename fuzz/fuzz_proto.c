/* fuzz_proto.c -- fuzzing the engine/worker protocol: the framer fed arbitrary bytes in arbitrary
 * chunkings, and the payload decoders of every message type on arbitrary payloads, with libFuzzer
 * or with the plain driver of fuzz.h.
 *
 * The input is a byte stream as a worker might write it. It is framed twice, fed whole and fed in
 * chunks whose sizes derive from the input's hash (empty feeds included), and both must hand out
 * exactly the frames, and the error, of a model of the framing written here from proto.h alone.
 * Every frame's payload, and the whole input too, goes to all three decoders (a peer may send any
 * type with any payload), each checked against a model of its message: the decoder must accept
 * exactly what the model accepts. When a decode succeeds, its fields are the model's (text fields
 * as C strings, so cut at a NUL byte: the writers send C strings; a RESULT's failure text is the
 * exception, whole with its NUL bytes), the message re-encodes to one
 * frame of its type whose payload is the model's canonical bytes, and that payload decodes to
 * equal fields. When it fails, the message is zeroed. */
#define FUZZ_NAME "fuzz_proto"
#define FUZZ_ITERS 100000
#include "fuzz.h"
#include "proto.h"
#include "trace.h"

#define TEXT_MAX 4096u /* proto.h's short text fields: versions, seeds, node ids */

/* ---- the model ---- */

typedef struct span {
    const uint8_t *p;
    uint32_t n;
} span;

typedef struct cur {
    const uint8_t *p;
    size_t len, off;
    int bad;
} cur;

static const uint8_t *take(cur *c, size_t n)
{
    if (c->bad || n > c->len - c->off) {
        c->bad = 1;
        return NULL;
    }
    const uint8_t *q = c->p + c->off;
    c->off += n;
    return q;
}

static uint64_t take_le(cur *c, int n)
{
    const uint8_t *q = take(c, (size_t)n);
    uint64_t v = 0;
    for (int i = 0; q && i < n; i++)
        v |= (uint64_t)q[i] << (8 * i);
    return v;
}

static span take_str(cur *c, uint32_t max)
{
    span s = {NULL, 0};
    uint32_t n = (uint32_t)take_le(c, 4);
    if (c->bad || n > max) {
        c->bad = 1;
        return s;
    }
    s.p = take(c, n);
    s.n = s.p ? n : 0;
    return s;
}

/* A message's fields as the model reads them: up to six integers and four strings. */
typedef struct model {
    uint64_t u[6];
    span s[4];
} model;

static int model_hello(const uint8_t *p, size_t len, model *m)
{
    cur c = {p, len, 0, 0};
    memset(m, 0, sizeof *m);
    m->u[0] = take_le(&c, 4);
    m->s[0] = take_str(&c, TEXT_MAX);
    m->s[1] = take_str(&c, TEXT_MAX);
    m->s[2] = take_str(&c, AFD_TRACE_MAX_FAILURE);
    m->s[3] = take_str(&c, AFD_PROTO_MAX_FRAME); /* node ids, one per line */
    return !c.bad && c.off == len;
}

static int model_run(const uint8_t *p, size_t len, model *m)
{
    cur c = {p, len, 0, 0};
    memset(m, 0, sizeof *m);
    m->u[0] = take_le(&c, 8);
    m->u[1] = take_le(&c, 1);
    m->u[2] = take_le(&c, 4);
    m->u[3] = take_le(&c, 8);
    m->s[0] = take_str(&c, AFD_PROTO_MAX_FRAME);
    m->u[4] = take_le(&c, 8);         /* mark_lo */
    m->u[5] = take_le(&c, 4);         /* mark_n */
    m->s[1] = take_str(&c, TEXT_MAX); /* item */
    return !c.bad && c.off == len && (m->u[1] & ~(uint64_t)AFD_MODE_TRACE_LINES) <= AFD_MODE_CONTROLLED &&
           m->u[5] <= AFD_PROTO_MAX_MARKS;
}

static int model_result(const uint8_t *p, size_t len, model *m)
{
    cur c = {p, len, 0, 0};
    memset(m, 0, sizeof *m);
    m->u[0] = take_le(&c, 8);
    m->u[1] = take_le(&c, 1);
    m->u[2] = take_le(&c, 4);
    m->u[3] = take_le(&c, 8);
    m->s[0] = take_str(&c, AFD_TRACE_MAX_FAILURE);
    m->s[1] = take_str(&c, AFD_PROTO_MAX_FRAME); /* the trace: bytes, not text */
    return !c.bad && c.off == len && m->u[1] < AFD_OUT__COUNT;
}

/* The C string a text field decodes to: its bytes up to the first NUL. */
static size_t text_len(span s)
{
    const uint8_t *z = s.n ? memchr(s.p, 0, s.n) : NULL;
    return z ? (size_t)(z - s.p) : s.n;
}

static void text_eq(const char *got, span want, const char *what)
{
    size_t n = text_len(want);
    if (!got || strlen(got) != n || memcmp(got, want.p, n) != 0)
        FAIL("%s differs from the model", what);
}

/* The payload the writers produce for m: text fields cut at their first NUL, except the fields
 * whose bit is set in exact (byte strings: a RESULT's failure text and trace). */
static void canonical(afd_buf *out, const int *widths, int n_ints, const model *m, int n_strs, unsigned exact)
{
    for (int i = 0; i < n_ints; i++)
        for (int k = 0; k < widths[i]; k++)
            afd_buf_put_u8(out, (uint8_t)(m->u[i] >> (8 * k)));
    for (int i = 0; i < n_strs; i++) {
        size_t n = exact & (1u << i) ? m->s[i].n : text_len(m->s[i]);
        afd_buf_put_str(out, (const char *)m->s[i].p, n);
    }
}

/* Frames b: its one frame must have type and the payload want. */
static void check_frame(const afd_buf *b, uint8_t type, const afd_buf *want, const char *what)
{
    if (b->err)
        FAIL("%s: writing failed", what);
    if (b->len < 5 || fuzz_le32(b->data) != b->len - 4 || b->data[4] != type)
        FAIL("%s: bad frame header", what);
    if (b->len - 5 != want->len || (want->len && memcmp(b->data + 5, want->data, want->len) != 0))
        FAIL("%s: re-encoded payload is not the canonical one", what);
}

/* ---- decoders ---- */

static void check_hello(const uint8_t *p, size_t len)
{
    model m;
    int ok = model_hello(p, len, &m);
    afd_hello h;
    memset(&h, 0xa5, sizeof h);
    int rc = afd_proto_get_hello(&h, p, len);
    if (rc == AFD_ENOMEM)
        return;
    if (rc != (ok ? 0 : AFD_EPROTO))
        FAIL("get_hello returned %d, the model says %s", rc, ok ? "valid" : "invalid");
    if (rc) {
        if (h.python || h.hash_seed || h.error || h.nodeid || h.pid)
            FAIL("hello not zeroed after an error");
        return;
    }
    if (h.pid != (int32_t)(uint32_t)m.u[0])
        FAIL("hello pid differs");
    text_eq(h.python, m.s[0], "hello python");
    text_eq(h.hash_seed, m.s[1], "hello hash_seed");
    text_eq(h.error, m.s[2], "hello error");
    text_eq(h.nodeid, m.s[3], "hello nodeid");
    afd_buf b, want;
    afd_buf_init(&b);
    afd_buf_init(&want);
    afd_proto_put_hello(&b, &h);
    const int widths[] = {4};
    canonical(&want, widths, 1, &m, 4, 0);
    check_frame(&b, AFD_MSG_HELLO, &want, "hello");
    afd_hello h2;
    if (afd_proto_get_hello(&h2, b.data + 5, b.len - 5) != 0)
        FAIL("re-encoded hello does not decode");
    if (h2.pid != h.pid || strcmp(h2.python, h.python) || strcmp(h2.hash_seed, h.hash_seed) ||
        strcmp(h2.error, h.error) || strcmp(h2.nodeid, h.nodeid))
        FAIL("hello round trip differs");
    afd_hello_finish(&h2);
    afd_hello_finish(&h);
    afd_hello_finish(&h); /* a finished message is accepted again */
    afd_buf_finish(&b);
    afd_buf_finish(&want);
}

static void check_run(const uint8_t *p, size_t len)
{
    model m;
    int ok = model_run(p, len, &m);
    afd_run_req r;
    memset(&r, 0xa5, sizeof r);
    int rc = afd_proto_get_run(&r, p, len);
    if (rc == AFD_ENOMEM)
        return;
    if (rc != (ok ? 0 : AFD_EPROTO))
        FAIL("get_run returned %d, the model says %s", rc, ok ? "valid" : "invalid");
    if (rc) {
        if (r.token || r.item || r.run_id || r.mode || r.timeout_ms || r.max_steps || r.mark_lo || r.mark_n)
            FAIL("run request not zeroed after an error");
        return;
    }
    if (r.run_id != m.u[0] || r.mode != m.u[1] || r.timeout_ms != m.u[2] || r.max_steps != m.u[3] ||
        r.mark_lo != m.u[4] || r.mark_n != m.u[5])
        FAIL("run request integers differ");
    text_eq(r.token, m.s[0], "run token");
    text_eq(r.item, m.s[1], "run item");
    afd_buf b, want;
    afd_buf_init(&b);
    afd_buf_init(&want);
    afd_proto_put_run(&b, &r);
    const int widths[] = {8, 1, 4, 8};
    canonical(&want, widths, 4, &m, 1, 0);
    afd_buf_put_u64(&want, m.u[4]); /* the mark fields follow the token */
    afd_buf_put_u32(&want, (uint32_t)m.u[5]);
    afd_buf_put_str(&want, (const char *)m.s[1].p, text_len(m.s[1])); /* then the item */
    check_frame(&b, AFD_MSG_RUN, &want, "run");
    afd_run_req r2;
    if (afd_proto_get_run(&r2, b.data + 5, b.len - 5) != 0)
        FAIL("re-encoded run request does not decode");
    if (r2.run_id != r.run_id || r2.mode != r.mode || r2.timeout_ms != r.timeout_ms ||
        r2.max_steps != r.max_steps || r2.mark_lo != r.mark_lo || r2.mark_n != r.mark_n ||
        strcmp(r2.token, r.token) || strcmp(r2.item, r.item))
        FAIL("run request round trip differs");
    afd_run_req_finish(&r2);
    afd_run_req_finish(&r);
    afd_run_req_finish(&r);
    afd_buf_finish(&b);
    afd_buf_finish(&want);
}

static void check_result(const uint8_t *p, size_t len)
{
    model m;
    int ok = model_result(p, len, &m);
    afd_run_result r;
    memset(&r, 0xa5, sizeof r);
    int rc = afd_proto_get_result(&r, p, len);
    if (rc == AFD_ENOMEM)
        return;
    if (rc != (ok ? 0 : AFD_EPROTO))
        FAIL("get_result returned %d, the model says %s", rc, ok ? "valid" : "invalid");
    if (rc) {
        if (r.failure || r.failure_len || r.trace || r.trace_len || r.run_id || r.outcome || r.status ||
            r.wall_ns)
            FAIL("result not zeroed after an error");
        return;
    }
    if (r.run_id != m.u[0] || r.outcome != m.u[1] || r.status != (int32_t)(uint32_t)m.u[2] ||
        r.wall_ns != m.u[3])
        FAIL("result integers differ");
    if (!r.failure || r.failure_len != m.s[0].n || (m.s[0].n && memcmp(r.failure, m.s[0].p, m.s[0].n) != 0) ||
        r.failure[r.failure_len] != 0)
        FAIL("result failure differs from the model (NUL bytes are part of it)");
    if (r.trace_len != m.s[1].n || (r.trace == NULL) != (m.s[1].n == 0) ||
        (r.trace_len && memcmp(r.trace, m.s[1].p, r.trace_len) != 0))
        FAIL("result trace bytes differ (%zu, model %u)", r.trace_len, m.s[1].n);
    afd_buf b, want;
    afd_buf_init(&b);
    afd_buf_init(&want);
    afd_proto_put_result(&b, &r);
    const int widths[] = {8, 1, 4, 8};
    canonical(&want, widths, 4, &m, 2, 3u);
    check_frame(&b, AFD_MSG_RESULT, &want, "result");
    afd_run_result r2;
    if (afd_proto_get_result(&r2, b.data + 5, b.len - 5) != 0)
        FAIL("re-encoded result does not decode");
    if (r2.run_id != r.run_id || r2.outcome != r.outcome || r2.status != r.status ||
        r2.wall_ns != r.wall_ns || r2.failure_len != r.failure_len ||
        (r.failure_len && memcmp(r2.failure, r.failure, r.failure_len)) || r2.trace_len != r.trace_len ||
        (r.trace_len && memcmp(r2.trace, r.trace, r.trace_len) != 0))
        FAIL("result round trip differs");
    afd_run_result_finish(&r2);
    afd_run_result_finish(&r);
    afd_run_result_finish(&r);
    afd_buf_finish(&b);
    afd_buf_finish(&want);
}

/* Every decoder on one payload, from an exact-size copy so that ASan sees a read past its end. */
static void check_payload(const uint8_t *p, size_t len)
{
    uint8_t *copy = malloc(len ? len : 1);
    if (!copy)
        FAIL("out of memory");
    if (len)
        memcpy(copy, p, len);
    check_hello(copy, len);
    check_run(copy, len);
    check_result(copy, len);
    free(copy);
}

/* ---- framing ---- */

typedef struct frames {
    afd_buf bytes; /* each frame as type byte, u32 payload length, payload */
    size_t n;
    int status; /* 0, or the error the framer ended with */
} frames;

static void frames_add(frames *f, uint8_t type, const uint8_t *payload, size_t len)
{
    afd_buf_put_u8(&f->bytes, type);
    afd_buf_put_u32(&f->bytes, (uint32_t)len);
    afd_buf_put(&f->bytes, payload, len);
    f->n++;
}

/* The framing model: whole frames while the stream has them, and EPROTO at the first length
 * header of 0 or above AFD_PROTO_MAX_FRAME. */
static void model_frames(const uint8_t *data, size_t size, frames *f)
{
    size_t pos = 0;
    while (size - pos >= 4) {
        uint32_t n = fuzz_le32(data + pos);
        if (n == 0 || n > AFD_PROTO_MAX_FRAME) {
            f->status = AFD_EPROTO;
            return;
        }
        if (size - pos - 4 < n)
            return;
        frames_add(f, data[pos + 4], data + pos + 5, n - 1);
        pos += 4 + (size_t)n;
    }
}

/* Takes every whole frame the framer has; returns 0, or the error it reports. */
static int drain(afd_framer *fr, frames *f)
{
    for (;;) {
        uint8_t type = 0;
        const uint8_t *payload = NULL;
        size_t len = 0;
        int r = afd_framer_next(fr, &type, &payload, &len);
        if (r == 0)
            return 0;
        if (r != 1)
            return r;
        frames_add(f, type, payload, len);
    }
}

/* Past this, a framer left empty gives its buffer back (proto.c's FRAMER_KEEP, 1 MiB). */
#define BIG_FRAME ((1u << 20) + 64u)

/* Feeds the framer one frame larger than BIG_FRAME and takes it, so that the input then goes to
 * a framer that has just given back a large buffer. */
static void feed_big(afd_framer *fr)
{
    uint8_t *big = calloc(1, 4 + (size_t)BIG_FRAME);
    if (!big)
        FAIL("out of memory");
    fuzz_put32(big, BIG_FRAME);
    big[4] = AFD_MSG_RESULT;
    if (afd_framer_feed(fr, big, 4 + (size_t)BIG_FRAME) != 0)
        FAIL("feed failed");
    free(big);
    uint8_t type = 0;
    const uint8_t *payload = NULL;
    size_t len = 0;
    if (afd_framer_next(fr, &type, &payload, &len) != 1 || type != AFD_MSG_RESULT || len != BIG_FRAME - 1)
        FAIL("the large frame did not come out whole");
    if (afd_framer_next(fr, &type, &payload, &len) != 0)
        FAIL("a frame after the large one");
}

static void run_framer(const uint8_t *data, size_t size, int chunked, int big_first, frames *f)
{
    afd_framer fr;
    afd_framer_init(&fr);
    if (big_first)
        feed_big(&fr);
    uint64_t h = afd_fnv1a(AFD_FNV_INIT, data, size);
    size_t pos = 0;
    int rc = 0;
    for (uint64_t k = 0; rc == 0 && (pos < size || k == 0); k++) {
        size_t n = size - pos;
        if (chunked) {
            /* Mostly small chunks, some empty, now and then a large one: frame headers and
             * payloads end up split at every offset. */
            uint64_t x = afd_mix64(h + k);
            size_t want = x % 4 == 0 ? (size_t)(x >> 8) % 257 : (size_t)(x >> 8) % 9;
            n = n < want ? n : want;
        }
        if (afd_framer_feed(&fr, data + pos, n) != 0)
            FAIL("feed failed");
        pos += n;
        rc = drain(&fr, f);
    }
    if (rc) {
        /* An error is sticky: the framer does not skip past a bad header. */
        uint8_t type;
        const uint8_t *payload;
        size_t len;
        if (afd_framer_next(&fr, &type, &payload, &len) != rc)
            FAIL("framer error %d is not repeated", rc);
    }
    f->status = rc;
    afd_framer_finish(&fr);
    afd_framer_finish(&fr);
}

static void check_same(const frames *a, const frames *b, const char *what)
{
    if (a->n != b->n || a->status != b->status || a->bytes.len != b->bytes.len ||
        (a->bytes.len && memcmp(a->bytes.data, b->bytes.data, a->bytes.len) != 0))
        FAIL("%s: %zu frames, status %d; the model has %zu frames, status %d", what, a->n, a->status, b->n,
             b->status);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    frames want = {0}, whole = {0}, chunks = {0};
    model_frames(data, size, &want);
    run_framer(data, size, 0, 0, &whole);
    /* One input in 64 follows a large frame: a megabyte of copying is too slow for every one. */
    run_framer(data, size, 1, afd_fnv1a(AFD_FNV_INIT, data, size) % 64 == 0, &chunks);
    check_same(&whole, &want, "fed whole");
    check_same(&chunks, &want, "fed in chunks");

    /* Every frame's payload, whatever its type. */
    const uint8_t *p = want.bytes.data;
    for (size_t i = 0; i < want.n; i++) {
        size_t len = fuzz_le32(p + 1);
        check_payload(p + 5, len);
        p += 5 + len;
    }
    check_payload(data, size);
    afd_buf_finish(&want.bytes);
    afd_buf_finish(&whole.bytes);
    afd_buf_finish(&chunks.bytes);
    return 0;
}

#ifndef AFD_LIBFUZZER
/* Frame headers of each type and of the lengths at the bounds, modes and outcomes, and the texts a
 * worker sends. */
static const fuzz_token DICT[] = {
    FUZZ_TOK("\x01\x00\x00\x00\x04"),
    FUZZ_TOK("\x00\x00\x00\x00"),
    FUZZ_TOK("\x00\x00\x00\x04"),
    FUZZ_TOK("\x01\x00\x00\x04"),
    FUZZ_TOK("\x05\x00\x00\x00\x01"),
    FUZZ_TOK("\x1e\x00\x00\x00\x02"),
    FUZZ_TOK("\x1a\x00\x00\x00\x03"),
    FUZZ_TOK("\xff\xff\xff\xff"),
    FUZZ_TOK("\x01"),
    FUZZ_TOK("\x02"),
    FUZZ_TOK("\x03"),
    FUZZ_TOK("\x04"),
    FUZZ_TOK("\x80"),
    FUZZ_TOK("\x81"),
    FUZZ_TOK("\x06"),
    FUZZ_TOK("\x07"),
    FUZZ_TOK("\x00\x00\x00\x00"),
    FUZZ_TOK("\x04\x00\x00\x00"
             "3.12"),
    FUZZ_TOK("\x01\x00\x00\x00"
             "0"),
    FUZZ_TOK("\x0b\x00\x00\x00test_x.py::t"),
    FUZZ_TOK("\x05\x00\x00\x00"
             "afd1:"),
    FUZZ_TOK("AFDT\x02\x00\x00\x00"),
    FUZZ_TOK("\x00"),
};

static size_t fuzz_dictionary(const fuzz_token **out)
{
    *out = DICT;
    return sizeof DICT / sizeof DICT[0];
}
#endif
