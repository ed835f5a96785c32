/* cancels.c -- cancellation and future hand-offs, as the recorder sees them.
 *
 * What is recorded (trace.h, kinds CANCEL to RESUME) and where it is seen:
 * - Task.cancel() and Task.uncancel() are C methods of _asyncio.Task. The hooks replace the two
 *   entries of the type's dictionary with C method descriptors that record, then call the
 *   originals. Every caller reaches them through an attribute lookup (user code, gather, TaskGroup,
 *   Timeout, wait_for, the Task's own cancellation of the future it awaits), so no task factory
 *   and no Task subclass is needed: current_task(), isinstance checks, a user's own task factory
 *   and eager tasks all see the Task they always saw, and a step that awaits a future keeps the C
 *   Task's fast path.
 * - A hand-off is seen where a completed future schedules a waiting task's wake-up: every asyncio
 *   from 3.10 to 3.13 does it with loop.call_soon(task_wakeup, future), and call_soon is the
 *   controlled loop's own C method. A sleeping task's timer (deadlines.c tells it from a
 *   deadline), a task finishing (awaiting a Task is not a hand-off) and the future a Task.cancel()
 *   cancels on its way (that is the CANCEL) are not hand-offs.
 * - Delivery, resumption and catching are decided around the step call in the loop: a task with a
 *   cancellation pending, or woken by a hand-off, is looked at before its step (is CancelledError
 *   about to be thrown into it?) and, when it was, after it (did the error propagate?).
 * - Timeouts: asyncio.timeout (3.11+, and wait_for from 3.12, which is built on it) cancels from
 *   its timer's callback, Timeout._on_timeout; the older wait_for (3.10, 3.11) releases its waiter
 *   from a timer and cancels the awaited task in the waiter's next step, from _cancel_and_wait.
 *
 * Invariant: nothing is recorded outside a controlled run (or an in-process recording, for
 * tests); a natural run pays one test per cancel() and per wake-up; a controlled step costs a few
 * field tests unless a cancellation or a hand-off concerns it. Workload: a handful
 * of cancellations per test; hand-offs are as frequent as lock, queue and event waits. */
#include "recorder_impl.h"
#include "runtime.h"

#include <frameobject.h>
#include <string.h>

/* What the recorder keeps per task id about cancellations aimed at it. */
typedef struct cancel_task {
    uint32_t cancel_step; /* 1 + the step index of the latest CANCEL aimed at the task (0: none known) */
    uint32_t wf_deadline; /* the wait_for deadline that just expired for this waiter (0: none) */
    uint8_t pending;      /* a CANCEL was requested and its step has not come yet */
} cancel_task;

#define MAX_CANCEL_TASKS (1u << 22) /* ids past this get no cancellation bookkeeping */

static cancel_task *ctasks; /* Owned (PyMem_Raw), indexed by task id. */
static uint32_t cap_ctasks;

/* The step running now, as far as cancellation is concerned. */
static struct {
    uint32_t task;             /* the step's task id */
    uint32_t cancel_step;      /* the delivered CANCEL's a */
    uint32_t timeout_target;   /* the task a Timeout's timer cancels in this step (0: none) */
    uint32_t release_deadline; /* a wait_for timer releasing its waiter in this step: its number */
    uint8_t delivering;        /* CancelledError is thrown into the task in this step */
    uint8_t uncancelled;       /* uncancel() was called on it during the step */
    uint8_t sleep_wakeup;      /* the step is a sleeping task's timer: its set_result is no hand-off */
} cur;

static int in_task_cancel; /* > 0 while an original Task.cancel runs */

