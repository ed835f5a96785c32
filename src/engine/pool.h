/* pool.h -- the engine's workers: one fork server per core, fed run requests over pipes.
 *
 * The pool owns every worker process and every pipe. Results come back in completion order;
 * each carries its run id. A worker that dies is replaced and its run is reported as a crash;
 * when the pool is freed (or the engine is interrupted) every worker is stopped with SIGTERM (its
 * fork server then kills its running child's process group) and reaped before the engine exits. */
#ifndef AFD_ENGINE_POOL_H
#define AFD_ENGINE_POOL_H

#include "proto.h"

#include <stddef.h>
#include <stdint.h>

typedef struct afd_pool afd_pool;

#define AFD_POOL_START_SLACK_MS 10000u

typedef struct afd_pool_opts {
    const char *python; /* The interpreter that runs `-m affidavit.worker` (the pool copies it). */
    const char *nodeid; /* The pool copies it. */
    int workers;
    uint32_t timeout_ms; /* per run */
    uint64_t max_steps;
    uint64_t max_memory_mb; /* per run, above the worker's own; 0: no limit */
    /* How long a worker may take to start and collect the test: its HELLO is awaited at most
     * timeout_ms + AFD_POOL_START_SLACK_MS (the run budget, plus the time Python and pytest take
     * to start on a loaded machine), so that --timeout bounds collection too. */
    const char *import_hint; /* Borrowed, outlives the pool; NULL: a conftest or the test module. */
    const char *cwd;         /* The workers' working directory (NULL: the engine's); the pool copies it. */
    /* Arguments every worker passes to pytest after the node id (--pytest-arg), e.g. "-o",
     * "x=y": the user's command-line configuration. The pool copies them. */
    const char *const *pytest_args;
    int n_pytest_args;
    /* A pool that serves several tests: the workers collect every one of these pytest arguments
     * (node ids, files, directories) once, and each run names its test (afd_pool_set_item).
     * nodeid is then only what messages call the collection. 0: the one test nodeid names. */
    const char *const *collect;
    int n_collect;
} afd_pool_opts;

/* Starts the workers and waits for each one's HELLO. On failure returns a negative code and
 * writes a one-line message (the worker's own, e.g. pytest's "not found") into err. */
int afd_pool_new(afd_pool **out, const afd_pool_opts *opts, char *err, size_t errlen);
void afd_pool_free(afd_pool *self); /* Accepts NULL. Stops and reaps every worker. */
/* The worker's Python and hash seed, from the first HELLO (borrowed, valid until the pool is
 * freed; "" before any worker has greeted). */
const char *afd_pool_python(const afd_pool *self);
const char *afd_pool_hash_seed(const afd_pool *self);
/* The node ids the workers collected, one per line in collection order (borrowed, valid until the
 * pool is freed): the test nodeid names, or every test a pool of opts.collect collected. */
const char *afd_pool_items(const afd_pool *self);
/* The test the runs submitted from now on run (copied; NULL or "": the workers' only test). A
 * node id that is not one of afd_pool_items' is refused with AFD_EINVAL. */
int afd_pool_set_item(afd_pool *self, const char *nodeid);
/* Whether nodeid names a parametrized test ("f[id]") none of whose ids the workers collected while
 * they collected the same function under others: its ids change between processes (an id made
 * from an object's repr carries a memory address). */
int afd_pool_other_ids(const afd_pool *self, const char *nodeid);
int afd_pool_idle(const afd_pool *self);
int afd_pool_busy(const afd_pool *self);
/* Whether one more run of the current test may start now. Copies of one test run side by side only
 * once a run of it has ended and no run of it has touched what another copy would share
 * (AFD_TRACE_SHARED: a file it wrote, a fixed port, a lock, a process; see the runtime's
 * sharing.c), and not while afd_pool_alone is on; otherwise one at a time, as pytest runs a test. */
int afd_pool_may_start(const afd_pool *self);
/* What a finished run of the current test showed: its trace's flags (have: a trace came back). */
void afd_pool_note_run(afd_pool *self, int have, uint32_t trace_flags);
/* on: every run from now on runs with no other run alive (a failure's confirmation); returns the
 * previous setting. */
int afd_pool_alone(afd_pool *self, int on);
/* The most runs of the current test alive at once so far (0 before its first). */
int afd_pool_most_alive(const afd_pool *self);
/* Sends a run to an idle worker (AFD_EFULL when none is idle). token is copied into the frame.
 * The marked form asks the run to measure the slots of the steps with indices [mark_lo, mark_lo +
 * mark_n) (AFD_EINVAL above AFD_PROTO_MAX_MARKS); afd_pool_submit is it with 0, 0. */
int afd_pool_submit_marked(afd_pool *self, uint64_t run_id, uint8_t mode, const char *token, uint64_t mark_lo,
                           uint32_t mark_n);
int afd_pool_submit(afd_pool *self, uint64_t run_id, uint8_t mode, const char *token);
/* Waits for the next result (initialized here; the caller finishes it). Returns 0, or AFD_EINVAL
 * when nothing is in flight, or AFD_EIO when interrupted (afd_interrupted() is then set). */
int afd_pool_next(afd_pool *self, afd_run_result *res);

/* Set by SIGINT/SIGTERM; every wait in the engine checks it. */
extern volatile int afd_interrupted;
void afd_install_signal_handlers(void);

#endif
