/* sharing.c -- whether a run touched something another copy of the same test would share.
 *
 * Two runs of one test at once are two pytest runs of it at once, which no pytest session makes: a
 * fixed port binds in one and fails in the other, a file the test writes next to itself is written
 * twice. The engine therefore runs one copy of a test at a time, unless every run of it so far was
 * seen to keep to itself. This file is how a run is seen: an audit hook (PEP 578) on the events
 * Python raises for every way a program changes the file system or takes a port, which records
 * AFD_TRACE_SHARED, with one UNCONTROLLED event naming the first such action, when a run
 *   - opens a file for writing, creates, removes, renames or links a path, or changes its mode,
 *     owner or times, outside the run's private places;
 *   - binds a socket to a fixed port (port 0 is the kernel's choice, private) or to a Unix path
 *     outside its private places, or to an abstract Unix name;
 *   - locks a file (fcntl.flock, lockf), starts a process (subprocess, os.system, exec, spawn,
 *     fork), or opens an SQLite database file outside its private places.
 * The private places: what tempfile.mkstemp and mkdtemp made in this run (and what lies under such
 * a directory), the worker's pytest base temporary directory (afd_sharing_private_root: one per
 * worker, made before its first run, under which pytest makes each tmp_path with an exclusive,
 * numbered mkdir), an anonymous file (a directory opened for writing is O_TMPFILE), and the
 * interpreter's byte-code caches (__pycache__: importlib writes them atomically, made for any number
 * of processes at once). Reads are never shared.
 *
 * What it cannot see (and the engine's one-copy-at-a-time confirmation of every failure still
 * covers): a C extension that writes files or binds sockets without the interpreter (uvloop, a
 * database driver's own I/O), a path that climbs out of a private directory ("..": counted as
 * shared), state outside the file system and ports (a server the test talks to).
 *
 * Invariant: only a run that is recording is looked at; the flag is set at most once a run.
 * Workload: one hook call per audit event of the process; outside a run, or once the run is
 * flagged, one comparison of the event's first letter and a flag test. */
#include "runtime.h"

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_PRIVATE 64

static char private_root[4096];         /* the worker's pytest basetemp, or "" */
static char *private_dirs[MAX_PRIVATE]; /* Owned: made by mkstemp / mkdtemp in this process's run */
static int n_private;
static int installed;

/* path as an absolute file name in buf (the directory dir_fd names, or the working directory,
 * before a relative one); 0 when it names no file (an int: a descriptor), does not fit, or climbs
 * with "..". */
static int absolute_at(PyObject *obj, int dir_fd, char *buf, size_t len)
{
    if (!obj || obj == Py_None || PyLong_Check(obj))
        return 0;
    PyObject *fs = PyOS_FSPath(obj);
    if (!fs) {
        PyErr_Clear();
        return 0;
    }
    const char *p = NULL;
    if (PyUnicode_Check(fs))
        p = PyUnicode_AsUTF8(fs);
    else if (PyBytes_Check(fs))
        p = PyBytes_AS_STRING(fs);
    int ok = 0;
    if (p && *p) {
        size_t n = 0;
        if (p[0] != '/') {
            char link[64];
            ssize_t got = -1;
            if (dir_fd >= 0) {
                snprintf(link, sizeof link, "/proc/self/fd/%d", dir_fd);
                got = readlink(link, buf, len - 1);
                if (got >= 0)
                    buf[got] = 0;
            }
            if (got >= 0 || (dir_fd < 0 && getcwd(buf, len))) {
                n = strlen(buf);
                if (n + 1 < len && (n == 0 || buf[n - 1] != '/'))
                    buf[n++] = '/';
            }
        }
        size_t pl = strlen(p);
        if (n + pl < len && !strstr(p, "/..") && strncmp(p, "..", 2) != 0) {
            memcpy(buf + n, p, pl + 1);
            ok = 1;
        }
    }
    PyErr_Clear();
    Py_DECREF(fs);
    return ok;
}

static int absolute(PyObject *obj, char *buf, size_t len)
{
    return absolute_at(obj, -1, buf, len);
}