static PyObject *orig_cancel, *orig_uncancel; /* Owned: _asyncio.Task's own method descriptors. */
static PyObject *on_timeout_fn;               /* Owned or NULL: asyncio.timeouts.Timeout._on_timeout. */
static PyObject *release_waiter_fn;           /* Owned or NULL: asyncio.tasks._release_waiter. */
static PyObject *cancel_and_wait_code;        /* Owned or NULL: asyncio.tasks._cancel_and_wait's code. */
static PyObject *wait_for_code;               /* Owned or NULL: asyncio.tasks.wait_for's code. */
static PyObject *timeout_code;                /* Owned or NULL: asyncio.timeouts.timeout's code. */
static PyObject *reschedule_code;             /* Owned or NULL: asyncio.timeouts.Timeout.reschedule's. */
static uint32_t timeout_read_step;            /* afd_rec_step_no of timeout()'s last loop.time() read */
static PyObject *py_wakeup_fn;                /* Owned or NULL: asyncio.tasks._PyTask's __wakeup. */
#define MAX_WAKE_CODES 8
static PyObject *wake_codes[MAX_WAKE_CODES]; /* Owned: the primitives' methods that complete waiters. */
static size_t n_wake_codes;
static PyMethodDef *wakeup_ml; /* Borrowed: the C Task's task_wakeup method, learned on first sight. */
static PyObject *s_must_cancel, *s_fut_waiter, *s_state, *s_exception, *s_result, *s_done, *s_cancelled,
    *s_task, *s_cancelled_state, *s_cr_frame, *s_cr_await; /* Owned interned strings. */
static afd_rt_state *cancel_state;                         /* Borrowed: the module state of the hooks. */

void afd_cancel_reset(void)
{
    if (ctasks)
        memset(ctasks, 0, (size_t)cap_ctasks * sizeof *ctasks);
    memset(&cur, 0, sizeof cur);
}

/* The bookkeeping of task id, grown on demand when `create` is set; NULL when there is none. */
static cancel_task *ctask(uint32_t id, int create)
{
    if (!id || id >= MAX_CANCEL_TASKS)
        return NULL;
    if (id < cap_ctasks)
        return &ctasks[id];
    if (!create)
        return NULL;
    uint32_t ncap = cap_ctasks ? cap_ctasks : 64;
    while (ncap <= id)
        ncap *= 2;
    cancel_task *n = PyMem_RawRealloc(ctasks, (size_t)ncap * sizeof *n);
    if (!n)
        return NULL;
    memset(n + cap_ctasks, 0, (size_t)(ncap - cap_ctasks) * sizeof *n);
    ctasks = n;
    cap_ctasks = ncap;
    return &ctasks[id];
}

/* The task a live weak reference points at (a new reference), or NULL without an exception. */
static PyObject *task_object(uint32_t id)
{
    afd_task_info *t = afd_rec_task(id);
    if (!t || !t->weak)
        return NULL;
#if PY_VERSION_HEX >= 0x030D0000
    PyObject *obj = NULL;
    if (PyWeakref_GetRef(t->weak, &obj) < 0)
        PyErr_Clear();
    return obj;
#else
    PyObject *obj = PyWeakref_GetObject(t->weak); /* Borrowed. */
    return obj && obj != Py_None ? Py_NewRef(obj) : NULL;
#endif
}

/* The truth of obj.name, or -1 (no exception left) when it cannot be read. */
static int attr_truth(PyObject *obj, PyObject *name)
{
    PyObject *v = PyObject_GetAttr(obj, name);
    int t = v ? PyObject_IsTrue(v) : -1;
    Py_XDECREF(v);
    if (t < 0)
        PyErr_Clear();
    return t;
}

/* The truth of obj.name(), or -1 (no exception left). */
static int call_truth(PyObject *obj, PyObject *name)
{
    PyObject *v = PyObject_CallMethodNoArgs(obj, name);
    int t = v ? PyObject_IsTrue(v) : -1;
    Py_XDECREF(v);
    if (t < 0)
        PyErr_Clear();
    return t;
}

/* Whether a future is cancelled, read from its state without calling into its methods (reading a
 * future's exception through exception() would mark it retrieved and silence asyncio's warning). */
static int future_cancelled(PyObject *fut)
{
    PyObject *s = PyObject_GetAttr(fut, s_state);
    int c = s && PyUnicode_Check(s) && PyUnicode_Compare(s, s_cancelled_state) == 0;
    Py_XDECREF(s);
    PyErr_Clear();
    return c;
}

