/* incident.h -- the incident: what one investigation concluded, as one struct.
 *
 * `affidavit investigate` (and `check`) fills an afd_incident once; its JSON document (what --json
 * prints and what the store keeps), the terminal text and every report are written from it, and
 * a stored document is read back into it. The verdicts and their words live in one X-macro here,
 * the cause kinds in cause.h, so no writer compares or spells them on its own.
 *
 * Strings are Owned, NUL-terminated and NULL where the document holds null; the failure text is
 * the one string that may hold NUL bytes (failure_len is its length). afd_incident_from_json
 * checks every key's type, so a writer may trust what it reads: a document with a missing or
 * wrongly typed key is refused with a one-line reason. The reports read leniently instead
 * (afd_incident_from_json_lenient): a half-finished or hand-edited document is still a report, so
 * every key the document lacks or gives with the wrong type is left unset and noted. Unset is
 * NULL for a string, NaN for a real, -1 for a boolean, AFD_INCIDENT_UNSET (or _UNSET32) for a
 * count; a strict read never leaves one, and the engine never writes one. */
#ifndef AFD_INCIDENT_H
#define AFD_INCIDENT_H

#include "buf.h"
#include "cause.h"

#include <stddef.h>
#include <stdint.h>

/* The version of the document's shape: its "schema" key. A document without the key is one
 * written before the key existed, which has the same shape as version 1. */
#define AFD_INCIDENT_SCHEMA 1

/* A count the document lacked or gave with the wrong type (a lenient read's uint64_t and uint32_t
 * fields), so a report shows a dash rather than a zero it was never told. */
#define AFD_INCIDENT_UNSET UINT64_MAX
#define AFD_INCIDENT_UNSET32 UINT32_MAX

/* The verification tiers, in the order the document and the report list them. */
enum { AFD_TIER_REPLAY, AFD_TIER_EXPLORATION, AFD_TIER_NATURAL, AFD_TIER_OVERHEAD, AFD_TIER__COUNT };

/* X(ENUM, name in JSON, words for the terminal's head line, words for the report, CSS class,
 * exit code of investigate (cmds.h's AFD_EXIT_* values), words for the pytest plugin's block).
 * The plugin reads the last column from affidavit/_verdicts.py, which the build generates from
 * this table (src/engine/gen_verdicts.c). */
#define AFD_VERDICTS(X)                                                                                      \
    X(REPRODUCED, "reproduced", "REPRODUCED", "REPRODUCED", "reproduced", 1, "REPRODUCED")                   \
    X(NO_FAILURE, "no_failure", "NO FAILURE FOUND", "NO FAILURE", "no-failure", 0, "no failure found")       \
    X(ABSTAINED, "abstained", "ABSTAINED", "ABSTAINED", "abstained", 4, "ABSTAINED")                         \
    X(DETERMINISTIC, "deterministic", "FAILS UNDER EVERY SCHEDULE TRIED: NOT TIMING-DEPENDENT",              \
      "DETERMINISTIC", "deterministic", 1, "fails every time (not a race)")                                  \
    X(TIMING_SENSITIVE, "timing_sensitive", "TIMING-SENSITIVE: A THRESHOLD, NOT A RACE", "TIMING-SENSITIVE", \
      "timing-sensitive", 1, "timing-sensitive: a threshold, not a race")                                    \
    X(INTERRUPTED, "interrupted", "INTERRUPTED (the runs so far)", "INTERRUPTED", "interrupted", 130,        \
      "interrupted")

typedef enum afd_verdict {
    AFD_VERDICT_NONE = 0, /* not decided (an investigation that failed before a verdict) */
#define AFD_VERDICT_ENUM_(e, name, head, word, css, exit, plugin) AFD_VERDICT_##e,
    AFD_VERDICTS(AFD_VERDICT_ENUM_)
#undef AFD_VERDICT_ENUM_
        AFD_VERDICT__COUNT
} afd_verdict;

/* Each returns a static string; NULL (or, for the exit code, -1) for AFD_VERDICT_NONE or a value
 * out of range. */
const char *afd_verdict_name(afd_verdict v);
const char *afd_verdict_head(afd_verdict v);
const char *afd_verdict_word(afd_verdict v);
const char *afd_verdict_css(afd_verdict v);
int afd_verdict_exit(afd_verdict v);
/* AFD_VERDICT_NONE when name is NULL or unknown. */
afd_verdict afd_verdict_parse(const char *name);

/* `affidavit check`: the target the harness test was built from. */
typedef struct afd_incident_check {
    char *file, *cls, *method; /* Owned */
    uint64_t calls;
} afd_incident_check;

