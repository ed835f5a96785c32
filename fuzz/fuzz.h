/* fuzz.h -- what the fuzz targets share: the failure macro and, without libFuzzer, their main().
 *
 * A target defines FUZZ_NAME (its name, for messages) and, unless it is built with -DAFD_LIBFUZZER,
 * FUZZ_ITERS (its default iteration count) and a function
 *   static size_t fuzz_dictionary(const fuzz_token **out);
 * returning the byte strings its mutator inserts, then includes this file and defines
 * LLVMFuzzerTestOneInput. With -DAFD_LIBFUZZER only that function is compiled (libFuzzer brings
 * main). Otherwise main() replays every file of the corpus directories given as arguments, then
 * runs AFD_FUZZ_ITERS (default FUZZ_ITERS) deterministic mutations of them: bit flips, byte and
 * little-endian u32 overwrites with boundary values, dictionary insertions, deletions,
 * duplications and splices between files. The seed is fixed (AFD_FUZZ_SEED picks another), so a
 * failure reproduces: AFD_FUZZ_TRACE=1 prints each iteration before running it, and
 * AFD_FUZZ_DUMP=i writes iteration i's input to stdout instead of running anything.
 * The u32 overwrites are for the binary formats (counts and lengths are u32 fields). */
#ifndef AFD_FUZZ_H
#define AFD_FUZZ_H

#include "afd.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef FUZZ_NAME
#error "define FUZZ_NAME before including fuzz.h"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* An invariant is broken: say which and abort, so that libFuzzer keeps the input as a crash and
 * the plain driver's test fails with the iteration that broke it. */
#define FAIL(...)                                                                                            \
    do {                                                                                                     \
        fprintf(stderr, FUZZ_NAME ": invariant broken: ");                                                   \
        fprintf(stderr, __VA_ARGS__);                                                                        \
        fputc('\n', stderr);                                                                                 \
        abort();                                                                                             \
    } while (0)

/* A dictionary entry: bytes with their length, since the binary formats' tokens hold NULs. */
typedef struct fuzz_token {
    const char *s;
    size_t len;
} fuzz_token;
#define FUZZ_TOK(lit)                                                                                        \
    {                                                                                                        \
        lit, sizeof(lit) - 1                                                                                 \
    }

/* A NUL-terminated copy of an input, for the APIs that take C strings. Its allocation is exactly
 * size + 1 bytes, so ASan reports a read past the terminator. */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        FAIL("out of memory");
    if (size)
        memcpy(s, data, size);
    s[size] = 0;
    return s;
}

static inline uint32_t fuzz_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t fuzz_le64(const uint8_t *p)
{
    return (uint64_t)fuzz_le32(p) | (uint64_t)fuzz_le32(p + 4) << 32;
}

static inline void fuzz_put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

#ifndef AFD_LIBFUZZER

#include <dirent.h>

static size_t fuzz_dictionary(const fuzz_token **out);

typedef struct fuzz_input {
    uint8_t *data;
    size_t len;
} fuzz_input;

typedef struct fuzz_corpus {
    fuzz_input *v;
    size_t n, cap;
} fuzz_corpus;

static int fuzz_add_input(fuzz_corpus *c, uint8_t *data, size_t len)
{
    if (c->n == c->cap) {
        size_t ncap = c->cap ? c->cap * 2 : 32;
        fuzz_input *nv = realloc(c->v, ncap * sizeof *nv);
        if (!nv)
            return -1;
        c->v = nv;
        c->cap = ncap;
    }
    c->v[c->n++] = (fuzz_input){data, len};
    return 0;
}

static uint8_t *fuzz_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
        if (n == cap) {
            uint8_t *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    fclose(f);
    *len = n;
    return buf;
}

static int fuzz_cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Adds the regular files of dir to c, in name order (readdir's order is the file system's, and
 * the mutator picks files by index, so the order is part of what makes a run reproducible). */
