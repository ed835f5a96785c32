/* fix_handoff.c -- HANDOFF_CLEANUP and HANDOFF_AT_WAKEUP as minimal text edits (see fix_handoff.h).
 *
 * Everything is read off the syntax tree of the one file that holds the waiter: the future the
 * await names, the container of `self` it is registered in, the setter (a plain method of the same
 * class that reads that container and calls set_result), the handler that already catches the
 * waiter's CancelledError, and the setter's look at the first waiter. Nothing is guessed from
 * names: a shape that does not match is refused with a reason. Every cleanup written re-raises;
 * nothing here can hide a cancellation. Workload: a few calls per investigation, on one file. */
#include "fix_handoff.h"

#include "fix_impl.h"

#include <stdio.h>
#include <string.h>

typedef struct handoff {
    fixctx *c;      /* Borrowed. */
    TSNode st, fn;  /* the await statement and the waiter's async method */
    TSNode cls;     /* the class holding both */
    TSNode fut;     /* the awaited expression */
    TSNode base;    /* fut itself, or the object fut is an attribute of */
    TSNode attr;    /* the container attribute of self the future is registered in */
    TSNode setter;  /* the setter's function_definition */
    TSNode set_arg; /* the first set_result argument of the setter (null: none) */
} handoff;

static const char *text(const fixctx *c, TSNode n, size_t *len)
{
    return afd_pyast_text(c->src, c->len, n, len);
}

static int same_text(const fixctx *c, TSNode a, TSNode b)
{
    return afd_fix_same_text(c->src, a, b);
}

static int is_ident_char(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_';
}

/* Whether the text of n holds `<prefix><name>` as a whole word followed by `suffix` ("" any). */
static int mentions(const fixctx *c, TSNode n, const char *prefix, TSNode name, const char *suffix)
{
    size_t ln, lw;
    const char *t = text(c, n, &ln), *w = text(c, name, &lw);
    size_t lp = strlen(prefix), ls = strlen(suffix);
    for (size_t i = 0; i + lp + lw + ls <= ln; i++)
        if (!memcmp(t + i, prefix, lp) && !memcmp(t + i + lp, w, lw) &&
            (i + lp + lw == ln || !is_ident_char(t[i + lp + lw])) && !memcmp(t + i + lp + lw, suffix, ls) &&
            (i == 0 || !is_ident_char(t[i - 1]) || t[i - 1] == '.'))
            return 1;
    return 0;
}

/* `self.<name>`: the attribute name node, or a null node. */
static TSNode self_attribute(const fixctx *c, TSNode n)
{
    TSNode none = {{0}, 0, 0};
    if (!afd_pyast_is(n, AFD_PY_ATTRIBUTE) ||
        !afd_fix_text_is(c->src, afd_pyast_field(n, AFD_PYF_OBJECT), "self"))
        return none;
    return afd_pyast_field(n, AFD_PYF_ATTRIBUTE);
}

/* A call's method name node when the call is `<obj>.<name>(...)`, and *obj; else a null node. */
static TSNode method_call(TSNode call, TSNode *obj)
{
    TSNode none = {{0}, 0, 0};
    TSNode f = afd_pyast_field(call, AFD_PYF_FUNCTION);
    if (!afd_pyast_is(call, AFD_PY_CALL) || !afd_pyast_is(f, AFD_PY_ATTRIBUTE))
        return none;
    *obj = afd_pyast_field(f, AFD_PYF_OBJECT);
    return afd_pyast_field(f, AFD_PYF_ATTRIBUTE);
}

static int find_await(void *ctx, TSNode n)
{
    TSNode *out = ctx;
    if (afd_pyast_is(n, AFD_PY_AWAIT)) {
        *out = n;
        return AFD_PYAST_STOP;
    }
    return AFD_PYAST_DESCEND;
}

/* The registration: `self.<attr>.append(x)` (appendleft, add, put_nowait, insert) with x the
 * future or the object holding it, anywhere in the waiter's method. */
