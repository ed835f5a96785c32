/* forkserver.c -- the fork server: one warm worker, one forked child per run.
 *
 * The worker imports pytest and collects the test once, then calls serve(): for every RUN request
 * from the engine it forks; the child records into a shared anonymous mapping, runs the test
 * through the Python callback and exits with _exit(); the parent waits on a pidfd with the run's
 * time budget, kills the child's whole process group when the budget is spent or the child is
 * done, turns the mapping into a trace and answers with one RESULT frame.
 *
 * Invariants: a child never writes to the engine's pipe (only the worker does, after the child
 * is gone, so a child killed mid-run cannot corrupt the stream); every child and everything it
 * started is killed before the result is sent; a dying worker takes its child with it
 * (PR_SET_PDEATHSIG), and the worker itself dies with the engine. Workload: a few hundred forks
 * per second per core.
 *
 * Bounds on a run, and what they do not bound:
 * - time: the run's wall-clock budget (a hang), and RLIMIT_CPU one second past it, so a test whose
 *   threads burn CPU faster than the clock runs is stopped too (SIGXCPU: a hang, "cpu limit");
 * - memory: RLIMIT_DATA (private writable memory: the heap, anonymous mappings; not file or shared
 *   mappings, not the trace mapping) set to what the worker held at the fork plus the budget the
 *   engine passes in AFFIDAVIT_MAX_MEMORY_MB, so an allocation past it is a MemoryError in the test.
 *   Relative, so it holds under AddressSanitizer too, whose terabytes of shadow count as data (there
 *   ASan's quarantine of freed blocks counts against the budget, and an allocation past it is a
 *   MemoryError only with ASAN_OPTIONS=allocator_may_return_null=1, as make test-asan sets);
 * - processes: every process the test starts stays in the child's process group unless it leaves
 *   it, and the worker is a child subreaper, so when the run ends the group is killed and then
 *   every process that was orphaned to the worker (those that left the group included) is killed
 *   and reaped. The *number* of processes a run may start is not bounded: RLIMIT_NPROC is per user
 *   and ignored for root, so a fork bomb runs until the run's time budget ends, then dies whole;
 * - core dumps: none (RLIMIT_CORE 0), so a test that crashes costs no disk. */
#include "runtime.h"
#include "proto.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SHM_SIZE (32u << 20)

/* The worker's pid and its current child's, for the SIGTERM handler (the engine's way of stopping
 * a worker, also its PR_SET_PDEATHSIG): the child's process group dies with the worker. */
static volatile sig_atomic_t server_pid, current_child;
/* current_child is a template (below), which stops its own run the same way when told SIGTERM */
static volatile sig_atomic_t current_is_template;
static uint64_t max_memory_mb; /* 0: no memory limit */

static void on_term(int sig)
{
    if (getpid() == server_pid && current_child > 0) {
        if (current_is_template)
            kill((pid_t)current_child, SIGTERM);
        else
            kill(-(pid_t)current_child, SIGKILL);
    }
    _exit(128 + sig);
}

/* The kilobytes of private writable memory this process holds (VmData), or 0 if unknown. */
static uint64_t vm_data_kb(void)
{
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    const char *p = strstr(buf, "\nVmData:");
    return p ? strtoull(p + 9, NULL, 10) : 0;
}

static void set_limit(int resource, rlim_t soft, rlim_t hard)
{
    struct rlimit cur;
    if (getrlimit(resource, &cur) < 0)
        return;
    if (cur.rlim_max != RLIM_INFINITY && hard > cur.rlim_max)
        hard = cur.rlim_max; /* never above what we were given */
    if (soft > hard)
        soft = hard;
    struct rlimit lim = {soft, hard};
    setrlimit(resource, &lim);
}

/* The child's resource limits (see the header comment). */
static void limit_child(const afd_run_req *req)
{
    rlim_t cpu_s = (rlim_t)(req->timeout_ms / 1000u) + 2u; /* the budget rounded up, plus a second */
    set_limit(RLIMIT_CPU, cpu_s, cpu_s + 1);               /* SIGXCPU, then SIGKILL */
    set_limit(RLIMIT_CORE, 0, 0);
    if (max_memory_mb) {
        rlim_t lim = (rlim_t)vm_data_kb() * 1024u + (rlim_t)max_memory_mb * (1u << 20);
        set_limit(RLIMIT_DATA, lim, lim);
    }
}

