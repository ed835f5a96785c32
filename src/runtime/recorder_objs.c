/* recorder_objs.c -- what the recorder knows about the objects a run touched: the asyncio
 * synchronization primitives (locks, events, queues, ...), each numbered on first use and labelled
 * by where it was created, and the line tracer's per-code facts (whether a code object is the
 * user's, its file's scan, the receiver of a method).
 *
 * Invariant: an object keeps its number for the run, because every numbered object is kept alive
 * (its address is a map key). Workload: one map probe per primitive operation and per traced code
 * object; the slow paths (numbering, scanning a file) run once per object.
 */
#include "recorder_impl.h"
#include "runtime.h"
#include "explain.h"
#include "pyscan.h"

#include <frameobject.h>
#include <stdlib.h>
#include <string.h>

static afd_recorder *const rec = &afd_rec;

/* ---- Synchronization objects and call sites ---- */

/* The innermost user frame on the running thread's stack (a new reference with its code in
 * *code_out), or NULL: where the user's code made the call being recorded. */
static PyFrameObject *user_caller(afd_rt_state *st, PyCodeObject **code_out)
{
    PyFrameObject *f = PyEval_GetFrame(); /* Borrowed. */
    Py_XINCREF(f);
    while (f) {
        PyCodeObject *code = PyFrame_GetCode(f);
        if (afd_rec_code_is_user(st, code)) {
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
    uint32_t id = afd_rec_site_string(st, code, f);
    Py_DECREF(code);
    Py_DECREF(f);
    return id;
}

PyObject *afd_rec_caller_text(afd_rt_state *st)
{
    PyCodeObject *code = NULL;
    PyFrameObject *f = user_caller(st, &code);
    if (!f)
        return NULL;
    PyObject *s = afd_rec_site_text(code, f);
    Py_DECREF(code);
    Py_DECREF(f);
    return s;
}

afd_sync_obj *afd_rec_sync_obj(uint32_t number)
{
    return (number && number <= rec->n_objs) ? &rec->objs[number] : NULL;
}

uint32_t afd_rec_sync_count(void)
{
    return rec->n_objs;
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
    if (obj == rec->last_obj && rec->last_obj)
        return rec->last_number;
    uint32_t n = sync_number_slow(st, obj);
    rec->last_obj = obj;
    rec->last_number = n;
    return n;
}

/* Maps obj (its address) to value in the object map. */
static void obj_map_put(PyObject *obj, uint32_t value)
{
    pmap_entry *e = pmap_slot(&rec->obj_map, obj, 0);
    if (e) {
        e->key = obj;
        e->aux = 0;
        e->value = value;
        rec->obj_map.used++;
    }
}

/* Numbers a new object (kept alive by the recording) under label; 0 when out of memory. */
static uint32_t add_object(PyObject *obj, PyObject *label)
{
    /* Slot 0 is unused: number n needs n + 1 slots. */
    if (afd_array_grow((void **)&rec->objs, &rec->cap_objs, (size_t)rec->n_objs + 2, sizeof *rec->objs, 32))
        return 0;
    uint32_t number = ++rec->n_objs;
    afd_sync_obj *o = &rec->objs[number];
    o->obj = Py_NewRef(obj);
    o->label = afd_rec_intern(label, NULL);
    o->owner = 0;
    obj_map_put(obj, number);
    return number;
}

static uint32_t sync_number_slow(afd_rt_state *st, PyObject *obj)
{
    pmap_entry *e = pmap_slot(&rec->obj_map, obj, 0);
    if (!e)
        return 0;
    if (e->key)
        return e->value == IGNORED_OBJECT ? 0 : e->value;
    if (made_by_asyncio_queue()) {
        /* a queue's own `_finished` event: its set/clear on every put and get is the queue's
         * bookkeeping, recorded already as the queue's operations */
        if (PyList_Append(rec->keep, obj) < 0) { /* keeps the address from being reused */
            PyErr_Clear();
            return 0;
        }
        obj_map_put(obj, IGNORED_OBJECT);
        return 0;
    }
    PyCodeObject *code = NULL;
    PyFrameObject *f = user_caller(st, &code);
    PyObject *site = f ? afd_rec_site_text(code, f) : NULL;
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
    PyObject *seen = PyDict_GetItemWithError(rec->qual_counts, label); /* Borrowed. */
    long nth = seen ? PyLong_AsLong(seen) + 1 : 1;
    PyObject *nv = PyLong_FromLong(nth);
    if (!nv || PyDict_SetItem(rec->qual_counts, label, nv) < 0)
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
        afd_rec_event(AFD_EV_SYNC, AFD_SYNC_CREATE, afd_rec_current, number, rec->objs[number].label,
                      afd_rec_now, 0);
    return number;
}

uint32_t afd_rec_sync_number(afd_rt_state *st, PyObject *obj)
{
    uint32_t number = rec->hdr ? sync_number(st, obj) : 0;
    PyErr_Clear();
    return number;
}

void afd_rec_sync(afd_rt_state *st, PyObject *obj, int kind)
{
    if (!rec->hdr)
        return;
    PyObject *exc = PyErr_Occurred() ? afd_take_exception() : NULL;
    uint32_t number = sync_number(st, obj);
    if (number) {
        afd_sync_obj *o = &rec->objs[number];
        if (kind == AFD_SYNC_LOCK_ACQUIRE)
            o->owner = afd_rec_current;
        else if (kind == AFD_SYNC_LOCK_RELEASE)
            o->owner = 0;
        if (kind != AFD_SYNC_CREATE) {
            afd_rec_event(AFD_EV_SYNC, (uint8_t)kind, afd_rec_current, number, o->label, afd_rec_now, 0);
            afd_rec_chain_stack(st, NULL);
        }
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
    if (!files && !(files = afd_view_srcmap_new()))
        return NULL;
    return afd_view_srcmap_get(files, path);
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
    if (!rec->hdr)
        return NULL;
    pmap_entry *e = pmap_slot(&rec->code_map, code, 0);
    if (!e)
        return NULL;
    if (e->key)
        return &rec->codes[e->value - 1];
    if (afd_array_grow((void **)&rec->codes, &rec->cap_codes, (size_t)rec->n_codes + 1, sizeof *rec->codes,
                       256))
        return NULL;
    afd_code_info ci = {
        .user = (uint8_t)afd_rec_code_is_user(st, code), .receiver = 0, .file = AFD_NOSTR, .scan = NULL};
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
    rec->codes[rec->n_codes++] = ci;
    e = pmap_slot(&rec->code_map, code, 0);
    if (!e)
        return NULL;
    e->key = code;
    e->aux = 0;
    e->value = rec->n_codes;
    rec->code_map.used++;
    return &rec->codes[rec->n_codes - 1];
}

uint32_t afd_rec_receiver(afd_rt_state *st, PyObject *obj, int is_cls, uint32_t *label)
{
    *label = AFD_NOSTR;
    if (!rec->hdr)
        return 0;
    pmap_entry *e = pmap_slot(&rec->obj_map, obj, 0);
    if (!e)
        return 0;
    if (e->key) {
        if (e->value == IGNORED_OBJECT)
            return 0;
        *label = rec->objs[e->value].label;
        return e->value;
    }
    PyObject *text = NULL;
    if (is_cls && PyType_Check(obj)) {
        text = PyObject_GetAttrString(obj, "__qualname__");
    } else {
        /* "Store#0", "Store#1": instances of one type in order of first sight in the run */
        PyObject *key = PyUnicode_FromFormat("%s#", Py_TYPE(obj)->tp_name);
        PyObject *seen = key ? PyDict_GetItemWithError(rec->qual_counts, key) : NULL; /* Borrowed. */
        long nth = seen ? PyLong_AsLong(seen) + 1 : 0;
        PyObject *nv = key ? PyLong_FromLong(nth) : NULL;
        if (nv && PyDict_SetItem(rec->qual_counts, key, nv) == 0)
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
        *label = rec->objs[number].label;
    return number;
}
