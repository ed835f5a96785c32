/* deadlines.c -- which of the loop's timers are deadlines, and when a step outlasts one.
 *
 * A deadline is a timer the program armed with a duration that guards something: asyncio's own
 * timeouts (Timeout.reschedule's call_at in 3.11+, wait_for's and wait()'s _release_waiter timer,
 * as_completed's _on_timeout / _handle_timeout), a cache's call_later(ttl, invalidate), a lock
 * lease. The one timer that is not a deadline is a sleeping task's wake-up: asyncio.sleep arms
 * call_later(delay, futures._set_result_unless_cancelled, future, result) in every Python from
 * 3.10 to 3.13, and a timer whose callback is a future's bound set_result is the same wake-up
 * written by hand. A test that sleeps and then asserts that a background task has finished is a
 * real order race, so sleeps must stay ordinary timers that pct's delay may outlast.
 *
 * Under a schedule flagged AFD_SCHED_BELOW_DEADLINES (schedule.h) a step's cost may not carry the
 * clock past a pending deadline, and neither a step's cost nor an idle wake-up's lateness past any
 * pending timer more than AFD_WAKE_BATCH_NS ahead (a sleep's wake-up: a stall that long overtakes a
 * time the program set, as when two sleeps of different lengths are raced against each other, while
 * a step or a late wake-up of a millisecond is ordinary). Distances count the delay the schedule
 * added since the timer was armed (afd_injected_ns): a stall spread over several steps is one stall.
 * Under any schedule, a step or a wake-up that does is recorded (AFD_EV_DEADLINE_LATE), which is
 * what the engine's timing_sensitive verdict starts from.
 *
 * Main invariant: classification depends only on the callback object, and numbering only on the
 * order in which the run arms its deadlines, so both are the same in every replay of a token.
 * Workload: one identity comparison per timer armed; a frame walk for each deadline (few per
 * test); one pass over the timer heap per step of a schedule that can delay (the heap holds a
 * handful of timers in tests). */
#include "runtime.h"

#include <math.h>

/* The deadlines armed in this process: their duration and site, by number - 1. Numbering is per
 * process, and a run is one process forked from the same zygote, so it is stable across replays. */
typedef struct deadline_info {
    uint64_t duration_ns;
    uint32_t site; /* string id in the run's recording, or AFD_NOSTR */
} deadline_info;

#define MAX_DEADLINES                                                                                        \
    (1u << 20) /* past this many, further timers are treated as deadlines without a record */

uint64_t afd_injected_ns;

static deadline_info *deadlines; /* Owned (PyMem_Raw). */
static uint32_t n_deadlines, cap_deadlines;
static PyObject *sleep_wakeup; /* Owned: asyncio.futures._set_result_unless_cancelled, or NULL. */

/* The one rounding of loop time to nanoseconds, for the loop's idle jumps and for the horizons
 * here alike (up, then until the loop's own readiness test holds): pct's horizon over every timer
 * is to the nanosecond the jump the loop would make, so a version-1 token replays as it did. */
uint64_t afd_rt_ceil_ns(double seconds)
{
    if (!(seconds > 0))
        return 0;
    double ns = ceil(seconds * 1e9);
    if (!(ns < 1.8e19))
        return UINT64_MAX;
    uint64_t c = (uint64_t)ns;
    while (!(seconds < (double)c / 1e9 + 1e-9))
        c++;
    return c;
}

/* Whether callback wakes a sleeping task: asyncio.sleep's own timer callback, or a future's bound
 * set_result. Any error while asking is cleared and answers "no": a timer of unknown kind is
 * treated as a deadline, which only makes the search more careful. */
static int is_sleep_wakeup(PyObject *callback)
{
    if (!sleep_wakeup) {
        PyObject *futures = PyImport_ImportModule("asyncio.futures");
        sleep_wakeup = futures ? PyObject_GetAttrString(futures, "_set_result_unless_cancelled") : NULL;
        Py_XDECREF(futures);
        PyErr_Clear();
    }
    if (sleep_wakeup && callback == sleep_wakeup)
        return 1;
    if (!PyMethod_Check(callback))
        return 0;
    PyObject *fn = PyMethod_GET_FUNCTION(callback); /* Borrowed. */
    PyObject *name = PyObject_GetAttrString(fn, "__name__");
    int wake = name && PyUnicode_Check(name) && PyUnicode_CompareWithASCIIString(name, "set_result") == 0;
    Py_XDECREF(name);
    PyErr_Clear();
    return wake;
}

