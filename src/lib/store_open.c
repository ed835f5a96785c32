/* store_open.c -- opening the incident store: its directory, the schema of version 1, WAL mode and
 * the pragmas every connection sets, and the refusals (another version, not a store) that keep a
 * wrong file from being written to (see store.h).
 *
 * Invariant: a store is handed out only when its schema version is the one this build writes, so
 * the code that writes and reads incidents (store.c) never meets another layout. Workload: one
 * open per command; the switch to WAL may wait up to BUSY_TIMEOUT_MS for another writer. */
#include "store.h"
#include "store_impl.h"
#include "afd.h"
#include "buf.h"
#include "fsguard.h"

#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BUSY_TIMEOUT_MS 5000

/* The schema of version 1. AUTOINCREMENT keeps an incident's number from ever being given to
 * another incident, even if incidents are deleted one day: people quote these numbers. */
static const char SCHEMA_SQL[] = "CREATE TABLE incidents ("
                                 " id INTEGER PRIMARY KEY AUTOINCREMENT,"
                                 " created INTEGER NOT NULL,"
                                 " nodeid TEXT NOT NULL,"
                                 " verdict TEXT NOT NULL,"
                                 " cause_kind TEXT NOT NULL,"
                                 " summary TEXT NOT NULL,"
                                 " token TEXT NOT NULL,"
                                 " rate REAL," /* NULL when the rate is NaN (SQLite stores NaN as NULL) */
                                 " natural_runs INTEGER NOT NULL,"
                                 " natural_failed INTEGER NOT NULL,"
                                 " json TEXT NOT NULL);"
                                 "CREATE TABLE runs ("
                                 " incident_id INTEGER NOT NULL REFERENCES incidents(id) ON DELETE CASCADE,"
                                 " idx INTEGER NOT NULL,"
                                 " token TEXT NOT NULL,"
                                 " outcome INTEGER NOT NULL,"
                                 " wall_ns INTEGER NOT NULL,"
                                 " digest INTEGER NOT NULL);" /* the uint64 digest's bit pattern as int64 */
                                 "CREATE INDEX runs_incident ON runs(incident_id);"
                                 "CREATE TABLE traces ("
                                 " incident_id INTEGER NOT NULL REFERENCES incidents(id) ON DELETE CASCADE,"
                                 " role TEXT NOT NULL,"
                                 " raw_len INTEGER NOT NULL,"
                                 " zlib BLOB," /* NULL when left out */
                                 " left_out INTEGER NOT NULL);"
                                 "CREATE INDEX traces_incident ON traces(incident_id);"
                                 "CREATE TABLE verdicts ("
                                 " incident_id INTEGER NOT NULL REFERENCES incidents(id) ON DELETE CASCADE,"
                                 " verdict TEXT NOT NULL,"
                                 " cause_kind TEXT NOT NULL,"
                                 " summary TEXT NOT NULL);"
                                 "CREATE INDEX verdicts_incident ON verdicts(incident_id);"
                                 "CREATE TABLE patches ("
                                 " incident_id INTEGER NOT NULL REFERENCES incidents(id) ON DELETE CASCADE,"
                                 " kind TEXT NOT NULL,"
                                 " file TEXT NOT NULL,"
                                 " diff TEXT NOT NULL,"
                                 " gate_passed INTEGER NOT NULL,"
                                 " verified INTEGER NOT NULL,"
                                 " applied INTEGER NOT NULL);"
                                 "CREATE INDEX patches_incident ON patches(incident_id);";

/* Runs a query that yields one integer (a pragma or a count). */
static int query_int(sqlite3 *db, const char *sql, int64_t *v)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            *v = sqlite3_column_int64(st, 0);
            rc = SQLITE_OK;
        } else if (rc == SQLITE_DONE) {
            rc = SQLITE_ERROR; /* a query that must answer did not */
        }
    }
    sqlite3_finalize(st);
    return rc;
}

/* ---- open -------------------------------------------------------------------------------- */

