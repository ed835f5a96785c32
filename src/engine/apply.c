/* apply.c -- writing a verified fix into the user's file, atomically, or not at all (apply.h).
 *
 * Invariant: after afd_apply_fix returns, FILE holds either its old bytes or the fix, FILE.orig
 * exists only if the fix was applied or it existed before, and no temporary file of this call is
 * left. A SIGKILL at any point leaves at most the temporary files (removed by the next apply) and,
 * when it came after the backup was placed, a FILE.orig identical to FILE next to FILE's
 * temporary file: the next apply recognises that pair and replaces the backup. Runs once per investigation,
 * on one file of at most AFD_PYSCAN_MAX_SOURCE bytes: every check re-reads the file whole. */
#include "apply.h"
#include "afd.h"
#include "cmds.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* One "not applied: ..." (or "applied ...") line into the caller's note. */
static void say(char *note, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *note, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(note, len, fmt, ap);
    va_end(ap);
}

static int same_bytes(const char *a, size_t alen, const char *b, size_t blen)
{
    return alen == blen && (alen == 0 || memcmp(a, b, alen) == 0);
}

/* Whether path names a regular file holding exactly data[0..len). */
static int holds(const char *path, const char *data, size_t len)
{
    size_t got = 0;
    char *now = afd_read_source_file(path, &got);
    int same = now && same_bytes(now, got, data, len);
    free(now);
    return same;
}

/* Removes tmp when it is the leftover of a killed apply: a regular file that no live apply holds
 * locked. *removed says whether there was one. AFD_EINVAL (with the note) when another apply is
 * writing it right now, or the name is taken by something that is not such a leftover. */
static int clear_stale_temp(const char *tmp, int *removed, char *note, size_t len)
{
    struct stat st;
    if (lstat(tmp, &st) != 0) {
        if (errno == ENOENT)
            return 0;
        say(note, len, "not applied: cannot inspect %.400s: %s", tmp, strerror(errno));
        return AFD_EIO;
    }
    if (!S_ISREG(st.st_mode)) {
        say(note, len, "not applied: %.400s exists and is not a file affidavit left", tmp);
        return AFD_EINVAL;
    }
    int fd = open(tmp, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        say(note, len, "not applied: cannot open %.400s: %s", tmp, strerror(errno));
        return AFD_EIO;
    }
    int rc = 0;
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        say(note, len, "not applied: another affidavit --apply is writing %.400s", tmp);
        rc = AFD_EINVAL;
    } else if (unlink(tmp) != 0) {
        say(note, len, "not applied: cannot remove the stale %.400s: %s", tmp, strerror(errno));
        rc = AFD_EIO;
    } else {
        *removed = 1;
    }
    close(fd);
    return rc;
}

/* Creates tmp (it must not exist), locks it so that no other apply takes it for a leftover, and
 * writes data with the mode and owner of `like`, synced to disk. The open descriptor, which holds
 * the lock, goes to *fd_out (the caller closes it after the rename). On failure tmp is removed. */
static int write_temp(const char *tmp, const char *data, size_t len, const struct stat *like, int *fd_out,
                      char *note, size_t notelen)
{
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        say(note, notelen, "not applied: cannot create %.400s: %s", tmp, strerror(errno));
        return AFD_EIO;
    }
    int ok = flock(fd, LOCK_EX | LOCK_NB) == 0;
    for (size_t off = 0; ok && off < len;) {
        ssize_t n = write(fd, data + off, len - off);
        if (n < 0 && errno == EINTR)
            continue;
        ok = n > 0;
        off += ok ? (size_t)n : 0;
    }
    /* The owner first: chown clears the set-id bits, which fchmod then restores. As another user
     * than the file's owner chown fails, and the file is then this user's, as any editor leaves it. */
    if (ok && fchown(fd, like->st_uid, like->st_gid) != 0 && errno != EPERM)
        ok = 0;
    ok = ok && fchmod(fd, like->st_mode & 07777) == 0 && fsync(fd) == 0;
    if (!ok) {
        say(note, notelen, "not applied: cannot write %.400s: %s", tmp, strerror(errno ? errno : EIO));
        unlink(tmp);
        close(fd);
        return AFD_EIO;
    }
    *fd_out = fd;
    return 0;
}

