/* test_pyast.c -- the Python front end the walkers share: node kinds, fields, text, the walk. */
#include "afd.h"
#include "harness.h"
#include "pyast.h"

#include <stdlib.h>
#include <string.h>

static TSNode parse(afd_pysrc *p, const char *src)
{
    CHECK_EQ_INT(afd_pysrc_parse(p, src, strlen(src), NULL, NULL), 0);
    return ts_tree_root_node(p->tree);
}

TEST(every_listed_kind_is_a_node_type_of_the_grammar)
{
    /* A kind whose name the grammar does not know would never match: a misspelt entry in
     * AFD_PY_KINDS must fail here, not silently in a walker. */
    static const char *const names[] = {
#define NAME(e, s) s,
        AFD_PY_KINDS(NAME)
#undef NAME
    };
    const TSLanguage *lang = tree_sitter_python();
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        TSSymbol s = ts_language_symbol_for_name(lang, names[i], (uint32_t)strlen(names[i]), true);
        if (s == 0)
            fprintf(stderr, "  unknown node type %s\n", names[i]);
        CHECK(s != 0);
    }
    for (int f = AFD_PYF_NONE + 1; f < AFD_PYF_COUNT; f++)
        CHECK(afd_pyast_field_id((enum afd_py_field)f) != 0);
    CHECK_EQ_INT(afd_pyast_field_id(AFD_PYF_NONE), 0);
    CHECK_EQ_INT(afd_pyast_field_id(AFD_PYF_COUNT), 0);
}

TEST(kinds_fields_and_text)
{
    afd_pysrc p;
    const char *src = "async def f(self, x):\n    await self.a.b(x)\n";
    TSNode root = parse(&p, src);
    CHECK_EQ_INT(afd_pyast_kind(root), AFD_PY_MODULE);
    TSNode fn = ts_node_named_child(root, 0);
    CHECK(afd_pyast_is(fn, AFD_PY_FUNCTION_DEFINITION));
    CHECK(afd_pyast_is_token(ts_node_child(fn, 0), "async"));
    CHECK(!afd_pyast_is_token(fn, "async"));
    TSNode name = afd_pyast_field(fn, AFD_PYF_NAME);
    CHECK_EQ_INT(afd_pyast_kind(name), AFD_PY_IDENTIFIER);
    CHECK(afd_pyast_text_is(p.text, strlen(src), name, "f"));
    CHECK(!afd_pyast_text_is(p.text, strlen(src), name, "g"));
    CHECK_EQ_INT(afd_pyast_kind(afd_pyast_field(fn, AFD_PYF_PARAMETERS)), AFD_PY_PARAMETERS);
    TSNode body = afd_pyast_field(fn, AFD_PYF_BODY);
    CHECK_EQ_INT(afd_pyast_kind(body), AFD_PY_BLOCK);
    CHECK_EQ_INT(afd_pyast_line(ts_node_named_child(body, 0)), 2);
    /* A field the node does not have, and any field of a null node, is a null node. */
    CHECK(ts_node_is_null(afd_pyast_field(fn, AFD_PYF_SUPERCLASSES)));
    TSNode null = afd_pyast_field(name, AFD_PYF_NAME);
    CHECK(ts_node_is_null(null));
    CHECK(ts_node_is_null(afd_pyast_field(null, AFD_PYF_NAME)));
    CHECK_EQ_INT(afd_pyast_kind(null), AFD_PY_OTHER);
    CHECK(!afd_pyast_is(null, AFD_PY_OTHER));
    CHECK(afd_pyast_is_bad(null));
    CHECK(!afd_pyast_is_bad(fn));
    /* The text is clamped to the source it is read from. */
    size_t len;
    afd_pyast_text(p.text, 3, fn, &len);
    CHECK_EQ_INT(len, 3);
    afd_pysrc_finish(&p);
}

static int count_bad(void *vn, TSNode n)
{
    if (afd_pyast_is_bad(n)) {
        ++*(int *)vn;
        return AFD_PYAST_SKIP;
    }
    return AFD_PYAST_DESCEND;
}

TEST(errors_are_told_apart)
{
    afd_pysrc p;
    TSNode root = parse(&p, "def f(:\n    pass\n");
    CHECK(ts_node_has_error(root));
    int bad = 0;
    CHECK_EQ_INT(afd_pyast_walk(NULL, root, count_bad, NULL, &bad), 0);
    CHECK(bad > 0);
    afd_pysrc_finish(&p);
    root = parse(&p, "def f(x):\n    pass\n");
    bad = 0;
    CHECK_EQ_INT(afd_pyast_walk(NULL, root, count_bad, NULL, &bad), 0);
    CHECK_EQ_INT(bad, 0);
    afd_pysrc_finish(&p);
}

