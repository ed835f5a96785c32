/* test_fix_handoff_queue.c -- HANDOFF_CLEANUP for an item got from a queue: the exact patched
 * text for the two forms (a new try around the span that holds the item, one more handler of the
 * try that already holds it), the gate's verdict on them, and the refusals. */
#include "afd.h"
#include "fix_handoff.h"
#include "gate.h"
#include "harness.h"

/* A pool that connects the holder it took before handing it out (line 14 awaits). */
static const char *POOL = "import asyncio\n"
                          "\n"
                          "\n"
                          "class Pool:\n"
                          "    def __init__(self, holders):\n"
                          "        self._queue = asyncio.Queue()\n"
                          "        for holder in holders:\n"
                          "            self._queue.put_nowait(holder)\n"
                          "\n"
                          "    async def acquire(self):\n"
                          "        holder = await self._queue.get()\n"
                          "        holder.touch()\n"
                          "        if not holder.connected:\n"
                          "            await holder.connect()\n"
                          "        return holder\n";

/* A pool whose check of the connection handles only Exception (line 14 awaits). */
static const char *CHECK = "import asyncio\n"
                           "\n"
                           "\n"
                           "class Pool:\n"
                           "    def __init__(self):\n"
                           "        self._pool = asyncio.Queue()\n"
                           "\n"
                           "    async def getconn(self):\n"
                           "        while True:\n"
                           "            conn = await self._pool.get()\n"
                           "            try:\n"
                           "                await conn.check()\n"
                           "            except Exception:\n"
                           "                self._pool.put_nowait(Connection())\n"
                           "                continue\n"
                           "            return conn\n";

static char *patch(const char *src, uint32_t line, int *rc, char *why)
{
    afd_buf out;
    afd_buf_init(&out);
    *rc = afd_fix_handoff_putback(src, strlen(src), line, &out, why, 256);
    afd_buf_put_u8(&out, 0);
    return (char *)afd_buf_steal(&out, NULL);
}

/* src with the first `from` replaced by `to` (Owned by the caller). */
static char *replaced(const char *src, const char *from, const char *to)
{
    const char *at = strstr(src, from);
    CHECK(at != NULL);
    size_t a = (size_t)(at - src), lf = strlen(from), lt = strlen(to), n = strlen(src);
    char *out = malloc(n - lf + lt + 1);
    CHECK(out != NULL);
    memcpy(out, src, a);
    memcpy(out + a, to, lt);
    memcpy(out + a + lt, at + lf, n - a - lf + 1);
    return out;
}

static void refused(const char *src, uint32_t line, const char *reason)
{
    int rc;
    char why[256];
    char *got = patch(src, line, &rc, why);
    CHECK_EQ_INT(rc, AFD_EINVAL);
    CHECK_EQ_STR(got, "");
    if (!strstr(why, reason))
        FAIL_AT("the reason \"%s\" does not say \"%s\"", why, reason);
    free(got);
}

static void gate(const char *before, const char *after, afd_gate_check *g)
{
    afd_gate_file f = {"lib/pool.py", before, strlen(before), after, strlen(after)};
    CHECK_EQ_INT(afd_gate_run(&f, 1, 1, g), 0);
}

static void gate_passes(const char *before, const char *after)
{
    afd_gate_check g[AFD_GATE__COUNT];
    gate(before, after, g);
    for (int k = 0; k < AFD_GATE__COUNT; k++)
        if (!g[k].passed)
            FAIL_AT("%s failed: %s", g[k].name, g[k].reason);
}

TEST(span_after_get_wrapped_in_new_try)
{
    int rc;
    char why[256];
    char *got = patch(POOL, 14, &rc, why);
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_STR(got,
                 "import asyncio\n"
                 "\n"
                 "\n"
                 "class Pool:\n"
                 "    def __init__(self, holders):\n"
                 "        self._queue = asyncio.Queue()\n"
                 "        for holder in holders:\n"
                 "            self._queue.put_nowait(holder)\n"
                 "\n"
                 "    async def acquire(self):\n"
                 "        holder = await self._queue.get()\n"
                 "        try:\n"
                 "            holder.touch()\n"
                 "            if not holder.connected:\n"
                 "                await holder.connect()\n"
                 "        except BaseException:\n"
                 "            # affidavit: interrupted while holding holder, got from self._queue: put it "
                 "back and re-raise.\n"
                 "            self._queue.put_nowait(holder)\n"
                 "            raise\n"
                 "        return holder\n");
    gate_passes(POOL, got);
    free(got);
}

