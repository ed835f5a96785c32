/* out.h -- what the engine prints: JSON for tools, progress for people.
 *
 * JSON keys printed by the CLI are a contract (DESIGN.md); they are written only through these
 * helpers so that every string is escaped the same way. Progress goes to stderr, and only when
 * stderr is a terminal, at most ten times a second. */
#ifndef AFD_ENGINE_OUT_H
#define AFD_ENGINE_OUT_H

#include "buf.h"
#include "text.h" /* afd_json_str, afd_json_strn: the JSON string escaper */

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

/* Appends user-provided text (a failure message, a node id, a path, a cause sentence) for a
 * terminal: newlines, tabs and CRLF line ends as they are; every other C0 control and DEL as its
 * Unicode control picture (NUL as U+2400 "␀", ESC as U+241B "␛"), so that no escape sequence (CSI, OSC, ...)
 * reaches the terminal and a NUL is seen; C1 controls and bytes that are not UTF-8 as U+FFFD.
 * afd_term_strn takes the len bytes at s, NUL bytes included. */
void afd_term_str(afd_buf *out, const char *s);
void afd_term_strn(afd_buf *out, const char *s, size_t len);
/* Writes the len bytes at data to f through afd_term_strn: the one way text for people leaves the
 * engine, so whatever user-provided text a line holds, it cannot drive the terminal. */
void afd_term_write(FILE *f, const void *data, size_t len);
/* Appends a double with enough digits to round-trip typical rates; NaN and infinities as null. */
void afd_json_num(afd_buf *out, double v);

typedef struct afd_progress {
    int enabled;
    const char *what; /* Borrowed. */
    uint64_t last_ns;
    int shown;
    const char *stage; /* Borrowed: the running stage's name, or NULL (a command of one stage). */
    int stage_k, stage_n;
} afd_progress;

void afd_progress_init(afd_progress *self, const char *what);
/* Names the stage that runs now, the k-th of n (name borrowed; NULL: none), shown as
 * "what [k/n name]: ..." from the next update on. */
void afd_progress_stage(afd_progress *self, int k, int n, const char *name);
/* Shows "what: done/total runs, failed failing" (total 0: unknown). */
void afd_progress_update(afd_progress *self, uint64_t done, uint64_t total, uint64_t failed);
void afd_progress_done(afd_progress *self); /* Clears the line. */
/* What every progress line starts with from now on (copied; NULL: nothing): a run over several
 * tests names the test and how far it is, "[3/120] tests/test_x.py::test_a". */
void afd_progress_prefix(const char *prefix);

#endif
