/* many.c -- sample and explore over several tests on one pool.
 *
 * A worker's start (Python, pytest, collecting the test) costs seconds; a run through a warm
 * worker costs milliseconds. So the pytest arguments given (node ids, files, directories) are
 * collected once, by one pool whose workers know every collected test, and the command runs for
 * each test in turn on that pool, the runs of each spread over every worker. Each test's output is
 * what the command prints for one test (with --json, its document on one line), followed by a
 * table of all of them. With --stdin the tests to run are the node ids read from standard input,
 * one a line, each answered (and flushed) as it ends: pytest's plugin keeps one engine for its
 * whole session this way.
 *
 * One argument that collects one test is the single-test command, output included. */
#include "runs.h"
#include "afd.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One test's line of the closing table. */
typedef struct row {
    char *nodeid; /* Owned. */
    int rc;
    afd_item_summary sum;
    char *error; /* Owned: why it was not run (rc not 0 or 1), or NULL. */
} row;

typedef struct rows {
    row *v;
    size_t n, cap;
} rows;

static int rows_add(rows *r, const char *nodeid, int rc, const afd_item_summary *sum, const char *error)
{
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 16;
        row *v = realloc(r->v, cap * sizeof *v);
        if (!v)
            return AFD_ENOMEM;
        r->v = v;
        r->cap = cap;
    }
    row *x = &r->v[r->n];
    x->nodeid = strdup(nodeid);
    x->error = error && *error ? strdup(error) : NULL;
    if (!x->nodeid) {
        free(x->error);
        return AFD_ENOMEM;
    }
    x->rc = rc;
    x->sum = *sum;
    r->n++;
    return 0;
}

static void rows_finish(rows *r)
{
    for (size_t i = 0; i < r->n; i++) {
        free(r->v[i].nodeid);
        free(r->v[i].error);
    }
    free(r->v);
}

static const char *row_word(const afd_cli *cli, const row *x)
{
    int explore = !strcmp(cli->cmd, "explore");
    if (x->rc == AFD_EXIT_FAILURE)
        return explore ? (x->sum.timing_sensitive ? "timing-sensitive" : "failing schedule") : "failed";
    if (x->rc == AFD_EXIT_ABSTAIN && explore)
        return x->sum.thread ? "abstained"    /* it fails only with a thread working in real time */
                             : "unconfirmed"; /* its schedule did not fail again when replayed alone */
    if (x->rc == AFD_EXIT_CLEAN && explore && x->sum.failed)
        return "failed untraced"; /* its worker died with it: no trace, so no schedule to give */
    if (x->rc == AFD_EXIT_CLEAN && explore && x->sum.closed)
        return "no failing (closed)"; /* every schedule runs the zero schedule's run */
    if (x->rc == AFD_EXIT_CLEAN)
        return explore ? "no failing schedule" : "passed";
    if (x->sum.not_explorable)
        return "not explorable"; /* it ran, on no loop affidavit controls */
    return x->rc == AFD_EXIT_INTERRUPTED ? "interrupted" : x->rc == AFD_EXIT_USAGE ? "not run" : "error";
}

/* The closing table: one line per test, then the totals. */
static void print_table(const afd_cli *cli, const rows *r, double secs)
{
    afd_buf o;
    afd_buf_init(&o);
    uint64_t runs = 0, failing = 0, clean = 0, unconfirmed = 0, not_run = 0;
    afd_buf_printf(&o, "\n%-20s %7s %7s  %s\n", "result", "runs", "failed", "test");
    for (size_t i = 0; i < r->n; i++) {
        const row *x = &r->v[i];
        runs += x->sum.runs;
        failing += x->rc == AFD_EXIT_FAILURE;
        clean += x->rc == AFD_EXIT_CLEAN;
        unconfirmed += x->rc == AFD_EXIT_ABSTAIN;
        not_run += x->rc != AFD_EXIT_FAILURE && x->rc != AFD_EXIT_CLEAN && x->rc != AFD_EXIT_ABSTAIN;
        afd_buf_printf(&o, "%-20s %7" PRIu64 " %7" PRIu64 "  ", row_word(cli, x), x->sum.runs, x->sum.failed);
        afd_term_strn(&o, x->nodeid, strlen(x->nodeid));
        if (x->error) {
            afd_buf_printf(&o, ": ");
            afd_term_strn(&o, x->error, strlen(x->error));
        }
        afd_buf_printf(&o, "\n");
    }
    afd_buf_printf(&o, "%zu test%s: %" PRIu64 " %s, %" PRIu64 " %s, ", r->n, r->n == 1 ? "" : "s", failing,
                   !strcmp(cli->cmd, "explore") ? "with a failing schedule" : "failed", clean,
                   !strcmp(cli->cmd, "explore") ? "without" : "passed");
    if (unconfirmed)
        afd_buf_printf(&o, "%" PRIu64 " abstained or unconfirmed, ", unconfirmed);
    afd_buf_printf(&o, "%" PRIu64 " not run; %" PRIu64 " runs in %.1f s on one pool of %d worker%s\n",
                   not_run, runs, secs, cli->workers, cli->workers == 1 ? "" : "s");
    afd_term_write(stdout, o.data, o.len);
    afd_buf_finish(&o);
}