static int find_registration(void *ctx, TSNode n)
{
    handoff *h = ctx;
    static const char *adders[] = {"append", "appendleft", "add", "put_nowait", "insert"};
    TSNode obj;
    TSNode name = method_call(n, &obj);
    if (ts_node_is_null(name))
        return AFD_PYAST_DESCEND;
    TSNode attr = self_attribute(h->c, obj);
    int adder = 0;
    for (size_t i = 0; i < sizeof adders / sizeof adders[0]; i++)
        adder |= afd_fix_text_is(h->c->src, name, adders[i]);
    if (ts_node_is_null(attr) || !adder)
        return AFD_PYAST_DESCEND;
    TSNode args = afd_pyast_field(n, AFD_PYF_ARGUMENTS);
    uint32_t k = ts_node_named_child_count(args);
    for (uint32_t i = 0; i < k; i++)
        if (same_text(h->c, ts_node_named_child(args, i), h->base) ||
            same_text(h->c, ts_node_named_child(args, i), h->fut)) {
            h->attr = attr;
            return AFD_PYAST_STOP;
        }
    return AFD_PYAST_DESCEND;
}

typedef struct node_find {
    const fixctx *c;
    enum afd_py_kind kind;
    const char *method; /* for a CALL: `<obj>.<method>(...)` only */
    TSNode found;
} node_find;

static int find_node(void *ctx, TSNode n)
{
    node_find *q = ctx;
    if (!afd_pyast_is(n, q->kind))
        return AFD_PYAST_DESCEND;
    if (q->method) {
        TSNode obj;
        TSNode name = method_call(n, &obj);
        if (ts_node_is_null(name) || !afd_fix_text_is(q->c->src, name, q->method))
            return AFD_PYAST_DESCEND;
    }
    q->found = n;
    return AFD_PYAST_STOP;
}

static TSNode first_node(const fixctx *c, TSNode root, enum afd_py_kind kind, const char *method)
{
    node_find q = {c, kind, method, {{0}, 0, 0}};
    afd_pyast_walk(NULL, root, find_node, NULL, &q); /* it allocates nothing that can fail */
    return q.found;
}

/* The setter: the first plain method of the class, other than the waiter, that reads
 * self.<attr> and calls `.set_result(...)`. */
static int find_setter(handoff *h)
{
    TSNode body = afd_pyast_field(h->cls, AFD_PYF_BODY);
    TSNode wname = afd_pyast_field(h->fn, AFD_PYF_NAME);
    uint32_t k = ts_node_named_child_count(body);
    for (uint32_t i = 0; i < k; i++) {
        TSNode d = ts_node_named_child(body, i);
        if (!afd_pyast_is(d, AFD_PY_FUNCTION_DEFINITION) || afd_fix_is_async_def(d) ||
            same_text(h->c, afd_pyast_field(d, AFD_PYF_NAME), wname) ||
            !mentions(h->c, d, "self.", h->attr, ""))
            continue;
        TSNode call = first_node(h->c, d, AFD_PY_CALL, "set_result");
        if (ts_node_is_null(call))
            continue;
        h->setter = d;
        h->set_arg = ts_node_named_child(afd_pyast_field(call, AFD_PYF_ARGUMENTS), 0);
        return 0;
    }
    return afd_fix_refuse(h->c,
                          "no plain method of the class reads self.%.*s and completes the future "
                          "with set_result(): no setter to pass the hand-off on with",
                          (int)(ts_node_end_byte(h->attr) - ts_node_start_byte(h->attr)),
                          h->c->src + ts_node_start_byte(h->attr));
}

/* Finds the await statement, its future, the class, the registration and the setter. */
static int read_shape(handoff *h, uint32_t line)
{
    fixctx *c = h->c;
    int rc = afd_fix_async_statement_at(c, line, "the await", "a hand-off is awaited in a coroutine", &h->st,
                                        &h->fn);
    if (rc < 0)
        return rc;
    if (ts_node_start_point(h->st).row != line - 1 || ts_node_end_point(h->st).row != line - 1 ||
        !(afd_pyast_is(h->st, AFD_PY_EXPRESSION_STATEMENT) || afd_pyast_is(h->st, AFD_PY_RETURN_STATEMENT)))
        return afd_fix_refuse(c, "line %u is not a one-line statement awaiting a future", line);
    TSNode aw = {{0}, 0, 0};
    afd_pyast_walk(NULL, h->st, find_await, NULL, &aw);
    h->fut = ts_node_is_null(aw) ? aw : ts_node_named_child(aw, 0);
    if (!afd_pyast_is(h->fut, AFD_PY_IDENTIFIER) && !afd_pyast_is(h->fut, AFD_PY_ATTRIBUTE))
        return afd_fix_refuse(c,
                              "line %u awaits no future held in a name or an attribute (a call's "
                              "coroutine is not a hand-off the waiter can inspect)",
                              line);
    h->base = afd_pyast_is(h->fut, AFD_PY_ATTRIBUTE) ? afd_pyast_field(h->fut, AFD_PYF_OBJECT) : h->fut;
    h->cls = afd_fix_enclosing(h->fn, AFD_PY_CLASS_DEFINITION);
    if (ts_node_is_null(h->cls) || !ts_node_eq(ts_node_parent(ts_node_parent(h->fn)), h->cls))
        return afd_fix_refuse(c, "the waiter is not a method of a class: no setter of the same object to "
                                 "pass the hand-off on with");
    h->attr = (TSNode){{0}, 0, 0};
    afd_pyast_walk(NULL, afd_pyast_field(h->fn, AFD_PYF_BODY), find_registration, NULL, h);
    if (ts_node_is_null(h->attr))
        return afd_fix_refuse(c, "the awaited future is not registered in a container of self "
                                 "(`self.<waiters>.append(fut)`), where another method would find it");
    return find_setter(h);
}

