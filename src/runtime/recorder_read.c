/* recorder_read.c -- a recording read back: the region decoded into a trace (by the fork server,
 * from a child's shared mapping that the child may have left in any state), and the Python-facing
 * functions that record operations and list what was recorded.
 *
 * Invariant: afd_rec_to_trace trusts nothing in the region beyond its bounds; every offset,
 * count and string id is checked before use. Workload: one decode per run in the fork server. */
#include "recorder_impl.h"
#include "runtime.h"

#include <string.h>

static afd_recorder *const rec = &afd_rec;

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
        if (e.kind == AFD_EV_CHAIN && e.a != AFD_NOSTR && e.a >= n_strings)
            continue; /* a chain whose text was cut from the string table names nothing */
        if (e.kind == AFD_EV_LINE || e.kind == AFD_EV_LOCAL) {
            if (e.a != AFD_NOSTR && e.a >= n_strings)
                e.a = AFD_NOSTR;
            if (e.cost != AFD_NOSTR && e.cost >= n_strings)
                e.cost = AFD_NOSTR;
        }
        if (e.kind == AFD_EV_TASK || e.kind == AFD_EV_STEP || e.kind == AFD_EV_ASSERT_BEGIN ||
            e.kind == AFD_EV_ASSERT_END || e.kind == AFD_EV_OP_BEGIN || e.kind == AFD_EV_OP_END ||
            e.kind == AFD_EV_SYNC || e.kind == AFD_EV_BLOCK ||
            (e.kind >= AFD_EV_CANCEL && e.kind <= AFD_EV_RESUME)) {
            if (e.b != AFD_NOSTR && e.b >= n_strings)
                e.b = AFD_NOSTR;
        }
        if ((e.kind == AFD_EV_OP_BEGIN || e.kind == AFD_EV_OP_END) && e.a != AFD_NOSTR && e.a >= n_strings)
            e.a = AFD_NOSTR;
        rc = afd_trace_add_events(out, &e, 1);
    }
    return rc;
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
    if (!rec->hdr)
        Py_RETURN_NONE;
    uint32_t a = args[1] == Py_None ? AFD_NOSTR : afd_rec_intern(args[1], NULL);
    uint32_t b = args[2] == Py_None ? AFD_NOSTR : afd_rec_intern(args[2], NULL);
    afd_rec_event((uint8_t)kind, (uint8_t)flags, afd_rec_current, a, b, afd_rec_now, 0);
    if (kind == AFD_EV_OP_BEGIN)
        afd_rec_chain_stack((afd_rt_state *)PyModule_GetState(self), NULL); /* self: the module */
    Py_RETURN_NONE;
}

/* Snapshots the recording as a trace and maps each event through row() into a list; row returns
 * a new reference, or NULL without an exception to skip the event. */
typedef PyObject *(*row_fn)(const afd_trace *tr, const afd_event *e);

static PyObject *recorded_rows(row_fn row)
{
    PyObject *out = PyList_New(0);
    if (!out || !rec->hdr)
        return out;
    afd_trace tr;
    if (afd_trace_init(&tr) < 0) {
        Py_DECREF(out);
        return PyErr_NoMemory();
    }
    int rc = afd_rec_to_trace(rec->mem, rec->size, &tr);
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
    return task && task <= rec->n_tasks ? rec->tasks[task].label : "";
}

static PyObject *str_or_empty(const afd_trace *tr, uint32_t id)
{
    return PyUnicode_FromString(id == AFD_NOSTR ? "" : afd_trace_string(tr, id));
}

static PyObject *event_row(const afd_trace *tr, const afd_event *e)
{
    int a_is_str = e->kind == AFD_EV_OP_BEGIN || e->kind == AFD_EV_OP_END || e->kind == AFD_EV_LINE ||
                   e->kind == AFD_EV_LOCAL || e->kind == AFD_EV_CHAIN;
    int b_is_str = e->kind == AFD_EV_TASK || e->kind == AFD_EV_STEP || e->kind == AFD_EV_OP_BEGIN ||
                   e->kind == AFD_EV_OP_END || e->kind == AFD_EV_ASSERT_BEGIN ||
                   e->kind == AFD_EV_ASSERT_END || e->kind == AFD_EV_SYNC || e->kind == AFD_EV_BLOCK;
    int cancel_kind = e->kind >= AFD_EV_CANCEL && e->kind <= AFD_EV_RESUME;
    /* the task a cancellation or a hand-off is aimed at, by its label */
    int a_is_task = e->kind == AFD_EV_CANCEL || e->kind == AFD_EV_UNCANCEL || e->kind == AFD_EV_HANDOFF;
    PyObject *a = a_is_str    ? str_or_empty(tr, e->a)
                  : a_is_task ? PyUnicode_FromString(task_label_of(e->a))
                              : PyLong_FromUnsignedLong(e->a);
    PyObject *b = b_is_str || cancel_kind ? str_or_empty(tr, e->b) : PyLong_FromUnsignedLong(e->b);
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
 * resolved (a is an int for kinds whose `a` is not a string, the target task's label for CANCEL,
 * UNCANCEL and HANDOFF). For tests and in-process use. */
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

static PyObject *slot_row(const afd_trace *tr, const afd_event *e)
{
    if (e->kind != AFD_EV_SLOT)
        return NULL;
    return Py_BuildValue("(sIKKKK)", task_label_of(e->task), e->a, (unsigned long long)(e->b - 1),
                         (unsigned long long)e->vtime, (unsigned long long)e->cost,
                         (unsigned long long)e->wall);
}

/* slots(): the recorded SLOT events as (label, ordinal, step index, cost_ns, margin_ns, reads)
 * tuples (margin 2**64 - 1: no comparison would flip). For tests and in-process use. */
PyObject *afd_rt_slots(PyObject *self, PyObject *unused)
{
    return recorded_rows(slot_row);
}

/* trace_digests(): (afd_trace_digest, afd_trace_order_digest) of the recording as it stands. The
 * recording holds no token or mode (the fork server adds them), so the first is comparable only
 * between in-process recordings. */
PyObject *afd_rt_trace_digests(PyObject *self, PyObject *unused)
{
    if (!rec->hdr)
        return Py_BuildValue("(KK)", 0ULL, 0ULL);
    afd_trace tr;
    if (afd_trace_init(&tr) < 0)
        return PyErr_NoMemory();
    int rc = afd_rec_to_trace(rec->mem, rec->size, &tr);
    PyObject *r = rc < 0 ? NULL
                         : Py_BuildValue("(KK)", (unsigned long long)afd_trace_digest(&tr),
                                         (unsigned long long)afd_trace_order_digest(&tr));
    afd_trace_finish(&tr);
    if (rc < 0)
        PyErr_SetString(PyExc_RuntimeError, afd_strerror(rc));
    return r;
}

/* trace_info(): the recording's counters: steps, events, dropped, truncated, flags. */
PyObject *afd_rt_trace_info(PyObject *self, PyObject *unused)
{
    afd_shm_header *h = rec->hdr;
    if (!h)
        return Py_BuildValue("{s:K,s:I,s:K,s:O,s:I}", "steps", 0ULL, "events", 0u, "dropped", 0ULL,
                             "truncated", Py_False, "flags", 0u);
    return Py_BuildValue("{s:K,s:I,s:K,s:O,s:I}", "steps", (unsigned long long)h->steps, "events",
                         h->n_events, "dropped", (unsigned long long)h->dropped, "truncated",
                         (h->flags & AFD_TRACE_TRUNCATED) ? Py_True : Py_False, "flags", h->flags);
}
