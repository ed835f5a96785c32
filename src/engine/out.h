/* out.h -- what the engine prints: JSON for tools, progress for people.
 *
 * JSON keys printed by the CLI are a contract (DESIGN.md); they are written only through these
 * helpers so that every string is escaped the same way. Progress goes to stderr, and only when
 * stderr is a terminal, at most ten times a second. */
#ifndef AFD_ENGINE_OUT_H
#define AFD_ENGINE_OUT_H

#include "buf.h"

#include <stdint.h>

/* Appends s as a JSON string literal (quotes included), escaping control characters, quotes and
 * backslashes, and replacing invalid UTF-8 with U+FFFD. */
void afd_json_str(afd_buf *out, const char *s);
/* Appends a double with enough digits to round-trip typical rates; NaN and infinities as null. */
void afd_json_num(afd_buf *out, double v);

typedef struct afd_progress {
    int enabled;
    const char *what; /* Borrowed. */
    uint64_t last_ns;
    int shown;
} afd_progress;

void afd_progress_init(afd_progress *self, const char *what);
/* Shows "what: done/total runs, failed failing" (total 0: unknown). */
void afd_progress_update(afd_progress *self, uint64_t done, uint64_t total, uint64_t failed);
void afd_progress_done(afd_progress *self); /* Clears the line. */

#endif
