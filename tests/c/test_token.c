/* test_token.c -- schedules, their description, and the token's encoding and hostile decoding. */
#include "afd.h"
#include "buf.h"
#include "harness.h"
#include "token.h"

#include <ctype.h>

/* A base32 encoder written apart from token.c's, so the tests check the format, not the code. */
static char *ref_base32(const uint8_t *p, size_t len)
{
    static const char abc[] = "abcdefghijklmnopqrstuvwxyz234567";
    char *s = malloc(len * 8 / 5 + 2);
    CHECK(s != NULL);
    size_t n = 0;
    for (size_t bit = 0; bit < len * 8; bit += 5) {
        unsigned v = 0;
        for (size_t b = bit; b < bit + 5; b++) {
            unsigned x = b < len * 8 ? (p[b / 8] >> (7 - b % 8)) & 1 : 0;
            v = v << 1 | x;
        }
        s[n++] = abc[v];
    }
    s[n] = 0;
    return s;
}

/* A token for raw payload bytes: appends the CRC and the prefix, so tests can craft payloads whose
 * checksum is right but whose fields are not. */
static char *ref_token(const uint8_t *payload, size_t len)
{
    afd_buf b;
    afd_buf_init(&b);
    afd_buf_put(&b, payload, len);
    afd_buf_put_u32(&b, afd_crc32(0, payload, len));
    CHECK_EQ_INT(b.err, 0);
    char *body = ref_base32(b.data, b.len);
    char *tok = malloc(strlen(body) + 6);
    CHECK(tok != NULL);
    strcpy(tok, "afd1:");
    strcat(tok, body);
    free(body);
    afd_buf_finish(&b);
    return tok;
}

static void put_header(afd_buf *b, uint8_t version, uint8_t strategy, uint32_t n_delays)
{
    afd_buf_put_u8(b, version);
    afd_buf_put_u8(b, strategy);
    afd_buf_put_u64(b, 42);
    afd_buf_put_u32(b, 3);
    afd_buf_put_u32(b, 100);
    afd_buf_put_u32(b, n_delays);
}

static int decode_buf(afd_buf *b)
{
    CHECK_EQ_INT(b->err, 0);
    char *tok = ref_token(b->data, b->len);
    afd_schedule s;
    int rc = afd_token_decode(&s, tok);
    afd_schedule_finish(&s);
    free(tok);
    afd_buf_finish(b);
    return rc;
}

static int decode_rc(const char *text)
{
    afd_schedule s;
    int rc = afd_token_decode(&s, text);
    if (rc) {
        CHECK_EQ_INT(s.n_delays, 0);
        CHECK(s.delays == NULL);
    }
    afd_schedule_finish(&s);
    return rc;
}

static void check_same(const afd_schedule *a, const afd_schedule *b)
{
    CHECK_EQ_INT(a->strategy, b->strategy);
    CHECK_EQ_U64(a->seed, b->seed);
    CHECK_EQ_U64(a->pct_depth, b->pct_depth);
    CHECK_EQ_U64(a->pct_steps, b->pct_steps);
    CHECK_EQ_U64(a->n_delays, b->n_delays);
    for (uint32_t i = 0; i < a->n_delays; i++) {
        CHECK_EQ_STR(a->delays[i].label, b->delays[i].label);
        CHECK_EQ_U64(a->delays[i].ordinal, b->delays[i].ordinal);
        CHECK_EQ_U64(a->delays[i].cost_ns, b->delays[i].cost_ns);
    }
}

static void roundtrip(const afd_schedule *s)
{
    char *tok = NULL;
    CHECK_EQ_INT(afd_token_encode(s, &tok), 0);
    CHECK(strncmp(tok, AFD_TOKEN_PREFIX, 5) == 0);
    for (const char *c = tok + 5; *c; c++)
        CHECK(strchr("abcdefghijklmnopqrstuvwxyz234567", *c) != NULL);
    afd_schedule back;
    CHECK_EQ_INT(afd_token_decode(&back, tok), 0);
    check_same(s, &back);
    char *again = NULL;
    CHECK_EQ_INT(afd_token_encode(&back, &again), 0);
    CHECK_EQ_STR(again, tok);
    free(again);
    free(tok);
    afd_schedule_finish(&back);
}

/* A valid token with delays, the base of the error and fuzz tests. */
static char *sample_token(void)
{
    afd_schedule s;
    afd_schedule_init(&s);
    s.strategy = AFD_STRAT_PCT;
    s.seed = 0x0123456789abcdefULL;
    s.pct_depth = 3;
    s.pct_steps = 977;
    CHECK_EQ_INT(afd_schedule_add_delay(&s, "main#0", 2, 5000000), 0);
    CHECK_EQ_INT(afd_schedule_add_delay(&s, "worker#12", 0, 1), 0);
    CHECK_EQ_INT(afd_schedule_add_delay(&s, "", 7, UINT64_MAX), 0);
    char *tok = NULL;
    CHECK_EQ_INT(afd_token_encode(&s, &tok), 0);
    afd_schedule_finish(&s);
    return tok;
}