static uint8_t future_flags(PyObject *fut)
{
    if (future_cancelled(fut))
        return AFD_HANDOFF_CANCELLED;
    PyObject *e = PyObject_GetAttr(fut, s_exception);
    uint8_t f = e && e != Py_None ? AFD_HANDOFF_EXCEPTION : 0;
    Py_XDECREF(e);
    PyErr_Clear();
    if (!f) { /* a result of None hands over nothing but the wake-up */
        PyObject *r = PyObject_GetAttr(fut, s_result);
        if (r == Py_None)
            f = AFD_HANDOFF_NONE;
        Py_XDECREF(r);
        PyErr_Clear();
    }
    return f;
}

/* Whether obj is a Task (the C one, asyncio's Python one, or a subclass), by type alone: asked on
 * every wake-up, it runs no Python code. */
static int is_task_object(afd_rt_state *st, PyObject *obj)
{
    return PyObject_TypeCheck(obj, (PyTypeObject *)st->c_task_type) ||
           PyObject_TypeCheck(obj, (PyTypeObject *)PyTuple_GET_ITEM(st->task_types, 1));
}

/* Whether this run records cancellations: a controlled run, or an in-process recording nobody
 * configured (tests). A natural run, whose trace only says whether the test failed, pays nothing
 * here beyond this test. */
/* Only once afd_cancel_install has learned asyncio's names: a loop driven in-process without
 * install_hooks() records no cancellation or hand-off (the names are NULL until then). */
static int recording(void)
{
    return s_cr_await && afd_rec_active() &&
           (!afd_rt_config.configured || afd_rt_config.mode == AFD_MODE_CONTROLLED);
}

/* The task whose wake-up callback cb is (borrowed), or NULL. The C Task's wake-up is a builtin
 * method named task_wakeup bound to the task in every Python from 3.10 to 3.13; its method table
 * entry is remembered on first sight, after which the test is one pointer comparison. A Python
 * Task's is its bound __wakeup method (pytest-asyncio runs a test's own task as one on 3.10). */
static PyObject *wakeup_task(afd_rt_state *st, PyObject *cb)
{
    if (PyMethod_Check(cb)) /* a Task written in Python (asyncio's _PyTask and its subclasses) */
        return py_wakeup_fn && PyMethod_GET_FUNCTION(cb) == py_wakeup_fn ? PyMethod_GET_SELF(cb) : NULL;
    if (!PyCFunction_Check(cb))
        return NULL;
    PyMethodDef *ml = ((PyCFunctionObject *)cb)->m_ml;
    PyObject *self = PyCFunction_GET_SELF(cb); /* Borrowed. */
    if (ml != wakeup_ml) {
        if (wakeup_ml || strcmp(ml->ml_name, "task_wakeup") != 0 || !self || !is_task_object(st, self))
            return NULL;
        wakeup_ml = ml;
    }
    return self;
}

/* The innermost user frame of a suspended coroutine chain (a new reference, its code in *code),
 * or NULL: the await the task is suspended at, as the recorder's STEP events name it. The walk
 * stops at the first library frame below a user frame. */
static PyFrameObject *suspended_frame(afd_rt_state *st, PyObject *coro, PyCodeObject **code)
{
    PyFrameObject *best = NULL;
    PyCodeObject *best_code = NULL;
    PyObject *obj = Py_XNewRef(coro);
    for (int depth = 0; depth < 12 && obj && PyCoro_CheckExact(obj); depth++) {
        PyObject *frame = PyObject_GetAttr(obj, s_cr_frame);
        if (!frame || !PyFrame_Check(frame)) {
            Py_XDECREF(frame);
            break;
        }
        PyCodeObject *c = PyFrame_GetCode((PyFrameObject *)frame);
        int user = afd_rec_code_is_user(st, c);
        if (user) {
            Py_XSETREF(best, (PyFrameObject *)Py_NewRef(frame));
            Py_XSETREF(best_code, (PyCodeObject *)Py_NewRef(c));
        }
        Py_DECREF(c);
        Py_DECREF(frame);
        if (!user && best)
            break;
        PyObject *next = PyObject_GetAttr(obj, s_cr_await);
        Py_SETREF(obj, next && next != Py_None ? next : NULL);
        if (next == Py_None)
            Py_DECREF(next);
    }
    Py_XDECREF(obj);
    PyErr_Clear();
    *code = best_code;
    return best;
}

