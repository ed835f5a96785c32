/* hooks.c -- what asyncio's synchronization primitives and blocking calls tell the recorder.
 *
 * Happens-before needs to know when a lock changed hands, when an event was set and seen, when a
 * queue item was put and got; the lock-order and wait-for graphs need lock owners. Rather than
 * wrapping asyncio's coroutine methods, the hooks watch the one attribute each primitive flips:
 * `Lock._locked`, `Event._value`, `Semaphore._value` become C data descriptors on their classes
 * that keep the value in the instance's __dict__ (so asyncio's code, pickling and repr see what
 * they always saw) and record the transition. `Queue.put_nowait` and `get_nowait` (which `put`
 * and `get` call) are wrapped by a C callable. Outside a recorded run every hook is a plain
 * pass-through.
 *
 * `time.sleep` inside a step is recorded as a blocking call with its line. Under the controlled
 * loop, when no other thread is alive, the sleep is not slept: its duration is added to the
 * step's virtual cost, which is exactly what the blocked loop would have experienced. */
#include "runtime.h"

#include <math.h>

enum { HOOK_LOCK = 1, HOOK_EVENT = 2, HOOK_SEM = 3 };

/* ---- attribute hooks ---- */

typedef struct {
    PyObject_HEAD
    PyObject *name; /* Owned interned str: the attribute, also its key in the instance dict. */
    int kind;
} attr_hook;

static afd_rt_state *hooks_state;

static PyObject *instance_dict(PyObject *obj)
{
    PyObject *d = PyObject_GenericGetDict(obj, NULL);
    if (d && !PyDict_Check(d)) {
        Py_DECREF(d);
        PyErr_SetString(PyExc_TypeError, "affidavit: unexpected __dict__");
        return NULL;
    }
    return d;
}

static PyObject *attr_hook_get(PyObject *self, PyObject *obj, PyObject *type)
{
    attr_hook *h = (attr_hook *)self;
    if (!obj || obj == Py_None)
        return Py_NewRef(self);
    PyObject *d = instance_dict(obj);
    if (!d)
        return NULL;
    PyObject *v = PyDict_GetItemWithError(d, h->name); /* Borrowed. */
    Py_XINCREF(v);
    Py_DECREF(d);
    if (!v) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_AttributeError, "'%s' object has no attribute '%U'", Py_TYPE(obj)->tp_name,
                         h->name);
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
    PyObject *d = instance_dict(obj);
    if (!d)
        return -1;
    if (!value) {
        int rc = PyDict_DelItem(d, h->name);
        Py_DECREF(d);
        return rc;
    }
    PyObject *old = PyDict_GetItemWithError(d, h->name); /* Borrowed. */
    Py_XINCREF(old);
    if (!old && PyErr_Occurred()) {
        Py_DECREF(d);
        return -1;
    }
    int rc = PyDict_SetItem(d, h->name, value);
    Py_DECREF(d);
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

/* ---- call hooks (Queue.put_nowait, get_nowait, and the reads empty, full, qsize) ---- */

typedef struct {
    PyObject_HEAD
    PyObject *func; /* Owned: the original function. */
    int kind;       /* enum afd_sync_kind recorded after a successful call */
} call_hook;

static PyObject *call_hook_call(PyObject *self, PyObject *args, PyObject *kwargs)
{
    call_hook *h = (call_hook *)self;
    PyObject *r = PyObject_Call(h->func, args, kwargs);
    if (r && afd_rec_active() && PyTuple_GET_SIZE(args) >= 1)
        afd_rec_sync(hooks_state, PyTuple_GET_ITEM(args, 0), h->kind);
    return r;
}

static PyObject *call_hook_get(PyObject *self, PyObject *obj, PyObject *type)
{
    if (!obj || obj == Py_None)
        return Py_NewRef(self);
    return PyMethod_New(self, obj);
}

static void call_hook_dealloc(PyObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    Py_CLEAR(((call_hook *)self)->func);
    tp->tp_free(self);
    Py_DECREF(tp);
}

static PyObject *call_hook_wrapped(PyObject *self, void *unused)
{
    return Py_NewRef(((call_hook *)self)->func);
}

static PyGetSetDef call_hook_getset[] = {
    {"__wrapped__", call_hook_wrapped, NULL, "the original function", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot call_hook_slots[] = {
    {Py_tp_call, call_hook_call},
    {Py_tp_descr_get, call_hook_get},
    {Py_tp_dealloc, call_hook_dealloc},
    {Py_tp_getset, call_hook_getset},
    {Py_tp_doc, "affidavit: records a queue operation after the original method succeeds"},
    {0, NULL},
};

static PyType_Spec call_hook_spec = {
    .name = "affidavit._runtime.CallHook",
    .basicsize = sizeof(call_hook),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = call_hook_slots,
};

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
    int rc = h->name ? PyObject_SetAttrString(cls, attr, (PyObject *)h) : -1;
    Py_DECREF(h);
    Py_DECREF(cls);
    return rc;
}

static int set_call_hook(PyObject *module, const char *clsname, const char *meth, int kind)
{
    PyObject *m = PyImport_ImportModule("asyncio.queues");
    PyObject *cls = m ? PyObject_GetAttrString(m, clsname) : NULL;
    Py_XDECREF(m);
    if (!cls)
        return -1;
    PyObject *tp = PyObject_GetAttrString(module, "CallHook");
    PyObject *orig = PyObject_GetAttrString(cls, meth);
    int rc = -1;
    if (tp && orig && Py_TYPE(orig) == (PyTypeObject *)tp) {
        rc = 0; /* installed already */
    } else if (tp && orig) {
        call_hook *h = PyObject_New(call_hook, (PyTypeObject *)tp);
        if (h) {
            h->func = Py_NewRef(orig);
            h->kind = kind;
            rc = PyObject_SetAttrString(cls, meth, (PyObject *)h);
            Py_DECREF(h);
        }
    }
    Py_XDECREF(orig);
    Py_XDECREF(tp);
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
        PyObject *c = PyType_FromModuleAndSpec(module, &call_hook_spec, NULL);
        int rc = (a && c) ? PyModule_AddObjectRef(module, "AttrHook", a) : -1;
        if (rc == 0)
            rc = PyModule_AddObjectRef(module, "CallHook", c);
        Py_XDECREF(a);
        Py_XDECREF(c);
        if (rc < 0)
            return NULL;
    }
    if (set_attr_hook(module, "asyncio.locks", "Lock", "_locked", HOOK_LOCK) < 0 ||
        set_attr_hook(module, "asyncio.locks", "Event", "_value", HOOK_EVENT) < 0 ||
        set_attr_hook(module, "asyncio.locks", "Semaphore", "_value", HOOK_SEM) < 0 ||
        set_call_hook(module, "Queue", "put_nowait", AFD_SYNC_QUEUE_PUT) < 0 ||
        set_call_hook(module, "Queue", "get_nowait", AFD_SYNC_QUEUE_GET) < 0 ||
        set_call_hook(module, "Queue", "empty", AFD_SYNC_QUEUE_CHECK) < 0 ||
        set_call_hook(module, "Queue", "full", AFD_SYNC_QUEUE_CHECK) < 0 ||
        set_call_hook(module, "Queue", "qsize", AFD_SYNC_QUEUE_CHECK) < 0 ||
        set_call_hook(module, "Queue", "__init__", AFD_SYNC_CREATE) < 0)
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
    Py_ssize_t n = PyList_GET_SIZE(list);
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
        afd_rec_event(AFD_EV_WAITFOR, 0, tid, obj, holder, afd_rec_now, 0);
    }
    Py_DECREF(list);
    return 0;
}
