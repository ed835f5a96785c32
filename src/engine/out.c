/* out.c -- text made safe for a terminal, JSON numbers, and a progress counter (see out.h).
 *
 * Invariant: the terminal escaper takes a length, never stops at a NUL byte, and never emits a
 * byte that a terminal would act on. JSON strings are escaped by the library (text.h). */
#include "out.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void afd_term_str(afd_buf *out, const char *s)
{
    afd_term_strn(out, s, s ? strlen(s) : 0);
}

void afd_term_strn(afd_buf *out, const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)(s ? s : ""), *end = p + (s ? len : 0);
    while (p < end) {
        unsigned char c = *p;
        if (c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7f)) {
            afd_buf_put_u8(out, c);
            p++;
        } else if (c == '\r' && p + 1 < end && p[1] == '\n') {
            afd_buf_put(out, "\r\n", 2); /* a CRLF line end moves nothing that was written */
            p += 2;
        } else if (c < 0x20 || c == 0x7f) {
            /* The control's picture (U+2400 + c; U+2421 for DEL): NUL shows as the one glyph
             * U+2400, ESC as U+241B, so a sequence such as ESC ] 0 ; title BEL is shown, not run. */
            unsigned cp = c == 0x7f ? 0x2421u : 0x2400u + c;
            unsigned char u[3] = {(unsigned char)(0xe0 | (cp >> 12)),
                                  (unsigned char)(0x80 | ((cp >> 6) & 0x3f)),
                                  (unsigned char)(0x80 | (cp & 0x3f))};
            afd_buf_put(out, u, 3);
            p++;
        } else {
            size_t n = afd_utf8_len(p, (size_t)(end - p));
            /* C1 controls (U+0080..U+009F) are commands to some terminals even when UTF-8
             * encoded (CSI is U+009B); they and bytes that are not UTF-8 become U+FFFD. */
            if (n && !(n == 2 && p[0] == 0xc2 && p[1] < 0xa0)) {
                afd_buf_put(out, p, n);
                p += n;
            } else {
                afd_buf_put(out, AFD_UTF8_REPLACEMENT, 3);
                p += n ? n : 1;
            }
        }
    }
}

void afd_term_write(FILE *f, const void *data, size_t len)
{
    afd_buf b;
    afd_buf_init(&b);
    afd_term_strn(&b, data, len);
    if (b.err) /* out of memory: the text is withheld rather than written unfiltered */
        fputs("affidavit: error: out of memory\n", stderr);
    else if (b.len)
        fwrite(b.data, 1, b.len, f);
    afd_buf_finish(&b);
}

void afd_json_num(afd_buf *out, double v)
{
    if (isnan(v) || isinf(v))
        afd_buf_printf(out, "null");
    else
        afd_buf_printf(out, "%.6g", v);
}

static uint64_t afd_runs_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static char progress_prefix[512];

void afd_progress_prefix(const char *prefix)
{
    snprintf(progress_prefix, sizeof progress_prefix, "%s%s", prefix ? prefix : "", prefix ? " " : "");
}

void afd_progress_init(afd_progress *self, const char *what)
{
    self->enabled = isatty(2);
    self->what = what;
    self->last_ns = 0;
    self->shown = 0;
    self->stage = NULL;
    self->stage_k = self->stage_n = 0;
}

void afd_progress_stage(afd_progress *self, int k, int n, const char *name)
{
    self->stage = name;
    self->stage_k = k;
    self->stage_n = n;
    self->last_ns = 0; /* the next update shows the new stage at once */
}

void afd_progress_update(afd_progress *self, uint64_t done, uint64_t total, uint64_t failed)
{
    if (!self->enabled)
        return;
    uint64_t now = afd_runs_now_ns();
    if (self->shown && now - self->last_ns < 100000000ULL && done != total)
        return;
    self->last_ns = now;
    self->shown = 1;
    fprintf(stderr, "\r\033[K%s%s", progress_prefix, self->what);
    if (self->stage)
        fprintf(stderr, " [%d/%d %s]", self->stage_k, self->stage_n, self->stage);
    if (total)
        fprintf(stderr, ": %llu/%llu runs, %llu failed", (unsigned long long)done, (unsigned long long)total,
                (unsigned long long)failed);
    else
        fprintf(stderr, ": %llu runs, %llu failed", (unsigned long long)done, (unsigned long long)failed);
    fflush(stderr);
}

void afd_progress_done(afd_progress *self)
{
    if (self->enabled && self->shown) {
        fprintf(stderr, "\r\033[K");
        fflush(stderr);
    }
    self->shown = 0;
}
