/* handle.c -- the Handle and TimerHandle the controlled loop schedules, in C.
 *
 * asyncio's own Handle is a Python class; creating one and running it through a Python _run()
 * costs more than the rest of a loop iteration. This type offers the same surface that asyncio,
 * anyio and pytest-asyncio use on a handle (cancel, cancelled, when, get_context, _run, the
 * _callback/_args/_cancelled/_when/_scheduled attributes, ordering of timers) so that call_soon
 * can return it and the loop can run it without a Python frame.
 *
 * Invariant: a cancelled handle holds no callback and no arguments (as in asyncio), so a
 * cancelled timer left on the heap keeps nothing alive. Workload: one handle per step. */
#include "runtime.h"

#include <structmember.h>

/* Recently freed handles, reused without going back to the allocator: one handle is created and
 * destroyed per step, so this spares a malloc/free pair and the GC's allocation accounting. */
#define FREELIST_MAX 256
static afd_handle *freelist[FREELIST_MAX];
static int freelist_n;

afd_handle *afd_handle_new(afd_rt_state *st, PyObject *callback, PyObject *args,
                           PyObject *context, PyObject *loop, int is_timer, double when)
{
    afd_handle *h;
    if (freelist_n > 0) {
        h = freelist[--freelist_n];
        PyObject_Init((PyObject *)h, st->handle_type);
    } else {
        h = PyObject_GC_New(afd_handle, st->handle_type);
        if (!h)
            return NULL;
    }
    Py_INCREF(callback);
    h->callback = callback;
    Py_XINCREF(args);
    h->args = args;
    Py_INCREF(context);
    h->context = context;
    Py_INCREF(loop);
    h->loop = loop;
    h->weakreflist = NULL;
    h->when = when;
    h->seq = 0;
    h->creator = afd_rec_current;
    h->origin = afd_rec_step_no;
    h->cancelled = 0;
    h->is_timer = (uint8_t)is_timer;
    h->scheduled = 0;
    PyObject_GC_Track(h);
    return h;
}

static int handle_traverse(afd_handle *h, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(h));
    Py_VISIT(h->callback);
    Py_VISIT(h->args);
    Py_VISIT(h->context);
    Py_VISIT(h->loop);
    return 0;
}

static int handle_clear(afd_handle *h)
{
    Py_CLEAR(h->callback);
    Py_CLEAR(h->args);
    Py_CLEAR(h->context);
    Py_CLEAR(h->loop);
    return 0;
}

static void handle_dealloc(afd_handle *h)
{
    PyTypeObject *tp = Py_TYPE(h);
    PyObject_GC_UnTrack(h);
    if (h->weakreflist)
        PyObject_ClearWeakRefs((PyObject *)h);
    handle_clear(h);
    if (freelist_n < FREELIST_MAX && tp == afd_rt_state_of_type(tp)->handle_type)
        freelist[freelist_n++] = h;
    else
        tp->tp_free(h);
    Py_DECREF(tp);
}

int afd_handle_run(afd_rt_state *st, afd_handle *h)
{
    PyObject *cb = h->callback;
    if (!cb)
        return 0;
    Py_INCREF(cb);
    PyObject *ctx = h->context;
    Py_INCREF(ctx);
    PyObject *res = NULL;
    if (PyContext_Enter(ctx) == 0) {
        if (h->args)
            res = PyObject_Call(cb, h->args, NULL);
        else
            res = PyObject_CallNoArgs(cb);
        if (PyContext_Exit(ctx) < 0 && res) {
            Py_CLEAR(res);
        }
    }
    int rc = 0;
    if (!res) {
        if (PyErr_ExceptionMatches(PyExc_SystemExit) || PyErr_ExceptionMatches(PyExc_KeyboardInterrupt)) {
            rc = -1;
        } else {
            /* asyncio.Handle._run: report through the loop's exception handler, never stop the loop. */
            PyObject *exc = afd_take_exception();
            PyObject *msg = PyUnicode_FromFormat("Exception in callback %R", cb);
            PyObject *dict = msg ? PyDict_New() : NULL;
            if (dict && PyDict_SetItem(dict, st->str_message, msg) == 0 &&
                PyDict_SetItem(dict, st->str_exception, exc) == 0 &&
                PyDict_SetItem(dict, st->str_handle, (PyObject *)h) == 0) {
                PyObject *r = PyObject_CallMethodOneArg(h->loop, st->str_call_exception_handler, dict);
                if (!r)
                    rc = -1;
                Py_XDECREF(r);
            } else {
                rc = -1;
            }
            Py_XDECREF(dict);
            Py_XDECREF(msg);
            Py_XDECREF(exc);
        }
    }
    Py_XDECREF(res);
    Py_DECREF(ctx);
    Py_DECREF(cb);
    return rc;
}

static PyObject *handle_cancel(afd_handle *h, PyObject *unused)
{
    if (!h->cancelled) {
        if (h->is_timer && h->scheduled) {
            /* Tell the loop, so it can prune its heap as BaseEventLoop does. */
            PyObject *r = PyObject_CallMethod(h->loop, "_timer_handle_cancelled", "O", (PyObject *)h);
            if (!r)
                return NULL;
            Py_DECREF(r);
        }
        h->cancelled = 1;
        Py_CLEAR(h->callback);
        Py_CLEAR(h->args);
    }
    Py_RETURN_NONE;
}

static PyObject *handle_cancelled(afd_handle *h, PyObject *unused)
{
    return PyBool_FromLong(h->cancelled);
}

static PyObject *handle_get_context(afd_handle *h, PyObject *unused)
{
    return Py_NewRef(h->context);
}

