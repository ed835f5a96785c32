/* hooks.c -- what asyncio's synchronization primitives and blocking calls tell the recorder.
 *
 * Happens-before needs to know when a lock changed hands, when an event was set and seen, when a
 * queue item was put and got; the lock-order and wait-for graphs need lock owners. Rather than
 * wrapping asyncio's coroutine methods, the hooks watch the one attribute each primitive flips:
 * `Lock._locked`, `Event._value`, `Semaphore._value` become C data descriptors on their classes
 * that keep the value in another instance attribute (so asyncio's code and repr see what they
 * always saw) and record the transition. A queue's put and get are recorded where the item enters
 * and leaves its storage (`_put`, `_get`, replaced by C methods that make the same calls), its
 * `empty` and `qsize` are answered in C. Outside a recorded run every hook is a plain pass-through.
 *
 * `time.sleep` inside a step is recorded as a blocking call with its line. Under the controlled
 * loop, when no other thread works (threads.c), the sleep is not slept: its duration is added to the
 * step's virtual cost, which is exactly what the blocked loop would have experienced. */
#include "runtime.h"

#include <math.h>
#include <stdlib.h>

enum { HOOK_LOCK = 1, HOOK_EVENT = 2, HOOK_SEM = 3 };

/* ---- attribute hooks ---- */

typedef struct {
    PyObject_HEAD PyObject *name; /* Owned interned str: the attribute asyncio uses ("_locked", "_value"). */
    PyObject *store;              /* Owned interned str: where the value really lives on the instance. */
    int kind;
} attr_hook;

static afd_rt_state *hooks_state;

/* The value lives in an ordinary instance attribute under another name ("_afd_locked"): reading and
 * writing it through the generic attribute functions keeps CPython's compact per-instance storage
 * (asking for the instance __dict__ would make CPython build one for every object). */
/* An object made before the hooks were installed keeps its value in its __dict__ under asyncio's
 * own name: move it to the hook's attribute on first touch (a new reference, or NULL with an
 * AttributeError when there is none). */
static PyObject *migrate(attr_hook *h, PyObject *obj)
{
    PyErr_Clear();
    PyObject *d = PyObject_GenericGetDict(obj, NULL);
    PyObject *v = d && PyDict_Check(d) ? PyDict_GetItemWithError(d, h->name) : NULL; /* Borrowed. */
    Py_XINCREF(v);
    Py_XDECREF(d);
    if (v && PyObject_GenericSetAttr(obj, h->store, v) < 0)
        Py_CLEAR(v);
    if (!v && !PyErr_Occurred())
        PyErr_SetNone(PyExc_AttributeError);
    return v;
}

static PyObject *attr_hook_get(PyObject *self, PyObject *obj, PyObject *type)
{
    attr_hook *h = (attr_hook *)self;
    if (!obj || obj == Py_None)
        return Py_NewRef(self);
    PyObject *v = PyObject_GenericGetAttr(obj, h->store);
    if (!v && PyErr_ExceptionMatches(PyExc_AttributeError))
        v = migrate(h, obj);
    if (!v) {
        if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_AttributeError, "'%s' object has no attribute '%U'", Py_TYPE(obj)->tp_name,
                         h->name);
        }
        return NULL;
    }
    if (h->kind == HOOK_EVENT && afd_rec_active() && afd_rec_current) {
        int set = PyObject_IsTrue(v);
        if (set < 0)
            PyErr_Clear();
        else
            afd_rec_sync(hooks_state, obj, set ? AFD_SYNC_EVENT_OBSERVE : AFD_SYNC_EVENT_CHECK);
    }
    return v;
}

