/* loop.c -- LoopCore, the C half of the controlled event loop (the fast get_running_loop that
 * its steps answer is in loop_running.c).
 *
 * ControlledLoop (python/affidavit/loop.py) subclasses LoopCore and asyncio.SelectorEventLoop;
 * LoopCore replaces the parts of BaseEventLoop that run on every step: call_soon, call_later,
 * call_at, time and _run_once, with a C ready queue and a C timer heap.
 *
 * The invariant that makes every reported failure real: the ready queue is FIFO and is never
 * reordered. An iteration runs exactly the handles that were ready when it began; timers whose
 * deadline has passed at the start of an iteration move to the back of the queue in deadline
 * order; cancelled timers are dropped. This is asyncio's BaseEventLoop._run_once, step for step.
 * What the schedule controls is time: in controlled mode the clock is virtual, each step costs
 * what the schedule says, and an idle loop jumps to its next deadline plus a lateness the schedule
 * also decides. No system call is made per iteration unless a real file descriptor (other than
 * the loop's self-pipe) or an executor is in use. In natural mode the same code runs on the real
 * monotonic clock and polls the selector every iteration, exactly like the stock loop.
 *
 * Workload: a few hundred thousand iterations per second; every per-step path avoids Python
 * attribute lookups except the `_stopping` flag. */
#include "loop_impl.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#define MIN_SCHEDULED_TIMER_HANDLES 100

/* ---- scheduling methods ---- */

static int check_open(afd_loop *self)
{
    if (self->closed) {
        PyErr_SetString(PyExc_RuntimeError, "Event loop is closed");
        return -1;
    }
    return 0;
}

/* asyncio's checks of a scheduling call in debug mode (loop_debug.c); nothing otherwise. */
static int debug_checks(afd_loop *self, PyObject *cb, const char *method, int thread)
{
    return self->debug ? afd_loop_debug_check((PyObject *)self, cb, method, thread) : 0;
}

/* Parses (callback, *args, context=None) starting at args[start]. */
static int parse_cb(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, Py_ssize_t start,
                    const char *fname, PyObject **cb, PyObject **cbargs, PyObject **ctx)
{
    *ctx = NULL;
    if (kwnames) {
        Py_ssize_t nk = PyTuple_GET_SIZE(kwnames);
        for (Py_ssize_t i = 0; i < nk; i++) {
            PyObject *k = PyTuple_GET_ITEM(kwnames, i);
            if (PyUnicode_CompareWithASCIIString(k, "context") != 0) {
                PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'", fname, k);
                return -1;
            }
            *ctx = args[nargs + i];
        }
    }
    if (nargs <= start) {
        PyErr_Format(PyExc_TypeError, "%s() missing the callback argument", fname);
        return -1;
    }
    *cb = args[start];
    *cbargs = NULL;
    if (nargs > start + 1) {
        *cbargs = PyTuple_New(nargs - start - 1);
        if (!*cbargs)
            return -1;
        for (Py_ssize_t i = start + 1; i < nargs; i++)
            PyTuple_SET_ITEM(*cbargs, i - start - 1, Py_NewRef(args[i]));
    }
    return 0;
}

static PyObject *schedule_soon(afd_loop *self, PyObject *cb, PyObject *cbargs, PyObject *ctx)
{
    afd_rt_state *st = loop_state(self);
    PyObject *own_ctx = NULL;
    if (!ctx || ctx == Py_None) {
        own_ctx = PyContext_CopyCurrent();
        if (!own_ctx)
            return NULL;
        ctx = own_ctx;
    }
    afd_handle *h = afd_handle_new(st, cb, cbargs, ctx, (PyObject *)self, 0, 0.0, 0.0);
    Py_XDECREF(own_ctx);
    if (!h)
        return NULL;
    /* A new task schedules its first step with no arguments: numbering it now, not when it first
     * runs, gives tasks their ids in creation order, the order all_tasks() is replayed in. */
    if (!cbargs && afd_rec_active() && !afd_rec_identify(st, cb, afd_rec_current))
        PyErr_Clear();
    if (cbargs) /* a completed future wakes a task with call_soon(wakeup, future) */
        afd_cancel_wakeup_scheduled(st, h, cb, cbargs);
    Py_INCREF(h);
    if (afd_lq_ready_push(&self->q, (PyObject *)h) < 0) {
        Py_DECREF(h);
        return NULL;
    }
    if (self->debug && afd_loop_debug_traceback((PyObject *)h) < 0)
        Py_CLEAR(h); /* queued all the same, as a stock handle made before its traceback failed */
    return (PyObject *)h;
}

