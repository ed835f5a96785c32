/* fsguard.c -- refusing files that would make an open() or a read() wait forever (see fsguard.h).
 *
 * Invariant: nothing here opens the path. stat() never waits on a FIFO and has no side effect on a
 * device (opening one may: a tape rewinds, a terminal becomes the controlling one), so the check is
 * a stat, not an open with O_NONBLOCK. What is checked can change before SQLite opens it; the guard
 * is against a checkout that holds an odd file, not against a concurrent attacker.
 *
 * Workload: four stat() calls per store open. */
#include "fsguard.h"
#include "afd.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static const char *kind_of(mode_t m)
{
    return S_ISFIFO(m)   ? "a FIFO (named pipe)"
           : S_ISSOCK(m) ? "a socket"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
           : S_ISDIR(m)  ? "a directory"
                         : "not a regular file";
}

int afd_fsguard_regular(const char *path, char *err, size_t errlen)
{
    struct stat sb;
    if (stat(path, &sb) != 0) {
        if (errno == ENOENT || errno == EACCES || errno == ENOTDIR)
            return 0; /* absent (to be created), or the open that follows explains it */
        if (err && errlen)
            snprintf(err, errlen, "cannot examine %s: %s", path, strerror(errno));
        return AFD_EIO;
    }
    if (S_ISREG(sb.st_mode))
        return 0;
    if (err && errlen)
        snprintf(err, errlen, "%s is %s, not a regular file: the incident store cannot use it; move it aside",
                 path, kind_of(sb.st_mode));
    return AFD_ESTORE;
}

int afd_fsguard_sqlite(const char *path, char *err, size_t errlen)
{
    static const char *const suffixes[] = {"", "-journal", "-wal", "-shm"};
    char name[4200];
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        int n = snprintf(name, sizeof name, "%s%s", path, suffixes[i]);
        if (n < 0 || (size_t)n >= sizeof name) {
            if (err && errlen)
                snprintf(err, errlen, "the incident store's path is too long: %.200s...", path);
            return AFD_EINVAL;
        }
        int rc = afd_fsguard_regular(name, err, errlen);
        if (rc)
            return rc;
    }
    return 0;
}
