/* clocks.c -- the program's real clocks agree with the controlled loop's virtual clock.
 *
 * On stock asyncio `loop.time()` is `time.monotonic()`: after `await asyncio.sleep(0.05)` at least
 * 0.05 s of monotonic time has passed. A controlled loop jumps its virtual clock instead of
 * waiting, so a program that compares `time.monotonic()` (or `perf_counter`, `time.time` and their
 * `_ns` forms) with a sleep would see a run no machine can make. So in a controlled run each of
 * these reads, on the run's own thread, the process's virtual clock plus a fixed offset taken
 * when the run's first controlled loop began (the real reading then, rounded up to 2 ms), and so
 * does the controlled loop's own time(), as on stock asyncio: every clock tells the loop's story
 * from then on, and continues the real readings made before it. Until a controlled loop
 * begins the clocks are real: a stock loop a library runs itself (aiorun's, trio's clock) reads
 * time.monotonic or perf_counter to wait, and a virtual clock nothing moves would never get there.
 *
 * The virtual clock of the process (afd_vclock_ns) is the clock of the controlled loops that ran
 * on the run's thread: a loop starts where the last one left it (so monotonic() never goes back
 * between two loops of one test) and carries it forward; `time.sleep` outside a step advances it
 * by what was slept (inside a step the sleep is the step's cost, hooks.c).
 *
 * What stays real, on purpose: other threads (they progress in real time: a worker thread's
 * deadline is a real one), and the standard library's own modules outside asyncio (threading's,
 * queue's and subprocess's timed waits block for real and compute their deadlines from these
 * clocks: a virtual deadline that never moves while they wait would make them wait forever).
 * Not virtual either: `datetime.now()`, `time.process_time()`, `time.thread_time()` and C code
 * that reads the clock itself; natural runs are untouched.
 *
 * A read takes AFD_CLOCK_READ_NS of virtual time, so the clock moves under a program that waits for
 * it to (`while time.perf_counter() < end: pass`) as it does on a real machine, and a step that reads
 * it n times costs n reads more. Deterministic: a schedule still decides the whole run.
 *
 * Workload: a clock read is a handful of C operations and one frame lookup. */
#include "runtime.h"

#include <string.h>
#include <time.h>

uint64_t afd_vclock_ns = AFD_EPOCH_NS;

static unsigned long run_thread; /* the thread the run's test runs on (set at the run's start) */
static int run_virtual;          /* this run is controlled: the clocks read virtual time */
static int engaged;              /* a controlled loop began on the run's thread: they do from now on */

enum { CLK_MONO, CLK_PERF, CLK_WALL, N_CLK };
/* Each clock reads base_k[clock] / 512 s + the virtual clock: base_k / 512 s is the real reading at
 * the engagement less the virtual clock then, rounded up to a multiple of 2^-9 s (1953125 ns, so
 * the _ns forms stay whole). The controlled loop's time() reads the same (loop.c): loop.time() is
 * time.monotonic() (and perf_counter(), one clock on Linux) as on stock asyncio. The loop keeps its
 * timers on the virtual clock itself (AFD_EPOCH_NS on), where a double resolves well under a
 * nanosecond, and adds the offset only to what the program sees: a timer's when(), loop.time(); a
 * call_at() takes it off again. A multiple of 2^-9 s is a multiple of a double's step at any time
 * below 2^43 s, so the offset adds and subtracts exactly. */
#define BASE_GRID_NS 1953125LL
static int64_t base_k[N_CLK];
static PyObject *real_fn[N_CLK][2]; /* Owned: the original float and _ns functions */
static char *stdlib_dir, *site_dir; /* Owned: sysconfig's stdlib and purelib directories */
static size_t stdlib_len, site_len;

static const char *const names[N_CLK][2] = {
    {"monotonic", "monotonic_ns"}, {"perf_counter", "perf_counter_ns"}, {"time", "time_ns"}};
static const clockid_t clock_ids[N_CLK] = {CLOCK_MONOTONIC, CLOCK_MONOTONIC, CLOCK_REALTIME};

