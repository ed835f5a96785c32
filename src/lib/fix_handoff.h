/* fix_handoff.h -- HANDOFF_CLEANUP: a waiter that was handed a future's result and then
 * interrupted passes what it was handed on, and re-raises.
 *
 * The shape it fixes: an async method of a class creates a future, registers it in a container of
 * `self` (`self._waiters.append(fut)`, or an object holding it: `self._requests.append(req)` for
 * `await req.assigned`) and awaits it; a plain method of the same class that reads that container
 * completes the future (`<w>.set_result(<v>)`): the setter. Once the future holds a result, the
 * waiter owns what it was handed; cancelled before it resumes, it drops it, and nobody else gets
 * it. The fix runs, when the waiter leaves by an exception after the hand-off
 * (`<fut>.done() and not <fut>.cancelled()`), one of:
 *   AFD_HANDOFF_PASS_ON  the setter called the way the owner calls it: `self.F()`, or
 *                        `self.F(<fut>.result())` when F hands on its one parameter (`put(item)`).
 *                        When F opens with a precondition that raises (`release()` of a lock the
 *                        waiter never marked taken), the waiter first does what it does on success
 *                        -- the one-line assignments to `self` that follow the await -- so the
 *                        owner's call is valid.
 *   AFD_HANDOFF_CLOSE    the handed resource closed: `<fut>.result().close()`, when the setter
 *                        hands an instance it creates of a class of this module that has close().
 * The cleanup goes at the top of the handler that already catches the waiter's CancelledError
 * (`except asyncio.CancelledError`, `except BaseException`, bare `except`) and ends in a bare
 * `raise`; without one the await statement is wrapped in
 * `try: ... except asyncio.CancelledError: <cleanup>; raise`. The exception always propagates:
 * nothing here hides a cancellation. */
#ifndef AFD_FIX_HANDOFF_H
#define AFD_FIX_HANDOFF_H

#include "buf.h"

#include <stddef.h>
#include <stdint.h>

typedef enum afd_handoff_giveback { AFD_HANDOFF_PASS_ON, AFD_HANDOFF_CLOSE } afd_handoff_giveback;

/* Writes the patched source into out (reset first). await_line (1-based) holds the waiter's
 * `await <fut>` statement. On a shape it cannot fix (not the await of a future, no registration,
 * no setter, a setter called in a way the waiter cannot call it, the give-back already there)
 * returns AFD_EINVAL with a one-line reason in why; AFD_ENOMEM when out of memory. */
int afd_fix_handoff_cleanup(const char *src, size_t len, uint32_t await_line, afd_handoff_giveback how,
                            afd_buf *out, char *why, size_t whylen);

/* HANDOFF_CLEANUP for an item got from a queue (fix_handoff_queue.c): in the async function that
 * holds the await at await_line, the latest `x = await <q>.get()` / `x = <q>.get_nowait()` of a
 * block around it (q a name or an attribute the module gives put_nowait()), and the first later
 * statement of that block handing x on (`return x`, `yield x`). The statements between them are
 * guarded by `except BaseException: <q>.put_nowait(x); raise` -- one more handler of the try when
 * they are one try holding the await whose handlers let a cancellation through, else a new try
 * around them -- so an interruption while x is held puts it back and propagates. AFD_EINVAL with a
 * reason when x is put back already on that span, the span crosses a yield, no hand-on follows, or
 * the try already catches the cancellation. */
int afd_fix_handoff_putback(const char *src, size_t len, uint32_t await_line, afd_buf *out, char *why,
                            size_t whylen);

/* HANDOFF_AT_WAKEUP, for a setter that looks only at the first waiter and, when that one cannot
 * take what it hands (its future already cancelled or done), hands it to nobody:
 *     if self.<q>:                     while self.<q>:
 *         w = self.<q>[0]                  w = self.<q>.popleft()
 *         if not w.cancelled():    ->      if not w.cancelled():
 *             self.<q>.popleft()               w.set_result(...)
 *             w.set_result(...)                return
 *             return
 * The owner is decided when it is woken, among the live waiters: each waiter looked at leaves the
 * queue, and a dead one (it can never receive a result) is skipped for the next. await_line is
 * the waiter's await, as for afd_fix_handoff_cleanup (the setter is found the same way); the
 * inner test must be of the waiter's future (`cancelled()` or `done()`). AFD_EINVAL with a reason
 * on any other shape. */
int afd_fix_handoff_at_wakeup(const char *src, size_t len, uint32_t await_line, afd_buf *out, char *why,
                              size_t whylen);

#endif