static PyObject *handle_when(afd_handle *h, PyObject *unused)
{
    return PyFloat_FromDouble(h->when);
}

static PyObject *handle_run_py(afd_handle *h, PyObject *unused)
{
    afd_rt_state *st = afd_rt_state_of_type(Py_TYPE(h));
    if (afd_handle_run(st, h) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *handle_repr(afd_handle *h)
{
    const char *kind = h->is_timer ? "TimerHandle" : "Handle";
    if (h->cancelled)
        return PyUnicode_FromFormat("<%s cancelled>", kind);
    if (h->is_timer) {
        PyObject *w = PyFloat_FromDouble(h->when);
        PyObject *r = w ? PyUnicode_FromFormat("<%s when=%R %R>", kind, w, h->callback) : NULL;
        Py_XDECREF(w);
        return r;
    }
    return PyUnicode_FromFormat("<%s %R>", kind, h->callback);
}

static PyObject *handle_richcompare(afd_handle *a, PyObject *other, int op)
{
    afd_rt_state *st = afd_rt_state_of_type(Py_TYPE(a));
    if (!PyObject_TypeCheck(other, st->handle_type) || !a->is_timer || !((afd_handle *)other)->is_timer)
        Py_RETURN_NOTIMPLEMENTED;
    afd_handle *b = (afd_handle *)other;
    if (op == Py_EQ || op == Py_NE) {
        int eq = (a == b) || (a->when == b->when && a->callback == b->callback && a->cancelled == b->cancelled);
        return PyBool_FromLong(op == Py_EQ ? eq : !eq);
    }
    Py_RETURN_RICHCOMPARE(a->when, b->when, op);
}

static Py_hash_t handle_hash(afd_handle *h)
{
    if (h->is_timer) {
        PyObject *f = PyFloat_FromDouble(h->when); /* asyncio hashes timers by deadline */
        if (!f)
            return -1;
        Py_hash_t r = PyObject_Hash(f);
        Py_DECREF(f);
        return r;
    }
    return afd_hash_pointer(h);
}

static PyObject *get_callback(afd_handle *h, void *c) { return Py_NewRef(h->callback ? h->callback : Py_None); }
static PyObject *get_args(afd_handle *h, void *c)
{
    if (h->args)
        return Py_NewRef(h->args);
    if (h->cancelled)
        Py_RETURN_NONE;
    return PyTuple_New(0);
}
static PyObject *get_cancelled(afd_handle *h, void *c) { return PyBool_FromLong(h->cancelled); }
static PyObject *get_scheduled(afd_handle *h, void *c) { return PyBool_FromLong(h->scheduled); }
static int set_scheduled(afd_handle *h, PyObject *v, void *c)
{
    int t = v ? PyObject_IsTrue(v) : 0;
    if (t < 0)
        return -1;
    h->scheduled = (uint8_t)t;
    return 0;
}
static PyObject *get_when(afd_handle *h, void *c) { return PyFloat_FromDouble(h->when); }
static PyObject *get_context(afd_handle *h, void *c) { return Py_NewRef(h->context); }
static PyObject *get_loop(afd_handle *h, void *c) { return Py_NewRef(h->loop ? h->loop : Py_None); }
static PyObject *get_none(afd_handle *h, void *c) { Py_RETURN_NONE; }

static PyGetSetDef handle_getset[] = {
    {"_callback", (getter)get_callback, NULL, NULL, NULL},
    {"_args", (getter)get_args, NULL, NULL, NULL},
    {"_cancelled", (getter)get_cancelled, NULL, NULL, NULL},
    {"_scheduled", (getter)get_scheduled, (setter)set_scheduled, NULL, NULL},
    {"_when", (getter)get_when, NULL, NULL, NULL},
    {"_context", (getter)get_context, NULL, NULL, NULL},
    {"_loop", (getter)get_loop, NULL, NULL, NULL},
    {"_source_traceback", (getter)get_none, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef handle_methods[] = {
    {"cancel", (PyCFunction)handle_cancel, METH_NOARGS, "Cancel the callback."},
    {"cancelled", (PyCFunction)handle_cancelled, METH_NOARGS, "Whether the callback was cancelled."},
    {"get_context", (PyCFunction)handle_get_context, METH_NOARGS, "The context the callback runs in."},
    {"when", (PyCFunction)handle_when, METH_NOARGS, "A timer's deadline in loop time."},
    {"_run", (PyCFunction)handle_run_py, METH_NOARGS, "Run the callback."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef handle_members[] = {
    {"__weaklistoffset__", T_PYSSIZET, offsetof(afd_handle, weakreflist), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot handle_slots[] = {
    {Py_tp_dealloc, handle_dealloc},
    {Py_tp_traverse, handle_traverse},
    {Py_tp_clear, handle_clear},
    {Py_tp_repr, handle_repr},
    {Py_tp_richcompare, handle_richcompare},
    {Py_tp_hash, handle_hash},
    {Py_tp_methods, handle_methods},
    {Py_tp_members, handle_members},
    {Py_tp_getset, handle_getset},
    {Py_tp_doc, "A callback scheduled on the controlled loop (asyncio.Handle / TimerHandle surface)."},
    {0, NULL},
};

static PyType_Spec handle_spec = {
    .name = "affidavit._runtime.Handle",
    .basicsize = sizeof(afd_handle),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = handle_slots,
};

PyObject *afd_handle_type_spec_new(PyObject *module)
{
    return PyType_FromModuleAndSpec(module, &handle_spec, NULL);
}
