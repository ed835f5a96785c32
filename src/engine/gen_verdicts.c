/* gen_verdicts.c -- writes affidavit/_verdicts.py from incident.h's AFD_VERDICTS at build time.
 *
 * The pytest plugin shows a verdict in its own words; this program prints those words, from the
 * one table the engine and the reports use, as a Python dict, so the plugin holds no copy of
 * them. It runs once per build. */
#include "incident.h"

#include <stdio.h>
#include <string.h>

int main(void)
{
    printf("\"\"\"The verdicts' words for the pytest plugin, generated at build time from AFD_VERDICTS in\n"
           "src/lib/incident.h by src/engine/gen_verdicts.c: edit that table, not this file.\"\"\"\n\n"
           "from typing import Dict\n\nWORDS: Dict[str, str] = {\n");
#define AFD_VERDICT_PY_(e, name, head, word, css, exit, plugin)                                              \
    if (strpbrk(name plugin, "\"\\")) {                                                                      \
        fprintf(stderr, "gen_verdicts: a verdict's words hold a quote or a backslash\n");                    \
        return 1;                                                                                            \
    }                                                                                                        \
    printf("    \"%s\": \"%s\",\n", name, plugin);
    AFD_VERDICTS(AFD_VERDICT_PY_)
#undef AFD_VERDICT_PY_
    printf("}\n");
    return 0;
}
