/* trace.h -- what one run did, as a versioned binary record shared by the runtime and the engine.
 *
 * A trace is a header (format version, mode, outcome, token, Python version, hash seed, failure
 * text, counters), a string table, and fixed-size 40-byte event records. Events name strings by
 * index, so a label or a source location is stored once however many steps mention it.
 *
 * Encoding: "AFDT" | u32 version | u8 mode | u8 outcome | u16 0 | u32 flags | u64 steps |
 * u64 dropped | str token | str python | str hash_seed | str failure | u32 n_strings |
 * n_strings x str | u32 n_events | n_events x event | u32 crc32 (of every byte before it);
 * str is u32 length + bytes, an event is kind u8, flags u8, u16 0, task u32, a u32, b u32,
 * vtime u64, cost u64, wall u64, all little-endian.
 *
 * Decoding checks every bound: string indices inside the table (or AFD_NOSTR), known event kinds,
 * counts that fit the input, the checksum. A trace is bounded in size by its producer; when events
 * had to be dropped, `dropped` counts them and AFD_TRACE_TRUNCATED is set: truncation is recorded,
 * never silent. */
#ifndef AFD_TRACE_H
#define AFD_TRACE_H

#include "buf.h"

#include <stddef.h>
#include <stdint.h>

#define AFD_TRACE_VERSION 2
#define AFD_NOSTR 0xffffffffu
#define AFD_TRACE_MAX_STRING 65536
#define AFD_TRACE_MAX_FAILURE 65536

enum afd_mode { AFD_MODE_NATURAL = 0, AFD_MODE_CONTROLLED = 1 };
/* A run request's mode may carry this flag: record the lines of user code each step runs. */
#define AFD_MODE_TRACE_LINES 0x80u

enum afd_outcome {
    AFD_OUT_PASS = 0,
    AFD_OUT_FAIL = 1,       /* the test body failed (assertion or exception in the call phase) */
    AFD_OUT_ERROR = 2,      /* setup or teardown failed */
    AFD_OUT_SKIP = 3,       /* skipped or xfailed: neither a pass nor a failure */
    AFD_OUT_HANG = 4,       /* killed past its time budget */
    AFD_OUT_CRASH = 5,      /* killed by a signal or exited without a result */
    AFD_OUT_STEP_LIMIT = 6, /* stopped at the maximum number of steps: neither a pass nor a fail */
    AFD_OUT__COUNT
};
const char *afd_outcome_name(int outcome); /* "pass", "fail", ... (static) */

enum afd_trace_flags {
    AFD_TRACE_TRUNCATED = 1u << 0,    /* events were dropped at the size bound */
    AFD_TRACE_THREADS = 1u << 1,      /* a thread called back into the loop */
    AFD_TRACE_REAL_IO = 1u << 2,      /* a real file descriptor became ready */
    AFD_TRACE_WALL_CLOCK = 1u << 3,   /* reserved: the program read the wall clock */
    AFD_TRACE_NO_LOOP = 1u << 4,      /* no event loop ran a single step */
    AFD_TRACE_REAL_WAIT = 1u << 5,    /* the loop blocked on real time (I/O or threads pending) */
    AFD_TRACE_STEP_LIMIT = 1u << 6,   /* the run stopped at the maximum number of steps */
    AFD_TRACE_DEADLOCK = 1u << 7,     /* every task was blocked with nothing left to wake one:
                                         the run ended as a hang (WAITFOR events say who waited) */
    AFD_TRACE_LINES = 1u << 8,        /* the lines of user code were traced (LINE events) */
    AFD_TRACE_FOREIGN_LOOP = 1u << 9, /* an event loop that is not affidavit's ran (its own policy or
                                         factory): one UNCONTROLLED event, b = its description */
    AFD_TRACE_RANDOM = 1u << 10,      /* the program drew from the `random` module the schedule seeds
                                         (its state at the end of the run is not the seeded one) */
    AFD_TRACE_THREAD_RACE = 1u << 11, /* a timer fired, or a step's delay passed, while another thread
                                         was working: what the thread had done by then is its speed's */
    AFD_TRACE_SHARED = 1u << 12,      /* the run wrote a file, took a fixed port, locked a file or
                                         started a process outside its private places: another copy of
                                         the test would share it (sharing.c); one UNCONTROLLED event,
                                         b = what it did */
    AFD_TRACE_UNWOKEN = 1u << 13,     /* another thread queued a callback with call_soon, not
                                         call_soon_threadsafe, while the loop waited: stock asyncio's
                                         select does not see it (loop_wait.c); one UNCONTROLLED event,
                                         b = the thread's name */
    AFD_TRACE_STALL_CUT = 1u << 14    /* a step's delay, passing in real time beside a working thread,
                                         was cut at the most a delay passes so (loop.c) */
};
#define AFD_TRACE_UNCONTROLLED                                                                               \
    (AFD_TRACE_THREADS | AFD_TRACE_REAL_IO | AFD_TRACE_REAL_WAIT | AFD_TRACE_FOREIGN_LOOP)

