/* explain.h -- a run in the user's terms: its steps, the accesses its tasks made to shared state,
 * and the relations between them that explain a failure.
 *
 * A view is built from one decoded trace. Its steps are the trace's STEP events in execution
 * order; the events between a step's WAKE and its STEP belong to it. Accesses come from explicit
 * operations (OP_END, where the operation's effect is visible: `affidavit.operation` and
 * `affidavit.access`) and from asyncio's
 * primitives (SYNC: an Event set is a write of the event, a check of it a read; a queue put or
 * get is a write of the queue, `empty()` a read). Locks and semaphores are not data: they order
 * steps (happens-before) and form the lock-order graph.
 *
 * An access is identified across runs by its key: the hash of (task label, operation name,
 * resource, occurrence), where occurrence counts the same (task, name, resource) earlier in the
 * run. Task labels are stable across runs ("deposit#1"), so the same key names the same access in
 * a failing and a passing run of one test.
 *
 * Every analysis here is bounded: beyond AFD_EXPLAIN_MAX_ACCESSES accesses the pairwise ones stop
 * and say so through their return value (AFD_EFULL), never silently. */
#ifndef AFD_EXPLAIN_H
#define AFD_EXPLAIN_H

#include "pyscan.h"
#include "trace.h"

#include <stddef.h>
#include <stdint.h>

#define AFD_EXPLAIN_MAX_ACCESSES 20000u
#define AFD_NOPOS 0xffffffffu

typedef struct afd_xstep {
    uint32_t task;    /* trace task id */
    uint32_t ordinal; /* the task's step number */
    uint32_t origin;  /* position of the step that scheduled this one, or AFD_NOPOS */
    uint32_t site;    /* string id of the await the task suspended at after this step, or AFD_NOSTR */
    uint32_t chain;   /* string id of the chain of user frames of that suspension (the CHAIN event
                         after the STEP), or AFD_NOSTR when it had one user frame (site) */
    uint64_t vstart, cost, wall;
    uint64_t blocked_ns; /* time spent in blocking calls (time.sleep) during the step */
    uint32_t block_site; /* string id of the first blocking call's line, or AFD_NOSTR */
} afd_xstep;

typedef struct afd_xaccess {
    uint32_t step;        /* position in the view's steps */
    uint32_t task;        /* trace task id */
    const char *label;    /* the task's label (borrowed from the trace) */
    const char *name;     /* operation name, or the primitive's action ("set", "put", ...) */
    const char *resource; /* borrowed */
    uint8_t write;
    uint8_t sync;          /* 1: derived from an asyncio primitive */
    uint8_t inferred;      /* 1: inferred from a traced line and the source (not observed) */
    uint8_t root;          /* inferred: enum afd_pyscan_root; 0 otherwise */
    uint8_t role;          /* inferred: the source's AFD_PYACC_TEST / AFD_PYACC_LITERAL bits; 0 otherwise */
    uint32_t line;         /* inferred: the line in `file` */
    const char *file;      /* inferred: the source path as the trace names it (borrowed); else NULL */
    const char *root_name; /* inferred: "BALANCE" for a global, the attribute ("sessions") for self */
    uint32_t occurrence;
    uint64_t key;
    uint32_t chain; /* string id of the chain of user frames that made it (the CHAIN event after
                       its SYNC, LINE or operation's OP_BEGIN), or AFD_NOSTR: one user frame */
} afd_xaccess;

typedef struct afd_view {
    const afd_trace *tr; /* Borrowed. */
    afd_xstep *steps;    /* Owned. */
    uint32_t n_steps;
    afd_xaccess *acc; /* Owned, in execution order. */
    uint32_t n_acc;
    uint32_t *edge_from, *edge_to; /* Owned: synchronization edges between step positions. */
    uint32_t n_edges, cap_edges;
    char **names; /* Owned: the resource names of inferred accesses (each stored once). */
    uint32_t n_names, cap_names;
} afd_view;

/* One user frame of an await chain, as a CHAIN event's string lists it. */
#define AFD_CHAIN_MAX_FRAMES 16
typedef struct afd_xframe {
    char file[512];
    uint32_t line;      /* the line of the await or call in progress in the frame */
    char function[128]; /* the code's name ("io"), "" when unknown */
} afd_xframe;

/* The frames of the chain with string id `chain` (outermost first) into out[0..cap); returns
 * their number, 0 for AFD_NOSTR or a string that is not a chain. A malformed frame line (no
 * "file:line function" shape) ends the chain there. */
size_t afd_view_chain(const afd_trace *tr, uint32_t chain, afd_xframe *out, size_t cap);
/* The frames of an access (AFD_CHAIN_MAX_FRAMES room in out): its chain, else its own line as its
 * task's only user frame (file "" when unknown, no function). Always at least 1. */