TEST(schedule_init_add_finish)
{
    afd_schedule s;
    afd_schedule_init(&s);
    CHECK_EQ_INT(s.strategy, AFD_STRAT_ZERO);
    CHECK_EQ_U64(s.seed, 0);
    CHECK_EQ_U64(s.n_delays, 0);
    char label[AFD_TOKEN_MAX_LABEL + 2];
    memset(label, 'x', sizeof label - 1);
    label[sizeof label - 1] = 0;
    CHECK_EQ_INT(afd_schedule_add_delay(&s, label, 0, 1), AFD_EINVAL);
    label[AFD_TOKEN_MAX_LABEL] = 0;
    CHECK_EQ_INT(afd_schedule_add_delay(&s, label, 0, 1), 0);
    CHECK_EQ_INT(afd_schedule_add_delay(&s, NULL, 0, 1), AFD_EINVAL);
    char mine[] = "task#1";
    CHECK_EQ_INT(afd_schedule_add_delay(&s, mine, 4, 9), 0);
    mine[0] = 'X'; /* The schedule keeps its own copy. */
    CHECK_EQ_STR(s.delays[1].label, "task#1");
    CHECK_EQ_U64(s.delays[1].ordinal, 4);
    CHECK_EQ_U64(s.delays[1].cost_ns, 9);
    while (s.n_delays < AFD_TOKEN_MAX_DELAYS)
        CHECK_EQ_INT(afd_schedule_add_delay(&s, "t", s.n_delays, 1), 0);
    CHECK_EQ_INT(afd_schedule_add_delay(&s, "t", 0, 1), AFD_EFULL);
    CHECK_EQ_U64(s.n_delays, AFD_TOKEN_MAX_DELAYS);
    roundtrip(&s); /* The largest count with a label of the largest length still encodes. */
    afd_schedule_finish(&s);
    CHECK_EQ_U64(s.n_delays, 0);
    CHECK(s.delays == NULL);
    afd_schedule_finish(&s);
    afd_schedule_finish(NULL);
}

TEST(schedule_copy_is_deep)
{
    afd_schedule a, b;
    afd_schedule_init(&a);
    a.strategy = AFD_STRAT_JITTER;
    a.seed = 99;
    a.pct_depth = 4;
    a.pct_steps = 12;
    CHECK_EQ_INT(afd_schedule_add_delay(&a, "one", 1, 10), 0);
    CHECK_EQ_INT(afd_schedule_add_delay(&a, "two", 2, 20), 0);
    CHECK_EQ_INT(afd_schedule_copy(&b, &a), 0);
    check_same(&a, &b);
    CHECK(a.delays != b.delays);
    CHECK(a.delays[0].label != b.delays[0].label);
    afd_schedule_finish(&a);
    CHECK_EQ_STR(b.delays[1].label, "two");
    afd_schedule_finish(&b);

    afd_schedule_init(&a);
    CHECK_EQ_INT(afd_schedule_copy(&b, &a), 0);
    CHECK_EQ_U64(b.n_delays, 0);
    CHECK(b.delays == NULL);
    afd_schedule_finish(&b);
}

TEST(strategy_names)
{
    CHECK_EQ_STR(afd_strategy_name(AFD_STRAT_ZERO), "zero");
    CHECK_EQ_STR(afd_strategy_name(AFD_STRAT_JITTER), "jitter");
    CHECK_EQ_STR(afd_strategy_name(AFD_STRAT_PCT), "pct");
    CHECK(afd_strategy_name(99) != NULL);
    CHECK(afd_strategy_name(-1) != NULL);
    CHECK_EQ_INT(afd_strategy_parse("zero"), AFD_STRAT_ZERO);
    CHECK_EQ_INT(afd_strategy_parse("jitter"), AFD_STRAT_JITTER);
    CHECK_EQ_INT(afd_strategy_parse("pct"), AFD_STRAT_PCT);
    CHECK_EQ_INT(afd_strategy_parse("PCT"), AFD_EINVAL);
    CHECK_EQ_INT(afd_strategy_parse(""), AFD_EINVAL);
    CHECK_EQ_INT(afd_strategy_parse("pctx"), AFD_EINVAL);
    CHECK_EQ_INT(afd_strategy_parse(NULL), AFD_EINVAL);
}

TEST(describe)
{
    afd_schedule s;
    afd_schedule_init(&s);
    char *d = afd_schedule_describe(&s);
    CHECK_EQ_STR(d, "zero");
    free(d);
    CHECK_EQ_INT(afd_schedule_add_delay(&s, "a", 0, 1), 0);
    d = afd_schedule_describe(&s);
    CHECK_EQ_STR(d, "zero + 1 delay");
    free(d);
    CHECK_EQ_INT(afd_schedule_add_delay(&s, "b", 0, 1), 0);
    d = afd_schedule_describe(&s);
    CHECK_EQ_STR(d, "zero + 2 delays");
    free(d);
    afd_schedule_finish(&s);

    s.strategy = AFD_STRAT_PCT;
    s.seed = 42;
    s.pct_depth = 3;
    s.pct_steps = 100;
    d = afd_schedule_describe(&s);
    CHECK_EQ_STR(d, "pct(seed=42, d=3)");
    free(d);
    s.strategy = AFD_STRAT_JITTER;
    s.seed = UINT64_MAX;
    d = afd_schedule_describe(&s);
    CHECK_EQ_STR(d, "jitter(seed=18446744073709551615)");
    free(d);
    CHECK(afd_schedule_describe(NULL) == NULL);
}

