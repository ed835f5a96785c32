/* proto.c -- frames and messages between the engine and its workers.
 *
 * Invariant: nothing a peer sends can make the engine read out of bounds or allocate more than
 * AFD_PROTO_MAX_FRAME (plus the bytes already buffered) for one frame; a malformed frame is
 * AFD_EPROTO and the engine drops that worker.
 *
 * Workload: hundreds of frames per second per engine, most of them small RUN and RESULT messages;
 * a RESULT carries an encoded trace of up to tens of megabytes. The framer therefore copies each
 * byte into its buffer once and compacts the consumed prefix only when that is at least as large
 * as what remains, which keeps the cost linear over a long session. */
#include "proto.h"
#include "afd.h"
#include "trace.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The bound for short text fields: versions, seeds, node ids. */
#define TEXT_MAX 4096
/* A framer whose buffer is empty gives back a buffer larger than this, so one huge RESULT does
 * not pin its memory for the rest of the session. */
#define FRAMER_KEEP (1u << 20)

/* Opens a frame: a length placeholder and the type byte. Returns the frame's offset in out. */
static size_t frame_begin(afd_buf *out, uint8_t type)
{
    size_t start = out->len;
    afd_buf_put_u32(out, 0);
    afd_buf_put_u8(out, type);
    return start;
}

/* Patches the length in. A frame the receiver would refuse is taken back out and reported through
 * out->err as AFD_EFULL, since the writers return void and a sender must not emit it. */
static void frame_end(afd_buf *out, size_t start)
{
    if (out->err)
        return;
    size_t n = out->len - start - 4;
    if (n > AFD_PROTO_MAX_FRAME) {
        out->len = start;
        out->data[start] = 0;
        out->err = AFD_EFULL;
        return;
    }
    for (int i = 0; i < 4; i++)
        out->data[start + (size_t)i] = (uint8_t)(n >> (8 * i));
}

static void put_text(afd_buf *out, const char *s)
{
    afd_buf_put_str(out, s, s ? strlen(s) : 0);
}

void afd_proto_put_hello(afd_buf *out, const afd_hello *m)
{
    size_t start = frame_begin(out, AFD_MSG_HELLO);
    afd_buf_put_u32(out, (uint32_t)m->pid);
    put_text(out, m->python);
    put_text(out, m->hash_seed);
    put_text(out, m->error);
    put_text(out, m->nodeid);
    frame_end(out, start);
}

void afd_proto_put_run(afd_buf *out, const afd_run_req *m)
{
    size_t start = frame_begin(out, AFD_MSG_RUN);
    afd_buf_put_u64(out, m->run_id);
    afd_buf_put_u8(out, m->mode);
    afd_buf_put_u32(out, m->timeout_ms);
    afd_buf_put_u64(out, m->max_steps);
    put_text(out, m->token);
    afd_buf_put_u64(out, m->mark_lo);
    afd_buf_put_u32(out, m->mark_n);
    put_text(out, m->item);
    frame_end(out, start);
}

void afd_proto_put_result(afd_buf *out, const afd_run_result *m)
{
    size_t start = frame_begin(out, AFD_MSG_RESULT);
    afd_buf_put_u64(out, m->run_id);
    afd_buf_put_u8(out, m->outcome);
    afd_buf_put_u32(out, (uint32_t)m->status);
    afd_buf_put_u64(out, m->wall_ns);
    size_t flen = m->failure ? strlen(m->failure) : 0;
    if (m->failure && m->failure_len > flen)
        flen = m->failure_len;
    afd_buf_put_str(out, m->failure, flen);
    afd_buf_put_str(out, (const char *)m->trace, m->trace ? m->trace_len : 0);
    frame_end(out, start);
}

void afd_proto_put_quit(afd_buf *out)
{
    frame_end(out, frame_begin(out, AFD_MSG_QUIT));
}

/* Every decoder ends here: a reader error or leftover bytes is a protocol error, except running
 * out of memory, which is the engine's problem rather than the peer's. */
