/* fsguard.h -- refusing files that would make a plain open() or read() wait forever.
 *
 * The incident store is a path the user's checkout controls: `.affidavit/incidents.db` (and the
 * -journal, -wal and -shm files SQLite opens beside it) may be a FIFO, a socket or a device, and
 * SQLite opens and reads what it finds there without asking, so a FIFO makes `affidavit ls` block
 * for good. Such a path is refused before SQLite sees it. */
#ifndef AFD_FSGUARD_H
#define AFD_FSGUARD_H

#include <stddef.h>

/* 0 when path is a regular file or does not exist (it may be created). AFD_ESTORE, with a one-line
 * message in err naming what the path is, when it is anything else; AFD_EIO, with the reason,
 * when it cannot be examined (a permission problem is left to the open that follows, which
 * reports it in its own words: 0). Follows symbolic links, as an open would. */
int afd_fsguard_regular(const char *path, char *err, size_t errlen);

/* afd_fsguard_regular on the database at path and on each of its SQLite sidecars (path-journal,
 * path-wal, path-shm); the first refusal wins. */
int afd_fsguard_sqlite(const char *path, char *err, size_t errlen);

#endif
