/* gate_span.c -- the one piece of `sync_primitive` substance that adds no primitive: an existing
 * `async with L:` extended over statements the function already had.
 *
 * A lost update whose other writer already holds L cannot be fixed with a new lock (it would not
 * exclude that writer); the fix widens the existing `async with L:` so it also covers the stale
 * read. That edit creates nothing and adds no `async with`, so the fact multisets of gate.c do
 * not see it. This file compares the two sides of one file function by function instead, and
 * counts an `async with L` as extended when all of these hold:
 *   - the function (same chain of enclosing class and def names) exists once on each side;
 *   - every simple statement of the function before is still in it after (nothing removed), and
 *     every `async with` lock of the file before is still there (no lock removed elsewhere);
 *   - the function holds as many `async with L` (same normalized item text; an item is a name,
 *     an attribute chain or a subscript of one, never a call) on both sides, and
 *     the n-th before is paired with the n-th after;
 *   - the after body keeps every direct statement of the before body (it does not shrink), and
 *     gains at least one that the function held outside this `async with` before and holds there
 *     fewer times after: a statement moved in, not one written anew (a `pass`, a sleep) nor one
 *     copied in while its original stays outside.
 * Statements are compared by their text with whitespace collapsed (afd_gate_norm), so moving a
 * statement one indentation level deeper keeps its text. Nested definitions are opaque statements
 * of the function holding them and are compared as functions of their own.
 *
 * The walk recurses over statements only (blocks, compound statements and their clauses, never
 * expressions), at most MAX_SPAN_DEPTH levels (CPython refuses 100 levels of indentation), and a
 * function with more than MAX_SPAN_STMTS statements is not looked at: it gives no substance. */
#include "gate_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SPAN_DEPTH 128u
#define MAX_SPAN_STMTS 4096u
#define MAX_SPAN_FNS 4096u

typedef struct sstmt {
    uint32_t off, len;   /* text in the side's strs */
    uint32_t start, end; /* bytes of the statement */
    uint8_t simple;      /* holds no block of its own (a nested definition counts as simple) */
} sstmt;

typedef struct swith {
    uint32_t key_off, key_len; /* the normalized lock items, ", "-joined, in the side's strs */
    uint32_t start, end;
    size_t first_body, n_body; /* its direct statements: body[first_body..+n_body) */
} swith;

typedef struct sfn {
    uint32_t key_off, key_len; /* "Class.method" chain, in the side's strs */
    TSNode node;
} sfn;

/* One side of one file. */
typedef struct sside {
    afd_pysrc ps;
    ctx c; /* only src, len, tmp and tmp2 are used (by afd_gate_norm and span_items) */
    afd_buf strs;
    sfn *fns; /* Owned. */
    size_t n_fns, cap_fns;
    sstmt *st; /* Owned: the statements of the function being compared, at every depth. */
    size_t n_st, cap_st;
    sstmt *body; /* Owned: the direct statements of each `async with` in w. */
    size_t n_body, cap_body;
    swith *w; /* Owned. */
    size_t n_w, cap_w;
    int overflow; /* too deep or too many: the side gives no substance */
} sside;

static const char *str_at(const sside *s, uint32_t off)
{
    return (const char *)s->strs.data + off;
}

static int same(const sside *x, uint32_t xo, uint32_t xl, const sside *y, uint32_t yo, uint32_t yl)
{
    return xl == yl && memcmp(str_at(x, xo), str_at(y, yo), xl) == 0;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t l = strlen(s), sl = strlen(suffix);
    return l >= sl && strcmp(s + l - sl, suffix) == 0;
}

static int is_definition(const char *t)
{
    return strcmp(t, "function_definition") == 0 || strcmp(t, "class_definition") == 0 ||
           strcmp(t, "decorated_definition") == 0;
}

/* Appends s[0..len) to the side's strings; its offset into *off. */
static int put_str(sside *s, const char *t, size_t len, uint32_t *off)
{
    *off = (uint32_t)s->strs.len;
    afd_buf_put(&s->strs, t, len);
    return s->strs.err ? AFD_ENOMEM : 0;
}

