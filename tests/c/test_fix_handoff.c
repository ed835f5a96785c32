/* test_fix_handoff.c -- HANDOFF_CLEANUP as a minimal text edit: the exact patched text for each
 * shape of hand-off (a wake-up, a handed item, a lock taken by convention, a created resource),
 * and the refusals. */
#include "afd.h"
#include "fix_handoff.h"
#include "gate.h"
#include "harness.h"

/* A connection limiter: the waiter's handler catches BaseException and re-raises. */
static const char *AIO = "import asyncio\n"
                         "import collections\n"
                         "\n"
                         "\n"
                         "class Connector:\n"
                         "    def __init__(self, limit):\n"
                         "        self._limit = limit\n"
                         "        self._acquired = 0\n"
                         "        self._waiters = collections.deque()\n"
                         "\n"
                         "    async def connect(self):\n"
                         "        if self._acquired >= self._limit or self._waiters:\n"
                         "            fut = asyncio.get_running_loop().create_future()\n"
                         "            self._waiters.append(fut)\n"
                         "            try:\n"
                         "                await fut\n"
                         "            except BaseException:\n"
                         "                try:\n"
                         "                    self._waiters.remove(fut)\n"
                         "                except ValueError:\n"
                         "                    pass\n"
                         "                raise\n"
                         "        self._acquired += 1\n"
                         "\n"
                         "    def _release_waiter(self):\n"
                         "        while self._waiters and self._acquired < self._limit:\n"
                         "            fut = self._waiters.popleft()\n"
                         "            if not fut.done():\n"
                         "                fut.set_result(None)\n"
                         "                return\n"
                         "\n"
                         "    def release(self):\n"
                         "        self._acquired -= 1\n"
                         "        self._release_waiter()\n";

/* A hand-off queue: the setter hands on its parameter. */
static const char *QUEUE = "import asyncio\n"
                           "import collections\n"
                           "\n"
                           "\n"
                           "class Queue:\n"
                           "    def __init__(self):\n"
                           "        self._items = collections.deque()\n"
                           "        self._getters = collections.deque()\n"
                           "\n"
                           "    def put_nowait(self, item: object) -> None:\n"
                           "        while self._getters:\n"
                           "            getter = self._getters.popleft()\n"
                           "            if not getter.done():\n"
                           "                getter.set_result(item)\n"
                           "                return\n"
                           "        self._items.append(item)\n"
                           "\n"
                           "    async def get(self):\n"
                           "        if self._items:\n"
                           "            return self._items.popleft()\n"
                           "        getter = asyncio.get_running_loop().create_future()\n"
                           "        self._getters.append(getter)\n"
                           "        try:\n"
                           "            return await getter\n"
                           "        except asyncio.CancelledError:\n"
                           "            if not getter.done():\n"
                           "                getter.cancel()\n"
                           "            raise\n";

/* A lock whose waiter takes it by convention after it resumes; release() raises when not taken. */
static const char *LOCK = "\"\"\"A lock.\"\"\"\n"
                          "\n"
                          "import collections\n"
                          "\n"
                          "\n"
                          "class Lock:\n"
                          "    def __init__(self):\n"
                          "        self._waiters = collections.deque()\n"
                          "        self._locked = False\n"
                          "\n"
                          "    async def acquire(self):\n"
                          "        if not self._locked:\n"
                          "            self._locked = True\n"
                          "            return True\n"
                          "        fut = get_loop().create_future()\n"
                          "        self._waiters.append(fut)\n"
                          "        try:\n"
                          "            await fut\n"
                          "            self._locked = True\n"
                          "            return True\n"
                          "        finally:\n"
                          "            self._waiters.remove(fut)\n"
                          "\n"
                          "    def release(self):\n"
                          "        if not self._locked:\n"
                          "            raise RuntimeError(\"Lock is not acquired.\")\n"
                          "        self._locked = False\n"
                          "        for fut in self._waiters:\n"
                          "            if not fut.done():\n"
                          "                fut.set_result(True)\n"
                          "                break\n";

