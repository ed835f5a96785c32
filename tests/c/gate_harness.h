/* gate_harness.h -- what the gate's C tests share (test_gate.c, test_gate_cancel.c): the base
 * text most attacks edit, the substitution that makes an attack of it, and the assertions that a
 * patch is refused by one check or passes the whole gate. Functions are static inline: each test
 * file uses some of them. */
#ifndef AFD_TEST_GATE_HARNESS_H
#define AFD_TEST_GATE_HARNESS_H

#include "afd.h"
#include "buf.h"
#include "gate.h"
#include "harness.h"

/* A lost update: two increments interleave at the await and one is lost. */
static const char COUNTER[] = "import asyncio\n"
                              "\n"
                              "import pytest\n"
                              "\n"
                              "\n"
                              "class Counter:\n"
                              "    def __init__(self):\n"
                              "        self.value = 0\n"
                              "\n"
                              "    async def incr(self):\n"
                              "        v = self.value\n"
                              "        await asyncio.sleep(0)  # a yield point\n"
                              "        self.value = v + 1\n"
                              "\n"
                              "\n"
                              "async def test_counter():\n"
                              "    c = Counter()\n"
                              "    await asyncio.gather(c.incr(), c.incr())\n"
                              "    assert c.value == 2\n";

/* base with the first occurrence of `from` replaced by `to` (which must be found). */
static inline char *subst(const char *base, const char *from, const char *to)
{
    const char *at = strstr(base, from);
    if (!at)
        FAIL_AT("substitution target not found: %s", from);
    size_t pre = (size_t)(at - base), fl = strlen(from), tl = strlen(to), rest = strlen(at + fl);
    char *s = malloc(pre + tl + rest + 1);
    CHECK(s != NULL);
    memcpy(s, base, pre);
    memcpy(s + pre, to, tl);
    memcpy(s + pre + tl, at + fl, rest + 1);
    return s;
}

static afd_gate_check G[AFD_GATE__COUNT];

static inline void run_file(const char *path, const char *before, const char *after, int allow_src)
{
    afd_gate_file f = {path, before, before ? strlen(before) : 0, after, after ? strlen(after) : 0};
    CHECK_EQ_INT(afd_gate_run(&f, 1, allow_src, G), 0);
    for (int i = 0; i < AFD_GATE__COUNT; i++) {
        CHECK(G[i].name != NULL && G[i].group != NULL);
        CHECK(G[i].reason[0] != 0);
        CHECK(strchr(G[i].reason, '\n') == NULL);
    }
}

static inline void dump(void)
{
    for (int i = 0; i < AFD_GATE__COUNT; i++)
        fprintf(stderr, "    %-20s %s  %s\n", G[i].name, G[i].passed ? "pass" : "FAIL", G[i].reason);
}

/* The patch must be refused, with check `id` failing. */
static inline void attack_at(int line, const char *path, const char *before, const char *after, int allow_src,
                             int id)
{
    run_file(path, before, after, allow_src);
    if (G[id].passed || afd_gate_passed(G)) {
        dump();
        FAIL_AT("line %d: attack not refused by %s", line, afd_gate_check_name(id));
    }
}
#define ATTACK(path, before, after, id) attack_at(__LINE__, path, before, after, 0, id)

/* The whole gate must pass. */
static inline void clean_at(int line, const char *path, const char *before, const char *after, int allow_src)
{
    run_file(path, before, after, allow_src);
    if (!afd_gate_passed(G)) {
        dump();
        FAIL_AT("line %d: clean patch refused", line);
    }
}
#define CLEAN(path, before, after) clean_at(__LINE__, path, before, after, 0)

static inline char *lock_fix(const char *base)
{
    char *a = subst(base, "        self.value = 0\n",
                    "        self.value = 0\n        self._lock = asyncio.Lock()\n");
    char *b = subst(
        a,
        "        v = self.value\n        await asyncio.sleep(0)  # a yield point\n        self.value = v + "
        "1\n",
        "        async with self._lock:\n            v = self.value\n            await asyncio.sleep(0)\n"
        "            self.value = v + 1\n");
    free(a);
    return b;
}

#endif