/* The sleeps whose firing this run has recorded, by site and by the task that armed it: one FIRED
 * event per pair is enough for the zero schedule's list, and keeps a poll of many sleeps from
 * filling the trace. Another task's sleep at the same line is another time the program set:
 * crash_after(0.1) and crash_after(10) sleep at one line in two tasks, and the zero run firing the
 * first says nothing of the second. */
#define MAX_SLEEP_SITES 256
static struct {
    uint32_t site, task;
} fired_sleeps[MAX_SLEEP_SITES];
static uint32_t n_fired_sleep_sites;

static int first_firing(uint32_t site, uint32_t task)
{
    for (uint32_t i = 0; i < n_fired_sleep_sites; i++)
        if (fired_sleeps[i].site == site && fired_sleeps[i].task == task)
            return 0;
    if (n_fired_sleep_sites == MAX_SLEEP_SITES)
        return 0;
    fired_sleeps[n_fired_sleep_sites].site = site;
    fired_sleeps[n_fired_sleep_sites++].task = task;
    return 1;
}

void afd_deadline_reset(void)
{
    n_deadlines = 0;
    n_fired_sleep_sites = 0;
}

uint32_t afd_deadline_site(uint32_t number)
{
    return number && number <= n_deadlines ? deadlines[number - 1].site : AFD_NOSTR;
}

/* A sleep's wake-up more than a batch ahead is a time the program set as well: its site, so that
 * its firing can be told apart from the zero schedule's (afd_deadline_fired). */
static void note_sleep(afd_rt_state *st, afd_handle_ext *x, double now)
{
    uint64_t duration = afd_rt_ceil_ns(x->when - now);
    if (duration <= AFD_WAKE_BATCH_NS || !afd_rec_active())
        return;
    x->sleep_site = afd_rec_caller_site(st);
    x->sleep_ns = duration;
    x->sleep_task = afd_rec_current;
    PyErr_Clear();
}

void afd_deadline_note(afd_rt_state *st, afd_handle *h, double now)
{
    afd_handle_ext *x = afd_handle_ext_of(h);
    PyObject *callback = afd_handle_callback(h); /* borrowed; None once cancelled */
    x->deadline = 0;
    x->timeout = 0;
    x->sleep_site = AFD_NOSTR;
    x->sleep_task = 0;
    if (!x->is_timer || !callback || callback == Py_None)
        return;
    if (is_sleep_wakeup(callback)) {
        note_sleep(st, x, now);
        return;
    }
    x->timeout = (uint8_t)afd_cancel_is_timeout(callback);
    if (n_deadlines >= MAX_DEADLINES) {
        x->deadline = UINT32_MAX;
        return;
    }
    if (n_deadlines == cap_deadlines) {
        uint32_t ncap = cap_deadlines ? cap_deadlines * 2 : 32;
        deadline_info *nd = PyMem_RawRealloc(deadlines, ncap * sizeof *nd);
        if (!nd) {
            x->deadline = UINT32_MAX; /* still a deadline; only its record is lost */
            return;
        }
        deadlines = nd;
        cap_deadlines = ncap;
    }
    uint64_t duration = afd_rt_ceil_ns(x->when - now);
    uint32_t site = afd_rec_active() ? afd_rec_caller_site(st) : AFD_NOSTR;
    PyErr_Clear();
    deadlines[n_deadlines] = (deadline_info){.duration_ns = duration, .site = site};
    x->deadline = ++n_deadlines;
    afd_rec_event(AFD_EV_DEADLINE, 0, afd_rec_current, x->deadline, site, afd_rec_now, duration);
}

/* How far ahead of at_ns a timer due at when_ns would be had the schedule added no delay since it
 * was armed: the stall it takes to overtake it. */
static uint64_t stall_to(const afd_handle_ext *x, uint64_t when_ns, uint64_t at_ns)
{
    uint64_t ahead = when_ns > at_ns ? when_ns - at_ns : 0;
    uint64_t added = afd_injected_ns - x->injected;
    return ahead > UINT64_MAX - added ? UINT64_MAX : ahead + added;
}