TEST(roundtrip_every_strategy_no_delays)
{
    for (int strat = 0; strat < AFD_STRAT__COUNT; strat++) {
        afd_schedule s;
        afd_schedule_init(&s);
        s.strategy = (uint8_t)strat;
        s.seed = 0xfedcba9876543210ULL + (uint64_t)strat;
        s.pct_depth = (uint32_t)strat * 7;
        s.pct_steps = UINT32_MAX - (uint32_t)strat;
        roundtrip(&s);
        s.seed = 0;
        s.pct_depth = 0;
        s.pct_steps = 0;
        roundtrip(&s);
    }
}

TEST(roundtrip_one_and_many_delays)
{
    for (int strat = 0; strat < AFD_STRAT__COUNT; strat++) {
        afd_schedule s;
        afd_schedule_init(&s);
        s.strategy = (uint8_t)strat;
        s.seed = 7;
        s.pct_depth = 2;
        s.pct_steps = 50;
        CHECK_EQ_INT(afd_schedule_add_delay(&s, "coro.<locals>.inner#3", 17, 1234567), 0);
        roundtrip(&s);
        for (uint32_t i = 0; i < 300; i++) {
            char label[64];
            snprintf(label, sizeof label, "mod.Class.method#%u", i * 7919u);
            CHECK_EQ_INT(afd_schedule_add_delay(&s, label, i, (uint64_t)i << 33), 0);
        }
        CHECK_EQ_INT(afd_schedule_add_delay(&s, "", UINT32_MAX, UINT64_MAX), 0);
        CHECK_EQ_INT(afd_schedule_add_delay(&s, "caf\xc3\xa9 \t\"quoted\"", 0, 0), 0);
        roundtrip(&s);
        afd_schedule_finish(&s);
    }
}

/* pct(seed=42, d=3, steps=100) + ("main#0", 2, 5 ms), built with Python's struct, zlib.crc32 and
 * base64.b32encode to pin the format independently of this code. */
#define GOLDEN_PCT "afd1:aebcuaaaaaaaaaaaamaaaadeaaaaaaiaaaaamaaaabwwc2loemyaeaaaabaewtaaaaaaaafncu3io"

TEST(golden_token)
{
    afd_schedule s;
    afd_schedule_init(&s);
    char *tok = NULL;
    CHECK_EQ_INT(afd_token_encode(&s, &tok), 0);
    CHECK_EQ_STR(tok, "afd1:aeaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaacbvibx4");
    free(tok);
    s.strategy = AFD_STRAT_PCT;
    s.seed = 42;
    s.pct_depth = 3;
    s.pct_steps = 100;
    CHECK_EQ_INT(afd_schedule_add_delay(&s, "main#0", 2, 5000000), 0);
    CHECK_EQ_INT(afd_token_encode(&s, &tok), 0);
    CHECK_EQ_STR(tok, GOLDEN_PCT);
    free(tok);
    afd_schedule_finish(&s);

    afd_buf b;
    afd_buf_init(&b);
    put_header(&b, 1, AFD_STRAT_PCT, 1);
    afd_buf_put_str(&b, "main#0", 6);
    afd_buf_put_u32(&b, 2);
    afd_buf_put_u64(&b, 5000000);
    char *ref = ref_token(b.data, b.len);
    CHECK_EQ_STR(ref, GOLDEN_PCT);
    free(ref);
    afd_buf_finish(&b);
}

TEST(encode_refuses_what_decode_would)
{
    afd_schedule s;
    afd_schedule_init(&s);
    char *tok = (char *)"sentinel";
    s.strategy = AFD_STRAT__COUNT;
    CHECK_EQ_INT(afd_token_encode(&s, &tok), AFD_EINVAL);
    CHECK(tok == NULL);
    s.strategy = AFD_STRAT_ZERO;
    s.n_delays = 1; /* Claims a delay but has no array. */
    CHECK_EQ_INT(afd_token_encode(&s, &tok), AFD_EINVAL);
    s.n_delays = 0;
    CHECK_EQ_INT(afd_token_encode(NULL, &tok), AFD_EINVAL);
    CHECK_EQ_INT(afd_token_encode(&s, NULL), AFD_EINVAL);
}

