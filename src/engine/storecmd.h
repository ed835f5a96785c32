/* storecmd.h -- ls, show, report and serve: the commands over the incident store. */
#ifndef AFD_ENGINE_STORECMD_H
#define AFD_ENGINE_STORECMD_H

/* argv[1] is the command ("ls", "show", "report", "serve" or "merge"); parses its own options. */
int afd_cmd_store(int argc, char **argv);

#endif
