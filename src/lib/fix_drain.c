/* fix_drain.c -- DRAIN_TASKS and AWAIT_TASK after a cancel (see fix_drain.h): a reader made to
 * wait for a task it holds no handle to. The edits are line insertions planned on fixctx (fix.c);
 * the lookups only read the tree. Each call parses one source once; the engine calls them a few
 * times per investigation, once per frame between the reader and the spawn. */
#include "fix_drain.h"
#include "fix_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WALK_MAX 1024

static const TSNode null_node = {{0}, 0, 0};

/* n is `name` or `x.name` (a call's function naming the callee). */
static int names_callee(const char *src, TSNode n, const char *name)
{
    if (afd_pyast_is(n, AFD_PY_IDENTIFIER))
        return afd_fix_text_is(src, n, name);
    return afd_pyast_is(n, AFD_PY_ATTRIBUTE) &&
           afd_fix_text_is(src, afd_pyast_field(n, AFD_PYF_ATTRIBUTE), name);
}

/* A name, or attributes of a name (`state._tasks`): re-evaluating it has no side effect. */
static int is_name_chain(TSNode n)
{
    while (afd_pyast_is(n, AFD_PY_ATTRIBUTE))
        n = afd_pyast_field(n, AFD_PYF_OBJECT);
    return afd_pyast_is(n, AFD_PY_IDENTIFIER);
}

static TSNode chain_base(TSNode n)
{
    while (afd_pyast_is(n, AFD_PY_ATTRIBUTE))
        n = afd_pyast_field(n, AFD_PYF_OBJECT);
    return n;
}

static int is_spawn(const char *src, TSNode n)
{
    if (!afd_pyast_is(n, AFD_PY_CALL))
        return 0;
    TSNode fn = afd_pyast_field(n, AFD_PYF_FUNCTION);
    return names_callee(src, fn, "create_task") || names_callee(src, fn, "ensure_future");
}

static int same_text(const char *src, TSNode a, TSNode b)
{
    size_t la = ts_node_end_byte(a) - ts_node_start_byte(a);
    size_t lb = ts_node_end_byte(b) - ts_node_start_byte(b);
    return la == lb && memcmp(src + ts_node_start_byte(a), src + ts_node_start_byte(b), la) == 0;
}

/* The call's only positional argument, or a null node. */
static TSNode only_argument(TSNode call)
{
    TSNode args = afd_pyast_field(call, AFD_PYF_ARGUMENTS);
    if (!afd_pyast_is(args, AFD_PY_ARGUMENT_LIST) || ts_node_named_child_count(args) != 1)
        return null_node;
    return ts_node_named_child(args, 0);
}

/* Where the expression statement st stores value (a spawn call, or the name bound to one):
 * `home = value` (ONE), `home[k] = value` (VALUES), `home.add(value)` / `.append(value)` (MANY).
 * Returns the shape with *home set, or 0. value_is_spawn: value is any spawn call, not a name. */
static int stores(const char *src, TSNode st, TSNode value, int value_is_spawn, TSNode *home)
{
    if (!afd_pyast_is(st, AFD_PY_EXPRESSION_STATEMENT) || ts_node_named_child_count(st) != 1)
        return 0;
    TSNode e = ts_node_named_child(st, 0);
    if (afd_pyast_is(e, AFD_PY_ASSIGNMENT)) {
        TSNode left = afd_pyast_field(e, AFD_PYF_LEFT), right = afd_pyast_field(e, AFD_PYF_RIGHT);
        if (value_is_spawn ? !is_spawn(src, right) : ts_node_is_null(right) || !same_text(src, right, value))
            return 0;
        if (afd_pyast_is(left, AFD_PY_ATTRIBUTE) && is_name_chain(left)) {
            *home = left;
            return AFD_DRAIN_ONE;
        }
        TSNode obj = afd_pyast_is(left, AFD_PY_SUBSCRIPT) ? afd_pyast_field(left, AFD_PYF_VALUE) : null_node;
        if (!ts_node_is_null(obj) && is_name_chain(obj)) {
            *home = obj;
            return AFD_DRAIN_VALUES;
        }
        return 0;
    }
    if (afd_pyast_is(e, AFD_PY_CALL)) {
        TSNode fn = afd_pyast_field(e, AFD_PYF_FUNCTION), arg = only_argument(e);
        if (!afd_pyast_is(fn, AFD_PY_ATTRIBUTE) || ts_node_is_null(arg))
            return 0;
        TSNode method = afd_pyast_field(fn, AFD_PYF_ATTRIBUTE), obj = afd_pyast_field(fn, AFD_PYF_OBJECT);
        if (!afd_fix_text_is(src, method, "add") && !afd_fix_text_is(src, method, "append"))
            return 0;
        if (value_is_spawn ? !is_spawn(src, arg) : !same_text(src, arg, value))
            return 0;
        if (!is_name_chain(obj))
            return 0;
        *home = obj;
        return AFD_DRAIN_MANY;
    }
    return 0;
}

