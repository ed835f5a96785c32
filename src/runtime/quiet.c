/* quiet.c -- whether the loop's real descriptors can wake it before it acts again.
 *
 * An idle controlled loop with a timer pending jumps its clock to the timer, unless something real
 * may happen first: another thread works (threads.c) or a real descriptor is registered, where the
 * world may write. It then waits in real time, as stock asyncio does (loop.c). Many tests register
 * descriptors whose only writers are in this process: a server and its client on loopback (aiohttp's
 * and starlette's test clients, a websocket pair), asyncio's own self-pipe. When every registered
 * descriptor is such a socket and nothing is on its way to any of them, nothing can arrive before
 * the loop's own thread acts again, and a real wait until the timer would only cost real time (a
 * test that sleeps 3 s between two requests spent 3 s in each of its runs). Such a loop is quiet:
 * it jumps, as with no descriptor.
 *
 * Quiet is decided from the kernel, per registered descriptor:
 *  - a Unix socket listening, or connected to a peer this process made (SO_PEERCRED): a Unix
 *    socket's data is in its peer's queue when send() returns, so nothing is ever on its way;
 *  - a TCP socket listening (a connection to it from this process is one of the TCP sockets below,
 *    in SYN_SENT until the listener's queue holds it, where the loop's poll sees it);
 *  - a TCP socket whose peer is a socket of this process (the addresses match, found among every
 *    descriptor of the process), and every byte and the FIN the peer sent is in this socket's
 *    receive queue: the peer's unsent bytes are 0 and the bytes it sent (and its FIN) equal what
 *    this socket received (TCP_INFO; a delayed ACK does not hold it back). One waited on for
 *    writing also has every segment it sent acknowledged (the ACK frees its buffer).
 * Anything else -- a pipe, a file, a UDP socket (a datagram on its way cannot be seen), a socket
 * whose peer is elsewhere or gone, a handshake in progress -- is not quiet, and neither is a
 * process with a child (a child may connect or write). The loop polls its selector right after
 * finding it quiet, so what arrived before the check is seen then. Not seen: a process outside this
 * one connecting to a listening socket it was never told about (a test that tells one, through a
 * file, say, and sleeps until it connects, sees its sleep end first). */
#include "runtime.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef __linux__
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#define MAX_PEERS 1024

/* TCP states as TCP_INFO reports them (the kernel's include/net/tcp_states.h; no uapi header
 * names them) */
enum {
    ST_SYN_SENT = 2,
    ST_SYN_RECV = 3,
    ST_FIN_WAIT1 = 4,
    ST_FIN_WAIT2 = 5,
    ST_TIME_WAIT = 6,
    ST_LAST_ACK = 9,
    ST_CLOSING = 11
};

/* A TCP socket of this process, by its two addresses. */
typedef struct {
    int fd;
    socklen_t local_len, peer_len;
    struct sockaddr_storage local, peer;
} tcp_end;

static int sockopt_int(int fd, int level, int name, int *out)
{
    socklen_t len = sizeof *out;
    return getsockopt(fd, level, name, out, &len);
}

/* Fills e when fd is a connected TCP socket; 0 if not. */
static int tcp_end_of(int fd, tcp_end *e)
{
    int domain, type, listening;
    if (sockopt_int(fd, SOL_SOCKET, SO_DOMAIN, &domain) < 0 || (domain != AF_INET && domain != AF_INET6))
        return 0;
    if (sockopt_int(fd, SOL_SOCKET, SO_TYPE, &type) < 0 || type != SOCK_STREAM)
        return 0;
    if (sockopt_int(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening) < 0 || listening)
        return 0;
    e->fd = fd;
    e->local_len = e->peer_len = sizeof e->local;
    if (getsockname(fd, (struct sockaddr *)&e->local, &e->local_len) < 0 ||
        getpeername(fd, (struct sockaddr *)&e->peer, &e->peer_len) < 0)
        return 0;
    return 1;
}

/* The connected TCP sockets of the whole process (a peer need not be registered with the loop). */
static int process_tcp_ends(tcp_end *out, int max)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    int n = 0, self_fd = dirfd(d);
    struct dirent *de;
    while ((de = readdir(d)) && n < max) {
        char *end;
        long fd = strtol(de->d_name, &end, 10);
        if (*end || end == de->d_name || fd == self_fd)
            continue;
        struct stat sb;
        if (fstat((int)fd, &sb) == 0 && S_ISSOCK(sb.st_mode) && tcp_end_of((int)fd, &out[n]))
            n++;
    }
    closedir(d);
    return n;
}

static int same_addr(const struct sockaddr_storage *a, socklen_t al, const struct sockaddr_storage *b,
                     socklen_t bl)
{
    return al == bl && memcmp(a, b, al) == 0;
}

static int fin_sent(unsigned state)
{
    return state == ST_FIN_WAIT1 || state == ST_FIN_WAIT2 || state == ST_TIME_WAIT || state == ST_LAST_ACK ||
           state == ST_CLOSING;
}

