/* pydef.h -- where a class's method is defined, and what it looks like (for `affidavit check`).
 *
 * `check FILE --cls C --method M` refuses bad targets before anything runs: a file that does not
 * parse, no class C at module level, no method M in it, or a method that is not `async def`. The
 * answer comes from the source (tree-sitter, through pysrc's defences), so it costs no Python
 * process and names what is there instead ("it has: open, close"). A method a class inherits is
 * found by following its bases (the caller reads the files; this file only says what a source
 * declares: a class's bases and where an imported name comes from). */
#ifndef AFD_PYDEF_H
#define AFD_PYDEF_H

#include <stddef.h>
#include <stdint.h>

typedef struct afd_pymethod {
    int found_class;     /* a class of that name at module level (plain or decorated) */
    int found_method;    /* a def of that name directly in the class body */
    int is_async;        /* `async def` */
    int is_static;       /* decorated @staticmethod: no self */
    int is_classmethod;  /* decorated @classmethod */
    uint32_t line;       /* 1-based line of the def (of the class when no method), 0 when neither */
    uint32_t error_line; /* 1-based line near the first syntax error (the last token tree-sitter could
                            not fit there), 0 when the file parses */
    char required[256];  /* required positional parameters after self/cls, ", "-separated */
    char methods[256];   /* the class's method names in source order, ", "-separated, "..." when cut */
    char bases[256];     /* the class's bases that are names or dotted names (`Base`, `mod.Base`), in
                            order, ", "-separated; "..." when cut. Other base expressions and keyword
                            arguments (metaclass=) are left out. */
} afd_pymethod;

/* Looks up cls.method in src[0..len). out is filled in every case; the lookup itself fails only
 * with AFD_EINVAL (NULL arguments), AFD_EFULL (a source too large or too hostile to parse) or
 * AFD_ENOMEM. */
int afd_pydef_method(const char *src, size_t len, const char *cls, const char *method, afd_pymethod *out);

/* Where the module-level name `name` of src[0..len) is imported from: `from M import X as name`
 * (or `from M import name`) gives module "M" (leading dots kept: ".base", "..pkg.mod") and attr
 * "X"; `import M as name` or `import name` (name being M's first part) gives module "M" and an
 * empty attr. Returns 1 when found, 0 when no import binds name, or AFD_EINVAL, AFD_EFULL,
 * AFD_ENOMEM. A later binding wins, as in Python. */
int afd_pydef_import(const char *src, size_t len, const char *name, char *module, size_t module_cap,
                     char *attr, size_t attr_cap);

#endif
