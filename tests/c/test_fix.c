/* test_fix.c -- LOCK fixes as minimal text edits: the exact patched text for each shape. */
#include "afd.h"
#include "fix.h"
#include "harness.h"
#include "pyscan.h"

static char *patch(const char *src, const afd_lock_site *sites, size_t n, int *rc, char *why)
{
    afd_buf out;
    afd_buf_init(&out);
    *rc = afd_fix_lock(src, strlen(src), sites, n, &out, why, 256);
    afd_buf_put_u8(&out, 0);
    return (char *)afd_buf_steal(&out, NULL);
}

TEST(module_global)
{
    const char *src = "\"\"\"Doc.\"\"\"\n"
                      "import random\n"
                      "\n"
                      "BALANCE = {\"amount\": 0}\n"
                      "\n"
                      "\n"
                      "async def deposit(amount):\n"
                      "    await asyncio.sleep(0.001)  # latency\n"
                      "    current = BALANCE[\"amount\"]\n"
                      "    await asyncio.sleep(0.0005)\n"
                      "    BALANCE[\"amount\"] = current + amount\n"
                      "    log(amount)\n";
    afd_lock_site s = {9, 11, AFD_ROOT_GLOBAL, "BALANCE", NULL};
    int rc;
    char why[256];
    char *got = patch(src, &s, 1, &rc, why);
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_STR(
        got,
        "\"\"\"Doc.\"\"\"\n"
        "import random\n"
        "import asyncio\n"
        "_affidavit_lock_BALANCE = asyncio.Lock()  # affidavit: guards BALANCE (lost update)\n"
        "\n"
        "BALANCE = {\"amount\": 0}\n"
        "\n"
        "\n"
        "async def deposit(amount):\n"
        "    await asyncio.sleep(0.001)  # latency\n"
        "    async with _affidavit_lock_BALANCE:  # affidavit: the read and the write below run as one step\n"
        "        current = BALANCE[\"amount\"]\n"
        "        await asyncio.sleep(0.0005)\n"
        "        BALANCE[\"amount\"] = current + amount\n"
        "    log(amount)\n");
    free(got);
    s.cause = "check-then-act"; /* the lock's comment names the cause it guards against */
    got = patch(src, &s, 1, &rc, why);
    CHECK_EQ_INT(rc, 0);
    CHECK(strstr(got, "asyncio.Lock()  # affidavit: guards BALANCE (check-then-act)\n") != NULL);
    free(got);
}

TEST(instance_with_init_and_two_resources_in_sorted_order)
{
    const char *src = "import asyncio\n"
                      "\n"
                      "class Server:\n"
                      "    def __init__(self):\n"
                      "        \"\"\"State.\"\"\"\n"
                      "        self.sessions = {}\n"
                      "        self.counters = {}\n"
                      "\n"
                      "    async def handle(self, k):\n"
                      "        s = self.sessions.get(k)\n"
                      "        c = self.counters.get(k, 0)\n"
                      "        await asyncio.sleep(0)\n"
                      "        self.sessions[k] = s\n"
                      "        self.counters[k] = c + 1\n";
    afd_lock_site s[2] = {{10, 13, AFD_ROOT_SELF, "sessions", NULL},
                          {11, 14, AFD_ROOT_SELF, "counters", NULL}};
    int rc;
    char why[256];
    char *got = patch(src, s, 2, &rc, why);
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_STR(got, "import asyncio\n"
                      "\n"
                      "class Server:\n"
                      "    def __init__(self):\n"
                      "        \"\"\"State.\"\"\"\n"
                      "        self._affidavit_lock_sessions = asyncio.Lock()  # affidavit: guards "
                      "self.sessions (lost update)\n"
                      "        self._affidavit_lock_counters = asyncio.Lock()  # affidavit: guards "
                      "self.counters (lost update)\n"
                      "        self.sessions = {}\n"
                      "        self.counters = {}\n"
                      "\n"
                      "    async def handle(self, k):\n"
                      "        async with self._affidavit_lock_counters, self._affidavit_lock_sessions:  # "
                      "affidavit: the read and the write below run as one step\n"
                      "            s = self.sessions.get(k)\n"
                      "            c = self.counters.get(k, 0)\n"
                      "            await asyncio.sleep(0)\n"
                      "            self.sessions[k] = s\n"
                      "            self.counters[k] = c + 1\n");
    free(got);
}

