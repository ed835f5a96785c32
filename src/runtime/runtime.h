/* runtime.h -- shared declarations of the CPython extension affidavit._runtime.
 *
 * The extension holds the controlled loop's hot path (LoopCore, a C base class of the Python
 * ControlledLoop), the C Handle and TimerHandle type the loop schedules, the recorder that writes
 * a run's events into memory the fork server can read even after killing the child, and the fork
 * server itself. Module state (PEP 630) owns the types and cached objects; the recorder and the
 * schedule are process-wide C state, because a run is exactly one process. */
#ifndef AFD_RUNTIME_H
#define AFD_RUNTIME_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>

#include "afd.h"
#include "schedule.h"
#include "token.h"
#include "trace.h"

typedef struct afd_rt_state {
    PyTypeObject *handle_type;            /* Owned. */
    PyTypeObject *timer_type;             /* Owned. */
    PyTypeObject *loopcore_type;          /* Owned. */
    PyTypeObject *assertion_type;         /* Owned. */
    PyObject *task_types;                 /* Owned tuple: asyncio.Task and asyncio.tasks._PyTask. */
    PyObject *c_task_type;                /* Owned: _asyncio.Task, the common exact type. */
    PyObject *step_wrapper_type;          /* Owned or NULL: the type of C Task step callbacks, learned. */
    PyObject *stdlib_prefix;              /* Owned str: sysconfig's stdlib directory. */
    PyObject *user_roots;                 /* Owned tuple of str (each ending in '/'), or NULL: the
                                             directories of the collected tests (user_roots()). */
    PyObject *str_call_exception_handler; /* Owned interned names. */
    PyObject *str_get_coro;
    PyObject *str_cr_frame;
    PyObject *str_cr_await;
    PyObject *str_qualname;
    PyObject *str_dunder_call; /* ".__call__": a wrapper object's coroutine (labels.c). */
    PyObject *str_self;
    PyObject *str_stopping;
    PyObject *str_selector;
    PyObject *str_select;
    PyObject *str_process_events;
    PyObject *str_write_to_self;
    PyObject *str_read_from_self;
    PyObject *str_fd_to_key;
    PyObject *str_default_executor;
    PyObject *str_signal_handlers;
    PyObject *str_message, *str_exception, *str_handle;
} afd_rt_state;

/* The module state of the imported extension, found from a type defined in it. */
afd_rt_state *afd_rt_state_of_type(PyTypeObject *tp);
extern PyModuleDef afd_rt_module_def;

/* The least virtual time a step takes, whatever the schedule says. A real clock always advances
 * between two handles: on the machine this was measured on (tests/measure_step_floor.py, Python
 * 3.11) two trivial callbacks of one iteration start at least 290 ns apart, and two task steps at
 * least 1 us. Without a floor the zero schedule is a machine on which a step takes no time at
 * all, and code that waits for loop time to pass between steps (a rate limiter re-armed on the
 * elapsed time, a busy-wait on loop.time() across sleep(0)) never gets any: a run no real machine
 * can produce. The constant is fixed, not measured per run, so that a token replays the same
 * times on every machine. */
#define AFD_STEP_FLOOR_NS 250ULL
/* The least lateness of an idle wake-up, whatever the schedule says. No loop wakes at the very
 * nanosecond of its deadline (Linux's epoll rounds a timeout up to the millisecond): a program that
 * reads time.time() before `await asyncio.sleep(0.05)` and after it always sees more than 0.05 s
 * pass on stock asyncio. At the floor, the difference of two time.time() floats near 1.8e9 s
 * (whose unit in the last place is 238 ns) cannot round below the slept time. */
#define AFD_WAKE_FLOOR_NS 1000ULL
/* How far apart two timers may be and still fire in one batch of a late wake-up as a matter of
 * course: Linux's epoll rounds a timeout up to the millisecond. A later wake-up that overtakes a
 * timer further away is a stall past a time the program set (deadlines.c). */
#define AFD_WAKE_BATCH_NS 1000000ULL
/* A step whose cost brings the clock this close to such a timer has reached it: the floors of the
 * steps that follow it (AFD_STEP_FLOOR_NS each) carry the clock the rest of the way. */
#define AFD_REACH_NS 10000ULL
/* The virtual time the schedule has added to the run's clock so far: every step's cost beyond
 * AFD_STEP_FLOOR_NS and every idle wake-up's lateness beyond AFD_WAKE_FLOOR_NS. A timer's distance
 * as the program would see it without them is its distance now plus what was added since it was
 * armed (deadlines.c): a stall the schedule spreads over several steps is still one stall. */
extern uint64_t afd_injected_ns;
/* The virtual time one read of a real clock (time.monotonic, perf_counter, time) takes in a
 * controlled run: about what a Python call to it takes (clocks.c). */
