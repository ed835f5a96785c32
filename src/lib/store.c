/* store.c -- the incident store: one SQLite database per project, written through the C API (see store.h).
 *
 * Every statement is prepared with bound parameters: no user string is ever formatted into SQL.
 * An incident and everything that belongs to it (runs, traces, verdict, patch) is written in one
 * BEGIN IMMEDIATE transaction, so a reader or a crash sees all of it or none of it. Traces are
 * compressed before the transaction starts, so the write lock is held only for the inserts. */
#include "store.h"
#include "afd.h"
#include "buf.h"
#include "fsguard.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#define BUSY_TIMEOUT_MS 5000
#define ZLIB_LEVEL 6

struct afd_store {
    sqlite3 *db;
    char *path; /* as given, for messages */
};

/* The schema of version 1. AUTOINCREMENT keeps an incident's number from ever being given to
 * another incident, even if incidents are deleted one day: people quote these numbers. */
static const char SCHEMA_SQL[] =
    "CREATE TABLE incidents ("
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

/* ---- messages ---------------------------------------------------------------------------- */

static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
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
static int code_of(int rc)
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
static const char *sql_msg(sqlite3 *db, int rc)
{
    if (db && (sqlite3_errcode(db) & 0xff) == (rc & 0xff))
        return sqlite3_errmsg(db);
    return sqlite3_errstr(rc);
}

/* "<what> <path>: <sqlite message>[ (<os error>)]" with the code that fits rc. */
static int sql_fail(sqlite3 *db, const char *path, int rc, const char *what, char *err, size_t errlen)
{
    int prim = rc & 0xff;
    int os = db ? sqlite3_system_errno(db) : 0;
    if (os && (prim == SQLITE_CANTOPEN || prim == SQLITE_IOERR || prim == SQLITE_READONLY))
        return fail(err, errlen, code_of(rc), "%s %s: %s (%s)", what, path, sql_msg(db, rc), strerror(os));
    return fail(err, errlen, code_of(rc), "%s %s: %s", what, path, sql_msg(db, rc));
}

/* ---- small SQLite helpers ---------------------------------------------------------------- */

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

/* Binds parameters left to right with a sticky result, so a run of binds is checked once (the
 * afd_reader pattern). */
typedef struct binder {
    sqlite3_stmt *st;
    int col;
    int rc;
} binder;

static void bind_start(binder *b, sqlite3_stmt *st)
{
    sqlite3_reset(st);
    b->st = st;
    b->col = 1;
    b->rc = SQLITE_OK;
}

static void bind_i64(binder *b, int64_t v)
{
    if (b->rc == SQLITE_OK)
        b->rc = sqlite3_bind_int64(b->st, b->col, v);
    b->col++;
}

/* A uint64 is stored as the int64 with the same bits: SQLite integers are signed 64-bit. */
static void bind_u64(binder *b, uint64_t v)
{
    int64_t s;
    memcpy(&s, &v, sizeof s);
    bind_i64(b, s);
}

static void bind_double(binder *b, double v)
{
    if (b->rc == SQLITE_OK)
        b->rc = sqlite3_bind_double(b->st, b->col, v);
    b->col++;
}

/* NULL binds as "": the header's "none" is the empty string, and the columns are NOT NULL. The
 * strings outlive the statement's step, so SQLite need not copy them. */
static void bind_text(binder *b, const char *s)
{
    if (b->rc == SQLITE_OK)
        b->rc = sqlite3_bind_text(b->st, b->col, s ? s : "", -1, SQLITE_STATIC);
    b->col++;
}

static void bind_blob(binder *b, const void *p, size_t len)
{
    if (b->rc == SQLITE_OK)
        b->rc = p ? sqlite3_bind_blob64(b->st, b->col, p, len, SQLITE_STATIC)
                  : sqlite3_bind_null(b->st, b->col);
    b->col++;
}