/* Syncs the directory holding path, so that a rename into it survives a crash. */
static void sync_dir_of(const char *path)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        dir[1] = 0;
    else
        *slash = 0;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

/* What the file is and where its bytes live: the target of a symlink, or the file itself. Refuses
 * what a rename cannot replace faithfully (not a regular file, read-only, several hard links). */
static int resolve_target(const char *file, char *target, size_t tlen, int *is_link, struct stat *st,
                          char *note, size_t len)
{
    struct stat lst;
    if (lstat(file, &lst) != 0) {
        say(note, len, "not applied: cannot stat %.400s: %s", file, strerror(errno));
        return AFD_EIO;
    }
    *is_link = S_ISLNK(lst.st_mode);
    char real[PATH_MAX];
    if (*is_link && !realpath(file, real)) {
        say(note, len, "not applied: cannot resolve the symlink %.400s: %s", file, strerror(errno));
        return AFD_EIO;
    }
    if ((size_t)snprintf(target, tlen, "%s", *is_link ? real : file) >= tlen) {
        say(note, len, "not applied: the path of %.400s is too long", file);
        return AFD_EINVAL;
    }
    if (stat(target, st) != 0 || !S_ISREG(st->st_mode)) {
        say(note, len, "not applied: %.400s is not a regular file", file);
        return AFD_EINVAL;
    }
    /* root may write anything: the mode is the user's word, not the kernel's check */
    if (!(st->st_mode & (S_IWUSR | S_IWGRP | S_IWOTH))) {
        say(note, len, "not applied: %.400s is read-only (mode %04o): make it writable to apply the fix",
            file, (unsigned)(st->st_mode & 07777));
        return AFD_EINVAL;
    }
    if (st->st_nlink > 1) {
        say(note, len,
            "not applied: %.400s has %lu hard links, and replacing it would leave the others unpatched", file,
            (unsigned long)st->st_nlink);
        return AFD_EINVAL;
    }
    return 0;
}

/* The file's bytes now against the fix's source text and, for the test's own file, against the
 * bytes the investigation started with. */
static int check_unchanged(const afd_apply_req *req, const char *target, char **cur, size_t *cur_len,
                           char *note, size_t len)
{
    *cur = afd_read_source_file(target, cur_len);
    if (!*cur) {
        say(note, len, "not applied: cannot read %.400s", req->file);
        return AFD_EIO;
    }
    if (!same_bytes(*cur, *cur_len, req->analysed, req->analysed_len)) {
        say(note, len,
            "not applied: %.400s changed since it was analysed (%zu bytes then, %zu now): "
            "investigate again",
            req->file, req->analysed_len, *cur_len);
        return AFD_EINVAL;
    }
    char a[PATH_MAX], b[PATH_MAX];
    if (req->first_seen && req->first_path && realpath(req->first_path, a) && realpath(target, b) &&
        strcmp(a, b) == 0 && !same_bytes(req->first_seen, req->first_seen_len, *cur, *cur_len)) {
        say(note, len,
            "not applied: %.400s changed since it was analysed (it changed while the investigation "
            "ran: %zu bytes at the start, %zu now): investigate again",
            req->file, req->first_seen_len, *cur_len);
        return AFD_EINVAL;
    }
    return 0;
}