/* The existing handler that catches the waiter's CancelledError and ends in a bare `raise`: its
 * block, or a null node. Walks from the await up to the method. */
static TSNode cancel_handler(const handoff *h)
{
    TSNode none = {{0}, 0, 0};
    for (TSNode p = ts_node_parent(h->st); !ts_node_is_null(p) && !ts_node_eq(p, h->fn);
         p = ts_node_parent(p)) {
        TSNode t = ts_node_parent(p);
        if (!afd_pyast_is(p, AFD_PY_BLOCK) || !afd_pyast_is(t, AFD_PY_TRY_STATEMENT) ||
            !ts_node_eq(afd_pyast_field(t, AFD_PYF_BODY), p))
            continue;
        uint32_t k = ts_node_named_child_count(t);
        for (uint32_t i = 0; i < k; i++) {
            TSNode ex = ts_node_named_child(t, i);
            if (!afd_pyast_is(ex, AFD_PY_EXCEPT_CLAUSE))
                continue;
            uint32_t m = ts_node_named_child_count(ex);
            TSNode block = m ? ts_node_named_child(ex, m - 1) : none;
            TSNode type = m > 1 ? ts_node_named_child(ex, 0) : none;
            size_t tl = 0;
            const char *tt = ts_node_is_null(type) ? "" : text(h->c, type, &tl);
            int catches = ts_node_is_null(type) || memmem(tt, tl, "CancelledError", 14) ||
                          memmem(tt, tl, "BaseException", 13);
            uint32_t nb = afd_pyast_is(block, AFD_PY_BLOCK) ? ts_node_named_child_count(block) : 0;
            TSNode last = nb ? ts_node_named_child(block, nb - 1) : none;
            if (catches && afd_pyast_is(last, AFD_PY_RAISE_STATEMENT) && !ts_node_named_child_count(last) &&
                ts_node_start_point(block).row > ts_node_start_point(ex).row)
                return block;
        }
    }
    return none;
}

/* One-line `self.<x> = ...` / `self.<x> += ...` statements that follow the await in its block, up
 * to the first other statement: what the waiter does on success, before any return. */
static int take_lines(handoff *h, const char *ind, afd_buf *b)
{
    size_t n = 0;
    for (TSNode s = ts_node_next_named_sibling(h->st); !ts_node_is_null(s);
         s = ts_node_next_named_sibling(s)) {
        TSNode e = afd_pyast_is(s, AFD_PY_EXPRESSION_STATEMENT) ? ts_node_named_child(s, 0) : s;
        if (!(afd_pyast_is(e, AFD_PY_ASSIGNMENT) || afd_pyast_is(e, AFD_PY_AUGMENTED_ASSIGNMENT)) ||
            ts_node_is_null(self_attribute(h->c, afd_pyast_field(e, AFD_PYF_LEFT))) ||
            ts_node_start_point(s).row != ts_node_end_point(s).row ||
            !ts_node_is_null(first_node(h->c, s, AFD_PY_AWAIT, NULL)))
            break;
        size_t l;
        const char *t = text(h->c, s, &l);
        afd_buf_printf(b, "%s%.*s\n", ind, (int)l, t);
        n++;
    }
    return n ? 0
             : afd_fix_refuse(h->c, "the setter opens with a precondition that raises, and the waiter sets "
                                    "no state of self after the await to meet it");
}