/* The function fn is a method: defined directly in a class body. */
static int is_method(TSNode fn)
{
    TSNode p = ts_node_parent(fn);
    if (afd_pyast_is(p, AFD_PY_DECORATED_DEFINITION))
        p = ts_node_parent(p);
    return afd_pyast_is(p, AFD_PY_BLOCK) && afd_pyast_is(ts_node_parent(p), AFD_PY_CLASS_DEFINITION);
}

/* Parameter `name` of fn into *ref: 0, or -1 when fn has none by that name or takes it only by
 * keyword or through a splat. */
static int find_param(const char *src, TSNode fn, TSNode name, afd_drain_ref *ref)
{
    TSNode params = afd_pyast_field(fn, AFD_PYF_PARAMETERS);
    uint32_t k = ts_node_named_child_count(params);
    int method = is_method(fn), pos = 0, keyword_only = 0;
    for (uint32_t i = 0; i < k; i++) {
        TSNode p = ts_node_named_child(params, i), id = null_node;
        if (afd_pyast_is(p, AFD_PY_IDENTIFIER))
            id = p;
        else if (afd_pyast_is(p, AFD_PY_TYPED_PARAMETER) && ts_node_named_child_count(p))
            id = ts_node_named_child(p, 0);
        else if (afd_pyast_is(p, AFD_PY_DEFAULT_PARAMETER) || afd_pyast_is(p, AFD_PY_TYPED_DEFAULT_PARAMETER))
            id = afd_pyast_field(p, AFD_PYF_NAME);
        else if (afd_pyast_is(p, AFD_PY_POSITIONAL_SEPARATOR))
            continue;
        else {
            keyword_only = 1; /* `*`, `*args`, `**kw`: what follows is passed by keyword */
            continue;
        }
        if (afd_pyast_is(id, AFD_PY_IDENTIFIER) && same_text(src, id, name)) {
            size_t l = ts_node_end_byte(id) - ts_node_start_byte(id);
            if (l >= sizeof ref->name)
                return -1;
            memcpy(ref->name, src + ts_node_start_byte(id), l);
            ref->name[l] = 0;
            ref->index = keyword_only ? -3 : method ? pos - 1 : pos;
            return 0;
        }
        pos++;
    }
    return -1;
}

/* The first spawn call in n (not in a nested scope), or a null node. */
static TSNode find_spawn(const char *src, TSNode n)
{
    TSNode stack[WALK_MAX];
    size_t sp = 0;
    stack[sp++] = n;
    while (sp) {
        TSNode cur = stack[--sp];
        if (is_spawn(src, cur))
            return cur;
        if (afd_pyast_is(cur, AFD_PY_LAMBDA) || afd_pyast_is(cur, AFD_PY_FUNCTION_DEFINITION) ||
            afd_pyast_is(cur, AFD_PY_CLASS_DEFINITION))
            continue;
        for (uint32_t i = ts_node_named_child_count(cur); i-- > 0 && sp < WALK_MAX;)
            stack[sp++] = ts_node_named_child(cur, i);
    }
    return null_node;
}

/* The first statement of fn after `after` (in source order, outside nested scopes) that stores
 * the name into a home; its shape, or 0. */
static int find_store_of(const char *src, TSNode fn, TSNode after, TSNode name, TSNode *home)
{
    TSNode stack[WALK_MAX];
    size_t sp = 0;
    stack[sp++] = afd_pyast_field(fn, AFD_PYF_BODY);
    while (sp) {
        TSNode cur = stack[--sp];
        if (ts_node_end_byte(cur) <= ts_node_end_byte(after))
            continue; /* the spawn itself, and what came before it */
        if (ts_node_start_byte(cur) >= ts_node_end_byte(after)) {
            int shape = stores(src, cur, name, 0, home);
            if (shape)
                return shape;
        }
        if (afd_pyast_is(cur, AFD_PY_LAMBDA) || afd_pyast_is(cur, AFD_PY_FUNCTION_DEFINITION) ||
            afd_pyast_is(cur, AFD_PY_CLASS_DEFINITION))
            continue;
        for (uint32_t i = ts_node_named_child_count(cur); i-- > 0 && sp < WALK_MAX;)
            stack[sp++] = ts_node_named_child(cur, i);
    }
    return 0;
}

