/* test_text.c -- UTF-8 validation, the JSON and HTML escapers, bounded file reads, array growth.
 *
 * The expected strings were produced by the escapers each of these replaced (engine/out.c's JSON
 * writer, report.c's HTML writer, pyscan.c's cleaner), so a change in any output byte fails here. */
#include "afd.h"
#include "buf.h"
#include "fileio.h"
#include "harness.h"
#include "text.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* An independent decoder: the code point arithmetic of the Unicode standard's table 3-7, to check
 * afd_utf8_len's byte-range tests against. */
static size_t ref_utf8_len(const unsigned char *p, size_t n)
{
    if (p[0] < 0x80)
        return 1;
    size_t len = (p[0] & 0xe0) == 0xc0 ? 2 : (p[0] & 0xf0) == 0xe0 ? 3 : (p[0] & 0xf8) == 0xf0 ? 4 : 0;
    if (len == 0 || n < len)
        return 0;
    uint32_t cp = p[0] & (0x7f >> len);
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[i] & 0x3f);
    }
    static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

/* The escaped form of n bytes as a NUL-terminated string (the buffer keeps data[len] 0). */
static char *json_of(const char *s, size_t n)
{
    static afd_buf b;
    afd_buf_finish(&b);
    afd_json_strn(&b, s, n);
    CHECK_EQ_INT(b.err, 0);
    return (char *)b.data;
}

static char *html_of(const char *s, size_t n)
{
    static afd_buf b;
    afd_buf_finish(&b);
    afd_buf_init(&b);
    afd_html_strn(&b, s, n);
    CHECK_EQ_INT(b.err, 0);
    return b.data ? (char *)b.data : "";
}

static char *clean_of(const char *s, size_t n, const char *rep, int flags)
{
    static afd_buf b;
    afd_buf_finish(&b);
    afd_buf_init(&b);
    afd_utf8_clean(&b, s, n, rep, flags);
    CHECK_EQ_INT(b.err, 0);
    return b.data ? (char *)b.data : "";
}

#define S(lit) lit, sizeof lit - 1

TEST(utf8_len_ascii_and_boundaries)
{
    CHECK_EQ_INT(afd_utf8_len("\0", 1), 1);
    CHECK_EQ_INT(afd_utf8_len("\x7f", 1), 1);
    CHECK_EQ_INT(afd_utf8_len("\xc2\x80", 2), 2);         /* U+0080, the smallest two-byte form */
    CHECK_EQ_INT(afd_utf8_len("\xdf\xbf", 2), 2);         /* U+07FF */
    CHECK_EQ_INT(afd_utf8_len("\xe0\xa0\x80", 3), 3);     /* U+0800 */
    CHECK_EQ_INT(afd_utf8_len("\xe2\x80\xa8", 3), 3);     /* U+2028 LINE SEPARATOR is valid text */
    CHECK_EQ_INT(afd_utf8_len("\xed\x9f\xbf", 3), 3);     /* U+D7FF, just below the surrogates */
    CHECK_EQ_INT(afd_utf8_len("\xee\x80\x80", 3), 3);     /* U+E000, just above */
    CHECK_EQ_INT(afd_utf8_len("\xef\xbf\xbf", 3), 3);     /* U+FFFF */
    CHECK_EQ_INT(afd_utf8_len("\xf0\x90\x80\x80", 4), 4); /* U+10000 */
    CHECK_EQ_INT(afd_utf8_len("\xf4\x8f\xbf\xbf", 4), 4); /* U+10FFFF, the last code point */
}