enum afd_event_kind {
    AFD_EV_TASK = 1,           /* task created: task=id, a=parent id (0 none), b=label */
    AFD_EV_STEP = 2,           /* task=id, a=ordinal, b=suspension site "file:line" or AFD_NOSTR,
                                  vtime=start, cost=virtual cost, wall=wall-clock ns less the
                                  time the thread waited for a CPU (src/runtime/cpuwait.c) */
    AFD_EV_IDLE = 3,           /* nothing ready: vtime=clock before, cost=jump, a=lateness ns (clamped) */
    AFD_EV_OP_BEGIN = 4,       /* task, a=operation name, b=resource, flags=access (0 read, 1 write) */
    AFD_EV_OP_END = 5,         /* as OP_BEGIN; flags bit 1 set when the operation raised */
    AFD_EV_ASSERT_BEGIN = 6,   /* task, b=resource */
    AFD_EV_ASSERT_END = 7,     /* task, b=resource, flags=1 passed, 0 raised */
    AFD_EV_UNCONTROLLED = 8,   /* a = AFD_TRACE_* flag bit of the source, vtime */
    AFD_EV_LOOP = 9,           /* an event loop started running: a = loop number in the run */
    AFD_EV_WAKE = 10,          /* a step begins (its events follow, its STEP event closes it):
                                  task, a = 1 + index of the step that scheduled its handle (0: none,
                                  e.g. scheduled outside any step), b = 1 + this step's index,
                                  flags = AFD_WAKE_*, vtime = start */
    AFD_EV_SYNC = 11,          /* a synchronization primitive changed hands: task, flags = enum
                                  afd_sync_kind, a = object number in the run (from 1), b = the
                                  object's label ("Lock@test_x.py:12", its creation site) */
    AFD_EV_BLOCK = 12,         /* a blocking call inside a step: task, a = enum afd_block_kind,
                                  b = call site "file:line", cost = requested duration ns,
                                  flags AFD_BLOCK_VIRTUAL when it was counted, not slept */
    AFD_EV_WAITFOR = 13,       /* at a deadlock: task waits for a = object number (0: a task),
                                  held by task b (0: nobody) */
    AFD_EV_LINE = 14,          /* a line of user code ran in the step: task, a = file (string id of
                                  its path), b = line, vtime = the frame's receiver (self or cls) as
                                  an object number (0: none), cost = that object's label (string id
                                  "Store#0", or AFD_NOSTR) */
    AFD_EV_LOCAL = 15,         /* right after a LINE event: which object a local variable the line
                                  reaches into holds: task, a = the variable's name (string id),
                                  b = line, vtime = object number, cost = its label ("dict#0") */
    AFD_EV_DEADLINE = 16,      /* the program armed a deadline (a timer that is not a sleeping task's
                                  wake-up: a timeout, a TTL, a lease): task = the step's task,
                                  a = deadline number in the run (from 1), b = the user's site that
                                  armed it "file:line" or AFD_NOSTR, vtime = now, cost = duration ns */
    AFD_EV_DEADLINE_LATE = 17, /* a step's cost carried the clock past the earliest pending
                                deadline (or a wake-up overtook a timer: task 0, vtime = the
                                wake-up's time; flags AFD_LATE_REAL_WAIT: in a real wait, after a
                                stall brought the timer within its reach): task = the step's task,
                                a = the deadline's number (0: a sleep's wake-up), b = its site or
                                AFD_NOSTR, vtime = the step's start, cost = the deadline's duration
                                ns (a sleep's: the stall that overtook it) */
    /* Cancellation and hand-offs. A "step index" below is the one WAKE events number (b - 1). */
    AFD_EV_CANCEL = 18,           /* Task.cancel() was called: task = the step's task (the caller; 0
                                     outside any step), a = the target task's id, b = the message
                                     (string id) or AFD_NOSTR, vtime = now, flags = AFD_CANCEL_* */
    AFD_EV_CANCEL_DELIVERED = 19, /* CancelledError was thrown into a task's coroutine at the start of
                                     its step (right after the step's WAKE): task = the target,
                                     a = 1 + the step index of the CANCEL that caused it (0 unknown),
                                     b = the await it was delivered at "file:line" (as STEP's b),
                                     vtime = the step's start */
    AFD_EV_CANCEL_CAUGHT = 20,    /* the step that delivered a CancelledError ended without it
                                     propagating out of the task (caught, not re-raised): task,
                                     a = 1 + the step index of the CANCEL (0 unknown), b = where the
                                     task then suspended or AFD_NOSTR when it returned, flags = 1 it
                                     returned normally, 2 uncancel() was called in that step */
    AFD_EV_UNCANCEL = 21,         /* Task.uncancel() was called: task = the step's task, a = the
                                     target task's id, b = the call site "file:line" or AFD_NOSTR,
                                     vtime = now, cost = the target's cancelling() count after it */
    AFD_EV_TIMEOUT = 22,          /* a timeout expired and is about to cancel its task (a CANCEL with
                                     AFD_CANCEL_TIMEOUT follows): task = the task it cancels,
                                     a = the DEADLINE's number (0 unknown), b = the site that armed it
                                     or AFD_NOSTR, flags = AFD_TIMEOUT_*, vtime = now */
    AFD_EV_HANDOFF = 23,          /* a future a task awaits was completed, which schedules that task's
                                     wake-up: task = the step's task (the completer; 0 outside any
                                     step), a = the waiting task's id, b = the future's label (string
                                     id: "Future@file:line", its creation site, or the primitive it
                                     belongs to, "Lock@x.py:12"), flags = AFD_HANDOFF_*, vtime = now,
                                     cost = the primitive's object number (SYNC's a; 0 none) */
    AFD_EV_RESUME = 24,           /* the waiter of a HANDOFF ran its next step (recorded right after
                                     that step's WAKE): task = the waiter, a = 1 + the step index of
                                     the HANDOFF, b = the future's label, flags = 0 it took the result,
                                     AFD_RESUME_CANCELLED when CancelledError was thrown into it
                                     instead (cancelled after the hand-off: what it was handed is lost
                                     unless its code passes it on), vtime = the step's start */
    AFD_EV_CHAIN = 25,            /* the chain of user frames beneath the event just before it (a STEP's
                                     suspension, OP_BEGIN, SYNC, LINE, BLOCK, CANCEL_DELIVERED,
                                     HANDOFF): task, a = string id of the chain, b = its number of
                                     frames. The chain lists the user frames outermost first, one per
                                     line ('\n'), each "file:line function" (the line of the await or
                                     call in progress in that frame). Recorded only when the chain has
                                     two or more user frames: a lone frame is the event's own site. */
    AFD_EV_SLOT = 26,             /* a measured step's slot (the run was asked to measure steps with
                                     indices in a window; one SLOT per such step that ran, recorded
                                     at the end of the run in step order): task = the step's task,
                                     a = its ordinal, b = 1 + its step index, vtime = the cost the
                                     schedule gave it (ns, after the floor, before virtual blocking
                                     time), cost = its margin: the smallest increase of that cost
                                     that flips a time comparison the loop made afterwards
                                     (UINT64_MAX: none would), wall = the loop.time() calls made
                                     while the clock carried the step's cost. Measurement, not
                                     behaviour: afd_trace_digest and afd_trace_order_digest skip it.
                                     flags = AFD_SLOT_DEADLINE when the comparison that margin flips
                                     involves a timeout the program armed (asyncio.timeout, wait_for,
                                     wait(timeout=)). */
    AFD_EV__COUNT
};

