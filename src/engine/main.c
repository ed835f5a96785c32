/* main.c -- the affidavit command line: parse, validate, dispatch.
 *
 * Every usage problem is one line on stderr and exit code 2; nothing is started before the
 * arguments are known to be good. */
#include "cmds.h"
#include "pool.h"
#include "storecmd.h"
#include "sysenum.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "usage: affidavit COMMAND [options]\n"
    "\n"
    "commands:\n"
    "  sample NODEID [-n 50]            natural runs: how often does the test fail?\n"
    "  explore NODEID [--strategy S] [--runs 500] [--seconds S] [--seed N] [--shard K/N]\n"
    "          [--max-delays K] [--prune classes] [--no-closure]\n"
    "                                   controlled schedules until one fails; prints its token;\n"
    "                                   stops early when the zero schedule's measured run proves\n"
    "                                   every schedule runs it (--no-closure: run them all)\n"
    "  sample|explore ARG... [--stdin]  several tests (node ids, files, directories: every test\n"
    "                                   pytest collects from them) on one warm pool, each in turn,\n"
    "                                   then a table (--json: a document per test, a line each;\n"
    "                                   --stdin: the node ids to run are read from standard input,\n"
    "                                   one a line, each answered as it ends)\n"
    "  replay TOKEN NODEID [-n 10] [--events]\n"
    "                                   run one schedule again, n times (--events: print the first\n"
    "                                   run's steps and operations on stderr)\n"
    "  investigate NODEID [--natural 50] [--runs 3000] [--seconds 60] [--replays 10] [--slow-step 100]\n"
    "              [--fix [--allow-src] [--apply] [--verify-runs 200]] [--trace-out FILE]\n"
    "                                   sample, find a failing schedule, replay it, shrink it to the\n"
    "                                   collision window, and name the cause (--fix: propose a fix\n"
    "                                   -- LOCK, LOCK_CALLER, RECHECK, SINGLE_FLIGHT, AWAIT_TASK,\n"
    "                                   DRAIN_TASKS, EVENT_GATE, LOCK_ORDER, OFFLOAD,\n"
    "                                   HANDOFF_AT_WAKEUP or HANDOFF_CLEANUP --\n"
    "                                   gate it against band-aids and verify it in a mirror of the\n"
    "                                   project; the user's files are not written unless --apply,\n"
    "                                   which writes a verified fix only, keeping FILE.orig;\n"
    "                                   --verify-runs: the verification's exploration schedules on\n"
    "                                   each side of the fix, its systematic bound twice that); the\n"
    "                                   incident goes into .affidavit/incidents.db with an HTML\n"
    "                                   report in .affidavit/reports/ (--trace-out: the pipeline's\n"
    "                                   stages and batches as Chrome trace JSON, for Perfetto)\n"
    "  ls [--limit N]                   the stored incidents, newest first\n"
    "  show ID                          one incident: test, verdict, rate, cause, replay command\n"
    "  report ID [--format html|json|sarif|chrome-trace] [--run failing|passing] [-o FILE]\n"
    "                                   an incident's report (chrome-trace: a run for Perfetto)\n"
    "  serve [--port 8765]              a local dashboard of the incidents (127.0.0.1 only;\n"
    "                                   --port 0 picks a free port)\n"
    "  merge FILE...                    fold results CI jobs wrote (pytest --affidavit-explore\n"
    "                                   --affidavit-shard K/N: .affidavit/explore/*.jsonl, or\n"
    "                                   investigate --json documents) into this project's store\n"
    "  check FILE --cls C --method M [--calls 50] [--args EXPR] [--init EXPR] [--state EXPR]\n"
    "        [--invariant EXPR] [investigate's options]\n"
    "                                   races in a class without a test: C() (or --init) gets M called\n"
    "                                   --calls times concurrently (--args: the arguments, an\n"
    "                                   expression of i, the call's index; a tuple for several); the\n"
    "                                   final state (its attributes, or --state, an expression of obj)\n"
    "                                   must be one some serial order of the same calls gives, and\n"
    "                                   --invariant (an expression of obj) must hold. A failure is\n"
    "                                   investigated like a test's (--fix edits FILE's class)\n"
    "  gate DIFF [--allow-src]          check a unified diff (a fix, yours included) against the\n"
    "                                   policy: no sleeps, timeouts, retries, weaker asserts...\n"
    "\n"
    "options (every command):\n"
    "  --json            machine-readable output on stdout\n"
    "  --workers N       parallel workers (default: one per core)\n"
    "  --timeout S       per-run time budget in seconds (default 10); past it a run is a hang\n"
    "                    (a worker's start, collecting the test, may take S + 10 s)\n"
    "  --max-steps N     per-run step limit (default 1000000); a run stopped there is reported as\n"
    "                    'step limit reached', neither a pass nor a failure\n"
    "  --max-memory MB   per-run memory limit above what the worker holds (default 2048;\n"
    "                    RLIMIT_DATA): past it the test gets MemoryError\n"
    "  --python PATH     the interpreter that runs the test (default: beside affidavit, then python3)\n"
    "  --pytest-arg ARG  passed to pytest in every worker, after the node id (repeat it: --pytest-arg=-o\n"
    "                    --pytest-arg=asyncio_mode=auto); pytest's own configuration files apply anyway\n"
    "\n"
    "strategies: zero, jitter, pct, systematic (every schedule with at most --max-delays delays,\n"
    "            default 2), portfolio (default)\n"
    "\n"
    "each run is also limited to its --timeout plus 2 s of CPU (RLIMIT_CPU: reported as a hang,\n"
    "'cpu limit'), and every process it starts is killed when it ends\n"
    "exit codes: 0 no failure, 1 failure, 2 usage error, 3 internal error, 4 abstained,\n"
    "            5 stale schedule (replay: a delayed step of the token never ran in this test),\n"
    "            130 interrupted (SIGINT/SIGTERM: the runs so far are reported and stored)\n";

