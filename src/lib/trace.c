/* trace.c -- the trace record: building it, its binary codec and its digest (its human form:
 * trace_format.c).
 *
 * Invariant: encode never writes bytes that decode would refuse, and decode accepts only what
 * encode can write (zero pads, indices inside the string table, no NUL inside a string, exact
 * counts, a matching CRC), so a decoded trace re-encodes to the very same bytes. Decode reads
 * bytes from another process and checks every bound before it allocates or indexes anything.
 *
 * Workload: a run records up to a few hundred thousand events, appended in small batches, then
 * encoded once; the engine decodes, digests and compares thousands of traces per session, and
 * formats only the few events around a divergence for humans. */
#include "trace.h"
#include "afd.h"
#include "buf.h"
#include "token.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define MAGIC "AFDT"
#define EVENT_SIZE 40
/* The fixed part of the header: magic, version, mode, outcome, pad, flags, steps, dropped. */
#define HEADER_SIZE 32

/* The longest token token.h can produce: the prefix and the unpadded base32 of a payload holding
 * the most delays with the longest labels. AFD_TRACE_MAX_STRING alone would make valid tokens of a
 * few hundred delays unrepresentable, so the header's ambiguity is read as: this bound applies to
 * the token field, AFD_TRACE_MAX_STRING to python, hash_seed and the string table. */
#define TOKEN_PAYLOAD_MAX (27u + AFD_TOKEN_MAX_DELAYS * (16u + AFD_TOKEN_MAX_LABEL))
#define TOKEN_TEXT_MAX (sizeof AFD_TOKEN_PREFIX - 1 + (TOKEN_PAYLOAD_MAX * 8u + 4u) / 5u)

/* Returned for unknown strings and tasks; afd_trace_task_known compares against its address to
 * tell a missing label from a label that happens to read "?". */
static const char unknown[] = "?";

const char *afd_outcome_name(int outcome)
{
    static const char *const names[AFD_OUT__COUNT] = {
        "pass", "fail", "error", "skip", "hang", "crash", "step-limit",
    };
    if (outcome < 0 || outcome >= AFD_OUT__COUNT)
        return "unknown";
    return names[outcome];
}

static char *copy_str(const char *s, size_t len)
{
    char *p = malloc(len + 1);
    if (!p)
        return NULL;
    if (len)
        memcpy(p, s, len);
    p[len] = 0;
    return p;
}

int afd_trace_init(afd_trace *self)
{
    memset(self, 0, sizeof *self);
    self->token = copy_str(NULL, 0);
    self->python = copy_str(NULL, 0);
    self->hash_seed = copy_str(NULL, 0);
    self->failure = copy_str(NULL, 0);
    if (!self->token || !self->python || !self->hash_seed || !self->failure) {
        afd_trace_finish(self);
        return AFD_ENOMEM;
    }
    return 0;
}

void afd_trace_finish(afd_trace *self)
{
    if (!self)
        return;
    free(self->token);
    free(self->python);
    free(self->hash_seed);
    free(self->failure);
    for (uint32_t i = 0; i < self->n_strings; i++)
        free(self->strings[i]);
    free(self->strings);
    free(self->events);
    memset(self, 0, sizeof *self);
}

/* The longest value each header string may hold, so that decode accepts what encode writes. */
static size_t header_max(const afd_trace *self, char *const *field)
{
    if (field == &self->failure)
        return AFD_TRACE_MAX_FAILURE;
    if (field == &self->token)
        return TOKEN_TEXT_MAX;
    return AFD_TRACE_MAX_STRING;
}

/* The header does not say what happens to a string longer than decode accepts; refusing it here
 * with AFD_EFULL (rather than clipping) tells the producer at the point where it can still clip. */
int afd_trace_set_str(afd_trace *self, char **field, const char *s, size_t len)
{
    if (field != &self->token && field != &self->python && field != &self->hash_seed &&
        field != &self->failure)
        return AFD_EINVAL;
    if (len > header_max(self, field))
        return AFD_EFULL;
    char *p = copy_str(s, len);
    if (!p)
        return AFD_ENOMEM;
    free(*field);
    *field = p;
    if (field == &self->failure)
        self->failure_len = len;
    return 0;
}

/* afd_array_grow for the trace's arrays, whose counts are u32 (the format's indexes): the
 * capacity is clamped to UINT32_MAX, which every need fits under. */
static int grow(void **arr, uint32_t *cap, uint32_t need, size_t elem, uint32_t first)
{
    size_t n = *cap;
    int rc = afd_array_grow(arr, &n, need, elem, first);
    if (rc == 0)
        *cap = n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
    return rc;
}

