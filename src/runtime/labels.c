/* labels.c -- which function a user wrote stands behind a callback or a task's coroutine.
 *
 * A report names a step by the function it ran. Real code rarely hands asyncio that function
 * directly: it schedules functools.partial(f, ...) (or a partial of a bound method, or a partial
 * of a partial), and caching decorators such as async-lru's alru_cache are objects whose async
 * __call__ makes every coroutine, so the coroutine's own qualname is the wrapper's. Both are seen
 * through here: a partial is unwrapped to its func, a bound method to its function, and a
 * coroutine of a `__call__` whose receiver carries `__wrapped__` (what functools.update_wrapper
 * sets) is named after the wrapped function.
 *
 * Invariant: the result depends only on the objects' structure, never on addresses, so labels
 * stay stable across runs of one schedule. Workload: once per new callback key or new task;
 * a coroutine's frame locals are read only when its code is named __call__. */
#include "runtime.h"

#include <string.h>

/* Unwrapping stops after this many layers: a partial of itself cannot be built, but a chain of
 * user-made wrappers has no natural bound. */
#define MAX_LAYERS 8

static int is_partial(PyObject *obj)
{
    /* C and pure-Python functools.partial both call themselves "functools.partial" or
     * "partial"; subclasses keep the func attribute, which is what matters. */
    const char *name = Py_TYPE(obj)->tp_name;
    return strcmp(name, "functools.partial") == 0 || strcmp(name, "partial") == 0;
}

PyObject *afd_rt_callback_target(PyObject *cb)
{
    PyObject *f = Py_NewRef(cb);
    for (int i = 0; i < MAX_LAYERS; i++) {
        PyObject *next = NULL;
        if (PyMethod_Check(f))
            next = Py_NewRef(PyMethod_GET_FUNCTION(f));
        else if (is_partial(f))
            next = PyObject_GetAttrString(f, "func");
        else
            break;
        if (!next) {
            PyErr_Clear();
            break;
        }
        Py_SETREF(f, next);
    }
    return f;
}

/* The receiver (first argument) of a coroutine that has not necessarily started, or NULL
 * without an exception. New reference. */
static PyObject *coro_receiver(PyObject *coro)
{
    PyObject *code = PyObject_GetAttrString(coro, "cr_code");
    PyObject *frame = code ? PyObject_GetAttrString(coro, "cr_frame") : NULL;
    PyObject *names = frame && frame != Py_None ? PyObject_GetAttrString(code, "co_varnames") : NULL;
    PyObject *locals = names ? PyObject_GetAttrString(frame, "f_locals") : NULL;
    PyObject *self = NULL;
    if (locals && PyTuple_Check(names) && PyTuple_GET_SIZE(names) > 0)
        self = PyObject_GetItem(locals, PyTuple_GET_ITEM(names, 0)); /* names: Borrowed item. */
    Py_XDECREF(locals);
    Py_XDECREF(names);
    Py_XDECREF(frame);
    Py_XDECREF(code);
    if (!self)
        PyErr_Clear();
    return self;
}

PyObject *afd_rt_coro_qualname(afd_rt_state *st, PyObject *coro)
{
    PyObject *qual = PyObject_GetAttr(coro, st->str_qualname);
    if (!qual || !PyUnicode_Check(qual)) {
        Py_XDECREF(qual);
        PyErr_Clear();
        return NULL;
    }
    if (PyUnicode_Tailmatch(qual, st->str_dunder_call, 0, PY_SSIZE_T_MAX, 1) != 1)
        return qual;
    PyObject *self = coro_receiver(coro);
    PyObject *wrapped = self ? PyObject_GetAttrString(self, "__wrapped__") : NULL;
    PyObject *target = wrapped ? afd_rt_callback_target(wrapped) : NULL;
    PyObject *inner = target ? PyObject_GetAttr(target, st->str_qualname) : NULL;
    Py_XDECREF(target);
    Py_XDECREF(wrapped);
    Py_XDECREF(self);
    if (inner && PyUnicode_Check(inner) && PyUnicode_GetLength(inner) > 0) {
        Py_DECREF(qual);
        return inner;
    }
    Py_XDECREF(inner);
    PyErr_Clear();
    return qual;
}
