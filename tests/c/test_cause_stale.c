/* test_cause_stale.c -- one decision made by two tasks (explain_stale.c, afd_view_twin_check)
 * named as a check-then-act by afd_cause_decide, on hand-built runs over a source file written
 * here: the rule holds only when the read is an `if` condition whose body holds the await the
 * reader suspended at, and the writer made such a check of the state itself before writing it;
 * otherwise the inverted pair stays an order violation. */
#include "afd.h"
#include "cause.h"
#include "explain.h"
#include "harness.h"
#include "trace.h"
#include "tracebuild.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* A token client: ensure() refreshes when expiring() says so (line 3 holds the check, line 4 the
 * await in its body); line 5 awaits outside that body. refresh() awaits the round trip at line 11
 * and writes `expires` at line 12. */
static void write_client(char *path)
{
    int fd = mkstemps(path, 3);
    CHECK(fd >= 0);
    const char *src = "class Client:\n"
                      "    async def ensure(self):\n"
                      "        if self.expiring():\n"
                      "            await self.refresh()\n"
                      "        await self.refresh()\n"
                      "\n"
                      "    def expiring(self):\n"
                      "        return self.expires < 1\n"
                      "\n"
                      "    async def refresh(self):\n"
                      "        await self.io()\n"
                      "        self.expires = 9\n";
    CHECK_EQ_INT(write(fd, src, strlen(src)), (long)strlen(src));
    close(fd);
}

/* How a run is built: whether the writer checks before it writes, the line of ensure() the reader
 * suspends at (4: inside the `if`, 5: after it), and whether the writer's write runs. */
typedef struct shape {
    int writer_checks;
    uint32_t reader_await;
    int writer_writes;
} shape;

/* An access of `task` to Client.expires, made at the frames of `chain`. */
static void access_at(afd_trace *t, uint32_t task, uint32_t res, const char *chain, int write)
{
    tb_ev(t, AFD_EV_OP_BEGIN, (uint8_t)write, task, AFD_NOSTR, res);
    tb_ev(t, AFD_EV_CHAIN, 0, task, tb_str(t, chain), 2);
    tb_ev(t, AFD_EV_OP_END, (uint8_t)write, task, AFD_NOSTR, res);
}

/* A step's end at refresh()'s round trip, called from ensure() at line `at`. */
static void suspend_in_refresh(afd_trace *t, uint32_t task, uint32_t ordinal, const char *file, uint32_t at)
{
    char site[600], chain[1300];
    snprintf(site, sizeof site, "%s:11", file);
    snprintf(chain, sizeof chain, "%s:%u ensure\n%s:11 refresh", file, (unsigned)at, file);
    tb_step(t, task, ordinal, tb_str(t, site));
    tb_ev(t, AFD_EV_CHAIN, 0, task, tb_str(t, chain), 2);
}

/* writer#0 (task 1) and reader#0 (task 2). Failing: writer checks and suspends in the refresh,
 * reader checks and suspends, then writer writes. Passing: writer checks, suspends and writes
 * before the reader checks. */
static void client_run(afd_trace *t, const char *file, shape s, int failing)
{
    CHECK_EQ_INT(afd_trace_init(t), 0);
    char check[1300], write[1300];
    snprintf(check, sizeof check, "%s:3 ensure\n%s:8 expiring", file, file);
    snprintf(write, sizeof write, "%s:4 ensure\n%s:12 refresh", file, file);
    uint32_t res = tb_str(t, "Client.expires");
    tb_task(t, 1, 0, tb_str(t, "writer#0"));
    tb_task(t, 2, 0, tb_str(t, "reader#0"));
    tb_wake(t, 1, 0, 1);
    if (s.writer_checks)
        access_at(t, 1, res, check, 0);
    suspend_in_refresh(t, 1, 0, file, 4);
    uint32_t step = 2;
    if (!failing) {
        tb_wake(t, 1, 0, step++);
        access_at(t, 1, res, write, 1);
        tb_step(t, 1, 1, AFD_NOSTR);
    }
    tb_wake(t, 2, 0, step++);
    access_at(t, 2, res, check, 0);
    suspend_in_refresh(t, 2, 0, file, s.reader_await);
    if (failing && s.writer_writes) {
        tb_wake(t, 1, 0, step++);
        access_at(t, 1, res, write, 1);
        tb_step(t, 1, 1, AFD_NOSTR);
    }
}

typedef struct decided {
    afd_trace tf, tp;
    afd_view f, p;
    afd_cause c;
    afd_evidence ev;
} decided;

static void decide(decided *d, const char *file, shape s)
{
    client_run(&d->tf, file, s, 1);
    client_run(&d->tp, file, s, 0);
    tb_view(&d->f, &d->tf);
    tb_view(&d->p, &d->tp);
    afd_cause_input in = {
        .fail = &d->f, .pass = &d->p, .k_fail = 10, .n_fail = 10, .k_pass = 10, .n_pass = 10};
    in.hist.slow_step_ms = 1e9;
    afd_cause_init(&d->c);
    afd_evidence_init(&d->ev);
    CHECK_EQ_INT(afd_cause_decide(&in, &d->c, &d->ev), 0);
}

static void decided_finish(decided *d)
{
    afd_cause_finish(&d->c);
    afd_evidence_finish(&d->ev);
    afd_view_finish(&d->f);
    afd_view_finish(&d->p);
    afd_trace_finish(&d->tf);
    afd_trace_finish(&d->tp);
}

