/* text.c -- UTF-8 validation, JSON and HTML escaping (see text.h).
 *
 * Invariant: the output of every escaper is valid UTF-8 with no raw control byte that its format
 * forbids, whatever the input bytes. The workload is document writing: a few kilobytes to a few
 * megabytes per investigation, mostly ASCII, so the ASCII path is a byte test and a copy. */
#include "text.h"

#include <stdio.h>
#include <string.h>

size_t afd_utf8_len(const void *s, size_t left)
{
    const unsigned char *p = s;
    if (p[0] < 0x80)
        return 1;
    size_t n = p[0] >= 0xc2 && p[0] <= 0xdf   ? 2
               : p[0] >= 0xe0 && p[0] <= 0xef ? 3
               : p[0] >= 0xf0 && p[0] <= 0xf4 ? 4
                                              : 0;
    if (n == 0 || n > left)
        return 0;
    for (size_t i = 1; i < n; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    /* The second byte's range excludes the overlong three- and four-byte forms (E0, F0), the
     * surrogates U+D800..U+DFFF (ED) and code points past U+10FFFF (F4). */
    if ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] >= 0xa0) || (p[0] == 0xf0 && p[1] < 0x90) ||
        (p[0] == 0xf4 && p[1] >= 0x90))
        return 0;
    return n;
}

void afd_utf8_clean(afd_buf *out, const void *s, size_t n, const char *rep, int flags)
{
    const unsigned char *p = s;
    size_t i = 0, start = 0, rep_len = strlen(rep);
    if (n == 0)
        return; /* s may be NULL, and NULL + 0 is undefined */
    while (i < n) {
        int control = p[i] < 0x20 || p[i] == 0x7f;
        size_t k = control && (flags & AFD_UTF8_NO_CONTROLS) ? 0 : afd_utf8_len(p + i, n - i);
        if (k == 0) {
            afd_buf_put(out, p + start, i - start);
            afd_buf_put(out, rep, rep_len);
            start = ++i;
        } else {
            i += k;
        }
    }
    afd_buf_put(out, p + start, n - start);
}

void afd_json_str(afd_buf *out, const char *s)
{
    afd_json_strn(out, s, s ? strlen(s) : 0);
}

void afd_json_strn(afd_buf *out, const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)(s ? s : ""), *end = p + (s ? len : 0);
    afd_buf_put_u8(out, '"');
    while (p < end) {
        unsigned char c = *p;
        if (c == '"' || c == '\\') {
            afd_buf_put_u8(out, '\\');
            afd_buf_put_u8(out, c);
            p++;
        } else if (c == '\n') {
            afd_buf_put(out, "\\n", 2);
            p++;
        } else if (c == '\t') {
            afd_buf_put(out, "\\t", 2);
            p++;
        } else if (c < 0x20 || c == 0x7f) { /* NUL included: \u0000 keeps the text whole */
            afd_buf_printf(out, "\\u%04x", c);
            p++;
        } else if (c < 0x80) {
            afd_buf_put_u8(out, c);
            p++;
        } else {
            size_t n = afd_utf8_len(p, (size_t)(end - p));
            if (n) {
                afd_buf_put(out, p, n);
                p += n;
            } else {
                afd_buf_put(out, "\\ufffd", 6);
                p++;
            }
        }
    }
    afd_buf_put_u8(out, '"');
}

void afd_html_strn(afd_buf *out, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, start = 0;
    char picture[16];
    if (n == 0)
        return; /* s may be NULL, and NULL + 0 is undefined */
    while (i < n) {
        const char *rep = NULL;
        size_t step = 1;
        switch (p[i]) {
        case '&':
            rep = "&amp;";
            break;
        case '<':
            rep = "&lt;";
            break;
        case '>':
            rep = "&gt;";
            break;
        case '"':
            rep = "&quot;";
            break;
        case '\'':
            rep = "&#39;";
            break;
        case '\n':
        case '\t':
        case '\r':
            break;
        default:
            if (p[i] < 0x20 || p[i] == 0x7f) {
                /* A control is shown as its Unicode picture (NUL as U+2400), as on the terminal:
                 * a NUL in a failure message is part of what the reviewer must see. */
                snprintf(picture, sizeof picture, "&#x%x;", p[i] == 0x7f ? 0x2421u : 0x2400u + p[i]);
                rep = picture;
            } else if (p[i] >= 0x80) {
                step = afd_utf8_len(p + i, n - i);
                if (!step) {
                    rep = AFD_UTF8_REPLACEMENT;
                    step = 1;
                }
            }
        }
        if (rep) {
            afd_buf_put(out, s + start, i - start);
            afd_buf_put(out, rep, strlen(rep));
            start = i + step;
        }
        i += step;
    }
    afd_buf_put(out, s + start, n - start);
}
