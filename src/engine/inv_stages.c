/* inv_stages.c -- the investigation's own measures: each stage's time and runs, shown in the
 * progress line while it runs, listed at the end of both documents (inv_report.c puts them in the
 * incident), and kept as spans for --trace-out.
 *
 * A stage's runs are the runs made while it ran: the incident's (v->total_runs, what the
 * document's "runs" counts) and the verification's (v->tier_runs). Without --fix the stages' runs
 * add up to the document's "runs". */
#include "inv.h"
#include "runs.h"
#include "spans.h"

#include <inttypes.h>
#include <stdio.h>

static const char *const stage_names[INV__STAGES] = {
    "sample", "search", "reproduce", "minimize", "explain", "repair", "verify", "report",
};

static uint64_t runs_so_far(const inv *v)
{
    return v->total_runs + v->tier_runs;
}

void inv_stages_init(inv *v)
{
    for (int k = 0; k < INV__STAGES; k++)
        v->stages[k] = (struct inv_stage){.name = stage_names[k]};
}

void inv_stage_begin(inv *v, int k)
{
    struct inv_stage *s = &v->stages[k];
    s->ran = 1;
    s->open = 1;
    s->start_ns = afd_runs_now_ns();
    s->start_runs = runs_so_far(v);
    afd_progress_stage(&v->prog, k + 1, INV__STAGES, s->name);
}

void inv_stage_end(inv *v, int k)
{
    struct inv_stage *s = &v->stages[k];
    uint64_t now = afd_runs_now_ns();
    s->open = 0;
    s->seconds = (double)(now - s->start_ns) / 1e9;
    s->runs = runs_so_far(v) - s->start_runs;
    char args[64];
    snprintf(args, sizeof args, "{\"runs\": %" PRIu64 "}", s->runs);
    afd_spans_add(v->spans, s->name, "stage", s->start_ns, now, args);
}

void inv_stage_measure(const inv *v, int k, const char **name, double *seconds, uint64_t *runs)
{
    const struct inv_stage *s = &v->stages[k];
    *name = s->name;
    *seconds = s->ran ? s->seconds : 0;
    *runs = s->ran ? s->runs : 0;
    if (s->open) {
        *seconds = (double)(afd_runs_now_ns() - s->start_ns) / 1e9;
        *runs = runs_so_far(v) - s->start_runs;
    }
}
