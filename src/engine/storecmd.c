/* storecmd.c -- the commands over the incident store: ls, show, report, serve.
 *
 * `serve` is a small dashboard bound to the loopback interface only: a list of incidents and each
 * one's report, rendered from the store on every request (libmicrohttpd parses HTTP; we never do).
 * Every request opens the store afresh on the server's thread, so an investigation writing at the
 * same time is seen at the next request and never blocks the page for long (WAL). */
#include "storecmd.h"
#include "text.h"
#include "afd.h"
#include "buf.h"
#include "cmds.h"
#include "incident.h"
#include "storedir.h"
#include "out.h"
#include "report.h"
#include "shell.h"
#include "store.h"
#include "trace.h"

#include <arpa/inet.h>
#include <jansson.h>
#include <errno.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int usage_error(const char *msg, const char *arg)
{
    fprintf(stderr, "affidavit: error: %s%s%s (see affidavit --help)\n", msg, arg ? ": " : "",
            arg ? arg : "");
    return AFD_EXIT_USAGE;
}

static int parse_id(const char *s, int64_t *id)
{
    if (!s || !*s)
        return -1;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v <= 0)
        return -1;
    *id = v;
    return 0;
}

static void date_text(int64_t t, char *buf, size_t len)
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (!gmtime_r(&tt, &tm) || !strftime(buf, len, "%Y-%m-%d %H:%M UTC", &tm))
        snprintf(buf, len, "an unknown date");
}

/* An incident's report in one of the formats, rendered from the store. */
static int render(afd_store_full *f, const char *format, const char *run, afd_buf *out, char *err,
                  size_t errlen)
{
    afd_trace ft, pt;
    int have_f = f->failing && afd_trace_decode(&ft, f->failing, f->failing_len) == 0;
    int have_p = f->passing && afd_trace_decode(&pt, f->passing, f->passing_len) == 0;
    afd_report_in in = {.id = f->row.id,
                        .created = f->row.created,
                        .json = f->json,
                        .failing = have_f ? &ft : NULL,
                        .passing = have_p ? &pt : NULL};
    int rc;
    out->len = 0;
    if (!strcmp(format, "html")) {
        rc = afd_report_html(&in, out, err, errlen);
    } else if (!strcmp(format, "sarif")) {
        rc = afd_report_sarif(&in, out, err, errlen);
    } else if (!strcmp(format, "chrome-trace")) {
        rc = afd_report_chrome_trace(&in, run, out, err, errlen);
    } else { /* json: the stored document, with its incident number */
        afd_buf_printf(out, "{\"incident\": %" PRId64 ", ", f->row.id);
        const char *j = f->json ? f->json : "{}";
        afd_buf_printf(out, "%s", *j == '{' ? j + 1 : j);
        if (out->len && out->data[out->len - 1] != '\n')
            afd_buf_printf(out, "\n");
        rc = out->err;
    }
    if (have_f)
        afd_trace_finish(&ft);
    if (have_p)
        afd_trace_finish(&pt);
    return rc;
}

static int load(int64_t id, afd_store_full *f, char *err, size_t errlen)
{
    afd_store *st = NULL;
    int rc = afd_storedir_open_to_read(&st, err, errlen);
    if (rc == AFD_ENOTFOUND)
        snprintf(err, errlen, "no incident %" PRId64 " (there is no incident store here)", id);
    if (rc == 0)
        rc = afd_store_get(st, id, f, err, errlen);
    afd_store_close(st);
    return rc;
}

/* The project's incidents, newest first (at most limit; 0: all). */
static int list(size_t limit, afd_store_row **rows, size_t *n, char *err, size_t errlen)
{
    afd_store *st = NULL;
    int rc = afd_storedir_open_to_read(&st, err, errlen);
    if (rc == AFD_ENOTFOUND) { /* a project that cannot hold a store has no incidents yet */
        *rows = NULL;
        *n = 0;
        return 0;
    }
    if (rc == 0)
        rc = afd_store_list(st, limit, rows, n, err, errlen);
    afd_store_close(st);
    return rc;
}

/* ---- ls, show, report ---- */

