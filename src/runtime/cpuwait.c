/* cpuwait.c -- how long the loop's thread waited for a CPU during a step. A step's wall time less
 * that wait is what the program took (computing, or blocked in a call); the rest is what a loaded
 * machine added, and a step is not slow, nor a natural run's step a blocking one, because the
 * machine was busy (a golden of investigate gained "a blocking call or slow step" from a 320 ms
 * step of a 20-step lost update run beside the rest of the suite).
 *
 * Linux: the second field of /proc/thread-self/schedstat, the nanoseconds the thread spent runnable
 * on a run queue. A read costs microseconds, so it is taken at a step's start only when a
 * millisecond has passed since the last one, and at the end of a step of a millisecond or more:
 * the wait charged to such a step may include under a millisecond from before it began, a cost of
 * at most one read a millisecond. Elsewhere, or when the file cannot be read, no wait is known. */
#include "runtime.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/syscall.h>
#endif

#define CPUWAIT_EVERY_NS 1000000ULL

typedef struct cpuwait {
    int fd;           /* the thread's schedstat, or -1 */
    long tid;         /* the thread fd was opened for (a forked run has another) */
    int have;         /* last_rq is known */
    uint64_t last_rq; /* the run-queue wait at the last read */
    uint64_t last_ns; /* the monotonic time of the last read */
} cpuwait;

static _Thread_local cpuwait cw = {.fd = -1};

/* The thread's total run-queue wait in *out; -1 when it cannot be read. */
static int read_wait(uint64_t *out)
{
#if defined(__linux__) && defined(SYS_gettid)
    long tid = syscall(SYS_gettid);
    if (cw.fd >= 0 && cw.tid != tid) { /* a forked child: the descriptor names its parent's thread */
        close(cw.fd);
        cw.fd = -1;
        cw.have = 0;
    }
    if (cw.fd < 0) {
        cw.fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
        cw.tid = tid;
        if (cw.fd < 0)
            return -1;
    }
    char buf[96];
    ssize_t n = pread(cw.fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return -1;
    buf[n] = 0;
    char *end;
    (void)strtoull(buf, &end, 10); /* time on a CPU */
    if (end == buf)
        return -1;
    char *rest = end;
    *out = strtoull(rest, &end, 10); /* time waiting for one */
    return end == rest ? -1 : 0;
#else
    (void)out;
    return -1;
#endif
}

void afd_cpuwait_step_begin(uint64_t now)
{
    if (cw.have && now - cw.last_ns < CPUWAIT_EVERY_NS)
        return;
    uint64_t rq = 0;
    cw.have = read_wait(&rq) == 0;
    cw.last_rq = rq;
    cw.last_ns = now;
}

uint64_t afd_cpuwait_step_end(uint64_t now, uint64_t wall)
{
    if (wall < CPUWAIT_EVERY_NS || !cw.have)
        return 0;
    uint64_t rq = 0;
    if (read_wait(&rq) < 0 || !cw.have) {
        cw.have = 0;
        return 0;
    }
    uint64_t waited = rq >= cw.last_rq ? rq - cw.last_rq : 0;
    cw.last_rq = rq;
    cw.last_ns = now;
    return waited < wall ? waited : wall;
}