static PyObject *schedule_at(afd_loop *self, double when, PyObject *cb, PyObject *cbargs, PyObject *ctx)
{
    afd_rt_state *st = loop_state(self);
    PyObject *own_ctx = NULL;
    if (!ctx || ctx == Py_None) {
        own_ctx = PyContext_CopyCurrent();
        if (!own_ctx)
            return NULL;
        ctx = own_ctx;
    }
    double shown = self->controlled ? when + afd_clock_base_seconds() : when;
    afd_handle *h = afd_handle_new(st, cb, cbargs, ctx, (PyObject *)self, 1, when, shown);
    Py_XDECREF(own_ctx);
    if (!h)
        return NULL;
    afd_handle_ext_of(h)->seq = self->seq++;
    afd_handle_ext_of(h)->mask = self->clock_mask; /* a timer moves with the clock that armed it */
    afd_deadline_note(st, h, loop_now(self));
    if (afd_lq_push(&self->q, h) < 0) {
        Py_DECREF(h);
        return NULL;
    }
    if (self->debug && afd_loop_debug_traceback((PyObject *)h) < 0)
        Py_CLEAR(h);
    return (PyObject *)h;
}

/* Another thread calls call_soon while the loop's thread waits in select (a future resolved or an
 * Event set from a thread): the callback is queued and the loop is not woken, as on stock asyncio,
 * where only a descriptor or the next timer ends the wait. Recorded once a run, with the thread. */
static void unwoken(afd_loop *self)
{
    self->unwoken = 1;
    if (afd_rec_flags() & AFD_TRACE_UNWOKEN)
        return;
    PyObject *name = afd_rt_thread_name();
    PyObject *site = afd_rec_caller_text(loop_state(self));
    PyErr_Clear();
    PyObject *text = name && site ? PyUnicode_FromFormat("%U (at %U)", name, site) : Py_XNewRef(name);
    afd_rec_flag(AFD_TRACE_UNWOKEN);
    afd_rec_event(AFD_EV_UNCONTROLLED, 0, 0, AFD_TRACE_UNWOKEN, text ? afd_rec_intern(text, NULL) : AFD_NOSTR,
                  self->clock_ns, 0);
    Py_XDECREF(text);
    Py_XDECREF(site);
    Py_XDECREF(name);
    PyErr_Clear();
}

static PyObject *loop_call_soon(afd_loop *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw)
{
    PyObject *cb, *cbargs, *ctx;
    if (parse_cb(args, nargs, kw, 0, "call_soon", &cb, &cbargs, &ctx) < 0)
        return NULL;
    PyObject *r = check_open(self) < 0 || debug_checks(self, cb, "call_soon", 1) < 0
                      ? NULL
                      : schedule_soon(self, cb, cbargs, ctx);
    Py_XDECREF(cbargs);
    if (r && self->waiting && PyThread_get_thread_ident() != self->thread_id)
        unwoken(self);
    return r;
}

static PyObject *loop_call_soon_threadsafe(afd_loop *self, PyObject *const *args, Py_ssize_t nargs,
                                           PyObject *kw)
{
    PyObject *cb, *cbargs, *ctx;
    if (parse_cb(args, nargs, kw, 0, "call_soon_threadsafe", &cb, &cbargs, &ctx) < 0)
        return NULL;
    PyObject *r = check_open(self) < 0 || debug_checks(self, cb, "call_soon_threadsafe", 0) < 0
                      ? NULL
                      : schedule_soon(self, cb, cbargs, ctx);
    Py_XDECREF(cbargs);
    if (!r)
        return NULL;
    if (PyThread_get_thread_ident() != self->thread_id) {
        /* Another thread decides when this callback joins the queue: not ours to control. */
        afd_rec_flag(AFD_TRACE_THREADS);
        afd_rec_event(AFD_EV_UNCONTROLLED, 0, afd_rec_current, AFD_TRACE_THREADS, AFD_NOSTR,
                      self->controlled ? self->clock_ns : 0, 0);
    }
    PyObject *w = PyObject_CallMethodNoArgs((PyObject *)self, loop_state(self)->str_write_to_self);
    if (!w) {
        Py_DECREF(r);
        return NULL;
    }
    Py_DECREF(w);
    return r;
}

