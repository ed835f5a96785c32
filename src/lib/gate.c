/* gate.c -- the policy gate (see gate.h).
 *
 * Each side of each changed file is parsed with tree-sitter and walked once (iteratively, with a
 * cursor and an explicit ancestor stack: a crafted `1+1+...` nests 100,000 deep) into "facts":
 * (category, normalized text) pairs such as (SLEEP, "asyncio.sleep(0.1)") or (ASSERT, "assert x
 * == 1"). A check then compares the multisets of one category before and after: what the after
 * side holds more of was added by the patch. Questions about context (is this sleep inside a
 * `while`? which function binds this task?) scan the ancestor stack upwards, at most
 * MAX_ANCESTOR_HOPS nodes, and stop at the enclosing function.
 *
 * Before parsing, a copy of the source has what libtree-sitter 0.20.7 cannot take blanked out
 * (comments; brackets nested beyond CPython's limit; long runs of continuation-only lines) by
 * pysrc.h, as for pyscan.c; blanking comments also makes them invisible to every comparison, which
 * is what `not_noop` wants.
 *
 * This file holds the comparisons and the checks (afd_gate_run); gate_facts.c parses a side and
 * holds the helpers the visits share, gate_visit.c the visits and the walks; gate_impl.h is their
 * shared state. Node kinds and the walk itself come from pyast.h. */
#include "gate_impl.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- comparing the two sides ---- */

typedef struct sref {
    const char *s;
    uint32_t len;
    double val;
} sref;

static int cmp_sref(const void *a, const void *b)
{
    const sref *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int r = memcmp(x->s, y->s, n);
    if (r)
        return r;
    return (x->len > y->len) - (x->len < y->len);
}

static int collect(const facts *f, uint8_t cat, sref **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    size_t cnt = 0;
    for (size_t i = 0; i < f->n; i++)
        cnt += f->v[i].cat == cat;
    if (cnt == 0)
        return 0;
    sref *v = malloc(cnt * sizeof *v);
    if (!v)
        return AFD_ENOMEM;
    for (size_t i = 0; i < f->n; i++)
        if (f->v[i].cat == cat)
            v[(*n)++] = (sref){(const char *)f->strs.data + f->v[i].off, f->v[i].len, f->v[i].val};
    qsort(v, *n, sizeof *v, cmp_sref);
    *out = v;
    return 0;
}

/* How many entries of category cat `after` holds beyond those of `before` (multiset difference);
 * the first such text (cut to fit) into first. */
static int added(const facts *before, const facts *after, uint8_t cat, char *first, size_t firstlen,
                 size_t *count)
{
    sref *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    *count = 0;
    if (first && firstlen)
        first[0] = 0;
    int rc = collect(before, cat, &b, &nb);
    if (rc == 0)
        rc = collect(after, cat, &a, &na);
    size_t i = 0, j = 0;
    while (rc == 0 && i < na) {
        int r = j < nb ? cmp_sref(&a[i], &b[j]) : -1;
        if (r == 0) {
            i++;
            j++;
        } else if (r > 0) {
            j++;
        } else {
            if (*count == 0 && first && firstlen)
                snprintf(first, firstlen, "%.*s", (int)a[i].len, a[i].s);
            (*count)++;
            i++;
        }
    }
    free(a);
    free(b);
    return rc;
}

static size_t count_cat(const facts *f, uint8_t cat)
{
    size_t n = 0;
    for (size_t i = 0; i < f->n; i++)
        n += f->v[i].cat == cat;
    return n;
}

static double max_val(const facts *f, uint8_t cat)
{
    double m = -INFINITY;
    for (size_t i = 0; i < f->n; i++)
        if (f->v[i].cat == cat && f->v[i].val > m)
            m = f->v[i].val;
    return m;
}

/* ---- paths ---- */

