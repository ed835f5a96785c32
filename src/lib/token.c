/* token.c -- schedules, and the token "afd1:<base32>" that carries one between processes.
 *
 * Main invariant: every token afd_token_encode produces decodes to an equal schedule, and decoding
 * is canonical: a text that decodes at all re-encodes to itself, up to surrounding whitespace and
 * the case of its base32 letters. Encode therefore refuses schedules that decode would refuse.
 * Workload: a few tokens per run (the engine prints one, a worker decodes one); a schedule holds a
 * handful of delays, rarely more than a few dozen. Decode is fed untrusted text and is fuzzed. */
#include "token.h"
#include "afd.h"
#include "buf.h"

#include <stdlib.h>
#include <string.h>

/* The fixed part of a version-1 payload: version, strategy, seed, pct_depth, pct_steps, n_delays
 * (version 2 adds one flags byte). */
#define FIXED_LEN (1 + 1 + 8 + 4 + 4 + 4)
/* The smallest encoded delay: an empty label's length, the ordinal and the cost. */
#define MIN_DELAY_LEN (4 + 4 + 8)
#define CRC_LEN 4

static const char base32_alphabet[] = "abcdefghijklmnopqrstuvwxyz234567";

void afd_schedule_init(afd_schedule *self)
{
    memset(self, 0, sizeof *self);
}

void afd_schedule_finish(afd_schedule *self)
{
    if (!self)
        return;
    if (self->delays) {
        for (uint32_t i = 0; i < self->n_delays; i++)
            free(self->delays[i].label);
        free(self->delays);
    }
    afd_schedule_init(self);
}

int afd_schedule_add_delay(afd_schedule *self, const char *label, uint32_t ordinal, uint64_t cost_ns)
{
    if (!self || !label)
        return AFD_EINVAL;
    size_t len = strlen(label);
    if (len > AFD_TOKEN_MAX_LABEL)
        return AFD_EINVAL;
    if (self->n_delays >= AFD_TOKEN_MAX_DELAYS)
        return AFD_EFULL;
    char *copy = malloc(len + 1);
    if (!copy)
        return AFD_ENOMEM;
    memcpy(copy, label, len + 1);
    /* Growing by one keeps the struct free of a capacity field, so an array allocated elsewhere at
     * its exact size stays valid; delays are few, so the copies are cheap. */
    afd_delay *d = realloc(self->delays, ((size_t)self->n_delays + 1) * sizeof *d);
    if (!d) {
        free(copy);
        return AFD_ENOMEM;
    }
    self->delays = d;
    d[self->n_delays] = (afd_delay){.label = copy, .ordinal = ordinal, .cost_ns = cost_ns};
    self->n_delays++;
    return 0;
}

int afd_schedule_copy(afd_schedule *dst, const afd_schedule *src)
{
    if (!dst || !src)
        return AFD_EINVAL;
    afd_schedule_init(dst);
    if (src->n_delays && !src->delays)
        return AFD_EINVAL;
    dst->strategy = src->strategy;
    dst->seed = src->seed;
    dst->pct_depth = src->pct_depth;
    dst->pct_steps = src->pct_steps;
    dst->flags = src->flags;
    dst->scale_ppb = src->scale_ppb;
    if (!src->n_delays)
        return 0;
    dst->delays = calloc(src->n_delays, sizeof *dst->delays);
    if (!dst->delays)
        return AFD_ENOMEM;
    /* n_delays grows only with each label copied, so finish() on failure frees exactly those. */
    for (uint32_t i = 0; i < src->n_delays; i++) {
        const afd_delay *s = &src->delays[i];
        size_t len = s->label ? strlen(s->label) : 0;
        char *label = malloc(len + 1);
        if (!label) {
            afd_schedule_finish(dst);
            return AFD_ENOMEM;
        }
        if (len)
            memcpy(label, s->label, len);
        label[len] = 0;
        dst->delays[i] = (afd_delay){.label = label, .ordinal = s->ordinal, .cost_ns = s->cost_ns};
        dst->n_delays = i + 1;
    }
    return 0;
}

