/* pydef.c -- where a class's method is defined (see pydef.h). */
#include "pydef.h"
#include "afd.h"
#include "pyast.h"
#include "pyscan.h"

#include <stdio.h>
#include <string.h>

static int name_is(TSNode def, const char *src, const char *want)
{
    TSNode name = afd_pyast_field(def, AFD_PYF_NAME);
    if (ts_node_is_null(name))
        return 0;
    uint32_t a = ts_node_start_byte(name), b = ts_node_end_byte(name);
    return strlen(want) == b - a && memcmp(src + a, want, b - a) == 0;
}

/* Appends src[a..b) to a ", "-separated list in dst (cut with "..." when full). */
static void list_add(char *dst, size_t cap, const char *src, uint32_t a, uint32_t b)
{
    size_t used = strlen(dst);
    if (used >= 3 && !strcmp(dst + used - 3, "..."))
        return;
    size_t need = (used ? 2 : 0) + (b - a);
    if (used + need + 4 > cap) {
        snprintf(dst + used, cap - used, "%s...", used ? ", " : "");
        return;
    }
    snprintf(dst + used, cap - used, "%s%.*s", used ? ", " : "", (int)(b - a), src + a);
}

/* The definition inside a decorated_definition (or the node itself), and whether one of its
 * decorators is the plain name `deco`. */
static TSNode unwrap(TSNode n, const char *src, const char *deco, int *has_deco)
{
    *has_deco = 0;
    if (!afd_pyast_is(n, AFD_PY_DECORATED_DEFINITION))
        return n;
    uint32_t k = ts_node_named_child_count(n);
    for (uint32_t i = 0; i < k; i++) {
        TSNode d = ts_node_named_child(n, i);
        if (!afd_pyast_is(d, AFD_PY_DECORATOR) || ts_node_named_child_count(d) != 1)
            continue;
        TSNode e = ts_node_named_child(d, 0);
        uint32_t a = ts_node_start_byte(e), b = ts_node_end_byte(e);
        if (deco && afd_pyast_is(e, AFD_PY_IDENTIFIER) && strlen(deco) == b - a &&
            !memcmp(src + a, deco, b - a))
            *has_deco = 1;
    }
    return afd_pyast_field(n, AFD_PYF_DEFINITION);
}

static void required_params(TSNode fn, const char *src, int skip_first, afd_pymethod *out)
{
    TSNode ps = afd_pyast_field(fn, AFD_PYF_PARAMETERS);
    uint32_t k = ts_node_named_child_count(ps);
    int first = 1;
    for (uint32_t i = 0; i < k; i++) {
        TSNode p = ts_node_named_child(ps, i);
        enum afd_py_kind t = afd_pyast_kind(p);
        if (t == AFD_PY_KEYWORD_SEPARATOR || t == AFD_PY_LIST_SPLAT_PATTERN ||
            t == AFD_PY_DICTIONARY_SPLAT_PATTERN)
            break; /* what follows is keyword-only or optional */
        if (t == AFD_PY_POSITIONAL_SEPARATOR)
            continue;
        int plain = t == AFD_PY_IDENTIFIER, typed = t == AFD_PY_TYPED_PARAMETER;
        if (first && skip_first) {
            first = 0;
            continue;
        }
        first = 0;
        if (!plain && !typed)
            continue; /* a default: optional */
        TSNode id = plain ? p : ts_node_named_child(p, 0);
        if (afd_pyast_is(id, AFD_PY_IDENTIFIER))
            list_add(out->required, sizeof out->required, src, ts_node_start_byte(id), ts_node_end_byte(id));
    }
}

/* The line of the first syntax error, in pre-order: a MISSING node's, or the last token of an
 * ERROR node (recovery wraps from a statement's start: its last token is nearer the cause). Only
 * subtrees with an error are entered. */