static int has_claim_prefix(const afd_evidence *ev, const char *prefix)
{
    for (size_t i = 0; i < ev->n; i++)
        if (strncmp(ev->rows[i].claim, prefix, strlen(prefix)) == 0)
            return 1;
    return 0;
}

/* Both tasks check `expires` in ensure()'s `if`, the reader suspends in its body, and the writer's
 * refresh writes it after the reader's check: a check-then-act, named at the await in ensure(),
 * with the reader's check, the writer's check and the writer's write. */
TEST(two_tasks_acting_on_one_check_are_a_check_then_act)
{
    char path[] = "/tmp/afd_stale_XXXXXX.py";
    write_client(path);
    decided d;
    decide(&d, path, (shape){1, 4, 1});
    CHECK_EQ_INT(d.c.kind, AFD_CAUSE_CHECK_THEN_ACT);
    CHECK_EQ_STR(d.c.resource, "Client.expires");
    char site[600], want[4096];
    snprintf(site, sizeof site, "%s:4", path);
    CHECK_EQ_STR(d.c.await_site, site);
    snprintf(
        want, sizeof want,
        "check-then-act on Client.expires: reader#0 checks it (in expiring() at %s:8) and, in the branch "
        "the check took, yields at %s:4 `await self.refresh()`, via refresh() at %s:11; writer#0, which "
        "made the same check, writes it after reader#0's check: both tasks act on one decision, and "
        "reader#0's is stale",
        path, path, path);
    CHECK_EQ_STR(d.c.summary, want);
    CHECK_EQ_INT(d.c.n_ops, 3);
    CHECK_EQ_STR(d.c.ops[0].task, "reader#0");
    CHECK_EQ_INT(d.c.ops[0].write, 0);
    CHECK_EQ_STR(d.c.ops[1].task, "writer#0");
    CHECK_EQ_INT(d.c.ops[1].write, 0);
    CHECK_EQ_STR(d.c.ops[2].task, "writer#0");
    CHECK_EQ_INT(d.c.ops[2].write, 1);
    CHECK_EQ_STR(d.c.ops[2].run, "failing");
    /* the fixes that re-check a lazy init read the early access and the writer */
    CHECK(d.c.early != AFD_NOPOS);
    CHECK_EQ_STR(d.c.writer, "writer#0");
    CHECK(has_claim_prefix(&d.ev, "reader#0 reads Client.expires before writer#0 writes Client.expires"));
    CHECK(has_claim_prefix(&d.ev, "reader#0 and writer#0 both checked Client.expires"));
    decided_finish(&d);
    unlink(path);
}

/* The writer's write ran only in the passing run (the failing one ended first): still one
 * decision made by two tasks, its check and write taken from the passing run. */
TEST(the_writers_act_may_run_only_in_the_passing_run)
{
    char path[] = "/tmp/afd_stale_XXXXXX.py";
    write_client(path);
    decided d;
    decide(&d, path, (shape){1, 4, 0});
    CHECK_EQ_INT(d.c.kind, AFD_CAUSE_CHECK_THEN_ACT);
    CHECK(strstr(d.c.summary, "writer#0, which made the same check, had not written it yet (that write then "
                              "never ran)") != NULL);
    CHECK_EQ_INT(d.c.n_ops, 3);
    CHECK_EQ_STR(d.c.ops[1].run, "passing");
    CHECK_EQ_STR(d.c.ops[2].run, "passing");
    decided_finish(&d);
    unlink(path);
}

/* A writer that writes without checking first decides nothing: the reader read too early, an
 * order violation. */
TEST(a_writer_without_its_own_check_leaves_an_order_violation)
{
    char path[] = "/tmp/afd_stale_XXXXXX.py";
    write_client(path);
    decided d;
    decide(&d, path, (shape){0, 4, 1});
    CHECK_EQ_INT(d.c.kind, AFD_CAUSE_ORDER_VIOLATION);
    CHECK_EQ_STR(d.c.resource, "Client.expires");
    decided_finish(&d);
    unlink(path);
}

/* The reader suspends after the `if`, not in its body: its read decided nothing it then acted on
 * while suspended, an order violation. */
TEST(a_reader_suspended_outside_the_checks_body_leaves_an_order_violation)
{
    char path[] = "/tmp/afd_stale_XXXXXX.py";
    write_client(path);
    decided d;
    decide(&d, path, (shape){1, 5, 1});
    CHECK_EQ_INT(d.c.kind, AFD_CAUSE_ORDER_VIOLATION);
    decided_finish(&d);
    unlink(path);
}

/* Without the source (a file that cannot be read), nothing says the read is a check. */
TEST(no_source_leaves_an_order_violation)
{
    decided d;
    decide(&d, "/nonexistent/afd_stale_client.py", (shape){1, 4, 1});
    CHECK_EQ_INT(d.c.kind, AFD_CAUSE_ORDER_VIOLATION);
    decided_finish(&d);
}

int main(void)
{
    RUN_TESTS("cause_stale", T(two_tasks_acting_on_one_check_are_a_check_then_act),
              T(the_writers_act_may_run_only_in_the_passing_run),
              T(a_writer_without_its_own_check_leaves_an_order_violation),
              T(a_reader_suspended_outside_the_checks_body_leaves_an_order_violation),
              T(no_source_leaves_an_order_violation));
}
