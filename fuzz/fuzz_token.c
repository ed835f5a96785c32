/* fuzz_token.c -- fuzzing afd_token_decode and the token round trip, with libFuzzer or with the
 * plain driver of fuzz.h.
 *
 * Each input is decoded three ways, every one checked against a model of the format written here
 * from token.h alone (so a decoder that accepts too much or too little disagrees with it):
 *   1. as text, exactly as given;
 *   2. repaired: the text's base32 read leniently, its last four bytes replaced by the right CRC
 *      and re-encoded, so that mutations of a valid token reach the field parser instead of
 *      stopping at the checksum;
 *   3. as a raw payload: the input bytes with a CRC appended, encoded, so that libFuzzer's
 *      comparison tracing steers the binary fields directly.
 * Whenever a decode succeeds: the fields are within the header's bounds, the schedule re-encodes
 * to the input's canonical form (trimmed, base32 lowercased: token.c promises decoding is
 * canonical), that text decodes to an equal schedule and re-encodes to itself, and a copy is
 * equal too. Whenever it fails: the code is the one the model predicts and the schedule is empty. */
#define FUZZ_NAME "fuzz_token"
#define FUZZ_ITERS 100000
#include "fuzz.h"
#include "token.h"

static const char B32[] = "abcdefghijklmnopqrstuvwxyz234567";

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

static int b32_value(char c)
{
    if (c >= 'a' && c <= 'z')
        return c - 'a';
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= '2' && c <= '7')
        return c - '2' + 26;
    return -1;
}

/* The payload model: whether body[0..len) (CRC excluded) is a payload decode must accept. */
static int model_body_ok(const uint8_t *body, size_t len)
{
    if (len < 22 || body[0] < 1 || body[0] > AFD_TOKEN_VERSION || body[1] >= AFD_STRAT__COUNT)
        return 0;
    /* Version 2 has a flags byte after pct_steps: known bits only, and at least one set. */
    size_t fixed = body[0] == 2 ? 23 : 22;
    if (len < fixed)
        return 0;
    if (body[0] == 2 && (body[18] == 0 || (body[18] & ~AFD_SCHED_FLAGS_KNOWN)))
        return 0;
    uint32_t n = fuzz_le32(body + fixed - 4);
    if (n > AFD_TOKEN_MAX_DELAYS)
        return 0;
    size_t pos = fixed;
    for (uint32_t i = 0; i < n; i++) {
        if (len - pos < 4)
            return 0;
        uint32_t label_len = fuzz_le32(body + pos);
        pos += 4;
        if (label_len > AFD_TOKEN_MAX_LABEL || len - pos < label_len)
            return 0;
        if (memchr(body + pos, 0, label_len))
            return 0;
        pos += label_len;
        if (len - pos < 12)
            return 0;
        pos += 12;
    }
    return pos == len;
}

/* The text model: the code afd_token_decode must return for text (0 for success). */
static int model_decode(const char *text)
{
    size_t len = strlen(text);
    while (len && is_space(text[0])) {
        text++;
        len--;
    }
    while (len && is_space(text[len - 1]))
        len--;
    if (len < 3 || memcmp(text, "afd", 3) != 0)
        return AFD_ETOKEN_PREFIX;
    size_t i = 3;
    while (i < len && text[i] >= '0' && text[i] <= '9')
        i++;
    if (i == 3 || i == len || text[i] != ':')
        return AFD_ETOKEN_PREFIX;
    if (i != 4 || text[3] != '1')
        return AFD_ETOKEN_VERSION;
    text += 5;
    len -= 5;
    /* Strict base32: every character in the alphabet (either case), and the bits left over at the
     * end fewer than a character's and all zero. */
    uint8_t *p = malloc(len * 5 / 8 + 1);
    if (!p)
        FAIL("out of memory");
    size_t n = 0;
    uint32_t acc = 0;
    unsigned bits = 0;
    int rc = 0;
    for (size_t k = 0; k < len && rc == 0; k++) {
        int v = b32_value(text[k]);
        if (v < 0) {
            rc = AFD_ETOKEN_CORRUPT;
            break;
        }
        acc = (acc << 5 | (uint32_t)v) & 0xfff; /* the 12 bits a character and a partial byte need */
        bits += 5;
        if (bits >= 8) {
            bits -= 8;
            p[n++] = (uint8_t)(acc >> bits);
        }
    }
    if (rc == 0 && (bits >= 5 || (acc & ((1u << bits) - 1)) != 0))
        rc = AFD_ETOKEN_CORRUPT;
    if (rc == 0 && n < 4)
        rc = AFD_ETOKEN_CORRUPT;
    if (rc == 0 && afd_crc32(0, p, n - 4) != fuzz_le32(p + n - 4))
        rc = AFD_ETOKEN_CHECKSUM;
    if (rc == 0 && !model_body_ok(p, n - 4))
        rc = AFD_ETOKEN_CORRUPT;
    free(p);
    return rc;
}

