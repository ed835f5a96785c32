/* fuzz_pyscan.c -- fuzzing afd_pyscan_source, with libFuzzer or with the plain driver of fuzz.h
 * (its dictionary: Python tokens that move the parser between states). */
#define FUZZ_NAME "fuzz_pyscan"
#define FUZZ_ITERS 20000
#include "fuzz.h"
#include "pyscan.h"

/* Whether s is valid UTF-8 without control characters: what the scanner promises its strings
 * are (they go to Python and into reports). */
static int clean_utf8(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned c = *p;
        size_t len = c < 0x80             ? 1
                     : (c & 0xe0) == 0xc0 ? 2
                     : (c & 0xf0) == 0xe0 ? 3
                     : (c & 0xf8) == 0xf0 ? 4
                                          : 0;
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
        if (!afd_pyscan_is_yield(s, s->yields[i]) ||
            afd_pyscan_is_yield(s, s->yields[i] + 1) !=
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

/* Tokens whose insertion moves the parser between states: brackets, block openers, the
 * constructs the scanner looks for, and bytes it must tolerate. */
static const char *const TOKENS[] = {
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ":",
    ",",
    ".",
    "=",
    "+=",
    "\"",
    "'",
    "\"\"\"",
    "#",
    "\\\n",
    "\n",
    "\n    ",
    "\t",
    "await ",
    "async ",
    "async with ",
    "async for x in ",
    "self.",
    "cls.",
    "self.x",
    "self.d[k]",
    "[\"k\"]",
    "[0]",
    "[-1]",
    "f\"{",
    "}\"",
    "def f(self):\n    ",
    "class C:\n    ",
    "lambda: ",
    "global G\n",
    "G = ",
    "del ",
    "for ",
    " in ",
    "with ",
    " as ",
    "s = self.s\n",
    ".append(",
    ".get(",
    "return ",
    "yield ",
    "@dec\n",
    "import x\n",
    "\x00",
    "\xff",
    "\xc3",
    "\xe2\x80\x8b",
    "\r\n",
    "not ",
    "-",
    ":=",
    "*",
    "**",
    "if ",
    "else ",
};

static size_t fuzz_dictionary(const fuzz_token **out)
{
    static fuzz_token dict[sizeof TOKENS / sizeof TOKENS[0]];
    for (size_t i = 0; i < sizeof TOKENS / sizeof TOKENS[0]; i++)
        dict[i] = (fuzz_token){TOKENS[i], strlen(TOKENS[i])};
    *out = dict;
    return sizeof TOKENS / sizeof TOKENS[0];
}

#endif