TEST(decode_prefix_errors)
{
    CHECK_EQ_INT(decode_rc(""), AFD_ETOKEN_PREFIX);
    CHECK_EQ_INT(decode_rc("   \n\t"), AFD_ETOKEN_PREFIX);
    CHECK_EQ_INT(decode_rc("xyz"), AFD_ETOKEN_PREFIX);
    CHECK_EQ_INT(decode_rc("xyz1:aeaaaaaa"), AFD_ETOKEN_PREFIX);
    CHECK_EQ_INT(decode_rc("af"), AFD_ETOKEN_PREFIX);
    CHECK_EQ_INT(decode_rc("afd"), AFD_ETOKEN_PREFIX);
    CHECK_EQ_INT(decode_rc("afd:aeaa"), AFD_ETOKEN_PREFIX);
    CHECK_EQ_INT(decode_rc("afd1"), AFD_ETOKEN_PREFIX);
    CHECK_EQ_INT(decode_rc("afd12"), AFD_ETOKEN_PREFIX);
    CHECK_EQ_INT(decode_rc("afdx:aeaa"), AFD_ETOKEN_PREFIX);
    CHECK_EQ_INT(decode_rc("afd1;aeaa"), AFD_ETOKEN_PREFIX);
    CHECK_EQ_INT(decode_rc("afd 1:aeaa"), AFD_ETOKEN_PREFIX);
    /* The prefix is matched exactly; only the base32 body is case-insensitive. */
    CHECK_EQ_INT(decode_rc("AFD1:AEAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAACBVIBX4"), AFD_ETOKEN_PREFIX);
    afd_schedule s;
    CHECK_EQ_INT(afd_token_decode(&s, NULL), AFD_EINVAL);
    CHECK_EQ_INT(afd_token_decode(NULL, "afd1:"), AFD_EINVAL);
}

TEST(decode_version_errors)
{
    CHECK_EQ_INT(decode_rc("afd2:aeaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaacbvibx4"), AFD_ETOKEN_VERSION);
    CHECK_EQ_INT(decode_rc("afd0:"), AFD_ETOKEN_VERSION);
    CHECK_EQ_INT(decode_rc("afd10:aeaa"), AFD_ETOKEN_VERSION);
    CHECK_EQ_INT(decode_rc("afd01:aeaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaacbvibx4"), AFD_ETOKEN_VERSION);
    CHECK_EQ_INT(decode_rc("afd99999999999999999999999999999999:"), AFD_ETOKEN_VERSION);
    CHECK_EQ_INT(decode_rc("  afd2:!!!  "), AFD_ETOKEN_VERSION);
}

TEST(decode_checksum_errors)
{
    char *tok = sample_token();
    CHECK_EQ_INT(decode_rc(tok), 0);
    size_t len = strlen(tok);
    /* Every single-character substitution inside the body is caught. A change in the final
     * character can also leave non-zero padding bits, which is reported as corrupt instead. */
    for (size_t i = 5; i < len; i++) {
        char saved = tok[i];
        tok[i] = saved == 'a' ? 'b' : 'a';
        int rc = decode_rc(tok);
        if (i + 1 < len)
            CHECK_EQ_INT(rc, AFD_ETOKEN_CHECKSUM);
        else
            CHECK(rc == AFD_ETOKEN_CHECKSUM || rc == AFD_ETOKEN_CORRUPT);
        tok[i] = saved;
    }
    /* Two swapped neighbours. */
    size_t i = 12;
    while (tok[i] == tok[i + 1])
        i++;
    char t = tok[i];
    tok[i] = tok[i + 1];
    tok[i + 1] = t;
    CHECK_EQ_INT(decode_rc(tok), AFD_ETOKEN_CHECKSUM);
    free(tok);
}

TEST(decode_truncation)
{
    char *tok = sample_token();
    size_t len = strlen(tok);
    /* Cutting the text anywhere either leaves an impossible base32 length (corrupt) or moves the
     * checksum onto other bytes (checksum); it never decodes. */
    int n_checksum = 0, n_corrupt = 0;
    for (size_t cut = 5; cut < len; cut++) {
        char saved = tok[cut];
        tok[cut] = 0;
        int rc = decode_rc(tok);
        CHECK(rc == AFD_ETOKEN_CHECKSUM || rc == AFD_ETOKEN_CORRUPT);
        n_checksum += rc == AFD_ETOKEN_CHECKSUM;
        n_corrupt += rc == AFD_ETOKEN_CORRUPT;
        tok[cut] = saved;
    }
    CHECK(n_checksum > 0);
    CHECK(n_corrupt > 0);
    CHECK_EQ_INT(decode_rc("afd1:"), AFD_ETOKEN_CORRUPT);
    CHECK_EQ_INT(decode_rc("afd1:ae"), AFD_ETOKEN_CORRUPT); /* One byte: no room for a CRC. */
    /* Four zero bytes are the valid CRC of an empty payload, which lacks every field. */
    CHECK_EQ_INT(decode_rc("afd1:aaaaaaa"), AFD_ETOKEN_CORRUPT);
    CHECK_EQ_INT(decode_rc("afd1:aeaaaaa"), AFD_ETOKEN_CHECKSUM);
    free(tok);

    /* A payload cut inside its fields but with a valid checksum is corrupt. */
    afd_buf b;
    afd_buf_init(&b);
    put_header(&b, 1, AFD_STRAT_ZERO, 0);
    afd_buf full = b;
    for (size_t cut = 0; cut < full.len; cut++) {
        afd_buf c;
        afd_buf_init(&c);
        afd_buf_put(&c, full.data, cut);
        CHECK_EQ_INT(decode_buf(&c), AFD_ETOKEN_CORRUPT);
    }
    /* Enough bytes to pass the delay-count bound, but the cost is cut in half. */
    afd_buf_init(&b);
    put_header(&b, 1, AFD_STRAT_ZERO, 1);
    afd_buf_put_str(&b, "label", 5);
    afd_buf_put_u32(&b, 1);
    afd_buf_put_u32(&b, 1);
    CHECK_EQ_INT(decode_buf(&b), AFD_ETOKEN_CORRUPT);
    afd_buf_finish(&full);
}