static int attr_hook_set(PyObject *self, PyObject *obj, PyObject *value)
{
    attr_hook *h = (attr_hook *)self;
    if (!value)
        return PyObject_GenericSetAttr(obj, h->store, NULL);
    PyObject *old = NULL;
    if (afd_rec_active()) {
        old = PyObject_GenericGetAttr(obj, h->store);
        if (!old && PyErr_ExceptionMatches(PyExc_AttributeError))
            old = migrate(h, obj);
        if (!old) {
            if (!PyErr_ExceptionMatches(PyExc_AttributeError))
                return -1;
            PyErr_Clear();
        }
    }
    if (old == value) { /* `self._value = False` on a clear event: nothing changes, nothing to store */
        Py_DECREF(old);
        return 0;
    }
    int rc = PyObject_GenericSetAttr(obj, h->store, value);
    if (rc < 0 || !afd_rec_active()) {
        Py_XDECREF(old);
        return rc;
    }
    int kind = -1;
    if (!old) {
        kind = AFD_SYNC_CREATE;
    } else if (h->kind == HOOK_SEM) {
        int less = PyObject_RichCompareBool(value, old, Py_LT);
        int more = less == 0 ? PyObject_RichCompareBool(value, old, Py_GT) : 0;
        if (less < 0 || more < 0)
            PyErr_Clear();
        else
            kind = less ? AFD_SYNC_SEM_ACQUIRE : more ? AFD_SYNC_SEM_RELEASE : -1;
    } else {
        int was = PyObject_IsTrue(old), now = PyObject_IsTrue(value);
        if (was < 0 || now < 0)
            PyErr_Clear();
        else if (!was && now)
            kind = h->kind == HOOK_LOCK ? AFD_SYNC_LOCK_ACQUIRE : AFD_SYNC_EVENT_SET;
        else if (was && !now)
            kind = h->kind == HOOK_LOCK ? AFD_SYNC_LOCK_RELEASE : AFD_SYNC_EVENT_CLEAR;
    }
    Py_XDECREF(old);
    if (kind >= 0)
        afd_rec_sync(hooks_state, obj, kind);
    return 0;
}

static void attr_hook_dealloc(PyObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    Py_CLEAR(((attr_hook *)self)->name);
    Py_CLEAR(((attr_hook *)self)->store);
    tp->tp_free(self);
    Py_DECREF(tp);
}

static PyType_Slot attr_hook_slots[] = {
    {Py_tp_descr_get, attr_hook_get},
    {Py_tp_descr_set, attr_hook_set},
    {Py_tp_dealloc, attr_hook_dealloc},
    {Py_tp_doc, "affidavit: records the transitions of an asyncio primitive's state attribute"},
    {0, NULL},
};

static PyType_Spec attr_hook_spec = {
    .name = "affidavit._runtime.AttrHook",
    .basicsize = sizeof(attr_hook),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = attr_hook_slots,
};

/* ---- queue hooks: Queue.__init__, _put, _get, empty, qsize ----
 *
 * Each is replaced by a C method descriptor (the same kind of object as a builtin type's methods,
 * so the interpreter calls it without creating a bound method). `full()` is not hooked: `put()`
 * calls it on every put, and a full check of an unbounded queue says nothing. */

enum { QH_INIT, QH_EMPTY, QH_QSIZE, QH__COUNT };
static PyObject *queue_orig[QH__COUNT]; /* Owned: the original functions. */

PyObject *afd_rt_call_with_self(PyObject *fn, PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                PyObject *kwnames)
{
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    PyObject *small[8];
    PyObject **stack = nargs + nkw + 1 <= 8 ? small : PyMem_Malloc((size_t)(nargs + nkw + 1) * sizeof *stack);
    if (!stack)
        return PyErr_NoMemory();
    stack[0] = self;
    for (Py_ssize_t i = 0; i < nargs + nkw; i++)
        stack[i + 1] = args[i];
    PyObject *r = PyObject_Vectorcall(fn, stack, (size_t)(nargs + 1), kwnames);
    if (stack != small)
        PyMem_Free(stack);
    return r;
}

static PyObject *queue_call(int which, PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                            PyObject *kwnames)
{
    PyObject *r = afd_rt_call_with_self(queue_orig[which], self, args, nargs, kwnames);
    if (r && which == QH_INIT && afd_rec_active())
        afd_rec_sync(hooks_state, self, AFD_SYNC_CREATE);
    return r;
}

static PyObject *queue_init_hook(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return queue_call(QH_INIT, self, args, nargs, kwnames);
}

/* The storage operations. Every asyncio from 3.10 to 3.13 defines, word for word:
 *   Queue:         _put: self._queue.append(item)           _get: return self._queue.popleft()
 *   LifoQueue:     _put: self._queue.append(item)           _get: return self._queue.pop()
 *   PriorityQueue: _put: heappush(self._queue, item)        _get: return heappop(self._queue)
 * (PriorityQueue's take heappush/heappop as defaulted parameters). Here they are the same calls
 * made from C, followed by the record: `put_nowait` and `get_nowait` stay asyncio's own Python
 * code, which the interpreter runs inline, and a put or get costs no Python frame at all. A call
 * with other arguments goes to the original function. A subclass that overrides `_put` or `_get`
 * without calling the base class's is not recorded. */
