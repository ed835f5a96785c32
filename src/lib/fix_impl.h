/* fix_impl.h -- what the fix synthesizers share (fix.c: parsing, the line edits and their
 * output, the regression test; fix_lock.c: LOCK and LOCK_ORDER; fix_order.c: AWAIT_TASK,
 * EVENT_GATE, EVENT_WAIT and OFFLOAD). Private to those files; the API is fix.h. */
#ifndef AFD_FIX_IMPL_H
#define AFD_FIX_IMPL_H

#include "afd.h"
#include "buf.h"
#include "fix.h"
#include "pyast.h"
#include "pyscan.h"

#include <stddef.h>
#include <stdint.h>

#define MAX_CHAIN 256u
#define MAX_SITES 16u

typedef struct line_edit {
    afd_buf before; /* lines inserted before this line */
    uint8_t indent; /* indent this line by one unit */
    uint8_t omit;   /* leave this line out (its replacement, if any, is in `before`) */
    uint8_t drop;   /* remove this many leading whitespace bytes (a dedent; checked when planned) */
} line_edit;

typedef struct fixctx {
    afd_pysrc ps;    /* Owned (fix_parse .. afd_fix_finish); its tree is parsed from a blanked copy */
    TSTree *tree;    /* Borrowed: ps.tree. */
    const char *src; /* Borrowed: the real source, the text edited and written out */
    size_t len;
    size_t n_lines;
    size_t *line_start; /* Owned: byte offset of each line; line_start[n_lines] == len */
    line_edit *edits;   /* Owned: one per line and one past the last */
    char *why;          /* Borrowed: the caller's reason buffer (may be NULL) */
    size_t whylen;
} fixctx;

/* Shared by the fix files; each is documented where it is defined. afd_fix_refuse writes the
 * reason and returns AFD_EINVAL. */
int afd_fix_refuse(fixctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
size_t afd_fix_statement_chain(TSNode root, uint32_t row, TSNode *chain, size_t cap);
int afd_fix_statement_at(fixctx *c, uint32_t line, const char *what, TSNode *st);
int afd_fix_async_statement_at(fixctx *c, uint32_t line, const char *what, const char *cannot, TSNode *st,
                               TSNode *fn);
size_t afd_fix_line_indent(const fixctx *c, uint32_t row, const char **at);
int afd_fix_has_multiline_string(TSNode n);
TSNode afd_fix_enclosing(TSNode n, enum afd_py_kind kind);
int afd_fix_is_async_def(TSNode fn);
int afd_fix_emit(const fixctx *c, afd_buf *out, const char *unit);
void afd_fix_finish(fixctx *c);
int afd_fix_start(fixctx *c, afd_buf *out);
int afd_fix_is_docstring(TSNode stmt);
uint32_t afd_fix_module_setup_row(TSNode module, int *has_asyncio, const char *src);
int afd_fix_text_is(const char *src, TSNode n, const char *s);
/* Two nodes of src spell the same text (0 when either is null). */
int afd_fix_same_text(const char *src, TSNode a, TSNode b);
int afd_fix_lock_for(fixctx *c, TSNode fn, const afd_lock_site *site, const char *owner, char *text,
                     size_t cap);
void afd_fix_indent_unit(const fixctx *c, TSNode fn, uint32_t row, char unit[16]);

#endif
