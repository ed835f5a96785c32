/* out.c -- JSON string escaping and a terminal progress counter (see out.h). */
#include "out.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int utf8_len(const unsigned char *p)
{
    /* The length of a valid UTF-8 sequence at p, or 0 if it is not valid. */
    if (p[0] < 0x80)
        return 1;
    int n = (p[0] & 0xe0) == 0xc0 ? 2 : (p[0] & 0xf0) == 0xe0 ? 3 : (p[0] & 0xf8) == 0xf0 ? 4 : 0;
    if (n == 0 || (n == 2 && p[0] < 0xc2))
        return 0;
    for (int i = 1; i < n; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    return n;
}

void afd_json_str(afd_buf *out, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    afd_buf_put_u8(out, '"');
    while (*p) {
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
        } else if (c < 0x20 || c == 0x7f) {
            afd_buf_printf(out, "\\u%04x", c);
            p++;
        } else if (c < 0x80) {
            afd_buf_put_u8(out, c);
            p++;
        } else {
            int n = utf8_len(p);
            if (n) {
                afd_buf_put(out, p, (size_t)n);
                p += n;
            } else {
                afd_buf_put(out, "\\ufffd", 6);
                p++;
            }
        }
    }
    afd_buf_put_u8(out, '"');
}

void afd_json_num(afd_buf *out, double v)
{
    if (isnan(v) || isinf(v))
        afd_buf_printf(out, "null");
    else
        afd_buf_printf(out, "%.6g", v);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

void afd_progress_init(afd_progress *self, const char *what)
{
    self->enabled = isatty(2);
    self->what = what;
    self->last_ns = 0;
    self->shown = 0;
}

void afd_progress_update(afd_progress *self, uint64_t done, uint64_t total, uint64_t failed)
{
    if (!self->enabled)
        return;
    uint64_t now = now_ns();
    if (self->shown && now - self->last_ns < 100000000ULL && done != total)
        return;
    self->last_ns = now;
    self->shown = 1;
    if (total)
        fprintf(stderr, "\r\033[K%s: %llu/%llu runs, %llu failed", self->what, (unsigned long long)done,
                (unsigned long long)total, (unsigned long long)failed);
    else
        fprintf(stderr, "\r\033[K%s: %llu runs, %llu failed", self->what, (unsigned long long)done,
                (unsigned long long)failed);
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