enum { QS_PUT_APPEND, QS_GET_POPLEFT, QS_GET_POP, QS_PUT_HEAP, QS_GET_HEAP, QS__COUNT };
static PyObject *storage_orig[QS__COUNT]; /* Owned: the original Python functions. */
static PyObject *heap_fn[2];              /* Owned: heapq.heappush, heapq.heappop. */

static PyObject *queue_storage(PyObject *self);

static PyObject *storage_call(int which, PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                              PyObject *kwnames)
{
    int is_put = which == QS_PUT_APPEND || which == QS_PUT_HEAP;
    if (kwnames || nargs != (is_put ? 1 : 0))
        return afd_rt_call_with_self(storage_orig[which], self, args, nargs, kwnames);
    PyObject *q = queue_storage(self);
    if (!q) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_AttributeError, "'%s' object has no attribute '_queue'",
                         Py_TYPE(self)->tp_name);
        return NULL;
    }
    static PyObject *names[3];
    if (!names[0] && (!(names[0] = PyUnicode_InternFromString("append")) ||
                      !(names[1] = PyUnicode_InternFromString("popleft")) ||
                      !(names[2] = PyUnicode_InternFromString("pop")))) {
        Py_DECREF(q);
        return NULL;
    }
    PyObject *r;
    switch (which) {
    case QS_PUT_APPEND: {
        PyObject *argv[2] = {q, args[0]};
        r = PyObject_VectorcallMethod(names[0], argv, 2, NULL);
        break;
    }
    case QS_GET_POPLEFT:
    case QS_GET_POP:
        r = PyObject_VectorcallMethod(names[which == QS_GET_POP ? 2 : 1], &q, 1, NULL);
        break;
    case QS_PUT_HEAP: {
        PyObject *argv[2] = {q, args[0]};
        r = PyObject_Vectorcall(heap_fn[0], argv, 2, NULL);
        break;
    }
    default:
        r = PyObject_Vectorcall(heap_fn[1], &q, 1, NULL);
        break;
    }
    Py_DECREF(q);
    if (r && afd_rec_active())
        afd_rec_sync(hooks_state, self, is_put ? AFD_SYNC_QUEUE_PUT : AFD_SYNC_QUEUE_GET);
    return r;
}

#define STORAGE_TRAMPOLINE(fn, which)                                                                        \
    static PyObject *fn(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)          \
    {                                                                                                        \
        return storage_call(which, self, args, nargs, kwnames);                                              \
    }
STORAGE_TRAMPOLINE(put_append_hook, QS_PUT_APPEND)
STORAGE_TRAMPOLINE(get_popleft_hook, QS_GET_POPLEFT)
STORAGE_TRAMPOLINE(get_pop_hook, QS_GET_POP)
STORAGE_TRAMPOLINE(put_heap_hook, QS_PUT_HEAP)
STORAGE_TRAMPOLINE(get_heap_hook, QS_GET_HEAP)

/* empty() and qsize() read the queue's storage: `not self._queue` and `len(self._queue)` in every
 * asyncio from 3.10 to 3.13 (Queue, LifoQueue and PriorityQueue alike). get() calls empty() on
 * every get, so they are answered here in C, without a Python frame; a subclass that overrides
 * them is not hooked at all, and one without `_queue` falls back to the original. */
static PyObject *queue_storage(PyObject *self)
{
    static PyObject *name;
    if (!name && !(name = PyUnicode_InternFromString("_queue")))
        return NULL;
    /* through getattr, not the instance __dict__: asking for the dict would make CPython build one
     * and drop the faster inline attribute storage of the object for good */
    PyObject *q = PyObject_GetAttr(self, name);
    if (!q && PyErr_ExceptionMatches(PyExc_AttributeError))
        PyErr_Clear();
    return q;
}

static PyObject *queue_empty_hook(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *q = nargs || kwnames ? NULL : queue_storage(self);
    if (!q) {
        if (PyErr_Occurred())
            return NULL;
        return queue_call(QH_EMPTY, self, args, nargs, kwnames);
    }
    int t = PyObject_IsTrue(q);
    Py_DECREF(q);
    if (t < 0)
        return NULL;
    if (afd_rec_active())
        afd_rec_sync(hooks_state, self, AFD_SYNC_QUEUE_CHECK);
    return Py_NewRef(t ? Py_False : Py_True);
}

