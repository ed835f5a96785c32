/* fuzz_trace.c -- fuzzing afd_trace_decode, the trace round trip, the digest and the human form of
 * events, with libFuzzer or with the plain driver of fuzz.h.
 *
 * Each input is decoded three ways: as given; with its last four bytes replaced by the right CRC
 * (so that mutations of a valid trace reach the body parser instead of stopping at the checksum);
 * and as a body, wrapped in the magic, the version and a CRC (so that libFuzzer's comparison
 * tracing steers the fields directly). Every result is checked against a model of the encoding
 * written here from trace.h alone: the decoder must accept exactly what the model accepts, with
 * the model's error code. When a decode succeeds, the trace re-encodes to the very same bytes
 * (trace.c's invariant), decodes again to an equal trace with an equal digest, the digest ignores
 * what trace.h says it ignores (wall times, the python build and the failure text), and every
 * event formats to one non-empty line. When it fails, the trace is left empty. */
#define FUZZ_NAME "fuzz_trace"
#define FUZZ_ITERS 100000
#include "fuzz.h"
#include "token.h"
#include "trace.h"

#define MAGIC "AFDT"
#define EVENT_SIZE 40u
#define HEADER_SIZE 32u
/* The token field's bound: the text of the longest token token.h allows (AFD_TOKEN_MAX_DELAYS
 * delays with the longest labels), as trace.c reads the header. */
#define TOKEN_TEXT_MAX                                                                                       \
    (sizeof AFD_TOKEN_PREFIX - 1 +                                                                           \
     ((26u + AFD_TOKEN_MAX_DELAYS * (16u + AFD_TOKEN_MAX_LABEL)) * 8u + 4u) / 5u)

/* A cursor over the model's input that remembers whether a read ran past the end. */
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

static uint32_t take32(cur *c)
{
    const uint8_t *q = take(c, 4);
    return q ? fuzz_le32(q) : 0;
}

/* A string no longer than max and, unless nul_ok, without a NUL (encode writes the identifiers
 * as C strings; the failure text is bytes, NULs included, per trace.h). */
static int take_str(cur *c, size_t max, int nul_ok)
{
    uint32_t n = take32(c);
    if (c->bad || n > max)
        return 0;
    const uint8_t *q = take(c, n);
    return q && (nul_ok || !memchr(q, 0, n));
}

static int ref_ok(uint64_t id, uint32_t n_strings)
{
    return id == AFD_NOSTR || id < n_strings;
}

