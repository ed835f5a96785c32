/* udiff.c -- unified diffs: parse, apply, make (see udiff.h). */
#include "udiff.h"
#include "afd.h"
#include "buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONTEXT 3u
/* Myers keeps one V array per edit step: D steps cost D^2 integers. Beyond this many steps the
 * differing middle is replaced wholesale instead (8 MB of trace at most). */
#define MAX_EDIT_STEPS 1000

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return AFD_EINVAL;
}

static int starts(const char *s, size_t n, const char *pfx)
{
    size_t k = strlen(pfx);
    return n >= k && memcmp(s, pfx, k) == 0;
}

/* ---- parse ---- */

/* The path of a `--- ` / `+++ ` line: up to a tab, trailing blanks dropped, the a/ or b/ prefix
 * stripped. NULL with *dev_null set for /dev/null. */
static int header_path(const char *s, size_t n, char pfx, char **out, int *dev_null)
{
    size_t e = 0;
    while (e < n && s[e] != '\t')
        e++;
    while (e > 0 && (s[e - 1] == ' ' || s[e - 1] == '\r'))
        e--;
    *out = NULL;
    *dev_null = e == 9 && memcmp(s, "/dev/null", 9) == 0;
    if (*dev_null)
        return 0;
    if (e >= 2 && s[0] == pfx && s[1] == '/') {
        s += 2;
        e -= 2;
    }
    char *p = malloc(e + 1);
    if (!p)
        return AFD_ENOMEM;
    memcpy(p, s, e);
    p[e] = 0;
    *out = p;
    return 0;
}

/* A decimal number at *p (advanced), at most AFD_UDIFF_MAX_LINENO. */
static int read_num(const char **p, const char *end, uint32_t *v)
{
    const char *s = *p;
    uint64_t x = 0;
    if (s >= end || *s < '0' || *s > '9')
        return -1;
    while (s < end && *s >= '0' && *s <= '9') {
        x = x * 10 + (uint64_t)(*s - '0');
        if (x > AFD_UDIFF_MAX_LINENO)
            return -1;
        s++;
    }
    *p = s;
    *v = (uint32_t)x;
    return 0;
}

static int read_range(const char **p, const char *end, char sign, uint32_t *start, uint32_t *count)
{
    if (*p >= end || **p != sign)
        return -1;
    (*p)++;
    if (read_num(p, end, start) < 0)
        return -1;
    *count = 1;
    if (*p < end && **p == ',') {
        (*p)++;
        if (read_num(p, end, count) < 0)
            return -1;
    }
    return 0;
}

static int parse_hunk_header(const char *s, size_t n, afd_udiff_hunk *h)
{
    const char *p = s + 3, *end = s + n; /* after "@@ " */
    if (read_range(&p, end, '-', &h->old_start, &h->old_count) < 0)
        return -1;
    if (p >= end || *p++ != ' ')
        return -1;
    if (read_range(&p, end, '+', &h->new_start, &h->new_count) < 0)
        return -1;
    if (end - p < 3 || memcmp(p, " @@", 3) != 0)
        return -1;
    /* A start of 0 is only the "before line 1" of an empty range. */
    if ((h->old_start == 0 && h->old_count) || (h->new_start == 0 && h->new_count))
        return -1;
    return 0;
}

