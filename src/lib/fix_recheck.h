/* fix_recheck.h -- RECHECK, double-checked lazy initialization, as a minimal text edit.
 *
 * A check-then-act on lazily initialized state (`if not self._x: <await init>; self._x = ...`)
 * lets every task that checks before the first one wrote run the initialization. RECHECK keeps
 * the check, and puts the initialization under a lock with the check made again inside it: the
 * first task initializes, the others wait for the lock, find the state set and skip it; once it is
 * set, no task takes the lock at all. Two shapes, both in an async function:
 *
 *     if COND:                        if COND:
 *         BODY                            async with LOCK:
 *                                             if COND:
 *                                                 BODY
 *
 *     if COND:                        if COND:
 *         return X                        return X
 *     S1 ... Sk (holds the act)       async with LOCK:
 *                                         if COND:
 *                                             return X
 *                                         S1 ... Sk
 *
 * COND is evaluated once more, under the lock, so it must not await or bind a name. The lock
 * lives where the resource lives, as LOCK's (fix.h). */
#ifndef AFD_FIX_RECHECK_H
#define AFD_FIX_RECHECK_H

#include "buf.h"
#include "fix.h"

#include <stddef.h>

/* RECHECK for the check at site->read_line (the line of an `if` statement's condition, which
 * reads the resource or calls down to the read) and the act at site->write_line (the write, or
 * the statement of that function that calls down to it), guarding the resource site->root /
 * site->name. owner, when not NULL, is the class the resource belongs to: a method of another
 * class is refused (its lock would not be the resource's). Writes the patched source into out
 * (reset first), or returns AFD_EINVAL with a one-line reason in why when the shape is not one of
 * the two above. */
int afd_fix_recheck(const char *src, size_t len, const afd_lock_site *site, const char *owner, afd_buf *out,
                    char *why, size_t whylen);

/* SINGLE_FLIGHT, for a cache stampede: an async function that looks a key up (the statement at
 * read_line), computes on a miss and stores the result (the statement at write_line, both direct
 * statements of its body) lets every concurrent miss compute. The statements from the lookup to
 * the end of the function become an inner coroutine, and the function keeps the in-flight task per
 * key instead of the result, so concurrent misses await the one computation:
 *
 *     async def _affidavit_compute():
 *         <the lookup .. the end of the function>
 *     _affidavit_task = <in-flight>.get(KEY)
 *     if _affidavit_task is None:
 *         _affidavit_task = asyncio.ensure_future(_affidavit_compute())
 *         <in-flight>[KEY] = _affidavit_task
 *         _affidavit_task.add_done_callback(lambda _t: <in-flight>.pop(KEY, None))
 *     return await _affidavit_task
 *
 * KEY is the name both the lookup's and the store's calls are given, bound before the lookup; the
 * in-flight dict is an instance attribute made in `__init__` for a method (else module state).
 * Refused when the moved statements rebind a name bound before them (it would become the inner
 * coroutine's own), yield, or declare nonlocal or global names. */
int afd_fix_single_flight(const char *src, size_t len, uint32_t read_line, uint32_t write_line, afd_buf *out,
                          char *why, size_t whylen);

#endif
