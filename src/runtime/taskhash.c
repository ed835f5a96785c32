/* taskhash.c -- the hash of an asyncio Task, numbered in a controlled run.
 *
 * A Task hashes by its address, so a set of tasks iterates in address order: asyncio.all_tasks(),
 * the done and pending sets of asyncio.wait(), a program's own set of background tasks. Two worker
 * processes replaying one schedule place their tasks at different addresses, so code that walks
 * such a set (asyncio.Runner cancelling the tasks left at the end, a program cancelling its
 * background tasks) would run its steps in another order in each. In a controlled run a task
 * created there hashes by its number in the run instead (1, 2, ... in the order the tasks were
 * first hashed, which asyncio does when it registers a new task), so the same schedule walks the
 * same sets in the same order in every process, and all_tasks() stays a plain set. Any order is
 * one stock asyncio gives on some machine: the addresses that would give it are possible.
 *
 * Invariant: a task's hash never changes. The hash a task got first is kept beside a weak
 * reference to it (an address reused by a later task is told apart), in a table a fork copies:
 * a task the worker made before the run (a session fixture's) keeps its address hash in the run.
 * Outside a recording, and in natural runs, the hash is the address hash CPython gives (natural
 * runs keep nothing). Workload: a task is hashed two or three times in its life. */
#include "runtime.h"

typedef struct {
    PyObject *task; /* Borrowed key: compared by address only. */
    PyObject *weak; /* Owned weak reference to the task, or NULL for an empty slot. */
    Py_hash_t hash;
} hash_slot;

static hash_slot *slots;
static size_t n_slots, n_used;
static Py_hash_t numbered; /* the last number a task got (the table and it survive a fork) */

static hash_slot *find(PyObject *task)
{
    size_t i = (size_t)afd_hash_pointer(task) & (n_slots - 1);
    while (slots[i].weak && slots[i].task != task)
        i = (i + 1) & (n_slots - 1);
    return &slots[i];
}

/* Doubles the table, dropping the slots of tasks that are gone. */
static int grow(void)
{
    size_t old_n = n_slots;
    hash_slot *old = slots;
    n_slots = old_n ? old_n * 2 : 256;
    slots = calloc(n_slots, sizeof *slots);
    if (!slots) {
        slots = old;
        n_slots = old_n;
        PyErr_NoMemory();
        return -1;
    }
    n_used = 0;
    for (size_t i = 0; i < old_n; i++) {
        if (!old[i].weak)
            continue;
        if (!afd_weak_is(old[i].weak, old[i].task)) {
            Py_DECREF(old[i].weak);
            continue;
        }
        *find(old[i].task) = old[i];
        n_used++;
    }
    free(old);
    return 0;
}

static PyObject *task_hash(PyObject *self, PyObject *unused)
{
    (void)unused;
    int controlled = afd_rt_config.mode == AFD_MODE_CONTROLLED && afd_rec_active();
    if (!controlled && afd_rec_active()) /* a natural run: the stock hash, nothing kept */
        return PyLong_FromSsize_t(afd_hash_pointer(self));
    if (n_slots) {
        hash_slot *s = find(self);
        if (s->weak && afd_weak_is(s->weak, self))
            return PyLong_FromSsize_t(s->hash);
    }
    if ((n_used + 1) * 2 > n_slots && grow() < 0)
        return NULL;
    PyObject *weak = PyWeakref_NewRef(self, NULL);
    if (!weak)
        return NULL;
    hash_slot *s = find(self);
    if (s->weak) /* the same address, a task that is gone */
        Py_DECREF(s->weak);
    else
        n_used++;
    s->task = self;
    s->weak = weak;
    s->hash = controlled ? ++numbered : afd_hash_pointer(self);
    return PyLong_FromSsize_t(s->hash);
}

static PyMethodDef hash_def = {"__hash__", task_hash, METH_NOARGS, "Return hash(self)."};

int afd_taskhash_install(afd_rt_state *st)
{
    PyTypeObject *tp = (PyTypeObject *)st->c_task_type;
    PyObject *have = tp->tp_dict ? PyDict_GetItemString(tp->tp_dict, "__hash__") : NULL; /* Borrowed. */
    if (have && PyObject_TypeCheck(have, &PyMethodDescr_Type) &&
        ((PyMethodDescrObject *)have)->d_method == &hash_def)
        return 0;
    PyObject *descr = PyDescr_NewMethod(tp, &hash_def);
    if (!descr)
        return -1;
    /* The type's own setattr puts the slot in place for it and for the subclasses made so far. */
    unsigned long flags = tp->tp_flags;
    tp->tp_flags &= ~Py_TPFLAGS_IMMUTABLETYPE;
    int rc = PyObject_SetAttrString((PyObject *)tp, "__hash__", descr);
    tp->tp_flags = flags;
    Py_DECREF(descr);
    return rc;
}