static int cmd_ls(int json, size_t limit)
{
    char err[600] = "";
    afd_store_row *rows = NULL;
    size_t n = 0;
    int rc = list(limit, &rows, &n, err, sizeof err);
    if (rc < 0) {
        fprintf(stderr, "affidavit: error: %s\n", err[0] ? err : afd_strerror(rc));
        return AFD_EXIT_INTERNAL;
    }
    afd_buf b;
    afd_buf_init(&b);
    if (json)
        afd_buf_printf(&b, "[");
    else if (n)
        afd_buf_printf(&b, "%6s  %-20s  %-13s  %-15s  %s\n", "ID", "DATE", "VERDICT", "RATE", "TEST");
    else
        afd_buf_printf(&b, "no incidents yet (affidavit investigate NODEID records one)\n");
    for (size_t i = 0; i < n; i++) {
        const afd_store_row *r = &rows[i];
        char date[64], rate[48];
        date_text(r->created, date, sizeof date);
        snprintf(rate, sizeof rate, "%" PRIu64 "/%" PRIu64 " (%.0f%%)", r->natural_failed, r->natural_runs,
                 100 * r->rate);
        if (json) {
            afd_buf_printf(&b, "%s{\"incident\": %" PRId64 ", \"created\": %" PRId64 ", \"nodeid\": ",
                           i ? ", " : "", r->id, r->created);
            afd_json_str(&b, r->nodeid);
            afd_buf_printf(&b, ", \"verdict\": ");
            afd_json_str(&b, r->verdict);
            afd_buf_printf(&b, ", \"cause\": ");
            afd_json_str(&b, r->cause_kind);
            afd_buf_printf(&b, ", \"rate\": ");
            afd_json_num(&b, r->rate);
            afd_buf_printf(&b, ", \"runs\": %" PRIu64 ", \"failed\": %" PRIu64 "}", r->natural_runs,
                           r->natural_failed);
        } else {
            afd_buf_printf(&b, "%6" PRId64 "  %-20s  %-13s  %-15s  %s\n", r->id, date, r->verdict, rate,
                           r->nodeid);
        }
    }
    if (json)
        afd_buf_printf(&b, "]\n");
    if (json)
        fwrite(b.data, 1, b.len, stdout);
    else
        afd_term_write(stdout, b.data, b.len); /* node ids and cause sentences are the user's text */
    afd_buf_finish(&b);
    afd_store_rows_free(rows, n);
    return 0;
}

static int cmd_show(int64_t id, int json)
{
    char err[600] = "";
    afd_store_full f;
    memset(&f, 0, sizeof f);
    int rc = load(id, &f, err, sizeof err);
    if (rc < 0) {
        fprintf(stderr, "affidavit: error: %s\n", err[0] ? err : afd_strerror(rc));
        afd_store_full_free(&f);
        return rc == AFD_ENOTFOUND ? AFD_EXIT_USAGE : AFD_EXIT_INTERNAL;
    }
    afd_buf b;
    afd_buf_init(&b);
    if (json) {
        rc = render(&f, "json", NULL, &b, err, sizeof err);
    } else {
        char date[64], path[4200];
        date_text(f.row.created, date, sizeof date);
        snprintf(path, sizeof path, "%s/reports/incident-%" PRId64 ".html", afd_storedir_dir(), id);
        afd_buf_printf(&b, "incident %" PRId64 " (%s)\n  test:     %s\n  verdict:  %s\n", id, date,
                       f.row.nodeid, f.row.verdict);
        afd_buf_printf(&b, "  natural:  %" PRIu64 "/%" PRIu64 " failed (%.1f%%)\n", f.row.natural_failed,
                       f.row.natural_runs, 100 * f.row.rate);
        if (f.summary && *f.summary) /* a timing threshold's sentence is no cause (timing.h) */
            afd_buf_printf(&b, "  %s%s\n",
                           strstr(f.row.verdict, "timing") ? "timing:   " : "cause:    ", f.summary);
        if (f.token && *f.token) {
            afd_buf_printf(&b, "  replay:   ");
            afd_shell_replay_command(&b, f.token, f.row.nodeid);
            afd_buf_put_u8(&b, '\n');
        }
        afd_buf_printf(&b, "  runs:     %zu stored; traces: %s%s\n", f.n_runs, f.failing ? "failing " : "",
                       f.passing   ? "passing"
                       : f.failing ? ""
                                   : "none");
        afd_buf_printf(&b, "  report:   %s\n",
                       access(path, R_OK) == 0 ? path : "affidavit report ID --format html");
    }
    if (rc == 0 && json)
        fwrite(b.data, 1, b.len, stdout);
    else if (rc == 0)
        afd_term_write(stdout, b.data, b.len);
    else
        fprintf(stderr, "affidavit: error: %s\n", err);
    afd_buf_finish(&b);
    afd_store_full_free(&f);
    return rc < 0 ? AFD_EXIT_INTERNAL : 0;
}