int afd_gate_is_test_path(const char *path)
{
    if (!path)
        return 0;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    for (const char *p = path; p < base;) {
        const char *slash = strchr(p, '/');
        size_t l = (size_t)(slash - p);
        if ((l == 5 && memcmp(p, "tests", 5) == 0) || (l == 4 && memcmp(p, "test", 4) == 0))
            return 1;
        p = slash + 1;
    }
    size_t bl = strlen(base);
    if (strcmp(base, "conftest.py") == 0)
        return 1;
    if (bl > 3 && strcmp(base + bl - 3, ".py") == 0) {
        if (strncmp(base, "test_", 5) == 0 || (bl >= 8 && strcmp(base + bl - 8, "_test.py") == 0))
            return 1;
    }
    return 0;
}

int afd_gate_is_third_party_path(const char *path)
{
    static const char *const PARTS[] = {"site-packages/", ".venv/",   "venv/", "vendor/",
                                        "node_modules/",  "_vendor/", NULL};
    if (!path)
        return 0;
    for (size_t i = 0; PARTS[i]; i++)
        if (strstr(path, PARTS[i]))
            return 1;
    return 0;
}

/* ---- checks ---- */

static const struct {
    const char *name, *group;
} CHECKS[AFD_GATE__COUNT] = {
    [AFD_GATE_NO_SLEEP] = {"no_sleep", "refused shortcut"},
    [AFD_GATE_NO_TIMEOUT] = {"no_timeout", "refused shortcut"},
    [AFD_GATE_NO_RETRY] = {"no_retry", "refused shortcut"},
    [AFD_GATE_NO_WEAKER_ASSERT] = {"no_weaker_assert", "refused shortcut"},
    [AFD_GATE_NO_SWALLOW] = {"no_swallow", "refused shortcut"},
    [AFD_GATE_NO_SKIP] = {"no_skip", "refused shortcut"},
    [AFD_GATE_NO_CANCEL_SWALLOW] = {"no_cancel_swallow", "refused shortcut"},
    [AFD_GATE_NO_SHIELD] = {"no_shield", "refused shortcut"},
    [AFD_GATE_NO_UNCANCEL] = {"no_uncancel", "refused shortcut"},
    [AFD_GATE_SYNC_PRIMITIVE] = {"sync_primitive", "required substance"},
    [AFD_GATE_PRIMITIVE_USED_TWICE] = {"primitive_used_twice", "required substance"},
    [AFD_GATE_NOT_NOOP] = {"not_noop", "required substance"},
    [AFD_GATE_NO_LOCK_CYCLE] = {"no_lock_cycle", "structural safety"},
    [AFD_GATE_SRC_ALLOWED] = {"src_allowed", "structural safety"},
    [AFD_GATE_NO_THIRD_PARTY] = {"no_third_party", "structural safety"},
    [AFD_GATE_PARSES] = {"parses", "structural safety"},
};

const char *afd_gate_check_name(int id)
{
    return id >= 0 && id < AFD_GATE__COUNT ? CHECKS[id].name : NULL;
}

static void set_fail(afd_gate_check *ck, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_fail(afd_gate_check *ck, const char *fmt, ...)
{
    if (!ck->passed)
        return; /* the first failure is the one reported */
    ck->passed = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ck->reason, sizeof ck->reason, fmt, ap);
    va_end(ap);
    /* One line: a normalized text holds no newline, but a path might. */
    for (char *p = ck->reason; *p; p++)
        if (*p == '\n' || *p == '\r' || *p == 0x1f)
            *p = ' ';
}

/* A refused category: fails when the patch adds an entry. */
static int refuse(afd_gate_check *ck, const facts *b, const facts *a, uint8_t cat, const char *what,
                  const char *path)
{
    char first[120];
    size_t n;
    int rc = added(b, a, cat, first, sizeof first, &n);
    if (rc == 0 && n)
        set_fail(ck, "adds %s `%s` in %s", what, first, path);
    return rc;
}