TEST(utf8_len_refuses_invalid)
{
    CHECK_EQ_INT(afd_utf8_len("\x80", 1), 0);             /* a stray continuation byte */
    CHECK_EQ_INT(afd_utf8_len("\xc0\x80", 2), 0);         /* overlong NUL */
    CHECK_EQ_INT(afd_utf8_len("\xc1\xbf", 2), 0);         /* overlong U+007F */
    CHECK_EQ_INT(afd_utf8_len("\xe0\x9f\xbf", 3), 0);     /* overlong U+07FF */
    CHECK_EQ_INT(afd_utf8_len("\xf0\x8f\xbf\xbf", 4), 0); /* overlong U+FFFF */
    CHECK_EQ_INT(afd_utf8_len("\xed\xa0\x80", 3), 0);     /* U+D800, a surrogate */
    CHECK_EQ_INT(afd_utf8_len("\xed\xbf\xbf", 3), 0);     /* U+DFFF */
    CHECK_EQ_INT(afd_utf8_len("\xf4\x90\x80\x80", 4), 0); /* U+110000 */
    CHECK_EQ_INT(afd_utf8_len("\xf5\x80\x80\x80", 4), 0);
    CHECK_EQ_INT(afd_utf8_len("\xff", 1), 0);
    CHECK_EQ_INT(afd_utf8_len("\xc3\x28", 2), 0); /* the continuation is not one */
    /* A sequence cut by the end of the input is refused, even when the bytes past left are there. */
    CHECK_EQ_INT(afd_utf8_len("\xc3\xa9", 1), 0);
    CHECK_EQ_INT(afd_utf8_len("\xe2\x80\xa8", 2), 0);
    CHECK_EQ_INT(afd_utf8_len("\xf0\x9f\x98\x80", 3), 0);
}

TEST(utf8_len_matches_the_code_point_rules_exhaustively)
{
    unsigned char p[4];
    for (unsigned a = 0; a < 256; a++)
        for (unsigned b = 0; b < 256; b++)
            for (unsigned c = 0; c < 256; c++) {
                p[0] = (unsigned char)a, p[1] = (unsigned char)b, p[2] = (unsigned char)c;
                for (size_t n = 1; n <= 3; n++)
                    if (afd_utf8_len(p, n) != ref_utf8_len(p, n))
                        FAIL_AT("%02x %02x %02x (left %zu): %zu, expected %zu", a, b, c, n,
                                afd_utf8_len(p, n), ref_utf8_len(p, n));
            }
    static const unsigned char last[] = {0x00, 0x7f, 0x80, 0x9f, 0xa0, 0xbf, 0xc0, 0xff};
    for (unsigned a = 0xf0; a < 0x100; a++)
        for (unsigned b = 0; b < 256; b++)
            for (unsigned c = 0; c < 256; c++)
                for (size_t d = 0; d < sizeof last; d++) {
                    p[0] = (unsigned char)a, p[1] = (unsigned char)b, p[2] = (unsigned char)c;
                    p[3] = last[d];
                    if (afd_utf8_len(p, 4) != ref_utf8_len(p, 4))
                        FAIL_AT("%02x %02x %02x %02x: %zu, expected %zu", a, b, c, last[d],
                                afd_utf8_len(p, 4), ref_utf8_len(p, 4));
                }
}

TEST(json_escapes_as_the_documents_do)
{
    CHECK_EQ_STR(json_of(NULL, 0), "\"\"");
    CHECK_EQ_STR(json_of(S("")), "\"\"");
    CHECK_EQ_STR(json_of(S("tests/test_x.py::test_y")), "\"tests/test_x.py::test_y\"");
    CHECK_EQ_STR(json_of(S("say \"hi\" \\ bye")), "\"say \\\"hi\\\" \\\\ bye\"");
    CHECK_EQ_STR(json_of(S("a\nb\tc\rd")), "\"a\\nb\\tc\\u000dd\"");
    CHECK_EQ_STR(json_of(S("nul\0x")), "\"nul\\u0000x\"");
    CHECK_EQ_STR(json_of(S("\x01\x1b[31m\x1f\x7f")), "\"\\u0001\\u001b[31m\\u001f\\u007f\"");
    CHECK_EQ_STR(json_of(S("\b\f")), "\"\\u0008\\u000c\"");
    CHECK_EQ_STR(json_of(S("/")), "\"/\"");
    CHECK_EQ_STR(json_of(S("caf\xc3\xa9 \xe2\x80\xa8 \xf0\x9f\x98\x80")),
                 "\"caf\xc3\xa9 \xe2\x80\xa8 \xf0\x9f\x98\x80\"");
    CHECK_EQ_STR(json_of(S("\xc2\x9b")), "\"\xc2\x9b\""); /* C1 controls are valid JSON text */
    CHECK_EQ_STR(json_of(S("\xff\xc0\x80.")), "\"\\ufffd\\ufffd\\ufffd.\"");
    CHECK_EQ_STR(json_of(S("\xed\xa0\x80")), "\"\\ufffd\\ufffd\\ufffd\"");
    CHECK_EQ_STR(json_of(S("cut \xe2\x80")), "\"cut \\ufffd\\ufffd\"");
    afd_buf b;
    afd_buf_init(&b);
    afd_json_str(&b, "a\"b");
    afd_json_str(&b, NULL);
    CHECK_EQ_STR((char *)b.data, "\"a\\\"b\"\"\"");
    afd_buf_finish(&b);
}

