/* pyscan.h -- what each line of a Python source file reads and writes, found with tree-sitter.
 *
 * The line tracer tells which lines of user code a step ran; these per-line summaries tell what
 * shared state those lines touch, so un-annotated code can be explained like annotated code. The
 * analysis is syntactic and local:
 *   - roots: `self` and `cls`, and module globals (names bound at module level by assignment, or
 *     declared `global` in a function; not functions, classes or imports);
 *   - attribute chains through a root: `self.a.b` is root "self", path ".a.b";
 *   - subscripts: a string or integer literal key is kept (`["status"]`, `[0]`, strings always
 *     printed with double quotes), any other key is `[*]`;
 *   - assignment targets are writes; augmented assignment (`+=`) is a read and a write; `del` is a
 *     write; any other use is a read;
 *   - method calls on an access: mutating ones (append, extend, insert, update, setdefault, clear,
 *     add, discard, remove, sort, reverse, __setitem__, __delitem__, appendleft, extendleft) write
 *     the receiver's path; taking ones (pop, popitem, popleft) read it (flagged AFD_PYACC_TAKE:
 *     the value taken out is handed to the caller) and write it; read-only ones (get, keys, values,
 *     items, __contains__, __len__, __getitem__, copy, count, index) read it; unknown methods read
 *     it. A call whose result is awaited (`await self.api.add(x)`) is no container's method (those
 *     return no awaitable): it reads the receiver, whatever its name;
 *   - simple local aliases: after `s = self.sessions` (a plain name bound to an access expression)
 *     in a function, `s[k] = v` in the same function is a write of root "self", path ".sessions[*]",
 *     until `s` is bound again;
 *   - yield sites: the lines of every `await`, `async with` and `async for`;
 *   - statement marks by line (afd_pyscan_line_flags): conditions, return values, and values
 *     assigned to a name a later condition of the function reads.
 * Invalid Python never crashes or hangs the scan: tree-sitter's ERROR and MISSING nodes are
 * reported by line and not descended into. The traversal is iterative (no recursion on depth). */
#ifndef AFD_PYSCAN_H
#define AFD_PYSCAN_H

#include <stddef.h>
#include <stdint.h>

#define AFD_PYSCAN_MAX_SOURCE (16u * 1024u * 1024u)

enum afd_pyscan_root {
    AFD_ROOT_SELF = 1,
    AFD_ROOT_CLS = 2,
    AFD_ROOT_GLOBAL = 3,
    AFD_ROOT_LOCAL = 4 /* a parameter or local variable of the enclosing function, reached through an
                          attribute, a subscript or a mutating call (`state["token"] = v`); the
                          bare name is never an access: which object it holds is known only at run
                          time (the line tracer records it) */
};

/* What the scan knows of an access's role, as afd_pyaccess.flags bits. TEST: it sits in the
 * condition of an `if`, `elif` or `while` (its value decides what runs, it is not stored). LITERAL:
 * a write by an assignment whose value is a literal constant (`self.ready = True`, `x = None`). */
enum { AFD_PYACC_TEST = 1, AFD_PYACC_LITERAL = 2, AFD_PYACC_TAKE = 4 };
/* TAKE (on a read): the read of a taking call (`self.conns.pop(k)`), whose write of the same
 * receiver follows it at once: the task holds what it took out. */

/* What the statement around a line does with the values computed on it (afd_pyscan_line_flags):
 * TEST, the line holds part of the condition of an if, elif or while; RETURN, part of the value of
 * a `return`; NAME_TESTED, part of the value assigned to a plain name (`v = await self.get(k)`)
 * that a condition later in the same function reads (`if v is not None:`). */
enum { AFD_PYLINE_TEST = 1, AFD_PYLINE_RETURN = 2, AFD_PYLINE_NAME_TESTED = 4 };

typedef struct afd_pyaccess {
    uint32_t line;  /* 1-based line where the access expression starts */
    uint8_t root;   /* enum afd_pyscan_root */
    uint8_t write;  /* 1 write, 0 read (an augmented assignment yields one of each, read first) */
    uint8_t flags;  /* AFD_PYACC_TEST, AFD_PYACC_LITERAL */
    char *name;     /* Owned: "self", "cls", or the global's name ("REPORT") */
    char *path;     /* Owned: what follows the root: ".sessions[*]", "[\"status\"]", "" for the bare name */
    char *function; /* Owned: the enclosing function's qualified name ("Store.add", "f.<locals>.g"),
                       "" at module level */
} afd_pyaccess;

typedef struct afd_pyscan {
    afd_pyaccess *acc; /* Owned, sorted by line, then source order within the line. */
    size_t n_acc;
    uint32_t *yields; /* Owned, sorted, unique: lines holding an await, async with or async for. */
    size_t n_yields;
    uint32_t *errors; /* Owned, sorted, unique: lines where tree-sitter found ERROR or MISSING. */
    size_t n_errors;
    uint8_t *line_flags; /* Owned: AFD_PYLINE_* bits indexed by 1-based line (NULL: none marked). */
    size_t n_line_flags;
} afd_pyscan;

/* Scans src[0..len) (any bytes: invalid UTF-8 and NULs are tolerated). out is initialized here and
 * must be finished by the caller even on error. Returns 0, AFD_EFULL when len exceeds
 * AFD_PYSCAN_MAX_SOURCE, AFD_ENOMEM. */
int afd_pyscan_source(const char *src, size_t len, afd_pyscan *out);
void afd_pyscan_finish(afd_pyscan *s); /* Accepts a zeroed or finished scan. */

/* The accesses of one line: acc[*first .. *first + *count). */
void afd_pyscan_line(const afd_pyscan *s, uint32_t line, size_t *first, size_t *count);
/* The AFD_PYLINE_* bits of a line (0 beyond the last marked line). */
uint8_t afd_pyscan_line_flags(const afd_pyscan *s, uint32_t line);
/* 1 when the line holds a yield site. */
int afd_pyscan_is_yield(const afd_pyscan *s, uint32_t line);

#endif