/* SLOT flags: the slot's boundary moves a timeout the program armed (a delay past it outlasts the
 * timeout: a threshold, which the systematic search does not sweep across). CROSSING: every
 * comparison the step's cost moves (not only the one its margin flips) is a deadline the program
 * armed (a timeout, a TTL, a lease: any timer but a sleeping task's wake-up) left unexpired, so no
 * cost changes the run unless it carries the clock to that deadline (closure.h). */
enum { AFD_SLOT_DEADLINE = 1u << 0, AFD_SLOT_CROSSING = 1u << 1 };
/* AFD_EV_WAKE flags: the handle was a timer's; it was the loop's own read of its self-pipe (a thread
 * or a signal woke the loop: how many such reads a run has is the OS's coalescing, not the
 * program's). */
enum { AFD_WAKE_TIMER = 1u << 0, AFD_WAKE_SELF_PIPE = 1u << 1 };
/* AFD_EV_DEADLINE_LATE flags. */
/* REAL_WAIT: a real wait carried the clock past it after a stall had brought it within reach.
 * FIRED: a deadline fired (task 0, vtime = now), or with a = 0 a sleep's wake-up armed more than
 * 1 ms ahead (b its site, cost its duration: recorded the first time its site fires, and whenever
 * brought due); with BROUGHT_DUE, the schedule's stalls since it was
 * armed were more than its lateness: without them the clock would not have reached it yet. A FIRED
 * event is a measurement, as SLOT is: afd_trace_digest and afd_trace_order_digest skip it. */
