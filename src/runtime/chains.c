/* chains.c -- the chain of user frames beneath a suspension or an access (AFD_EV_CHAIN).
 *
 * A cause names the await in the function the user wrote, not the latency helper three frames
 * down, so the recorder keeps, besides the innermost user frame (an event's own site), the user
 * frames around it: for a task's suspension the coroutines and async generators its await chain
 * (cr_await, ag_await) runs through, for an access the frames on the Python stack down to the
 * task's own coroutine. Library frames between user frames (contextlib's __aenter__ driving an
 * @asynccontextmanager generator) are passed through, not listed. A chain is recorded only when
 * it has two or more frames; a lone frame is the event's own site.
 *
 * Invariants: a chain holds at most CHAIN_MAX_FRAMES frames; each distinct chain is interned once,
 * keyed by its sequence of (code object, instruction) pairs, so the text ("file:line function" per
 * frame, outermost first) is built only the first time that sequence is seen in the run. Code
 * objects of user frames are kept alive by afd_rec_code_is_user, so their addresses are stable
 * keys. Workload: one walk per step and per recorded access; in the common case a walk costs one
 * map probe per frame plus one probe of the chain table. */
#include "recorder_impl.h"
#include "runtime.h"

#include <frameobject.h>
#include <stdlib.h>
#include <string.h>

#define CHAIN_MAX_FRAMES 16
#define SUSPENSION_MAX_DEPTH 12
/* Library frames a plain callback's walk passes before the first user frame: the `access`
 * helper, a primitive's method and the function that called it. */
#define LEADING_LIBRARY_FRAMES 3

/* One user frame of a chain being walked. */
typedef struct chain_frame {
    PyCodeObject *code;   /* Owned reference while the walk runs. */
    PyFrameObject *frame; /* Owned reference while the walk runs. */
    uint32_t lasti;
} chain_frame;

/* The chain table: open addressing over a hash of the (code, lasti) sequence; the sequences
 * themselves live in one growing array so a hit is confirmed, never assumed from the hash. */
typedef struct chain_key {
    const void *code;
    uint32_t lasti;
} chain_key;

typedef struct chain_slot {
    uint64_t hash; /* 0: empty */
    uint32_t off, n, id;
} chain_slot;

static struct {
    chain_slot *slots; /* Owned. */
    size_t cap, used;
    chain_key *keys; /* Owned: every interned sequence, back to back. */
    size_t n_keys, cap_keys;
} chains;

void afd_rec_chains_reset(void)
{
    free(chains.slots);
    free(chains.keys);
    memset(&chains, 0, sizeof chains);
}

static uint64_t chain_hash(const chain_frame *f, size_t n)
{
    uint64_t h = AFD_FNV_INIT;
    for (size_t i = 0; i < n; i++) {
        uint64_t k[2] = {(uint64_t)(uintptr_t)f[i].code, f[i].lasti};
        h = afd_fnv1a(h, k, sizeof k);
    }
    return h ? h : 1;
}

static int chains_grow(void)
{
    size_t ncap = chains.cap ? chains.cap * 2 : 256;
    chain_slot *ns = calloc(ncap, sizeof *ns);
    if (!ns)
        return -1;
    for (size_t i = 0; i < chains.cap; i++) {
        if (!chains.slots[i].hash)
            continue;
        size_t j = (size_t)afd_mix64(chains.slots[i].hash) & (ncap - 1);
        while (ns[j].hash)
            j = (j + 1) & (ncap - 1);
        ns[j] = chains.slots[i];
    }
    free(chains.slots);
    chains.slots = ns;
    chains.cap = ncap;
    return 0;
}

static int same_keys(const chain_slot *s, const chain_frame *f, size_t n)
{
    if (s->n != n)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (chains.keys[s->off + i].code != (const void *)f[i].code ||
            chains.keys[s->off + i].lasti != f[i].lasti)
            return 0;
    return 1;
}

/* The text of a chain: "file:line function" per frame, outermost first, one per line (a new
 * reference, or NULL with no exception set). */
static PyObject *chain_text(const chain_frame *f, size_t n)
{
    PyObject *parts = PyList_New(0);
    for (size_t i = 0; parts && i < n; i++) {
        PyObject *site = afd_rec_site_text(f[i].code, f[i].frame);
        PyObject *name = PyObject_GetAttrString((PyObject *)f[i].code, "co_name");
        PyObject *line = site && name ? PyUnicode_FromFormat("%U %U", site, name) : NULL;
        if (!line || PyList_Append(parts, line) < 0)
            Py_CLEAR(parts);
        Py_XDECREF(line);
        Py_XDECREF(name);
        Py_XDECREF(site);
    }
    PyObject *sep = parts ? PyUnicode_FromString("\n") : NULL;
    PyObject *text = sep ? PyUnicode_Join(sep, parts) : NULL;
    Py_XDECREF(sep);
    Py_XDECREF(parts);
    PyErr_Clear();
    return text;
}