/* "afd1:" + base32 of body + its CRC (caller frees). */
static char *make_token(const uint8_t *body, size_t len)
{
    uint8_t *p = malloc(len + 4);
    char *t = malloc(5 + (len + 4) * 8 / 5 + 2);
    if (!p || !t)
        FAIL("out of memory");
    if (len)
        memcpy(p, body, len);
    fuzz_put32(p + len, afd_crc32(0, body, len));
    memcpy(t, "afd1:", 5);
    size_t n = 5;
    uint32_t acc = 0;
    unsigned bits = 0;
    for (size_t i = 0; i < len + 4; i++) {
        acc = (acc << 8 | p[i]) & 0xfff;
        bits += 8;
        while (bits >= 5) {
            bits -= 5;
            t[n++] = B32[(acc >> bits) & 31];
        }
    }
    if (bits)
        t[n++] = B32[(acc << (5 - bits)) & 31];
    t[n] = 0;
    free(p);
    return t;
}

static void check_equal(const afd_schedule *a, const afd_schedule *b, const char *what)
{
    if (a->strategy != b->strategy || a->seed != b->seed || a->pct_depth != b->pct_depth ||
        a->pct_steps != b->pct_steps || a->n_delays != b->n_delays)
        FAIL("%s: fields differ", what);
    for (uint32_t i = 0; i < a->n_delays; i++) {
        const afd_delay *x = &a->delays[i], *y = &b->delays[i];
        if (!x->label || !y->label || strcmp(x->label, y->label) != 0 || x->ordinal != y->ordinal ||
            x->cost_ns != y->cost_ns)
            FAIL("%s: delay %u differs", what, i);
    }
}

/* The text decode must accept: trimmed, with the base32 after the prefix lowercased. */
static char *canonical(const char *text)
{
    size_t len = strlen(text);
    while (len && is_space(text[0])) {
        text++;
        len--;
    }
    while (len && is_space(text[len - 1]))
        len--;
    char *c = fuzz_cstr((const uint8_t *)text, len);
    for (size_t i = 5; i < len; i++)
        if (c[i] >= 'A' && c[i] <= 'Z')
            c[i] = (char)(c[i] - 'A' + 'a');
    return c;
}

