/* waits.c -- a timed wait of the run's own thread moves its clocks by what it really waited.
 *
 * In a controlled run the run's thread reads virtual clocks (clocks.c) that move only by the
 * schedule's step costs. A program that blocks that thread on a threading primitive with a
 * timeout computes its deadline from those clocks and waits on the primitive in real time:
 *     endtime = monotonic() + timeout
 *     while not ready:
 *         remaining = endtime - monotonic()
 *         if remaining <= 0: raise Full
 *         cond.wait(remaining)
 * (janus's sync queue, and any library that writes the standard library's pattern itself). On
 * stock asyncio the clock moves by the wait; if the virtual one does not, the loop above waits
 * `timeout` for real again and again and never ends (a hang under the zero schedule). So a timed
 * wait of the run's thread -- threading.Condition.wait with a timeout, which Event, Semaphore,
 * Barrier, queue.Queue and concurrent.futures wait through, and threading.Thread.join with a
 * timeout -- adds what it really blocked to the step's cost (inside a step) or to the virtual
 * clock (outside one), as time.sleep does (hooks.c).
 *
 * Waits without a timeout are left alone: nothing computes a deadline for them, and the start of
 * every thread waits on one (threading.Thread.start), which would put microseconds of real time
 * into the cost of every step that starts a thread. A real wait makes a run's costs the machine's:
 * such a run has another thread that the wait is for, or a timeout it really waited out. Not
 * covered: a lock's acquire(timeout=...) called directly (a method of a C type, not replaceable).
 *
 * Workload: two extra calls per timed wait of the run's thread; other threads pay one check. */
#include "runtime.h"

#include <string.h>
#include <time.h>

static PyObject *orig_wait, *orig_join; /* Owned: threading.Condition.wait, threading.Thread.join */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Whether a call (self, timeout=None) was given a timeout that is not None. */
static int has_timeout(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    if (nargs >= 2)
        return args[1] != Py_None;
    Py_ssize_t nk = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t i = 0; i < nk; i++) {
        const char *k = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, i));
        if (k && !strcmp(k, "timeout"))
            return args[nargs + i] != Py_None;
    }
    PyErr_Clear();
    return 0;
}

/* m_self is the original method: calls it, and moves the run's clocks by what a timed wait of
 * the run's thread really blocked. */
static PyObject *timed_wait(PyObject *orig, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    Py_ssize_t n = PyVectorcall_NARGS(nargs);
    if (!afd_clock_on_run_thread() || !has_timeout(args, n, kwnames))
        return PyObject_Vectorcall(orig, args, nargs, kwnames);
    uint64_t t0 = now_ns();
    PyObject *r = PyObject_Vectorcall(orig, args, nargs, kwnames);
    uint64_t spent = now_ns() - t0;
    if (afd_rec_active() && afd_rec_current && afd_loop_on_step_thread())
        afd_rec_extra_cost += spent; /* the step took this long, as a real sleep in it does */
    else
        afd_clock_slept(spent);
    return r;
}

static PyMethodDef wait_def = {"wait", (PyCFunction)(void (*)(void))timed_wait, METH_FASTCALL | METH_KEYWORDS,
                               "threading.Condition.wait, whose timed waits move affidavit's clocks"};
static PyMethodDef join_def = {"join", (PyCFunction)(void (*)(void))timed_wait, METH_FASTCALL | METH_KEYWORDS,
                               "threading.Thread.join, whose timed waits move affidavit's clocks"};

/* Replaces cls.name (a function) with a method that calls it through timed_wait; *keep gets the
 * original. */
static int wrap(PyObject *threading, const char *cls_name, const char *name, PyMethodDef *def,
                PyObject **keep)
{
    PyObject *cls = PyObject_GetAttrString(threading, cls_name);
    PyObject *orig = cls ? PyObject_GetAttrString(cls, name) : NULL;
    PyObject *fn = orig ? PyCFunction_NewEx(def, orig, NULL) : NULL;
    PyObject *method = fn ? PyInstanceMethod_New(fn) : NULL;
    int rc = method ? PyObject_SetAttrString(cls, name, method) : -1;
    Py_XDECREF(method);
    Py_XDECREF(fn);
    Py_XDECREF(cls);
    if (rc == 0)
        *keep = orig;
    else
        Py_XDECREF(orig);
    return rc;
}

int afd_waits_install(void)
{
    if (orig_wait)
        return 0;
    PyObject *threading = PyImport_ImportModule("threading");
    if (!threading)
        return -1;
    int rc = wrap(threading, "Condition", "wait", &wait_def, &orig_wait);
    if (rc == 0)
        rc = wrap(threading, "Thread", "join", &join_def, &orig_join);
    Py_DECREF(threading);
    return rc;
}
