/* checkcmd.c -- `affidavit check FILE --cls C --method M`: races in a class, without a test.
 *
 * The target is checked from its source first (pydef: the file parses, the class is at module
 * level, the method is `async def`, arguments are given when it needs them), so a bad target is
 * one line and exit code 2 before any process starts. Then a two-line test module is written to
 * .affidavit/check/ (or $AFFIDAVIT_DIR/check/) that hands the target to affidavit.check.harness,
 * and that test is investigated like any other: sampled, explored, replayed, shrunk, explained
 * and, with --fix, repaired and verified. The harness's oracle is serializability (see
 * python/affidavit/check.py). A fix is an edit of the class's own file, so --allow-src is implied:
 * pointing at the class is the permission. */
#include "afd.h"
#include "buf.h"
#include "cmds.h"
#include "incident.h"
#include "pydef.h"

#include <errno.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* One line on stderr, the engine's usual error form. */
__attribute__((format(printf, 1, 2))) static void error_line(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("affidavit: error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* A Python string literal of s (None for NULL): quotes, backslashes and control bytes escaped,
 * other bytes (UTF-8 included) as they are. */
static void py_literal(afd_buf *b, const char *s)
{
    if (!s) {
        afd_buf_printf(b, "None");
        return;
    }
    afd_buf_put_u8(b, '\'');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '\\' || *p == '\'')
            afd_buf_printf(b, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f)
            afd_buf_printf(b, "\\x%02x", *p);
        else
            afd_buf_put_u8(b, *p);
    }
    afd_buf_put_u8(b, '\'');
}

/* The file's path relative to the working directory (the project root the mirror of a fix
 * verification is made of), or -1 when it lies outside it. */
static int project_relative(const char *file, char *out, size_t cap)
{
    char here[PATH_MAX], real[PATH_MAX];
    if (!getcwd(here, sizeof here) || !realpath(file, real))
        return -1;
    size_t n = strlen(here);
    if (strncmp(real, here, n) != 0 || real[n] != '/')
        return -1;
    snprintf(out, cap, "%s", real + n + 1);
    return 0;
}

static int target_ok(const afd_cli *cli, char *rel, size_t rel_cap)
{
    const char *file = cli->check_file, *cls = cli->check_cls, *method = cli->check_method;
    struct stat st;
    if (stat(file, &st) < 0) {
        error_line("no such file: %s", file);
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        error_line("not a Python file: %s", file);
        return -1;
    }
    if (project_relative(file, rel, rel_cap) < 0) {
        error_line("%s is outside the current directory: run check from the project root that holds it", file);
        return -1;
    }
    size_t len = 0;
    char *src = afd_read_source_file(file, &len);
    if (!src) {
        error_line("cannot read %s (or it is larger than 16 MiB)", file);
        return -1;
    }
    afd_pymethod m;
    int rc = afd_pydef_method(src, len, cls, method, &m);
    free(src);
    if (rc < 0)
        error_line("cannot parse %s", file);
    else if (m.error_line)
        error_line("%s does not parse: syntax error near line %u", file, (unsigned)m.error_line);
    else if (!m.found_class)
        error_line("%s has no class %s at module level", file, cls);
    else if (!m.found_method)
        error_line("class %s has no method %s (it has: %s)", cls, method, m.methods[0] ? m.methods : "none");
    else if (!m.is_async)
        error_line("%s.%s (%s, line %u) is a plain def: check calls a coroutine method (async def) concurrently",
                   cls, method, file, (unsigned)m.line);
    else if (m.required[0] && !cli->check_args)
        error_line("%s.%s needs arguments (%s): give --args 'EXPR', a Python expression of i (the call's "
                   "index) that is the argument, or a tuple of them",
                   cls, method, m.required);
    else
        return 0;
    return -1;
}

/* Writes the harness test through a temporary file and a rename; its node id goes to node. */
static int write_harness(const afd_cli *cli, const char *rel, char *node, size_t node_cap)
{
    char dir[PATH_MAX], path[PATH_MAX + 256], tmp[PATH_MAX + 300];
    incident_path("check", dir, sizeof dir);
    if (incident_make_dirs(dir) < 0) {
        error_line("cannot create %s: %s", dir, strerror(errno));
        return -1;
    }
    char test[200];
    snprintf(test, sizeof test, "test_check_%s_%s", cli->check_cls, cli->check_method);
    snprintf(path, sizeof path, "%s/%s.py", dir, test);
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    afd_buf b;
    afd_buf_init(&b);
    afd_buf_printf(&b, "# Written by `affidavit check`, again on every check: edits here are lost.\n"
                       "from affidavit.check import harness\n\n%s = harness(file=", test);
    py_literal(&b, rel);
    afd_buf_printf(&b, ", cls=");
    py_literal(&b, cli->check_cls);
    afd_buf_printf(&b, ", method=");
    py_literal(&b, cli->check_method);
    afd_buf_printf(&b, ",\n    init=");
    py_literal(&b, cli->check_init);
    afd_buf_printf(&b, ", args=");
    py_literal(&b, cli->check_args);
    afd_buf_printf(&b, ", calls=%llu, state=", (unsigned long long)cli->check_calls);
    py_literal(&b, cli->check_state);
    afd_buf_printf(&b, ", invariant=");
    py_literal(&b, cli->check_invariant);
    afd_buf_printf(&b, ")\n");
    int rc = b.err ? -1 : 0;
    FILE *f = rc ? NULL : fopen(tmp, "wb");
    if (!f || fwrite(b.data, 1, b.len, f) != b.len)
        rc = -1;
    if (f && fclose(f) != 0)
        rc = -1;
    if (rc == 0 && rename(tmp, path) < 0)
        rc = -1;
    afd_buf_finish(&b);
    if (rc < 0) {
        unlink(tmp);
        error_line("cannot write the check's test in %s: %s", dir, strerror(errno));
        return -1;
    }
    char rel_path[PATH_MAX];
    const char *shown = project_relative(path, rel_path, sizeof rel_path) == 0 ? rel_path : path;
    snprintf(node, node_cap, "%s::%s", shown, test);
    return 0;
}

int afd_cmd_check(const afd_cli *cli_in)
{
    afd_cli cli = *cli_in;
    char rel[PATH_MAX], node[2 * PATH_MAX];
    if (target_ok(&cli, rel, sizeof rel) < 0 || write_harness(&cli, rel, node, sizeof node) < 0)
        return AFD_EXIT_USAGE;
    cli.nodeid = node;
    cli.allow_src = 1;
    return afd_cmd_investigate(&cli);
}
