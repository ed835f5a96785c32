/* cause_chain.c -- which await a cause names when the task yielded through several user frames.
 *
 * The innermost user await of a suspension is often a latency helper (`await io()` three frames
 * down); what the user can act on is the await in the function that holds the accesses the cause
 * is about. Given the suspension's chain and the accesses' chains (outermost first), the frame
 * named is the lowest one all of them share: at every index above it the same call is in progress
 * (same file, line and function), and at it the same function runs. That is the function that
 * performs both the read and the write (or, for one access, the function the access and the
 * await are in); its await in progress during the suspension is the await named, and the frames
 * below it are the chain the sentence lists.
 *
 * The same meeting point of the two accesses' chains alone gives the statements of that function
 * that perform them or call down to them (common_file, common_first_line, common_second_line):
 * the span a lock in the lowest common caller must cover.
 *
 * Invariant: when the suspension had one user frame, or the frame found is the innermost one,
 * nothing changes (the caller names the suspension site as before). Workload: once per cause. */
#include "cause.h"
#include "afd.h"
#include "buf.h"
#include "fileio.h"
#include "pyast.h"
#include "pysrc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int afd_cause_add_frame(afd_cause *self, const char *file, uint32_t line, const char *function)
{
    afd_cause_frame *fr = realloc(self->await_chain, (self->n_await_chain + 1) * sizeof *fr);
    if (!fr)
        return AFD_ENOMEM;
    self->await_chain = fr;
    afd_cause_frame *f = &fr[self->n_await_chain];
    f->file = strdup(file ? file : "");
    f->function = strdup(function ? function : "");
    f->line = line;
    if (!f->file || !f->function) {
        free(f->file);
        free(f->function);
        return AFD_ENOMEM;
    }
    self->n_await_chain++;
    return 0;
}

/* Whether two frames can be one function: the same file (or one unknown) and the same function
 * (or one unknown: a lone frame's function is not recorded). */
static int same_function(const afd_xframe *x, const afd_xframe *y)
{
    if (x->file[0] && y->file[0] && strcmp(x->file, y->file) != 0)
        return 0;
    return !x->function[0] || !y->function[0] || strcmp(x->function, y->function) == 0;
}

/* Whether two frames are one call in progress: one function at one line. */
static int same_call(const afd_xframe *x, const afd_xframe *y)
{
    return x->line == y->line && x->line && same_function(x, y) && x->function[0] && y->function[0];
}

/* The lowest frame index common to the n chains ch[i] of lengths len[i] (see the file comment),
 * or -1 when even the outermost frames differ. */
static int common_depth(afd_xframe *const *ch, const size_t *len, size_t n)
{
    for (size_t i = 1; i < n; i++)
        if (!same_function(&ch[0][0], &ch[i][0]))
            return -1;
    size_t k = 0;
    for (;;) {
        int deeper = 1;
        for (size_t i = 0; i < n && deeper; i++)
            deeper = k + 1 < len[i];
        for (size_t i = 1; i < n && deeper; i++)
            deeper = same_call(&ch[0][k], &ch[i][k]) && same_function(&ch[0][k + 1], &ch[i][k + 1]);
        if (!deeper)
            return (int)k;
        k++;
    }
}

