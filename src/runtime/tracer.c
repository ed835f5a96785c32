/* tracer.c -- the optional line tracer: which lines of user code each step runs, and on which
 * object.
 *
 * On only in runs that ask for it (AFD_MODE_TRACE_LINES: investigate turns it on once a failure
 * is reproduced), and only while a step runs: the trace function is set when the loop starts a
 * step and cleared when the step returns, so pytest's own machinery is never traced. Whether a
 * code object is the user's (not the standard library, site-packages or affidavit) is decided once
 * per code object. For a user frame whose first parameter is `self` or `cls`, the receiver is
 * numbered once per frame activation and every LINE event of that frame carries it, so the engine
 * can tell `store.sessions` of one Store from another's. */
#include "runtime.h"
#include "pyscan.h"

#include <frameobject.h>
#include <string.h>

#define MAX_DEPTH 512

typedef struct frame_info {
    uint8_t user;
    const afd_pyscan *scan; /* the file's accesses, for lines that reach into local variables */
    uint32_t file;          /* string id of the code's path */
    uint32_t recv;          /* receiver object number, 0 none */
    uint32_t label;         /* receiver label string id, AFD_NOSTR none */
    uint32_t n_user;        /* user frames on the traced stack up to and including this one */
} frame_info;

static struct {
    frame_info f[MAX_DEPTH];
    int depth;
    int on;
} tracer;

static afd_rt_state *tracer_state;

static PyObject *frame_receiver(PyFrameObject *frame, int kind)
{
    const char *name = kind == 2 ? "cls" : "self";
#if PY_VERSION_HEX >= 0x030C0000
    PyObject *v = PyFrame_GetVarString(frame, (char *)name);
#else
#if PY_VERSION_HEX >= 0x030B0000
    PyObject *locals = PyFrame_GetLocals(frame);
#else
    PyObject *locals = PyObject_GetAttrString((PyObject *)frame, "f_locals");
#endif
    PyObject *v = NULL;
    if (locals) {
        v = PyMapping_GetItemString(locals, name);
        Py_DECREF(locals);
    }
#endif
    if (!v)
        PyErr_Clear();
    return v;
}

/* Values that cannot be shared state worth naming: immutable scalars. */
static int is_plain_value(PyObject *v)
{
    return v == Py_None || PyBool_Check(v) || PyLong_CheckExact(v) || PyFloat_CheckExact(v) ||
           PyUnicode_CheckExact(v) || PyBytes_CheckExact(v);
}

/* For a line that reaches into local variables (`state["token"] = v`), which object each one
 * holds: one LOCAL event per variable, right after the line's LINE event. */
static void record_locals(PyFrameObject *frame, const afd_pyscan *scan, uint32_t line)
{
    size_t first, count;
    afd_pyscan_line(scan, line, &first, &count);
    const char *done[8];
    size_t n_done = 0;
    for (size_t k = 0; k < count; k++) {
        const afd_pyaccess *a = &scan->acc[first + k];
        if (a->root != AFD_ROOT_LOCAL)
            continue;
        int seen = 0;
        for (size_t j = 0; j < n_done; j++)
            seen |= strcmp(done[j], a->name) == 0;
        if (seen || n_done == 8)
            continue;
        done[n_done++] = a->name;
#if PY_VERSION_HEX >= 0x030C0000
        PyObject *v = PyFrame_GetVarString(frame, a->name);
#else
#if PY_VERSION_HEX >= 0x030B0000
        PyObject *locals = PyFrame_GetLocals(frame);
#else
        PyObject *locals = PyObject_GetAttrString((PyObject *)frame, "f_locals");
#endif
        PyObject *v = locals ? PyMapping_GetItemString(locals, a->name) : NULL;
        Py_XDECREF(locals);
#endif
        if (!v) {
            PyErr_Clear();
            continue;
        }
        if (!is_plain_value(v)) {
            uint32_t label;
            uint32_t number = afd_rec_receiver(tracer_state, v, 0, &label);
            if (number)
                afd_rec_event(AFD_EV_LOCAL, 0, afd_rec_current, afd_rec_intern(NULL, a->name), line, number,
                              label);
        }
        Py_DECREF(v);
    }
}

static int trace_fn(PyObject *unused, PyFrameObject *frame, int what, PyObject *arg)
{
    switch (what) {
    case PyTrace_CALL: {
        int d = tracer.depth++;
        if (d >= MAX_DEPTH)
            return 0;
        frame_info *fi = &tracer.f[d];
        fi->user = 0;
        fi->recv = 0;
        fi->label = AFD_NOSTR;
        fi->n_user = d > 0 ? tracer.f[d - 1].n_user : 0;
        PyCodeObject *code = PyFrame_GetCode(frame);
        const afd_code_info *ci = afd_rec_code_info(tracer_state, code);
        Py_DECREF(code);
        if (!ci || !ci->user)
            return 0;
        fi->user = 1;
        fi->n_user++;
        fi->file = ci->file;
        fi->scan = ci->scan;
        if (ci->receiver) {
            PyObject *recv = frame_receiver(frame, ci->receiver);
            if (recv) {
                fi->recv = afd_rec_receiver(tracer_state, recv, ci->receiver == 2, &fi->label);
                Py_DECREF(recv);
            }
        }
        return 0;
    }
    case PyTrace_RETURN:
        if (tracer.depth > 0)
            tracer.depth--;
        return 0;
    case PyTrace_LINE: {
        int d = tracer.depth - 1;
        if (d < 0 || d >= MAX_DEPTH || !tracer.f[d].user)
            return 0;
        const frame_info *fi = &tracer.f[d];
        int line = PyFrame_GetLineNumber(frame);
        afd_rec_event(AFD_EV_LINE, 0, afd_rec_current, fi->file, (uint32_t)(line > 0 ? line : 0), fi->recv,
                      fi->label);
        /* a lone user frame is the line's own site: only a deeper stack has a chain to walk */
        if (fi->n_user >= 2)
            afd_rec_chain_stack(tracer_state, frame);
        if (fi->scan && line > 0)
            record_locals(frame, fi->scan, (uint32_t)line);
        return 0;
    }
    default:
        return 0;
    }
}

void afd_tracer_step_begin(afd_rt_state *st)
{
    tracer_state = st;
    tracer.depth = 0;
    tracer.on = 1;
    PyEval_SetTrace(trace_fn, NULL);
}

void afd_tracer_step_end(void)
{
    if (!tracer.on)
        return;
    tracer.on = 0;
    PyObject *exc = PyErr_Occurred() ? afd_take_exception() : NULL;
    PyEval_SetTrace(NULL, NULL);
    if (exc)
        afd_restore_exception(exc);
}