size_t afd_view_access_frames(const afd_view *v, const afd_xaccess *a, afd_xframe *out);

/* Sources of the files a traced run ran, each scanned once (pyscan) and kept. */
typedef struct afd_srcmap afd_srcmap;
afd_srcmap *afd_view_srcmap_new(void);
void afd_view_srcmap_free(afd_srcmap *m); /* Accepts NULL. */
/* The scan of a file (a path as the trace names it, relative to the working directory or
 * absolute), or NULL when it cannot be read. Borrowed; lives as long as the map. */
const afd_pyscan *afd_view_srcmap_get(afd_srcmap *m, const char *path);

/* A role bit of an inferred read (afd_xaccess.role, beside the AFD_PYACC_* bits): its value
 * leaves its function by `return` and a caller tests it (afd_view_caller_tests). */
enum { AFD_XROLE_CALLER_TESTS = 0x10 };

/* Whether the value an inferred read makes at `line` of its own file's scan `own` flows out of
 * its function to a caller that decides on it: the line is (part of) a `return` value, and going
 * outward through the read's chain (`chain`, the CHAIN string id of its LINE event) every caller's
 * frame line returns it again until one holds a condition or assigns it to a name a later
 * condition reads (pyscan.h, AFD_PYLINE_*). Line-level, a heuristic: the call in progress on a
 * marked line is taken for the one whose value the mark is about. 0 without a chain. */
int afd_view_caller_tests(afd_srcmap *src, const afd_trace *tr, const afd_pyscan *own, uint32_t line,
                          uint32_t chain);

int afd_view_build(afd_view *v, const afd_trace *tr);
/* As afd_view_build, and when the trace has LINE events and no explicit operation (explicit
 * annotations take precedence), the accesses the traced lines make according to the source:
 * `self.sessions[k] = v` run by a method of the first Store seen is a write of
 * "Store#0.sessions[*]"; a module global is named with its module, "test_x.REPORT[\"status\"]";
 * a local variable by the object it held on that line (LOCAL events): "dict#0[\"token\"]".
 * Such accesses have `inferred` set. */
int afd_view_build_src(afd_view *v, const afd_trace *tr, afd_srcmap *src);
void afd_view_finish(afd_view *v); /* Accepts NULL and a zeroed view. */

/* The position of the first step at which the two runs differ in (task label, ordinal), or the
 * shorter length when one is a prefix of the other (then equal lengths mean no divergence:
 * returns AFD_NOPOS). */
uint32_t afd_view_divergence(const afd_view *a, const afd_view *b);

/* Index of the access with this key in v, or AFD_NOPOS. Linear: views are small. */
uint32_t afd_view_find(const afd_view *v, uint64_t key);

/* Whether two resource names can denote overlapping state: equal, or one a part of the other at
 * a segment boundary ("REPORT" and "REPORT[\"status\"]", "Store#0.sessions" and
 * "Store#0.sessions[*]"), where an unknown key `[*]` matches any key. "Lock@x.py:2" and
 * "Lock@x.py:23" do not overlap. */
int afd_view_resources_overlap(const char *a, const char *b);

/* Two accesses conflict when they touch overlapping resources from two different tasks and at
 * least one writes. */
int afd_view_access_conflict(const afd_xaccess *x, const afd_xaccess *y);

/* A pair of accesses of the failing run, first (x) before second (y) there. */
typedef struct afd_xpair {
    uint32_t x, y;  /* access indices in the failing view (y: in the passing view when y_pass) */
    uint8_t y_pass; /* y ran only in the passing run: in the failing run x ran and y never did */
    double ochiai;  /* filled by the caller (afd_stats_ochiai over every run seen) */
    uint64_t fail_with, pass_with;
} afd_xpair;

/* Conflicting pairs ordered x before y in `fail` and y before x in `pass`: either both ran in both
 * runs, or y ran only in the passing run (before x there) and never in the failing one. Writes up
 * to cap pairs into out and their number into *n. */
int afd_view_inverted_pairs(const afd_view *fail, const afd_view *pass, afd_xpair *out, size_t cap,
                            size_t *n);

/* Races: conflicting pairs of `v` in steps that happen-before does not order (two writes through
 * a primitive, e.g. a queue's put and get, are atomic operations, not a race). Edges: the step
 * that scheduled a step; lock release -> next acquire; semaphore release -> next acquire; event
 * set -> every later observation of it set; queue put -> every later get. */
int afd_view_races(const afd_view *v, afd_xpair *out, size_t cap, size_t *n);

