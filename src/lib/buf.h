/* buf.h -- a growable byte buffer for writers and a bounds-checked cursor for readers.
 *
 * Every format that crosses a process or file boundary (tokens, traces, protocol frames) is written
 * with afd_buf and read with afd_reader. All integers are little-endian. A reader never reads past
 * its end: the first failed read sets a sticky error, later reads return zeros, and the caller
 * checks afd_reader_error() once at the end (the pattern keeps decoders short and safe). */
#ifndef AFD_BUF_H
#define AFD_BUF_H

#include <stddef.h>
#include <stdint.h>

typedef struct afd_buf {
    uint8_t *data; /* Owned. NULL while empty. */
    size_t len;
    size_t cap;
    int err; /* Sticky: the first allocation failure (AFD_ENOMEM); writes after it are dropped. */
} afd_buf;

void afd_buf_init(afd_buf *self);
void afd_buf_finish(afd_buf *self); /* Frees data; accepts NULL. */
int afd_buf_reserve(afd_buf *self, size_t extra);
void afd_buf_put(afd_buf *self, const void *data, size_t len);
void afd_buf_put_u8(afd_buf *self, uint8_t v);
void afd_buf_put_u16(afd_buf *self, uint16_t v);
void afd_buf_put_u32(afd_buf *self, uint32_t v);
void afd_buf_put_u64(afd_buf *self, uint64_t v);
/* A string as u32 length + bytes (no terminator). s may be NULL for an empty string. */
void afd_buf_put_str(afd_buf *self, const char *s, size_t len);
/* Appends a formatted string (no terminator stored, but data[len] is kept 0 for convenience). */
void afd_buf_printf(afd_buf *self, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Takes ownership of the bytes away from the buffer: returns data (caller frees) and resets self. */
uint8_t *afd_buf_steal(afd_buf *self, size_t *len);

/* Makes room for need elements of size elem in the array *arr of *cap elements, doubling the
 * capacity (from first when the array is empty) so that appending one element at a time costs
 * amortized O(1). *arr and *cap change only on success; the caller owns *arr throughout. Returns 0
 * or AFD_ENOMEM (allocation failed, or the size would overflow). */
int afd_array_grow(void **arr, size_t *cap, size_t need, size_t elem, size_t first);

typedef struct afd_reader {
    const uint8_t *p; /* Borrowed. */
    size_t len;
    size_t off;
    int err; /* Sticky: AFD_EOF after a read past the end, or a code set by afd_reader_fail. */
} afd_reader;

void afd_reader_init(afd_reader *self, const void *data, size_t len);
uint8_t afd_reader_u8(afd_reader *self);
uint16_t afd_reader_u16(afd_reader *self);
uint32_t afd_reader_u32(afd_reader *self);
uint64_t afd_reader_u64(afd_reader *self);
/* Returns a pointer into the input (borrowed) to n bytes, or NULL (and sets err) if fewer remain. */
const uint8_t *afd_reader_bytes(afd_reader *self, size_t n);
/* Reads a u32-length-prefixed string into a new NUL-terminated heap copy (caller frees), refusing
 * lengths above max_len. Returns NULL on error (err set). */
char *afd_reader_str(afd_reader *self, size_t max_len);
void afd_reader_fail(afd_reader *self, int rc);
static inline size_t afd_reader_left(const afd_reader *self)
{
    return self->len - self->off;
}
static inline int afd_reader_error(const afd_reader *self)
{
    return self->err;
}

#endif