/* The "file:line" string id of the await task id is suspended at, or AFD_NOSTR, as the recorder's
 * STEP events name it; with_chain: its await chain follows as a CHAIN event when it runs through
 * two or more user frames (the event just recorded is the one the chain belongs to). */
static uint32_t suspension_site(afd_rt_state *st, uint32_t id, uint32_t *chain, uint32_t *n_frames)
{
    afd_task_info *t = afd_rec_task(id);
    *chain = AFD_NOSTR;
    *n_frames = 0;
    return t && t->coro ? afd_rec_suspension(st, t->coro, chain, n_frames) : AFD_NOSTR;
}

/* The first argument of a running method's frame, `self` (a new reference), or NULL. */
static PyObject *frame_self(PyFrameObject *f)
{
    PyObject *v;
#if PY_VERSION_HEX >= 0x030C0000
    v = PyFrame_GetVarString(f, "self");
#elif PY_VERSION_HEX >= 0x030B0000
    PyObject *locals = PyFrame_GetLocals(f);
    v = locals ? PyMapping_GetItemString(locals, "self") : NULL;
    Py_XDECREF(locals);
#else
    v = Py_XNewRef(f->f_localsplus[0]); /* the fast locals start with the arguments */
#endif
    if (!v)
        PyErr_Clear();
    return v;
}

/* The label of a hand-off to `waiter`: the primitive whose method is completing the future (the
 * running frame is Lock._wake_up_first, Queue._wakeup_next, Event.set ...), with its object
 * number in *number, else "Future@file:line" at the await the waiter is suspended at. */
static uint32_t handoff_label(afd_rt_state *st, uint32_t waiter, uint32_t *number)
{
    *number = 0;
    PyFrameObject *f = PyEval_GetFrame(); /* Borrowed. */
    PyCodeObject *code = f ? PyFrame_GetCode(f) : NULL;
    int primitive = 0;
    for (size_t i = 0; code && i < n_wake_codes; i++)
        primitive |= (PyObject *)code == wake_codes[i];
    Py_CLEAR(code);
    if (primitive) {
        PyObject *self = frame_self(f);
        *number = self ? afd_rec_sync_number(st, self) : 0;
        Py_XDECREF(self);
        afd_sync_obj *o = afd_rec_sync_obj(*number);
        if (o)
            return o->label;
        *number = 0;
    }
    afd_task_info *t = afd_rec_task(waiter);
    PyFrameObject *uf = t && t->coro ? suspended_frame(st, t->coro, &code) : NULL;
    PyObject *site = uf ? afd_rec_site_text(code, uf) : NULL;
    Py_XDECREF(code);
    Py_XDECREF(uf);
    PyObject *label = PyUnicode_FromFormat("Future@%U", site ? site : Py_None);
    Py_XDECREF(site);
    uint32_t id = label ? afd_rec_intern(label, NULL) : AFD_NOSTR;
    Py_XDECREF(label);
    PyErr_Clear();
    return id;
}

void afd_cancel_wakeup_scheduled(afd_rt_state *st, afd_handle *h, PyObject *cb, PyObject *cbargs)
{
    if (!cbargs || PyTuple_GET_SIZE(cbargs) != 1 || !recording())
        return;
    PyObject *task = wakeup_task(st, cb); /* Borrowed. */
    if (!task || cur.sleep_wakeup || in_task_cancel)
        return;
    PyObject *fut = PyTuple_GET_ITEM(cbargs, 0);
    if (is_task_object(st, fut))
        return;
    PyObject *exc = PyErr_Occurred() ? afd_take_exception() : NULL;
    uint32_t waiter = afd_rec_task_id(st, task);
    if (waiter) {
        uint8_t flags = future_flags(fut);
        uint32_t number;
        uint32_t label = handoff_label(st, waiter, &number);
        afd_rec_event(AFD_EV_HANDOFF, flags, afd_rec_current, waiter, label, afd_rec_now, number);
        afd_handle_ext *x = afd_handle_ext_of(h);
        x->handoff = afd_rec_step_no;
        x->handoff_label = label;
        x->handoff_flags = (uint8_t)(1u | ((flags & AFD_HANDOFF_CANCELLED) ? 2u : 0u));
        cancel_task *ct = cur.release_deadline ? ctask(waiter, 1) : NULL;
        if (ct)
            ct->wf_deadline = cur.release_deadline;
    }
    PyErr_Clear();
    if (exc)
        afd_restore_exception(exc);
}