TEST(decode_trailing_garbage)
{
    char *tok = sample_token();
    size_t len = strlen(tok);
    char *longer = malloc(len + 16);
    CHECK(longer != NULL);
    const char *tails[] = {"!", "=", "====", "a", "aa", "aaaaaaaa", "q", "x y", "\x01"};
    for (size_t i = 0; i < sizeof tails / sizeof tails[0]; i++) {
        snprintf(longer, len + 16, "%s%s", tok, tails[i]);
        int rc = decode_rc(longer);
        CHECK(rc == AFD_ETOKEN_CHECKSUM || rc == AFD_ETOKEN_CORRUPT);
    }
    snprintf(longer, len + 16, "%s!", tok);
    CHECK_EQ_INT(decode_rc(longer), AFD_ETOKEN_CORRUPT);
    free(longer);
    free(tok);

    /* Extra payload bytes after the last field, under a valid checksum. */
    afd_buf b;
    afd_buf_init(&b);
    put_header(&b, 1, AFD_STRAT_JITTER, 0);
    afd_buf_put_u8(&b, 0);
    CHECK_EQ_INT(decode_buf(&b), AFD_ETOKEN_CORRUPT);
    afd_buf_init(&b);
    put_header(&b, 1, AFD_STRAT_JITTER, 1);
    afd_buf_put_str(&b, "x", 1);
    afd_buf_put_u32(&b, 0);
    afd_buf_put_u64(&b, 0);
    afd_buf_put_u32(&b, 0);
    CHECK_EQ_INT(decode_buf(&b), AFD_ETOKEN_CORRUPT);
}

TEST(decode_bad_base32)
{
    const char *good = "afd1:aeaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaacbvibx4";
    CHECK_EQ_INT(decode_rc(good), 0);
    char tok[64];
    const char bad[] = {'1', '8', '9',  '0', '=', '-',    '_',    '+',
                        '/', ' ', '\t', '.', '~', '\x7f', '\x80', '\xff'};
    for (size_t i = 0; i < sizeof bad; i++) {
        strcpy(tok, good);
        tok[20] = bad[i];
        CHECK_EQ_INT(decode_rc(tok), AFD_ETOKEN_CORRUPT);
    }
    /* This 26-byte payload is 208 bits: 42 characters, the last carrying 2 unused bits. */
    strcpy(tok, good);
    size_t len = strlen(tok);
    CHECK_EQ_INT(len - 5, 42);
    char last = tok[len - 1];
    int v = last >= 'a' ? last - 'a' : last - '2' + 26;
    tok[len - 1] = "abcdefghijklmnopqrstuvwxyz234567"[v | 1]; /* A non-zero unused bit. */
    CHECK_EQ_INT(decode_rc(tok), AFD_ETOKEN_CORRUPT);
    /* Lengths that no byte count encodes to (1, 3 or 6 mod 8) are corrupt. */
    strcpy(tok, good);
    strcat(tok, "a");
    CHECK_EQ_INT(decode_rc(tok), AFD_ETOKEN_CORRUPT);
    /* Padding is not part of the format. */
    strcpy(tok, good);
    strcat(tok, "======");
    CHECK_EQ_INT(decode_rc(tok), AFD_ETOKEN_CORRUPT);
}