/* Whether the module defines class `name` with a close() method. */
static int closable_class(const fixctx *c, TSNode name)
{
    TSNode root = ts_tree_root_node(c->tree);
    uint32_t k = ts_node_named_child_count(root);
    for (uint32_t i = 0; i < k; i++) {
        TSNode d = ts_node_named_child(root, i);
        if (!afd_pyast_is(d, AFD_PY_CLASS_DEFINITION) ||
            !same_text(c, afd_pyast_field(d, AFD_PYF_NAME), name))
            continue;
        TSNode b = afd_pyast_field(d, AFD_PYF_BODY);
        uint32_t m = ts_node_named_child_count(b);
        for (uint32_t j = 0; j < m; j++) {
            TSNode f = ts_node_named_child(b, j);
            if (afd_pyast_is(f, AFD_PY_FUNCTION_DEFINITION) &&
                afd_fix_text_is(c->src, afd_pyast_field(f, AFD_PYF_NAME), "close"))
                return 1;
        }
    }
    return 0;
}

/* A walk for a `.set_result(v)` call whose first argument is v. */
typedef struct handed {
    const fixctx *c; /* Borrowed. */
    TSNode v;
    int found;
} handed;

static int find_handed(void *ctx, TSNode n)
{
    handed *q = ctx;
    TSNode obj;
    TSNode name = method_call(n, &obj);
    if (!ts_node_is_null(name) && afd_fix_text_is(q->c->src, name, "set_result") &&
        same_text(q->c, ts_node_named_child(afd_pyast_field(n, AFD_PYF_ARGUMENTS), 0), q->v)) {
        q->found = 1;
        return AFD_PYAST_STOP;
    }
    return AFD_PYAST_DESCEND;
}

/* A walk for the first `<v> = Cls(...)` of the setter whose v a set_result() of the setter hands
 * and whose Cls is a class of this module with close(). */
typedef struct created {
    const fixctx *c; /* Borrowed. */
    TSNode body;     /* the setter's body */
    TSNode cls_name; /* Cls, once found */
} created;

static int find_created(void *ctx, TSNode n)
{
    created *q = ctx;
    TSNode l = afd_pyast_field(n, AFD_PYF_LEFT), r = afd_pyast_field(n, AFD_PYF_RIGHT);
    if (!afd_pyast_is(n, AFD_PY_ASSIGNMENT) || !afd_pyast_is(l, AFD_PY_IDENTIFIER) ||
        !afd_pyast_is(r, AFD_PY_CALL) ||
        !afd_pyast_is(afd_pyast_field(r, AFD_PYF_FUNCTION), AFD_PY_IDENTIFIER))
        return AFD_PYAST_DESCEND;
    handed w = {q->c, l, 0};
    afd_pyast_walk(NULL, q->body, find_handed, NULL, &w);
    if (!w.found || !closable_class(q->c, afd_pyast_field(r, AFD_PYF_FUNCTION)))
        return AFD_PYAST_DESCEND;
    q->cls_name = afd_pyast_field(r, AFD_PYF_FUNCTION);
    return AFD_PYAST_STOP;
}

/* Whether the setter hands an instance it creates of a class of this module that has a close()
 * method: `v = Cls(...)`, `<w>.set_result(v)`. */
static int hands_closable(const handoff *h)
{
    created q = {h->c, afd_pyast_field(h->setter, AFD_PYF_BODY), {{0}, 0, 0}};
    afd_pyast_walk(NULL, q.body, find_created, NULL, &q); /* it allocates nothing that can fail */
    return !ts_node_is_null(q.cls_name);
}

