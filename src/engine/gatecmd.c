/* gatecmd.c -- `affidavit gate DIFF`: any unified diff (a human's fix included) against the policy.
 *
 * The diff is applied in memory to the files it names, read from the working directory; nothing
 * is written. Exit 0 when every check passes, 1 when one fails, 2 for a diff that cannot be read
 * or applied. */
#include "afd.h"
#include "cmds.h"
#include "fileio.h"
#include "gate.h"
#include "out.h"
#include "runs.h"
#include "udiff.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A diff larger than this is refused. */
#define MAX_DIFF (64u * 1024u * 1024u)

int afd_cmd_gate(const afd_cli *cli)
{
    const char *path = cli->nodeid; /* the DIFF argument */
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) {
        afd_runs_error_line("cannot read the diff %s%s", path, "");
        return AFD_EXIT_USAGE;
    }
    size_t len = 0;
    char *text = NULL;
    int read_rc = afd_file_read_stream(f, MAX_DIFF, &text, &len);
    if (f != stdin)
        fclose(f);
    if (read_rc < 0) {
        afd_runs_error_line("cannot read the diff %s (too large?)%s", path, "");
        return AFD_EXIT_USAGE;
    }
    afd_udiff d;
    char err[512];
    int rc = afd_udiff_parse(text, len, &d, err, sizeof err);
    free(text);
    if (rc < 0 || d.n_files == 0) {
        afd_runs_error_line("%s%s", rc < 0 ? err : "the diff changes no file", "");
        afd_udiff_finish(&d);
        return AFD_EXIT_USAGE;
    }
    afd_gate_file *files = calloc(d.n_files, sizeof *files);
    char **befores = calloc(d.n_files, sizeof *befores);
    afd_buf *afters = calloc(d.n_files, sizeof *afters);
    int exit_code = AFD_EXIT_INTERNAL;
    if (!files || !befores || !afters)
        goto out;
    for (size_t i = 0; i < d.n_files; i++)
        afd_buf_init(&afters[i]);
    for (size_t i = 0; i < d.n_files; i++) {
        const afd_udiff_file *uf = &d.files[i];
        const char *name = uf->old_path ? uf->old_path : uf->new_path;
        size_t blen = 0;
        if (!uf->is_new) {
            if (afd_file_read(uf->old_path, MAX_DIFF, &befores[i], &blen) < 0) {
                afd_runs_error_line("the diff changes %s, which cannot be read here%s", uf->old_path, "");
                exit_code = AFD_EXIT_USAGE;
                goto out;
            }
        }
        if (afd_udiff_apply(uf, befores[i] ? befores[i] : "", blen, &afters[i], err, sizeof err) < 0) {
            afd_runs_error_line("%s%s", err, "");
            exit_code = AFD_EXIT_USAGE;
            goto out;
        }
        files[i] = (afd_gate_file){name, befores[i], blen,
                                   uf->is_deleted ? NULL : (const char *)afters[i].data, afters[i].len};
        if (!files[i].after && !uf->is_deleted)
            files[i].after = "";
    }
    afd_gate_check checks[AFD_GATE__COUNT];
    if (afd_gate_run(files, d.n_files, cli->allow_src, checks) < 0)
        goto out;
    int passed = afd_gate_passed(checks);
    afd_buf o;
    afd_buf_init(&o);
    if (cli->json) {
        afd_buf_printf(&o, "{\"schema\": 1, \"diff\": ");
        afd_json_str(&o, path);
        afd_buf_printf(&o, ", \"passed\": %s, \"gate\": [", passed ? "true" : "false");
        for (int k = 0; k < AFD_GATE__COUNT; k++) {
            afd_buf_printf(
                &o, "%s{\"check\": \"%s\", \"group\": \"%s\", \"passed\": %s, \"reason\": ", k ? ", " : "",
                checks[k].name, checks[k].group, checks[k].passed ? "true" : "false");
            afd_json_str(&o, checks[k].reason);
            afd_buf_printf(&o, "}");
        }
        afd_buf_printf(&o, "]}\n");
    } else {
        afd_buf_printf(&o, "%s: policy gate %s\n", path, passed ? "PASSED" : "FAILED");
        const char *group = "";
        for (int k = 0; k < AFD_GATE__COUNT; k++) {
            if (strcmp(group, checks[k].group) != 0) {
                group = checks[k].group;
                afd_buf_printf(&o, "  %s:\n", group);
            }
            afd_buf_printf(&o, "    %s %-22s %s\n", checks[k].passed ? "pass" : "FAIL", checks[k].name,
                           checks[k].reason);
        }
    }
    fwrite(o.data, 1, o.len, stdout);
    afd_buf_finish(&o);
    exit_code = passed ? AFD_EXIT_CLEAN : AFD_EXIT_FAILURE;
out:
    for (size_t i = 0; befores && afters && i < d.n_files; i++) {
        free(befores[i]);
        afd_buf_finish(&afters[i]);
    }
    free(files);
    free(befores);
    free(afters);
    afd_udiff_finish(&d);
    return exit_code;
}