/* A timer step: a sleeping task's wake-up, a Timeout's expiry (recorded now: its cancel follows in
 * this very step), or wait_for's release of its waiter (its cancel follows in the waiter's step). */
static void timer_step_begin(afd_rt_state *st, afd_handle *h, afd_handle_ext *hx)
{
    if (!hx->deadline) {
        cur.sleep_wakeup = 1;
        return;
    }
    PyObject *cb = afd_handle_callback(h); /* Borrowed. */
    if (release_waiter_fn && cb == release_waiter_fn) {
        cur.release_deadline = hx->deadline;
        return;
    }
    if (!on_timeout_fn || !PyMethod_Check(cb) || PyMethod_GET_FUNCTION(cb) != on_timeout_fn)
        return;
    PyObject *task = PyObject_GetAttr(PyMethod_GET_SELF(cb), s_task);
    uint32_t target = task && task != Py_None ? afd_rec_task_id(st, task) : 0;
    uint8_t flags = AFD_TIMEOUT_CONTEXT;
    afd_task_info *t = afd_rec_task(target);
    /* wait_for from 3.12 on is `async with timeout(...)` inside wait_for's own frame */
    PyObject *obj = t && t->coro ? Py_NewRef(t->coro) : NULL;
    for (int depth = 0; depth < 12 && obj && PyCoro_CheckExact(obj) && wait_for_code; depth++) {
        PyObject *frame = PyObject_GetAttr(obj, s_cr_frame);
        if (frame && PyFrame_Check(frame)) {
            PyCodeObject *c = PyFrame_GetCode((PyFrameObject *)frame);
            if ((PyObject *)c == wait_for_code)
                flags = AFD_TIMEOUT_WAIT_FOR;
            Py_DECREF(c);
        }
        Py_XDECREF(frame);
        PyObject *next = PyObject_GetAttr(obj, s_cr_await);
        Py_SETREF(obj, next);
    }
    Py_XDECREF(obj);
    Py_XDECREF(task);
    PyErr_Clear();
    if (!target)
        return;
    cur.timeout_target = target;
    afd_rec_event(AFD_EV_TIMEOUT, flags, target, hx->deadline, afd_deadline_site(hx->deadline), afd_rec_now,
                  0);
}