static int cmd_report(int64_t id, const char *format, const char *run, const char *outpath)
{
    char err[600] = "";
    afd_store_full f;
    memset(&f, 0, sizeof f);
    int rc = load(id, &f, err, sizeof err);
    afd_buf b;
    afd_buf_init(&b);
    if (rc == 0)
        rc = render(&f, format, run, &b, err, sizeof err);
    if (rc < 0) {
        fprintf(stderr, "affidavit: error: %s\n", err[0] ? err : afd_strerror(rc));
        afd_buf_finish(&b);
        afd_store_full_free(&f);
        return rc == AFD_ENOTFOUND ? AFD_EXIT_USAGE : AFD_EXIT_INTERNAL;
    }
    FILE *o = outpath ? fopen(outpath, "wb") : stdout;
    int ok = o && fwrite(b.data, 1, b.len, o) == b.len;
    if (outpath && o)
        ok = fclose(o) == 0 && ok;
    if (!ok)
        fprintf(stderr, "affidavit: error: cannot write %s: %s\n", outpath ? outpath : "stdout",
                strerror(errno));
    else if (outpath)
        fprintf(stderr, "affidavit: wrote %s\n", outpath);
    afd_buf_finish(&b);
    afd_store_full_free(&f);
    return ok ? 0 : AFD_EXIT_INTERNAL;
}

/* ---- serve ---- */

static volatile sig_atomic_t stop_serving;

static void on_stop(int sig)
{
    (void)sig;
    stop_serving = 1;
}

/* Dashboard text through the one HTML escaper (text.h): markup characters as entities, controls as
 * their pictures, bytes that are not UTF-8 as U+FFFD. */
static void html_text(afd_buf *b, const char *s)
{
    if (s)
        afd_html_strn(b, s, strlen(s));
}

/* The dashboard page's head: light and dark themes, readable on a phone; no script, no fetch. */
static const char DASHBOARD_HEAD[] =
    "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
    "<meta name=\"viewport\" content=\"width=device-width\"><title>affidavit incidents</title>"
    "<style>:root{--bg:#fff;--fg:#1d1d1f;--mute:#666;--line:#ddd;--bad:#b3261e;--ok:#1b6e3a}"
    "@media (prefers-color-scheme:dark){:root{--bg:#16171a;--fg:#e8e8ea;--mute:#9a9aa0;"
    "--line:#333;--bad:#ff8a80;--ok:#7bd88f}}"
    "body{background:var(--bg);color:var(--fg);font:15px/1.4 system-ui,sans-serif;margin:1.5rem;"
    "max-width:1200px}a{color:inherit}.wrap{overflow-x:auto}table{border-collapse:collapse;"
    "width:100%}th,td{text-align:left;padding:.4rem .6rem;border-bottom:1px solid var(--line)}"
    "th{color:var(--mute);font-weight:600}.reproduced,.deterministic{color:var(--bad)}"
    ".no_failure{color:var(--ok)}.timing_sensitive{color:#a15c00}</style></head><body><h1>affidavit "
    "incidents</h1>";

