/* module.c -- affidavit._runtime: module state, the run configuration, the assertion type.
 *
 * Multi-phase initialization with a module state struct and heap types (PEP 630). The hot paths
 * (loop.c, handle.c) reach the state through their own type (afd_rt_state_of_type), never through
 * a global dictionary lookup. The run configuration (mode and schedule) is process-wide C state:
 * one run is one forked process. */
#include "runtime.h"

#include <malloc.h>
#include <string.h>

static afd_rt_state *module_state(PyObject *m)
{
    return (afd_rt_state *)PyModule_GetState(m);
}

/* The state of the module instance that was executed last. One process runs one interpreter
 * with this extension imported once; a global pointer keeps the per-step paths free of the MRO
 * walk PyType_GetModuleByDef would do for ControlledLoop (a Python subclass), and works on 3.10,
 * which lacks that function. */
static afd_rt_state *current_state;

afd_rt_state *afd_rt_state_of_type(PyTypeObject *tp)
{
    (void)tp;
    return current_state;
}

/* configure(mode, token="", max_steps=0, trace_lines=False, *, mark_lo=0, mark_n=0): sets the mode
 * and schedule of the loops created from now on in this process, whether their steps' lines of
 * user code are traced, and which steps' slots they measure (steps [mark_lo, mark_lo + mark_n),
 * at most 64; SLOT events once the outcome is recorded). Raises ValueError with the decoder's
 * message for a bad token. */
static PyObject *rt_configure(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"mode", "token", "max_steps", "trace_lines", "mark_lo", "mark_n", NULL};
    int mode;
    const char *token = "";
    unsigned long long max_steps = 0, mark_lo = 0;
    unsigned int mark_n = 0;
    int trace_lines = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "i|sKp$KI", kwlist, &mode, &token, &max_steps,
                                     &trace_lines, &mark_lo, &mark_n))
        return NULL;
    if (mode != AFD_MODE_NATURAL && mode != AFD_MODE_CONTROLLED) {
        PyErr_SetString(PyExc_ValueError, "mode must be 0 (natural) or 1 (controlled)");
        return NULL;
    }
    if (mark_n > AFD_SLOTS_MAX) {
        PyErr_SetString(PyExc_ValueError, "mark_n must be at most 64");
        return NULL;
    }
    afd_schedule s;
    afd_schedule_init(&s);
    if (mode == AFD_MODE_CONTROLLED && token[0]) {
        int rc = afd_token_decode(&s, token);
        if (rc < 0) {
            PyErr_SetString(PyExc_ValueError, afd_strerror(rc));
            return NULL;
        }
    }
    afd_schedule_finish(&afd_rt_config.schedule);
    afd_rt_config.schedule = s;
    afd_rt_config.mode = (uint8_t)mode;
    afd_rt_config.max_steps = max_steps;
    afd_rt_config.trace_lines = trace_lines;
    afd_rt_config.mark_lo = mark_lo;
    afd_rt_config.mark_n = mark_n;
    afd_rt_config.configured = 1;
    afd_clock_run_begin();
    if (trace_lines)
        afd_rec_flag(AFD_TRACE_LINES);
    Py_RETURN_NONE;
}

/* random_seed(): the seed the schedule gives the program's `random` module. */
static PyObject *rt_random_seed(PyObject *m, PyObject *unused)
{
    return PyLong_FromUnsignedLongLong(afd_schedule_random_seed(&afd_rt_config.schedule));
}