/* Records every function of the module with its name chain, recursing through statements. */
static int collect_fns(sside *s, TSNode n, const char *prefix, size_t plen, unsigned depth)
{
    if (depth > MAX_SPAN_DEPTH || s->n_fns >= MAX_SPAN_FNS) {
        s->overflow = 1;
        return 0;
    }
    uint32_t nc = ts_node_named_child_count(n);
    for (uint32_t i = 0; i < nc; i++) {
        TSNode ch = ts_node_named_child(n, i);
        const char *t = ts_node_type(ch);
        int fn = strcmp(t, "function_definition") == 0, cls = strcmp(t, "class_definition") == 0;
        if (!fn && !cls) {
            int rc = 0;
            if (strcmp(t, "block") == 0 || ends_with(t, "_statement") || ends_with(t, "_clause") ||
                strcmp(t, "decorated_definition") == 0)
                rc = collect_fns(s, ch, prefix, plen, depth + 1);
            if (rc < 0)
                return rc;
            continue;
        }
        TSNode name = ts_node_child_by_field_name(ch, "name", 4);
        size_t nl = 0;
        const char *nt = ts_node_is_null(name) ? "" : afd_pyast_text(s->c.src, s->c.len, name, &nl);
        char key[512];
        int kl = snprintf(key, sizeof key, "%.*s%s%.*s", (int)plen, prefix, plen ? "." : "", (int)nl, nt);
        if (kl < 0 || (size_t)kl >= sizeof key) {
            s->overflow = 1;
            return 0;
        }
        if (fn) {
            if (afd_array_grow((void **)&s->fns, &s->cap_fns, s->n_fns + 1, sizeof *s->fns, 16) < 0)
                return AFD_ENOMEM;
            sfn *f = &s->fns[s->n_fns];
            int rc = put_str(s, key, (size_t)kl, &f->key_off);
            if (rc < 0)
                return rc;
            f->key_len = (uint32_t)kl;
            f->node = ch;
            s->n_fns++;
        }
        int rc = collect_fns(s, ch, key, (size_t)kl, depth + 1);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int add_stmt(sside *s, sstmt **arr, size_t *n, size_t *cap, TSNode st, int simple)
{
    if (*n >= MAX_SPAN_STMTS) {
        s->overflow = 1;
        return 0;
    }
    if (afd_array_grow((void **)arr, cap, *n + 1, sizeof **arr, 32) < 0)
        return AFD_ENOMEM;
    afd_gate_norm(&s->c, st, &s->c.tmp);
    if (s->c.tmp.err)
        return AFD_ENOMEM;
    sstmt *e = &(*arr)[*n];
    int rc = put_str(s, (const char *)s->c.tmp.data, s->c.tmp.len, &e->off);
    if (rc < 0)
        return rc;
    e->len = (uint32_t)s->c.tmp.len;
    e->start = ts_node_start_byte(st);
    e->end = ts_node_end_byte(st);
    e->simple = (uint8_t)simple;
    (*n)++;
    return 0;
}

/* The block child of a compound statement or clause, walked; *found set when there is one. */
static int walk_block(sside *s, TSNode block, unsigned depth);

static int walk_children(sside *s, TSNode n, unsigned depth, int *found)
{
    uint32_t nc = ts_node_named_child_count(n);
    for (uint32_t i = 0; i < nc; i++) {
        TSNode ch = ts_node_named_child(n, i);
        const char *t = ts_node_type(ch);
        int rc = 0;
        if (strcmp(t, "block") == 0) {
            *found = 1;
            rc = walk_block(s, ch, depth + 1);
        } else if (ends_with(t, "_clause")) {
            rc = walk_children(s, ch, depth + 1, found);
        }
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* The lock items of an `async with` (names, attribute chains and subscripts of those such as
 * `self.locks[key]`: a lock looked up in a table is as much one lock as a named one; not calls),
 * normalized and joined with 0x1f into s->c.tmp; their count. 0 for a plain `with`. */
static size_t span_items(sside *s, TSNode with)
{
    afd_buf *list = &s->c.tmp;
    list->len = 0;
    int is_async = 0;
    TSNode clause;
    memset(&clause, 0, sizeof clause);
    uint32_t nc = ts_node_child_count(with);
    for (uint32_t i = 0; i < nc; i++) {
        TSNode k = ts_node_child(with, i);
        if (!ts_node_is_named(k) && strcmp(ts_node_type(k), "async") == 0)
            is_async = 1;
        else if (ts_node_is_named(k) && strcmp(ts_node_type(k), "with_clause") == 0)
            clause = k;
    }
    if (!is_async || ts_node_is_null(clause))
        return 0;
    size_t count = 0;
    uint32_t ni = ts_node_named_child_count(clause);
    for (uint32_t i = 0; i < ni; i++) {
        TSNode v = afd_pyast_field(ts_node_named_child(clause, i), AFD_PYF_VALUE);
        if (!ts_node_is_null(v) && afd_gate_kind_of(&s->c, v) == K_AS_PATTERN && ts_node_named_child_count(v))
            v = ts_node_named_child(v, 0);
        TSNode base = v;
        if (!ts_node_is_null(v) && strcmp(ts_node_type(v), "subscript") == 0)
            base = ts_node_child_by_field_name(v, "value", 5);
        uint8_t k = ts_node_is_null(base) ? K_OTHER : afd_gate_kind_of(&s->c, base);
        if (k != K_IDENT && k != K_ATTR)
            continue;
        afd_gate_norm(&s->c, v, &s->c.tmp2);
        if (count)
            afd_buf_put_u8(list, 0x1f);
        afd_buf_put(list, s->c.tmp2.data, s->c.tmp2.len);
        count++;
    }
    return count;
}

/* Records an `async with` with lock-like items: its key and its direct statements. */
static int add_with(sside *s, TSNode st)
{
    size_t cnt = span_items(s, st);
    if (s->c.tmp.err || s->c.tmp2.err)
        return AFD_ENOMEM;
    if (cnt == 0)
        return 0;
    if (afd_array_grow((void **)&s->w, &s->cap_w, s->n_w + 1, sizeof *s->w, 8) < 0)
        return AFD_ENOMEM;
    swith *w = &s->w[s->n_w];
    size_t kl = s->c.tmp.len;
    int rc = put_str(s, (const char *)s->c.tmp.data, kl, &w->key_off);
    if (rc < 0)
        return rc;
    w->key_len = (uint32_t)kl;
    w->start = ts_node_start_byte(st);
    w->end = ts_node_end_byte(st);
    w->first_body = s->n_body;
    w->n_body = 0;
    s->n_w++;
    TSNode body = ts_node_child_by_field_name(st, "body", 4);
    uint32_t nb = ts_node_is_null(body) ? 0 : ts_node_named_child_count(body);
    for (uint32_t i = 0; i < nb; i++) {
        rc = add_stmt(s, &s->body, &s->n_body, &s->cap_body, ts_node_named_child(body, i), 0);
        if (rc < 0)
            return rc;
    }
    s->w[s->n_w - 1].n_body = s->n_body - s->w[s->n_w - 1].first_body;
    return 0;
}

static int walk_block(sside *s, TSNode block, unsigned depth)
{
    if (depth > MAX_SPAN_DEPTH) {
        s->overflow = 1;
        return 0;
    }
    uint32_t nc = ts_node_named_child_count(block);
    for (uint32_t i = 0; i < nc && !s->overflow; i++) {
        TSNode st = ts_node_named_child(block, i);
        const char *t = ts_node_type(st);
        int found = 0, rc = 0;
        if (!is_definition(t)) {
            if (strcmp(t, "with_statement") == 0)
                rc = add_with(s, st);
            if (rc == 0)
                rc = walk_children(s, st, depth, &found);
        }
        if (rc == 0)
            rc = add_stmt(s, &s->st, &s->n_st, &s->cap_st, st, !found);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* Fills the side's statements and `async with`s from one function's body. */
static int walk_fn(sside *s, TSNode fn)
{
    s->n_st = s->n_body = s->n_w = 0;
    TSNode body = ts_node_child_by_field_name(fn, "body", 4);
    return ts_node_is_null(body) ? 0 : walk_block(s, body, 0);
}

/* How many statements of s with text (o, l) from x lie outside [start, end). */
static size_t count_outside(const sside *s, const sside *x, uint32_t o, uint32_t l, uint32_t start,
                            uint32_t end)
{
    size_t n = 0;
    for (size_t i = 0; i < s->n_st; i++)
        n +=
            (s->st[i].start < start || s->st[i].start >= end) && same(s, s->st[i].off, s->st[i].len, x, o, l);
    return n;
}

/* Whether every entry of small (simple ones only when simple_only) has its own match in big. */
static int contained(const sside *sb, const sstmt *small, size_t ns, const sside *sa, const sstmt *big,
                     size_t nb, int simple_only, unsigned char *taken)
{
    memset(taken, 0, nb);
    for (size_t i = 0; i < ns; i++) {
        if (simple_only && !small[i].simple)
            continue;
        size_t j = 0;
        while (j < nb && (taken[j] || (simple_only && !big[j].simple) ||
                          !same(sb, small[i].off, small[i].len, sa, big[j].off, big[j].len)))
            j++;
        if (j == nb)
            return 0;
        taken[j] = 1;
    }
    return 1;
}

/* Statements moved into a's n-th `async with` wa from outside b's wb: 0 when none or not an extension. */
static size_t moved_in(const sside *b, const swith *wb, const sside *a, const swith *wa, unsigned char *taken)
{
    const sstmt *bb = &b->body[wb->first_body], *ab = &a->body[wa->first_body];
    if (!contained(b, bb, wb->n_body, a, ab, wa->n_body, 0, taken))
        return 0; /* the body shrinks */
    size_t moved = 0;
    for (size_t i = 0; i < wa->n_body; i++) {
        if (taken[i])
            continue; /* kept from before */
        int dup = 0;
        for (size_t k = 0; k < i && !dup; k++)
            dup = !taken[k] && same(a, ab[k].off, ab[k].len, a, ab[i].off, ab[i].len);
        if (dup)
            continue; /* counted with its first occurrence */
        size_t gained = 0;
        for (size_t k = i; k < wa->n_body; k++)
            gained += !taken[k] && same(a, ab[k].off, ab[k].len, a, ab[i].off, ab[i].len);
        size_t ob = count_outside(b, a, ab[i].off, ab[i].len, wb->start, wb->end);
        size_t oa = count_outside(a, a, ab[i].off, ab[i].len, wa->start, wa->end);
        if (ob > oa)
            moved += gained < ob - oa ? gained : ob - oa;
    }
    return moved;
}

/* Compares one function's two sides (already walked); the first extension found into what. */
static int compare_fn(const sside *b, const sside *a, const char *path, char *what, size_t whatlen)
{
    if (b->overflow || a->overflow)
        return 0;
    size_t cap = a->n_st > a->n_w ? a->n_st : a->n_w;
    cap = cap > a->n_body ? cap : a->n_body;
    unsigned char *taken = malloc(cap + 1);
    if (!taken)
        return AFD_ENOMEM;
    int found = 0;
    /* Nothing removed: every simple statement and every locked `async with` is still there. */
    int keeps = contained(b, b->st, b->n_st, a, a->st, a->n_st, 1, taken);
    if (keeps) {
        memset(taken, 0, a->n_w);
        for (size_t i = 0; i < b->n_w && keeps; i++) {
            size_t j = 0;
            while (j < a->n_w && (taken[j] || !same(b, b->w[i].key_off, b->w[i].key_len, a, a->w[j].key_off,
                                                    a->w[j].key_len)))
                j++;
            keeps = j < a->n_w;
            if (keeps)
                taken[j] = 1;
        }
    }
    for (size_t i = 0; keeps && !found && i < b->n_w; i++) {
        const swith *wb = &b->w[i];
        /* The rank of wb among b's `async with`s of its key pairs it with a's of the same rank. */
        size_t rank = 0, nb = 0, na = 0;
        for (size_t k = 0; k < b->n_w; k++)
            if (same(b, b->w[k].key_off, b->w[k].key_len, b, wb->key_off, wb->key_len)) {
                rank += k < i;
                nb++;
            }
        const swith *wa = NULL;
        for (size_t k = 0; k < a->n_w; k++)
            if (same(a, a->w[k].key_off, a->w[k].key_len, b, wb->key_off, wb->key_len)) {
                if (na == rank)
                    wa = &a->w[k];
                na++;
            }
        if (na != nb || !wa)
            continue;
        size_t moved = moved_in(b, wb, a, wa, taken);
        if (moved) {
            found = 1;
            char key[120];
            snprintf(key, sizeof key, "%.*s", (int)(wb->key_len > 100 ? 100 : wb->key_len),
                     str_at(b, wb->key_off));
            for (char *p = key; *p; p++)
                if (*p == 0x1f)
                    *p = ',';
            snprintf(what, whatlen, "extends the existing `async with %s` over %zu statement%s in %s", key,
                     moved, moved == 1 ? "" : "s", path);
        }
    }
    free(taken);
    return found;
}

static int side_open(sside *s, const char *src, size_t len, int *ok)
{
    memset(s, 0, sizeof *s);
    afd_buf_init(&s->strs);
    afd_buf_init(&s->c.tmp);
    afd_buf_init(&s->c.tmp2);
    *ok = 0;
    int bad = 0;
    int rc = afd_pysrc_parse(&s->ps, src, len, afd_pyast_flag_refused, &bad);
    if (rc == AFD_ENOMEM)
        return rc;
    if (rc < 0 || bad || ts_node_has_error(ts_tree_root_node(s->ps.tree)))
        return 0;
    s->c.src = s->ps.text;
    s->c.len = len;
    rc = collect_fns(s, ts_tree_root_node(s->ps.tree), "", 0, 0);
    *ok = rc == 0 && !s->overflow;
    return rc;
}

static void side_close(sside *s)
{
    afd_pysrc_finish(&s->ps);
    afd_buf_finish(&s->strs);
    afd_buf_finish(&s->c.tmp);
    afd_buf_finish(&s->c.tmp2);
    free(s->fns);
    free(s->st);
    free(s->body);
    free(s->w);
}

/* The function of s named like x's f, when s holds exactly one; NULL otherwise. */
static const sfn *only_fn(const sside *s, const sside *x, const sfn *f)
{
    const sfn *hit = NULL;
    size_t n = 0;
    for (size_t i = 0; i < s->n_fns; i++)
        if (same(s, s->fns[i].key_off, s->fns[i].key_len, x, f->key_off, f->key_len)) {
            hit = &s->fns[i];
            n++;
        }
    return n == 1 ? hit : NULL;
}

/* The lock items of every `async with` in every function of s, into keys (their texts stay in
 * s->strs); a lock removed anywhere in the file shows as a key of b that a lacks. */
static int all_keys(sside *s, sstmt **keys, size_t *n, size_t *cap)
{
    for (size_t i = 0; i < s->n_fns; i++) {
        int rc = walk_fn(s, s->fns[i].node);
        if (rc < 0)
            return rc;
        for (size_t k = 0; k < s->n_w; k++) {
            if (afd_array_grow((void **)keys, cap, *n + 1, sizeof **keys, 16) < 0)
                return AFD_ENOMEM;
            (*keys)[(*n)++] = (sstmt){s->w[k].key_off, s->w[k].key_len, 0, 0, 1};
        }
    }
    return 0;
}

/* Whether every `async with` lock of b's file is still in a's (as a multiset). */
static int locks_kept(sside *b, sside *a, int *kept)
{
    sstmt *kb = NULL, *ka = NULL;
    size_t nb = 0, na = 0, cb = 0, ca = 0;
    unsigned char *taken = NULL;
    *kept = 0;
    int rc = all_keys(b, &kb, &nb, &cb);
    if (rc == 0)
        rc = all_keys(a, &ka, &na, &ca);
    if (rc == 0 && !(taken = malloc(na + 1)))
        rc = AFD_ENOMEM;
    if (rc == 0)
        *kept = !b->overflow && !a->overflow && contained(b, kb, nb, a, ka, na, 0, taken);
    free(taken);
    free(kb);
    free(ka);
    return rc;
}

int afd_gate_extends_lock(const afd_gate_file *f, char *what, size_t whatlen)
{
    if (!f->before || !f->after || f->before_len > AFD_GATE_MAX_SOURCE || f->after_len > AFD_GATE_MAX_SOURCE)
        return 0;
    sside *b = calloc(2, sizeof *b);
    if (!b)
        return AFD_ENOMEM;
    sside *a = &b[1];
    int okb = 0, oka = 0, found = 0, kept = 0;
    int rc = side_open(b, f->before, f->before_len, &okb);
    if (rc == 0)
        rc = side_open(a, f->after, f->after_len, &oka);
    if (rc == 0 && okb && oka)
        rc = locks_kept(b, a, &kept);
    oka = oka && kept;
    for (size_t i = 0; rc == 0 && okb && oka && !found && i < a->n_fns; i++) {
        const sfn *fa = &a->fns[i], *fb = only_fn(b, a, fa);
        if (!fb || !only_fn(a, a, fa))
            continue;
        rc = walk_fn(b, fb->node);
        if (rc == 0)
            rc = walk_fn(a, fa->node);
        if (rc == 0) {
            rc = compare_fn(b, a, f->path, what, whatlen);
            found = rc > 0;
            rc = rc > 0 ? 0 : rc;
        }
    }
    side_close(b);
    side_close(a);
    free(b);
    return rc < 0 ? rc : found;
}