enum { AFD_LATE_REAL_WAIT = 1u << 0, AFD_LATE_FIRED = 1u << 1, AFD_LATE_BROUGHT_DUE = 1u << 2 };

/* CANCEL flags */
enum {
    AFD_CANCEL_DONE = 1u << 0,    /* the target had already finished: cancel() returned False */
    AFD_CANCEL_TIMEOUT = 1u << 1, /* issued by an expiring timeout (wait_for, asyncio.timeout) */
    AFD_CANCEL_WOKEN = 1u << 2    /* the target was not waiting: its wake-up was already scheduled
                                     (a hand-off in flight), so it will resume into CancelledError */
};
/* TIMEOUT flags */
enum { AFD_TIMEOUT_WAIT_FOR = 1u << 0, AFD_TIMEOUT_CONTEXT = 1u << 1 /* asyncio.timeout / timeout_at */ };
/* HANDOFF flags. AFD_HANDOFF_NONE: the future's result was None, so the hand-off carried only the
 * wake-up itself ("you may go now"), no value for the waiter to own. */
enum {
    AFD_HANDOFF_EXCEPTION = 1u << 0,
    AFD_HANDOFF_CANCELLED = 1u << 1, /* the future was cancelled */
    AFD_HANDOFF_NONE = 1u << 2,
};
/* RESUME flags */
enum { AFD_RESUME_CANCELLED = 1u << 0 };

enum afd_sync_kind {
    AFD_SYNC_CREATE = 0, /* first sight of the object (b names it) */
    AFD_SYNC_LOCK_ACQUIRE = 1,
    AFD_SYNC_LOCK_RELEASE = 2,
    AFD_SYNC_EVENT_SET = 3,
    AFD_SYNC_EVENT_CLEAR = 4,
    AFD_SYNC_EVENT_OBSERVE = 5, /* the flag was read as set (Event.wait returned, is_set() true) */
    AFD_SYNC_QUEUE_PUT = 6,
    AFD_SYNC_QUEUE_GET = 7,
    AFD_SYNC_SEM_ACQUIRE = 8,
    AFD_SYNC_SEM_RELEASE = 9,
    AFD_SYNC_EVENT_CHECK = 10, /* the flag was read as not set */
    AFD_SYNC_QUEUE_CHECK = 11, /* Queue.empty() or qsize() was read */
    AFD_SYNC__COUNT
};
const char *afd_sync_kind_name(int kind); /* "acquire", "release", "set", ... (static) */

enum afd_block_kind { AFD_BLOCK_SLEEP = 1 /* time.sleep */ };
/* BLOCK event flags: the blocked time was added to the step's virtual cost, not slept. */
enum { AFD_BLOCK_VIRTUAL = 1 };

typedef struct afd_event {
    uint8_t kind;
    uint8_t flags;
    uint16_t pad; /* always 0 */
    uint32_t task;
    uint32_t a;
    uint32_t b;
    uint64_t vtime;
    uint64_t cost;
    uint64_t wall; /* wall-clock ns (a SLOT's clock reads); the only field excluded from the digest */
} afd_event;