int afd_trace_add_string(afd_trace *self, const char *s, size_t len, uint32_t *id)
{
    if (len > AFD_TRACE_MAX_STRING)
        return AFD_EFULL;
    if (self->n_strings == AFD_NOSTR) /* the next index would be AFD_NOSTR itself */
        return AFD_EFULL;
    int rc =
        grow((void **)&self->strings, &self->cap_strings, self->n_strings + 1, sizeof *self->strings, 64);
    if (rc)
        return rc;
    char *p = copy_str(s, len);
    if (!p)
        return AFD_ENOMEM;
    self->strings[self->n_strings] = p;
    *id = self->n_strings++;
    return 0;
}

int afd_trace_add_events(afd_trace *self, const afd_event *ev, uint32_t n)
{
    if (n == 0)
        return 0;
    if (n > UINT32_MAX - self->n_events)
        return AFD_EFULL;
    int rc = grow((void **)&self->events, &self->cap_events, self->n_events + n, sizeof *self->events, 1024);
    if (rc)
        return rc;
    memcpy(self->events + self->n_events, ev, (size_t)n * sizeof *ev);
    self->n_events += n;
    return 0;
}

const char *afd_trace_string(const afd_trace *self, uint32_t id)
{
    if (id == AFD_NOSTR || id >= self->n_strings || !self->strings[id])
        return unknown;
    return self->strings[id];
}

const char *afd_trace_known(const afd_trace *self, uint32_t id)
{
    const char *s = afd_trace_string(self, id);
    return s == unknown || !s[0] ? NULL : s;
}

static bool str_ref_ok(const afd_trace *self, uint32_t id)
{
    return id == AFD_NOSTR || id < self->n_strings;
}

/* The rules decode enforces on one event, shared with encode so a producer's mistake is caught
 * before it becomes a trace nobody can read. */
static bool event_ok(const afd_trace *self, const afd_event *ev)
{
    if (ev->pad != 0)
        return false;
    switch (ev->kind) {
    case AFD_EV_TASK:
    case AFD_EV_STEP:
    case AFD_EV_ASSERT_BEGIN:
    case AFD_EV_ASSERT_END:
    case AFD_EV_BLOCK:
    case AFD_EV_DEADLINE:
    case AFD_EV_DEADLINE_LATE:
        return str_ref_ok(self, ev->b);
    case AFD_EV_SYNC:
        return ev->flags < AFD_SYNC__COUNT && str_ref_ok(self, ev->b);
    case AFD_EV_OP_BEGIN:
    case AFD_EV_OP_END:
        return str_ref_ok(self, ev->a) && str_ref_ok(self, ev->b);
    case AFD_EV_IDLE:
    case AFD_EV_UNCONTROLLED:
    case AFD_EV_LOOP:
    case AFD_EV_WAKE:
    case AFD_EV_WAITFOR:
        return true;
    case AFD_EV_LINE:
    case AFD_EV_LOCAL:
        return str_ref_ok(self, ev->a) && (ev->cost == AFD_NOSTR || ev->cost < self->n_strings);
    case AFD_EV_CANCEL:
        return ev->flags < 1u << 3 && str_ref_ok(self, ev->b);
    case AFD_EV_CANCEL_DELIVERED:
    case AFD_EV_UNCANCEL:
        return ev->flags == 0 && str_ref_ok(self, ev->b);
    case AFD_EV_CANCEL_CAUGHT:
    case AFD_EV_TIMEOUT:
        return ev->flags < 1u << 2 && str_ref_ok(self, ev->b);
    case AFD_EV_HANDOFF: /* AFD_HANDOFF_EXCEPTION, _CANCELLED, _NONE */
        return ev->flags < 1u << 3 && str_ref_ok(self, ev->b);
    case AFD_EV_RESUME:
        return ev->flags < 1u << 1 && str_ref_ok(self, ev->b);
    case AFD_EV_CHAIN:
        return ev->a < self->n_strings;
    case AFD_EV_SLOT:
        return ev->flags <= (AFD_SLOT_DEADLINE | AFD_SLOT_CROSSING) && ev->b != 0;
    default:
        return false;
    }
}

