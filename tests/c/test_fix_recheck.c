/* test_fix_recheck.c -- RECHECK (double-checked lazy init) as a minimal text edit: the exact
 * patched text for each shape, and the shapes it refuses. */
#include "afd.h"
#include "fix_recheck.h"
#include "harness.h"
#include "pyscan.h"

static char *patch(const char *src, uint32_t check, uint32_t act, const char *name, const char *owner,
                   int *rc, char *why)
{
    afd_lock_site s = {check, act, AFD_ROOT_SELF, name, "check-then-act"};
    afd_buf out;
    afd_buf_init(&out);
    why[0] = 0;
    *rc = afd_fix_recheck(src, strlen(src), &s, owner, &out, why, 256);
    afd_buf_put_u8(&out, 0);
    return (char *)afd_buf_steal(&out, NULL);
}

static const char *lazy = "import asyncio\n"
                          "\n"
                          "\n"
                          "class Session:\n"
                          "    def __init__(self, api):\n"
                          "        self._api = api\n"
                          "        self._id = None\n"
                          "\n"
                          "    async def get_id(self):\n"
                          "        if self._id is None:\n"
                          "            # the round trip\n"
                          "            self._id = await self._api.create()\n"
                          "        return self._id\n";

TEST(act_inside_the_if)
{
    int rc;
    char why[256];
    char *got = patch(lazy, 10, 12, "_id", "Session", &rc, why);
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_STR(got,
                 "import asyncio\n"
                 "\n"
                 "\n"
                 "class Session:\n"
                 "    def __init__(self, api):\n"
                 "        self._affidavit_lock__id = asyncio.Lock()  # affidavit: guards self._id "
                 "(check-then-act)\n"
                 "        self._api = api\n"
                 "        self._id = None\n"
                 "\n"
                 "    async def get_id(self):\n"
                 "        if self._id is None:\n"
                 "            async with self._affidavit_lock__id:  # affidavit: one task at a time past "
                 "the check\n"
                 "                if self._id is None:  # affidavit: checked again under the lock\n"
                 "                    # the round trip\n"
                 "                    self._id = await self._api.create()\n"
                 "        return self._id\n");
    free(got);
}

TEST(act_after_an_early_return)
{
    const char *src = "\"\"\"Doc.\"\"\"\n"
                      "\n"
                      "\n"
                      "class Queue:\n"
                      "    async def ensure(self):\n"
                      "        if self._ready:\n"
                      "            return\n"
                      "        await self._store.create_index(\"a\")\n"
                      "        await self._store.create_index(\"b\")\n"
                      "        self._ready = True\n"
                      "        log(\"ready\")\n";
    int rc;
    char why[256];
    char *got = patch(src, 6, 10, "_ready", NULL, &rc, why);
    CHECK_EQ_INT(rc, 0);
    /* no __init__: the lock is made where it is used; the statement after the act stays outside */
    CHECK_EQ_STR(got,
                 "\"\"\"Doc.\"\"\"\n"
                 "import asyncio\n"
                 "\n"
                 "\n"
                 "class Queue:\n"
                 "    async def ensure(self):\n"
                 "        if self._ready:\n"
                 "            return\n"
                 "        async with self.__dict__.setdefault(\"_affidavit_lock__ready\", asyncio.Lock()):  "
                 "# affidavit: one task at a time past the check\n"
                 "            if self._ready:  # affidavit: checked again under the lock\n"
                 "                return\n"
                 "            await self._store.create_index(\"a\")\n"
                 "            await self._store.create_index(\"b\")\n"
                 "            self._ready = True\n"
                 "        log(\"ready\")\n");
    free(got);
}

