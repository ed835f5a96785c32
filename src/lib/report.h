/* report.h -- an incident as a reviewer reads it: one self-contained HTML file, SARIF 2.1.0, and a
 * Chrome trace-event file (Perfetto) of a run.
 *
 * Every renderer reads the investigation's JSON document (what `affidavit investigate --json`
 * prints, with "incident": ID) and the decoded traces of the minimal failing run and of its
 * nearest passing run. Every string that comes from the user's code or output (test names, labels,
 * failure texts, file names, the diff) is escaped for where it goes: HTML text, HTML attributes,
 * SVG, JSON. */
#ifndef AFD_REPORT_H
#define AFD_REPORT_H

#include "buf.h"
#include "trace.h"

#include <stdint.h>

typedef struct afd_report_in {
    int64_t id;               /* the incident's number */
    int64_t created;          /* unix seconds */
    const char *json;         /* the investigation's JSON document */
    const afd_trace *failing; /* the minimal failing run, or NULL */
    const afd_trace *passing; /* its nearest passing run, or NULL */
} afd_report_in;

/* Each returns 0 with the document in out (reset first), or a negative code with a one-line
 * reason in err (e.g. the JSON does not parse). */
int afd_report_html(const afd_report_in *in, afd_buf *out, char *err, size_t errlen);
int afd_report_sarif(const afd_report_in *in, afd_buf *out, char *err, size_t errlen);
/* The failing run (or, when which is "passing", the passing one) as Chrome trace-event JSON. */
int afd_report_chrome_trace(const afd_report_in *in, const char *which, afd_buf *out, char *err,
                            size_t errlen);

#endif