static int bad(const char *msg, const char *arg)
{
    fprintf(stderr, "affidavit: error: %s%s%s (see affidavit --help)\n", msg, arg ? ": " : "",
            arg ? arg : "");
    return AFD_EXIT_USAGE;
}

static int parse_u64(const char *s, uint64_t *out)
{
    if (!s || !*s || *s == '-')
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10); /* decimal: "010" is ten runs, not eight */
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

static int parse_pos_double(const char *s, double *out)
{
    if (!s || !*s)
        return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || !(v > 0) || v > 1e7)
        return -1;
    *out = v;
    return 0;
}

static int is_identifier(const char *s)
{
    if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_' || (unsigned char)*s >= 0x80))
        return 0;
    for (; *s; s++)
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_' ||
              (unsigned char)*s >= 0x80))
            return 0;
    return 1;
}

/* Which command the options are for: each option is accepted by the commands it applies to. */
typedef struct cmd_kind {
    int sample, explore, replay, investigate, gate, check;
} cmd_kind;

/* The options of argv[2...] into cli, and up to two positional arguments into pos. Returns 0, or
 * the usage error's exit code (bad() printed the line). */
static int parse_options(int argc, char **argv, afd_cli *cli, const cmd_kind *k, const char **pos, int *npos,
                         int max_pos)
{
    /* The --pytest-arg values are gathered, in order, at the front of argv[2...]: the k-th value
     * is found at an index of at least 2 + k, so it only ever overwrites a slot already parsed
     * (what was parsed from it was kept by value), and no allocation is needed. */
    cli->pytest_args = (const char *const *)&argv[2];
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--json")) {
            cli->json = 1;
        } else if ((k->sample || k->explore) && !strcmp(a, "--stdin")) {
            cli->from_stdin = 1;
        } else if (k->replay && !strcmp(a, "--events")) {
            cli->events = 1;
        } else if (k->investigate && !strcmp(a, "--fix")) {
            cli->fix = 1;
        } else if (k->investigate && !strcmp(a, "--apply")) {
            cli->apply = 1;
            cli->fix = 1;
        } else if (k->investigate && !strcmp(a, "--trace-out")) {
            if (!v || !*v)
                return bad("expected a file after", a);
            cli->trace_out = v;
            i++;
        } else if ((k->investigate || k->gate) && !strcmp(a, "--allow-src")) {
            cli->allow_src = 1;
        } else if (!strcmp(a, "-n") || (!strcmp(a, "--runs"))) {
            if (parse_u64(v, &cli->n) < 0 || cli->n == 0)
                return bad("expected a positive number of runs after", a);
            i++;
        } else if (k->investigate &&
                   (!strcmp(a, "--natural") || !strcmp(a, "--replays") || !strcmp(a, "--verify-runs"))) {
            uint64_t *dst = !strcmp(a, "--natural")   ? &cli->natural
                            : !strcmp(a, "--replays") ? &cli->replays
                                                      : &cli->verify_runs;
            if (parse_u64(v, dst) < 0 || *dst == 0 || *dst > 1000000)
                return bad("expected a positive number of runs after", a);
            i++;
        } else if (k->investigate && !strcmp(a, "--slow-step")) {
            if (parse_pos_double(v, &cli->slow_step_ms) < 0)
                return bad("expected a positive number of milliseconds after", a);
            i++;
        } else if (!strcmp(a, "--seconds")) {
            if (!k->explore && !k->investigate)
                return bad("--seconds applies to explore and investigate", NULL);
            if (parse_pos_double(v, &cli->seconds) < 0)
                return bad("expected a positive number of seconds after", a);
            i++;
        } else if (!strcmp(a, "--timeout")) {
            /* at most a million seconds: the budget travels in milliseconds as 32 bits */
            if (parse_pos_double(v, &cli->timeout_s) < 0 || cli->timeout_s > 1e6)
                return bad("expected a positive number of seconds (at most 1000000) after", a);
            i++;
        } else if (!strcmp(a, "--workers")) {
            uint64_t w;
            if (parse_u64(v, &w) < 0 || w == 0 || w > 256)
                return bad("expected a number of workers (1-256) after", a);
            cli->workers = (int)w;
            i++;
        } else if (!strcmp(a, "--max-steps")) {
            if (parse_u64(v, &cli->max_steps) < 0 || cli->max_steps == 0)
                return bad("expected a positive step limit after", a);
            i++;
        } else if (!strcmp(a, "--max-memory")) {
            if (parse_u64(v, &cli->max_memory_mb) < 0 || cli->max_memory_mb == 0 ||
                cli->max_memory_mb > (1u << 30))
                return bad("expected a positive number of megabytes after", a);
            i++;
        } else if (!strcmp(a, "--seed")) {
            if (parse_u64(v, &cli->seed) < 0)
                return bad("expected a non-negative integer seed after", a);
            i++;
        } else if (!strcmp(a, "--shard")) {
            if (!k->explore)
                return bad("--shard applies to explore", NULL);
            unsigned long long sk = 0, sn = 0;
            char tail = 0;
            if (!v || sscanf(v, "%llu/%llu%c", &sk, &sn, &tail) != 2 || sn == 0 || sk == 0 || sk > sn ||
                sn > 100000)
                return bad("expected --shard K/N with 1 <= K <= N, got", v ? v : "nothing");
            cli->shard_k = sk;
            cli->shard_n = sn;
            i++;
        } else if (!strcmp(a, "--max-delays")) {
            uint64_t kd;
            if (!k->explore && !k->investigate)
                return bad("--max-delays applies to explore and investigate", NULL);
            if (parse_u64(v, &kd) < 0 || kd > AFD_SYS_MAX_DELAYS)
                return bad("expected a number of delays (0-4) after", a);
            cli->max_delays = (uint32_t)kd;
            cli->max_delays_set = 1;
            i++;
        } else if (!strcmp(a, "--prune")) {
            if (!k->explore && !k->investigate)
                return bad("--prune applies to explore and investigate", NULL);
            if (!v || strcmp(v, "classes") != 0)
                return bad("expected --prune classes, got", v ? v : "nothing");
            cli->prune_classes = 1;
            i++;
        } else if (!strcmp(a, "--no-closure")) {
            if (!k->explore)
                return bad("--no-closure applies to explore", NULL);
            cli->no_closure = 1;
        } else if (!strcmp(a, "--strategy")) {
            if (!k->explore)
                return bad("--strategy applies to explore", NULL);
            if (!v)
                return bad("expected a strategy after", a);
            cli->strategy = v;
            i++;
        } else if (k->check && (!strcmp(a, "--cls") || !strcmp(a, "--method") || !strcmp(a, "--init") ||
                                !strcmp(a, "--args") || !strcmp(a, "--state") || !strcmp(a, "--invariant"))) {
            const char **dst = !strcmp(a, "--cls")      ? &cli->check_cls
                               : !strcmp(a, "--method") ? &cli->check_method
                               : !strcmp(a, "--init")   ? &cli->check_init
                               : !strcmp(a, "--args")   ? &cli->check_args
                               : !strcmp(a, "--state")  ? &cli->check_state
                                                        : &cli->check_invariant;
            if (!v || !*v)
                return bad("expected a value after", a);
            if ((dst == &cli->check_cls || dst == &cli->check_method) && !is_identifier(v))
                return bad("expected a Python name after", a);
            *dst = v;
            i++;
        } else if (k->check && !strcmp(a, "--calls")) {
            if (parse_u64(v, &cli->check_calls) < 0 || cli->check_calls < 2 || cli->check_calls > 10000)
                return bad("expected a number of concurrent calls (2-10000) after", a);
            i++;
        } else if (!strcmp(a, "--pytest-arg") || !strncmp(a, "--pytest-arg=", 13)) {
            /* any value, one starting with '-' included: it is pytest's option, not ours */
            const char *arg = a[12] == '=' ? a + 13 : v;
            if (!arg || !*arg)
                return bad("expected a pytest argument after", "--pytest-arg");
            i += a[12] != '=';
            argv[2 + cli->n_pytest_args++] = (char *)arg;
        } else if (!strcmp(a, "--python")) {
            if (!v)
                return bad("expected an interpreter path after", a);
            cli->python = v;
            i++;
        } else if (a[0] == '-' && a[1]) {
            return bad("unknown option", a);
        } else {
            if (*npos == max_pos)
                return bad("unexpected argument", a);
            pos[(*npos)++] = a;
        }
    }
    return 0;
}

