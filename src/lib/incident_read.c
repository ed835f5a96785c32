/* incident_read.c -- afd_incident_from_json: a stored or printed document back into the struct.
 *
 * Documents cross a file boundary (the store, a report's input, the plugin's subprocess), so
 * every key is checked for its type before it is used, and the first key that is missing or of
 * the wrong type refuses the document with a one-line reason that names it ("cause.kind: not a
 * string"). Keys this version does not know are ignored, so that an older reader can show a newer
 * document's known parts. One document per command: clarity over speed. */
#include "incident.h"

#include "afd.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The reader's state: the first error's one-line reason goes to err, later ones are dropped. */
typedef struct rd {
    char *err;
    size_t errlen;
    int bad;
} rd;

static void refuse(rd *r, const char *where, const char *key, const char *what, ...)
    __attribute__((format(printf, 4, 5)));
static void refuse(rd *r, const char *where, const char *key, const char *what, ...)
{
    if (r->bad++)
        return;
    char why[200];
    va_list ap;
    va_start(ap, what);
    vsnprintf(why, sizeof why, what, ap);
    va_end(ap);
    if (r->err && r->errlen)
        snprintf(r->err, r->errlen, "%s%s%s: %s", where, *where ? "." : "", key, why);
}

/* The value of key in o, which must exist and have one of the types in mask (bits of
 * json_type); NULL (refused) otherwise. */
#define T(t) (1u << (t))
static const json_t *want(rd *r, const json_t *o, const char *where, const char *key, unsigned mask,
                          const char *what)
{
    const json_t *v = json_object_get(o, key);
    if (!v) {
        refuse(r, where, key, "missing");
        return NULL;
    }
    if (!(mask & T(json_typeof(v)))) {
        refuse(r, where, key, "not %s", what);
        return NULL;
    }
    return v;
}