static void dashboard(afd_buf *b)
{
    char err[600] = "";
    afd_store_row *rows = NULL;
    size_t n = 0;
    int rc = list(500, &rows, &n, err, sizeof err);
    afd_buf_put(b, DASHBOARD_HEAD, sizeof DASHBOARD_HEAD - 1);
    if (rc < 0) {
        afd_buf_printf(b, "<p id=\"error\">The incident store cannot be read: ");
        html_text(b, err);
        afd_buf_printf(b, "</p>");
    } else if (!n) {
        afd_buf_printf(b,
                       "<p id=\"empty\">No incidents yet: <code>affidavit investigate NODEID</code> records "
                       "one.</p>");
    } else {
        afd_buf_printf(b, "<div class=\"wrap\"><table id=\"incidents\"><thead><tr><th>#</th><th>test</th>"
                          "<th>natural rate</th><th>verdict</th><th>date</th></tr></thead><tbody>");
        for (size_t i = 0; i < n; i++) {
            const afd_store_row *r = &rows[i];
            char date[64];
            date_text(r->created, date, sizeof date);
            afd_buf_printf(b,
                           "<tr><td><a href=\"/incident/%" PRId64 "\">%" PRId64 "</a></td><td>"
                           "<a href=\"/incident/%" PRId64 "\">",
                           r->id, r->id, r->id);
            html_text(b, r->nodeid);
            afd_buf_printf(b, "</a></td><td>%" PRIu64 "/%" PRIu64 " (%.1f%%)</td><td class=\"",
                           r->natural_failed, r->natural_runs, 100 * r->rate);
            html_text(b, r->verdict);
            afd_buf_printf(b, "\">");
            html_text(b, r->verdict);
            if (r->cause_kind && *r->cause_kind) {
                afd_buf_printf(b, ": ");
                html_text(b, r->cause_kind);
            }
            afd_buf_printf(b, "</td><td>%s</td></tr>", date);
        }
        afd_buf_printf(b, "</tbody></table></div>");
    }
    afd_buf_printf(b, "</body></html>\n");
    afd_store_rows_free(rows, n);
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *type, const afd_buf *body)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(body->len, body->len ? body->data : (void *)"",
                                                             MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", type);
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    /* the pages carry no script; forbid any, and any load from elsewhere */
    MHD_add_response_header(r, "Content-Security-Policy",
                            "default-src 'none'; style-src 'unsafe-inline'; img-src data:");
    enum MHD_Result ok = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                              const char *version, const char *upload, size_t *upload_size, void **state)
{
    (void)cls;
    (void)version;
    (void)upload;
    (void)upload_size;
    (void)state;
    afd_buf b;
    afd_buf_init(&b);
    enum MHD_Result ok;
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        afd_buf_printf(&b, "only GET\n");
        ok = reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain; charset=utf-8", &b);
    } else if (!strcmp(url, "/")) {
        dashboard(&b);
        ok = reply(c, MHD_HTTP_OK, "text/html; charset=utf-8", &b);
    } else if (!strncmp(url, "/incident/", 10)) {
        /* /incident/N, /incident/N.json, /incident/N.sarif, /incident/N.trace.json */
        char idtext[32];
        const char *rest = url + 10;
        size_t k = strspn(rest, "0123456789");
        const char *suffix = rest + k;
        const char *format = !*suffix                         ? "html"
                             : !strcmp(suffix, ".json")       ? "json"
                             : !strcmp(suffix, ".sarif")      ? "sarif"
                             : !strcmp(suffix, ".trace.json") ? "chrome-trace"
                                                              : NULL;
        int64_t id = 0;
        snprintf(idtext, sizeof idtext, "%.*s", (int)(k < 20 ? k : 20), rest);
        char err[600] = "";
        afd_store_full f;
        memset(&f, 0, sizeof f);
        int rc = format && parse_id(idtext, &id) == 0 ? load(id, &f, err, sizeof err) : AFD_ENOTFOUND;
        if (rc == 0)
            rc = render(&f, format, NULL, &b, err, sizeof err);
        if (rc == 0) {
            ok = reply(
                c, MHD_HTTP_OK,
                !strcmp(format, "html") ? "text/html; charset=utf-8" : "application/json; charset=utf-8", &b);
        } else {
            b.len = 0;
            afd_buf_printf(&b, "%s\n", err[0] ? err : "not found");
            ok = reply(c, rc == AFD_ENOTFOUND ? MHD_HTTP_NOT_FOUND : MHD_HTTP_INTERNAL_SERVER_ERROR,
                       "text/plain; charset=utf-8", &b);
        }
        afd_store_full_free(&f);
    } else {
        afd_buf_printf(&b, "not found\n");
        ok = reply(c, MHD_HTTP_NOT_FOUND, "text/plain; charset=utf-8", &b);
    }
    afd_buf_finish(&b);
    return ok;
}