/* Whether `to` reaches `from` through the edges of all after sides ("u\x1fv" texts). */
static int reaches(const facts *sides, size_t n_sides, const char *from, size_t from_len, const char *to,
                   size_t to_len, int *found)
{
    /* Breadth-first over lock texts; the graphs are a handful of edges. */
    typedef struct node {
        const char *s;
        size_t len;
    } node;
    node *q = NULL;
    size_t nq = 0, cap = 0, head = 0;
    *found = 0;
    if (afd_array_grow((void **)&q, &cap, 1, sizeof *q, 16) < 0)
        return AFD_ENOMEM;
    q[nq++] = (node){to, to_len};
    while (head < nq && !*found) {
        node cur = q[head++];
        if (cur.len == from_len && memcmp(cur.s, from, from_len) == 0) {
            *found = 1;
            break;
        }
        for (size_t si = 0; si < n_sides; si++) {
            const facts *f = &sides[si];
            for (size_t i = 0; i < f->n; i++) {
                if (f->v[i].cat != C_EDGE)
                    continue;
                const char *e = (const char *)f->strs.data + f->v[i].off;
                const char *sep = memchr(e, 0x1f, f->v[i].len);
                if (!sep || (size_t)(sep - e) != cur.len || memcmp(e, cur.s, cur.len) != 0)
                    continue;
                const char *v = sep + 1;
                size_t vl = f->v[i].len - (size_t)(v - e);
                int seen = 0;
                for (size_t k = 0; k < nq && !seen; k++)
                    seen = q[k].len == vl && memcmp(q[k].s, v, vl) == 0;
                if (seen)
                    continue;
                if (afd_array_grow((void **)&q, &cap, nq + 1, sizeof *q, 16) < 0) {
                    free(q);
                    return AFD_ENOMEM;
                }
                q[nq++] = (node){v, vl};
            }
        }
    }
    free(q);
    return 0;
}

