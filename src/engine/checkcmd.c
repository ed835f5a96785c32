/* checkcmd.c -- `affidavit check FILE --cls C --method M`: races in a class, without a test.
 *
 * The target is checked from its source first (pydef: the file parses, the class is at module
 * level, the method is `async def`, arguments are given when it needs them), so a bad target is
 * one line and exit code 2 before any process starts. A method the class inherits is looked up
 * through its bases: classes of the same file and of the project's modules it imports (relative
 * or absolute imports that resolve to a file under the working directory), up to
 * MAX_BASE_DEPTH classes deep. A base from outside the project (an installed package) is not
 * read: when the method is not found in the project, the harness's import decides (Python's own
 * attribute lookup, the MRO), and a missing method is still one line and exit code 2, after the
 * worker started. Then a two-line test module is written to
 * .affidavit/check/ (or $AFFIDAVIT_DIR/check/) that hands the target to affidavit.check.harness,
 * and that test is investigated like any other: sampled, explored, replayed, shrunk, explained
 * and, with --fix, repaired and verified. The harness's oracle is serializability (see
 * python/affidavit/check.py). A fix is an edit of the class's own file, so --allow-src is implied:
 * pointing at the class is the permission. */
#include "afd.h"
#include "buf.h"
#include "cmds.h"
#include "storedir.h"
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
__attribute__((format(printf, 1, 2))) static void afd_runs_error_line(const char *fmt, ...)
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

/* How many classes deep the base lookup goes before it gives up (a cycle ends there too). */
#define MAX_BASE_DEPTH 8

/* What the lookup of a method through a class and its bases found. */
typedef struct method_lookup {
    afd_pymethod own;        /* the class named on the command line, as its own file declares it */
    afd_pymethod def;        /* the class that defines the method (valid when found) */
    char def_file[PATH_MAX]; /* that class's file */
    char def_cls[128];       /* that class's name */
    int found;
    char outside[256]; /* a base that lies outside the project (an installed package) or in
                          a module not found: whether it defines the method is for Python */
} method_lookup;

/* The file of `module` as imported from `from_file`, when it is a file of the project (under the
 * working directory): a relative module against from_file's package, an absolute one against the
 * directory above from_file's top package (where pytest's prepend import puts it) and then the
 * working directory. -1 when it is neither: an installed package, or no such module. */