TEST(instance_without_init_creates_the_lock_atomically)
{
    const char *src = "import asyncio\n"
                      "class Counter:\n"
                      "    n = 0\n"
                      "    async def incr(self):\n"
                      "        v = self.n\n"
                      "        await asyncio.sleep(0)\n"
                      "        self.n = v + 1\n";
    afd_lock_site s = {5, 7, AFD_ROOT_SELF, "n", NULL};
    int rc;
    char why[256];
    char *got = patch(src, &s, 1, &rc, why);
    CHECK_EQ_INT(rc, 0);
    CHECK(
        strstr(got, "        async with self.__dict__.setdefault(\"_affidavit_lock_n\", asyncio.Lock()):") !=
        NULL);
    CHECK(
        strstr(got,
               "            v = self.n\n            await asyncio.sleep(0)\n            self.n = v + 1\n") !=
        NULL);
    free(got);
}

TEST(refusals)
{
    int rc;
    char why[256];
    afd_lock_site s = {2, 3, AFD_ROOT_GLOBAL, "X", NULL};
    char *got = patch("def f():\n    v = X[0]\n    X[0] = v + 1\n", &s, 1, &rc, why);
    CHECK_EQ_INT(rc, AFD_EINVAL);
    CHECK(strstr(why, "async function") != NULL);
    free(got);
    got = patch("async def f(:\n    v = X[0]\n    X[0] = v\n", &s, 1, &rc, why);
    CHECK_EQ_INT(rc, AFD_EINVAL);
    CHECK(strstr(why, "syntax") != NULL);
    free(got);
    afd_lock_site m = {2, 5, AFD_ROOT_GLOBAL, "X", NULL};
    got = patch("async def f():\n    v = X[0]\n    s = \"\"\"a\nb\"\"\"\n    X[0] = v\n", &m, 1, &rc, why);
    CHECK_EQ_INT(rc, AFD_EINVAL);
    free(got);
    afd_lock_site out = {90, 91, AFD_ROOT_GLOBAL, "X", NULL};
    got = patch("async def f():\n    pass\n", &out, 1, &rc, why);
    CHECK_EQ_INT(rc, AFD_EINVAL);
    free(got);
}

TEST(tabs_and_comments_kept)
{
    const char *src = "import asyncio\nS = {}\nasync def f():\n\t# read\n\tv = S.get(1)\n\tawait "
                      "asyncio.sleep(0)\n\n\tS[1] = v\n";
    afd_lock_site s = {5, 8, AFD_ROOT_GLOBAL, "S", NULL};
    int rc;
    char why[256];
    char *got = patch(src, &s, 1, &rc, why);
    CHECK_EQ_INT(rc, 0);
    CHECK(strstr(got, "\t# read\n\tasync with _affidavit_lock_S:") != NULL);
    CHECK(strstr(got, "\t\tv = S.get(1)\n\t\tawait asyncio.sleep(0)\n\n\t\tS[1] = v\n") != NULL);
    free(got);
}

