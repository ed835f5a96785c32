/* incident_read.c -- afd_incident_from_json and its lenient twin: a stored or printed document
 * back into the struct.
 *
 * Documents cross a file boundary (the store, a report's input, the plugin's subprocess), so
 * every key is checked for its type before it is used. Each key that is missing or of the wrong
 * type is noted with a one-line reason that names it ("cause.kind: not a string") and left unset
 * (incident.h), and the reader goes on. The strict reader is this one reader with the first note
 * as its refusal; the lenient one (the reports') keeps the notes and the document's readable
 * parts. Keys this version does not know are ignored, so that an older reader can show a newer
 * document's known parts. One document per command: clarity over speed. */
#include "incident.h"

#include "afd.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The reader's state: the first note goes to err, every note to notes. */
typedef struct rd {
    char *err;
    size_t errlen;
    afd_buf *notes; /* Borrowed; NULL when the caller wants only the first */
    int bad;        /* notes so far */
    int oom;        /* an allocation failed: the struct is incomplete whatever the mode */
} rd;

static void refuse(rd *r, const char *where, const char *key, const char *what, ...)
    __attribute__((format(printf, 4, 5)));
static void refuse(rd *r, const char *where, const char *key, const char *what, ...)
{
    char why[200];
    va_list ap;
    va_start(ap, what);
    vsnprintf(why, sizeof why, what, ap);
    va_end(ap);
    if (!r->bad++ && r->err && r->errlen)
        snprintf(r->err, r->errlen, "%s%s%s: %s", where, *where ? "." : "", key, why);
    if (r->notes)
        afd_buf_printf(r->notes, "%s%s%s: %s\n", where, *where ? "." : "", key, why);
}

static void out_of_memory(rd *r)
{
    r->oom = 1;
    refuse(r, "", "document", "out of memory");
}

/* The value of key in o, which must exist and have one of the types in mask (bits of
 * json_type); NULL (noted) otherwise. When o is not an object, its own key was noted already, so
 * none of its keys is. */
#define T(t) (1u << (t))
static const json_t *want(rd *r, const json_t *o, const char *where, const char *key, unsigned mask,
                          const char *what)
{
    if (!json_is_object(o))
        return NULL;
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
        out_of_memory(r);
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

/* A count up to max; AFD_INCIDENT_UNSET when it is missing, mistyped or out of range. */
static uint64_t get_count(rd *r, const json_t *o, const char *where, const char *key, uint64_t max)
{
    const json_t *v = want(r, o, where, key, T(JSON_INTEGER), "an integer");
    if (!v)
        return AFD_INCIDENT_UNSET;
    json_int_t n = json_integer_value(v);
    if (n < 0 || (uint64_t)n > max) {
        refuse(r, where, key, "out of range");
        return AFD_INCIDENT_UNSET;
    }
    return (uint64_t)n;
}

static uint32_t get_u32(rd *r, const json_t *o, const char *where, const char *key)
{
    uint64_t n = get_count(r, o, where, key, UINT32_MAX);
    return n == AFD_INCIDENT_UNSET ? AFD_INCIDENT_UNSET32 : (uint32_t)n;
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
        return AFD_INCIDENT_UNSET;
    }
    return v ? (uint64_t)llround(us * 1e3) : AFD_INCIDENT_UNSET;
}

/* 1 or 0; -1 when missing or not a boolean. */
static int get_bool(rd *r, const json_t *o, const char *where, const char *key)
{
    const json_t *v = want(r, o, where, key, T(JSON_TRUE) | T(JSON_FALSE), "a boolean");
    return v ? json_is_true(v) : -1;
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
        out_of_memory(r);
    return p;
}

/* An operation of the cause or of a race. One whose access this version does not know (only a
 * lenient read keeps it) is read as an access to shared state, so its task and step still show. */
