/* inv_report.h -- the investigation's last stage (inv_report.c): its outcome as an incident
 * (incident.h), stored with its runs and traces, and printed. */
#ifndef AFD_ENGINE_INV_REPORT_H
#define AFD_ENGINE_INV_REPORT_H

#include "inv.h"

#include <stdint.h>

/* Turns the outcome into an incident (moving its cause and evidence out of o), stores it with the
 * runs and the failing and passing traces (Borrowed), writes its HTML report and prints the
 * result: the text for a person, or with --json the document led by "incident" and "report".
 * Returns 0, or AFD_ENOMEM when the incident could not be built or printed. */
int inv_report(const afd_cli *cli, const inv *v, outcome *o, uint64_t elapsed_ns, const kept_run *fail_run,
               const kept_run *pass_run, const runlog *runs);

#endif