static char *dup_n(rd *r, const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (!d) {
        refuse(r, "", "document", "out of memory");
        return NULL;
    }
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

/* A string (or, when nullable, null: *out stays NULL). */
static void get_str(rd *r, const json_t *o, const char *where, const char *key, int nullable, char **out)
{
    const json_t *v = want(r, o, where, key, T(JSON_STRING) | (nullable ? T(JSON_NULL) : 0),
                           nullable ? "a string or null" : "a string");
    if (v && json_is_string(v))
        *out = dup_n(r, json_string_value(v), json_string_length(v));
}

static uint64_t get_count(rd *r, const json_t *o, const char *where, const char *key, uint64_t max)
{
    const json_t *v = want(r, o, where, key, T(JSON_INTEGER), "an integer");
    if (!v)
        return 0;
    json_int_t n = json_integer_value(v);
    if (n < 0 || (uint64_t)n > max) {
        refuse(r, where, key, "out of range");
        return 0;
    }
    return (uint64_t)n;
}

static uint32_t get_u32(rd *r, const json_t *o, const char *where, const char *key)
{
    return (uint32_t)get_count(r, o, where, key, UINT32_MAX);
}

static uint64_t get_u64(rd *r, const json_t *o, const char *where, const char *key)
{
    return get_count(r, o, where, key, (uint64_t)INT64_MAX);
}

/* A number; null (NaN in the struct) is what the engine writes for a value it cannot measure. */
static double get_num(rd *r, const json_t *o, const char *where, const char *key)
{
    const json_t *v = want(r, o, where, key, T(JSON_INTEGER) | T(JSON_REAL) | T(JSON_NULL), "a number");
    return v && !json_is_null(v) ? json_number_value(v) : NAN;
}

/* Microseconds (a number >= 0) as the whole nanoseconds the engine measured them in. */
static uint64_t get_us_as_ns(rd *r, const json_t *o, const char *where, const char *key)
{
    const json_t *v = want(r, o, where, key, T(JSON_INTEGER) | T(JSON_REAL), "a number");
    double us = v ? json_number_value(v) : 0;
    if (v && !(us >= 0 && us < 1.8e16)) {
        refuse(r, where, key, "out of range");
        return 0;
    }
    return (uint64_t)llround(us * 1e3);
}

static int get_bool(rd *r, const json_t *o, const char *where, const char *key)
{
    const json_t *v = want(r, o, where, key, T(JSON_TRUE) | T(JSON_FALSE), "a boolean");
    return v && json_is_true(v);
}

/* An object (or, when nullable, null: returns NULL without refusing). */
static const json_t *get_obj(rd *r, const json_t *o, const char *where, const char *key, int nullable)
{
    const json_t *v = want(r, o, where, key, T(JSON_OBJECT) | (nullable ? T(JSON_NULL) : 0),
                           nullable ? "an object or null" : "an object");
    return v && json_is_object(v) ? v : NULL;
}

static const json_t *get_arr(rd *r, const json_t *o, const char *where, const char *key)
{
    return want(r, o, where, key, T(JSON_ARRAY), "an array");
}

/* Allocates n zeroed elements of size sz (none for n == 0). */
static void *get_items(rd *r, size_t n, size_t sz)
{
    if (!n)
        return NULL;
    void *p = calloc(n, sz);
    if (!p)
        refuse(r, "", "document", "out of memory");
    return p;
}

static void read_op(rd *r, const json_t *o, const char *where, afd_cause_op *op)
{
    if (!json_is_object(o)) {
        refuse(r, where, "operations", "holds an item that is not an object");
        return;
    }
    char *access = NULL;
    get_str(r, o, where, "access", 0, &access);
    if (access && afd_cause_access_parse(access, &op->access) < 0)
        refuse(r, where, "access", "unknown: \"%.40s\"", access);
    free(access);
    if (r->bad)
        return;
    int rw = op->access == AFD_CAUSE_ACCESS_READ || op->access == AFD_CAUSE_ACCESS_WRITE;
    if (rw) {
        char *run = NULL;
        get_str(r, o, where, "run", 0, &run);
        op->run = run && !strcmp(run, "failing")   ? "failing"
                  : run && !strcmp(run, "passing") ? "passing"
                                                   : NULL;
        if (run && !op->run)
            refuse(r, where, "run", "neither \"failing\" nor \"passing\"");
        free(run);
    }
    if (op->access != AFD_CAUSE_ACCESS_LOCK)
        get_str(r, o, where, "task", 0, &op->task);
    get_str(r, o, where, "operation", 0, &op->operation);
    get_str(r, o, where, "resource", 0, &op->resource);
    op->write = op->access == AFD_CAUSE_ACCESS_WRITE;
    if (rw) {
        op->step = get_u32(r, o, where, "step");
        op->occurrence = get_u32(r, o, where, "occurrence");
        op->observed = get_bool(r, o, where, "observed");
        if (json_object_get(o, "file")) {
            get_str(r, o, where, "file", 0, &op->file);
            op->line = get_u32(r, o, where, "line");
        }
    } else if (op->access == AFD_CAUSE_ACCESS_BLOCK) {
        get_str(r, o, where, "site", 0, &op->site);
    }
}

static void read_ops(rd *r, const json_t *o, const char *where, afd_cause_op **ops, size_t *n)
{
    const json_t *a = get_arr(r, o, where, "operations");
    if (!a)
        return;
    *ops = get_items(r, json_array_size(a), sizeof **ops);
    if (!*ops)
        return;
    *n = json_array_size(a);
    for (size_t i = 0; i < *n && !r->bad; i++)
        read_op(r, json_array_get(a, i), where, &(*ops)[i]);
}

/* cause.await_chain: absent in incidents written before chains were recorded (read as none). */
static void read_await_chain(rd *r, const json_t *o, afd_cause *c)
{
    if (!json_object_get(o, "await_chain"))
        return;
    const json_t *a = get_arr(r, o, "cause", "await_chain");
    for (size_t i = 0; a && i < json_array_size(a) && !r->bad; i++) {
        const json_t *x = json_array_get(a, i);
        if (!json_is_object(x)) {
            refuse(r, "cause", "await_chain", "holds an item that is not an object");
            return;
        }
        char *file = NULL, *function = NULL;
        get_str(r, x, "cause.await_chain", "file", 0, &file);
        uint32_t line = get_u32(r, x, "cause.await_chain", "line");
        get_str(r, x, "cause.await_chain", "function", 0, &function);
        if (!r->bad && afd_cause_add_frame(c, file, line, function) < 0)
            refuse(r, "cause", "await_chain", "out of memory");
        free(file);
        free(function);
    }
}

static void read_cause(rd *r, const json_t *doc, afd_cause *c)
{
    const json_t *o = get_obj(r, doc, "", "cause", 1);
    if (o) {
        char *kind = NULL;
        get_str(r, o, "cause", "kind", 0, &kind);
        c->kind = afd_cause_kind_parse(kind);
        if (kind && c->kind == AFD_CAUSE_NONE)
            refuse(r, "cause", "kind", "unknown: \"%.40s\"", kind);
        free(kind);
        get_str(r, o, "cause", "resource", 0, &c->resource);
        get_str(r, o, "cause", "await_site", 1, &c->await_site);
        get_str(r, o, "cause", "summary", 0, &c->summary);
        read_ops(r, o, "cause", &c->ops, &c->n_ops);
        read_await_chain(r, o, c);
    }
    const json_t *races = get_arr(r, doc, "", "races");
    if (!races || r->bad)
        return;
    c->races = get_items(r, json_array_size(races), sizeof *c->races);
    c->n_races = c->races ? json_array_size(races) : 0;
    for (size_t i = 0; i < c->n_races && !r->bad; i++) {
        const json_t *x = json_array_get(races, i);
        if (!json_is_object(x)) {
            refuse(r, "", "races", "holds an item that is not an object");
            return;
        }
        get_str(r, x, "races", "resource", 0, &c->races[i].resource);
        const json_t *ops = get_arr(r, x, "races", "operations");
        if (ops && json_array_size(ops) != 2)
            refuse(r, "races", "operations", "not a pair");
        for (size_t k = 0; k < 2 && !r->bad; k++)
            read_op(r, json_array_get(ops, k), "races", &c->races[i].ops[k]);
    }
}

static void read_evidence(rd *r, const json_t *doc, afd_evidence *e)
{
    const json_t *a = get_arr(r, doc, "", "evidence");
    for (size_t i = 0; a && i < json_array_size(a) && !r->bad; i++) {
        const json_t *x = json_array_get(a, i);
        char *claim = NULL, *measured = NULL, *strength = NULL;
        if (!json_is_object(x))
            refuse(r, "", "evidence", "holds an item that is not an object");
        get_str(r, x, "evidence", "claim", 0, &claim);
        get_str(r, x, "evidence", "measured", 0, &measured);
        get_str(r, x, "evidence", "strength", 0, &strength);
        if (!r->bad && afd_evidence_add(e, claim, measured, strength) < 0)
            refuse(r, "", "evidence", "out of memory");
        free(claim);
        free(measured);
        free(strength);
    }
}

static void read_window(rd *r, const json_t *doc, afd_incident *self)
{
    const json_t *o = get_obj(r, doc, "", "window", 1);
    get_num(r, doc, "", "window_us"); /* written from fails_at_us: checked, not kept twice */
    if (!o)
        return;
    afd_incident_window *w = &self->window;
    self->has_window = 1;
    get_str(r, o, "window", "task", 0, &w->task);
    w->step = get_u32(r, o, "window", "step");
    get_str(r, o, "window", "wakes", 1, &w->wakes);
    w->passes_at_ns = get_us_as_ns(r, o, "window", "passes_at_us");
    w->fails_at_ns = get_us_as_ns(r, o, "window", "fails_at_us");
    w->delays_before = get_u32(r, o, "window", "delays_before");
    w->delays_after = get_u32(r, o, "window", "delays_after");
    w->runs = get_u64(r, o, "window", "runs");
    w->searched_one_delay = get_bool(r, o, "window", "searched_one_delay");
    const json_t *a = get_arr(r, o, "window", "probes");
    if (!a || r->bad)
        return;
    w->probes = get_items(r, json_array_size(a), sizeof *w->probes);
    w->n_probes = w->probes ? json_array_size(a) : 0;
    for (size_t i = 0; i < w->n_probes && !r->bad; i++) {
        const json_t *p = json_array_get(a, i);
        if (!json_is_object(p))
            refuse(r, "window", "probes", "holds an item that is not an object");
        w->probes[i].delay_us = get_num(r, p, "window.probes", "delay_us");
        w->probes[i].failed = get_bool(r, p, "window.probes", "failed");
    }
}

static afd_incident_tri get_tri(rd *r, const json_t *o, const char *where, const char *key)
{
    const json_t *v = want(r, o, where, key, T(JSON_TRUE) | T(JSON_FALSE) | T(JSON_STRING),
                           "a boolean or \"not attempted\"");
    if (v && json_is_string(v) && strcmp(json_string_value(v), "not attempted") != 0)
        refuse(r, where, key, "not a boolean or \"not attempted\"");
    return !v || json_is_string(v) ? AFD_TRI_NOT_ATTEMPTED : json_is_true(v) ? AFD_TRI_TRUE : AFD_TRI_FALSE;
}

static void read_tiers(rd *r, const json_t *fix, afd_incident_fix *f)
{
    const json_t *t = get_obj(r, fix, "fix", "tiers", 0);
    if (!t)
        return;
    const json_t *rep = json_object_get(t, "replay");
    if (json_is_string(rep)) {
        static const char *const keys[] = {"replay", "exploration", "natural", "overhead"};
        for (size_t i = 0; i < 4; i++) {
            const json_t *v = want(r, t, "fix.tiers", keys[i], T(JSON_STRING), "\"not attempted\"");
            if (v && strcmp(json_string_value(v), "not attempted") != 0)
                refuse(r, "fix.tiers", keys[i], "not \"not attempted\"");
        }
        return;
    }
    f->tiers_ran = 1;
    const json_t *o = get_obj(r, t, "fix.tiers", "replay", 0);
    get_str(r, o, "fix.tiers.replay", "token_failed_before", 0, &f->token_failed_before);
    f->replay_runs = get_u64(r, o, "fix.tiers.replay", "runs");
    f->replay_passed = get_u64(r, o, "fix.tiers.replay", "passed");
    if (!(o = get_obj(r, t, "fix.tiers", "exploration", 0)))
        return;
    f->explore_schedules = get_u64(r, o, "fix.tiers.exploration", "schedules");
    f->explore_failed_before = get_u64(r, o, "fix.tiers.exploration", "failed_before");
    f->explore_failed_after = get_u64(r, o, "fix.tiers.exploration", "failed_after");
    if (!(o = get_obj(r, t, "fix.tiers", "natural", 0)))
        return;
    f->natural_runs = get_u64(r, o, "fix.tiers.natural", "runs");
    f->natural_failed = get_u64(r, o, "fix.tiers.natural", "failed");
    f->natural_rate_below = get_num(r, o, "fix.tiers.natural", "rate_below");
    if (!(o = get_obj(r, t, "fix.tiers", "overhead", 0)))
        return;
    f->median_ms_before = get_num(r, o, "fix.tiers.overhead", "median_ms_before");
    f->median_ms_after = get_num(r, o, "fix.tiers.overhead", "median_ms_after");
}

static void read_gate(rd *r, const json_t *fix, afd_incident_fix *f)
{
    const json_t *a = get_arr(r, fix, "fix", "gate");
    if (!a || r->bad)
        return;
    f->gate = get_items(r, json_array_size(a), sizeof *f->gate);
    f->n_gate = f->gate ? json_array_size(a) : 0;
    for (size_t i = 0; i < f->n_gate && !r->bad; i++) {
        const json_t *g = json_array_get(a, i);
        if (!json_is_object(g))
            refuse(r, "fix", "gate", "holds an item that is not an object");
        get_str(r, g, "fix.gate", "check", 0, &f->gate[i].check);
        get_str(r, g, "fix.gate", "group", 0, &f->gate[i].group);
        f->gate[i].passed = get_bool(r, g, "fix.gate", "passed");
        get_str(r, g, "fix.gate", "reason", 0, &f->gate[i].reason);
    }
}

static void read_candidates(rd *r, const json_t *fix, afd_incident_fix *f)
{
    const json_t *a = get_arr(r, fix, "fix", "candidates");
    if (!a || r->bad)
        return;
    f->candidates = get_items(r, json_array_size(a), sizeof *f->candidates);
    f->n_candidates = f->candidates ? json_array_size(a) : 0;
    for (size_t i = 0; i < f->n_candidates && !r->bad; i++) {
        const json_t *c = json_array_get(a, i);
        afd_incident_candidate *k = &f->candidates[i];
        if (!json_is_object(c))
            refuse(r, "fix", "candidates", "holds an item that is not an object");
        get_str(r, c, "fix.candidates", "kind", 0, &k->kind);
        k->changed_lines = get_u64(r, c, "fix.candidates", "changed_lines");
        k->tried = get_bool(r, c, "fix.candidates", "tried");
        k->gate_passed = get_bool(r, c, "fix.candidates", "gate_passed");
        k->verified = get_bool(r, c, "fix.candidates", "verified");
    }
}

static void read_fix(rd *r, const json_t *doc, afd_incident *self)
{
    if (!json_object_get(doc, "fix"))
        return; /* no --fix */
    const json_t *o = get_obj(r, doc, "", "fix", 0);
    if (!o)
        return;
    afd_incident_fix *f = &self->fix;
    self->has_fix = 1;
    get_str(r, o, "fix", "kind", 1, &f->kind);
    get_str(r, o, "fix", "why_none", 1, &f->why_none);
    get_str(r, o, "fix", "diff", 0, &f->diff);
    read_gate(r, o, f);
    read_tiers(r, o, f);
    const json_t *reg =
        want(r, o, "fix", "regression_test", T(JSON_OBJECT) | T(JSON_STRING), "an object or a string");
    if (reg && json_is_string(reg)) {
        f->regression_why = dup_n(r, json_string_value(reg), json_string_length(reg));
    } else if (reg) {
        get_str(r, reg, "fix.regression_test", "node", 0, &f->regression_node);
        f->fails_before = get_tri(r, reg, "fix.regression_test", "fails_before");
        f->passes_after = get_tri(r, reg, "fix.regression_test", "passes_after");
    }
    read_candidates(r, o, f);
    f->verified = get_bool(r, o, "fix", "verified");
    f->applied = get_bool(r, o, "fix", "applied");
    get_str(r, o, "fix", "apply", 1, &f->apply);
}

static void read_head(rd *r, const json_t *doc, afd_incident *self)
{
    const json_t *id = json_object_get(doc, "incident");
    if (id) {
        self->with_ids = 1;
        if (!json_is_null(id))
            self->id = (int64_t)get_u64(r, doc, "", "incident");
        get_str(r, doc, "", "report", 1, &self->report);
    }
    if (json_object_get(doc, "schema") &&
        get_count(r, doc, "", "schema", UINT32_MAX) != AFD_INCIDENT_SCHEMA && !r->bad)
        refuse(r, "", "schema", "version %" JSON_INTEGER_FORMAT " is not %d",
               json_integer_value(json_object_get(doc, "schema")), AFD_INCIDENT_SCHEMA);
    get_str(r, doc, "", "nodeid", 0, &self->nodeid);
    if (json_object_get(doc, "check")) {
        const json_t *c = get_obj(r, doc, "", "check", 0);
        self->has_check = 1;
        get_str(r, c, "check", "file", 0, &self->check.file);
        get_str(r, c, "check", "class", 0, &self->check.cls);
        get_str(r, c, "check", "method", 0, &self->check.method);
        self->check.calls = get_u64(r, c, "check", "calls");
    }
    char *verdict = NULL;
    get_str(r, doc, "", "verdict", 0, &verdict);
    self->verdict = afd_verdict_parse(verdict);
    if (verdict && self->verdict == AFD_VERDICT_NONE)
        refuse(r, "", "verdict", "unknown: \"%.40s\"", verdict);
    free(verdict);
    const json_t *t = get_obj(r, doc, "", "timing", 1);
    if (t) {
        self->has_timing = 1;
        get_str(r, t, "timing", "summary", 0, &self->timing.summary);
        self->timing.duration_us = get_u64(r, t, "timing", "duration_us");
        get_str(r, t, "timing", "site", 1, &self->timing.site);
        self->timing.check_runs = get_u64(r, t, "timing", "check_runs");
        self->timing.check_passed = get_u64(r, t, "timing", "check_passed");
    }
    const json_t *nat = get_obj(r, doc, "", "natural", 0);
    self->natural_runs = get_u64(r, nat, "natural", "runs");
    self->natural_failed = get_u64(r, nat, "natural", "failed");
    const json_t *ci = get_arr(r, nat, "natural", "ci95");
    if (ci && json_array_size(ci) != 2)
        refuse(r, "natural", "ci95", "not a pair");
    const json_t *lo = json_array_get(ci, 0), *hi = json_array_get(ci, 1);
    if (ci && !r->bad &&
        (!(json_is_number(lo) || json_is_null(lo)) || !(json_is_number(hi) || json_is_null(hi))))
        refuse(r, "natural", "ci95", "not a pair of numbers");
    self->ci95_lo = json_is_number(lo) ? json_number_value(lo) : NAN;
    self->ci95_hi = json_is_number(hi) ? json_number_value(hi) : NAN;
}

static void read_runs(rd *r, const json_t *doc, afd_incident *self)
{
    get_str(r, doc, "", "token", 1, &self->token);
    const json_t *rep = get_obj(r, doc, "", "replay", 0);
    self->replay_runs = get_u64(r, rep, "replay", "runs");
    self->replay_failed = get_u64(r, rep, "replay", "failed");
    const json_t *same = want(r, rep, "replay", "identical_traces",
                              T(JSON_TRUE) | T(JSON_FALSE) | T(JSON_NULL), "a boolean or null");
    self->identical_traces = !same || json_is_null(same) ? -1 : json_is_true(same);
    get_str(r, doc, "", "passing_token", 1, &self->passing_token);
    const json_t *prep = get_obj(r, doc, "", "passing_replay", 0);
    self->passing_runs = get_u64(r, prep, "passing_replay", "runs");
    self->passing_passed = get_u64(r, prep, "passing_replay", "passed");
}

static void read_tail(rd *r, const json_t *doc, afd_incident *self)
{
    const json_t *f = want(r, doc, "", "failure", T(JSON_STRING), "a string");
    if (f) {
        self->failure = dup_n(r, json_string_value(f), json_string_length(f));
        self->failure_len = json_string_length(f);
    }
    const json_t *env = get_obj(r, doc, "", "environment", 0);
    get_str(r, env, "environment", "python", 0, &self->python);
    get_str(r, env, "environment", "hash_seed", 0, &self->hash_seed);
    get_str(r, env, "environment", "platform", 0, &self->platform);
    self->step_limit_runs = get_u64(r, doc, "", "step_limit_runs");
    self->truncated_traces = get_u64(r, doc, "", "truncated_traces");
    self->runs = get_u64(r, doc, "", "runs");
    self->seconds = get_num(r, doc, "", "seconds");
    if (!json_object_get(doc, "stages"))
        return;
    const json_t *a = get_arr(r, doc, "", "stages");
    for (size_t i = 0; a && i < json_array_size(a) && !r->bad; i++) {
        const json_t *s = json_array_get(a, i);
        char *name = NULL;
        if (!json_is_object(s))
            refuse(r, "", "stages", "holds an item that is not an object");
        get_str(r, s, "stages", "name", 0, &name);
        double sec = get_num(r, s, "stages", "seconds");
        uint64_t runs = get_u64(r, s, "stages", "runs");
        if (!r->bad && afd_incident_add_stage(self, name, sec, runs) < 0)
            refuse(r, "", "stages", "out of memory");
        free(name);
    }
}

int afd_incident_from_json(const char *text, size_t len, afd_incident *out, char *err, size_t errlen)
{
    afd_incident_init(out);
    if (err && errlen)
        err[0] = 0;
    json_error_t jerr;
    json_t *doc = json_loadb(text, len, JSON_ALLOW_NUL, &jerr);
    if (!doc) {
        if (err && errlen)
            snprintf(err, errlen, "not JSON: %s (line %d, column %d)", jerr.text, jerr.line, jerr.column);
        return AFD_EINVAL;
    }
    rd r = {err, errlen, 0};
    if (!json_is_object(doc))
        refuse(&r, "", "document", "not an object");
    if (!r.bad)
        read_head(&r, doc, out);
    if (!r.bad)
        read_runs(&r, doc, out);
    if (!r.bad)
        read_window(&r, doc, out);
    if (!r.bad)
        read_cause(&r, doc, &out->cause);
    if (!r.bad)
        read_evidence(&r, doc, &out->evidence);
    if (!r.bad)
        read_fix(&r, doc, out);
    if (!r.bad)
        read_tail(&r, doc, out);
    json_decref(doc);
    return r.bad ? AFD_EINVAL : 0;
}
