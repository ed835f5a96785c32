/* fix_drain.h -- the fixes that make a reader wait for a task it does not hold a handle to.
 *
 * DRAIN_TASKS, for an order violation whose writer runs in a background task that library code
 * spawned (`asyncio.create_task(...)` or `asyncio.ensure_future(...)`) and kept on an object the
 * reader can reach: the task (or every task of the container it was added to) is awaited right
 * before the read. The handle's home is found at the spawn (afd_fix_drain_store) and carried up the
 * calls from the reader's function to the spawn, one call at a time (afd_fix_drain_arg), as the
 * expression the reader's function names it by.
 *
 * AWAIT_TASK after a cancel, for a caller that resumed before the task it cancelled unwound (its
 * `finally` had not run): `await asyncio.wait([handle])` right after `handle.cancel()`, so the
 * caller goes on only once the cancelled task's cleanup ran. asyncio.wait neither raises the
 * task's CancelledError nor hides one delivered to the caller. */
#ifndef AFD_FIX_DRAIN_H
#define AFD_FIX_DRAIN_H

#include "buf.h"

#include <stddef.h>
#include <stdint.h>

/* A parameter of a function, as a call passes it. */
typedef struct afd_drain_ref {
    int index;     /* its position among the call's positional arguments; -1: the receiver (self) */
    char name[64]; /* its name, which a keyword argument may pass it by */
} afd_drain_ref;

/* How the spawning function kept the task's handle. */
typedef enum afd_drain_shape {
    AFD_DRAIN_ONE = 1,   /* `base.path = task`: await it */
    AFD_DRAIN_MANY = 2,  /* `base.path.add(task)` or `.append(task)`: gather the container */
    AFD_DRAIN_VALUES = 3 /* `base.path[key] = task`: gather the container's values */
} afd_drain_shape;

typedef struct afd_drain_store {
    afd_drain_shape shape;
    afd_drain_ref base; /* the parameter the home is reached from */
    char path[192];     /* the attributes from it: "._background_tasks" */
} afd_drain_store;

/* At spawn_line (the line that called create_task or ensure_future) in a function of src, where
 * that function keeps the task's handle: the result of the spawn bound to a name that is then
 * stored (`base.path = name`, `base.path[k] = name`, `base.path.add(name)`, `.append(name)`), or
 * the spawn itself stored that way, where base is a parameter of the function. AFD_EINVAL with a
 * reason when the handle is dropped, kept in a local or global only, or reached otherwise. */
int afd_fix_drain_store(const char *src, size_t len, uint32_t spawn_line, afd_drain_store *out, char *why,
                        size_t whylen);

/* At call_line of src, the call of `callee` (a name or `x.callee`): the text of the argument that
 * binds parameter ref into arg (NUL-terminated, at most argcap - 1 bytes), and, when that text is
 * a parameter of the function holding the call, that parameter into *up (index -2 otherwise). The
 * argument must be a name or a chain of attributes of a name: evaluating it again later reaches
 * the same object unless the name is rebound. AFD_EINVAL with a reason otherwise. */
int afd_fix_drain_arg(const char *src, size_t len, uint32_t call_line, const char *callee,
                      const afd_drain_ref *ref, char *arg, size_t argcap, afd_drain_ref *up, char *why,
                      size_t whylen);

/* DRAIN_TASKS: right before the statement at read_line (in an async function that also holds
 * scope_line, an earlier line where home names what it names at the read: the call that led to
 * the spawn),
 *     await home                              (AFD_DRAIN_ONE)
 *     await asyncio.gather(*list(home))       (AFD_DRAIN_MANY)
 *     await asyncio.gather(*list(home.values()))  (AFD_DRAIN_VALUES)
 * where home is the expression the reader names the handle's home by; `import asyncio` is added
 * when missing. The copy into a list lets a done callback remove the task while it is awaited. */
int afd_fix_drain_tasks(const char *src, size_t len, uint32_t read_line, uint32_t scope_line,
                        const char *home, afd_drain_shape shape, afd_buf *out, char *why, size_t whylen);

/* AWAIT_TASK after a cancel: the statement at cancel_line is `h.cancel(...)` (h a name or a chain
 * of attributes) in an async function; `await asyncio.wait([h])` goes right after it. AFD_EINVAL
 * with a reason when the line is no such statement, or the function awaits h already right after. */
int afd_fix_await_cancelled(const char *src, size_t len, uint32_t cancel_line, afd_buf *out, char *why,
                            size_t whylen);

#endif
