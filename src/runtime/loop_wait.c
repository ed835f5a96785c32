/* loop_wait.c -- what the controlled loop does when an iteration begins with nothing ready: poll
 * its descriptors, jump its virtual clock to the next timer (with the lateness the schedule gives
 * the wake-up), wait in real time while a real descriptor or a working thread can wake it, or end
 * the run as a hang when nothing can. The natural loop's wait is the stock loop's select. */
#include "loop_impl.h"

#include <signal.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>

/* Polls the selector with a timeout in seconds (negative: block), then dispatches its events. */
static int poll_selector(afd_loop *self, double timeout, int *had_events)
{
    afd_rt_state *st = loop_state(self);
    PyObject *t = timeout < 0 ? Py_NewRef(Py_None) : PyFloat_FromDouble(timeout);
    if (!t)
        return -1;
    PyObject *events = PyObject_CallMethodOneArg(self->selector, st->str_select, t);
    Py_DECREF(t);
    if (!events)
        return -1;
    Py_ssize_t n = PyObject_Length(events);
    if (n < 0)
        PyErr_Clear();
    *had_events = n > 0;
    PyObject *r = PyObject_CallMethodOneArg((PyObject *)self, st->str_process_events, events);
    Py_DECREF(events);
    if (!r)
        return -1;
    Py_DECREF(r);
    return 0;
}

/* Whether a file descriptor other than the loop's self-pipe is registered. */
static int fds_active(afd_loop *self)
{
    return self->fd_to_key && PyDict_Check(self->fd_to_key) && PyDict_GET_SIZE(self->fd_to_key) > 1;
}

/* Whether the loop handles signals (add_signal_handler): a signal sent before the loop went idle
 * is already in its self-pipe, as the stock loop's next select would see. */
static int handles_signals(afd_loop *self)
{
    PyObject *h = PyObject_GetAttr((PyObject *)self, loop_state(self)->str_signal_handlers);
    int yes = h && PyDict_Check(h) && PyDict_GET_SIZE(h) > 0;
    Py_XDECREF(h);
    PyErr_Clear();
    return yes;
}

/* Whether a signal is on its way by the process's own doing: a child process of this one is alive
 * or exited unreaped (its exit is a SIGCHLD; waitid with WNOWAIT reaps nothing), or the real-time
 * interval timer is armed (setitimer, alarm: a SIGALRM to come; the CPU-time timers do not run
 * while the loop waits). */
static int signal_to_come(void)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) == 0)
        return 1;
    struct itimerval t;
    return getitimer(ITIMER_REAL, &t) == 0 && (t.it_value.tv_sec || t.it_value.tv_usec);
}

/* Whether an idle loop must wait in real time: a real file descriptor is registered, the loop
 * handles signals while one is on its way (SafeChildWatcher's SIGCHLD at a child's exit, an
 * interval timer's SIGALRM: stock asyncio's select wakes on the byte the signal writes to its
 * self-pipe, in real time), or another
 * thread is working (threads progress in real time: a loop that jumped its clock past them would
 * see a run no machine makes; threads.c says which work). Only asked when nothing is ready. The
 * natural loop, which asks only to tell a hang, counts an executor as a thread that may call back. */
static int io_active(afd_loop *self, int fds)
{
    if (fds && fds_active(self))
        return 1;
    if (handles_signals(self) && signal_to_come())
        return 1;
    if (self->controlled) { /* an executor's threads call back only while they work */
        if (!afd_hooks_threads_working())
            return 0;
        afd_rec_flag(AFD_TRACE_THREADS);
        return 1;
    }
    PyObject *ex = PyObject_GetAttr((PyObject *)self, loop_state(self)->str_default_executor);
    if (!ex) {
        PyErr_Clear();
        return 0;
    }
    int active = ex != Py_None;
    Py_DECREF(ex);
    return active;
}

/* Nothing is ready, no timer is pending, and neither a descriptor nor a thread can wake the loop:
 * a real loop would block forever. Records who waits for whom and ends the run as a hang. */
static int deadlock(afd_loop *self)
{
    if (afd_hooks_record_deadlock(loop_state(self), (PyObject *)self) < 0)
        return -1;
    PyErr_SetString(PyExc_RuntimeError,
                    "affidavit: deadlock: every task is blocked and nothing can wake one");
    return -1;
}

/* Nothing real can wake the loop before its next timer: its clock jumps to the timer, with the
 * lateness the schedule gives the wake-up. */