TEST(await_task)
{
    const char *src = "import asyncio\n"
                      "async def refresh_token(state):\n"
                      "    await asyncio.sleep(0.001)\n"
                      "    state[\"token\"] = \"fresh\"\n"
                      "async def test_x():\n"
                      "    state = {\"token\": \"stale\"}\n"
                      "    refresher = asyncio.create_task(refresh_token(state))\n"
                      "    await asyncio.sleep(0.005)\n"
                      "    assert state[\"token\"] == \"fresh\"\n"
                      "    await refresher\n";
    afd_buf out;
    afd_buf_init(&out);
    char why[256];
    CHECK_EQ_INT(afd_fix_await_task(src, strlen(src), 9, "refresh_token", &out, why, sizeof why), 0);
    afd_buf_put_u8(&out, 0);
    CHECK(strstr((const char *)out.data,
                 "    await asyncio.sleep(0.005)\n"
                 "    await refresher  # affidavit: the write this reads happens in that task\n"
                 "    assert state[\"token\"] == \"fresh\"\n") != NULL);
    afd_buf_finish(&out);
    afd_buf_init(&out);
    CHECK_EQ_INT(afd_fix_await_task(src, strlen(src), 9, "other_writer", &out, why, sizeof why), AFD_EINVAL);
    CHECK(strstr(why, "no handle") != NULL);
    CHECK_EQ_INT(afd_fix_await_task(src, strlen(src), 4, "refresh_token", &out, why, sizeof why), AFD_EINVAL);
    afd_buf_finish(&out);
}

TEST(event_gate)
{
    const char *src = "import asyncio\n"
                      "STATE = {}\n"
                      "async def writer():\n"
                      "    await asyncio.sleep(0.001)\n"
                      "    STATE[\"ready\"] = True\n"
                      "async def reader():\n"
                      "    await asyncio.sleep(0.0015)\n"
                      "    assert STATE.get(\"ready\")\n"
                      "async def test_x():\n"
                      "    \"\"\"Doc.\"\"\"\n"
                      "    await asyncio.gather(writer(), reader())\n";
    afd_buf out;
    afd_buf_init(&out);
    char why[256];
    CHECK_EQ_INT(afd_fix_event_gate(src, strlen(src), "test_x", 5, 8, "STATE", 0, &out, why, sizeof why), 0);
    afd_buf_put_u8(&out, 0);
    CHECK_EQ_STR(
        (const char *)out.data,
        "import asyncio\n"
        "_affidavit_STATE_written = None  # affidavit: set once STATE is written; created per run by test_x\n"
        "STATE = {}\n"
        "async def writer():\n"
        "    await asyncio.sleep(0.001)\n"
        "    STATE[\"ready\"] = True\n"
        "    if _affidavit_STATE_written is not None:  # affidavit: the write is done\n"
        "        _affidavit_STATE_written.set()\n"
        "async def reader():\n"
        "    await asyncio.sleep(0.0015)\n"
        "    if _affidavit_STATE_written is not None:  # affidavit: read only after the write\n"
        "        await _affidavit_STATE_written.wait()\n"
        "    assert STATE.get(\"ready\")\n"
        "async def test_x():\n"
        "    \"\"\"Doc.\"\"\"\n"
        "    global _affidavit_STATE_written\n"
        "    _affidavit_STATE_written = asyncio.Event()  # affidavit: one per run\n"
        "    await asyncio.gather(writer(), reader())\n");
    afd_buf_finish(&out);
    afd_buf_init(&out);
    CHECK_EQ_INT(afd_fix_event_gate(src, strlen(src), "test_nope", 5, 8, "STATE", 0, &out, why, sizeof why),
                 AFD_EINVAL);
    CHECK_EQ_INT(afd_fix_event_gate(src, strlen(src), "test_x", 5, 8, "a.b", 0, &out, why, sizeof why),
                 AFD_EINVAL);
    afd_buf_finish(&out);
}

TEST(event_gate_after_the_producers_loop)
{
    const char *src = "import asyncio\n"
                      "async def producer(queue):\n"
                      "    for item in range(5):\n"
                      "        await queue.put(item)\n"
                      "    print(\"done\")\n"
                      "async def consumer(queue, out):\n"
                      "    while not queue.empty():\n"
                      "        out.append(await queue.get())\n"
                      "async def test_x():\n"
                      "    queue = asyncio.Queue()\n"
                      "    await asyncio.gather(producer(queue), consumer(queue, []))\n";
    afd_buf out;
    afd_buf_init(&out);
    char why[256];
    CHECK_EQ_INT(afd_fix_event_gate(src, strlen(src), "test_x", 4, 7, "queue", 1, &out, why, sizeof why), 0);
    afd_buf_put_u8(&out, 0);
    const char *t = (const char *)out.data;
    /* set once the loop is done (not after the first put), before the next statement */
    CHECK(strstr(t, "        await queue.put(item)\n"
                    "    if _affidavit_queue_written is not None:  # affidavit: the write is done\n"
                    "        _affidavit_queue_written.set()\n"
                    "    print(\"done\")\n") != NULL);
    CHECK(strstr(t, "        await _affidavit_queue_written.wait()\n    while not queue.empty():\n") != NULL);
    afd_buf_finish(&out);
}