static void read_op(rd *r, const json_t *o, const char *where, afd_cause_op *op)
{
    op->access = AFD_CAUSE_ACCESS__COUNT;
    op->step = AFD_INCIDENT_UNSET32;
    op->observed = -1;
    if (!json_is_object(o)) {
        refuse(r, where, "operations", "holds an item that is not an object");
        return;
    }
    char *access = NULL;
    get_str(r, o, where, "access", 0, &access);
    if (access && afd_cause_access_parse(access, &op->access) < 0) {
        refuse(r, where, "access", "unknown: \"%.40s\"", access);
        op->access = AFD_CAUSE_ACCESS__COUNT;
    }
    free(access);
    int known = op->access != AFD_CAUSE_ACCESS__COUNT;
    int rw = !known || op->access == AFD_CAUSE_ACCESS_READ || op->access == AFD_CAUSE_ACCESS_WRITE;
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
    } else {
        /* Not a key of these operations, so never noted; a hand-made one that gives a step is
         * still outlined on the report's timeline. */
        const json_t *st = json_object_get(o, "step");
        if (json_is_integer(st) && json_integer_value(st) >= 0 && json_integer_value(st) < UINT32_MAX)
            op->step = (uint32_t)json_integer_value(st);
        if (afd_cause_access_has_site(op->access))
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
    for (size_t i = 0; i < *n; i++)
        read_op(r, json_array_get(a, i), where, &(*ops)[i]);
}

/* cause.await_chain: absent in incidents written before chains were recorded (read as none). */
static void read_await_chain(rd *r, const json_t *o, afd_cause *c)
{
    if (!json_object_get(o, "await_chain"))
        return;
    const json_t *a = get_arr(r, o, "cause", "await_chain");
    for (size_t i = 0; a && i < json_array_size(a) && !r->oom; i++) {
        const json_t *x = json_array_get(a, i);
        if (!json_is_object(x)) {
            refuse(r, "cause", "await_chain", "holds an item that is not an object");
            return;
        }
        char *file = NULL, *function = NULL;
        int noted = r->bad; /* a frame with a bad key is left out (and noted); the others are read */
        get_str(r, x, "cause.await_chain", "file", 0, &file);
        uint32_t line = get_u32(r, x, "cause.await_chain", "line");
        get_str(r, x, "cause.await_chain", "function", 0, &function);
        if (r->bad == noted && afd_cause_add_frame(c, file, line, function) < 0)
            out_of_memory(r);
        free(file);
        free(function);
    }
}

static void read_races(rd *r, const json_t *doc, afd_incident *self)
{
    afd_cause *c = &self->cause;
    const json_t *races = get_arr(r, doc, "", "races");
    size_t n = json_array_size(races);
    if (!n)
        return;
    c->races = get_items(r, n, sizeof *c->races);
    self->race_ops = get_items(r, n, 1);
    if (!c->races || !self->race_ops)
        return;
    c->n_races = n;
    for (size_t i = 0; i < n; i++) {
        const json_t *x = json_array_get(races, i);
        afd_cause_race *race = &c->races[i];
        race->ops[0].access = race->ops[1].access = AFD_CAUSE_ACCESS__COUNT;
        if (!json_is_object(x)) {
            refuse(r, "", "races", "holds an item that is not an object");
            continue;
        }
        get_str(r, x, "races", "resource", 0, &race->resource);
        const json_t *ops = get_arr(r, x, "races", "operations");
        size_t k = json_array_size(ops);
        if (ops && k != 2)
            refuse(r, "races", "operations", "not a pair");
        self->race_ops[i] = (unsigned char)(k < 2 ? k : 2);
        for (k = 0; k < self->race_ops[i]; k++)
            read_op(r, json_array_get(ops, k), "races", &race->ops[k]);
    }
}

static void read_cause(rd *r, const json_t *doc, afd_incident *self)
{
    afd_cause *c = &self->cause;
    const json_t *o = get_obj(r, doc, "", "cause", 1);
    if (o) {
        char *kind = NULL;
        self->has_cause = 1;
        get_str(r, o, "cause", "kind", 0, &kind);
        c->kind = afd_cause_kind_parse(kind);
        if (kind && c->kind == AFD_CAUSE_NONE) {
            refuse(r, "cause", "kind", "unknown: \"%.40s\"", kind);
            self->cause_kind_text = kind; /* shown as the document gives it */
            kind = NULL;
        }
        free(kind);
        get_str(r, o, "cause", "resource", 0, &c->resource);
        get_str(r, o, "cause", "await_site", 1, &c->await_site);
        get_str(r, o, "cause", "summary", 0, &c->summary);
        read_ops(r, o, "cause", &c->ops, &c->n_ops);
        read_await_chain(r, o, c);
    }
    read_races(r, doc, self);
}

