/* loop_queues.c -- the controlled loop's two queues: the ready queue, a FIFO ring of handles, and
 * the timer heap, a binary min-heap on (when, seq), as asyncio's BaseEventLoop keeps them in
 * _ready (a deque) and _scheduled (a heapq list). loop.c owns the order in which they are used;
 * nothing here reorders the ready queue. */
#include "runtime.h"

int afd_lq_ready_push(afd_loop_queues *q, PyObject *h) /* steals h */
{
    if (q->rcount == q->rcap) {
        size_t ncap = q->rcap ? q->rcap * 2 : 64;
        PyObject **nr = PyMem_Malloc(ncap * sizeof *nr);
        if (!nr) {
            Py_DECREF(h);
            PyErr_NoMemory();
            return -1;
        }
        for (size_t i = 0; i < q->rcount; i++)
            nr[i] = q->ready[(q->rhead + i) % q->rcap];
        PyMem_Free(q->ready);
        q->ready = nr;
        q->rcap = ncap;
        q->rhead = 0;
    }
    q->ready[(q->rhead + q->rcount) % q->rcap] = h;
    q->rcount++;
    return 0;
}

PyObject *afd_lq_ready_pop(afd_loop_queues *q) /* returns an owned reference */
{
    PyObject *h = q->ready[q->rhead];
    q->rhead = (q->rhead + 1) % q->rcap;
    q->rcount--;
    return h;
}

static int timer_less(const afd_handle *a, const afd_handle *b)
{
    const afd_handle_ext *x = afd_handle_ext_of((afd_handle *)a), *y = afd_handle_ext_of((afd_handle *)b);
    return x->when < y->when || (x->when == y->when && x->seq < y->seq);
}

static void sift_up(afd_loop_queues *q, size_t i)
{
    afd_handle *x = q->heap[i];
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!timer_less(x, q->heap[p]))
            break;
        q->heap[i] = q->heap[p];
        i = p;
    }
    q->heap[i] = x;
}

static void sift_down(afd_loop_queues *q, size_t i)
{
    afd_handle *x = q->heap[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= q->hn)
            break;
        if (c + 1 < q->hn && timer_less(q->heap[c + 1], q->heap[c]))
            c++;
        if (!timer_less(q->heap[c], x))
            break;
        q->heap[i] = q->heap[c];
        i = c;
    }
    q->heap[i] = x;
}

int afd_lq_push(afd_loop_queues *q, afd_handle *h) /* borrows h, takes a new reference */
{
    if (q->hn == q->hcap) {
        size_t ncap = q->hcap ? q->hcap * 2 : 64;
        afd_handle **nh = PyMem_Realloc(q->heap, ncap * sizeof *nh);
        if (!nh) {
            PyErr_NoMemory();
            return -1;
        }
        q->heap = nh;
        q->hcap = ncap;
    }
    Py_INCREF(h);
    q->heap[q->hn++] = h;
    sift_up(q, q->hn - 1);
    afd_handle_set_scheduled(h, 1);
    return 0;
}

afd_handle *afd_lq_pop(afd_loop_queues *q) /* returns the owned reference */
{
    afd_handle *top = q->heap[0];
    q->hn--;
    if (q->hn) {
        q->heap[0] = q->heap[q->hn];
        sift_down(q, 0);
    }
    afd_handle_set_scheduled(top, 0);
    return top;
}

void afd_lq_prune(afd_loop_queues *q, size_t *cancelled, size_t min_heap)
{
    if (q->hn > min_heap && *cancelled * 2 > q->hn) {
        size_t j = 0;
        for (size_t i = 0; i < q->hn; i++) {
            afd_handle *h = q->heap[i];
            if (afd_handle_cancelled(h)) {
                afd_handle_set_scheduled(h, 0);
                Py_DECREF(h);
            } else {
                q->heap[j++] = h;
            }
        }
        q->hn = j;
        for (size_t i = q->hn / 2; i-- > 0;)
            sift_down(q, i);
        *cancelled = 0;
    } else {
        while (q->hn && afd_handle_cancelled(q->heap[0])) {
            afd_handle *h = afd_lq_pop(q);
            if (*cancelled)
                (*cancelled)--;
            Py_DECREF(h);
        }
    }
}

void afd_lq_drop(afd_loop_queues *q)
{
    while (q->rcount) {
        PyObject *h = afd_lq_ready_pop(q);
        Py_DECREF(h);
    }
    while (q->hn) {
        afd_handle *h = q->heap[--q->hn];
        afd_handle_set_scheduled(h, 0);
        Py_DECREF(h);
    }
}

int afd_lq_traverse(afd_loop_queues *q, visitproc visit, void *arg)
{
    for (size_t i = 0; i < q->rcount; i++)
        Py_VISIT(q->ready[(q->rhead + i) % q->rcap]);
    for (size_t i = 0; i < q->hn; i++)
        Py_VISIT(q->heap[i]);
    return 0;
}

void afd_lq_free(afd_loop_queues *q)
{
    PyMem_Free(q->ready);
    PyMem_Free(q->heap);
    q->ready = NULL;
    q->heap = NULL;
    q->rcap = q->hcap = 0;
}

/* The two queues as asyncio keeps them: (the ready handles in the order they will run, the timer
 * heap in its array order, which keeps heapq's invariant: the earliest timer first). New lists. */
PyObject *afd_lq_lists(afd_loop_queues *q)
{
    PyObject *ready = PyList_New((Py_ssize_t)q->rcount);
    PyObject *heap = ready ? PyList_New((Py_ssize_t)q->hn) : NULL;
    if (!heap) {
        Py_XDECREF(ready);
        return NULL;
    }
    for (size_t i = 0; i < q->rcount; i++)
        PyList_SET_ITEM(ready, (Py_ssize_t)i, Py_NewRef(q->ready[(q->rhead + i) % q->rcap]));
    for (size_t i = 0; i < q->hn; i++)
        PyList_SET_ITEM(heap, (Py_ssize_t)i, Py_NewRef((PyObject *)q->heap[i]));
    PyObject *r = PyTuple_Pack(2, ready, heap);
    Py_DECREF(ready);
    Py_DECREF(heap);
    return r;
}