/* A timing-sensitive verdict's threshold (timing.h); present only with that verdict. */
typedef struct afd_incident_timing {
    char *summary; /* Owned */
    uint64_t duration_us;
    char *site; /* Owned; NULL when unknown */
    uint64_t check_runs, check_passed;
} afd_incident_timing;

typedef struct afd_incident_probe {
    double delay_us;
    int failed;
} afd_incident_probe;

/* The collision window: the delay of one step past which the test fails. */
typedef struct afd_incident_window {
    char *task; /* Owned */
    uint32_t step;
    char *wakes;                        /* Owned; NULL unless a plain callback's window */
    uint64_t passes_at_ns, fails_at_ns; /* the document gives them in microseconds */
    uint32_t delays_before, delays_after;
    uint64_t runs;
    int searched_one_delay;
    afd_incident_probe *probes; /* Owned array */
    size_t n_probes;
} afd_incident_window;

typedef struct afd_incident_gate {
    char *check, *group, *reason; /* Owned */
    int passed;
} afd_incident_gate;

typedef struct afd_incident_candidate {
    char *kind; /* Owned */
    uint64_t changed_lines;
    int tried, gate_passed, verified;
} afd_incident_candidate;

/* A regression test's outcome before or after the fix: not attempted, or whether it held. */
typedef enum afd_incident_tri {
    AFD_TRI_NOT_ATTEMPTED = -1,
    AFD_TRI_FALSE = 0,
    AFD_TRI_TRUE = 1
} afd_incident_tri;

/* The systematic search's coverage (investigate's search, and the verification tier that runs it
 * before and after a fix): every schedule with at most max_delays delayed steps, each delay swept
 * across its measured slots. A level's counts are of the schedules with exactly `delays` delays
 * (schedules, failed, estimated_total) or with at most that many (the cumulative ones). */
typedef struct afd_incident_sys_level {
    uint32_t delays;
    uint64_t schedules;       /* run with exactly this many delays */
    uint64_t cum_schedules;   /* with at most this many */
    uint64_t orders, classes; /* distinct traces / interleaving classes among the cum_schedules runs */
    uint64_t failed;          /* with exactly this many */
    uint64_t no_slot, pruned; /* delayed steps that flip no comparison; schedules not extended */
    int exhausted;
    int64_t estimated_total; /* this level's schedules; -1: unknown (null in JSON) */
    char *why_not;           /* Owned; NULL when exhausted: "budget spent", "not begun", ... */
} afd_incident_sys_level;

#define AFD_INCIDENT_SYS_LEVELS 5 /* levels 0..4: the most delays a systematic search places */

typedef struct afd_incident_sys {
    uint32_t max_delays;
    int pruning;   /* 1: "classes" (heuristic class pruning was used), 0: "none" */
    uint64_t runs; /* every run it made (measuring repeats included) */
    int budget_spent;
    uint64_t clock_reads;
    afd_incident_sys_level levels[AFD_INCIDENT_SYS_LEVELS]; /* levels 0..max_delays */
    uint32_t n_levels;
} afd_incident_sys;

/* What --fix found: the proposal, its gate, its verification tiers and the regression test. */
typedef struct afd_incident_fix {
    char *kind;              /* Owned; NULL when none was proposed */
    char *why_none;          /* Owned; NULL when one was proposed */
    char *diff;              /* Owned */
    afd_incident_gate *gate; /* Owned array */
    size_t n_gate;
    int tiers_ran; /* 0: every tier "not attempted" and the fields below are 0 */
    /* How the document gave each tier (AFD_TIER_*): its results (tier_ran, the fields below), or
     * a string in their place ("not attempted", Owned in tier_text), or neither (a partial
     * document). A strict read has all four the one way or all four the other. */
    unsigned char tier_ran[AFD_TIER__COUNT];
    char *tier_text[AFD_TIER__COUNT];
    char *token_failed_before; /* Owned: "10/10" */
    uint64_t replay_runs, replay_passed;
    uint64_t explore_schedules, explore_failed_before, explore_failed_after;
    uint64_t natural_runs, natural_failed;
    double natural_rate_below;
    double median_ms_before, median_ms_after;
    /* The systematic tier (fix.tiers.systematic, absent in older documents): the same bounded
     * enumeration before the fix and after it. */
    int has_sys_tier;
    afd_incident_sys sys_before, sys_after;
    char *regression_node;   /* Owned; NULL: no regression test, and regression_why says why */
    char *regression_why;    /* Owned; NULL when regression_node is set */
    int has_regression_test; /* the document's regression_test is an object (node and outcomes) */
    afd_incident_tri fails_before, passes_after;
    afd_incident_candidate *candidates; /* Owned array */
    size_t n_candidates;
    int verified, applied;
    char *apply; /* Owned: what --apply did, or NULL */
} afd_incident_fix;