/* Whether body (between the version and the CRC) is one decode must accept. */
static int model_body_ok(const uint8_t *body, size_t len)
{
    cur c = {body, len, 0, 0};
    const uint8_t *h = take(&c, HEADER_SIZE - 8);
    if (!h || h[0] > AFD_MODE_CONTROLLED || h[1] >= AFD_OUT__COUNT || h[2] || h[3])
        return 0;
    const size_t max[4] = {TOKEN_TEXT_MAX, AFD_TRACE_MAX_STRING, AFD_TRACE_MAX_STRING, AFD_TRACE_MAX_FAILURE};
    for (int i = 0; i < 4; i++)
        if (!take_str(&c, max[i], i == 3))
            return 0;
    uint32_t n_strings = take32(&c);
    for (uint32_t i = 0; i < n_strings && !c.bad; i++)
        if (!take_str(&c, AFD_TRACE_MAX_STRING, 0))
            return 0;
    uint32_t n_events = take32(&c);
    if (c.bad || (uint64_t)n_events * EVENT_SIZE != c.len - c.off)
        return 0;
    for (uint32_t i = 0; i < n_events; i++) {
        const uint8_t *e = take(&c, EVENT_SIZE);
        uint8_t kind = e[0], flags = e[1];
        uint32_t a = fuzz_le32(e + 8), b = fuzz_le32(e + 12);
        uint64_t cost = fuzz_le64(e + 24);
        if (e[2] || e[3])
            return 0;
        int ok;
        switch (kind) {
        case AFD_EV_TASK:
        case AFD_EV_STEP:
        case AFD_EV_ASSERT_BEGIN:
        case AFD_EV_ASSERT_END:
        case AFD_EV_BLOCK:
        case AFD_EV_DEADLINE:
        case AFD_EV_DEADLINE_LATE:
            ok = ref_ok(b, n_strings);
            break;
        case AFD_EV_SYNC:
            ok = flags < AFD_SYNC__COUNT && ref_ok(b, n_strings);
            break;
        case AFD_EV_OP_BEGIN:
        case AFD_EV_OP_END:
            ok = ref_ok(a, n_strings) && ref_ok(b, n_strings);
            break;
        case AFD_EV_LINE:
        case AFD_EV_LOCAL:
            ok = ref_ok(a, n_strings) && ref_ok(cost, n_strings);
            break;
        case AFD_EV_IDLE:
        case AFD_EV_UNCONTROLLED:
        case AFD_EV_LOOP:
        case AFD_EV_WAKE:
        case AFD_EV_WAITFOR:
            ok = 1;
            break;
        /* cancellation and hand-offs: b names a string, flags hold only the bits trace.h defines */
        case AFD_EV_CANCEL:
            ok = flags < 8 && ref_ok(b, n_strings);
            break;
        case AFD_EV_CANCEL_DELIVERED:
        case AFD_EV_UNCANCEL:
            ok = flags == 0 && ref_ok(b, n_strings);
            break;
        case AFD_EV_CANCEL_CAUGHT:
        case AFD_EV_TIMEOUT:
            ok = flags < 4 && ref_ok(b, n_strings);
            break;
        case AFD_EV_HANDOFF:
            ok = flags < 8 && ref_ok(b, n_strings);
            break;
        case AFD_EV_RESUME:
            ok = flags < 2 && ref_ok(b, n_strings);
            break;
        case AFD_EV_CHAIN: /* a names the chain's text: a string, never AFD_NOSTR */
            ok = a < n_strings;
            break;
        case AFD_EV_SLOT: /* b is 1 + a step index */
            ok = flags == 0 && b != 0;
            break;
        default:
            ok = 0;
        }
        if (!ok)
            return 0;
    }
    return 1;
}

/* The code afd_trace_decode must return for data (0 for success). */
static int model_decode(const uint8_t *data, size_t len)
{
    if (len < 4 || memcmp(data, MAGIC, 4) != 0)
        return AFD_ETRACE_MAGIC;
    if (len < 8)
        return AFD_ETRACE_CORRUPT;
    if (fuzz_le32(data + 4) != AFD_TRACE_VERSION)
        return AFD_ETRACE_VERSION;
    if (len < HEADER_SIZE + 4 || fuzz_le32(data + len - 4) != afd_crc32(0, data, len - 4))
        return AFD_ETRACE_CORRUPT;
    return model_body_ok(data + 8, len - 12) ? 0 : AFD_ETRACE_CORRUPT;
}

static void check_equal(const afd_trace *a, const afd_trace *b)
{
    if (a->mode != b->mode || a->outcome != b->outcome || a->flags != b->flags || a->steps != b->steps ||
        a->dropped != b->dropped || strcmp(a->token, b->token) || strcmp(a->python, b->python) ||
        strcmp(a->hash_seed, b->hash_seed) || a->failure_len != b->failure_len ||
        (a->failure_len && memcmp(a->failure, b->failure, a->failure_len)) || a->n_strings != b->n_strings ||
        a->n_events != b->n_events)
        FAIL("re-decoded header differs");
    for (uint32_t i = 0; i < a->n_strings; i++)
        if (strcmp(a->strings[i], b->strings[i]) != 0)
            FAIL("re-decoded string %u differs", i);
    for (uint32_t i = 0; i < a->n_events; i++) {
        const afd_event *x = &a->events[i], *y = &b->events[i];
        if (x->kind != y->kind || x->flags != y->flags || x->pad != y->pad || x->task != y->task ||
            x->a != y->a || x->b != y->b || x->vtime != y->vtime || x->cost != y->cost || x->wall != y->wall)
            FAIL("re-decoded event %u differs", i);
    }
}