/* BaseEventLoop._call_soon(callback, args, context), used by call_soon_threadsafe in the stdlib. */
static PyObject *loop_call_soon_internal(afd_loop *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "_call_soon(callback, args, context)");
        return NULL;
    }
    PyObject *cbargs = args[1];
    if (cbargs == Py_None || (PyTuple_Check(cbargs) && PyTuple_GET_SIZE(cbargs) == 0))
        cbargs = NULL;
    else if (!PyTuple_Check(cbargs)) {
        PyErr_SetString(PyExc_TypeError, "_call_soon: args must be a tuple");
        return NULL;
    }
    if (check_open(self) < 0)
        return NULL;
    return schedule_soon(self, args[0], cbargs, args[2]);
}

static PyObject *loop_call_at(afd_loop *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw)
{
    PyObject *cb, *cbargs, *ctx;
    if (nargs < 1 || args[0] == Py_None) {
        PyErr_SetString(PyExc_TypeError, "when cannot be None");
        return NULL;
    }
    double when = PyFloat_AsDouble(args[0]);
    if (when == -1.0 && PyErr_Occurred())
        return NULL;
    if (parse_cb(args, nargs, kw, 1, "call_at", &cb, &cbargs, &ctx) < 0)
        return NULL;
    if (self->controlled) /* the program's time carries the run's offset: the loop's does not */
        when -= afd_clock_base_seconds();
    PyObject *r = check_open(self) < 0 || debug_checks(self, cb, "call_at", 1) < 0
                      ? NULL
                      : schedule_at(self, when, cb, cbargs, ctx);
    Py_XDECREF(cbargs);
    return r;
}

static PyObject *loop_call_later(afd_loop *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw)
{
    PyObject *cb, *cbargs, *ctx;
    if (nargs < 1 || args[0] == Py_None) {
        PyErr_SetString(PyExc_TypeError, "delay cannot be None");
        return NULL;
    }
    double delay = PyFloat_AsDouble(args[0]);
    if (delay == -1.0 && PyErr_Occurred())
        return NULL;
    if (parse_cb(args, nargs, kw, 1, "call_later", &cb, &cbargs, &ctx) < 0)
        return NULL;
    /* stock call_later is call_at: its checks name call_at */
    double now;
    PyObject *r =
        check_open(self) < 0 || debug_checks(self, cb, "call_at", 1) < 0 || loop_sched_now(self, &now) < 0
            ? NULL
            : schedule_at(self, now + delay, cb, cbargs, ctx);
    Py_XDECREF(cbargs);
    return r;
}

static PyObject *loop_time(afd_loop *self, PyObject *unused)
{
    if (self->clock_mask && !afd_cancel_timeout_read())
        afd_slots_time_read(self->clock_mask);
    /* time.monotonic() as the run's thread reads it: the same offset, the same rounding */
    return PyFloat_FromDouble(self->controlled ? afd_clock_base_seconds() + loop_now(self) : loop_now(self));
}