static int fuzz_load_dir(fuzz_corpus *c, const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, FUZZ_NAME ": cannot open %s\n", dir);
        return -1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 32;
            char **nn = realloc(names, cap * sizeof *nn);
            if (!nn) {
                rc = -1;
                break;
            }
            names = nn;
        }
        size_t need = strlen(dir) + strlen(e->d_name) + 2;
        names[n] = malloc(need);
        if (!names[n]) {
            rc = -1;
            break;
        }
        snprintf(names[n], need, "%s/%s", dir, e->d_name);
        n++;
    }
    closedir(d);
    if (n > 1)
        qsort(names, n, sizeof *names, fuzz_cmp_names);
    for (size_t i = 0; i < n; i++) {
        size_t len = 0;
        uint8_t *data = rc == 0 ? fuzz_read_file(names[i], &len) : NULL;
        if (rc == 0 && !data) {
            fprintf(stderr, FUZZ_NAME ": cannot read %s\n", names[i]);
            rc = -1;
        }
        if (data && fuzz_add_input(c, data, len) < 0) {
            free(data);
            rc = -1;
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

#define FUZZ_MAX_MUTANT (64u * 1024u)

typedef struct fuzz_buf {
    uint8_t *p;
    size_t len, cap;
} fuzz_buf;

static int fuzz_reserve(fuzz_buf *b, size_t need)
{
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap *= 2;
    uint8_t *np = realloc(b->p, cap);
    if (!np)
        return -1;
    b->p = np;
    b->cap = cap;
    return 0;
}

/* Inserts n bytes at at; an insertion past FUZZ_MAX_MUTANT is skipped, not an error. */
static int fuzz_insert(fuzz_buf *b, size_t at, const void *data, size_t n)
{
    if (b->len + n > FUZZ_MAX_MUTANT)
        return 0;
    if (fuzz_reserve(b, b->len + n) < 0)
        return -1;
    memmove(b->p + at + n, b->p + at, b->len - at);
    memcpy(b->p + at, data, n);
    b->len += n;
    return 0;
}

/* The u32 values that sit on the decoders' bounds: empty, one, the limits of the formats' counts
 * and lengths and one past them, and values whose arithmetic overflows. */
static const uint32_t FUZZ_EDGES[] = {
    0,           1,           2,
    3,           4,           5,
    16,          39,          40,
    41,          255,         256,
    511,         512,         513,
    4095,        4096,        4097,
    65535,       65536,       65537,
    0x7fffffffu, 0x80000000u, 0xfffffffeu,
    0xffffffffu, 64u << 20,   (64u << 20) + 1,
    100000000u,  100000001u,
};

/* Builds iteration it's input in b: a corpus file, then 1 to 8 mutations, each drawn from
 * afd_mix64 of (iteration, step) so that iteration i is the same input in every run. */
static int fuzz_mutate(const fuzz_corpus *c, const fuzz_token *dict, size_t n_dict, uint64_t seed,
                       uint64_t it, fuzz_buf *b)
{
    it = afd_mix64(seed) ^ it;
    uint64_t r = afd_mix64(it * 0x100 + 0x5eed);
    const fuzz_input *src = c->n ? &c->v[r % c->n] : NULL;
    b->len = 0;
    if (src && src->len) {
        if (fuzz_reserve(b, src->len) < 0)
            return -1;
        memcpy(b->p, src->data, src->len);
        b->len = src->len;
    }
    unsigned steps = 1 + (unsigned)(afd_mix64(r) % 8);
    for (unsigned k = 0; k < steps; k++) {
        uint64_t x = afd_mix64(it * 0x100 + k + 1), y = afd_mix64(x), z = afd_mix64(y);
        size_t at = b->len ? (size_t)(y % (b->len + 1)) : 0;
        switch (x % 9) {
        case 0: /* flip a bit */
            if (b->len)
                b->p[at % b->len] ^= (uint8_t)(1u << (z % 8));
            break;
        case 1: /* overwrite a byte */
            if (b->len)
                b->p[at % b->len] = (uint8_t)z;
            break;
        case 2: { /* overwrite a u32 with a boundary value, or nudge the one there */
            if (b->len < 4)
                break;
            size_t p = at % (b->len - 3);
            uint32_t v = FUZZ_EDGES[z % (sizeof FUZZ_EDGES / sizeof FUZZ_EDGES[0])];
            if ((z >> 32) % 4 == 0)
                v = fuzz_le32(b->p + p) + (uint32_t)((z >> 40) % 9) - 4;
            fuzz_put32(b->p + p, v);
            break;
        }
        case 3:
        case 4: /* insert a dictionary token */
            if (n_dict && fuzz_insert(b, at, dict[z % n_dict].s, dict[z % n_dict].len) < 0)
                return -1;
            break;
        case 5: { /* delete a range */
            size_t n = b->len - at < 1 + z % 16 ? b->len - at : 1 + z % 16;
            memmove(b->p + at, b->p + at + n, b->len - at - n);
            b->len -= n;
            break;
        }
        case 6: { /* duplicate a range */
            if (!b->len)
                break;
            size_t from = (size_t)(z % b->len), n = 1 + (size_t)(afd_mix64(z) % 64);
            if (n > b->len - from)
                n = b->len - from;
            uint8_t tmp[64];
            memcpy(tmp, b->p + from, n);
            if (fuzz_insert(b, at, tmp, n) < 0)
                return -1;
            break;
        }
        case 7: { /* cut the tail: truncation is the commonest damage to a stream */
            if (b->len)
                b->len = (size_t)(z % b->len);
            break;
        }
        default: { /* splice in a piece of another corpus file */
            const fuzz_input *o = c->n ? &c->v[z % c->n] : NULL;
            if (!o || !o->len)
                break;
            size_t from = (size_t)(afd_mix64(z) % o->len), n = 1 + (size_t)(afd_mix64(z + 1) % 256);
            if (n > o->len - from)
                n = o->len - from;
            if (fuzz_insert(b, at, o->data + from, n) < 0)
                return -1;
            break;
        }
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    fuzz_corpus c = {0};
    for (int i = 1; i < argc; i++)
        if (fuzz_load_dir(&c, argv[i]) < 0)
            return 1;
    const fuzz_token *dict = NULL;
    size_t n_dict = fuzz_dictionary(&dict);
    const char *e = getenv("AFD_FUZZ_ITERS");
    uint64_t iters = e ? strtoull(e, NULL, 10) : (uint64_t)(FUZZ_ITERS);
    const char *dump = getenv("AFD_FUZZ_DUMP");
    const char *seed_env = getenv("AFD_FUZZ_SEED");
    uint64_t seed = seed_env ? strtoull(seed_env, NULL, 10) : 0;
    int trace = getenv("AFD_FUZZ_TRACE") != NULL;
    fuzz_buf b = {0};
    if (dump) {
        if (fuzz_mutate(&c, dict, n_dict, seed, strtoull(dump, NULL, 10), &b) < 0)
            return 1;
        fwrite(b.p, 1, b.len, stdout);
        free(b.p);
        return 0;
    }
    uint64_t execs = 0;
    for (size_t i = 0; i < c.n; i++, execs++)
        LLVMFuzzerTestOneInput(c.v[i].data, c.v[i].len);
    printf("replayed: %zu files\n", c.n);
    for (uint64_t it = 0; it < iters; it++, execs++) {
        if (fuzz_mutate(&c, dict, n_dict, seed, it, &b) < 0) {
            fprintf(stderr, FUZZ_NAME ": out of memory\n");
            return 1;
        }
        if (trace)
            fprintf(stderr, "iteration %llu\n", (unsigned long long)it);
        LLVMFuzzerTestOneInput(b.p ? b.p : (const uint8_t *)"", b.len);
    }
    printf("execs: %llu\n", (unsigned long long)execs);
    for (size_t i = 0; i < c.n; i++)
        free(c.v[i].data);
    free(c.v);
    free(b.p);
    return 0;
}

#endif /* AFD_LIBFUZZER */

#endif