static int is_empty(const afd_trace *t)
{
    return !t->token && !t->python && !t->hash_seed && !t->failure && !t->strings && !t->events &&
           !t->n_strings && !t->n_events && !t->mode && !t->outcome && !t->flags && !t->steps;
}

static void check_bytes(const uint8_t *data, size_t len)
{
    /* An exact-size copy, so that ASan sees a read past the end of the input. */
    uint8_t *in = malloc(len ? len : 1);
    if (!in)
        FAIL("out of memory");
    if (len)
        memcpy(in, data, len);
    int want = model_decode(in, len);
    afd_trace t;
    memset(&t, 0xa5, sizeof t); /* decode must initialize whatever it is given */
    int rc = afd_trace_decode(&t, in, len);
    if (rc == AFD_ENOMEM) {
        free(in);
        return;
    }
    if (rc != want)
        FAIL("decode returned %d, the model says %d", rc, want);
    if (rc) {
        if (!is_empty(&t))
            FAIL("trace not empty after error %d", rc);
        afd_trace_finish(&t);
        free(in);
        return;
    }
    if (!t.token || !t.python || !t.hash_seed || !t.failure || (t.n_strings && !t.strings) ||
        (t.n_events && !t.events))
        FAIL("decoded trace has a NULL field");

    afd_buf enc;
    afd_buf_init(&enc);
    if (afd_trace_encode(&t, &enc) != 0)
        FAIL("a decoded trace does not encode");
    if (enc.len != len || memcmp(enc.data, in, len) != 0)
        FAIL("a decoded trace re-encodes to other bytes (%zu, was %zu)", enc.len, len);
    afd_trace t2;
    if (afd_trace_decode(&t2, enc.data, enc.len) != 0)
        FAIL("an encoded trace does not decode");
    check_equal(&t, &t2);
    uint64_t digest = afd_trace_digest(&t);
    if (afd_trace_digest(&t2) != digest)
        FAIL("digest differs after a round trip");
    /* What the digest leaves out must not change it. */
    for (uint32_t i = 0; i < t2.n_events; i++)
        t2.events[i].wall = ~t2.events[i].wall;
    if (afd_trace_set_str(&t2, &t2.python, "other python", 12) != 0 ||
        afd_trace_set_str(&t2, &t2.failure, "other failure", 13) != 0)
        FAIL("set_str refused a short string");
    if (afd_trace_digest(&t2) != digest)
        FAIL("digest depends on wall times, python or failure");
    /* And what it covers must change it; steps stands for the header fields. */
    t2.steps ^= 1;
    if (afd_trace_digest(&t2) == digest)
        FAIL("digest ignores steps");

    afd_buf line;
    afd_buf_init(&line);
    for (uint32_t i = 0; i < t.n_events; i++) {
        line.len = 0;
        afd_trace_format_event(&t, &t.events[i], &line);
        if (line.err)
            FAIL("formatting event %u failed", i);
        if (line.len == 0 || memchr(line.data, '\n', line.len) || memchr(line.data, '\r', line.len))
            FAIL("event %u does not format to one line", i);
        if (!afd_trace_task_label(&t, t.events[i].task))
            FAIL("NULL task label");
    }
    for (uint32_t i = 0; i < t.n_strings; i++)
        if (strcmp(afd_trace_string(&t, i), t.strings[i]) != 0)
            FAIL("string %u looked up wrong", i);
    if (strcmp(afd_trace_string(&t, t.n_strings), "?") != 0 ||
        strcmp(afd_trace_string(&t, AFD_NOSTR), "?") != 0)
        FAIL("a missing string is not \"?\"");

    afd_buf_finish(&line);
    afd_buf_finish(&enc);
    afd_trace_finish(&t);
    afd_trace_finish(&t2);
    afd_trace_finish(&t2); /* a finished trace is accepted again */
    free(in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_bytes(data, size);
    if (size >= 8) {
        uint8_t *fixed = malloc(size);
        if (!fixed)
            FAIL("out of memory");
        memcpy(fixed, data, size);
        fuzz_put32(fixed + size - 4, afd_crc32(0, fixed, size - 4));
        check_bytes(fixed, size);
        free(fixed);
    }
    uint8_t *wrapped = malloc(size + 12);
    if (!wrapped)
        FAIL("out of memory");
    memcpy(wrapped, MAGIC, 4);
    fuzz_put32(wrapped + 4, AFD_TRACE_VERSION);
    if (size)
        memcpy(wrapped + 8, data, size);
    fuzz_put32(wrapped + 8 + size, afd_crc32(0, wrapped, 8 + size));
    check_bytes(wrapped, size + 12);
    free(wrapped);
    return 0;
}

#ifndef AFD_LIBFUZZER
/* The format's landmarks: the magic, versions, every event kind as a record's first bytes,
 * string references (none, small, far), and lengths. */
static const fuzz_token DICT[] = {
    FUZZ_TOK("AFDT"),
    FUZZ_TOK("\x02\x00\x00\x00"),
    FUZZ_TOK("\x01\x00\x00\x00"),
    FUZZ_TOK("\x03\x00\x00\x00"),
    FUZZ_TOK("\xff\xff\xff\xff"),
    FUZZ_TOK("\x00\x00\x00\x00"),
    FUZZ_TOK("\x28\x00\x00\x00"),
    FUZZ_TOK("\x00\x00\x01\x00"),
    FUZZ_TOK("\x01\x00\x01\x00"),
    FUZZ_TOK("\xff\xff\xff\xff\x00\x00\x00\x00"),
    FUZZ_TOK("\x01\x00\x00\x00\x01\x00\x00\x00"),
    FUZZ_TOK("\x02\x00\x00\x00test_x.py:14"),
    FUZZ_TOK("\x01\x00\x00\x00?"),
    FUZZ_TOK("\x04\x01\x00\x00"),
    FUZZ_TOK("\x05\x03\x00\x00"),
    FUZZ_TOK("\x06\x00\x00\x00"),
    FUZZ_TOK("\x07\x01\x00\x00"),
    FUZZ_TOK("\x08\x00\x00\x00"),
    FUZZ_TOK("\x09\x00\x00\x00"),
    FUZZ_TOK("\x0a\x01\x00\x00"),
    FUZZ_TOK("\x0b\x0b\x00\x00"),
    FUZZ_TOK("\x0b\x0c\x00\x00"),
    FUZZ_TOK("\x0c\x01\x00\x00"),
    FUZZ_TOK("\x0d\x00\x00\x00"),
    FUZZ_TOK("\x0e\x00\x00\x00"),
    FUZZ_TOK("\x0f\x00\x00\x00"),
    FUZZ_TOK("\x10\x00\x00\x00"),
    FUZZ_TOK("\x12\x06\x00\x00"),
    FUZZ_TOK("\x13\x00\x00\x00"),
    FUZZ_TOK("\x14\x03\x00\x00"),
    FUZZ_TOK("\x15\x00\x00\x00"),
    FUZZ_TOK("\x16\x02\x00\x00"),
    FUZZ_TOK("\x17\x01\x00\x00"),
    FUZZ_TOK("\x18\x01\x00\x00"),
    FUZZ_TOK("\x00"),
};

static size_t fuzz_dictionary(const fuzz_token **out)
{
    *out = DICT;
    return sizeof DICT / sizeof DICT[0];
}
#endif