/* The rows, each with what it gives: a row the document gives without a strength keeps none
 * (afd_evidence_add would make it ""), so a report can tell "no strength" from an empty one. */
static void read_evidence(rd *r, const json_t *doc, afd_evidence *e)
{
    const json_t *a = get_arr(r, doc, "", "evidence");
    for (size_t i = 0; a && i < json_array_size(a) && !r->oom; i++) {
        const json_t *x = json_array_get(a, i);
        char *claim = NULL, *measured = NULL, *strength = NULL;
        if (!json_is_object(x))
            refuse(r, "", "evidence", "holds an item that is not an object");
        get_str(r, x, "evidence", "claim", 0, &claim);
        get_str(r, x, "evidence", "measured", 0, &measured);
        get_str(r, x, "evidence", "strength", 0, &strength);
        if (afd_evidence_add(e, claim, measured, strength) < 0) {
            out_of_memory(r);
        } else if (!strength) {
            free(e->rows[e->n - 1].strength);
            e->rows[e->n - 1].strength = NULL;
        }
        free(claim);
        free(measured);
        free(strength);
    }
}

static void read_window(rd *r, const json_t *doc, afd_incident *self)
{
    const json_t *o = get_obj(r, doc, "", "window", 1);
    self->window_us = get_num(r, doc, "", "window_us"); /* written from fails_at_us */
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
    if (!a || !json_array_size(a))
        return;
    w->probes = get_items(r, json_array_size(a), sizeof *w->probes);
    w->n_probes = w->probes ? json_array_size(a) : 0;
    for (size_t i = 0; i < w->n_probes; i++) {
        const json_t *p = json_array_get(a, i);
        if (!json_is_object(p))
            refuse(r, "window", "probes", "holds an item that is not an object");
        w->probes[i].delay_us = get_num(r, p, "window.probes", "delay_us");
        w->probes[i].failed = get_bool(r, p, "window.probes", "failed");
    }
}

/* SYS (docs/schema/incident.schema.json): the systematic search's coverage at where. A level
 * past the last this version holds is noted and left out. */
static void read_sys(rd *r, const json_t *o, const char *where, afd_incident_sys *s)
{
    char at[80];
    snprintf(at, sizeof at, "%s.levels", where);
    s->max_delays = get_u32(r, o, where, "max_delays");
    char *pruning = NULL;
    get_str(r, o, where, "pruning", 0, &pruning);
    s->pruning = pruning && !strcmp(pruning, "classes") ? 1 : pruning && !strcmp(pruning, "none") ? 0 : -1;
    if (pruning && s->pruning < 0)
        refuse(r, where, "pruning", "neither \"none\" nor \"classes\"");
    free(pruning);
    s->runs = get_u64(r, o, where, "runs");
    s->budget_spent = get_bool(r, o, where, "budget_spent");
    s->clock_reads = get_u64(r, o, where, "clock_reads");
    const json_t *a = get_arr(r, o, where, "levels");
    size_t n = json_array_size(a);
    if (n > AFD_INCIDENT_SYS_LEVELS) {
        refuse(r, where, "levels", "more than %d levels", AFD_INCIDENT_SYS_LEVELS);
        n = AFD_INCIDENT_SYS_LEVELS;
    }
    for (size_t i = 0; i < n && !r->oom; i++) {
        const json_t *x = json_array_get(a, i);
        afd_incident_sys_level *lv = &s->levels[i];
        if (!json_is_object(x))
            refuse(r, where, "levels", "holds an item that is not an object");
        lv->delays = get_u32(r, x, at, "delays");
        lv->schedules = get_u64(r, x, at, "schedules");
        lv->cum_schedules = get_u64(r, x, at, "cum_schedules");
        lv->orders = get_u64(r, x, at, "orders");
        lv->classes = get_u64(r, x, at, "classes");
        lv->failed = get_u64(r, x, at, "failed");
        lv->no_slot = get_u64(r, x, at, "no_slot");
        lv->pruned = get_u64(r, x, at, "pruned");
        lv->exhausted = get_bool(r, x, at, "exhausted");
        const json_t *est =
            want(r, x, at, "estimated_total", T(JSON_INTEGER) | T(JSON_NULL), "an integer or null");
        lv->estimated_total = -1; /* null: unknown */
        if (json_is_integer(est) && json_integer_value(est) < 0)
            refuse(r, at, "estimated_total", "out of range");
        else if (json_is_integer(est))
            lv->estimated_total = (int64_t)json_integer_value(est);
        get_str(r, x, at, "why_not", 1, &lv->why_not);
    }
    s->n_levels = (uint32_t)n;
}

