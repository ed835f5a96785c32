/* udiff.h -- unified diffs: parse them, apply them, make them.
 *
 * Proposed fixes travel as unified diffs (what `git diff` and `diff -u` write), so the engine must
 * read a patch it did not write (a human's) without trusting it: parsing is bounds-checked and a
 * malformed diff is refused with AFD_EINVAL and a one-line message, never a crash. Accepted:
 *   - optional `diff --git`, `index`, mode, rename and similarity lines, free text before the
 *     first file (a commit message) and format-patch's `-- ` signature, which are skipped;
 *   - `--- a/path` then `+++ b/path` (the a/ and b/ prefixes are optional and stripped; anything
 *     after a tab, `diff -u`'s timestamp, is dropped; `/dev/null` marks a new or deleted file);
 *   - `@@ -l[,s] +l[,s] @@` hunks of ' ', '-' and '+' lines (an empty line counts as an empty
 *     context line, as some mailers strip the lone space) and `\ No newline at end of file`.
 * Git's quoted paths ("a/with space") are taken as written, quotes included.
 * Lines are split at '\n' only: a '\r' is part of the line's text, so CRLF files round-trip. */
#ifndef AFD_UDIFF_H
#define AFD_UDIFF_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/* Bounds: a hunk header's numbers and a side's line count beyond these are refused. */
#define AFD_UDIFF_MAX_LINENO 100000000u
#define AFD_UDIFF_MAX_MAKE_LINES 20000u

typedef struct afd_udiff_line {
    char op;          /* ' ' context, '-' removed, '+' added */
    uint8_t no_eol;   /* 1: the line has no newline (followed by `\ No newline at end of file`) */
    const char *text; /* Borrowed from the afd_udiff's copy of the diff; without the '\n' */
    size_t len;
} afd_udiff_line;

typedef struct afd_udiff_hunk {
    uint32_t old_start, old_count; /* as in the header; a start of 0 only with a count of 0 */
    uint32_t new_start, new_count;
    afd_udiff_line *lines; /* Owned */
    size_t n_lines;
} afd_udiff_hunk;

typedef struct afd_udiff_file {
    char *old_path; /* Owned, prefix stripped; NULL for a new file (`--- /dev/null`) */
    char *new_path; /* Owned, prefix stripped; NULL for a deleted file (`+++ /dev/null`) */
    int is_new, is_deleted;
    afd_udiff_hunk *hunks; /* Owned, in file order */
    size_t n_hunks;
} afd_udiff_file;

typedef struct afd_udiff {
    afd_udiff_file *files; /* Owned */
    size_t n_files;
    char *text; /* Owned copy of the diff the lines point into */
} afd_udiff;

/* Parses text[0..len). out is initialized here; finish it even on error. err (may be NULL) receives
 * a one-line message on failure. Returns 0, AFD_EINVAL (malformed: bad hunk header, counts that do
 * not match the lines, a hunk before any file header, numbers above AFD_UDIFF_MAX_LINENO, hunks out
 * of order), AFD_ENOMEM. */
int afd_udiff_parse(const char *text, size_t len, afd_udiff *out, char *err, size_t errlen);
void afd_udiff_finish(afd_udiff *d); /* Accepts a zeroed or finished diff. */

/* Applies f's hunks to orig[0..orig_len) (pass 0 bytes for a new file), appending the patched text
 * to out (nothing for a deleted file). Every context and removed line must match the original
 * exactly at the position its header gives (no fuzz, no offset search: a proposal is verified
 * against exactly the text it was made from). Returns 0, AFD_EINVAL ("hunk N of PATH does not
 * apply at line L"), AFD_ENOMEM. */
int afd_udiff_apply(const afd_udiff_file *f, const char *orig, size_t orig_len, afd_buf *out, char *err,
                    size_t errlen);

/* Appends a unified diff of one file (3 lines of context) turning before into after to out. before
 * NULL means a new file, after NULL a deleted one (`/dev/null` headers); path is written as
 * a/path and b/path. Identical texts append nothing. The line diff is Myers' (minimal) while the
 * edit distance stays small, and falls back to replacing the differing middle wholesale beyond
 * that (a valid, if larger, diff). Returns 0, AFD_EINVAL, AFD_EFULL (more than
 * AFD_UDIFF_MAX_MAKE_LINES lines on a side), AFD_ENOMEM. */
int afd_udiff_make(const char *path, const char *before, size_t before_len, const char *after,
                   size_t after_len, afd_buf *out);

#endif
