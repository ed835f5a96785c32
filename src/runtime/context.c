/* context.c -- what the worker tells the runtime about where a run happens, and what the runtime
 * tells the engine about event loops it does not control.
 *
 * Paths in a trace are relative to one base directory, fixed by the worker before its first fork
 * (set_context): the directory the engine and the worker were started in, which is also where
 * the engine reads the user's files from. Files of the standard library and of site-packages
 * (sysconfig's directories) are shown relative to their directory instead, as
 * asyncio/timeouts.py or aiocache/base.py: they are never the user's files, and a path that climbs
 * out of the project (../../root/.pyenv/...) reads as noise. Other paths outside the base stay
 * absolute. A test that changes the working directory (os.chdir,
 * monkeypatch.chdir) therefore changes nothing in its trace.
 *
 * An event loop that is not a ControlledLoop (a conftest's event_loop_policy fixture or a loop
 * factory made it, or a thread other than the test's runs it: a library's sync-to-async portal)
 * runs on real time, outside the schedule. When one becomes the running loop the
 * run's trace gets the AFD_TRACE_FOREIGN_LOOP flag and one UNCONTROLLED event whose b is a
 * description of that loop and the policy in force, so the engine can say what ran.
 *
 * Invariant: both are set-once facts of a process (the base) or of a run (the flag, recorded at
 * most once a run). Workload: the base is read once per code object a run sees; the foreign-loop
 * check costs one MRO walk each time a loop starts or stops running. */
#include "runtime.h"

#include <string.h>
#include <unistd.h>

/* The base directory of trace paths, without a trailing slash ("" for the root directory). */
static char base_dir[4096];
static size_t base_len;
static int base_set; /* 0 until the worker sets the base */
/* What the worker knows of who chose the event loop policy, e.g. a conftest's fixture. */
static char loop_note[1024];

/* sysconfig's stdlib, platstdlib, purelib and platlib directories, without trailing slashes:
 * a frame in a file under one of them is shown relative to it (asyncio/timeouts.py:115), the way
 * a reader knows library files, instead of as a walk up from the start directory. */
#define N_LIB_DIRS 4
static char lib_dirs[N_LIB_DIRS][1024];
static size_t lib_lens[N_LIB_DIRS];

int afd_rt_set_library_dirs(PyObject *paths)
{
    static const char *const keys[N_LIB_DIRS] = {"stdlib", "platstdlib", "purelib", "platlib"};
    for (int i = 0; i < N_LIB_DIRS; i++) {
        lib_lens[i] = 0;
        PyObject *v = PyDict_GetItemString(paths, keys[i]); /* Borrowed. */
        const char *u = v && PyUnicode_Check(v) ? PyUnicode_AsUTF8(v) : NULL;
        if (!u) {
            PyErr_Clear();
            continue;
        }
        size_t n = strlen(u);
        while (n > 1 && u[n - 1] == '/')
            n--;
        if (u[0] != '/' || n >= sizeof lib_dirs[i])
            continue; /* a relative or very long entry is never a prefix of a code path we show */
        memcpy(lib_dirs[i], u, n);
        lib_dirs[i][n] = '\0';
        lib_lens[i] = n;
    }
    return 0;
}

const char *afd_rt_library_relative(const char *path)
{
    size_t best = 0;
    for (int i = 0; i < N_LIB_DIRS; i++) {
        size_t n = lib_lens[i]; /* the longest match wins: site-packages lies inside the stdlib dir */
        if (n > best && strncmp(path, lib_dirs[i], n) == 0 && path[n] == '/' && path[n + 1])
            best = n;
    }
    return best ? path + best + 1 : NULL;
}

PyObject *afd_rt_library_path(PyObject *self, PyObject *arg)
{
    (void)self;
    const char *u = PyUnicode_Check(arg) ? PyUnicode_AsUTF8(arg) : NULL;
    if (!u) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "library_path: expected a str");
        return NULL;
    }
    const char *r = afd_rt_library_relative(u);
    if (!r)
        Py_RETURN_NONE;
    return PyUnicode_FromString(r);
}

const char *afd_rt_relative(const char *path, char *scratch, size_t len)
{
    const char *lib = afd_rt_library_relative(path);
    if (lib) /* first: a virtual environment often lies inside the project */
        return lib;
    const char *base = base_dir;
    size_t bl = base_len;
    if (!base_set) {
        /* Outside a worker (an in-process recording) nobody fixed a base: the working directory
         * is the best there is. */
        if (!getcwd(scratch, len))
            return path;
        base = scratch;
        bl = strlen(scratch);
    }
    if (strncmp(path, base, bl) == 0 && path[bl] == '/' && path[bl + 1])
        return path + bl + 1;
    return path;
}

static int copy_utf8(PyObject *s, char *dst, size_t cap, const char *what)
{
    Py_ssize_t n = 0;
    const char *u = PyUnicode_AsUTF8AndSize(s, &n);
    if (!u)
        return -1;
    if ((size_t)n >= cap || memchr(u, '\0', (size_t)n)) {
        PyErr_Format(PyExc_ValueError, "set_context: %s is too long or holds a NUL", what);
        return -1;
    }
    memcpy(dst, u, (size_t)n + 1);
    return 0;
}

PyObject *afd_rt_set_context(PyObject *self, PyObject *args)
{
    PyObject *base, *note;
    if (!PyArg_ParseTuple(args, "UU:set_context", &base, &note))
        return NULL;
    base_set = 0;
    if (copy_utf8(base, base_dir, sizeof base_dir, "the base directory") < 0 ||
        copy_utf8(note, loop_note, sizeof loop_note, "the loop note") < 0)
        return NULL;
    if (base_dir[0] != '/') {
        PyErr_SetString(PyExc_ValueError, "set_context: the base directory must be absolute");
        return NULL;
    }
    base_len = strlen(base_dir);
    while (base_len > 0 && base_dir[base_len - 1] == '/') /* "/" becomes "", which still matches */
        base_dir[--base_len] = '\0';
    base_set = 1;
    Py_RETURN_NONE;
}