TEST(event_wait_on_the_programs_event)
{
    const char *src = "import asyncio\n"
                      "class C:\n"
                      "    async def send(self):\n"
                      "        # the flag\n"
                      "        if not (self.ev.is_set() and True):\n"
                      "            raise RuntimeError\n"
                      "def sync_check(ev):\n"
                      "    return ev.is_set()\n"
                      "async def no_event(x):\n"
                      "    return x\n";
    afd_buf out;
    afd_buf_init(&out);
    char why[256];
    CHECK_EQ_INT(afd_fix_event_wait(src, strlen(src), 5, &out, why, sizeof why), 0);
    afd_buf_put_u8(&out, 0);
    CHECK(strstr((const char *)out.data,
                 "        # the flag\n"
                 "        await self.ev.wait()  # affidavit: check only once it is set\n"
                 "        if not (self.ev.is_set() and True):\n") != NULL);
    afd_buf_finish(&out);
    afd_buf_init(&out);
    CHECK_EQ_INT(afd_fix_event_wait(src, strlen(src), 8, &out, why, sizeof why), AFD_EINVAL); /* not async */
    CHECK(strstr(why, "async") != NULL);
    CHECK_EQ_INT(afd_fix_event_wait(src, strlen(src), 10, &out, why, sizeof why),
                 AFD_EINVAL); /* no is_set() */
    CHECK(strstr(why, "is_set") != NULL);
    CHECK_EQ_INT(afd_fix_event_wait(src, strlen(src), 99, &out, why, sizeof why), AFD_EINVAL);
    afd_buf_finish(&out);
}

TEST(lock_order)
{
    const char *src = "import asyncio\n"
                      "async def transfer(first: asyncio.Lock, second, name):\n"
                      "    await asyncio.sleep(0)\n"
                      "    async with first:  # the debit\n"
                      "        await asyncio.sleep(0.001)\n"
                      "\n"
                      "        async with second:\n"
                      "            LOG.append(name)\n"
                      "            # done\n"
                      "        print(first)\n"
                      "    return name\n";
    afd_buf out;
    afd_buf_init(&out);
    char why[256];
    CHECK_EQ_INT(afd_fix_lock_order(src, strlen(src), 4, 7, &out, why, sizeof why), 0);
    afd_buf_put_u8(&out, 0);
    CHECK_EQ_STR(
        (const char *)out.data,
        "import asyncio\n"
        "async def transfer(first: asyncio.Lock, second, name):\n"
        "    await asyncio.sleep(0)\n"
        "    _affidavit_lock_a, _affidavit_lock_b = sorted((first, second), key=id)  # affidavit: one global "
        "order for every caller\n"
        "    async with _affidavit_lock_a, _affidavit_lock_b:  # affidavit: both locks, taken together (was: "
        "async with first:)\n"
        "        await asyncio.sleep(0.001)\n"
        "\n"
        "        LOG.append(name)\n"
        "        # done\n"
        "        print(first)\n"
        "    return name\n");
    afd_buf_finish(&out);
    afd_buf_init(&out);
    /* refusals: the locks rebound, not parameters, not nested, not `async with NAME:` */
    const char *rebound = "async def t(a, b):\n"
                          "    a = b\n"
                          "    async with a:\n"
                          "        async with b:\n"
                          "            pass\n";
    CHECK_EQ_INT(afd_fix_lock_order(rebound, strlen(rebound), 3, 4, &out, why, sizeof why), AFD_EINVAL);
    CHECK(strstr(why, "parameters") != NULL);
    const char *globals = "A = B = None\n"
                          "async def t():\n"
                          "    async with A:\n"
                          "        async with B:\n"
                          "            pass\n";
    CHECK_EQ_INT(afd_fix_lock_order(globals, strlen(globals), 3, 4, &out, why, sizeof why), AFD_EINVAL);
    const char *apart = "async def t(a, b):\n"
                        "    async with a:\n"
                        "        pass\n"
                        "    async with b:\n"
                        "        pass\n";
    CHECK_EQ_INT(afd_fix_lock_order(apart, strlen(apart), 2, 4, &out, why, sizeof why), AFD_EINVAL);
    CHECK(strstr(why, "inside") != NULL);
    const char *attrs = "async def t(self):\n"
                        "    async with self.a:\n"
                        "        async with self.b:\n"
                        "            pass\n";
    CHECK_EQ_INT(afd_fix_lock_order(attrs, strlen(attrs), 2, 3, &out, why, sizeof why), AFD_EINVAL);
    const char *multiline = "async def t(a, b):\n"
                            "    async with a:\n"
                            "        async with b:\n"
                            "            x = \"\"\"one\n"
                            "two\"\"\"\n";
    CHECK_EQ_INT(afd_fix_lock_order(multiline, strlen(multiline), 2, 3, &out, why, sizeof why), AFD_EINVAL);
    CHECK(strstr(why, "multi-line") != NULL);
    afd_buf_finish(&out);
}