int afd_trace_encode(const afd_trace *self, afd_buf *out)
{
    if (self->mode > AFD_MODE_CONTROLLED || self->outcome >= AFD_OUT__COUNT)
        return AFD_EINVAL;
    const char *hdr[4] = {self->token, self->python, self->hash_seed, self->failure};
    const size_t hdr_max[4] = {TOKEN_TEXT_MAX, AFD_TRACE_MAX_STRING, AFD_TRACE_MAX_STRING,
                               AFD_TRACE_MAX_FAILURE};
    size_t hdr_len[4];
    size_t total = HEADER_SIZE + 4 * 4 + 4 + 4 + 4 + (size_t)self->n_events * EVENT_SIZE;
    for (int i = 0; i < 4; i++) {
        hdr_len[i] = hdr[i] ? strlen(hdr[i]) : 0;
        if (i == 3 && hdr[i] && self->failure_len > hdr_len[i])
            hdr_len[i] = self->failure_len; /* NUL bytes inside the text are part of it */
        if (hdr_len[i] > hdr_max[i])
            return AFD_EFULL;
        total += hdr_len[i];
    }
    for (uint32_t i = 0; i < self->n_strings; i++) {
        size_t n = strlen(self->strings[i]);
        if (n > AFD_TRACE_MAX_STRING)
            return AFD_EFULL;
        total += 4 + n;
    }
    for (uint32_t i = 0; i < self->n_events; i++)
        if (!event_ok(self, &self->events[i]))
            return AFD_EINVAL;

    /* One reservation up front: a large trace is written without a single reallocation. */
    int rc = afd_buf_reserve(out, total);
    if (rc)
        return rc;
    size_t start = out->len;
    afd_buf_put(out, MAGIC, 4);
    afd_buf_put_u32(out, AFD_TRACE_VERSION);
    afd_buf_put_u8(out, self->mode);
    afd_buf_put_u8(out, self->outcome);
    afd_buf_put_u16(out, 0);
    afd_buf_put_u32(out, self->flags);
    afd_buf_put_u64(out, self->steps);
    afd_buf_put_u64(out, self->dropped);
    for (int i = 0; i < 4; i++)
        afd_buf_put_str(out, hdr[i], hdr_len[i]);
    afd_buf_put_u32(out, self->n_strings);
    for (uint32_t i = 0; i < self->n_strings; i++)
        afd_buf_put_str(out, self->strings[i], strlen(self->strings[i]));
    afd_buf_put_u32(out, self->n_events);
    for (uint32_t i = 0; i < self->n_events; i++) {
        const afd_event *ev = &self->events[i];
        afd_buf_put_u8(out, ev->kind);
        afd_buf_put_u8(out, ev->flags);
        afd_buf_put_u16(out, 0);
        afd_buf_put_u32(out, ev->task);
        afd_buf_put_u32(out, ev->a);
        afd_buf_put_u32(out, ev->b);
        afd_buf_put_u64(out, ev->vtime);
        afd_buf_put_u64(out, ev->cost);
        afd_buf_put_u64(out, ev->wall);
    }
    if (out->err)
        return out->err;
    afd_buf_put_u32(out, afd_crc32(0, out->data + start, out->len - start));
    return out->err;
}

/* Reads a string and refuses one with a NUL inside: encode writes C strings, so such bytes were
 * not written by encode, and accepting them would silently shorten the string. */
static char *read_text(afd_reader *r, size_t max)
{
    size_t before = r->off;
    char *s = afd_reader_str(r, max);
    if (s && strlen(s) != r->off - before - 4) {
        free(s);
        afd_reader_fail(r, AFD_ETRACE_CORRUPT);
        return NULL;
    }
    return s;
}

