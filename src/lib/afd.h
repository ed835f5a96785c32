/* afd.h -- error codes and small shared definitions of the affidavit core library.
 *
 * Every public function of src/lib returns int: 0 on success, a negative AFD_E* code on failure.
 * The codes and their messages come from one X-macro so that afd_strerror() can never fall out of
 * step with the enum (the pattern of libuv's UV_ERRNO_MAP). This header has no Python dependency:
 * the engine, which never imports Python, includes it as well as the runtime extension. */
#ifndef AFD_AFD_H
#define AFD_AFD_H

#include <stddef.h>
#include <stdint.h>

#define AFD_ERRNO_MAP(X)                                                                                     \
    X(NOMEM, "out of memory")                                                                                \
    X(INVAL, "invalid argument")                                                                             \
    X(IO, "input/output error")                                                                              \
    X(EOF, "unexpected end of input")                                                                        \
    X(TOKEN_PREFIX, "not an affidavit token (a token starts with 'afd1:')")                                  \
    X(TOKEN_VERSION, "the token comes from another affidavit format version")                                \
    X(TOKEN_CHECKSUM, "the token's checksum does not match: it was corrupted or cut")                        \
    X(TOKEN_CORRUPT, "the token is malformed")                                                               \
    X(TRACE_MAGIC, "not an affidavit trace")                                                                 \
    X(TRACE_VERSION, "the trace comes from another affidavit format version")                                \
    X(TRACE_CORRUPT, "the trace is malformed")                                                               \
    X(PROTO, "malformed protocol message")                                                                   \
    X(FULL, "a size bound was reached")                                                                      \
    X(NOTFOUND, "not found")                                                                                 \
    X(STORE, "the incident store failed")

enum {
    AFD_OK = 0,
#define AFD_X_ENUM(name, msg) AFD_E##name##_PLACEHOLDER,
    AFD_ERRNO_MAP(AFD_X_ENUM)
#undef AFD_X_ENUM
};

/* Negative codes: AFD_ENOMEM == -1, AFD_EINVAL == -2, ... in the order of AFD_ERRNO_MAP. */
enum {
#define AFD_X_NEG(name, msg) AFD_E##name = -(AFD_E##name##_PLACEHOLDER),
    AFD_ERRNO_MAP(AFD_X_NEG)
#undef AFD_X_NEG
};

/* The end-of-input code reads better as AFD_EOF than as the generated AFD_EEOF. */
#define AFD_EOF AFD_EEOF

/* Returns a static, never-NULL message for a code returned by any afd_ function. */
const char *afd_strerror(int rc);

/* CRC-32 (IEEE 802.3, the zlib polynomial) of len bytes, continuing from crc (start with 0). */
uint32_t afd_crc32(uint32_t crc, const void *data, size_t len);

/* 64-bit FNV-1a, continuing from h (start with AFD_FNV_INIT). */
#define AFD_FNV_INIT 0xcbf29ce484222325ULL
uint64_t afd_fnv1a(uint64_t h, const void *data, size_t len);

/* SplitMix64's finalizer: a bijective mixer used as a counter-based random source, so a random
 * decision depends only on its inputs and never on how many decisions were made before it. */
static inline uint64_t afd_mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* A uniform double in [0, 1) from 53 bits of x. */
static inline double afd_unit(uint64_t x)
{
    return (double)(x >> 11) * (1.0 / 9007199254740992.0);
}

#endif