static PyObject *queue_qsize_hook(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *q = nargs || kwnames ? NULL : queue_storage(self);
    if (!q) {
        if (PyErr_Occurred())
            return NULL;
        return queue_call(QH_QSIZE, self, args, nargs, kwnames);
    }
    Py_ssize_t n = PyObject_Size(q);
    Py_DECREF(q);
    if (n < 0)
        return NULL;
    if (afd_rec_active())
        afd_rec_sync(hooks_state, self, AFD_SYNC_QUEUE_CHECK);
    return PyLong_FromSsize_t(n);
}

#define QUEUE_DEF(name, fn, doc)                                                                             \
    {                                                                                                        \
        name, (PyCFunction)(void (*)(void))fn, METH_FASTCALL | METH_KEYWORDS, doc                            \
    }
static PyMethodDef queue_defs[QH__COUNT] = {
    QUEUE_DEF("__init__", queue_init_hook, "asyncio.Queue.__init__, recorded by affidavit"),
    QUEUE_DEF("empty", queue_empty_hook, "asyncio.Queue.empty, recorded by affidavit"),
    QUEUE_DEF("qsize", queue_qsize_hook, "asyncio.Queue.qsize, recorded by affidavit"),
};
static PyMethodDef storage_defs[QS__COUNT] = {
    QUEUE_DEF("_put", put_append_hook, "self._queue.append(item), recorded by affidavit"),
    QUEUE_DEF("_get", get_popleft_hook, "self._queue.popleft(), recorded by affidavit"),
    QUEUE_DEF("_get", get_pop_hook, "self._queue.pop(), recorded by affidavit"),
    QUEUE_DEF("_put", put_heap_hook, "heappush(self._queue, item), recorded by affidavit"),
    QUEUE_DEF("_get", get_heap_hook, "heappop(self._queue), recorded by affidavit"),
};

/* Replaces cls.<def->ml_name> with a C method descriptor; the original goes to *orig. */
static int replace_method(PyObject *cls, PyMethodDef *def, PyObject **orig)
{
    PyObject *o = PyObject_GetAttrString(cls, def->ml_name);
    PyObject *descr = o ? PyDescr_NewMethod((PyTypeObject *)cls, def) : NULL;
    int rc = descr ? PyObject_SetAttrString(cls, def->ml_name, descr) : -1;
    if (rc == 0)
        *orig = Py_NewRef(o);
    Py_XDECREF(descr);
    Py_XDECREF(o);
    return rc;
}

static int set_queue_hooks(void)
{
    PyObject *heapq = PyImport_ImportModule("heapq");
    if (!heapq)
        return -1;
    heap_fn[0] = PyObject_GetAttrString(heapq, "heappush");
    heap_fn[1] = PyObject_GetAttrString(heapq, "heappop");
    Py_DECREF(heapq);
    PyObject *m = PyImport_ImportModule("asyncio.queues");
    if (!m || !heap_fn[0] || !heap_fn[1]) {
        Py_XDECREF(m);
        return -1;
    }
    static const struct {
        const char *cls;
        int put, get;
    } storage[] = {{"Queue", QS_PUT_APPEND, QS_GET_POPLEFT},
                   {"LifoQueue", QS_PUT_APPEND, QS_GET_POP},
                   {"PriorityQueue", QS_PUT_HEAP, QS_GET_HEAP}};
    int rc = 0;
    for (size_t c = 0; rc == 0 && c < sizeof storage / sizeof storage[0]; c++) {
        PyObject *cls = PyObject_GetAttrString(m, storage[c].cls);
        if (!cls) {
            rc = -1;
            break;
        }
        if (c == 0)
            for (int i = 0; rc == 0 && i < QH__COUNT; i++)
                rc = replace_method(cls, &queue_defs[i], &queue_orig[i]);
        /* LifoQueue's _put is Queue's (append) again: one original kept per storage kind */
        PyObject *dummy = NULL;
        int p = storage[c].put, g = storage[c].get;
        if (rc == 0)
            rc = replace_method(cls, &storage_defs[p], storage_orig[p] ? &dummy : &storage_orig[p]);
        Py_CLEAR(dummy);
        if (rc == 0)
            rc = replace_method(cls, &storage_defs[g], storage_orig[g] ? &dummy : &storage_orig[g]);
        Py_CLEAR(dummy);
        Py_DECREF(cls);
    }
    Py_DECREF(m);
    return rc;
}