/* The give-back statements, each line prefixed with ind: into b. */
static int giveback(handoff *h, afd_handoff_giveback how, TSNode handler, const char *ind, afd_buf *b)
{
    size_t lf, lname;
    const char *f = text(h->c, h->fut, &lf);
    TSNode fname = afd_pyast_field(h->setter, AFD_PYF_NAME);
    const char *name = text(h->c, fname, &lname);
    if (how == AFD_HANDOFF_CLOSE) {
        if (!hands_closable(h))
            return afd_fix_refuse(h->c, "the setter hands no instance it creates of a class of this module "
                                        "with close(): nothing to close");
        afd_buf_printf(b, "%s%.*s.result().close()\n", ind, (int)lf, f);
        return 0;
    }
    if (!ts_node_is_null(handler) && mentions(h->c, handler, "self.", fname, "("))
        return afd_fix_refuse(h->c,
                              "the handler already calls %.*s(): passing the hand-off on with it again "
                              "changes nothing",
                              (int)lname, name);
    TSNode params = afd_pyast_field(h->setter, AFD_PYF_PARAMETERS);
    uint32_t np = ts_node_named_child_count(params);
    const char *arg = "";
    /* `item` or `item: object`: the parameter's name */
    TSNode p1 = np == 2 ? ts_node_named_child(params, 1) : (TSNode){{0}, 0, 0};
    if (afd_pyast_is(p1, AFD_PY_TYPED_PARAMETER))
        p1 = ts_node_named_child(p1, 0);
    if (np == 2 && afd_pyast_is(p1, AFD_PY_IDENTIFIER) && same_text(h->c, p1, h->set_arg))
        arg = ".result()";
    else if (np != 1)
        return afd_fix_refuse(h->c,
                              "the setter %.*s() takes parameters the waiter cannot supply (only none, "
                              "or the one it hands on, is)",
                              (int)lname, name);
    TSNode call = first_node(h->c, h->setter, AFD_PY_CALL, "set_result");
    TSNode guard = first_node(h->c, afd_pyast_field(h->setter, AFD_PYF_BODY), AFD_PY_RAISE_STATEMENT, NULL);
    int rc = 0;
    if (!ts_node_is_null(guard) && ts_node_start_byte(guard) < ts_node_start_byte(call))
        rc = take_lines(h, ind, b);
    if (rc == 0)
        afd_buf_printf(b, "%sself.%.*s(%.*s%s)\n", ind, (int)lname, name, *arg ? (int)lf : 0, f, arg);
    return rc;
}

/* The indentation unit of the waiter's method: its body's indent beyond the def's. */
static int method_unit(fixctx *c, TSNode fn, char *unit, size_t cap)
{
    TSNode body = afd_pyast_field(fn, AFD_PYF_BODY);
    const char *at_def, *at_body;
    size_t d = afd_fix_line_indent(c, ts_node_start_point(fn).row, &at_def);
    size_t b = afd_fix_line_indent(c, ts_node_start_point(body).row, &at_body);
    if (b <= d || b - d >= cap || ts_node_start_point(body).row == ts_node_start_point(fn).row)
        return afd_fix_refuse(c, "the waiter's body is not indented on lines of its own");
    memcpy(unit, at_body + d, b - d);
    unit[b - d] = 0;
    return 0;
}

int afd_fix_handoff_cleanup(const char *src, size_t len, uint32_t await_line, afd_handoff_giveback how,
                            afd_buf *out, char *why, size_t whylen)
{
    fixctx c = {.src = src, .len = len, .why = why, .whylen = whylen};
    handoff h = {.c = &c};
    afd_buf ind, cleanup;
    afd_buf_init(&ind);
    afd_buf_init(&cleanup);
    char unit[64];
    int rc = afd_fix_start(&c, out);
    if (rc < 0 || (rc = read_shape(&h, await_line)) < 0 ||
        (rc = method_unit(&c, h.fn, unit, sizeof unit)) < 0)
        goto out;
    TSNode handler = cancel_handler(&h);
    /* the cleanup's own indent: the handler's statements', or one unit inside a new except */
    uint32_t row = ts_node_is_null(handler) ? ts_node_start_point(h.st).row
                                            : ts_node_start_point(ts_node_named_child(handler, 0)).row;
    const char *at;
    size_t n = afd_fix_line_indent(&c, row, &at);
    afd_buf_put(&ind, at, n);
    if (ts_node_is_null(handler))
        afd_buf_printf(&ind, "%s", unit);
    afd_buf_printf(&ind, "%s", unit);
    afd_buf_put_u8(&ind, 0);
    if (ind.err) {
        rc = AFD_ENOMEM;
        goto out;
    }
    if ((rc = giveback(&h, how, handler, (const char *)ind.data, &cleanup)) < 0)
        goto out;
    size_t lf;
    const char *f = text(&c, h.fut, &lf);
    const char *outer = (const char *)ind.data; /* the if's indent: ind less one unit */
    int outer_len = (int)(strlen(outer) - strlen(unit));
    afd_buf *b;
    if (ts_node_is_null(handler)) {
        uint32_t s = ts_node_start_point(h.st).row;
        afd_buf_printf(&c.edits[s].before, "%.*stry:\n", (int)n, at);
        c.edits[s].indent = 1;
        b = &c.edits[s + 1].before;
        afd_buf_printf(b, "%.*sexcept asyncio.CancelledError:\n", (int)n, at);
        int has_asyncio = 0;
        uint32_t setup = afd_fix_module_setup_row(ts_tree_root_node(c.tree), &has_asyncio, src);
        if (!has_asyncio)
            afd_buf_printf(&c.edits[setup].before, "import asyncio\n");
    } else {
        b = &c.edits[row].before;
    }
    afd_buf_printf(b,
                   "%.*s# affidavit: handed %.*s's result, then interrupted before using it: %s and "
                   "re-raise.\n",
                   outer_len, outer, (int)lf, f, how == AFD_HANDOFF_CLOSE ? "close it" : "pass it on");
    afd_buf_printf(b, "%.*sif %.*s.done() and not %.*s.cancelled():\n", outer_len, outer, (int)lf, f, (int)lf,
                   f);
    afd_buf_put(b, cleanup.data, cleanup.len);
    if (ts_node_is_null(handler))
        afd_buf_printf(b, "%.*sraise\n", outer_len, outer);
    rc = cleanup.err ? AFD_ENOMEM : afd_fix_emit(&c, out, unit);
out:
    afd_buf_finish(&ind);
    afd_buf_finish(&cleanup);
    afd_fix_finish(&c);
    return rc;
}

