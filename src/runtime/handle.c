/* handle.c -- the Handle and TimerHandle the controlled loop schedules: subclasses of asyncio's.
 *
 * Code that runs on asyncio checks what it gets back from call_soon and call_later:
 * `isinstance(h, asyncio.TimerHandle)`, `asyncio.TimerHandle.when(h)`, `h._scheduled`, a sort of
 * handles, their repr. So the two types here are heap types whose bases are asyncio.events.Handle
 * and asyncio.events.TimerHandle themselves, and every attribute stock asyncio has lives where
 * stock keeps it: in the base classes' __slots__, read and written by asyncio's own descriptors
 * and methods (cancel, cancelled, when, get_context, __repr__, the comparisons and hash all come
 * from asyncio unchanged). What this file adds is the loop's own bookkeeping, in a C struct at the
 * end of the object, and a C path to create, run and free a handle without a Python frame.
 *
 * Where the base classes keep their slots is learned from their member descriptors when the module
 * loads, not assumed: __slots__ are laid out in sorted order after the base, and the weak
 * reference list moved before the object in 3.12, so no one C struct fits every Python.
 *
 * Invariant: a handle's slots are never NULL while it is alive (asyncio's descriptors would raise
 * AttributeError); a cancelled handle holds None as callback and arguments, as in asyncio, so a
 * cancelled timer left on the heap keeps nothing alive. Workload: one handle per step. */
#include "runtime.h"

#include <string.h>
#include <structmember.h>

afd_handle_layout afd_hl;

/* Recently freed handles of each type, reused without going back to the allocator: one handle is
 * created and destroyed per step, so this spares a malloc/free pair and the GC's allocation
 * accounting. Index 0 holds plain handles, 1 timers. */
#define FREELIST_MAX 256
static PyObject *freelist[2][FREELIST_MAX];
static int freelist_n[2];

/* Calls cb(*seq) for a sequence that is not a tuple. */
static PyObject *call_sequence(PyObject *cb, PyObject *seq)
{
    PyObject *t = PySequence_Tuple(seq);
    PyObject *r = t ? PyObject_Call(cb, t, NULL) : NULL;
    Py_XDECREF(t);
    return r;
}

static PyObject **slot(PyObject *h, Py_ssize_t off)
{
    return (PyObject **)((char *)h + off);
}

/* Stores an owned reference in a slot, releasing what was there. */
static void slot_set(PyObject *h, Py_ssize_t off, PyObject *v)
{
    PyObject *old = *slot(h, off);
    *slot(h, off) = v;
    Py_XDECREF(old);
}

PyObject *afd_handle_callback(afd_handle *h)
{
    return *slot((PyObject *)h, afd_hl.callback);
}

PyObject *afd_handle_args(afd_handle *h)
{
    return *slot((PyObject *)h, afd_hl.args);
}

int afd_handle_cancelled(afd_handle *h)
{
    return *slot((PyObject *)h, afd_hl.cancelled) == Py_True;
}

void afd_handle_set_scheduled(afd_handle *h, int scheduled)
{
    slot_set((PyObject *)h, afd_hl.scheduled, Py_NewRef(scheduled ? Py_True : Py_False));
}

int afd_handle_scheduled(afd_handle *h)
{
    return *slot((PyObject *)h, afd_hl.scheduled) == Py_True;
}

