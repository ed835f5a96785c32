/* pyast.h -- the Python front end shared by every tree-sitter walker (pyscan, the gate, fix
 * synthesis, pydef): node kinds, field ids, node text and the cursor walks.
 *
 * The grammar names node types by string, and a walker that compares strings (or builds its own
 * symbol table) at every node pays for it and repeats it. Here every node type a walker tells
 * apart is listed once, in AFD_PY_KINDS, and every field once, in AFD_PY_FIELDS; the symbol and
 * field ids behind them are looked up once per process, on first use. Supporting a new Python
 * construct means adding its node type here and handling its kind where it matters.
 *
 * A walker maps these kinds onto its own categories (pyscan treats `tuple` and `list` alike as
 * target containers; the gate tells a tuple apart) with a table indexed by enum afd_py_kind.
 * Only named node types have a kind: anonymous tokens (`async`, `,`) are told by
 * afd_pyast_is_token. Parsing itself, with the defences libtree-sitter 0.20.7 needs, is pysrc.h. */
#ifndef AFD_PYAST_H
#define AFD_PYAST_H

#include "pysrc.h"

#include <stddef.h>
#include <stdint.h>
#include <tree_sitter/api.h>

/* X(ENUM_SUFFIX, "grammar node type"): every named node type some walker looks at. */
#define AFD_PY_KINDS(X)                                                                                      \
    X(ARGUMENT_LIST, "argument_list")                                                                        \
    X(AS_PATTERN, "as_pattern")                                                                              \
    X(AS_PATTERN_TARGET, "as_pattern_target")                                                                \
    X(ASSERT_STATEMENT, "assert_statement")                                                                  \
    X(ASSIGNMENT, "assignment")                                                                              \
    X(ALIASED_IMPORT, "aliased_import")                                                                      \
    X(ATTRIBUTE, "attribute")                                                                                \
    X(AUGMENTED_ASSIGNMENT, "augmented_assignment")                                                          \
    X(AWAIT, "await")                                                                                        \
    X(BLOCK, "block")                                                                                        \
    X(BREAK_STATEMENT, "break_statement")                                                                    \
    X(CALL, "call")                                                                                          \
    X(CASE_PATTERN, "case_pattern")                                                                          \
    X(CLASS_DEFINITION, "class_definition")                                                                  \
    X(CLASS_PATTERN, "class_pattern")                                                                        \
    X(COMMENT, "comment")                                                                                    \
    X(CONCATENATED_STRING, "concatenated_string")                                                            \
    X(CONTINUE_STATEMENT, "continue_statement")                                                              \
    X(DECORATED_DEFINITION, "decorated_definition")                                                          \
    X(DECORATOR, "decorator")                                                                                \
    X(DEFAULT_PARAMETER, "default_parameter")                                                                \
    X(DELETE_STATEMENT, "delete_statement")                                                                  \
    X(DICTIONARY_COMPREHENSION, "dictionary_comprehension")                                                  \
    X(DICTIONARY_SPLAT_PATTERN, "dictionary_splat_pattern")                                                  \
    X(DOTTED_NAME, "dotted_name")                                                                            \
    X(ELLIPSIS, "ellipsis")                                                                                  \
    X(EXCEPT_CLAUSE, "except_clause")                                                                        \
    X(EXCEPT_GROUP_CLAUSE, "except_group_clause")                                                            \
    X(EXPRESSION_LIST, "expression_list")                                                                    \
    X(EXPRESSION_STATEMENT, "expression_statement")                                                          \
    X(FLOAT, "float")                                                                                        \
    X(FOR_IN_CLAUSE, "for_in_clause")                                                                        \
    X(FOR_STATEMENT, "for_statement")                                                                        \
    X(FUNCTION_DEFINITION, "function_definition")                                                            \
    X(FUTURE_IMPORT_STATEMENT, "future_import_statement")                                                    \
    X(GENERATOR_EXPRESSION, "generator_expression")                                                          \
    X(GLOBAL_STATEMENT, "global_statement")                                                                  \
    X(IDENTIFIER, "identifier")                                                                              \
    X(IMPORT_FROM_STATEMENT, "import_from_statement")                                                        \
    X(IMPORT_STATEMENT, "import_statement")                                                                  \
    X(INTEGER, "integer")                                                                                    \
    X(INTERPOLATION, "interpolation")                                                                        \
    X(KEYWORD_ARGUMENT, "keyword_argument")                                                                  \
    X(KEYWORD_PATTERN, "keyword_pattern")                                                                    \
    X(KEYWORD_SEPARATOR, "keyword_separator")                                                                \
    X(LAMBDA, "lambda")                                                                                      \
    X(LAMBDA_PARAMETERS, "lambda_parameters")                                                                \
    X(LIST, "list")                                                                                          \
    X(LIST_COMPREHENSION, "list_comprehension")                                                              \
    X(LIST_PATTERN, "list_pattern")                                                                          \
    X(LIST_SPLAT, "list_splat")                                                                              \
    X(LIST_SPLAT_PATTERN, "list_splat_pattern")                                                              \
    X(MODULE, "module")                                                                                      \
    X(NAMED_EXPRESSION, "named_expression")                                                                  \
    X(NONLOCAL_STATEMENT, "nonlocal_statement")                                                              \
    X(PARAMETERS, "parameters")                                                                              \
    X(PARENTHESIZED_EXPRESSION, "parenthesized_expression")                                                  \
    X(PASS_STATEMENT, "pass_statement")                                                                      \
    X(PATTERN_LIST, "pattern_list")                                                                          \
    X(POSITIONAL_SEPARATOR, "positional_separator")                                                          \
    X(RAISE_STATEMENT, "raise_statement")                                                                    \
    X(RETURN_STATEMENT, "return_statement")                                                                  \
    X(SET_COMPREHENSION, "set_comprehension")                                                                \
    X(STRING, "string")                                                                                      \
    X(STRING_CONTENT, "string_content")                                                                      \
    X(STRING_END, "string_end")                                                                              \
    X(STRING_START, "string_start")                                                                          \
    X(SUBSCRIPT, "subscript")                                                                                \
    X(TRY_STATEMENT, "try_statement")                                                                        \
    X(TUPLE, "tuple")                                                                                        \
    X(TUPLE_PATTERN, "tuple_pattern")                                                                        \
    X(TYPE, "type")                                                                                          \
    X(TYPE_ALIAS_STATEMENT, "type_alias_statement")                                                          \
    X(TYPE_PARAMETER, "type_parameter")                                                                      \
    X(TYPED_DEFAULT_PARAMETER, "typed_default_parameter")                                                    \
    X(TYPED_PARAMETER, "typed_parameter")                                                                    \
    X(UNARY_OPERATOR, "unary_operator")                                                                      \
    X(WHILE_STATEMENT, "while_statement")                                                                    \
    X(WITH_CLAUSE, "with_clause")                                                                            \
    X(WITH_STATEMENT, "with_statement")