typedef struct trail {
    char log[512];
    int stop_at_call;
} trail;

static void note(trail *t, const char *what, TSNode n)
{
    size_t used = strlen(t->log);
    snprintf(t->log + used, sizeof t->log - used, "%s%s ", what, ts_node_type(n));
}

static int enter_named(void *vt, TSNode n)
{
    trail *t = vt;
    if (!ts_node_is_named(n))
        return AFD_PYAST_SKIP;
    note(t, "+", n);
    if (t->stop_at_call && afd_pyast_is(n, AFD_PY_CALL))
        return AFD_PYAST_STOP;
    /* A string's parts are not looked into, as the gate treats a string as one token. */
    return afd_pyast_is(n, AFD_PY_STRING) ? AFD_PYAST_SKIP : AFD_PYAST_DESCEND;
}

static int leave_named(void *vt, TSNode n)
{
    if (ts_node_is_named(n))
        note(vt, "-", n);
    return 0;
}

static int enter_fails(void *vt, TSNode n)
{
    (void)vt;
    return afd_pyast_is(n, AFD_PY_IDENTIFIER) ? AFD_ENOMEM : AFD_PYAST_DESCEND;
}

TEST(the_walk_is_preorder_with_one_leave_per_node)
{
    afd_pysrc p;
    TSNode root = parse(&p, "x = f('s')\n");
    trail t = {{0}, 0};
    CHECK_EQ_INT(afd_pyast_walk(NULL, root, enter_named, leave_named, &t), 0);
    CHECK_EQ_STR(t.log, "+module +expression_statement +assignment +identifier -identifier +call +identifier "
                        "-identifier +argument_list +string -string -argument_list -call -assignment "
                        "-expression_statement -module ");
    /* A stop ends the walk at once: no more enters, no leaves. A shared cursor gives the same. */
    TSTreeCursor cur = ts_tree_cursor_new(root);
    t = (trail){{0}, 1};
    CHECK_EQ_INT(afd_pyast_walk(&cur, root, enter_named, leave_named, &t), 0);
    CHECK_EQ_STR(t.log, "+module +expression_statement +assignment +identifier -identifier +call ");
    /* An error code from enter is the walk's result. */
    CHECK_EQ_INT(afd_pyast_walk(&cur, root, enter_fails, NULL, NULL), AFD_ENOMEM);
    ts_tree_cursor_delete(&cur);
    TSNode null = afd_pyast_field(root, AFD_PYF_NAME);
    CHECK_EQ_INT(afd_pyast_walk(NULL, null, enter_fails, NULL, NULL), 0);
    afd_pysrc_finish(&p);
}

TEST(children_with_their_fields)
{
    afd_pysrc p;
    TSNode root = parse(&p, "a.b = c\n");
    TSNode assign = ts_node_named_child(ts_node_named_child(root, 0), 0);
    CHECK(afd_pyast_is(assign, AFD_PY_ASSIGNMENT));
    TSTreeCursor cur = ts_tree_cursor_new(root);
    afd_pykid *kids = NULL;
    size_t n = 0, cap = 0;
    CHECK_EQ_INT(afd_pyast_children(&cur, assign, &kids, &n, &cap), 0);
    CHECK_EQ_INT(n, 3);
    CHECK(afd_pyast_is(kids[0].node, AFD_PY_ATTRIBUTE));
    CHECK_EQ_INT(kids[0].field, afd_pyast_field_id(AFD_PYF_LEFT));
    CHECK_EQ_INT(kids[0].named, 1);
    CHECK(afd_pyast_is_token(kids[1].node, "="));
    CHECK_EQ_INT(kids[1].named, 0);
    CHECK_EQ_INT(kids[2].field, afd_pyast_field_id(AFD_PYF_RIGHT));
    CHECK_EQ_INT(afd_pyast_children(&cur, kids[2].node, &kids, &n, &cap), 0);
    CHECK_EQ_INT(n, 0); /* an identifier has no children */
    free(kids);
    ts_tree_cursor_delete(&cur);
    afd_pysrc_finish(&p);
}

int main(void)
{
    RUN_TESTS("pyast", T(every_listed_kind_is_a_node_type_of_the_grammar), T(kinds_fields_and_text),
              T(errors_are_told_apart), T(the_walk_is_preorder_with_one_leave_per_node),
              T(children_with_their_fields));
}