int afd_udiff_parse(const char *text, size_t len, afd_udiff *out, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = 0;
    if (!out)
        return fail(err, errlen, "no output");
    memset(out, 0, sizeof *out);
    if (!text && len)
        return fail(err, errlen, "no input");
    out->text = malloc(len + 1);
    if (!out->text)
        return AFD_ENOMEM;
    if (len)
        memcpy(out->text, text, len);
    out->text[len] = 0;
    const char *s = out->text;
    size_t cap_files = 0, cap_hunks = 0, cap_lines = 0;
    afd_udiff_file *f = NULL;
    afd_udiff_hunk *h = NULL;
    uint32_t need_old = 0, need_new = 0; /* lines the open hunk still expects */
    size_t lineno = 0, pos = 0;
    int rc = 0;
    while (pos < len && rc == 0) {
        const char *l = s + pos;
        const char *nl = memchr(l, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - l) : len - pos;
        pos += n + (nl != NULL);
        lineno++;
        if (h && (need_old || need_new)) {
            char op = n ? l[0] : ' ';
            if (op == '\\') {
                if (h->n_lines == 0)
                    return fail(err, errlen, "line %zu: '\\' marker before any hunk line", lineno);
                h->lines[h->n_lines - 1].no_eol = 1;
                continue;
            }
            if (op != ' ' && op != '-' && op != '+')
                return fail(err, errlen, "line %zu: hunk shorter than its header says", lineno);
            if ((op != '+' && need_old == 0) || (op != '-' && need_new == 0))
                return fail(err, errlen, "line %zu: hunk lines do not match the header's counts", lineno);
            need_old -= op != '+';
            need_new -= op != '-';
            rc = afd_array_grow((void **)&h->lines, &cap_lines, h->n_lines + 1, sizeof *h->lines, 8);
            if (rc < 0)
                break;
            h->lines[h->n_lines++] = (afd_udiff_line){op, 0, n ? l + 1 : l, n ? n - 1 : 0};
            continue;
        }
        if (n > 0 && l[0] == '\\') {
            if (!h || h->n_lines == 0)
                return fail(err, errlen, "line %zu: '\\' marker outside a hunk", lineno);
            h->lines[h->n_lines - 1].no_eol = 1;
            continue;
        }
        if (starts(l, n, "--- ") && pos < len && starts(s + pos, len - pos, "+++ ")) {
            const char *l2 = s + pos;
            const char *nl2 = memchr(l2, '\n', len - pos);
            size_t n2 = nl2 ? (size_t)(nl2 - l2) : len - pos;
            pos += n2 + (nl2 != NULL);
            lineno++;
            rc = afd_array_grow((void **)&out->files, &cap_files, out->n_files + 1, sizeof *out->files, 8);
            if (rc < 0)
                break;
            f = &out->files[out->n_files++];
            memset(f, 0, sizeof *f);
            h = NULL;
            cap_hunks = 0;
            if ((rc = header_path(l + 4, n - 4, 'a', &f->old_path, &f->is_new)) < 0 ||
                (rc = header_path(l2 + 4, n2 - 4, 'b', &f->new_path, &f->is_deleted)) < 0)
                break;
            if (f->is_new && f->is_deleted)
                return fail(err, errlen, "line %zu: both sides are /dev/null", lineno);
            continue;
        }
        if (starts(l, n, "@@ ")) {
            if (!f)
                return fail(err, errlen, "line %zu: hunk before any file header", lineno);
            afd_udiff_hunk hh;
            memset(&hh, 0, sizeof hh);
            if (parse_hunk_header(l, n, &hh) < 0)
                return fail(err, errlen, "line %zu: bad hunk header", lineno);
            if (f->n_hunks) {
                const afd_udiff_hunk *prev = &f->hunks[f->n_hunks - 1];
                if (hh.old_start < prev->old_start + prev->old_count)
                    return fail(err, errlen, "line %zu: hunks overlap or are out of order", lineno);
            }
            if ((f->is_new && (hh.old_count || hh.old_start)) ||
                (f->is_deleted && (hh.new_count || hh.new_start)))
                return fail(err, errlen, "line %zu: hunk does not fit a new or deleted file", lineno);
            if (hh.old_count == 0 && hh.new_count == 0)
                return fail(err, errlen, "line %zu: empty hunk", lineno);
            rc = afd_array_grow((void **)&f->hunks, &cap_hunks, f->n_hunks + 1, sizeof *f->hunks, 8);
            if (rc < 0)
                break;
            h = &f->hunks[f->n_hunks++];
            *h = hh;
            cap_lines = 0;
            need_old = h->old_count;
            need_new = h->new_count;
            continue;
        }
        if (n >= 2 && n <= 3 && memcmp(l, "-- ", n) == 0) {
            /* git format-patch's signature separator: what follows is the git version. */
            f = NULL;
            h = NULL;
            continue;
        }
        if (h && n > 0 && (l[0] == '+' || l[0] == '-' || l[0] == ' '))
            return fail(err, errlen, "line %zu: hunk longer than its header says", lineno);
        /* Anything else (git's extended headers, a commit message, a blank line between files)
         * carries nothing to apply: the next file header resets the state. */
        if (starts(l, n, "diff ")) {
            f = NULL;
            h = NULL;
        }
    }
    if (rc < 0)
        return rc;
    if (h && (need_old || need_new))
        return fail(err, errlen, "hunk at end of input is shorter than its header says");
    for (size_t i = 0; i < out->n_files; i++)
        if (out->files[i].n_hunks == 0 && (out->files[i].is_new || out->files[i].is_deleted) == 0)
            return fail(err, errlen, "file %s has a header but no hunks",
                        out->files[i].new_path ? out->files[i].new_path : "?");
    return 0;
}

