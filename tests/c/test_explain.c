/* test_explain.c -- views of runs built from hand-made traces, and every analysis on them: lost
 * updates, inverted pairs, races under happens-before, lock-order and wait-for cycles,
 * divergence, summaries, and the bound on accesses. */
#include "afd.h"
#include "explain.h"
#include "harness.h"
#include "trace.h"
#include "tracebuild.h"

/* ---- view building ---- */

TEST(view_steps_origins_blocking)
{
    afd_trace t;
    CHECK_EQ_INT(afd_trace_init(&t), 0);
    uint32_t lmain = tb_str(&t, "main#0"), lchild = tb_str(&t, "child#0");
    uint32_t site1 = tb_str(&t, "x.py:10"), site2 = tb_str(&t, "x.py:20");
    uint32_t sleep1 = tb_str(&t, "x.py:30"), sleep2 = tb_str(&t, "x.py:31");
    tb_ev(&t, AFD_EV_LOOP, 0, 0, 1, 0);
    tb_task(&t, 1, 0, lmain);
    /* Global indices 4, 7, 8, 9, 10 (earlier steps' events were dropped): positions 0..4. */
    tb_wake(&t, 1, 0, 5);
    tb_evx(&t, AFD_EV_STEP, 0, 1, 0, site1, 1000, 20, 300);
    tb_task(&t, 2, 1, lchild);
    tb_ev(&t, AFD_EV_WAKE, 1, 2, 5, 8); /* a timer handle, scheduled by index 4 (position 0) */
    tb_evx(&t, AFD_EV_BLOCK, 0, 2, AFD_BLOCK_SLEEP, sleep1, 0, 5000, 0);
    tb_evx(&t, AFD_EV_BLOCK, 0, 2, AFD_BLOCK_SLEEP, sleep2, 0, 7000, 0);
    tb_evx(&t, AFD_EV_STEP, 0, 2, 0, site2, 2000, 12000, 400);
    tb_wake(&t, 1, 8, 9); /* scheduled by index 7: position 1 */
    tb_step(&t, 1, 1, AFD_NOSTR);
    tb_wake(&t, 2, 0, 10); /* scheduled outside any step */
    tb_step(&t, 2, 1, site1);
    tb_wake(&t, 1, 4, 11); /* index 3 never ran in this trace */
    tb_evx(&t, AFD_EV_BLOCK, 0, 1, AFD_BLOCK_SLEEP, sleep2, 0, 9, 0);
    tb_step(&t, 1, 2, site2);

    afd_view v;
    tb_view(&v, &t);
    CHECK(v.tr == &t);
    CHECK_EQ_INT(v.n_steps, 5);
    CHECK_EQ_INT(v.n_acc, 0);
    const uint32_t tasks[] = {1, 2, 1, 2, 1}, ords[] = {0, 0, 1, 1, 2};
    const uint32_t sites[] = {site1, site2, AFD_NOSTR, site1, site2};
    const uint32_t origins[] = {AFD_NOPOS, 0, 1, AFD_NOPOS, AFD_NOPOS};
    const uint64_t blocked[] = {0, 12000, 0, 0, 9};
    const uint32_t bsites[] = {AFD_NOSTR, sleep1, AFD_NOSTR, AFD_NOSTR, sleep2};
    for (uint32_t i = 0; i < 5; i++) {
        CHECK_EQ_INT(v.steps[i].task, tasks[i]);
        CHECK_EQ_INT(v.steps[i].ordinal, ords[i]);
        CHECK_EQ_U64(v.steps[i].site, sites[i]);
        CHECK_EQ_U64(v.steps[i].origin, origins[i]);
        CHECK_EQ_U64(v.steps[i].blocked_ns, blocked[i]);
        CHECK_EQ_U64(v.steps[i].block_site, bsites[i]);
    }
    CHECK_EQ_U64(v.steps[0].vstart, 1000);
    CHECK_EQ_U64(v.steps[0].cost, 20);
    CHECK_EQ_U64(v.steps[0].wall, 300);
    CHECK_EQ_U64(v.steps[1].vstart, 2000);
    CHECK_EQ_U64(v.steps[1].cost, 12000);
    CHECK_EQ_U64(v.steps[1].wall, 400);
    afd_view_finish(&v);
    CHECK(v.steps == NULL && v.acc == NULL && v.n_steps == 0);
    afd_view_finish(&v); /* a zeroed view is accepted */
    afd_trace_finish(&t);
}

TEST(view_empty_trace)
{
    afd_trace t;
    CHECK_EQ_INT(afd_trace_init(&t), 0);
    afd_view v;
    tb_view(&v, &t);
    CHECK_EQ_INT(v.n_steps, 0);
    CHECK_EQ_INT(v.n_acc, 0);
    CHECK_EQ_INT(v.n_edges, 0);
    afd_xpair pairs[4];
    afd_xatom atoms[4];
    size_t n = 99;
    CHECK_EQ_INT(afd_view_races(&v, pairs, 4, &n), 0);
    CHECK_EQ_INT(n, 0);
    n = 99;
    CHECK_EQ_INT(afd_view_lost_updates(&v, atoms, 4, &n), 0);
    CHECK_EQ_INT(n, 0);
    uint32_t nodes[4], labels[4];
    n = 99;
    CHECK_EQ_INT(afd_view_lock_cycle(&v, nodes, labels, 4, &n), 0);
    CHECK_EQ_INT(n, 0);
    n = 99;
    CHECK_EQ_INT(afd_view_wait_cycle(&v, nodes, labels, 4, &n), 0);
    CHECK_EQ_INT(n, 0);
    CHECK_EQ_U64(afd_view_divergence(&v, &v), AFD_NOPOS);
    afd_view_finish(&v);
    afd_trace_finish(&t);
}