/* Creates the directory that holds path (one level, e.g. `.affidavit/`) when it is missing. */
static int make_parent(const char *path, char *err, size_t errlen)
{
    const char *slash = strrchr(path, '/');
    if (!slash || slash == path)
        return 0; /* the current directory or the root: they exist */
    size_t n = (size_t)(slash - path);
    char *dir = malloc(n + 1);
    if (!dir)
        return fail(err, errlen, AFD_ENOMEM, "cannot open %s: out of memory", path);
    memcpy(dir, path, n);
    dir[n] = 0;
    int rc = 0;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        rc = fail(err, errlen, AFD_EIO, "cannot create directory %s: %s", dir, strerror(errno));
    free(dir);
    return rc;
}

/* SQLite needs to create files next to the database (the new file, its -wal and -shm), and when
 * it cannot, its error names the last errno of a retry ("No such file or directory"). When the
 * directory is the cause, say that instead. Returns rc, with err rewritten when it applies. */
static int explain_dir(const char *path, int rc, char *err, size_t errlen)
{
    const char *slash = strrchr(path, '/');
    char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    if (!dir)
        return rc;
    struct stat sb;
    if (stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode) && faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS) != 0)
        rc = fail(err, errlen, AFD_EIO, "cannot use %s: its directory %s is not writable (%s)", path, dir,
                  strerror(errno));
    free(dir);
    return rc;
}

static int version_mismatch(const afd_store *self, int64_t v, char *err, size_t errlen)
{
    return fail(err, errlen, AFD_ESTORE,
                "%s was written by schema version %lld; this affidavit reads version %d: move it aside or "
                "use the affidavit that wrote it",
                self->path, (long long)v, AFD_STORE_SCHEMA_VERSION);
}

/* Reading the first page is where SQLite finds out what the file is: say so in our words. */
static int first_read_fail(const afd_store *self, int rc, char *err, size_t errlen)
{
    if ((rc & 0xff) == SQLITE_NOTADB)
        return fail(err, errlen, AFD_ESTORE, "%s is not an affidavit incident store (file is not a database)",
                    self->path);
    if ((rc & 0xff) == SQLITE_CORRUPT)
        return fail(err, errlen, AFD_ESTORE, "%s is damaged: %s: move it aside", self->path,
                    sql_msg(self->db, rc));
    return sql_fail(self->db, self->path, rc, "cannot read", err, errlen);
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One attempt at switching to WAL: SQLITE_OK with the resulting mode in mode[], or the failure. */
static int try_wal(sqlite3 *db, char *mode, size_t modelen)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, "PRAGMA journal_mode=WAL", -1, &st, NULL);
    if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *m = (const char *)sqlite3_column_text(st, 0);
        snprintf(mode, modelen, "%s", m ? m : "unknown");
        rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    return rc;
}

/* Switching a fresh database to WAL takes an exclusive lock, and SQLite may answer SQLITE_BUSY at
 * once, without the busy handler, when waiting could deadlock (two connections holding shared
 * locks). Several processes opening a new store together hit it (test_store's
 * concurrent_first_open), so retry here, within the same timeout the busy handler has. */
static int set_wal(afd_store *self, char *err, size_t errlen)
{
    char mode[32] = "";
    int64_t deadline = now_ms() + BUSY_TIMEOUT_MS;
    int pause = 1;
    int rc;
    while (((rc = try_wal(self->db, mode, sizeof mode)) & 0xff) == SQLITE_BUSY && now_ms() < deadline) {
        sqlite3_sleep(pause);
        pause = pause < 64 ? pause * 2 : 64;
    }
    if (rc != SQLITE_OK)
        return sql_fail(self->db, self->path, rc, "cannot set up", err, errlen);
    /* ":memory:" databases answer "memory"; they have nothing to be durable about. */
    if (strcmp(mode, "wal") != 0 && strcmp(mode, "memory") != 0)
        return fail(err, errlen, AFD_ESTORE, "cannot use write-ahead logging for %s (journal mode stays %s)",
                    self->path, mode);
    return 0;
}

