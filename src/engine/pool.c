/* pool.c -- spawning, feeding and reaping the fork-server workers.
 *
 * Each worker is `python -m affidavit.worker NODEID [PYTEST-ARGS...]` (the arguments given with
 * --pytest-arg, for the user's pytest configuration), started in its own process group with
 * PR_SET_PDEATHSIG (SIGTERM, which its fork server answers by killing its running test's process
 * group) so that neither it nor its test can outlive the engine, with PYTHONHASHSEED fixed so that
 * every worker (and so every replay) hashes strings alike, and with the per-run memory budget in
 * AFFIDAVIT_MAX_MEMORY_MB. The engine polls all result pipes at
 * once and reassembles frames incrementally. Workload: hundreds of results per second. */
#include "pool.h"
#include "afd.h"
#include "trace.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

volatile int afd_interrupted;

static void on_signal(int sig)
{
    afd_interrupted = sig;
}

void afd_install_signal_handlers(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal; /* no SA_RESTART: poll() must return EINTR */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    /* A file size limit (RLIMIT_FSIZE) must make a write fail with EFBIG, reported like a full
     * disk, not kill the engine. */
    signal(SIGXFSZ, SIG_IGN);
}

typedef struct worker {
    pid_t pid;
    int req_fd; /* write end of the worker's stdin */
    int res_fd; /* read end of the worker's stdout */
    int log_fd; /* the worker's stderr, for a message if it dies before HELLO */
    afd_framer framer;
    int busy;
    uint64_t run_id;
    uint64_t deadline_ns; /* engine-side guard in case the worker itself stops answering */
} worker;

struct afd_pool {
    afd_pool_opts opts; /* its strings point into owned_strings: a worker is respawned long after
                           the caller's copies are gone */
    char *owned_strings[3];
    /* The worker's command line: python -m affidavit.worker NODEID [PYTEST-ARGS...], NULL-ended.
     * Owned array; its strings are owned_strings and copies of opts.pytest_args (argv_owned). */
    char **argv;
    int argv_owned_from;      /* argv[argv_owned_from ...] are owned copies */
    worker *w;                /* Owned array of opts.workers. */
    char *python, *hash_seed; /* Owned, from the first HELLO. */
    char *items;              /* Owned, from the first HELLO: the collected node ids, one per line. */
    char *item;               /* Owned: the test runs are submitted for ("": the only one). */
    /* Of the current test: runs that ended with a trace that touched nothing shared, whether one
     * touched something shared, and whether runs must run alone (afd_pool_may_start). */
    uint64_t private_runs;
    int shared_seen, alone, most_alive;
};