#define AFD_CLOCK_READ_NS 100ULL

/* ---- Handles (handle.c) ---------------------------------------------------------------- */

/* A handle the controlled loop made: an instance of affidavit._runtime.Handle (a subclass of
 * asyncio.Handle) or TimerHandle (of asyncio.TimerHandle). asyncio's state lives in asyncio's own
 * __slots__, reached through the accessors below; the loop's bookkeeping in afd_handle_ext. */
typedef struct afd_handle {
    PyObject ob_base;
} afd_handle;

/* The loop's own fields of a handle, stored after asyncio's slots. */
typedef struct afd_handle_ext {
    double when;            /* Timers: the deadline in loop time (the _when slot holds the same float). */
    uint64_t seq;           /* Timers: creation order, the tie-breaker of equal deadlines. */
    uint32_t creator;       /* The recorder's id of the task whose step created this handle (0 none). */
    uint32_t origin;        /* 1 + the index of the step that created this handle (0 none). */
    uint32_t deadline;      /* Timers: the deadline's number in the run (deadlines.c), 0 if not one. */
    uint32_t handoff;       /* A task's wake-up scheduled by a hand-off (cancels.c): the HANDOFF's step,
                               as 1 + its index (0: outside any step). */
    uint32_t handoff_label; /* that HANDOFF's b */
    uint8_t handoff_flags;  /* bit 0: a HANDOFF scheduled this wake-up; bit 1: its future was cancelled */
    uint8_t timeout;        /* Timers: a timeout's (asyncio.timeout, wait_for, wait(timeout=)): it cancels
                               or releases a waiter when it fires */
    uint8_t is_timer;
    uint64_t mask;       /* Timers: the marked steps whose costs move the deadline (slots.c), 0 when none. */
    uint64_t injected;   /* Timers: afd_injected_ns when armed (deadlines.c). */
    uint32_t sleep_site; /* Timers: a sleep's wake-up armed more than a batch ahead: the user's site
                            that armed it (string id), else AFD_NOSTR (deadlines.c) */
    uint64_t sleep_ns;   /* that sleep's duration */
    uint32_t sleep_task; /* the task that armed it (the recorder's id, 0 outside a step) */
} afd_handle_ext;

#define AFD_HANDLE_MAX_SLOTS 16
/* Byte offsets of asyncio's handle slots in an instance, learned from the member descriptors of
 * asyncio.events.Handle and TimerHandle when the module loads (they differ between Pythons). */
typedef struct afd_handle_layout {
    Py_ssize_t callback, args, cancelled, context, loop, scheduled, when;
    Py_ssize_t slots[AFD_HANDLE_MAX_SLOTS]; /* every object slot: Handle's first, then TimerHandle's */
    size_t n_slots, n_handle_slots;
    Py_ssize_t ext; /* where afd_handle_ext starts, the same in both types */
} afd_handle_layout;
extern afd_handle_layout afd_hl;

static inline afd_handle_ext *afd_handle_ext_of(afd_handle *h)
{
    return (afd_handle_ext *)((char *)h + afd_hl.ext);
}

/* Borrowed; None once cancelled. */
PyObject *afd_handle_callback(afd_handle *h);
int afd_handle_cancelled(afd_handle *h);
/* Borrowed: the callback's arguments (a tuple). */
PyObject *afd_handle_args(afd_handle *h);
int afd_handle_scheduled(afd_handle *h);
void afd_handle_set_scheduled(afd_handle *h, int scheduled);

/* Creates the two handle types, subclasses of asyncio's, into *handle_type and *timer_type (new
 * references). Returns 0, or -1 with an exception set and both NULL. */
int afd_handle_types_new(PyObject *module, PyObject **handle_type, PyObject **timer_type);
/* Whether obj is a handle this module made (exact types: neither is subclassable). */
static inline int afd_handle_check(const afd_rt_state *st, PyObject *obj)
{
    return Py_TYPE(obj) == st->handle_type || Py_TYPE(obj) == st->timer_type;
}
/* Creates a handle; steals nothing. args may be NULL. A timer is due at `when` on the loop's own
 * clock and shows `shown` as its when() (that plus the run's clock offset, clocks.c). */
afd_handle *afd_handle_new(afd_rt_state *st, PyObject *callback, PyObject *args, PyObject *context,
                           PyObject *loop, int is_timer, double when, double shown);
/* Runs the handle's callback in its context, as asyncio.Handle._run does: SystemExit and
 * KeyboardInterrupt propagate (returns -1), any other exception goes to the loop's exception
 * handler (returns 0 unless that handler itself fails). */
int afd_handle_run(afd_rt_state *st, afd_handle *h);

/* ---- The loop's queues (loop_queues.c) ------------------------------------------------- */