TEST(decode_bad_fields)
{
    afd_buf b;
    afd_buf_init(&b);
    put_header(&b, 2, AFD_STRAT_ZERO, 0); /* payload version */
    CHECK_EQ_INT(decode_buf(&b), AFD_ETOKEN_CORRUPT);
    afd_buf_init(&b);
    put_header(&b, 0, AFD_STRAT_ZERO, 0);
    CHECK_EQ_INT(decode_buf(&b), AFD_ETOKEN_CORRUPT);
    afd_buf_init(&b);
    put_header(&b, 1, AFD_STRAT__COUNT, 0); /* unknown strategy */
    CHECK_EQ_INT(decode_buf(&b), AFD_ETOKEN_CORRUPT);
    afd_buf_init(&b);
    put_header(&b, 1, 255, 0);
    CHECK_EQ_INT(decode_buf(&b), AFD_ETOKEN_CORRUPT);

    /* Too many delays, even with the bytes to back them. */
    afd_buf_init(&b);
    put_header(&b, 1, AFD_STRAT_ZERO, AFD_TOKEN_MAX_DELAYS + 1);
    for (int i = 0; i < AFD_TOKEN_MAX_DELAYS + 1; i++) {
        afd_buf_put_str(&b, "t", 1);
        afd_buf_put_u32(&b, (uint32_t)i);
        afd_buf_put_u64(&b, 1);
    }
    CHECK_EQ_INT(decode_buf(&b), AFD_ETOKEN_CORRUPT);
    /* A huge count without the bytes. */
    afd_buf_init(&b);
    put_header(&b, 1, AFD_STRAT_ZERO, UINT32_MAX);
    CHECK_EQ_INT(decode_buf(&b), AFD_ETOKEN_CORRUPT);
    /* A count larger than the delays present. */
    afd_buf_init(&b);
    put_header(&b, 1, AFD_STRAT_ZERO, 2);
    afd_buf_put_str(&b, "abcdefghijklmnop", 16);
    afd_buf_put_u32(&b, 0);
    afd_buf_put_u64(&b, 1);
    CHECK_EQ_INT(decode_buf(&b), AFD_ETOKEN_CORRUPT);

    /* Labels: the longest allowed decodes, one byte more does not. */
    char label[AFD_TOKEN_MAX_LABEL + 1];
    memset(label, 'q', sizeof label);
    afd_buf_init(&b);
    put_header(&b, 1, AFD_STRAT_ZERO, 1);
    afd_buf_put_str(&b, label, AFD_TOKEN_MAX_LABEL);
    afd_buf_put_u32(&b, 0);
    afd_buf_put_u64(&b, 1);
    CHECK_EQ_INT(decode_buf(&b), 0);
    afd_buf_init(&b);
    put_header(&b, 1, AFD_STRAT_ZERO, 1);
    afd_buf_put_str(&b, label, AFD_TOKEN_MAX_LABEL + 1);
    afd_buf_put_u32(&b, 0);
    afd_buf_put_u64(&b, 1);
    CHECK_EQ_INT(decode_buf(&b), AFD_ETOKEN_CORRUPT);
    /* A label length pointing past the end. */
    afd_buf_init(&b);
    put_header(&b, 1, AFD_STRAT_ZERO, 1);
    afd_buf_put_u32(&b, 100);
    afd_buf_put_u32(&b, 0);
    afd_buf_put_u64(&b, 1);
    CHECK_EQ_INT(decode_buf(&b), AFD_ETOKEN_CORRUPT);
    /* An embedded NUL would not survive the C string, so it is refused. */
    afd_buf_init(&b);
    put_header(&b, 1, AFD_STRAT_ZERO, 1);
    afd_buf_put_str(&b, "a\0b", 3);
    afd_buf_put_u32(&b, 0);
    afd_buf_put_u64(&b, 1);
    CHECK_EQ_INT(decode_buf(&b), AFD_ETOKEN_CORRUPT);
    /* A payload too short to hold a checksum. */
    CHECK_EQ_INT(decode_rc("afd1:aeaa"), AFD_ETOKEN_CORRUPT);
}

TEST(decode_whitespace_and_case)
{
    char *tok = sample_token();
    afd_schedule ref;
    CHECK_EQ_INT(afd_token_decode(&ref, tok), 0);
    size_t len = strlen(tok);
    char *text = malloc(len + 16);
    CHECK(text != NULL);

    snprintf(text, len + 16, " \t\r\n%s\n\r\t \v\f", tok);
    afd_schedule s;
    CHECK_EQ_INT(afd_token_decode(&s, text), 0);
    check_same(&ref, &s);
    afd_schedule_finish(&s);

    /* Whitespace inside the token is not ignored. */
    snprintf(text, len + 16, "%.10s %s", tok, tok + 10);
    CHECK_EQ_INT(decode_rc(text), AFD_ETOKEN_CORRUPT);
    snprintf(text, len + 16, "afd1: %s", tok + 5);
    CHECK_EQ_INT(decode_rc(text), AFD_ETOKEN_CORRUPT);

    strcpy(text, tok);
    for (size_t i = 5; i < len; i++)
        text[i] = (char)toupper((unsigned char)text[i]);
    CHECK_EQ_INT(afd_token_decode(&s, text), 0);
    check_same(&ref, &s);
    afd_schedule_finish(&s);
    for (size_t i = 5; i < len; i += 2) /* Mixed case. */
        text[i] = (char)tolower((unsigned char)text[i]);
    CHECK_EQ_INT(afd_token_decode(&s, text), 0);
    check_same(&ref, &s);
    afd_schedule_finish(&s);

    afd_schedule_finish(&ref);
    free(text);
    free(tok);
}

TEST(decode_error_leaves_schedule_empty)
{
    afd_schedule s;
    memset(&s, 0xab, sizeof s); /* decode initializes; garbage in must not be freed. */
    CHECK_EQ_INT(afd_token_decode(&s, "afd1:zzzz"), AFD_ETOKEN_CORRUPT);
    CHECK_EQ_U64(s.n_delays, 0);
    CHECK(s.delays == NULL);
    CHECK_EQ_U64(s.seed, 0);
    afd_schedule_finish(&s);
}

