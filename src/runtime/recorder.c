/* recorder.c -- what a run did, written straight into memory the fork server can read.
 *
 * The recorder writes fixed-size events and a string table into one flat region: in a child that
 * region is a shared mapping created by the fork server, so when the child hangs and is killed,
 * its last events are still there to report. Nothing is written to a pipe during a run.
 *
 * It also gives every step its identity: the task a callback belongs to (C and Python Tasks,
 * through the callback's __self__) with the label "<coroutine qualname>#<n>", or, for a plain
 * callback, the callback's qualname. Labels are stable across runs of one schedule because tasks
 * are numbered in creation order, which the FIFO loop makes deterministic.
 *
 * Invariants: the region is bounded; when it is full, events are counted as dropped and the
 * trace is flagged truncated, never silently cut. Workload: one identify and one step record per
 * loop step, so both are a pointer-keyed hash probe and a few stores in the common case.
 *
 * The tables are shared (recorder_impl.h) with recorder_objs.c, which numbers synchronization
 * objects and keeps the line tracer's per-code facts, and recorder_read.c, which reads a region
 * back as a trace. */
#include "recorder_impl.h"
#include "runtime.h"

#include <frameobject.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define FAILURE_CAP (64u * 1024u)

afd_run_config afd_rt_config;
uint32_t afd_rec_current;
uint64_t afd_rec_now;
uint32_t afd_rec_loops;
uint32_t afd_rec_step_no;
uint64_t afd_rec_extra_cost;

/* ---- Recorder state ---- */

afd_recorder afd_rec;
static afd_recorder *const rec = &afd_rec;

static void drop_tables(void)
{
    for (uint32_t i = 1; i <= rec->n_tasks && rec->tasks; i++) {
        Py_XDECREF(rec->tasks[i].weak);
        Py_XDECREF(rec->tasks[i].coro);
        free(rec->tasks[i].label);
    }
    free(rec->tasks);
    rec->tasks = NULL;
    rec->n_tasks = rec->cap_tasks = 0;
    pmap_clear(&rec->task_map);
    pmap_clear(&rec->site_map);
    pmap_clear(&rec->obj_map);
    for (uint32_t i = 1; i <= rec->n_objs && rec->objs; i++)
        Py_XDECREF(rec->objs[i].obj);
    free(rec->objs);
    rec->objs = NULL;
    rec->n_objs = rec->cap_objs = 0;
    rec->last_obj = NULL;
    rec->last_number = 0;
    free(rec->codes);
    rec->codes = NULL;
    rec->n_codes = rec->cap_codes = 0;
    pmap_clear(&rec->code_map);
    afd_rec_chains_reset();
    Py_CLEAR(rec->interned);
    Py_CLEAR(rec->qual_counts);
    Py_CLEAR(rec->keep);
}

int afd_rec_begin(void *mem, size_t size, int prefault)
{
    drop_tables();
    if (rec->owned)
        munmap(rec->mem, rec->size);
    rec->mem = NULL;
    rec->owned = 0;
    if (size < 1u << 20)
        size = 1u << 20;
    if (!mem) {
        mem = mmap(NULL, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | (prefault ? MAP_POPULATE : 0), -1, 0);
        if (mem == MAP_FAILED) {
            PyErr_NoMemory();
            return -1;
        }
        rec->owned = 1;
    }
    rec->mem = mem;
    rec->size = size;
    afd_shm_header *h = rec->hdr = (afd_shm_header *)mem;
    memset(h, 0, sizeof *h);
    h->magic = AFD_SHM_MAGIC;
    h->failure_off = 256;
    h->failure_cap = FAILURE_CAP;
    h->strings_off = h->failure_off + FAILURE_CAP;
    h->strings_cap = size / 8;
    h->events_off = (h->strings_off + h->strings_cap + 63) & ~(uint64_t)63;
    h->cap_events = (uint32_t)((size - h->events_off) / sizeof(afd_event));
    rec->events = (afd_event *)(rec->mem + h->events_off);
    rec->strings = rec->mem + h->strings_off;
    rec->failure = (char *)rec->mem + h->failure_off;
    rec->interned = PyDict_New();
    rec->qual_counts = PyDict_New();
    rec->keep = PyList_New(0);
    afd_rec_current = 0;
    afd_rec_now = 0;
    afd_rec_loops = 0;
    afd_rec_step_no = 0;
    afd_rec_extra_cost = 0;
    afd_deadline_reset();
    afd_cancel_reset();
    afd_slots_reset();
    if (!rec->interned || !rec->qual_counts || !rec->keep)
        return -1;
    return 0;
}

