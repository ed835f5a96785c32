/* fix.h -- fixes written as minimal text edits of the user's source, found with tree-sitter.
 *
 * LOCK, for a lost update: the smallest run of sibling statements that holds the stale read and
 * the write of the task that lost the update goes inside one `async with`; code before and after
 * the run stays outside. The lock lives where the resource lives: a module-level lock for module
 * state, an instance attribute created in `__init__` for instance state (or, for a class without
 * `__init__`, created atomically where it is used: `self.__dict__.setdefault(name, Lock())` has no
 * await between the check and the create). Several resources in one run get one lock each, all
 * acquired in one `async with a, b:` in one global order (sorted by the lock's text), so no
 * lock-order cycle is possible. Lines are only inserted or indented: comments and formatting stay
 * as they were. */
#ifndef AFD_FIX_H
#define AFD_FIX_H

#include "buf.h"

#include <stddef.h>
#include <stdint.h>

typedef struct afd_lock_site {
    uint32_t read_line;  /* 1-based: the stale read of the task that lost the update */
    uint32_t write_line; /* 1-based: its write */
    uint8_t root;        /* AFD_ROOT_SELF or AFD_ROOT_GLOBAL (pyscan.h) */
    const char *name;    /* the attribute ("sessions") or the global ("BALANCE") */
    const char *cause;   /* for the lock's comment: "check-then-act"; NULL: "lost update" */
} afd_lock_site;

/* Writes the patched source into out (reset first). On a shape it cannot fix -- the lines are not
 * in one async function, a multi-line string would be re-indented, the source does not parse --
 * returns AFD_EINVAL with a one-line reason in why. */
int afd_fix_lock(const char *src, size_t len, const afd_lock_site *sites, size_t n, afd_buf *out, char *why,
                 size_t whylen);

/* LOCK_CALLER, for a read and a write made by (or under) two statements of one async function,
 * the lowest common caller (read_line and write_line: those statements; root, name: the resource).
 * When the write's statement is an `async with L:` below the read's in one block, the writers
 * already serialize on L, and a new lock could not exclude them: the `async with L:` header moves
 * up to the read's statement. Otherwise LOCK in that function (afd_fix_lock). owner, when not NULL,
 * is the class instance state belongs to; a method of another class is refused. *reused says
 * whether L was extended. AFD_EINVAL with a reason when neither fits. */
int afd_fix_lock_caller(const char *src, size_t len, const afd_lock_site *site, const char *owner,
                        int *reused, afd_buf *out, char *why, size_t whylen);

/* AWAIT_TASK, for an order violation whose reader already holds a handle to the writer's task:
 * `await handle` right before the statement holding the early read. The handle is the last name
 * bound, before that statement in the reader's async function, to `asyncio.create_task(W(...))`,
 * `asyncio.ensure_future(W(...))` or `<tg or loop>.create_task(W(...))`, where W is the writer's
 * coroutine function (writer, e.g. "refresh_token"). AFD_EINVAL with a reason when there is none. */
int afd_fix_await_task(const char *src, size_t len, uint32_t read_line, const char *writer, afd_buf *out,
                       char *why, size_t whylen);

/* EVENT_GATE, for an order violation between a writer and a reader of module state in the test's
 * own file: an asyncio.Event created at the start of the test (once per run, never at import
 * time, so runs never share one), set right after the write, awaited right before the read:
 *     global _affidavit_<name>_written             (in the test, then)
 *     _affidavit_<name>_written = asyncio.Event()
 *     ...write...; if _affidavit_<name>_written is not None: _affidavit_<name>_written.set()
 *     if _affidavit_<name>_written is not None: await _affidavit_<name>_written.wait(); ...read...
 * with `_affidavit_<name>_written = None` at module level, so code that runs outside the test
 * is unchanged. The read must be in an async function. With after_loops, the event is set after
 * the outermost loop that holds the write inside the writer's function (the last of repeated
 * writes: a producer's puts), not after the write itself. */
int afd_fix_event_gate(const char *src, size_t len, const char *test, uint32_t write_line, uint32_t read_line,
                       const char *name, int after_loops, afd_buf *out, char *why, size_t whylen);

/* EVENT_GATE with the program's own event, for a reader that tests an asyncio.Event's flag before
 * the writer set it: `await
 * <event>.wait()` right before the statement at read_line that tests `<event>.is_set()` (the
 * check stays: it now always sees the event set). The statement must be in an async function. */
int afd_fix_event_wait(const char *src, size_t len, uint32_t read_line, afd_buf *out, char *why,
                       size_t whylen);

/* LOCK_ORDER, for a lock-order cycle made by one function that takes two locks it is given, in
 * the order given, nested (`async with first: ... async with second:`), and is called with them in
 * both orders. The outer `async with first:` (at outer_line) becomes
 *     _affidavit_lock_a, _affidavit_lock_b = sorted((first, second), key=id)
 *     async with _affidavit_lock_a, _affidavit_lock_b:
 * and the inner `async with second:` (at inner_line) goes, its block dedented: every caller takes
 * the two locks in one global order, and every line holds at least the locks it held before.
 * The locks must be parameters the function never rebinds; AFD_EINVAL with a reason otherwise. */
int afd_fix_lock_order(const char *src, size_t len, uint32_t outer_line, uint32_t inner_line, afd_buf *out,
                       char *why, size_t whylen);

/* OFFLOAD, for starvation: the blocking call `F(args)` that a coroutine makes at `line` (the
 * whole statement, or the right side of `x = F(args)`) becomes `await asyncio.to_thread(F, args)`,
 * so the loop runs the other tasks while it blocks a worker thread instead. AFD_EINVAL with a
 * reason when the line is not such a call in an async function. */
int afd_fix_offload(const char *src, size_t len, uint32_t line, afd_buf *out, char *why, size_t whylen);

/* The regression test, appended to the test file: `<test>_affidavit_replay =
 * affidavit.replay(token)(<test>)`: the original test function itself (it must take no arguments:
 * fixtures cannot be passed on) replayed under the schedule, so its task keeps the label the
 * schedule's delays name. `import affidavit` is added when missing. AFD_EINVAL with a
 * reason when the test is not a plain `async def test(...)` of this file without parameters. */
int afd_fix_regression_test(const char *src, size_t len, const char *test, const char *token,
                            const char *summary, afd_buf *out, char *why, size_t whylen);

#endif
