/* spans.c -- the pipeline's spans kept as Chrome trace events and written once, atomically.
 *
 * A span is formatted into one buffer as soon as it ends: an investigation has a few dozen
 * spans (eight stages, a batch per replay or probe, the verification tiers), so the whole trace
 * stays small and is written in one go at the end. */
#include "spans.h"

#include "afd.h"
#include "buf.h"
#include "out.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct afd_spans {
    afd_buf events; /* the traceEvents array's items, comma-separated */
    size_t n;
    uint64_t t0; /* the monotonic time that is ts 0 */
    char *path;  /* Owned: the file the trace is renamed to. */
    char *tmp;   /* Owned: the temporary file beside it, or NULL once renamed. */
    int fd;      /* the temporary file, open from afd_spans_open to the commit; -1 after */
};

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

int afd_spans_open(const char *path, afd_spans **out)
{
    *out = NULL;
    afd_spans *self = calloc(1, sizeof *self);
    if (!self)
        return AFD_ENOMEM;
    afd_buf_init(&self->events);
    self->fd = -1;
    self->t0 = mono_ns();
    size_t n = strlen(path) + 16;
    self->path = strdup(path);
    self->tmp = malloc(n);
    if (!self->path || !self->tmp) {
        afd_spans_free(self);
        return AFD_ENOMEM;
    }
    /* the same directory as path: rename(2) is atomic only within one file system; a directory
     * there would make the rename fail at the end, after every run */
    snprintf(self->tmp, n, "%s.tmp-XXXXXX", path);
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        errno = EISDIR;
    else
        self->fd = mkstemp(self->tmp);
    if (self->fd < 0) {
        free(self->tmp);
        self->tmp = NULL;
        afd_spans_free(self);
        return AFD_EIO;
    }
    *out = self;
    return 0;
}

void afd_spans_add(afd_spans *self, const char *name, const char *cat, uint64_t start_ns, uint64_t end_ns,
                   const char *args)
{
    if (!self)
        return;
    uint64_t s = start_ns > self->t0 ? start_ns - self->t0 : 0;
    uint64_t d = end_ns > start_ns ? end_ns - start_ns : 0;
    afd_buf *b = &self->events;
    afd_buf_printf(b, "%s{\"name\": ", self->n ? ",\n" : "");
    afd_json_str(b, name);
    afd_buf_printf(b, ", \"cat\": ");
    afd_json_str(b, cat);
    afd_buf_printf(b, ", \"ph\": \"X\", \"ts\": %.3f, \"dur\": %.3f, \"pid\": %ld, \"tid\": 1, \"args\": %s}",
                   (double)s / 1e3, (double)d / 1e3, (long)getpid(), args ? args : "{}");
    self->n++;
}

int afd_spans_commit(afd_spans *self)
{
    if (!self || self->fd < 0)
        return AFD_EIO;
    if (self->events.err)
        return AFD_ENOMEM;
    FILE *f = fdopen(self->fd, "wb");
    if (!f)
        return AFD_EIO;
    self->fd = -1; /* the stream owns the descriptor now */
    int ok = fprintf(f, "{\"traceEvents\": [\n") > 0;
    if (ok && self->events.len)
        ok = fwrite(self->events.data, 1, self->events.len, f) == self->events.len;
    ok = ok && fprintf(f, "\n], \"displayTimeUnit\": \"ms\"}\n") > 0;
    ok = fflush(f) == 0 && fsync(fileno(f)) == 0 && ok;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(self->tmp, self->path) < 0)
        return AFD_EIO;
    free(self->tmp);
    self->tmp = NULL;
    return 0;
}

void afd_spans_free(afd_spans *self)
{
    if (!self)
        return;
    if (self->fd >= 0)
        close(self->fd);
    if (self->tmp)
        unlink(self->tmp);
    free(self->tmp);
    free(self->path);
    afd_buf_finish(&self->events);
    free(self);
}