/* recorder_begin(size=8 MiB): starts a fresh in-process recording (tests, direct use). */
static PyObject *rt_recorder_begin(PyObject *m, PyObject *args)
{
    Py_ssize_t size = 8 << 20;
    if (!PyArg_ParseTuple(args, "|n", &size))
        return NULL;
    if (afd_rec_begin(NULL, (size_t)size, 1) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* result(outcome, failure, drew_random=False): records the run's outcome for the fork server;
 * drew_random marks a run whose program drew from the `random` module the schedule seeded. */
static PyObject *rt_result(PyObject *m, PyObject *args)
{
    int outcome, drew_random = 0;
    PyObject *str;
    if (!PyArg_ParseTuple(args, "iU|p", &outcome, &str, &drew_random))
        return NULL;
    if (outcome < 0 || outcome >= AFD_OUT__COUNT) {
        PyErr_SetString(PyExc_ValueError, "unknown outcome");
        return NULL;
    }
    /* A failure message may hold lone surrogates (bytes decoded with surrogateescape): keep them
     * visible as escapes rather than losing the whole result to an encoding error. */
    PyObject *bytes = PyUnicode_AsEncodedString(str, "utf-8", "backslashreplace");
    if (!bytes)
        return NULL;
    if (drew_random)
        afd_rec_flag(AFD_TRACE_RANDOM);
    afd_rec_result((uint32_t)outcome, PyBytes_AS_STRING(bytes), (size_t)PyBytes_GET_SIZE(bytes));
    Py_DECREF(bytes);
    Py_RETURN_NONE;
}

/* Decodes the token in the str arg into s, which the caller finishes. Returns 0, or -1 with the
 * exception set (ValueError for a token that does not decode). */
static int decode_token(PyObject *arg, afd_schedule *s)
{
    const char *t = PyUnicode_AsUTF8(arg);
    if (!t)
        return -1;
    int rc = afd_token_decode(s, t);
    if (rc < 0) {
        PyErr_SetString(PyExc_ValueError, afd_strerror(rc));
        return -1;
    }
    return 0;
}

/* token_describe(token): a human description of a token's schedule; ValueError if invalid. */
static PyObject *rt_token_describe(PyObject *m, PyObject *arg)
{
    afd_schedule s;
    if (decode_token(arg, &s) < 0)
        return NULL;
    char *d = afd_schedule_describe(&s);
    afd_schedule_finish(&s);
    if (!d)
        return PyErr_NoMemory();
    PyObject *r = PyUnicode_FromString(d);
    free(d);
    return r;
}

/* token_delays(token): the token's explicit delays as [(task label, step ordinal, cost ns)]. */
static PyObject *rt_token_delays(PyObject *m, PyObject *arg)
{
    afd_schedule s;
    if (decode_token(arg, &s) < 0)
        return NULL;
    PyObject *out = PyList_New(0);
    for (uint32_t i = 0; out && i < s.n_delays; i++) {
        PyObject *row = Py_BuildValue("(sIK)", s.delays[i].label, s.delays[i].ordinal,
                                      (unsigned long long)s.delays[i].cost_ns);
        if (!row || PyList_Append(out, row) < 0)
            Py_CLEAR(out);
        Py_XDECREF(row);
    }
    afd_schedule_finish(&s);
    return out;
}

/* The token of s as a str, or ValueError with the library's message when rc (an earlier step's
 * result) or the encoding failed. Finishes s either way. */
static PyObject *token_of(afd_schedule *s, int rc)
{
    char *tok = NULL;
    if (rc == 0)
        rc = afd_token_encode(s, &tok);
    afd_schedule_finish(s);
    if (rc < 0) {
        PyErr_SetString(PyExc_ValueError, afd_strerror(rc));
        return NULL;
    }
    PyObject *r = PyUnicode_FromString(tok);
    free(tok);
    return r;
}

/* portfolio_token(master_seed, i, est_steps=1, strategy=None): the token of the i-th schedule
 * of a search, as the engine's explore would run it (strategy: "zero", "jitter", "pct" or None
 * for the mix). For tests and tools that drive the loop in-process. */
static PyObject *rt_portfolio_token(PyObject *m, PyObject *args)
{
    unsigned long long seed, i;
    unsigned int est = 1;
    const char *strategy = NULL;
    if (!PyArg_ParseTuple(args, "KK|Iz", &seed, &i, &est, &strategy))
        return NULL;
    int only = -1;
    if (strategy) {
        only = afd_strategy_parse(strategy);
        if (only < 0) {
            PyErr_Format(PyExc_ValueError, "unknown strategy %s", strategy);
            return NULL;
        }
    }
    afd_schedule s;
    int rc = afd_schedule_portfolio(&s, seed, i, est, only);
    return token_of(&s, rc);
}

/* token_encode(strategy, seed, pct_depth=0, pct_steps=0, delays=()): a token for an explicit
 * schedule; delays is a sequence of (task label, step ordinal, cost_ns). */
static PyObject *rt_token_encode(PyObject *m, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"strategy", "seed", "pct_depth", "pct_steps", "delays", NULL};
    const char *strategy;
    unsigned long long seed;
    unsigned int depth = 0, steps = 0;
    PyObject *delays = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "sK|IIO", kwlist, &strategy, &seed, &depth, &steps, &delays))
        return NULL;
    int strat = afd_strategy_parse(strategy);
    if (strat < 0) {
        PyErr_Format(PyExc_ValueError, "unknown strategy %s", strategy);
        return NULL;
    }
    afd_schedule s;
    afd_schedule_init(&s);
    s.strategy = (uint8_t)strat;
    s.seed = seed;
    s.pct_depth = depth;
    s.pct_steps = steps;
    PyObject *seq = delays ? PySequence_Fast(delays, "delays must be a sequence") : NULL;
    if (delays && !seq)
        return NULL;
    int rc = 0;
    for (Py_ssize_t i = 0; seq && rc == 0 && i < PySequence_Fast_GET_SIZE(seq); i++) {
        const char *label;
        unsigned int ordinal;
        unsigned long long cost;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "sIK", &label, &ordinal, &cost)) {
            Py_DECREF(seq);
            afd_schedule_finish(&s);
            return NULL;
        }
        rc = afd_schedule_add_delay(&s, label, ordinal, cost);
    }
    Py_XDECREF(seq);
    return token_of(&s, rc);
}

