/* incident.c -- the incident struct, its verdict table, and its JSON document over jansson.
 *
 * The document is the contract between the engine, the store, the reports and the pytest plugin:
 * every key is written in one place (to_json) and read in one place (from_json), which checks
 * each key's type so that nothing downstream meets a surprise. Numbers are written as the engine
 * always wrote them (six significant digits, integral values without a fraction), so a document
 * read back and written again is the same text. One document per investigation: speed does not
 * matter here, clarity does. */
#include "incident.h"
#include "text.h"

#include "afd.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the verdict table ---- */

typedef struct verdict_row {
    const char *name, *head, *word, *css;
    int exit_code;
} verdict_row;

static const verdict_row VERDICTS[AFD_VERDICT__COUNT] = {[AFD_VERDICT_NONE] = {NULL, NULL, NULL, NULL, -1},
#define AFD_VERDICT_ROW_(e, name, head, word, css, exit, plugin)                                             \
    [AFD_VERDICT_##e] = {name, head, word, css, exit},
                                                         AFD_VERDICTS(AFD_VERDICT_ROW_)
#undef AFD_VERDICT_ROW_
};

static const verdict_row *verdict_row_of(afd_verdict v)
{
    return (int)v > 0 && v < AFD_VERDICT__COUNT ? &VERDICTS[v] : &VERDICTS[AFD_VERDICT_NONE];
}

const char *afd_verdict_name(afd_verdict v)
{
    return verdict_row_of(v)->name;
}
const char *afd_verdict_head(afd_verdict v)
{
    return verdict_row_of(v)->head;
}
const char *afd_verdict_word(afd_verdict v)
{
    return verdict_row_of(v)->word;
}
const char *afd_verdict_css(afd_verdict v)
{
    return verdict_row_of(v)->css;
}
int afd_verdict_exit(afd_verdict v)
{
    return verdict_row_of(v)->exit_code;
}

afd_verdict afd_verdict_parse(const char *name)
{
    for (int v = 1; name && v < AFD_VERDICT__COUNT; v++)
        if (strcmp(VERDICTS[v].name, name) == 0)
            return (afd_verdict)v;
    return AFD_VERDICT_NONE;
}

/* ---- lifetime ---- */

void afd_incident_init(afd_incident *self)
{
    memset(self, 0, sizeof *self);
    self->identical_traces = -1;
    self->fix.fails_before = self->fix.passes_after = AFD_TRI_NOT_ATTEMPTED;
    self->window_us = NAN;
    self->natural_rate = NAN;
    afd_cause_init(&self->cause);
    afd_evidence_init(&self->evidence);
}

static void sys_finish(afd_incident_sys *s)
{
    for (size_t i = 0; i < AFD_INCIDENT_SYS_LEVELS; i++)
        free(s->levels[i].why_not);
}

static void fix_finish(afd_incident_fix *f)
{
    sys_finish(&f->sys_before);
    sys_finish(&f->sys_after);
    free(f->kind);
    free(f->why_none);
    free(f->diff);
    for (size_t i = 0; i < f->n_gate; i++) {
        free(f->gate[i].check);
        free(f->gate[i].group);
        free(f->gate[i].reason);
    }
    free(f->gate);
    free(f->token_failed_before);
    free(f->regression_node);
    free(f->regression_why);
    for (size_t i = 0; i < AFD_TIER__COUNT; i++)
        free(f->tier_text[i]);
    for (size_t i = 0; i < f->n_candidates; i++)
        free(f->candidates[i].kind);
    free(f->candidates);
    free(f->apply);
}

void afd_incident_finish(afd_incident *self)
{
    if (!self)
        return;
    free(self->report);
    free(self->nodeid);
    free(self->check.file);
    free(self->check.cls);
    free(self->check.method);
    free(self->timing.summary);
    free(self->timing.site);
    free(self->found_by);
    sys_finish(&self->search_sys);
    free(self->token);
    free(self->passing_token);
    free(self->window.task);
    free(self->window.wakes);
    free(self->window.probes);
    afd_cause_finish(&self->cause);
    afd_evidence_finish(&self->evidence);
    free(self->cause_kind_text);
    free(self->verdict_text);
    free(self->race_ops);
    fix_finish(&self->fix);
    free(self->failure);
    free(self->python);
    free(self->hash_seed);
    free(self->platform);
    for (size_t i = 0; i < self->n_stages; i++)
        free(self->stages[i].name);
    free(self->stages);
    free(self->verify_error);
    afd_incident_init(self);
}

int afd_incident_gate_passed(const afd_incident *self)
{
    if (!self->fix.n_gate)
        return 0;
    for (size_t i = 0; i < self->fix.n_gate; i++)
        if (!self->fix.gate[i].passed)
            return 0;
    return 1;
}

int afd_incident_add_stage(afd_incident *self, const char *name, double seconds, uint64_t runs)
{
    afd_incident_stage *s = realloc(self->stages, (self->n_stages + 1) * sizeof *s);
    if (!s)
        return AFD_ENOMEM;
    self->stages = s;
    char *copy = strdup(name ? name : "");
    if (!copy)
        return AFD_ENOMEM;
    s[self->n_stages++] = (afd_incident_stage){copy, seconds, runs};
    return 0;
}

/* ---- writing ---- */

/* A JSON string of the n bytes at s (NULL: null), each byte that is not UTF-8 as U+FFFD; NUL
 * bytes are kept (jansson writes them as \u0000). Returns NULL when out of memory. */
static json_t *text_n(const char *s, size_t n)
{
    if (!s)
        return json_null();
    afd_buf b;
    afd_buf_init(&b);
    afd_utf8_clean(&b, s, n, AFD_UTF8_REPLACEMENT, 0);
    json_t *j = b.err ? NULL : json_stringn(b.data ? (const char *)b.data : "", b.len);
    afd_buf_finish(&b);
    return j;
}

static json_t *text(const char *s)
{
    return text_n(s, s ? strlen(s) : 0);
}

/* A string that is never null in the document: NULL is written as "". */
static json_t *text_or_empty(const char *s)
{
    return text(s ? s : "");
}

/* A number as the engine prints it: "%.6g", so a value read back is written back unchanged; an
 * integral value without the ".0" jansson would add; NaN and infinities as null. */
static json_t *num(double v)
{
    if (isnan(v) || isinf(v))
        return json_null();
    char s[40];
    snprintf(s, sizeof s, "%.6g", v);
    double r = strtod(s, NULL);
    if (!strpbrk(s, ".en") && fabs(r) < 9e15)
        return json_integer((json_int_t)r);
    return json_real(r);
}

static json_t *count(uint64_t v)
{
    return json_integer((json_int_t)v);
}

/* The object under construction: a failed allocation anywhere makes the whole document fail. */
typedef struct wr {
    int bad;
} wr;

static void set(wr *w, json_t *o, const char *key, json_t *v)
{
    if (!o || !v || json_object_set_new(o, key, v) < 0)
        w->bad = 1;
}

static void push(wr *w, json_t *a, json_t *v)
{
    if (!a || !v || json_array_append_new(a, v) < 0)
        w->bad = 1;
}

static json_t *op_json(wr *w, const afd_cause_op *op)
{
    json_t *o = json_object();
    if (op->access == AFD_CAUSE_ACCESS_READ || op->access == AFD_CAUSE_ACCESS_WRITE) {
        set(w, o, "run", text_or_empty(op->run));
        set(w, o, "task", text_or_empty(op->task));
    } else if (op->access != AFD_CAUSE_ACCESS_LOCK) {
        set(w, o, "task", text_or_empty(op->task));
    }
    set(w, o, "operation", text_or_empty(op->operation));
    set(w, o, "resource", text_or_empty(op->resource));
    const char *access = afd_cause_access_name(op->access);
    set(w, o, "access", access ? json_string(access) : NULL);
    if (op->access == AFD_CAUSE_ACCESS_READ || op->access == AFD_CAUSE_ACCESS_WRITE) {
        set(w, o, "step", count(op->step));
        set(w, o, "occurrence", count(op->occurrence));
        set(w, o, "observed", json_boolean(op->observed));
        if (op->file && op->line) {
            set(w, o, "file", text(op->file));
            set(w, o, "line", count(op->line));
        }
    } else if (afd_cause_access_has_site(op->access)) {
        set(w, o, "site", text_or_empty(op->site));
    }
    return o;
}

static json_t *ops_json(wr *w, const afd_cause_op *ops, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        push(w, a, op_json(w, &ops[i]));
    return a;
}

static json_t *cause_json(wr *w, const afd_cause *c)
{
    const char *kind = afd_cause_kind_name(c->kind);
    if (!kind)
        return json_null();
    json_t *o = json_object();
    set(w, o, "kind", json_string(kind));
    set(w, o, "resource", text_or_empty(c->resource));
    set(w, o, "await_site", c->await_site && *c->await_site ? text(c->await_site) : json_null());
    set(w, o, "summary", text_or_empty(c->summary));
    set(w, o, "operations", ops_json(w, c->ops, c->n_ops));
    json_t *chain = json_array();
    for (size_t i = 0; i < c->n_await_chain; i++) {
        json_t *f = json_object();
        set(w, f, "file", text_or_empty(c->await_chain[i].file));
        set(w, f, "line", count(c->await_chain[i].line));
        set(w, f, "function", text_or_empty(c->await_chain[i].function));
        push(w, chain, f);
    }
    set(w, o, "await_chain", chain);
    return o;
}

static json_t *races_json(wr *w, const afd_cause *c)
{
    json_t *a = json_array();
    for (size_t i = 0; i < c->n_races; i++) {
        json_t *r = json_object();
        set(w, r, "resource", text_or_empty(c->races[i].resource));
        set(w, r, "operations", ops_json(w, c->races[i].ops, 2));
        push(w, a, r);
    }
    return a;
}

static json_t *evidence_json(wr *w, const afd_evidence *e)
{
    json_t *a = json_array();
    for (size_t i = 0; i < e->n; i++) {
        json_t *r = json_object();
        set(w, r, "claim", text_or_empty(e->rows[i].claim));
        set(w, r, "measured", text_or_empty(e->rows[i].measured));
        set(w, r, "strength", text_or_empty(e->rows[i].strength));
        push(w, a, r);
    }
    return a;
}

static json_t *window_json(wr *w, const afd_incident *self)
{
    if (!self->has_window)
        return json_null();
    const afd_incident_window *win = &self->window;
    json_t *o = json_object();
    set(w, o, "task", text_or_empty(win->task));
    set(w, o, "step", count(win->step));
    set(w, o, "wakes", text(win->wakes));
    set(w, o, "passes_at_us", num((double)win->passes_at_ns / 1e3));
    set(w, o, "fails_at_us", num((double)win->fails_at_ns / 1e3));
    set(w, o, "delays_before", count(win->delays_before));
    set(w, o, "delays_after", count(win->delays_after));
    set(w, o, "runs", count(win->runs));
    set(w, o, "searched_one_delay", json_boolean(win->searched_one_delay));
    json_t *probes = json_array();
    for (size_t i = 0; i < win->n_probes; i++) {
        json_t *p = json_object();
        set(w, p, "delay_us", num(win->probes[i].delay_us));
        set(w, p, "failed", json_boolean(win->probes[i].failed));
        push(w, probes, p);
    }
    set(w, o, "probes", probes);
    return o;
}

static json_t *tri(afd_incident_tri t)
{
    return t == AFD_TRI_NOT_ATTEMPTED ? json_string("not attempted") : json_boolean(t == AFD_TRI_TRUE);
}

/* The systematic search's coverage: SYS in docs/schema/incident.schema.json. */
static json_t *sys_json(wr *w, const afd_incident_sys *s)
{
    json_t *o = json_object(), *levels = json_array();
    set(w, o, "max_delays", count(s->max_delays));
    set(w, o, "pruning", json_string(s->pruning ? "classes" : "none"));
    set(w, o, "runs", count(s->runs));
    set(w, o, "budget_spent", json_boolean(s->budget_spent));
    set(w, o, "clock_reads", count(s->clock_reads));
    for (uint32_t i = 0; i < s->n_levels && i < AFD_INCIDENT_SYS_LEVELS; i++) {
        const afd_incident_sys_level *lv = &s->levels[i];
        json_t *l = json_object();
        set(w, l, "delays", count(lv->delays));
        set(w, l, "schedules", count(lv->schedules));
        set(w, l, "cum_schedules", count(lv->cum_schedules));
        set(w, l, "orders", count(lv->orders));
        set(w, l, "classes", count(lv->classes));
        set(w, l, "failed", count(lv->failed));
        set(w, l, "no_slot", count(lv->no_slot));
        set(w, l, "pruned", count(lv->pruned));
        set(w, l, "exhausted", json_boolean(lv->exhausted));
        set(w, l, "estimated_total",
            lv->estimated_total < 0 ? json_null() : json_integer(lv->estimated_total));
        set(w, l, "why_not", text(lv->why_not));
        push(w, levels, l);
    }
    set(w, o, "levels", levels);
    return o;
}

static json_t *search_json(wr *w, const afd_incident *self)
{
    json_t *o = json_object();
    set(w, o, "random_runs", count(self->search_random_runs));
    set(w, o, "found_by", text(self->found_by));
    set(w, o, "systematic", self->has_search_sys ? sys_json(w, &self->search_sys) : json_null());
    return o;
}

/* fix.tiers.systematic, after the other four (either way they were given). */
static void sys_tier_json(wr *w, json_t *tiers, const afd_incident_fix *f)
{
    if (!f->has_sys_tier)
        return;
    json_t *o = json_object();
    set(w, o, "before", sys_json(w, &f->sys_before));
    set(w, o, "after", sys_json(w, &f->sys_after));
    set(w, tiers, "systematic", o);
}

static json_t *tiers_json(wr *w, const afd_incident_fix *f)
{
    json_t *o = json_object();
    if (!f->tiers_ran) {
        set(w, o, "replay", json_string("not attempted"));
        set(w, o, "exploration", json_string("not attempted"));
        set(w, o, "natural", json_string("not attempted"));
        set(w, o, "overhead", json_string("not attempted"));
        sys_tier_json(w, o, f);
        return o;
    }
    json_t *r = json_object(), *e = json_object(), *n = json_object(), *h = json_object();
    set(w, r, "token_failed_before", text_or_empty(f->token_failed_before));
    set(w, r, "runs", count(f->replay_runs));
    set(w, r, "passed", count(f->replay_passed));
    set(w, o, "replay", r);
    set(w, e, "schedules", count(f->explore_schedules));
    set(w, e, "failed_before", count(f->explore_failed_before));
    set(w, e, "failed_after", count(f->explore_failed_after));
    set(w, o, "exploration", e);
    set(w, n, "runs", count(f->natural_runs));
    set(w, n, "failed", count(f->natural_failed));
    set(w, n, "rate_below", num(f->natural_rate_below));
    set(w, o, "natural", n);
    set(w, h, "median_ms_before", num(f->median_ms_before));
    set(w, h, "median_ms_after", num(f->median_ms_after));
    set(w, o, "overhead", h);
    sys_tier_json(w, o, f);
    return o;
}

static json_t *fix_json(wr *w, const afd_incident_fix *f)
{
    json_t *o = json_object();
    set(w, o, "kind", text(f->kind));
    set(w, o, "why_none", f->kind ? json_null() : text_or_empty(f->why_none));
    set(w, o, "diff", text_or_empty(f->diff));
    json_t *gate = json_array();
    for (size_t i = 0; i < f->n_gate; i++) {
        json_t *g = json_object();
        set(w, g, "check", text_or_empty(f->gate[i].check));
        set(w, g, "group", text_or_empty(f->gate[i].group));
        set(w, g, "passed", json_boolean(f->gate[i].passed));
        set(w, g, "reason", text_or_empty(f->gate[i].reason));
        push(w, gate, g);
    }
    set(w, o, "gate", gate);
    set(w, o, "tiers", tiers_json(w, f));
    if (f->regression_node) {
        json_t *r = json_object();
        set(w, r, "node", text(f->regression_node));
        set(w, r, "fails_before", tri(f->fails_before));
        set(w, r, "passes_after", tri(f->passes_after));
        set(w, o, "regression_test", r);
    } else {
        set(w, o, "regression_test", text_or_empty(f->regression_why));
    }
    json_t *cands = json_array();
    for (size_t i = 0; i < f->n_candidates; i++) {
        const afd_incident_candidate *c = &f->candidates[i];
        json_t *j = json_object();
        set(w, j, "kind", text_or_empty(c->kind));
        set(w, j, "changed_lines", count(c->changed_lines));
        set(w, j, "tried", json_boolean(c->tried));
        set(w, j, "gate_passed", json_boolean(c->gate_passed));
        set(w, j, "verified", json_boolean(c->verified));
        push(w, cands, j);
    }
    set(w, o, "candidates", cands);
    set(w, o, "verified", json_boolean(f->verified));
    set(w, o, "applied", json_boolean(f->applied));
    set(w, o, "apply", text(f->apply));
    return o;
}

/* The keys before the cause, in the order the engine always wrote them. */
static void head_json(wr *w, json_t *doc, const afd_incident *self)
{
    if (self->with_ids) {
        set(w, doc, "incident", self->id ? json_integer(self->id) : json_null());
        set(w, doc, "report", self->report && *self->report ? text(self->report) : json_null());
    }
    set(w, doc, "schema", json_integer(AFD_INCIDENT_SCHEMA));
    set(w, doc, "nodeid", text_or_empty(self->nodeid));
    if (self->has_check) {
        json_t *c = json_object();
        set(w, c, "file", text_or_empty(self->check.file));
        set(w, c, "class", text_or_empty(self->check.cls));
        set(w, c, "method", text_or_empty(self->check.method));
        set(w, c, "calls", count(self->check.calls));
        set(w, doc, "check", c);
    }
    set(w, doc, "verdict", json_string(afd_verdict_name(self->verdict)));
    json_t *timing = json_null();
    if (self->has_timing) {
        timing = json_object();
        set(w, timing, "summary", text_or_empty(self->timing.summary));
        set(w, timing, "duration_us", count(self->timing.duration_us));
        set(w, timing, "site", text(self->timing.site));
        set(w, timing, "check_runs", count(self->timing.check_runs));
        set(w, timing, "check_passed", count(self->timing.check_passed));
    }
    set(w, doc, "timing", timing);
    json_t *nat = json_object(), *ci = json_array();
    set(w, nat, "runs", count(self->natural_runs));
    set(w, nat, "failed", count(self->natural_failed));
    push(w, ci, num(self->ci95_lo));
    push(w, ci, num(self->ci95_hi));
    set(w, nat, "ci95", ci);
    set(w, doc, "natural", nat);
    if (self->has_search)
        set(w, doc, "search", search_json(w, self));
    set(w, doc, "token", text(self->token));
    json_t *rep = json_object();
    set(w, rep, "runs", count(self->replay_runs));
    set(w, rep, "failed", count(self->replay_failed));
    set(w, rep, "identical_traces",
        self->identical_traces < 0 ? json_null() : json_boolean(self->identical_traces));
    set(w, doc, "replay", rep);
    set(w, doc, "passing_token", text(self->passing_token));
    json_t *prep = json_object();
    set(w, prep, "runs", count(self->passing_runs));
    set(w, prep, "passed", count(self->passing_passed));
    set(w, doc, "passing_replay", prep);
    set(w, doc, "window_us", self->has_window ? num((double)self->window.fails_at_ns / 1e3) : json_null());
    set(w, doc, "window", window_json(w, self));
}

int afd_incident_to_json(const afd_incident *self, char **out, size_t *len)
{
    *out = NULL;
    if (len)
        *len = 0;
    if (self->verdict <= AFD_VERDICT_NONE || self->verdict >= AFD_VERDICT__COUNT)
        return AFD_EINVAL;
    wr w = {0};
    json_t *doc = json_object();
    head_json(&w, doc, self);
    set(&w, doc, "cause", cause_json(&w, &self->cause));
    set(&w, doc, "evidence", evidence_json(&w, &self->evidence));
    set(&w, doc, "races", races_json(&w, &self->cause));
    if (self->has_fix)
        set(&w, doc, "fix", fix_json(&w, &self->fix));
    set(&w, doc, "failure",
        text_n(self->failure ? self->failure : "", self->failure ? self->failure_len : 0));
    json_t *env = json_object();
    set(&w, env, "python", text_or_empty(self->python));
    set(&w, env, "hash_seed", text_or_empty(self->hash_seed));
    set(&w, env, "platform", text_or_empty(self->platform));
    set(&w, doc, "environment", env);
    set(&w, doc, "step_limit_runs", count(self->step_limit_runs));
    set(&w, doc, "truncated_traces", count(self->truncated_traces));
    set(&w, doc, "runs", count(self->runs));
    set(&w, doc, "seconds", num(self->seconds));
    if (self->n_stages) {
        json_t *stages = json_array();
        for (size_t i = 0; i < self->n_stages; i++) {
            json_t *s = json_object();
            set(&w, s, "name", text_or_empty(self->stages[i].name));
            set(&w, s, "seconds", num(self->stages[i].seconds));
            set(&w, s, "runs", count(self->stages[i].runs));
            push(&w, stages, s);
        }
        set(&w, doc, "stages", stages);
    }
    char *s = w.bad ? NULL : json_dumps(doc, JSON_REAL_PRECISION(6));
    json_decref(doc);
    if (!s)
        return AFD_ENOMEM;
    size_t n = strlen(s);
    char *t = realloc(s, n + 2);
    if (!t) {
        free(s);
        return AFD_ENOMEM;
    }
    t[n] = '\n';
    t[n + 1] = 0;
    *out = t;
    if (len)
        *len = n + 1;
    return 0;
}