static void check_text(const char *text)
{
    int want = model_decode(text);
    afd_schedule s;
    memset(&s, 0xa5, sizeof s); /* decode must initialize whatever it is given */
    int rc = afd_token_decode(&s, text);
    if (rc == AFD_ENOMEM)
        return;
    if (rc != want)
        FAIL("decode returned %d, the model says %d", rc, want);
    if (rc) {
        if (s.delays || s.n_delays || s.strategy || s.seed || s.pct_depth || s.pct_steps)
            FAIL("schedule not empty after error %d", rc);
        afd_schedule_finish(&s);
        return;
    }
    if (s.strategy >= AFD_STRAT__COUNT || s.n_delays > AFD_TOKEN_MAX_DELAYS || (s.n_delays && !s.delays))
        FAIL("decoded strategy %u, %u delays", s.strategy, s.n_delays);
    for (uint32_t i = 0; i < s.n_delays; i++)
        if (!s.delays[i].label || strlen(s.delays[i].label) > AFD_TOKEN_MAX_LABEL)
            FAIL("delay %u has a bad label", i);
    if (afd_strategy_parse(afd_strategy_name(s.strategy)) != s.strategy)
        FAIL("strategy %u does not round-trip through its name", s.strategy);

    char *enc = NULL;
    if (afd_token_encode(&s, &enc) != 0 || !enc)
        FAIL("a decoded schedule does not encode");
    char *canon = canonical(text);
    if (strcmp(enc, canon) != 0)
        FAIL("decoding is not canonical: \"%s\" re-encodes to \"%s\"", canon, enc);
    free(canon);

    afd_schedule s2;
    if (afd_token_decode(&s2, enc) != 0)
        FAIL("an encoded token does not decode: %s", enc);
    check_equal(&s, &s2, "decode(encode(s))");
    char *enc2 = NULL;
    if (afd_token_encode(&s2, &enc2) != 0 || strcmp(enc, enc2) != 0)
        FAIL("re-encoding differs");

    afd_schedule s3;
    if (afd_schedule_copy(&s3, &s) == 0) {
        check_equal(&s, &s3, "copy");
        afd_schedule_finish(&s3);
    }
    char *desc = afd_schedule_describe(&s);
    if (desc && strncmp(desc, afd_strategy_name(s.strategy), strlen(afd_strategy_name(s.strategy))) != 0)
        FAIL("description \"%s\" does not name the strategy", desc);
    free(desc);
    free(enc);
    free(enc2);
    afd_schedule_finish(&s);
    afd_schedule_finish(&s2);
    afd_schedule_finish(&s2); /* a finished schedule is accepted again */
}

/* Variant 2: the base32 after the last ':' read leniently (characters outside the alphabet
 * skipped), the last four bytes taken as the old CRC and replaced. */
static void check_repaired(const char *text)
{
    const char *colon = strrchr(text, ':');
    const char *b = colon ? colon + 1 : text;
    size_t len = strlen(b);
    uint8_t *p = malloc(len * 5 / 8 + 1);
    if (!p)
        FAIL("out of memory");
    size_t n = 0;
    uint32_t acc = 0;
    unsigned bits = 0;
    for (size_t i = 0; i < len; i++) {
        int v = b32_value(b[i]);
        if (v < 0)
            continue;
        acc = (acc << 5 | (uint32_t)v) & 0xfff;
        bits += 5;
        if (bits >= 8) {
            bits -= 8;
            p[n++] = (uint8_t)(acc >> bits);
        }
    }
    char *t = make_token(p, n >= 4 ? n - 4 : n);
    check_text(t);
    free(t);
    free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_cstr(data, size);
    check_text(text);
    check_repaired(text);
    free(text);
    char *raw = make_token(data, size);
    check_text(raw);
    free(raw);
    return 0;
}

#ifndef AFD_LIBFUZZER
/* Pieces that move the decoder between its branches: prefixes, base32 of both cases, the
 * characters it trims, and ones outside the alphabet. */
static const fuzz_token DICT[] = {
    FUZZ_TOK("afd1:"),    FUZZ_TOK("afd2:"), FUZZ_TOK("afd01:"),   FUZZ_TOK("afd:"),     FUZZ_TOK("AFD1:"),
    FUZZ_TOK("afd1"),     FUZZ_TOK(" "),     FUZZ_TOK("\t"),       FUZZ_TOK("\n"),       FUZZ_TOK("\r\n"),
    FUZZ_TOK("\v"),       FUZZ_TOK("a"),     FUZZ_TOK("q"),        FUZZ_TOK("7"),        FUZZ_TOK("2"),
    FUZZ_TOK("A"),        FUZZ_TOK("Z"),     FUZZ_TOK("aaaaaaaa"), FUZZ_TOK("77777777"), FUZZ_TOK("aaaa"),
    FUZZ_TOK("="),        FUZZ_TOK("1"),     FUZZ_TOK("8"),        FUZZ_TOK("0"),        FUZZ_TOK("\x00"),
    FUZZ_TOK("\xc3\xa9"), FUZZ_TOK("-"),
};

static size_t fuzz_dictionary(const fuzz_token **out)
{
    *out = DICT;
    return sizeof DICT / sizeof DICT[0];
}
#endif