typedef struct afd_loop_queues {
    PyObject **ready; /* Owned ring of owned handles: the ready queue, FIFO, never reordered. */
    size_t rhead, rcount, rcap;
    afd_handle **heap; /* Owned array of owned timers, a binary min-heap on (when, seq). */
    size_t hn, hcap;
} afd_loop_queues;

/* Appends a handle to the ready queue (steals h; -1 with MemoryError set, h released). */
int afd_lq_ready_push(afd_loop_queues *q, PyObject *h);
/* Takes the first handle of a non-empty ready queue (an owned reference). */
PyObject *afd_lq_ready_pop(afd_loop_queues *q);
/* The deadline of the heap's i-th timer (0: the earliest). */
static inline double afd_lq_when(const afd_loop_queues *q, size_t i)
{
    return afd_handle_ext_of(q->heap[i])->when;
}
/* Adds a timer (borrows h, takes a reference; marks it scheduled); -1 with MemoryError set. */
int afd_lq_push(afd_loop_queues *q, afd_handle *h);
/* Takes the earliest timer of a non-empty heap (the owned reference; marked not scheduled). */
afd_handle *afd_lq_pop(afd_loop_queues *q);
/* Drops cancelled timers as BaseEventLoop._run_once does: all of them, re-heaped, once the heap
 * holds over min_heap timers and more than half are cancelled (*cancelled counts them, reset
 * then); otherwise the cancelled ones at the top. */
void afd_lq_prune(afd_loop_queues *q, size_t *cancelled, size_t min_heap);
/* Releases every handle of both queues; their memory stays for reuse (afd_lq_free frees it). */
void afd_lq_drop(afd_loop_queues *q);
int afd_lq_traverse(afd_loop_queues *q, visitproc visit, void *arg);
PyObject *afd_lq_lists(afd_loop_queues *q); /* (ready handles in order, the heap): new lists */
void afd_lq_free(afd_loop_queues *q);

/* ---- Deadlines (deadlines.c) ------------------------------------------------------------ */

/* Classifies a timer just armed at loop time `now`: unless its callback wakes a sleeping task, it
 * is a deadline, numbered in h->deadline and recorded (AFD_EV_DEADLINE) with its duration and the
 * user's site that armed it. Never raises. */
void afd_deadline_note(afd_rt_state *st, afd_handle *h, double now);
/* The pending timers of a heap of n (borrowed) as seen at now_ns: the latest of any kind, the
 * latest that is not a deadline, the earliest deadline and its number in *earliest (0: none). */
/* Loop time in seconds as the smallest whole nanosecond at which the loop's own readiness test
 * (when < now + 1e-9) holds; 0 for a time not above 0, UINT64_MAX beyond what 64 bits hold. */
uint64_t afd_rt_ceil_ns(double seconds);
void afd_deadline_horizon(afd_handle *const *heap, size_t n, uint64_t now_ns, afd_horizon *out,
                          uint32_t *earliest);
/* Records AFD_EV_DEADLINE_LATE when a step of `task` that started at vstart and cost `cost` carried
 * the clock past the earliest pending deadline of h (number `earliest`). */
void afd_deadline_step_end(uint32_t task, uint64_t vstart, uint64_t cost, const afd_horizon *h,
                           uint32_t earliest);
/* The lateness of an idle wake-up at wake_ns under a schedule that keeps below deadlines: capped
 * just short of the earliest deadline still ahead of the wake-up (late unchanged otherwise). */
uint64_t afd_deadline_cap_lateness(afd_handle *const *heap, size_t n, uint64_t wake_ns, uint64_t late);
/* An idle wake-up due at wake_ns came `late` ns late: when that overtook a pending deadline, or any
 * timer more than AFD_WAKE_BATCH_NS after wake_ns, records it (AFD_EV_DEADLINE_LATE, task 0).
 * real: the clock went from wake_ns to wake_ns + late in a real wait (I/O, a thread), whose length
 * the schedule does not choose: a timer it reached counts only if the stall the schedule added
 * since that timer was armed is more than AFD_WAKE_BATCH_NS and at least the distance the wait had
 * left to it (the stall brought the timer within a real wait's reach: aiohttp's 301 s timeout,
 * 8 us away after one delayed step, passed by a loopback socket's wait); the event's flags say
 * AFD_LATE_REAL_WAIT. */
void afd_deadline_wake_late(afd_handle *const *heap, size_t n, uint64_t wake_ns, uint64_t late, int real);
/* A timer due at or before now_ns is about to fire: when it is a deadline the program armed, records
 * it (AFD_EV_DEADLINE_LATE with AFD_LATE_FIRED, a measurement), with AFD_LATE_BROUGHT_DUE when the
 * stalls the schedule added since it was armed are more than its lateness (without them it would
 * not be due yet): anyio's fail_after(1) fired by a step stalled 999 ms and the test's own 50 ms
 * sleep after it, which no step outlasted. Whether such a firing is a threshold the engine decides
 * against the zero schedule's run: a deadline a fast machine reaches too is the program's own
 * operation (timing.h). */
