/* inv_repair_handoff.c -- the repair stage's HANDOFF_CLEANUP and HANDOFF_AT_WAKEUP candidates
 * (see inv.h), for a cancelled hand-off or a lost wake-up.
 *
 * Both causes name the waiter's await: the await at which it was handed a future's result (or
 * woken) and then cancelled before it resumed. The fix is made in the file of that await
 * (fix_handoff.h): the waiter, leaving by an exception after the hand-off, passes what it was
 * handed on through the setter, or closes the resource it was handed, and re-raises
 * (HANDOFF_CLEANUP); or the setter, which looks only at the first waiter, decides the owner when
 * it wakes one, among the live waiters (HANDOFF_AT_WAKEUP); or the function that got an item from
 * a queue puts it back when interrupted while holding it, and re-raises (HANDOFF_CLEANUP). Each shape that
 * applies is kept as a candidate; verification decides which, if any, holds. */
#include "fix_handoff.h"
#include "inv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void inv_propose_handoff(const afd_view *f, const afd_view *p, outcome *o, const afd_cli *cli)
{
    (void)f;
    (void)p;
    (void)cli;
    char file[512];
    snprintf(file, sizeof file, "%s", o->c.await_site ? o->c.await_site : "");
    char *colon = strrchr(file, ':');
    unsigned long line = colon ? strtoul(colon + 1, NULL, 10) : 0;
    if (!colon || !line || line > UINT32_MAX) {
        snprintf(o->fix_why, sizeof o->fix_why,
                 "the hand-off's await was not placed at a line of the source: no await to clean up after");
        return;
    }
    *colon = 0;
    size_t len = 0;
    char *before = inv_read_source(o, file, &len);
    if (!before)
        return;
    afd_buf after;
    afd_buf_init(&after);
    char why[2][256] = {"", ""};
    static const afd_handoff_giveback hows[2] = {AFD_HANDOFF_PASS_ON, AFD_HANDOFF_CLOSE};
    size_t added = 0;
    for (int k = 0; k < 2; k++)
        if (afd_fix_handoff_cleanup(before, len, (uint32_t)line, hows[k], &after, why[k], sizeof why[k]) ==
            0) {
            inv_add_candidate(o, "HANDOFF_CLEANUP", file, before, len, &after);
            added++;
        }
    char why_queue[256] = "";
    if (afd_fix_handoff_putback(before, len, (uint32_t)line, &after, why_queue, sizeof why_queue) == 0) {
        inv_add_candidate(o, "HANDOFF_CLEANUP", file, before, len, &after);
        added++;
    }
    char why_wake[256] = "";
    if (afd_fix_handoff_at_wakeup(before, len, (uint32_t)line, &after, why_wake, sizeof why_wake) == 0) {
        inv_add_candidate(o, "HANDOFF_AT_WAKEUP", file, before, len, &after);
        added++;
    }
    if (!added && !o->n_cand)
        snprintf(o->fix_why, sizeof o->fix_why,
                 "HANDOFF_CLEANUP not possible here: %.100s; closing it: %.60s; putting a queue's item back: "
                 "%.100s; HANDOFF_AT_WAKEUP: %.100s",
                 why[0], why[1], why_queue, why_wake);
    afd_buf_finish(&after);
    free(before);
}