TEST(handler_added_to_the_try_that_holds_it)
{
    int rc;
    char why[256];
    char *got = patch(CHECK, 12, &rc, why);
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_STR(got, "import asyncio\n"
                      "\n"
                      "\n"
                      "class Pool:\n"
                      "    def __init__(self):\n"
                      "        self._pool = asyncio.Queue()\n"
                      "\n"
                      "    async def getconn(self):\n"
                      "        while True:\n"
                      "            conn = await self._pool.get()\n"
                      "            try:\n"
                      "                await conn.check()\n"
                      "            except Exception:\n"
                      "                self._pool.put_nowait(Connection())\n"
                      "                continue\n"
                      "            except BaseException:\n"
                      "                # affidavit: interrupted while holding conn, got from self._pool: put "
                      "it back and re-raise.\n"
                      "                self._pool.put_nowait(conn)\n"
                      "                raise\n"
                      "            return conn\n");
    gate_passes(CHECK, got);
    free(got);
}

/* The get_nowait() form and a generator handing the item on with yield. */
TEST(get_nowait_and_yield_hand_on)
{
    char *src = replaced(POOL, "await self._queue.get()", "self._queue.get_nowait()");
    char *gen = replaced(src, "        return holder\n", "        yield holder\n");
    int rc;
    char why[256];
    char *got = patch(gen, 14, &rc, why);
    CHECK_EQ_INT(rc, 0);
    CHECK(strstr(got,
                 "        holder = self._queue.get_nowait()\n        try:\n            holder.touch()\n") !=
          NULL);
    CHECK(strstr(got, "            raise\n        yield holder\n") != NULL);
    free(got);
    free(gen);
    free(src);
}

TEST(refuses_other_shapes)
{
    /* the item is put back on that span already */
    char *back = replaced(POOL, "        holder.touch()\n",
                          "        holder.touch()\n        self._queue.put_nowait(holder)\n");
    refused(back, 15, "put back to its queue already");
    /* the try already catches the cancellation */
    char *caught = replaced(CHECK, "except Exception:", "except BaseException:");
    refused(caught, 12, "already catches the interruption");
    /* no hand-on after the await */
    char *kept = replaced(POOL, "        return holder\n", "        self._current = holder\n");
    refused(kept, 14, "does not hand it on");
    /* not a queue: nothing in the module gives it put_nowait() */
    char *plain = replaced(POOL, "            self._queue.put_nowait(holder)\n", "            pass\n");
    refused(plain, 14, "never given put_nowait()");
    /* the span crosses a yield */
    char *gen = replaced(POOL, "        holder.touch()\n", "        yield None\n");
    refused(gen, 14, "cross a yield");
    /* no get before the await */
    char *noget = replaced(POOL, "holder = await self._queue.get()", "holder = self._make()");
    refused(noget, 14, "no item got from a queue");
    free(back);
    free(caught);
    free(kept);
    free(plain);
    free(gen);
    free(noget);
}

/* The substance is the item put back to the queue it was got from, in a handler that re-raises:
 * the handler that swallows the cancellation is refused, and so is a put of another value or to
 * another queue. */
TEST(gate_refuses_put_back_without_reraise_or_of_another_item)
{
    int rc;
    char why[256];
    char *after = patch(POOL, 14, &rc, why);
    CHECK_EQ_INT(rc, 0);
    afd_gate_check g[AFD_GATE__COUNT];
    gate(POOL, after, g);
    CHECK(g[AFD_GATE_SYNC_PRIMITIVE].passed);
    CHECK(strstr(g[AFD_GATE_SYNC_PRIMITIVE].reason, "putback") != NULL);
    char *swallowed = replaced(after, "            raise\n", "            return None\n");
    gate(POOL, swallowed, g);
    CHECK(!g[AFD_GATE_NO_CANCEL_SWALLOW].passed);
    CHECK(!g[AFD_GATE_SYNC_PRIMITIVE].passed);
    char *other = replaced(after, "self._queue.put_nowait(holder)\n            raise",
                           "self._queue.put_nowait(Holder())\n            raise");
    gate(POOL, other, g);
    CHECK(!g[AFD_GATE_SYNC_PRIMITIVE].passed);
    char *elsewhere = replaced(after, "self._queue.put_nowait(holder)\n            raise",
                               "self._spare.put_nowait(holder)\n            raise");
    gate(POOL, elsewhere, g);
    CHECK(!g[AFD_GATE_SYNC_PRIMITIVE].passed);
    free(swallowed);
    free(other);
    free(elsewhere);
    free(after);
}

int main(void)
{
    RUN_TESTS("fix_handoff_queue", T(span_after_get_wrapped_in_new_try),
              T(handler_added_to_the_try_that_holds_it), T(get_nowait_and_yield_hand_on),
              T(refuses_other_shapes), T(gate_refuses_put_back_without_reraise_or_of_another_item));
}