static int run_command(afd_cli *cli_, const char **pos, int npos, const cmd_kind *kind);

int main(int argc, char **argv)
{
    afd_cli cli = {0};
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    cli.workers = ncpu > 0 ? (int)ncpu : 1;
    cli.timeout_s = 10;
    cli.max_steps = 1000000;
    cli.max_memory_mb = 2048;
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        fputs(usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? AFD_EXIT_USAGE : 0;
    }
    if (!strcmp(argv[1], "--version")) {
        puts("affidavit 0.1.0");
        return 0;
    }
    if (!strcmp(argv[1], "ls") || !strcmp(argv[1], "show") || !strcmp(argv[1], "report") ||
        !strcmp(argv[1], "serve") || !strcmp(argv[1], "merge"))
        return afd_cmd_store(argc, argv);
    cli.cmd = argv[1];
    int is_sample = !strcmp(cli.cmd, "sample"), is_explore = !strcmp(cli.cmd, "explore"),
        is_replay = !strcmp(cli.cmd, "replay"), is_investigate = !strcmp(cli.cmd, "investigate"),
        is_gate = !strcmp(cli.cmd, "gate"), is_check = !strcmp(cli.cmd, "check");
    if (!is_sample && !is_explore && !is_replay && !is_investigate && !is_gate && !is_check)
        return bad("unknown command", cli.cmd);
    if (is_check)
        is_investigate = 1; /* check takes every option investigate takes */
    cli.n = is_sample ? 50 : is_explore ? 500 : is_investigate ? 3000 : 10;
    cli.natural = 50;
    cli.replays = 10;
    cli.verify_runs = AFD_VERIFY_RUNS;
    cli.slow_step_ms = 100;
    cli.check_calls = 50;
    if (is_investigate)
        cli.seconds = 60;
    /* sample and explore take any number of positional arguments; the others one or two */
    const char **pos = calloc((size_t)argc + 1, sizeof *pos);
    if (!pos)
        return AFD_EXIT_INTERNAL;
    int npos = 0;
    cmd_kind k = {is_sample, is_explore, is_replay, is_investigate, is_gate, is_check};
    int prc = parse_options(argc, argv, &cli, &k, pos, &npos, is_sample || is_explore ? argc : 2);
    if (prc) {
        free(pos);
        return prc;
    }
    int rc = run_command(&cli, pos, npos, &k);
    free(pos);
    return rc;
}