/* trim_heap(): readies the worker's memory for forking, so that every fork copies (and every child
 * unmaps) fewer page-table entries: returns free heap memory to the system and, in a worker whose
 * arenas are on huge pages, collapses the rest onto huge pages (hugeheap.c). Returns the
 * kilobytes collapsed. */
static PyObject *rt_trim_heap(PyObject *m, PyObject *unused)
{
    malloc_trim(0);
    return PyLong_FromLong(afd_worker_heap_installed() ? afd_worker_collapse() : 0);
}

/* ---- assertion(resource): a context manager recording the asserted resource ---- */

typedef struct afd_assertion {
    PyObject_HEAD PyObject *resource; /* Owned str. */
} afd_assertion;

static PyObject *assertion_new(PyTypeObject *tp, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"resource", NULL};
    PyObject *res;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "U", kwlist, &res))
        return NULL;
    afd_assertion *a = (afd_assertion *)tp->tp_alloc(tp, 0);
    if (!a)
        return NULL;
    a->resource = Py_NewRef(res);
    return (PyObject *)a;
}

static void assertion_dealloc(afd_assertion *a)
{
    PyTypeObject *tp = Py_TYPE(a);
    Py_CLEAR(a->resource);
    tp->tp_free(a);
    Py_DECREF(tp);
}

static PyObject *assertion_enter(afd_assertion *a, PyObject *unused)
{
    afd_rec_event(AFD_EV_ASSERT_BEGIN, 0, afd_rec_current, AFD_NOSTR, afd_rec_intern(a->resource, NULL),
                  afd_rec_now, 0);
    return Py_NewRef((PyObject *)a);
}

static PyObject *assertion_exit(afd_assertion *a, PyObject *const *args, Py_ssize_t nargs)
{
    int passed = nargs < 1 || args[0] == Py_None;
    afd_rec_event(AFD_EV_ASSERT_END, (uint8_t)passed, afd_rec_current, AFD_NOSTR,
                  afd_rec_intern(a->resource, NULL), afd_rec_now, 0);
    Py_RETURN_FALSE; /* never swallow the failure */
}

static PyObject *rt_private_root(PyObject *m, PyObject *path)
{
    (void)m;
    if (afd_sharing_private_root(path) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* user_roots(dirs): the directories the collected tests are in, the user's code even under a
 * library directory (recorder.c, is_user_file). */
static PyObject *rt_user_roots(PyObject *m, PyObject *dirs)
{
    afd_rt_state *st = PyModule_GetState(m);
    PyObject *seq = PySequence_Fast(dirs, "user_roots: expected a sequence of str");
    if (!seq)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject *roots = PyTuple_New(n);
    for (Py_ssize_t i = 0; roots && i < n; i++) {
        PyObject *d = PySequence_Fast_GET_ITEM(seq, i);
        PyObject *r = PyUnicode_Check(d) ? PyUnicode_FromFormat("%U/", d) : NULL;
        if (!r) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "user_roots: expected a sequence of str");
            Py_CLEAR(roots);
            break;
        }
        PyTuple_SET_ITEM(roots, i, r);
    }
    Py_DECREF(seq);
    if (!roots)
        return NULL;
    Py_XSETREF(st->user_roots, roots);
    Py_RETURN_NONE;
}