TEST(act_in_a_callee_of_the_if)
{
    /* the check calls down to the read and the body calls down to the write: the lines given are
     * the common function's (afd_cause_await's common_first_line and common_second_line) */
    const char *src = "class Client:\n"
                      "    def __init__(self):\n"
                      "        \"\"\"Doc.\"\"\"\n"
                      "        self._exp = 0\n"
                      "\n"
                      "    def _expiring(self):\n"
                      "        return self._exp < 1\n"
                      "\n"
                      "    async def ensure(self):\n"
                      "        if not self._ok:\n"
                      "            return\n"
                      "        if self._expiring():\n"
                      "            await self.refresh()\n";
    int rc;
    char why[256];
    char *got = patch(src, 12, 13, "_exp", "Client", &rc, why);
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_STR(got,
                 "import asyncio\n"
                 "class Client:\n"
                 "    def __init__(self):\n"
                 "        \"\"\"Doc.\"\"\"\n"
                 "        self._affidavit_lock__exp = asyncio.Lock()  # affidavit: guards self._exp "
                 "(check-then-act)\n"
                 "        self._exp = 0\n"
                 "\n"
                 "    def _expiring(self):\n"
                 "        return self._exp < 1\n"
                 "\n"
                 "    async def ensure(self):\n"
                 "        if not self._ok:\n"
                 "            return\n"
                 "        if self._expiring():\n"
                 "            async with self._affidavit_lock__exp:  # affidavit: one task at a time past "
                 "the check\n"
                 "                if self._expiring():  # affidavit: checked again under the lock\n"
                 "                    await self.refresh()\n");
    free(got);
}

TEST(refusals)
{
    int rc;
    char why[256];
    char *got;
    /* the check line is not an if's condition */
    got = patch(lazy, 13, 12, "_id", NULL, &rc, why);
    CHECK_EQ_INT(rc, AFD_EINVAL);
    CHECK(strstr(why, "not the condition of an if statement") != NULL);
    free(got);
    /* the resource lives in another class than the function the lock would go in */
    got = patch(lazy, 10, 12, "_id", "Cache", &rc, why);
    CHECK_EQ_INT(rc, AFD_EINVAL);
    CHECK(strstr(why, "the resource lives in Cache") != NULL);
    free(got);
    /* an else branch, an awaiting condition, a plain function, an act elsewhere */
    const char *with_else = "class A:\n"
                            "    async def f(self):\n"
                            "        if self.x is None:\n"
                            "            self.x = await g()\n"
                            "        else:\n"
                            "            log()\n";
    got = patch(with_else, 3, 4, "x", NULL, &rc, why);
    CHECK_EQ_INT(rc, AFD_EINVAL);
    CHECK(strstr(why, "elif or else") != NULL);
    free(got);
    const char *awaits = "class A:\n"
                         "    async def f(self):\n"
                         "        if await self.missing():\n"
                         "            self.x = await g()\n";
    got = patch(awaits, 3, 4, "x", NULL, &rc, why);
    CHECK_EQ_INT(rc, AFD_EINVAL);
    CHECK(strstr(why, "awaits or binds") != NULL);
    free(got);
    const char *plain = "class A:\n"
                        "    def f(self):\n"
                        "        if self.x is None:\n"
                        "            self.x = g()\n";
    got = patch(plain, 3, 4, "x", NULL, &rc, why);
    CHECK_EQ_INT(rc, AFD_EINVAL);
    CHECK(strstr(why, "not in an async function") != NULL);
    free(got);
    const char *no_return = "class A:\n"
                            "    async def f(self):\n"
                            "        if self.x:\n"
                            "            log()\n"
                            "        self.x = await g()\n";
    got = patch(no_return, 3, 5, "x", NULL, &rc, why);
    CHECK_EQ_INT(rc, AFD_EINVAL);
    CHECK(strstr(why, "neither in the if") != NULL);
    free(got);
    const char *one_line = "class A:\n"
                           "    async def f(self):\n"
                           "        if self.x is None: self.x = await g()\n";
    got = patch(one_line, 3, 3, "x", NULL, &rc, why);
    CHECK_EQ_INT(rc, AFD_EINVAL);
    CHECK(strstr(why, "one-line header") != NULL);
    free(got);
    got = patch(lazy, 99, 12, "_id", NULL, &rc, why);
    CHECK_EQ_INT(rc, AFD_EINVAL);
    free(got);
}