TEST(offload)
{
    const char *src = "import time\n"
                      "async def reload():\n"
                      "    time.sleep(0.03)  # blocks\n"
                      "    data = load(path, mode=\"r\")\n"
                      "    sync_helper()\n"
                      "def sync_helper():\n"
                      "    time.sleep(1)\n";
    afd_buf out;
    afd_buf_init(&out);
    char why[256];
    CHECK_EQ_INT(afd_fix_offload(src, strlen(src), 3, &out, why, sizeof why), 0);
    afd_buf_put_u8(&out, 0);
    CHECK_EQ_STR((const char *)out.data, "import time\n"
                                         "import asyncio\n"
                                         "async def reload():\n"
                                         "    await asyncio.to_thread(time.sleep, 0.03)  # blocks\n"
                                         "    data = load(path, mode=\"r\")\n"
                                         "    sync_helper()\n"
                                         "def sync_helper():\n"
                                         "    time.sleep(1)\n");
    afd_buf_finish(&out);
    afd_buf_init(&out);
    CHECK_EQ_INT(afd_fix_offload(src, strlen(src), 4, &out, why, sizeof why), 0);
    afd_buf_put_u8(&out, 0);
    CHECK(strstr((const char *)out.data, "    data = await asyncio.to_thread(load, path, mode=\"r\")\n") !=
          NULL);
    afd_buf_finish(&out);
    afd_buf_init(&out);
    CHECK_EQ_INT(afd_fix_offload(src, strlen(src), 5, &out, why, sizeof why), 0); /* no arguments */
    afd_buf_put_u8(&out, 0);
    CHECK(strstr((const char *)out.data, "    await asyncio.to_thread(sync_helper)\n") != NULL);
    CHECK_EQ_INT(afd_fix_offload(src, strlen(src), 7, &out, why, sizeof why), AFD_EINVAL); /* a plain def */
    CHECK(strstr(why, "async") != NULL);
    CHECK_EQ_INT(afd_fix_offload(src, strlen(src), 2, &out, why, sizeof why), AFD_EINVAL);
    afd_buf_finish(&out);
}

int main(void)
{
    RUN_TESTS("fix", T(module_global), T(instance_with_init_and_two_resources_in_sorted_order),
              T(instance_without_init_creates_the_lock_atomically), T(refusals), T(tabs_and_comments_kept),
              T(await_task), T(event_gate), T(event_gate_after_the_producers_loop),
              T(event_wait_on_the_programs_event), T(lock_order), T(offload));
}