static uint64_t afd_runs_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int spawn(afd_pool *self, worker *w)
{
    int in[2], out[2];
    memset(w, 0, sizeof *w);
    w->req_fd = w->res_fd = w->log_fd = -1;
    afd_framer_init(&w->framer);
    if (pipe2(in, O_CLOEXEC) < 0)
        return AFD_EIO;
    if (pipe2(out, O_CLOEXEC) < 0) {
        close(in[0]);
        close(in[1]);
        return AFD_EIO;
    }
    char tmpl[] = "/tmp/affidavit-worker-XXXXXX";
    int log = mkstemp(tmpl);
    if (log >= 0)
        unlink(tmpl);
    pid_t engine = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        /* SIGTERM, not SIGKILL: the fork server's handler kills its running child's process group
         * before it exits, so a dying engine leaves no test process behind either. */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != engine)
            _exit(127);
        signal(SIGPIPE, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        if (self->opts.cwd && chdir(self->opts.cwd) < 0)
            _exit(127);
        dup2(in[0], 0);
        dup2(out[1], 1);
        if (log >= 0)
            dup2(log, 2);
        if (!getenv("PYTHONHASHSEED"))
            setenv("PYTHONHASHSEED", "0", 1);
        setenv("PYTHONDONTWRITEBYTECODE", "1", 0);
        /* read by the fork server (forkserver.c), which limits each child's memory with it */
        char mb[32];
        snprintf(mb, sizeof mb, "%llu", (unsigned long long)self->opts.max_memory_mb);
        setenv("AFFIDAVIT_MAX_MEMORY_MB", mb, 1);
        /* the worker's memory on huge pages (src/runtime/hugeheap.c); =0 in the engine's
         * environment turns that off, for comparison (make bench) */
        setenv("AFFIDAVIT_WORKER_HEAP", "1", 0);
        execvp(self->argv[0], self->argv);
        fprintf(stderr, "cannot run %s: %s\n", self->opts.python, strerror(errno));
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    if (pid < 0) {
        close(in[1]);
        close(out[0]);
        if (log >= 0)
            close(log);
        return AFD_EIO;
    }
    w->pid = pid;
    w->req_fd = in[1];
    w->res_fd = out[0];
    /* pump() reads until the pipe is empty: a read that filled its buffer is followed by another,
     * which must say EAGAIN, not block, when the worker's message ended exactly there (a blocking
     * read then waited for a result the worker had already sent: an explore of 3.10's
     * test_waitfor hung so). Only this end: the worker's writes stay blocking. */
    int fl = fcntl(w->res_fd, F_GETFL);
    if (fl < 0 || fcntl(w->res_fd, F_SETFL, fl | O_NONBLOCK) < 0) {
        w->log_fd = log;
        return AFD_EIO;
    }
    w->log_fd = log;
    return 0;
}

static void reap(worker *w, int graceful)
{
    if (w->pid > 0) {
        if (graceful && w->req_fd >= 0) {
            afd_buf b;
            afd_buf_init(&b);
            afd_proto_put_quit(&b);
            afd_proto_write_all(w->req_fd, b.data, b.len);
            afd_buf_finish(&b);
        }
        /* SIGTERM first: the fork server kills the run in flight, with everything it started, and
         * exits; a worker that does not within a second (still collecting, or stuck) is killed. */
        kill(w->pid, SIGTERM);
        int gone = 0;
        for (int i = 0; i < 1000 && !gone; i++) {
            pid_t r = waitpid(w->pid, NULL, WNOHANG);
            gone = r == w->pid || (r < 0 && errno != EINTR);
            if (!gone) {
                struct timespec ts = {0, 1000000};
                nanosleep(&ts, NULL);
            }
        }
        kill(-w->pid, SIGKILL);
        if (!gone) {
            kill(w->pid, SIGKILL);
            while (waitpid(w->pid, NULL, 0) < 0 && errno == EINTR)
                ;
        }
        w->pid = 0;
    }
    if (w->req_fd >= 0)
        close(w->req_fd);
    if (w->res_fd >= 0)
        close(w->res_fd);
    if (w->log_fd >= 0)
        close(w->log_fd);
    w->req_fd = w->res_fd = w->log_fd = -1;
    afd_framer_finish(&w->framer);
}

/* The last non-empty line the worker wrote to stderr. */
static void last_log_line(worker *w, char *err, size_t errlen)
{
    if (w->log_fd < 0 || errlen == 0)
        return;
    char buf[8192];
    off_t end = lseek(w->log_fd, 0, SEEK_END);
    off_t start = end > (off_t)sizeof buf - 1 ? end - (off_t)sizeof buf + 1 : 0;
    ssize_t n = pread(w->log_fd, buf, sizeof buf - 1, start);
    if (n <= 0)
        return;
    buf[n] = 0;
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' ' || buf[n - 1] == '\r'))
        buf[--n] = 0;
    char *line = strrchr(buf, '\n');
    line = line ? line + 1 : buf;
    if (*line)
        snprintf(err, errlen, "%s", line);
}

/* Reads what is available on w's result pipe into its framer. Returns 0, or AFD_EOF when the
 * worker has closed it (it died). */