void afd_deadline_horizon(afd_handle *const *heap, size_t n, uint64_t now_ns, afd_horizon *out,
                          uint32_t *earliest)
{
    uint64_t latest = 0, plain = 0, first = UINT64_MAX, first_plain = UINT64_MAX, stall = 0, first_stall = 0;
    uint32_t which = 0;
    for (size_t i = 0; i < n; i++) {
        afd_handle *t = heap[i];
        if (afd_handle_cancelled(t))
            continue;
        const afd_handle_ext *x = afd_handle_ext_of(t);
        uint64_t when = afd_rt_ceil_ns(x->when);
        if (when > latest)
            latest = when;
        if (!x->deadline) {
            if (when > plain)
                plain = when;
            if (when > now_ns && when < first_plain && stall_to(x, when, now_ns) > AFD_WAKE_BATCH_NS) {
                first_plain = when;
                stall = stall_to(x, when, now_ns);
            }
        } else if (when < first) {
            first = when;
            first_stall = stall_to(x, when, now_ns);
            which = x->deadline;
        }
    }
    out->latest_ns = latest > now_ns ? latest - now_ns : 0;
    out->plain_ns = plain > now_ns ? plain - now_ns : 0;
    out->deadline_ns = first == UINT64_MAX ? AFD_NO_DEADLINE : first > now_ns ? first - now_ns : 0;
    out->threshold_ns = out->deadline_ns;
    out->stall_ns = out->deadline_ns == AFD_NO_DEADLINE ? 0 : first_stall;
    if (first_plain != UINT64_MAX && first_plain - now_ns < out->threshold_ns) {
        out->threshold_ns = first_plain - now_ns;
        out->stall_ns = stall;
    }
    *earliest = which;
}

/* The first pending timer a wake-up at wake_ns that is late by `late` overtakes, or NULL: a timer,
 * deadline or not, due more than AFD_WAKE_BATCH_NS after it (counting the delay the schedule added
 * since it was armed). A wake-up that late slept through a time the program set; one within the
 * batch did what a real loop does as a matter of course: epoll rounds its timeout up to the
 * millisecond, so a 0.7 ms sleep and a 1 ms timeout armed together fire in one iteration on
 * stock asyncio (the timeout races the hand-off it guards, as in bpo-27585). */
static afd_handle *overtaken(afd_handle *const *heap, size_t n, uint64_t wake_ns, uint64_t late,
                             int only_deadlines, int real)
{
    afd_handle *first = NULL;
    uint64_t first_when = UINT64_MAX;
    for (size_t i = 0; i < n; i++) {
        afd_handle *t = heap[i];
        if (afd_handle_cancelled(t))
            continue;
        const afd_handle_ext *x = afd_handle_ext_of(t);
        uint64_t when = afd_rt_ceil_ns(x->when);
        if (when <= wake_ns || when - wake_ns > late || when >= first_when ||
            (only_deadlines && !x->deadline))
            continue;
        if (stall_to(x, when, wake_ns) <= AFD_WAKE_BATCH_NS)
            continue;
        /* a real wait's length is the world's, not the schedule's: only a stall the schedule added
         * since the timer was armed, at least as long as what the wait had left to it, counts */
        uint64_t added = afd_injected_ns - x->injected;
        if (real && (added <= AFD_WAKE_BATCH_NS || added < when - wake_ns))
            continue;
        first = t;
        first_when = when;
    }
    return first;
}

uint64_t afd_deadline_cap_lateness(afd_handle *const *heap, size_t n, uint64_t wake_ns, uint64_t late)
{
    if (!(afd_rt_config.schedule.flags & AFD_SCHED_BELOW_DEADLINES) || !late)
        return late;
    /* A timer due at the wake-up itself fires then whatever the lateness; only one still ahead
     * could be overtaken by waking late. */
    afd_handle *t = overtaken(heap, n, wake_ns, late, 0, 0);
    if (!t)
        return late;
    uint64_t when = afd_rt_ceil_ns(afd_handle_ext_of(t)->when);
    uint64_t cap = afd_schedule_cap_below(&afd_rt_config.schedule, when - wake_ns,
                                          stall_to(afd_handle_ext_of(t), when, wake_ns));
    return late < cap ? late : cap;
}