TEST(view_accesses)
{
    afd_trace t;
    CHECK_EQ_INT(afd_trace_init(&t), 0);
    uint32_t la = tb_str(&t, "deposit#0"), lb = tb_str(&t, "waiter#0");
    uint32_t site = tb_str(&t, "bank.py:7"), opname = tb_str(&t, "credit"), bal = tb_str(&t, "BALANCE");
    uint32_t evl = tb_str(&t, "Event@bank.py:3"), ql = tb_str(&t, "Queue@bank.py:4");
    uint32_t ll = tb_str(&t, "Lock@bank.py:5");
    tb_task(&t, 1, 0, la);
    tb_task(&t, 2, 0, lb);
    tb_wake(&t, 1, 0, 1);
    tb_op(&t, 1, AFD_NOSTR, bal, 0); /* 0: read */
    tb_op(&t, 1, opname, bal, 1);    /* 1: credit (write) */
    tb_step(&t, 1, 0, site);
    tb_wake(&t, 2, 1, 2);
    tb_sync(&t, 2, AFD_SYNC_CREATE, 1, evl);      /* not an access */
    tb_sync(&t, 2, AFD_SYNC_LOCK_ACQUIRE, 2, ll); /* not an access */
    tb_sync(&t, 2, AFD_SYNC_EVENT_CHECK, 1, evl); /* 2: check (read) */
    tb_sync(&t, 2, AFD_SYNC_LOCK_RELEASE, 2, ll); /* not an access */
    tb_ev(&t, AFD_EV_ASSERT_BEGIN, 0, 2, 0, bal); /* not an access */
    tb_ev(&t, AFD_EV_ASSERT_END, 1, 2, 0, bal);   /* not an access */
    tb_step(&t, 2, 0, AFD_NOSTR);
    tb_wake(&t, 1, 2, 3);
    tb_ev(&t, AFD_EV_OP_END, 3, 1, AFD_NOSTR, bal); /* 3: write that raised */
    tb_op(&t, 1, AFD_NOSTR, bal, 0);                /* 4: read, occurrence 1 */
    tb_sync(&t, 1, AFD_SYNC_EVENT_SET, 1, evl);     /* 5: set (write) */
    tb_sync(&t, 1, AFD_SYNC_EVENT_CLEAR, 1, evl);   /* 6: clear (write) */
    tb_sync(&t, 1, AFD_SYNC_QUEUE_PUT, 3, ql);      /* 7: put (write) */
    tb_step(&t, 1, 1, site);
    tb_wake(&t, 2, 3, 4);
    tb_sync(&t, 2, AFD_SYNC_EVENT_OBSERVE, 1, evl); /* 8: check (read), occurrence 1 */
    tb_sync(&t, 2, AFD_SYNC_QUEUE_CHECK, 3, ql);    /* 9: check (read) */
    tb_sync(&t, 2, AFD_SYNC_QUEUE_GET, 3, ql);      /* 10: get (write) */
    tb_op(&t, 3, AFD_NOSTR, bal, 1);                /* 11: an unknown task */
    tb_step(&t, 2, 1, AFD_NOSTR);
    /* The run ended inside a step: these belong to no step and are dropped. */
    tb_wake(&t, 1, 4, 5);
    tb_op(&t, 1, AFD_NOSTR, bal, 1);
    tb_sync(&t, 1, AFD_SYNC_EVENT_SET, 1, evl);

    afd_view v;
    tb_view(&v, &t);
    CHECK_EQ_INT(v.n_steps, 4);
    CHECK_EQ_INT(v.n_acc, 12);
    struct {
        uint32_t step, task;
        const char *label, *name, *res;
        int write, sync, occ;
    } want[] = {
        {0, 1, "deposit#0", "read", "BALANCE", 0, 0, 0},
        {0, 1, "deposit#0", "credit", "BALANCE", 1, 0, 0},
        {1, 2, "waiter#0", "check", "Event@bank.py:3", 0, 1, 0},
        {2, 1, "deposit#0", "write", "BALANCE", 1, 0, 0},
        {2, 1, "deposit#0", "read", "BALANCE", 0, 0, 1},
        {2, 1, "deposit#0", "set", "Event@bank.py:3", 1, 1, 0},
        {2, 1, "deposit#0", "clear", "Event@bank.py:3", 1, 1, 0},
        {2, 1, "deposit#0", "put", "Queue@bank.py:4", 1, 1, 0},
        {3, 2, "waiter#0", "check", "Event@bank.py:3", 0, 1, 1},
        {3, 2, "waiter#0", "check", "Queue@bank.py:4", 0, 1, 0},
        {3, 2, "waiter#0", "get", "Queue@bank.py:4", 1, 1, 0},
        {3, 3, "an unlabelled task", "write", "BALANCE", 1, 0, 0}, /* never "?" */
    };
    for (uint32_t i = 0; i < 12; i++) {
        const afd_xaccess *a = &v.acc[i];
        CHECK_EQ_INT(a->step, want[i].step);
        CHECK_EQ_INT(a->task, want[i].task);
        CHECK_EQ_STR(a->label, want[i].label);
        CHECK_EQ_STR(a->name, want[i].name);
        CHECK_EQ_STR(a->resource, want[i].res);
        CHECK_EQ_INT(a->write, want[i].write);
        CHECK_EQ_INT(a->sync, want[i].sync);
        CHECK_EQ_INT(a->occurrence, want[i].occ);
        CHECK_EQ_U64(afd_view_find(&v, a->key), i); /* keys are distinct within the run */
    }
    CHECK(v.acc[0].key != v.acc[4].key); /* same (task, name, resource), another occurrence */
    CHECK_EQ_U64(afd_view_find(&v, 12345), AFD_NOPOS);
    /* Edges: set (step 2) -> observe (step 3), put (step 2) -> get (step 3); the lock was released
     * and never acquired again. */
    CHECK_EQ_INT(v.n_edges, 2);
    CHECK_EQ_INT(v.edge_from[0], 2);
    CHECK_EQ_INT(v.edge_to[0], 3);
    CHECK_EQ_INT(v.edge_from[1], 2);
    CHECK_EQ_INT(v.edge_to[1], 3);
    CHECK_EQ_U64(afd_view_object_label(&v, 1), evl);
    CHECK_EQ_U64(afd_view_object_label(&v, 2), ll);
    CHECK_EQ_U64(afd_view_object_label(&v, 3), ql);
    CHECK_EQ_U64(afd_view_object_label(&v, 4), AFD_NOSTR);
    afd_view_finish(&v);
    afd_trace_finish(&t);
}

/* One run of two tasks, with the given task ids; strings added in a given order so that the
 * string ids differ between the two traces too. */
static void two_task_run(afd_trace *t, uint32_t ida, uint32_t idb, int reverse_strings)
{
    CHECK_EQ_INT(afd_trace_init(t), 0);
    uint32_t la, lb, res, name;
    if (reverse_strings) {
        name = tb_str(t, "incr");
        res = tb_str(t, "COUNTER");
        lb = tb_str(t, "b#0");
        la = tb_str(t, "a#0");
    } else {
        la = tb_str(t, "a#0");
        lb = tb_str(t, "b#0");
        res = tb_str(t, "COUNTER");
        name = tb_str(t, "incr");
    }
    tb_task(t, ida, 0, la);
    tb_task(t, idb, 0, lb);
    tb_wake(t, ida, 0, 1);
    tb_op(t, ida, name, res, 1);
    tb_op(t, ida, name, res, 1);
    tb_step(t, ida, 0, AFD_NOSTR);
    tb_wake(t, idb, 0, 2);
    tb_op(t, idb, name, res, 1);
    tb_op(t, idb, AFD_NOSTR, res, 0);
    tb_step(t, idb, 0, AFD_NOSTR);
}