static int module_file(const char *from_file, const char *module, char *out, size_t cap)
{
    char dir[PATH_MAX], rest[PATH_MAX], cand[2 * PATH_MAX + 32], here[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", from_file);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = 0;
    else
        snprintf(dir, sizeof dir, ".");
    size_t dots = strspn(module, ".");
    snprintf(rest, sizeof rest, "%s", module + dots);
    for (char *p = rest; *p; p++)
        if (*p == '.')
            *p = '/';
    const char *roots[2] = {dir, NULL};
    char top[PATH_MAX];
    if (dots) {
        for (size_t i = 1; i < dots; i++) { /* each dot past the first climbs one package */
            slash = strrchr(dir, '/');
            if (!slash)
                return -1;
            *slash = 0;
        }
    } else {
        /* the first directory above from_file without an __init__.py, as check.py imports it */
        snprintf(top, sizeof top, "%s", dir);
        for (;;) {
            snprintf(cand, sizeof cand, "%s/__init__.py", top);
            if (access(cand, R_OK) != 0 || !strcmp(top, "."))
                break;
            if ((slash = strrchr(top, '/')))
                *slash = 0;
            else
                snprintf(top, sizeof top, ".");
        }
        roots[0] = top;
        roots[1] = getcwd(here, sizeof here) ? here : NULL;
    }
    for (int r = 0; r < 2 && roots[r]; r++) {
        const char *forms[2] = {"%s/%s.py", "%s/%s/__init__.py"};
        for (int f = 0; f < 2; f++) {
            if (!rest[0] && f == 0)
                continue; /* `from . import x`: the package itself */
            snprintf(cand, sizeof cand, forms[f], roots[r], rest);
            if (!rest[0])
                snprintf(cand, sizeof cand, "%s/__init__.py", roots[r]);
            char rel[PATH_MAX];
            if (access(cand, R_OK) == 0 && project_relative(cand, rel, sizeof rel) == 0) {
                snprintf(out, cap, "%s", rel);
                return 0;
            }
        }
    }
    return -1;
}

static void lookup_in(const char *file, const char *cls, const char *method, int depth, method_lookup *out);

/* Follows one base expression of a class in file (its source src): a class of the same file, a
 * name imported from a project module, or `mod.Base` of an imported module. */
static void follow_base(const char *file, const char *src, size_t len, const char *base, const char *method,
                        int depth, method_lookup *out)
{
    char head[256], module[512], attr[256], full[1024], path[PATH_MAX];
    const char *dot = strchr(base, '.'), *last = strrchr(base, '.');
    snprintf(head, sizeof head, "%.*s", dot ? (int)(dot - base) : (int)strlen(base), base);
    if (!dot) {
        afd_pymethod local;
        if (afd_pydef_method(src, len, base, method, &local) == 0 && local.found_class) {
            lookup_in(file, base, method, depth + 1, out);
            return;
        }
    }
    if (afd_pydef_import(src, len, head, module, sizeof module, attr, sizeof attr) != 1)
        return; /* a builtin (object, dict, Exception): none has an async method to inherit */
    const char *cls = dot ? last + 1 : attr;
    if (!dot && !attr[0])
        return; /* `import name`: a module, not a class */
    if (!dot)
        snprintf(full, sizeof full, "%s", module);
    else if (attr[0]) /* `from P import mod` then mod.[sub.]Base */
        snprintf(full, sizeof full, "%s%s%s%.*s", module, module[strlen(module) - 1] == '.' ? "" : ".", attr,
                 (int)(last - dot), dot);
    else /* `import a[.b]` (or `import x as head`) then head.[sub.]Base */
        snprintf(full, sizeof full, "%s%.*s", module, (int)(last - dot), dot);
    if (module_file(file, full, path, sizeof path) < 0) {
        if (!out->outside[0])
            snprintf(out->outside, sizeof out->outside, "%.120s (from %.120s)", base, full);
        return;
    }
    lookup_in(path, cls, method, depth + 1, out);
}

/* Looks cls.method up in file and, when cls does not define it, in its bases in order (depth
 * first, as Python's MRO does for single inheritance and for the first base of several). */
static void lookup_in(const char *file, const char *cls, const char *method, int depth, method_lookup *out)
{
    if (out->found || depth > MAX_BASE_DEPTH)
        return;
    size_t len = 0;
    char *src = afd_read_source_file(file, &len);
    afd_pymethod m;
    if (!src || afd_pydef_method(src, len, cls, method, &m) < 0 || !m.found_class) {
        free(src);
        return;
    }
    if (m.found_method) {
        out->def = m;
        snprintf(out->def_file, sizeof out->def_file, "%s", file);
        snprintf(out->def_cls, sizeof out->def_cls, "%s", cls);
        out->found = 1;
        free(src);
        return;
    }
    char bases[sizeof m.bases];
    snprintf(bases, sizeof bases, "%s", m.bases);
    for (char *save = NULL, *b = strtok_r(bases, ", ", &save); b && !out->found;
         b = strtok_r(NULL, ", ", &save))
        if (strcmp(b, "...") != 0)
            follow_base(file, src, len, b, method, depth, out);
    free(src);
}

static int target_ok(const afd_cli *cli, char *rel, size_t rel_cap)
{
    const char *file = cli->check_file, *cls = cli->check_cls, *method = cli->check_method;
    struct stat st;
    if (stat(file, &st) < 0) {
        afd_runs_error_line("no such file: %s", file);
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        afd_runs_error_line("not a Python file: %s", file);
        return -1;
    }
    if (project_relative(file, rel, rel_cap) < 0) {
        afd_runs_error_line(
            "%s is outside the current directory: run check from the project root that holds it", file);
        return -1;
    }
    size_t len = 0;
    char *src = afd_read_source_file(file, &len);
    if (!src) {
        afd_runs_error_line("cannot read %s (or it is larger than 16 MiB)", file);
        return -1;
    }
    afd_pymethod m;
    int rc = afd_pydef_method(src, len, cls, method, &m);
    free(src);
    method_lookup *look = rc == 0 && !m.error_line && m.found_class ? calloc(1, sizeof *look) : NULL;
    if (look) {
        lookup_in(rel, cls, method, 0, look);
        if (look->found)
            m = look->def; /* what the defining class says of the method: async, parameters, line */
    }
    const char *where = look && look->found ? look->def_file : file;
    char owner[200] = ""; /* "C inherits it from Base: " when another class defines the method */
    if (look && look->found && strcmp(look->def_cls, cls) != 0)
        snprintf(owner, sizeof owner, "%s inherits it from %.128s: ", cls, look->def_cls);
    int ok = 0;
    if (rc < 0)
        afd_runs_error_line("cannot parse %s", file);
    else if (m.error_line)
        afd_runs_error_line("%s does not parse: syntax error near line %u", file, (unsigned)m.error_line);
    else if (!m.found_class)
        afd_runs_error_line("%s has no class %s at module level", file, cls);
    else if (!look)
        afd_runs_error_line("out of memory");
    else if (!look->found && look->outside[0])
        ok = 1; /* the method may come from the base outside the project: the harness's import decides */
    else if (!look->found)
        afd_runs_error_line("class %s has no method %s%s%s%s (it has: %s)", cls, method,
                            m.bases[0] ? ", nor do its bases (" : "", m.bases, m.bases[0] ? ")" : "",
                            m.methods[0] ? m.methods : "none");
    else if (!m.is_async)
        afd_runs_error_line(
            "%s.%s (%s%s, line %u) is a plain def: check calls a coroutine method (async def) concurrently",
            cls, method, owner, where, (unsigned)m.line);
    else if (m.required[0] && !cli->check_args)
        afd_runs_error_line(
            "%s.%s needs arguments (%s): give --args 'EXPR', a Python expression of i (the call's "
            "index) that is the argument, or a tuple of them",
            cls, method, m.required);
    else
        ok = 1;
    free(look);
    return ok ? 0 : -1;
}

/* Writes the harness test through a temporary file and a rename; its node id goes to node. */
static int write_harness(const afd_cli *cli, const char *rel, char *node, size_t node_cap)
{
    char dir[PATH_MAX], path[PATH_MAX + 256], tmp[PATH_MAX + 300];
    afd_storedir_path("check", dir, sizeof dir);
    if (afd_storedir_make_dirs(dir) < 0) {
        afd_runs_error_line("cannot create %s: %s", dir, strerror(errno));
        return -1;
    }
    char test[200];
    snprintf(test, sizeof test, "test_check_%s_%s", cli->check_cls, cli->check_method);
    snprintf(path, sizeof path, "%s/%s.py", dir, test);
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    afd_buf b;
    afd_buf_init(&b);
    afd_buf_printf(&b,
                   "# Written by `affidavit check`, again on every check: edits here are lost.\n"
                   "from affidavit.check import harness\n\n%s = harness(file=",
                   test);
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
        afd_runs_error_line("cannot write the check's test in %s: %s", dir, strerror(errno));
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