static int read_header_str(afd_reader *r, char **field, size_t max)
{
    char *s = read_text(r, max);
    if (!s)
        return -1;
    free(*field);
    *field = s;
    return 0;
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Decodes everything between the version and the CRC. Returns 0 or -1 with the reason in r->err,
 * so that the caller maps every reader failure to one error code in one place. */
static int decode_body(afd_trace *self, afd_reader *r)
{
    self->mode = afd_reader_u8(r);
    self->outcome = afd_reader_u8(r);
    uint16_t pad = afd_reader_u16(r);
    self->flags = afd_reader_u32(r);
    self->steps = afd_reader_u64(r);
    self->dropped = afd_reader_u64(r);
    if (afd_reader_error(r))
        return -1;
    if (self->mode > AFD_MODE_CONTROLLED || self->outcome >= AFD_OUT__COUNT || pad != 0) {
        afd_reader_fail(r, AFD_ETRACE_CORRUPT);
        return -1;
    }
    if (read_header_str(r, &self->token, TOKEN_TEXT_MAX) ||
        read_header_str(r, &self->python, AFD_TRACE_MAX_STRING) ||
        read_header_str(r, &self->hash_seed, AFD_TRACE_MAX_STRING))
        return -1;
    /* The failure text is the test's own message, where a NUL byte is data, not corruption. */
    size_t before = r->off;
    char *failure = afd_reader_str(r, AFD_TRACE_MAX_FAILURE);
    if (!failure)
        return -1;
    free(self->failure);
    self->failure = failure;
    self->failure_len = r->off - before - 4;

    /* Counts are checked against the bytes left before anything is allocated: each string takes at
     * least its 4-byte length and each event exactly EVENT_SIZE bytes, so a forged count can cost
     * at most a small multiple of the input's own size. */
    uint32_t n_strings = afd_reader_u32(r);
    if (afd_reader_error(r))
        return -1;
    if (n_strings > afd_reader_left(r) / 4) {
        afd_reader_fail(r, AFD_ETRACE_CORRUPT);
        return -1;
    }
    if (n_strings) {
        self->strings = calloc(n_strings, sizeof *self->strings);
        if (!self->strings) {
            afd_reader_fail(r, AFD_ENOMEM);
            return -1;
        }
        self->cap_strings = n_strings;
    }
    for (uint32_t i = 0; i < n_strings; i++) {
        char *s = read_text(r, AFD_TRACE_MAX_STRING);
        if (!s)
            return -1;
        self->strings[i] = s;
        self->n_strings = i + 1;
    }

    uint32_t n_events = afd_reader_u32(r);
    if (afd_reader_error(r))
        return -1;
    if (n_events != afd_reader_left(r) / EVENT_SIZE || afd_reader_left(r) % EVENT_SIZE != 0) {
        afd_reader_fail(r, AFD_ETRACE_CORRUPT); /* a wrong count, a cut event or trailing bytes */
        return -1;
    }
    if (n_events) {
        self->events = malloc((size_t)n_events * sizeof *self->events);
        if (!self->events) {
            afd_reader_fail(r, AFD_ENOMEM);
            return -1;
        }
        self->cap_events = n_events;
    }
    for (uint32_t i = 0; i < n_events; i++) {
        afd_event *ev = &self->events[i];
        ev->kind = afd_reader_u8(r);
        ev->flags = afd_reader_u8(r);
        ev->pad = afd_reader_u16(r);
        ev->task = afd_reader_u32(r);
        ev->a = afd_reader_u32(r);
        ev->b = afd_reader_u32(r);
        ev->vtime = afd_reader_u64(r);
        ev->cost = afd_reader_u64(r);
        ev->wall = afd_reader_u64(r);
        if (afd_reader_error(r))
            return -1;
        if (!event_ok(self, ev)) {
            afd_reader_fail(r, AFD_ETRACE_CORRUPT);
            return -1;
        }
        self->n_events = i + 1;
    }
    return afd_reader_error(r) ? -1 : 0;
}

int afd_trace_decode(afd_trace *self, const uint8_t *data, size_t len)
{
    int rc = afd_trace_init(self);
    if (rc)
        return rc;
    if (len < 4 || memcmp(data, MAGIC, 4) != 0) {
        rc = AFD_ETRACE_MAGIC;
        goto fail;
    }
    if (len < 8) {
        rc = AFD_ETRACE_CORRUPT;
        goto fail;
    }
    if (le32(data + 4) != AFD_TRACE_VERSION) {
        rc = AFD_ETRACE_VERSION;
        goto fail;
    }
    /* The checksum is verified before the body is parsed, so a damaged trace is refused without
     * allocating for counts it may have garbled; the parser still trusts nothing. */
    if (len < HEADER_SIZE + 4 || le32(data + len - 4) != afd_crc32(0, data, len - 4)) {
        rc = AFD_ETRACE_CORRUPT;
        goto fail;
    }
    afd_reader r;
    afd_reader_init(&r, data + 8, len - 12);
    if (decode_body(self, &r)) {
        rc = afd_reader_error(&r) == AFD_ENOMEM ? AFD_ENOMEM : AFD_ETRACE_CORRUPT;
        goto fail;
    }
    return 0;
fail:
    afd_trace_finish(self);
    return rc;
}

/* The digest hashes a fixed little-endian serialization of each field, never struct memory, so
 * neither padding bytes nor the host's byte order can change it. */
static uint64_t hash_le(uint64_t h, uint64_t v, int n)
{
    uint8_t b[8];
    for (int i = 0; i < n; i++)
        b[i] = (uint8_t)(v >> (8 * i));
    return afd_fnv1a(h, b, (size_t)n);
}

/* Length-prefixed, so that moving a byte from one string to the next changes the digest. */
static uint64_t hash_str(uint64_t h, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    h = hash_le(h, n, 8);
    return afd_fnv1a(h, s, n);
}

/* Whether ev measures the run rather than says what it did: a SLOT, or a deadline that fired on
 * time whose firing the schedule's stalls brought forward (AFD_LATE_FIRED: how much stall that took
 * is a threshold of the run's time, not of its order, and varies inside one slot). */
static int measurement(const afd_event *ev)
{
    return ev->kind == AFD_EV_SLOT || (ev->kind == AFD_EV_DEADLINE_LATE && (ev->flags & AFD_LATE_FIRED));
}

/* The events that say what the run did: all but the measurements. Both digests count these, so
 * that a trace without them digests as it did before their kinds existed. */
static uint32_t behaviour_events(const afd_trace *self)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < self->n_events; i++)
        n += !measurement(&self->events[i]);
    return n;
}