static int under(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    return n && !strncmp(path, dir, n) && (path[n] == 0 || path[n] == '/');
}

static int is_private(const char *path)
{
    if (private_root[0] && under(path, private_root))
        return 1;
    if (strstr(path, "/__pycache__/"))
        return 1;
    for (int i = 0; i < n_private; i++)
        if (under(path, private_dirs[i]))
            return 1;
    return 0;
}

static void remember(PyObject *obj)
{
    char buf[4096];
    if (n_private < MAX_PRIVATE && absolute(obj, buf, sizeof buf)) {
        char *copy = strdup(buf);
        if (copy)
            private_dirs[n_private++] = copy;
    }
}

static void shared(const char *what, const char *path)
{
    PyObject *text = path ? PyUnicode_FromFormat("%s %s", what, path) : PyUnicode_FromString(what);
    afd_rec_flag(AFD_TRACE_SHARED);
    afd_rec_event(AFD_EV_UNCONTROLLED, 0, afd_rec_current, AFD_TRACE_SHARED,
                  text ? afd_rec_intern(text, NULL) : AFD_NOSTR, afd_rec_now, 0);
    Py_XDECREF(text);
    PyErr_Clear();
}

/* A change to the path args[i] names, relative to the directory descriptor args[fd_at] when that
 * is one (fd_at < 0: none): shared unless private. */
static void changes_at(PyObject *args, Py_ssize_t i, Py_ssize_t fd_at, const char *what)
{
    char buf[4096];
    if (!PyTuple_Check(args) || PyTuple_GET_SIZE(args) <= i)
        return;
    int dir_fd = -1;
    if (fd_at >= 0 && PyTuple_GET_SIZE(args) > fd_at && PyLong_Check(PyTuple_GET_ITEM(args, fd_at))) {
        dir_fd = (int)PyLong_AsLong(PyTuple_GET_ITEM(args, fd_at));
        PyErr_Clear();
    }
    if (absolute_at(PyTuple_GET_ITEM(args, i), dir_fd, buf, sizeof buf) && !is_private(buf))
        shared(what, buf);
}
#define changes(args, i, what) changes_at((args), (i), -1, (what))

static void opened(PyObject *args)
{
    if (!PyTuple_Check(args) || PyTuple_GET_SIZE(args) < 3)
        return;
    PyObject *mode = PyTuple_GET_ITEM(args, 1), *flags = PyTuple_GET_ITEM(args, 2);
    long fl = PyLong_Check(flags) ? PyLong_AsLong(flags) : 0;
    const char *m = mode && PyUnicode_Check(mode) ? PyUnicode_AsUTF8(mode) : NULL;
    PyErr_Clear();
    int writes = (fl & (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND)) != 0 || (m && strpbrk(m, "wax+"));
    char buf[4096];
    if (!writes || !absolute(PyTuple_GET_ITEM(args, 0), buf, sizeof buf) || is_private(buf))
        return;
    struct stat st;
    if (stat(buf, &st) == 0 && S_ISDIR(st.st_mode))
        return; /* a directory opened for writing: O_TMPFILE, a file with no name */
    shared("wrote", buf);
}

static void bound(PyObject *args)
{
    if (!PyTuple_Check(args) || PyTuple_GET_SIZE(args) < 2)
        return;
    PyObject *addr = PyTuple_GET_ITEM(args, 1);
    if (PyTuple_Check(addr) && PyTuple_GET_SIZE(addr) >= 2) {
        long port = PyLong_Check(PyTuple_GET_ITEM(addr, 1)) ? PyLong_AsLong(PyTuple_GET_ITEM(addr, 1)) : -1;
        PyErr_Clear();
        if (port != 0) {
            char what[64];
            snprintf(what, sizeof what, "bound the fixed port %ld", port);
            shared(what, NULL);
        }
        return;
    }
    if ((PyUnicode_Check(addr) && PyUnicode_GET_LENGTH(addr) && PyUnicode_READ_CHAR(addr, 0) == 0) ||
        (PyBytes_Check(addr) && PyBytes_GET_SIZE(addr) && PyBytes_AS_STRING(addr)[0] == 0)) {
        shared("bound an abstract Unix socket name", NULL);
        return;
    }
    changes(args, 1, "bound a Unix socket at");
}

