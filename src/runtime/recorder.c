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
 * loop step, so both are a pointer-keyed hash probe and a few stores in the common case. */
#include "runtime.h"
#include "explain.h"
#include "pyscan.h"

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

/* ---- A pointer-keyed open-addressing map (keys never removed during a run) ---- */

typedef struct pmap_entry {
    const void *key;
    uint32_t aux;  /* second key part (a line number), 0 when unused */
    uint32_t value;
} pmap_entry;

typedef struct pmap {
    pmap_entry *slots; /* Owned. */
    size_t cap;        /* power of two */
    size_t used;
} pmap;

static size_t pmap_hash(const void *key, uint32_t aux)
{
    uint64_t h = afd_mix64((uint64_t)(uintptr_t)key ^ ((uint64_t)aux << 48));
    return (size_t)h;
}

static int pmap_grow(pmap *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 1024;
    pmap_entry *ns = calloc(ncap, sizeof *ns);
    if (!ns)
        return -1;
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->slots[i].key)
            continue;
        size_t j = pmap_hash(m->slots[i].key, m->slots[i].aux) & (ncap - 1);
        while (ns[j].key)
            j = (j + 1) & (ncap - 1);
        ns[j] = m->slots[i];
    }
    free(m->slots);
    m->slots = ns;
    m->cap = ncap;
    return 0;
}

/* Returns the slot for (key, aux): found (key set) or the empty slot where it belongs. */
static pmap_entry *pmap_slot(pmap *m, const void *key, uint32_t aux)
{
    if ((m->used + 1) * 2 > m->cap && pmap_grow(m) < 0)
        return NULL;
    size_t j = pmap_hash(key, aux) & (m->cap - 1);
    while (m->slots[j].key && (m->slots[j].key != key || m->slots[j].aux != aux))
        j = (j + 1) & (m->cap - 1);
    return &m->slots[j];
}

static void pmap_clear(pmap *m)
{
    free(m->slots);
    memset(m, 0, sizeof *m);
}

/* ---- Recorder state ---- */

static struct {
    uint8_t *mem;       /* Borrowed (shared mapping) or owned (private). */
    int owned;
    size_t size;
    afd_shm_header *hdr;
    afd_event *events;
    uint8_t *strings;
    char *failure;
    afd_task_info *tasks; /* Owned, index = id (slot 0 unused). */
    uint32_t n_tasks, cap_tasks;
    pmap task_map;      /* task object or callback key -> id */
    pmap site_map;      /* (code object, line) -> string id */
    PyObject *interned; /* Owned dict: str -> int string id. */
    PyObject *qual_counts; /* Owned dict: qualname -> next n. */
    PyObject *keep;     /* Owned list: objects whose addresses are map keys. */
    pmap obj_map;       /* synchronization object -> number (from 1) */
    afd_sync_obj *objs; /* Owned, index = number (slot 0 unused). */
    uint32_t n_objs, cap_objs;
    const void *last_obj; /* the last object numbered (alive: every numbered object is kept) */
    uint32_t last_number;
    afd_code_info *codes; /* Owned: the line tracer's per-code facts, indexed from code_map */
    uint32_t n_codes, cap_codes;
    pmap code_map;        /* code object -> index + 1 into codes */
} rec;

static void drop_tables(void)
{
    for (uint32_t i = 1; i <= rec.n_tasks && rec.tasks; i++) {
        Py_XDECREF(rec.tasks[i].weak);
        Py_XDECREF(rec.tasks[i].coro);
        free(rec.tasks[i].label);
    }
    free(rec.tasks);
    rec.tasks = NULL;
    rec.n_tasks = rec.cap_tasks = 0;
    pmap_clear(&rec.task_map);
    pmap_clear(&rec.site_map);
    pmap_clear(&rec.obj_map);
    for (uint32_t i = 1; i <= rec.n_objs && rec.objs; i++)
        Py_XDECREF(rec.objs[i].obj);
    free(rec.objs);
    rec.objs = NULL;
    rec.n_objs = rec.cap_objs = 0;
    rec.last_obj = NULL;
    rec.last_number = 0;
    free(rec.codes);
    rec.codes = NULL;
    rec.n_codes = rec.cap_codes = 0;
    pmap_clear(&rec.code_map);
    Py_CLEAR(rec.interned);
    Py_CLEAR(rec.qual_counts);
    Py_CLEAR(rec.keep);
}

