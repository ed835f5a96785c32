/* pyast.c -- the Python front end shared by the tree-sitter walkers (see pyast.h).
 *
 * The kind table is indexed by grammar symbol and holds an enum afd_py_kind per symbol: several
 * symbols can carry one name (the grammar aliases some nodes), so every regular symbol is matched
 * by name rather than asked for with ts_language_symbol_for_name, which answers one of them. The
 * tables are filled once per process under pthread_once and only read afterwards; the grammar
 * has a few hundred symbols, so they are static arrays and their filling cannot fail. */
#include "pyast.h"
#include "buf.h"
#include "afd.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ts_builtin_sym_error of tree_sitter/parser.h. */
#define SYM_ERROR ((TSSymbol)0xffff)
/* Symbols beyond this many are AFD_PY_OTHER; the pinned grammar has about 280. */
#define MAX_SYMBOLS 1024u

static const char *const KIND_NAMES[AFD_PY_KIND_COUNT] = {
#define AFD_PY_KIND_NAME(e, s) [AFD_PY_##e] = s,
    AFD_PY_KINDS(AFD_PY_KIND_NAME)
#undef AFD_PY_KIND_NAME
};

static const char *const FIELD_NAMES[AFD_PYF_COUNT] = {
#define AFD_PY_FIELD_NAME(e, s) [AFD_PYF_##e] = s,
    AFD_PY_FIELDS(AFD_PY_FIELD_NAME)
#undef AFD_PY_FIELD_NAME
};

static uint8_t sym_kind[MAX_SYMBOLS];
static TSFieldId field_ids[AFD_PYF_COUNT];
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static void tables_fill(void)
{
    const TSLanguage *lang = tree_sitter_python();
    uint32_t n_sym = ts_language_symbol_count(lang);
    for (uint32_t s = 0; s < n_sym && s < MAX_SYMBOLS; s++) {
        const char *name = ts_language_symbol_name(lang, (TSSymbol)s);
        if (ts_language_symbol_type(lang, (TSSymbol)s) != TSSymbolTypeRegular || !name)
            continue;
        for (int k = 1; k < AFD_PY_KIND_COUNT; k++)
            if (strcmp(name, KIND_NAMES[k]) == 0)
                sym_kind[s] = (uint8_t)k;
    }
    for (int f = 1; f < AFD_PYF_COUNT; f++)
        field_ids[f] = ts_language_field_id_for_name(lang, FIELD_NAMES[f], (uint32_t)strlen(FIELD_NAMES[f]));
}

static void tables_ready(void)
{
    pthread_once(&tables_once, tables_fill);
}

enum afd_py_kind afd_pyast_kind(TSNode n)
{
    if (ts_node_is_null(n))
        return AFD_PY_OTHER;
    tables_ready();
    TSSymbol s = ts_node_symbol(n);
    return s < MAX_SYMBOLS ? (enum afd_py_kind)sym_kind[s] : AFD_PY_OTHER;
}

int afd_pyast_is(TSNode n, enum afd_py_kind k)
{
    return k != AFD_PY_OTHER && afd_pyast_kind(n) == k;
}

TSFieldId afd_pyast_field_id(enum afd_py_field f)
{
    if (f <= AFD_PYF_NONE || f >= AFD_PYF_COUNT)
        return 0;
    tables_ready();
    return field_ids[f];
}

TSNode afd_pyast_field(TSNode n, enum afd_py_field f)
{
    TSFieldId id = afd_pyast_field_id(f);
    if (ts_node_is_null(n) || id == 0) {
        TSNode z;
        memset(&z, 0, sizeof z);
        return z;
    }
    return ts_node_child_by_field_id(n, id);
}

int afd_pyast_is_token(TSNode n, const char *tok)
{
    return !ts_node_is_null(n) && !ts_node_is_named(n) && strcmp(ts_node_type(n), tok) == 0;
}

int afd_pyast_is_error(TSNode n)
{
    return !ts_node_is_null(n) && ts_node_symbol(n) == SYM_ERROR;
}

int afd_pyast_is_bad(TSNode n)
{
    return ts_node_is_null(n) || ts_node_symbol(n) == SYM_ERROR || ts_node_is_missing(n);
}

uint32_t afd_pyast_line(TSNode n)
{
    return ts_node_start_point(n).row + 1;
}

const char *afd_pyast_text(const char *src, size_t len, TSNode n, size_t *out_len)
{
    uint32_t a = ts_node_start_byte(n), b = ts_node_end_byte(n);
    if (a > len)
        a = (uint32_t)len;
    if (b > len)
        b = (uint32_t)len;
    if (b < a)
        b = a;
    *out_len = b - a;
    return src + a;
}

int afd_pyast_text_is(const char *src, size_t len, TSNode n, const char *s)
{
    size_t l;
    const char *t = afd_pyast_text(src, len, n, &l);
    return l == strlen(s) && memcmp(t, s, l) == 0;
}

int afd_pyast_walk(TSTreeCursor *cur, TSNode root, afd_pyast_enter_fn enter, afd_pyast_leave_fn leave,
                   void *ctx)
{
    if (ts_node_is_null(root))
        return 0;
    TSTreeCursor own;
    if (cur)
        ts_tree_cursor_reset(cur, root);
    else
        own = ts_tree_cursor_new(root);
    TSTreeCursor *c = cur ? cur : &own;
    int rc = 0;
    for (;;) {
        TSNode n = ts_tree_cursor_current_node(c);
        int act = enter(ctx, n);
        if (act < 0 || act == AFD_PYAST_STOP) {
            rc = act < 0 ? act : 0;
            break;
        }
        if (act == AFD_PYAST_DESCEND && ts_tree_cursor_goto_first_child(c))
            continue;
        if (leave && (rc = leave(ctx, n)) < 0)
            break;
        int more = 0;
        while (!(more = ts_tree_cursor_goto_next_sibling(c))) {
            if (!ts_tree_cursor_goto_parent(c))
                break;
            if (leave && (rc = leave(ctx, ts_tree_cursor_current_node(c))) < 0)
                break;
        }
        if (!more || rc < 0)
            break;
    }
    if (!cur)
        ts_tree_cursor_delete(&own);
    return rc < 0 ? rc : 0;
}

int afd_pyast_children(TSTreeCursor *cur, TSNode n, afd_pykid **kids, size_t *n_kids, size_t *cap)
{
    *n_kids = 0;
    if (ts_node_child_count(n) == 0)
        return 0;
    ts_tree_cursor_reset(cur, n);
    if (!ts_tree_cursor_goto_first_child(cur))
        return 0;
    do {
        int rc = afd_array_grow((void **)kids, cap, *n_kids + 1, sizeof **kids, 16);
        if (rc < 0)
            return rc;
        TSNode k = ts_tree_cursor_current_node(cur);
        (*kids)[(*n_kids)++] =
            (afd_pykid){k, ts_tree_cursor_current_field_id(cur), (uint8_t)ts_node_is_named(k)};
    } while (ts_tree_cursor_goto_next_sibling(cur));
    return 0;
}

int afd_pyast_flag_refused(void *flag, uint32_t line)
{
    (void)line;
    *(int *)flag = 1;
    return 0;
}