/* Whether the loop's class takes `name` from the core (1), or overrides it (0). */
static int keeps_core_method(PyObject *loop, PyTypeObject *core, const char *name)
{
    PyObject *mine = PyObject_GetAttrString((PyObject *)Py_TYPE(loop), name);
    PyObject *ours = PyObject_GetAttrString((PyObject *)core, name);
    int same = mine && mine == ours;
    Py_XDECREF(mine);
    Py_XDECREF(ours);
    PyErr_Clear();
    return same;
}

/* A loop is affidavit's when it is the core's, and its class keeps the core's clock and iteration:
 * a subclass that tells its own time() or runs its own _run_once (looptime's, a fast-forwarding
 * test loop) is a loop the project chose, which the core's iteration would silently overrule. */
int afd_rt_loop_keeps_time(PyObject *loop)
{
    afd_rt_state *st = afd_rt_state_of_type(Py_TYPE(loop));
    return st && st->loopcore_type && keeps_core_method(loop, st->loopcore_type, "time");
}

int afd_rt_loop_keeps_core(PyObject *loop)
{
    afd_rt_state *st = afd_rt_state_of_type(Py_TYPE(loop));
    return st && st->loopcore_type && keeps_core_method(loop, st->loopcore_type, "time") &&
           keeps_core_method(loop, st->loopcore_type, "_run_once");
}

static int is_controlled_loop(PyObject *loop)
{
    afd_rt_state *st = afd_rt_state_of_type(Py_TYPE(loop));
    return st && st->loopcore_type && PyObject_TypeCheck(loop, st->loopcore_type) &&
           afd_rt_loop_keeps_core(loop);
}

/* "module.QualName" of an object's type, or of the object when it is a type (new reference). */
static PyObject *type_name(PyObject *obj)
{
    PyObject *tp = PyType_Check(obj) ? obj : (PyObject *)Py_TYPE(obj);
    PyObject *mod = PyObject_GetAttrString(tp, "__module__");
    PyObject *qual = PyObject_GetAttrString(tp, "__qualname__");
    PyObject *r = NULL;
    if (mod && qual && PyUnicode_Check(mod) && PyUnicode_Check(qual))
        r = PyUnicode_FromFormat("%U.%U", mod, qual);
    Py_XDECREF(mod);
    Py_XDECREF(qual);
    if (!r) {
        PyErr_Clear();
        r = PyUnicode_FromString(((PyTypeObject *)tp)->tp_name);
    }
    return r;
}

/* The policy asyncio creates loops with, as "module.QualName" (new reference), or NULL with no
 * exception set. */
static PyObject *policy_name(void)
{
    PyObject *events = PyImport_ImportModule("asyncio.events");
    PyObject *policy = events ? PyObject_CallMethod(events, "get_event_loop_policy", NULL) : NULL;
    PyObject *r = policy ? type_name(policy) : NULL;
    Py_XDECREF(policy);
    Py_XDECREF(events);
    PyErr_Clear();
    return r;
}

PyObject *afd_rt_thread_name(void)
{
    PyObject *threading = PyImport_ImportModule("threading");
    PyObject *t = threading ? PyObject_CallMethod(threading, "current_thread", NULL) : NULL;
    PyObject *name = t ? PyObject_GetAttrString(t, "name") : NULL;
    Py_XDECREF(t);
    Py_XDECREF(threading);
    if (name && !PyUnicode_Check(name))
        Py_CLEAR(name);
    PyErr_Clear();
    return name;
}

void afd_rt_note_running_loop(PyObject *loop)
{
    if (loop == Py_None || !afd_rec_active() || (afd_rec_flags() & AFD_TRACE_FOREIGN_LOOP) ||
        is_controlled_loop(loop))
        return;
    PyObject *exc_type, *exc, *tb;
    PyErr_Fetch(&exc_type, &exc, &tb); /* a caller's pending exception stays as it was */
    PyObject *lname = type_name(loop);
    PyObject *pname = policy_name();
    PyObject *text = NULL;
    PyObject *thread = afd_clock_off_run_thread() ? afd_rt_thread_name() : NULL;
    if (lname && thread) /* asyncio's stock loop, say, that a library's thread runs (a portal) */
        text = PyUnicode_FromFormat("%U in the thread '%U', not the test's%s%s", lname, thread,
                                    loop_note[0] ? "; " : "", loop_note);
    else if (lname && pname)
        text = PyUnicode_FromFormat("%U under the event loop policy %U%s%s", lname, pname,
                                    loop_note[0] ? "; " : "", loop_note);
    else if (lname)
        text = PyUnicode_FromFormat("%U%s%s", lname, loop_note[0] ? "; " : "", loop_note);
    afd_rec_flag(AFD_TRACE_FOREIGN_LOOP);
    afd_rec_event(AFD_EV_UNCONTROLLED, 0, afd_rec_current, AFD_TRACE_FOREIGN_LOOP,
                  text ? afd_rec_intern(text, NULL) : AFD_NOSTR, afd_rec_now, 0);
    Py_XDECREF(text);
    Py_XDECREF(thread);
    Py_XDECREF(pname);
    Py_XDECREF(lname);
    PyErr_Clear();
    PyErr_Restore(exc_type, exc, tb);
}