/* X(ENUM_SUFFIX, "grammar field name"): every field some walker reads. */
#define AFD_PY_FIELDS(X)                                                                                     \
    X(ALIAS, "alias")                                                                                        \
    X(ARGUMENT, "argument")                                                                                  \
    X(ARGUMENTS, "arguments")                                                                                \
    X(ATTRIBUTE, "attribute")                                                                                \
    X(BODY, "body")                                                                                          \
    X(CONDITION, "condition")                                                                                \
    X(DEFINITION, "definition")                                                                              \
    X(FUNCTION, "function")                                                                                  \
    X(LEFT, "left")                                                                                          \
    X(MODULE_NAME, "module_name")                                                                            \
    X(NAME, "name")                                                                                          \
    X(OBJECT, "object")                                                                                      \
    X(OPERATOR, "operator")                                                                                  \
    X(PARAMETERS, "parameters")                                                                              \
    X(RIGHT, "right")                                                                                        \
    X(SUBSCRIPT, "subscript")                                                                                \
    X(SUPERCLASSES, "superclasses")                                                                          \
    X(VALUE, "value")

/* AFD_PY_OTHER: a named node type no walker tells apart, an anonymous token, or an ERROR node. */
enum afd_py_kind {
    AFD_PY_OTHER,
#define AFD_PY_KIND_ENUM(e, s) AFD_PY_##e,
    AFD_PY_KINDS(AFD_PY_KIND_ENUM)
#undef AFD_PY_KIND_ENUM
        AFD_PY_KIND_COUNT
};

