/* pysrc.h -- Python source parsed with tree-sitter, safely.
 *
 * Debian's libtree-sitter 0.20.7 crashes or goes quadratic on some inputs: a node of 65,536
 * children or more has its count wrapped (deleting the tree then double-frees), the grammar's
 * scanner rescans long runs of comment or continuation lines, and error recovery on garbage runs at
 * about 100 KB/s. Every parse of user source in this project goes through here (pyscan, the gate,
 * fix synthesis, pydef; what they share after the parse is pyast.h), so each of them gets the
 * same defences: a copy of the source with comments, brackets nested beyond CPython's limit and
 * long continuation runs blanked out (same length, same lines), a time limit, and a check that the
 * tree was not truncated. */
#ifndef AFD_PYSRC_H
#define AFD_PYSRC_H

#include <stddef.h>
#include <stdint.h>
#include <tree_sitter/api.h>

const TSLanguage *tree_sitter_python(void);

/* Called for each line where something was blanked because it would break the parser (a bracket
 * nested too deep, a continuation run too long; comments are blanked silently). A negative return
 * aborts the parse with that code. */
typedef int (*afd_pysrc_line_fn)(void *ctx, uint32_t line);

typedef struct afd_pysrc {
    char *text;       /* Owned: the blanked copy the tree was parsed from, NUL-terminated. */
    TSParser *parser; /* Owned. */
    TSTree *tree;     /* Owned; NULL unless the parse succeeded. */
} afd_pysrc;

/* Parses src[0..len). Returns 0 (tree set), AFD_EFULL when the parse ran out of time or the tree
 * came back truncated (that tree cannot be freed safely and is left allocated: a leak bounded by
 * the input), AFD_ENOMEM, or refused's negative code. refused may be NULL. afd_pysrc_finish must be
 * called whatever the result. */
int afd_pysrc_parse(afd_pysrc *p, const char *src, size_t len, afd_pysrc_line_fn refused, void *ctx);
void afd_pysrc_finish(afd_pysrc *p);

#endif