void afd_cancel_step_begin(afd_rt_state *st, afd_handle *h, uint32_t id)
{
    memset(&cur, 0, sizeof cur);
    cur.task = id;
    if (!h || !recording())
        return;
    afd_handle_ext *hx = afd_handle_ext_of(h);
    if (hx->is_timer)
        timer_step_begin(st, h, hx);
    cancel_task *ct = ctask(id, 0);
    int pending = ct && ct->pending, handed = hx->handoff_flags & 1;
    if (!pending && !handed)
        return;
    PyObject *exc = PyErr_Occurred() ? afd_take_exception() : NULL;
    int thrown = (hx->handoff_flags & 2) != 0;
    PyObject *task = pending || thrown ? task_object(id) : NULL;
    if (task && pending && !thrown) {
        /* Task.cancel() either cancelled the future the task awaits (its wake-up carries it) or,
         * when there was none to cancel, set _must_cancel for the task's next step. */
        PyObject *args = afd_handle_args(h); /* Borrowed. */
        thrown = attr_truth(task, s_must_cancel) > 0 ||
                 (wakeup_task(st, afd_handle_callback(h)) == task && args && PyTuple_Check(args) &&
                  PyTuple_GET_SIZE(args) == 1 && future_cancelled(PyTuple_GET_ITEM(args, 0)));
    }
    if (handed)
        afd_rec_event(AFD_EV_RESUME, thrown ? AFD_RESUME_CANCELLED : 0, id, hx->handoff, hx->handoff_label,
                      afd_rec_now, 0);
    if (thrown && task) {
        cur.delivering = 1;
        cur.cancel_step = pending ? ct->cancel_step : 0;
        uint32_t chain, n_frames;
        uint32_t site = suspension_site(st, id, &chain, &n_frames);
        afd_rec_event(AFD_EV_CANCEL_DELIVERED, 0, id, cur.cancel_step, site, afd_rec_now, 0);
        if (chain != AFD_NOSTR)
            afd_rec_event(AFD_EV_CHAIN, 0, id, chain, n_frames, afd_rec_now, 0);
    }
    if (ct)
        ct->pending = 0;
    Py_XDECREF(task);
    PyErr_Clear();
    if (exc)
        afd_restore_exception(exc);
}

void afd_cancel_step_end(afd_rt_state *st, uint32_t id)
{
    cancel_task *ct = ctask(id, 0);
    if (ct)
        ct->wf_deadline = 0; /* wait_for cancels in the step right after its timer, or not at all */
    if (!cur.delivering || cur.task != id) {
        memset(&cur, 0, sizeof cur);
        return;
    }
    PyObject *task = task_object(id);
    int done = task ? call_truth(task, s_done) : -1;
    int cancelled = done > 0 ? call_truth(task, s_cancelled) : 0;
    uint8_t flags = cur.uncancelled ? 2 : 0;
    uint32_t where = AFD_NOSTR;
    if (done > 0 && cancelled == 0) {
        PyObject *e = PyObject_GetAttr(task, s_exception);
        if (e == Py_None)
            flags |= 1;
        Py_XDECREF(e);
        PyErr_Clear();
    } else if (done == 0) {
        uint32_t chain, n_frames;
        where = suspension_site(st, id, &chain, &n_frames);
    }
    if (done >= 0 && cancelled == 0)
        afd_rec_event(AFD_EV_CANCEL_CAUGHT, flags, id, cur.cancel_step, where, afd_rec_now, 0);
    Py_XDECREF(task);
    memset(&cur, 0, sizeof cur);
}

/* The message argument of cancel(msg=None) (borrowed), or NULL. */
static PyObject *cancel_message(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    if (nargs >= 1)
        return args[0];
    Py_ssize_t nk = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t i = 0; i < nk; i++)
        if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, i), "msg") == 0)
            return args[nargs + i];
    return NULL;
}

/* Whether the running Python frame is asyncio's _cancel_and_wait (wait_for up to 3.11). */
static int called_from_cancel_and_wait(void)
{
    PyFrameObject *f = PyEval_GetFrame(); /* Borrowed. */
    if (!f || !cancel_and_wait_code)
        return 0;
    PyCodeObject *code = PyFrame_GetCode(f);
    int r = (PyObject *)code == cancel_and_wait_code;
    Py_DECREF(code);
    return r;
}

/* Records a CANCEL of task by the running step, before the original cancel runs (a Task it
 * awaits is cancelled in turn from inside it, and is recorded after it). */