static PyMethodDef assertion_methods[] = {
    {"__enter__", (PyCFunction)assertion_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)(void (*)(void))assertion_exit, METH_FASTCALL, NULL},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot assertion_slots[] = {
    {Py_tp_new, assertion_new},
    {Py_tp_dealloc, assertion_dealloc},
    {Py_tp_methods, assertion_methods},
    {Py_tp_doc, "assertion(resource): marks the code that asserts on a shared resource."},
    {0, NULL},
};

static PyType_Spec assertion_spec = {
    .name = "affidavit._runtime.assertion",
    .basicsize = sizeof(afd_assertion),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = assertion_slots,
};

/* ---- module ---- */

static PyObject *rt_clock_reads(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    return PyLong_FromUnsignedLongLong(afd_clock_real_reads());
}

static PyMethodDef rt_methods[] = {
    {"configure", (PyCFunction)(void (*)(void))rt_configure, METH_VARARGS | METH_KEYWORDS,
     "configure(mode, token='', max_steps=0, trace_lines=False, *, mark_lo=0, mark_n=0)"},
    {"random_seed", rt_random_seed, METH_NOARGS, "The seed for the program's random module."},
    {"recorder_begin", rt_recorder_begin, METH_VARARGS, "Start a fresh in-process recording."},
    {"result", rt_result, METH_VARARGS,
     "result(outcome, failure, drew_random=False): the run's result; drew_random: the program drew from "
     "`random`"},
    {"steps", afd_rt_steps, METH_NOARGS, "The recorded steps: (label, ordinal, vstart, cost, site)."},
    {"events", afd_rt_events, METH_NOARGS, "The recorded events: (kind, task, a, b, flags, vtime)."},
    {"trace_info", afd_rt_trace_info, METH_NOARGS, "The recording's counters."},
    {"slots", afd_rt_slots, METH_NOARGS,
     "The recorded slots: (label, ordinal, step index, cost_ns, margin_ns, reads)."},
    {"trace_digests", afd_rt_trace_digests, METH_NOARGS, "(digest, order digest) of the recording."},
    {"op_event", (PyCFunction)(void (*)(void))afd_rt_op_event, METH_FASTCALL,
     "op_event(kind, name, resource, flags)"},
    {"portfolio_token", rt_portfolio_token, METH_VARARGS,
     "portfolio_token(master_seed, i, est_steps=1, strategy=None): the i-th schedule's token."},
    {"token_encode", (PyCFunction)(void (*)(void))rt_token_encode, METH_VARARGS | METH_KEYWORDS,
     "token_encode(strategy, seed, pct_depth=0, pct_steps=0, delays=()): an explicit schedule's token."},
    {"clock_reads", rt_clock_reads, METH_NOARGS,
     "How many real readings time.monotonic/perf_counter/time (and _ns) gave this process."},
    {"trim_heap", rt_trim_heap, METH_NOARGS,
     "Ready the worker's memory for forking; returns the kilobytes moved onto huge pages."},
    {"token_describe", rt_token_describe, METH_O, "Describe a token's schedule."},
    {"send_hello", afd_rt_send_hello, METH_VARARGS, "send_hello(out_fd, python, hash_seed, error, nodeid)"},
    {"token_delays", rt_token_delays, METH_O, "token_delays(token): [(task label, step ordinal, cost ns)]."},
    {"user_roots", rt_user_roots, METH_O,
     "user_roots(dirs): the directories of the collected tests, the user's code wherever they are."},
    {"private_root", rt_private_root, METH_O,
     "private_root(path): the worker's pytest base temporary directory, private to its runs."},
    {"install_hooks", afd_rt_install_hooks, METH_NOARGS,
     "install_hooks(): record asyncio Lock/Event/Semaphore/Queue transitions and time.sleep (idempotent)."},
    {"library_path", afd_rt_library_path, METH_O,
     "library_path(path): path relative to its stdlib or site-packages directory, or None."},
    {"set_context", afd_rt_set_context, METH_VARARGS,
     "set_context(base_dir, loop_note): where trace paths are relative to; who chose the loop policy."},
    {"serve", afd_rt_serve, METH_VARARGS,
     "serve(in_fd, out_fd, run_child, python, hash_seed): the fork server."},
    {NULL, NULL, 0, NULL},
};