static int error_enter(void *line, TSNode n)
{
    if (!ts_node_has_error(n))
        return AFD_PYAST_SKIP;
    if (ts_node_is_missing(n)) {
        *(uint32_t *)line = afd_pyast_line(n);
        return AFD_PYAST_STOP;
    }
    if (afd_pyast_is_error(n)) {
        while (ts_node_child_count(n) > 0)
            n = ts_node_child(n, ts_node_child_count(n) - 1);
        *(uint32_t *)line = afd_pyast_line(n);
        return AFD_PYAST_STOP;
    }
    return AFD_PYAST_DESCEND;
}

static uint32_t first_error_line(TSNode root)
{
    uint32_t line = afd_pyast_line(root);
    afd_pyast_walk(NULL, root, error_enter, NULL, &line); /* it allocates nothing that can fail */
    return line;
}

/* The bases of class c that are a name or a dotted name, into out->bases. */
static void class_bases(TSNode c, const char *src, afd_pymethod *out)
{
    TSNode args = afd_pyast_field(c, AFD_PYF_SUPERCLASSES);
    uint32_t k = ts_node_is_null(args) ? 0 : ts_node_named_child_count(args);
    for (uint32_t i = 0; i < k; i++) {
        TSNode b = ts_node_named_child(args, i);
        if (afd_pyast_is(b, AFD_PY_IDENTIFIER) || afd_pyast_is(b, AFD_PY_ATTRIBUTE))
            list_add(out->bases, sizeof out->bases, src, ts_node_start_byte(b), ts_node_end_byte(b));
    }
}

/* Parses src within the analysis's size bound; on failure nothing is left allocated. */
static int parse_bounded(afd_pysrc *p, const char *src, size_t len)
{
    if (len > AFD_PYSCAN_MAX_SOURCE)
        return AFD_EFULL;
    int rc = afd_pysrc_parse(p, src, len, NULL, NULL);
    if (rc < 0)
        afd_pysrc_finish(p);
    return rc;
}

int afd_pydef_method(const char *src, size_t len, const char *cls, const char *method, afd_pymethod *out)
{
    if (!src || !cls || !method || !out)
        return AFD_EINVAL;
    memset(out, 0, sizeof *out);
    afd_pysrc p;
    int rc = parse_bounded(&p, src, len);
    if (rc < 0)
        return rc;
    const char *text = p.text;
    TSNode root = ts_tree_root_node(p.tree);
    if (ts_node_has_error(root))
        out->error_line = first_error_line(root);
    uint32_t k = ts_node_named_child_count(root);
    for (uint32_t i = 0; i < k && !out->found_class; i++) {
        int unused;
        TSNode c = unwrap(ts_node_named_child(root, i), text, NULL, &unused);
        if (!afd_pyast_is(c, AFD_PY_CLASS_DEFINITION) || !name_is(c, text, cls))
            continue;
        out->found_class = 1;
        out->line = ts_node_start_point(c).row + 1;
        class_bases(c, text, out);
        TSNode body = afd_pyast_field(c, AFD_PYF_BODY);
        uint32_t m = ts_node_named_child_count(body);
        for (uint32_t j = 0; j < m; j++) {
            TSNode item = ts_node_named_child(body, j);
            int is_static = 0, is_cm = 0;
            TSNode fn = unwrap(item, text, "staticmethod", &is_static);
            if (afd_pyast_is(item, AFD_PY_DECORATED_DEFINITION))
                unwrap(item, text, "classmethod", &is_cm);
            if (!afd_pyast_is(fn, AFD_PY_FUNCTION_DEFINITION))
                continue;
            TSNode name = afd_pyast_field(fn, AFD_PYF_NAME);
            list_add(out->methods, sizeof out->methods, text, ts_node_start_byte(name),
                     ts_node_end_byte(name));
            if (!name_is(fn, text, method))
                continue;
            out->found_method = 1; /* a later def of the same name replaces an earlier one, as in Python */
            out->required[0] = 0;
            out->line = ts_node_start_point(fn).row + 1;
            out->is_async = ts_node_child_count(fn) > 0 && afd_pyast_is_token(ts_node_child(fn, 0), "async");
            out->is_static = is_static;
            out->is_classmethod = is_cm;
            required_params(fn, text, !is_static, out);
        }
    }
    afd_pysrc_finish(&p);
    return 0;
}

