/* test_store.c -- the incident store: round trips, order, versions, damaged files, sizes, atomicity. */
#include "afd.h"
#include "harness.h"
#include "store.h"

#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <sqlite3.h>
#include <sys/stat.h>

/* ---- a fresh directory per test, removed when the test's process exits (even on a failed CHECK,
 * which exits through exit() and so runs atexit handlers) ---- */

static char g_dir[64];

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)remove(p); /* best effort: keep going */
    return 0;
}

static int open_up(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    if (flag == FTW_D)
        chmod(p, 0700); /* a test may have made a directory read-only */
    return 0;
}

static void cleanup(void)
{
    if (!g_dir[0])
        return;
    nftw(g_dir, open_up, 16, FTW_PHYS);
    nftw(g_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    g_dir[0] = 0;
}

static const char *tmpdir(void)
{
    snprintf(g_dir, sizeof g_dir, "/tmp/afd_store_XXXXXX");
    CHECK(mkdtemp(g_dir) != NULL);
    atexit(cleanup);
    return g_dir;
}

/* dir/name into out, checked to fit. */
static void join(char *out, size_t n, const char *dir, const char *name)
{
    int w = snprintf(out, n, "%s/%s", dir, name);
    CHECK(w > 0 && (size_t)w < n);
}

/* ---- direct SQLite access, to look behind the API ---- */

static sqlite3 *raw_open(const char *path)
{
    sqlite3 *db = NULL;
    CHECK_EQ_INT(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    return db;
}

static void raw_exec(const char *path, const char *sql)
{
    sqlite3 *db = raw_open(path);
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
        FAIL_AT("%s: %s", sql, msg ? msg : "?");
    sqlite3_close(db);
}

/* The first column of the first row as an integer (one-off queries). */
static int64_t raw_int(const char *path, const char *sql)
{
    sqlite3 *db = raw_open(path);
    sqlite3_stmt *st = NULL;
    CHECK_EQ_INT(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    CHECK_EQ_INT(sqlite3_step(st), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

static void check_text(const char *path, const char *sql, const char *want)
{
    sqlite3 *db = raw_open(path);
    sqlite3_stmt *st = NULL;
    CHECK_EQ_INT(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    CHECK_EQ_INT(sqlite3_step(st), SQLITE_ROW);
    CHECK_EQ_STR((const char *)sqlite3_column_text(st, 0), want);
    sqlite3_finalize(st);
    sqlite3_close(db);
}

static void check_integrity(const char *path)
{
    check_text(path, "PRAGMA integrity_check", "ok");
    CHECK_EQ_INT(raw_int(path, "SELECT count(*) FROM pragma_foreign_key_check"), 0);
}

/* ---- fixtures ---- */

static afd_store *open_ok(const char *path)
{
    afd_store *s = NULL;
    char err[512];
    int rc = afd_store_open(&s, path, err, sizeof err);
    if (rc != 0)
        FAIL_AT("open %s: %d %s", path, rc, err);
    CHECK(s != NULL);
    return s;
}

static afd_store_incident sample(const char *nodeid)
{
    afd_store_incident inc = {
        .nodeid = nodeid,
        .verdict = "reproduced",
        .cause_kind = "ORDER",
        .summary = "task b writes x before task a reads it",
        .token = "afd1:abc",
        .rate = 0.25,
        .natural_runs = 40,
        .natural_failed = 10,
        .created = 1700000000,
        .json = "{\"verdict\":\"reproduced\"}",
    };
    return inc;
}

static int64_t add_ok(afd_store *s, const afd_store_incident *inc, const afd_store_run *runs, size_t nr,
                      const afd_store_trace *tr, size_t nt, const afd_store_patch *patch)
{
    int64_t id = -1;
    char err[512];
    int rc = afd_store_add(s, inc, runs, nr, tr, nt, patch, &id, err, sizeof err);
    if (rc != 0)
        FAIL_AT("add: %d %s", rc, err);
    CHECK(id > 0);
    return id;
}

static uint8_t *pseudo_random(size_t n, uint64_t seed)
{
    uint8_t *p = malloc(n);
    CHECK(p != NULL);
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)afd_mix64(seed + i / 3); /* some repetition, so it compresses a little */
    return p;
}

/* ---- tests ---- */

TEST(round_trip)
{
    char path[128];
    join(path, sizeof path, tmpdir(), ".affidavit/incidents.db"); /* the directory does not exist yet */
    afd_store *s = open_ok(path);
    afd_store_run runs[3] = {
        {.index = 0, .token = "", .outcome = 0, .wall_ns = 1000, .digest = 0},
        {.index = 1, .token = "afd1:x", .outcome = 1, .wall_ns = UINT64_MAX - 1, .digest = UINT64_MAX},
        {.index = 7, .token = "afd1:y", .outcome = 5, .wall_ns = 3, .digest = 0x8000000000000001ULL},
    };
    uint8_t *fb = pseudo_random(100000, 1), *pb = pseudo_random(777, 2);
    afd_store_trace tr[2] = {{"failing", fb, 100000}, {"passing", pb, 777}};
    afd_store_patch patch = {"LOCK", "pkg/m.py", "--- a/pkg/m.py\n+++ b/pkg/m.py\n", 1, 0, 1};
    afd_store_incident inc = sample("tests/test_a.py::test_race");
    inc.natural_runs = UINT64_MAX; /* the bit pattern survives */
    int64_t id = add_ok(s, &inc, runs, 3, tr, 2, &patch);
    CHECK_EQ_INT(id, 1);

    afd_store_full f;
    char err[256];
    CHECK_EQ_INT(afd_store_get(s, id, &f, err, sizeof err), 0);
    CHECK_EQ_INT(f.row.id, id);
    CHECK_EQ_INT(f.row.created, 1700000000);
    CHECK_EQ_STR(f.row.nodeid, "tests/test_a.py::test_race");
    CHECK_EQ_STR(f.row.verdict, "reproduced");
    CHECK_EQ_STR(f.row.cause_kind, "ORDER");
    CHECK_NEAR(f.row.rate, 0.25, 0);
    CHECK_EQ_U64(f.row.natural_runs, UINT64_MAX);
    CHECK_EQ_U64(f.row.natural_failed, 10);
    CHECK_EQ_STR(f.summary, inc.summary);
    CHECK_EQ_STR(f.token, "afd1:abc");
    CHECK_EQ_STR(f.json, inc.json);
    CHECK_EQ_INT(f.n_runs, 3);
    CHECK_EQ_INT(f.failing_len, 100000);
    CHECK(f.failing && memcmp(f.failing, fb, 100000) == 0);
    CHECK_EQ_INT(f.passing_len, 777);
    CHECK(f.passing && memcmp(f.passing, pb, 777) == 0);
    afd_store_full_free(&f);
    afd_store_full_free(&f); /* zeroed: fine twice */
    afd_store_close(s);

    /* Behind the API: the uint64 digest as int64 bits, the patch, the verdict, compressed rows. */
    CHECK_EQ_INT(raw_int(path, "SELECT digest FROM runs WHERE idx = 1"), -1);
    CHECK_EQ_U64((uint64_t)raw_int(path, "SELECT digest FROM runs WHERE idx = 7"), 0x8000000000000001ULL);
    CHECK_EQ_U64((uint64_t)raw_int(path, "SELECT wall_ns FROM runs WHERE idx = 1"), UINT64_MAX - 1);
    check_text(path,
               "SELECT kind || '|' || file || '|' || diff || '|' || gate_passed || verified || applied"
               " FROM patches",
               "LOCK|pkg/m.py|--- a/pkg/m.py\n+++ b/pkg/m.py\n|101");
    check_text(path,
               "SELECT verdict || '|' || cause_kind || '|' || summary FROM verdicts WHERE incident_id = 1",
               "reproduced|ORDER|task b writes x before task a reads it");
    CHECK_EQ_INT(raw_int(path, "SELECT count(*) FROM traces WHERE left_out = 0 AND zlib IS NOT NULL"), 2);
    CHECK_EQ_INT(raw_int(path, "SELECT raw_len FROM traces WHERE role = 'failing'"), 100000);
    check_text(path, "PRAGMA journal_mode", "wal");
    CHECK_EQ_INT(raw_int(path, "PRAGMA user_version"), AFD_STORE_SCHEMA_VERSION);
    check_integrity(path);
    free(fb);
    free(pb);
}

TEST(no_traces_no_patch)
{
    char path[128];
    join(path, sizeof path, tmpdir(), "incidents.db");
    afd_store *s = open_ok(path);
    afd_store_incident inc = {.nodeid = "t::x", .verdict = "no_failure"}; /* NULL strings are "" */
    inc.rate = NAN;
    int64_t id = add_ok(s, &inc, NULL, 0, NULL, 0, NULL);
    afd_store_full f;
    char err[256];
    CHECK_EQ_INT(afd_store_get(s, id, &f, err, sizeof err), 0);
    CHECK_EQ_STR(f.row.cause_kind, "");
    CHECK_EQ_STR(f.summary, "");
    CHECK_EQ_STR(f.token, "");
    CHECK_EQ_STR(f.json, "");
    CHECK(isnan(f.row.rate));
    CHECK_EQ_INT(f.n_runs, 0);
    CHECK(f.failing == NULL && f.failing_len == 0);
    CHECK(f.passing == NULL && f.passing_len == 0);
    afd_store_full_free(&f);
    afd_store_close(s);
    CHECK_EQ_INT(raw_int(path, "SELECT count(*) FROM patches"), 0);
    check_integrity(path);
}

TEST(list_order_and_limit)
{
    char path[128];
    join(path, sizeof path, tmpdir(), "incidents.db");
    afd_store *s = open_ok(path);
    afd_store_row *rows = (afd_store_row *)1;
    size_t n = 99;
    char err[256];
    CHECK_EQ_INT(afd_store_list(s, 0, &rows, &n, err, sizeof err), 0); /* empty store */
    CHECK_EQ_INT(n, 0);
    afd_store_rows_free(rows, n);

    const char *names[5] = {"t::a", "t::b", "t::c", "t::d", "t::e"};
    for (int i = 0; i < 5; i++) {
        afd_store_incident inc = sample(names[i]);
        inc.created = 1000 + i;
        inc.natural_failed = (uint64_t)i;
        CHECK_EQ_INT(add_ok(s, &inc, NULL, 0, NULL, 0, NULL), i + 1);
    }
    CHECK_EQ_INT(afd_store_list(s, 0, &rows, &n, err, sizeof err), 0);
    CHECK_EQ_INT(n, 5);
    for (size_t i = 0; i < 5; i++) {
        CHECK_EQ_INT(rows[i].id, 5 - (int64_t)i);
        CHECK_EQ_STR(rows[i].nodeid, names[4 - i]);
        CHECK_EQ_INT(rows[i].created, 1000 + 4 - (int64_t)i);
        CHECK_EQ_U64(rows[i].natural_failed, 4 - i);
        CHECK_EQ_STR(rows[i].verdict, "reproduced");
        CHECK_EQ_STR(rows[i].cause_kind, "ORDER");
        CHECK_NEAR(rows[i].rate, 0.25, 0);
        CHECK_EQ_U64(rows[i].natural_runs, 40);
    }
    afd_store_rows_free(rows, n);
    CHECK_EQ_INT(afd_store_list(s, 2, &rows, &n, err, sizeof err), 0);
    CHECK_EQ_INT(n, 2);
    CHECK_EQ_INT(rows[0].id, 5);
    CHECK_EQ_INT(rows[1].id, 4);
    afd_store_rows_free(rows, n);
    CHECK_EQ_INT(afd_store_list(s, 50, &rows, &n, err, sizeof err), 0);
    CHECK_EQ_INT(n, 5);
    afd_store_rows_free(rows, n);
    CHECK_EQ_INT(afd_store_list(s, SIZE_MAX, &rows, &n, err, sizeof err), 0);
    CHECK_EQ_INT(n, 5);
    afd_store_rows_free(rows, n);
    afd_store_rows_free(NULL, 0);
    afd_store_close(s);
    check_integrity(path);
}

TEST(get_missing)
{
    char path[128];
    join(path, sizeof path, tmpdir(), "incidents.db");
    afd_store *s = open_ok(path);
    afd_store_full f;
    char err[256];
    CHECK_EQ_INT(afd_store_get(s, 42, &f, err, sizeof err), AFD_ENOTFOUND);
    CHECK(strstr(err, "no incident 42") != NULL);
    CHECK(f.row.nodeid == NULL && f.json == NULL); /* zeroed */
    afd_store_full_free(&f);
    afd_store_incident inc = sample("t::a");
    int64_t id = add_ok(s, &inc, NULL, 0, NULL, 0, NULL);
    CHECK_EQ_INT(afd_store_get(s, id + 1, &f, err, sizeof err), AFD_ENOTFOUND);
    CHECK_EQ_INT(afd_store_get(s, -1, &f, err, sizeof err), AFD_ENOTFOUND);
    CHECK(strstr(err, "no incident -1") != NULL);
    afd_store_close(s);
}

TEST(schema_version_mismatch)
{
    char path[128];
    join(path, sizeof path, tmpdir(), "incidents.db");
    afd_store *s = open_ok(path);
    afd_store_incident inc = sample("t::a");
    add_ok(s, &inc, NULL, 0, NULL, 0, NULL);
    afd_store_close(s);
    raw_exec(path, "PRAGMA user_version=7");

    char err[512];
    s = (afd_store *)1;
    int rc = afd_store_open(&s, path, err, sizeof err);
    CHECK(rc < 0);
    CHECK(s == NULL);
    CHECK(strstr(err, "version 7") != NULL);
    CHECK(strstr(err, "version 1") != NULL);
    CHECK(strstr(err, "move it aside") != NULL);
    CHECK(strchr(err, '\n') == NULL);
    /* Refused without being touched: the data and the version are as they were. */
    CHECK_EQ_INT(raw_int(path, "PRAGMA user_version"), 7);
    CHECK_EQ_INT(raw_int(path, "SELECT count(*) FROM incidents"), 1);
}

TEST(garbage_file_refused)
{
    char path[128];
    join(path, sizeof path, tmpdir(), "incidents.db");
    uint8_t *junk = pseudo_random(8192, 99);
    FILE *fp = fopen(path, "wb");
    CHECK(fp != NULL);
    CHECK_EQ_INT(fwrite(junk, 1, 8192, fp), 8192);
    fclose(fp);
    afd_store *s = NULL;
    char err[512];
    CHECK_EQ_INT(afd_store_open(&s, path, err, sizeof err), AFD_ESTORE);
    CHECK(s == NULL);
    CHECK(strstr(err, "is not an affidavit incident store (file is not a database)") != NULL);
    CHECK(strchr(err, '\n') == NULL);

    /* A text file too, and a file that is a real SQLite database of something else. */
    fp = fopen(path, "w");
    CHECK(fp != NULL);
    fputs("hello, I am a text file and not a database at all.\n", fp);
    fclose(fp);
    CHECK_EQ_INT(afd_store_open(&s, path, err, sizeof err), AFD_ESTORE);
    CHECK(strstr(err, "not a database") != NULL);

    CHECK_EQ_INT(remove(path), 0);
    sqlite3 *db = NULL;
    CHECK_EQ_INT(sqlite3_open(path, &db), SQLITE_OK);
    CHECK_EQ_INT(sqlite3_exec(db, "CREATE TABLE t(x)", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    CHECK_EQ_INT(afd_store_open(&s, path, err, sizeof err), AFD_ESTORE);
    CHECK(strstr(err, "not an affidavit incident store") != NULL);
    CHECK_EQ_INT(raw_int(path, "SELECT count(*) FROM sqlite_master WHERE name = 'incidents'"), 0);
    free(junk);
}

TEST(oversized_trace_left_out)
{
    char path[128];
    join(path, sizeof path, tmpdir(), "incidents.db");
    afd_store *s = open_ok(path);
    size_t big = (size_t)AFD_STORE_MAX_TRACE + 1;
    uint8_t *fb = calloc(big, 1);
    CHECK(fb != NULL);
    uint8_t pb[5] = {1, 2, 3, 4, 5};
    afd_store_trace tr[2] = {{"failing", fb, big}, {"passing", pb, sizeof pb}};
    afd_store_incident inc = sample("t::big");
    int64_t id = add_ok(s, &inc, NULL, 0, tr, 2, NULL);
    afd_store_full f;
    char err[256];
    CHECK_EQ_INT(afd_store_get(s, id, &f, err, sizeof err), 0);
    CHECK(f.failing == NULL);
    CHECK_EQ_INT(f.failing_len, 0);
    CHECK_EQ_INT(f.passing_len, 5);
    CHECK(memcmp(f.passing, pb, 5) == 0);
    afd_store_full_free(&f);

    /* Exactly at the bound is still stored. */
    afd_store_trace at[1] = {{"failing", fb, AFD_STORE_MAX_TRACE}};
    id = add_ok(s, &inc, NULL, 0, at, 1, NULL);
    CHECK_EQ_INT(afd_store_get(s, id, &f, err, sizeof err), 0);
    CHECK_EQ_INT(f.failing_len, AFD_STORE_MAX_TRACE);
    CHECK(f.failing && memcmp(f.failing, fb, AFD_STORE_MAX_TRACE) == 0);
    afd_store_full_free(&f);
    afd_store_close(s);
    free(fb);
    CHECK_EQ_INT(raw_int(path, "SELECT count(*) FROM traces WHERE left_out = 1 AND zlib IS NULL"), 1);
    CHECK_EQ_INT(raw_int(path, "SELECT raw_len FROM traces WHERE left_out = 1"), (int64_t)big);
    check_integrity(path);
}

TEST(damaged_trace_is_an_error)
{
    char path[128];
    join(path, sizeof path, tmpdir(), "incidents.db");
    uint8_t *fb = pseudo_random(5000, 7);
    afd_store_trace tr[1] = {{"failing", fb, 5000}};
    afd_store_incident inc = sample("t::a");
    static const char *const damage[] = {
        "zlib = x'deadbeef00112233'",    "raw_len = 4999", "raw_len = 5001", "raw_len = -5",
        "raw_len = 9223372036854775807", "zlib = NULL",    "zlib = x''",     "zlib = substr(zlib, 1, 20)",
    };
    for (size_t i = 0; i < sizeof damage / sizeof damage[0]; i++) {
        /* A fresh incident each time, and only its trace row damaged (our SQL, our constants). */
        afd_store *s = open_ok(path);
        int64_t id = add_ok(s, &inc, NULL, 0, tr, 1, NULL);
        afd_store_close(s);
        char sql[160];
        snprintf(sql, sizeof sql, "UPDATE traces SET %s WHERE incident_id = %lld", damage[i], (long long)id);
        raw_exec(path, sql);

        s = open_ok(path);
        afd_store_full f;
        char err[256];
        int rc = afd_store_get(s, id, &f, err, sizeof err);
        if (rc != AFD_ESTORE)
            FAIL_AT("damage %zu (%s): rc %d, %s", i, damage[i], rc, err);
        CHECK(strstr(err, "failing trace is damaged") != NULL);
        CHECK(f.failing == NULL && f.row.nodeid == NULL); /* nothing half-filled */
        afd_store_full_free(&f);
        afd_store_close(s);
    }
    free(fb);
}

TEST(many_incidents)
{
    char path[128];
    join(path, sizeof path, tmpdir(), "incidents.db");
    afd_store *s = open_ok(path);
    afd_store_run runs[10];
    for (int i = 0; i < 10; i++)
        runs[i] = (afd_store_run){.index = (uint64_t)i, .token = "afd1:t", .outcome = (uint8_t)(i % 2)};
    for (int i = 0; i < 200; i++) {
        char node[64];
        snprintf(node, sizeof node, "tests/test_m.py::test_%d", i);
        afd_store_incident inc = sample(node);
        CHECK_EQ_INT(add_ok(s, &inc, runs, (size_t)(i % 10), NULL, 0, NULL), i + 1);
    }
    afd_store_row *rows = NULL;
    size_t n = 0;
    char err[256];
    CHECK_EQ_INT(afd_store_list(s, 0, &rows, &n, err, sizeof err), 0);
    CHECK_EQ_INT(n, 200);
    for (size_t i = 0; i < n; i++) {
        char node[64];
        snprintf(node, sizeof node, "tests/test_m.py::test_%zu", 199 - i);
        CHECK_EQ_INT(rows[i].id, 200 - (int64_t)i);
        CHECK_EQ_STR(rows[i].nodeid, node);
    }
    afd_store_rows_free(rows, n);
    afd_store_full f;
    CHECK_EQ_INT(afd_store_get(s, 58, &f, err, sizeof err), 0);
    CHECK_EQ_INT(f.n_runs, 57 % 10);
    afd_store_full_free(&f);
    afd_store_close(s);
    CHECK_EQ_INT(raw_int(path, "SELECT count(*) FROM runs"), 20 * 45);
    check_integrity(path);
}

TEST(hostile_strings)
{
    char path[128];
    join(path, sizeof path, tmpdir(), "incidents.db");
    afd_store *s = open_ok(path);
    const char *node = "tests/test_'q'.py::test[\"a\";DROP TABLE incidents;--]";
    const char *summary = "<script>alert('x')</script> & \"quotes\" 'single' \\ back %s%n%%";
    const char *utf8 = "h\xc3\xa9llo \xe2\x80\x94 \xe2\x9c\x93 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x8e\x89";
    const char *json = "{\"s\":\"</script><script>x()</script>\",\"u\":\"\xc3\xa9\\u0000\"}";
    afd_store_incident inc = sample(node);
    inc.summary = summary;
    inc.cause_kind = utf8;
    inc.token = "'); DELETE FROM runs; --";
    inc.json = json;
    afd_store_run run = {.index = 0, .token = "\"'`$(rm -rf /)`", .outcome = 1};
    afd_store_patch patch = {"LOCK'", "p\"ath.py", "--- a\n+++ b\n+<script>'\n", 0, 1, 0};
    int64_t id = add_ok(s, &inc, &run, 1, NULL, 0, &patch);
    afd_store_full f;
    char err[256];
    CHECK_EQ_INT(afd_store_get(s, id, &f, err, sizeof err), 0);
    CHECK_EQ_STR(f.row.nodeid, node);
    CHECK_EQ_STR(f.summary, summary);
    CHECK_EQ_STR(f.row.cause_kind, utf8);
    CHECK_EQ_STR(f.token, inc.token);
    CHECK_EQ_STR(f.json, json);
    CHECK_EQ_INT(f.n_runs, 1);
    afd_store_full_free(&f);
    afd_store_close(s);
    check_text(path, "SELECT token FROM runs", run.token);
    check_text(path, "SELECT diff FROM patches", patch.diff);
    check_text(path, "SELECT summary FROM verdicts", summary);
    check_integrity(path);
}

TEST(reopen_keeps_incidents)
{
    char path[128];
    join(path, sizeof path, tmpdir(), "incidents.db");
    afd_store *s = open_ok(path);
    afd_store_incident a = sample("t::a"), b = sample("t::b"), c = sample("t::c");
    CHECK_EQ_INT(add_ok(s, &a, NULL, 0, NULL, 0, NULL), 1);
    CHECK_EQ_INT(add_ok(s, &b, NULL, 0, NULL, 0, NULL), 2);
    afd_store_close(s);
    s = open_ok(path);
    CHECK_EQ_INT(add_ok(s, &c, NULL, 0, NULL, 0, NULL), 3);
    afd_store_row *rows = NULL;
    size_t n = 0;
    char err[256];
    CHECK_EQ_INT(afd_store_list(s, 0, &rows, &n, err, sizeof err), 0);
    CHECK_EQ_INT(n, 3);
    CHECK_EQ_STR(rows[0].nodeid, "t::c");
    CHECK_EQ_STR(rows[1].nodeid, "t::b");
    CHECK_EQ_STR(rows[2].nodeid, "t::a");
    afd_store_rows_free(rows, n);
    afd_store_close(s);
    afd_store_close(NULL);
    check_integrity(path);
}

TEST(failed_add_writes_nothing)
{
    char path[128];
    join(path, sizeof path, tmpdir(), "incidents.db");
    afd_store *s = open_ok(path);
    afd_store_incident inc = sample("t::a");
    add_ok(s, &inc, NULL, 0, NULL, 0, NULL);
    afd_store_close(s);
    /* Make the last insert of an add (the patch) fail: everything before it must be rolled back. */
    raw_exec(path, "CREATE TRIGGER boom BEFORE INSERT ON patches"
                   " BEGIN SELECT RAISE(ABORT, 'no patches today'); END");
    s = open_ok(path);
    afd_store_run runs[4] = {{.token = "a"}, {.token = "b"}, {.token = "c"}, {.token = "d"}};
    uint8_t t[3] = {1, 2, 3};
    afd_store_trace tr[1] = {{"failing", t, 3}};
    afd_store_patch patch = {"LOCK", "m.py", "diff", 1, 1, 0};
    int64_t id = -7;
    char err[256];
    int rc = afd_store_add(s, &inc, runs, 4, tr, 1, &patch, &id, err, sizeof err);
    CHECK_EQ_INT(rc, AFD_ESTORE);
    CHECK_EQ_INT(id, -7); /* untouched */
    CHECK(strstr(err, "no patches today") != NULL);
    CHECK(strstr(err, "patch") != NULL);
    /* The store is usable afterwards (no transaction left open). */
    /* The rolled-back incident never had a number (its AUTOINCREMENT step was rolled back too). */
    CHECK_EQ_INT(add_ok(s, &inc, NULL, 0, NULL, 0, NULL), 2);
    afd_store_close(s);
    CHECK_EQ_INT(raw_int(path, "SELECT count(*) FROM incidents"), 2);
    CHECK_EQ_INT(raw_int(path, "SELECT count(*) FROM runs"), 0);
    CHECK_EQ_INT(raw_int(path, "SELECT count(*) FROM traces"), 0);
    CHECK_EQ_INT(raw_int(path, "SELECT count(*) FROM verdicts"), 2);
    check_integrity(path);
}

TEST(bad_arguments)
{
    char path[128];
    join(path, sizeof path, tmpdir(), "incidents.db");
    char err[256];
    afd_store *s = NULL;
    CHECK_EQ_INT(afd_store_open(NULL, path, err, sizeof err), AFD_EINVAL);
    CHECK_EQ_INT(afd_store_open(&s, NULL, err, sizeof err), AFD_EINVAL);
    CHECK_EQ_INT(afd_store_open(&s, "", NULL, 0), AFD_EINVAL);
    s = open_ok(path);
    int64_t id = 0;
    afd_store_incident inc = sample("t::a");
    CHECK_EQ_INT(afd_store_add(s, NULL, NULL, 0, NULL, 0, NULL, &id, err, sizeof err), AFD_EINVAL);
    CHECK_EQ_INT(afd_store_add(s, &inc, NULL, 3, NULL, 0, NULL, &id, err, sizeof err), AFD_EINVAL);
    afd_store_trace tr = {NULL, (const uint8_t *)"x", 1};
    CHECK_EQ_INT(afd_store_add(s, &inc, NULL, 0, &tr, 1, NULL, &id, err, sizeof err), AFD_EINVAL);
    CHECK_EQ_INT(afd_store_add(s, &inc, NULL, 0, NULL, 0, NULL, NULL, err, sizeof err), AFD_EINVAL);
    CHECK_EQ_INT(afd_store_list(s, 0, NULL, NULL, err, sizeof err), AFD_EINVAL);
    CHECK_EQ_INT(afd_store_get(s, 1, NULL, err, sizeof err), AFD_EINVAL);
    afd_store_full_free(NULL);
    afd_store_full z;
    memset(&z, 0, sizeof z);
    afd_store_full_free(&z);
    afd_store_close(s);
    CHECK_EQ_INT(raw_int(path, "SELECT count(*) FROM incidents"), 0);
}

/* Several processes opening a store that does not exist yet, at the same instant: one creates it,
 * the others wait for it (the journal-mode switch and the schema's creation both race). */
TEST(concurrent_first_open)
{
    char path[128];
    join(path, sizeof path, tmpdir(), ".affidavit/incidents.db");
    enum { WRITERS = 12, EACH = 2 };
    int gate[2];
    CHECK_EQ_INT(pipe(gate), 0);
    pid_t pids[WRITERS];
    for (int w = 0; w < WRITERS; w++) {
        pids[w] = fork();
        CHECK(pids[w] >= 0);
        if (pids[w] == 0) {
            g_dir[0] = 0; /* the parent cleans up */
            close(gate[1]);
            char c;
            while (read(gate[0], &c, 1) > 0) /* returns 0 when the parent closes: all start together */
                ;
            afd_store *s = open_ok(path);
            afd_store_incident inc = sample("t::concurrent");
            for (int i = 0; i < EACH; i++)
                add_ok(s, &inc, NULL, 0, NULL, 0, NULL);
            afd_store_close(s);
            _exit(0);
        }
    }
    close(gate[0]);
    close(gate[1]);
    int failed = 0; /* wait for all before checking: a failure must not clean up under a live writer */
    for (int w = 0; w < WRITERS; w++) {
        int st = 0;
        while (waitpid(pids[w], &st, 0) < 0)
            ;
        failed += !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    CHECK_EQ_INT(failed, 0);
    CHECK_EQ_INT(raw_int(path, "SELECT count(*) FROM incidents"), WRITERS * EACH);
    CHECK_EQ_INT(raw_int(path, "PRAGMA user_version"), AFD_STORE_SCHEMA_VERSION);
    check_text(path, "PRAGMA journal_mode", "wal");
    check_integrity(path);
}

/* Permission checks mean nothing to root, so under root they run in a child that drops to nobody. */
static void run_unprivileged(void (*fn)(const char *dir), const char *dir)
{
    if (geteuid() != 0) {
        fn(dir);
        return;
    }
    CHECK_EQ_INT(chmod(dir, 0777), 0);
    char own[sizeof g_dir];
    snprintf(own, sizeof own, "%s", dir); /* dir may be g_dir, which the child clears */
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        g_dir[0] = 0; /* the parent cleans up */
        if (setgid(65534) != 0 || setuid(65534) != 0) {
            fprintf(stderr, "  (permission checks skipped: cannot drop root)\n");
            _exit(0);
        }
        fn(own);
        _exit(0);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0)
        ;
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void check_readonly(const char *dir)
{
    char sub[128], path[160], err[512];
    join(sub, sizeof sub, dir, "ro");
    join(path, sizeof path, sub, "incidents.db");
    afd_store *s = NULL;
    int rc = afd_store_open(&s, path, err, sizeof err);
    if (rc != AFD_EIO)
        FAIL_AT("read-only directory: rc %d, %s", rc, err);
    CHECK(s == NULL);
    if (!strstr(err, path) || !strstr(err, "not writable") || strchr(err, '\n'))
        FAIL_AT("read-only directory: %s", err);

    join(path, sizeof path, dir, "rofile/incidents.db");
    rc = afd_store_open(&s, path, err, sizeof err);
    if (rc != AFD_EIO && rc != AFD_ESTORE)
        FAIL_AT("read-only file: rc %d, %s", rc, err);
    CHECK(s == NULL);
    if (!strstr(err, path) || !strstr(err, "read-only"))
        FAIL_AT("read-only file: %s", err);

    join(path, sizeof path, dir, "nodir/deeper/incidents.db"); /* two missing levels: refused */
    rc = afd_store_open(&s, path, err, sizeof err);
    CHECK_EQ_INT(rc, AFD_EIO);
    CHECK(strstr(err, "cannot create directory") != NULL);
}

TEST(unwritable_places)
{
    const char *dir = tmpdir();
    char p[160];
    join(p, sizeof p, dir, "ro");
    CHECK_EQ_INT(mkdir(p, 0555), 0);
    CHECK_EQ_INT(chmod(p, 0555), 0);
    join(p, sizeof p, dir, "rofile");
    CHECK_EQ_INT(mkdir(p, 0777), 0);
    CHECK_EQ_INT(chmod(p, 0777), 0);
    join(p, sizeof p, dir, "rofile/incidents.db");
    afd_store *s = open_ok(p);
    afd_store_close(s);
    CHECK_EQ_INT(chmod(p, 0444), 0);
    run_unprivileged(check_readonly, dir);
}

int main(void)
{
    RUN_TESTS("store", T(round_trip), T(no_traces_no_patch), T(list_order_and_limit), T(get_missing),
              T(schema_version_mismatch), T(garbage_file_refused), T(oversized_trace_left_out),
              T(damaged_trace_is_an_error), T(many_incidents), T(hostile_strings), T(reopen_keeps_incidents),
              T(failed_add_writes_nothing), T(bad_arguments), T(concurrent_first_open), T(unwritable_places));
}