TEST(keys_stable_across_runs)
{
    afd_trace t1, t2;
    two_task_run(&t1, 1, 2, 0);
    two_task_run(&t2, 9, 4, 1);
    afd_view v1, v2;
    tb_view(&v1, &t1);
    tb_view(&v2, &t2);
    CHECK_EQ_INT(v1.n_acc, 4);
    CHECK_EQ_INT(v2.n_acc, 4);
    for (uint32_t i = 0; i < 4; i++) {
        CHECK_EQ_U64(v1.acc[i].key, v2.acc[i].key);
        CHECK_EQ_U64(afd_view_find(&v2, v1.acc[i].key), i);
    }
    CHECK_EQ_INT(v1.acc[1].occurrence, 1);
    CHECK(v1.acc[0].key != v1.acc[1].key);
    CHECK(v1.acc[0].key != v1.acc[2].key); /* same name and resource, another task */
    CHECK_EQ_INT(v2.acc[2].task, 4);
    CHECK_EQ_STR(v2.acc[2].label, "b#0");
    afd_view_finish(&v1);
    afd_view_finish(&v2);
    afd_trace_finish(&t1);
    afd_trace_finish(&t2);
}

/* ---- lost updates ---- */

TEST(lost_update_classic)
{
    afd_trace t;
    CHECK_EQ_INT(afd_trace_init(&t), 0);
    uint32_t l0 = tb_str(&t, "deposit#0"), l1 = tb_str(&t, "deposit#1"), bal = tb_str(&t, "BALANCE");
    uint32_t site0 = tb_str(&t, "bank.py:10"), site1 = tb_str(&t, "bank.py:11");
    tb_task(&t, 1, 0, l0);
    tb_task(&t, 2, 0, l1);
    tb_wake(&t, 1, 0, 1);
    tb_op(&t, 1, AFD_NOSTR, bal, 0); /* 0: A, deposit#0 reads */
    tb_step(&t, 1, 0, site0);
    tb_wake(&t, 2, 0, 2);
    tb_op(&t, 2, AFD_NOSTR, bal, 0); /* 1: B, deposit#1 reads */
    tb_step(&t, 2, 0, site1);
    tb_wake(&t, 1, 1, 3);
    tb_op(&t, 1, AFD_NOSTR, bal, 1); /* 2: C, deposit#0 writes */
    tb_step(&t, 1, 1, AFD_NOSTR);
    tb_wake(&t, 2, 2, 4);
    tb_op(&t, 2, AFD_NOSTR, bal, 1); /* 3: D, deposit#1 writes over it */
    tb_step(&t, 2, 1, AFD_NOSTR);
    afd_view v;
    tb_view(&v, &t);
    afd_xatom out[4];
    size_t n = 99;
    CHECK_EQ_INT(afd_view_lost_updates(&v, out, 4, &n), 0);
    CHECK_EQ_INT(n, 1);
    CHECK_EQ_INT(out[0].r, 1);
    CHECK_EQ_INT(out[0].u, 2);
    CHECK_EQ_INT(out[0].w, 3);
    CHECK_EQ_U64(out[0].await_site, site1);
    CHECK_EQ_STR(v.acc[out[0].w].label, "deposit#1");
    CHECK_EQ_STR(v.acc[out[0].u].label, "deposit#0");
    /* Out of room: counted, reported as full, nothing written. */
    n = 99;
    CHECK_EQ_INT(afd_view_lost_updates(&v, out, 0, &n), AFD_EFULL);
    CHECK_EQ_INT(n, 0);
    afd_view_finish(&v);
    afd_trace_finish(&t);
}

/* Account.withdraw: `if self.balance >= a: await ...; self.balance -= a` -- the write re-reads,
 * so no update is lost, but the second withdrawal acts on a check the first made stale. */
TEST(stale_check_then_act)
{
    afd_trace t;
    CHECK_EQ_INT(afd_trace_init(&t), 0);
    uint32_t l0 = tb_str(&t, "withdraw#0"), l1 = tb_str(&t, "withdraw#1"), bal = tb_str(&t, "balance");
    uint32_t site0 = tb_str(&t, "acct.py:5"), site1 = tb_str(&t, "acct.py:6");
    tb_task(&t, 1, 0, l0);
    tb_task(&t, 2, 0, l1);
    tb_wake(&t, 1, 0, 1);
    tb_op(&t, 1, AFD_NOSTR, bal, 0); /* 0: withdraw#0 checks */
    tb_step(&t, 1, 0, site0);
    tb_wake(&t, 2, 0, 2);
    tb_op(&t, 2, AFD_NOSTR, bal, 0); /* 1: withdraw#1 checks */
    tb_step(&t, 2, 0, site1);
    tb_wake(&t, 1, 1, 3);
    tb_op(&t, 1, AFD_NOSTR, bal, 0); /* 2: withdraw#0 re-reads */
    tb_op(&t, 1, AFD_NOSTR, bal, 1); /* 3: ... and writes */
    tb_step(&t, 1, 1, AFD_NOSTR);
    tb_wake(&t, 2, 2, 4);
    tb_op(&t, 2, AFD_NOSTR, bal, 0); /* 4: withdraw#1 re-reads */
    tb_op(&t, 2, AFD_NOSTR, bal, 1); /* 5: ... and writes on its stale check */
    tb_step(&t, 2, 1, AFD_NOSTR);
    afd_view v;
    tb_view(&v, &t);
    afd_xatom out[4];
    size_t n = 99;
    CHECK_EQ_INT(afd_view_lost_updates(&v, out, 4, &n), 0);
    CHECK_EQ_INT(n, 0); /* every write re-read first: no lost update */
    CHECK_EQ_INT(afd_view_stale_checks(&v, out, 4, &n), 0);
    CHECK_EQ_INT(n, 1);
    CHECK_EQ_INT(out[0].r, 1);
    CHECK_EQ_INT(out[0].u, 3);
    CHECK_EQ_INT(out[0].w, 5);
    CHECK_EQ_U64(out[0].await_site, site1);
    CHECK_EQ_INT(afd_view_stale_checks(&v, out, 0, &n), AFD_EFULL);
    afd_view_finish(&v);
    afd_trace_finish(&t);

    /* the same accesses one task at a time: every check still holds when acted on */
    CHECK_EQ_INT(afd_trace_init(&t), 0);
    l0 = tb_str(&t, "withdraw#0");
    l1 = tb_str(&t, "withdraw#1");
    bal = tb_str(&t, "balance");
    tb_task(&t, 1, 0, l0);
    tb_task(&t, 2, 0, l1);
    tb_wake(&t, 1, 0, 1);
    tb_op(&t, 1, AFD_NOSTR, bal, 0);
    tb_step(&t, 1, 0, AFD_NOSTR);
    tb_wake(&t, 1, 1, 2);
    tb_op(&t, 1, AFD_NOSTR, bal, 0);
    tb_op(&t, 1, AFD_NOSTR, bal, 1);
    tb_step(&t, 1, 1, AFD_NOSTR);
    tb_wake(&t, 2, 0, 3);
    tb_op(&t, 2, AFD_NOSTR, bal, 0);
    tb_step(&t, 2, 0, AFD_NOSTR);
    tb_wake(&t, 2, 1, 4);
    tb_op(&t, 2, AFD_NOSTR, bal, 0);
    tb_op(&t, 2, AFD_NOSTR, bal, 1);
    tb_step(&t, 2, 1, AFD_NOSTR);
    tb_view(&v, &t);
    n = 99;
    CHECK_EQ_INT(afd_view_stale_checks(&v, out, 4, &n), 0);
    CHECK_EQ_INT(n, 0);
    afd_view_finish(&v);
    afd_trace_finish(&t);
}

