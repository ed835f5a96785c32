/* cancel_fixture.h -- what the tests of the cancellation kinds share: a failing and a passing
 * hand-built run, their views, the decision on them, and checks of its rows and operations.
 * Functions are static inline so each test file takes only those it uses. */
#ifndef AFD_TEST_CANCEL_FIXTURE_H
#define AFD_TEST_CANCEL_FIXTURE_H

#include "cause.h"
#include "explain.h"
#include "harness.h"
#include "trace.h"
#include "tracebuild.h"

typedef struct fixture {
    afd_trace tf, tp;
    afd_view f, p;
    int have_p;
    afd_cause_input in;
    afd_cause c;
    afd_evidence ev;
} fixture;

static inline void fixture_init(fixture *x)
{
    memset(x, 0, sizeof *x);
    CHECK_EQ_INT(afd_trace_init(&x->tf), 0);
    CHECK_EQ_INT(afd_trace_init(&x->tp), 0);
    afd_cause_init(&x->c);
    afd_evidence_init(&x->ev);
    x->in.k_fail = x->in.n_fail = 10;
    x->in.k_pass = x->in.n_pass = 10;
    x->in.hist.slow_step_ms = 1e9;
}

static inline void decide(fixture *x)
{
    tb_view(&x->f, &x->tf);
    if (x->have_p)
        tb_view(&x->p, &x->tp);
    x->in.fail = &x->f;
    x->in.pass = x->have_p ? &x->p : NULL;
    CHECK_EQ_INT(afd_cause_decide(&x->in, &x->c, &x->ev), 0);
}

static inline void fixture_finish(fixture *x)
{
    afd_cause_finish(&x->c);
    afd_evidence_finish(&x->ev);
    afd_view_finish(&x->f);
    afd_view_finish(&x->p);
    afd_trace_finish(&x->tf);
    afd_trace_finish(&x->tp);
}

static inline void check_row(const afd_evidence *ev, size_t i, const char *claim, const char *measured,
                             const char *strength)
{
    CHECK(i < ev->n);
    CHECK_EQ_STR(ev->rows[i].claim, claim);
    CHECK_EQ_STR(ev->rows[i].measured, measured);
    CHECK_EQ_STR(ev->rows[i].strength, strength);
}

static inline void check_op(const afd_cause_op *op, afd_cause_access access, const char *task,
                            const char *operation, const char *resource, const char *site)
{
    CHECK_EQ_INT(op->access, access);
    CHECK_EQ_STR(op->task, task);
    CHECK_EQ_STR(op->operation, operation);
    CHECK_EQ_STR(op->resource, resource);
    if (site)
        CHECK_EQ_STR(op->site, site);
    else
        CHECK(op->site == NULL);
}

#endif