static void idle_jump(afd_loop *self)
{
    uint64_t deadline = afd_rt_ceil_ns(afd_lq_when(&self->q, 0));
    if (deadline < self->clock_ns)
        deadline = self->clock_ns;
    uint64_t late =
        afd_schedule_lateness(&afd_rt_config.schedule, self->idle_wakes++, self->clock_ns, deadline);
    if (late < AFD_WAKE_FLOOR_NS)
        late = AFD_WAKE_FLOOR_NS;
    late = afd_deadline_cap_lateness(self->q.heap, self->q.hn, deadline, late);
    late = scaled(late, AFD_WAKE_FLOOR_NS);
    afd_deadline_wake_late(self->q.heap, self->q.hn, deadline, late, 0);
    if (late > AFD_WAKE_FLOOR_NS)
        afd_injected_ns += late - AFD_WAKE_FLOOR_NS;
    if (self->slots_live)
        self->clock_mask = afd_slots_idle(self->clock_ns, self->clock_mask, self->q.heap[0],
                                          afd_rt_ceil_ns(afd_lq_when(&self->q, 0)));
    uint64_t jump = deadline - self->clock_ns + late;
    afd_rec_event(AFD_EV_IDLE, 0, 0, late > UINT32_MAX ? UINT32_MAX : (uint32_t)late, 0, self->clock_ns,
                  jump);
    self->clock_ns += jump;
}

/* The loop waits with no timer, no descriptor and no thread at work, while a callback another thread
 * queued with call_soon waits in its ready queue: stock asyncio blocks in select() forever here. The
 * run ends as a hang, with who waits for whom. */
static int unwoken_hang(afd_loop *self)
{
    if (afd_hooks_record_deadlock(loop_state(self), (PyObject *)self) < 0)
        return -1;
    PyErr_SetString(PyExc_RuntimeError, "affidavit: deadlock: a thread queued a callback with call_soon, not "
                                        "call_soon_threadsafe, and nothing wakes the loop to run it");
    return -1;
}

/* Real waiting: I/O or threads are pending. Virtual time follows real time while the loop waits.
 * A wait sliced only because a thread works is one select() of stock asyncio's: it ends when a
 * descriptor wakes the loop (call_soon_threadsafe writes to its self-pipe) or its timer comes due,
 * never because another thread queued a callback with plain call_soon -- a future resolved or an
 * Event set from a thread -- which stock asyncio's select does not see (such a callback runs when
 * the loop wakes for something else, or never). Once every thread waits, what is left of the wait
 * passes on the virtual clock, as with no thread. */
static int real_wait(afd_loop *self, int io, int quiet)
{
    self->unwoken = 0;
    for (;;) {
        int had = 0;
        double timeout = -1.0;
        if (self->q.hn) {
            timeout = afd_lq_when(&self->q, 0) - loop_now(self);
            if (timeout < 0)
                timeout = 0;
            if (timeout > MAX_SELECT_TIMEOUT)
                timeout = MAX_SELECT_TIMEOUT;
        }
        /* Waiting only because a thread works: in slices (the first short, then doubling), so that once
         * every thread waits on the loop the rest passes on the virtual clock, as with no thread. */
        int sliced = 0;
        if (io && (quiet || !fds_active(self))) {
            self->thread_slice_ns = self->thread_slice_ns ? self->thread_slice_ns * 2 : REAL_SLICE_MIN_NS;
            if (self->thread_slice_ns > REAL_SLICE_MAX_NS)
                self->thread_slice_ns = REAL_SLICE_MAX_NS;
            double slice = (double)self->thread_slice_ns / 1e9;
            if (timeout < 0 || timeout > slice) {
                timeout = slice;
                sliced = 1;
            }
        }
        afd_rec_flag(AFD_TRACE_REAL_WAIT);
        uint64_t t0 = mono_ns();
        self->waiting = 1;
        int rc = poll_selector(self, timeout, &had);
        self->waiting = 0;
        if (rc < 0)
            return -1;
        uint64_t waited = mono_ns() - t0, before = self->clock_ns;
        afd_slots_real_wait();
        if (had) {
            afd_rec_flag(AFD_TRACE_REAL_IO);
            afd_rec_event(AFD_EV_UNCONTROLLED, 0, 0, AFD_TRACE_REAL_IO, AFD_NOSTR, self->clock_ns, waited);
            self->clock_ns += waited;
        } else if (sliced) {
            self->clock_ns += waited;
        } else if (self->q.hn) {
            uint64_t deadline = afd_rt_ceil_ns(afd_lq_when(&self->q, 0));
            if (deadline > self->clock_ns)
                self->clock_ns = deadline;
        } else {
            self->clock_ns += waited;
        }
        /* the wait, whole or a slice of it, brought a timer due while a thread still works: the timer
         * raced the thread, and what the thread had done by then is its speed's */
        if (self->q.hn && self->clock_ns >= afd_rt_ceil_ns(afd_lq_when(&self->q, 0)) &&
            afd_hooks_threads_working())
            afd_rec_flag(AFD_TRACE_THREAD_RACE);
        if (self->q.hn && self->clock_ns > before)
            afd_deadline_wake_late(self->q.heap, self->q.hn, before, self->clock_ns - before, 1);
        /* what is ready now another thread queued: with call_soon_threadsafe (its byte, written
         * after it queued, ends the wait) or, seen by loop.c, with plain call_soon */
        if (had || !sliced || !self->q.rcount || !self->unwoken)
            return 0;
        if (self->q.hn && self->clock_ns >= afd_rt_ceil_ns(afd_lq_when(&self->q, 0)))
            return 0; /* its timer is due: stock's select returns, and runs the queued callback first */
        if (afd_hooks_threads_working())
            continue;
        self->thread_slice_ns = 0;
        /* what a descriptor or the self-pipe got since the last slice (a thread may have written its
         * byte and stopped working since), and whether more can come */
        if (poll_selector(self, 0.0, &had) < 0)
            return -1;
        if (had)
            return 0;
        if (fds_active(self) && (!self->q.hn || !afd_fds_quiet(self->fd_to_key))) {
            quiet = 0; /* the rest of the wait is real, whole, as stock's select */
            continue;
        }
        if (!self->q.hn)
            return unwoken_hang(self);
        idle_jump(self);
        return 0;
    }
}