enum afd_py_field {
    AFD_PYF_NONE,
#define AFD_PY_FIELD_ENUM(e, s) AFD_PYF_##e,
    AFD_PY_FIELDS(AFD_PY_FIELD_ENUM)
#undef AFD_PY_FIELD_ENUM
        AFD_PYF_COUNT
};

/* The kind of a node (AFD_PY_OTHER for a null node). The first call fills the process-wide
 * tables; it allocates nothing and cannot fail. */
enum afd_py_kind afd_pyast_kind(TSNode n);
/* 1 when n is of kind k (never for AFD_PY_OTHER: a null node is of no kind). */
int afd_pyast_is(TSNode n, enum afd_py_kind k);
/* The child of n in field f, or a null node (for a null n too). */
TSNode afd_pyast_field(TSNode n, enum afd_py_field f);
/* The grammar's id of field f: what ts_tree_cursor_current_field_id reports for it. */
TSFieldId afd_pyast_field_id(enum afd_py_field f);

/* 1 for an anonymous token whose text is tok (`async`, `,`). */
int afd_pyast_is_token(TSNode n, const char *tok);
/* 1 for an ERROR node (0.20's api.h has no ts_node_is_error). */
int afd_pyast_is_error(TSNode n);
/* 1 for a null, ERROR or MISSING node: made up by error recovery, never looked into. */
int afd_pyast_is_bad(TSNode n);
/* The 1-based line where n starts. */
uint32_t afd_pyast_line(TSNode n);

/* The text of n in src[0..len), clamped to it; *out_len receives its length. Borrowed: points
 * into src. */
const char *afd_pyast_text(const char *src, size_t len, TSNode n, size_t *out_len);
/* 1 when the text of n in src[0..len) is s. */
int afd_pyast_text_is(const char *src, size_t len, TSNode n, const char *s);

/* What a walk's enter function answers (or a negative AFD_E* code, which ends the walk with it). */
enum { AFD_PYAST_SKIP = 0, AFD_PYAST_DESCEND = 1, AFD_PYAST_STOP = 2 };
typedef int (*afd_pyast_enter_fn)(void *ctx, TSNode n);
/* Called once for every node entered, after its subtree (at once when it was skipped); not called
 * after a stop or an error. A negative return ends the walk with that code. */
typedef int (*afd_pyast_leave_fn)(void *ctx, TSNode n);

/* A pre-order walk of root's subtree, iterative (a tree is as deep as its source is nested, and
 * 100,000 nested parentheses must not exhaust the C stack). cur: a cursor to reuse (reset to root
 * here), or NULL for one of the walk's own. leave may be NULL. Returns 0 (the walk ended or an
 * enter stopped it) or the first negative code of enter or leave. */
int afd_pyast_walk(TSTreeCursor *cur, TSNode root, afd_pyast_enter_fn enter, afd_pyast_leave_fn leave,
                   void *ctx);

/* One child as a cursor lists it: the node, the field it is in (0 for none), whether named. */
typedef struct afd_pykid {
    TSNode node;
    TSFieldId field;
    uint8_t named;
} afd_pykid;

/* Lists n's children into *kids (capacity *cap, grown as needed; Owned by the caller, who frees
 * it), through cur (O(1) per child: ts_node_child is linear in the index, which would make a
 * module of 200,000 statements quadratic). Returns 0 or AFD_ENOMEM. */
int afd_pyast_children(TSTreeCursor *cur, TSNode n, afd_pykid **kids, size_t *n_kids, size_t *cap);

/* A pysrc refusal callback for walkers that only need to know that something was refused: sets
 * *(int *)flag and lets the parse go on. */
int afd_pyast_flag_refused(void *flag, uint32_t line);

#endif