static int64_t real_ns(int which)
{
    struct timespec ts;
    clock_gettime(clock_ids[which], &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + (int64_t)ts.tv_nsec;
}

void afd_clock_run_begin(void)
{
    run_virtual = afd_rt_config.configured && afd_rt_config.mode == AFD_MODE_CONTROLLED;
    run_thread = PyThread_get_thread_ident();
    afd_vclock_ns = AFD_EPOCH_NS;
    engaged = 0;
    memset(base_k, 0, sizeof base_k);
}

void afd_clock_engage(void)
{
    if (engaged || !afd_clock_on_run_thread())
        return;
    engaged = 1;
    afd_vclock_ns = AFD_EPOCH_NS;
    for (int i = 0; i < N_CLK; i++) {
        int64_t r = i == CLK_PERF ? real_ns(CLK_MONO) : real_ns(i);     /* perf_counter is monotonic here */
        int64_t up = r > 0 ? (r + BASE_GRID_NS - 1) / BASE_GRID_NS : 0; /* never before the reading */
        base_k[i] = up - (int64_t)(AFD_EPOCH_NS / BASE_GRID_NS);
    }
}

void afd_clock_disengage(void)
{
    if (!engaged || !afd_clock_on_run_thread())
        return;
    /* A virtual reading was up to one grid step (and its reads) ahead of the real clock: wait until
     * the real clocks pass every reading given, so none of them goes back (a few ms at most). */
    for (int tries = 0; tries < 100; tries++) {
        int behind = 0;
        for (int i = 0; i < N_CLK; i++) {
            int64_t given = base_k[i] * BASE_GRID_NS + (int64_t)afd_vclock_ns;
            behind |= real_ns(i == CLK_PERF ? CLK_MONO : i) < given;
        }
        if (!behind)
            break;
        struct timespec ts = {0, 1000000L};
        nanosleep(&ts, NULL);
    }
    engaged = 0;
    afd_vclock_ns = AFD_EPOCH_NS;
    memset(base_k, 0, sizeof base_k);
}

static double seconds_of(int which, uint64_t vns)
{
    return (double)base_k[which] / 512.0 + (double)vns / 1e9;
}

double afd_clock_base_seconds(void)
{
    return (double)base_k[CLK_MONO] / 512.0;
}

int afd_clock_on_run_thread(void)
{
    return run_virtual && PyThread_get_thread_ident() == run_thread;
}

int afd_clock_off_run_thread(void)
{
    return run_thread && PyThread_get_thread_ident() != run_thread;
}

void afd_clock_advance_to(uint64_t clock_ns)
{
    if (clock_ns > afd_vclock_ns && afd_clock_on_run_thread())
        afd_vclock_ns = clock_ns;
}

void afd_clock_slept(uint64_t ns)
{
    if (engaged && afd_clock_on_run_thread())
        afd_vclock_ns += ns;
}

/* Whether the caller is the standard library outside asyncio (threading, queue, subprocess...):
 * its timed waits block for real, so it reads the real clocks. */
static int caller_is_stdlib(void)
{
    PyFrameObject *f = PyEval_GetFrame(); /* Borrowed. */
    if (!f || !stdlib_dir)
        return 0;
    PyCodeObject *code = PyFrame_GetCode(f);
    PyObject *fn = PyObject_GetAttrString((PyObject *)code, "co_filename");
    Py_DECREF(code);
    const char *u = fn ? PyUnicode_AsUTF8(fn) : NULL;
    int lib = u && strncmp(u, stdlib_dir, stdlib_len) == 0 && u[stdlib_len] == '/' &&
              !(site_dir && strncmp(u, site_dir, site_len) == 0) && !strstr(u + stdlib_len, "/asyncio/");
    Py_XDECREF(fn);
    PyErr_Clear();
    return lib;
}

/* The clock's virtual reading in ns, or -1 when this call reads the real clock. */
static int64_t virtual_ns(int which)
{
    if (!engaged || !afd_clock_on_run_thread() || caller_is_stdlib())
        return -1;
    /* Each read takes AFD_CLOCK_READ_NS of virtual time: a program that busy-waits on the clock
     * sees it move (and its step costs that long), as it does on any machine. */
    uint64_t v;
    if (afd_rec_current && afd_loop_on_step_thread()) {
        afd_rec_extra_cost += AFD_CLOCK_READ_NS; /* with what blocking sleeps in the step took */
        v = afd_vclock_ns + afd_rec_extra_cost;
        afd_loop_note_time_read();
    } else {
        v = afd_vclock_ns += AFD_CLOCK_READ_NS;
    }
    return (int64_t)v;
}

static uint64_t real_reads; /* the real readings these clocks gave (afd_clock_real_reads) */

uint64_t afd_clock_real_reads(void)
{
    return real_reads;
}

static PyObject *read_clock(int which, int ns)
{
    int64_t v = virtual_ns(which);
    if (v < 0) {
        real_reads++;
        return PyObject_CallNoArgs(real_fn[which][ns]);
    }
    if (ns)
        return PyLong_FromLongLong(v + base_k[which] * BASE_GRID_NS);
    return PyFloat_FromDouble(seconds_of(which, (uint64_t)v));
}

#define CLOCK_FN(name, which, ns)                                                                            \
    static PyObject *name(PyObject *self, PyObject *unused)                                                  \
    {                                                                                                        \
        (void)self;                                                                                          \
        (void)unused;                                                                                        \
        return read_clock(which, ns);                                                                        \
    }
CLOCK_FN(hook_monotonic, CLK_MONO, 0)
CLOCK_FN(hook_monotonic_ns, CLK_MONO, 1)
CLOCK_FN(hook_perf_counter, CLK_PERF, 0)
CLOCK_FN(hook_perf_counter_ns, CLK_PERF, 1)
CLOCK_FN(hook_time, CLK_WALL, 0)
CLOCK_FN(hook_time_ns, CLK_WALL, 1)

static PyMethodDef defs[N_CLK][2] = {
    {{"monotonic", hook_monotonic, METH_NOARGS, "time.monotonic(), virtual in a controlled run (affidavit)"},
     {"monotonic_ns", hook_monotonic_ns, METH_NOARGS, "time.monotonic_ns(), virtual in a controlled run"}},
    {{"perf_counter", hook_perf_counter, METH_NOARGS, "time.perf_counter(), virtual in a controlled run"},
     {"perf_counter_ns", hook_perf_counter_ns, METH_NOARGS,
      "time.perf_counter_ns(), virtual in a controlled run"}},
    {{"time", hook_time, METH_NOARGS, "time.time(), virtual in a controlled run (affidavit)"},
     {"time_ns", hook_time_ns, METH_NOARGS, "time.time_ns(), virtual in a controlled run (affidavit)"}},
};

static char *path_of(PyObject *paths, const char *key, size_t *len)
{
    PyObject *v = PyDict_GetItemString(paths, key); /* Borrowed. */
    const char *u = v && PyUnicode_Check(v) ? PyUnicode_AsUTF8(v) : NULL;
    char *copy = u ? strdup(u) : NULL;
    *len = copy ? strlen(copy) : 0;
    while (copy && *len > 1 && copy[*len - 1] == '/')
        copy[--*len] = '\0';
    PyErr_Clear();
    return copy;
}

int afd_clock_install(void)
{
    if (real_fn[0][0])
        return 0;
    PyObject *sysconfig = PyImport_ImportModule("sysconfig");
    PyObject *paths = sysconfig ? PyObject_CallMethod(sysconfig, "get_paths", NULL) : NULL;
    Py_XDECREF(sysconfig);
    if (paths && PyDict_Check(paths)) {
        stdlib_dir = path_of(paths, "stdlib", &stdlib_len);
        site_dir = path_of(paths, "purelib", &site_len);
    }
    Py_XDECREF(paths);
    PyErr_Clear();
    PyObject *time = PyImport_ImportModule("time");
    if (!time)
        return -1;
    PyObject *orig[N_CLK][2] = {{0}};
    int rc = 0;
    for (int i = 0; i < N_CLK && rc == 0; i++)
        for (int k = 0; k < 2 && rc == 0; k++)
            rc = (orig[i][k] = PyObject_GetAttrString(time, names[i][k])) ? 0 : -1;
    if (rc < 0) {
        for (int i = 0; i < N_CLK; i++)
            for (int k = 0; k < 2; k++)
                Py_XDECREF(orig[i][k]);
        Py_DECREF(time);
        return -1;
    }
    memcpy(real_fn, orig, sizeof orig); /* before any hook is in place: a hook always has its clock */
    for (int i = 0; i < N_CLK && rc == 0; i++)
        for (int k = 0; k < 2 && rc == 0; k++) {
            PyObject *hook = PyCFunction_NewEx(&defs[i][k], NULL, NULL);
            rc = hook ? PyObject_SetAttrString(time, names[i][k], hook) : -1;
            Py_XDECREF(hook);
        }
    Py_DECREF(time);
    return rc;
}