int afd_rec_begin(void *mem, size_t size, int prefault)
{
    drop_tables();
    if (rec.owned)
        munmap(rec.mem, rec.size);
    rec.mem = NULL;
    rec.owned = 0;
    if (size < 1u << 20)
        size = 1u << 20;
    if (!mem) {
        mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | (prefault ? MAP_POPULATE : 0),
                   -1, 0);
        if (mem == MAP_FAILED) {
            PyErr_NoMemory();
            return -1;
        }
        rec.owned = 1;
    }
    rec.mem = mem;
    rec.size = size;
    afd_shm_header *h = rec.hdr = (afd_shm_header *)mem;
    memset(h, 0, sizeof *h);
    h->magic = AFD_SHM_MAGIC;
    h->failure_off = 256;
    h->failure_cap = FAILURE_CAP;
    h->strings_off = h->failure_off + FAILURE_CAP;
    h->strings_cap = size / 8;
    h->events_off = (h->strings_off + h->strings_cap + 63) & ~(uint64_t)63;
    h->cap_events = (uint32_t)((size - h->events_off) / sizeof(afd_event));
    rec.events = (afd_event *)(rec.mem + h->events_off);
    rec.strings = rec.mem + h->strings_off;
    rec.failure = (char *)rec.mem + h->failure_off;
    rec.interned = PyDict_New();
    rec.qual_counts = PyDict_New();
    rec.keep = PyList_New(0);
    afd_rec_current = 0;
    afd_rec_now = 0;
    afd_rec_loops = 0;
    afd_rec_step_no = 0;
    afd_rec_extra_cost = 0;
    afd_deadline_reset();
    if (!rec.interned || !rec.qual_counts || !rec.keep)
        return -1;
    return 0;
}

static int ensure_recorder(void)
{
    if (rec.hdr)
        return 0;
    return afd_rec_begin(NULL, 8u << 20, 0);
}

void afd_rec_flag(uint32_t flag)
{
    if (rec.hdr)
        rec.hdr->flags |= flag;
}

uint32_t afd_rec_flags(void)
{
    return rec.hdr ? rec.hdr->flags : 0;
}

uint64_t afd_rec_steps(void)
{
    return rec.hdr ? rec.hdr->steps : 0;
}

void afd_rec_event(uint8_t kind, uint8_t flags, uint32_t task, uint32_t a, uint32_t b,
                   uint64_t vtime, uint64_t cost)
{
    afd_shm_header *h = rec.hdr;
    if (!h)
        return;
    if (h->n_events >= h->cap_events) {
        h->dropped++;
        h->flags |= AFD_TRACE_TRUNCATED;
        return;
    }
    afd_event *e = &rec.events[h->n_events];
    e->kind = kind;
    e->flags = flags;
    e->pad = 0;
    e->task = task;
    e->a = a;
    e->b = b;
    e->vtime = vtime;
    e->cost = cost;
    e->wall = 0;
    h->n_events++; /* published last: a reader after a kill sees only whole events */
}

static uint32_t intern_bytes(const char *s, size_t len)
{
    afd_shm_header *h = rec.hdr;
    if (len > AFD_TRACE_MAX_STRING)
        len = AFD_TRACE_MAX_STRING;
    if (h->strings_used + 4 + len > h->strings_cap) {
        h->flags |= AFD_TRACE_TRUNCATED;
        return AFD_NOSTR;
    }
    uint8_t *p = rec.strings + h->strings_used;
    uint32_t n = (uint32_t)len;
    memcpy(p, &n, 4);
    memcpy(p + 4, s, len);
    h->strings_used += 4 + len;
    return h->n_strings++;
}