int afd_rec_ensure(void)
{
    if (rec->hdr)
        return 0;
    return afd_rec_begin(NULL, 8u << 20, 0);
}

int afd_rec_active(void)
{
    return rec->hdr != NULL;
}

void afd_rec_flag(uint32_t flag)
{
    if (rec->hdr)
        rec->hdr->flags |= flag;
}

uint32_t afd_rec_flags(void)
{
    return rec->hdr ? rec->hdr->flags : 0;
}

uint64_t afd_rec_steps(void)
{
    return rec->hdr ? rec->hdr->steps : 0;
}

void afd_rec_event(uint8_t kind, uint8_t flags, uint32_t task, uint32_t a, uint32_t b, uint64_t vtime,
                   uint64_t cost)
{
    afd_rec_event_wall(kind, flags, task, a, b, vtime, cost, 0);
}

void afd_rec_event_wall(uint8_t kind, uint8_t flags, uint32_t task, uint32_t a, uint32_t b, uint64_t vtime,
                        uint64_t cost, uint64_t wall)
{
    afd_shm_header *h = rec->hdr;
    if (!h)
        return;
    if (h->n_events >= h->cap_events) {
        h->dropped++;
        h->flags |= AFD_TRACE_TRUNCATED;
        return;
    }
    afd_event *e = &rec->events[h->n_events];
    e->kind = kind;
    e->flags = flags;
    e->pad = 0;
    e->task = task;
    e->a = a;
    e->b = b;
    e->vtime = vtime;
    e->cost = cost;
    e->wall = wall;
    h->n_events++; /* published last: a reader after a kill sees only whole events */
}

static uint32_t intern_bytes(const char *s, size_t len)
{
    afd_shm_header *h = rec->hdr;
    if (len > AFD_TRACE_MAX_STRING)
        len = AFD_TRACE_MAX_STRING;
    if (h->strings_used + 4 + len > h->strings_cap) {
        h->flags |= AFD_TRACE_TRUNCATED;
        return AFD_NOSTR;
    }
    uint8_t *p = rec->strings + h->strings_used;
    uint32_t n = (uint32_t)len;
    memcpy(p, &n, 4);
    memcpy(p + 4, s, len);
    h->strings_used += 4 + len;
    return h->n_strings++;
}

uint32_t afd_rec_intern(PyObject *s, const char *cs)
{
    if (!rec->hdr) /* nothing is being recorded: annotations outside affidavit cost nothing */
        return AFD_NOSTR;
    PyObject *key = s ? Py_NewRef(s) : PyUnicode_FromString(cs);
    if (!key) {
        PyErr_Clear();
        return AFD_NOSTR;
    }
    PyObject *v = PyDict_GetItemWithError(rec->interned, key); /* Borrowed. */
    uint32_t id = AFD_NOSTR;
    if (v) {
        id = (uint32_t)PyLong_AsUnsignedLong(v);
    } else if (!PyErr_Occurred()) {
        Py_ssize_t len;
        const char *u = PyUnicode_AsUTF8AndSize(key, &len);
        if (u) {
            id = intern_bytes(u, (size_t)len);
            PyObject *idv = PyLong_FromUnsignedLong(id);
            if (!idv || PyDict_SetItem(rec->interned, key, idv) < 0)
                PyErr_Clear();
            Py_XDECREF(idv);
        }
    }
    PyErr_Clear();
    Py_DECREF(key);
    return id;
}

afd_task_info *afd_rec_task(uint32_t id)
{
    return (id && id <= rec->n_tasks) ? &rec->tasks[id] : NULL;
}

