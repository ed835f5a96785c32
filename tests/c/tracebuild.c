/* tracebuild.c -- the trace builders the C tests share (see tracebuild.h). */
#include "tracebuild.h"
#include "afd.h"
#include "harness.h"

afd_event tb_event_timed(uint8_t kind, uint8_t flags, uint32_t task, uint32_t a, uint32_t b, uint64_t vtime,
                         uint64_t cost, uint64_t wall)
{
    afd_event ev = {.kind = kind,
                    .flags = flags,
                    .task = task,
                    .a = a,
                    .b = b,
                    .vtime = vtime,
                    .cost = cost,
                    .wall = wall};
    return ev;
}

afd_event tb_event(uint8_t kind, uint8_t flags, uint32_t task, uint32_t a, uint32_t b)
{
    return tb_event_timed(kind, flags, task, a, b, 0, 0, 0);
}

uint32_t tb_str(afd_trace *t, const char *s)
{
    uint32_t id = AFD_NOSTR;
    CHECK_EQ_INT(afd_trace_add_string(t, s, strlen(s), &id), 0);
    return id;
}

void tb_evx(afd_trace *t, uint8_t kind, uint8_t flags, uint32_t task, uint32_t a, uint32_t b, uint64_t vtime,
            uint64_t cost, uint64_t wall)
{
    afd_event ev = tb_event_timed(kind, flags, task, a, b, vtime, cost, wall);
    CHECK_EQ_INT(afd_trace_add_events(t, &ev, 1), 0);
}

void tb_ev(afd_trace *t, uint8_t kind, uint8_t flags, uint32_t task, uint32_t a, uint32_t b)
{
    tb_evx(t, kind, flags, task, a, b, 0, 0, 0);
}

void tb_task(afd_trace *t, uint32_t id, uint32_t parent, uint32_t label)
{
    tb_ev(t, AFD_EV_TASK, 0, id, parent, label);
}

void tb_wake(afd_trace *t, uint32_t id, uint32_t origin, uint32_t index1)
{
    tb_ev(t, AFD_EV_WAKE, 0, id, origin, index1);
}

void tb_step(afd_trace *t, uint32_t id, uint32_t ordinal, uint32_t site)
{
    tb_ev(t, AFD_EV_STEP, 0, id, ordinal, site);
}

void tb_op(afd_trace *t, uint32_t id, uint32_t name, uint32_t resource, int write)
{
    tb_ev(t, AFD_EV_OP_BEGIN, (uint8_t)write, id, name, resource);
    tb_ev(t, AFD_EV_OP_END, (uint8_t)write, id, name, resource);
}

void tb_sync(afd_trace *t, uint32_t id, int kind, uint32_t object, uint32_t label)
{
    tb_ev(t, AFD_EV_SYNC, (uint8_t)kind, id, object, label);
}

void tb_view(afd_view *v, const afd_trace *t)
{
    CHECK_EQ_INT(afd_view_build(v, t), 0);
}

void tb_inversion_run(afd_trace *t, int failing, int with_writer)
{
    CHECK_EQ_INT(afd_trace_init(t), 0);
    uint32_t llog = tb_str(t, "logger#0"), lr = tb_str(t, "reader#0"), lw = tb_str(t, "writer#0");
    uint32_t x = tb_str(t, "X"), log = tb_str(t, "LOG");
    tb_task(t, 1, 0, llog);
    tb_task(t, 2, 0, lr);
    tb_task(t, 3, 0, lw);
    tb_wake(t, 1, 0, 1);
    tb_op(t, 1, AFD_NOSTR, log, 1);
    tb_step(t, 1, 0, AFD_NOSTR);
    if (!failing) {
        tb_wake(t, 3, 0, 2);
        tb_op(t, 3, AFD_NOSTR, x, 1);
        tb_step(t, 3, 0, AFD_NOSTR);
    }
    tb_wake(t, 2, 0, 3);
    tb_op(t, 2, AFD_NOSTR, x, 0);
    tb_op(t, 2, AFD_NOSTR, log, 1);
    tb_step(t, 2, 0, AFD_NOSTR);
    if (failing && with_writer) {
        tb_wake(t, 3, 0, 4);
        tb_op(t, 3, AFD_NOSTR, x, 1);
        tb_step(t, 3, 0, AFD_NOSTR);
    }
}

void tb_lock_run(afd_trace *t, int inverted, int nested)
{
    CHECK_EQ_INT(afd_trace_init(t), 0);
    uint32_t l1 = tb_str(t, "one#0"), l2 = tb_str(t, "two#0");
    uint32_t lab1 = tb_str(t, "Lock@l.py:1"), lab2 = tb_str(t, "Lock@l.py:2");
    tb_task(t, 1, 0, l1);
    tb_task(t, 2, 0, l2);
    tb_wake(t, 1, 0, 1);
    tb_sync(t, 1, AFD_SYNC_CREATE, 1, lab1);
    tb_sync(t, 1, AFD_SYNC_CREATE, 2, lab2);
    tb_sync(t, 1, AFD_SYNC_LOCK_ACQUIRE, 1, lab1);
    if (!nested)
        tb_sync(t, 1, AFD_SYNC_LOCK_RELEASE, 1, lab1);
    tb_sync(t, 1, AFD_SYNC_LOCK_ACQUIRE, 2, lab2);
    tb_sync(t, 1, AFD_SYNC_LOCK_RELEASE, 2, lab2);
    if (nested)
        tb_sync(t, 1, AFD_SYNC_LOCK_RELEASE, 1, lab1);
    tb_step(t, 1, 0, AFD_NOSTR);
    tb_wake(t, 2, 0, 2);
    uint32_t first = inverted ? 2 : 1, second = inverted ? 1 : 2;
    uint32_t lfirst = inverted ? lab2 : lab1, lsecond = inverted ? lab1 : lab2;
    tb_sync(t, 2, AFD_SYNC_LOCK_ACQUIRE, first, lfirst);
    tb_step(t, 2, 0, AFD_NOSTR);
    tb_wake(t, 2, 0, 3);
    tb_sync(t, 2, AFD_SYNC_LOCK_ACQUIRE, second, lsecond); /* still holding the first */
    tb_sync(t, 2, AFD_SYNC_LOCK_RELEASE, second, lsecond);
    tb_sync(t, 2, AFD_SYNC_LOCK_RELEASE, first, lfirst);
    tb_step(t, 2, 1, AFD_NOSTR);
}