static int finish_decode(afd_reader *r)
{
    if (afd_reader_error(r) == AFD_ENOMEM)
        return AFD_ENOMEM;
    if (afd_reader_error(r) || afd_reader_left(r) != 0)
        return AFD_EPROTO;
    return 0;
}

int afd_proto_get_hello(afd_hello *m, const uint8_t *payload, size_t len)
{
    memset(m, 0, sizeof *m);
    afd_reader r;
    afd_reader_init(&r, payload, len);
    m->pid = (int32_t)afd_reader_u32(&r);
    m->python = afd_reader_str(&r, TEXT_MAX);
    m->hash_seed = afd_reader_str(&r, TEXT_MAX);
    /* The preparation error is read with the failure text's bound: it may hold a whole traceback
     * (a syntax error, an import error), which the header leaves open. */
    m->error = afd_reader_str(&r, AFD_TRACE_MAX_FAILURE);
    /* a whole suite's node ids, one per line: the frame bounds them */
    m->nodeid = afd_reader_str(&r, AFD_PROTO_MAX_FRAME);
    int rc = finish_decode(&r);
    if (rc)
        afd_hello_finish(m);
    return rc;
}

int afd_proto_get_run(afd_run_req *m, const uint8_t *payload, size_t len)
{
    memset(m, 0, sizeof *m);
    afd_reader r;
    afd_reader_init(&r, payload, len);
    m->run_id = afd_reader_u64(&r);
    m->mode = afd_reader_u8(&r);
    m->timeout_ms = afd_reader_u32(&r);
    m->max_steps = afd_reader_u64(&r);
    /* A token with thousands of delays runs to megabytes, so only the frame bounds it here; the
     * token decoder enforces the schedule's own limits. */
    m->token = afd_reader_str(&r, AFD_PROTO_MAX_FRAME);
    m->mark_lo = afd_reader_u64(&r);
    m->mark_n = afd_reader_u32(&r);
    m->item = afd_reader_str(&r, TEXT_MAX);
    if (!afd_reader_error(&r) &&
        ((m->mode & ~AFD_MODE_TRACE_LINES) > AFD_MODE_CONTROLLED || m->mark_n > AFD_PROTO_MAX_MARKS))
        afd_reader_fail(&r, AFD_EPROTO);
    int rc = finish_decode(&r);
    if (rc)
        afd_run_req_finish(m);
    return rc;
}

int afd_proto_get_result(afd_run_result *m, const uint8_t *payload, size_t len)
{
    memset(m, 0, sizeof *m);
    afd_reader r;
    afd_reader_init(&r, payload, len);
    m->run_id = afd_reader_u64(&r);
    m->outcome = afd_reader_u8(&r);
    m->status = (int32_t)afd_reader_u32(&r);
    m->wall_ns = afd_reader_u64(&r);
    size_t before = r.off;
    m->failure = afd_reader_str(&r, AFD_TRACE_MAX_FAILURE);
    if (m->failure)
        m->failure_len = r.off - before - 4;
    before = r.off;
    char *trace = afd_reader_str(&r, AFD_PROTO_MAX_FRAME);
    if (trace) {
        m->trace_len = r.off - before - 4;
        if (m->trace_len) {
            m->trace = (uint8_t *)trace;
        } else {
            free(trace); /* the header promises NULL for an empty trace */
        }
    }
    if (!afd_reader_error(&r) && m->outcome >= AFD_OUT__COUNT)
        afd_reader_fail(&r, AFD_EPROTO);
    int rc = finish_decode(&r);
    if (rc)
        afd_run_result_finish(m);
    return rc;
}

void afd_hello_finish(afd_hello *m)
{
    if (!m)
        return;
    free(m->python);
    free(m->hash_seed);
    free(m->error);
    free(m->nodeid);
    memset(m, 0, sizeof *m);
}

void afd_run_req_finish(afd_run_req *m)
{
    if (!m)
        return;
    free(m->token);
    free(m->item);
    memset(m, 0, sizeof *m);
}