TEST(lost_update_absent)
{
    /* deposit#0 reads and writes in one step: atomic under asyncio, whatever runs around it;
     * deposit#1 only writes. */
    afd_trace t;
    CHECK_EQ_INT(afd_trace_init(&t), 0);
    uint32_t l0 = tb_str(&t, "deposit#0"), l1 = tb_str(&t, "deposit#1"), bal = tb_str(&t, "BALANCE");
    uint32_t site = tb_str(&t, "bank.py:10");
    tb_task(&t, 1, 0, l0);
    tb_task(&t, 2, 0, l1);
    tb_wake(&t, 2, 0, 1);
    tb_op(&t, 2, AFD_NOSTR, bal, 1);
    tb_step(&t, 2, 0, site);
    tb_wake(&t, 1, 0, 2);
    tb_op(&t, 1, AFD_NOSTR, bal, 0);
    tb_op(&t, 1, AFD_NOSTR, bal, 1);
    tb_step(&t, 1, 0, site);
    tb_wake(&t, 2, 1, 3);
    tb_op(&t, 2, AFD_NOSTR, bal, 1);
    tb_step(&t, 2, 1, AFD_NOSTR);
    afd_view v;
    tb_view(&v, &t);
    CHECK_EQ_INT(v.n_acc, 4);
    afd_xatom out[4];
    size_t n = 99;
    CHECK_EQ_INT(afd_view_lost_updates(&v, out, 4, &n), 0);
    CHECK_EQ_INT(n, 0);
    afd_view_finish(&v);
    afd_trace_finish(&t);

    /* Read, yield, write, but only reads by others in between; and a re-read before the write
     * starts a new read-modify-write. */
    CHECK_EQ_INT(afd_trace_init(&t), 0);
    l0 = tb_str(&t, "deposit#0");
    l1 = tb_str(&t, "deposit#1");
    bal = tb_str(&t, "BALANCE");
    site = tb_str(&t, "bank.py:10");
    tb_task(&t, 1, 0, l0);
    tb_task(&t, 2, 0, l1);
    tb_wake(&t, 1, 0, 1);
    tb_op(&t, 1, AFD_NOSTR, bal, 0);
    tb_step(&t, 1, 0, site);
    tb_wake(&t, 2, 0, 2);
    tb_op(&t, 2, AFD_NOSTR, bal, 0);
    tb_step(&t, 2, 0, site);
    tb_wake(&t, 1, 1, 3);
    tb_op(&t, 1, AFD_NOSTR, bal, 1);
    tb_step(&t, 1, 1, AFD_NOSTR);
    tb_wake(&t, 2, 2, 4);
    tb_op(&t, 2, AFD_NOSTR, bal, 0); /* re-read after deposit#0's write */
    tb_op(&t, 2, AFD_NOSTR, bal, 1);
    tb_step(&t, 2, 1, AFD_NOSTR);
    tb_view(&v, &t);
    n = 99;
    CHECK_EQ_INT(afd_view_lost_updates(&v, out, 4, &n), 0);
    CHECK_EQ_INT(n, 0);
    afd_view_finish(&v);
    afd_trace_finish(&t);
}

/* ---- inverted pairs ---- */

TEST(conflicts)
{
    afd_trace t;
    tb_inversion_run(&t, 1, 1);
    afd_view v;
    tb_view(&v, &t);
    CHECK_EQ_INT(v.n_acc, 4);
    CHECK_EQ_INT(afd_view_access_conflict(&v.acc[1], &v.acc[3]), 1); /* read X / write X */
    CHECK_EQ_INT(afd_view_access_conflict(&v.acc[3], &v.acc[1]), 1);
    CHECK_EQ_INT(afd_view_access_conflict(&v.acc[0], &v.acc[2]), 1); /* write LOG / write LOG */
    CHECK_EQ_INT(afd_view_access_conflict(&v.acc[1], &v.acc[2]), 0); /* one task */
    CHECK_EQ_INT(afd_view_access_conflict(&v.acc[0], &v.acc[3]), 0); /* two resources */
    afd_xaccess r2 = v.acc[1];
    r2.label = "other#0";
    CHECK_EQ_INT(afd_view_access_conflict(&v.acc[1], &r2), 0); /* two reads */
    afd_view_finish(&v);
    afd_trace_finish(&t);
}

TEST(inverted_pairs_both_ran)
{
    afd_trace tf, tp;
    tb_inversion_run(&tf, 1, 1);
    tb_inversion_run(&tp, 0, 1);
    afd_view f, p;
    tb_view(&f, &tf);
    tb_view(&p, &tp);
    afd_xpair out[8];
    size_t n = 99;
    CHECK_EQ_INT(afd_view_inverted_pairs(&f, &p, out, 8, &n), 0);
    CHECK_EQ_INT(n, 1);
    CHECK_EQ_INT(out[0].x, 1);
    CHECK_EQ_INT(out[0].y, 3);
    CHECK_EQ_INT(out[0].y_pass, 0);
    CHECK_EQ_STR(f.acc[out[0].x].name, "read");
    CHECK_EQ_STR(f.acc[out[0].x].label, "reader#0");
    CHECK_EQ_STR(f.acc[out[0].y].name, "write");
    CHECK_EQ_STR(f.acc[out[0].y].label, "writer#0");
    /* A run against itself inverts nothing. */
    n = 99;
    CHECK_EQ_INT(afd_view_inverted_pairs(&f, &f, out, 8, &n), 0);
    CHECK_EQ_INT(n, 0);
    /* Swapped roles: the pass order (write before read) is the "failing" one. */
    n = 99;
    CHECK_EQ_INT(afd_view_inverted_pairs(&p, &f, out, 8, &n), 0);
    CHECK_EQ_INT(n, 1);
    CHECK_EQ_STR(p.acc[out[0].x].name, "write");
    CHECK_EQ_STR(p.acc[out[0].y].name, "read");
    n = 99;
    CHECK_EQ_INT(afd_view_inverted_pairs(&f, &p, out, 0, &n), AFD_EFULL);
    CHECK_EQ_INT(n, 0);
    afd_view_finish(&f);
    afd_view_finish(&p);
    afd_trace_finish(&tf);
    afd_trace_finish(&tp);
}

