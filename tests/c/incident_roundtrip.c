/* incident_roundtrip.c -- reads an incident document on stdin, writes it back through the struct.
 *
 * afd_incident_from_json then afd_incident_to_json: tests/test_incident_model.py feeds it every
 * golden document and the broken ones, so the Python tests reach the C reader without an engine
 * command of its own. Exit 0 with the document on stdout, or 1 with the one-line reason on
 * stderr. */
#include "incident.h"

#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    size_t len = 0, cap = 1 << 16;
    char *text = malloc(cap);
    for (size_t n; text && (n = fread(text + len, 1, cap - len, stdin)) > 0;) {
        len += n;
        if (len == cap) {
            char *t = realloc(text, cap *= 2);
            if (!t)
                free(text);
            text = t;
        }
    }
    if (!text) {
        fprintf(stderr, "incident_roundtrip: out of memory\n");
        return 1;
    }
    afd_incident inc;
    char err[300];
    char *out = NULL;
    size_t out_len = 0;
    int rc = afd_incident_from_json(text, len, &inc, err, sizeof err);
    if (rc < 0)
        fprintf(stderr, "%s\n", err);
    else if (afd_incident_to_json(&inc, &out, &out_len) < 0)
        fprintf(stderr, "incident_roundtrip: the document could not be written\n");
    else
        fwrite(out, 1, out_len, stdout);
    free(out);
    free(text);
    afd_incident_finish(&inc);
    return rc < 0 || !out ? 1 : 0;
}