static uint32_t new_task(PyObject *label, PyObject *weak, PyObject *coro, uint32_t parent, int is_cb)
{
    /* Slot 0 is unused: id n needs n + 1 slots. */
    if (afd_array_grow((void **)&rec->tasks, &rec->cap_tasks, (size_t)rec->n_tasks + 2, sizeof *rec->tasks,
                       64)) {
        PyErr_NoMemory();
        return 0;
    }
    Py_ssize_t len;
    const char *u = PyUnicode_AsUTF8AndSize(label, &len);
    if (!u)
        return 0;
    char *copy = malloc((size_t)len + 1);
    if (!copy) {
        PyErr_NoMemory();
        return 0;
    }
    memcpy(copy, u, (size_t)len + 1);
    uint32_t id = ++rec->n_tasks;
    afd_task_info *t = &rec->tasks[id];
    t->weak = Py_XNewRef(weak);
    t->coro = Py_XNewRef(coro);
    t->label = copy;
    t->label_len = (size_t)len;
    t->label_hash = afd_fnv1a(AFD_FNV_INIT, copy, (size_t)len);
    t->next_ordinal = 0;
    t->label_str = afd_rec_intern(label, NULL);
    afd_rec_event(AFD_EV_TASK, (uint8_t)is_cb, id, parent, t->label_str, afd_rec_now, 0);
    return id;
}

/* "qualname#n", numbering tasks of one coroutine function in creation order. */
static PyObject *task_label(PyObject *qualname)
{
    PyObject *nv = PyDict_GetItemWithError(rec->qual_counts, qualname); /* Borrowed. */
    long n = 0;
    if (nv)
        n = PyLong_AsLong(nv);
    else if (PyErr_Occurred())
        return NULL;
    PyObject *next = PyLong_FromLong(n + 1);
    if (!next || PyDict_SetItem(rec->qual_counts, qualname, next) < 0) {
        Py_XDECREF(next);
        return NULL;
    }
    Py_DECREF(next);
    return PyUnicode_FromFormat("%U#%ld", qualname, n);
}

static int is_task(afd_rt_state *st, PyObject *obj)
{
    if ((PyObject *)Py_TYPE(obj) == st->c_task_type)
        return 1;
    int r = PyObject_IsInstance(obj, st->task_types);
    if (r < 0)
        PyErr_Clear();
    return r > 0;
}

static uint32_t identify_task(afd_rt_state *st, PyObject *task, uint32_t creator)
{
    pmap_entry *e = pmap_slot(&rec->task_map, task, 0);
    if (!e) {
        PyErr_NoMemory();
        return 0;
    }
    if (e->key) {
        afd_task_info *t = &rec->tasks[e->value];
        /* The address may have been reused by a new task after the old one was freed. */
        if (t->weak && afd_weak_is(t->weak, task))
            return e->value;
    }
    PyObject *weak = PyWeakref_NewRef(task, NULL);
    PyObject *coro = weak ? PyObject_CallMethodNoArgs(task, st->str_get_coro) : NULL;
    PyObject *qual = NULL, *label = NULL;
    uint32_t id = 0;
    if (coro) {
        qual = coro != Py_None ? afd_rt_coro_qualname(st, coro) : NULL;
        if (!qual)
            qual = PyUnicode_FromString("task");
        label = qual ? task_label(qual) : NULL;
        if (label) {
            id = new_task(label, weak, coro != Py_None ? coro : NULL, creator, 0);
            e = pmap_slot(&rec->task_map, task, 0); /* the table may have grown */
            if (id && e) {
                if (!e->key)
                    rec->task_map.used++;
                e->key = task;
                e->aux = 0;
                e->value = id;
            }
        }
    }
    Py_XDECREF(label);
    Py_XDECREF(qual);
    Py_XDECREF(coro);
    Py_XDECREF(weak);
    return id;
}

/* A plain callback (f, with partials and bound methods already taken off) is keyed by what stays
 * the same across calls: the code of a function, the method table entry of a builtin, or else
 * the callable's type. */
static uint32_t identify_target(afd_rt_state *st, PyObject *f, uint32_t creator)
{
    PyObject *keyobj = NULL;
    const void *key;
    if (PyFunction_Check(f)) {
        keyobj = PyFunction_GET_CODE(f);
        key = keyobj;
    } else if (PyCFunction_Check(f)) {
        key = ((PyCFunctionObject *)f)->m_ml;
    } else {
        keyobj = (PyObject *)Py_TYPE(f);
        key = keyobj;
    }
    pmap_entry *e = pmap_slot(&rec->task_map, key, 1);
    if (!e) {
        PyErr_NoMemory();
        return 0;
    }
    if (e->key)
        return e->value;
    PyObject *qual = PyObject_GetAttr(f, st->str_qualname);
    if (!qual) {
        PyErr_Clear();
        qual = PyUnicode_FromString(Py_TYPE(f)->tp_name);
        if (!qual)
            return 0;
    }
    uint32_t id = new_task(qual, NULL, NULL, creator, 1);
    Py_DECREF(qual);
    if (!id)
        return 0;
    if (keyobj && PyList_Append(rec->keep, keyobj) < 0)
        return 0;
    e = pmap_slot(&rec->task_map, key, 1);
    if (!e) {
        PyErr_NoMemory();
        return 0;
    }
    e->key = key;
    e->aux = 1;
    e->value = id;
    rec->task_map.used++;
    return id;
}