TEST(inverted_pairs_y_only_in_pass)
{
    afd_trace tf, tp;
    tb_inversion_run(&tf, 1, 0);
    tb_inversion_run(&tp, 0, 1);
    afd_view f, p;
    tb_view(&f, &tf);
    tb_view(&p, &tp);
    CHECK_EQ_INT(f.n_acc, 3);
    afd_xpair out[8];
    size_t n = 99;
    CHECK_EQ_INT(afd_view_inverted_pairs(&f, &p, out, 8, &n), 0);
    CHECK_EQ_INT(n, 1);
    CHECK_EQ_INT(out[0].x, 1);
    CHECK_EQ_INT(out[0].y, 1); /* index in the passing view */
    CHECK_EQ_INT(out[0].y_pass, 1);
    CHECK_EQ_STR(f.acc[out[0].x].name, "read");
    CHECK_EQ_STR(p.acc[out[0].y].label, "writer#0");
    CHECK_EQ_STR(p.acc[out[0].y].name, "write");
    afd_view_finish(&f);
    afd_view_finish(&p);
    afd_trace_finish(&tf);
    afd_trace_finish(&tp);
}

/* ---- races ---- */

enum { SYNC_NONE, SYNC_LOCK, SYNC_LOCK_OTHER, SYNC_EVENT, SYNC_EVENT_UNSET, SYNC_QUEUE, SYNC_SCHEDULED };

/* main#0 writes X and spawns w1 and w2 (their wakes point at its step), which both write X. */
static void race_run(afd_trace *t, int how)
{
    CHECK_EQ_INT(afd_trace_init(t), 0);
    uint32_t lm = tb_str(t, "main#0"), l1 = tb_str(t, "w#1"), l2 = tb_str(t, "w#2"), x = tb_str(t, "X");
    uint32_t lock = tb_str(t, "Lock@r.py:1"), lock2 = tb_str(t, "Lock@r.py:2");
    uint32_t event = tb_str(t, "Event@r.py:3"), queue = tb_str(t, "Queue@r.py:4");
    tb_task(t, 1, 0, lm);
    tb_wake(t, 1, 0, 1);
    tb_op(t, 1, AFD_NOSTR, x, 1);
    tb_task(t, 2, 1, l1);
    tb_task(t, 3, 1, l2);
    tb_step(t, 1, 0, AFD_NOSTR);
    tb_wake(t, 2, 1, 2);
    if (how == SYNC_LOCK || how == SYNC_LOCK_OTHER)
        tb_sync(t, 2, AFD_SYNC_LOCK_ACQUIRE, 1, lock);
    tb_op(t, 2, AFD_NOSTR, x, 1);
    if (how == SYNC_LOCK || how == SYNC_LOCK_OTHER)
        tb_sync(t, 2, AFD_SYNC_LOCK_RELEASE, 1, lock);
    if (how == SYNC_EVENT || how == SYNC_EVENT_UNSET)
        tb_sync(t, 2, AFD_SYNC_EVENT_SET, 2, event);
    if (how == SYNC_QUEUE)
        tb_sync(t, 2, AFD_SYNC_QUEUE_PUT, 3, queue);
    tb_step(t, 2, 0, AFD_NOSTR);
    tb_wake(t, 3, how == SYNC_SCHEDULED ? 2 : 1, 3);
    if (how == SYNC_LOCK)
        tb_sync(t, 3, AFD_SYNC_LOCK_ACQUIRE, 1, lock);
    if (how == SYNC_LOCK_OTHER)
        tb_sync(t, 3, AFD_SYNC_LOCK_ACQUIRE, 4, lock2);
    if (how == SYNC_EVENT)
        tb_sync(t, 3, AFD_SYNC_EVENT_OBSERVE, 2, event);
    if (how == SYNC_EVENT_UNSET)
        tb_sync(t, 3, AFD_SYNC_EVENT_CHECK, 2, event);
    if (how == SYNC_QUEUE)
        tb_sync(t, 3, AFD_SYNC_QUEUE_GET, 3, queue);
    tb_op(t, 3, AFD_NOSTR, x, 1);
    if (how == SYNC_LOCK)
        tb_sync(t, 3, AFD_SYNC_LOCK_RELEASE, 1, lock);
    if (how == SYNC_LOCK_OTHER)
        tb_sync(t, 3, AFD_SYNC_LOCK_RELEASE, 4, lock2);
    tb_step(t, 3, 0, AFD_NOSTR);
}

static size_t races_of(int how, afd_xpair *out, size_t cap, int check_labels)
{
    afd_trace t;
    race_run(&t, how);
    afd_view v;
    tb_view(&v, &t);
    CHECK_EQ_INT(v.n_steps, 3);
    CHECK_EQ_U64(v.steps[1].origin, 0);
    CHECK_EQ_U64(v.steps[2].origin, how == SYNC_SCHEDULED ? 1u : 0u);
    size_t n = 99;
    CHECK_EQ_INT(afd_view_races(&v, out, cap, &n), 0);
    if (check_labels) {
        CHECK_EQ_INT(n, 1);
        CHECK_EQ_INT(v.n_acc, 3);
        CHECK_EQ_STR(v.acc[out[0].x].label, "w#1");
        CHECK_EQ_STR(v.acc[out[0].y].label, "w#2");
    }
    afd_view_finish(&v);
    afd_trace_finish(&t);
    return n;
}

TEST(races_unordered_writers)
{
    afd_xpair out[8];
    /* main's write happens before both (they were spawned by its step); w1 and w2 race. */
    CHECK_EQ_INT(races_of(SYNC_NONE, out, 8, 1), 1);
    CHECK_EQ_INT(out[0].x, 1);
    CHECK_EQ_INT(out[0].y, 2);
    CHECK_EQ_INT(out[0].y_pass, 0);
    /* w2 scheduled by w1's step: ordered. */
    CHECK_EQ_INT(races_of(SYNC_SCHEDULED, out, 8, 0), 0);
}

TEST(races_lock_orders)
{
    afd_xpair out[8];
    CHECK_EQ_INT(races_of(SYNC_LOCK, out, 8, 0), 0);
    /* Two different locks order nothing. */
    CHECK_EQ_INT(races_of(SYNC_LOCK_OTHER, out, 8, 0), 1);
    CHECK_EQ_INT(out[0].x, 1);
    CHECK_EQ_INT(out[0].y, 2);
}

TEST(races_event_and_queue_order)
{
    afd_xpair out[8];
    /* set -> observe orders the writers (and the set and the observation themselves). */
    CHECK_EQ_INT(races_of(SYNC_EVENT, out, 8, 0), 0);
    /* Seen unset: no edge; the writes race and so do the set and the check. */
    CHECK_EQ_INT(races_of(SYNC_EVENT_UNSET, out, 8, 0), 2);
    CHECK_EQ_INT(races_of(SYNC_QUEUE, out, 8, 0), 0);
}

TEST(races_full)
{
    afd_trace t;
    race_run(&t, SYNC_NONE);
    afd_view v;
    tb_view(&v, &t);
    afd_xpair out[1];
    size_t n = 99;
    CHECK_EQ_INT(afd_view_races(&v, out, 0, &n), AFD_EFULL);
    CHECK_EQ_INT(n, 0);
    afd_view_finish(&v);
    afd_trace_finish(&t);
}