/* ---- HANDOFF_AT_WAKEUP ---- */

/* The head-peek of the setter that afd_fix_handoff_at_wakeup rewrites. */
typedef struct head_peek {
    TSNode test;   /* `if self.<q>:`, a statement of the setter's body, without elif or else */
    TSNode first;  /* `w = self.<q>[0]`, the first statement of its block */
    TSNode pop;    /* the `self.<q>.popleft()` statement of its block */
    TSNode waiter; /* w */
} head_peek;

/* A walk for the statement `self.<q>.popleft()` (exactly one) and the test of the waiter. */
typedef struct peek_walk {
    const handoff *h; /* Borrowed. */
    TSNode waiter;
    TSNode pop;
    int n_pops, tests_waiter, hands;
} peek_walk;

static int peek_enter(void *ctx, TSNode n)
{
    peek_walk *q = ctx;
    const fixctx *c = q->h->c;
    TSNode obj;
    TSNode name = method_call(n, &obj);
    if (ts_node_is_null(name))
        return AFD_PYAST_DESCEND;
    if (afd_fix_text_is(c->src, name, "popleft") && same_text(c, self_attribute(c, obj), q->h->attr) &&
        afd_pyast_is(ts_node_parent(n), AFD_PY_EXPRESSION_STATEMENT)) {
        q->pop = ts_node_parent(n);
        q->n_pops++;
    }
    if (same_text(c, obj, q->waiter) &&
        (afd_fix_text_is(c->src, name, "cancelled") || afd_fix_text_is(c->src, name, "done")))
        q->tests_waiter = 1;
    if (same_text(c, obj, q->waiter) && afd_fix_text_is(c->src, name, "set_result"))
        q->hands = 1;
    return AFD_PYAST_DESCEND;
}

static int one_line_alone(const fixctx *c, TSNode st)
{
    uint32_t row = ts_node_start_point(st).row;
    size_t ind = afd_fix_line_indent(c, row, NULL);
    size_t end = c->line_start[row + 1];
    size_t stop = ts_node_end_byte(st);
    while (stop < end && (c->src[stop] == ' ' || c->src[stop] == '\t' || c->src[stop] == '\r'))
        stop++;
    return row == ts_node_end_point(st).row && ts_node_start_point(st).column == ind &&
           (stop == end || c->src[stop] == '\n' || c->src[stop] == '#');
}

