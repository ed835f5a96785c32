/* loop_debug.c -- asyncio's debug mode on the controlled loop.
 *
 * In debug mode (loop.set_debug(True), asyncio.run(debug=True), PYTHONASYNCIODEBUG, -X dev) the
 * stock loop checks every call_soon and call_at (call_later is one) for the thread it comes from
 * and the callback it gets, records where each handle was made, and logs a callback that ran
 * longer than slow_callback_duration. A test may count on any of it (a call_soon from another
 * thread raises RuntimeError; "Executing <Handle ...> took 0.200 seconds" is logged), so the
 * controlled loop does the same, through asyncio's own methods and logger: BaseEventLoop's
 * _check_thread and _check_callback, format_helpers.extract_stack, base_events' _format_handle.
 * A step's duration is the loop's clock across it, as on stock asyncio: a controlled loop's is the
 * step's cost (what the schedule gave it, and what it spent blocking), so a stalled step is logged
 * as the slow callback it would be on a machine where it took that long. Not done: the selector's
 * "poll took N ms" lines (logged at DEBUG, or INFO past 1 s). Outside debug mode none of this runs
 * (loop.c asks one byte). */
#include "runtime.h"

int afd_loop_debug_check(PyObject *loop, PyObject *cb, const char *method, int thread)
{
    if (thread) {
        PyObject *r = PyObject_CallMethod(loop, "_check_thread", NULL);
        if (!r)
            return -1;
        Py_DECREF(r);
    }
    PyObject *r = PyObject_CallMethod(loop, "_check_callback", "Os", cb, method);
    if (!r)
        return -1;
    Py_DECREF(r);
    return 0;
}

int afd_loop_debug_traceback(PyObject *handle)
{
    PyObject *helpers = PyImport_ImportModule("asyncio.format_helpers");
    PyFrameObject *f = PyEval_GetFrame(); /* Borrowed: the caller of call_soon, call_at, ... */
    PyObject *stack =
        helpers ? PyObject_CallMethod(helpers, "extract_stack", "O", f ? (PyObject *)f : Py_None) : NULL;
    Py_XDECREF(helpers);
    int rc = stack ? PyObject_SetAttrString(handle, "_source_traceback", stack) : -1;
    Py_XDECREF(stack);
    return rc;
}

int afd_loop_debug_begin(PyObject *loop, PyObject *handle)
{
    return PyObject_SetAttrString(loop, "_current_handle", handle);
}

/* Logs 'Executing %s took %.3f seconds' as BaseEventLoop._run_once does. */
static int log_slow(PyObject *loop, PyObject *handle, double dt)
{
    PyObject *slow = PyObject_GetAttrString(loop, "slow_callback_duration");
    double limit = slow ? PyFloat_AsDouble(slow) : -1.0;
    Py_XDECREF(slow);
    if (PyErr_Occurred())
        return -1;
    if (dt < limit)
        return 0;
    PyObject *be = PyImport_ImportModule("asyncio.base_events");
    PyObject *logger = be ? PyObject_GetAttrString(be, "logger") : NULL;
    PyObject *shown = be ? PyObject_CallMethod(be, "_format_handle", "O", handle) : NULL;
    PyObject *r = logger && shown ? PyObject_CallMethod(logger, "warning", "sOd",
                                                        "Executing %s took %.3f seconds", shown, dt)
                                  : NULL;
    Py_XDECREF(r);
    Py_XDECREF(shown);
    Py_XDECREF(logger);
    Py_XDECREF(be);
    return r ? 0 : -1;
}

void afd_loop_debug_end(PyObject *loop, PyObject *handle, double dt)
{
    if (dt >= 0 && log_slow(loop, handle, dt) < 0)
        PyErr_WriteUnraisable(loop);
    if (PyObject_SetAttrString(loop, "_current_handle", Py_None) < 0)
        PyErr_WriteUnraisable(loop);
}