/* ---- time.sleep ---- */

static PyObject *real_sleep; /* Owned: the original time.sleep. */

static PyObject *sleep_hook(PyObject *self, PyObject *arg)
{
    /* only a sleep of the step's own thread blocks the loop (not one in an executor's thread) */
    if (afd_rec_active() && afd_rec_current && afd_loop_on_step_thread()) {
        double secs = PyFloat_AsDouble(arg);
        if (secs == -1.0 && PyErr_Occurred())
            return NULL;
        if (!(secs >= 0) || !isfinite(secs)) /* let the real function raise its own error */
            return PyObject_CallOneArg(real_sleep, arg);
        uint64_t ns = (uint64_t)ceil(secs * 1e9);
        int virtual = afd_rt_config.configured && afd_rt_config.mode == AFD_MODE_CONTROLLED &&
                      !afd_hooks_threads_working();
        afd_rec_event(AFD_EV_BLOCK, virtual ? AFD_BLOCK_VIRTUAL : 0, afd_rec_current, AFD_BLOCK_SLEEP,
                      afd_rec_caller_site(hooks_state), afd_rec_now, ns);
        afd_rec_chain_stack(hooks_state, NULL);
        /* slept for real or not, the step took this long: a real sleep lasts at least what it
         * was asked, and its call takes as long as a clock read (so `elapsed >= secs` holds) */
        afd_rec_extra_cost += ns + AFD_CLOCK_READ_NS;
        if (virtual)
            Py_RETURN_NONE;
        return PyObject_CallOneArg(real_sleep, arg);
    }
    /* Outside a step, the run's thread sleeps for real and its clocks move by what it slept. */
    PyObject *r = PyObject_CallOneArg(real_sleep, arg);
    if (r && afd_clock_on_run_thread()) {
        double secs = PyFloat_AsDouble(arg);
        if (secs > 0 && isfinite(secs))
            afd_clock_slept((uint64_t)ceil(secs * 1e9) + AFD_CLOCK_READ_NS);
        PyErr_Clear();
    }
    return r;
}

static PyMethodDef sleep_def = {"sleep", sleep_hook, METH_O,
                                "sleep(seconds): time.sleep, recorded by affidavit as a blocking call"};

/* ---- installation ---- */

static int set_attr_hook(PyObject *module, const char *modname, const char *clsname, const char *attr,
                         int kind)
{
    PyObject *m = PyImport_ImportModule(modname);
    PyObject *cls = m ? PyObject_GetAttrString(m, clsname) : NULL;
    Py_XDECREF(m);
    if (!cls)
        return -1;
    PyObject *tp = PyObject_GetAttrString(module, "AttrHook");
    attr_hook *h = tp ? PyObject_New(attr_hook, (PyTypeObject *)tp) : NULL;
    Py_XDECREF(tp);
    if (!h) {
        Py_DECREF(cls);
        return -1;
    }
    h->kind = kind;
    h->name = PyUnicode_InternFromString(attr);
    h->store = PyUnicode_FromFormat("_afd%s", attr);
    if (h->store)
        PyUnicode_InternInPlace(&h->store);
    int rc = h->name && h->store ? PyObject_SetAttrString(cls, attr, (PyObject *)h) : -1;
    Py_DECREF(h);
    Py_DECREF(cls);
    return rc;
}

/* install_hooks(): puts the hooks in place (idempotent). Called by the worker before it imports
 * the test, so `from time import sleep` in the user's module gets the recorded sleep too. */