/* A pool that hands a request a connection it creates. */
static const char *POOL =
    "import asyncio\n"
    "\n"
    "\n"
    "class Connection:\n"
    "    def __init__(self):\n"
    "        self.state = \"NEW\"\n"
    "\n"
    "    def close(self):\n"
    "        self.state = \"CLOSED\"\n"
    "\n"
    "\n"
    "class Request:\n"
    "    def __init__(self):\n"
    "        self.assigned = asyncio.get_running_loop().create_future()\n"
    "\n"
    "\n"
    "class Pool:\n"
    "    def __init__(self):\n"
    "        self._connections = []\n"
    "        self._requests = []\n"
    "\n"
    "    def _assign(self):\n"
    "        for request in self._requests:\n"
    "            idle = next((c for c in self._connections if c.state == \"IDLE\"), None)\n"
    "            if idle is not None:\n"
    "                request.assigned.set_result(idle)\n"
    "            elif not self._connections:\n"
    "                fresh = Connection()\n"
    "                self._connections.append(fresh)\n"
    "                request.assigned.set_result(fresh)\n"
    "\n"
    "    async def request(self):\n"
    "        req = Request()\n"
    "        self._requests.append(req)\n"
    "        self._assign()\n"
    "        try:\n"
    "            conn = await req.assigned\n"
    "            await conn.connect()\n"
    "        except BaseException:\n"
    "            self._requests.remove(req)\n"
    "            self._assign()\n"
    "            raise\n"
    "        return conn\n";

/* A hand-off lock whose release() looks only at the first waiter. */
static const char *ANYIO = "import asyncio\n"
                           "import collections\n"
                           "\n"
                           "\n"
                           "class Lock:\n"
                           "    def __init__(self):\n"
                           "        self._locked = False\n"
                           "        self._waiters = collections.deque()\n"
                           "\n"
                           "    async def acquire(self):\n"
                           "        if not self._locked and not self._waiters:\n"
                           "            self._locked = True\n"
                           "            return\n"
                           "        fut = asyncio.get_running_loop().create_future()\n"
                           "        self._waiters.append(fut)\n"
                           "        try:\n"
                           "            await fut  # resolved by release()\n"
                           "        except asyncio.CancelledError:\n"
                           "            if fut in self._waiters:\n"
                           "                self._waiters.remove(fut)\n"
                           "            elif fut.done() and not fut.cancelled():\n"
                           "                self.release()\n"
                           "            raise\n"
                           "\n"
                           "    def release(self):\n"
                           "        if self._waiters:\n"
                           "            fut = self._waiters[0]\n"
                           "            if not fut.cancelled():\n"
                           "                self._waiters.popleft()\n"
                           "                fut.set_result(None)\n"
                           "                return\n"
                           "        self._locked = False\n";

