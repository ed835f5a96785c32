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
#define AFD_CAUSE_KINDS(X)                                                                                   \
    X(LOST_UPDATE, "lost_update", "lost update", "lost-update")                                              \
    X(CHECK_THEN_ACT, "check_then_act", "check then act", "check-then-act")                                  \
    X(ORDER_VIOLATION, "order_violation", "order violation", "order-violation")                              \
    X(DEADLOCK, "deadlock", "deadlock", "deadlock")                                                          \
    X(LOCK_ORDER, "lock_order", "lock order", "lock-order")                                                  \
    X(STARVATION, "starvation", "starvation", "starvation")                                                  \
    X(CANCELLED_HANDOFF, "cancelled_handoff", "cancelled hand-off", "cancelled-handoff")                     \
    X(LOST_WAKEUP, "lost_wakeup", "lost wake-up", "lost-wakeup")                                             \
    X(CANCEL_SWALLOWED, "cancel_swallowed", "cancel swallowed", "cancel-swallowed")                          \
    X(CANCEL_ORDERING, "cancel_ordering", "cancel ordering", "cancel-ordering")                              \
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

/* X(ENUM, name in JSON) -- what an operation of the cause did. */
#define AFD_CAUSE_ACCESSES(X)                                                                                \
    X(READ, "read")                                                                                          \
    X(WRITE, "write")                                                                                        \
    X(WAIT, "wait")                                                                                          \
    X(BLOCK, "block")                                                                                        \
    X(LOCK, "lock")                                                                                          \
    X(HANDOFF, "handoff")                                                                                    \
    X(CANCEL, "cancel")

typedef enum afd_cause_access {
#define AFD_CAUSE_ACCESS_ENUM_(e, name) AFD_CAUSE_ACCESS_##e,
    AFD_CAUSE_ACCESSES(AFD_CAUSE_ACCESS_ENUM_)
#undef AFD_CAUSE_ACCESS_ENUM_
        AFD_CAUSE_ACCESS__COUNT
} afd_cause_access;

const char *afd_cause_access_name(afd_cause_access a); /* "read"; NULL when out of range */
/* Returns 0 and sets *out, or AFD_EINVAL for an unknown or NULL name. */
int afd_cause_access_parse(const char *name, afd_cause_access *out);
/* Whether an operation of this access carries `site` (BLOCK, HANDOFF, CANCEL). */
int afd_cause_access_has_site(afd_cause_access a);

/* One operation the cause names. Which fields an access carries:
 *   READ, WRITE  a run's access to shared state: every field but site;
 *   WAIT         a deadlocked task waiting for a lock: task, operation, resource;
 *   BLOCK        a blocking call inside a coroutine: task, operation, resource, site;
 *   LOCK         one lock of a lock-order cycle: operation, resource;
 *   HANDOFF      a future's result handed to a waiting task, or the waiter resuming from it:
 *                task, operation ("release", "set_result", "resume"), resource, site;
 *   CANCEL       a cancellation asked for, delivered or caught: task, operation ("cancel",
 *                "catch"), resource, site (the timeout's or the await's "file:line", or "").
 * A NULL string field is written out as "" where the access carries it. */
typedef struct afd_cause_op {
    afd_cause_access access;
    const char *run;           /* Borrowed static: "failing" or "passing" (READ and WRITE only) */
    char *task;                /* Owned: the task's label */
    char *operation;           /* Owned */
    char *resource;            /* Owned */
    int write;                 /* access == AFD_CAUSE_ACCESS_WRITE */
    uint32_t step, occurrence; /* the task's step ordinal in that run; the same access's count */
    int observed;              /* 0: inferred from the source */
    char *file;                /* Owned; NULL when the line is unknown */
    uint32_t line;
    char *site; /* Owned: BLOCK's, HANDOFF's or CANCEL's "file:line"; NULL when unknown */
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
    afd_evidence_row *rows; /* Owned array, in the order the rows were added */
    size_t n, cap;
    int err; /* Sticky: AFD_ENOMEM once a row could not be added (later rows are still tried) */
} afd_evidence;

void afd_evidence_init(afd_evidence *self);
void afd_evidence_finish(afd_evidence *self); /* accepts NULL */
/* Appends a row, copying the three strings (NULL is kept as ""). Returns 0 or AFD_ENOMEM. */
int afd_evidence_add(afd_evidence *self, const char *claim, const char *measured, const char *strength);

/* One user frame beneath the await a cause names (an await chain's frame). */
typedef struct afd_cause_frame {
    char *file; /* Owned */
    uint32_t line;
    char *function; /* Owned; "" when unknown */
} afd_cause_frame;

typedef struct afd_cause {
    afd_cause_kind kind;
    char *resource;   /* Owned; NULL or "" when none */
    char *await_site; /* Owned; NULL when none (never ""): the await in the outermost user frame
                         that explains the cause (see afd_cause_chain_await) */
    /* Owned array: the user frames beneath await_site, from the callee it awaits down to the
     * innermost user await, outermost first; NULL (n_await_chain 0) when await_site is itself
     * the innermost user frame or no chain was recorded. */
    afd_cause_frame *await_chain;
    size_t n_await_chain;
    char *summary;     /* Owned: the sentence; NULL only for AFD_CAUSE_NONE */
    afd_cause_op *ops; /* Owned array */
    size_t n_ops;
    afd_cause_race *races; /* Owned array: the minimal failing run's racing pairs */
    size_t n_races;
    /* An order violation's early access (in the failing view) and the other side's task label,
     * which the fix (AWAIT_TASK, EVENT_GATE) orders. */
    uint32_t early; /* access index, or AFD_NOPOS */
    char writer[256];
    int writer_writes;   /* the other access of the pair is a write too */
    int writer_placed;   /* the write's line is known (read off the source, or traced): */
    uint8_t writer_sync; /* an asyncio primitive's operation (a queue put, an event set) */
    uint8_t writer_root;
    uint32_t writer_line;
    char writer_file[512], writer_name[128];
} afd_cause;

