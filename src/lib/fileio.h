/* fileio.h -- reading a whole file into memory, with a size limit.
 *
 * Source files, diffs and documents are read whole and then parsed; a limit keeps a huge or endless
 * input (a FIFO, /dev/zero, stdin) from exhausting memory, and the result is NUL-terminated so that
 * a text parser may treat it as a C string (the length does not count the terminator). */
#ifndef AFD_FILEIO_H
#define AFD_FILEIO_H

#include <stddef.h>
#include <stdio.h>

/* Reads the file at path into *out, a new NUL-terminated heap buffer the caller frees, and sets
 * *len to its length. A file of more than max bytes is refused. Returns 0, AFD_EIO (cannot open or
 * read), AFD_EFULL (more than max bytes) or AFD_ENOMEM; on error *out is NULL and *len 0. */
int afd_file_read(const char *path, size_t max, char **out, size_t *len);

/* The same from an open stream (stdin, say), read to its end or past max; f is not closed. */
int afd_file_read_stream(FILE *f, size_t max, char **out, size_t *len);

#endif
