/* apply.h -- investigate --fix --apply: a verified fix written into the user's file, or nothing.
 *
 * The user's file is written only when it is byte-identical to the text the fix was computed from
 * (and, for the test's own file, to what it held when the investigation started): a fix computed on
 * old text would silently revert whatever changed meanwhile. The original is kept in FILE.orig,
 * which is never overwritten, except when it is recognisably the leftover of an apply killed
 * before its last rename (it holds exactly the file's bytes, and that apply's temporary file is
 * still beside the file): then replacing it loses nothing.
 * Both files are written through a temporary file in their own directory (write, fsync, rename,
 * fsync the directory), so a reader sees the old file or the new one, never half of either; on any
 * failure everything this call created is removed. */
#ifndef AFD_ENGINE_APPLY_H
#define AFD_ENGINE_APPLY_H

#include <stddef.h>

/* The suffix of the temporary files: FILE.affidavit-tmp beside the file written. One found there
 * that no running apply holds (flock) is the leftover of a killed apply and is removed. */
#define AFD_APPLY_TMP_SUFFIX ".affidavit-tmp"

typedef struct afd_apply_req {
    const char *file;     /* Borrowed. The path the fix names, as the user sees it (may be a symlink). */
    const char *analysed; /* Borrowed. The bytes the fix was computed from. */
    size_t analysed_len;
    /* Borrowed. The bytes of first_path when the investigation started, or NULL when not read; they
     * count only when first_path is the same file as `file`. */
    const char *first_seen;
    size_t first_seen_len;
    const char *first_path; /* Borrowed. */
    const char *text;       /* Borrowed. The patched text. */
    size_t text_len;
} afd_apply_req;

/* Writes req->text over req->file as described above. A symlink is written through: its target
 * is replaced atomically and the link stays a link; FILE.orig goes beside the link's own name.
 * Returns 0 when applied; AFD_EINVAL when refused (the file changed, is read-only, a backup is in
 * the way...), AFD_EIO when a write failed, AFD_ENOMEM. Either way note (notelen bytes) receives
 * one line saying what was done or why not ("not applied: FILE changed since it was analysed"). */
int afd_apply_fix(const afd_apply_req *req, char *note, size_t notelen);

#endif