void afd_udiff_finish(afd_udiff *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->n_files; i++) {
        afd_udiff_file *f = &d->files[i];
        for (size_t j = 0; j < f->n_hunks; j++)
            free(f->hunks[j].lines);
        free(f->hunks);
        free(f->old_path);
        free(f->new_path);
    }
    free(d->files);
    free(d->text);
    memset(d, 0, sizeof *d);
}

/* ---- lines of a text ---- */

typedef struct tline {
    const char *s;
    size_t len; /* without the '\n' */
    int nl;     /* ends with '\n' */
    uint64_t h;
} tline;

static int split_lines(const char *t, size_t n, tline **out, size_t *count, size_t max)
{
    *out = NULL;
    *count = 0;
    size_t cap = 0, pos = 0;
    while (pos < n) {
        const char *nl = memchr(t + pos, '\n', n - pos);
        size_t len = nl ? (size_t)(nl - (t + pos)) : n - pos;
        if (*count >= max) {
            free(*out);
            *out = NULL;
            return AFD_EFULL;
        }
        if (afd_array_grow((void **)out, &cap, *count + 1, sizeof **out, 8) < 0) {
            free(*out);
            *out = NULL;
            return AFD_ENOMEM;
        }
        tline *l = &(*out)[(*count)++];
        *l = (tline){t + pos, len, nl != NULL, afd_fnv1a(AFD_FNV_INIT, t + pos, len) ^ (nl != NULL)};
        pos += len + (nl != NULL);
    }
    return 0;
}

/* ---- apply ---- */

int afd_udiff_apply(const afd_udiff_file *f, const char *orig, size_t orig_len, afd_buf *out, char *err,
                    size_t errlen)
{
    if (err && errlen)
        err[0] = 0;
    if (!f || !out || (!orig && orig_len))
        return fail(err, errlen, "invalid argument");
    const char *path = f->new_path ? f->new_path : f->old_path ? f->old_path : "?";
    if (f->is_new && orig_len)
        return fail(err, errlen, "%s is a new file but the original is not empty", path);
    tline *ol;
    size_t on;
    int rc = split_lines(orig ? orig : "", orig_len, &ol, &on, (size_t)AFD_UDIFF_MAX_LINENO);
    if (rc < 0)
        return rc;
    size_t cur = 0; /* next original line to copy */
    for (size_t hi = 0; hi < f->n_hunks && rc == 0; hi++) {
        const afd_udiff_hunk *h = &f->hunks[hi];
        size_t at = h->old_count ? (size_t)h->old_start - 1 : (size_t)h->old_start;
        if (at < cur || at > on) {
            rc = fail(err, errlen, "hunk %zu of %s does not apply at line %zu", hi + 1, path, at + 1);
            break;
        }
        /* Lines before a deleted file's hunk would be output, yet a deleted file yields nothing. */
        if (f->is_deleted && at > cur) {
            rc = fail(err, errlen, "%s is deleted but line %zu is left", path, cur + 1);
            break;
        }
        for (; cur < at; cur++)
            afd_buf_put(out, ol[cur].s, ol[cur].len + (size_t)ol[cur].nl);
        for (size_t i = 0; i < h->n_lines; i++) {
            const afd_udiff_line *l = &h->lines[i];
            if (l->op != '+') {
                if (cur >= on || ol[cur].len != l->len || memcmp(ol[cur].s, l->text, l->len) != 0 ||
                    ol[cur].nl != !l->no_eol) {
                    rc =
                        fail(err, errlen, "hunk %zu of %s does not apply at line %zu", hi + 1, path, cur + 1);
                    break;
                }
                cur++;
            }
            if (l->op != '-') {
                afd_buf_put(out, l->text, l->len);
                if (!l->no_eol)
                    afd_buf_put_u8(out, '\n');
            }
        }
    }
    if (rc == 0 && f->is_deleted && cur < on)
        rc = fail(err, errlen, "%s is deleted but lines from %zu on are left", path, cur + 1);
    if (rc == 0) {
        for (; cur < on; cur++)
            afd_buf_put(out, ol[cur].s, ol[cur].len + (size_t)ol[cur].nl);
        if (out->err)
            rc = out->err;
    }
    free(ol);
    return rc;
}