uint32_t afd_rec_intern(PyObject *s, const char *cs)
{
    if (!rec.hdr) /* nothing is being recorded: annotations outside affidavit cost nothing */
        return AFD_NOSTR;
    PyObject *key = s ? Py_NewRef(s) : PyUnicode_FromString(cs);
    if (!key) {
        PyErr_Clear();
        return AFD_NOSTR;
    }
    PyObject *v = PyDict_GetItemWithError(rec.interned, key); /* Borrowed. */
    uint32_t id = AFD_NOSTR;
    if (v) {
        id = (uint32_t)PyLong_AsUnsignedLong(v);
    } else if (!PyErr_Occurred()) {
        Py_ssize_t len;
        const char *u = PyUnicode_AsUTF8AndSize(key, &len);
        if (u) {
            id = intern_bytes(u, (size_t)len);
            PyObject *idv = PyLong_FromUnsignedLong(id);
            if (!idv || PyDict_SetItem(rec.interned, key, idv) < 0)
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
    return (id && id <= rec.n_tasks) ? &rec.tasks[id] : NULL;
}

static uint32_t new_task(PyObject *label, PyObject *weak, PyObject *coro, uint32_t parent, int is_cb)
{
    if (rec.n_tasks + 1 >= rec.cap_tasks) {
        uint32_t ncap = rec.cap_tasks ? rec.cap_tasks * 2 : 64;
        afd_task_info *nt = realloc(rec.tasks, ncap * sizeof *nt);
        if (!nt) {
            PyErr_NoMemory();
            return 0;
        }
        rec.tasks = nt;
        rec.cap_tasks = ncap;
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
    uint32_t id = ++rec.n_tasks;
    afd_task_info *t = &rec.tasks[id];
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
    PyObject *nv = PyDict_GetItemWithError(rec.qual_counts, qualname); /* Borrowed. */
    long n = 0;
    if (nv)
        n = PyLong_AsLong(nv);
    else if (PyErr_Occurred())
        return NULL;
    PyObject *next = PyLong_FromLong(n + 1);
    if (!next || PyDict_SetItem(rec.qual_counts, qualname, next) < 0) {
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
    pmap_entry *e = pmap_slot(&rec.task_map, task, 0);
    if (!e) {
        PyErr_NoMemory();
        return 0;
    }
    if (e->key) {
        afd_task_info *t = &rec.tasks[e->value];
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
            e = pmap_slot(&rec.task_map, task, 0); /* the table may have grown */
            if (id && e) {
                if (!e->key)
                    rec.task_map.used++;
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
    pmap_entry *e = pmap_slot(&rec.task_map, key, 1);
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
    if (keyobj && PyList_Append(rec.keep, keyobj) < 0)
        return 0;
    e = pmap_slot(&rec.task_map, key, 1);
    if (!e) {
        PyErr_NoMemory();
        return 0;
    }
    e->key = key;
    e->aux = 1;
    e->value = id;
    rec.task_map.used++;
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
    if (ensure_recorder() < 0)
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

/* ---- Suspension sites ---- */

static int is_user_file(afd_rt_state *st, PyObject *filename)
{
    if (!PyUnicode_Check(filename))
        return 0;
    if (PyUnicode_READ_CHAR(filename, 0) == '<')
        return 0;
    Py_ssize_t n = PyTuple_GET_SIZE(st->stdlib_prefix);
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t r = PyUnicode_Tailmatch(filename, PyTuple_GET_ITEM(st->stdlib_prefix, i), 0,
                                           PY_SSIZE_T_MAX, -1);
        if (r)
            return 0;
    }
    return 1;
}

/* Whether a code object belongs to the user's code, decided once per code object. */
static int code_is_user(afd_rt_state *st, PyCodeObject *code)
{
    pmap_entry *e = pmap_slot(&rec.site_map, code, UINT32_MAX);
    if (!e)
        return 0;
    if (e->key)
        return (int)e->value;
    PyObject *fn = PyObject_GetAttrString((PyObject *)code, "co_filename");
    int user = fn && is_user_file(st, fn);
    Py_XDECREF(fn);
    PyErr_Clear();
    if (PyList_Append(rec.keep, (PyObject *)code) < 0) { /* keeps the address from being reused */
        PyErr_Clear();
        return user;
    }
    e = pmap_slot(&rec.site_map, code, UINT32_MAX);
    if (e) {
        e->key = code;
        e->aux = UINT32_MAX;
        e->value = (uint32_t)user;
        rec.site_map.used++;
    }
    return user;
}

static int frame_lasti(PyFrameObject *frame)
{
#if PY_VERSION_HEX >= 0x030B0000
    return PyFrame_GetLasti(frame);
#else
    return frame->f_lasti;
#endif
}

/* "path:line" of a frame, the path relative to the trace's base directory (a new reference, or
 * NULL with no exception set). */
static PyObject *site_text(PyCodeObject *code, PyFrameObject *frame)
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
static uint32_t site_string(afd_rt_state *st, PyCodeObject *code, PyFrameObject *frame)
{
    uint32_t lasti = (uint32_t)frame_lasti(frame) & 0x7fffffffu;
    pmap_entry *e = pmap_slot(&rec.site_map, code, lasti);
    if (!e)
        return AFD_NOSTR;
    if (e->key)
        return e->value;
    uint32_t id = AFD_NOSTR;
    PyObject *s = site_text(code, frame);
    if (s) {
        id = afd_rec_intern(s, NULL);
        Py_DECREF(s);
    }
    e = pmap_slot(&rec.site_map, code, lasti); /* code is kept alive by code_is_user's list */
    if (e) {
        e->key = code;
        e->aux = lasti;
        e->value = id;
        rec.site_map.used++;
    }
    return id;
}

/* The innermost user-code await of a suspended coroutine chain ("file:line"), or AFD_NOSTR.
 * The walk stops at the first library frame below a user frame: what a library awaits is not
 * where the user's code yielded. */
static uint32_t suspension_site(afd_rt_state *st, PyObject *coro)
{
    uint32_t best = AFD_NOSTR;
    PyObject *obj = Py_NewRef(coro);
    for (int depth = 0; depth < 12 && obj; depth++) {
        /* Only coroutines have an await chain to follow; a Future ends it. Checking the type
         * first avoids raising (and clearing) an AttributeError on every step. */
        if (!PyCoro_CheckExact(obj))
            break;
        PyObject *frame = PyObject_GetAttr(obj, st->str_cr_frame);
        if (!frame || frame == Py_None || !PyFrame_Check(frame)) {
            Py_XDECREF(frame);
            break;
        }
        PyCodeObject *code = PyFrame_GetCode((PyFrameObject *)frame);
        int user = code_is_user(st, code);
        if (user) {
            uint32_t s = site_string(st, code, (PyFrameObject *)frame);
            if (s != AFD_NOSTR)
                best = s;
        }
        Py_DECREF(code);
        Py_DECREF(frame);
        if (!user && best != AFD_NOSTR)
            break;
        PyObject *next = PyObject_GetAttr(obj, st->str_cr_await);
        Py_DECREF(obj);
        obj = (next && next != Py_None) ? next : NULL;
        if (next == Py_None)
            Py_DECREF(next);
    }
    Py_XDECREF(obj);
    PyErr_Clear();
    return best;
}

void afd_rec_step(afd_rt_state *st, uint32_t id, uint32_t ordinal, uint64_t vstart, uint64_t cost,
                  uint64_t wall)
{
    afd_shm_header *h = rec.hdr;
    if (!h)
        return;
    h->steps++;
    if (h->n_events >= h->cap_events) {
        h->dropped++;
        h->flags |= AFD_TRACE_TRUNCATED;
        return;
    }
    afd_task_info *t = afd_rec_task(id);
    uint32_t site = AFD_NOSTR;
    if (t && t->coro)
        site = suspension_site(st, t->coro);
    afd_event *e = &rec.events[h->n_events];
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
}

void afd_rec_result(uint32_t outcome, const char *failure, size_t len)
{
    if (ensure_recorder() < 0) {
        PyErr_Clear();
        return;
    }
    afd_shm_header *h = rec.hdr;
    if (len > h->failure_cap)
        len = h->failure_cap;
    memcpy(rec.failure, failure, len);
    h->failure_len = (uint32_t)len;
    h->outcome = outcome;
    h->result_ready = 1;
}

int afd_rec_to_trace(const void *mem, size_t size, afd_trace *out)
{
    const afd_shm_header *h = mem;
    if (size < sizeof *h || h->magic != AFD_SHM_MAGIC)
        return AFD_ETRACE_MAGIC;
    /* The child may have scribbled anywhere: trust nothing beyond the bounds of the region. */
    if (h->events_off > size || h->strings_off > size || h->failure_off > size ||
        h->strings_cap > size - h->strings_off || h->failure_cap > size - h->failure_off)
        return AFD_ETRACE_CORRUPT;
    uint64_t max_events = (size - h->events_off) / sizeof(afd_event);
    uint32_t n_events = h->n_events < max_events ? h->n_events : (uint32_t)max_events;
    out->flags = h->flags;
    out->steps = h->steps;
    out->dropped = h->dropped;
    out->outcome = (uint8_t)(h->result_ready && h->outcome < AFD_OUT__COUNT ? h->outcome : AFD_OUT_CRASH);
    uint32_t flen = h->failure_len < h->failure_cap ? h->failure_len : (uint32_t)h->failure_cap;
    int rc = afd_trace_set_str(out, &out->failure, (const char *)mem + h->failure_off, flen);
    const uint8_t *sp = (const uint8_t *)mem + h->strings_off;
    uint64_t used = h->strings_used < h->strings_cap ? h->strings_used : h->strings_cap;
    uint64_t off = 0;
    uint32_t n_strings = 0;
    while (rc == 0 && off + 4 <= used && n_strings < h->n_strings) {
        uint32_t len;
        memcpy(&len, sp + off, 4);
        if (len > used - off - 4)
            break;
        uint32_t id;
        rc = afd_trace_add_string(out, (const char *)sp + off + 4, len, &id);
        off += 4 + (uint64_t)len;
        n_strings++;
    }
    const afd_event *ev = (const afd_event *)((const uint8_t *)mem + h->events_off);
    for (uint32_t i = 0; rc == 0 && i < n_events; i++) {
        afd_event e = ev[i];
        if (e.kind == 0 || e.kind >= AFD_EV__COUNT)
            continue;
        e.pad = 0;
        if (e.kind == AFD_EV_SYNC && e.flags >= AFD_SYNC__COUNT)
            continue;
        if (e.kind == AFD_EV_LINE || e.kind == AFD_EV_LOCAL) {
            if (e.a != AFD_NOSTR && e.a >= n_strings)
                e.a = AFD_NOSTR;
            if (e.cost != AFD_NOSTR && e.cost >= n_strings)
                e.cost = AFD_NOSTR;
        }
        if (e.kind == AFD_EV_TASK || e.kind == AFD_EV_STEP || e.kind == AFD_EV_ASSERT_BEGIN ||
            e.kind == AFD_EV_ASSERT_END || e.kind == AFD_EV_OP_BEGIN || e.kind == AFD_EV_OP_END ||
            e.kind == AFD_EV_SYNC || e.kind == AFD_EV_BLOCK) {
            if (e.b != AFD_NOSTR && e.b >= n_strings)
                e.b = AFD_NOSTR;
        }
        if ((e.kind == AFD_EV_OP_BEGIN || e.kind == AFD_EV_OP_END) && e.a != AFD_NOSTR && e.a >= n_strings)
            e.a = AFD_NOSTR;
        rc = afd_trace_add_events(out, &e, 1);
    }
    return rc;
}


/* ---- Synchronization objects and call sites ---- */

int afd_rec_active(void)
{
    return rec.hdr != NULL;
}

uint32_t afd_rec_task_id(afd_rt_state *st, PyObject *task)
{
    if (ensure_recorder() < 0)
        return 0;
    uint32_t id = identify_task(st, task, 0);
    if (!id)
        PyErr_Clear();
    return id;
}

/* The innermost user frame on the running thread's stack (a new reference with its code in
 * *code_out), or NULL: where the user's code made the call being recorded. */
static PyFrameObject *user_caller(afd_rt_state *st, PyCodeObject **code_out)
{
    PyFrameObject *f = PyEval_GetFrame(); /* Borrowed. */
    Py_XINCREF(f);
    while (f) {
        PyCodeObject *code = PyFrame_GetCode(f);
        if (code_is_user(st, code)) {
            *code_out = code;
            return f;
        }
        Py_DECREF(code);
        PyFrameObject *back = PyFrame_GetBack(f);
        Py_DECREF(f);
        f = back;
    }
    PyErr_Clear();
    return NULL;
}

uint32_t afd_rec_caller_site(afd_rt_state *st)
{
    PyCodeObject *code = NULL;
    PyFrameObject *f = user_caller(st, &code);
    if (!f)
        return AFD_NOSTR;
    uint32_t id = site_string(st, code, f);
    Py_DECREF(code);
    Py_DECREF(f);
    return id;
}

afd_sync_obj *afd_rec_sync_obj(uint32_t number)
{
    return (number && number <= rec.n_objs) ? &rec.objs[number] : NULL;
}

uint32_t afd_rec_sync_count(void)
{
    return rec.n_objs;
}

/* The number of a synchronization object, registering it (and recording its creation, named by
 * its type and the user's line that first touched it) on first sight. 0 on failure. */
#define IGNORED_OBJECT 0xffffffffu

static uint32_t sync_number_slow(afd_rt_state *st, PyObject *obj);

/* Whether the primitive being touched for the first time was made by asyncio's queue module: the
 * frame running is the primitive's own method, its caller the code that made it. */
static int made_by_asyncio_queue(void)
{
    PyFrameObject *f = PyEval_GetFrame(); /* Borrowed. */
    PyFrameObject *back = f ? PyFrame_GetBack(f) : NULL;
    int internal = 0;
    if (back) {
        PyCodeObject *code = PyFrame_GetCode(back);
        PyObject *fn = PyObject_GetAttrString((PyObject *)code, "co_filename");
        if (fn && PyUnicode_Check(fn)) {
            PyObject *suffix = PyUnicode_FromString("asyncio/queues.py");
            internal = suffix && PyUnicode_Tailmatch(fn, suffix, 0, PY_SSIZE_T_MAX, 1) == 1;
            Py_XDECREF(suffix);
        }
        Py_XDECREF(fn);
        Py_DECREF(code);
        Py_DECREF(back);
    }
    PyErr_Clear();
    return internal;
}

static uint32_t sync_number(afd_rt_state *st, PyObject *obj)
{
    /* a queue or lock is usually touched several times in a row: remember the last one */
    if (obj == rec.last_obj && rec.last_obj)
        return rec.last_number;
    uint32_t n = sync_number_slow(st, obj);
    rec.last_obj = obj;
    rec.last_number = n;
    return n;
}

/* Maps obj (its address) to value in the object map. */
static void obj_map_put(PyObject *obj, uint32_t value)
{
    pmap_entry *e = pmap_slot(&rec.obj_map, obj, 0);
    if (e) {
        e->key = obj;
        e->aux = 0;
        e->value = value;
        rec.obj_map.used++;
    }
}

/* Numbers a new object (kept alive by the recording) under label; 0 when out of memory. */
static uint32_t add_object(PyObject *obj, PyObject *label)
{
    if (rec.n_objs + 1 >= rec.cap_objs) {
        uint32_t ncap = rec.cap_objs ? rec.cap_objs * 2 : 32;
        afd_sync_obj *no = realloc(rec.objs, ncap * sizeof *no);
        if (!no)
            return 0;
        rec.objs = no;
        rec.cap_objs = ncap;
    }
    uint32_t number = ++rec.n_objs;
    afd_sync_obj *o = &rec.objs[number];
    o->obj = Py_NewRef(obj);
    o->label = afd_rec_intern(label, NULL);
    o->owner = 0;
    obj_map_put(obj, number);
    return number;
}

static uint32_t sync_number_slow(afd_rt_state *st, PyObject *obj)
{
    pmap_entry *e = pmap_slot(&rec.obj_map, obj, 0);
    if (!e)
        return 0;
    if (e->key)
        return e->value == IGNORED_OBJECT ? 0 : e->value;
    if (made_by_asyncio_queue()) {
        /* a queue's own `_finished` event: its set/clear on every put and get is the queue's
         * bookkeeping, recorded already as the queue's operations */
        if (PyList_Append(rec.keep, obj) < 0) { /* keeps the address from being reused */
            PyErr_Clear();
            return 0;
        }
        obj_map_put(obj, IGNORED_OBJECT);
        return 0;
    }
    PyCodeObject *code = NULL;
    PyFrameObject *f = user_caller(st, &code);
    PyObject *site = f ? site_text(code, f) : NULL;
    Py_XDECREF(code);
    Py_XDECREF(f);
    PyObject *label = site ? PyUnicode_FromFormat("%s@%U", Py_TYPE(obj)->tp_name, site)
                           : PyUnicode_FromFormat("%s", Py_TYPE(obj)->tp_name);
    Py_XDECREF(site);
    if (!label) {
        PyErr_Clear();
        return 0;
    }
    /* Two objects made on one line (`a, b = Lock(), Lock()`) get "#2", "#3"... after the first: a
     * label names one object, stably across runs (creation order is part of the run). */
    PyObject *seen = PyDict_GetItemWithError(rec.qual_counts, label); /* Borrowed. */
    long nth = seen ? PyLong_AsLong(seen) + 1 : 1;
    PyObject *nv = PyLong_FromLong(nth);
    if (!nv || PyDict_SetItem(rec.qual_counts, label, nv) < 0)
        PyErr_Clear();
    Py_XDECREF(nv);
    if (nth > 1) {
        PyObject *numbered = PyUnicode_FromFormat("%U#%ld", label, nth);
        Py_DECREF(label);
        label = numbered;
        if (!label) {
            PyErr_Clear();
            return 0;
        }
    }
    uint32_t number = add_object(obj, label);
    Py_DECREF(label);
    if (number)
        afd_rec_event(AFD_EV_SYNC, AFD_SYNC_CREATE, afd_rec_current, number, rec.objs[number].label, afd_rec_now, 0);
    return number;
}

void afd_rec_sync(afd_rt_state *st, PyObject *obj, int kind)
{
    if (!rec.hdr)
        return;
    PyObject *exc = PyErr_Occurred() ? afd_take_exception() : NULL;
    uint32_t number = sync_number(st, obj);
    if (number) {
        afd_sync_obj *o = &rec.objs[number];
        if (kind == AFD_SYNC_LOCK_ACQUIRE)
            o->owner = afd_rec_current;
        else if (kind == AFD_SYNC_LOCK_RELEASE)
            o->owner = 0;
        if (kind != AFD_SYNC_CREATE)
            afd_rec_event(AFD_EV_SYNC, (uint8_t)kind, afd_rec_current, number, o->label, afd_rec_now, 0);
    }
    PyErr_Clear();
    if (exc)
        afd_restore_exception(exc);
}


/* ---- the line tracer's facts ---- */

/* The files whose lines reach into local variables: scanned once per run, on first need. */
static afd_srcmap *files; /* Owned. */

static const afd_pyscan *file_scan(const char *path)
{
    if (!files && !(files = afd_srcmap_new()))
        return NULL;
    return afd_srcmap_get(files, path);
}

static uint32_t relpath_id(PyObject *filename)
{
    const char *u = PyUnicode_AsUTF8(filename);
    if (!u) {
        PyErr_Clear();
        return AFD_NOSTR;
    }
    char scratch[4096];
    const char *r = afd_rt_relative(u, scratch, sizeof scratch);
    return r != u ? afd_rec_intern(NULL, r) : afd_rec_intern(filename, NULL);
}

const afd_code_info *afd_rec_code_info(afd_rt_state *st, PyCodeObject *code)
{
    if (!rec.hdr)
        return NULL;
    pmap_entry *e = pmap_slot(&rec.code_map, code, 0);
    if (!e)
        return NULL;
    if (e->key)
        return &rec.codes[e->value - 1];
    if (rec.n_codes == rec.cap_codes) {
        uint32_t ncap = rec.cap_codes ? rec.cap_codes * 2 : 256;
        afd_code_info *nc = realloc(rec.codes, ncap * sizeof *nc);
        if (!nc)
            return NULL;
        rec.codes = nc;
        rec.cap_codes = ncap;
    }
    afd_code_info ci = {.user = (uint8_t)code_is_user(st, code), .receiver = 0, .file = AFD_NOSTR, .scan = NULL};
    if (ci.user) {
        PyObject *fn = PyObject_GetAttrString((PyObject *)code, "co_filename");
        if (fn) {
            ci.file = relpath_id(fn);
            const char *u = PyUnicode_AsUTF8(fn);
            if (u)
                ci.scan = file_scan(u);
            PyErr_Clear();
            Py_DECREF(fn);
        }
        PyObject *names = PyObject_GetAttrString((PyObject *)code, "co_varnames");
        PyObject *argc = PyObject_GetAttrString((PyObject *)code, "co_argcount");
        long n = argc ? PyLong_AsLong(argc) : 0;
        if (names && PyTuple_Check(names) && n >= 1 && PyTuple_GET_SIZE(names) >= 1) {
            PyObject *first = PyTuple_GET_ITEM(names, 0);
            if (PyUnicode_CompareWithASCIIString(first, "self") == 0)
                ci.receiver = 1;
            else if (PyUnicode_CompareWithASCIIString(first, "cls") == 0)
                ci.receiver = 2;
        }
        Py_XDECREF(names);
        Py_XDECREF(argc);
        PyErr_Clear();
    }
    /* code_is_user keeps the code object alive, so its address stays its own for the run */
    rec.codes[rec.n_codes++] = ci;
    e = pmap_slot(&rec.code_map, code, 0);
    if (!e)
        return NULL;
    e->key = code;
    e->aux = 0;
    e->value = rec.n_codes;
    rec.code_map.used++;
    return &rec.codes[rec.n_codes - 1];
}

uint32_t afd_rec_receiver(afd_rt_state *st, PyObject *obj, int is_cls, uint32_t *label)
{
    *label = AFD_NOSTR;
    if (!rec.hdr)
        return 0;
    pmap_entry *e = pmap_slot(&rec.obj_map, obj, 0);
    if (!e)
        return 0;
    if (e->key) {
        if (e->value == IGNORED_OBJECT)
            return 0;
        *label = rec.objs[e->value].label;
        return e->value;
    }
    PyObject *text = NULL;
    if (is_cls && PyType_Check(obj)) {
        text = PyObject_GetAttrString(obj, "__qualname__");
    } else {
        /* "Store#0", "Store#1": instances of one type in order of first sight in the run */
        PyObject *key = PyUnicode_FromFormat("%s#", Py_TYPE(obj)->tp_name);
        PyObject *seen = key ? PyDict_GetItemWithError(rec.qual_counts, key) : NULL; /* Borrowed. */
        long nth = seen ? PyLong_AsLong(seen) + 1 : 0;
        PyObject *nv = key ? PyLong_FromLong(nth) : NULL;
        if (nv && PyDict_SetItem(rec.qual_counts, key, nv) == 0)
            text = PyUnicode_FromFormat("%U%ld", key, nth);
        Py_XDECREF(nv);
        Py_XDECREF(key);
    }
    if (!text || !PyUnicode_Check(text)) {
        Py_XDECREF(text);
        PyErr_Clear();
        return 0;
    }
    uint32_t number = add_object(obj, text);
    Py_DECREF(text);
    if (number)
        *label = rec.objs[number].label;
    return number;
}

/* ---- Python-facing recorder functions ---- */

/* op_event(kind, name_or_None, resource_or_None, flags): records an operation or assertion event
 * for the task whose step is running. */
PyObject *afd_rt_op_event(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "op_event(kind, name, resource, flags)");
        return NULL;
    }
    long kind = PyLong_AsLong(args[0]);
    long flags = PyLong_AsLong(args[3]);
    if (PyErr_Occurred())
        return NULL;
    if (kind <= 0 || kind >= AFD_EV__COUNT) {
        PyErr_SetString(PyExc_ValueError, "unknown event kind");
        return NULL;
    }
    if (!rec.hdr)
        Py_RETURN_NONE;
    uint32_t a = args[1] == Py_None ? AFD_NOSTR : afd_rec_intern(args[1], NULL);
    uint32_t b = args[2] == Py_None ? AFD_NOSTR : afd_rec_intern(args[2], NULL);
    afd_rec_event((uint8_t)kind, (uint8_t)flags, afd_rec_current, a, b, afd_rec_now, 0);
    Py_RETURN_NONE;
}

/* Snapshots the recording as a trace and maps each event through row() into a list; row returns
 * a new reference, or NULL without an exception to skip the event. */
typedef PyObject *(*row_fn)(const afd_trace *tr, const afd_event *e);

static PyObject *recorded_rows(row_fn row)
{
    PyObject *out = PyList_New(0);
    if (!out || !rec.hdr)
        return out;
    afd_trace tr;
    if (afd_trace_init(&tr) < 0) {
        Py_DECREF(out);
        return PyErr_NoMemory();
    }
    int rc = afd_rec_to_trace(rec.mem, rec.size, &tr);
    for (uint32_t i = 0; rc == 0 && i < tr.n_events; i++) {
        PyObject *t = row(&tr, &tr.events[i]);
        if (!t && !PyErr_Occurred())
            continue;
        if (!t || PyList_Append(out, t) < 0) {
            Py_XDECREF(t);
            Py_CLEAR(out);
            break;
        }
        Py_DECREF(t);
    }
    afd_trace_finish(&tr);
    if (rc < 0 && out) {
        Py_CLEAR(out);
        PyErr_SetString(PyExc_RuntimeError, afd_strerror(rc));
    }
    return out;
}

static const char *task_label_of(uint32_t task)
{
    return task && task <= rec.n_tasks ? rec.tasks[task].label : "";
}

static PyObject *str_or_empty(const afd_trace *tr, uint32_t id)
{
    return PyUnicode_FromString(id == AFD_NOSTR ? "" : afd_trace_string(tr, id));
}

static PyObject *event_row(const afd_trace *tr, const afd_event *e)
{
    int a_is_str = e->kind == AFD_EV_OP_BEGIN || e->kind == AFD_EV_OP_END || e->kind == AFD_EV_LINE ||
                   e->kind == AFD_EV_LOCAL;
    int b_is_str = e->kind == AFD_EV_TASK || e->kind == AFD_EV_STEP || e->kind == AFD_EV_OP_BEGIN ||
                   e->kind == AFD_EV_OP_END || e->kind == AFD_EV_ASSERT_BEGIN || e->kind == AFD_EV_ASSERT_END ||
                   e->kind == AFD_EV_SYNC || e->kind == AFD_EV_BLOCK;
    PyObject *a = a_is_str ? str_or_empty(tr, e->a) : PyLong_FromUnsignedLong(e->a);
    PyObject *b = b_is_str ? str_or_empty(tr, e->b) : PyLong_FromUnsignedLong(e->b);
    PyObject *t = (a && b) ? Py_BuildValue("(isOOiK)", e->kind, task_label_of(e->task), a, b, e->flags,
                                            (unsigned long long)e->vtime)
                           : NULL;
    Py_XDECREF(a);
    Py_XDECREF(b);
    return t;
}

static PyObject *step_row(const afd_trace *tr, const afd_event *e)
{
    if (e->kind != AFD_EV_STEP)
        return NULL;
    return Py_BuildValue("(sIKKs)", task_label_of(e->task), e->a, (unsigned long long)e->vtime,
                         (unsigned long long)e->cost, e->b == AFD_NOSTR ? "" : afd_trace_string(tr, e->b));
}

/* events(): every recorded event as (kind, task label, a, b, flags, vtime) with string fields
 * resolved (a is an int for kinds whose `a` is not a string). For tests and in-process use. */
PyObject *afd_rt_events(PyObject *self, PyObject *unused)
{
    return recorded_rows(event_row);
}

/* steps(): the recorded steps as (label, ordinal, vstart_ns, cost_ns, site) tuples, for tests
 * and for in-process use without the fork server. */
PyObject *afd_rt_steps(PyObject *self, PyObject *unused)
{
    return recorded_rows(step_row);
}

/* trace_info(): the recording's counters: steps, events, dropped, truncated, flags. */
PyObject *afd_rt_trace_info(PyObject *self, PyObject *unused)
{
    afd_shm_header *h = rec.hdr;
    if (!h)
        return Py_BuildValue("{s:K,s:I,s:K,s:O,s:I}", "steps", 0ULL, "events", 0u, "dropped", 0ULL,
                             "truncated", Py_False, "flags", 0u);
    return Py_BuildValue("{s:K,s:I,s:K,s:O,s:I}", "steps", (unsigned long long)h->steps, "events", h->n_events,
                         "dropped", (unsigned long long)h->dropped, "truncated",
                         (h->flags & AFD_TRACE_TRUNCATED) ? Py_True : Py_False, "flags", h->flags);
}