void afd_deadline_fired(afd_handle *h, uint64_t now_ns);
/* Forgets the deadlines numbered so far: a new recording numbers its own from 1. */
void afd_deadline_reset(void);
/* The site string id that armed deadline `number`, or AFD_NOSTR. */
uint32_t afd_deadline_site(uint32_t number);

/* ---- Cancellation and hand-offs (cancels.c) --------------------------------------------- */

/* Puts the recording Task.cancel and Task.uncancel in place and learns asyncio's timeout and
 * primitive functions (idempotent). Returns 0, or -1 with an exception set. */
int afd_cancel_install(afd_rt_state *st);
/* Numbers asyncio Tasks' hashes in a controlled run, so sets of tasks iterate alike in every
 * process replaying one schedule (taskhash.c). Idempotent; 0, or -1 with an exception set. */
int afd_taskhash_install(afd_rt_state *st);
/* Forgets every task's cancellation state: a new recording starts. */
void afd_cancel_reset(void);
/* Called by call_soon with the handle it made: when the callback is a task's wake-up carrying the
 * future that completed, records the hand-off (AFD_EV_HANDOFF) and marks the handle. Keeps any
 * pending exception. */
void afd_cancel_wakeup_scheduled(afd_rt_state *st, afd_handle *h, PyObject *cb, PyObject *cbargs);
/* Around one step of task id run from handle h (NULL: a handle of another kind): begin records,
 * right after the step's WAKE, a timeout expiring, the waiter of a hand-off resuming and a
 * cancellation delivered; end, before the step's STEP, whether the delivered CancelledError was
 * caught. Both keep any pending exception. */
void afd_cancel_step_begin(afd_rt_state *st, afd_handle *h, uint32_t id);
void afd_cancel_step_end(afd_rt_state *st, uint32_t id);
/* Whether a timer's callback is a timeout's: Timeout._on_timeout, or the _release_waiter of
 * wait_for (before 3.12) and wait(timeout=). */
int afd_cancel_is_timeout(PyObject *callback);
/* Whether the loop.time() read being made is asyncio's timeout machinery arming a timer within
 * the current step: asyncio.timeout() computing its deadline (time + delay, handed to call_at,
 * whose timer then carries the same clock a call_later's would), or Timeout.reschedule comparing
 * that deadline with a second read in the same step (both carry one clock: nothing a cost moves).
 * A reschedule in another step is the program's read, as is the program's own reading that gave it
 * a deadline; the one case missed is a constant absolute loop time (timeout_at(100.0)) in the step
 * of a timeout() call, which real code has no reason to write. */
int afd_cancel_timeout_read(void);

/* ---- Real clocks (clocks.c) ---------------------------------------------------------------- */

#define AFD_EPOCH_NS 1000000000000ULL /* virtual clocks start at t = 1000 s: never 0, never falsy */
/* The run's virtual clock: where the controlled loops of the run's thread have carried it. */
extern uint64_t afd_vclock_ns;
/* At a run's start (after the run's mode is set): the offsets of the real clocks, the thread. */
void afd_clock_run_begin(void);
/* 1 when the calling thread is the controlled run's own thread (its clocks read virtual time). */
/* How many real readings time.monotonic, perf_counter, time and their _ns forms gave this process
 * (templates.py: a fixture that read one would see the time of a later run's start as elapsed). */
uint64_t afd_clock_real_reads(void);
int afd_clock_on_run_thread(void);
/* A controlled loop begins on the run's thread: the real clocks read virtual time from now on. */
void afd_clock_engage(void);
/* A loop gave control up before any controlled step of the run (its class was swapped for the
 * project's): the clocks are real again, as if no controlled loop had begun; the next controlled
 * loop to iterate engages them anew. */
void afd_clock_disengage(void);
/* The caller's thread is not the one the run began on (a run has begun). */
int afd_clock_off_run_thread(void);
/* A controlled loop's clock moved to clock_ns; time.sleep outside a step slept ns. */
void afd_clock_advance_to(uint64_t clock_ns);
void afd_clock_slept(uint64_t ns);
/* What the program's clocks add to the virtual clock in this run (seconds, a multiple of 2^-9): a
 * controlled loop's time() and a timer's when() show it added, call_at() takes it off; 0 until a
 * controlled loop begins on the run's thread. */
double afd_clock_base_seconds(void);
/* Replaces time.monotonic, perf_counter, time and their _ns forms (idempotent). */
int afd_clock_install(void);

/* ---- Recorder (recorder.c) -------------------------------------------------------------- */

