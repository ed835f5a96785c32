/* test_gate_span.c -- `sync_primitive` and an existing lock extended: widening the `async with L`
 * the other writer already holds over statements the same function had outside it passes the
 * whole gate; the near misses (a shrinking body, a body that only gains new statements, a copy
 * that leaves its original outside, statements taken from another function, a lock removed
 * elsewhere, the locks' texts swapped) are refused with the message the gate gave before. */
#include "gate_harness.h"
#include "harness.h"

/* A sliding window: admit reads the hits outside the lock that expire also holds. */
static const char WINDOW[] = "import asyncio\n"
                             "\n"
                             "\n"
                             "class Window:\n"
                             "    def __init__(self):\n"
                             "        self._lock = asyncio.Lock()\n"
                             "        self._log = asyncio.Lock()\n"
                             "        self.hits = []\n"
                             "\n"
                             "    async def admit(self, now):\n"
                             "        cutoff = now - 10\n"
                             "        recent = [t for t in self.hits if t > cutoff]\n"
                             "        await asyncio.sleep(0)\n"
                             "        async with self._lock:\n"
                             "            self.hits = recent + [now]\n"
                             "        async with self._log:\n"
                             "            print(now)\n"
                             "\n"
                             "    async def expire(self, now):\n"
                             "        async with self._lock:\n"
                             "            self.hits = [t for t in self.hits if t > now - 10]\n";

static const char OLD_ADMIT[] = "        cutoff = now - 10\n"
                                "        recent = [t for t in self.hits if t > cutoff]\n"
                                "        await asyncio.sleep(0)\n"
                                "        async with self._lock:\n"
                                "            self.hits = recent + [now]\n";

/* The fix: the existing `async with self._lock` moved up over the read. */
static const char NEW_ADMIT[] = "        async with self._lock:\n"
                                "            cutoff = now - 10\n"
                                "            recent = [t for t in self.hits if t > cutoff]\n"
                                "            await asyncio.sleep(0)\n"
                                "            self.hits = recent + [now]\n";

static const char PATH[] = "src/window.py";
static const char REFUSED[] = "the patch adds no synchronization primitive";

static void refused_at(int line, const char *before, const char *after)
{
    attack_at(line, PATH, before, after, 1, AFD_GATE_SYNC_PRIMITIVE);
    if (strncmp(G[AFD_GATE_SYNC_PRIMITIVE].reason, REFUSED, strlen(REFUSED)) != 0) {
        dump();
        FAIL_AT("line %d: refused with another message", line);
    }
}
#define REFUSED_SPAN(before, after) refused_at(__LINE__, before, after)

TEST(extension_passes)
{
    char *a = subst(WINDOW, OLD_ADMIT, NEW_ADMIT);
    clean_at(__LINE__, PATH, WINDOW, a, 1);
    CHECK_EQ_STR(G[AFD_GATE_SYNC_PRIMITIVE].reason,
                 "the patch extends the existing `async with self._lock` over 3 statements in src/window.py");
    /* Over one statement only, the sleep left outside: still an extension. */
    char *one = subst(WINDOW,
                      "        await asyncio.sleep(0)\n        async with self._lock:\n"
                      "            self.hits = recent + [now]\n",
                      "        async with self._lock:\n            await asyncio.sleep(0)\n"
                      "            self.hits = recent + [now]\n");
    clean_at(__LINE__, PATH, WINDOW, one, 1);
    CHECK(strstr(G[AFD_GATE_SYNC_PRIMITIVE].reason, "over 1 statement in") != NULL);
    free(a);
    free(one);
}