static int text_is(TSNode n, const char *src, const char *want)
{
    uint32_t a = ts_node_start_byte(n), b = ts_node_end_byte(n);
    return strlen(want) == b - a && memcmp(src + a, want, b - a) == 0;
}

static void copy_text(TSNode n, const char *src, char *dst, size_t cap)
{
    uint32_t a = ts_node_start_byte(n), b = ts_node_end_byte(n);
    snprintf(dst, cap, "%.*s", (int)(b - a), src + a);
}

/* Whether `import M` binds name: M's first dotted part is name. */
static int first_part_is(TSNode dotted, const char *src, const char *name)
{
    TSNode first = ts_node_named_child(dotted, 0);
    return !ts_node_is_null(first) && text_is(first, src, name);
}

/* One import statement: fills module and attr and returns 1 when it binds name. */
static int import_binds(TSNode st, const char *src, const char *name, char *module, size_t module_cap,
                        char *attr, size_t attr_cap)
{
    int from = afd_pyast_is(st, AFD_PY_IMPORT_FROM_STATEMENT);
    TSNode mod;
    memset(&mod, 0, sizeof mod);
    if (from)
        mod = afd_pyast_field(st, AFD_PYF_MODULE_NAME);
    int found = 0;
    uint32_t k = ts_node_named_child_count(st);
    for (uint32_t i = 0; i < k; i++) {
        TSNode n = ts_node_named_child(st, i);
        if (from && !ts_node_is_null(mod) && ts_node_eq(n, mod))
            continue;
        TSNode target = n, bound = n;
        if (afd_pyast_is(n, AFD_PY_ALIASED_IMPORT)) {
            target = afd_pyast_field(n, AFD_PYF_NAME);
            bound = afd_pyast_field(n, AFD_PYF_ALIAS);
        }
        if (ts_node_is_null(target) || ts_node_is_null(bound) || !afd_pyast_is(target, AFD_PY_DOTTED_NAME))
            continue;
        int plain = ts_node_eq(bound, target); /* no `as` */
        int binds = plain && !from ? first_part_is(target, src, name) : text_is(bound, src, name);
        if (!binds)
            continue;
        if (from) {
            copy_text(mod, src, module, module_cap);
            copy_text(target, src, attr, attr_cap);
        } else {
            if (plain) /* `import a.b` binds a: the module a */
                copy_text(ts_node_named_child(target, 0), src, module, module_cap);
            else
                copy_text(target, src, module, module_cap);
            attr[0] = 0;
        }
        found = 1;
    }
    return found;
}

int afd_pydef_import(const char *src, size_t len, const char *name, char *module, size_t module_cap,
                     char *attr, size_t attr_cap)
{
    if (!src || !name || !module || !attr || !module_cap || !attr_cap)
        return AFD_EINVAL;
    module[0] = attr[0] = 0;
    afd_pysrc p;
    int rc = parse_bounded(&p, src, len);
    if (rc < 0)
        return rc;
    TSNode root = ts_tree_root_node(p.tree);
    uint32_t k = ts_node_named_child_count(root);
    int found = 0;
    for (uint32_t i = 0; i < k; i++) {
        TSNode st = ts_node_named_child(root, i);
        if (afd_pyast_is(st, AFD_PY_IMPORT_STATEMENT) || afd_pyast_is(st, AFD_PY_IMPORT_FROM_STATEMENT))
            found |= import_binds(st, p.text, name, module, module_cap, attr, attr_cap);
    }
    afd_pysrc_finish(&p);
    return found;
}