TEST(html_escapes_as_the_reports_do)
{
    CHECK_EQ_STR(html_of(NULL, 0), "");
    CHECK_EQ_STR(html_of(S("<script>alert('x')</script> & \"q\"")),
                 "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;");
    CHECK_EQ_STR(html_of(S("a\nb\tc\rd")), "a\nb\tc\rd");
    CHECK_EQ_STR(html_of(S("nul\0x")), "nul&#x2400;x");
    CHECK_EQ_STR(html_of(S("\x01\x1b\x1f\x7f")), "&#x2401;&#x241b;&#x241f;&#x2421;");
    CHECK_EQ_STR(html_of(S("caf\xc3\xa9 \xe2\x80\xa8")), "caf\xc3\xa9 \xe2\x80\xa8");
    CHECK_EQ_STR(html_of(S("\xff<\xc0\x80")), "\xef\xbf\xbd&lt;\xef\xbf\xbd\xef\xbf\xbd");
    CHECK_EQ_STR(html_of(S("\xed\xa0\x80!")), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd!");
    CHECK_EQ_STR(html_of(S("cut \xf0\x9f\x98")), "cut \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
    /* The inputs of test_report.c's escaping tests. */
    CHECK_EQ_STR(html_of(S("<script>alert(1)</script>\"'</svg>&")),
                 "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&lt;/svg&gt;&amp;");
    CHECK_EQ_STR(html_of(S("</svg><script>x()</script>")), "&lt;/svg&gt;&lt;script&gt;x()&lt;/script&gt;");
    CHECK_EQ_STR(html_of(S("bad\xff\xfe label \"q\"")), "bad\xef\xbf\xbd\xef\xbf\xbd label &quot;q&quot;");
}

TEST(clean_replaces_bad_bytes_one_for_one)
{
    CHECK_EQ_STR(clean_of(NULL, 0, "?", 0), "");
    CHECK_EQ_STR(clean_of(S("ok \xc3\xa9"), "?", 0), "ok \xc3\xa9");
    CHECK_EQ_STR(clean_of(S("a\xff-\xe2\x80"), AFD_UTF8_REPLACEMENT, 0),
                 "a\xef\xbf\xbd-\xef\xbf\xbd\xef\xbf\xbd");
    CHECK_EQ_STR(clean_of(S("tab\tnl\n"), "?", 0), "tab\tnl\n");
    CHECK_EQ_STR(clean_of(S("tab\tnl\n\x7f\xc0\xaf\xe2\x80\xa8"), "?", AFD_UTF8_NO_CONTROLS),
                 "tab?nl???\?\xe2\x80\xa8");
    /* NUL bytes are kept without the flag (a length-delimited string) and replaced with it. */
    afd_buf b;
    afd_buf_init(&b);
    afd_utf8_clean(&b, "a\0b", 3, "?", 0);
    CHECK_EQ_INT(b.len, 3);
    CHECK(memcmp(b.data, "a\0b", 3) == 0);
    afd_buf_finish(&b);
    CHECK_EQ_STR(clean_of("a\0b", 3, "?", AFD_UTF8_NO_CONTROLS), "a?b");
}

static void write_file(const char *path, const char *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    CHECK_EQ_INT(fwrite(data, 1, n, f), n);
    CHECK_EQ_INT(fclose(f), 0);
}

TEST(file_read_limits)
{
    char dir[] = "/tmp/afd_test_text_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[256];
    snprintf(path, sizeof path, "%s/f", dir);
    char *out = (char *)1;
    size_t len = 99;
    CHECK_EQ_INT(afd_file_read(path, 10, &out, &len), AFD_EIO); /* missing */
    CHECK(out == NULL);
    CHECK_EQ_INT(len, 0);

    write_file(path, "", 0);
    CHECK_EQ_INT(afd_file_read(path, 10, &out, &len), 0);
    CHECK_EQ_INT(len, 0);
    CHECK_EQ_STR(out, "");
    free(out);

    write_file(path, "0123456789", 10); /* exactly the limit: accepted */
    CHECK_EQ_INT(afd_file_read(path, 10, &out, &len), 0);
    CHECK_EQ_INT(len, 10);
    CHECK_EQ_STR(out, "0123456789");
    free(out);
    CHECK_EQ_INT(afd_file_read(path, 9, &out, &len), AFD_EFULL); /* one byte over: refused */
    CHECK(out == NULL);
    CHECK_EQ_INT(afd_file_read(path, 0, &out, &len), AFD_EFULL);

    write_file(path, "a\0b", 3); /* NUL bytes are data; the terminator follows them */
    CHECK_EQ_INT(afd_file_read(path, 3, &out, &len), 0);
    CHECK_EQ_INT(len, 3);
    CHECK(memcmp(out, "a\0b", 4) == 0);
    free(out);

    /* Larger than one read chunk, and a limit that falls inside a chunk. */
    size_t big = 200000;
    char *data = malloc(big);
    CHECK(data != NULL);
    for (size_t i = 0; i < big; i++)
        data[i] = (char)('a' + i % 26);
    write_file(path, data, big);
    CHECK_EQ_INT(afd_file_read(path, big, &out, &len), 0);
    CHECK_EQ_INT(len, big);
    CHECK(memcmp(out, data, big) == 0 && out[big] == 0);
    free(out);
    CHECK_EQ_INT(afd_file_read(path, big - 1, &out, &len), AFD_EFULL);
    CHECK_EQ_INT(afd_file_read(path, 100000, &out, &len), AFD_EFULL);
    free(data);

    /* A directory opens but cannot be read: an error, not an empty file. */
    CHECK_EQ_INT(afd_file_read(dir, 10, &out, &len), AFD_EIO);
    CHECK(out == NULL);

    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    CHECK_EQ_INT(afd_file_read_stream(f, big, &out, &len), 0);
    CHECK_EQ_INT(len, big);
    free(out);
    fclose(f);
    unlink(path);
    rmdir(dir);
}

TEST(array_grow_doubles_and_refuses_overflow)
{
    int *v = NULL;
    size_t cap = 0;
    CHECK_EQ_INT(afd_array_grow((void **)&v, &cap, 0, sizeof *v, 16), 0);
    CHECK(v == NULL && cap == 0);
    CHECK_EQ_INT(afd_array_grow((void **)&v, &cap, 1, sizeof *v, 16), 0);
    CHECK_EQ_INT(cap, 16);
    CHECK_EQ_INT(afd_array_grow((void **)&v, &cap, 16, sizeof *v, 16), 0);
    CHECK_EQ_INT(cap, 16);
    CHECK_EQ_INT(afd_array_grow((void **)&v, &cap, 17, sizeof *v, 16), 0);
    CHECK_EQ_INT(cap, 32);
    CHECK_EQ_INT(afd_array_grow((void **)&v, &cap, 100, sizeof *v, 16), 0);
    CHECK_EQ_INT(cap, 128);
    for (int i = 0; i < 100; i++)
        v[i] = i;
    int *keep = v;
    CHECK_EQ_INT(afd_array_grow((void **)&v, &cap, SIZE_MAX / 2, sizeof *v, 16), AFD_ENOMEM);
    CHECK_EQ_INT(afd_array_grow((void **)&v, &cap, SIZE_MAX, 1, 16), AFD_ENOMEM);
    CHECK(v == keep && cap == 128 && v[99] == 99); /* unchanged on failure */
    free(v);
    v = NULL;
    cap = 0;
    CHECK_EQ_INT(afd_array_grow((void **)&v, &cap, 3, sizeof *v, 0), 0); /* first 0: from 1 */
    CHECK_EQ_INT(cap, 4);
    free(v);
}

int main(void)
{
    RUN_TESTS("text", T(utf8_len_ascii_and_boundaries), T(utf8_len_refuses_invalid),
              T(utf8_len_matches_the_code_point_rules_exhaustively), T(json_escapes_as_the_documents_do),
              T(html_escapes_as_the_reports_do), T(clean_replaces_bad_bytes_one_for_one), T(file_read_limits),
              T(array_grow_doubles_and_refuses_overflow));
}