int afd_fix_drain_store(const char *src, size_t len, uint32_t spawn_line, afd_drain_store *out, char *why,
                        size_t whylen)
{
    afd_buf scratch;
    afd_buf_init(&scratch);
    fixctx c = {.src = src, .len = len, .why = why, .whylen = whylen};
    memset(out, 0, sizeof *out);
    int rc = afd_fix_start(&c, &scratch);
    TSNode st = null_node;
    if (rc == 0)
        rc = afd_fix_statement_at(&c, spawn_line, "the spawn", &st);
    if (rc < 0)
        goto out;
    TSNode fn = ts_node_is_null(st) ? st : afd_fix_enclosing(st, AFD_PY_FUNCTION_DEFINITION);
    TSNode spawn = ts_node_is_null(fn) ? fn : find_spawn(src, st);
    if (ts_node_is_null(spawn)) {
        rc = afd_fix_refuse(&c, "line %u of a function does not call create_task or ensure_future",
                            spawn_line);
        goto out;
    }
    TSNode home = null_node;
    int shape = stores(src, st, null_node, 1, &home);
    if (!shape && afd_pyast_is(st, AFD_PY_EXPRESSION_STATEMENT) && ts_node_named_child_count(st) == 1) {
        /* `task = create_task(...)`, then `home... = task` or `home.add(task)` further down */
        TSNode e = ts_node_named_child(st, 0);
        TSNode left = afd_pyast_field(e, AFD_PYF_LEFT);
        if (afd_pyast_is(e, AFD_PY_ASSIGNMENT) && afd_pyast_is(left, AFD_PY_IDENTIFIER) &&
            ts_node_eq(afd_pyast_field(e, AFD_PYF_RIGHT), spawn))
            shape = find_store_of(src, fn, st, left, &home);
    }
    if (!shape) {
        rc = afd_fix_refuse(&c,
                            "the function that spawns the task keeps no handle to it on an object (an "
                            "attribute, a set, a list or a dict): keeping one needs an edit of the library "
                            "and one of the test");
        goto out;
    }
    TSNode base = chain_base(home);
    if (find_param(src, fn, base, &out->base) < 0 || out->base.index == -3) {
        rc = afd_fix_refuse(&c,
                            "the task's handle is kept on `%.*s`, which is not a positional parameter of "
                            "the function that spawns it",
                            (int)(ts_node_end_byte(base) - ts_node_start_byte(base)),
                            src + ts_node_start_byte(base));
        goto out;
    }
    size_t pl = ts_node_end_byte(home) - ts_node_end_byte(base);
    if (pl >= sizeof out->path || memchr(src + ts_node_end_byte(base), '\n', pl)) {
        rc = afd_fix_refuse(&c, "the task's home is not a one-line chain of attributes");
        goto out;
    }
    memcpy(out->path, src + ts_node_end_byte(base), pl);
    out->path[pl] = 0;
    out->shape = (afd_drain_shape)shape;
out:
    afd_fix_finish(&c);
    afd_buf_finish(&scratch);
    return rc;
}

/* The argument of call that binds ref, or a null node (or -1 through *splat when a splat comes
 * before it, so it cannot be told). */
static TSNode bound_argument(const char *src, TSNode call, const afd_drain_ref *ref, int *splat)
{
    TSNode fn = afd_pyast_field(call, AFD_PYF_FUNCTION);
    if (ref->index == -1)
        return afd_pyast_is(fn, AFD_PY_ATTRIBUTE) ? afd_pyast_field(fn, AFD_PYF_OBJECT) : null_node;
    TSNode args = afd_pyast_field(call, AFD_PYF_ARGUMENTS);
    uint32_t k = afd_pyast_is(args, AFD_PY_ARGUMENT_LIST) ? ts_node_named_child_count(args) : 0;
    int pos = 0;
    for (uint32_t i = 0; i < k; i++) {
        TSNode a = ts_node_named_child(args, i);
        if (afd_pyast_is(a, AFD_PY_COMMENT))
            continue;
        if (afd_pyast_is(a, AFD_PY_KEYWORD_ARGUMENT)) {
            if (afd_fix_text_is(src, afd_pyast_field(a, AFD_PYF_NAME), ref->name))
                return afd_pyast_field(a, AFD_PYF_VALUE);
            continue;
        }
        if (afd_pyast_is(a, AFD_PY_LIST_SPLAT) || afd_pyast_is(a, AFD_PY_OTHER)) {
            *splat = 1; /* `*args`, `**kw`: the positions after it are unknown */
            return null_node;
        }
        if (pos++ == ref->index)
            return a;
    }
    return null_node;
}