TEST(races_queue_kth_get_matches_kth_put)
{
    /* p puts twice (steps 0 and 1), c gets in step 2 (edge 0 -> 2) and again in step 3
     * (edge 1 -> 3), then a third get with nothing put in between adds no edge. The second put
     * and the first get are unordered, but both are operations of the queue itself, atomic in
     * asyncio: not a race. */
    afd_trace t;
    CHECK_EQ_INT(afd_trace_init(&t), 0);
    uint32_t lp = tb_str(&t, "p#0"), lc = tb_str(&t, "c#0"), q = tb_str(&t, "Queue@q.py:1");
    tb_task(&t, 1, 0, lp);
    tb_task(&t, 2, 0, lc);
    tb_wake(&t, 1, 0, 1);
    tb_sync(&t, 1, AFD_SYNC_QUEUE_PUT, 1, q);
    tb_step(&t, 1, 0, AFD_NOSTR);
    tb_wake(&t, 1, 0, 2);
    tb_sync(&t, 1, AFD_SYNC_QUEUE_PUT, 1, q);
    tb_step(&t, 1, 1, AFD_NOSTR);
    tb_wake(&t, 2, 0, 3);
    tb_sync(&t, 2, AFD_SYNC_QUEUE_GET, 1, q);
    tb_step(&t, 2, 0, AFD_NOSTR);
    tb_wake(&t, 2, 0, 4);
    tb_sync(&t, 2, AFD_SYNC_QUEUE_GET, 1, q);
    tb_sync(&t, 2, AFD_SYNC_QUEUE_GET, 1, q);
    tb_step(&t, 2, 1, AFD_NOSTR);
    afd_view v;
    tb_view(&v, &t);
    CHECK_EQ_INT(v.n_edges, 2);
    CHECK_EQ_INT(v.edge_from[0], 0);
    CHECK_EQ_INT(v.edge_to[0], 2);
    CHECK_EQ_INT(v.edge_from[1], 1);
    CHECK_EQ_INT(v.edge_to[1], 3);
    afd_xpair out[8];
    size_t n = 99;
    CHECK_EQ_INT(afd_view_races(&v, out, 8, &n), 0);
    CHECK_EQ_INT(n, 0);
    CHECK_EQ_STR(v.acc[1].name, "put");
    CHECK_EQ_STR(v.acc[2].name, "get");
    afd_view_finish(&v);
    afd_trace_finish(&t);
}

/* ---- lock-order and wait-for cycles ---- */

TEST(lock_cycle_inverted_order)
{
    afd_trace t;
    tb_lock_run(&t, 1, 1);
    afd_view v;
    tb_view(&v, &t);
    uint32_t locks[4] = {0}, labels[4] = {0};
    size_t len = 99;
    CHECK_EQ_INT(afd_view_lock_cycle(&v, locks, labels, 4, &len), 1);
    CHECK_EQ_INT(len, 2);
    CHECK_EQ_INT(locks[0], 1);
    CHECK_EQ_INT(locks[1], 2);
    CHECK_EQ_STR(afd_trace_string(&t, labels[0]), "Lock@l.py:1");
    CHECK_EQ_STR(afd_trace_string(&t, labels[1]), "Lock@l.py:2");
    afd_view_finish(&v);
    afd_trace_finish(&t);
}

TEST(lock_cycle_absent)
{
    afd_trace t;
    afd_view v;
    uint32_t locks[4], labels[4];
    size_t len;
    /* Consistent order: one#0 and two#0 both take L1 then L2. */
    tb_lock_run(&t, 0, 1);
    tb_view(&v, &t);
    len = 99;
    CHECK_EQ_INT(afd_view_lock_cycle(&v, locks, labels, 4, &len), 0);
    CHECK_EQ_INT(len, 0);
    afd_view_finish(&v);
    afd_trace_finish(&t);
    /* Opposite orders, but one#0 released L1 before taking L2: no edge L1 -> L2. */
    tb_lock_run(&t, 1, 0);
    tb_view(&v, &t);
    len = 99;
    CHECK_EQ_INT(afd_view_lock_cycle(&v, locks, labels, 4, &len), 0);
    CHECK_EQ_INT(len, 0);
    afd_view_finish(&v);
    afd_trace_finish(&t);
}

TEST(lock_cycle_other_holders)
{
    /* Interleaved: one#0 holds L1 while two#0 takes L2, and two#0 holds L2 while one#0 takes L1
     * again. Only a task's own held locks order its acquisitions: no edge, no cycle. */
    afd_trace t;
    CHECK_EQ_INT(afd_trace_init(&t), 0);
    uint32_t l1 = tb_str(&t, "one#0"), l2 = tb_str(&t, "two#0");
    uint32_t lab1 = tb_str(&t, "Lock@l.py:1"), lab2 = tb_str(&t, "Lock@l.py:2");
    tb_task(&t, 1, 0, l1);
    tb_task(&t, 2, 0, l2);
    tb_wake(&t, 1, 0, 1);
    tb_sync(&t, 1, AFD_SYNC_LOCK_ACQUIRE, 1, lab1);
    tb_step(&t, 1, 0, AFD_NOSTR);
    tb_wake(&t, 2, 0, 2);
    tb_sync(&t, 2, AFD_SYNC_LOCK_ACQUIRE, 2, lab2);
    tb_step(&t, 2, 0, AFD_NOSTR);
    tb_wake(&t, 1, 0, 3);
    tb_sync(&t, 1, AFD_SYNC_LOCK_RELEASE, 1, lab1);
    tb_sync(&t, 1, AFD_SYNC_LOCK_ACQUIRE, 1, lab1);
    tb_sync(&t, 1, AFD_SYNC_LOCK_RELEASE, 1, lab1);
    tb_step(&t, 1, 1, AFD_NOSTR);
    tb_wake(&t, 2, 0, 4);
    tb_sync(&t, 2, AFD_SYNC_LOCK_RELEASE, 2, lab2);
    tb_step(&t, 2, 1, AFD_NOSTR);
    afd_view v;
    tb_view(&v, &t);
    uint32_t locks[4], labels[4];
    size_t len = 99;
    CHECK_EQ_INT(afd_view_lock_cycle(&v, locks, labels, 4, &len), 0);
    CHECK_EQ_INT(len, 0);
    afd_view_finish(&v);
    afd_trace_finish(&t);
}

