/* store.c -- the incident store: one SQLite database per project, written through the C API (see store.h).
 * This file writes and reads incidents; store_open.c opens the database and owns its schema.
 *
 * Every statement is prepared with bound parameters: no user string is ever formatted into SQL.
 * An incident and everything that belongs to it (runs, traces, verdict, patch) is written in one
 * BEGIN IMMEDIATE transaction, so a reader or a crash sees all of it or none of it. Traces are
 * compressed before the transaction starts, so the write lock is held only for the inserts. */
#include "store.h"
#include "store_impl.h"
#include "afd.h"
#include "buf.h"

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define ZLIB_LEVEL 6

/* ---- small SQLite helpers ---------------------------------------------------------------- */

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
        b->rc =
            p ? sqlite3_bind_blob64(b->st, b->col, p, len, SQLITE_STATIC) : sqlite3_bind_null(b->st, b->col);
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
                        "cannot add the incident: compressing the %s trace failed (zlib %d)", traces[i].role,
                        zrc);
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
    int rc =
        prepare(db, "INSERT INTO verdicts (incident_id, verdict, cause_kind, summary) VALUES (?,?,?,?)", &st);
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
    int src =
        prepare(self->db,
                "SELECT role, raw_len, zlib, left_out FROM traces WHERE incident_id = ? ORDER BY rowid", &st);
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