/* "search": how the failing schedule was searched for; absent in documents written before it. */
static void read_search(rd *r, const json_t *doc, afd_incident *self)
{
    if (!json_object_get(doc, "search"))
        return;
    const json_t *o = get_obj(r, doc, "", "search", 0);
    if (!o)
        return;
    self->has_search = 1;
    self->search_random_runs = get_u64(r, o, "search", "random_runs");
    get_str(r, o, "search", "found_by", 1, &self->found_by);
    const char *by = self->found_by;
    if (by && strcmp(by, "random") != 0 && strcmp(by, "systematic") != 0)
        refuse(r, "search", "found_by", "unknown: \"%.40s\"", by); /* kept: the report shows it */
    const json_t *sys = get_obj(r, o, "search", "systematic", 1);
    if (sys) {
        self->has_search_sys = 1;
        read_sys(r, sys, "search.systematic", &self->search_sys);
    }
}

/* fix.tiers.systematic: the same bounded search before the fix and after it; absent in documents
 * written before the tier existed. */
static void read_sys_tier(rd *r, const json_t *tiers, afd_incident_fix *f)
{
    if (!json_object_get(tiers, "systematic"))
        return;
    const json_t *o = get_obj(r, tiers, "fix.tiers", "systematic", 0);
    if (!o)
        return;
    f->has_sys_tier = 1;
    read_sys(r, get_obj(r, o, "fix.tiers.systematic", "before", 0), "fix.tiers.systematic.before",
             &f->sys_before);
    read_sys(r, get_obj(r, o, "fix.tiers.systematic", "after", 0), "fix.tiers.systematic.after",
             &f->sys_after);
}

static afd_incident_tri get_tri(rd *r, const json_t *o, const char *where, const char *key)
{
    const json_t *v = want(r, o, where, key, T(JSON_TRUE) | T(JSON_FALSE) | T(JSON_STRING),
                           "a boolean or \"not attempted\"");
    if (v && json_is_string(v) && strcmp(json_string_value(v), "not attempted") != 0)
        refuse(r, where, key, "not a boolean or \"not attempted\"");
    return !v || json_is_string(v) ? AFD_TRI_NOT_ATTEMPTED : json_is_true(v) ? AFD_TRI_TRUE : AFD_TRI_FALSE;
}

static const char *const TIER_KEYS[AFD_TIER__COUNT] = {"replay", "exploration", "natural", "overhead"};

/* The results of one tier that ran. */
static void read_tier(rd *r, const json_t *o, int tier, afd_incident_fix *f)
{
    switch (tier) {
    case AFD_TIER_REPLAY:
        get_str(r, o, "fix.tiers.replay", "token_failed_before", 0, &f->token_failed_before);
        f->replay_runs = get_u64(r, o, "fix.tiers.replay", "runs");
        f->replay_passed = get_u64(r, o, "fix.tiers.replay", "passed");
        break;
    case AFD_TIER_EXPLORATION:
        f->explore_schedules = get_u64(r, o, "fix.tiers.exploration", "schedules");
        f->explore_failed_before = get_u64(r, o, "fix.tiers.exploration", "failed_before");
        f->explore_failed_after = get_u64(r, o, "fix.tiers.exploration", "failed_after");
        break;
    case AFD_TIER_NATURAL:
        f->natural_runs = get_u64(r, o, "fix.tiers.natural", "runs");
        f->natural_failed = get_u64(r, o, "fix.tiers.natural", "failed");
        f->natural_rate_below = get_num(r, o, "fix.tiers.natural", "rate_below");
        break;
    default:
        f->median_ms_before = get_num(r, o, "fix.tiers.overhead", "median_ms_before");
        f->median_ms_after = get_num(r, o, "fix.tiers.overhead", "median_ms_after");
        break;
    }
}