/* Write-ahead logging, checked: the durability argument below depends on it. */
static int set_pragmas(afd_store *self, char *err, size_t errlen)
{
    int rc = set_wal(self, err, errlen);
    if (rc)
        return rc;
    /* In WAL mode, synchronous=NORMAL syncs only at checkpoints: a committed transaction is in the
     * WAL file (in the OS's page cache) when COMMIT returns, so it survives the process being
     * killed at any moment; only a power loss or an OS crash can lose the latest commits, and even
     * then the database stays consistent. That is the trade the store wants: fast writes, never a
     * torn incident. */
    rc = sqlite3_exec(self->db, "PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON", NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        return sql_fail(self->db, self->path, rc, "cannot set up", err, errlen);
    return 0;
}

/* Creates the tables of a fresh database in one transaction with its version number, so a crash
 * leaves either an empty file or a complete store. The version is read again under the write
 * lock: another process may have created the store since we looked. */
static int create_schema(afd_store *self, char *err, size_t errlen)
{
    int rc = sqlite3_exec(self->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        return sql_fail(self->db, self->path, rc, "cannot create the store in", err, errlen);
    int64_t v = 0, tables = 0;
    rc = query_int(self->db, "PRAGMA user_version", &v);
    if (rc == SQLITE_OK)
        rc = query_int(self->db, "SELECT count(*) FROM sqlite_master", &tables);
    int out = 0;
    if (rc != SQLITE_OK) {
        out = sql_fail(self->db, self->path, rc, "cannot create the store in", err, errlen);
    } else if (v == AFD_STORE_SCHEMA_VERSION) {
        out = 0; /* created by someone else meanwhile */
    } else if (v != 0) {
        out = version_mismatch(self, v, err, errlen);
    } else if (tables != 0) {
        out = fail(err, errlen, AFD_ESTORE,
                   "%s is not an affidavit incident store (it is an SQLite database with other tables)",
                   self->path);
    } else {
        rc = sqlite3_exec(self->db, SCHEMA_SQL, NULL, NULL, NULL);
        if (rc == SQLITE_OK) {
            /* A pragma takes no parameters; the value is our own constant, never user input. */
            char sql[64];
            snprintf(sql, sizeof sql, "PRAGMA user_version=%d", AFD_STORE_SCHEMA_VERSION);
            rc = sqlite3_exec(self->db, sql, NULL, NULL, NULL);
        }
        if (rc == SQLITE_OK)
            rc = sqlite3_exec(self->db, "COMMIT", NULL, NULL, NULL);
        if (rc != SQLITE_OK)
            out = sql_fail(self->db, self->path, rc, "cannot create the store in", err, errlen);
    }
    if (!sqlite3_get_autocommit(self->db))
        sqlite3_exec(self->db, out ? "ROLLBACK" : "COMMIT", NULL, NULL, NULL);
    return out;
}

/* The version and the number of tables, read in one transaction: another process may be creating
 * the store right now, and the pair must come from the same side of its commit. */
static int probe(sqlite3 *db, int64_t *version, int64_t *tables)
{
    int rc = sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = query_int(db, "PRAGMA user_version", version);
    if (rc == SQLITE_OK)
        rc = query_int(db, "SELECT count(*) FROM sqlite_master", tables);
    if (!sqlite3_get_autocommit(db)) {
        int end = sqlite3_exec(db, rc == SQLITE_OK ? "COMMIT" : "ROLLBACK", NULL, NULL, NULL);
        if (rc == SQLITE_OK)
            rc = end;
    }
    return rc;
}

/* Checks what the file is and which version wrote it before changing anything in it (a database
 * of another version keeps its journal mode), then sets the pragmas and creates the tables. */
static int prepare_store(afd_store *self, char *err, size_t errlen)
{
    if (sqlite3_db_readonly(self->db, "main") == 1)
        return fail(err, errlen, AFD_EIO, "cannot write %s: the file is read-only (check its permissions)",
                    self->path);
    int64_t v = 0, tables = 0;
    int rc = probe(self->db, &v, &tables);
    if (rc != SQLITE_OK)
        return first_read_fail(self, rc, err, errlen);
    if (v != 0 && v != AFD_STORE_SCHEMA_VERSION)
        return version_mismatch(self, v, err, errlen);
    if (v == 0 && tables != 0)
        return fail(err, errlen, AFD_ESTORE,
                    "%s is not an affidavit incident store (it is an SQLite database with other tables)",
                    self->path);
    int out = set_pragmas(self, err, errlen);
    if (out == 0 && v == 0)
        out = create_schema(self, err, errlen);
    return out;
}

int afd_store_open(afd_store **out, const char *path, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = 0;
    if (!out)
        return fail(err, errlen, AFD_EINVAL, "afd_store_open: no output pointer");
    *out = NULL;
    if (!path || !*path)
        return fail(err, errlen, AFD_EINVAL, "afd_store_open: no path");
    int rc = make_parent(path, err, errlen);
    if (rc == 0)
        rc = afd_fsguard_sqlite(path, err, errlen); /* SQLite would block on a FIFO there */
    if (rc)
        return rc;
    afd_store *self = calloc(1, sizeof *self);
    if (!self || !(self->path = strdup(path))) {
        free(self);
        return fail(err, errlen, AFD_ENOMEM, "cannot open %s: out of memory", path);
    }
    int src = sqlite3_open_v2(path, &self->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    if (src != SQLITE_OK) {
        /* The handle exists (unless out of memory) and carries the message; it must be closed. */
        rc = explain_dir(path, sql_fail(self->db, self->path, src, "cannot open", err, errlen), err, errlen);
        afd_store_close(self);
        return rc;
    }
    sqlite3_busy_timeout(self->db, BUSY_TIMEOUT_MS);
    rc = prepare_store(self, err, errlen);
    if (rc == AFD_EIO)
        rc = explain_dir(path, rc, err, errlen);
    if (rc) {
        afd_store_close(self);
        return rc;
    }
    *out = self;
    return 0;
}

int afd_store_open_readonly(afd_store **out, const char *path, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = 0;
    if (!out)
        return fail(err, errlen, AFD_EINVAL, "afd_store_open_readonly: no output pointer");
    *out = NULL;
    if (!path || !*path)
        return fail(err, errlen, AFD_EINVAL, "afd_store_open_readonly: no path");
    struct stat sb;
    if (stat(path, &sb) < 0)
        return fail(err, errlen, AFD_ENOTFOUND, "there is no incident store at %s", path);
    int grc = afd_fsguard_sqlite(path, err, errlen);
    if (grc)
        return grc;
    afd_store *self = calloc(1, sizeof *self);
    if (!self || !(self->path = strdup(path))) {
        free(self);
        return fail(err, errlen, AFD_ENOMEM, "cannot open %s: out of memory", path);
    }
    int src = sqlite3_open_v2(path, &self->db, SQLITE_OPEN_READONLY, NULL);
    int64_t v = 0, tables = 0;
    if (src == SQLITE_OK && probe(self->db, &v, &tables) == SQLITE_CANTOPEN) {
        /* A WAL database whose -shm cannot be created (a read-only directory): nothing can be
         * writing it there, so it is read as immutable, which needs no -shm. */
        sqlite3_close_v2(self->db);
        self->db = NULL;
        afd_buf uri;
        afd_buf_init(&uri);
        afd_buf_printf(&uri, "file:");
        for (const char *p = path; *p; p++)
            if (*p == '%' || *p == '?' || *p == '#')
                afd_buf_printf(&uri, "%%%02X", (unsigned)(unsigned char)*p);
            else
                afd_buf_put(&uri, p, 1);
        afd_buf_printf(&uri, "?immutable=1");
        src = uri.err ? SQLITE_NOMEM
                      : sqlite3_open_v2((const char *)uri.data, &self->db,
                                        SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL);
        afd_buf_finish(&uri);
    }
    int rc = 0;
    if (src != SQLITE_OK) {
        rc = sql_fail(self->db, self->path, src, "cannot open", err, errlen);
    } else {
        sqlite3_busy_timeout(self->db, BUSY_TIMEOUT_MS);
        src = probe(self->db, &v, &tables);
        if (src != SQLITE_OK)
            rc = first_read_fail(self, src, err, errlen);
        else if (v != AFD_STORE_SCHEMA_VERSION)
            rc = v ? version_mismatch(self, v, err, errlen)
                   : fail(err, errlen, AFD_ESTORE, "%s is not an affidavit incident store", self->path);
    }
    if (rc) {
        afd_store_close(self);
        return rc;
    }
    *out = self;
    return 0;
}

void afd_store_close(afd_store *self)
{
    if (!self)
        return;
    /* Every statement is finalized by the function that prepared it, so the close is immediate;
     * the last connection to close checkpoints the WAL into the database. */
    sqlite3_close_v2(self->db);
    free(self->path);
    free(self);
}