/* A test that was not run, as its --json line: the node id and the one-line reason. */
static void print_error_json(const char *nodeid, const char *error)
{
    afd_buf o;
    afd_buf_init(&o);
    afd_buf_printf(&o, "{\"schema\": 1, \"nodeid\": ");
    afd_json_str(&o, nodeid);
    afd_buf_printf(&o, ", \"error\": ");
    afd_json_str(&o, error && *error ? error : "not run");
    afd_buf_printf(&o, "}\n");
    fwrite(o.data, 1, o.len, stdout);
    afd_buf_finish(&o);
}

/* "[k/n] nodeid" (control characters shown as '?'), before every progress line of the test. */
static void set_prefix(size_t k, size_t n, const char *nodeid)
{
    char buf[400];
    if (n)
        snprintf(buf, sizeof buf, "[%zu/%zu] %s", k, n, nodeid);
    else
        snprintf(buf, sizeof buf, "[%zu] %s", k, nodeid);
    for (char *p = buf; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '?';
    afd_progress_prefix(buf);
}

/* Runs cmd for one test on pool; records its row. Returns the command's exit code. */
static int run_one(const afd_cli *cli, int (*cmd)(const afd_cli *), afd_pool *pool, const char *nodeid,
                   rows *r)
{
    afd_item_summary sum = {0, 0, 0, 0, 0, 0};
    afd_cli one = *cli;
    one.nodeid = nodeid;
    one.collect = NULL;
    one.n_collect = 0;
    one.pool = pool;
    one.summary = &sum;
    afd_runs_clear_error();
    int rc = cmd(&one);
    int ran = rc == AFD_EXIT_CLEAN || rc == AFD_EXIT_FAILURE || rc == AFD_EXIT_ABSTAIN;
    if (!ran && cli->json)
        print_error_json(nodeid, afd_runs_last_error());
    fflush(stdout);
    if (rows_add(r, nodeid, rc, &sum, ran ? NULL : afd_runs_last_error()) < 0)
        return AFD_EXIT_INTERNAL;
    return rc;
}

/* The one line that ends a command over tests of which none ran on a loop affidavit controls. */
static void none_explorable_line(const afd_cli *cli, size_t n)
{
    fprintf(stderr,
            "affidavit: none of the %zu test%s could be %s: %s no asyncio event loop affidavit controls "
            "(the reason%s above)\n",
            n, n == 1 ? "" : "s", !strcmp(cli->cmd, "explore") ? "explored" : "sampled",
            n == 1 ? "it ran" : "each ran", n == 1 ? " is" : "s are");
}

/* The node ids of afd_pool_items, split (pointers into a copy the caller frees: *buf). */
static const char **split_items(const char *items, char **buf, size_t *n)
{
    *n = 0;
    *buf = strdup(items);
    if (!*buf)
        return NULL;
    size_t cap = 1;
    for (const char *p = items; *p; p++)
        cap += *p == '\n';
    const char **v = calloc(cap, sizeof *v);
    if (!v) {
        free(*buf);
        *buf = NULL;
        return NULL;
    }
    for (char *p = *buf; p && *p;) {
        char *nl = strchr(p, '\n');
        if (nl)
            *nl = 0;
        if (*p)
            v[(*n)++] = p;
        p = nl ? nl + 1 : NULL;
    }
    return v;
}

/* The node ids read from stdin, each run as it is read. */
static int run_stdin(const afd_cli *cli, int (*cmd)(const afd_cli *), afd_pool *pool, rows *r)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int rc = 0;
    while (rc != AFD_EXIT_INTERRUPTED && rc != AFD_EXIT_INTERNAL &&
           (len = getline(&line, &cap, stdin)) >= 0) {
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = 0;
        if (!line[strspn(line, " \t")])
            continue;
        set_prefix(r->n + 1, 0, line);
        rc = run_one(cli, cmd, pool, line, r);
    }
    free(line);
    return rc == AFD_EXIT_INTERRUPTED || rc == AFD_EXIT_INTERNAL ? rc : 0;
}