/* Either every tier ran (objects) or none did (each the string "not attempted"): the replay tier
 * says which, and a tier given the other way is noted. A lenient read keeps each tier as given. */
static void read_tiers(rd *r, const json_t *fix, afd_incident_fix *f)
{
    const json_t *t = get_obj(r, fix, "fix", "tiers", 0);
    if (!t)
        return;
    int not_run = json_is_string(json_object_get(t, "replay"));
    for (int i = 0; i < AFD_TIER__COUNT; i++) {
        const json_t *v = json_object_get(t, TIER_KEYS[i]);
        if (json_is_string(v)) {
            f->tier_text[i] = dup_n(r, json_string_value(v), json_string_length(v));
            if (!not_run)
                refuse(r, "fix.tiers", TIER_KEYS[i], "not an object");
            else if (strcmp(json_string_value(v), "not attempted") != 0)
                refuse(r, "fix.tiers", TIER_KEYS[i], "not \"not attempted\"");
            continue;
        }
        if (not_run)
            want(r, t, "fix.tiers", TIER_KEYS[i], T(JSON_STRING), "\"not attempted\"");
        else
            get_obj(r, t, "fix.tiers", TIER_KEYS[i], 0);
        if (json_is_object(v)) {
            f->tier_ran[i] = 1;
            f->tiers_ran = 1;
            read_tier(r, v, i, f);
        }
    }
    read_sys_tier(r, t, f);
}

