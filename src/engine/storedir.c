/* storedir.c -- the project's store and report directory (see storedir.h). */
#include "storedir.h"
#include "afd.h"
#include "buf.h"
#include "report.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *afd_storedir_dir(void)
{
    const char *d = getenv("AFFIDAVIT_DIR");
    return d && *d ? d : AFD_STORE_DIR;
}

const char *afd_storedir_path(const char *name, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%s", afd_storedir_dir(), name);
    return buf;
}

/* mkdir -p: the directory and any missing parent (AFFIDAVIT_DIR may name a nested one). */
int afd_storedir_make_dirs(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s", dir);
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(path, 0777) < 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(path, 0777) < 0 && errno != EEXIST ? -1 : 0;
}

int afd_storedir_open(afd_store **out, char *err, size_t errlen)
{
    char db[4096];
    if (afd_storedir_make_dirs(afd_storedir_dir()) < 0) {
        snprintf(err, errlen, "cannot make %s: %s", afd_storedir_dir(), strerror(errno));
        return AFD_EIO;
    }
    return afd_store_open(out, afd_storedir_path("incidents.db", db, sizeof db), err, errlen);
}

int afd_storedir_open_to_read(afd_store **out, char *err, size_t errlen)
{
    int rc = afd_storedir_open(out, err, errlen);
    if (rc != AFD_EIO)
        return rc;
    /* not writable: read what is there (a read-only checkout still shows its incidents) */
    char db[4096];
    char why[600];
    snprintf(why, sizeof why, "%s", err);
    rc = afd_store_open_readonly(out, afd_storedir_path("incidents.db", db, sizeof db), err, errlen);
    if (rc == AFD_ENOTFOUND)
        snprintf(err, errlen, "%s", why);
    return rc;
}

int afd_storedir_write_report(int64_t id, int64_t created, const char *json, const afd_trace *failing,
                              const afd_trace *passing, char *path, size_t pathlen, char *err, size_t errlen)
{
    afd_report_in in = {.id = id, .created = created, .json = json, .failing = failing, .passing = passing};
    afd_buf html;
    afd_buf_init(&html);
    int rc = afd_report_html(&in, &html, err, errlen);
    if (rc < 0) {
        afd_buf_finish(&html);
        return rc;
    }
    char reports[4096];
    afd_storedir_path("reports", reports, sizeof reports);
    if (afd_storedir_make_dirs(reports) < 0)
        goto io;
    char tmp[4200];
    snprintf(path, pathlen, "%s/incident-%" PRId64 ".html", reports, id);
    snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f)
        goto io;
    size_t wrote = fwrite(html.data, 1, html.len, f);
    if (fclose(f) != 0 || wrote != html.len || rename(tmp, path) < 0) {
        unlink(tmp);
        goto io;
    }
    afd_buf_finish(&html);
    return 0;
io:
    snprintf(err, errlen, "cannot write the report under %s/reports: %s", afd_storedir_dir(),
             strerror(errno));
    if (pathlen)
        path[0] = 0;
    afd_buf_finish(&html);
    return AFD_EIO;
}