/* xorshift for the fuzz loops: the test's own stream, unrelated to the code under test. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* The canonical form of a text that decoded: trimmed, base32 letters in lowercase. */
static char *normalized(const char *text)
{
    while (*text && strchr(" \t\r\n\v\f", *text))
        text++;
    size_t len = strlen(text);
    while (len && strchr(" \t\r\n\v\f", text[len - 1]))
        len--;
    char *s = malloc(len + 1);
    CHECK(s != NULL);
    for (size_t i = 0; i < len; i++)
        s[i] = i >= 5 ? (char)tolower((unsigned char)text[i]) : text[i];
    s[len] = 0;
    return s;
}

/* Decodes text; on success the schedule must re-encode to the canonical form of the text. */
static int fuzz_one(const char *text)
{
    afd_schedule s;
    int rc = afd_token_decode(&s, text);
    CHECK(rc <= 0);
    if (rc == 0) {
        char *again = NULL;
        CHECK_EQ_INT(afd_token_encode(&s, &again), 0);
        char *norm = normalized(text);
        CHECK_EQ_STR(again, norm);
        free(norm);
        free(again);
    } else {
        CHECK(rc == AFD_ETOKEN_PREFIX || rc == AFD_ETOKEN_VERSION || rc == AFD_ETOKEN_CHECKSUM ||
              rc == AFD_ETOKEN_CORRUPT);
        CHECK_EQ_U64(s.n_delays, 0);
    }
    afd_schedule_finish(&s);
    return rc;
}

TEST(fuzz_text_mutations)
{
    static const char pool[] = "abcdefghijklmnopqrstuvwxyz234567ABCXYZ0189:= \t\n!afd\x80\xff";
    char *tok = sample_token();
    size_t len = strlen(tok);
    char *buf = malloc(2 * len + 64);
    CHECK(buf != NULL);
    int ok = 0;
    for (int iter = 0; iter < 60000; iter++) {
        strcpy(buf, tok);
        size_t n = len;
        int edits = 1 + (int)(rnd() % 4);
        for (int e = 0; e < edits; e++) {
            size_t at = n ? rnd() % n : 0;
            char c = pool[rnd() % (sizeof pool - 1)];
            switch (rnd() % 6) {
            case 0: /* replace */
                if (n)
                    buf[at] = c;
                break;
            case 1: /* delete */
                if (n) {
                    memmove(buf + at, buf + at + 1, n - at);
                    n--;
                }
                break;
            case 2: /* insert */
                if (n < 2 * len + 32) {
                    memmove(buf + at + 1, buf + at, n - at + 1);
                    buf[at] = c;
                    n++;
                }
                break;
            case 3: /* truncate */
                buf[at] = 0;
                n = at;
                break;
            case 4: /* flip one bit */
                if (n)
                    buf[at] = (char)(buf[at] ^ (1 << (rnd() % 7)));
                break;
            default: { /* change case */
                unsigned char u = (unsigned char)buf[at];
                if (n)
                    buf[at] = (char)(isupper(u) ? tolower(u) : toupper(u));
                break;
            }
            }
            buf[n] = 0;
        }
        buf[n] = 0;
        if (strlen(buf) != n) /* A bit flip made a NUL: the text just ends there. */
            n = strlen(buf);
        ok += fuzz_one(buf) == 0;
    }
    /* Case changes in the body leave valid tokens, so some mutants must decode. */
    CHECK(ok > 0);
    free(buf);
    free(tok);
}

TEST(fuzz_payloads_with_valid_checksum)
{
    /* Random mutations of a valid payload, re-sealed with a correct CRC, so the field parser sees
     * them rather than the checksum check. */
    afd_buf base;
    afd_buf_init(&base);
    put_header(&base, 1, AFD_STRAT_PCT, 3);
    afd_buf_put_str(&base, "main#0", 6);
    afd_buf_put_u32(&base, 2);
    afd_buf_put_u64(&base, 5000000);
    afd_buf_put_str(&base, "", 0);
    afd_buf_put_u32(&base, 0);
    afd_buf_put_u64(&base, 1);
    afd_buf_put_str(&base, "w#1", 3);
    afd_buf_put_u32(&base, 9);
    afd_buf_put_u64(&base, 3);
    CHECK_EQ_INT(base.err, 0);
    uint8_t *p = malloc(base.len + 64);
    CHECK(p != NULL);
    int ok = 0, corrupt = 0;
    for (int iter = 0; iter < 30000; iter++) {
        memcpy(p, base.data, base.len);
        size_t n = base.len;
        int edits = 1 + (int)(rnd() % 3);
        for (int e = 0; e < edits; e++) {
            size_t at = rnd() % n;
            switch (rnd() % 4) {
            case 0:
                p[at] = (uint8_t)rnd();
                break;
            case 1: /* small values are where the bounds are */
                p[at] = (uint8_t)(rnd() % 4);
                break;
            case 2:
                n = at;
                break;
            default:
                if (n < base.len + 60)
                    p[n++] = (uint8_t)rnd();
                break;
            }
            if (n == 0)
                n = 1;
        }
        char *tok = ref_token(p, n);
        int rc = fuzz_one(tok);
        CHECK(rc == 0 || rc == AFD_ETOKEN_CORRUPT);
        ok += rc == 0;
        corrupt += rc == AFD_ETOKEN_CORRUPT;
        free(tok);
    }
    CHECK(ok > 0);
    CHECK(corrupt > 0);
    free(p);
    afd_buf_finish(&base);
}