static void record_cancel(afd_rt_state *st, PyObject *task, PyObject *msg)
{
    uint32_t target = afd_rec_task_id(st, task);
    if (!target)
        return;
    int done = call_truth(task, s_done);
    uint8_t flags = done > 0 ? AFD_CANCEL_DONE : 0;
    if (done == 0 && target != afd_rec_current) {
        PyObject *w = PyObject_GetAttr(task, s_fut_waiter);
        if (w && (w == Py_None || call_truth(w, s_done) > 0))
            flags |= AFD_CANCEL_WOKEN;
        Py_XDECREF(w);
        PyErr_Clear();
    }
    cancel_task *mine = ctask(afd_rec_current, 0);
    if (cur.timeout_target == target) {
        flags |= AFD_CANCEL_TIMEOUT;
    } else if (mine && mine->wf_deadline && called_from_cancel_and_wait()) {
        flags |= AFD_CANCEL_TIMEOUT;
        afd_rec_event(AFD_EV_TIMEOUT, AFD_TIMEOUT_WAIT_FOR, target, mine->wf_deadline,
                      afd_deadline_site(mine->wf_deadline), afd_rec_now, 0);
        mine->wf_deadline = 0;
    }
    uint32_t text = AFD_NOSTR;
    if (msg && msg != Py_None) {
        PyObject *s = PyObject_Str(msg);
        text = s ? afd_rec_intern(s, NULL) : AFD_NOSTR;
        Py_XDECREF(s);
    }
    afd_rec_event(AFD_EV_CANCEL, flags, afd_rec_current, target, text, afd_rec_now, 0);
    cancel_task *ct = done == 0 ? ctask(target, 1) : NULL;
    if (ct) {
        ct->pending = 1;
        ct->cancel_step = afd_rec_step_no;
    }
    PyErr_Clear();
}

static PyObject *task_cancel_hook(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    if (recording() && cancel_state)
        record_cancel(cancel_state, self, cancel_message(args, nargs, kwnames));
    in_task_cancel++;
    PyObject *r = afd_rt_call_with_self(orig_cancel, self, args, nargs, kwnames);
    in_task_cancel--;
    return r;
}

static PyObject *task_uncancel_hook(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                    PyObject *kwnames)
{
    PyObject *r = afd_rt_call_with_self(orig_uncancel, self, args, nargs, kwnames);
    if (!r || !recording() || !cancel_state)
        return r;
    uint32_t target = afd_rec_task_id(cancel_state, self);
    long left = PyLong_Check(r) ? PyLong_AsLong(r) : 0;
    PyErr_Clear();
    if (target) {
        afd_rec_event(AFD_EV_UNCANCEL, 0, afd_rec_current, target, afd_rec_caller_site(cancel_state),
                      afd_rec_now, left > 0 ? (uint64_t)left : 0);
        if (target == cur.task)
            cur.uncancelled = 1;
    }
    return r;
}

static PyMethodDef cancel_def = {"cancel", (PyCFunction)(void (*)(void))task_cancel_hook,
                                 METH_FASTCALL | METH_KEYWORDS,
                                 "Task.cancel(msg=None), recorded by affidavit"};
static PyMethodDef uncancel_def = {"uncancel", (PyCFunction)(void (*)(void))task_uncancel_hook,
                                   METH_FASTCALL | METH_KEYWORDS, "Task.uncancel(), recorded by affidavit"};

/* Replaces tp's method def->ml_name (when tp has one of its own) with a recording one. The C Task
 * type is immutable from Python; its flag is lifted for the one assignment only, so that the
 * interpreter's own type_setattro makes it (updating the method caches and the specializations
 * that key on the type's version), rather than an edit behind its back. */
static int patch_method(PyTypeObject *tp, PyMethodDef *def, PyObject **orig)
{
    PyObject *dict = tp->tp_dict;                                         /* Borrowed. */
    PyObject *o = dict ? PyDict_GetItemString(dict, def->ml_name) : NULL; /* Borrowed. */
    if (!o)
        return 0; /* uncancel() is new in 3.11 */
    PyObject *descr = PyDescr_NewMethod(tp, def);
    if (!descr)
        return -1;
    *orig = Py_NewRef(o);
    unsigned long flags = tp->tp_flags;
    tp->tp_flags &= ~Py_TPFLAGS_IMMUTABLETYPE;
    int rc = PyObject_SetAttrString((PyObject *)tp, def->ml_name, descr);
    tp->tp_flags = flags;
    Py_DECREF(descr);
    if (rc < 0)
        Py_CLEAR(*orig);
    return rc;
}