/* An atomicity violation (a lost update): task T read `resource` (access r) in one step, yielded
 * at `await_site`, and wrote it (access w) in a later step, while another task wrote it (access u)
 * in between. By structure, T's write follows its read with no re-read; where the source tells
 * the accesses' roles (inferred accesses, afd_xaccess.role), the kind follows what was lost
 * instead: such an atom whose two writes are the same assignment of a literal constant loses no
 * value and is a check-then-act, and a check-then-act's atom whose stale read sits in no
 * condition (a value computed with, then written back) is a lost update. Each atom is reported
 * by exactly one of afd_view_lost_updates and afd_view_stale_checks. */
typedef struct afd_xatom {
    uint32_t r, u, w;    /* access indices */
    uint32_t await_site; /* string id, or AFD_NOSTR */
} afd_xatom;
int afd_view_lost_updates(const afd_view *v, afd_xatom *out, size_t cap, size_t *n);

/* A check-then-act (an atomicity violation a lost update's test does not see, because the write
 * re-reads; or one reclassified by the roles above): task T read `resource` (access r, the check)
 * in one step and yielded at
 * `await_site`; another task wrote it (access u); then T, in a later step, read it again and wrote
 * it (access w) in that same step -- acting on what the check saw, which no longer holds. A read
 * whose own step also writes the resource is not a check (it acted at once). */
int afd_view_stale_checks(const afd_view *v, afd_xatom *out, size_t cap, size_t *n);

/* One decision made by two tasks (explain_stale.c): an inverted pair (x, y) of an order violation
 * that is a check-then-act. x is task T's read of the resource made while an `if` condition was
 * evaluated (in the function where T's chains part, or in a callee that condition calls), and T
 * then suspended inside that `if`'s body -- it decided on the state and was acting on the decision;
 * y is another task U's write of it, and U had made such a check of the state itself in an earlier
 * step, with y inside the body of its `if`. Both tasks took the branch; whoever acts first makes the
 * other's decision stale (a refresh token spent twice, an initialization run twice). The source
 * files are read where the chains name them. */
typedef struct afd_xtwin {
    size_t pair;    /* index of the pair in the pairs given */
    uint32_t check; /* U's own check: an access index in the view y belongs to */
} afd_xtwin;
/* The first of pairs[0..n) (pairs of afd_view_inverted_pairs over fail and pass; pass may be NULL
 * when no pair has y_pass) that is such a decision: 1 with *out filled, else 0. */
int afd_view_twin_check(const afd_view *fail, const afd_view *pass, const afd_xpair *pairs, size_t n,
                        afd_xtwin *out);

/* The lock-order graph's first cycle, as lock object numbers (SYNC a) in cycle order, with the
 * string ids of their labels. Returns 1 with *len set when there is a cycle, 0 when none. */
int afd_view_lock_cycle(const afd_view *v, uint32_t *locks, uint32_t *labels, size_t cap, size_t *len);

/* One nested lock acquisition seen in a run: `task`, holding lock object `outer` (taken at
 * outer_line), took lock object `inner` at inner_line, both lines of `file` (the last traced line
 * of user code of the acquiring step; 0 when the run traced no line there). */
typedef struct afd_lock_nesting {
    uint32_t task, outer, inner;
    const char *file; /* borrowed from the trace, or NULL */
    uint32_t outer_line, inner_line;
} afd_lock_nesting;
/* Every nested acquisition of the run, in order (at most cap; *n counts them all). */
int afd_view_lock_nestings(const afd_view *v, afd_lock_nesting *out, size_t cap, size_t *n);

/* The wait-for graph of a deadlocked run (WAITFOR events): its first cycle of task ids, and for
 * each task in it the lock object label (string id or AFD_NOSTR) it waits for. */
int afd_view_wait_cycle(const afd_view *v, uint32_t *tasks, uint32_t *labels, size_t cap, size_t *len);

/* The label string id of a synchronization object number (from its SYNC events), or AFD_NOSTR. */
uint32_t afd_view_object_label(const afd_view *v, uint32_t object);

/* A compact summary of a run that outlives its trace: whether it failed and, for each access
 * key, its position. Enough to tell, for any pair of keys, whether the first ran before the
 * second. */
typedef struct afd_run_summary {
    uint8_t failed;
    uint32_t n;
    uint64_t *keys; /* Owned, sorted. */
    uint32_t *pos;  /* Owned, parallel to keys. */
} afd_run_summary;
int afd_view_summary_build(afd_run_summary *s, const afd_view *v, int failed);
void afd_view_summary_finish(afd_run_summary *s); /* Accepts NULL and a zeroed summary. */
/* 1 when key x ran before key y in the run, 0 when after, -1 when either is missing. */
int afd_view_summary_order(const afd_run_summary *s, uint64_t x, uint64_t y);
/* 1 when key x ran in the run. */
int afd_view_summary_has(const afd_run_summary *s, uint64_t x);

#endif
