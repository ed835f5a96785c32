/* slots.c -- the slot measurement: for a window of marked steps, how far each step's cost could
 * grow before a time comparison the controlled loop made afterwards would flip.
 *
 * The model. Every quantity of virtual time carries a 64-bit mask of the marked steps whose cost
 * moves it one for one. A loop's clock gains bit b when marked step b ends (after its cost is
 * added); a timer takes the clock's mask when it is created (a timer created inside a step takes
 * the clock at the step's start: the step's own cost does not move it); an idle jump to timer T
 * gives the clock T's mask. For every comparison the loop makes whose two sides carry different
 * masks, the gap in the direction a larger cost moves it is a candidate margin for each bit on the
 * moving side only; a step's margin is its smallest candidate. The comparisons (ceil_T is the
 * first whole nanosecond at which T is expired -- for the idle jump and the deadlines, the
 * nanosecond the loop's own afd_rt_ceil_ns gives, which is what those compare --, c the clock):
 *   - iteration start, a pending uncancelled timer left unexpired (c < ceil_T): bits of
 *     clock & ~T, ceil_T - c;
 *   - a timer popped as expired (c >= ceil_T): bits of T & ~clock, c - ceil_T + 1;
 *   - consecutive popped timers A then B: bits of A & ~B, ceil_B - ceil_A + (A.seq < B.seq);
 *   - an idle jump from c to the heap top T (c < ceil_T): bits of clock & ~T, ceil_T - c + 1;
 *     when the top is already due (c >= ceil_T) the clock stays and T's bits get c - ceil_T + 1
 *     (past that the jump would go to T);
 *   - at the end of a step whose schedule watches deadlines (it records DEADLINE_LATE when the
 *     step carried the clock c past the earliest pending deadline D, c > ceil_D), each pending
 *     deadline E: bits of clock & ~E, ceil_E - c + 1 when c <= ceil_E, bits of E & ~clock,
 *     c - ceil_E when c > ceil_E; and the earliest D against every other E: bits of D & ~E,
 *     ceil_E - ceil_D (the event names the earliest). This one is not in issue 21's contract: a
 *     DEADLINE_LATE is an event of the order digest, so its comparison bounds a slot too.
 * No candidate is below 1 ns: a comparison between two sides that rounding made equal flips at
 * the first nanosecond either side moves.
 *
 * A step whose smallest candidate compares a clock that a wait in real time moved after the step
 * ended (a thread's or a socket's: the clock follows real time while the loop waits on them) gets
 * no SLOT: that margin is the machine's, different in every run, and a sweep built on it would name
 * a different schedule in every session. The systematic search counts it unmeasured.
 *
 * What the measure does not see: the program's own comparisons with loop.time() readings (each
 * reading made while the clock carries a marked step's cost is counted for that step instead),
 * and a schedule's lateness or deadline caps, which depend on times themselves.
 *
 * Workload: nothing unless the run asked for marks (afd_rt_config.mark_n > 0); then one pass over
 * the timer heap per loop iteration, once any mask is live. */
#include "runtime.h"

#include <math.h>
#include <string.h>

typedef struct slot_mark {
    uint8_t ran;
    uint32_t task, ordinal;
    uint64_t cost;         /* the schedule's cost of the step (after the floor, before blocking time) */
    uint64_t margin;       /* the smallest candidate so far, UINT64_MAX: none */
    uint8_t at_deadline;   /* that candidate compares with a timeout's timer */
    uint8_t crossed_fired; /* deadline `crossed` fired later in the run */
    uint32_t crossed;      /* that candidate is the clock reaching this deadline (deadlines.c's number) */
    uint8_t other;         /* some candidate (not only the smallest) is not a crossing (below) */
    uint64_t reads;        /* loop.time() calls while the clock carried the step's bit */
    uint64_t waits_at_end; /* real_waits when the step ended */
    uint8_t real;          /* the margin compares a clock real waiting moved since the step ended */
} slot_mark;

static slot_mark marks[AFD_SLOTS_MAX];
static int recorded;
static uint64_t real_waits; /* the loop's waits in real time so far (afd_slots_real_wait) */

void afd_slots_reset(void)
{
    memset(marks, 0, sizeof marks);
    for (size_t i = 0; i < AFD_SLOTS_MAX; i++)
        marks[i].margin = UINT64_MAX;
    recorded = 0;
    real_waits = 0;
}

void afd_slots_real_wait(void)
{
    real_waits++;
}