int afd_loop_controlled_wait(afd_loop *self, int stopping)
{
    int had = 0;
    if (self->q.rcount || stopping) /* poll real descriptors without waiting, as the stock loop does */
        return fds_active(self) ? poll_selector(self, 0.0, &had) : 0;
    /* a timer is pending and the descriptors' only writers are this process, with nothing on its
     * way (quiet.c): what arrived before the check is polled now, and then nothing can arrive
     * before the loop acts again, so it jumps as with no descriptor (the run still used real ones) */
    int quiet = 0;
    if (self->q.hn && fds_active(self) && afd_fds_quiet(self->fd_to_key)) {
        afd_rec_flag(AFD_TRACE_REAL_IO);
        if (poll_selector(self, 0.0, &had) < 0)
            return -1;
        if (had || self->q.rcount)
            return 0;
        quiet = 1;
    }
    int io = io_active(self, !quiet);
    if (!io)
        self->thread_slice_ns = 0;
    if (!io && handles_signals(self)) { /* what a signal wrote before the clock jumps (or a hang is told) */
        if (poll_selector(self, 0.0, &had) < 0)
            return -1;
        if (self->q.rcount)
            return 0;
    }
    if (self->q.hn && !io) {
        idle_jump(self);
        return 0;
    }
    /* Nothing is ready, no timer is pending, no descriptor or thread can wake the loop: the tasks
     * still pending wait on each other forever. A real loop would hang here; the run ends now as
     * a hang, with who waits for whom. */
    if (!self->q.hn && !io && !afd_hooks_other_threads())
        return deadlock(self);
    return real_wait(self, io, quiet);
}

/* Whether what an endless wait does is the project's to say: its class tells its own time or runs
 * its own iteration, or its selector's select() was replaced on the instance (looptime's, which
 * fast-forwards its clock and ends a test at its "end of time" instead of blocking). */
static int project_waits(afd_loop *self)
{
    if (!afd_rt_loop_keeps_core((PyObject *)self))
        return 1;
    PyObject *d = PyObject_GenericGetDict(self->selector, NULL);
    int patched = d && PyDict_Check(d) && PyDict_GetItemString(d, "select") != NULL;
    Py_XDECREF(d);
    PyErr_Clear();
    return patched;
}

int afd_loop_natural_wait(afd_loop *self, int stopping)
{
    double timeout = -1.0;
    if (self->q.rcount || stopping) {
        timeout = 0.0;
    } else if (self->q.hn) {
        double now;
        if (loop_sched_now(self, &now) < 0)
            return -1;
        timeout = afd_lq_when(&self->q, 0) - now;
        if (timeout < 0)
            timeout = 0;
        if (timeout > MAX_SELECT_TIMEOUT)
            timeout = MAX_SELECT_TIMEOUT;
    }
    /* Only inside an affidavit run: elsewhere the natural loop behaves exactly as the stock one. */
    if (timeout < 0 && afd_rt_config.configured && afd_rec_active() && !io_active(self, 1) &&
        !afd_hooks_other_threads() && !project_waits(self))
        return deadlock(self);
    int had = 0;
    return poll_selector(self, timeout, &had);
}
