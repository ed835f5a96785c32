/* hooks.c -- what asyncio's synchronization primitives and blocking calls tell the recorder.
 *
 * Happens-before needs to know when a lock changed hands, when an event was set and seen, when a
 * queue item was put and got; the lock-order and wait-for graphs need lock owners. Rather than
 * wrapping asyncio's coroutine methods, the hooks watch the one attribute each primitive flips:
 * `Lock._locked`, `Event._value`, `Semaphore._value` become C data descriptors on their classes
 * that keep the value in another instance attribute (so asyncio's code and repr see what they
 * always saw) and record the transition. `Queue.put_nowait` and `get_nowait` (which `put`
 * and `get` call), `empty` and `qsize` are replaced by C method descriptors that call the original. Outside a recorded run every hook is a plain
 * pass-through.
 *
 * `time.sleep` inside a step is recorded as a blocking call with its line. Under the controlled
 * loop, when no other thread is alive, the sleep is not slept: its duration is added to the
 * step's virtual cost, which is exactly what the blocked loop would have experienced. */
#include "runtime.h"

#include <math.h>
#include <stdlib.h>

enum { HOOK_LOCK = 1, HOOK_EVENT = 2, HOOK_SEM = 3 };

/* ---- attribute hooks ---- */

typedef struct {
    PyObject_HEAD
    PyObject *name;  /* Owned interned str: the attribute asyncio uses ("_locked", "_value"). */
    PyObject *store; /* Owned interned str: where the value really lives on the instance. */
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

/* ---- queue hooks: Queue.__init__, put_nowait, get_nowait, empty, qsize ----
 *
 * Each is replaced by a C method descriptor (the same kind of object as a builtin type's methods,
 * so the interpreter calls it without creating a bound method) that calls the original function
 * and then records the operation. `full()` is not hooked: `put()` calls it on every put, and a
 * full check of an unbounded queue says nothing. */

enum { QH_INIT, QH_PUT, QH_GET, QH_EMPTY, QH_QSIZE, QH__COUNT };
static PyObject *queue_orig[QH__COUNT]; /* Owned: the original functions. */
static const char *const queue_names[QH__COUNT] = {"__init__", "put_nowait", "get_nowait", "empty", "qsize"};
static const int queue_kinds[QH__COUNT] = {AFD_SYNC_CREATE, AFD_SYNC_QUEUE_PUT, AFD_SYNC_QUEUE_GET,
                                           AFD_SYNC_QUEUE_CHECK, AFD_SYNC_QUEUE_CHECK};

static PyObject *queue_call(int which, PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    PyObject *small[8];
    PyObject **stack = nargs + nkw + 1 <= 8 ? small : PyMem_Malloc((size_t)(nargs + nkw + 1) * sizeof *stack);
    if (!stack)
        return PyErr_NoMemory();
    stack[0] = self;
    for (Py_ssize_t i = 0; i < nargs + nkw; i++)
        stack[i + 1] = args[i];
    PyObject *r = PyObject_Vectorcall(queue_orig[which], stack, (size_t)(nargs + 1), kwnames);
    if (stack != small)
        PyMem_Free(stack);
    if (r && afd_rec_active())
        afd_rec_sync(hooks_state, self, queue_kinds[which]);
    return r;
}

#define QUEUE_TRAMPOLINE(fn, which)                                                                  \
    static PyObject *fn(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)    \
    {                                                                                                \
        return queue_call(which, self, args, nargs, kwnames);                                        \
    }
QUEUE_TRAMPOLINE(queue_init_hook, QH_INIT)
QUEUE_TRAMPOLINE(queue_put_hook, QH_PUT)
QUEUE_TRAMPOLINE(queue_get_hook, QH_GET)

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

#define QUEUE_DEF(name, fn, doc) {name, (PyCFunction)(void (*)(void))fn, METH_FASTCALL | METH_KEYWORDS, doc}
static PyMethodDef queue_defs[QH__COUNT] = {
    QUEUE_DEF("__init__", queue_init_hook, "asyncio.Queue.__init__, recorded by affidavit"),
    QUEUE_DEF("put_nowait", queue_put_hook, "asyncio.Queue.put_nowait, recorded by affidavit"),
    QUEUE_DEF("get_nowait", queue_get_hook, "asyncio.Queue.get_nowait, recorded by affidavit"),
    QUEUE_DEF("empty", queue_empty_hook, "asyncio.Queue.empty, recorded by affidavit"),
    QUEUE_DEF("qsize", queue_qsize_hook, "asyncio.Queue.qsize, recorded by affidavit"),
};

static int set_queue_hooks(void)
{
    PyObject *m = PyImport_ImportModule("asyncio.queues");
    PyObject *cls = m ? PyObject_GetAttrString(m, "Queue") : NULL;
    Py_XDECREF(m);
    if (!cls)
        return -1;
    int rc = 0;
    for (int i = 0; rc == 0 && i < QH__COUNT; i++) {
        PyObject *orig = PyObject_GetAttrString(cls, queue_names[i]);
        PyObject *descr = orig ? PyDescr_NewMethod((PyTypeObject *)cls, &queue_defs[i]) : NULL;
        rc = descr ? PyObject_SetAttrString(cls, queue_names[i], descr) : -1;
        if (rc == 0)
            queue_orig[i] = Py_NewRef(orig);
        Py_XDECREF(descr);
        Py_XDECREF(orig);
    }
    Py_DECREF(cls);
    return rc;
}

/* ---- time.sleep ---- */

static PyObject *real_sleep; /* Owned: the original time.sleep. */

int afd_hooks_other_threads(void)
{
    PyObject *threading = PyImport_ImportModule("threading");
    PyObject *n = threading ? PyObject_CallMethod(threading, "active_count", NULL) : NULL;
    long count = n ? PyLong_AsLong(n) : 1;
    Py_XDECREF(n);
    Py_XDECREF(threading);
    PyErr_Clear();
    return count > 1;
}

static PyObject *sleep_hook(PyObject *self, PyObject *arg)
{
    if (afd_rec_active() && afd_rec_current) {
        double secs = PyFloat_AsDouble(arg);
        if (secs == -1.0 && PyErr_Occurred())
            return NULL;
        if (!(secs >= 0) || !isfinite(secs)) /* let the real function raise its own error */
            return PyObject_CallOneArg(real_sleep, arg);
        uint64_t ns = (uint64_t)(secs * 1e9);
        afd_rec_event(AFD_EV_BLOCK, 0, afd_rec_current, AFD_BLOCK_SLEEP, afd_rec_caller_site(hooks_state),
                      afd_rec_now, ns);
        if (afd_rt_config.configured && afd_rt_config.mode == AFD_MODE_CONTROLLED && !afd_hooks_other_threads()) {
            afd_rec_extra_cost += ns;
            Py_RETURN_NONE;
        }
    }
    return PyObject_CallOneArg(real_sleep, arg);
}

static PyMethodDef sleep_def = {"sleep", sleep_hook, METH_O,
                                "sleep(seconds): time.sleep, recorded by affidavit as a blocking call"};

/* ---- installation ---- */

static int set_attr_hook(PyObject *module, const char *modname, const char *clsname, const char *attr, int kind)
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
        set_queue_hooks() < 0)
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