/* Steps an INSERT whose parameters are bound: SQLITE_OK or the failure. */
static int bind_exec(binder *b)
{
    if (b->rc != SQLITE_OK)
        return b->rc;
    int rc = sqlite3_step(b->st);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

static uint64_t col_u64(sqlite3_stmt *st, int i)
{
    int64_t s = sqlite3_column_int64(st, i);
    uint64_t v;
    memcpy(&v, &s, sizeof v);
    return v;
}

/* A heap copy of a text column ("" for NULL); NULL only when out of memory. */
static char *col_dup(sqlite3_stmt *st, int i)
{
    const unsigned char *s = sqlite3_column_text(st, i);
    size_t n = s ? (size_t)sqlite3_column_bytes(st, i) : 0;
    char *d = malloc(n + 1);
    if (!d)
        return NULL;
    if (n)
        memcpy(d, s, n);
    d[n] = 0;
    return d;
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
                      : sqlite3_open_v2((const char *)uri.data, &self->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL);
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

/* ---- add --------------------------------------------------------------------------------- */

/* A trace as it goes into its row: compressed, or left out when too large. */
typedef struct packed_trace {
    uint8_t *z; /* Owned; NULL when left out. */
    size_t zlen;
} packed_trace;

static void packed_free(packed_trace *p, size_t n)
{
    if (!p)
        return;
    for (size_t i = 0; i < n; i++)
        free(p[i].z);
    free(p);
}

static int pack_traces(const afd_store_trace *traces, size_t n, packed_trace **out, char *err, size_t errlen)
{
    *out = NULL;
    if (n == 0)
        return 0;
    packed_trace *p = calloc(n, sizeof *p);
    if (!p)
        return fail(err, errlen, AFD_ENOMEM, "cannot add the incident: out of memory");
    for (size_t i = 0; i < n; i++) {
        if (traces[i].len > AFD_STORE_MAX_TRACE)
            continue;
        uLongf zlen = compressBound((uLong)traces[i].len);
        p[i].z = malloc(zlen);
        if (!p[i].z) {
            packed_free(p, n);
            return fail(err, errlen, AFD_ENOMEM,
                        "cannot add the incident: out of memory compressing a trace");
        }
        /* compress2 reads nothing when the length is 0, but wants a non-NULL source. */
        const Bytef *src = traces[i].bytes ? traces[i].bytes : (const Bytef *)"";
        int zrc = compress2(p[i].z, &zlen, src, (uLong)traces[i].len, ZLIB_LEVEL);
        if (zrc != Z_OK) {
            packed_free(p, n);
            return fail(err, errlen, zrc == Z_MEM_ERROR ? AFD_ENOMEM : AFD_EIO,
                        "cannot add the incident: compressing the %s trace failed (zlib %d)",
                        traces[i].role, zrc);
        }
        p[i].zlen = zlen;
    }
    *out = p;
    return 0;
}

static int prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st)
{
    return sqlite3_prepare_v2(db, sql, -1, st, NULL);
}

static int insert_incident(sqlite3 *db, const afd_store_incident *inc, int64_t *id)
{
    sqlite3_stmt *st = NULL;
    int rc = prepare(db,
                     "INSERT INTO incidents (created, nodeid, verdict, cause_kind, summary, token, rate,"
                     " natural_runs, natural_failed, json) VALUES (?,?,?,?,?,?,?,?,?,?)",
                     &st);
    if (rc == SQLITE_OK) {
        binder b;
        bind_start(&b, st);
        bind_i64(&b, inc->created);
        bind_text(&b, inc->nodeid);
        bind_text(&b, inc->verdict);
        bind_text(&b, inc->cause_kind);
        bind_text(&b, inc->summary);
        bind_text(&b, inc->token);
        bind_double(&b, inc->rate);
        bind_u64(&b, inc->natural_runs);
        bind_u64(&b, inc->natural_failed);
        bind_text(&b, inc->json);
        rc = bind_exec(&b);
    }
    sqlite3_finalize(st);
    if (rc == SQLITE_OK)
        *id = sqlite3_last_insert_rowid(db);
    return rc;
}

static int insert_runs(sqlite3 *db, int64_t id, const afd_store_run *runs, size_t n)
{
    if (n == 0)
        return SQLITE_OK;
    sqlite3_stmt *st = NULL;
    int rc = prepare(db,
                     "INSERT INTO runs (incident_id, idx, token, outcome, wall_ns, digest)"
                     " VALUES (?,?,?,?,?,?)",
                     &st);
    for (size_t i = 0; rc == SQLITE_OK && i < n; i++) {
        binder b;
        bind_start(&b, st);
        bind_i64(&b, id);
        bind_u64(&b, runs[i].index);
        bind_text(&b, runs[i].token);
        bind_i64(&b, runs[i].outcome);
        bind_u64(&b, runs[i].wall_ns);
        bind_u64(&b, runs[i].digest);
        rc = bind_exec(&b);
    }
    sqlite3_finalize(st);
    return rc;
}

static int insert_traces(sqlite3 *db, int64_t id, const afd_store_trace *traces, const packed_trace *p,
                         size_t n)
{
    if (n == 0)
        return SQLITE_OK;
    sqlite3_stmt *st = NULL;
    int rc = prepare(db, "INSERT INTO traces (incident_id, role, raw_len, zlib, left_out) VALUES (?,?,?,?,?)",
                     &st);
    for (size_t i = 0; rc == SQLITE_OK && i < n; i++) {
        binder b;
        bind_start(&b, st);
        bind_i64(&b, id);
        bind_text(&b, traces[i].role);
        bind_u64(&b, traces[i].len);
        bind_blob(&b, p[i].z, p[i].zlen);
        bind_i64(&b, p[i].z == NULL);
        rc = bind_exec(&b);
    }
    sqlite3_finalize(st);
    return rc;
}

static int insert_verdict(sqlite3 *db, int64_t id, const afd_store_incident *inc)
{
    sqlite3_stmt *st = NULL;
    int rc = prepare(db, "INSERT INTO verdicts (incident_id, verdict, cause_kind, summary) VALUES (?,?,?,?)",
                     &st);
    if (rc == SQLITE_OK) {
        binder b;
        bind_start(&b, st);
        bind_i64(&b, id);
        bind_text(&b, inc->verdict);
        bind_text(&b, inc->cause_kind);
        bind_text(&b, inc->summary);
        rc = bind_exec(&b);
    }
    sqlite3_finalize(st);
    return rc;
}

static int insert_patch(sqlite3 *db, int64_t id, const afd_store_patch *patch)
{
    sqlite3_stmt *st = NULL;
    int rc = prepare(db,
                     "INSERT INTO patches (incident_id, kind, file, diff, gate_passed, verified, applied)"
                     " VALUES (?,?,?,?,?,?,?)",
                     &st);
    if (rc == SQLITE_OK) {
        binder b;
        bind_start(&b, st);
        bind_i64(&b, id);
        bind_text(&b, patch->kind);
        bind_text(&b, patch->file);
        bind_text(&b, patch->diff);
        bind_i64(&b, patch->gate_passed != 0);
        bind_i64(&b, patch->verified != 0);
        bind_i64(&b, patch->applied != 0);
        rc = bind_exec(&b);
    }
    sqlite3_finalize(st);
    return rc;
}

static int check_add_args(const afd_store *self, const afd_store_incident *inc, const afd_store_run *runs,
                          size_t n_runs, const afd_store_trace *traces, size_t n_traces, const int64_t *id,
                          char *err, size_t errlen)
{
    if (!self || !inc || !id || (n_runs && !runs) || (n_traces && !traces))
        return fail(err, errlen, AFD_EINVAL, "afd_store_add: missing argument");
    for (size_t i = 0; i < n_traces; i++)
        if (!traces[i].role || (traces[i].len && !traces[i].bytes))
            return fail(err, errlen, AFD_EINVAL, "afd_store_add: trace %zu has no role or no bytes", i);
    return 0;
}

/* The inserts of one incident, inside the caller's transaction; *stage names the failing one. */
static int insert_all(sqlite3 *db, const afd_store_incident *inc, const afd_store_run *runs, size_t n_runs,
                      const afd_store_trace *traces, const packed_trace *packed, size_t n_traces,
                      const afd_store_patch *patch, int64_t *id, const char **stage)
{
    *stage = "writing the incident";
    int rc = insert_incident(db, inc, id);
    if (rc == SQLITE_OK) {
        *stage = "writing its runs";
        rc = insert_runs(db, *id, runs, n_runs);
    }
    if (rc == SQLITE_OK) {
        *stage = "writing its traces";
        rc = insert_traces(db, *id, traces, packed, n_traces);
    }
    if (rc == SQLITE_OK) {
        *stage = "writing its verdict";
        rc = insert_verdict(db, *id, inc);
    }
    if (rc == SQLITE_OK && patch) {
        *stage = "writing its patch";
        rc = insert_patch(db, *id, patch);
    }
    if (rc == SQLITE_OK) {
        *stage = "committing";
        rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    }
    return rc;
}

int afd_store_add(afd_store *self, const afd_store_incident *inc, const afd_store_run *runs, size_t n_runs,
                  const afd_store_trace *traces, size_t n_traces, const afd_store_patch *patch, int64_t *id,
                  char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = 0;
    int rc = check_add_args(self, inc, runs, n_runs, traces, n_traces, id, err, errlen);
    if (rc)
        return rc;
    packed_trace *packed = NULL;
    rc = pack_traces(traces, n_traces, &packed, err, errlen);
    if (rc)
        return rc;
    /* IMMEDIATE takes the write lock now (waiting up to the busy timeout), so the transaction
     * cannot fail halfway for want of it. */
    const char *stage = "starting the transaction";
    int64_t new_id = 0;
    int src = sqlite3_exec(self->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    if (src == SQLITE_OK)
        src = insert_all(self->db, inc, runs, n_runs, traces, packed, n_traces, patch, &new_id, &stage);
    if (src != SQLITE_OK) {
        /* The message first: the ROLLBACK would replace SQLite's. Some errors (a full disk) have
         * already rolled the transaction back, hence the autocommit check. */
        char what[96];
        snprintf(what, sizeof what, "cannot add the incident (%s) to", stage);
        rc = sql_fail(self->db, self->path, src, what, err, errlen);
        if (!sqlite3_get_autocommit(self->db))
            sqlite3_exec(self->db, "ROLLBACK", NULL, NULL, NULL);
    } else {
        *id = new_id;
    }
    packed_free(packed, n_traces);
    return rc;
}

/* ---- list -------------------------------------------------------------------------------- */

#define ROW_COLUMNS "id, created, nodeid, verdict, cause_kind, rate, natural_runs, natural_failed"

static void row_clear(afd_store_row *r)
{
    free(r->nodeid);
    free(r->verdict);
    free(r->cause_kind);
    memset(r, 0, sizeof *r);
}

/* Reads ROW_COLUMNS (columns 0..7) of the current row; AFD_ENOMEM leaves r cleared. */
static int row_read(sqlite3_stmt *st, afd_store_row *r)
{
    memset(r, 0, sizeof *r);
    r->id = sqlite3_column_int64(st, 0);
    r->created = sqlite3_column_int64(st, 1);
    r->nodeid = col_dup(st, 2);
    r->verdict = col_dup(st, 3);
    r->cause_kind = col_dup(st, 4);
    /* A NaN rate went in as NULL (SQLite has no NaN): give the NaN back. */
    r->rate = sqlite3_column_type(st, 5) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 5);
    r->natural_runs = col_u64(st, 6);
    r->natural_failed = col_u64(st, 7);
    if (!r->nodeid || !r->verdict || !r->cause_kind) {
        row_clear(r);
        return AFD_ENOMEM;
    }
    return 0;
}

void afd_store_rows_free(afd_store_row *rows, size_t n)
{
    if (!rows)
        return;
    for (size_t i = 0; i < n; i++)
        row_clear(&rows[i]);
    free(rows);
}

int afd_store_list(afd_store *self, size_t limit, afd_store_row **rows, size_t *n, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = 0;
    if (!rows || !n)
        return fail(err, errlen, AFD_EINVAL, "afd_store_list: missing argument");
    *rows = NULL;
    *n = 0;
    if (!self)
        return fail(err, errlen, AFD_EINVAL, "afd_store_list: no store");
    sqlite3_stmt *st = NULL;
    int src = prepare(self->db, "SELECT " ROW_COLUMNS " FROM incidents ORDER BY id DESC LIMIT ?", &st);
    if (src == SQLITE_OK) /* a negative LIMIT is no limit in SQLite */
        src = sqlite3_bind_int64(st, 1, limit == 0 || limit > INT64_MAX ? -1 : (int64_t)limit);
    afd_store_row *out = NULL;
    size_t count = 0, cap = 0;
    int rc = 0;
    while (src == SQLITE_OK && (src = sqlite3_step(st)) == SQLITE_ROW) {
        if (afd_array_grow((void **)&out, &cap, count + 1, sizeof *out, 16) || row_read(st, &out[count])) {
            rc = fail(err, errlen, AFD_ENOMEM, "cannot list %s: out of memory", self->path);
            break;
        }
        count++;
        src = SQLITE_OK;
    }
    if (!rc && src != SQLITE_DONE)
        rc = sql_fail(self->db, self->path, src, "cannot list", err, errlen);
    sqlite3_finalize(st);
    if (rc) {
        afd_store_rows_free(out, count);
        return rc;
    }
    *rows = out;
    *n = count;
    return 0;
}

/* ---- get --------------------------------------------------------------------------------- */

void afd_store_full_free(afd_store_full *f)
{
    if (!f)
        return;
    row_clear(&f->row);
    free(f->summary);
    free(f->token);
    free(f->json);
    free(f->failing);
    free(f->passing);
    memset(f, 0, sizeof *f);
}

static int get_incident(afd_store *self, int64_t id, afd_store_full *out, char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    int src =
        prepare(self->db, "SELECT " ROW_COLUMNS ", summary, token, json FROM incidents WHERE id = ?", &st);
    if (src == SQLITE_OK)
        src = sqlite3_bind_int64(st, 1, id);
    if (src == SQLITE_OK)
        src = sqlite3_step(st);
    int rc = 0;
    if (src == SQLITE_DONE) {
        rc = fail(err, errlen, AFD_ENOTFOUND, "no incident %lld in %s", (long long)id, self->path);
    } else if (src != SQLITE_ROW) {
        rc = sql_fail(self->db, self->path, src, "cannot read", err, errlen);
    } else if (row_read(st, &out->row) || !(out->summary = col_dup(st, 8)) ||
               !(out->token = col_dup(st, 9)) || !(out->json = col_dup(st, 10))) {
        rc = fail(err, errlen, AFD_ENOMEM, "cannot read incident %lld: out of memory", (long long)id);
    }
    sqlite3_finalize(st);
    return rc;
}

static int count_runs(afd_store *self, int64_t id, size_t *n, char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    int src = prepare(self->db, "SELECT count(*) FROM runs WHERE incident_id = ?", &st);
    if (src == SQLITE_OK)
        src = sqlite3_bind_int64(st, 1, id);
    if (src == SQLITE_OK && (src = sqlite3_step(st)) == SQLITE_ROW) {
        *n = (size_t)sqlite3_column_int64(st, 0);
        src = SQLITE_OK;
    }
    sqlite3_finalize(st);
    return src == SQLITE_OK ? 0 : sql_fail(self->db, self->path, src, "cannot read the runs in", err, errlen);
}

static int trace_oom(int64_t id, const char *role, char *err, size_t errlen)
{
    return fail(err, errlen, AFD_ENOMEM, "incident %lld: out of memory reading the %s trace", (long long)id,
                role);
}

/* Decompresses one trace row into a buffer of exactly raw_len bytes; a left-out trace stays NULL.
 * The row is checked, not trusted: a damaged blob or length is an error, never a crash. */
static int unpack_trace(sqlite3_stmt *st, int64_t id, const char *role, uint8_t **buf, size_t *len, char *err,
                        size_t errlen)
{
    if (sqlite3_column_int64(st, 3) != 0)
        return 0;
    int64_t raw = sqlite3_column_int64(st, 1);
    const void *z = sqlite3_column_blob(st, 2);
    int zlen = sqlite3_column_bytes(st, 2);
    if (raw < 0 || raw > (int64_t)AFD_STORE_MAX_TRACE || !z || zlen <= 0)
        return fail(err, errlen, AFD_ESTORE, "incident %lld: the %s trace is damaged (bad length or no data)",
                    (long long)id, role);
    uint8_t *b = malloc(raw ? (size_t)raw : 1); /* non-NULL even when empty: it was stored */
    if (!b)
        return trace_oom(id, role, err, errlen);
    uLongf got = (uLongf)raw;
    int zrc = uncompress(b, &got, z, (uLong)zlen);
    if (zrc != Z_OK || got != (uLongf)raw) {
        free(b);
        if (zrc == Z_MEM_ERROR)
            return trace_oom(id, role, err, errlen);
        return fail(err, errlen, AFD_ESTORE, "incident %lld: the %s trace is damaged (%s)", (long long)id,
                    role, zrc != Z_OK ? zError(zrc) : "length does not match");
    }
    free(*buf); /* a second row of the same role replaces the first */
    *buf = b;
    *len = (size_t)raw;
    return 0;
}

static int get_traces(afd_store *self, int64_t id, afd_store_full *out, char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    int src = prepare(self->db,
                      "SELECT role, raw_len, zlib, left_out FROM traces WHERE incident_id = ? ORDER BY rowid",
                      &st);
    if (src == SQLITE_OK)
        src = sqlite3_bind_int64(st, 1, id);
    int rc = 0;
    while (!rc && src == SQLITE_OK && (src = sqlite3_step(st)) == SQLITE_ROW) {
        src = SQLITE_OK;
        const char *role = (const char *)sqlite3_column_text(st, 0);
        if (role && strcmp(role, "failing") == 0)
            rc = unpack_trace(st, id, "failing", &out->failing, &out->failing_len, err, errlen);
        else if (role && strcmp(role, "passing") == 0)
            rc = unpack_trace(st, id, "passing", &out->passing, &out->passing_len, err, errlen);
        /* other roles: stored, but not part of afd_store_full */
    }
    if (!rc && src != SQLITE_DONE)
        rc = sql_fail(self->db, self->path, src, "cannot read the traces in", err, errlen);
    sqlite3_finalize(st);
    return rc;
}

/* No read transaction is needed: an incident's rows are written in one transaction and never
 * changed afterwards, so once its incidents row is visible, the rest is too. */
int afd_store_get(afd_store *self, int64_t id, afd_store_full *out, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = 0;
    if (!out)
        return fail(err, errlen, AFD_EINVAL, "afd_store_get: no output");
    memset(out, 0, sizeof *out);
    if (!self)
        return fail(err, errlen, AFD_EINVAL, "afd_store_get: no store");
    int rc = get_incident(self, id, out, err, errlen);
    if (!rc)
        rc = count_runs(self, id, &out->n_runs, err, errlen);
    if (!rc)
        rc = get_traces(self, id, out, err, errlen);
    if (rc)
        afd_store_full_free(out);
    return rc;
}
