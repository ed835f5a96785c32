/* gate.h -- the policy gate: may a proposed patch (ours or a human's) run at all?
 *
 * A flaky asyncio test can be "fixed" by hiding the race (a sleep, a timeout, a retry, a weaker
 * assert, a swallowed exception, a skip). The gate refuses such patches before anything runs, by
 * comparing each changed file's before and after syntax trees (tree-sitter): a check fails when the
 * patch ADDS a refused construct (it occurs in the after text more often than in the before text),
 * so code that was already there never fails the gate. Constructs are compared as multisets of
 * their normalized text (whitespace runs collapsed, comments dropped), so swapping one sleep for
 * another, or an assert for a weaker one, is an addition too.
 *
 * Hiding a cancellation is a shortcut too: catching CancelledError without re-raising it, shielding
 * the awaited call, uncancelling the task (gate_cancel.c states what counts as re-raising).
 *
 * Every check is syntactic: names are matched as written, through import aliases
 * (`from asyncio import sleep as nap`), not through data flow. Whether a fix really orders the
 * racing steps is decided later, by verification under the controlled scheduler. */
#ifndef AFD_GATE_H
#define AFD_GATE_H

#include <stddef.h>

/* A file larger than this is not analysed: its `parses` check fails. */
#define AFD_GATE_MAX_SOURCE (4u * 1024u * 1024u)

typedef struct afd_gate_file {
    const char *path;   /* repository-relative, '/'-separated */
    const char *before; /* NULL for a new file */
    size_t before_len;
    const char *after; /* NULL for a deleted file */
    size_t after_len;
} afd_gate_file;

/* The checks, in report order. Their names (afd_gate_check.name) are stable: JSON uses them. */
enum afd_gate_check_id {
    /* refused shortcuts */
    AFD_GATE_NO_SLEEP,         /* "no_sleep" */
    AFD_GATE_NO_TIMEOUT,       /* "no_timeout" */
    AFD_GATE_NO_RETRY,         /* "no_retry" */
    AFD_GATE_NO_WEAKER_ASSERT, /* "no_weaker_assert" */
    AFD_GATE_NO_SWALLOW,       /* "no_swallow" */
    AFD_GATE_NO_SKIP,          /* "no_skip" */
    /* refused shortcuts that hide cancellation (see gate_cancel.c for what counts as re-raising) */
    AFD_GATE_NO_CANCEL_SWALLOW, /* "no_cancel_swallow": catching CancelledError without re-raising */
    AFD_GATE_NO_SHIELD,         /* "no_shield": asyncio.shield(...) */
    AFD_GATE_NO_UNCANCEL,       /* "no_uncancel": .uncancel() */
    /* required substance */
    AFD_GATE_SYNC_PRIMITIVE,       /* "sync_primitive" */
    AFD_GATE_PRIMITIVE_USED_TWICE, /* "primitive_used_twice" */
    AFD_GATE_NOT_NOOP,             /* "not_noop" */
    /* structural safety */
    AFD_GATE_NO_LOCK_CYCLE,  /* "no_lock_cycle" */
    AFD_GATE_SRC_ALLOWED,    /* "src_allowed" */
    AFD_GATE_NO_THIRD_PARTY, /* "no_third_party" */
    AFD_GATE_PARSES,         /* "parses" */
    AFD_GATE__COUNT
};

typedef struct afd_gate_check {
    const char *name;  /* static: "no_sleep", ... */
    const char *group; /* static: "refused shortcut" | "required substance" | "structural safety" */
    int passed;
    char reason[256]; /* one line; names the first offending construct and its file */
} afd_gate_check;

/* Runs every check over files[0..n) (the changed files; a file whose before and after are equal is
 * ignored). allow_src: edits outside test files are allowed. Fills out[id] for every id. Returns 0
 * (then read out[]: a file too large or too broken to analyse fails `parses`, it is not an error),
 * AFD_EINVAL (NULL arguments, a file with neither side or no path), AFD_ENOMEM. */
int afd_gate_run(const afd_gate_file *files, size_t n, int allow_src, afd_gate_check out[AFD_GATE__COUNT]);
/* 1 when every check passed. */
int afd_gate_passed(const afd_gate_check out[AFD_GATE__COUNT]);
/* 1 for a test file: under a tests/ or test/ directory, or named test_*.py, *_test.py, conftest.py. */
int afd_gate_is_test_path(const char *path);
/* 1 for a third-party file: the path holds site-packages/, .venv/, venv/, vendor/, node_modules/ or
 * _vendor/. */
int afd_gate_is_third_party_path(const char *path);
/* The stable name of a check ("no_sleep"), or NULL for an unknown id. */
const char *afd_gate_check_name(int id);

#endif
