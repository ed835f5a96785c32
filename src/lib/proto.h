/* proto.h -- the messages between the engine and its workers, framed over pipes.
 *
 * A frame is u32 length (of what follows) | u8 type | payload, little-endian. The engine reads
 * frames from several workers through poll(), so decoding is incremental: afd_framer accumulates
 * bytes and hands out whole frames. Frames above AFD_PROTO_MAX_FRAME are refused (a worker gone
 * wrong must not make the engine allocate without bound). Payload decoders are bounds-checked.
 *
 * Messages:
 *   HELLO   worker -> engine, once: i32 pid | str python version | str hash seed | str error
 *           (error non-empty: the worker could not prepare the test, e.g. not found, syntax error;
 *           it exits after sending it) | str nodeid (as collected; a worker that serves several
 *           tests sends every collected node id, one per line, in collection order)
 *   RUN     engine -> worker: u64 run_id | u8 mode | u32 timeout_ms | u64 max_steps | str token |
 *           u64 mark_lo | u32 mark_n (the steps whose slots the run measures: step indices
 *           [mark_lo, mark_lo + mark_n), mark_n <= AFD_PROTO_MAX_MARKS; 0 = no measurement) |
 *           str item (the node id of the test to run, one of the HELLO's; "" for the only one)
 *   RESULT  worker -> engine: u64 run_id | u8 outcome | i32 status (exit code, or -signal) |
 *           u64 wall_ns | str failure | str trace bytes (an encoded trace, possibly empty)
 *   QUIT    engine -> worker: empty; the worker exits. */
#ifndef AFD_PROTO_H
#define AFD_PROTO_H

#include "buf.h"

#include <stddef.h>
#include <stdint.h>

#define AFD_PROTO_MAX_FRAME (64u << 20)
/* The most steps one run can measure: one bit each of a 64-bit mask (runtime's slots.c). */
#define AFD_PROTO_MAX_MARKS 64u

enum afd_msg_type { AFD_MSG_HELLO = 1, AFD_MSG_RUN = 2, AFD_MSG_RESULT = 3, AFD_MSG_QUIT = 4 };

typedef struct afd_hello {
    int32_t pid;
    char *python;    /* Owned. */
    char *hash_seed; /* Owned. */
    char *error;     /* Owned; "" when the worker is ready. */
    char *nodeid;    /* Owned: one node id, or several separated by newlines. */
} afd_hello;

typedef struct afd_run_req {
    uint64_t run_id;
    uint8_t mode; /* enum afd_mode */
    uint32_t timeout_ms;
    uint64_t max_steps;
    char *token;      /* Owned; "" for a natural run. */
    uint64_t mark_lo; /* the first step index whose slot is measured */
    uint32_t mark_n;  /* how many (0: none; at most AFD_PROTO_MAX_MARKS) */
    char *item;       /* Owned; the node id of the test to run, "" for the worker's only test. */
} afd_run_req;

typedef struct afd_run_result {
    uint64_t run_id;
    uint8_t outcome; /* enum afd_outcome */
    int32_t status;
    uint64_t wall_ns;
    char *failure; /* Owned, never NULL after a successful decode; failure[failure_len] is 0. */
    /* The failure's length in bytes: the text may hold NUL bytes (a test's message is arbitrary),
     * so this, not strlen, is its end. A sender may leave it 0 for a text without NUL (then
     * strlen(failure) is sent); a decode always sets it. */
    size_t failure_len;
    uint8_t *trace; /* Owned encoded trace; NULL when trace_len is 0. */
    size_t trace_len;
} afd_run_result;

/* Appends a whole frame (header + payload) for each message to out. */
void afd_proto_put_hello(afd_buf *out, const afd_hello *m);
void afd_proto_put_run(afd_buf *out, const afd_run_req *m);
void afd_proto_put_result(afd_buf *out, const afd_run_result *m);
void afd_proto_put_quit(afd_buf *out);

/* Payload decoders (the payload is what follows the type byte). They initialize *m; on error the
 * message is freed and zeroed. */
int afd_proto_get_hello(afd_hello *m, const uint8_t *payload, size_t len);
int afd_proto_get_run(afd_run_req *m, const uint8_t *payload, size_t len);
int afd_proto_get_result(afd_run_result *m, const uint8_t *payload, size_t len);
void afd_hello_finish(afd_hello *m);           /* Accepts NULL. */
void afd_run_req_finish(afd_run_req *m);       /* Accepts NULL. */
void afd_run_result_finish(afd_run_result *m); /* Accepts NULL. */

/* Incremental frame reassembly. */
typedef struct afd_framer {
    afd_buf in;      /* Owned: bytes received and not yet handed out. */
    size_t consumed; /* Bytes at the front of `in` already handed out. */
} afd_framer;

void afd_framer_init(afd_framer *self);
void afd_framer_finish(afd_framer *self); /* Accepts NULL. */
int afd_framer_feed(afd_framer *self, const void *data, size_t len);
/* If a whole frame is buffered: sets *type, *payload (borrowed, valid until the next feed or next
 * call) and *len, and returns 1. Returns 0 when more bytes are needed, AFD_EPROTO for a frame
 * that is too large or empty. */
int afd_framer_next(afd_framer *self, uint8_t *type, const uint8_t **payload, size_t *len);

/* Blocking helpers for the worker side: write all of buf (retrying EINTR and short writes), and
 * read exactly one frame into frame (type + payload). They return AFD_EIO / AFD_EOF on failure. */
int afd_proto_write_all(int fd, const void *data, size_t len);
int afd_proto_read_frame(int fd, afd_buf *frame, uint8_t *type);

#endif