static PyObject *loop_add_callback(afd_loop *self, PyObject *handle)
{
    if (afd_lq_ready_push(&self->q, Py_NewRef(handle)) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *loop_timer_cancelled(afd_loop *self, PyObject *handle)
{
    afd_rt_state *st = loop_state(self);
    if (afd_handle_check(st, handle) && afd_handle_scheduled((afd_handle *)handle))
        self->timer_cancelled++;
    Py_RETURN_NONE;
}

/* ---- the iteration ---- */

static void prune_timers(afd_loop *self)
{
    afd_lq_prune(&self->q, &self->timer_cancelled, MIN_SCHEDULED_TIMER_HANDLES);
}

/* The pending timers for the schedule (deadlines.c): only a schedule that can delay a step needs
 * them, so the zero schedule's steps skip the pass over the heap. */
static int timer_horizon(afd_loop *self, afd_horizon *h, uint32_t *earliest)
{
    const afd_schedule *s = &afd_rt_config.schedule;
    *h = (afd_horizon){.deadline_ns = AFD_NO_DEADLINE, .threshold_ns = AFD_NO_DEADLINE};
    *earliest = 0;
    if (s->strategy == AFD_STRAT_ZERO && !s->n_delays)
        return 0;
    afd_deadline_horizon(self->q.heap, self->q.hn, self->clock_ns, h, earliest);
    return 1;
}

/* Whether cb is this loop's own read of its self-pipe: a step that exists because a thread or a
 * signal woke the loop, and whose count is how the OS coalesced those writes, not the program's. */
static int is_self_pipe_read(afd_loop *self, afd_rt_state *st, PyObject *cb)
{
    if (!PyMethod_Check(cb) || PyMethod_GET_SELF(cb) != (PyObject *)self)
        return 0;
    PyObject *name = PyObject_GetAttrString(PyMethod_GET_FUNCTION(cb), "__name__");
    int yes = name && PyUnicode_Check(name) && PyUnicode_Compare(name, st->str_read_from_self) == 0;
    Py_XDECREF(name);
    PyErr_Clear();
    return yes;
}

static int run_generic(afd_rt_state *st, PyObject *h)
{
    PyObject *c = PyObject_GetAttrString(h, "_cancelled");
    int cancelled = c ? PyObject_IsTrue(c) : -1;
    Py_XDECREF(c);
    if (cancelled < 0)
        return -1;
    if (cancelled)
        return 0;
    PyObject *r = PyObject_CallMethod(h, "_run", NULL);
    if (!r)
        return -1;
    Py_DECREF(r);
    return 0;
}

/* The clock now carries the step's cost: a marked step's bit joins its mask; a step whose
 * schedule watched deadlines compared its end with them. */
static void mark_step_end(afd_loop *self, uint64_t index, uint32_t id, uint32_t ordinal, uint64_t cost,
                          int timed)
{
    self->clock_mask |= afd_slots_step_end(index, id, ordinal, cost);
    if (self->clock_mask)
        self->slots_live = 1;
    if (timed && self->slots_live)
        afd_slots_step_deadlines(self->clock_ns, self->clock_mask, self->q.heap, self->q.hn);
}

/* A delay shorter than this is not waited for in real time (a step's own bookkeeping is longer). */
#define REAL_DELAY_MIN_NS 20000ULL
/* The longest a delay passes in real time while a thread works (realize_delay). */
#define REAL_STALL_MAX_NS 1000000000ULL

/* The schedule delays a step while another thread works: the delay passes in real time, GIL
 * released, so the thread progresses as much as it would on a machine where the step took that
 * long (a virtual delay would carry the clock past a thread that has not moved). Only while one
 * works: once every other thread is idle (an executor's waiting for work) or gone, nothing real is
 * left to overtake, and the rest of the delay passes on the virtual clock as any delay does (a
 * 60 s delay is not 60 s of real sleep because a thread was finishing when the step began).
 * A delay still unfinished after REAL_STALL_MAX_NS of real time with a thread still working ends
 * there: the step is delayed that long and no longer (a schedule that stalls a step close to a
 * 20 s guard while a thread works cost 20 s of real time a run, for a threshold no machine is
 * slow enough to cross; the delay is cut the same way in each replay of the schedule). Returns the
 * part of ns the step is not delayed by: 0, or what was cut. */
static uint64_t realize_delay(uint64_t ns)
{
    afd_rec_flag(AFD_TRACE_THREADS);
    afd_rec_flag(AFD_TRACE_THREAD_RACE);
    afd_rec_flag(AFD_TRACE_REAL_WAIT);
    uint64_t slice = REAL_SLICE_MIN_NS, done = 0;
    while (ns > 0) {
        uint64_t d = ns < slice ? ns : slice;
        struct timespec ts = {.tv_sec = (time_t)(d / 1000000000ULL), .tv_nsec = (long)(d % 1000000000ULL)};
        Py_BEGIN_ALLOW_THREADS while (nanosleep(&ts, &ts) < 0 && errno == EINTR);
        Py_END_ALLOW_THREADS ns -= d;
        done += d;
        if (slice < REAL_SLICE_MAX_NS)
            slice *= 2;
        if (ns && !afd_hooks_threads_working())
            return 0; /* the rest passes on the virtual clock */
        if (ns && done >= REAL_STALL_MAX_NS) {
            afd_rec_flag(AFD_TRACE_STALL_CUT);
            return ns;
        }
    }
    return 0;
}

static PyObject *step_limit_error(void)
{
    PyErr_SetString(PyExc_RuntimeError, "affidavit: step limit reached");
    return NULL;
}

static PyObject *run_once(afd_loop *self);

static afd_loop *iterating; /* Borrowed: the loop whose iteration runs (the innermost), or NULL. */

/* The loop runs as asyncio's loop does from here on, on the real clock. */
static void lose_control(afd_loop *self)
{
    self->controlled = 0;
    self->slots = 0;
    self->slots_live = 0;
    self->clock_mask = 0;
    self->thread_id = PyThread_get_thread_ident();
    self->mono_start_ns = mono_ns();
}

/* A controlled loop that runs on a thread other than the run's (a library's own loop, made on the
 * run's thread and run forever in a thread of its own: unsync, a sync-to-async portal) is that
 * thread's, which progresses in real time beside the run: it runs as asyncio's loop does, on the
 * real clock, from its first iteration there. A loop with timers already set on the virtual clock
 * keeps it (moving them would change when they fire). */
static void leave_control_off_run_thread(afd_loop *self)
{
    if (self->controlled && !self->q.hn && afd_clock_off_run_thread())
        lose_control(self);
}

/* The loop's first iteration: a class swapped in after the loop was made (looptime patches the
 * running loop's __class__) that tells its own time() or runs its own _run_once() is the project's
 * loop, which the core's clock would overrule: it runs as asyncio's loop does and is named
 * (context.c). The LOOP event that says whether it is controlled is recorded here, when the loop
 * begins (the one at its making says neither), so a loop made and never run (a fixture's, a plugin's
 * spare) makes no test explorable. */
static void announce(afd_loop *self)
{
    if (self->announced)
        return;
    self->announced = 1;
    self->own_time = !afd_rt_loop_keeps_time((PyObject *)self);
    if (self->controlled && !afd_rt_loop_keeps_core((PyObject *)self)) {
        lose_control(self);
        /* No controlled step ran yet: no controlled loop has begun, and the clocks stay real. */
        if (afd_rec_steps() == 0)
            afd_clock_disengage();
    } else if (self->controlled) {
        afd_clock_engage(); /* again, if a project's loop gave the clocks back (above) */
    }
    afd_rec_event(AFD_EV_LOOP, self->controlled, 0, self->loop_no, 0, self->controlled ? self->clock_ns : 0,
                  0);
}

static PyObject *loop_run_once(afd_loop *self, PyObject *unused)
{
    announce(self);
    leave_control_off_run_thread(self);
    afd_loop_stepping prev = afd_loop_step_begin((PyObject *)self);
    afd_loop *outer = iterating;
    iterating = self;
    PyObject *r = run_once(self);
    iterating = outer;
    afd_loop_step_end(prev);
    return r;
}

void afd_loop_note_time_read(void)
{
    if (iterating && iterating->clock_mask && afd_loop_on_step_thread() && !afd_cancel_timeout_read())
        afd_slots_time_read(iterating->clock_mask);
}

static PyObject *run_once(afd_loop *self)
{
    afd_rt_state *st = loop_state(self);
    prune_timers(self);
    int stopping = self->stopping;
    if ((self->controlled ? afd_loop_controlled_wait(self, stopping)
                          : afd_loop_natural_wait(self, stopping)) < 0)
        return NULL;
    if (self->controlled)
        afd_clock_advance_to(self->clock_ns);

    /* Timers whose deadline has passed join the back of the queue, in deadline order. */
    double end;
    if (loop_sched_now(self, &end) < 0)
        return NULL;
    end += 1e-9;
    afd_slot_batch sb;
    if (self->slots_live)
        afd_slots_batch_begin(&sb, self->clock_ns, self->clock_mask);
    while (self->q.hn && afd_lq_when(&self->q, 0) < end) {
        afd_handle *h = afd_lq_pop(&self->q);
        if (self->controlled)
            afd_deadline_fired(h, self->clock_ns);
        if (self->slots_live)
            afd_slots_popped(&sb, h);
        if (afd_lq_ready_push(&self->q, (PyObject *)h) < 0)
            return NULL;
    }
    if (self->slots_live)
        afd_slots_batch_end(&sb, self->q.heap, self->q.hn);

    /* Run exactly the handles ready now; those they schedule wait for the next iteration. */
    size_t ntodo = self->q.rcount;
    for (size_t i = 0; i < ntodo && self->q.rcount; i++) {
        PyObject *obj = afd_lq_ready_pop(&self->q);
        afd_handle *h = afd_handle_check(st, obj) ? (afd_handle *)obj : NULL;
        afd_handle_ext *hx = h ? afd_handle_ext_of(h) : NULL;
        if (h && afd_handle_cancelled(h)) {
            Py_DECREF(obj);
            continue;
        }
        PyObject *cb = h ? Py_NewRef(afd_handle_callback(h)) : PyObject_GetAttrString(obj, "_callback");
        if (!cb) {
            PyErr_Clear();
            cb = Py_NewRef(Py_None);
        }
        uint32_t id = afd_rec_identify(st, cb, hx ? hx->creator : 0);
        uint32_t wake_flags = (hx && hx->is_timer ? AFD_WAKE_TIMER : 0) |
                              (is_self_pipe_read(self, st, cb) ? AFD_WAKE_SELF_PIPE : 0);
        Py_DECREF(cb);
        if (!id)
            PyErr_Clear();
        afd_task_info *t = afd_rec_task(id);
        uint32_t ordinal = t ? t->next_ordinal++ : 0;
        uint64_t step_index = afd_rec_steps();
        uint64_t w0 = mono_ns();
        afd_cpuwait_step_begin(w0);
        uint64_t vstart = self->controlled ? self->clock_ns : w0 - self->mono_start_ns;
        afd_rec_current = id;
        afd_rec_now = vstart;
        afd_rec_step_no = (uint32_t)(step_index + 1);
        afd_rec_extra_cost = 0;
        afd_rec_event(AFD_EV_WAKE, wake_flags, id, hx ? hx->origin : 0, afd_rec_step_no, vstart, 0);
        afd_cancel_step_begin(st, h, id);
        if (afd_rt_config.trace_lines)
            afd_tracer_step_begin(st);
        double debug_t0 = self->debug ? loop_now(self) : 0.0;
        if (self->debug && afd_loop_debug_begin((PyObject *)self, obj) < 0)
            PyErr_WriteUnraisable((PyObject *)self);
        int rc = h ? afd_handle_run(st, h) : run_generic(st, obj);
        if (afd_rt_config.trace_lines)
            afd_tracer_step_end();
        afd_rec_current = 0;
        afd_rec_step_no = 0;
        uint64_t wall = mono_ns() - w0;
        uint64_t cost = wall;
        /* what the step took, less what the machine's other work kept it waiting for a CPU */
        uint64_t own = wall - afd_cpuwait_step_end(w0 + wall, wall);
        if (self->controlled) {
            /* the step may have made tasks and so moved the recorder's table: t is looked up again */
            t = afd_rec_task(id);
            afd_step_id sid = {
                .label = t ? t->label : "",
                .label_len = t ? t->label_len : 0,
                .label_hash = t ? t->label_hash : AFD_FNV_INIT,
                .ordinal = ordinal,
                .index = step_index,
            };
            afd_horizon hz;
            uint32_t earliest;
            int timed = timer_horizon(self, &hz, &earliest);
            cost = afd_schedule_step_cost_within(&afd_rt_config.schedule, &sid, &hz);
            if (cost < AFD_STEP_FLOOR_NS)
                cost = AFD_STEP_FLOOR_NS;
            cost = scaled(cost, AFD_STEP_FLOOR_NS);
            afd_injected_ns += cost - AFD_STEP_FLOOR_NS;
            uint64_t scheduled = cost;
            cost += afd_rec_extra_cost;
            if (cost > wall + REAL_DELAY_MIN_NS && afd_hooks_threads_working()) {
                uint64_t cut = realize_delay(cost - wall);
                /* never more than the schedule's part (a blocking call took real time) */
                if (cut > scheduled)
                    cut = scheduled;
                cost -= cut;
                scheduled -= cut;
            }
            if (timed)
                afd_deadline_step_end(id, vstart, cost, &hz, earliest);
            self->clock_ns += cost;
            afd_clock_advance_to(self->clock_ns);
            if (self->slots)
                mark_step_end(self, step_index, id, ordinal, scheduled, timed);
        }
        /* The recorder may call into Python; an exception from the step (SystemExit, say) must
         * survive it untouched. */
        PyObject *exc = rc < 0 ? afd_take_exception() : NULL;
        if (self->debug)
            afd_loop_debug_end((PyObject *)self, obj, rc < 0 ? -1.0 : loop_now(self) - debug_t0);
        afd_cancel_step_end(st, id);
        afd_rec_step(st, id, ordinal, vstart, cost, own);
        if (rc < 0)
            afd_restore_exception(exc);
        Py_DECREF(obj);
        if (rc < 0)
            return NULL;
        if (afd_rt_config.max_steps && afd_rec_steps() >= afd_rt_config.max_steps) {
            afd_rec_flag(AFD_TRACE_STEP_LIMIT);
            return step_limit_error();
        }
    }
    Py_RETURN_NONE;
}

/* _core_init(): binds the selector and the mode; called by ControlledLoop.__init__ after
 * BaseSelectorEventLoop.__init__. */
static PyObject *loop_core_init(afd_loop *self, PyObject *unused)
{
    afd_rt_state *st = loop_state(self);
    Py_CLEAR(self->selector);
    Py_CLEAR(self->fd_to_key);
    self->selector = PyObject_GetAttr((PyObject *)self, st->str_selector);
    if (!self->selector)
        return NULL;
    self->fd_to_key = PyObject_GetAttr(self->selector, st->str_fd_to_key);
    if (!self->fd_to_key)
        PyErr_Clear();
    /* A subclass with its own clock or iteration runs as asyncio's loop would, and is named (context.c). */
    self->controlled = afd_rt_config.configured && afd_rt_config.mode == AFD_MODE_CONTROLLED &&
                       afd_rt_loop_keeps_core((PyObject *)self);
    self->slots = self->controlled && afd_slots_enabled();
    self->slots_live = 0;
    self->clock_mask = 0;
    if (self->controlled)
        afd_clock_engage();
    self->own_time = !afd_rt_loop_keeps_time((PyObject *)self);
    /* A loop starts where the run's last one left the clock: time.monotonic() never goes back. */
    self->clock_ns = self->controlled && afd_clock_on_run_thread() && afd_vclock_ns > AFD_EPOCH_NS
                         ? afd_vclock_ns
                         : AFD_EPOCH_NS;
    self->mono_start_ns = mono_ns();
    self->thread_id = PyThread_get_thread_ident();
    self->loop_no = ++afd_rec_loops;
    self->announced = 0;
    /* made, not begun (flags 0): only announce's event, when it begins, says it is controlled */
    afd_rec_event(AFD_EV_LOOP, 0, 0, self->loop_no, 0, self->controlled ? self->clock_ns : 0, 0);
    Py_RETURN_NONE;
}

static void drop_queues(afd_loop *self)
{
    afd_lq_drop(&self->q);
}

static PyObject *loop_core_clear(afd_loop *self, PyObject *unused)
{
    self->closed = 1;
    drop_queues(self);
    Py_RETURN_NONE;
}

static PyObject *loop_core_stats(afd_loop *self, PyObject *unused)
{
    return Py_BuildValue("{s:n,s:n,s:K,s:O}", "ready", (Py_ssize_t)self->q.rcount, "timers",
                         (Py_ssize_t)self->q.hn, "clock_ns", (unsigned long long)self->clock_ns, "controlled",
                         self->controlled ? Py_True : Py_False);
}

/* _core_queues(): what asyncio's _ready and _scheduled would hold, copied (loop.py reads them). */
static PyObject *loop_core_queues(afd_loop *self, PyObject *unused)
{
    (void)unused;
    return afd_lq_lists(&self->q);
}

static int loop_traverse(afd_loop *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    int rc = afd_lq_traverse(&self->q, visit, arg);
    if (rc)
        return rc;
    Py_VISIT(self->selector);
    Py_VISIT(self->fd_to_key);
    return 0;
}

static int loop_clear(afd_loop *self)
{
    drop_queues(self);
    Py_CLEAR(self->selector);
    Py_CLEAR(self->fd_to_key);
    return 0;
}

static void loop_dealloc(afd_loop *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    loop_clear(self);
    afd_lq_free(&self->q);
    tp->tp_free(self);
    Py_DECREF(tp);
}

static PyObject *get_stopping(afd_loop *self, void *c)
{
    return PyBool_FromLong(self->stopping);
}

static int set_stopping(afd_loop *self, PyObject *v, void *c)
{
    int t = v ? PyObject_IsTrue(v) : 0;
    if (t < 0)
        return -1;
    self->stopping = (uint8_t)t;
    return 0;
}

/* A data descriptor wins over the instance dictionary, so BaseEventLoop's own assignments to
 * self._stopping (in stop() and run_forever()) land in the C field. */
static PyGetSetDef loop_getset[] = {
    {"_stopping", (getter)get_stopping, (setter)set_stopping, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* _core_set_debug(enabled): ControlledLoop.set_debug tells the core (loop_debug.c). */
static PyObject *loop_core_set_debug(afd_loop *self, PyObject *enabled)
{
    int on = PyObject_IsTrue(enabled);
    if (on < 0)
        return NULL;
    self->debug = (uint8_t)on;
    Py_RETURN_NONE;
}

static PyMethodDef loop_methods[] = {
    {"call_soon", (PyCFunction)(void (*)(void))loop_call_soon, METH_FASTCALL | METH_KEYWORDS,
     "call_soon(callback, *args, context=None)"},
    {"call_soon_threadsafe", (PyCFunction)(void (*)(void))loop_call_soon_threadsafe,
     METH_FASTCALL | METH_KEYWORDS, "call_soon_threadsafe(callback, *args, context=None)"},
    {"_call_soon", (PyCFunction)(void (*)(void))loop_call_soon_internal, METH_FASTCALL,
     "_call_soon(callback, args, context)"},
    {"call_later", (PyCFunction)(void (*)(void))loop_call_later, METH_FASTCALL | METH_KEYWORDS,
     "call_later(delay, callback, *args, context=None)"},
    {"call_at", (PyCFunction)(void (*)(void))loop_call_at, METH_FASTCALL | METH_KEYWORDS,
     "call_at(when, callback, *args, context=None)"},
    {"time", (PyCFunction)loop_time, METH_NOARGS, "The loop's clock: virtual when controlled."},
    {"_add_callback", (PyCFunction)loop_add_callback, METH_O, "Append a handle to the ready queue."},
    {"_timer_handle_cancelled", (PyCFunction)loop_timer_cancelled, METH_O, NULL},
    {"_run_once", (PyCFunction)loop_run_once, METH_NOARGS, "One iteration of the event loop."},
    {"_core_init", (PyCFunction)loop_core_init, METH_NOARGS, NULL},
    {"_core_clear", (PyCFunction)loop_core_clear, METH_NOARGS, NULL},
    {"_core_set_debug", (PyCFunction)loop_core_set_debug, METH_O, NULL},
    {"_core_stats", (PyCFunction)loop_core_stats, METH_NOARGS, NULL},
    {"_core_queues", (PyCFunction)loop_core_queues, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot loop_slots[] = {
    {Py_tp_dealloc, loop_dealloc},
    {Py_tp_traverse, loop_traverse},
    {Py_tp_clear, loop_clear},
    {Py_tp_methods, loop_methods},
    {Py_tp_getset, loop_getset},
    {Py_tp_new, PyType_GenericNew},
    {Py_tp_doc, "The C core of affidavit's controlled event loop (FIFO-faithful, virtual time)."},
    {0, NULL},
};

static PyType_Spec loop_spec = {
    .name = "affidavit._runtime.LoopCore",
    .basicsize = sizeof(afd_loop),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_BASETYPE,
    .slots = loop_slots,
};

PyObject *afd_loopcore_type_spec_new(PyObject *module)
{
    return PyType_FromModuleAndSpec(module, &loop_spec, NULL);
}