/* The positional arguments checked and the command run. */
static int run_command(afd_cli *cli_, const char **pos, int npos, const cmd_kind *kind)
{
    afd_cli cli = *cli_;
    int is_sample = kind->sample, is_explore = kind->explore, is_replay = kind->replay,
        is_investigate = kind->investigate, is_gate = kind->gate, is_check = kind->check;
    if (is_check) {
        if (npos != 1)
            return bad("check needs one file: affidavit check FILE --cls CLASS --method METHOD", NULL);
        if (!cli.check_cls || !cli.check_method)
            return bad(!cli.check_cls ? "check needs --cls CLASS" : "check needs --method METHOD", NULL);
        cli.check_file = pos[0];
        cli.nodeid = pos[0];
    } else if (is_replay) {
        if (npos != 2)
            return bad("replay needs a token and a node id: affidavit replay TOKEN NODEID", NULL);
        cli.token = pos[0];
        cli.nodeid = pos[1];
    } else if (is_sample || is_explore) {
        if (npos < 1)
            return bad(is_sample ? "sample needs a node id: affidavit sample NODEID..."
                                 : "explore needs a node id: affidavit explore NODEID...",
                       NULL);
        for (int i = 0; i < npos; i++)
            if (!pos[i][strspn(pos[i], " \t\r\n")])
                return bad("the node id is empty", NULL);
        /* one pool collects them all: a node id of one test runs as it always has */
        cli.nodeid = pos[0];
        cli.collect = pos;
        cli.n_collect = npos;
    } else {
        if (npos != 1)
            return bad(is_gate ? "gate needs one diff file: affidavit gate DIFF (- reads stdin)"
                               : "investigate needs one node id: affidavit investigate NODEID",
                       NULL);
        cli.nodeid = pos[0];
    }
    /* pytest reads an empty node id as "the current directory": never what was meant */
    if (!is_gate && !cli.nodeid[strspn(cli.nodeid, " \t\r\n")])
        return bad("the node id is empty", NULL);
    if (cli.n > 10000000)
        return bad("too many runs", NULL);
    afd_install_signal_handlers();
    setvbuf(stdout, NULL, _IOFBF, 1 << 16);
    int rc = is_check         ? afd_cmd_check(&cli)
             : is_gate        ? afd_cmd_gate(&cli)
             : cli.collect    ? afd_cmd_many(&cli, is_sample ? afd_cmd_sample : afd_cmd_explore)
             : is_sample      ? afd_cmd_sample(&cli)
             : is_explore     ? afd_cmd_explore(&cli)
             : is_investigate ? afd_cmd_investigate(&cli)
                              : afd_cmd_replay(&cli);
    fflush(stdout);
    return rc;
}