const char *afd_strategy_name(int strategy)
{
    switch (strategy) {
    case AFD_STRAT_ZERO:
        return "zero";
    case AFD_STRAT_JITTER:
        return "jitter";
    case AFD_STRAT_PCT:
        return "pct";
    default:
        return "unknown"; /* Never NULL, so callers can print the name of a corrupt value. */
    }
}

int afd_strategy_parse(const char *name)
{
    if (!name)
        return AFD_EINVAL;
    for (int s = 0; s < AFD_STRAT__COUNT; s++)
        if (strcmp(name, afd_strategy_name(s)) == 0)
            return s;
    return AFD_EINVAL;
}

char *afd_schedule_describe(const afd_schedule *self)
{
    if (!self)
        return NULL;
    afd_buf b;
    afd_buf_init(&b);
    switch (self->strategy) {
    case AFD_STRAT_JITTER:
        afd_buf_printf(&b, "jitter(seed=%llu)", (unsigned long long)self->seed);
        break;
    case AFD_STRAT_PCT:
        afd_buf_printf(&b, "pct(seed=%llu, d=%lu)", (unsigned long long)self->seed,
                       (unsigned long)self->pct_depth);
        break;
    default:
        /* The header's example prints zero without its seed: the seed only feeds `random`. */
        afd_buf_printf(&b, "%s", afd_strategy_name(self->strategy));
        break;
    }
    if (self->n_delays)
        afd_buf_printf(&b, " + %lu delay%s", (unsigned long)self->n_delays, self->n_delays == 1 ? "" : "s");
    if (self->flags & AFD_SCHED_BELOW_DEADLINES)
        afd_buf_printf(&b,
                       self->flags & AFD_SCHED_WELL_BELOW ? ", well below deadlines" : ", below deadlines");
    if (self->flags & AFD_SCHED_SCALED)
        afd_buf_printf(&b, ", delays scaled by %.9g", self->scale_ppb / 1e9);
    if (b.err) {
        afd_buf_finish(&b);
        return NULL;
    }
    return (char *)afd_buf_steal(&b, NULL);
}

/* Writes the unpadded base32 form of len bytes; dst has room for (len * 8 + 4) / 5 characters. */
static size_t base32_encode(char *dst, const uint8_t *src, size_t len)
{
    size_t n = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < len; i++) {
        acc = (acc << 8) | src[i];
        bits += 8;
        while (bits >= 5) {
            bits -= 5;
            dst[n++] = base32_alphabet[(acc >> bits) & 31];
        }
        acc &= (1u << bits) - 1; /* Drops emitted bits, so the shift above never overflows. */
    }
    if (bits)
        dst[n++] = base32_alphabet[(acc << (5 - bits)) & 31];
    return n;
}

/* Uppercase is accepted as well: a token may pass through a tool or a person that changes case. */
static int base32_value(char c)
{
    if (c >= 'a' && c <= 'z')
        return c - 'a';
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= '2' && c <= '7')
        return c - '2' + 26;
    return -1;
}

/* Decodes len base32 characters into dst (room for len * 5 / 8 bytes), returning the byte count
 * in *out_len. Only the canonical form is accepted: the unused low bits of the last character must
 * be zero and fewer than five, otherwise two texts would name one payload. */
static int base32_decode(uint8_t *dst, size_t *out_len, const char *src, size_t len)
{
    size_t n = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < len; i++) {
        int v = base32_value(src[i]);
        if (v < 0)
            return AFD_ETOKEN_CORRUPT;
        acc = (acc << 5) | (uint32_t)v;
        bits += 5;
        if (bits >= 8) {
            bits -= 8;
            dst[n++] = (uint8_t)(acc >> bits);
        }
        acc &= (1u << bits) - 1;
    }
    if (bits >= 5 || acc != 0)
        return AFD_ETOKEN_CORRUPT;
    *out_len = n;
    return 0;
}

