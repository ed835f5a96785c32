/* report_int.h -- what the report writers (report.c, report_html.c, report_fix.c, report_search.c,
 * report_json.c) share.
 *
 * Not installed and not part of the library's interface: the files are one subsystem split by
 * output, and these are its common helpers and the HTML page's state. Every string bound for HTML
 * goes through report_esc_n (or a helper built on it). */
#ifndef AFD_REPORT_INT_H
#define AFD_REPORT_INT_H

#include "buf.h"
#include "incident.h"
#include "report.h"
#include "trace.h"

#include <stddef.h>
#include <stdint.h>

/* Step bars drawn per run: about 150 bytes each, so two full runs stay near 750 KB. */
#define MAX_RECTS 2500u
/* Task lanes in the timeline; the steps of tasks beyond them are counted as not drawn. */
#define MAX_LANES 48u
/* Operations of the cause outlined in the timeline (a cause names two or three). */
#define MAX_OPS 32u
/* Probes drawn in the window plot (a bisection makes about twenty). */
#define MAX_PROBES 256u
/* Characters of a lane label before it is cut (the full label is in its tooltip). */
#define LABEL_CHARS 22u
/* Locations listed per SARIF result. */
#define MAX_LOCATIONS 16u

enum { RUN_PASSING = 0, RUN_FAILING = 1 };

typedef struct task_ref {
    uint32_t id;
    uint32_t first;    /* index of its first event: the earliest TASK event names the task */
    const char *label; /* Borrowed from the trace, or NULL when the trace never named the task. */
    char fallback[24]; /* "task-N" for an unnamed task */
    int lane;          /* LANE_UNSET until assigned, LANE_NONE beyond MAX_LANES */
} task_ref;

enum { LANE_UNSET = -2, LANE_NONE = -1 };

typedef struct run_view {
    const afd_trace *t; /* Borrowed; NULL when the run's trace is not available. */
    task_ref *tasks;    /* Owned, sorted by id, one per task id. */
    size_t n_tasks;
    uint64_t steps; /* STEP events */
    uint64_t start; /* the earliest start of a step, virtual ns (the clock starts at an epoch) */
    uint64_t end;   /* the latest end of a step, virtual ns */
} run_view;

/* Lanes are shared by both runs, one per task label, so a task sits at the same height in the
 * passing and the failing run and the eye compares straight down. */
typedef struct lanes {
    const char *label[MAX_LANES]; /* Borrowed from the run views. */
    unsigned char present[2][MAX_LANES];
    size_t n;
    uint64_t dropped_tasks;
} lanes;

/* One operation of the cause, located in the runs. */
typedef struct op_ref {
    int run;          /* the run the document names */
    const char *task; /* Borrowed from the incident. */
    int64_t step;     /* the task's step ordinal */
    int lane;
    int found[2];
    uint64_t vtime[2], cost[2];
} op_ref;

typedef struct page {
    afd_buf *out;            /* Borrowed. */
    const afd_incident *inc; /* Borrowed: the document, read leniently. */
    const afd_report_in *in; /* Borrowed. */
    run_view run[2];
    lanes lanes;
    op_ref ops[MAX_OPS];
    size_t n_ops;
} page;

/* report.c: writing and escaping, reading the document, the runs' tasks. Every writer renders
 * from the afd_incident that report_begin reads, never from the JSON itself. */
void report_set_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void report_reset(afd_buf *out);
void report_put(afd_buf *out, const char *s);
void report_esc_n(afd_buf *out, const char *s, size_t n);
void report_esc(afd_buf *out, const char *s);
void report_esc_cut(afd_buf *out, const char *s, size_t max);
void report_na(afd_buf *out);
void report_dash(afd_buf *out);
void report_esc_or_na(afd_buf *out, const char *s);
/* What every writer does first: refuses a missing input or output, empties out (kept, not freed)
 * and reads the document leniently into inc (the caller finishes it, even on failure). A key the
 * document lacks or mistypes is left unset (incident.h) and the page shows its placeholder.
 * Returns 0, or the error (err says it): the text is not JSON or not an object, or memory. */
int report_begin(const afd_report_in *in, afd_buf *out, afd_incident *inc, char *err, size_t errlen);
/* A count as the page prints it; a dash when unset. */
void report_put_count(afd_buf *out, uint64_t n);
/* A string escaped; a dash when NULL or empty. */
void report_put_text(afd_buf *out, const char *s);
void report_put_pct(afd_buf *out, double frac);
void report_put_ms(afd_buf *out, uint64_t ns);
double report_nice_step(double range, int target);
int report_step_decimals(double step);
void report_svg_line(afd_buf *out, const char *cls, double x1, double y1, double x2, double y2);
void report_svg_rect(afd_buf *out, const char *cls, double x, double y, double w, double h);
const char *report_task_name(const task_ref *r);
uint64_t report_step_end(const afd_event *ev);
int report_view_build(run_view *v, const afd_trace *t);
void report_view_free(run_view *v);
task_ref *report_view_task(const run_view *v, uint32_t id);
int64_t report_incident_id(const afd_report_in *in, const afd_incident *inc);
/* The cause's kind as the document names it ("lost_update", or a kind this version does not know);
 * NULL when the document names none. */
const char *report_cause_kind(const afd_incident *inc);

/* report_fix.c: the page's sections about the fix, the replay and the environment. */
void report_sec_gate(page *pg);
void report_sec_tiers(page *pg);
void report_sec_diff(page *pg);
void report_sec_replay(page *pg);
void report_sec_environment(page *pg, int64_t id);

/* report_search.c: how the failing schedule was searched for (nothing when the document does not
 * say). */
void report_sec_search(page *pg);

#endif