/* ---- make ---- */

static int line_eq(const tline *a, const tline *b)
{
    return a->h == b->h && a->len == b->len && a->nl == b->nl && memcmp(a->s, b->s, a->len) == 0;
}

/* Myers' greedy diff of a[0..n) and b[0..m): fills ops ('=', '-', '+', in order, at most n + m).
 * Returns 1 when the edit distance exceeds MAX_EDIT_STEPS (ops untouched), 0, AFD_ENOMEM. */
static int myers(const tline *a, size_t n, const tline *b, size_t m, char *ops, size_t *n_ops)
{
    long max = (long)(n + m);
    long dmax = max < MAX_EDIT_STEPS ? max : MAX_EDIT_STEPS;
    long off = dmax + 1;
    long width = 2 * dmax + 3;
    long *v = calloc((size_t)width, sizeof *v);
    /* trace[d] = V after step d, over k in [-d, d] (2d + 1 entries). */
    long *trace = malloc(sizeof *trace * (size_t)((dmax + 1) * (dmax + 1) + dmax + 1));
    size_t *tstart = malloc(sizeof *tstart * (size_t)(dmax + 1));
    if (!v || !trace || !tstart) {
        free(v);
        free(trace);
        free(tstart);
        return AFD_ENOMEM;
    }
    long dfound = -1;
    size_t tpos = 0;
    for (long d = 0; d <= dmax && dfound < 0; d++) {
        for (long k = -d; k <= d; k += 2) {
            long x;
            if (k == -d || (k != d && v[off + k - 1] < v[off + k + 1]))
                x = v[off + k + 1];
            else
                x = v[off + k - 1] + 1;
            long y = x - k;
            while (x < (long)n && y < (long)m && line_eq(&a[x], &b[y])) {
                x++;
                y++;
            }
            v[off + k] = x;
            if (x >= (long)n && y >= (long)m) {
                dfound = d;
            }
        }
        tstart[d] = tpos;
        for (long k = -d; k <= d; k++)
            trace[tpos++] = v[off + k];
        if (dfound >= 0)
            break;
    }
    if (dfound < 0) {
        free(v);
        free(trace);
        free(tstart);
        return 1;
    }
    /* Backtrack from (n, m), writing ops from the end. */
    size_t w = n + m;
    long x = (long)n, y = (long)m;
    for (long d = dfound; d > 0; d--) {
        const long *pv = trace + tstart[d - 1]; /* index k + (d - 1) */
        long k = x - y;
        long pk;
        if (k == -d || (k != d && pv[k - 1 + (d - 1)] < pv[k + 1 + (d - 1)]))
            pk = k + 1;
        else
            pk = k - 1;
        long px = pv[pk + (d - 1)], py = px - pk;
        while (x > px && y > py) {
            ops[--w] = '=';
            x--;
            y--;
        }
        if (x == px)
            ops[--w] = '+';
        else
            ops[--w] = '-';
        x = px;
        y = py;
    }
    while (x > 0 && y > 0) {
        ops[--w] = '=';
        x--;
        y--;
    }
    size_t k = 0;
    for (size_t i = w; i < n + m; i++)
        ops[k++] = ops[i];
    *n_ops = k;
    free(v);
    free(trace);
    free(tstart);
    return 0;
}

static void put_line(afd_buf *out, char op, const tline *l)
{
    afd_buf_put_u8(out, (uint8_t)op);
    afd_buf_put(out, l->s, l->len);
    afd_buf_put_u8(out, '\n');
    if (!l->nl)
        afd_buf_printf(out, "\\ No newline at end of file\n");
}

static void put_range(afd_buf *out, char sign, size_t start, size_t count)
{
    /* GNU and git: an empty range names the line before it; a count of 1 is left out. */
    size_t shown = count ? start + 1 : start;
    if (count == 1)
        afd_buf_printf(out, "%c%zu", sign, shown);
    else
        afd_buf_printf(out, "%c%zu,%zu", sign, shown, count);
}