static int check_lock_cycle(afd_gate_check *ck, const facts *befores, const facts *afters,
                            const afd_gate_file *files, size_t n)
{
    for (size_t fi = 0; fi < n; fi++) {
        const facts *b = &befores[fi], *a = &afters[fi];
        int rc =
            refuse(ck, b, a, C_UNSORTED, "an `async with` whose locks are out of text order", files[fi].path);
        if (rc < 0)
            return rc;
        if (a->edges_overflow)
            set_fail(ck, "%s nests more than %u lock acquisitions: too many to check for cycles",
                     files[fi].path, MAX_EDGES);
        sref *ea = NULL, *eb = NULL;
        size_t na = 0, nb = 0;
        rc = collect(a, C_EDGE, &ea, &na);
        if (rc == 0)
            rc = collect(b, C_EDGE, &eb, &nb);
        for (size_t i = 0; rc == 0 && i < na && ck->passed; i++) {
            /* Only edges the patch adds can close a new cycle. */
            if (nb && bsearch(&ea[i], eb, nb, sizeof *eb, cmp_sref))
                continue;
            const char *sep = memchr(ea[i].s, 0x1f, ea[i].len);
            if (!sep)
                continue;
            size_t ul = (size_t)(sep - ea[i].s);
            int found = 0;
            /* The edge u -> v closes a cycle when v reaches u (v == u: a lock taken twice). */
            rc = reaches(a, 1, ea[i].s, ul, sep + 1, ea[i].len - ul - 1, &found);
            if (rc == 0 && found)
                set_fail(ck, "acquiring %.*s then %.*s in %s inverts another nesting (a lock-order cycle)",
                         (int)(ul > 60 ? 60 : ul), ea[i].s,
                         (int)(ea[i].len - ul - 1 > 60 ? 60 : ea[i].len - ul - 1), sep + 1, files[fi].path);
        }
        free(ea);
        free(eb);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* The last dotted component of s[0..len): its start in *tail, its length returned. */
static size_t last_part_n(const char *s, size_t len, const char **tail)
{
    *tail = s;
    for (size_t k = 0; k < len; k++)
        if (s[k] == '.')
            *tail = s + k + 1;
    return len - (size_t)(*tail - s);
}

/* Uses of a primitive across all after sides, by the last component of the receiver's text
 * (`self._ev` created in __init__ is `obj._ev` in a test). */
static size_t count_uses(const facts *afters, size_t n, const char *use, const char *target)
{
    const char *tl = afd_gate_last_part(target);
    size_t tlen = strlen(tl), ul = strlen(use), cnt = 0;
    for (size_t fi = 0; fi < n; fi++) {
        const facts *f = &afters[fi];
        for (size_t i = 0; i < f->n; i++) {
            if (f->v[i].cat != C_USE)
                continue;
            const char *s = (const char *)f->strs.data + f->v[i].off;
            size_t l = f->v[i].len;
            if (l <= ul || memcmp(s, use, ul) != 0 || s[ul] != 0x1f)
                continue;
            const char *rlast;
            size_t rll = last_part_n(s + ul + 1, l - ul - 1, &rlast);
            cnt += rll == tlen && memcmp(rlast, tl, tlen) == 0;
        }
    }
    return cnt;
}

/* The asyncio.Event or Condition the program already creates (in the before side of any file)
 * whose text ends like target's: its kind ("Event") in kind/kind_len, 1; 0 when none. */
static int existing_waitable(const facts *befores, size_t n, const char *target, size_t tlen,
                             const char **kind, size_t *kind_len)
{
    const char *tl;
    size_t tll = last_part_n(target, tlen, &tl);
    int found = 0;
    for (size_t f = 0; f < n && !found; f++) {
        sref *cr = NULL;
        size_t ncr = 0;
        if (collect(&befores[f], C_CREATE, &cr, &ncr) < 0)
            return -1;
        for (size_t k = 0; k < ncr && !found; k++) {
            const char *sep = memchr(cr[k].s, 0x1f, cr[k].len);
            size_t kl = sep ? (size_t)(sep - cr[k].s) : 0;
            int waitable =
                (kl == 5 && !memcmp(cr[k].s, "Event", 5)) || (kl == 9 && !memcmp(cr[k].s, "Condition", 9));
            const char *cl;
            size_t cll = waitable ? last_part_n(sep + 1, cr[k].len - kl - 1, &cl) : 0;
            if (waitable && cll == tll && !memcmp(cl, tl, tll)) {
                found = 1;
                *kind = cr[k].s; /* the facts' strings outlive cr */
                *kind_len = kl;
            }
        }
        free(cr);
    }
    return found;
}

/* 1 when the patch adds a `wait` on an Event or Condition the program already creates (`await
 * self.connected.wait()` where the code only tested the flag), saying so in what. */
static int waits_on_existing(const facts *b, const facts *a, const facts *befores, size_t n, const char *path,
                             char *what, size_t whatlen)
{
    sref *ua = NULL, *ub = NULL;
    size_t nua = 0, nub = 0, i = 0, j = 0;
    int rc = collect(a, C_USE, &ua, &nua);
    if (rc == 0)
        rc = collect(b, C_USE, &ub, &nub);
    int found = 0;
    while (rc == 0 && !found && i < nua) {
        int r = j < nub ? cmp_sref(&ua[i], &ub[j]) : -1;
        if (r >= 0) { /* in both, or only before: not added */
            j++;
            i += r == 0;
            continue;
        }
        const sref *u = &ua[i++];
        if (u->len <= 5 || memcmp(u->s, "wait\x1f", 5) != 0)
            continue;
        const char *kind;
        size_t kl;
        int e = existing_waitable(befores, n, u->s + 5, u->len - 5, &kind, &kl);
        if (e < 0)
            rc = -1;
        else if (e) {
            found = 1;
            snprintf(what, whatlen, "waits on the existing asyncio.%.*s %.*s in %s", (int)kl, kind,
                     (int)(u->len - 5 > 80 ? 80 : u->len - 5), u->s + 5, path);
        }
    }
    free(ua);
    free(ub);
    return rc < 0 ? rc : found;
}

static int check_primitives(afd_gate_check *sync, afd_gate_check *used, const facts *befores,
                            const facts *afters, const afd_gate_file *files, size_t n)
{
    int substance = 0;
    char what[200] = "";
    for (size_t fi = 0; fi < n; fi++) {
        const facts *b = &befores[fi], *a = &afters[fi];
        static const uint8_t CATS[] = {C_CREATE, C_TASKAWAIT, C_AWITH, C_OFFLOAD, C_HANDON};
        static const char *const NAMES[] = {
            "creates", "awaits the task handle", "adds `async with`",
            "moves a blocking call off the event loop:",
            "passes on a hand-off (when cancelled, or at wake-up to a live waiter):"};
        for (size_t k = 0; k < sizeof CATS / sizeof CATS[0] && !substance; k++) {
            char first[120];
            size_t cnt;
            int rc = added(b, a, CATS[k], first, sizeof first, &cnt);
            if (rc < 0)
                return rc;
            if (cnt) {
                substance = 1;
                for (char *p = first; *p; p++)
                    if (*p == 0x1f)
                        *p = ' ';
                snprintf(what, sizeof what, "%s %s in %s", NAMES[k], first, files[fi].path);
            }
        }
        if (!substance) {
            int rc = waits_on_existing(b, a, befores, n, files[fi].path, what, sizeof what);
            if (rc < 0)
                return rc;
            substance = rc;
        }
        if (!substance) {
            /* An existing lock extended, in a file where no `async with` item is removed (a lock
             * taken out elsewhere would not be an extension but a move). */
            size_t removed;
            int rc = added(a, b, C_AWITH, NULL, 0, &removed);
            if (rc == 0 && removed == 0)
                rc = afd_gate_extends_lock(&files[fi], what, sizeof what);
            if (rc < 0)
                return rc;
            substance = rc > 0;
        }
        /* Every primitive the patch creates must be used at both ends. */
        sref *ca = NULL, *cb = NULL;
        size_t na = 0, nb = 0;
        int rc = collect(a, C_CREATE, &ca, &na);
        if (rc == 0)
            rc = collect(b, C_CREATE, &cb, &nb);
        size_t j = 0, checked = 0;
        for (size_t i = 0; rc == 0 && i < na && used->passed && checked < MAX_CHECKED_CREATIONS; i++) {
            int r = -1;
            while (j < nb && (r = cmp_sref(&ca[i], &cb[j])) > 0)
                j++;
            if (j < nb && r == 0) {
                j++;
                continue; /* was there before */
            }
            checked++;
            char kind[64], target[MAX_NORM + 16];
            const char *sep = memchr(ca[i].s, 0x1f, ca[i].len);
            if (!sep)
                continue;
            snprintf(kind, sizeof kind, "%.*s", (int)(sep - ca[i].s), ca[i].s);
            snprintf(target, sizeof target, "%.*s", (int)(ca[i].len - (size_t)(sep - ca[i].s) - 1), sep + 1);
            if (!target[0]) {
                set_fail(used, "an asyncio.%s is created in %s but not bound to a name: nothing can share it",
                         kind, files[fi].path);
                break;
            }
            const char *need1 = "acq", *need2 = NULL;
            if (strcmp(kind, "Event") == 0) {
                need1 = "set";
                need2 = "wait";
            } else if (strcmp(kind, "Condition") == 0) {
                need1 = "notify";
                need2 = "wait";
            } else if (strstr(kind, "Queue")) {
                need1 = "put";
                need2 = "get";
            }
            size_t u1 = count_uses(afters, n, need1, target);
            size_t u2 = need2 ? count_uses(afters, n, need2, target) : 1;
            if (u1 == 0 || u2 == 0)
                set_fail(used,
                         "%s (asyncio.%s) is never %s: not used at both ends (syntactic; reachability is "
                         "checked by verification)",
                         target, kind, u1 == 0 ? (strcmp(need1, "acq") == 0 ? "acquired" : need1) : need2);
        }
        free(ca);
        free(cb);
        if (rc < 0)
            return rc;
    }
    if (substance)
        snprintf(sync->reason, sizeof sync->reason, "the patch %s", what);
    else
        set_fail(sync,
                 "the patch adds no synchronization primitive (Lock, Event, Condition, Semaphore, Queue, "
                 "an awaited task handle, an `async with` or a hand-off passed on when cancelled)");
    if (used->passed)
        snprintf(
            used->reason, sizeof used->reason,
            "every primitive the patch creates is used at both ends (syntactic; reachability is checked by "
            "verification)");
    return 0;
}

static int same_text(const char *a, size_t al, const char *b, size_t bl)
{
    if (!a || !b)
        return a == b;
    return al == bl && memcmp(a, b, al) == 0;
}

int afd_gate_run(const afd_gate_file *files, size_t n, int allow_src, afd_gate_check out[AFD_GATE__COUNT])
{
    if (!out || (!files && n))
        return AFD_EINVAL;
    for (int i = 0; i < AFD_GATE__COUNT; i++) {
        out[i].name = CHECKS[i].name;
        out[i].group = CHECKS[i].group;
        out[i].passed = 1;
        out[i].reason[0] = 0;
    }
    for (size_t i = 0; i < n; i++)
        if (!files[i].path || (!files[i].before && !files[i].after) ||
            (!files[i].before && files[i].before_len) || (!files[i].after && files[i].after_len))
            return AFD_EINVAL;
    facts *fb = calloc(n ? n : 1, sizeof *fb), *fa = calloc(n ? n : 1, sizeof *fa);
    ctx c;
    memset(&c, 0, sizeof c);
    int rc = fb && fa ? 0 : AFD_ENOMEM;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const afd_gate_file *f = &files[i];
        if (same_text(f->before, f->before_len, f->after, f->after_len))
            continue; /* unchanged: facts stay empty on both sides */
        rc = afd_gate_analyse(&c, f->before, f->before_len, &fb[i]);
        if (rc == 0)
            rc = afd_gate_analyse(&c, f->after, f->after_len, &fa[i]);
    }
    int noop = 1;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const afd_gate_file *f = &files[i];
        const facts *b = &fb[i], *a = &fa[i];
        if (same_text(f->before, f->before_len, f->after, f->after_len))
            continue;
        int is_test = afd_gate_is_test_path(f->path);
        /* structural safety */
        if (!is_test && !allow_src)
            set_fail(&out[AFD_GATE_SRC_ALLOWED], "%s is not a test file and source edits are not allowed",
                     f->path);
        if (afd_gate_is_third_party_path(f->path))
            set_fail(&out[AFD_GATE_NO_THIRD_PARTY], "%s is third-party code", f->path);
        if (a->present && !a->parse_ok)
            set_fail(&out[AFD_GATE_PARSES], "%s does not pass the tree-sitter parse check: %s", f->path,
                     a->why[0] ? a->why : "not analysed");
        if (!b->present || !a->present || b->toks.len != a->toks.len ||
            (b->toks.len && memcmp(b->toks.data, a->toks.data, b->toks.len) != 0))
            noop = 0;
        /* refused shortcuts */
        afd_gate_check *ck = &out[AFD_GATE_NO_SLEEP];
        if ((rc = refuse(ck, b, a, C_SLEEP, "a sleep", f->path)) < 0 ||
            (rc = refuse(ck, b, a, C_POLL, "a polling loop", f->path)) < 0)
            break;
        ck = &out[AFD_GATE_NO_TIMEOUT];
        if ((rc = refuse(ck, b, a, C_TIMEOUT, "a timeout", f->path)) < 0)
            break;
        if (count_cat(a, C_TMARK) > count_cat(b, C_TMARK))
            set_fail(ck, "adds a @pytest.mark.timeout in %s", f->path);
        else if (max_val(a, C_TMARK) > max_val(b, C_TMARK) && count_cat(b, C_TMARK))
            set_fail(ck, "raises a @pytest.mark.timeout in %s (%g -> %g)", f->path, max_val(b, C_TMARK),
                     max_val(a, C_TMARK));
        ck = &out[AFD_GATE_NO_RETRY];
        if ((rc = refuse(ck, b, a, C_RETRY_DEC, "a retry decorator", f->path)) < 0 ||
            (rc = refuse(ck, b, a, C_RETRY_LOOP, "a retry loop", f->path)) < 0)
            break;
        ck = &out[AFD_GATE_NO_WEAKER_ASSERT];
        if (is_test) {
            char first[120];
            size_t cnt;
            if ((rc = added(a, b, C_ASSERT, first, sizeof first, &cnt)) < 0)
                break;
            if (cnt)
                set_fail(ck, "removes or changes the assert `%s` in %s", first, f->path);
        }
        if ((rc = refuse(ck, b, a, C_APPROX, "a pytest.approx", f->path)) < 0)
            break;
        ck = &out[AFD_GATE_NO_SWALLOW];
        if ((rc = refuse(ck, b, a, C_SWALLOW, "an exception handler that swallows", f->path)) < 0 ||
            (rc = refuse(ck, b, a, C_SUPPRESS, "an exception suppression", f->path)) < 0)
            break;
        ck = &out[AFD_GATE_NO_SKIP];
        if ((rc = refuse(ck, b, a, C_SKIP, "a skip", f->path)) < 0)
            break;
        if (is_test && !a->present)
            set_fail(ck, "deletes the test file %s", f->path);
        if (is_test) {
            char first[120];
            size_t cnt;
            if ((rc = added(a, b, C_TESTNAME, first, sizeof first, &cnt)) < 0)
                break;
            if (cnt)
                set_fail(ck, "the test %s in %s is no longer collected (renamed or removed)", first, f->path);
        }
        /* hiding cancellation: the caught CancelledError, the shielded await, the uncancelled task */
        if ((rc = refuse(&out[AFD_GATE_NO_CANCEL_SWALLOW], b, a, C_CANCEL_SWALLOW,
                         "a handler that catches cancellation and does not re-raise it", f->path)) < 0 ||
            (rc = refuse(&out[AFD_GATE_NO_SHIELD], b, a, C_SHIELD, "a shield from cancellation", f->path)) <
                0 ||
            (rc = refuse(&out[AFD_GATE_NO_UNCANCEL], b, a, C_UNCANCEL, "an uncancel", f->path)) < 0)
            break;
    }
    if (rc == 0) {
        if (noop)
            set_fail(&out[AFD_GATE_NOT_NOOP], "the patch changes only comments and whitespace (or nothing)");
        rc = check_lock_cycle(&out[AFD_GATE_NO_LOCK_CYCLE], fb, fa, files, n);
    }
    if (rc == 0)
        rc = check_primitives(&out[AFD_GATE_SYNC_PRIMITIVE], &out[AFD_GATE_PRIMITIVE_USED_TWICE], fb, fa,
                              files, n);
    if (rc == 0) {
        static const char *const OK[AFD_GATE__COUNT] = {
            [AFD_GATE_NO_SLEEP] = "adds no sleep, call_later or polling loop",
            [AFD_GATE_NO_TIMEOUT] = "adds no timeout and raises no timeout mark",
            [AFD_GATE_NO_RETRY] = "adds no retry decorator or retry loop",
            [AFD_GATE_NO_WEAKER_ASSERT] = "keeps every assert and adds no pytest.approx",
            [AFD_GATE_NO_SWALLOW] = "adds no swallowing handler or suppress",
            [AFD_GATE_NO_SKIP] = "adds no skip or xfail and keeps every test collected",
            [AFD_GATE_NO_CANCEL_SWALLOW] =
                "adds no handler that catches cancellation without re-raising it, and no suppress of it",
            [AFD_GATE_NO_SHIELD] = "adds no asyncio.shield",
            [AFD_GATE_NO_UNCANCEL] = "adds no uncancel()",
            [AFD_GATE_NOT_NOOP] = "the token streams differ",
            [AFD_GATE_NO_LOCK_CYCLE] = "lock acquisitions added keep one order",
            [AFD_GATE_SRC_ALLOWED] = "changes only test files, or source edits are allowed",
            [AFD_GATE_NO_THIRD_PARTY] = "changes no third-party file",
            [AFD_GATE_PARSES] =
                "every new text passes the tree-sitter parse check (compile() runs in verification)",
        };
        for (int i = 0; i < AFD_GATE__COUNT; i++)
            if (out[i].passed && !out[i].reason[0] && OK[i])
                snprintf(out[i].reason, sizeof out[i].reason, "%s", OK[i]);
    }
    for (size_t i = 0; i < n && fb && fa; i++) {
        free(fb[i].v);
        free(fa[i].v);
        afd_buf_finish(&fb[i].strs);
        afd_buf_finish(&fa[i].strs);
        afd_buf_finish(&fb[i].toks);
        afd_buf_finish(&fa[i].toks);
    }
    free(fb);
    free(fa);
    free(c.anc);
    free(c.imps);
    afd_buf_finish(&c.tmp);
    afd_buf_finish(&c.tmp2);
    return rc;
}

int afd_gate_passed(const afd_gate_check out[AFD_GATE__COUNT])
{
    if (!out)
        return 0;
    for (int i = 0; i < AFD_GATE__COUNT; i++)
        if (!out[i].passed)
            return 0;
    return 1;
}
