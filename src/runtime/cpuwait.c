/* cpuwait.c -- how long the loop's thread waited for a CPU during a step. A step's wall time less
 * that wait is what the program took (computing, or blocked in a call); the rest is what a loaded
 * machine added, and a step is not slow, nor a natural run's step a blocking one, because the
 * machine was busy (a golden of investigate gained "a blocking call or slow step" from a 320 ms
 * step of a 20-step lost update run beside the rest of the suite).
 *
 * Linux: the second field of /proc/thread-self/schedstat, the nanoseconds the thread spent runnable
 * on a run queue. A read costs microseconds (open, read, close: ~7 us on this project's VMs), so
 * it is taken at a step's start only when a millisecond has passed since the last one, and at the
 * end of a step of a millisecond or more: the wait charged to such a step may include under a
 * millisecond from before it began, at a cost of at most one read a millisecond. Elsewhere, or
 * when the file cannot be read, no wait is known. */
#include "runtime.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#define CPUWAIT_EVERY_NS 1000000ULL

typedef struct cpuwait {
    long pid;         /* the process last_rq was read in (a forked run is another) */
    int have;         /* last_rq is known */
    uint64_t last_rq; /* the run-queue wait at the last read */
    uint64_t last_ns; /* the monotonic time of the last read */
} cpuwait;

static _Thread_local cpuwait cw;

/* The thread's total run-queue wait in *out; -1 when it cannot be read. The file is opened for each
 * read and closed after it: a descriptor kept open would be one the program can see, close or
 * have reused, and one a thread leaves behind for every thread that ran a loop. */
static int read_wait(uint64_t *out)
{
#ifdef __linux__
    long pid = (long)getpid();
    if (cw.pid != pid) { /* a forked child: what was read was its parent's thread */
        cw.pid = pid;
        cw.have = 0;
    }
    int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char buf[96];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    close(fd);
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
    /* a reading this recent stands, and a failed one is not retried sooner */
    if (now - cw.last_ns < CPUWAIT_EVERY_NS)
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