int afd_udiff_make(const char *path, const char *before, size_t before_len, const char *after,
                   size_t after_len, afd_buf *out)
{
    if (!path || !out || (!before && before_len) || (!after && after_len) || (!before && !after))
        return AFD_EINVAL;
    tline *a = NULL, *b = NULL;
    size_t n = 0, m = 0;
    int rc = split_lines(before ? before : "", before_len, &a, &n, AFD_UDIFF_MAX_MAKE_LINES);
    if (rc == 0)
        rc = split_lines(after ? after : "", after_len, &b, &m, AFD_UDIFF_MAX_MAKE_LINES);
    /* Common prefix and suffix are matched first: most patches touch a few lines of a long file. */
    size_t pre = 0, suf = 0;
    while (rc == 0 && pre < n && pre < m && line_eq(&a[pre], &b[pre]))
        pre++;
    while (rc == 0 && suf < n - pre && suf < m - pre && line_eq(&a[n - 1 - suf], &b[m - 1 - suf]))
        suf++;
    char *ops = rc == 0 ? malloc(n + m + 1) : NULL;
    if (rc == 0 && !ops)
        rc = AFD_ENOMEM;
    size_t n_ops = 0;
    if (rc == 0) {
        memset(ops, '=', pre);
        n_ops = pre;
        size_t mid_n = n - pre - suf, mid_m = m - pre - suf, k = 0;
        /* An empty side has no line array (NULL), and NULL + 0 is undefined in C. */
        rc = myers(n ? a + pre : a, mid_n, m ? b + pre : b, mid_m, ops + pre, &k);
        if (rc == 1) { /* too different: replace the middle wholesale */
            memset(ops + pre, '-', mid_n);
            memset(ops + pre + mid_n, '+', mid_m);
            k = mid_n + mid_m;
            rc = 0;
        }
        n_ops += k;
        memset(ops + n_ops, '=', suf);
        n_ops += suf;
    }
    if (rc == 0 && (before == NULL || after == NULL || pre < n || pre < m)) {
        if (before)
            afd_buf_printf(out, "--- a/%s\n", path);
        else
            afd_buf_printf(out, "--- /dev/null\n");
        if (after)
            afd_buf_printf(out, "+++ b/%s\n", path);
        else
            afd_buf_printf(out, "+++ /dev/null\n");
        /* Position of each op in a and b. */
        size_t i = 0;
        while (i < n_ops) {
            if (ops[i] == '=') {
                i++;
                continue;
            }
            /* A hunk: from CONTEXT lines before this change to CONTEXT after the last change
             * that is at most 2 * CONTEXT equal lines from the previous one. */
            size_t start = i >= CONTEXT ? i - CONTEXT : 0;
            while (start < i && ops[start] != '=')
                start++;
            size_t end = i;
            for (;;) {
                while (end < n_ops && ops[end] != '=')
                    end++;
                size_t eq = end;
                while (eq < n_ops && ops[eq] == '=')
                    eq++;
                if (eq < n_ops && eq - end <= 2 * CONTEXT) {
                    end = eq;
                    continue;
                }
                end = end + CONTEXT < n_ops ? end + CONTEXT : n_ops;
                if (end > eq)
                    end = eq;
                break;
            }
            size_t ai = 0, bi = 0;
            for (size_t j = 0; j < start; j++) {
                ai += ops[j] != '+';
                bi += ops[j] != '-';
            }
            size_t ac = 0, bc = 0;
            for (size_t j = start; j < end; j++) {
                ac += ops[j] != '+';
                bc += ops[j] != '-';
            }
            afd_buf_printf(out, "@@ ");
            put_range(out, '-', ai, ac);
            afd_buf_put_u8(out, ' ');
            put_range(out, '+', bi, bc);
            afd_buf_printf(out, " @@\n");
            for (size_t j = start; j < end; j++) {
                if (ops[j] == '=')
                    put_line(out, ' ', &a[ai++]), bi++;
                else if (ops[j] == '-')
                    put_line(out, '-', &a[ai++]);
                else
                    put_line(out, '+', &b[bi++]);
            }
            i = end;
        }
        if (out->err)
            rc = out->err;
    }
    free(ops);
    free(a);
    free(b);
    return rc;
}
