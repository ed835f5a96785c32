/* threads.c -- whether another thread of the run can make progress on its own.
 *
 * The controlled loop keeps virtual time only while nothing real can overtake it: while another
 * thread works, an idle loop waits in real time and a delayed step's delay passes in real time
 * (loop.c). A thread that waits for another to wake it, with no timeout of its own, does not work:
 * it moves only when some thread hands it something, and if every other thread waits so, only the
 * loop's own thread can. What a thread is doing is read from the kernel where it can be
 * (/proc/self/task/TID/syscall on Linux: a futex wait without a timeout is a lock, condition,
 * event or queue waited on forever -- CPython's locks, every primitive of threading and queue, an
 * executor's or anyio's idle worker), else from its Python frame (an executor's idle worker). A
 * thread that sleeps, waits with a timeout, reads a socket or computes works, and so does one being
 * started (threading._limbo: no frame yet, while its starter waits for it). Woken by a release,
 * a thread is runnable at once (the kernel sets its state in the waker's call), so a job just
 * handed to a worker is seen as work. */
#include "runtime.h"

#include <stdio.h>
#include <string.h>
#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#endif

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

/* Whether an executor's worker thread, stopped at frame f, waits for work with none queued. */
static int idle_executor_thread(PyObject *f)
{
    PyObject *code = PyObject_GetAttrString(f, "f_code");
    PyObject *name = code ? PyObject_GetAttrString(code, "co_name") : NULL;
    PyObject *file = code ? PyObject_GetAttrString(code, "co_filename") : NULL;
    Py_XDECREF(code);
    const char *n = name && PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
    const char *fn = file && PyUnicode_Check(file) ? PyUnicode_AsUTF8(file) : NULL;
    static const char tail[] = "concurrent/futures/thread.py";
    size_t len = fn ? strlen(fn) : 0;
    int idle = n && fn && strcmp(n, "_worker") == 0 && len >= sizeof tail - 1 &&
               strcmp(fn + len - (sizeof tail - 1), tail) == 0;
    Py_XDECREF(name);
    Py_XDECREF(file);
    if (idle) { /* its queue: a job submitted and not yet taken is work about to start */
        PyObject *locals = PyObject_GetAttrString(f, "f_locals");
        PyObject *q = locals ? PyMapping_GetItemString(locals, "work_queue") : NULL;
        PyObject *empty = q ? PyObject_CallMethod(q, "empty", NULL) : NULL;
        idle = empty == Py_True;
        Py_XDECREF(empty);
        Py_XDECREF(q);
        Py_XDECREF(locals);
    }
    PyErr_Clear();
    return idle;
}

/* The first working thread a run saw, by its threading name, once per run (a run is a process):
 * what a failure that depends on its progress is told to depend on. */
static void name_thread(PyObject *tid)
{
    static int named;
    if (named || !afd_rec_active())
        return;
    named = 1;
    PyObject *threading = PyImport_ImportModule("threading");
    PyObject *active = threading ? PyObject_GetAttrString(threading, "_active") : NULL;
    PyObject *thread = active && PyDict_Check(active) ? PyDict_GetItemWithError(active, tid) : NULL;
    PyObject *name = thread ? PyObject_GetAttrString(thread, "name") : NULL;
    Py_XDECREF(active);
    Py_XDECREF(threading);
    uint32_t id =
        name && PyUnicode_Check(name) ? afd_rec_intern(name, NULL) : afd_rec_intern(NULL, "a thread");
    Py_XDECREF(name);
    PyErr_Clear();
    afd_rec_event(AFD_EV_UNCONTROLLED, 0, afd_rec_current, AFD_TRACE_THREADS, id, afd_rec_now, 0);
}

/* Whether the thread with native id tid is blocked in a futex wait that has no timeout. */
static int waits_forever(long tid)
{
#if defined(__linux__) && defined(SYS_futex)
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/self/task/%ld/syscall", tid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    long nr;
    unsigned long long uaddr, op, val, timeout;
    if (sscanf(buf, "%ld %llx %llx %llx %llx", &nr, &uaddr, &op, &val, &timeout) != 5 || nr != SYS_futex)
        return 0;
    int cmd = (int)(op & FUTEX_CMD_MASK);
    return (cmd == FUTEX_WAIT || cmd == FUTEX_WAIT_BITSET) && timeout == 0;
#else
    (void)tid;
    return 0;
#endif
}

/* Whether the Python thread `ident` (a key of sys._current_frames) waits forever (waits_forever). */
static int thread_waits_forever(PyObject *active, PyObject *ident)
{
    PyObject *thread = active && PyDict_Check(active) ? PyDict_GetItemWithError(active, ident) : NULL;
    PyObject *native = thread ? PyObject_GetAttrString(thread, "native_id") : NULL;
    long tid = native && PyLong_Check(native) ? PyLong_AsLong(native) : -1;
    Py_XDECREF(native);
    PyErr_Clear();
    return tid > 0 && waits_forever(tid);
}

/* Whether a thread is being started: in threading._limbo from Thread.start() until its first
 * Python code runs. It has no frame yet, and the thread that started it waits for it without a
 * timeout (Thread.start waits for it to say it runs), so it is the only one that can move. */
static int thread_starting(PyObject *threading)
{
    PyObject *limbo = threading ? PyObject_GetAttrString(threading, "_limbo") : NULL;
    int starting = limbo && PyDict_Check(limbo) && PyDict_GET_SIZE(limbo) > 0;
    Py_XDECREF(limbo);
    PyErr_Clear();
    return starting;
}

int afd_hooks_threads_working(void)
{
    PyObject *get = PySys_GetObject("_current_frames"); /* Borrowed. */
    PyObject *frames = get ? PyObject_CallNoArgs(get) : NULL;
    if (!frames || !PyDict_Check(frames)) {
        Py_XDECREF(frames);
        PyErr_Clear();
        return afd_hooks_other_threads(); /* no way to tell: any other thread may be working */
    }
    unsigned long me = PyThread_get_thread_ident();
    PyObject *threading = PyImport_ImportModule("threading");
    PyObject *active = threading ? PyObject_GetAttrString(threading, "_active") : NULL;
    PyErr_Clear();
    PyObject *key, *frame;
    Py_ssize_t pos = 0;
    int working = 0;
    while (!working && PyDict_Next(frames, &pos, &key, &frame)) {
        unsigned long tid = PyLong_AsUnsignedLong(key);
        if (PyErr_Occurred()) {
            PyErr_Clear();
            continue;
        }
        working = tid != me && !idle_executor_thread(frame) && !thread_waits_forever(active, key);
        if (working)
            name_thread(key);
    }
    Py_DECREF(frames);
    Py_XDECREF(active);
    if (!working)
        working = thread_starting(threading);
    Py_XDECREF(threading);
    return working;
}