/* libmicrohttpd's first complaint (e.g. "Failed to bind to port 8765: Address already in use"),
 * kept so that a daemon that cannot start is reported in the engine's one line instead of in two:
 * left to itself the library writes its own line to stderr. It is read only when the daemon did
 * not start, so a later write from the daemon's own thread races with no reader. */
static char mhd_first_error[256];

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    if (mhd_first_error[0])
        return;
    vsnprintf(mhd_first_error, sizeof mhd_first_error, fmt, ap);
    mhd_first_error[strcspn(mhd_first_error, "\r\n")] = 0;
}

static int cmd_serve(unsigned port)
{
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK); /* loopback only: the reports hold source code */
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, (uint16_t)port, NULL, NULL, handle, NULL,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30,
        MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr,
                "affidavit: error: cannot listen on 127.0.0.1:%u%s%s (in use? try --port 0 for any free "
                "port)\n",
                port, mhd_first_error[0] ? ": " : "", mhd_first_error);
        return AFD_EXIT_USAGE;
    }
    /* From here on the daemon's thread may still log (a client that hangs up): that is not the
     * user's concern, and the buffer the logger fills is no longer read. */
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    unsigned bound = info ? info->port : port;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    char db[4096];
    printf("affidavit: serving the incidents of %s at http://127.0.0.1:%u/ (Ctrl-C stops)\n",
           afd_storedir_path("incidents.db", db, sizeof db), bound);
    fflush(stdout);
    while (!stop_serving)
        pause();
    MHD_stop_daemon(d);
    return 0;
}

/* ---- merge ---- */