int afd_fix_drain_arg(const char *src, size_t len, uint32_t call_line, const char *callee,
                      const afd_drain_ref *ref, char *arg, size_t argcap, afd_drain_ref *up, char *why,
                      size_t whylen)
{
    afd_buf scratch;
    afd_buf_init(&scratch);
    fixctx c = {.src = src, .len = len, .why = why, .whylen = whylen};
    int rc = afd_fix_start(&c, &scratch);
    TSNode st = null_node;
    up->index = -2;
    up->name[0] = 0;
    if (rc == 0 && (!callee || !*callee || !argcap))
        rc = afd_fix_refuse(&c, "no callee to look for");
    if (rc == 0)
        rc = afd_fix_statement_at(&c, call_line, "the call", &st);
    if (rc < 0)
        goto out;
    /* every call of callee in the statement must pass one and the same name chain */
    TSNode found = null_node, stack[WALK_MAX];
    size_t sp = 0;
    int calls = 0, splat = 0;
    if (!ts_node_is_null(st))
        stack[sp++] = st;
    while (sp) {
        TSNode cur = stack[--sp];
        if (afd_pyast_is(cur, AFD_PY_LAMBDA) || afd_pyast_is(cur, AFD_PY_FUNCTION_DEFINITION) ||
            afd_pyast_is(cur, AFD_PY_CLASS_DEFINITION))
            continue;
        if (afd_pyast_is(cur, AFD_PY_CALL) &&
            names_callee(src, afd_pyast_field(cur, AFD_PYF_FUNCTION), callee)) {
            calls++;
            TSNode a = bound_argument(src, cur, ref, &splat);
            if (ts_node_is_null(a) || !is_name_chain(a) ||
                (!ts_node_is_null(found) && !same_text(src, a, found))) {
                found = null_node;
                break;
            }
            found = a;
        }
        for (uint32_t i = ts_node_named_child_count(cur); i-- > 0 && sp < WALK_MAX;)
            stack[sp++] = ts_node_named_child(cur, i);
    }
    if (!calls) {
        rc = afd_fix_refuse(&c, "line %u does not call %s", call_line, callee);
        goto out;
    }
    size_t l = ts_node_is_null(found) ? 0 : ts_node_end_byte(found) - ts_node_start_byte(found);
    if (ts_node_is_null(found) || l >= argcap || memchr(src + ts_node_start_byte(found), '\n', l)) {
        rc = afd_fix_refuse(&c, "the call of %s at line %u does not pass %s as %s", callee, call_line,
                            ref->index == -1 ? "its receiver" : ref->name,
                            splat ? "a plain argument (a splat comes first)"
                                  : "one name or attribute of a name");
        goto out;
    }
    memcpy(arg, src + ts_node_start_byte(found), l);
    arg[l] = 0;
    TSNode fn = afd_fix_enclosing(st, AFD_PY_FUNCTION_DEFINITION);
    if (afd_pyast_is(found, AFD_PY_IDENTIFIER) && !ts_node_is_null(fn) && find_param(src, fn, found, up) < 0)
        up->index = -2;
out:
    afd_fix_finish(&c);
    afd_buf_finish(&scratch);
    return rc;
}