static uint32_t identify_callback(afd_rt_state *st, PyObject *cb, uint32_t creator)
{
    PyObject *target = afd_rt_callback_target(cb); /* what the user wrote, behind partials */
    uint32_t id = identify_target(st, target, creator);
    Py_DECREF(target);
    return id;
}

/* The C Task's step callback type: "TaskStepMethWrapper" up to 3.11, "_asyncio.TaskStepMethWrapper"
 * (a heap type, named with its module) from 3.12 on. */
static int is_step_wrapper_name(const char *name)
{
    const char *dot = strrchr(name, '.');
    return strcmp(dot ? dot + 1 : name, "TaskStepMethWrapper") == 0;
}

uint32_t afd_rec_identify(afd_rt_state *st, PyObject *cb, uint32_t creator)
{
    if (afd_rec_ensure() < 0)
        return 0;
    PyObject *self = NULL; /* New reference when set. */
    if (PyCFunction_Check(cb)) {
        self = Py_XNewRef(PyCFunction_GET_SELF(cb));
    } else if (PyMethod_Check(cb)) {
        self = Py_NewRef(PyMethod_GET_SELF(cb));
    } else if (st->step_wrapper_type && (PyObject *)Py_TYPE(cb) == st->step_wrapper_type) {
        self = PyObject_GetAttr(cb, st->str_self);
    } else if (!st->step_wrapper_type && is_step_wrapper_name(Py_TYPE(cb)->tp_name)) {
        st->step_wrapper_type = Py_NewRef((PyObject *)Py_TYPE(cb));
        self = PyObject_GetAttr(cb, st->str_self);
    }
    if (!self)
        PyErr_Clear();
    uint32_t id;
    if (self && self != Py_None && is_task(st, self))
        id = identify_task(st, self, creator);
    else
        id = identify_callback(st, cb, creator);
    Py_XDECREF(self);
    return id;
}

uint32_t afd_rec_task_id(afd_rt_state *st, PyObject *task)
{
    if (afd_rec_ensure() < 0)
        return 0;
    uint32_t id = identify_task(st, task, 0);
    if (!id)
        PyErr_Clear();
    return id;
}

/* ---- Suspension sites ---- */

/* Whether a file is the user's: not under a library directory (the stdlib, site-packages,
 * affidavit's own package), unless it is under a directory the collected tests are in that lies
 * deeper than that library directory (the longest prefix decides): the tests pytest runs are the
 * user's code wherever they live, CPython's own test.test_asyncio in the stdlib or a package's
 * tests run from site-packages with --pyargs, while a virtual environment inside the project
 * stays library code. */
static int is_user_file(afd_rt_state *st, PyObject *filename)
{
    if (!PyUnicode_Check(filename))
        return 0;
    if (PyUnicode_READ_CHAR(filename, 0) == '<')
        return 0;
    Py_ssize_t lib = 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(st->stdlib_prefix); i++) {
        PyObject *p = PyTuple_GET_ITEM(st->stdlib_prefix, i);
        if (PyUnicode_GET_LENGTH(p) > lib && PyUnicode_Tailmatch(filename, p, 0, PY_SSIZE_T_MAX, -1) > 0)
            lib = PyUnicode_GET_LENGTH(p);
    }
    if (!lib)
        return 1;
    for (Py_ssize_t i = 0; st->user_roots && i < PyTuple_GET_SIZE(st->user_roots); i++) {
        PyObject *p = PyTuple_GET_ITEM(st->user_roots, i);
        if (PyUnicode_GET_LENGTH(p) > lib && PyUnicode_Tailmatch(filename, p, 0, PY_SSIZE_T_MAX, -1) > 0)
            return 1;
    }
    return 0;
}

