/* fileio.c -- bounded whole-file reads (see fileio.h).
 *
 * Invariant: never more than max + one chunk bytes are buffered, whatever the file claims to be:
 * the size is learnt by reading, not from fstat, so pipes and growing files are bounded too. The
 * workload is a handful of source files and diffs per investigation, each well under the limit. */
#include "fileio.h"
#include "afd.h"
#include "buf.h"

#include <stdlib.h>

int afd_file_read_stream(FILE *f, size_t max, char **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    afd_buf b;
    afd_buf_init(&b);
    char chunk[65536];
    size_t got;
    while (b.len <= max && (got = fread(chunk, 1, sizeof chunk, f)) > 0)
        afd_buf_put(&b, chunk, got);
    int rc = b.err ? b.err : b.len > max ? AFD_EFULL : ferror(f) ? AFD_EIO : 0;
    if (rc == 0)
        afd_buf_put_u8(&b, 0); /* a C string too; the length does not count the terminator */
    if (rc == 0 && b.err)
        rc = b.err;
    if (rc) {
        afd_buf_finish(&b);
        return rc;
    }
    *out = (char *)afd_buf_steal(&b, len);
    (*len)--;
    return 0;
}

int afd_file_read(const char *path, size_t max, char **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return AFD_EIO;
    int rc = afd_file_read_stream(f, max, out, len);
    fclose(f);
    return rc;
}