/* The string id of the chain f[0..n) (outermost first), interning it on first sight. */
static uint32_t chain_string(const chain_frame *f, size_t n)
{
    if ((chains.used + 1) * 2 > chains.cap && chains_grow() < 0)
        return AFD_NOSTR;
    uint64_t h = chain_hash(f, n);
    size_t j = (size_t)afd_mix64(h) & (chains.cap - 1);
    while (chains.slots[j].hash) {
        if (chains.slots[j].hash == h && same_keys(&chains.slots[j], f, n))
            return chains.slots[j].id;
        j = (j + 1) & (chains.cap - 1);
    }
    if (afd_array_grow((void **)&chains.keys, &chains.cap_keys, chains.n_keys + n, sizeof *chains.keys, 256))
        return AFD_NOSTR;
    PyObject *text = chain_text(f, n);
    if (!text)
        return AFD_NOSTR;
    uint32_t id = afd_rec_intern(text, NULL); /* equal texts (other instructions of one line) share an id */
    Py_DECREF(text);
    chain_slot *s = &chains.slots[j];
    s->hash = h;
    s->off = (uint32_t)chains.n_keys;
    s->n = (uint32_t)n;
    s->id = id;
    for (size_t i = 0; i < n; i++)
        chains.keys[chains.n_keys++] = (chain_key){f[i].code, f[i].lasti};
    chains.used++;
    return id;
}

static void release(chain_frame *f, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        Py_DECREF(f[i].code);
        Py_DECREF(f[i].frame);
    }
}

/* Records the CHAIN event of f[0..n) for task when it has two or more frames. */
static void record(uint32_t task, const chain_frame *f, size_t n)
{
    if (n < 2)
        return;
    uint32_t id = chain_string(f, n);
    if (id != AFD_NOSTR)
        afd_rec_event(AFD_EV_CHAIN, 0, task, id, (uint32_t)n, afd_rec_now, 0);
}

void afd_rec_chain_stack(afd_rt_state *st, PyFrameObject *start)
{
    if (!afd_rec_active())
        return;
    PyObject *exc = PyErr_Occurred() ? afd_take_exception() : NULL;
    chain_frame f[CHAIN_MAX_FRAMES];
    size_t n = 0;
    PyFrameObject *fr = start ? (PyFrameObject *)Py_NewRef(start) : PyEval_GetFrame(); /* New or Borrowed. */
    if (!start)
        Py_XINCREF(fr);
    /* The task's outermost frame (its coroutine's) bounds the walk: below it are the loop and
     * whatever started the loop, which may be user code too (a test calling asyncio.run). A plain
     * callback has no such frame; only a few library frames are skipped before its own. */
    afd_task_info *t = afd_rec_task(afd_rec_current);
    PyObject *root = t && t->coro ? PyObject_GetAttr(t->coro, st->str_cr_frame) : NULL; /* New. */
    if (!root)
        PyErr_Clear();
    int skipped = 0, met_root = 0;
    size_t before_gap = CHAIN_MAX_FRAMES + 1; /* user frames walked before the first library gap */
    /* The innermost run of user frames: library frames inside it (the `access` helper, asyncio's
     * own methods) are skipped, and so are library frames between user frames of the task's own
     * stack (contextlib's __aenter__ running an @asynccontextmanager generator, a 3.12 wait_for
     * running its coroutine inline): the walk goes on to the task's root frame. The first library
     * frame outside the run ends it when there is no root to reach (a plain callback), and when
     * the walk never meets the root the chain is cut back at the first gap (the frames below it
     * were not the task's). */
    while (fr && n < CHAIN_MAX_FRAMES) {
        PyCodeObject *code = PyFrame_GetCode(fr);
        int user = afd_rec_code_is_user(st, code);
        if (!user && n && before_gap > CHAIN_MAX_FRAMES)
            before_gap = n;
        if (!user && !root && (n || ++skipped > LEADING_LIBRARY_FRAMES)) {
            Py_DECREF(code);
            break;
        }
        int last = (PyObject *)fr == root;
        met_root |= last;
        PyFrameObject *back = last ? NULL : PyFrame_GetBack(fr);
        if (user) {
            f[n].code = code;
            f[n].frame = fr;
            f[n].lasti = (uint32_t)afd_rec_frame_lasti(fr) & 0x7fffffffu;
            n++;
        } else {
            Py_DECREF(code);
            Py_DECREF(fr);
        }
        fr = back;
    }
    if (!met_root && before_gap < n) {
        release(f + before_gap, n - before_gap);
        n = before_gap;
    }
    Py_XDECREF(fr);
    Py_XDECREF(root);
    /* walked innermost first; a chain lists the outermost first */
    for (size_t i = 0; i < n / 2; i++) {
        chain_frame swap = f[i];
        f[i] = f[n - 1 - i];
        f[n - 1 - i] = swap;
    }
    record(afd_rec_current, f, n);
    release(f, n);
    PyErr_Clear();
    if (exc)
        afd_restore_exception(exc);
}