TEST(wait_cycle_deadlock)
{
    afd_trace t;
    CHECK_EQ_INT(afd_trace_init(&t), 0);
    t.outcome = AFD_OUT_HANG;
    t.flags = AFD_TRACE_DEADLOCK;
    uint32_t la = tb_str(&t, "a#0"), lb = tb_str(&t, "b#0");
    uint32_t lab1 = tb_str(&t, "Lock@w.py:1"), lab2 = tb_str(&t, "Lock@w.py:2");
    tb_task(&t, 7, 0, la);
    tb_task(&t, 4, 0, lb);
    tb_wake(&t, 7, 0, 1);
    tb_sync(&t, 7, AFD_SYNC_CREATE, 1, lab1);
    tb_sync(&t, 7, AFD_SYNC_LOCK_ACQUIRE, 2, lab2);
    tb_step(&t, 7, 0, AFD_NOSTR);
    tb_wake(&t, 4, 0, 2);
    tb_sync(&t, 4, AFD_SYNC_LOCK_ACQUIRE, 1, lab1);
    tb_step(&t, 4, 0, AFD_NOSTR);
    tb_ev(&t, AFD_EV_WAITFOR, 0, 7, 1, 4); /* a#0 (7) waits for lock 1, held by b#0 (4) */
    tb_ev(&t, AFD_EV_WAITFOR, 0, 4, 2, 7); /* b#0 (4) waits for lock 2, held by a#0 (7) */
    afd_view v;
    tb_view(&v, &t);
    uint32_t tasks[4] = {0}, labels[4] = {0};
    size_t len = 99;
    CHECK_EQ_INT(afd_view_wait_cycle(&v, tasks, labels, 4, &len), 1);
    CHECK_EQ_INT(len, 2);
    CHECK_EQ_INT(tasks[0], 4); /* rotated: smallest id first */
    CHECK_EQ_INT(tasks[1], 7);
    CHECK_EQ_U64(labels[0], lab2);
    CHECK_EQ_U64(labels[1], lab1);
    /* The lock-order graph has no cycle: each task held one lock. */
    len = 99;
    CHECK_EQ_INT(afd_view_lock_cycle(&v, tasks, labels, 4, &len), 0);
    afd_view_finish(&v);
    afd_trace_finish(&t);

    /* A chain, not a cycle: a#0 waits for b#0, who waits for a task (object 0) nobody holds. */
    CHECK_EQ_INT(afd_trace_init(&t), 0);
    la = tb_str(&t, "a#0");
    tb_task(&t, 1, 0, la);
    tb_task(&t, 2, 0, la);
    tb_ev(&t, AFD_EV_WAITFOR, 0, 1, 0, 2);
    tb_ev(&t, AFD_EV_WAITFOR, 0, 2, 0, 0);
    tb_view(&v, &t);
    len = 99;
    CHECK_EQ_INT(afd_view_wait_cycle(&v, tasks, labels, 4, &len), 0);
    CHECK_EQ_INT(len, 0);
    afd_view_finish(&v);
    afd_trace_finish(&t);
}

/* ---- divergence ---- */

/* Steps given as a string of task letters; each letter's ordinal counts up from `ord0`. */
static void seq_run(afd_trace *t, const char *seq, uint32_t id_base)
{
    CHECK_EQ_INT(afd_trace_init(t), 0);
    uint32_t la = tb_str(t, "a#0"), lb = tb_str(t, "b#0");
    tb_task(t, id_base + 1, 0, la);
    tb_task(t, id_base + 2, 0, lb);
    uint32_t ord[2] = {0, 0};
    for (uint32_t i = 0; seq[i]; i++) {
        uint32_t k = seq[i] == 'a' ? 0 : seq[i] == 'b' ? 1 : 2;
        uint32_t id = k < 2 ? id_base + 1 + k : 99; /* 99: no TASK event */
        tb_wake(t, id, 0, i + 1);
        tb_step(t, id, k < 2 ? ord[k]++ : 0, AFD_NOSTR);
    }
}

static uint32_t diverge(const char *x, uint32_t base_x, const char *y, uint32_t base_y)
{
    afd_trace tx, ty;
    seq_run(&tx, x, base_x);
    seq_run(&ty, y, base_y);
    afd_view vx, vy;
    tb_view(&vx, &tx);
    tb_view(&vy, &ty);
    uint32_t d = afd_view_divergence(&vx, &vy);
    CHECK_EQ_U64(afd_view_divergence(&vy, &vx), d);
    afd_view_finish(&vx);
    afd_view_finish(&vy);
    afd_trace_finish(&tx);
    afd_trace_finish(&ty);
    return d;
}

TEST(divergence)
{
    CHECK_EQ_U64(diverge("abab", 0, "abab", 0), AFD_NOPOS);
    CHECK_EQ_U64(diverge("abab", 0, "abab", 10), AFD_NOPOS); /* other ids, same labels */
    CHECK_EQ_U64(diverge("abab", 0, "abba", 0), 2);
    CHECK_EQ_U64(diverge("abab", 0, "baab", 0), 0);
    CHECK_EQ_U64(diverge("abab", 0, "ab", 0), 2);
    CHECK_EQ_U64(diverge("", 0, "a", 0), 0);
    CHECK_EQ_U64(diverge("", 0, "", 0), AFD_NOPOS);
    CHECK_EQ_U64(diverge("aab", 0, "axb", 0), 1); /* an unlabeled task differs */

    /* Same task, another ordinal. */
    afd_trace tx, ty;
    seq_run(&tx, "ab", 0);
    CHECK_EQ_INT(afd_trace_init(&ty), 0);
    uint32_t la = tb_str(&ty, "a#0"), lb = tb_str(&ty, "b#0");
    tb_task(&ty, 1, 0, la);
    tb_task(&ty, 2, 0, lb);
    tb_wake(&ty, 1, 0, 1);
    tb_step(&ty, 1, 0, AFD_NOSTR);
    tb_wake(&ty, 2, 0, 2);
    tb_step(&ty, 2, 5, AFD_NOSTR);
    afd_view vx, vy;
    tb_view(&vx, &tx);
    tb_view(&vy, &ty);
    CHECK_EQ_U64(afd_view_divergence(&vx, &vy), 1);
    afd_view_finish(&vx);
    afd_view_finish(&vy);
    afd_trace_finish(&tx);
    afd_trace_finish(&ty);
}

/* ---- summaries ---- */

