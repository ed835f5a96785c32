/* store.h -- the incident store: `.affidavit/incidents.db`, through SQLite's C API.
 *
 * One incident per `affidavit investigate`: the test, what was found (verdict, rate, cause), the
 * investigation's whole JSON document, every run it made (token, outcome, duration, trace digest),
 * the traces a report draws (compressed with zlib, size-bounded), and the proposed patch. Every
 * incident is written in one transaction, so a reader (or a crash) sees all of it or none of it.
 * The database is in WAL mode; its schema version is checked on open, and a database written by
 * another version is refused with a message that says which and what to do. */
#ifndef AFD_STORE_H
#define AFD_STORE_H

#include <stddef.h>
#include <stdint.h>

#define AFD_STORE_SCHEMA_VERSION 1
/* A trace larger than this (uncompressed) is not stored; the row says it was left out. */
#define AFD_STORE_MAX_TRACE (32u << 20)

typedef struct afd_store afd_store;

/* Opens (creating when missing, with its directory) the database at path. On failure returns a
 * negative AFD_E* code and writes a one-line message into err (e.g. "… was written by schema
 * version 7; this affidavit reads version 1: move it aside"). */
int afd_store_open(afd_store **out, const char *path, char *err, size_t errlen);
/* Opens an existing store for reading only: for a store in a directory that cannot be written
 * (a read-only checkout), where afd_store_open fails. Changes nothing on disk. AFD_ENOTFOUND when
 * there is no store at path; other failures as afd_store_open's. Writing through it fails. */
int afd_store_open_readonly(afd_store **out, const char *path, char *err, size_t errlen);
void afd_store_close(afd_store *self); /* accepts NULL */

typedef struct afd_store_run {
    uint64_t index;    /* the run's number in the investigation */
    const char *token; /* "" for a natural run */
    uint8_t outcome;   /* enum afd_outcome */
    uint64_t wall_ns;
    uint64_t digest; /* afd_trace_digest of its trace, 0 when none */
} afd_store_run;

typedef struct afd_store_trace {
    const char *role;     /* "failing" or "passing" (the nearest passing run) */
    const uint8_t *bytes; /* the encoded trace (afd_trace_encode) */
    size_t len;
} afd_store_trace;

typedef struct afd_store_patch {
    const char *kind; /* "LOCK", ... */
    const char *file;
    const char *diff;
    int gate_passed, verified, applied;
} afd_store_patch;

typedef struct afd_store_incident {
    const char *nodeid;
    const char *verdict;    /* reproduced | no_failure | abstained | deterministic */
    const char *cause_kind; /* "" when none */
    const char *summary;    /* the cause sentence, "" when none */
    const char *token;      /* the minimal failing token, "" when none */
    double rate;            /* natural failure rate */
    uint64_t natural_runs, natural_failed;
    int64_t created;  /* unix seconds */
    const char *json; /* the investigation's JSON document (without the "incident" key) */
} afd_store_incident;

/* Writes one incident with its runs, traces and patch (NULL: none) in one transaction; *id is its
 * number. Returns 0 or a negative code with a one-line message in err (a full disk, a read-only
 * directory, a locked database past its busy timeout). */
int afd_store_add(afd_store *self, const afd_store_incident *inc, const afd_store_run *runs, size_t n_runs,
                  const afd_store_trace *traces, size_t n_traces, const afd_store_patch *patch, int64_t *id,
                  char *err, size_t errlen);

/* What `affidavit ls` shows of an incident. Strings owned by the row. */
typedef struct afd_store_row {
    int64_t id, created;
    char *nodeid, *verdict, *cause_kind;
    double rate;
    uint64_t natural_runs, natural_failed;
} afd_store_row;
void afd_store_rows_free(afd_store_row *rows, size_t n);

/* Every incident, newest first (at most limit; 0: all). */
int afd_store_list(afd_store *self, size_t limit, afd_store_row **rows, size_t *n, char *err, size_t errlen);

/* One incident in full. Strings and buffers owned by the struct; afd_store_full_free releases. */
typedef struct afd_store_full {
    afd_store_row row;
    char *summary, *token, *json;
    uint8_t *failing, *passing; /* decoded from storage (decompressed), or NULL */
    size_t failing_len, passing_len;
    size_t n_runs; /* how many runs were stored */
} afd_store_full;
void afd_store_full_free(afd_store_full *f);

/* AFD_ENOTFOUND (with "no incident N" in err) when there is none. */
int afd_store_get(afd_store *self, int64_t id, afd_store_full *out, char *err, size_t errlen);

#endif
