/* spans.h -- the pipeline's own trace: `--trace-out FILE` as Chrome trace JSON.
 *
 * Every span is a complete event ("ph": "X") with its start and duration in microseconds since
 * the trace was opened, on the monotonic clock; Perfetto and chrome://tracing nest the spans of
 * one thread by their time ranges, so a batch of runs shows inside the stage that ran it. */
#ifndef AFD_ENGINE_SPANS_H
#define AFD_ENGINE_SPANS_H

#include <stdint.h>

typedef struct afd_spans afd_spans;

/* Opens a trace that afd_spans_commit will write to path. The temporary file it is written
 * through is made now, beside path, so that a path that cannot be written is known before any
 * run. *out receives the trace (the caller frees it with afd_spans_free); AFD_EIO when path
 * cannot be written, AFD_ENOMEM. */
int afd_spans_open(const char *path, afd_spans **out);
/* Adds the span [start_ns, end_ns) named name (copied) in category cat. args is a JSON object's
 * text (copied) or NULL. self NULL: nothing. A span that cannot be kept (out of memory) makes
 * afd_spans_commit fail. */
void afd_spans_add(afd_spans *self, const char *name, const char *cat, uint64_t start_ns, uint64_t end_ns,
                   const char *args);
/* Writes every span added so far to the temporary file and renames it onto the path: readers see
 * the whole trace or none. Returns 0, AFD_EIO, or AFD_ENOMEM. */
int afd_spans_commit(afd_spans *self);
/* Removes the temporary file when the trace was not committed. Accepts NULL. */
void afd_spans_free(afd_spans *self);

#endif