int afd_apply_fix(const afd_apply_req *req, char *note, size_t len)
{
    char target[PATH_MAX], backup[PATH_MAX], tmp[PATH_MAX], btmp[PATH_MAX];
    struct stat st;
    int is_link = 0, cleared = 0, cleared_main = 0, fd = -1, bfd = -1, created_backup = 0, replace_backup = 0;
    int tmp_left = 0, btmp_left = 0; /* our temporary files that still have their names */
    char *cur = NULL;
    size_t cur_len = 0;
    int rc = resolve_target(req->file, target, sizeof target, &is_link, &st, note, len);
    if (rc < 0)
        return rc;
    if ((size_t)snprintf(backup, sizeof backup, "%s.orig", req->file) >= sizeof backup ||
        (size_t)snprintf(tmp, sizeof tmp, "%s" AFD_APPLY_TMP_SUFFIX, target) >= sizeof tmp ||
        (size_t)snprintf(btmp, sizeof btmp, "%s" AFD_APPLY_TMP_SUFFIX, backup) >= sizeof btmp) {
        say(note, len, "not applied: the path of %.400s is too long", req->file);
        return AFD_EINVAL;
    }
    rc = clear_stale_temp(tmp, &cleared_main, note, len);
    cleared = cleared_main;
    if (rc == 0)
        rc = clear_stale_temp(btmp, &cleared, note, len);
    if (rc == 0)
        rc = check_unchanged(req, target, &cur, &cur_len, note, len);
    if (rc < 0)
        goto out;
    struct stat bst;
    if (lstat(backup, &bst) == 0) {
        /* An apply killed between placing the backup and replacing the file leaves the backup
         * holding exactly the file's bytes and, beside the file, its temporary file (which exists
         * all that time). Only that pair is a leftover; any other backup, one identical to a file
         * the user restored from it included, is the backup of an apply that completed, and stays. */
        if (!cleared_main || !S_ISREG(bst.st_mode) || !holds(backup, cur, cur_len)) {
            say(note, len, "not applied: %.400s exists (a backup is never overwritten)", backup);
            rc = AFD_EINVAL;
            goto out;
        }
        replace_backup = 1;
    }
    rc = write_temp(tmp, req->text, req->text_len, &st, &fd, note, len);
    tmp_left = rc == 0;
    if (rc == 0)
        rc = write_temp(btmp, cur, cur_len, &st, &bfd, note, len);
    btmp_left = rc == 0 && bfd >= 0;
    if (rc < 0)
        goto out;
    /* link() never replaces an existing name: a backup made meanwhile by someone else survives */
    if (replace_backup ? rename(btmp, backup) != 0 : link(btmp, backup) != 0) {
        say(note, len, "not applied: cannot write the backup %.400s: %s", backup, strerror(errno));
        rc = AFD_EIO;
        goto out;
    }
    created_backup = !replace_backup;
    btmp_left = !replace_backup; /* link() left the temporary name too; rename() took it */
    /* The temporary files took time to sync: look once more, right before the file is replaced. */
    if (!holds(target, cur, cur_len)) {
        say(note, len,
            "not applied: %.400s changed since it was analysed (while the fix was being written): "
            "investigate again",
            req->file);
        rc = AFD_EINVAL;
        goto out;
    }
    if (rename(tmp, target) != 0) {
        say(note, len, "not applied: cannot write %.400s: %s (the original is unchanged)", req->file,
            strerror(errno));
        rc = AFD_EIO;
        goto out;
    }
    created_backup = tmp_left = 0; /* the backup is the applied fix's now */
    sync_dir_of(target);
    sync_dir_of(backup);
    if (is_link)
        say(note, len, "applied to %.250s through its symlink, to %.250s (the original is in %.250s)%s",
            req->file, target, backup, cleared ? "; removed a temporary file a killed --apply left" : "");
    else
        say(note, len, "applied to %.250s (the original is in %.250s)%s", req->file, backup,
            cleared ? "; removed a temporary file a killed --apply left" : "");
out:
    if (created_backup)
        unlink(backup);
    /* unlinked before the descriptors close: while locked, no other apply takes them for leftovers */
    if (tmp_left)
        unlink(tmp);
    if (btmp_left)
        unlink(btmp);
    if (fd >= 0)
        close(fd);
    if (bfd >= 0)
        close(bfd);
    free(cur);
    return rc;
}