static char *patch(const char *src, uint32_t line, afd_handoff_giveback how, int *rc, char *why)
{
    afd_buf out;
    afd_buf_init(&out);
    *rc = afd_fix_handoff_cleanup(src, strlen(src), line, how, &out, why, 256);
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

/* Expects a refusal of src at line whose reason holds `reason`, and no output. */
static void refused(const char *src, uint32_t line, afd_handoff_giveback how, const char *reason)
{
    int rc;
    char why[256];
    char *got = patch(src, line, how, &rc, why);
    CHECK_EQ_INT(rc, AFD_EINVAL);
    CHECK_EQ_STR(got, "");
    if (!strstr(why, reason))
        FAIL_AT("the reason \"%s\" does not say \"%s\"", why, reason);
    free(got);
}

TEST(wakeup_passed_on_in_existing_handler)
{
    int rc;
    char why[256];
    char *got = patch(AIO, 16, AFD_HANDOFF_PASS_ON, &rc, why);
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_STR(got, "import asyncio\n"
                      "import collections\n"
                      "\n"
                      "\n"
                      "class Connector:\n"
                      "    def __init__(self, limit):\n"
                      "        self._limit = limit\n"
                      "        self._acquired = 0\n"
                      "        self._waiters = collections.deque()\n"
                      "\n"
                      "    async def connect(self):\n"
                      "        if self._acquired >= self._limit or self._waiters:\n"
                      "            fut = asyncio.get_running_loop().create_future()\n"
                      "            self._waiters.append(fut)\n"
                      "            try:\n"
                      "                await fut\n"
                      "            except BaseException:\n"
                      "                # affidavit: handed fut's result, then interrupted before using it: "
                      "pass it on and re-raise.\n"
                      "                if fut.done() and not fut.cancelled():\n"
                      "                    self._release_waiter()\n"
                      "                try:\n"
                      "                    self._waiters.remove(fut)\n"
                      "                except ValueError:\n"
                      "                    pass\n"
                      "                raise\n"
                      "        self._acquired += 1\n"
                      "\n"
                      "    def _release_waiter(self):\n"
                      "        while self._waiters and self._acquired < self._limit:\n"
                      "            fut = self._waiters.popleft()\n"
                      "            if not fut.done():\n"
                      "                fut.set_result(None)\n"
                      "                return\n"
                      "\n"
                      "    def release(self):\n"
                      "        self._acquired -= 1\n"
                      "        self._release_waiter()\n");
    free(got);
}

TEST(item_handed_back_through_setter_parameter)
{
    int rc;
    char why[256];
    char *got = patch(QUEUE, 24, AFD_HANDOFF_PASS_ON, &rc, why);
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_STR(got, "import asyncio\n"
                      "import collections\n"
                      "\n"
                      "\n"
                      "class Queue:\n"
                      "    def __init__(self):\n"
                      "        self._items = collections.deque()\n"
                      "        self._getters = collections.deque()\n"
                      "\n"
                      "    def put_nowait(self, item: object) -> None:\n"
                      "        while self._getters:\n"
                      "            getter = self._getters.popleft()\n"
                      "            if not getter.done():\n"
                      "                getter.set_result(item)\n"
                      "                return\n"
                      "        self._items.append(item)\n"
                      "\n"
                      "    async def get(self):\n"
                      "        if self._items:\n"
                      "            return self._items.popleft()\n"
                      "        getter = asyncio.get_running_loop().create_future()\n"
                      "        self._getters.append(getter)\n"
                      "        try:\n"
                      "            return await getter\n"
                      "        except asyncio.CancelledError:\n"
                      "            # affidavit: handed getter's result, then interrupted before using it: "
                      "pass it on and re-raise.\n"
                      "            if getter.done() and not getter.cancelled():\n"
                      "                self.put_nowait(getter.result())\n"
                      "            if not getter.done():\n"
                      "                getter.cancel()\n"
                      "            raise\n");
    free(got);
}

TEST(lock_taken_then_released_in_new_try)
{
    int rc;
    char why[256];
    char *got = patch(LOCK, 18, AFD_HANDOFF_PASS_ON, &rc, why);
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_STR(got, "\"\"\"A lock.\"\"\"\n"
                      "\n"
                      "import collections\n"
                      "import asyncio\n"
                      "\n"
                      "\n"
                      "class Lock:\n"
                      "    def __init__(self):\n"
                      "        self._waiters = collections.deque()\n"
                      "        self._locked = False\n"
                      "\n"
                      "    async def acquire(self):\n"
                      "        if not self._locked:\n"
                      "            self._locked = True\n"
                      "            return True\n"
                      "        fut = get_loop().create_future()\n"
                      "        self._waiters.append(fut)\n"
                      "        try:\n"
                      "            try:\n"
                      "                await fut\n"
                      "            except asyncio.CancelledError:\n"
                      "                # affidavit: handed fut's result, then interrupted before using it: "
                      "pass it on and re-raise.\n"
                      "                if fut.done() and not fut.cancelled():\n"
                      "                    self._locked = True\n"
                      "                    self.release()\n"
                      "                raise\n"
                      "            self._locked = True\n"
                      "            return True\n"
                      "        finally:\n"
                      "            self._waiters.remove(fut)\n"
                      "\n"
                      "    def release(self):\n"
                      "        if not self._locked:\n"
                      "            raise RuntimeError(\"Lock is not acquired.\")\n"
                      "        self._locked = False\n"
                      "        for fut in self._waiters:\n"
                      "            if not fut.done():\n"
                      "                fut.set_result(True)\n"
                      "                break\n");
    free(got);
}

TEST(created_resource_closed)
{
    int rc;
    char why[256];
    char *got = patch(POOL, 37, AFD_HANDOFF_CLOSE, &rc, why);
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_STR(got, "import asyncio\n"
                      "\n"
                      "\n"
                      "class Connection:\n"
                      "    def __init__(self):\n"
                      "        self.state = \"NEW\"\n"
                      "\n"
                      "    def close(self):\n"
                      "        self.state = \"CLOSED\"\n"
                      "\n"
                      "\n"
                      "class Request:\n"
                      "    def __init__(self):\n"
                      "        self.assigned = asyncio.get_running_loop().create_future()\n"
                      "\n"
                      "\n"
                      "class Pool:\n"
                      "    def __init__(self):\n"
                      "        self._connections = []\n"
                      "        self._requests = []\n"
                      "\n"
                      "    def _assign(self):\n"
                      "        for request in self._requests:\n"
                      "            idle = next((c for c in self._connections if c.state == \"IDLE\"), None)\n"
                      "            if idle is not None:\n"
                      "                request.assigned.set_result(idle)\n"
                      "            elif not self._connections:\n"
                      "                fresh = Connection()\n"
                      "                self._connections.append(fresh)\n"
                      "                request.assigned.set_result(fresh)\n"
                      "\n"
                      "    async def request(self):\n"
                      "        req = Request()\n"
                      "        self._requests.append(req)\n"
                      "        self._assign()\n"
                      "        try:\n"
                      "            conn = await req.assigned\n"
                      "            await conn.connect()\n"
                      "        except BaseException:\n"
                      "            # affidavit: handed req.assigned's result, then interrupted before using "
                      "it: close it and re-raise.\n"
                      "            if req.assigned.done() and not req.assigned.cancelled():\n"
                      "                req.assigned.result().close()\n"
                      "            self._requests.remove(req)\n"
                      "            self._assign()\n"
                      "            raise\n"
                      "        return conn\n");
    free(got);
}

TEST(refuses_await_of_a_call)
{
    char *src = replaced(QUEUE, "return await getter", "return await self.sleep()");
    refused(src, 24, AFD_HANDOFF_PASS_ON, "awaits no future");
    free(src);
}

TEST(refuses_unregistered_future)
{
    char *src = replaced(QUEUE, "self._getters.append(getter)", "pending = [getter]");
    refused(src, 24, AFD_HANDOFF_PASS_ON, "not registered in a container of self");
    free(src);
}

TEST(refuses_without_setter)
{
    char *src = replaced(QUEUE, "getter.set_result(item)", "getter.cancel()");
    refused(src, 24, AFD_HANDOFF_PASS_ON, "no plain method of the class reads self._getters");
    free(src);
}

TEST(refuses_setter_parameter_it_cannot_supply)
{
    char *src = replaced(QUEUE, "getter.set_result(item)", "getter.set_result(item * 2)");
    refused(src, 24, AFD_HANDOFF_PASS_ON, "takes parameters the waiter cannot supply");
    free(src);
}

TEST(refuses_when_handler_already_calls_setter)
{
    refused(POOL, 37, AFD_HANDOFF_PASS_ON, "already calls _assign()");
}

TEST(refuses_precondition_the_waiter_cannot_meet)
{
    char *src = replaced(LOCK, "            await fut\n            self._locked = True\n",
                         "            await fut\n            locked = True\n");
    refused(src, 18, AFD_HANDOFF_PASS_ON, "precondition that raises");
    free(src);
}

TEST(refuses_close_of_what_is_not_created_closable)
{
    refused(AIO, 16, AFD_HANDOFF_CLOSE, "nothing to close");
    char *src = replaced(POOL, "    def close(self):", "    def shut(self):");
    refused(src, 37, AFD_HANDOFF_CLOSE, "nothing to close");
    free(src);
}

TEST(refuses_outside_a_class)
{
    refused("import asyncio\n\n\nasync def get(waiters):\n    fut = asyncio.Future()\n"
            "    waiters.append(fut)\n    await fut\n",
            7, AFD_HANDOFF_PASS_ON, "not a method of a class");
}

/* Runs the gate over one library file's before and after text (source edits allowed). */
static void gate(const char *before, const char *after, afd_gate_check *g)
{
    afd_gate_file f = {"lib/handoff.py", before, strlen(before), after, strlen(after)};
    CHECK_EQ_INT(afd_gate_run(&f, 1, 1, g), 0);
}

/* Every cleanup synthesized passes the whole gate: it re-raises (no_cancel_swallow) and its
 * substance is the hand-off passed on (sync_primitive). */
TEST(gate_passes_each_cleanup)
{
    static const struct {
        const char **src;
        uint32_t line;
        afd_handoff_giveback how;
    } fixes[] = {{&AIO, 16, AFD_HANDOFF_PASS_ON},
                 {&QUEUE, 24, AFD_HANDOFF_PASS_ON},
                 {&LOCK, 18, AFD_HANDOFF_PASS_ON},
                 {&POOL, 37, AFD_HANDOFF_CLOSE}};
    for (size_t i = 0; i < sizeof fixes / sizeof fixes[0]; i++) {
        int rc;
        char why[256];
        char *after = patch(*fixes[i].src, fixes[i].line, fixes[i].how, &rc, why);
        CHECK_EQ_INT(rc, 0);
        afd_gate_check g[AFD_GATE__COUNT];
        gate(*fixes[i].src, after, g);
        for (int k = 0; k < AFD_GATE__COUNT; k++)
            if (!g[k].passed)
                FAIL_AT("fix %zu: %s failed: %s", i, g[k].name, g[k].reason);
        CHECK(strstr(g[AFD_GATE_SYNC_PRIMITIVE].reason, "passes on a hand-off") != NULL);
        free(after);
    }
}

/* The substance is only the test of the handed result inside a handler that re-raises: without
 * the test, or in a handler that swallows the cancellation, the gate refuses it. */
TEST(gate_refuses_cleanup_without_test_or_reraise)
{
    int rc;
    char why[256];
    char *after = patch(LOCK, 18, AFD_HANDOFF_PASS_ON, &rc, why);
    CHECK_EQ_INT(rc, 0);
    afd_gate_check g[AFD_GATE__COUNT];
    char *untested = replaced(after, "if fut.done() and not fut.cancelled():", "if fut.done():");
    gate(LOCK, untested, g);
    CHECK(!g[AFD_GATE_SYNC_PRIMITIVE].passed);
    char *swallowed = replaced(after, "                raise\n", "                return False\n");
    gate(LOCK, swallowed, g);
    CHECK(!g[AFD_GATE_NO_CANCEL_SWALLOW].passed);
    CHECK(!g[AFD_GATE_SYNC_PRIMITIVE].passed);
    free(untested);
    free(swallowed);
    free(after);
}

TEST(owner_decided_at_wakeup)
{
    afd_buf out;
    afd_buf_init(&out);
    char why[256];
    CHECK_EQ_INT(afd_fix_handoff_at_wakeup(ANYIO, strlen(ANYIO), 17, &out, why, sizeof why), 0);
    afd_buf_put_u8(&out, 0);
    CHECK_EQ_STR((const char *)out.data, "import asyncio\n"
                                         "import collections\n"
                                         "\n"
                                         "\n"
                                         "class Lock:\n"
                                         "    def __init__(self):\n"
                                         "        self._locked = False\n"
                                         "        self._waiters = collections.deque()\n"
                                         "\n"
                                         "    async def acquire(self):\n"
                                         "        if not self._locked and not self._waiters:\n"
                                         "            self._locked = True\n"
                                         "            return\n"
                                         "        fut = asyncio.get_running_loop().create_future()\n"
                                         "        self._waiters.append(fut)\n"
                                         "        try:\n"
                                         "            await fut  # resolved by release()\n"
                                         "        except asyncio.CancelledError:\n"
                                         "            if fut in self._waiters:\n"
                                         "                self._waiters.remove(fut)\n"
                                         "            elif fut.done() and not fut.cancelled():\n"
                                         "                self.release()\n"
                                         "            raise\n"
                                         "\n"
                                         "    def release(self):\n"
                                         "        # affidavit: the owner is decided at wake-up, among the "
                                         "live waiters (each one looked at leaves the queue).\n"
                                         "        while self._waiters:\n"
                                         "            fut = self._waiters.popleft()\n"
                                         "            if not fut.cancelled():\n"
                                         "                fut.set_result(None)\n"
                                         "                return\n"
                                         "        self._locked = False\n");
    afd_gate_check g[AFD_GATE__COUNT];
    gate(ANYIO, (const char *)out.data, g);
    for (int k = 0; k < AFD_GATE__COUNT; k++)
        if (!g[k].passed)
            FAIL_AT("%s failed: %s", g[k].name, g[k].reason);
    CHECK(strstr(g[AFD_GATE_SYNC_PRIMITIVE].reason, "passes on a hand-off") != NULL);
    /* the same loop without the test of the waiter is no owner decided at wake-up */
    char *blind =
        replaced((const char *)out.data, "            if not fut.cancelled():\n", "            if fut:\n");
    gate(ANYIO, blind, g);
    CHECK(!g[AFD_GATE_SYNC_PRIMITIVE].passed);
    free(blind);
    afd_buf_finish(&out);
}

TEST(at_wakeup_refuses_other_setters)
{
    static const struct {
        const char *src;
        uint32_t line;
        const char *reason;
    } cases[] = {{NULL, 18, "does not look only at the first waiter"},
                 {NULL, 24, "does not look only at the first waiter"}};
    const char *srcs[] = {LOCK, QUEUE};
    for (size_t i = 0; i < 2; i++) {
        afd_buf out;
        afd_buf_init(&out);
        char why[256];
        const char *src = srcs[i];
        CHECK_EQ_INT(afd_fix_handoff_at_wakeup(src, strlen(src), cases[i].line, &out, why, sizeof why),
                     AFD_EINVAL);
        if (!strstr(why, cases[i].reason))
            FAIL_AT("case %zu: the reason \"%s\" does not say \"%s\"", i, why, cases[i].reason);
        afd_buf_finish(&out);
    }
    /* the branch must test the waiter it looks at: without the test it hands to the head anyway */
    char *untested =
        replaced(ANYIO, "            if not fut.cancelled():\n", "            if self._locked:\n");
    afd_buf out;
    afd_buf_init(&out);
    char why[256];
    CHECK_EQ_INT(afd_fix_handoff_at_wakeup(untested, strlen(untested), 17, &out, why, sizeof why),
                 AFD_EINVAL);
    afd_buf_finish(&out);
    free(untested);
}

int main(void)
{
    RUN_TESTS("fix_handoff", T(wakeup_passed_on_in_existing_handler),
              T(item_handed_back_through_setter_parameter), T(lock_taken_then_released_in_new_try),
              T(created_resource_closed), T(refuses_await_of_a_call), T(refuses_unregistered_future),
              T(refuses_without_setter), T(refuses_setter_parameter_it_cannot_supply),
              T(refuses_when_handler_already_calls_setter), T(refuses_precondition_the_waiter_cannot_meet),
              T(refuses_close_of_what_is_not_created_closable), T(refuses_outside_a_class),
              T(gate_passes_each_cleanup), T(gate_refuses_cleanup_without_test_or_reraise),
              T(owner_decided_at_wakeup), T(at_wakeup_refuses_other_setters));
}
