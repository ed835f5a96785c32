/* recorder_impl.h -- the recorder's tables, shared by the files that fill them: recorder.c (the
 * region, strings, tasks, suspension sites and steps), recorder_objs.c (synchronization objects
 * and the line tracer's per-code facts) and recorder_read.c (the region read back as a trace).
 * Private to the recorder; the rest of the runtime sees runtime.h.
 *
 * The map's functions are static inline so that each file calls them by their short names; they
 * are defined here once. */
#ifndef AFD_RECORDER_IMPL_H
#define AFD_RECORDER_IMPL_H

#include "runtime.h"
#include "buf.h"

#include <frameobject.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- A pointer-keyed open-addressing map (keys never removed during a run) ---- */

typedef struct pmap_entry {
    const void *key;
    uint32_t aux; /* second key part (a line number), 0 when unused */
    uint32_t value;
} pmap_entry;

typedef struct pmap {
    pmap_entry *slots; /* Owned. */
    size_t cap;        /* power of two */
    size_t used;
} pmap;

static inline size_t pmap_hash(const void *key, uint32_t aux)
{
    uint64_t h = afd_mix64((uint64_t)(uintptr_t)key ^ ((uint64_t)aux << 48));
    return (size_t)h;
}

static inline int pmap_grow(pmap *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 1024;
    pmap_entry *ns = calloc(ncap, sizeof *ns);
    if (!ns)
        return -1;
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->slots[i].key)
            continue;
        size_t j = pmap_hash(m->slots[i].key, m->slots[i].aux) & (ncap - 1);
        while (ns[j].key)
            j = (j + 1) & (ncap - 1);
        ns[j] = m->slots[i];
    }
    free(m->slots);
    m->slots = ns;
    m->cap = ncap;
    return 0;
}

/* Returns the slot for (key, aux): found (key set) or the empty slot where it belongs. */
static inline pmap_entry *pmap_slot(pmap *m, const void *key, uint32_t aux)
{
    if ((m->used + 1) * 2 > m->cap && pmap_grow(m) < 0)
        return NULL;
    size_t j = pmap_hash(key, aux) & (m->cap - 1);
    while (m->slots[j].key && (m->slots[j].key != key || m->slots[j].aux != aux))
        j = (j + 1) & (m->cap - 1);
    return &m->slots[j];
}

static inline void pmap_clear(pmap *m)
{
    free(m->slots);
    memset(m, 0, sizeof *m);
}

/* The recorder's state: the region of the current run and the tables that name what it saw. */
typedef struct afd_recorder {
    uint8_t *mem; /* Borrowed (shared mapping) or owned (private). */
    int owned;
    size_t size;
    afd_shm_header *hdr;  /* Borrowed: the start of mem; NULL while no run records. */
    afd_event *events;    /* Borrowed: into mem. */
    uint8_t *strings;     /* Borrowed: into mem. */
    char *failure;        /* Borrowed: into mem. */
    afd_task_info *tasks; /* Owned, index = id (slot 0 unused). */
    uint32_t n_tasks;
    size_t cap_tasks;
    pmap task_map;         /* task object or callback key -> id */
    pmap site_map;         /* (code object, line) -> string id */
    PyObject *interned;    /* Owned dict: str -> int string id. */
    PyObject *qual_counts; /* Owned dict: qualname -> next n. */
    PyObject *keep;        /* Owned list: objects whose addresses are map keys. */
    pmap obj_map;          /* synchronization object -> number (from 1) */
    afd_sync_obj *objs;    /* Owned, index = number (slot 0 unused). */
    uint32_t n_objs;
    size_t cap_objs;
    const void *last_obj; /* Borrowed: the last object numbered (alive: every numbered object is kept) */
    uint32_t last_number;
    afd_code_info *codes; /* Owned: the line tracer's per-code facts, indexed from code_map */
    uint32_t n_codes;
    size_t cap_codes;
    pmap code_map; /* code object -> index + 1 into codes */
} afd_recorder;

/* The one recorder of the process (a fork server child records one run at a time). */
extern afd_recorder afd_rec;

/* Starts the private recorder when no run has begun one, so that direct use (tests, in-process
 * runs) records too. Returns 0, or -1 with a Python exception set. */
int afd_rec_ensure(void);
/* Whether a code object belongs to the user's code, decided once per code object (which is then
 * kept alive for the run, so its address stays its own). */
int afd_rec_code_is_user(afd_rt_state *st, PyCodeObject *code);
/* The frame's last instruction (its offset in the code), on every supported Python. */
int afd_rec_frame_lasti(PyFrameObject *frame);
/* "path:line" of a frame, the path relative to the trace's base directory (a new reference, or
 * NULL with no exception set). */
PyObject *afd_rec_site_text(PyCodeObject *code, PyFrameObject *frame);
/* The "file:line" string id of a user frame, interned once per (code, instruction). */
uint32_t afd_rec_site_string(afd_rt_state *st, PyCodeObject *code, PyFrameObject *frame);
/* The innermost user-code await of a suspended coroutine chain ("file:line" string id), or
 * AFD_NOSTR; when the await chain runs through two or more user coroutines, *chain receives the
 * interned chain's string id and *n_frames its length (else AFD_NOSTR and 0). The walk stops at
 * the first library frame below a user frame (chains.c). */
uint32_t afd_rec_suspension(afd_rt_state *st, PyObject *coro, uint32_t *chain, uint32_t *n_frames);
/* Forgets the interned chains (a new recording starts). */
void afd_rec_chains_reset(void);

#endif
