/* text.h -- UTF-8 validation and the escapers for JSON and HTML: the one implementation of each.
 *
 * Strings that reach a document come from traces, source files and failure messages, so they are
 * bytes: they may hold NUL, control characters and sequences that are not UTF-8. Every escaper here
 * takes a length, never stops at a NUL byte, and always produces valid UTF-8. A byte sequence is
 * valid UTF-8 only in its shortest form, outside the surrogates and at most U+10FFFF (as Python's
 * decoder and jansson decide), so no sequence passed as valid decodes to a control character. */
#ifndef AFD_TEXT_H
#define AFD_TEXT_H

#include "buf.h"

#include <stddef.h>

/* U+FFFD REPLACEMENT CHARACTER, UTF-8 encoded: what bytes that are not text become. */
#define AFD_UTF8_REPLACEMENT "\xef\xbf\xbd"

/* The length (1-4) of the valid UTF-8 sequence at p, reading at most left bytes (left >= 1), or 0
 * when it is not one (a stray continuation byte, an overlong form, a surrogate, a code point above
 * U+10FFFF, or a sequence cut by the end). A byte below 0x80, control characters included, is 1. */
size_t afd_utf8_len(const void *p, size_t left);

/* Flags of afd_utf8_clean. */
enum {
    AFD_UTF8_NO_CONTROLS = 1, /* C0 controls (NUL included) and DEL are replaced too. */
};

/* Appends the n bytes at s with each byte that does not start a valid UTF-8 sequence (and, with
 * AFD_UTF8_NO_CONTROLS, each control byte) replaced by the NUL-terminated string rep. One
 * replacement per bad byte. s may be NULL when n is 0. */
void afd_utf8_clean(afd_buf *out, const void *s, size_t n, const char *rep, int flags);

/* Appends s as a JSON string literal (quotes included), escaping control characters, quotes and
 * backslashes, and replacing invalid UTF-8 with U+FFFD. s may be NULL (the empty string). */
void afd_json_str(afd_buf *out, const char *s);
/* The same for the len bytes at s, which may hold NUL bytes (written as \u0000). */
void afd_json_strn(afd_buf *out, const char *s, size_t len);

/* Appends the n bytes at s as HTML text, safe in element content and in quoted attributes alike:
 * & < > " ' as entities, newline, tab and CR as they are, every other C0 control and DEL as its
 * Unicode control picture (NUL as &#x2400;), and bytes that are not UTF-8 as U+FFFD. */
void afd_html_strn(afd_buf *out, const char *s, size_t n);

#endif