TEST(summary)
{
    afd_trace t;
    tb_inversion_run(&t, 1, 1);
    afd_view v;
    tb_view(&v, &t);
    CHECK_EQ_INT(v.n_acc, 4);
    afd_run_summary s;
    CHECK_EQ_INT(afd_view_summary_build(&s, &v, 5), 0);
    CHECK_EQ_INT(s.failed, 1);
    CHECK_EQ_INT(s.n, 4);
    for (uint32_t i = 1; i < s.n; i++)
        CHECK(s.keys[i - 1] < s.keys[i]);
    for (uint32_t i = 0; i < s.n; i++) {
        CHECK_EQ_U64(v.acc[s.pos[i]].key, s.keys[i]);
        CHECK_EQ_INT(afd_view_summary_has(&s, v.acc[i].key), 1);
    }
    uint64_t k0 = v.acc[0].key, k1 = v.acc[1].key, k3 = v.acc[3].key;
    uint64_t missing = k0 ^ k1 ^ k3 ^ 0x5555;
    CHECK_EQ_INT(afd_view_summary_has(&s, missing), 0);
    CHECK_EQ_INT(afd_view_summary_order(&s, k1, k3), 1);
    CHECK_EQ_INT(afd_view_summary_order(&s, k3, k1), 0);
    CHECK_EQ_INT(afd_view_summary_order(&s, k0, k3), 1);
    CHECK_EQ_INT(afd_view_summary_order(&s, k3, k0), 0);
    CHECK_EQ_INT(afd_view_summary_order(&s, k1, missing), -1);
    CHECK_EQ_INT(afd_view_summary_order(&s, missing, k1), -1);
    afd_view_summary_finish(&s);
    CHECK(s.keys == NULL && s.pos == NULL && s.n == 0);

    /* The summary outlives the view and the trace. */
    CHECK_EQ_INT(afd_view_summary_build(&s, &v, 0), 0);
    afd_view_finish(&v);
    afd_trace_finish(&t);
    CHECK_EQ_INT(s.failed, 0);
    CHECK_EQ_INT(afd_view_summary_order(&s, k1, k3), 1);
    CHECK_EQ_INT(afd_view_summary_has(&s, k0), 1);
    afd_view_summary_finish(&s);

    /* An empty view. */
    CHECK_EQ_INT(afd_trace_init(&t), 0);
    tb_view(&v, &t);
    CHECK_EQ_INT(afd_view_summary_build(&s, &v, 1), 0);
    CHECK_EQ_INT(s.n, 0);
    CHECK_EQ_INT(afd_view_summary_has(&s, k0), 0);
    CHECK_EQ_INT(afd_view_summary_order(&s, k0, k1), -1);
    afd_view_summary_finish(&s);
    afd_view_finish(&v);
    afd_trace_finish(&t);
}

/* ---- bounds ---- */

TEST(access_bound)
{
    afd_trace t;
    CHECK_EQ_INT(afd_trace_init(&t), 0);
    uint32_t lp = tb_str(&t, "p#0"), lc = tb_str(&t, "c#0"), res = tb_str(&t, "R");
    uint32_t q = tb_str(&t, "Queue@b.py:1");
    tb_task(&t, 1, 0, lp);
    tb_task(&t, 2, 0, lc);
    const uint32_t extra = 5, total = AFD_EXPLAIN_MAX_ACCESSES + extra;
    tb_wake(&t, 1, 0, 1);
    afd_event e = {.kind = AFD_EV_OP_END, .flags = 1, .task = 1, .a = AFD_NOSTR, .b = res};
    for (uint32_t i = 0; i < total; i++)
        CHECK_EQ_INT(afd_trace_add_events(&t, &e, 1), 0);
    tb_step(&t, 1, 0, AFD_NOSTR);
    /* Past the bound, steps and happens-before edges still go on. */
    tb_wake(&t, 1, 1, 2);
    tb_sync(&t, 1, AFD_SYNC_QUEUE_PUT, 1, q);
    tb_step(&t, 1, 1, AFD_NOSTR);
    tb_wake(&t, 2, 0, 3);
    tb_sync(&t, 2, AFD_SYNC_QUEUE_GET, 1, q);
    tb_step(&t, 2, 0, AFD_NOSTR);
    afd_view v;
    tb_view(&v, &t);
    CHECK_EQ_INT(v.n_acc, AFD_EXPLAIN_MAX_ACCESSES);
    CHECK_EQ_INT(v.n_steps, 3);
    CHECK_EQ_INT(v.acc[AFD_EXPLAIN_MAX_ACCESSES - 1].step, 0);
    CHECK_EQ_INT(v.acc[AFD_EXPLAIN_MAX_ACCESSES - 1].occurrence, AFD_EXPLAIN_MAX_ACCESSES - 1);
    CHECK_EQ_INT(v.n_edges, 1);
    CHECK_EQ_INT(v.edge_from[0], 1);
    CHECK_EQ_INT(v.edge_to[0], 2);
    afd_xatom atoms[2];
    size_t n = 99;
    CHECK_EQ_INT(afd_view_lost_updates(&v, atoms, 2, &n), 0); /* one task: nothing lost */
    CHECK_EQ_INT(n, 0);
    afd_view_finish(&v);
    afd_trace_finish(&t);
}

TEST(huge_object_number)
{
    /* A decodable trace may carry any object number; one no recorder can have given (beyond one
     * per event) is ignored, and no table is sized by it. */
    afd_trace t;
    CHECK_EQ_INT(afd_trace_init(&t), 0);
    uint32_t la = tb_str(&t, "a#0"), lab = tb_str(&t, "Lock@h.py:1");
    tb_task(&t, 1, 0, la);
    tb_wake(&t, 1, 0, 1);
    tb_sync(&t, 1, AFD_SYNC_EVENT_SET, UINT32_MAX, lab);
    tb_step(&t, 1, 0, AFD_NOSTR);
    afd_view v;
    CHECK_EQ_INT(afd_view_build(&v, &t), 0);
    CHECK_EQ_INT(v.n_steps, 1);
    CHECK_EQ_INT(v.n_acc, 0);
    afd_view_finish(&v);
    /* the same for a step index and a task id far beyond the trace */
    afd_trace t2;
    CHECK_EQ_INT(afd_trace_init(&t2), 0);
    uint32_t lb = tb_str(&t2, "b#0");
    tb_task(&t2, UINT32_MAX, 0, lb);
    tb_wake(&t2, UINT32_MAX, UINT32_MAX, UINT32_MAX);
    tb_step(&t2, UINT32_MAX, 0, AFD_NOSTR);
    CHECK_EQ_INT(afd_view_build(&v, &t2), 0);
    CHECK_EQ_INT(v.n_steps, 1);
    CHECK_EQ_INT(v.steps[0].origin, AFD_NOPOS);
    uint32_t cyc[4], labels[4];
    size_t len = 9;
    CHECK_EQ_INT(afd_view_lock_cycle(&v, cyc, labels, 4, &len), 0);
    CHECK_EQ_INT(afd_view_wait_cycle(&v, cyc, labels, 4, &len), 0);
    afd_view_finish(&v);
    afd_trace_finish(&t2);
    afd_trace_finish(&t);
}

TEST(finishes_accept_null)
{
    afd_view_finish(NULL);
    afd_view_summary_finish(NULL);
    afd_view_srcmap_free(NULL);
    afd_view v;
    memset(&v, 0, sizeof v);
    afd_view_finish(&v);
    afd_run_summary s;
    memset(&s, 0, sizeof s);
    afd_view_summary_finish(&s);
}

int main(void)
{
    RUN_TESTS("explain", T(view_steps_origins_blocking), T(view_empty_trace), T(view_accesses),
              T(keys_stable_across_runs), T(lost_update_classic), T(stale_check_then_act),
              T(lost_update_absent), T(conflicts), T(inverted_pairs_both_ran),
              T(inverted_pairs_y_only_in_pass), T(races_unordered_writers), T(races_lock_orders),
              T(races_event_and_queue_order), T(races_full), T(races_queue_kth_get_matches_kth_put),
              T(lock_cycle_inverted_order), T(lock_cycle_absent), T(lock_cycle_other_holders),
              T(wait_cycle_deadlock), T(divergence), T(summary), T(access_bound), T(huge_object_number),
              T(finishes_accept_null));
}
