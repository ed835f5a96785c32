/* loop_impl.h -- the controlled loop's state, shared by loop.c (scheduling, the iteration, the
 * type) and loop_wait.c (what an iteration does when nothing is ready: wait in real time, jump the
 * virtual clock, or tell a hang). Private to those two files. */
#ifndef AFD_LOOP_IMPL_H
#define AFD_LOOP_IMPL_H

#include "runtime.h"

#include <time.h>

#define MAX_SELECT_TIMEOUT 86400.0
/* Slices of a real wait that only a working thread makes (a delay realized in real time, an idle
 * loop's wait): the first short (a thread about to finish is seen finished soon), then doubling up
 * to the last, so a long wait costs few checks. */
#define REAL_SLICE_MIN_NS 200000ULL
#define REAL_SLICE_MAX_NS 50000000ULL

typedef struct afd_loop {
    PyObject_HEAD afd_loop_queues q; /* the ready queue and the timer heap (loop_queues.c) */
    size_t timer_cancelled;
    uint64_t seq;
    uint64_t clock_ns;   /* controlled mode: the virtual clock */
    uint64_t clock_mask; /* the marked steps whose costs moved the clock (slots.c) */
    uint64_t idle_wakes;
    uint64_t thread_slice_ns; /* the next real wait's bound while only threads keep it real, 0: none yet */
    uint64_t mono_start_ns;
    PyObject *selector;  /* Owned. */
    PyObject *fd_to_key; /* Owned dict of the selector's registrations, or NULL. */
    unsigned long thread_id;
    uint32_t loop_no;
    uint8_t controlled;
    uint8_t slots;      /* this loop measures the run's marked steps (controlled, marks asked) */
    uint8_t slots_live; /* some mask is not 0: the per-iteration comparisons can find a candidate */
    uint8_t stopping;   /* BaseEventLoop._stopping, kept in C: read on every iteration */
    uint8_t closed;
    uint8_t ready_init;
    uint8_t announced; /* its first iteration has begun (the LOOP event is recorded then) */
    uint8_t debug;     /* asyncio's debug mode (set_debug): loop_debug.c's checks and warnings */
    uint8_t own_time;  /* its class tells its own time(): a natural loop schedules by it (loop_sched_now) */
    uint8_t waiting;   /* controlled: its thread is in a real wait's select (loop_wait.c) */
    uint8_t unwoken;   /* another thread called call_soon during the current real wait */
} afd_loop;

static inline afd_rt_state *loop_state(afd_loop *self)
{
    return afd_rt_state_of_type(Py_TYPE(self));
}

static inline uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* The loop's own clock in seconds: where its timers are due. A controlled loop's is the virtual
 * clock, inside a step with what the step has spent so far blocking (time.sleep, clock reads), as
 * on stock asyncio; what the program sees of it carries the run's offset (loop_time). */
static inline double loop_now(afd_loop *self)
{
    if (self->controlled)
        return (double)(self->clock_ns +
                        (afd_rec_current && afd_loop_on_step_thread() ? afd_rec_extra_cost : 0)) /
               1e9;
    return (double)mono_ns() / 1e9;
}

/* The time a loop that runs as asyncio's does schedules by: BaseEventLoop calls self.time() in
 * call_later and in each iteration, so a class that tells its own (looptime's fake clock, which also
 * replaces its selector's select to fast-forward) is read there, as on stock asyncio. 0, or -1 with
 * the exception its time() raised. */
static inline int loop_sched_now(afd_loop *self, double *out)
{
    if (self->controlled || !self->own_time) {
        *out = loop_now(self);
        return 0;
    }
    PyObject *r = PyObject_CallMethod((PyObject *)self, "time", NULL);
    double t = r ? PyFloat_AsDouble(r) : -1.0;
    Py_XDECREF(r);
    if (!r || (t == -1.0 && PyErr_Occurred()))
        return -1;
    *out = t;
    return 0;
}

/* Under AFD_SCHED_SCALED (the timing check of a failure that may be a clock threshold): a delay
 * beyond its floor times the schedule's scale, the same schedule with less time in it. */
static inline uint64_t scaled(uint64_t delay, uint64_t floor)
{
    const afd_schedule *s = &afd_rt_config.schedule;
    if (!(s->flags & AFD_SCHED_SCALED) || delay <= floor)
        return delay;
    return floor + (uint64_t)((double)(delay - floor) * ((double)s->scale_ppb / AFD_SCALE_ONE));
}

/* The wait at the start of an iteration (loop_wait.c): a controlled loop's (poll without waiting
 * when something is ready, else jump its clock to the next timer, or wait in real time while a
 * descriptor or a thread can wake it) and a natural loop's (as the stock loop's select). */
int afd_loop_controlled_wait(afd_loop *self, int stopping);
int afd_loop_natural_wait(afd_loop *self, int stopping);

#endif