/* The source text of line `line` of file, trimmed, into out ("" when it cannot be read). */
static void source_line(const char *file, uint32_t line, char *out, size_t cap)
{
    out[0] = 0;
    char *text = NULL;
    size_t len = 0;
    if (!line || afd_file_read(file, 4u << 20, &text, &len) != 0)
        return;
    const char *p = text, *end = text + len;
    for (uint32_t l = 1; l < line && p < end; l++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        p = nl ? nl + 1 : end;
    }
    const char *e = memchr(p, '\n', (size_t)(end - p));
    if (!e)
        e = end;
    while (p < e && (*p == ' ' || *p == '\t'))
        p++;
    while (e > p && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
        e--;
    /* a trailing comment is the user's note, not the await */
    const char *hash = memchr(p, '#', (size_t)(e - p));
    if (hash)
        for (e = hash; e > p && (e[-1] == ' ' || e[-1] == '\t'); e--)
            ;
    size_t n = (size_t)(e - p);
    int printable = 1;
    for (size_t i = 0; i < n; i++)
        printable &= (unsigned char)p[i] >= 0x20 && p[i] != 0x7f && p[i] != '`';
    if (printable && n && n < cap)
        snprintf(out, cap, "%.*s", (int)n, p);
    free(text);
}

/* "f() at file:line" of a frame whose function is not `common`, into out ("" otherwise). */
static void callee_text(const afd_xframe *innermost, const char *common, char *out, size_t cap)
{
    out[0] = 0;
    if (innermost->function[0] && strcmp(innermost->function, common) != 0)
        snprintf(out, cap, "%s() at %s:%u", innermost->function, innermost->file, (unsigned)innermost->line);
}

/* Whether the innermost function definition holding 1-based line `line` of file is an `async def`
 * (0 when it is not, or the file cannot be read or parsed). */
static int function_is_async(const char *file, uint32_t line)
{
    char *text = NULL;
    size_t len = 0;
    int is_async = 0;
    if (!line || afd_file_read(file, 4u << 20, &text, &len) != 0)
        return 0;
    afd_pysrc ps = {0};
    if (afd_pysrc_parse(&ps, text, len, NULL, NULL) == 0) {
        /* the node at the line's first non-blank column: the statement there, not a block around it */
        const char *p = text, *end = text + len;
        for (uint32_t l = 1; l < line && p < end; l++) {
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            p = nl ? nl + 1 : end;
        }
        uint32_t col = 0;
        while (p + col < end && (p[col] == ' ' || p[col] == '\t'))
            col++;
        TSPoint at = {line - 1, col};
        TSNode n = ts_node_named_descendant_for_point_range(ts_tree_root_node(ps.tree), at, at);
        for (; !ts_node_is_null(n); n = ts_node_parent(n))
            if (afd_pyast_is(n, AFD_PY_FUNCTION_DEFINITION) && ts_node_start_point(n).row < line - 1)
                break;
        is_async = !ts_node_is_null(n) && ts_node_child_count(n) > 0 &&
                   afd_pyast_is_token(ts_node_child(n, 0), "async");
    }
    afd_pysrc_finish(&ps);
    free(text);
    return is_async;
}

/* The statements of the lowest function both accesses' chains are in (see the file comment) into
 * out's common_* fields, left zero when the chains do not meet or a line is unknown. */
static void common_span(const afd_view *v, const afd_xaccess *a, const afd_xaccess *b, afd_cause_await *out)
{
    afd_xframe af[AFD_CHAIN_MAX_FRAMES], bf[AFD_CHAIN_MAX_FRAMES];
    size_t na = afd_view_access_frames(v, a, af), nb = afd_view_access_frames(v, b, bf);
    afd_xframe *ch[2] = {af, bf};
    size_t len[2] = {na, nb};
    int k = common_depth(ch, len, 2);
    if (k < 0)
        return;
    const afd_xframe *x = &af[k], *y = &bf[k];
    const char *file = x->file[0] ? x->file : y->file;
    if (!file[0] || !x->line || !y->line)
        return;
    snprintf(out->common_file, sizeof out->common_file, "%s", file);
    out->common_first_line = x->line;
    out->common_second_line = y->line;
    out->common_async = function_is_async(file, x->line);
}

int afd_cause_chain_await(afd_cause *c, const afd_view *v, const afd_xaccess *a, const afd_xaccess *b,
                          const afd_xstep *s, afd_cause_await *out)
{
    memset(out, 0, sizeof *out);
    if (b != a)
        common_span(v, a, b, out);
    afd_xframe sf[AFD_CHAIN_MAX_FRAMES], af[AFD_CHAIN_MAX_FRAMES], bf[AFD_CHAIN_MAX_FRAMES];
    size_t ns = afd_view_chain(v->tr, s->chain, sf, AFD_CHAIN_MAX_FRAMES);
    if (ns < 2)
        return 0; /* one user frame: its await is the one named */
    size_t na = afd_view_access_frames(v, a, af);
    size_t nb = b == a ? 0 : afd_view_access_frames(v, b, bf);
    afd_xframe *ch[3] = {sf, af, bf};
    size_t len[3] = {ns, na, nb};
    int k = common_depth(ch, len, nb ? 3 : 2);
    if (k < 0 || (size_t)k + 1 >= ns)
        return 0; /* the innermost frame is the common one, or the chains do not meet */
    const afd_xframe *named = &sf[k];
    snprintf(out->site, sizeof out->site, "%s:%u", named->file, (unsigned)named->line);
    snprintf(out->common, sizeof out->common, "%s", named->function);
    source_line(named->file, named->line, out->source, sizeof out->source);
    callee_text(&af[na - 1], out->common, out->read_in, sizeof out->read_in);
    if (nb)
        callee_text(&bf[nb - 1], out->common, out->write_in, sizeof out->write_in);
    for (size_t i = (size_t)k + 1; i < ns; i++)
        if (afd_cause_add_frame(c, sf[i].file, sf[i].line, sf[i].function) < 0)
            return AFD_ENOMEM;
    return 1;
}

void afd_cause_await_text(afd_buf *b, const afd_cause *c, const afd_cause_await *aw)
{
    afd_buf_printf(b, "%s", aw->site);
    if (aw->source[0])
        afd_buf_printf(b, " `%s`", aw->source);
    for (size_t i = 0; i < c->n_await_chain; i++) {
        const afd_cause_frame *f = &c->await_chain[i];
        afd_buf_printf(b, "%s%s() at %s:%u", i ? ", " : ", via ", f->function[0] ? f->function : "?", f->file,
                       (unsigned)f->line);
    }
}