static int find_head_peek(const handoff *h, head_peek *hp)
{
    const fixctx *c = h->c;
    TSNode body = afd_pyast_field(h->setter, AFD_PYF_BODY);
    uint32_t k = ts_node_named_child_count(body);
    for (uint32_t i = 0; i < k; i++) {
        TSNode st = ts_node_named_child(body, i);
        if (strcmp(ts_node_type(st), "if_statement") != 0 || ts_node_named_child_count(st) != 2 ||
            !same_text(c, self_attribute(c, afd_pyast_field(st, AFD_PYF_CONDITION)), h->attr))
            continue;
        TSNode blk = ts_node_named_child(st, 1);
        TSNode first = ts_node_named_child(blk, 0);
        TSNode as = afd_pyast_is(first, AFD_PY_EXPRESSION_STATEMENT) ? ts_node_named_child(first, 0) : first;
        TSNode right = afd_pyast_field(as, AFD_PYF_RIGHT);
        if (!afd_pyast_is(blk, AFD_PY_BLOCK) || !afd_pyast_is(as, AFD_PY_ASSIGNMENT) ||
            !afd_pyast_is(afd_pyast_field(as, AFD_PYF_LEFT), AFD_PY_IDENTIFIER) ||
            !afd_pyast_is(right, AFD_PY_SUBSCRIPT) ||
            !same_text(c, self_attribute(c, afd_pyast_field(right, AFD_PYF_VALUE)), h->attr) ||
            !afd_fix_text_is(c->src, afd_pyast_field(right, AFD_PYF_SUBSCRIPT), "0"))
            continue;
        peek_walk q = {h, afd_pyast_field(as, AFD_PYF_LEFT), {{0}, 0, 0}, 0, 0, 0};
        afd_pyast_walk(NULL, blk, peek_enter, NULL, &q); /* it allocates nothing that can fail */
        if (q.n_pops != 1 || !q.tests_waiter || !q.hands || !one_line_alone(c, first) ||
            !one_line_alone(c, q.pop) ||
            ts_node_start_point(afd_pyast_field(st, AFD_PYF_CONDITION)).row != ts_node_start_point(st).row)
            continue;
        *hp = (head_peek){st, first, q.pop, q.waiter};
        return 0;
    }
    return afd_fix_refuse(
        h->c, "the setter does not look only at the first waiter (`if self.<q>: w = self.<q>[0]`, "
              "a test of w, `self.<q>.popleft()` and w.set_result() in that branch)");
}

int afd_fix_handoff_at_wakeup(const char *src, size_t len, uint32_t await_line, afd_buf *out, char *why,
                              size_t whylen)
{
    fixctx c = {.src = src, .len = len, .why = why, .whylen = whylen};
    handoff h = {.c = &c};
    head_peek hp;
    int rc = afd_fix_start(&c, out);
    if (rc < 0 || (rc = read_shape(&h, await_line)) < 0 || (rc = find_head_peek(&h, &hp)) < 0)
        goto out;
    size_t la, lw, lc;
    const char *attr = text(&c, h.attr, &la), *w = text(&c, hp.waiter, &lw);
    TSNode cond = afd_pyast_field(hp.test, AFD_PYF_CONDITION);
    const char *cond_text = text(&c, cond, &lc);
    uint32_t r_if = ts_node_start_point(hp.test).row, r_first = ts_node_start_point(hp.first).row;
    const char *at;
    size_t n = afd_fix_line_indent(&c, r_if, &at);
    const char *rest = cond_text + lc; /* the `:` and what follows it on the line */
    size_t lrest = c.line_start[r_if + 1] - (size_t)(rest - src);
    afd_buf *b = &c.edits[r_if].before;
    afd_buf_printf(
        b,
        "%.*s# affidavit: the owner is decided at wake-up, among the live waiters (each one looked "
        "at leaves the queue).\n",
        (int)n, at);
    afd_buf_printf(b, "%.*swhile %.*s%.*s", (int)n, at, (int)lc, cond_text, (int)lrest, rest);
    c.edits[r_if].omit = 1;
    size_t nf = afd_fix_line_indent(&c, r_first, &at);
    size_t end_first = ts_node_end_byte(hp.first);
    afd_buf_printf(&c.edits[r_first].before, "%.*s%.*s = self.%.*s.popleft()%.*s", (int)nf, at, (int)lw, w,
                   (int)la, attr, (int)(c.line_start[r_first + 1] - end_first), src + end_first);
    c.edits[r_first].omit = 1;
    c.edits[ts_node_start_point(hp.pop).row].omit = 1;
    rc = afd_fix_emit(&c, out, "");
out:
    afd_fix_finish(&c);
    return rc;
}