/* A new reference to module.name (a dotted path of attributes), or NULL with no exception. */
static PyObject *lookup(const char *module, const char *path)
{
    PyObject *obj = PyImport_ImportModule(module);
    char part[64];
    while (obj && *path) {
        size_t n = strcspn(path, ".");
        if (n >= sizeof part)
            Py_CLEAR(obj);
        else {
            memcpy(part, path, n);
            part[n] = 0;
            Py_SETREF(obj, PyObject_GetAttrString(obj, part));
        }
        path += n + (path[n] == '.');
    }
    PyErr_Clear();
    return obj;
}

static PyObject *code_of(const char *module, const char *path)
{
    PyObject *fn = lookup(module, path);
    PyObject *code = fn ? PyObject_GetAttrString(fn, "__code__") : NULL;
    Py_XDECREF(fn);
    PyErr_Clear();
    return code;
}

int afd_cancel_install(afd_rt_state *st)
{
    if (orig_cancel)
        return 0;
    cancel_state = st;
#define INTERN(var, text)                                                                                    \
    if (!(var = PyUnicode_InternFromString(text)))                                                           \
        return -1;
    INTERN(s_must_cancel, "_must_cancel");
    INTERN(s_fut_waiter, "_fut_waiter");
    INTERN(s_state, "_state");
    INTERN(s_exception, "_exception");
    INTERN(s_result, "_result");
    INTERN(s_done, "done");
    INTERN(s_cancelled, "cancelled");
    INTERN(s_task, "_task");
    INTERN(s_cancelled_state, "CANCELLED");
    INTERN(s_cr_frame, "cr_frame");
    INTERN(s_cr_await, "cr_await");
#undef INTERN
    on_timeout_fn = lookup("asyncio.timeouts", "Timeout._on_timeout");
    release_waiter_fn = lookup("asyncio.tasks", "_release_waiter");
    cancel_and_wait_code = code_of("asyncio.tasks", "_cancel_and_wait");
    wait_for_code = code_of("asyncio.tasks", "wait_for");
    timeout_code = code_of("asyncio.timeouts", "timeout");
    reschedule_code = code_of("asyncio.timeouts", "Timeout.reschedule");
    py_wakeup_fn = lookup("asyncio.tasks", "_PyTask._Task__wakeup");
    static const char *const wakers[][2] = {
        {"asyncio.locks", "Lock._wake_up_first"},
        {"asyncio.locks", "Semaphore._wake_up_next"},
        {"asyncio.locks", "Event.set"},
        {"asyncio.locks", "Condition.notify"},
        {"asyncio.locks", "Condition._notify"},
        {"asyncio.queues", "Queue._wakeup_next"},
        {"asyncio.locks", "BoundedSemaphore.release"},
    };
    for (size_t i = 0; i < sizeof wakers / sizeof wakers[0] && n_wake_codes < MAX_WAKE_CODES; i++) {
        PyObject *c = code_of(wakers[i][0], wakers[i][1]);
        if (c)
            wake_codes[n_wake_codes++] = c;
    }
    PyTypeObject *tp = (PyTypeObject *)st->c_task_type;
    if (patch_method(tp, &cancel_def, &orig_cancel) < 0 ||
        patch_method(tp, &uncancel_def, &orig_uncancel) < 0)
        return -1;
    return 0;
}

int afd_cancel_timeout_read(void)
{
    PyFrameObject *f = PyEval_GetFrame(); /* Borrowed. */
    PyCodeObject *code = f && afd_rec_step_no ? PyFrame_GetCode(f) : NULL;
    int ours = 0;
    if (code && timeout_code && (PyObject *)code == timeout_code) {
        timeout_read_step = afd_rec_step_no;
        ours = 1;
    } else if (code && reschedule_code && (PyObject *)code == reschedule_code) {
        ours = timeout_read_step == afd_rec_step_no;
    }
    Py_XDECREF(code);
    return ours;
}

int afd_cancel_is_timeout(PyObject *callback)
{
    if (on_timeout_fn && PyMethod_Check(callback) && PyMethod_GET_FUNCTION(callback) == on_timeout_fn)
        return 1;
    return release_waiter_fn && callback == release_waiter_fn;
}