static void read_gate(rd *r, const json_t *fix, afd_incident_fix *f)
{
    const json_t *a = get_arr(r, fix, "fix", "gate");
    if (!a || !json_array_size(a))
        return;
    f->gate = get_items(r, json_array_size(a), sizeof *f->gate);
    f->n_gate = f->gate ? json_array_size(a) : 0;
    for (size_t i = 0; i < f->n_gate; i++) {
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
    if (!a || !json_array_size(a))
        return;
    f->candidates = get_items(r, json_array_size(a), sizeof *f->candidates);
    f->n_candidates = f->candidates ? json_array_size(a) : 0;
    for (size_t i = 0; i < f->n_candidates; i++) {
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
        f->has_regression_test = 1;
        get_str(r, reg, "fix.regression_test", "node", 0, &f->regression_node);
        f->fails_before = get_tri(r, reg, "fix.regression_test", "fails_before");
        f->passes_after = get_tri(r, reg, "fix.regression_test", "passes_after");
    }
    read_candidates(r, o, f);
    f->verified = get_bool(r, o, "fix", "verified");
    f->applied = get_bool(r, o, "fix", "applied");
    get_str(r, o, "fix", "apply", 1, &f->apply);
}

static void read_natural(rd *r, const json_t *doc, afd_incident *self)
{
    const json_t *nat = get_obj(r, doc, "", "natural", 0);
    self->natural_runs = get_u64(r, nat, "natural", "runs");
    self->natural_failed = get_u64(r, nat, "natural", "failed");
    const json_t *rate = json_object_get(nat, "rate"); /* optional: older documents had it */
    self->natural_rate = json_is_number(rate) ? json_number_value(rate) : NAN;
    const json_t *ci = get_arr(r, nat, "natural", "ci95");
    const json_t *lo = json_array_get(ci, 0), *hi = json_array_get(ci, 1);
    if (ci && json_array_size(ci) != 2)
        refuse(r, "natural", "ci95", "not a pair");
    else if (ci && (!(json_is_number(lo) || json_is_null(lo)) || !(json_is_number(hi) || json_is_null(hi))))
        refuse(r, "natural", "ci95", "not a pair of numbers");
    int pair = json_array_size(ci) == 2;
    self->ci95_lo = pair && json_is_number(lo) ? json_number_value(lo) : NAN;
    self->ci95_hi = pair && json_is_number(hi) ? json_number_value(hi) : NAN;
}

static void read_head(rd *r, const json_t *doc, afd_incident *self)
{
    const json_t *id = json_object_get(doc, "incident");
    if (id) {
        self->with_ids = 1;
        uint64_t n = json_is_null(id) ? 0 : get_u64(r, doc, "", "incident");
        self->id = n == AFD_INCIDENT_UNSET ? 0 : (int64_t)n;
        get_str(r, doc, "", "report", 1, &self->report);
    }
    const json_t *schema = json_object_get(doc, "schema");
    if (schema) {
        uint64_t v = get_count(r, doc, "", "schema", UINT32_MAX);
        if (v != AFD_INCIDENT_UNSET && v != AFD_INCIDENT_SCHEMA)
            refuse(r, "", "schema", "version %" JSON_INTEGER_FORMAT " is not %d", json_integer_value(schema),
                   AFD_INCIDENT_SCHEMA);
    }
    get_str(r, doc, "", "nodeid", 0, &self->nodeid);
    if (json_object_get(doc, "check")) {
        const json_t *c = get_obj(r, doc, "", "check", 0);
        self->has_check = c != NULL;
        get_str(r, c, "check", "file", 0, &self->check.file);
        get_str(r, c, "check", "class", 0, &self->check.cls);
        get_str(r, c, "check", "method", 0, &self->check.method);
        self->check.calls = get_u64(r, c, "check", "calls");
    }
    char *verdict = NULL;
    get_str(r, doc, "", "verdict", 0, &verdict);
    self->verdict = afd_verdict_parse(verdict);
    if (verdict && self->verdict == AFD_VERDICT_NONE) {
        refuse(r, "", "verdict", "unknown: \"%.40s\"", verdict);
        self->verdict_text = verdict; /* shown as the document gives it */
        verdict = NULL;
    }
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
    read_natural(r, doc, self);
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
        self->failure_len = self->failure ? json_string_length(f) : 0;
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
    for (size_t i = 0; a && i < json_array_size(a) && !r->oom; i++) {
        const json_t *s = json_array_get(a, i);
        char *name = NULL;
        if (!json_is_object(s))
            refuse(r, "", "stages", "holds an item that is not an object");
        get_str(r, s, "stages", "name", 0, &name);
        double sec = get_num(r, s, "stages", "seconds");
        uint64_t runs = get_u64(r, s, "stages", "runs");
        if (afd_incident_add_stage(self, name ? name : "", sec, runs) < 0)
            out_of_memory(r);
        free(name);
    }
}

/* The one reader: every part of the document, noting what does not read. */
static int read_document(const char *text, size_t len, afd_incident *out, rd *r)
{
    afd_incident_init(out);
    if (r->err && r->errlen)
        r->err[0] = 0;
    json_error_t jerr;
    json_t *doc = json_loadb(text, len, JSON_ALLOW_NUL, &jerr);
    if (!doc) {
        if (r->err && r->errlen)
            snprintf(r->err, r->errlen, "not JSON: %s (line %d, column %d)", jerr.text, jerr.line,
                     jerr.column);
        return AFD_EINVAL;
    }
    if (!json_is_object(doc)) {
        refuse(r, "", "document", "not an object");
        json_decref(doc);
        return AFD_EINVAL;
    }
    read_head(r, doc, out);
    read_search(r, doc, out);
    read_runs(r, doc, out);
    read_window(r, doc, out);
    read_cause(r, doc, out);
    read_evidence(r, doc, &out->evidence);
    read_fix(r, doc, out);
    read_tail(r, doc, out);
    json_decref(doc);
    return r->oom ? AFD_ENOMEM : 0;
}

int afd_incident_from_json(const char *text, size_t len, afd_incident *out, char *err, size_t errlen)
{
    rd r = {err, errlen, NULL, 0, 0};
    /* An allocation failure refuses the document too: err says "document: out of memory". */
    return read_document(text, len, out, &r) < 0 || r.bad ? AFD_EINVAL : 0;
}

int afd_incident_from_json_lenient(const char *text, size_t len, afd_incident *out, afd_buf *notes, char *err,
                                   size_t errlen)
{
    rd r = {err, errlen, notes, 0, 0};
    int rc = read_document(text, len, out, &r);
    if (rc == AFD_ENOMEM && err && errlen)
        snprintf(err, errlen, "out of memory reading the document");
    return rc;
}
