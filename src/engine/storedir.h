/* storedir.h -- where incidents are kept: `.affidavit/` in the working directory (the project
 * root the node ids are relative to), or the directory AFFIDAVIT_DIR names (the pytest plugin's
 * report_dir setting), holding `incidents.db` and `reports/`. */
#ifndef AFD_ENGINE_STOREDIR_H
#define AFD_ENGINE_STOREDIR_H

#include "store.h"
#include "trace.h"

#include <stddef.h>
#include <stdint.h>

#define AFD_STORE_DIR ".affidavit"

/* The directory of the store and the reports: $AFFIDAVIT_DIR, else .affidavit (static). */
const char *afd_storedir_dir(void);
/* afd_storedir_dir() + "/" + name, in buf. */
const char *afd_storedir_path(const char *name, char *buf, size_t len);

/* mkdir -p dir: the directory and any missing parent. */
int afd_storedir_make_dirs(const char *dir);

/* Opens the project's store (creating it); a one-line message in err on failure. */
int afd_storedir_open(afd_store **out, char *err, size_t errlen);
/* The same for commands that only read (ls, show, report): when the store cannot be opened for
 * writing (a read-only project) it is opened read-only. AFD_ENOTFOUND when there is none. */
int afd_storedir_open_to_read(afd_store **out, char *err, size_t errlen);

/* Writes the HTML report of an incident to .affidavit/reports/incident-<id>.html (through a
 * temporary file and a rename, so a reader never sees half a report); its path goes to path. */
int afd_storedir_write_report(int64_t id, int64_t created, const char *json, const afd_trace *failing,
                              const afd_trace *passing, char *path, size_t pathlen, char *err, size_t errlen);

#endif
