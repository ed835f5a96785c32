/* fuzz_udiff.c -- fuzzing the unified-diff reader that `affidavit gate` runs on a human's patch,
 * and apply and make behind it, with libFuzzer or with the plain driver of fuzz.h.
 *
 * The input is parsed as a diff. A refusal must be AFD_EINVAL with a one-line message (the same
 * code with no message buffer). An acceptance must hold to udiff.h: sides and /dev/null agree,
 * every hunk's lines match its header's counts, starts and order are within bounds, line texts
 * lie inside the diff's copy without their '\n'. Then each file is applied to an original built
 * from its own hunks (their context and removed lines at the positions their headers give, filler
 * lines in between), and the result must be exactly the hunks' new side with the same fillers; or,
 * when a hunk starts before the previous one ended, a refusal. Nothing may come out for a deleted
 * file (udiff.h: "nothing for a deleted file"). That original and result then go through make,
 * parse and apply, which must give the result back; so do the two halves of the raw input (cut at
 * its first NUL byte, or in the middle), as an edit, a new file and a deleted file. */
#define FUZZ_NAME "fuzz_udiff"
#define FUZZ_ITERS 100000
#include "fuzz.h"
#include "buf.h"
#include "udiff.h"

#define PATH "pkg/m.py"
/* Originals longer than this are not built: a header may claim line 100000000. */
#define MAX_BUILT_LINES 50000u

static void check_parse_refusal(int rc, const char *err)
{
    if (rc != AFD_EINVAL)
        FAIL("parse returned %d", rc);
    if (!err[0] || strchr(err, '\n'))
        FAIL("refusal message \"%s\" is not one line", err);
}

/* What an accepted diff must look like. */
static void check_structure(const afd_udiff *d, const char *text, size_t len)
{
    if (d->n_files && !d->files)
        FAIL("files missing");
    for (size_t i = 0; i < d->n_files; i++) {
        const afd_udiff_file *f = &d->files[i];
        if (f->is_new && f->is_deleted)
            FAIL("file %zu is both new and deleted", i);
        if (!f->is_new != !!f->old_path || !f->is_deleted != !!f->new_path)
            FAIL("file %zu: /dev/null and the paths disagree", i);
        if ((f->old_path && strpbrk(f->old_path, "\n\t")) || (f->new_path && strpbrk(f->new_path, "\n\t")))
            FAIL("file %zu: a path holds a newline or a tab", i);
        if (!f->n_hunks && !f->is_new && !f->is_deleted)
            FAIL("file %zu has no hunks", i);
        for (size_t j = 0; j < f->n_hunks; j++) {
            const afd_udiff_hunk *h = &f->hunks[j];
            if (h->old_start > AFD_UDIFF_MAX_LINENO || h->old_count > AFD_UDIFF_MAX_LINENO ||
                h->new_start > AFD_UDIFF_MAX_LINENO || h->new_count > AFD_UDIFF_MAX_LINENO)
                FAIL("hunk %zu.%zu: numbers above the bound", i, j);
            if ((h->old_start == 0 && h->old_count) || (h->new_start == 0 && h->new_count))
                FAIL("hunk %zu.%zu: start 0 with lines", i, j);
            if (!h->old_count && !h->new_count)
                FAIL("hunk %zu.%zu is empty", i, j);
            if ((f->is_new && (h->old_start || h->old_count)) ||
                (f->is_deleted && (h->new_start || h->new_count)))
                FAIL("hunk %zu.%zu does not fit a new or deleted file", i, j);
            if (j && h->old_start < f->hunks[j - 1].old_start + f->hunks[j - 1].old_count)
                FAIL("hunk %zu.%zu: out of order", i, j);
            size_t old_n = 0, new_n = 0;
            for (size_t k = 0; k < h->n_lines; k++) {
                const afd_udiff_line *l = &h->lines[k];
                if (l->op != ' ' && l->op != '-' && l->op != '+')
                    FAIL("hunk %zu.%zu: op %d", i, j, l->op);
                if (l->no_eol > 1)
                    FAIL("no_eol %u", l->no_eol);
                if (!l->text || l->text < d->text || l->text + l->len > d->text + len)
                    FAIL("hunk %zu.%zu line %zu points outside the diff", i, j, k);
                if (memchr(l->text, '\n', l->len))
                    FAIL("hunk %zu.%zu line %zu holds its newline", i, j, k);
                if (memcmp(l->text, text + (l->text - d->text), l->len) != 0)
                    FAIL("the diff's copy differs from the input");
                old_n += l->op != '+';
                new_n += l->op != '-';
            }
            if (old_n != h->old_count || new_n != h->new_count)
                FAIL("hunk %zu.%zu: %zu/%zu lines for a header of %u/%u", i, j, old_n, new_n, h->old_count,
                     h->new_count);
        }
    }
}