int afd_cmd_many(const afd_cli *cli, int (*cmd)(const afd_cli *))
{
    afd_pool *pool;
    int rc = afd_runs_start_pool(cli, &pool);
    if (rc)
        return rc;
    char *buf;
    size_t n;
    const char **items = split_items(afd_pool_items(pool), &buf, &n);
    if (!items) {
        afd_pool_free(pool);
        afd_runs_error_line("%s%s", afd_strerror(AFD_ENOMEM), "");
        return AFD_EXIT_INTERNAL;
    }
    afd_cli shared = *cli;
    shared.pool = pool;
    if (!cli->from_stdin && cli->n_collect == 1 && n == 1) {
        /* one test: the command as it has always run, on the pool started for it */
        afd_item_summary sum = {0, 0, 0, 0, 0, 0};
        shared.nodeid = items[0];
        shared.collect = NULL;
        shared.n_collect = 0;
        shared.summary = &sum;
        rc = cmd(&shared);
        /* a file (not a node id) whose one test runs no loop of ours: said, and not a usage error */
        if (rc == AFD_EXIT_USAGE && sum.not_explorable && !strstr(cli->collect[0], "::")) {
            none_explorable_line(cli, 1);
            rc = AFD_EXIT_CLEAN;
        }
        afd_pool_free(pool);
        free(items);
        free(buf);
        return rc;
    }
    rows r = {0};
    uint64_t t0 = afd_runs_now_ns();
    rc = 0;
    if (cli->from_stdin) {
        rc = run_stdin(cli, cmd, pool, &r);
    } else {
        for (size_t i = 0; i < n && rc != AFD_EXIT_INTERRUPTED && rc != AFD_EXIT_INTERNAL; i++) {
            set_prefix(i + 1, n, items[i]);
            rc = run_one(cli, cmd, pool, items[i], &r);
        }
    }
    afd_progress_prefix(NULL);
    double secs = (double)(afd_runs_now_ns() - t0) / 1e9;
    afd_pool_free(pool);
    if (!cli->json)
        print_table(cli, &r, secs);
    int any_failing = 0, any_abstained = 0, any_ran = 0;
    size_t not_explorable = 0;
    for (size_t i = 0; i < r.n; i++) {
        any_failing |= r.v[i].rc == AFD_EXIT_FAILURE;
        any_abstained |= r.v[i].rc == AFD_EXIT_ABSTAIN;
        any_ran |=
            r.v[i].rc == AFD_EXIT_FAILURE || r.v[i].rc == AFD_EXIT_CLEAN || r.v[i].rc == AFD_EXIT_ABSTAIN;
        not_explorable += r.v[i].sum.not_explorable != 0;
    }
    /* Every test ran, none on a loop affidavit controls: nothing the user asked for was wrong. */
    int none_explorable = !any_ran && r.n && not_explorable == r.n;
    if (none_explorable && rc != AFD_EXIT_INTERRUPTED && rc != AFD_EXIT_INTERNAL)
        none_explorable_line(cli, r.n);
    /* interrupted or broken: that; else a failure found: 1; else one seen but not controlled: 4;
     * else some test ran (the others are in the table with their reason), or every test ran on no
     * loop of ours (said above): 0; nothing could run: the usage error the tests got */
    if (rc != AFD_EXIT_INTERRUPTED && rc != AFD_EXIT_INTERNAL)
        rc = any_failing                                     ? AFD_EXIT_FAILURE
             : any_abstained                                 ? AFD_EXIT_ABSTAIN
             : any_ran || cli->from_stdin || none_explorable ? AFD_EXIT_CLEAN
                                                             : AFD_EXIT_USAGE;
    rows_finish(&r);
    free(items);
    free(buf);
    return rc;
}