/* The checks decode applies to fields, so that encode never emits a token decode rejects. */
static int schedule_encodable(const afd_schedule *self)
{
    if (self->strategy >= AFD_STRAT__COUNT || self->n_delays > AFD_TOKEN_MAX_DELAYS)
        return AFD_EINVAL;
    if (self->n_delays && !self->delays)
        return AFD_EINVAL;
    if (self->flags & ~AFD_SCHED_FLAGS_KNOWN)
        return AFD_EINVAL;
    if ((self->flags & AFD_SCHED_SCALED) && self->scale_ppb > AFD_SCALE_ONE)
        return AFD_EINVAL;
    for (uint32_t i = 0; i < self->n_delays; i++) {
        const char *label = self->delays[i].label;
        if (label && strlen(label) > AFD_TOKEN_MAX_LABEL)
            return AFD_EINVAL;
    }
    return 0;
}

int afd_token_encode(const afd_schedule *self, char **out)
{
    if (!out)
        return AFD_EINVAL;
    *out = NULL;
    if (!self)
        return AFD_EINVAL;
    int rc = schedule_encodable(self);
    if (rc)
        return rc;

    afd_buf b;
    afd_buf_init(&b);
    /* Version 1 whenever no flag is set: such a schedule runs as it always did, and its token
     * text must stay what it was. */
    uint8_t version = self->flags ? 2 : 1;
    afd_buf_put_u8(&b, version);
    afd_buf_put_u8(&b, self->strategy);
    afd_buf_put_u64(&b, self->seed);
    afd_buf_put_u32(&b, self->pct_depth);
    afd_buf_put_u32(&b, self->pct_steps);
    if (version == 2)
        afd_buf_put_u8(&b, self->flags);
    if (self->flags & AFD_SCHED_SCALED)
        afd_buf_put_u32(&b, self->scale_ppb);
    afd_buf_put_u32(&b, self->n_delays);
    for (uint32_t i = 0; i < self->n_delays; i++) {
        const afd_delay *d = &self->delays[i];
        afd_buf_put_str(&b, d->label, d->label ? strlen(d->label) : 0);
        afd_buf_put_u32(&b, d->ordinal);
        afd_buf_put_u64(&b, d->cost_ns);
    }
    if (!b.err)
        afd_buf_put_u32(&b, afd_crc32(0, b.data, b.len));
    if (b.err) {
        rc = b.err;
        goto done;
    }

    size_t prefix = strlen(AFD_TOKEN_PREFIX);
    size_t chars = (b.len * 8 + 4) / 5;
    char *text = malloc(prefix + chars + 1);
    if (!text) {
        rc = AFD_ENOMEM;
        goto done;
    }
    memcpy(text, AFD_TOKEN_PREFIX, prefix);
    size_t n = base32_encode(text + prefix, b.data, b.len);
    text[prefix + n] = 0;
    *out = text;
done:
    afd_buf_finish(&b);
    return rc;
}

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

/* Checks "afd<digits>:" at the start of text[0..len) and returns the length of that prefix. */
static int parse_prefix(const char *text, size_t len, size_t *prefix_len)
{
    if (len < 3 || memcmp(text, "afd", 3) != 0)
        return AFD_ETOKEN_PREFIX;
    size_t i = 3;
    while (i < len && text[i] >= '0' && text[i] <= '9')
        i++;
    if (i == 3 || i == len || text[i] != ':')
        return AFD_ETOKEN_PREFIX;
    /* The digits are compared as text, not as a number: "afd01:" is not canonical and a long digit
     * run cannot overflow anything. */
    if (i - 3 != 1 || text[3] != '0' + AFD_TOKEN_TEXT_VERSION)
        return AFD_ETOKEN_VERSION;
    *prefix_len = i + 1;
    return 0;
}

