/* test_fix_lock_caller.c -- LOCK_CALLER as a minimal text edit: the lock the writers already hold
 * extended up to the read's statement, a new lock in the common caller, and the refusals. */
#include "afd.h"
#include "fix.h"
#include "harness.h"
#include "pyscan.h"

static char *patch(const char *src, uint32_t first, uint32_t second, const char *owner, int *reused, int *rc,
                   char *why)
{
    afd_lock_site s = {first, second, AFD_ROOT_SELF, "events", NULL};
    afd_buf out;
    afd_buf_init(&out);
    why[0] = 0;
    *rc = afd_fix_lock_caller(src, strlen(src), &s, owner, reused, &out, why, 256);
    afd_buf_put_u8(&out, 0);
    return (char *)afd_buf_steal(&out, NULL);
}

static const char *expiry = "class Storage:\n"
                            "    def __init__(self):\n"
                            "        self.events = {}\n"
                            "\n"
                            "    async def expire(self, key):\n"
                            "        now = time.time()\n"
                            "        cutoff = await self._count(key, now)\n"
                            "        # truncate\n"
                            "        async with self.locks[key]:\n"
                            "            self.events[key] = self.events[key][:cutoff]\n"
                            "        log(key)\n";

TEST(the_writers_lock_is_extended_over_the_read)
{
    int rc, reused;
    char why[256];
    char *got = patch(expiry, 7, 10, "Storage", &reused, &rc, why);
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_INT(reused, 1);
    CHECK_EQ_STR(got, "class Storage:\n"
                      "    def __init__(self):\n"
                      "        self.events = {}\n"
                      "\n"
                      "    async def expire(self, key):\n"
                      "        now = time.time()\n"
                      "        async with self.locks[key]:  # affidavit: the lock the writers hold, taken "
                      "before the read (was at line 9)\n"
                      "            cutoff = await self._count(key, now)\n"
                      "            # truncate\n"
                      "            self.events[key] = self.events[key][:cutoff]\n"
                      "        log(key)\n");
    free(got);
}

TEST(a_new_lock_in_the_common_caller)
{
    const char *src = "class Pool:\n"
                      "    def __init__(self):\n"
                      "        self.events = set()\n"
                      "\n"
                      "    async def connect(self, addr):\n"
                      "        if self._has_capacity():\n"
                      "            comm = await self._open(addr)\n"
                      "        self._add(comm)\n"
                      "        return comm\n";
    int rc, reused;
    char why[256];
    char *got = patch(src, 6, 8, "Pool", &reused, &rc, why);
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_INT(reused, 0);
    CHECK_EQ_STR(got, "import asyncio\n"
                      "class Pool:\n"
                      "    def __init__(self):\n"
                      "        self._affidavit_lock_events = asyncio.Lock()  # affidavit: guards self.events "
                      "(lost update)\n"
                      "        self.events = set()\n"
                      "\n"
                      "    async def connect(self, addr):\n"
                      "        async with self._affidavit_lock_events:  # affidavit: the read and the write "
                      "below run as one step\n"
                      "            if self._has_capacity():\n"
                      "                comm = await self._open(addr)\n"
                      "            self._add(comm)\n"
                      "        return comm\n");
    free(got);
}

TEST(refusals)
{
    int rc, reused;
    char why[256];
    char *got;
    /* the lock's expression depends on a name the moved statements bind: L is not extended */
    const char *rebinds = "class Storage:\n"
                          "    async def expire(self):\n"
                          "        key = await self._next()\n"
                          "        async with self.locks[key]:\n"
                          "            self.events[key] = 1\n";
    got = patch(rebinds, 3, 5, NULL, &reused, &rc, why);
    if (rc != 0)
        FAIL_AT("%s", why);
    /* not extended: a new lock around both instead */
    CHECK_EQ_INT(reused, 0);
    CHECK(strstr(got, "self.__dict__.setdefault(\"_affidavit_lock_events\", asyncio.Lock())") != NULL);
    free(got);
    /* the moved statements take the lock themselves: not extended either */
    const char *retakes = "class Storage:\n"
                          "    async def expire(self):\n"
                          "        async with self.lock: n = self.n\n"
                          "        async with self.lock:\n"
                          "            self.events = n\n";
    got = patch(retakes, 3, 5, NULL, &reused, &rc, why);
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_INT(reused, 0);
    CHECK(strstr(got, "async with self.__dict__.setdefault(\"_affidavit_lock_events\"") != NULL);
    free(got);
    /* a method of another class than the resource's */
    got = patch(expiry, 7, 11, "Cache", &reused, &rc, why);
    CHECK_EQ_INT(rc, AFD_EINVAL);
    CHECK(strstr(why, "the resource lives in Cache") != NULL);
    free(got);
    /* a plain function */
    const char *plain = "class A:\n"
                        "    def f(self):\n"
                        "        x = self.events\n"
                        "        self.events = x + 1\n";
    got = patch(plain, 3, 4, NULL, &reused, &rc, why);
    CHECK_EQ_INT(rc, AFD_EINVAL);
    CHECK(strstr(why, "not in an async function") != NULL);
    free(got);
}

int main(void)
{
    RUN_TESTS("fix_lock_caller", T(the_writers_lock_is_extended_over_the_read),
              T(a_new_lock_in_the_common_caller), T(refusals));
}