afd_handle *afd_handle_new(afd_rt_state *st, PyObject *callback, PyObject *args, PyObject *context,
                           PyObject *loop, int is_timer, double when, double shown)
{
    PyTypeObject *tp = is_timer ? st->timer_type : st->handle_type;
    PyObject *when_obj = NULL;
    if (is_timer && !(when_obj = PyFloat_FromDouble(shown)))
        return NULL;
    PyObject *argtuple = args ? Py_NewRef(args) : PyTuple_New(0);
    if (!argtuple) {
        Py_XDECREF(when_obj);
        return NULL;
    }
    PyObject *h;
    int fresh = 0;
    if (freelist_n[is_timer] > 0) {
        h = freelist[is_timer][--freelist_n[is_timer]];
        PyObject_Init(h, tp);
    } else {
        /* tp_alloc zeroes the object, tracks it, and knows where this Python keeps the weak
         * reference list (inside the object up to 3.11, before it from 3.12). */
        h = tp->tp_alloc(tp, 0);
        if (!h) {
            Py_XDECREF(when_obj);
            Py_DECREF(argtuple);
            return NULL;
        }
        fresh = 1;
    }
    /* Every object slot of the bases first holds None, so that a slot this file does not know by
     * name (one a later Python adds) still reads as asyncio's __init__ would leave it. */
    size_t n = is_timer ? afd_hl.n_slots : afd_hl.n_handle_slots;
    for (size_t i = 0; i < n; i++)
        *slot(h, afd_hl.slots[i]) = Py_NewRef(Py_None);
    slot_set(h, afd_hl.callback, Py_NewRef(callback));
    slot_set(h, afd_hl.args, argtuple);
    slot_set(h, afd_hl.context, Py_NewRef(context));
    slot_set(h, afd_hl.loop, Py_NewRef(loop));
    slot_set(h, afd_hl.cancelled, Py_NewRef(Py_False));
    if (is_timer) {
        slot_set(h, afd_hl.when, when_obj);
        slot_set(h, afd_hl.scheduled, Py_NewRef(Py_False));
    }
    afd_handle_ext *x = afd_handle_ext_of((afd_handle *)h);
    x->when = when;
    x->sleep_site = AFD_NOSTR;
    x->seq = 0;
    x->injected = afd_injected_ns;
    x->deadline = 0;
    x->handoff = 0;
    x->handoff_label = AFD_NOSTR;
    x->handoff_flags = 0;
    x->creator = afd_rec_current;
    x->origin = afd_rec_step_no;
    x->is_timer = (uint8_t)is_timer;
    x->mask = 0;
    if (!fresh)
        PyObject_GC_Track(h);
    return (afd_handle *)h;
}

/* A plain handle's slots are the prefix of afd_hl.slots that asyncio.Handle declares; the
 * timer's two follow. */
static size_t slot_count(PyObject *h)
{
    return afd_handle_ext_of((afd_handle *)h)->is_timer ? afd_hl.n_slots : afd_hl.n_handle_slots;
}

static int handle_traverse(PyObject *h, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(h));
    size_t n = slot_count(h);
    for (size_t i = 0; i < n; i++)
        Py_VISIT(*slot(h, afd_hl.slots[i]));
    return 0;
}

static int handle_clear(PyObject *h)
{
    size_t n = slot_count(h);
    for (size_t i = 0; i < n; i++)
        Py_CLEAR(*slot(h, afd_hl.slots[i]));
    return 0;
}

static void handle_dealloc(PyObject *h)
{
    PyTypeObject *tp = Py_TYPE(h);
    PyObject_GC_UnTrack(h);
    /* Up to 3.11 the list is a slot inside the object, cheap to test; from 3.12 it sits before the
     * object and only the runtime knows where. */
    if (tp->tp_weaklistoffset <= 0 || *slot(h, tp->tp_weaklistoffset))
        PyObject_ClearWeakRefs(h);
    handle_clear(h);
    afd_rt_state *st = afd_rt_state_of_type(tp);
    int kind = tp == st->timer_type;
    if (freelist_n[kind] < FREELIST_MAX && (kind || tp == st->handle_type))
        freelist[kind][freelist_n[kind]++] = h;
    else
        tp->tp_free(h);
    Py_DECREF(tp);
}

/* asyncio's words for a callback that raised: "Exception in callback f(1) at file.py:3". */
static PyObject *exception_message(PyObject *cb, PyObject *args)
{
    PyObject *helpers = PyImport_ImportModule("asyncio.format_helpers");
    PyObject *src =
        helpers ? PyObject_CallMethod(helpers, "_format_callback_source", "OO", cb, args ? args : Py_None)
                : NULL;
    Py_XDECREF(helpers);
    if (!src) {
        PyErr_Clear(); /* a callback whose repr fails still gets reported */
        return PyUnicode_FromFormat("Exception in callback %R", cb);
    }
    PyObject *msg = PyUnicode_FromFormat("Exception in callback %U", src);
    Py_DECREF(src);
    return msg;
}