void afd_run_result_finish(afd_run_result *m)
{
    if (!m)
        return;
    free(m->failure);
    free(m->trace);
    memset(m, 0, sizeof *m);
}

void afd_framer_init(afd_framer *self)
{
    afd_buf_init(&self->in);
    self->consumed = 0;
}

void afd_framer_finish(afd_framer *self)
{
    if (!self)
        return;
    afd_buf_finish(&self->in);
    self->consumed = 0;
}

int afd_framer_feed(afd_framer *self, const void *data, size_t len)
{
    /* Frames handed out stay valid until this call, so this is where consumed bytes go. */
    if (self->consumed == self->in.len) {
        if (self->in.cap > FRAMER_KEEP && !self->in.err) /* finishing would wipe the error */
            afd_buf_finish(&self->in);
        self->in.len = 0;
        self->consumed = 0;
    } else if (self->consumed >= self->in.len - self->consumed) {
        /* Moving at most as many bytes as were consumed keeps compaction amortized O(1) a byte. */
        memmove(self->in.data, self->in.data + self->consumed, self->in.len - self->consumed);
        self->in.len -= self->consumed;
        self->consumed = 0;
    }
    afd_buf_put(&self->in, data, len);
    return self->in.err;
}

int afd_framer_next(afd_framer *self, uint8_t *type, const uint8_t **payload, size_t *len)
{
    size_t avail = self->in.len - self->consumed;
    if (avail < 4)
        return 0;
    const uint8_t *p = self->in.data + self->consumed;
    uint32_t n = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    /* Refused as soon as the length is seen, before waiting for (and buffering) its bytes. */
    if (n == 0 || n > AFD_PROTO_MAX_FRAME)
        return AFD_EPROTO;
    if (avail - 4 < n)
        return 0;
    *type = p[4];
    *payload = p + 5;
    *len = n - 1;
    self->consumed += 4 + (size_t)n;
    return 1;
}

/* Waits until fd can be written; used only when a caller handed over a non-blocking fd. */
static int wait_writable(int fd)
{
    struct pollfd pfd = {.fd = fd, .events = POLLOUT};
    for (;;) {
        int n = poll(&pfd, 1, -1);
        if (n > 0)
            return 0;
        if (n < 0 && errno != EINTR)
            return AFD_EIO;
    }
}

int afd_proto_write_all(int fd, const void *data, size_t len)
{
    const uint8_t *p = data;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (wait_writable(fd))
                return AFD_EIO;
        } else {
            return AFD_EIO; /* EPIPE (SIGPIPE is ignored by every caller), EBADF, or no progress */
        }
    }
    return 0;
}

/* Reads exactly len bytes. EOF at any point is AFD_EOF: a peer that closes mid-frame is gone
 * just as surely as one that closes between frames. */
static int read_exact(int fd, uint8_t *p, size_t len)
{
    while (len > 0) {
        ssize_t n = read(fd, p, len);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
        } else if (n == 0) {
            return AFD_EOF;
        } else if (errno != EINTR) {
            return AFD_EIO;
        }
    }
    return 0;
}

/* The header leaves open whether frame is appended to or replaced; it is replaced, so one buffer
 * can be reused for every frame of a session. */
int afd_proto_read_frame(int fd, afd_buf *frame, uint8_t *type)
{
    uint8_t hdr[4];
    int rc = read_exact(fd, hdr, sizeof hdr);
    if (rc)
        return rc;
    uint32_t n = (uint32_t)hdr[0] | (uint32_t)hdr[1] << 8 | (uint32_t)hdr[2] << 16 | (uint32_t)hdr[3] << 24;
    if (n == 0 || n > AFD_PROTO_MAX_FRAME)
        return AFD_EPROTO;
    frame->len = 0;
    rc = afd_buf_reserve(frame, n);
    if (rc)
        return rc;
    rc = read_exact(fd, frame->data, n);
    if (rc)
        return rc;
    frame->len = n;
    frame->data[n] = 0;
    *type = frame->data[0];
    return 0;
}