/* The process-wide schedule and mode of the current run. */
typedef struct afd_run_config {
    int configured;
    uint8_t mode; /* enum afd_mode */
    afd_schedule schedule;
    uint64_t max_steps; /* 0: unbounded */
    int trace_lines;    /* record the lines of user code each step runs */
    uint64_t mark_lo;   /* the slots of steps [mark_lo, mark_lo + mark_n) are measured (slots.c) */
    uint32_t mark_n;    /* 0: none; at most AFD_SLOTS_MAX */
} afd_run_config;
extern afd_run_config afd_rt_config;

/* Per-task bookkeeping, indexed by recorder task id (from 1). */
typedef struct afd_task_info {
    PyObject *weak; /* Owned weak reference to the task (NULL for callback pseudo-tasks). */
    PyObject *coro; /* Owned or NULL. */
    char *label;    /* Owned. */
    size_t label_len;
    uint64_t label_hash;
    uint32_t next_ordinal;
    uint32_t label_str; /* string-table id of the label */
} afd_task_info;

/* Starts recording into caller-provided memory (the fork server's shared mapping) or, when mem
 * is NULL, into a private mapping of `size` bytes, faulted in up front when `prefault` is set (an
 * explicit in-process recording: no page fault per 4 KiB of trace lands in the run being
 * measured). Resets every counter and table. */
int afd_rec_begin(void *mem, size_t size, int prefault);
/* Identifies the task (or plain callback) a handle's callback belongs to, registering a new task
 * on first sight. Returns the recorder id (>= 1) or 0 on error (exception set). */
uint32_t afd_rec_identify(afd_rt_state *st, PyObject *callback, uint32_t creator);
afd_task_info *afd_rec_task(uint32_t id);
/* Records one step of task id that ran from vstart for cost virtual ns and wall ns. */
void afd_rec_step(afd_rt_state *st, uint32_t id, uint32_t ordinal, uint64_t vstart, uint64_t cost,
                  uint64_t wall);
void afd_rec_event(uint8_t kind, uint8_t flags, uint32_t task, uint32_t a, uint32_t b, uint64_t vtime,
                   uint64_t cost);
/* The same with the event's wall field set (afd_rec_event records 0 there). */
void afd_rec_event_wall(uint8_t kind, uint8_t flags, uint32_t task, uint32_t a, uint32_t b, uint64_t vtime,
                        uint64_t cost, uint64_t wall);
/* Interns a Python str (or a C string when s is NULL) into the string table. */
uint32_t afd_rec_intern(PyObject *s, const char *cs);
void afd_rec_flag(uint32_t flag);
/* The AFD_TRACE_* flags of the run being recorded (0 when none is). */
uint32_t afd_rec_flags(void);
uint64_t afd_rec_steps(void);
/* The task whose step is running (0 when none) and the clock of the current loop. */
extern uint32_t afd_rec_current;
extern uint64_t afd_rec_now;
extern uint32_t afd_rec_loops;
/* 1 + the index of the step that is running (0 when none): handles remember it as their origin. */
extern uint32_t afd_rec_step_no;
/* Virtual time the running step spent in blocking calls (time.sleep), added to its cost. */
extern uint64_t afd_rec_extra_cost;

/* A synchronization object seen in this run (asyncio Lock, Event, Semaphore, Queue). */
typedef struct afd_sync_obj {
    PyObject *obj;  /* Owned: kept alive so its address is never reused within the run. */
    uint32_t label; /* string id of "Type@file:line" */
    uint32_t owner; /* Locks: the task holding it (0: free or unknown). */
} afd_sync_obj;

int afd_rec_active(void);
/* Records a synchronization event (enum afd_sync_kind) on obj for the running task. Keeps any
 * pending exception. */
void afd_rec_sync(afd_rt_state *st, PyObject *obj, int kind);
afd_sync_obj *afd_rec_sync_obj(uint32_t number);
uint32_t afd_rec_sync_count(void);
/* The number of a synchronization object (numbering it, as a SYNC event would, on first sight),
 * 0 when it has none. Keeps no exception. */
uint32_t afd_rec_sync_number(afd_rt_state *st, PyObject *obj);
/* The string id of the innermost user frame's "file:line", or AFD_NOSTR. */
uint32_t afd_rec_caller_site(afd_rt_state *st);
/* The innermost user frame's "file:line" as a new string, or NULL (an exception may be set). */
PyObject *afd_rec_caller_text(afd_rt_state *st);
/* Records AFD_EV_CHAIN for the running task right after an access event, when the innermost run
 * of user frames on the Python stack, from `start` (NULL: the current frame) outward, has two or
 * more frames. start is Borrowed. Keeps any pending exception. */