static int add_type(PyObject *m, PyTypeObject **slot, PyObject *tp)
{
    if (!tp)
        return -1;
    *slot = (PyTypeObject *)tp;
    Py_INCREF(tp);
    if (PyModule_AddObject(m, strrchr(((PyTypeObject *)tp)->tp_name, '.') + 1, tp) < 0) {
        Py_DECREF(tp);
        return -1;
    }
    return 0;
}

static PyObject *intern(const char *s)
{
    return PyUnicode_InternFromString(s);
}

/* The directory of the affidavit package with a trailing slash (a new reference): "<none>" when it
 * cannot be told, which matches no file. */
static PyObject *own_package_dir(void)
{
    PyObject *name = PyUnicode_FromString("affidavit");
    PyObject *pkg = name ? PyImport_GetModule(name) : NULL; /* never made here: only if imported */
    Py_XDECREF(name);
    PyObject *path = pkg ? PyObject_GetAttrString(pkg, "__path__") : NULL;
    Py_XDECREF(pkg);
    PyObject *first = path && PyList_Check(path) && PyList_GET_SIZE(path) ? PyList_GET_ITEM(path, 0) : NULL;
    PyObject *dir = first && PyUnicode_Check(first) ? PyUnicode_FromFormat("%U/", first) : NULL;
    Py_XDECREF(path);
    PyErr_Clear();
    return dir ? dir : PyUnicode_FromString("<none>");
}

