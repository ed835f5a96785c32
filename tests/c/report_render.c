/* report_render.c -- renders one incident document as a report: tests/test_report_same.py runs it
 * on every golden document to check that the HTML page and the SARIF log stay byte-identical.
 *
 * Usage: report_render html|sarif|chrome-trace FILE [--traces]. The report reads the document as
 * `affidavit report` does, with incident number 0 (the document's own) and a fixed creation date,
 * so the output depends on nothing but the document. With --traces the failing and the passing
 * run are built from the document's own cause operations (one task per operation's label, one
 * step per operation, the passing run missing every third one), so the timeline, which matches
 * the operations to the runs' steps, is drawn too. Exit 0 with the report on stdout, or 1 with
 * the one-line reason on stderr. */
#include "report.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n;
    char *text = malloc(cap);
    *len = 0;
    while (text && (n = fread(text + *len, 1, cap - *len - 1, f)) > 0) {
        *len += n;
        if (*len + 1 == cap) {
            char *t = realloc(text, cap *= 2);
            if (!t)
                free(text);
            text = t;
        }
    }
    fclose(f);
    if (text)
        text[*len] = 0;
    return text;
}

/* The label's task id in t, adding a TASK event the first time. */
static int task_id(afd_trace *t, const char *label, uint32_t *id)
{
    uint32_t s;
    if (afd_trace_add_string(t, label, strlen(label), &s) < 0)
        return -1;
    for (uint32_t i = 0; i < t->n_events; i++)
        if (t->events[i].kind == AFD_EV_TASK && t->events[i].b == s) {
            *id = t->events[i].task;
            return 0;
        }
    *id = s + 1;
    afd_event ev = {.kind = AFD_EV_TASK, .task = *id, .b = s};
    return afd_trace_add_events(t, &ev, 1);
}

/* Both runs from the cause's operations (see the header). */
static int build_traces(const char *text, afd_trace *failing, afd_trace *passing)
{
    json_t *doc = json_loads(text, JSON_ALLOW_NUL, NULL);
    const json_t *ops = json_object_get(json_object_get(doc, "cause"), "operations");
    int rc = 0;
    failing->outcome = AFD_OUT_FAIL;
    for (size_t i = 0; rc == 0 && i < json_array_size(ops); i++) {
        const json_t *o = json_array_get(ops, i);
        const char *label = json_string_value(json_object_get(o, "task"));
        const json_t *st = json_object_get(o, "step");
        if (!label || !json_is_integer(st))
            continue;
        afd_trace *runs[2] = {failing, passing};
        for (int r = 0; rc == 0 && r < 2; r++) {
            uint32_t id = 0;
            if (r == 1 && i % 3 == 2)
                continue;
            rc = task_id(runs[r], label, &id);
            afd_event ev = {.kind = AFD_EV_STEP,
                            .task = id,
                            .a = (uint32_t)json_integer_value(st),
                            .b = AFD_NOSTR,
                            .vtime = 1000u * (uint64_t)(i + 1) * (r ? 3u : 2u),
                            .cost = 500};
            if (rc == 0)
                rc = afd_trace_add_events(runs[r], &ev, 1);
        }
    }
    json_decref(doc);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: report_render html|sarif|chrome-trace FILE [--traces]\n");
        return 1;
    }
    size_t len;
    char *text = read_all(argv[2], &len);
    if (!text) {
        fprintf(stderr, "report_render: cannot read %s\n", argv[2]);
        return 1;
    }
    int traces = argc > 3 && strcmp(argv[3], "--traces") == 0;
    afd_trace failing, passing;
    int rc = afd_trace_init(&failing) | afd_trace_init(&passing);
    if (rc == 0 && traces)
        rc = build_traces(text, &failing, &passing);
    afd_report_in in = {.id = 0,
                        .created = 1700000000,
                        .json = text,
                        .failing = traces ? &failing : NULL,
                        .passing = traces ? &passing : NULL};
    afd_buf out;
    afd_buf_init(&out);
    char err[300] = "";
    if (rc)
        snprintf(err, sizeof err, "report_render: cannot build the traces");
    else if (strcmp(argv[1], "html") == 0)
        rc = afd_report_html(&in, &out, err, sizeof err);
    else if (strcmp(argv[1], "sarif") == 0)
        rc = afd_report_sarif(&in, &out, err, sizeof err);
    else
        rc = afd_report_chrome_trace(&in, "failing", &out, err, sizeof err);
    if (rc)
        fprintf(stderr, "%s\n", err);
    else
        fwrite(out.data, 1, out.len, stdout);
    afd_buf_finish(&out);
    afd_trace_finish(&failing);
    afd_trace_finish(&passing);
    free(text);
    return rc ? 1 : 0;
}