int afd_slots_enabled(void)
{
    return afd_rt_config.configured && afd_rt_config.mode == AFD_MODE_CONTROLLED && afd_rt_config.mark_n > 0;
}

static uint64_t bit_of(uint64_t index)
{
    uint64_t lo = afd_rt_config.mark_lo, n = afd_rt_config.mark_n;
    if (n > AFD_SLOTS_MAX)
        n = AFD_SLOTS_MAX;
    return index >= lo && index - lo < n ? 1ULL << (index - lo) : 0;
}

/* The first whole nanosecond c at which run_once pops a timer due at `when` (its test: when <
 * c / 1e9 + 1e-9), 0 for a time not above 0, UINT64_MAX beyond 64 bits. afd_rt_ceil_ns starts
 * its search at ceil(when * 1e9) and so answers 1 ns late whenever when * 1e9 is not whole: right
 * for where an idle loop jumps to (the loop's own choice, kept), not for when a timer is due. */
static uint64_t due_ns(double when)
{
    if (!(when > 0))
        return 0;
    double ns = ceil(when * 1e9);
    if (!(ns < 1.8e19))
        return UINT64_MAX;
    uint64_t c = (uint64_t)ns;
    c = c > 2 ? c - 2 : 0;
    while (!(when < (double)c / 1e9 + 1e-9))
        c++;
    return c;
}

/* Each bit of mask gets the candidate gap (at least 1 ns); deadline: the comparison involves a
 * timeout's timer (asyncio.timeout, wait_for, wait(timeout=)), which a tie names too. crossed: the
 * comparison is the clock reaching pending deadline number `crossed` (any timer the program armed
 * but a sleeping task's wake-up: a timeout, a TTL, a lease, a scheduled operation) left unexpired at
 * an iteration's start or a step's end; 0 for every other candidate, which marks its bits `other`
 * (AFD_SLOT_CROSSING is recorded for a step with none). A margin that is a crossing is where the
 * systematic search stops (AFD_SLOT_DEADLINE) only if that deadline never fires in the run: a bound
 * the program guards with (a library's own timeout cancelled when the work is done, a TTL), whose
 * crossing the timing verdict owns. One that fires is an operation the program schedules (a timer
 * that applies an update), and moving a step across it is an order the real loop can take. The
 * same rule as the timing check's for a deadline brought due (afd_deadline_fired). */
static void candidate_at(uint64_t mask, uint64_t gap, int deadline, uint32_t crossed)
{
    if (gap < 1)
        gap = 1;
    while (mask) {
        int b = __builtin_ctzll(mask);
        mask &= mask - 1;
        slot_mark *m = &marks[b];
        if (!crossed)
            m->other = 1;
        if (gap < m->margin) {
            m->margin = gap;
            m->real = real_waits != m->waits_at_end;
            m->at_deadline = (uint8_t)(deadline != 0);
            m->crossed = crossed;
            m->crossed_fired = 0;
        } else if (gap == m->margin) {
            m->at_deadline |= (uint8_t)(deadline != 0);
            if (crossed && (!m->crossed || m->crossed_fired)) {
                m->crossed = crossed;
                m->crossed_fired = 0;
            }
        }
    }
}
#define candidate(mask, gap) candidate_at((mask), (gap), is_deadline, 0)
#define crossing(mask, gap, armed) candidate_at((mask), (gap), is_deadline, (armed))

void afd_slots_deadline_fired(uint32_t number)
{
    if (!number || !afd_slots_enabled())
        return;
    for (size_t b = 0; b < AFD_SLOTS_MAX; b++)
        if (marks[b].crossed == number)
            marks[b].crossed_fired = 1;
}

uint64_t afd_slots_step_end(uint64_t index, uint32_t task, uint32_t ordinal, uint64_t cost)
{
    uint64_t bit = bit_of(index);
    if (bit) {
        slot_mark *m = &marks[__builtin_ctzll(bit)];
        m->ran = 1;
        m->task = task;
        m->ordinal = ordinal;
        m->cost = cost;
        m->waits_at_end = real_waits;
    }
    return bit;
}

void afd_slots_batch_begin(afd_slot_batch *b, uint64_t clock_ns, uint64_t clock_mask)
{
    *b = (afd_slot_batch){.clock_ns = clock_ns, .clock_mask = clock_mask};
}