uint64_t afd_trace_digest(const afd_trace *self)
{
    uint64_t h = AFD_FNV_INIT;
    h = hash_le(h, AFD_TRACE_VERSION, 4);
    h = hash_le(h, self->mode, 1);
    h = hash_le(h, self->outcome, 1);
    h = hash_le(h, self->flags, 4);
    h = hash_le(h, self->steps, 8);
    h = hash_le(h, self->dropped, 8);
    h = hash_str(h, self->token);
    h = hash_str(h, self->hash_seed);
    h = hash_le(h, self->n_strings, 4);
    for (uint32_t i = 0; i < self->n_strings; i++)
        h = hash_str(h, self->strings[i]);
    h = hash_le(h, behaviour_events(self), 4);
    for (uint32_t i = 0; i < self->n_events; i++) {
        const afd_event *ev = &self->events[i];
        if (measurement(ev))
            continue;
        h = hash_le(h, ev->kind, 1);
        h = hash_le(h, ev->flags, 1);
        h = hash_le(h, ev->task, 4);
        h = hash_le(h, ev->a, 4);
        h = hash_le(h, ev->b, 4);
        h = hash_le(h, ev->vtime, 8);
        h = hash_le(h, ev->cost, 8);
    }
    return h;
}

uint64_t afd_trace_order_digest(const afd_trace *self)
{
    uint64_t h = AFD_FNV_INIT;
    h = hash_le(h, AFD_TRACE_VERSION, 4);
    h = hash_le(h, self->outcome, 1);
    h = hash_le(h, self->n_strings, 4);
    for (uint32_t i = 0; i < self->n_strings; i++)
        h = hash_str(h, self->strings[i]);
    h = hash_le(h, behaviour_events(self), 4);
    for (uint32_t i = 0; i < self->n_events; i++) {
        const afd_event *ev = &self->events[i];
        if (measurement(ev))
            continue;
        h = hash_le(h, ev->kind, 1);
        if (ev->kind == AFD_EV_IDLE)
            continue; /* when the loop idled is order; how long and how late is time */
        h = hash_le(h, ev->flags, 1);
        h = hash_le(h, ev->task, 4);
        h = hash_le(h, ev->a, 4);
        h = hash_le(h, ev->b, 4);
    }
    return h;
}

/* A linear scan: tasks are created before they run, so the TASK event is usually found early, and
 * only the handful of events shown to a human are ever labelled. */
const char *afd_trace_task_label(const afd_trace *self, uint32_t task)
{
    for (uint32_t i = 0; i < self->n_events; i++) {
        const afd_event *ev = &self->events[i];
        if (ev->kind == AFD_EV_TASK && ev->task == task)
            return afd_trace_string(self, ev->b);
    }
    return unknown;
}

const char *afd_trace_task_known(const afd_trace *self, uint32_t task)
{
    const char *label = afd_trace_task_label(self, task);
    return label == unknown ? NULL : label;
}

uint32_t afd_trace_program_steps(const afd_trace *self)
{
    uint64_t n = self->steps;
    for (uint32_t i = 0; i < self->n_events; i++) {
        const afd_event *ev = &self->events[i];
        if (ev->kind == AFD_EV_WAKE && (ev->flags & AFD_WAKE_SELF_PIPE) && n > 1)
            n--;
    }
    return n == 0 ? 1 : n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

uint64_t afd_trace_id_bound(const afd_trace *self)
{
    return (uint64_t)self->n_events + self->dropped + 1;
}

int afd_trace_task_is_callback(const afd_trace *self, uint32_t task)
{
    for (uint32_t i = 0; i < self->n_events; i++) {
        const afd_event *ev = &self->events[i];
        if (ev->kind == AFD_EV_TASK && ev->task == task)
            return ev->flags & 1;
    }
    return 0;
}