/* tp_traverse's visitor: the first async generator among an object's referents. */
static int find_async_gen(PyObject *obj, void *arg)
{
    PyObject **out = arg;
    if (!*out && obj && PyAsyncGen_CheckExact(obj))
        *out = obj;
    return 0;
}

/* The async generator an awaitable of one drives (a new reference), or NULL. `await anext(gen)`
 * and `await gen.athrow(...)` (contextlib's @asynccontextmanager enters and leaves its generator
 * so, in every Python from 3.10 to 3.13) await an async_generator_asend or _athrow object, which
 * holds its generator without naming it as an attribute: it is the generator among the object's
 * referents, as its type's tp_traverse (the garbage collector's view) lists them. */
static PyObject *driven_async_gen(PyObject *obj)
{
    const char *name = Py_TYPE(obj)->tp_name;
    traverseproc traverse = Py_TYPE(obj)->tp_traverse;
    if (!traverse ||
        (strcmp(name, "async_generator_asend") != 0 && strcmp(name, "async_generator_athrow") != 0))
        return NULL;
    PyObject *gen = NULL;
    traverse(obj, find_async_gen, &gen);
    return Py_XNewRef(gen);
}

/* The await chain of a suspended coroutine, from the task's coroutine down: each coroutine's
 * cr_frame and cr_await, each async generator's ag_frame and ag_await, an asend/athrow awaitable
 * passing on to its generator. Library frames are not listed but the walk goes through them: what
 * a library coroutine awaits may be the user's code again (contextlib's __aenter__ running an
 * @asynccontextmanager generator; from 3.12, wait_for awaiting its coroutine inline), and when it
 * is a Future the walk ends there anyway. The site is the innermost user frame's. */
uint32_t afd_rec_suspension(afd_rt_state *st, PyObject *coro, uint32_t *chain, uint32_t *n_frames)
{
    static PyObject *ag_frame, *ag_await;
    if (!ag_frame && (!(ag_frame = PyUnicode_InternFromString("ag_frame")) ||
                      !(ag_await = PyUnicode_InternFromString("ag_await")))) {
        PyErr_Clear();
        return AFD_NOSTR;
    }
    *chain = AFD_NOSTR;
    *n_frames = 0;
    chain_frame f[SUSPENSION_MAX_DEPTH];
    size_t n = 0;
    PyObject *obj = Py_NewRef(coro);
    for (int depth = 0; depth < SUSPENSION_MAX_DEPTH && obj; depth++) {
        /* Only coroutines and async generators have an await chain to follow; a Future ends it.
         * Checking the type first avoids raising (and clearing) an AttributeError on every step. */
        int is_coro = PyCoro_CheckExact(obj);
        if (!is_coro && !PyAsyncGen_CheckExact(obj)) {
            Py_SETREF(obj, driven_async_gen(obj));
            continue;
        }
        PyObject *frame = PyObject_GetAttr(obj, is_coro ? st->str_cr_frame : ag_frame);
        if (!frame || frame == Py_None || !PyFrame_Check(frame)) {
            Py_XDECREF(frame);
            break;
        }
        PyCodeObject *code = PyFrame_GetCode((PyFrameObject *)frame);
        if (afd_rec_code_is_user(st, code)) {
            f[n].code = code;
            f[n].frame = (PyFrameObject *)frame;
            f[n].lasti = (uint32_t)afd_rec_frame_lasti((PyFrameObject *)frame) & 0x7fffffffu;
            n++;
        } else {
            Py_DECREF(code);
            Py_DECREF(frame);
        }
        PyObject *next = PyObject_GetAttr(obj, is_coro ? st->str_cr_await : ag_await);
        Py_DECREF(obj);
        obj = (next && next != Py_None) ? next : NULL;
        if (next == Py_None)
            Py_DECREF(next);
    }
    Py_XDECREF(obj);
    PyErr_Clear();
    uint32_t site = n ? afd_rec_site_string(st, f[n - 1].code, f[n - 1].frame) : AFD_NOSTR;
    if (n >= 2) {
        *chain = chain_string(f, n);
        *n_frames = (uint32_t)n;
    }
    release(f, n);
    PyErr_Clear();
    return site;
}
