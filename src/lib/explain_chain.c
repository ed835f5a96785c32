/* explain_chain.c -- await chains read back: the frames a CHAIN event's string lists.
 *
 * A chain string holds one user frame per line, outermost first, each "file:line function". The
 * string crosses a process boundary (it comes from the traced program's file and function names),
 * so it is parsed defensively: a line that does not have that shape ends the chain, a file or
 * function too long for a frame's fields is cut, never overrun. Workload: a few chains per cause. */
#include "explain.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Parses one frame line s[0..len) into f; 0 when it has no "file:line function" shape. */
static int parse_frame(const char *s, size_t len, afd_xframe *f)
{
    const char *end = s + len;
    const char *sp = NULL;
    for (const char *p = end; p > s; p--)
        if (p[-1] == ' ') {
            sp = p - 1;
            break;
        }
    if (!sp)
        return 0;
    const char *colon = NULL;
    for (const char *p = sp; p > s; p--)
        if (p[-1] == ':') {
            colon = p - 1;
            break;
        }
    if (!colon || colon == s || colon + 1 == sp)
        return 0;
    uint64_t line = 0;
    for (const char *p = colon + 1; p < sp; p++) {
        if (*p < '0' || *p > '9' || line > 100000000u)
            return 0;
        line = line * 10 + (uint64_t)(*p - '0');
    }
    size_t fl = (size_t)(colon - s), nl = (size_t)(end - sp - 1);
    if (fl >= sizeof f->file)
        fl = sizeof f->file - 1;
    if (nl >= sizeof f->function)
        nl = sizeof f->function - 1;
    memcpy(f->file, s, fl);
    f->file[fl] = 0;
    memcpy(f->function, sp + 1, nl);
    f->function[nl] = 0;
    f->line = (uint32_t)line;
    return 1;
}

size_t afd_view_chain(const afd_trace *tr, uint32_t chain, afd_xframe *out, size_t cap)
{
    if (chain == AFD_NOSTR || chain >= tr->n_strings)
        return 0;
    const char *s = afd_trace_string(tr, chain);
    size_t n = 0;
    while (n < cap && *s) {
        const char *nl = strchr(s, '\n');
        size_t len = nl ? (size_t)(nl - s) : strlen(s);
        if (!parse_frame(s, len, &out[n]))
            break;
        n++;
        if (!nl)
            break;
        s = nl + 1;
    }
    return n;
}

size_t afd_view_access_frames(const afd_view *v, const afd_xaccess *a, afd_xframe *out)
{
    size_t n = afd_view_chain(v->tr, a->chain, out, AFD_CHAIN_MAX_FRAMES);
    if (n)
        return n;
    snprintf(out->file, sizeof out->file, "%s", a->file ? a->file : "");
    out->line = a->line;
    out->function[0] = 0;
    return 1;
}
