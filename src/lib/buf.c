/* buf.c -- growable buffer and bounds-checked reader (see buf.h for the error discipline).
 *
 * Buffers grow geometrically; a trace of a few hundred thousand events is written with a handful
 * of reallocations. Readers are on the decode path of untrusted bytes and are fuzzed through the
 * token, trace and protocol decoders. */
#include "buf.h"
#include "afd.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void afd_buf_init(afd_buf *self)
{
    memset(self, 0, sizeof *self);
}

void afd_buf_finish(afd_buf *self)
{
    if (!self)
        return;
    free(self->data);
    memset(self, 0, sizeof *self);
}

int afd_buf_reserve(afd_buf *self, size_t extra)
{
    if (self->err)
        return self->err;
    if (extra > SIZE_MAX / 2 - self->len - 1)
        return self->err = AFD_ENOMEM;
    size_t need = self->len + extra + 1; /* +1 keeps room for a terminator */
    if (need <= self->cap)
        return 0;
    size_t cap = self->cap ? self->cap : 64;
    while (cap < need)
        cap *= 2;
    uint8_t *p = realloc(self->data, cap);
    if (!p)
        return self->err = AFD_ENOMEM;
    self->data = p;
    self->cap = cap;
    return 0;
}

void afd_buf_put(afd_buf *self, const void *data, size_t len)
{
    if (afd_buf_reserve(self, len))
        return;
    if (len)
        memcpy(self->data + self->len, data, len);
    self->len += len;
    self->data[self->len] = 0;
}

void afd_buf_put_u8(afd_buf *self, uint8_t v)
{
    afd_buf_put(self, &v, 1);
}

void afd_buf_put_u16(afd_buf *self, uint16_t v)
{
    uint8_t b[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
    afd_buf_put(self, b, 2);
}

void afd_buf_put_u32(afd_buf *self, uint32_t v)
{
    uint8_t b[4];
    for (int i = 0; i < 4; i++)
        b[i] = (uint8_t)(v >> (8 * i));
    afd_buf_put(self, b, 4);
}

void afd_buf_put_u64(afd_buf *self, uint64_t v)
{
    uint8_t b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(v >> (8 * i));
    afd_buf_put(self, b, 8);
}

void afd_buf_put_str(afd_buf *self, const char *s, size_t len)
{
    if (len > UINT32_MAX) {
        self->err = self->err ? self->err : AFD_EINVAL;
        return;
    }
    afd_buf_put_u32(self, (uint32_t)len);
    afd_buf_put(self, s, len);
}

void afd_buf_printf(afd_buf *self, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        self->err = self->err ? self->err : AFD_EINVAL;
        return;
    }
    if (afd_buf_reserve(self, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf((char *)self->data + self->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    self->len += (size_t)n;
}

uint8_t *afd_buf_steal(afd_buf *self, size_t *len)
{
    uint8_t *p = self->data;
    if (len)
        *len = self->len;
    memset(self, 0, sizeof *self);
    return p;
}

int afd_array_grow(void **arr, size_t *cap, size_t need, size_t elem, size_t first)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : first ? first : 1;
    while (n < need) {
        if (n > SIZE_MAX / 2)
            return AFD_ENOMEM;
        n *= 2;
    }
    if (elem && n > SIZE_MAX / elem)
        return AFD_ENOMEM;
    void *p = realloc(*arr, n * elem);
    if (!p)
        return AFD_ENOMEM;
    *arr = p;
    *cap = n;
    return 0;
}

void afd_reader_init(afd_reader *self, const void *data, size_t len)
{
    self->p = data;
    self->len = data ? len : 0;
    self->off = 0;
    self->err = 0;
}

void afd_reader_fail(afd_reader *self, int rc)
{
    if (!self->err)
        self->err = rc;
}

const uint8_t *afd_reader_bytes(afd_reader *self, size_t n)
{
    if (self->err || n > self->len - self->off) {
        afd_reader_fail(self, AFD_EOF);
        return NULL;
    }
    const uint8_t *q = self->p + self->off;
    self->off += n;
    return q;
}

static uint64_t read_le(afd_reader *self, int n)
{
    const uint8_t *b = afd_reader_bytes(self, (size_t)n);
    uint64_t v = 0;
    if (!b)
        return 0;
    for (int i = 0; i < n; i++)
        v |= (uint64_t)b[i] << (8 * i);
    return v;
}

uint8_t afd_reader_u8(afd_reader *self)
{
    return (uint8_t)read_le(self, 1);
}
uint16_t afd_reader_u16(afd_reader *self)
{
    return (uint16_t)read_le(self, 2);
}
uint32_t afd_reader_u32(afd_reader *self)
{
    return (uint32_t)read_le(self, 4);
}
uint64_t afd_reader_u64(afd_reader *self)
{
    return read_le(self, 8);
}

char *afd_reader_str(afd_reader *self, size_t max_len)
{
    uint32_t n = afd_reader_u32(self);
    if (self->err)
        return NULL;
    if (n > max_len) {
        afd_reader_fail(self, AFD_EFULL);
        return NULL;
    }
    const uint8_t *b = afd_reader_bytes(self, n);
    if (!b)
        return NULL;
    char *s = malloc((size_t)n + 1);
    if (!s) {
        afd_reader_fail(self, AFD_ENOMEM);
        return NULL;
    }
    memcpy(s, b, n);
    s[n] = 0;
    return s;
}