static void put_filler(afd_buf *a, afd_buf *b, size_t n)
{
    afd_buf_printf(a, "# filler %zu\n", n);
    afd_buf_printf(b, "# filler %zu\n", n);
}

/* make(before, after), then parse and apply: the diff must turn before into after. A NULL side
 * is a new or deleted file. */
static void check_make(const char *before, size_t blen, const char *after, size_t alen)
{
    afd_buf d;
    afd_buf_init(&d);
    int rc = afd_udiff_make(PATH, before, blen, after, alen, &d);
    if (rc == AFD_EFULL || rc == AFD_ENOMEM) {
        afd_buf_finish(&d);
        return;
    }
    if (rc != 0)
        FAIL("make returned %d", rc);
    int same = before && after && blen == alen && memcmp(before, after, blen) == 0;
    if (same != (d.len == 0))
        FAIL("make wrote %zu bytes for %s texts", d.len, same ? "equal" : "different");
    afd_udiff u;
    char err[256];
    rc = afd_udiff_parse((const char *)d.data, d.len, &u, err, sizeof err);
    if (rc != 0)
        FAIL("make's diff does not parse: %s", err);
    check_structure(&u, (const char *)d.data, d.len);
    if (u.n_files != !same)
        FAIL("make's diff has %zu files", u.n_files);
    if (!same) {
        const afd_udiff_file *f = &u.files[0];
        if (f->is_new != !before || f->is_deleted != !after)
            FAIL("make's diff: new %d deleted %d", f->is_new, f->is_deleted);
        if ((f->old_path && strcmp(f->old_path, PATH)) || (f->new_path && strcmp(f->new_path, PATH)))
            FAIL("make's diff names another path");
        afd_buf out;
        afd_buf_init(&out);
        rc = afd_udiff_apply(f, before, before ? blen : 0, &out, err, sizeof err);
        if (rc == 0 && (out.len != (after ? alen : 0) || (out.len && memcmp(out.data, after, alen) != 0)))
            FAIL("make's diff applies to something else");
        if (rc != 0 && rc != AFD_ENOMEM)
            FAIL("make's diff does not apply: %s", err);
        afd_buf_finish(&out);
    }
    afd_udiff_finish(&u);
    afd_buf_finish(&d);
}

/* Builds the original f's hunks describe, applies f to it and checks the result. */
static void check_apply(const afd_udiff_file *f)
{
    afd_buf orig, want;
    afd_buf_init(&orig);
    afd_buf_init(&want);
    size_t cur = 0; /* lines of orig so far */
    int refuse = 0; /* apply must refuse f */
    int cut = 0;    /* orig ended without a newline: nothing can follow it */
    int buildable = 1;
    for (size_t j = 0; j < f->n_hunks && buildable && !refuse; j++) {
        const afd_udiff_hunk *h = &f->hunks[j];
        size_t at = h->old_count ? (size_t)h->old_start - 1 : (size_t)h->old_start;
        if (at < cur) {
            refuse = 1; /* parse lets an insertion be followed by a hunk starting on its line */
            break;
        }
        if (at - cur > MAX_BUILT_LINES || (at > cur && cut)) {
            buildable = 0;
            break;
        }
        /* A deleted file must be removed whole: lines kept before its first hunk would be output
         * for a file that udiff.h says yields nothing. */
        if (f->is_deleted && at > cur)
            refuse = 1;
        for (; cur < at; cur++)
            put_filler(&orig, &want, cur);
        for (size_t k = 0; k < h->n_lines; k++) {
            const afd_udiff_line *l = &h->lines[k];
            if (l->op != '+') {
                /* Nothing can follow a last line without its newline, and an empty line without
                 * one is no line at all: a diff saying so applies to no text, so none is built. */
                if (cut || (l->no_eol && !l->len)) {
                    buildable = 0;
                    break;
                }
                afd_buf_put(&orig, l->text, l->len);
                if (l->no_eol)
                    cut = 1;
                else
                    afd_buf_put_u8(&orig, '\n');
                cur++;
            }
            if (l->op != '-') {
                afd_buf_put(&want, l->text, l->len);
                if (!l->no_eol)
                    afd_buf_put_u8(&want, '\n');
            }
        }
    }
    if (buildable && !refuse && !cut && !f->is_new && !f->is_deleted)
        for (int k = 0; k < 2; k++, cur++)
            put_filler(&orig, &want, cur); /* lines after the last hunk are copied */
    if (orig.err || want.err)
        buildable = 0;
    if (buildable) {
        afd_buf out;
        afd_buf_init(&out);
        char err[256];
        int rc = afd_udiff_apply(f, (const char *)orig.data, orig.len, &out, err, sizeof err);
        if (rc == AFD_ENOMEM) {
            /* nothing to check */
        } else if (refuse) {
            if (rc != AFD_EINVAL || !err[0] || strchr(err, '\n'))
                FAIL("apply returned %d (\"%s\") for hunks it must refuse", rc, err);
        } else {
            if (rc != 0)
                FAIL("apply refused its own original: %s", err);
            if (out.len != want.len || (out.len && memcmp(out.data, want.data, out.len) != 0))
                FAIL("apply gave %zu bytes, want %zu", out.len, want.len);
            if (f->is_deleted && out.len)
                FAIL("a deleted file yields %zu bytes", out.len);
            /* An empty buffer's data is NULL, which make would read as a missing side. */
            check_make(f->is_new   ? NULL
                       : orig.data ? (const char *)orig.data
                                   : "",
                       orig.len,
                       f->is_deleted ? NULL
                       : want.data   ? (const char *)want.data
                                     : "",
                       want.len);
        }
        afd_buf_finish(&out);
    }
    afd_buf_finish(&orig);
    afd_buf_finish(&want);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* An exact-size copy without a terminator: parse takes a length, and must not read past it. */
    char *text = malloc(size ? size : 1);
    if (!text)
        FAIL("out of memory");
    if (size)
        memcpy(text, data, size);
    afd_udiff d;
    char err[256];
    memset(&d, 0xa5, sizeof d); /* parse must initialize whatever it is given */
    int rc = afd_udiff_parse(text, size, &d, err, sizeof err);
    afd_udiff d2;
    int rc2 = afd_udiff_parse(text, size, &d2, NULL, 0);
    afd_udiff_finish(&d2);
    if (rc != rc2)
        FAIL("parse returned %d with a message buffer, %d without", rc, rc2);
    if (rc == 0) {
        check_structure(&d, text, size);
        for (size_t i = 0; i < d.n_files; i++)
            check_apply(&d.files[i]);
    } else if (rc != AFD_ENOMEM) {
        check_parse_refusal(rc, err);
    }
    afd_udiff_finish(&d);
    afd_udiff_finish(&d); /* a finished diff is accepted again */

    const uint8_t *z = size ? memchr(data, 0, size) : NULL;
    size_t half = z ? (size_t)(z - data) : size / 2;
    size_t rest = z ? half + 1 : half;
    check_make(text, half, text + rest, size - rest);
    uint64_t h = afd_fnv1a(AFD_FNV_INIT, data, size);
    if (h % 8 == 0)
        check_make(NULL, 0, text, size);
    else if (h % 8 == 1)
        check_make(text, size, NULL, 0);
    free(text);
    return 0;
}