typedef struct afd_trace {
    uint8_t mode;    /* enum afd_mode */
    uint8_t outcome; /* enum afd_outcome */
    uint32_t flags;  /* enum afd_trace_flags */
    uint64_t steps;  /* every step of the run, including those whose events were dropped */
    uint64_t dropped;
    char *token;     /* Owned, never NULL after init ("" for natural runs). */
    char *python;    /* Owned, never NULL after init. */
    char *hash_seed; /* Owned, never NULL after init. */
    char *failure;   /* Owned, never NULL after init: the failure text, "" on a pass. It may hold
                      * NUL bytes (a test's message is arbitrary text), so failure_len, not strlen,
                      * is its length; failure[failure_len] is always 0. */
    size_t failure_len;
    uint32_t n_strings;
    char **strings; /* Owned array of owned NUL-terminated strings. */
    uint32_t n_events;
    afd_event *events; /* Owned. */
    uint32_t cap_strings, cap_events;
} afd_trace;

/* Caller-allocated. init sets empty strings; finish frees everything (accepts NULL). */
int afd_trace_init(afd_trace *self);
void afd_trace_finish(afd_trace *self);
/* Replaces one of the header strings (token, python, hash_seed, failure) with a copy of s[0..len).
 * Only the failure may hold NUL bytes (its length goes to failure_len); the others are cut at the
 * first NUL by encode, as they are identifiers that never hold one. */
int afd_trace_set_str(afd_trace *self, char **field, const char *s, size_t len);
/* Appends a copy of s[0..len) to the string table; *id receives its index. No deduplication: the
 * producer interns. */
int afd_trace_add_string(afd_trace *self, const char *s, size_t len, uint32_t *id);
int afd_trace_add_events(afd_trace *self, const afd_event *ev, uint32_t n);
/* The string with index id, or "?" for AFD_NOSTR or an index out of range (never NULL). */
const char *afd_trace_string(const afd_trace *self, uint32_t id);
/* The string with index id when there is one and it is not empty, else NULL (borrowed): for a
 * place ("file:line") that a sentence names only when it is known. */
const char *afd_trace_known(const afd_trace *self, uint32_t id);

int afd_trace_encode(const afd_trace *self, afd_buf *out);
/* Decodes into self (initialized here; on error self is finished and empty). */
int afd_trace_decode(afd_trace *self, const uint8_t *data, size_t len);
/* A digest of everything deterministic in the trace: header fields and strings except python's
 * build string and the failure text, and every event field except wall. Two runs of one token on
 * one machine must have equal digests. */
uint64_t afd_trace_digest(const afd_trace *self);
/* A digest of what the run did in what order, without any time: the outcome, the string table,
 * and every event's kind, flags, task, a and b (IDLE events: the kind only, their a being a
 * lateness), never vtime, cost or wall, nor the token. SLOT events are skipped. Two runs whose
 * delays lie in one slot have equal order digests. */
uint64_t afd_trace_order_digest(const afd_trace *self);
/* One line describing an event for humans, appended to out, e.g.
 * "step finalize_report#0 #1 at t=1.250ms (suspended at test_x.py:14)". */
void afd_trace_format_event(const afd_trace *self, const afd_event *ev, afd_buf *out);
/* The label of a task id (from its AFD_EV_TASK event), or "?" (never NULL, borrowed). */
const char *afd_trace_task_label(const afd_trace *self, uint32_t task);
/* The same label, or NULL when the trace never named the task (a label reading "?" is a label). */
const char *afd_trace_task_known(const afd_trace *self, uint32_t task);
/* Whether task is a plain callback (call_soon, call_later) rather than an asyncio Task: its
 * AFD_EV_TASK event says so. */
int afd_trace_task_is_callback(const afd_trace *self, uint32_t task);
/* The number of steps pct spreads its change points over: the run's steps but the loop's reads of
 * its self-pipe (AFD_WAKE_SELF_PIPE), whose number a thread's timing decides; at least 1, at most
 * UINT32_MAX. */
uint32_t afd_trace_program_steps(const afd_trace *self);
/* Ids in a trace (task ids, step indices, object numbers) are handed out one per recorded (or
 * dropped) event at most: the bound above which an id comes from a corrupt producer and is
 * ignored, so that no table is sized by it. */
uint64_t afd_trace_id_bound(const afd_trace *self);

#endif
