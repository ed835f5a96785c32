/* fuzz_pyscan.c -- fuzzing afd_pyscan_source, with libFuzzer or with its own mutator.
 *
 * Built with -DAFD_LIBFUZZER, only LLVMFuzzerTestOneInput is defined (link with -fsanitize=fuzzer).
 * Otherwise main() replays every file of the corpus directories given as arguments, then runs
 * AFD_FUZZ_ITERS (default 20000) deterministic mutations of them: byte flips, insertions of Python
 * tokens, deletions, duplications and splices between files. The seed is fixed (AFD_FUZZ_SEED
 * picks another), so a failure reproduces: AFD_FUZZ_TRACE=1 prints each iteration before running
 * it, and AFD_FUZZ_DUMP=i writes iteration i's input to stdout instead of running anything. */
#include "afd.h"
#include "pyscan.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FAIL(...)                                                \
    do {                                                         \
        fprintf(stderr, "fuzz_pyscan: invariant broken: ");     \
        fprintf(stderr, __VA_ARGS__);                            \
        fputc('\n', stderr);                                     \
        abort();                                                 \
    } while (0)

/* Whether s is valid UTF-8 without control characters: what the scanner promises its strings
 * are (they go to Python and into reports). */
static int clean_utf8(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned c = *p;
        size_t len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
        if (len == 0 || (len == 1 && (c < 0x20 || c == 0x7f)))
            return 0;
        for (size_t i = 1; i < len; i++)
            if ((p[i] & 0xc0) != 0x80)
                return 0;
        p += len;
    }
    return 1;
}

static void check_lines(const uint32_t *v, size_t n, uint32_t max_line, const char *what)
{
    for (size_t i = 0; i < n; i++) {
        if (v[i] < 1 || v[i] > max_line)
            FAIL("%s line %u outside 1..%u", what, v[i], max_line);
        if (i > 0 && v[i] <= v[i - 1])
            FAIL("%s lines not sorted and unique", what);
    }
}