/* Whether a code object belongs to the user's code, decided once per code object. */
int afd_rec_code_is_user(afd_rt_state *st, PyCodeObject *code)
{
    pmap_entry *e = pmap_slot(&rec->site_map, code, UINT32_MAX);
    if (!e)
        return 0;
    if (e->key)
        return (int)e->value;
    PyObject *fn = PyObject_GetAttrString((PyObject *)code, "co_filename");
    int user = fn && is_user_file(st, fn);
    Py_XDECREF(fn);
    PyErr_Clear();
    if (PyList_Append(rec->keep, (PyObject *)code) < 0) { /* keeps the address from being reused */
        PyErr_Clear();
        return user;
    }
    e = pmap_slot(&rec->site_map, code, UINT32_MAX);
    if (e) {
        e->key = code;
        e->aux = UINT32_MAX;
        e->value = (uint32_t)user;
        rec->site_map.used++;
    }
    return user;
}

int afd_rec_frame_lasti(PyFrameObject *frame)
{
#if PY_VERSION_HEX >= 0x030B0000
    return PyFrame_GetLasti(frame);
#else
    return frame->f_lasti;
#endif
}

/* "path:line" of a frame, the path relative to the trace's base directory (a new reference, or
 * NULL with no exception set). */
PyObject *afd_rec_site_text(PyCodeObject *code, PyFrameObject *frame)
{
    int line = PyFrame_GetLineNumber(frame);
    PyObject *fn = PyObject_GetAttrString((PyObject *)code, "co_filename");
    PyObject *s = NULL;
    if (fn) {
        PyObject *rel = Py_NewRef(fn);
        char scratch[4096];
        const char *u = PyUnicode_AsUTF8(fn);
        const char *r = u ? afd_rt_relative(u, scratch, sizeof scratch) : NULL;
        if (r && r != u) {
            Py_DECREF(rel);
            rel = PyUnicode_FromString(r);
        }
        s = rel ? PyUnicode_FromFormat("%U:%d", rel, line) : NULL;
        Py_XDECREF(rel);
    }
    Py_XDECREF(fn);
    PyErr_Clear();
    return s;
}

/* The "file:line" string of a user frame suspended at instruction lasti, interned once per
 * (code, lasti): the line table is consulted only the first time. */
uint32_t afd_rec_site_string(afd_rt_state *st, PyCodeObject *code, PyFrameObject *frame)
{
    uint32_t lasti = (uint32_t)afd_rec_frame_lasti(frame) & 0x7fffffffu;
    pmap_entry *e = pmap_slot(&rec->site_map, code, lasti);
    if (!e)
        return AFD_NOSTR;
    if (e->key)
        return e->value;
    uint32_t id = AFD_NOSTR;
    PyObject *s = afd_rec_site_text(code, frame);
    if (s) {
        id = afd_rec_intern(s, NULL);
        Py_DECREF(s);
    }
    e = pmap_slot(&rec->site_map, code, lasti); /* code is kept alive by afd_rec_code_is_user's list */
    if (e) {
        e->key = code;
        e->aux = lasti;
        e->value = id;
        rec->site_map.used++;
    }
    return id;
}

void afd_rec_step(afd_rt_state *st, uint32_t id, uint32_t ordinal, uint64_t vstart, uint64_t cost,
                  uint64_t wall)
{
    afd_shm_header *h = rec->hdr;
    if (!h)
        return;
    h->steps++;
    if (h->n_events >= h->cap_events) {
        h->dropped++;
        h->flags |= AFD_TRACE_TRUNCATED;
        return;
    }
    afd_task_info *t = afd_rec_task(id);
    uint32_t site = AFD_NOSTR, chain = AFD_NOSTR, n_frames = 0;
    if (t && t->coro)
        site = afd_rec_suspension(st, t->coro, &chain, &n_frames);
    afd_event *e = &rec->events[h->n_events];
    e->kind = AFD_EV_STEP;
    e->flags = 0;
    e->pad = 0;
    e->task = id;
    e->a = ordinal;
    e->b = site;
    e->vtime = vstart;
    e->cost = cost;
    e->wall = wall;
    h->n_events++;
    if (chain != AFD_NOSTR)
        afd_rec_event(AFD_EV_CHAIN, 0, id, chain, n_frames, vstart, 0);
}

void afd_rec_result(uint32_t outcome, const char *failure, size_t len)
{
    if (afd_rec_ensure() < 0) {
        PyErr_Clear();
        return;
    }
    afd_shm_header *h = rec->hdr;
    if (len > h->failure_cap)
        len = h->failure_cap;
    afd_slots_record(); /* the measure is complete when the run is */
    memcpy(rec->failure, failure, len);
    h->failure_len = (uint32_t)len;
    h->outcome = outcome;
    h->result_ready = 1;
}