void afd_cause_init(afd_cause *self);
void afd_cause_finish(afd_cause *self); /* accepts NULL; leaves self as afd_cause_init does */
/* Append a zeroed operation (or racing pair) and return it, or NULL when out of memory. The
 * result is Borrowed: self owns it and every string the caller stores in it (heap copies), and it
 * stays valid until the next append. */
afd_cause_op *afd_cause_add_op(afd_cause *self);
afd_cause_race *afd_cause_add_race(afd_cause *self);

/* Appends a frame (copies of file and function, NULL kept as ""). Returns 0 or AFD_ENOMEM. */
int afd_cause_add_frame(afd_cause *self, const char *file, uint32_t line, const char *function);

/* What afd_cause_chain_await found: the await to name and the words around it. */
typedef struct afd_cause_await {
    char site[600];    /* "file:line" of the await named, "" when the innermost frame stays named */
    char source[128];  /* the await's source line, trimmed ("await self.save()"), "" when unread */
    char common[128];  /* the function holding the accesses and the await, "" when unknown */
    char read_in[700]; /* "has_room() at c.py:5" when the first access is in a callee of common */
    char write_in[700];
    /* Where, in the common function, the two accesses happen: the 1-based lines of the statements
     * of common (in common_file) that perform them or call down to them -- the span a lock in the
     * lowest common async caller must cover (LOCK_CALLER). 0 when unknown; common_file "" then. */
    char common_file[512];
    uint32_t common_first_line, common_second_line;
    int common_async; /* common is an async function (its frame is a coroutine's) */
} afd_cause_await;

/* The await that explains why task T's access a and its later access b (another step; b may be
 * a itself, for an order violation's single access) were split, when chains were recorded: the
 * suspension `s` of a's step (for an order violation: the step x resumed from) ran through
 * several user frames, and the frame named is the lowest one common to that suspension and the
 * accesses' chains -- the function that performs both the read and the write and holds the await
 * -- rather than the innermost user await (a latency helper three frames down). Frames are
 * aligned from the outermost: a chain of one frame (no CHAIN event) is its task's outermost user
 * frame. Returns 1 with out filled and the frames beneath appended to c->await_chain; 0 when the
 * innermost frame is already that frame or nothing is known (out->site ""); AFD_ENOMEM. */
int afd_cause_chain_await(afd_cause *c, const afd_view *v, const afd_xaccess *a, const afd_xaccess *b,
                          const afd_xstep *s, afd_cause_await *out);

/* Writes the await named and the chain beneath it: "conn.py:41 `await self._trace_hook()`, via
 * io() at util.py:8". */
struct afd_buf;
void afd_cause_await_text(struct afd_buf *b, const afd_cause *c, const afd_cause_await *aw);

/* Every run the investigation saw (Borrowed arrays of n entries), for Ochiai and the blocking
 * predicate; and the longest blocking call of a failing natural run. */
typedef struct afd_cause_history {
    const afd_run_summary *sums;
    const uint8_t *blocked; /* per run: a blocking call of >= 1 ms or a slow step */
    const uint8_t *natural; /* per run: a natural run */
    size_t n;
    const char *block_site; /* Borrowed: "file:line"; NULL when none, "" when its line is unknown */
    const char *block_task; /* Borrowed: the task that made it */
    uint64_t block_ns;
    double slow_step_ms; /* --slow-step: a step of the failing run this long (wall) is evidence */
} afd_cause_history;

typedef struct afd_cause_input {
    const afd_view *fail; /* Borrowed */
    const afd_view *pass; /* Borrowed; NULL when no passing run is compared */
    afd_cause_history hist;
    uint64_t k_fail, n_fail, k_pass, n_pass; /* the replays: failed of run, passed of run */
    /* A collision window was found: the two runs differ in one delay and nothing else (not in the
     * values drawn from `random`), so an order that fails in one and passes in the other is
     * confirmed as the cause rather than only observed. */
    int window_found;
} afd_cause_input;

/* Decides the cause of in->fail into out (fresh from afd_cause_init: it is filled, not reset)
 * and appends its evidence rows to ev. Every string out holds is its own copy: out outlives the
 * views. Returns 0, or AFD_ENOMEM when a string or row could not be kept (out is then partial
 * but safe to finish). */
int afd_cause_decide(const afd_cause_input *in, afd_cause *out, afd_evidence *ev);
/* afd_cause_decide's starvation rule alone, for a failure every schedule shows (the verdict
 * "deterministic": no passing run to compare, in->pass is not read). When in->fail or the failing
 * natural runs show a blocking call or a slow step as that rule reads them, out names kind
 * starvation (the blocking task, how long, its line) and ev gets the rows about blocking; else out
 * stays as afd_cause_init left it and ev gets nothing. Returns 0 or AFD_ENOMEM. */
int afd_cause_decide_starvation(const afd_cause_input *in, afd_cause *out, afd_evidence *ev);

#endif