TEST(near_misses_refused)
{
    char *ext = subst(WINDOW, OLD_ADMIT, NEW_ADMIT);
    /* The lock shrinks back: the fix undone. */
    REFUSED_SPAN(ext, WINDOW);
    /* The body only gains a statement the function did not have. */
    char *pass = subst(WINDOW, "            self.hits = recent + [now]\n",
                       "            pass\n            self.hits = recent + [now]\n");
    REFUSED_SPAN(WINDOW, pass);
    /* A copy of the read inside, its original still outside. */
    char *copy = subst(WINDOW, "        async with self._lock:\n            self.hits = recent + [now]\n",
                       "        async with self._lock:\n            cutoff = now - 10\n"
                       "            self.hits = recent + [now]\n");
    REFUSED_SPAN(WINDOW, copy);
    /* A statement taken from another function (expire) into admit's lock. */
    char *from_expire = subst(WINDOW, "    async def expire(self, now):\n",
                              "    async def expire(self, now):\n        stale = self.hits\n");
    char *to_admit = subst(from_expire, "            self.hits = recent + [now]\n",
                           "            self.hits = recent + [now]\n            stale = self.hits\n");
    char *to_admit2 = subst(to_admit, "    async def expire(self, now):\n        stale = self.hits\n",
                            "    async def expire(self, now):\n");
    REFUSED_SPAN(from_expire, to_admit2);
    /* The extension, with the lock the other writer held removed from expire. */
    char *unlocked = subst(ext, "        async with self._lock:\n            self.hits = [t for",
                           "        if True:\n            self.hits = [t for");
    REFUSED_SPAN(WINDOW, unlocked);
    /* The read moved into the first `async with` while its lock and the second's are swapped:
     * self._lock's body before is not kept by the `async with self._lock` after. */
    char *swap = subst(WINDOW,
                       "        await asyncio.sleep(0)\n        async with self._lock:\n"
                       "            self.hits = recent + [now]\n        async with self._log:\n",
                       "        async with self._log:\n            await asyncio.sleep(0)\n"
                       "            self.hits = recent + [now]\n        async with self._lock:\n");
    REFUSED_SPAN(WINDOW, swap);
    free(ext);
    free(pass);
    free(copy);
    free(from_expire);
    free(to_admit);
    free(to_admit2);
    free(unlocked);
    free(swap);
}

/* Locks looked up in a table: the expiry pass computes its cutoff outside the key's lock. */
static const char TABLE[] = "import asyncio\n"
                            "from collections import defaultdict\n"
                            "\n"
                            "\n"
                            "class Store:\n"
                            "    def __init__(self):\n"
                            "        self.events = {}\n"
                            "        self.locks = defaultdict(asyncio.Lock)\n"
                            "\n"
                            "    async def expire(self, key):\n"
                            "        cutoff = await self.count(key)\n"
                            "        async with self.locks[key]:\n"
                            "            self.events[key] = self.events[key][:cutoff]\n"
                            "\n"
                            "    async def hit(self, key):\n"
                            "        async with self.locks[key]:\n"
                            "            self.events[key].insert(0, 1)\n";

TEST(subscripted_lock)
{
    static const char OLD[] = "        cutoff = await self.count(key)\n        async with self.locks[key]:\n";
    static const char NEW[] =
        "        async with self.locks[key]:\n            cutoff = await self.count(key)\n";
    char *a = subst(TABLE, OLD, NEW);
    clean_at(__LINE__, PATH, TABLE, a, 1);
    CHECK_EQ_STR(
        G[AFD_GATE_SYNC_PRIMITIVE].reason,
        "the patch extends the existing `async with self.locks[key]` over 1 statement in src/window.py");
    /* The same extension with hit's lock taken away: a lock removed in another function. */
    char *b = subst(a, "    async def hit(self, key):\n        async with self.locks[key]:\n",
                    "    async def hit(self, key):\n        if key:\n");
    REFUSED_SPAN(TABLE, b);
    /* Extended over the key's lock of another table: a different lock. */
    char *c = subst(TABLE, OLD,
                    "        async with self.other[key]:\n            cutoff = await self.count(key)\n");
    char *c2 = subst(c, "            self.events[key] = self.events[key][:cutoff]\n",
                     "            self.events[key] = self.events[key][:cutoff]\n"
                     "        async with self.locks[key]:\n            pass\n");
    REFUSED_SPAN(TABLE, c2);
    free(a);
    free(b);
    free(c);
    free(c2);
}

int main(void)
{
    RUN_TESTS("gate_span", T(extension_passes), T(near_misses_refused), T(subscripted_lock));
}