void afd_rec_chain_stack(afd_rt_state *st, PyFrameObject *start);
/* The recorder's id of a task object (registering it), 0 on failure (no exception left). */
uint32_t afd_rec_task_id(afd_rt_state *st, PyObject *task);

/* The recorder's memory layout, shared with the fork server's reader. */
typedef struct afd_shm_header {
    uint32_t magic;
    uint32_t result_ready; /* the child wrote its outcome */
    uint32_t outcome;
    uint32_t flags;
    uint64_t steps;
    uint64_t dropped;
    uint32_t n_events, cap_events;
    uint32_t n_strings;
    uint32_t failure_len;
    uint64_t strings_used, strings_cap;
    uint64_t events_off, strings_off, failure_off, failure_cap;
} afd_shm_header;
#define AFD_SHM_MAGIC 0x41464453u

/* Converts recorded memory into a trace (for the fork server, after the child is gone). */
int afd_rec_to_trace(const void *mem, size_t size, afd_trace *out);
/* Records the run's outcome and failure text into the recording memory. */
void afd_rec_result(uint32_t outcome, const char *failure, size_t len);

/* Python-facing functions of the recorder (module.c puts them in the method table). */
PyObject *afd_rt_op_event(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *afd_rt_steps(PyObject *self, PyObject *unused);
PyObject *afd_rt_events(PyObject *self, PyObject *unused);
PyObject *afd_rt_trace_info(PyObject *self, PyObject *unused);
PyObject *afd_rt_slots(PyObject *self, PyObject *unused);
PyObject *afd_rt_trace_digests(PyObject *self, PyObject *unused);

/* ---- Slot measurement (slots.c) --------------------------------------------------------- */

/* The most steps one run measures: one bit each of a 64-bit mask. */
#define AFD_SLOTS_MAX 64u

/* Forgets every step's measure: a new recording starts (afd_rec_begin). */
void afd_slots_reset(void);
/* Whether loops created now measure: a controlled run that asked for marks. A loop asks once, when
 * it starts; a loop that does not measure calls nothing below. */
int afd_slots_enabled(void);
/* At the end of the step with run-wide index `index` (afd_rec_steps() at its start) whose schedule
 * cost was `cost`: the bit the loop's clock gains (0 unless the step is marked). */
uint64_t afd_slots_step_end(uint64_t index, uint32_t task, uint32_t ordinal, uint64_t cost);
/* One iteration's comparisons at clock c with mask clock_mask: begin, then every timer popped as
 * expired in the order popped, then end with what the heap still holds. */
typedef struct afd_slot_batch {
    uint64_t clock_ns, clock_mask;
    int have_prev; /* the last uncancelled timer popped, for the order of consecutive ones */
    uint64_t prev_ceil, prev_seq, prev_mask;
    int prev_deadline; /* that timer is a deadline the program armed */
} afd_slot_batch;
void afd_slots_batch_begin(afd_slot_batch *b, uint64_t clock_ns, uint64_t clock_mask);
void afd_slots_popped(afd_slot_batch *b, afd_handle *h);
void afd_slots_batch_end(const afd_slot_batch *b, afd_handle *const *heap, size_t n);
/* The end of a step (the clock at clock_ns with clock_mask, the step's own bit included) whose
 * schedule watches deadlines (afd_deadline_step_end): its comparisons with the pending deadlines
 * of the heap. */
void afd_slots_step_deadlines(uint64_t clock_ns, uint64_t clock_mask, afd_handle *const *heap, size_t n);
/* An idle loop at clock_ns about to jump towards its heap top (to `due`, afd_rt_ceil_ns of its
 * deadline): the clock's mask after the jump. */
uint64_t afd_slots_idle(uint64_t clock_ns, uint64_t clock_mask, afd_handle *top, uint64_t due);
/* The loop waited in real time (a thread or a descriptor), its clock following. */
void afd_slots_real_wait(void);
/* Deadline `number` (deadlines.c) fired: a crossing of it is no bound (slots.c, candidate_at). */
void afd_slots_deadline_fired(uint32_t number);
/* A loop.time() call while the clock carries clock_mask. */
void afd_slots_time_read(uint64_t clock_mask);
/* Records one AFD_EV_SLOT per marked step that ran, in step order, once per recording: called
 * when the run's outcome is recorded. */
void afd_slots_record(void);

/* ---- Loop (loop.c, loop_running.c) ------------------------------------------------------ */
PyObject *afd_loopcore_type_spec_new(PyObject *module);
/* Replaces asyncio's _get_running_loop, get_running_loop and _set_running_loop (in asyncio and
 * asyncio.events) with versions that answer inside a controlled step without a system call. */
int afd_loop_install_running(void);
/* 1 when the calling thread is the one running a controlled loop's iteration (not, say, an
 * executor's worker thread while that iteration runs). */
int afd_loop_on_step_thread(void);
/* A read of a real clock (clocks.c) in a step: counted as a loop.time() read (slots.c). */
void afd_loop_note_time_read(void);
/* In a fresh fork-server child: forget the parent's running-loop facts, allow the fast answer. */
void afd_loop_fresh_process(void);
/* asyncio's debug mode (loop_debug.c), asked only of a loop in it: the checks of call_soon and
 * call_at (thread: _check_thread too), a handle's _source_traceback from the calling frame, and
 * around a step its _current_handle and the slow-callback warning (dt: the step's duration in the
 * loop's seconds, negative when it raised). */
int afd_loop_debug_check(PyObject *loop, PyObject *cb, const char *method, int thread);
int afd_loop_debug_traceback(PyObject *handle);
int afd_loop_debug_begin(PyObject *loop, PyObject *handle);
void afd_loop_debug_end(PyObject *loop, PyObject *handle, double dt);
/* The loop whose iteration runs on which thread (loop_running.c keeps it for the fast answer). */
typedef struct afd_loop_stepping {
    PyObject *loop; /* Borrowed, or NULL. */
    unsigned long thread;
} afd_loop_stepping;
/* Marks loop as running an iteration on the calling thread; returns the previous mark, which
 * afd_loop_step_end restores when the iteration ends (iterations may nest). */
afd_loop_stepping afd_loop_step_begin(PyObject *loop);
void afd_loop_step_end(afd_loop_stepping prev);

/* What the line tracer needs to know of a code object, decided once per code object. */
typedef struct afd_code_info {
    uint8_t user;                  /* the user's code: not the stdlib, site-packages or affidavit */
    uint8_t receiver;              /* first parameter: 1 `self`, 2 `cls`, 0 neither */
    uint32_t file;                 /* string id of the code's path, relative to the trace's base directory */
    const struct afd_pyscan *scan; /* the file's access summary (for local variables), or NULL */
} afd_code_info;
/* NULL on failure (no exception left). */
const afd_code_info *afd_rec_code_info(afd_rt_state *st, PyCodeObject *code);
/* The object number of a method's receiver, and in *label its label: "Store#0" (instances of one
 * type numbered in order of first sight) or the class's qualified name for `cls`. 0 on failure. */
uint32_t afd_rec_receiver(afd_rt_state *st, PyObject *obj, int is_cls, uint32_t *label);

/* ---- Where a run happens (context.c) ------------------------------------------------------ */
/* path as a trace shows it (a pointer into path): relative to its library directory when it is
 * a standard-library or site-packages file, else relative to the trace's base directory, else
 * path itself. scratch (len bytes, the caller's) is used when no base was set. */
const char *afd_rt_relative(const char *path, char *scratch, size_t len);
/* Takes the library directories from sysconfig.get_paths()'s dict (borrowed); 0. */
int afd_rt_set_library_dirs(PyObject *paths);
/* path relative to the library directory it lies in (a pointer into path), or NULL. */
const char *afd_rt_library_relative(const char *path);
/* library_path(path): the same for Python (the worker's failure texts), None outside them. */
PyObject *afd_rt_library_path(PyObject *self, PyObject *arg);

/* ---- Labels of the functions a user wrote (labels.c) ------------------------------------- */

/* The callable behind cb with functools.partial layers and bound methods taken off (a new
 * reference; cb itself, with a new reference, when there is nothing to take off). */
PyObject *afd_rt_callback_target(PyObject *cb);
/* The qualname a task of coro is labelled by: the coroutine's own, or, for a coroutine of an
 * async __call__ on an object that carries __wrapped__ (a caching decorator's wrapper), the
 * wrapped function's. A new reference, or NULL without an exception when coro has none. */
PyObject *afd_rt_coro_qualname(afd_rt_state *st, PyObject *coro);
/* set_context(base_dir, loop_note): the base directory of trace paths and what the worker knows
 * of who chose the event loop policy (may be ""). */
PyObject *afd_rt_set_context(PyObject *self, PyObject *args);
/* Called with every loop asyncio makes the running loop: one that is not a ControlledLoop marks
 * the run (AFD_TRACE_FOREIGN_LOOP) once, with its description. Keeps any pending exception. */
void afd_rt_note_running_loop(PyObject *loop);
/* The name of the thread that runs this (threading.current_thread().name), or NULL with no
 * exception set. */
PyObject *afd_rt_thread_name(void);
/* Whether a loop of the core's type keeps the core's clock and iteration (its class overrides
 * neither time() nor _run_once()): only such a loop is controlled (context.c). */
int afd_rt_loop_keeps_core(PyObject *loop);
/* Whether its class keeps the core's time(): one that does not tells its own time (looptime's fake
 * clock), which a loop that runs as asyncio's does reads wherever BaseEventLoop calls self.time(). */
int afd_rt_loop_keeps_time(PyObject *loop);

/* ---- Line tracer (tracer.c) ------------------------------------------------------------- */
/* Around one step of a run that traces lines: sets and clears the C trace function. */
void afd_tracer_step_begin(afd_rt_state *st);
void afd_tracer_step_end(void);

/* ---- Hooks on asyncio's primitives and blocking calls (hooks.c) ------------------------ */
PyObject *afd_rt_install_hooks(PyObject *self, PyObject *unused);
/* Installs the audit hook that flags a run touching what another copy of its test would share
 * (AFD_TRACE_SHARED, sharing.c). Idempotent. 0, or -1 with an exception set. */
int afd_sharing_install(void);
/* Timed waits of the run's thread on threading primitives move its clocks (waits.c). */
int afd_waits_install(void);
/* Names the worker's pytest base temporary directory, private to its runs (sharing.c). 0, or -1
 * with an exception set. */
int afd_sharing_private_root(PyObject *path);
/* fn(self, *args) for a vectorcall with self in front (a new reference, or NULL with an
 * exception): how a hook calls the original method it replaced. */
PyObject *afd_rt_call_with_self(PyObject *fn, PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                PyObject *kwnames);
/* Called by the controlled loop when no task can ever run again: records the wait-for edges of
 * the blocked tasks and flags the run as a deadlock. Returns 0 or -1 with an exception. */
int afd_hooks_record_deadlock(afd_rt_state *st, PyObject *loop);
/* 1 when threads other than the main one are alive (a real wait could then be woken). */
int afd_hooks_other_threads(void);
/* Whether a thread other than the caller is alive and working: anything but an executor's worker
 * waiting for work with none queued (threads progress in real time; the loop must not outrun
 * them). */
int afd_hooks_threads_working(void);

/* The time the calling thread waited for a CPU during a step (cpuwait.c): call _begin with the
 * monotonic time a step starts, _end with the time it ends and its wall time; _end returns the
 * nanoseconds of that wall time the thread spent waiting on a run queue (0 where unknown). */
void afd_cpuwait_step_begin(uint64_t now);
uint64_t afd_cpuwait_step_end(uint64_t now, uint64_t wall);

/* 1 when every descriptor registered in fd_to_key (a selector's map) can be written to only by this
 * process and nothing is on its way to any of them (quiet.c): an idle loop may jump its clock. */
int afd_fds_quiet(PyObject *fd_to_key);

/* ---- Fork server (forkserver.c) -------------------------------------------------------- */
PyObject *afd_rt_serve(PyObject *self, PyObject *args);

/* hugeheap.c: the worker's memory on transparent huge pages (see there). */
void afd_worker_heap_install(void);
int afd_worker_heap_installed(void);
long afd_worker_collapse(void);
PyObject *afd_rt_child_heap(PyObject *self, PyObject *unused);
PyObject *afd_rt_send_hello(PyObject *self, PyObject *args);

/* ---- Small compatibility helpers for Python 3.10 to 3.13 -------------------------------- */

/* Takes the raised exception (a new reference, normalized, with its traceback attached). */
static inline PyObject *afd_take_exception(void)
{
#if PY_VERSION_HEX >= 0x030C0000
    return PyErr_GetRaisedException();
#else
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
    PyErr_NormalizeException(&t, &v, &tb);
    if (v && tb)
        PyException_SetTraceback(v, tb);
    Py_XDECREF(t);
    Py_XDECREF(tb);
    return v;
#endif
}

/* Raises exc again (steals the reference); the inverse of afd_take_exception. */
static inline void afd_restore_exception(PyObject *exc)
{
#if PY_VERSION_HEX >= 0x030C0000
    PyErr_SetRaisedException(exc);
#else
    if (!exc)
        return;
    PyObject *tb = PyException_GetTraceback(exc);
    PyErr_Restore(Py_NewRef((PyObject *)Py_TYPE(exc)), exc, tb);
#endif
}

/* The identity hash CPython gives objects without __hash__. */
static inline Py_hash_t afd_hash_pointer(const void *p)
{
    size_t y = (size_t)p;
    y = (y >> 4) | (y << (8 * sizeof(void *) - 4));
    Py_hash_t x = (Py_hash_t)y;
    return x == -1 ? -2 : x;
}

/* Whether a weak reference still points at obj. */
static inline int afd_weak_is(PyObject *weak, PyObject *obj)
{
#if PY_VERSION_HEX >= 0x030D0000
    PyObject *r = NULL;
    if (PyWeakref_GetRef(weak, &r) < 0) {
        PyErr_Clear();
        return 0;
    }
    int same = r == obj;
    Py_XDECREF(r);
    return same;
#else
    return PyWeakref_GetObject(weak) == obj;
#endif
}

#endif