void afd_deadline_wake_late(afd_handle *const *heap, size_t n, uint64_t wake_ns, uint64_t late, int real)
{
    afd_handle *t = late ? overtaken(heap, n, wake_ns, late, 1, real) : NULL; /* a deadline is named first */
    if (!t && late)
        t = overtaken(heap, n, wake_ns, late, 0, real);
    if (!t)
        return;
    const afd_handle_ext *x = afd_handle_ext_of(t);
    uint32_t number = x->deadline != UINT32_MAX ? x->deadline : 0;
    uint32_t site = AFD_NOSTR;
    uint64_t duration =
        stall_to(x, afd_rt_ceil_ns(x->when), wake_ns); /* a sleep's: the stall to overtake it */
    if (number && number <= n_deadlines) {
        site = deadlines[number - 1].site;
        duration = deadlines[number - 1].duration_ns;
    }
    afd_rec_event(AFD_EV_DEADLINE_LATE, real ? AFD_LATE_REAL_WAIT : 0, 0, number, site, wake_ns, duration);
}

/* Whether a timer firing at now_ns was brought due: the schedule's stalls since it was armed are
 * more than its lateness, so without them the clock would not have reached it yet. */
static int brought_due(const afd_handle_ext *x, uint64_t now_ns)
{
    uint64_t stall = afd_injected_ns - x->injected, when = afd_rt_ceil_ns(x->when);
    return stall > (now_ns > when ? now_ns - when : 0);
}

void afd_deadline_fired(afd_handle *h, uint64_t now_ns)
{
    const afd_handle_ext *x = afd_handle_ext_of(h);
    uint32_t number = x->deadline;
    if (!number && x->is_timer && x->sleep_site != AFD_NOSTR && !afd_handle_cancelled(h)) {
        /* a sleep's wake-up: recorded as a deadline's firing is (number 0), the first time its site
         * fires, or whenever the stalls brought it due (then it may be a threshold: timing.c) */
        int brought = brought_due(x, now_ns);
        if (brought || first_firing(x->sleep_site, x->sleep_task))
            afd_rec_event(AFD_EV_DEADLINE_LATE, AFD_LATE_FIRED | (brought ? AFD_LATE_BROUGHT_DUE : 0),
                          x->sleep_task, 0, x->sleep_site, now_ns, x->sleep_ns);
        return;
    }
    if (!number || number > n_deadlines || afd_handle_cancelled(h))
        return;
    afd_slots_deadline_fired(number);
    uint32_t flags = AFD_LATE_FIRED | (brought_due(x, now_ns) ? AFD_LATE_BROUGHT_DUE : 0);
    afd_rec_event(AFD_EV_DEADLINE_LATE, flags, 0, number, deadlines[number - 1].site, now_ns,
                  deadlines[number - 1].duration_ns);
}

void afd_deadline_step_end(uint32_t task, uint64_t vstart, uint64_t cost, const afd_horizon *h,
                           uint32_t earliest)
{
    /* A deadline due exactly at the step's end fires in the next iteration either way; only one the
     * step's cost carried the clock strictly past was outlasted. */
    /* An outlasted deadline is named first: it is the time the program guards with. Else a sleep's
     * wake-up more than a batch away, reached: to within AFD_REACH_NS, since the floors of the
     * steps that follow carry the clock the rest of the way before the loop looks again. */
    if (h->deadline_ns == AFD_NO_DEADLINE || cost <= h->deadline_ns || !earliest) {
        if (h->threshold_ns != AFD_NO_DEADLINE && h->threshold_ns < h->deadline_ns &&
            cost > (h->threshold_ns > AFD_REACH_NS ? h->threshold_ns - AFD_REACH_NS : 0))
            afd_rec_event(AFD_EV_DEADLINE_LATE, 0, task, 0, AFD_NOSTR, vstart, h->stall_ns);
        return;
    }
    uint32_t site = AFD_NOSTR;
    uint64_t duration = 0;
    if (earliest != UINT32_MAX && earliest <= n_deadlines) {
        site = deadlines[earliest - 1].site;
        duration = deadlines[earliest - 1].duration_ns;
    }
    afd_rec_event(AFD_EV_DEADLINE_LATE, 0, task, earliest == UINT32_MAX ? 0 : earliest, site, vstart,
                  duration);
}