/* Parses the fields of a payload whose checksum has been verified (crc excluded) into self. */
static int parse_payload(afd_schedule *self, const uint8_t *p, size_t len)
{
    afd_reader r;
    afd_reader_init(&r, p, len);
    uint8_t version = afd_reader_u8(&r);
    uint8_t strategy = afd_reader_u8(&r);
    self->seed = afd_reader_u64(&r);
    self->pct_depth = afd_reader_u32(&r);
    self->pct_steps = afd_reader_u32(&r);
    uint8_t flags = version == 2 ? afd_reader_u8(&r) : 0;
    uint32_t scale = flags & AFD_SCHED_SCALED ? afd_reader_u32(&r) : 0;
    uint32_t n = afd_reader_u32(&r);
    if (afd_reader_error(&r) || version < 1 || version > AFD_TOKEN_VERSION || strategy >= AFD_STRAT__COUNT)
        return AFD_ETOKEN_CORRUPT;
    /* A version-2 payload without a flag would have been written as version 1. */
    if (version == 2 && (flags == 0 || (flags & ~AFD_SCHED_FLAGS_KNOWN)))
        return AFD_ETOKEN_CORRUPT;
    if (scale > AFD_SCALE_ONE)
        return AFD_ETOKEN_CORRUPT;
    self->flags = flags;
    self->scale_ppb = scale;
    self->strategy = strategy;
    /* The byte count bounds n before anything is allocated for it. */
    if (n > AFD_TOKEN_MAX_DELAYS || n > afd_reader_left(&r) / MIN_DELAY_LEN)
        return AFD_ETOKEN_CORRUPT;
    if (n) {
        self->delays = calloc(n, sizeof *self->delays);
        if (!self->delays)
            return AFD_ENOMEM;
    }
    for (uint32_t i = 0; i < n; i++) {
        uint32_t label_len = afd_reader_u32(&r);
        if (label_len > AFD_TOKEN_MAX_LABEL)
            return AFD_ETOKEN_CORRUPT;
        const uint8_t *bytes = afd_reader_bytes(&r, label_len);
        self->delays[i].ordinal = afd_reader_u32(&r);
        self->delays[i].cost_ns = afd_reader_u64(&r);
        if (afd_reader_error(&r))
            return AFD_ETOKEN_CORRUPT;
        /* An embedded NUL would cut the C string short and break the round trip. */
        if (memchr(bytes, 0, label_len))
            return AFD_ETOKEN_CORRUPT;
        char *label = malloc((size_t)label_len + 1);
        if (!label)
            return AFD_ENOMEM;
        memcpy(label, bytes, label_len);
        label[label_len] = 0;
        self->delays[i].label = label;
        self->n_delays = i + 1; /* Counts only filled entries, so finish() frees exactly those. */
    }
    if (afd_reader_left(&r) != 0)
        return AFD_ETOKEN_CORRUPT;
    return 0;
}

int afd_token_decode(afd_schedule *self, const char *text)
{
    if (!self)
        return AFD_EINVAL;
    afd_schedule_init(self);
    if (!text)
        return AFD_EINVAL;

    size_t len = strlen(text);
    while (len && is_space(text[0])) {
        text++;
        len--;
    }
    while (len && is_space(text[len - 1]))
        len--;

    size_t prefix_len = 0;
    int rc = parse_prefix(text, len, &prefix_len);
    if (rc)
        return rc;
    text += prefix_len;
    len -= prefix_len;

    uint8_t *payload = malloc(len / 8 * 5 + 5); /* At least len * 5 / 8, without overflow. */
    if (!payload)
        return AFD_ENOMEM;
    size_t n = 0;
    rc = base32_decode(payload, &n, text, len);
    if (rc)
        goto done;
    if (n < CRC_LEN) {
        rc = AFD_ETOKEN_CORRUPT;
        goto done;
    }
    /* The checksum comes first, so a damaged token reports damage rather than a confusing field. */
    n -= CRC_LEN;
    uint32_t stored = (uint32_t)payload[n] | (uint32_t)payload[n + 1] << 8 | (uint32_t)payload[n + 2] << 16 |
                      (uint32_t)payload[n + 3] << 24;
    if (afd_crc32(0, payload, n) != stored) {
        rc = AFD_ETOKEN_CHECKSUM;
        goto done;
    }
    rc = parse_payload(self, payload, n);
done:
    free(payload);
    if (rc)
        afd_schedule_finish(self);
    return rc;
}