/* One stage of the pipeline: its name, wall-clock seconds and the runs it spent. */
typedef struct afd_incident_stage {
    char *name; /* Owned */
    double seconds;
    uint64_t runs;
} afd_incident_stage;

typedef struct afd_incident {
    /* "incident" and "report": set on what --json prints (and what a report reads), where the
     * store's number (0: not stored, null) and the HTML report's path (NULL: null) lead. */
    int with_ids;
    int64_t id;
    char *report; /* Owned */
    char *nodeid; /* Owned */
    int has_check;
    afd_incident_check check;
    afd_verdict verdict;
    int has_timing;
    afd_incident_timing timing;
    uint64_t natural_runs, natural_failed;
    double ci95_lo, ci95_hi;
    /* How the failing schedule was searched for ("search", absent in older documents): the random
     * portfolio's runs, which search found it, and the systematic search's coverage. */
    int has_search;
    uint64_t search_random_runs;
    char *found_by; /* Owned: "random" | "systematic" | NULL (neither found one) */
    int has_search_sys;
    afd_incident_sys search_sys;
    char *token; /* Owned; NULL when no failing schedule was found */
    uint64_t replay_runs, replay_failed;
    int identical_traces; /* -1: null (no replay), else 0/1 */
    char *passing_token;  /* Owned; NULL when none */
    uint64_t passing_runs, passing_passed;
    int has_window;
    afd_incident_window window;
    afd_cause cause; /* kind AFD_CAUSE_NONE: "cause" is null (the races are kept even then) */
    afd_evidence evidence;
    /* What a document read back holds beyond what the engine fills (the reports show it): */
    int has_cause;           /* "cause" is an object (its kind may still be one this version lacks) */
    char *cause_kind_text;   /* Owned: the cause's kind when this version knows no such kind */
    char *verdict_text;      /* Owned: the verdict when this version knows no such verdict */
    double window_us;        /* the document's "window_us"; NaN when null */
    double natural_rate;     /* natural.rate, a key older documents had; NaN when absent */
    unsigned char *race_ops; /* Owned, one per race: the operations it gave (2; fewer when partial) */
    int has_fix;
    afd_incident_fix fix;
    char *failure; /* Owned; may hold NUL bytes: failure_len is its length */
    size_t failure_len;
    char *python, *hash_seed, *platform; /* Owned: the environment */
    uint64_t step_limit_runs, truncated_traces, runs;
    double seconds;
    afd_incident_stage *stages; /* Owned array; no "stages" key while empty */
    size_t n_stages;
    /* What the terminal text says beyond the document (none of it is written to JSON, and a
     * document read back has none): why the investigation abstained, the --max-steps bound of
     * the step-limit line, and why the fix's verification was not attempted. */
    const char *abstain_reason; /* Borrowed static; NULL when none */
    uint64_t max_steps;
    char *verify_error; /* Owned; NULL when none */
} afd_incident;

void afd_incident_init(afd_incident *self);
void afd_incident_finish(afd_incident *self); /* accepts NULL */

/* Whether the fix passed every check of the policy gate (no check ran: it did not). */
int afd_incident_gate_passed(const afd_incident *self);

/* Appends a stage (the name is copied). Returns 0 or AFD_ENOMEM. */
int afd_incident_add_stage(afd_incident *self, const char *name, double seconds, uint64_t runs);

/* The document as one line of JSON ending in "\n", in *out (the caller frees it) with its length
 * in *len (may be NULL). Text that is not UTF-8 is written with U+FFFD in place of each bad byte.
 * Returns 0, AFD_ENOMEM, or AFD_EINVAL for a verdict out of range. */
int afd_incident_to_json(const afd_incident *self, char **out, size_t *len);

/* Reads the len bytes at text into out (initialized here; finish it even on failure). Returns 0,
 * or AFD_EINVAL with a one-line reason in err naming the key (e.g. "cause.kind: not a string"). */
int afd_incident_from_json(const char *text, size_t len, afd_incident *out, char *err, size_t errlen);

/* The same reader, keeping going: keys this version does not know are ignored, a key missing or
 * of the wrong type is left unset (see the top of this file) and noted in notes (when not NULL),
 * one line each, in the words of the strict reader's refusal ("verdict: not a string\n"). Returns
 * 0; AFD_EINVAL when the text is not JSON or not an object, with the reason in err; AFD_ENOMEM. */
int afd_incident_from_json_lenient(const char *text, size_t len, afd_incident *out, afd_buf *notes, char *err,
                                   size_t errlen);

#endif