/* Whether everything `from` sent is in `to`'s receive queue (or read): nothing on its way. */
static int nothing_in_flight(int from, int to)
{
    struct tcp_info f, t;
    socklen_t fl = sizeof f, tl = sizeof t;
    memset(&f, 0, sizeof f);
    memset(&t, 0, sizeof t);
    size_t need = offsetof(struct tcp_info, tcpi_bytes_retrans) + sizeof f.tcpi_bytes_retrans;
    if (getsockopt(from, IPPROTO_TCP, TCP_INFO, &f, &fl) < 0 ||
        getsockopt(to, IPPROTO_TCP, TCP_INFO, &t, &tl) < 0 || fl < need || tl < need)
        return 0;
    if (f.tcpi_state == ST_SYN_SENT || f.tcpi_state == ST_SYN_RECV || t.tcpi_state == ST_SYN_SENT ||
        t.tcpi_state == ST_SYN_RECV || f.tcpi_notsent_bytes != 0)
        return 0;
    /* the receiver counts the FIN as one byte received */
    uint64_t sent = f.tcpi_bytes_sent - f.tcpi_bytes_retrans + (fin_sent(f.tcpi_state) ? 1 : 0);
    return t.tcpi_bytes_received >= sent;
}

/* Whether every segment fd sent was acknowledged: a socket waited on for writing becomes writable
 * when acknowledgements free its send buffer, so one still to come (a delayed ACK: up to 40 ms) is
 * an event on its way. */
static int all_acked(int fd)
{
    struct tcp_info t;
    socklen_t tl = sizeof t;
    memset(&t, 0, sizeof t);
    return getsockopt(fd, IPPROTO_TCP, TCP_INFO, &t, &tl) == 0 && t.tcpi_unacked == 0;
}

/* Whether the registered descriptor fd can be written to only by this process, with nothing on its
 * way now. *ends/n: the process's connected TCP sockets, read once on first need (*n < 0: not yet;
 * the caller frees *ends). */
static int fd_quiet(int fd, int writing, tcp_end **ends, int *n)
{
    struct stat sb;
    if (fstat(fd, &sb) < 0 || !S_ISSOCK(sb.st_mode))
        return 0;
    int domain, type, listening;
    if (sockopt_int(fd, SOL_SOCKET, SO_DOMAIN, &domain) < 0 ||
        sockopt_int(fd, SOL_SOCKET, SO_TYPE, &type) < 0 ||
        sockopt_int(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening) < 0)
        return 0;
    if (domain == AF_UNIX) {
        if (listening)
            return 1;
        struct ucred cred;
        socklen_t len = sizeof cred;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || len != sizeof cred)
            return 0;
        return cred.pid == getpid();
    }
    if ((domain != AF_INET && domain != AF_INET6) || type != SOCK_STREAM)
        return 0;
    if (listening)
        return 1;
    if (writing && !all_acked(fd))
        return 0;
    tcp_end me;
    if (!tcp_end_of(fd, &me))
        return 0; /* not connected (a handshake on its way, or reset) */
    if (!*ends && !(*ends = malloc(sizeof **ends * MAX_PEERS)))
        return 0;
    if (*n < 0 && (*n = process_tcp_ends(*ends, MAX_PEERS)) < 0)
        return 0;
    for (int i = 0; i < *n; i++) {
        const tcp_end *e = &(*ends)[i];
        if (e->fd != fd && same_addr(&e->local, e->local_len, &me.peer, me.peer_len) &&
            same_addr(&e->peer, e->peer_len, &me.local, me.local_len))
            return nothing_in_flight(e->fd, fd);
    }
    return 0; /* the peer is not in this process */
}

int afd_fds_quiet(PyObject *fd_to_key)
{
    if (!fd_to_key || !PyDict_Check(fd_to_key))
        return 0;
    /* a child may write to a pipe or connect to a socket at any time */
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) == 0 || errno != ECHILD)
        return 0;
    tcp_end *ends = NULL;
    int n = -1, quiet = 1;
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (quiet && PyDict_Next(fd_to_key, &pos, &key, &value)) {
        long fd = PyLong_Check(key) ? PyLong_AsLong(key) : -1;
        if (fd < 0) {
            PyErr_Clear();
            quiet = 0;
            break;
        }
        /* the key's events: 2 is selectors.EVENT_WRITE */
        PyObject *ev = PyObject_GetAttrString(value, "events");
        long events = ev && PyLong_Check(ev) ? PyLong_AsLong(ev) : 3;
        Py_XDECREF(ev);
        PyErr_Clear();
        quiet = fd_quiet((int)fd, (events & 2) != 0, &ends, &n);
    }
    free(ends);
    return quiet;
}
#else
int afd_fds_quiet(PyObject *fd_to_key)
{
    (void)fd_to_key;
    return 0;
}
#endif
