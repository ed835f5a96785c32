/* explain_flow.c -- where the value an inferred read produced goes after its function returns it
 * (explain.h, afd_view_caller_tests): the flow of a check through calls.
 *
 * `return self._store.get(key)` decides nothing in its own function; the caller that wrote
 * `value = await self.cache.get(key)` and then `if value is not None:` does. The read's chain
 * (outermost frame first, its own frame last) names each caller's line; the source's statement
 * marks (pyscan.h, AFD_PYLINE_*) say whether that line returns the value on, tests it, or stores
 * it in a name a later condition tests. Workload: once per inferred read on a return line. */
#include "explain.h"

int afd_view_caller_tests(afd_srcmap *src, const afd_trace *tr, const afd_pyscan *own, uint32_t line,
                          uint32_t chain)
{
    if (!src || !(afd_pyscan_line_flags(own, line) & AFD_PYLINE_RETURN))
        return 0;
    afd_xframe fr[AFD_CHAIN_MAX_FRAMES];
    size_t n = afd_view_chain(tr, chain, fr, AFD_CHAIN_MAX_FRAMES);
    if (n < 2 || fr[n - 1].line != line)
        return 0; /* no caller known, or the chain is not the read's */
    for (size_t i = n - 1; i-- > 0;) {
        const afd_pyscan *ps = afd_view_srcmap_get(src, fr[i].file);
        uint8_t f = ps ? afd_pyscan_line_flags(ps, fr[i].line) : 0;
        if (f & (AFD_PYLINE_TEST | AFD_PYLINE_NAME_TESTED))
            return 1;
        if (!(f & AFD_PYLINE_RETURN))
            return 0;
    }
    return 0;
}