#ifndef AFD_LIBFUZZER
/* The reader's landmarks: headers, hunk headers at the bounds, the no-newline marker, git's
 * extended headers and the lines that end or reset a file. */
static const fuzz_token DICT[] = {
    FUZZ_TOK("--- a/m.py\n+++ b/m.py\n"),
    FUZZ_TOK("--- /dev/null\n"),
    FUZZ_TOK("+++ /dev/null\n"),
    FUZZ_TOK("--- "),
    FUZZ_TOK("+++ "),
    FUZZ_TOK("@@ -1 +1 @@\n"),
    FUZZ_TOK("@@ -0,0 +1 @@\n"),
    FUZZ_TOK("@@ -1,0 +2,0 @@\n"),
    FUZZ_TOK("@@ -3,2 +3,3 @@ def f():\n"),
    FUZZ_TOK("@@ "),
    FUZZ_TOK(" @@"),
    FUZZ_TOK("-100000000"),
    FUZZ_TOK("+100000001"),
    FUZZ_TOK(",0"),
    FUZZ_TOK(",1"),
    FUZZ_TOK("\\ No newline at end of file\n"),
    FUZZ_TOK("diff --git a/m.py b/m.py\n"),
    FUZZ_TOK("index 83db48f..bf269f4 100644\n"),
    FUZZ_TOK("new file mode 100644\n"),
    FUZZ_TOK("rename from m.py\nrename to n.py\n"),
    FUZZ_TOK("-- \n"),
    FUZZ_TOK("--\n"),
    FUZZ_TOK("Binary files a/x.png and b/x.png differ\n"),
    FUZZ_TOK("\n"),
    FUZZ_TOK("\r\n"),
    FUZZ_TOK("\t"),
    FUZZ_TOK(" "),
    FUZZ_TOK("-"),
    FUZZ_TOK("+"),
    FUZZ_TOK("\\"),
    FUZZ_TOK("a/"),
    FUZZ_TOK(" x = 1\n"),
    FUZZ_TOK("-    return x\n"),
    FUZZ_TOK("+    return y\n"),
    FUZZ_TOK("\x00"),
};

static size_t fuzz_dictionary(const fuzz_token **out)
{
    *out = DICT;
    return sizeof DICT / sizeof DICT[0];
}
#endif
