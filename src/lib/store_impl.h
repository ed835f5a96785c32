/* store_impl.h -- what store.c and store_open.c share: the handle and the helpers that turn a
 * failure into a code and a one-line message. Private to the store; callers see only store.h.
 *
 * The helpers are static inline so that both files call them by their short names; they are
 * defined here once. */
#ifndef AFD_STORE_IMPL_H
#define AFD_STORE_IMPL_H

#include "afd.h"

#include <sqlite3.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

struct afd_store {
    sqlite3 *db; /* Owned. */
    char *path;  /* Owned: the path as given, for messages. */
};

/* ---- messages ---------------------------------------------------------------------------- */

static inline int fail(char *err, size_t errlen, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static inline int fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
        /* The caller prints it as one line; a path or an SQLite message must not break that. */
        for (char *p = err; *p; p++)
            if (*p == '\n' || *p == '\r')
                *p = ' ';
    }
    return code;
}

/* What an SQLite result means to the caller: the disk or its permissions, memory, or the store. */
static inline int code_of(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_NOMEM:
        return AFD_ENOMEM;
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_FULL:
        return AFD_EIO;
    default:
        return AFD_ESTORE;
    }
}

/* SQLite's own message for rc when it is the handle's last error, else the generic text for rc
 * (a message left over from an earlier call would mislead). */
static inline const char *sql_msg(sqlite3 *db, int rc)
{
    if (db && (sqlite3_errcode(db) & 0xff) == (rc & 0xff))
        return sqlite3_errmsg(db);
    return sqlite3_errstr(rc);
}

/* "<what> <path>: <sqlite message>[ (<os error>)]" with the code that fits rc. */
static inline int sql_fail(sqlite3 *db, const char *path, int rc, const char *what, char *err, size_t errlen)
{
    int prim = rc & 0xff;
    int os = db ? sqlite3_system_errno(db) : 0;
    if (os && (prim == SQLITE_CANTOPEN || prim == SQLITE_IOERR || prim == SQLITE_READONLY))
        return fail(err, errlen, code_of(rc), "%s %s: %s (%s)", what, path, sql_msg(db, rc), strerror(os));
    return fail(err, errlen, code_of(rc), "%s %s: %s", what, path, sql_msg(db, rc));
}

#endif