static int rt_exec(PyObject *m)
{
    afd_rt_state *st = module_state(m);
    current_state = st;
    PyObject *handle_type, *timer_type;
    if (afd_handle_types_new(m, &handle_type, &timer_type) < 0)
        return -1;
    int added = add_type(m, &st->handle_type, handle_type);
    if (add_type(m, &st->timer_type, timer_type) < 0 || added < 0 ||
        add_type(m, &st->loopcore_type, afd_loopcore_type_spec_new(m)) < 0 ||
        add_type(m, &st->assertion_type, PyType_FromModuleAndSpec(m, &assertion_spec, NULL)) < 0)
        return -1;
    PyObject *tasks = PyImport_ImportModule("asyncio.tasks");
    if (!tasks)
        return -1;
    PyObject *ctask = PyObject_GetAttrString(tasks, "Task");
    PyObject *pytask = PyObject_GetAttrString(tasks, "_PyTask");
    Py_DECREF(tasks);
    if (!ctask || !pytask) {
        Py_XDECREF(ctask);
        Py_XDECREF(pytask);
        return -1;
    }
    st->c_task_type = ctask;
    st->task_types = PyTuple_Pack(2, ctask, pytask);
    Py_DECREF(pytask);
    if (!st->task_types)
        return -1;
    /* Library code (the stdlib, site-packages) is not where a user's await is. */
    PyObject *sysconfig = PyImport_ImportModule("sysconfig");
    PyObject *paths = sysconfig ? PyObject_CallMethod(sysconfig, "get_paths", NULL) : NULL;
    Py_XDECREF(sysconfig);
    if (!paths)
        return -1;
    /* ... nor is affidavit's own package, wherever it is installed (a .pth link, PYTHONPATH, an
     * editable install): a timer its worker arms on the user's behalf is armed at the user's line. */
    st->stdlib_prefix = PyTuple_New(5);
    const char *keys[] = {"stdlib", "platstdlib", "purelib", "platlib"};
    for (int i = 0; st->stdlib_prefix && i < 4; i++) {
        PyObject *v = PyDict_GetItemString(paths, keys[i]); /* Borrowed. */
        PyTuple_SET_ITEM(st->stdlib_prefix, i, v ? Py_NewRef(v) : PyUnicode_FromString("<none>"));
    }
    if (st->stdlib_prefix)
        PyTuple_SET_ITEM(st->stdlib_prefix, 4, own_package_dir());
    afd_rt_set_library_dirs(paths);
    Py_DECREF(paths);
    if (!st->stdlib_prefix)
        return -1;
#define INTERN(field, s)                                                                                     \
    if (!(st->field = intern(s)))                                                                            \
        return -1;
    INTERN(str_call_exception_handler, "call_exception_handler");
    INTERN(str_get_coro, "get_coro");
    INTERN(str_cr_frame, "cr_frame");
    INTERN(str_cr_await, "cr_await");
    INTERN(str_qualname, "__qualname__");
    INTERN(str_dunder_call, ".__call__");
    INTERN(str_self, "__self__");
    INTERN(str_stopping, "_stopping");
    INTERN(str_selector, "_selector");
    INTERN(str_select, "select");
    INTERN(str_process_events, "_process_events");
    INTERN(str_write_to_self, "_write_to_self");
    INTERN(str_read_from_self, "_read_from_self");
    INTERN(str_fd_to_key, "_fd_to_key");
    INTERN(str_default_executor, "_default_executor");
    INTERN(str_signal_handlers, "_signal_handlers");
    INTERN(str_message, "message");
    INTERN(str_exception, "exception");
    INTERN(str_handle, "handle");
#undef INTERN
    if (PyModule_AddIntConstant(m, "MODE_NATURAL", AFD_MODE_NATURAL) < 0 ||
        PyModule_AddIntConstant(m, "MODE_CONTROLLED", AFD_MODE_CONTROLLED) < 0 ||
        PyModule_AddIntConstant(m, "STEP_FLOOR_NS", (long)AFD_STEP_FLOOR_NS) < 0 ||
        PyModule_AddIntConstant(m, "WAKE_FLOOR_NS", (long)AFD_WAKE_FLOOR_NS) < 0 ||
        PyModule_AddIntConstant(m, "EV_OP_BEGIN", AFD_EV_OP_BEGIN) < 0 ||
        PyModule_AddIntConstant(m, "EV_OP_END", AFD_EV_OP_END) < 0 ||
        PyModule_AddIntConstant(m, "EV_TASK", AFD_EV_TASK) < 0 ||
        PyModule_AddIntConstant(m, "EV_STEP", AFD_EV_STEP) < 0 ||
        PyModule_AddIntConstant(m, "EV_IDLE", AFD_EV_IDLE) < 0 ||
        PyModule_AddIntConstant(m, "EV_ASSERT_BEGIN", AFD_EV_ASSERT_BEGIN) < 0 ||
        PyModule_AddIntConstant(m, "EV_ASSERT_END", AFD_EV_ASSERT_END) < 0 ||
        PyModule_AddIntConstant(m, "EV_UNCONTROLLED", AFD_EV_UNCONTROLLED) < 0 ||
        PyModule_AddIntConstant(m, "EV_LOOP", AFD_EV_LOOP) < 0 ||
        PyModule_AddIntConstant(m, "EV_WAKE", AFD_EV_WAKE) < 0 ||
        PyModule_AddIntConstant(m, "EV_SYNC", AFD_EV_SYNC) < 0 ||
        PyModule_AddIntConstant(m, "EV_BLOCK", AFD_EV_BLOCK) < 0 ||
        PyModule_AddIntConstant(m, "EV_WAITFOR", AFD_EV_WAITFOR) < 0 ||
        PyModule_AddIntConstant(m, "EV_DEADLINE_LATE", AFD_EV_DEADLINE_LATE) < 0 ||
        PyModule_AddIntConstant(m, "LATE_FIRED", AFD_LATE_FIRED) < 0 ||
        PyModule_AddIntConstant(m, "TRACE_DEADLOCK", AFD_TRACE_DEADLOCK) < 0 ||
        PyModule_AddIntConstant(m, "TRACE_LINES", AFD_TRACE_LINES) < 0 ||
        PyModule_AddIntConstant(m, "EV_LINE", AFD_EV_LINE) < 0 ||
        PyModule_AddIntConstant(m, "EV_LOCAL", AFD_EV_LOCAL) < 0 ||
        PyModule_AddIntConstant(m, "EV_DEADLINE", AFD_EV_DEADLINE) < 0 ||
        PyModule_AddIntConstant(m, "EV_CANCEL", AFD_EV_CANCEL) < 0 ||
        PyModule_AddIntConstant(m, "EV_CANCEL_DELIVERED", AFD_EV_CANCEL_DELIVERED) < 0 ||
        PyModule_AddIntConstant(m, "EV_CANCEL_CAUGHT", AFD_EV_CANCEL_CAUGHT) < 0 ||
        PyModule_AddIntConstant(m, "EV_UNCANCEL", AFD_EV_UNCANCEL) < 0 ||
        PyModule_AddIntConstant(m, "EV_TIMEOUT", AFD_EV_TIMEOUT) < 0 ||
        PyModule_AddIntConstant(m, "EV_HANDOFF", AFD_EV_HANDOFF) < 0 ||
        PyModule_AddIntConstant(m, "EV_RESUME", AFD_EV_RESUME) < 0 ||
        PyModule_AddIntConstant(m, "EV_SLOT", AFD_EV_SLOT) < 0 ||
        PyModule_AddIntConstant(m, "TRACE_THREADS", AFD_TRACE_THREADS) < 0 ||
        PyModule_AddIntConstant(m, "TRACE_REAL_IO", AFD_TRACE_REAL_IO) < 0 ||
        PyModule_AddIntConstant(m, "TRACE_REAL_WAIT", AFD_TRACE_REAL_WAIT) < 0)
        return -1;
    static const char *outcomes[] = {"OUT_PASS", "OUT_FAIL",  "OUT_ERROR",     "OUT_SKIP",
                                     "OUT_HANG", "OUT_CRASH", "OUT_STEP_LIMIT"};
    for (int i = 0; i < AFD_OUT__COUNT; i++)
        if (PyModule_AddIntConstant(m, outcomes[i], i) < 0)
            return -1;
    return 0;
}

