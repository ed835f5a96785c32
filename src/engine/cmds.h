/* cmds.h -- the engine's commands: sample, explore, replay. */
#ifndef AFD_ENGINE_CMDS_H
#define AFD_ENGINE_CMDS_H

#include <stddef.h>
#include <stdint.h>

/* Exit codes (DESIGN.md). */
enum {
    AFD_EXIT_CLEAN = 0,   /* no failure found within the budget */
    AFD_EXIT_FAILURE = 1, /* a failure was seen / reproduced */
    AFD_EXIT_USAGE = 2,   /* bad arguments or a test that cannot be run */
    AFD_EXIT_INTERNAL = 3,
    AFD_EXIT_ABSTAIN = 4,      /* a failure was seen but could not be controlled */
    AFD_EXIT_STALE = 5,        /* replay: the token's delayed steps never ran in this test */
    AFD_EXIT_INTERRUPTED = 130 /* SIGINT or SIGTERM: the runs so far are reported (and stored) */
};

/* The default of investigate --verify-runs: the verification's exploration tier runs this many
 * schedules on each side of the fix (before and after), and its systematic tier at most twice as many. */
#define AFD_VERIFY_RUNS 200

typedef struct afd_cli {
    const char *cmd;
    const char *nodeid;
    const char *token;
    const char *python;
    const char *strategy; /* NULL: portfolio */
    uint32_t max_delays;  /* --max-delays K: the systematic search's bound (when max_delays_set) */
    int max_delays_set;
    int prune_classes; /* --prune classes: the systematic search's heuristic class pruning */
    int no_closure;    /* --no-closure: explore runs every run asked for, even once closure.h proved
                          that every schedule runs the zero schedule's run */
    int json;
    int workers;
    uint64_t n;       /* sample/replay runs, explore max runs */
    double seconds;   /* explore time budget (0: none) */
    double timeout_s; /* per-run time budget */
    uint64_t max_steps;
    uint64_t max_memory_mb; /* per-run memory limit above the worker's own (RLIMIT_DATA) */
    uint64_t seed;
    uint64_t shard_k, shard_n; /* explore --shard K/N: portfolio schedules k-1, k-1+N, ... (n 0: all) */
    uint64_t natural;          /* investigate: natural runs (default 50) */
    uint64_t replays;          /* investigate: replays of each token (default 10) */
    uint64_t verify_runs;      /* investigate --fix: the exploration tier's schedules on each side of the
                                  fix (default AFD_VERIFY_RUNS); the systematic tier's bound is twice that */
    double slow_step_ms;       /* investigate: a step this long is slow (default 100) */
    int events;                /* replay: print the first run's events on stderr */
    int fix;                   /* investigate: propose a fix and run the policy gate on it */
    int allow_src;             /* investigate --fix: edits outside test files pass the gate */
    int apply;                 /* investigate --fix --apply: write a verified fix, keeping FILE.orig */
    const char *trace_out;     /* investigate --trace-out FILE: the pipeline's spans (borrowed from argv) */
    /* check FILE --cls C --method M: the target, and the Python expressions given (NULL: none) */
    const char *check_file, *check_cls, *check_method;
    const char *check_init, *check_args, *check_state, *check_invariant;
    uint64_t check_calls;
    /* --pytest-arg ARG, repeatable: passed to the workers' pytest after the node id (borrowed
     * from argv, in order) */
    const char *const *pytest_args;
    int n_pytest_args;
    /* explore/sample of several tests (many.c): the pytest arguments given (node ids, files,
     * directories: borrowed from argv), which one pool collects once; --stdin: the node ids to run
     * are read from standard input, one per line, each answered on stdout as it ends */
    const char *const *collect;
    int n_collect;
    int from_stdin;
    /* The pool a command runs on instead of starting its own (borrowed; many.c's), and where it
     * leaves what a summary of several tests shows (borrowed; NULL: nowhere). */
    struct afd_pool *pool;
    struct afd_item_summary *summary;
} afd_cli;

/* One test's result, for the table that ends a run over several tests. */
typedef struct afd_item_summary {
    uint64_t runs, failed;
    int timing_sensitive; /* explore: the failing schedule needs the test to outlast its own timeout */
    int closed;           /* explore: every schedule runs the zero schedule's run (closure.h) */
    int thread;           /* explore, abstained: the failure needs a thread's progress (else unconfirmed) */
    int not_explorable;   /* its runs ran no loop affidavit controls (none, or the test's own) */
} afd_item_summary;

int afd_cmd_sample(const afd_cli *cli);
int afd_cmd_explore(const afd_cli *cli);
/* sample or explore (cmd) over every test cli->collect collects, or the node ids --stdin names,
 * on one pool (many.c). */
int afd_cmd_many(const afd_cli *cli, int (*cmd)(const afd_cli *));
int afd_cmd_replay(const afd_cli *cli);
int afd_cmd_investigate(const afd_cli *cli);
int afd_cmd_gate(const afd_cli *cli);
/* A source file's text, NUL-terminated (*len excludes it); NULL when unreadable or larger than
 * pyscan accepts. Free with free(). */
char *afd_read_source_file(const char *path, size_t *len);
/* check: validates the target from its source, writes the harness test and investigates it. */
int afd_cmd_check(const afd_cli *cli); /* cli->nodeid holds the DIFF path ("-": stdin) */

#endif