void afd_slots_popped(afd_slot_batch *b, afd_handle *h)
{
    if (afd_handle_cancelled(h))
        return; /* a cancelled timer never runs, due or not */
    const afd_handle_ext *x = afd_handle_ext_of(h);
    int is_deadline = x->timeout;
    uint64_t due = due_ns(x->when);
    uint64_t later = x->mask & ~b->clock_mask;
    if (later && b->clock_ns >= due)
        candidate(later, b->clock_ns - due + 1);
    if (b->have_prev) {
        uint64_t ahead = b->prev_mask & ~x->mask;
        is_deadline |= b->prev_deadline;
        if (ahead && due >= b->prev_ceil)
            candidate(ahead, due - b->prev_ceil + (b->prev_seq < x->seq ? 1 : 0));
    }
    b->have_prev = 1;
    b->prev_ceil = due;
    b->prev_seq = x->seq;
    b->prev_mask = x->mask;
    b->prev_deadline = x->timeout;
}

void afd_slots_batch_end(const afd_slot_batch *b, afd_handle *const *heap, size_t n)
{
    if (!b->clock_mask)
        return; /* only the clock's bits move it towards a timer still pending */
    for (size_t i = 0; i < n; i++) {
        const afd_handle_ext *x = afd_handle_ext_of(heap[i]);
        uint64_t bits = b->clock_mask & ~x->mask;
        int is_deadline = x->timeout;
        if (!bits || afd_handle_cancelled(heap[i]))
            continue;
        uint64_t due = due_ns(x->when);
        if (b->clock_ns < due)
            crossing(bits, due - b->clock_ns, x->deadline);
    }
}

void afd_slots_step_deadlines(uint64_t clock_ns, uint64_t clock_mask, afd_handle *const *heap, size_t n)
{
    int is_deadline = 0;
    const afd_handle_ext *first = NULL;
    uint64_t first_ceil = UINT64_MAX;
    for (size_t i = 0; i < n; i++) {
        const afd_handle_ext *x = afd_handle_ext_of(heap[i]);
        if (!x->deadline || afd_handle_cancelled(heap[i]))
            continue;
        uint64_t due = afd_rt_ceil_ns(x->when);
        is_deadline = x->timeout;
        if (clock_ns <= due)
            crossing(clock_mask & ~x->mask, due - clock_ns + 1, x->deadline);
        else
            candidate(x->mask & ~clock_mask, clock_ns - due);
        if (due < first_ceil) {
            first_ceil = due;
            first = x;
        }
    }
    if (!first)
        return;
    /* Which deadline is the earliest is named by the event: the earliest moving past another. */
    for (size_t i = 0; i < n; i++) {
        const afd_handle_ext *x = afd_handle_ext_of(heap[i]);
        if (x == first || !x->deadline || afd_handle_cancelled(heap[i]))
            continue;
        is_deadline = first->timeout || x->timeout;
        candidate(first->mask & ~x->mask, afd_rt_ceil_ns(x->when) - first_ceil);
    }
}

uint64_t afd_slots_idle(uint64_t clock_ns, uint64_t clock_mask, afd_handle *top, uint64_t due)
{
    const afd_handle_ext *x = afd_handle_ext_of(top);
    int is_deadline = x->timeout;
    if (clock_ns < due) { /* the idle jump reaches it: a crossing when it is a deadline */
        crossing(clock_mask & ~x->mask, due - clock_ns + 1, x->deadline);
        return x->mask;
    }
    candidate(x->mask & ~clock_mask, clock_ns - due + 1);
    return clock_mask;
}

void afd_slots_time_read(uint64_t clock_mask)
{
    while (clock_mask) {
        int b = __builtin_ctzll(clock_mask);
        clock_mask &= clock_mask - 1;
        marks[b].reads++;
    }
}

void afd_slots_record(void)
{
    if (recorded || !afd_rt_config.mark_n)
        return;
    recorded = 1;
    uint32_t n = afd_rt_config.mark_n < AFD_SLOTS_MAX ? afd_rt_config.mark_n : AFD_SLOTS_MAX;
    for (uint32_t b = 0; b < n; b++) {
        const slot_mark *m = &marks[b];
        if (!m->ran || m->real)
            continue; /* unmeasured: how much later the flip comes is decided by real time */
        uint64_t index = afd_rt_config.mark_lo + b;
        uint32_t b1 = index >= UINT32_MAX ? UINT32_MAX : (uint32_t)(index + 1);
        uint8_t flags = m->at_deadline || (m->crossed && !m->crossed_fired) ? AFD_SLOT_DEADLINE : 0;
        if (m->margin != UINT64_MAX && !m->other)
            flags |= AFD_SLOT_CROSSING;
        afd_rec_event_wall(AFD_EV_SLOT, flags, m->task, m->ordinal, b1, m->cost, m->margin, m->reads);
    }
}