PyObject *afd_rt_install_hooks(PyObject *module, PyObject *unused)
{
    afd_rt_state *st = PyModule_GetState(module);
    hooks_state = st;
    if (real_sleep)
        Py_RETURN_NONE;
    if (!PyObject_HasAttrString(module, "AttrHook")) {
        PyObject *a = PyType_FromModuleAndSpec(module, &attr_hook_spec, NULL);
        int rc = a ? PyModule_AddObjectRef(module, "AttrHook", a) : -1;
        Py_XDECREF(a);
        if (rc < 0)
            return NULL;
    }
    if (set_attr_hook(module, "asyncio.locks", "Lock", "_locked", HOOK_LOCK) < 0 ||
        set_attr_hook(module, "asyncio.locks", "Event", "_value", HOOK_EVENT) < 0 ||
        set_attr_hook(module, "asyncio.locks", "Semaphore", "_value", HOOK_SEM) < 0 ||
        set_queue_hooks() < 0 || afd_loop_install_running() < 0 || afd_cancel_install(st) < 0 ||
        afd_taskhash_install(st) < 0 || afd_clock_install() < 0 || afd_sharing_install() < 0 ||
        afd_waits_install() < 0)
        return NULL;
    PyObject *time = PyImport_ImportModule("time");
    PyObject *orig = time ? PyObject_GetAttrString(time, "sleep") : NULL;
    PyObject *hook = orig ? PyCFunction_NewEx(&sleep_def, NULL, NULL) : NULL;
    int rc = hook ? PyObject_SetAttrString(time, "sleep", hook) : -1;
    Py_XDECREF(hook);
    Py_XDECREF(time);
    if (rc < 0) {
        Py_XDECREF(orig);
        return NULL;
    }
    real_sleep = orig;
    Py_RETURN_NONE;
}

/* ---- deadlock ---- */

/* Whether fut is one of the waiters queued on a primitive (its _waiters, _getters or _putters). */
static int waits_on(PyObject *obj, PyObject *fut)
{
    static const char *const names[] = {"_waiters", "_getters", "_putters"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        PyObject *w = PyObject_GetAttrString(obj, names[i]);
        if (!w) {
            PyErr_Clear();
            continue;
        }
        int in = w != Py_None ? PySequence_Contains(w, fut) : 0;
        Py_DECREF(w);
        if (in < 0)
            PyErr_Clear();
        if (in > 0)
            return 1;
    }
    return 0;
}

typedef struct wait_rec {
    uint32_t task, obj, holder;
} wait_rec;

static int wait_rec_cmp(const void *a, const void *b)
{
    uint32_t x = ((const wait_rec *)a)->task, y = ((const wait_rec *)b)->task;
    return x < y ? -1 : x > y;
}

int afd_hooks_record_deadlock(afd_rt_state *st, PyObject *loop)
{
    afd_rec_flag(AFD_TRACE_DEADLOCK);
    PyObject *tasks_mod = PyImport_ImportModule("asyncio.tasks");
    PyObject *tasks = tasks_mod ? PyObject_CallMethod(tasks_mod, "all_tasks", "O", loop) : NULL;
    Py_XDECREF(tasks_mod);
    PyObject *list = tasks ? PySequence_List(tasks) : NULL;
    Py_XDECREF(tasks);
    if (!list) {
        PyErr_Clear();
        return 0;
    }
    /* all_tasks() is a set: its order follows object addresses. The records are sorted by task id
     * so that one schedule always gives one trace. */
    Py_ssize_t n = PyList_GET_SIZE(list);
    wait_rec *recs = PyMem_Calloc((size_t)n + 1, sizeof *recs);
    if (!recs) {
        Py_DECREF(list);
        return 0;
    }
    Py_ssize_t n_recs = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *task = PyList_GET_ITEM(list, i);
        uint32_t tid = afd_rec_task_id(st, task);
        PyObject *fut = PyObject_GetAttrString(task, "_fut_waiter");
        if (!fut) {
            PyErr_Clear();
            continue;
        }
        uint32_t obj = 0, holder = 0;
        if (fut != Py_None) {
            int is_task = PyObject_IsInstance(fut, st->task_types);
            if (is_task > 0) {
                holder = afd_rec_task_id(st, fut);
            } else {
                PyErr_Clear();
                for (uint32_t k = 1; k <= afd_rec_sync_count(); k++) {
                    afd_sync_obj *o = afd_rec_sync_obj(k);
                    if (o && waits_on(o->obj, fut)) {
                        obj = k;
                        holder = o->owner;
                        break;
                    }
                }
            }
        }
        Py_DECREF(fut);
        recs[n_recs++] = (wait_rec){tid, obj, holder};
    }
    qsort(recs, (size_t)n_recs, sizeof *recs, wait_rec_cmp);
    for (Py_ssize_t i = 0; i < n_recs; i++)
        afd_rec_event(AFD_EV_WAITFOR, 0, recs[i].task, recs[i].obj, recs[i].holder, afd_rec_now, 0);
    PyMem_Free(recs);
    Py_DECREF(list);
    return 0;
}