int afd_fix_drain_tasks(const char *src, size_t len, uint32_t read_line, uint32_t scope_line,
                        const char *home, afd_drain_shape shape, afd_buf *out, char *why, size_t whylen)
{
    fixctx c = {.src = src, .len = len, .why = why, .whylen = whylen};
    int rc = afd_fix_start(&c, out);
    if (rc == 0 && (!home || !*home || strchr(home, '\n') || strlen(home) > 200))
        rc = afd_fix_refuse(&c, "no one-line expression names the tasks");
    if (rc == 0 && shape != AFD_DRAIN_ONE && shape != AFD_DRAIN_MANY && shape != AFD_DRAIN_VALUES)
        rc = afd_fix_refuse(&c, "unknown shape of the tasks' home");
    TSNode st, fn;
    if (rc == 0)
        rc = afd_fix_async_statement_at(&c, read_line, "the read", "it cannot wait for the task", &st, &fn);
    if (rc < 0)
        goto out;
    uint32_t row = ts_node_start_point(st).row;
    if (!scope_line || scope_line - 1 >= row || scope_line - 1 < ts_node_start_point(fn).row) {
        rc = afd_fix_refuse(&c, "the read at line %u is not after line %u in the same function", read_line,
                            scope_line);
        goto out;
    }
    const char *at;
    size_t ind = afd_fix_line_indent(&c, row, &at);
    afd_buf *b = &c.edits[row].before;
    const char *note = "# affidavit: the write this reads happens in a background task";
    if (shape == AFD_DRAIN_ONE)
        afd_buf_printf(b, "%.*sawait %s  %s\n", (int)ind, at, home, note);
    else
        afd_buf_printf(b, "%.*sawait asyncio.gather(*list(%s%s))  %s\n", (int)ind, at, home,
                       shape == AFD_DRAIN_VALUES ? ".values()" : "", note);
    int has_asyncio = 0;
    uint32_t setup_row = afd_fix_module_setup_row(ts_tree_root_node(c.tree), &has_asyncio, src);
    if (!has_asyncio && shape != AFD_DRAIN_ONE)
        afd_buf_printf(&c.edits[setup_row].before, "import asyncio\n");
    rc = afd_fix_emit(&c, out, "");
out:
    afd_fix_finish(&c);
    return rc;
}

int afd_fix_await_cancelled(const char *src, size_t len, uint32_t cancel_line, afd_buf *out, char *why,
                            size_t whylen)
{
    fixctx c = {.src = src, .len = len, .why = why, .whylen = whylen};
    int rc = afd_fix_start(&c, out);
    TSNode st, fn;
    if (rc == 0)
        rc = afd_fix_async_statement_at(&c, cancel_line, "the cancel", "it cannot wait for the task", &st,
                                        &fn);
    if (rc < 0)
        goto out;
    TSNode e = afd_pyast_is(st, AFD_PY_EXPRESSION_STATEMENT) && ts_node_named_child_count(st) == 1
                   ? ts_node_named_child(st, 0)
                   : null_node;
    TSNode callee = afd_pyast_is(e, AFD_PY_CALL) ? afd_pyast_field(e, AFD_PYF_FUNCTION) : null_node;
    TSNode h = afd_pyast_is(callee, AFD_PY_ATTRIBUTE) ? afd_pyast_field(callee, AFD_PYF_OBJECT) : null_node;
    if (ts_node_is_null(h) || !afd_fix_text_is(src, afd_pyast_field(callee, AFD_PYF_ATTRIBUTE), "cancel") ||
        !is_name_chain(h) || ts_node_start_point(st).row != ts_node_end_point(st).row) {
        rc = afd_fix_refuse(&c, "line %u is not a one-line statement `task.cancel()`", cancel_line);
        goto out;
    }
    uint32_t hs = ts_node_start_byte(h), he = ts_node_end_byte(h);
    TSNode next = ts_node_next_named_sibling(st);
    if (!ts_node_is_null(next) && afd_pyast_is(next, AFD_PY_EXPRESSION_STATEMENT) &&
        ts_node_named_child_count(next) == 1 && afd_pyast_is(ts_node_named_child(next, 0), AFD_PY_AWAIT)) {
        size_t a = ts_node_start_byte(next), l = ts_node_end_byte(next) - a;
        for (size_t i = 0; i + (he - hs) <= l; i++)
            if (!memcmp(src + a + i, src + hs, he - hs)) {
                rc = afd_fix_refuse(&c, "the cancelled task is awaited right after it is cancelled already");
                goto out;
            }
    }
    uint32_t row = ts_node_start_point(st).row;
    const char *at;
    size_t ind = afd_fix_line_indent(&c, row, &at);
    afd_buf_printf(&c.edits[row + 1].before,
                   "%.*sawait asyncio.wait([%.*s])  # affidavit: go on once the cancelled task has "
                   "unwound (its finally ran)\n",
                   (int)ind, at, (int)(he - hs), src + hs);
    int has_asyncio = 0;
    uint32_t setup_row = afd_fix_module_setup_row(ts_tree_root_node(c.tree), &has_asyncio, src);
    if (!has_asyncio)
        afd_buf_printf(&c.edits[setup_row].before, "import asyncio\n");
    rc = afd_fix_emit(&c, out, "");
out:
    afd_fix_finish(&c);
    return rc;
}