/* The pids of this process's live children (every thread's), at most max; returns how many. */
static int list_children(pid_t *out, int max)
{
    int n = 0;
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return 0;
    struct dirent *de;
    while ((de = readdir(d)) && n < max) {
        if (de->d_name[0] < '0' || de->d_name[0] > '9')
            continue;
        char path[96];
        snprintf(path, sizeof path, "/proc/self/task/%.20s/children", de->d_name);
        FILE *f = fopen(path, "re");
        if (!f)
            continue;
        long v;
        while (n < max && fscanf(f, "%ld", &v) == 1)
            out[n++] = (pid_t)v;
        fclose(f);
    }
    closedir(d);
    return n;
}

/* After a run: kills the run's process group and every process orphaned to this worker (its
 * subreaper), including those that left the group, and reaps them all. The worker has no other
 * children, so every child of it here is the run's. Bounded: gives up after about two seconds. */
static void sweep_run(pid_t pgid)
{
    for (int round = 0; round < 2000; round++) {
        kill(-pgid, SIGKILL);
        int reaped = 0;
        while (waitpid(-1, NULL, WNOHANG | __WALL) > 0)
            reaped++;
        pid_t kids[256];
        int n = list_children(kids, 256);
        for (int i = 0; i < n; i++) {
            kill(-kids[i], SIGKILL); /* the group it may lead */
            kill(kids[i], SIGKILL);
        }
        int group_gone = kill(-pgid, 0) < 0 && errno == ESRCH;
        if (group_gone && n == 0)
            return;
        if (!reaped) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
    }
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Waits for pid to exit within timeout_ms. Returns 1 if it exited, 0 on timeout. */
static int wait_exit(pid_t pid, int pidfd, uint32_t timeout_ms)
{
    uint64_t deadline = now_ns() + (uint64_t)timeout_ms * 1000000ULL;
    for (;;) {
        uint64_t now = now_ns();
        if (now >= deadline)
            return 0;
        int left = (int)((deadline - now + 999999) / 1000000);
        if (pidfd >= 0) {
            struct pollfd p = {.fd = pidfd, .events = POLLIN};
            int r = poll(&p, 1, left);
            if (r > 0)
                return 1;
            if (r < 0 && errno != EINTR)
                pidfd = -1; /* fall back to polling waitpid */
        } else {
            siginfo_t si;
            memset(&si, 0, sizeof si);
            /* WNOWAIT leaves the child waitable: the caller reaps it and reads its status. */
            if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid)
                return 1;
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
    }
}

/* "; T waits at file:line for Lock@... held by U" for each task blocked at a deadlock (at most 4). */
static void describe_waits(const afd_trace *tr, afd_buf *out)
{
    int shown = 0;
    for (uint32_t i = 0; i < tr->n_events && shown < 4; i++) {
        const afd_event *w = &tr->events[i];
        if (w->kind != AFD_EV_WAITFOR)
            continue;
        uint32_t site = AFD_NOSTR, label = AFD_NOSTR;
        for (uint32_t k = 0; k < i; k++) {
            const afd_event *e = &tr->events[k];
            if (e->kind == AFD_EV_STEP && e->task == w->task)
                site = e->b;
            if (w->a && e->kind == AFD_EV_SYNC && e->a == w->a && label == AFD_NOSTR)
                label = e->b;
        }
        if (site == AFD_NOSTR && !w->a)
            continue; /* a task waiting on nothing we can name (e.g. the one awaiting the others) */
        afd_buf_printf(out, "; %s waits", afd_trace_task_label(tr, w->task));
        if (site != AFD_NOSTR)
            afd_buf_printf(out, " at %s", afd_trace_string(tr, site));
        if (label != AFD_NOSTR)
            afd_buf_printf(out, " for %s", afd_trace_string(tr, label));
        if (w->b)
            afd_buf_printf(out, " held by %s", afd_trace_task_label(tr, w->b));
        shown++;
    }
}

static const char *signal_name(int sig)
{
    switch (sig) {
    case SIGSEGV:
        return "SIGSEGV";
    case SIGABRT:
        return "SIGABRT";
    case SIGBUS:
        return "SIGBUS";
    case SIGFPE:
        return "SIGFPE";
    case SIGILL:
        return "SIGILL";
    case SIGKILL:
        return "SIGKILL";
    case SIGTERM:
        return "SIGTERM";
    case SIGXCPU:
        return "SIGXCPU";
    case SIGXFSZ:
        return "SIGXFSZ";
    default:
        return "a signal";
    }
}

static void child_main(PyObject *run_child, void *shm, const afd_run_req *req, int in_fd, int out_fd)
{
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    signal(SIGTERM, SIG_DFL);
    close(in_fd);
    close(out_fd);
    limit_child(req);
    PyOS_AfterFork_Child();
    afd_loop_fresh_process();
    if (afd_rec_begin(shm, SHM_SIZE, 0) < 0)
        _exit(70);
    afd_schedule s;
    afd_schedule_init(&s);
    uint8_t mode = req->mode & (uint8_t)~AFD_MODE_TRACE_LINES;
    if (mode == AFD_MODE_CONTROLLED && req->token[0] && afd_token_decode(&s, req->token) < 0) {
        static const char msg[] = "internal: the worker received a token it cannot decode";
        afd_rec_result(AFD_OUT_ERROR, msg, sizeof msg - 1);
        _exit(0);
    }
    afd_schedule_finish(&afd_rt_config.schedule);
    afd_rt_config.schedule = s;
    afd_rt_config.mode = mode;
    afd_rt_config.max_steps = req->max_steps;
    afd_rt_config.trace_lines = (req->mode & AFD_MODE_TRACE_LINES) != 0;
    afd_rt_config.mark_lo = req->mark_lo;
    afd_rt_config.mark_n = req->mark_n; /* the decoder bounds it by AFD_PROTO_MAX_MARKS */
    afd_rt_config.configured = 1;
    afd_clock_run_begin();
    if (afd_rt_config.trace_lines)
        afd_rec_flag(AFD_TRACE_LINES);
    PyObject *r = PyObject_CallFunction(run_child, "iss", (int)mode, req->token, req->item);
    if (!r) {
        /* The worker glue itself failed: report it as an error of the run, with its text. */
        PyObject *exc = afd_take_exception();
        PyObject *txt = exc ? PyObject_Str(exc) : NULL;
        const char *u = txt ? PyUnicode_AsUTF8(txt) : NULL;
        afd_buf b;
        afd_buf_init(&b);
        afd_buf_printf(&b, "internal: %s: %s", exc ? Py_TYPE(exc)->tp_name : "error", u ? u : "?");
        afd_rec_result(AFD_OUT_ERROR, b.data ? (const char *)b.data : "internal error", b.len);
        afd_buf_finish(&b);
        Py_XDECREF(txt);
        Py_XDECREF(exc);
    }
    Py_XDECREF(r);
    fflush(NULL);
    _exit(0);
}

static int run_one(PyObject *run_child, void *shm, const afd_run_req *req, int in_fd, int out_fd,
                   const char *python, const char *hash_seed, afd_buf *out)
{
    ((afd_shm_header *)shm)->magic = 0;
    uint64_t t0 = now_ns();
    PyOS_BeforeFork();
    pid_t pid = fork();
    if (pid == 0)
        child_main(run_child, shm, req, in_fd, out_fd); /* never returns */
    if (pid < 0) {
        PyOS_AfterFork_Parent();
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    setpgid(pid, pid); /* also from here, so the group exists before we may need to kill it */
    current_child = pid;
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    int exited;
    Py_BEGIN_ALLOW_THREADS exited = wait_exit(pid, pidfd, req->timeout_ms);
    Py_END_ALLOW_THREADS if (!exited)
    {
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    sweep_run(pid); /* whatever the test left running dies with the run */
    current_child = 0;
    PyOS_AfterFork_Parent();
    if (pidfd >= 0)
        close(pidfd);
    uint64_t wall = now_ns() - t0;

    afd_trace tr;
    if (afd_trace_init(&tr) < 0)
        return -1;
    int rc = afd_rec_to_trace(shm, SHM_SIZE, &tr);
    int have_trace = rc == 0;
    int32_t st32 = WIFEXITED(status) ? WEXITSTATUS(status) : (WIFSIGNALED(status) ? -WTERMSIG(status) : 0);
    afd_buf fail;
    afd_buf_init(&fail);
    uint8_t outcome;
    if (!exited) {
        outcome = AFD_OUT_HANG;
        afd_buf_printf(&fail, "hang: no result within %u ms", req->timeout_ms);
        if (have_trace && tr.n_events) {
            afd_buf_printf(&fail, "; last events:");
            uint32_t from = tr.n_events > 5 ? tr.n_events - 5 : 0;
            for (uint32_t i = from; i < tr.n_events; i++) {
                afd_buf_printf(&fail, "\n  ");
                afd_trace_format_event(&tr, &tr.events[i], &fail);
            }
        }
    } else if (have_trace && ((afd_shm_header *)shm)->result_ready && WIFEXITED(status)) {
        outcome = tr.outcome;
        if (tr.flags & AFD_TRACE_STEP_LIMIT)
            outcome = AFD_OUT_STEP_LIMIT;
        if (tr.flags & AFD_TRACE_DEADLOCK) {
            outcome = AFD_OUT_HANG;
            afd_buf_printf(&fail, "hang: deadlock: %s",
                           tr.flags & AFD_TRACE_UNWOKEN
                               ? "a thread queued a callback with call_soon, not call_soon_threadsafe, "
                                 "and nothing wakes the loop to run it"
                               : "every task is blocked and nothing can wake one");
            describe_waits(&tr, &fail);
        } else {
            afd_buf_put(&fail, tr.failure, tr.failure_len); /* NUL bytes included */
        }
    } else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGXCPU) {
        outcome = AFD_OUT_HANG;
        afd_buf_printf(&fail,
                       "hang: cpu limit: the test process ran out of CPU time and was stopped by SIGXCPU "
                       "(RLIMIT_CPU; a run of a %u ms budget may use %u s)",
                       req->timeout_ms, (unsigned)(req->timeout_ms / 1000u) + 2u);
    } else if (WIFSIGNALED(status)) {
        outcome = AFD_OUT_CRASH;
        afd_buf_printf(&fail, "crash: the test process was killed by %s (signal %d)",
                       signal_name(WTERMSIG(status)), WTERMSIG(status));
    } else {
        outcome = AFD_OUT_CRASH;
        afd_buf_printf(&fail,
                       "crash: the test process exited with status %d before reporting a result "
                       "(os._exit or sys.exit inside the test?)",
                       WEXITSTATUS(status));
    }
    if (!have_trace) {
        afd_trace_finish(&tr);
        afd_trace_init(&tr);
    }
    tr.mode = req->mode & (uint8_t)~AFD_MODE_TRACE_LINES;
    tr.outcome = outcome;
    afd_trace_set_str(&tr, &tr.token, req->token, strlen(req->token));
    afd_trace_set_str(&tr, &tr.python, python, strlen(python));
    afd_trace_set_str(&tr, &tr.hash_seed, hash_seed, strlen(hash_seed));
    if (fail.len > AFD_TRACE_MAX_FAILURE) { /* the trace and the protocol refuse longer text */
        fail.len = AFD_TRACE_MAX_FAILURE;
        fail.data[fail.len] = 0;
    }
    afd_trace_set_str(&tr, &tr.failure, fail.data ? (const char *)fail.data : "", fail.len);
    afd_buf enc;
    afd_buf_init(&enc);
    rc = afd_trace_encode(&tr, &enc);
    afd_run_result res = {
        .run_id = req->run_id,
        .outcome = outcome,
        .status = st32,
        .wall_ns = wall,
        .failure = fail.data ? (char *)fail.data : "",
        .failure_len = fail.len,
        .trace = rc == 0 ? enc.data : NULL,
        .trace_len = rc == 0 ? enc.len : 0,
    };
    afd_proto_put_result(out, &res);
    afd_buf_finish(&enc);
    afd_buf_finish(&fail);
    afd_trace_finish(&tr);
    return out->err ? -1 : 0;
}

/* ---- templates: a test's fixtures made once, its runs forked after them ----
 *
 * A run sets up every fixture of its test itself, as one pytest run does. A test whose fixtures are
 * costly and plain (a mock built with create_autospec, an app object: tens of milliseconds) pays
 * that in every one of its runs, where pytest pays it once. So, for a run request naming a test,
 * the worker forks a template: a process that makes the fixtures a fork copies faithfully (the
 * worker's Python side, templates.py, decides which and checks what making them did), then serves
 * that test's run requests itself, forking each run from there, and hands back to the worker the
 * first request for another test (or the end of the stream). Only one of the two reads the request
 * pipe or writes the result pipe at a time: the worker waits while its template serves. A template
 * that declines (nothing to make, or making it did something a copy would share) or dies leaves
 * the request to the worker, which runs that test's runs as before, and never asks again for it. */

enum { TMPL_PREPARING = 0, TMPL_DECLINED, TMPL_SERVING };
enum { TMPL_HB_NONE = 0, TMPL_HB_FRAME, TMPL_HB_END, TMPL_HB_GONE, TMPL_HB_ERROR, TMPL_HB_LIMIT };

typedef struct tmpl_shared {
    volatile int phase;    /* TMPL_* */
    volatile int handback; /* TMPL_HB_*: how the template ended */
    volatile int pending;  /* buf holds a request read and not answered */
    volatile uint64_t answered;
    volatile size_t len; /* buf's frame: type byte + payload */
    uint8_t buf[];       /* AFD_PROTO_MAX_FRAME bytes (a shared mapping: only what is used is memory) */
} tmpl_shared;

#define TMPL_MAP_SIZE (sizeof(tmpl_shared) + AFD_PROTO_MAX_FRAME)

/* The test of the worker's last request (across serve() calls), "" for its only test. */
static char *last_item;

typedef struct tmpl_declined {
    char **item;
    size_t n;
} tmpl_declined;

static int declined_has(const tmpl_declined *d, const char *item)
{
    for (size_t i = 0; i < d->n; i++)
        if (!strcmp(d->item[i], item))
            return 1;
    return 0;
}

static void declined_add(tmpl_declined *d, const char *item)
{
    char **v = realloc(d->item, (d->n + 1) * sizeof *v);
    if (!v)
        return; /* it is asked again: only a missed saving */
    d->item = v;
    if ((v[d->n] = strdup(item)))
        d->n++;
}

static void declined_finish(tmpl_declined *d)
{
    for (size_t i = 0; i < d->n; i++)
        free(d->item[i]);
    free(d->item);
}

static void keep_frame(tmpl_shared *ts, const afd_buf *frame)
{
    memcpy(ts->buf, frame->data, frame->len);
    ts->len = frame->len;
}

/* The template's life: make the fixtures, then answer run requests for `first`'s test until
 * another's comes. Never returns. */
static void template_main(PyObject *prepare, PyObject *run_child, void *shm, tmpl_shared *ts,
                          afd_run_req *req, long limit, int in_fd, int out_fd, const char *python,
                          const char *hash_seed)
{
    /* SIGTERM: its handler (on_term) takes the running run's whole process group with it */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    PyOS_AfterFork_Child();
    server_pid = getpid();
    current_child = 0;
    current_is_template = 0;
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    PyObject *r = PyObject_CallFunction(prepare, "s", req->item);
    int made = r ? PyObject_IsTrue(r) : -1;
    Py_XDECREF(r);
    if (made != 1) {
        PyErr_Clear();
        ts->phase = TMPL_DECLINED;
        _exit(0);
    }
    ts->phase = TMPL_SERVING;
    char *item = strdup(req->item);
    afd_buf frame, out;
    afd_buf_init(&frame);
    afd_buf_init(&out);
    for (;;) {
        out.len = 0;
        if (!item || run_one(run_child, shm, req, in_fd, out_fd, python, hash_seed, &out) < 0)
            _exit(3); /* pending: the worker answers it */
        if (afd_proto_write_all(out_fd, out.data, out.len) < 0) {
            ts->pending = 0;
            ts->handback = TMPL_HB_GONE;
            _exit(0);
        }
        ts->answered++;
        ts->pending = 0;
        if (limit > 0 && (long)ts->answered >= limit) { /* the worker's serve() ends here */
            ts->handback = TMPL_HB_LIMIT;
            _exit(0);
        }
        uint8_t type = 0;
        int rc = afd_proto_read_frame(in_fd, &frame, &type);
        if (rc == AFD_EOF || (rc == 0 && type == AFD_MSG_QUIT)) {
            ts->handback = TMPL_HB_END;
            _exit(0);
        }
        if (rc < 0 || type != AFD_MSG_RUN || frame.len > AFD_PROTO_MAX_FRAME) {
            ts->handback = TMPL_HB_ERROR;
            _exit(0);
        }
        keep_frame(ts, &frame);
        afd_run_req next;
        if (afd_proto_get_run(&next, frame.data + 1, frame.len - 1) < 0) {
            ts->handback = TMPL_HB_ERROR;
            _exit(0);
        }
        if (strcmp(next.item, item) != 0) {
            afd_run_req_finish(&next);
            ts->handback = TMPL_HB_FRAME;
            _exit(0);
        }
        afd_run_req_finish(req);
        *req = next;
        ts->pending = 1;
    }
}

/* Serves req (framed as `frame`) through a template of its test, for at most limit runs (0: no
 * limit). Returns the runs it answered and sets *next: 0 when the caller must run a request itself
 * (declined, or the template died with one unanswered: frame holds it), 1 when frame holds the
 * next request to serve, 2 at the end of the stream (QUIT or EOF), 3 when the engine is gone, 4
 * when the limit is reached; or -1 with an exception set. */
static long template_serve(PyObject *prepare, PyObject *run_child, void *shm, tmpl_shared *ts,
                           afd_run_req *req, afd_buf *frame, tmpl_declined *declined, long limit, int in_fd,
                           int out_fd, const char *python, const char *hash_seed, int *next)
{
    ts->phase = TMPL_PREPARING;
    ts->handback = TMPL_HB_NONE;
    ts->answered = 0;
    ts->pending = 1;
    keep_frame(ts, frame);
    PyOS_BeforeFork();
    pid_t pid = fork();
    if (pid == 0)
        template_main(prepare, run_child, shm, ts, req, limit, in_fd, out_fd, python, hash_seed);
    PyOS_AfterFork_Parent();
    if (pid < 0) {
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    setpgid(pid, pid);
    current_is_template = 1;
    current_child = pid;
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    uint64_t t0 = now_ns();
    for (;;) { /* making the fixtures has the first run's time budget; serving, each run its own */
        int exited;
        Py_BEGIN_ALLOW_THREADS exited = wait_exit(pid, pidfd, 100);
        Py_END_ALLOW_THREADS if (exited) break;
        if (ts->phase == TMPL_PREPARING && now_ns() - t0 > (uint64_t)req->timeout_ms * 1000000ULL) {
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
        }
    }
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    current_child = 0;
    current_is_template = 0;
    sweep_run(pid);
    if (pidfd >= 0)
        close(pidfd);
    long answered = (long)ts->answered;
    int unanswered = ts->phase != TMPL_SERVING || ts->pending;
    if (ts->handback == TMPL_HB_ERROR && !unanswered) {
        PyErr_SetString(PyExc_RuntimeError, "affidavit worker: unexpected message");
        return -1;
    }
    if (unanswered || ts->handback == TMPL_HB_FRAME) {
        frame->len = 0;
        if (afd_buf_reserve(frame, ts->len) < 0) {
            PyErr_NoMemory();
            return -1;
        }
        memcpy(frame->data, ts->buf, ts->len);
        frame->len = ts->len;
    }
    if (unanswered) { /* declined, or gone with a request of it read: the worker runs it itself */
        declined_add(declined, req->item);
        *next = 0;
        return answered;
    }
    *next = ts->handback == TMPL_HB_FRAME   ? 1
            : ts->handback == TMPL_HB_END   ? 2
            : ts->handback == TMPL_HB_LIMIT ? 4
                                            : 3;
    return answered;
}

/* serve(in_fd, out_fd, run_child, python, hash_seed, max_runs=0, prepare=None): answers RUN
 * requests until QUIT or EOF, or until it has answered max_runs of them (0: no limit). With
 * prepare (a callable taking a node id, true when it made that test's fixtures in the calling
 * process: templates.py), each test's runs go through a template of it. Returns how many it
 * answered (-1: the engine is gone). */
PyObject *afd_rt_serve(PyObject *self, PyObject *args)
{
    int in_fd, out_fd;
    PyObject *run_child, *prepare = Py_None;
    const char *python, *hash_seed;
    long max_runs = 0, runs = 0;
    if (!PyArg_ParseTuple(args, "iiOss|lO", &in_fd, &out_fd, &run_child, &python, &hash_seed, &max_runs,
                          &prepare))
        return NULL;
    void *shm = mmap(NULL, SHM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shm == MAP_FAILED)
        return PyErr_SetFromErrno(PyExc_OSError);
    tmpl_shared *ts = NULL;
    if (prepare != Py_None) {
        void *m = mmap(NULL, TMPL_MAP_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        ts = m == MAP_FAILED ? NULL : m; /* without it, runs as without templates */
    }
    tmpl_declined declined = {0};
    signal(SIGPIPE, SIG_IGN);
    const char *mm = getenv("AFFIDAVIT_MAX_MEMORY_MB");
    max_memory_mb = mm && *mm ? strtoull(mm, NULL, 10) : 0;
    server_pid = getpid();
    current_child = 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
    /* Processes a run orphans come to the worker, which kills them (sweep_run). */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    afd_buf frame, out;
    afd_buf_init(&frame);
    afd_buf_init(&out);
    PyObject *ret = NULL;
    int held = 0;  /* frame holds the next request already (a template handed it back) */
    int plain = 0; /* ... and it is to be run without a template */
    for (;;) {
        if (max_runs > 0 && runs >= max_runs) {
            ret = PyLong_FromLong(runs);
            break;
        }
        uint8_t type = 0;
        int rc = 0;
        if (held) {
            type = frame.len ? frame.data[0] : 0;
            held = 0;
        } else {
            plain = 0;
            Py_BEGIN_ALLOW_THREADS rc = afd_proto_read_frame(in_fd, &frame, &type);
            Py_END_ALLOW_THREADS
        }
        if (rc == AFD_EOF || (rc == 0 && type == AFD_MSG_QUIT)) {
            ret = PyLong_FromLong(runs);
            break;
        }
        if (rc < 0 || type != AFD_MSG_RUN) {
            PyErr_Format(PyExc_RuntimeError, "affidavit worker: %s",
                         rc < 0 ? afd_strerror(rc) : "unexpected message");
            break;
        }
        afd_run_req req;
        rc = afd_proto_get_run(&req, frame.data + 1, frame.len - 1);
        if (rc < 0) {
            PyErr_Format(PyExc_RuntimeError, "affidavit worker: %s", afd_strerror(rc));
            break;
        }
        /* a template from a test's second run on: a test explored in one run (closed) never pays
         * for one */
        int again = last_item && !strcmp(last_item, req.item);
        free(last_item);
        last_item = strdup(req.item);
        if (ts && !plain && again && !declined_has(&declined, req.item)) {
            int next = 0;
            long n =
                template_serve(prepare, run_child, shm, ts, &req, &frame, &declined,
                               max_runs > 0 ? max_runs - runs : 0, in_fd, out_fd, python, hash_seed, &next);
            afd_run_req_finish(&req);
            if (n < 0)
                break;
            runs += n;
            if (next >= 2) {
                ret = PyLong_FromLong(next == 3 ? -1 : runs);
                break;
            }
            held = 1;
            plain = next == 0;
            continue;
        }
        out.len = 0;
        rc = run_one(run_child, shm, &req, in_fd, out_fd, python, hash_seed, &out);
        afd_run_req_finish(&req);
        if (rc < 0) {
            if (!PyErr_Occurred())
                PyErr_NoMemory();
            break;
        }
        int wrc;
        Py_BEGIN_ALLOW_THREADS wrc = afd_proto_write_all(out_fd, out.data, out.len);
        Py_END_ALLOW_THREADS if (wrc < 0)
        { /* the engine is gone: stop quietly */
            ret = PyLong_FromLong(-1);
            break;
        }
        runs++;
    }
    declined_finish(&declined);
    if (ts)
        munmap(ts, TMPL_MAP_SIZE);
    afd_buf_finish(&frame);
    afd_buf_finish(&out);
    munmap(shm, SHM_SIZE);
    return ret;
}

/* send_hello(out_fd, python, hash_seed, error, nodeid): the worker's first message. */
PyObject *afd_rt_send_hello(PyObject *self, PyObject *args)
{
    int fd;
    afd_hello h = {0};
    if (!PyArg_ParseTuple(args, "issss", &fd, &h.python, &h.hash_seed, &h.error, &h.nodeid))
        return NULL;
    h.pid = (int32_t)getpid();
    afd_buf b;
    afd_buf_init(&b);
    afd_proto_put_hello(&b, &h);
    int rc = b.err ? b.err : afd_proto_write_all(fd, b.data, b.len);
    afd_buf_finish(&b);
    if (rc < 0) {
        PyErr_SetString(PyExc_OSError, afd_strerror(rc));
        return NULL;
    }
    Py_RETURN_NONE;
}