static int starts(const char *ev, const char *prefix)
{
    return !strncmp(ev, prefix, strlen(prefix));
}

static int hook(const char *ev, PyObject *args, void *unused)
{
    (void)unused;
    char c = ev[0];
    if ((c != 'o' && c != 's' && c != 't' && c != 'f') || !afd_rec_active() ||
        (afd_rec_flags() & AFD_TRACE_SHARED))
        return 0;
    if (!strcmp(ev, "open"))
        opened(args);
    else if (!strcmp(ev, "tempfile.mkstemp") || !strcmp(ev, "tempfile.mkdtemp"))
        remember(PyTuple_Check(args) && PyTuple_GET_SIZE(args) ? PyTuple_GET_ITEM(args, 0) : NULL);
    else if (!strcmp(ev, "socket.bind"))
        bound(args);
    else if (!strcmp(ev, "os.remove") || !strcmp(ev, "os.rmdir"))
        changes_at(args, 0, 1, "removed");
    else if (!strcmp(ev, "os.mkdir") || !strcmp(ev, "os.mkfifo") || !strcmp(ev, "os.mknod"))
        changes_at(args, 0, PyTuple_Check(args) ? PyTuple_GET_SIZE(args) - 1 : -1, "created");
    else if (!strcmp(ev, "os.rename") || !strcmp(ev, "os.link")) {
        changes_at(args, 0, 2, "renamed or linked");
        changes_at(args, 1, 3, "renamed or linked to");
    } else if (!strcmp(ev, "os.symlink"))
        changes_at(args, 1, 2, "linked");
    else if (!strcmp(ev, "os.chmod") || !strcmp(ev, "os.chown") || !strcmp(ev, "os.utime"))
        changes_at(args, 0, PyTuple_Check(args) ? PyTuple_GET_SIZE(args) - 1 : -1, "changed");
    else if (!strcmp(ev, "os.truncate") || !strcmp(ev, "shutil.rmtree"))
        changes(args, 0, "changed");
    else if (!strcmp(ev, "sqlite3.connect")) {
        PyObject *db = PyTuple_Check(args) && PyTuple_GET_SIZE(args) ? PyTuple_GET_ITEM(args, 0) : NULL;
        const char *s = db && PyUnicode_Check(db) ? PyUnicode_AsUTF8(db) : NULL;
        PyErr_Clear();
        if (!(s && (!*s || strstr(s, ":memory:") || strstr(s, "mode=memory"))))
            changes(args, 0, "opened the SQLite database");
    } else if (starts(ev, "fcntl.flock") || starts(ev, "fcntl.lockf"))
        shared("locked a file", NULL);
    else if (!strcmp(ev, "subprocess.Popen") || !strcmp(ev, "os.system") || !strcmp(ev, "os.posix_spawn") ||
             !strcmp(ev, "os.spawn") || !strcmp(ev, "os.exec") || !strcmp(ev, "os.fork") ||
             !strcmp(ev, "os.forkpty"))
        shared("started a process", NULL);
    return 0;
}

int afd_sharing_install(void)
{
    if (installed)
        return 0;
    /* tempfile's first gettempdir() probes the directory with a file of its own: done here, outside
     * any run, it is not a run's write */
    PyObject *tempfile = PyImport_ImportModule("tempfile");
    PyObject *dir = tempfile ? PyObject_CallMethod(tempfile, "gettempdir", NULL) : NULL;
    Py_XDECREF(dir);
    Py_XDECREF(tempfile);
    PyErr_Clear();
    if (PySys_AddAuditHook(hook, NULL) < 0)
        return -1;
    installed = 1;
    return 0;
}

int afd_sharing_private_root(PyObject *path)
{
    char buf[4096];
    if (!absolute(path, buf, sizeof buf)) {
        PyErr_SetString(PyExc_ValueError, "affidavit: the private root must be a path");
        return -1;
    }
    memcpy(private_root, buf, sizeof private_root);
    return 0;
}
