/* cause.h -- the cause an investigation names, decided from its failing and passing views.
 *
 * afd_cause_decide() reads the minimal failing run's view, the nearest passing run's view (when
 * there is one) and the history of every run seen, and returns a struct: the kind, the resource,
 * the await named, the operations (each a run's access), the racing pairs and the evidence rows.
 * No JSON here: the incident (incident.h) writes the struct out. */
#ifndef AFD_CAUSE_H
#define AFD_CAUSE_H

#include "explain.h"

#include <stddef.h>
#include <stdint.h>

/* X(ENUM, name in JSON, words for people, CSS class) */
#define AFD_CAUSE_KINDS(X)                                                                                    \
    X(LOST_UPDATE, "lost_update", "lost update", "lost-update")                                              \
    X(CHECK_THEN_ACT, "check_then_act", "check then act", "check-then-act")                                  \
    X(ORDER_VIOLATION, "order_violation", "order violation", "order-violation")                              \
    X(DEADLOCK, "deadlock", "deadlock", "deadlock")                                                          \
    X(LOCK_ORDER, "lock_order", "lock order", "lock-order")                                                  \
    X(STARVATION, "starvation", "starvation", "starvation")                                                  \
    X(OTHER, "other", "other", "other")

typedef enum afd_cause_kind {
    AFD_CAUSE_NONE = 0, /* no cause named */
#define AFD_CAUSE_ENUM_(e, name, words, css) AFD_CAUSE_##e,
    AFD_CAUSE_KINDS(AFD_CAUSE_ENUM_)
#undef AFD_CAUSE_ENUM_
        AFD_CAUSE__COUNT
} afd_cause_kind;

const char *afd_cause_kind_name(afd_cause_kind k);  /* "lost_update"; NULL for NONE */
const char *afd_cause_kind_words(afd_cause_kind k); /* "lost update" */
const char *afd_cause_kind_css(afd_cause_kind k);
afd_cause_kind afd_cause_kind_parse(const char *name); /* AFD_CAUSE_NONE when unknown or NULL */

/* One access of one run, as the cause names it. */
typedef struct afd_cause_op {
    const char *run;   /* Borrowed static: "failing" or "passing" */
    char *task;        /* Owned */
    char *operation;   /* Owned */
    char *resource;    /* Owned */
    int write;
    uint32_t step, occurrence;
    int observed;      /* 0: inferred from the source */
    char *file;        /* Owned; NULL when the line is unknown */
    uint32_t line;
} afd_cause_op;

typedef struct afd_cause_race {
    char *resource; /* Owned */
    afd_cause_op ops[2];
} afd_cause_race;

/* One row of the evidence table: a claim, what was measured, how strong ("observed", ...). */
typedef struct afd_evidence_row {
    char *claim, *measured, *strength; /* Owned */
} afd_evidence_row;

typedef struct afd_evidence {
    afd_evidence_row *rows; /* Owned array */
    size_t n, cap;
} afd_evidence;

void afd_evidence_init(afd_evidence *e);
void afd_evidence_finish(afd_evidence *e); /* accepts NULL */
int afd_evidence_add(afd_evidence *e, const char *claim, const char *measured, const char *strength);

typedef struct afd_cause {
    afd_cause_kind kind;
    char *resource;   /* Owned; "" when none */
    char *await_site; /* Owned; NULL when none */
    char *summary;    /* Owned: the sentence */
    afd_cause_op *ops; /* Owned array */
    size_t n_ops;
    afd_cause_race *races; /* Owned array: the minimal failing run's racing pairs */
    size_t n_races;
    /* an order violation's early access (in the failing view) and the writer, for the fix */
    uint32_t early; /* access index, or AFD_NOPOS */
    char writer[256];
    int writer_writes;
    int writer_placed;
    uint8_t writer_sync;
    uint8_t writer_root;
    uint32_t writer_line;
    char writer_file[512], writer_name[128];
} afd_cause;

void afd_cause_init(afd_cause *c);
void afd_cause_finish(afd_cause *c); /* accepts NULL */

/* Every run the investigation saw (Borrowed arrays of n entries), for Ochiai and the blocking
 * predicate; and the longest blocking call of a failing natural run. */
typedef struct afd_cause_history {
    const afd_run_summary *sums;
    const uint8_t *blocked; /* per run: a blocking call of >= 1 ms or a slow step */
    const uint8_t *natural; /* per run: a natural run */
    size_t n;
    const char *block_site, *block_task; /* Borrowed; NULL when none */
    uint64_t block_ns;
    double slow_step_ms;
} afd_cause_history;

typedef struct afd_cause_input {
    const afd_view *fail; /* Borrowed */
    const afd_view *pass; /* Borrowed; NULL when no passing run is compared */
    afd_cause_history hist;
    uint64_t k_fail, n_fail, k_pass, n_pass; /* the replays: failed of run, passed of run */
    int window_found;
} afd_cause_input;

/* Decides the cause; appends its evidence rows to ev. Returns 0 or AFD_ENOMEM. */
int afd_cause_decide(const afd_cause_input *in, afd_cause *out, afd_evidence *ev);

#endif