int afd_handle_run(afd_rt_state *st, afd_handle *hh)
{
    PyObject *h = (PyObject *)hh;
    PyObject *cb = *slot(h, afd_hl.callback);
    PyObject *args = *slot(h, afd_hl.args);
    if (!cb || cb == Py_None || afd_handle_cancelled(hh))
        return 0;
    Py_INCREF(cb);
    Py_XINCREF(args);
    PyObject *ctx = Py_NewRef(*slot(h, afd_hl.context));
    PyObject *res = NULL;
    if (PyContext_Enter(ctx) == 0) {
        if (!args || args == Py_None || (PyTuple_Check(args) && PyTuple_GET_SIZE(args) == 0))
            res = PyObject_CallNoArgs(cb);
        else if (PyTuple_Check(args))
            res = PyObject_Call(cb, args, NULL);
        else
            res = call_sequence(cb, args); /* asyncio spreads any iterable someone stored */
        if (PyContext_Exit(ctx) < 0 && res) {
            Py_CLEAR(res);
        }
    }
    int rc = 0;
    if (!res) {
        if (PyErr_ExceptionMatches(PyExc_SystemExit) || PyErr_ExceptionMatches(PyExc_KeyboardInterrupt)) {
            rc = -1;
        } else {
            /* asyncio.Handle._run: report through the loop's exception handler, never stop the loop. */
            PyObject *exc = afd_take_exception();
            PyObject *msg = exception_message(cb, args);
            PyObject *dict = msg ? PyDict_New() : NULL;
            if (dict && PyDict_SetItem(dict, st->str_message, msg) == 0 &&
                PyDict_SetItem(dict, st->str_exception, exc) == 0 &&
                PyDict_SetItem(dict, st->str_handle, h) == 0) {
                PyObject *r =
                    PyObject_CallMethodOneArg(*slot(h, afd_hl.loop), st->str_call_exception_handler, dict);
                if (!r)
                    rc = -1;
                Py_XDECREF(r);
            } else {
                rc = -1;
            }
            Py_XDECREF(dict);
            Py_XDECREF(msg);
            Py_XDECREF(exc);
        }
    }
    Py_XDECREF(res);
    Py_DECREF(ctx);
    Py_XDECREF(args);
    Py_DECREF(cb);
    return rc;
}

static PyType_Slot handle_slots[] = {
    {Py_tp_dealloc, handle_dealloc},
    {Py_tp_traverse, handle_traverse},
    {Py_tp_clear, handle_clear},
    {Py_tp_doc, "A callback scheduled on the controlled loop: an asyncio.Handle."},
    {0, NULL},
};

static PyType_Slot timer_slots[] = {
    {Py_tp_dealloc, handle_dealloc},
    {Py_tp_traverse, handle_traverse},
    {Py_tp_clear, handle_clear},
    {Py_tp_doc, "A timed callback scheduled on the controlled loop: an asyncio.TimerHandle."},
    {0, NULL},
};

/* Finds the offset of the object slot `name` that `tp` (or a base) declares in __slots__;
 * -1 with an exception set if there is none. */
static Py_ssize_t member_offset(PyTypeObject *tp, const char *name)
{
    PyObject *d = PyObject_GetAttrString((PyObject *)tp, name);
    if (!d)
        return -1;
    Py_ssize_t off = -1;
    if (Py_IS_TYPE(d, &PyMemberDescr_Type)) {
        PyMemberDef *m = ((PyMemberDescrObject *)d)->d_member;
        if (m->type == T_OBJECT_EX && !(m->flags & READONLY))
            off = m->offset;
    }
    Py_DECREF(d);
    if (off < 0)
        PyErr_Format(PyExc_ImportError, "affidavit: asyncio's %s.%s is not a __slots__ member", tp->tp_name,
                     name);
    return off;
}