static const char *jstr(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

/* One result (a line of a shard's explore results, or an investigation's --json document) as an
 * incident of the project's store. */
/* What merge folded, by kind, for its one-line account. */
typedef struct merge_counts {
    size_t failing, timing, clean, investigations;
} merge_counts;

static int merge_one(afd_store *st, json_t *doc, const char *text, int64_t *id, merge_counts *n, char *err,
                     size_t errlen)
{
    int explored = json_is_boolean(json_object_get(doc, "found"));
    char summary[600] = "";
    afd_store_incident inc = {.nodeid = jstr(doc, "nodeid"),
                              .token = jstr(doc, "token"),
                              .created = (int64_t)time(NULL),
                              .json = text};
    if (!*inc.nodeid) {
        snprintf(err, errlen, "a result names no test (no \"nodeid\")");
        return AFD_EINVAL;
    }
    if (explored) {
        int found = json_is_true(json_object_get(doc, "found"));
        /* a failure that needs one step to outlast a timer the test armed (the explore contract's
         * "verdict"; results written before it have none and are failures) */
        int timing = found && !strcmp(jstr(doc, "verdict"), "timing_sensitive");
        inc.verdict = timing ? "explored: timing_sensitive" : found ? "explored: fails" : "explored: passes";
        *(timing ? &n->timing : found ? &n->failing : &n->clean) += 1;
        json_int_t runs = json_integer_value(json_object_get(doc, "runs"));
        if (found)
            snprintf(summary, sizeof summary,
                     "a controlled schedule makes it fail (shard %s, run %lld of %lld): %.400s",
                     jstr(doc, "shard"), (long long)json_integer_value(json_object_get(doc, "failing_run")),
                     (long long)runs, jstr(doc, "failure"));
        else
            snprintf(summary, sizeof summary, "no failing schedule in %lld runs (shard %s)", (long long)runs,
                     jstr(doc, "shard"));
        inc.summary = summary;
        inc.cause_kind = "";
        if (!strcmp(jstr(doc, "verdict"), "timing_sensitive")) { /* a threshold, not a race (timing.h) */
            inc.verdict = "explored: timing-sensitive";
            inc.summary = jstr(json_object_get(doc, "timing"), "summary");
        }
    } else {
        /* an investigation's document: read back whole (the first pass checked that it reads) */
        afd_incident doc_inc;
        int rc = afd_incident_from_json(text, strlen(text), &doc_inc, err, errlen);
        const char *kind = afd_cause_kind_name(doc_inc.cause.kind);
        inc.verdict = afd_verdict_name(doc_inc.verdict);
        inc.cause_kind = kind ? kind : "";
        inc.summary = kind ? doc_inc.cause.summary : doc_inc.has_timing ? doc_inc.timing.summary : "";
        inc.natural_runs = doc_inc.natural_runs;
        inc.natural_failed = doc_inc.natural_failed;
        inc.rate = inc.natural_runs ? (double)inc.natural_failed / (double)inc.natural_runs : 0;
        n->investigations++;
        if (rc == 0)
            rc = afd_store_add(st, &inc, NULL, 0, NULL, 0, NULL, id, err, errlen);
        afd_incident_finish(&doc_inc);
        return rc;
    }
    return afd_store_add(st, &inc, NULL, 0, NULL, 0, NULL, id, err, errlen);
}

/* affidavit merge FILE...: folds the results CI jobs wrote (one JSON document a line) into this
 * project's store, so one `affidavit ls` or `serve` shows them all. Nothing is merged from a
 * file with a line that does not parse: the error names the file and the line. */
/* The one-line reason an investigation's document does not read back (why[0] == 0: it does). */
static void check_investigation(const char *line, size_t len, char *why, size_t whylen)
{
    afd_incident inc;
    if (afd_incident_from_json(line, len, &inc, why, whylen) == 0)
        why[0] = 0;
    afd_incident_finish(&inc);
}

static int cmd_merge(int argc, char **argv, int json)
{
    char err[600] = "";
    afd_store *st = NULL;
    if (afd_storedir_open(&st, err, sizeof err) < 0) {
        fprintf(stderr, "affidavit: error: %s\n", err);
        return AFD_EXIT_INTERNAL;
    }
    afd_buf ids;
    afd_buf_init(&ids);
    size_t merged = 0, files = 0;
    merge_counts n = {0};
    int rc = 0;
    for (int i = 2; i < argc && rc == 0; i++) {
        if (argv[i][0] == '-')
            continue;
        FILE *f = fopen(argv[i], "r");
        if (!f) {
            fprintf(stderr, "affidavit: error: cannot read %s: %s\n", argv[i], strerror(errno));
            rc = AFD_EXIT_USAGE;
            break;
        }
        files++;
        /* the whole file is read and checked first: a file with a bad line merges nothing */
        json_t *docs = json_array(), *texts = json_array();
        char *line = NULL;
        size_t cap = 0;
        ssize_t got;
        unsigned long lineno = 0;
        while (rc == 0 && (got = getline(&line, &cap, f)) >= 0) {
            lineno++;
            while (got > 0 && (line[got - 1] == '\n' || line[got - 1] == '\r'))
                line[--got] = 0;
            if (!got)
                continue;
            json_error_t je;
            json_t *doc = json_loads(line, JSON_ALLOW_NUL, &je); /* \u0000 in a failure text */
            char why[300] = "";
            if (json_is_object(doc) && *jstr(doc, "nodeid") &&
                !json_is_boolean(json_object_get(doc, "found")))
                check_investigation(line, (size_t)got, why, sizeof why);
            if (!json_is_object(doc) || !*jstr(doc, "nodeid") || why[0]) {
                fprintf(stderr, "affidavit: error: %s, line %lu: not a result of affidavit (%s)\n", argv[i],
                        lineno,
                        !doc                   ? je.text
                        : !json_is_object(doc) ? "not an object"
                        : why[0]               ? why
                                               : "it names no test");
                rc = AFD_EXIT_USAGE;
                json_decref(doc);
            } else {
                json_array_append_new(docs, doc);
                json_array_append_new(texts, json_string(line));
            }
        }
        free(line);
        fclose(f);
        for (size_t k = 0; rc == 0 && k < json_array_size(docs); k++) {
            int64_t id = 0;
            if (merge_one(st, json_array_get(docs, k), json_string_value(json_array_get(texts, k)), &id, &n,
                          err, sizeof err) < 0) {
                fprintf(stderr, "affidavit: error: %s: %s\n", argv[i], err);
                rc = AFD_EXIT_INTERNAL;
            } else {
                afd_buf_printf(&ids, "%s%" PRId64, merged++ ? ", " : "", id);
            }
        }
        json_decref(docs);
        json_decref(texts);
    }
    afd_store_close(st);
    if (rc == 0 && !files) {
        afd_buf_finish(&ids);
        return usage_error("expected result files to merge (e.g. .affidavit/explore/shard-1-of-2.jsonl)",
                           NULL);
    }
    char db[4096];
    if (json)
        printf("{\"schema\": 1, \"merged\": %zu, \"files\": %zu, \"failing\": %zu, "
               "\"timing_sensitive\": %zu, \"clean\": %zu, \"investigations\": %zu, \"incidents\": [%s]}\n",
               merged, files, n.failing, n.timing, n.clean, n.investigations,
               ids.len ? (const char *)ids.data : "");
    else
        printf("merged %zu result%s from %zu file%s into %s: %zu failing, %zu timing_sensitive, %zu clean, "
               "%zu investigation%s\n",
               merged, merged == 1 ? "" : "s", files, files == 1 ? "" : "s",
               afd_storedir_path("incidents.db", db, sizeof db), n.failing, n.timing, n.clean,
               n.investigations, n.investigations == 1 ? "" : "s");
    afd_buf_finish(&ids);
    return rc;
}

/* ---- the command line ---- */

int afd_cmd_store(int argc, char **argv)
{
    const char *cmd = argv[1];
    int json = 0;
    if (!strcmp(cmd, "merge")) {
        for (int i = 2; i < argc; i++)
            if (!strcmp(argv[i], "--json"))
                json = 1;
            else if (argv[i][0] == '-')
                return usage_error("unknown option", argv[i]);
        return cmd_merge(argc, argv, json);
    }
    const char *format = "html", *run = NULL, *outpath = NULL, *pos = NULL;
    uint64_t port = 8765, limit = 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--json")) {
            json = 1;
        } else if (!strcmp(cmd, "report") && !strcmp(a, "--format")) {
            if (!v ||
                (strcmp(v, "html") && strcmp(v, "json") && strcmp(v, "sarif") && strcmp(v, "chrome-trace")))
                return usage_error("--format takes html, json, sarif or chrome-trace", v);
            format = v;
            i++;
        } else if (!strcmp(cmd, "report") && !strcmp(a, "--run")) {
            if (!v || (strcmp(v, "failing") && strcmp(v, "passing")))
                return usage_error("--run takes failing or passing", v);
            run = v;
            i++;
        } else if (!strcmp(cmd, "report") && (!strcmp(a, "-o") || !strcmp(a, "--output"))) {
            if (!v)
                return usage_error("expected a file after", a);
            outpath = v;
            i++;
        } else if ((!strcmp(cmd, "serve") && !strcmp(a, "--port")) ||
                   (!strcmp(cmd, "ls") && !strcmp(a, "--limit"))) {
            uint64_t *dst = !strcmp(a, "--port") ? &port : &limit;
            char *end = NULL;
            errno = 0;
            /* Digits only: strtoull alone takes "" as 0 (any free port, for --port ""), skips
             * leading blanks and accepts a sign. */
            int digits = v && *v && strspn(v, "0123456789") == strlen(v);
            unsigned long long x = digits ? strtoull(v, &end, 10) : 0;
            if (!digits || errno || *end || (dst == &port && x > 65535))
                return usage_error(
                    dst == &port ? "expected a port (0-65535) after" : "expected a number after", a);
            *dst = x;
            i++;
        } else if (a[0] == '-') {
            return usage_error("unknown option", a);
        } else if (!pos) {
            pos = a;
        } else {
            return usage_error("unexpected argument", a);
        }
    }
    int64_t id = 0;
    if (!strcmp(cmd, "show") || !strcmp(cmd, "report")) {
        if (!pos)
            return usage_error("expected an incident number (affidavit ls lists them)", NULL);
        if (parse_id(pos, &id) < 0)
            return usage_error("not an incident number", pos);
    } else if (pos) {
        return usage_error("unexpected argument", pos);
    }
    if (!strcmp(cmd, "ls"))
        return cmd_ls(json, (size_t)limit);
    if (!strcmp(cmd, "show"))
        return cmd_show(id, json);
    if (!strcmp(cmd, "report"))
        return cmd_report(id, json ? "json" : format, run, outpath);
    return cmd_serve((unsigned)port);
}