static void check_scan(const afd_pyscan *s, const uint8_t *data, size_t size)
{
    uint32_t max_line = 1;
    for (size_t i = 0; i < size; i++)
        max_line += data[i] == '\n';
    for (size_t i = 0; i < s->n_acc; i++) {
        const afd_pyaccess *a = &s->acc[i];
        if (a->line < 1 || a->line > max_line)
            FAIL("access line %u outside 1..%u", a->line, max_line);
        if (i > 0 && a->line < s->acc[i - 1].line)
            FAIL("accesses not sorted by line");
        if (a->root < AFD_ROOT_SELF || a->root > AFD_ROOT_LOCAL || a->write > 1)
            FAIL("access root %u write %u", a->root, a->write);
        if (!a->name || !a->path || !a->function)
            FAIL("NULL string in access %zu", i);
        if (!a->name[0] || !clean_utf8(a->name) || !clean_utf8(a->path) || !clean_utf8(a->function))
            FAIL("bad string in access %zu", i);
        if (a->path[0] && a->path[0] != '.' && a->path[0] != '[')
            FAIL("path \"%s\" does not start a segment", a->path);
        if ((a->root == AFD_ROOT_SELF || a->root == AFD_ROOT_CLS) && !a->path[0])
            FAIL("bare self or cls reported");
        if (a->root == AFD_ROOT_LOCAL && !a->path[0] && !a->write)
            FAIL("bare local variable read reported");
    }
    check_lines(s->yields, s->n_yields, max_line, "yield");
    check_lines(s->errors, s->n_errors, max_line, "error");
    /* The per-line view agrees with the array. */
    for (size_t i = 0; i < s->n_acc;) {
        size_t first, count, j = i;
        while (j < s->n_acc && s->acc[j].line == s->acc[i].line)
            j++;
        afd_pyscan_line(s, s->acc[i].line, &first, &count);
        if (first != i || count != j - i)
            FAIL("afd_pyscan_line(%u) = %zu+%zu, want %zu+%zu", s->acc[i].line, first, count, i, j - i);
        i = j;
    }
    for (size_t i = 0; i < s->n_yields; i++)
        if (!afd_pyscan_is_yield(s, s->yields[i]) || afd_pyscan_is_yield(s, s->yields[i] + 1) !=
                                                         (i + 1 < s->n_yields && s->yields[i + 1] == s->yields[i] + 1))
            FAIL("afd_pyscan_is_yield disagrees at line %u", s->yields[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    afd_pyscan s;
    int rc = afd_pyscan_source((const char *)data, size, &s);
    if (rc == 0)
        check_scan(&s, data, size);
    else if (rc != AFD_ENOMEM && rc != AFD_EFULL)
        FAIL("unexpected return %d", rc);
    else if (s.acc || s.n_acc || s.yields || s.errors)
        FAIL("results left after an error");
    afd_pyscan_finish(&s);
    afd_pyscan_finish(&s); /* a finished scan is accepted again */
    return 0;
}

#ifndef AFD_LIBFUZZER

typedef struct input {
    uint8_t *data;
    size_t len;
} input;

typedef struct corpus {
    input *v;
    size_t n, cap;
} corpus;

static int add_input(corpus *c, uint8_t *data, size_t len)
{
    if (c->n == c->cap) {
        size_t ncap = c->cap ? c->cap * 2 : 32;
        input *nv = realloc(c->v, ncap * sizeof *nv);
        if (!nv)
            return -1;
        c->v = nv;
        c->cap = ncap;
    }
    c->v[c->n++] = (input){data, len};
    return 0;
}

static uint8_t *read_file(const char *path, size_t *len)
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

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Adds the regular files of dir to c, in name order (readdir's order is the file system's). */
static int load_dir(corpus *c, const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "fuzz_pyscan: cannot open %s\n", dir);
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
        qsort(names, n, sizeof *names, cmp_names);
    for (size_t i = 0; i < n; i++) {
        size_t len = 0;
        uint8_t *data = rc == 0 ? read_file(names[i], &len) : NULL;
        if (data && add_input(c, data, len) < 0) {
            free(data);
            rc = -1;
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

/* Tokens whose insertion moves the parser between states: brackets, block openers, the
 * constructs the scanner looks for, and bytes it must tolerate. */
static const char *const TOKENS[] = {
    "(", ")", "[", "]", "{", "}", ":", ",", ".", "=", "+=", "\"", "'", "\"\"\"", "#", "\\\n",
    "\n", "\n    ", "\t", "await ", "async ", "async with ", "async for x in ", "self.", "cls.",
    "self.x", "self.d[k]", "[\"k\"]", "[0]", "[-1]", "f\"{", "}\"", "def f(self):\n    ",
    "class C:\n    ", "lambda: ", "global G\n", "G = ", "del ", "for ", " in ", "with ", " as ",
    "s = self.s\n", ".append(", ".get(", "return ", "yield ", "@dec\n", "import x\n", "\x00",
    "\xff", "\xc3", "\xe2\x80\x8b", "\r\n", "not ", "-", ":=", "*", "**", "if ", "else ",
};

#define MAX_MUTANT (64u * 1024u)

typedef struct buf {
    uint8_t *p;
    size_t len, cap;
} buf;

static int reserve(buf *b, size_t need)
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

static int insert(buf *b, size_t at, const void *data, size_t n)
{
    if (b->len + n > MAX_MUTANT || reserve(b, b->len + n) < 0)
        return 0; /* too big: the mutation is skipped */
    memmove(b->p + at + n, b->p + at, b->len - at);
    memcpy(b->p + at, data, n);
    b->len += n;
    return 0;
}

/* Builds iteration it's input in b: a corpus file, then 1 to 8 mutations, each drawn from
 * afd_mix64 of (iteration, step) so that iteration i is the same input in every run. */
static int mutate(const corpus *c, uint64_t seed, uint64_t it, buf *b)
{
    it = afd_mix64(seed) ^ it;
    uint64_t r = afd_mix64(it * 0x100 + 0x5eed);
    const input *src = c->n ? &c->v[r % c->n] : NULL;
    b->len = 0;
    if (src && src->len) {
        if (reserve(b, src->len) < 0)
            return -1;
        memcpy(b->p, src->data, src->len);
        b->len = src->len;
    }
    unsigned steps = 1 + (unsigned)(afd_mix64(r) % 8);
    for (unsigned k = 0; k < steps; k++) {
        uint64_t x = afd_mix64(it * 0x100 + k + 1), y = afd_mix64(x), z = afd_mix64(y);
        size_t at = b->len ? (size_t)(y % (b->len + 1)) : 0;
        switch (x % 6) {
        case 0: /* flip a bit */
            if (b->len)
                b->p[at % b->len] ^= (uint8_t)(1u << (z % 8));
            break;
        case 1:
        case 2: { /* insert a token */
            const char *t = TOKENS[z % (sizeof TOKENS / sizeof TOKENS[0])];
            if (insert(b, at, t, strlen(t) ? strlen(t) : 1) < 0)
                return -1;
            break;
        }
        case 3: { /* delete a range */
            size_t n = b->len - at < 1 + z % 16 ? b->len - at : 1 + z % 16;
            memmove(b->p + at, b->p + at + n, b->len - at - n);
            b->len -= n;
            break;
        }
        case 4: { /* duplicate a range */
            if (!b->len)
                break;
            size_t from = (size_t)(z % b->len), n = 1 + (size_t)(afd_mix64(z) % 64);
            if (n > b->len - from)
                n = b->len - from;
            uint8_t tmp[64];
            memcpy(tmp, b->p + from, n);
            if (insert(b, at, tmp, n) < 0)
                return -1;
            break;
        }
        default: { /* splice in a piece of another corpus file */
            const input *o = c->n ? &c->v[z % c->n] : NULL;
            if (!o || !o->len)
                break;
            size_t from = (size_t)(afd_mix64(z) % o->len), n = 1 + (size_t)(afd_mix64(z + 1) % 256);
            if (n > o->len - from)
                n = o->len - from;
            if (insert(b, at, o->data + from, n) < 0)
                return -1;
            break;
        }
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    corpus c = {0};
    for (int i = 1; i < argc; i++)
        if (load_dir(&c, argv[i]) < 0)
            return 1;
    const char *e = getenv("AFD_FUZZ_ITERS");
    uint64_t iters = e ? strtoull(e, NULL, 10) : 20000;
    const char *dump = getenv("AFD_FUZZ_DUMP");
    const char *seed_env = getenv("AFD_FUZZ_SEED");
    uint64_t seed = seed_env ? strtoull(seed_env, NULL, 10) : 0;
    int trace = getenv("AFD_FUZZ_TRACE") != NULL;
    buf b = {0};
    if (dump) {
        if (mutate(&c, seed, strtoull(dump, NULL, 10), &b) < 0)
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
        if (mutate(&c, seed, it, &b) < 0) {
            fprintf(stderr, "fuzz_pyscan: out of memory\n");
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

#endif