/* Records every writable object slot that `tp` itself declares (not its bases). */
static int collect_slots(PyTypeObject *tp)
{
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(tp->tp_dict, &pos, &key, &value)) {
        if (!Py_IS_TYPE(value, &PyMemberDescr_Type))
            continue;
        PyMemberDef *m = ((PyMemberDescrObject *)value)->d_member;
        if (m->type != T_OBJECT_EX || (m->flags & READONLY))
            continue;
        if (afd_hl.n_slots == AFD_HANDLE_MAX_SLOTS) {
            PyErr_SetString(PyExc_ImportError, "affidavit: asyncio's handles have more slots than expected");
            return -1;
        }
        afd_hl.slots[afd_hl.n_slots++] = m->offset;
    }
    return 0;
}

static int learn_layout(PyTypeObject *base, PyTypeObject *timer)
{
    memset(&afd_hl, 0, sizeof afd_hl);
    if (collect_slots(base) < 0)
        return -1;
    afd_hl.n_handle_slots = afd_hl.n_slots;
    if (collect_slots(timer) < 0)
        return -1;
    /* Plain handle slots come first in afd_hl.slots, so a plain handle uses a prefix. */
    if ((afd_hl.callback = member_offset(base, "_callback")) < 0 ||
        (afd_hl.args = member_offset(base, "_args")) < 0 ||
        (afd_hl.cancelled = member_offset(base, "_cancelled")) < 0 ||
        (afd_hl.context = member_offset(base, "_context")) < 0 ||
        (afd_hl.loop = member_offset(base, "_loop")) < 0 ||
        (afd_hl.scheduled = member_offset(timer, "_scheduled")) < 0 ||
        (afd_hl.when = member_offset(timer, "_when")) < 0)
        return -1;
    /* Both types put the loop's bookkeeping at one offset, after the larger (the timer's) layout,
     * so that the hot path needs no per-type lookup; a plain handle carries two unused words. */
    Py_ssize_t align = (Py_ssize_t) _Alignof(afd_handle_ext);
    afd_hl.ext = (timer->tp_basicsize + align - 1) / align * align;
    return 0;
}

static PyObject *type_from_base(PyObject *module, const char *name, PyType_Slot *slots, PyTypeObject *base)
{
    PyType_Spec spec = {
        .name = name,
        .basicsize = (int)(afd_hl.ext + (Py_ssize_t)sizeof(afd_handle_ext)),
        /* Not Py_TPFLAGS_IMMUTABLETYPE: asyncio's classes are mutable, and 3.12 warns (an error
         * under filterwarnings = error) when an immutable type is made from a mutable base. */
        .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_DISALLOW_INSTANTIATION,
        .slots = slots,
    };
    return PyType_FromModuleAndSpec(module, &spec, (PyObject *)base);
}

int afd_handle_types_new(PyObject *module, PyObject **handle_type, PyObject **timer_type)
{
    *handle_type = *timer_type = NULL;
    PyObject *events = PyImport_ImportModule("asyncio.events");
    PyObject *base = events ? PyObject_GetAttrString(events, "Handle") : NULL;
    PyObject *timer = base ? PyObject_GetAttrString(events, "TimerHandle") : NULL;
    int rc = -1;
    if (!timer)
        goto cleanup;
    if (!PyType_Check(base) || !PyType_Check(timer) ||
        !PyType_IsSubtype((PyTypeObject *)timer, (PyTypeObject *)base)) {
        PyErr_SetString(PyExc_ImportError, "affidavit: asyncio.events.Handle/TimerHandle are not classes");
        goto cleanup;
    }
    if (learn_layout((PyTypeObject *)base, (PyTypeObject *)timer) < 0)
        goto cleanup;
    *handle_type = type_from_base(module, "affidavit._runtime.Handle", handle_slots, (PyTypeObject *)base);
    *timer_type = *handle_type ? type_from_base(module, "affidavit._runtime.TimerHandle", timer_slots,
                                                (PyTypeObject *)timer)
                               : NULL;
    if (*timer_type)
        rc = 0;
    else
        Py_CLEAR(*handle_type);
cleanup:
    Py_XDECREF(timer);
    Py_XDECREF(base);
    Py_XDECREF(events);
    return rc;
}
