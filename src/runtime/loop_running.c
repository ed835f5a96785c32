/* loop_running.c -- the running loop, answered without a system call.
 *
 * asyncio's C `_get_running_loop` checks the pid with getpid() on every call (3.10, 3.11), and
 * `_LoopBoundMixin._get_loop` calls it whenever a queue, lock or event makes a waiter: a system
 * call per wait. While a ControlledLoop runs a step on the thread whose `run_forever` made it the
 * running loop (through `events._set_running_loop`, which is wrapped to remember that), the answer
 * is that loop, and it is given from here. Every other case -- another thread, no step in
 * progress, any doubt -- asks the original. After a fork the fast answer is off until the fork
 * server turns it back on in its fresh child, where no loop is running.
 *
 * Invariant: the fast answer is given only when the loop being stepped, the loop last set as
 * running and the calling thread all agree. Workload: one call per waiter made, so the check is
 * two comparisons and a thread id. */
#include "runtime.h"

#include <pthread.h>

static PyObject *orig_get_running_loop;  /* Owned: _asyncio._get_running_loop. */
static PyObject *orig_get_running_loop2; /* Owned: _asyncio.get_running_loop (raises). */
static PyObject *orig_set_running_loop;  /* Owned: _asyncio._set_running_loop. */
static PyObject *set_loop;               /* Owned: the last loop given to _set_running_loop, or NULL. */
static unsigned long set_thread;
static PyObject *stepping_loop; /* Borrowed: the loop whose _run_once is running, or NULL. */
static unsigned long stepping_thread;
static int fast_running_ok = 1;

static void running_after_fork_child(void)
{
    fast_running_ok = 0;
    stepping_loop = NULL;
}

void afd_loop_fresh_process(void)
{
    Py_CLEAR(set_loop);
    stepping_loop = NULL;
    fast_running_ok = 1;
}

static PyObject *fast_running(void)
{
    if (!fast_running_ok || !stepping_loop || stepping_loop != set_loop)
        return NULL;
    unsigned long me = PyThread_get_thread_ident();
    return me == stepping_thread && me == set_thread ? Py_NewRef(set_loop) : NULL;
}

static PyObject *rt_get_running_loop(PyObject *m, PyObject *unused)
{
    PyObject *loop = fast_running();
    return loop ? loop : PyObject_CallNoArgs(orig_get_running_loop);
}

static PyObject *rt_get_running_loop2(PyObject *m, PyObject *unused)
{
    PyObject *loop = fast_running();
    return loop ? loop : PyObject_CallNoArgs(orig_get_running_loop2);
}

static PyObject *rt_set_running_loop(PyObject *m, PyObject *loop)
{
    PyObject *r = PyObject_CallOneArg(orig_set_running_loop, loop);
    Py_CLEAR(set_loop);
    if (r)
        afd_rt_note_running_loop(loop);
    if (r && loop != Py_None) {
        set_loop = Py_NewRef(loop);
        set_thread = PyThread_get_thread_ident();
    }
    return r;
}

static PyMethodDef running_defs[] = {
    {"_get_running_loop", rt_get_running_loop, METH_NOARGS,
     "asyncio's _get_running_loop, answered without a system call inside a controlled step"},
    {"get_running_loop", rt_get_running_loop2, METH_NOARGS,
     "asyncio's get_running_loop, answered without a system call inside a controlled step"},
    {"_set_running_loop", rt_set_running_loop, METH_O,
     "asyncio's _set_running_loop, remembered by affidavit"},
};

int afd_loop_install_running(void)
{
    if (orig_set_running_loop)
        return 0;
    PyObject *c = PyImport_ImportModule("_asyncio");
    PyObject *events = c ? PyImport_ImportModule("asyncio.events") : NULL;
    PyObject *pkg = events ? PyImport_ImportModule("asyncio") : NULL;
    int rc = pkg ? 0 : -1;
    PyObject **origs[] = {&orig_get_running_loop, &orig_get_running_loop2, &orig_set_running_loop};
    for (int i = 0; rc == 0 && i < 3; i++) {
        PyObject *o = PyObject_GetAttrString(c, running_defs[i].ml_name);
        PyObject *fn = o ? PyCFunction_NewEx(&running_defs[i], NULL, NULL) : NULL;
        rc = fn && PyObject_SetAttrString(events, running_defs[i].ml_name, fn) == 0 &&
                     PyObject_SetAttrString(pkg, running_defs[i].ml_name, fn) == 0
                 ? 0
                 : -1;
        if (rc == 0)
            *origs[i] = Py_NewRef(o);
        Py_XDECREF(fn);
        Py_XDECREF(o);
    }
    if (rc == 0 && pthread_atfork(NULL, NULL, running_after_fork_child) != 0) {
        PyErr_SetString(PyExc_OSError, "pthread_atfork failed");
        rc = -1;
    }
    Py_XDECREF(pkg);
    Py_XDECREF(events);
    Py_XDECREF(c);
    return rc;
}

int afd_loop_on_step_thread(void)
{
    return stepping_loop && stepping_thread == PyThread_get_thread_ident();
}

afd_loop_stepping afd_loop_step_begin(PyObject *loop)
{
    afd_loop_stepping prev = {stepping_loop, stepping_thread};
    stepping_loop = loop;
    stepping_thread = PyThread_get_thread_ident();
    return prev;
}

void afd_loop_step_end(afd_loop_stepping prev)
{
    stepping_loop = prev.loop;
    stepping_thread = prev.thread;
}