static int pump(worker *w)
{
    uint8_t buf[65536];
    for (;;) {
        ssize_t n = read(w->res_fd, buf, sizeof buf);
        if (n > 0) {
            if (afd_framer_feed(&w->framer, buf, (size_t)n) < 0)
                return AFD_ENOMEM;
            if ((size_t)n < sizeof buf)
                return 0;
            continue;
        }
        if (n == 0)
            return AFD_EOF;
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN)
            return 0;
        return AFD_EIO;
    }
}

/* The exit code a worker that cannot serve its test ends with after its HELLO, when the reason is
 * the user's request (worker.py: no test matches the node id, it names several, pytest refuses the
 * arguments); any other reason (a conftest failing to import, pytest crashing) is not a usage
 * error. */
#define AFD_WORKER_EXIT_USAGE 2

/* The exit code of w, which has sent a failing HELLO and is exiting: waited for at most a second
 * (-1 if it has not exited by then; it is then killed with the pool). */
static int worker_exit_status(worker *w)
{
    for (int i = 0; i < 1000; i++) {
        int status = 0;
        pid_t r = waitpid(w->pid, &status, WNOHANG);
        if (r == w->pid) {
            w->pid = 0;
            return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        }
        if (r < 0 && errno != EINTR)
            return -1;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    return -1;
}

/* Waits until w's HELLO arrives. A failing HELLO returns AFD_EINVAL for a usage error and
 * AFD_EPROTO otherwise; a worker that dies first, AFD_EIO if its interpreter could not be run and
 * AFD_EPROTO otherwise; a timeout, AFD_EIO. */
static int await_hello(afd_pool *self, worker *w, char *err, size_t errlen)
{
    uint64_t limit_ms = (uint64_t)self->opts.timeout_ms + AFD_POOL_START_SLACK_MS;
    uint64_t deadline = afd_runs_now_ns() + limit_ms * 1000000ULL;
    for (;;) {
        uint8_t type;
        const uint8_t *payload;
        size_t len;
        int r = afd_framer_next(&w->framer, &type, &payload, &len);
        if (r < 0 || (r == 1 && type != AFD_MSG_HELLO)) {
            snprintf(err, errlen, "the worker sent a malformed greeting");
            return AFD_EPROTO;
        }
        if (r == 1) {
            afd_hello h;
            int rc = afd_proto_get_hello(&h, payload, len);
            if (rc < 0) {
                snprintf(err, errlen, "the worker sent a malformed greeting");
                return rc;
            }
            if (h.error[0]) {
                snprintf(err, errlen, "%s", h.error);
                afd_hello_finish(&h);
                return worker_exit_status(w) == AFD_WORKER_EXIT_USAGE ? AFD_EINVAL : AFD_EPROTO;
            }
            if (!self->python) {
                self->python = strdup(h.python);
                self->hash_seed = strdup(h.hash_seed);
                self->items = strdup(h.nodeid);
            }
            afd_hello_finish(&h);
            return 0;
        }
        uint64_t now = afd_runs_now_ns();
        if (afd_interrupted) {
            snprintf(err, errlen, "interrupted");
            return AFD_EIO;
        }
        if (now >= deadline) {
            snprintf(err, errlen,
                     "collecting %s took longer than %g s (--timeout %g s plus %u s for Python and "
                     "pytest to start): does %s block at import?",
                     self->opts.nodeid, (double)limit_ms / 1000.0, self->opts.timeout_ms / 1000.0,
                     AFD_POOL_START_SLACK_MS / 1000u,
                     self->opts.import_hint ? self->opts.import_hint : "a conftest or the test module");
            return AFD_EIO;
        }
        struct pollfd p = {.fd = w->res_fd, .events = POLLIN};
        int pr = poll(&p, 1, (int)((deadline - now) / 1000000ULL) + 1);
        if (pr < 0 && errno != EINTR)
            return AFD_EIO;
        if (pr > 0 && pump(w) == AFD_EOF) {
            /* Died before greeting: whatever it printed last is the best message there is. */
            err[0] = 0;
            int status = 0;
            while (waitpid(w->pid, &status, 0) < 0 && errno == EINTR)
                ;
            w->pid = 0;
            last_log_line(w, err, errlen);
            if (!err[0])
                snprintf(err, errlen, "the worker (%s -m affidavit.worker) exited before it was ready",
                         self->opts.python);
            /* 127: the interpreter could not be run (a wrong --python), which the user can fix by
             * the arguments; any other death (a crash, a conftest calling os._exit) is not theirs. */
            return WIFEXITED(status) && WEXITSTATUS(status) == 127 ? AFD_EIO : AFD_EPROTO;
        }
    }
}

int afd_pool_new(afd_pool **out, const afd_pool_opts *opts, char *err, size_t errlen)
{
    *out = NULL;
    afd_pool *self = calloc(1, sizeof *self);
    if (!self)
        return AFD_ENOMEM;
    self->opts = *opts;
    int rc = AFD_ENOMEM;
    const char **strs[3] = {&self->opts.python, &self->opts.nodeid, &self->opts.cwd};
    for (int i = 0; i < 3; i++) {
        if (!*strs[i])
            continue;
        if (!(self->owned_strings[i] = strdup(*strs[i])))
            goto fail;
        *strs[i] = self->owned_strings[i];
    }
    /* the pytest arguments are the caller's: copied, and the copies are not kept in opts */
    int nargs = self->opts.n_pytest_args > 0 ? self->opts.n_pytest_args : 0;
    self->opts.pytest_args = NULL;
    /* python -m affidavit.worker NODEID ARGS..., or --many N COLLECT... ARGS... */
    int ncollect = self->opts.n_collect > 0 ? self->opts.n_collect : 0;
    self->opts.collect = NULL;
    self->argv = calloc((size_t)nargs + (size_t)ncollect + 7, sizeof *self->argv);
    if (!self->argv)
        goto fail;
    self->argv[0] = (char *)self->opts.python;
    self->argv[1] = (char *)"-m";
    self->argv[2] = (char *)"affidavit.worker";
    int at = 3;
    if (ncollect) {
        self->argv[at++] = (char *)"--many";
        self->argv_owned_from = at;
        char n[16];
        snprintf(n, sizeof n, "%d", ncollect);
        if (!(self->argv[at++] = strdup(n)))
            goto fail;
        for (int i = 0; i < ncollect; i++)
            if (!(self->argv[at++] = strdup(opts->collect[i])))
                goto fail;
    } else {
        self->argv[at++] = (char *)self->opts.nodeid;
        self->argv_owned_from = at;
    }
    for (int i = 0; i < nargs; i++)
        if (!(self->argv[at++] = strdup(opts->pytest_args[i])))
            goto fail;
    if (self->opts.workers < 1)
        self->opts.workers = 1;
    self->w = calloc((size_t)self->opts.workers, sizeof *self->w);
    if (!self->w)
        goto fail;
    for (int i = 0; i < self->opts.workers; i++)
        self->w[i].req_fd = self->w[i].res_fd = self->w[i].log_fd = -1;
    /* Start one worker and wait for it first: a bad node id is then reported once, quickly. */
    rc = spawn(self, &self->w[0]);
    if (rc == 0)
        rc = await_hello(self, &self->w[0], err, errlen);
    for (int i = 1; rc == 0 && i < self->opts.workers; i++)
        rc = spawn(self, &self->w[i]);
    for (int i = 1; rc == 0 && i < self->opts.workers; i++)
        rc = await_hello(self, &self->w[i], err, errlen);
    if (rc < 0)
        goto fail;
    *out = self;
    return 0;
fail:
    if (!err[0])
        snprintf(err, errlen, "%s", afd_strerror(rc));
    afd_pool_free(self);
    return rc;
}

void afd_pool_free(afd_pool *self)
{
    if (!self)
        return;
    for (int i = 0; self->w && i < self->opts.workers; i++)
        reap(&self->w[i], 1);
    free(self->w);
    if (self->argv)
        for (int i = self->argv_owned_from; self->argv[i]; i++)
            free(self->argv[i]);
    free(self->argv);
    for (int i = 0; i < 3; i++)
        free(self->owned_strings[i]);
    free(self->python);
    free(self->hash_seed);
    free(self->items);
    free(self->item);
    free(self);
}

const char *afd_pool_items(const afd_pool *self)
{
    return self->items ? self->items : "";
}

int afd_pool_set_item(afd_pool *self, const char *nodeid)
{
    if (!nodeid)
        nodeid = "";
    size_t n = strlen(nodeid);
    if (n) {
        const char *p = self->items ? self->items : "";
        int found = 0;
        while (!found && *p) {
            const char *nl = strchr(p, '\n');
            size_t len = nl ? (size_t)(nl - p) : strlen(p);
            found = len == n && !memcmp(p, nodeid, n);
            p += len + (nl != NULL);
        }
        if (!found)
            return AFD_EINVAL;
    }
    if (self->item && !strcmp(self->item, nodeid))
        return 0;
    char *copy = strdup(nodeid);
    if (!copy)
        return AFD_ENOMEM;
    free(self->item);
    self->item = copy;
    self->private_runs = 0;
    self->shared_seen = 0;
    self->most_alive = 0;
    return 0;
}

int afd_pool_other_ids(const afd_pool *self, const char *nodeid)
{
    const char *bracket = nodeid ? strchr(nodeid, '[') : NULL;
    if (!bracket || !self->items)
        return 0;
    size_t base = (size_t)(bracket - nodeid) + 1; /* "path::f[" */
    for (const char *p = self->items; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (len > base && !memcmp(p, nodeid, base))
            return 1;
        p += len + (nl != NULL);
    }
    return 0;
}

int afd_pool_most_alive(const afd_pool *self)
{
    return self->most_alive;
}

int afd_pool_may_start(const afd_pool *self)
{
    if (afd_pool_idle(self) <= 0)
        return 0;
    return afd_pool_busy(self) == 0 || (!self->alone && !self->shared_seen && self->private_runs > 0);
}

void afd_pool_note_run(afd_pool *self, int have, uint32_t trace_flags)
{
    if (have && (trace_flags & AFD_TRACE_SHARED))
        self->shared_seen = 1;
    else if (have)
        self->private_runs++;
}

int afd_pool_alone(afd_pool *self, int on)
{
    int was = self->alone;
    self->alone = on;
    return was;
}

const char *afd_pool_python(const afd_pool *self)
{
    return self->python ? self->python : "";
}
const char *afd_pool_hash_seed(const afd_pool *self)
{
    return self->hash_seed ? self->hash_seed : "";
}

int afd_pool_idle(const afd_pool *self)
{
    int n = 0;
    for (int i = 0; i < self->opts.workers; i++)
        n += self->w[i].pid > 0 && !self->w[i].busy;
    return n;
}

int afd_pool_busy(const afd_pool *self)
{
    int n = 0;
    for (int i = 0; i < self->opts.workers; i++)
        n += self->w[i].busy;
    return n;
}

int afd_pool_submit(afd_pool *self, uint64_t run_id, uint8_t mode, const char *token)
{
    return afd_pool_submit_marked(self, run_id, mode, token, 0, 0);
}

int afd_pool_submit_marked(afd_pool *self, uint64_t run_id, uint8_t mode, const char *token, uint64_t mark_lo,
                           uint32_t mark_n)
{
    if (mark_n > AFD_PROTO_MAX_MARKS)
        return AFD_EINVAL;
    for (int i = 0; i < self->opts.workers; i++) {
        worker *w = &self->w[i];
        if (w->pid <= 0 || w->busy)
            continue;
        afd_run_req req = {
            .run_id = run_id,
            .mode = mode,
            .timeout_ms = self->opts.timeout_ms,
            .max_steps = self->opts.max_steps,
            .token = (char *)token,
            .mark_lo = mark_lo,
            .mark_n = mark_n,
            .item = self->item,
        };
        afd_buf b;
        afd_buf_init(&b);
        afd_proto_put_run(&b, &req);
        int rc = b.err ? b.err : afd_proto_write_all(w->req_fd, b.data, b.len);
        afd_buf_finish(&b);
        w->busy = 1;
        w->run_id = run_id;
        if (afd_pool_busy(self) > self->most_alive)
            self->most_alive = afd_pool_busy(self);
        w->deadline_ns = afd_runs_now_ns() + ((uint64_t)self->opts.timeout_ms + 30000ULL) * 1000000ULL;
        /* A failed write means the worker died; afd_pool_next will see its EOF and report it. */
        (void)rc;
        return 0;
    }
    return AFD_EFULL;
}

/* A result for a run whose worker died or stopped answering; the worker is replaced. */
static int worker_lost(afd_pool *self, worker *w, afd_run_result *res, const char *why)
{
    char msg[600];
    char last[400] = "";
    last_log_line(w, last, sizeof last);
    snprintf(msg, sizeof msg, "crash: the worker %s%s%s", why, last[0] ? ": " : "", last);
    memset(res, 0, sizeof *res);
    res->run_id = w->run_id;
    res->outcome = AFD_OUT_CRASH;
    res->status = -1;
    res->failure = strdup(msg);
    res->failure_len = res->failure ? strlen(res->failure) : 0;
    reap(w, 0);
    char err[256] = "";
    if (spawn(self, w) == 0 && await_hello(self, w, err, sizeof err) < 0)
        reap(w, 0);
    return res->failure ? 0 : AFD_ENOMEM;
}

int afd_pool_next(afd_pool *self, afd_run_result *res)
{
    memset(res, 0, sizeof *res);
    for (;;) {
        if (afd_interrupted)
            return AFD_EIO;
        int nfds = 0;
        struct pollfd pfd[256];
        int idx[256];
        uint64_t now = afd_runs_now_ns();
        for (int i = 0; i < self->opts.workers && nfds < 256; i++) {
            worker *w = &self->w[i];
            if (!w->busy)
                continue;
            uint8_t type;
            const uint8_t *payload;
            size_t len;
            int r = afd_framer_next(&w->framer, &type, &payload, &len);
            if (r == 1 && type == AFD_MSG_RESULT) {
                int rc = afd_proto_get_result(res, payload, len);
                w->busy = 0;
                if (rc < 0)
                    return worker_lost(self, w, res, "sent a malformed result");
                return 0;
            }
            if (r != 0)
                return worker_lost(self, w, res, "sent a malformed frame");
            if (now > w->deadline_ns) {
                w->busy = 0;
                return worker_lost(self, w, res, "stopped answering");
            }
            pfd[nfds].fd = w->res_fd;
            pfd[nfds].events = POLLIN;
            idx[nfds++] = i;
        }
        if (nfds == 0)
            return AFD_EINVAL;
        int pr = poll(pfd, (nfds_t)nfds, 1000);
        if (pr < 0) {
            if (errno == EINTR)
                continue;
            return AFD_EIO;
        }
        for (int k = 0; k < nfds; k++) {
            if (!(pfd[k].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            worker *w = &self->w[idx[k]];
            int rc = pump(w);
            if (rc == AFD_EOF) {
                /* A complete result may still sit in the framer; only then is the loss real. */
                uint8_t type;
                const uint8_t *payload;
                size_t len;
                if (afd_framer_next(&w->framer, &type, &payload, &len) == 1 && type == AFD_MSG_RESULT) {
                    int r2 = afd_proto_get_result(res, payload, len);
                    w->busy = 0;
                    reap(w, 0);
                    char err[256] = "";
                    if (spawn(self, w) == 0 && await_hello(self, w, err, sizeof err) < 0)
                        reap(w, 0);
                    return r2;
                }
                w->busy = 0;
                return worker_lost(self, w, res, "died");
            }
        }
    }
}