static int rt_traverse(PyObject *m, visitproc visit, void *arg)
{
    afd_rt_state *st = module_state(m);
    Py_VISIT(st->handle_type);
    Py_VISIT(st->timer_type);
    Py_VISIT(st->loopcore_type);
    Py_VISIT(st->assertion_type);
    Py_VISIT(st->task_types);
    Py_VISIT(st->user_roots);
    Py_VISIT(st->c_task_type);
    Py_VISIT(st->step_wrapper_type);
    return 0;
}

static int rt_clear(PyObject *m)
{
    afd_rt_state *st = module_state(m);
    Py_CLEAR(st->handle_type);
    Py_CLEAR(st->timer_type);
    Py_CLEAR(st->loopcore_type);
    Py_CLEAR(st->assertion_type);
    Py_CLEAR(st->task_types);
    Py_CLEAR(st->c_task_type);
    Py_CLEAR(st->step_wrapper_type);
    Py_CLEAR(st->stdlib_prefix);
    Py_CLEAR(st->user_roots);
    return 0;
}

static PyModuleDef_Slot rt_slots[] = {
    {Py_mod_exec, rt_exec},
    {0, NULL},
};

PyModuleDef afd_rt_module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "affidavit._runtime",
    .m_doc = "The controlled event loop, recorder and fork server of affidavit (C).",
    .m_size = sizeof(afd_rt_state),
    .m_methods = rt_methods,
    .m_slots = rt_slots,
    .m_traverse = rt_traverse,
    .m_clear = rt_clear,
};

PyMODINIT_FUNC PyInit__runtime(void);

PyMODINIT_FUNC PyInit__runtime(void)
{
    /* Set by the engine for its workers: before pytest is imported, so that its memory can lie on
     * huge pages (hugeheap.c). */
    const char *heap = getenv("AFFIDAVIT_WORKER_HEAP");
    if (heap && !strcmp(heap, "1"))
        afd_worker_heap_install();
    return PyModuleDef_Init(&afd_rt_module_def);
}