/* Version 2 carries the flags; a schedule without them keeps its version-1 text. */
TEST(flags_roundtrip_and_version_one_unchanged)
{
    afd_schedule s, d;
    afd_schedule_init(&s);
    s.strategy = AFD_STRAT_PCT;
    s.seed = 42;
    s.pct_depth = 3;
    s.pct_steps = 100;
    CHECK_EQ_INT(afd_schedule_add_delay(&s, "main#0", 2, 5000000), 0);
    char *v1 = NULL, *v2 = NULL, *again = NULL;
    CHECK_EQ_INT(afd_token_encode(&s, &v1), 0);
    s.flags = AFD_SCHED_BELOW_DEADLINES;
    CHECK_EQ_INT(afd_token_encode(&s, &v2), 0);
    CHECK(strncmp(v2, AFD_TOKEN_PREFIX, 5) == 0);
    CHECK(strcmp(v1, v2) != 0);
    CHECK_EQ_INT(afd_token_decode(&d, v2), 0);
    CHECK_EQ_INT(d.flags, AFD_SCHED_BELOW_DEADLINES);
    CHECK_EQ_INT(d.strategy, AFD_STRAT_PCT);
    CHECK_EQ_U64(d.n_delays, 1);
    CHECK_EQ_U64(d.delays[0].cost_ns, 5000000);
    CHECK_EQ_INT(afd_token_encode(&d, &again), 0);
    CHECK_EQ_STR(again, v2);
    char *desc = afd_schedule_describe(&d);
    CHECK_EQ_STR(desc, "pct(seed=42, d=3) + 1 delay, below deadlines");
    free(desc);
    afd_schedule copy;
    CHECK_EQ_INT(afd_schedule_copy(&copy, &d), 0);
    CHECK_EQ_INT(copy.flags, AFD_SCHED_BELOW_DEADLINES);
    afd_schedule_finish(&copy);
    afd_schedule_finish(&d);
    CHECK_EQ_INT(afd_token_decode(&d, v1), 0);
    CHECK_EQ_INT(d.flags, 0);
    afd_schedule_finish(&d);
    /* An unknown flag cannot be encoded. */
    s.flags = 0x80;
    char *bad = NULL;
    CHECK_EQ_INT(afd_token_encode(&s, &bad), AFD_EINVAL);
    CHECK(bad == NULL);
    afd_schedule_finish(&s);
    free(v1);
    free(v2);
    free(again);
}

static void put_v2_header(afd_buf *b, uint8_t flags)
{
    afd_buf_put_u8(b, 2);
    afd_buf_put_u8(b, AFD_STRAT_JITTER);
    afd_buf_put_u64(b, 42);
    afd_buf_put_u32(b, 3);
    afd_buf_put_u32(b, 100);
    afd_buf_put_u8(b, flags);
    afd_buf_put_u32(b, 0);
}

TEST(decode_version_two_fields)
{
    afd_buf b;
    afd_buf_init(&b);
    put_v2_header(&b, AFD_SCHED_BELOW_DEADLINES);
    CHECK_EQ_INT(decode_buf(&b), 0);
    afd_buf_init(&b);
    put_v2_header(&b, 0); /* would have been written as version 1: not canonical */
    CHECK_EQ_INT(decode_buf(&b), AFD_ETOKEN_CORRUPT);
    afd_buf_init(&b);
    put_v2_header(&b, 0x81); /* an unknown bit */
    CHECK_EQ_INT(decode_buf(&b), AFD_ETOKEN_CORRUPT);
    afd_buf_init(&b);
    put_header(&b, 2, AFD_STRAT_JITTER, 0); /* no flags byte: one byte short */
    CHECK_EQ_INT(decode_buf(&b), AFD_ETOKEN_CORRUPT);
    afd_buf_init(&b);
    put_header(&b, 3, AFD_STRAT_JITTER, 0);
    CHECK_EQ_INT(decode_buf(&b), AFD_ETOKEN_CORRUPT);
}

int main(void)
{
    RUN_TESTS("token", T(flags_roundtrip_and_version_one_unchanged), T(decode_version_two_fields),
              T(schedule_init_add_finish), T(schedule_copy_is_deep), T(strategy_names), T(describe),
              T(roundtrip_every_strategy_no_delays), T(roundtrip_one_and_many_delays), T(golden_token),
              T(encode_refuses_what_decode_would), T(decode_prefix_errors), T(decode_version_errors),
              T(decode_checksum_errors), T(decode_truncation), T(decode_trailing_garbage),
              T(decode_bad_base32), T(decode_bad_fields), T(decode_whitespace_and_case),
              T(decode_error_leaves_schedule_empty), T(fuzz_text_mutations),
              T(fuzz_payloads_with_valid_checksum));
}