static const char *cache = "class cached:\n"
                           "    def __init__(self, cache):\n"
                           "        self.cache = cache\n"
                           "\n"
                           "    async def decorator(self, f, *args):\n"
                           "        key = self.key(f, args)\n"
                           "        value = await self.cache.get(key)\n"
                           "        if value is not None:\n"
                           "            return value\n"
                           "        result = await f(*args)\n"
                           "        await self.cache.set(key, result)\n"
                           "        return result\n"
                           "\n"
                           "\n"
                           "def other():\n"
                           "    pass\n";

static char *flight(const char *src, uint32_t look, uint32_t store, int *rc, char *why)
{
    afd_buf out;
    afd_buf_init(&out);
    why[0] = 0;
    *rc = afd_fix_single_flight(src, strlen(src), look, store, &out, why, 256);
    afd_buf_put_u8(&out, 0);
    return (char *)afd_buf_steal(&out, NULL);
}

TEST(single_flight_caches_the_task)
{
    int rc;
    char why[256];
    char *got = flight(cache, 7, 11, &rc, why);
    if (rc != 0)
        FAIL_AT("%s", why);
    CHECK_EQ_STR(
        got, "import asyncio\n"
             "class cached:\n"
             "    def __init__(self, cache):\n"
             "        self._affidavit_in_flight = {}  # affidavit: the computation in flight per key\n"
             "        self.cache = cache\n"
             "\n"
             "    async def decorator(self, f, *args):\n"
             "        key = self.key(f, args)\n"
             "        async def _affidavit_compute():  # affidavit: the lookup and the computation, run "
             "once per key at a time\n"
             "            value = await self.cache.get(key)\n"
             "            if value is not None:\n"
             "                return value\n"
             "            result = await f(*args)\n"
             "            await self.cache.set(key, result)\n"
             "            return result\n"
             "        _affidavit_task = self._affidavit_in_flight.get(key)\n"
             "        if _affidavit_task is None:  # affidavit: the first miss computes; the others await "
             "it\n"
             "            _affidavit_task = asyncio.ensure_future(_affidavit_compute())\n"
             "            self._affidavit_in_flight[key] = _affidavit_task\n"
             "            _affidavit_task.add_done_callback(lambda _t: self._affidavit_in_flight.pop(key, "
             "None))\n"
             "        return await _affidavit_task\n"
             "\n"
             "\n"
             "def other():\n"
             "    pass\n");
    free(got);
}

TEST(single_flight_refusals)
{
    int rc;
    char why[256];
    char *got;
    /* a read-modify-write is not a cache: coalescing it would lose updates */
    const char *counter = "async def bump(store, k):\n"
                          "    n = await store.get(k)\n"
                          "    await store.set(k, n + 1)\n";
    got = flight(counter, 2, 3, &rc, why);
    CHECK_EQ_INT(rc, AFD_EINVAL);
    CHECK(strstr(why, "not a cache lookup") != NULL);
    free(got);
    /* the key is bound after the lookup */
    const char *late = "async def get(cache, f):\n"
                       "    value = await cache.get(k)\n"
                       "    if value:\n"
                       "        return value\n"
                       "    k = 1\n"
                       "    await cache.set(k, await f())\n";
    got = flight(late, 2, 6, &rc, why);
    CHECK_EQ_INT(rc, AFD_EINVAL);
    CHECK(strstr(why, "no key") != NULL);
    free(got);
    /* a name bound before the lookup is rebound after it */
    const char *rebinds = "async def get(cache, f, k):\n"
                          "    value = None\n"
                          "    value = await cache.get(k)\n"
                          "    if value:\n"
                          "        return value\n"
                          "    await cache.set(k, await f())\n";
    got = flight(rebinds, 3, 6, &rc, why);
    CHECK_EQ_INT(rc, AFD_EINVAL);
    CHECK(strstr(why, "rebind `value`") != NULL);
    free(got);
}

int main(void)
{
    RUN_TESTS("fix_recheck", T(act_inside_the_if), T(act_after_an_early_return), T(act_in_a_callee_of_the_if),
              T(refusals), T(single_flight_caches_the_task), T(single_flight_refusals));
}
