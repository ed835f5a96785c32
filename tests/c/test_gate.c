/* test_gate.c -- the policy gate: for every check, attacks it must refuse and fixes it must accept.
 *
 * The patches are edits of small, realistic flaky tests: a lost update on a shared counter, a
 * reader racing a writer task. Each attack is the base text with one substitution. */
#include "afd.h"
#include "buf.h"
#include "gate.h"
#include "gate_harness.h"
#include "harness.h"

/* A reader racing a writer task. */
static const char ORDER[] = "import asyncio\n"
                            "\n"
                            "results = []\n"
                            "\n"
                            "\n"
                            "async def writer():\n"
                            "    await asyncio.sleep(0)\n"
                            "    results.append(\"written\")\n"
                            "\n"
                            "\n"
                            "async def reader():\n"
                            "    return list(results)\n"
                            "\n"
                            "\n"
                            "async def test_order():\n"
                            "    w = asyncio.create_task(writer())\n"
                            "    r = await reader()\n"
                            "    assert r == [\"written\"]\n";

static char *event_fix(void)
{
    char *a =
        subst(ORDER, "async def writer():\n    await asyncio.sleep(0)\n    results.append(\"written\")\n",
              "async def writer(done):\n    await asyncio.sleep(0)\n    results.append(\"written\")\n"
              "    done.set()\n");
    char *b = subst(a, "async def reader():\n", "async def reader(done):\n    await done.wait()\n");
    free(a);
    a = subst(b, "    w = asyncio.create_task(writer())\n    r = await reader()\n",
              "    done = asyncio.Event()\n    w = asyncio.create_task(writer(done))\n    r = await "
              "reader(done)\n");
    free(b);
    return a;
}

TEST(names_and_groups)
{
    static const char *const names[] = {"no_sleep",
                                        "no_timeout",
                                        "no_retry",
                                        "no_weaker_assert",
                                        "no_swallow",
                                        "no_skip",
                                        "no_cancel_swallow",
                                        "no_shield",
                                        "no_uncancel",
                                        "sync_primitive",
                                        "primitive_used_twice",
                                        "not_noop",
                                        "no_lock_cycle",
                                        "src_allowed",
                                        "no_third_party",
                                        "parses"};
    for (int i = 0; i < AFD_GATE__COUNT; i++)
        CHECK_EQ_STR(afd_gate_check_name(i), names[i]);
    CHECK(afd_gate_check_name(AFD_GATE__COUNT) == NULL);
    char *after = lock_fix(COUNTER);
    run_file("tests/test_counter.py", COUNTER, after, 0);
    CHECK_EQ_STR(G[AFD_GATE_NO_SLEEP].group, "refused shortcut");
    CHECK_EQ_STR(G[AFD_GATE_NOT_NOOP].group, "required substance");
    CHECK_EQ_STR(G[AFD_GATE_PARSES].group, "structural safety");
    CHECK(strstr(G[AFD_GATE_PARSES].reason, "parse check") != NULL);
    CHECK(strstr(G[AFD_GATE_PRIMITIVE_USED_TWICE].reason, "syntactic") != NULL);
    free(after);
    afd_gate_file f = {NULL, "", 0, "", 0};
    CHECK_EQ_INT(afd_gate_run(&f, 1, 0, G), AFD_EINVAL);
    f = (afd_gate_file){"x.py", NULL, 0, NULL, 0};
    CHECK_EQ_INT(afd_gate_run(&f, 1, 0, G), AFD_EINVAL);
    CHECK_EQ_INT(afd_gate_run(NULL, 0, 0, NULL), AFD_EINVAL);
}

TEST(paths)
{
    CHECK(afd_gate_is_test_path("tests/test_x.py"));
    CHECK(afd_gate_is_test_path("pkg/test/helpers.py"));
    CHECK(afd_gate_is_test_path("tests/unit/data.py"));
    CHECK(afd_gate_is_test_path("test_x.py"));
    CHECK(afd_gate_is_test_path("pkg/x_test.py"));
    CHECK(afd_gate_is_test_path("pkg/conftest.py"));
    CHECK(!afd_gate_is_test_path("pkg/x.py"));
    CHECK(!afd_gate_is_test_path("pkg/testing.py"));
    CHECK(!afd_gate_is_test_path("pkg/tests.py"));
    CHECK(!afd_gate_is_test_path("pkg/latest/x.py"));
    CHECK(!afd_gate_is_test_path("test_x.txt"));
    CHECK(afd_gate_is_third_party_path(".venv/lib/python3.12/site-packages/aio/x.py"));
    CHECK(afd_gate_is_third_party_path("vendor/lib.py"));
    CHECK(afd_gate_is_third_party_path("web/node_modules/x.py"));
    CHECK(!afd_gate_is_third_party_path("pkg/x.py"));
}

/* ---- the clean fixes ---- */

TEST(clean_lock_fix)
{
    char *after = lock_fix(COUNTER);
    CLEAN("tests/test_counter.py", COUNTER, after);
    CHECK(strstr(G[AFD_GATE_SYNC_PRIMITIVE].reason, "Lock") != NULL);
    free(after);
}

TEST(clean_event_fix)
{
    char *after = event_fix();
    CLEAN("tests/test_order.py", ORDER, after);
    free(after);
}

TEST(clean_await_task_handle)
{
    char *after = subst(ORDER, "    r = await reader()\n", "    await w\n    r = await reader()\n");
    CLEAN("tests/test_order.py", ORDER, after);
    CHECK(strstr(G[AFD_GATE_SYNC_PRIMITIVE].reason, "task handle") != NULL);
    free(after);
}

TEST(clean_condition_and_queue)
{
    char *a = subst(COUNTER, "        self.value = 0\n",
                    "        self.value = 0\n        self.cond = asyncio.Condition()\n        self.q = "
                    "asyncio.Queue()\n");
    char *b = subst(
        a, "        self.value = v + 1\n",
        "        self.value = v + 1\n        async with self.cond:\n            self.cond.notify_all()\n"
        "        await self.q.put(v)\n");
    char *c = subst(b, "    assert c.value == 2\n",
                    "    async with c.cond:\n        await c.cond.wait_for(lambda: c.value == 2)\n"
                    "    await c.q.get()\n    assert c.value == 2\n");
    CLEAN("tests/test_counter.py", COUNTER, c);
    free(a);
    free(b);
    free(c);
}

TEST(pre_existing_constructs_do_not_fail)
{
    /* The before text already sleeps, times out, retries, swallows and skips: a lock fix that
     * keeps all of that is not refused for it. */
    char *base = subst(COUNTER, "async def test_counter():\n    c = Counter()\n",
                       "@pytest.mark.flaky(reruns=2)\n@pytest.mark.timeout(5)\n"
                       "async def test_counter():\n    c = Counter()\n    await asyncio.sleep(0.1)\n"
                       "    try:\n        pass\n    except Exception:\n        pass\n"
                       "    await asyncio.wait_for(asyncio.sleep(0), 1)\n");
    char *after = lock_fix(base);
    CLEAN("tests/test_counter.py", base, after);
    free(base);
    free(after);
}

TEST(clean_src_with_allow_src)
{
    char *after = lock_fix(COUNTER);
    attack_at(__LINE__, "app/counter.py", COUNTER, after, 0, AFD_GATE_SRC_ALLOWED);
    clean_at(__LINE__, "app/counter.py", COUNTER, after, 1);
    free(after);
}

/* ---- no_sleep ---- */

TEST(attack_sleep_alias)
{
    char *a = subst(COUNTER, "import asyncio\n", "import asyncio\nfrom asyncio import sleep as nap\n");
    char *b = subst(a, "    assert c.value == 2\n", "    await nap(0.1)\n    assert c.value == 2\n");
    ATTACK("tests/test_counter.py", COUNTER, b, AFD_GATE_NO_SLEEP);
    CHECK(strstr(G[AFD_GATE_NO_SLEEP].reason, "asyncio.sleep(0.1)") != NULL);
    free(a);
    free(b);
    /* time.sleep through a module alias, and anyio. */
    a = subst(COUNTER, "import asyncio\n", "import asyncio\nimport time as t\n");
    b = subst(a, "    assert c.value == 2\n", "    t.sleep(0.05)\n    assert c.value == 2\n");
    ATTACK("tests/test_counter.py", COUNTER, b, AFD_GATE_NO_SLEEP);
    free(a);
    free(b);
    a = subst(COUNTER, "    assert c.value == 2\n",
              "    import anyio\n    await anyio.sleep(delay)\n    assert c.value == 2\n");
    ATTACK("tests/test_counter.py", COUNTER, a, AFD_GATE_NO_SLEEP);
    free(a);
    a = subst(COUNTER, "import asyncio\n", "import asyncio\nimport trio\n");
    b = subst(a, "    assert c.value == 2\n", "    await trio.sleep(1)\n    assert c.value == 2\n");
    ATTACK("tests/test_counter.py", COUNTER, b, AFD_GATE_NO_SLEEP);
    free(a);
    free(b);
    a = subst(COUNTER, "import asyncio\n", "import asyncio\nfrom time import sleep\n");
    b = subst(a, "    assert c.value == 2\n", "    sleep(0)\n    assert c.value == 2\n");
    ATTACK("tests/test_counter.py", COUNTER, b, AFD_GATE_NO_SLEEP); /* time.sleep(0) is no yield */
    free(a);
    free(b);
    a = subst(COUNTER, "    assert c.value == 2\n",
              "    loop.call_at(loop.time() + 1, print)\n    assert c.value == 2\n");
    ATTACK("tests/test_counter.py", COUNTER, a, AFD_GATE_NO_SLEEP);
    free(a);
}

TEST(attack_call_later)
{
    char *a = subst(COUNTER, "    assert c.value == 2\n",
                    "    fut = asyncio.get_running_loop().create_future()\n"
                    "    asyncio.get_running_loop().call_later(0.1, fut.set_result, None)\n    await fut\n"
                    "    assert c.value == 2\n");
    ATTACK("tests/test_counter.py", COUNTER, a, AFD_GATE_NO_SLEEP);
    free(a);
}

TEST(attack_polling_loop)
{
    /* Even with a zero delay: a busy wait is a polling loop. */
    char *a = subst(COUNTER, "    assert c.value == 2\n",
                    "    while c.value < 2:\n        await asyncio.sleep(0)\n    assert c.value == 2\n");
    ATTACK("tests/test_counter.py", COUNTER, a, AFD_GATE_NO_SLEEP);
    CHECK(strstr(G[AFD_GATE_NO_SLEEP].reason, "polling") != NULL);
    free(a);
}

TEST(attack_sleep_replaced)
{
    char *base = subst(COUNTER, "    assert c.value == 2\n",
                       "    await asyncio.sleep(0.1)\n    assert c.value == 2\n");
    char *a = subst(base, "sleep(0.1)", "sleep(0.5)");
    ATTACK("tests/test_counter.py", base, a, AFD_GATE_NO_SLEEP);
    free(a);
    /* A yield, sleep(0), is allowed. */
    a = subst(COUNTER, "    assert c.value == 2\n", "    await asyncio.sleep(0)\n    assert c.value == 2\n");
    run_file("tests/test_counter.py", COUNTER, a, 0);
    CHECK(G[AFD_GATE_NO_SLEEP].passed);
    free(a);
    free(base);
}

/* ---- no_timeout ---- */

TEST(attack_wait_for)
{
    char *a = subst(COUNTER, "    await asyncio.gather(c.incr(), c.incr())\n",
                    "    await asyncio.wait_for(asyncio.gather(c.incr(), c.incr()), timeout=5)\n");
    ATTACK("tests/test_counter.py", COUNTER, a, AFD_GATE_NO_TIMEOUT);
    free(a);
    a = subst(COUNTER, "    await asyncio.gather(c.incr(), c.incr())\n",
              "    async with asyncio.timeout(1):\n        await asyncio.gather(c.incr(), c.incr())\n");
    ATTACK("tests/test_counter.py", COUNTER, a, AFD_GATE_NO_TIMEOUT);
    free(a);
}

TEST(attack_timeout_mark)
{
    char *base = subst(COUNTER, "async def test_counter", "@pytest.mark.timeout(1)\nasync def test_counter");
    char *a = subst(base, "timeout(1)", "timeout(10)");
    ATTACK("tests/test_counter.py", base, a, AFD_GATE_NO_TIMEOUT);
    CHECK(strstr(G[AFD_GATE_NO_TIMEOUT].reason, "raises") != NULL);
    free(a);
    ATTACK("tests/test_counter.py", COUNTER, base, AFD_GATE_NO_TIMEOUT); /* added */
    free(base);
}

/* ---- no_retry ---- */

TEST(attack_flaky_decorator)
{
    char *a =
        subst(COUNTER, "async def test_counter", "@pytest.mark.flaky(reruns=3)\nasync def test_counter");
    ATTACK("tests/test_counter.py", COUNTER, a, AFD_GATE_NO_RETRY);
    free(a);
    char *b = subst(COUNTER, "import asyncio\n", "import asyncio\nfrom tenacity import retry\n");
    a = subst(b, "async def test_counter", "@retry\nasync def test_counter");
    ATTACK("tests/test_counter.py", COUNTER, a, AFD_GATE_NO_RETRY);
    free(a);
    free(b);
    a = subst(COUNTER, "async def test_counter",
              "@backoff.on_exception(backoff.expo, AssertionError)\nasync def test_counter");
    ATTACK("tests/test_counter.py", COUNTER, a, AFD_GATE_NO_RETRY);
    free(a);
}

TEST(attack_retry_loop)
{
    char *a =
        subst(COUNTER, "    await asyncio.gather(c.incr(), c.incr())\n    assert c.value == 2\n",
              "    for _ in range(3):\n        try:\n            await asyncio.gather(c.incr(), c.incr())\n"
              "            assert c.value == 2\n            break\n        except AssertionError:\n"
              "            c = Counter()\n");
    ATTACK("tests/test_counter.py", COUNTER, a, AFD_GATE_NO_RETRY);
    free(a);
}

/* ---- no_weaker_assert ---- */

TEST(attack_assert_removed)
{
    char *a = subst(COUNTER, "    assert c.value == 2\n", "    print(c.value)\n");
    ATTACK("tests/test_counter.py", COUNTER, a, AFD_GATE_NO_WEAKER_ASSERT);
    free(a);
}

TEST(attack_assert_weakened)
{
    char *a = subst(COUNTER, "assert c.value == 2", "assert c.value in (1, 2)");
    ATTACK("tests/test_counter.py", COUNTER, a, AFD_GATE_NO_WEAKER_ASSERT);
    free(a);
    a = subst(COUNTER, "assert c.value == 2", "assert c.value >= 1");
    ATTACK("tests/test_counter.py", COUNTER, a, AFD_GATE_NO_WEAKER_ASSERT);
    free(a);
}

TEST(attack_approx_added)
{
    char *a = subst(COUNTER, "    assert c.value == 2\n",
                    "    assert c.value == 2\n    assert pytest.approx(2, abs=1) == c.value\n");
    ATTACK("tests/test_counter.py", COUNTER, a, AFD_GATE_NO_WEAKER_ASSERT);
    CHECK(strstr(G[AFD_GATE_NO_WEAKER_ASSERT].reason, "approx") != NULL);
    free(a);
}

/* ---- no_swallow ---- */

TEST(attack_bare_except_pass)
{
    char *a = subst(COUNTER, "    assert c.value == 2\n",
                    "    try:\n        assert c.value == 2\n    except:\n        pass\n");
    ATTACK("tests/test_counter.py", COUNTER, a, AFD_GATE_NO_SWALLOW);
    free(a);
    a = subst(COUNTER, "    assert c.value == 2\n",
              "    try:\n        assert c.value == 2\n    except ValueError as e:\n        "
              "logger.warning(\"%s\", e)\n");
    ATTACK("tests/test_counter.py", COUNTER, a, AFD_GATE_NO_SWALLOW);
    free(a);
    /* A narrow handler that re-raises is fine. */
    a = subst(COUNTER, "    assert c.value == 2\n",
              "    try:\n        assert c.value == 2\n    except AssertionError:\n        print(c.value)\n   "
              "     raise\n");
    run_file("tests/test_counter.py", COUNTER, a, 0);
    CHECK(G[AFD_GATE_NO_SWALLOW].passed);
    free(a);
}

TEST(attack_contextlib_suppress)
{
    char *a = subst(COUNTER, "    assert c.value == 2\n",
                    "    with contextlib.suppress(AssertionError):\n        assert c.value == 2\n");
    ATTACK("tests/test_counter.py", COUNTER, a, AFD_GATE_NO_SWALLOW);
    free(a);
}

/* ---- no_skip ---- */

TEST(attack_skip_mark)
{
    char *a = subst(COUNTER, "async def test_counter",
                    "@pytest.mark.skip(reason=\"flaky\")\nasync def test_counter");
    ATTACK("tests/test_counter.py", COUNTER, a, AFD_GATE_NO_SKIP);
    free(a);
    a = subst(COUNTER, "async def test_counter", "@pytest.mark.xfail(strict=False)\nasync def test_counter");
    ATTACK("tests/test_counter.py", COUNTER, a, AFD_GATE_NO_SKIP);
    free(a);
}

TEST(attack_skip_call)
{
    char *a = subst(COUNTER, "    c = Counter()\n", "    pytest.skip(\"races\")\n    c = Counter()\n");
    ATTACK("tests/test_counter.py", COUNTER, a, AFD_GATE_NO_SKIP);
    free(a);
}

TEST(attack_test_renamed)
{
    char *a = subst(COUNTER, "async def test_counter", "async def check_counter");
    ATTACK("tests/test_counter.py", COUNTER, a, AFD_GATE_NO_SKIP);
    CHECK(strstr(G[AFD_GATE_NO_SKIP].reason, "test_counter") != NULL);
    free(a);
}

TEST(attack_test_file_deleted)
{
    ATTACK("tests/test_counter.py", COUNTER, NULL, AFD_GATE_NO_SKIP);
}

/* ---- required substance ---- */

TEST(attack_no_primitive)
{
    /* Renaming a local is a change, but no synchronization. */
    char *a =
        subst(COUNTER,
              "        v = self.value\n        await asyncio.sleep(0)  # a yield point\n        self.value = "
              "v + 1\n",
              "        old = self.value\n        await asyncio.sleep(0)\n        self.value = old + 1\n");
    ATTACK("tests/test_counter.py", COUNTER, a, AFD_GATE_SYNC_PRIMITIVE);
    CHECK(G[AFD_GATE_NOT_NOOP].passed);
    free(a);
}

TEST(attack_event_only_set)
{
    char *a = subst(COUNTER, "        self.value = 0\n",
                    "        self.value = 0\n        self._ev = asyncio.Event()\n");
    char *b =
        subst(a, "        self.value = v + 1\n", "        self.value = v + 1\n        self._ev.set()\n");
    ATTACK("tests/test_counter.py", COUNTER, b, AFD_GATE_PRIMITIVE_USED_TWICE);
    CHECK(strstr(G[AFD_GATE_PRIMITIVE_USED_TWICE].reason, "wait") != NULL);
    CHECK(G[AFD_GATE_SYNC_PRIMITIVE].passed);
    free(a);
    free(b);
    /* A lock created in place is shared by nobody. */
    a = subst(
        COUNTER,
        "        v = self.value\n        await asyncio.sleep(0)  # a yield point\n        self.value = v + "
        "1\n",
        "        async with asyncio.Lock():\n            v = self.value\n            await asyncio.sleep(0)\n"
        "            self.value = v + 1\n");
    ATTACK("tests/test_counter.py", COUNTER, a, AFD_GATE_PRIMITIVE_USED_TWICE);
    free(a);
    /* A lock created and never acquired. */
    a = subst(COUNTER, "        self.value = 0\n",
              "        self.value = 0\n        self._lock = asyncio.Lock()\n");
    ATTACK("tests/test_counter.py", COUNTER, a, AFD_GATE_PRIMITIVE_USED_TWICE);
    free(a);
}

TEST(attack_noop)
{
    char *a = subst(COUNTER, "        v = self.value\n",
                    "        # read the value\n        v  =  self.value   # again\n\n");
    ATTACK("tests/test_counter.py", COUNTER, a, AFD_GATE_NOT_NOOP);
    free(a);
    ATTACK("tests/test_counter.py", COUNTER, COUNTER, AFD_GATE_NOT_NOOP); /* no change at all */
    /* Dedenting a statement out of a block changes no token but the structure: not a no-op. */
    const char *b1 = "if x:\n    a()\n    b()\n", *b2 = "if x:\n    a()\nb()\n";
    run_file("tests/test_x.py", b1, b2, 0);
    CHECK(G[AFD_GATE_NOT_NOOP].passed);
    /* A change inside a string literal is a change. */
    run_file("tests/test_x.py", "s = 'a  b'\n", "s = 'a b'\n", 0);
    CHECK(G[AFD_GATE_NOT_NOOP].passed);
}

/* ---- structural safety ---- */

static const char BANK[] = "import asyncio\n"
                           "\n"
                           "\n"
                           "class Bank:\n"
                           "    def __init__(self):\n"
                           "        self.a = asyncio.Lock()\n"
                           "        self.b = asyncio.Lock()\n"
                           "\n"
                           "    async def forward(self):\n"
                           "        async with self.a:\n"
                           "            async with self.b:\n"
                           "                await asyncio.sleep(0)\n"
                           "\n"
                           "\n"
                           "async def test_bank():\n"
                           "    bank = Bank()\n"
                           "    await asyncio.gather(bank.forward(), bank.forward())\n";

TEST(attack_lock_order_inversion)
{
    char *a =
        subst(BANK, "\n\nasync def test_bank",
              "\n    async def backward(self):\n        async with self.b:\n            async with self.a:\n"
              "                await asyncio.sleep(0)\n\n\nasync def test_bank");
    ATTACK("tests/test_bank.py", BANK, a, AFD_GATE_NO_LOCK_CYCLE);
    free(a);
    /* One statement, two locks out of text order. */
    a = subst(BANK, "\n\nasync def test_bank",
              "\n    async def both(self):\n        async with self.b, self.a:\n            await "
              "asyncio.sleep(0)\n"
              "\n\nasync def test_bank");
    ATTACK("tests/test_bank.py", BANK, a, AFD_GATE_NO_LOCK_CYCLE);
    free(a);
    /* The same order again is fine. */
    a = subst(BANK, "\n\nasync def test_bank",
              "\n    async def again(self):\n        async with self.a, self.b:\n            await "
              "asyncio.sleep(0)\n"
              "\n\nasync def test_bank");
    clean_at(__LINE__, "tests/test_bank.py", BANK, a, 0);
    free(a);
}

TEST(attack_third_party)
{
    char *after = lock_fix(COUNTER);
    attack_at(__LINE__, ".venv/lib/python3.12/site-packages/aiolib/counter.py", COUNTER, after, 1,
              AFD_GATE_NO_THIRD_PARTY);
    free(after);
}

TEST(attack_does_not_parse)
{
    char *after = lock_fix(COUNTER);
    char *a = subst(after, "async def test_counter():", "async def test_counter(:");
    ATTACK("tests/test_counter.py", COUNTER, a, AFD_GATE_PARSES);
    CHECK(strstr(G[AFD_GATE_PARSES].reason, "parse check") != NULL);
    free(a);
    free(after);
}

TEST(multi_file)
{
    /* The lock in the source, the test unchanged but for a comment, source edits allowed. */
    char *src_after = lock_fix(COUNTER);
    char *test_after = subst(COUNTER, "    c = Counter()\n", "    c = Counter()  # fresh\n");
    afd_gate_file fs[2] = {
        {"app/counter.py", COUNTER, strlen(COUNTER), src_after, strlen(src_after)},
        {"tests/test_counter.py", COUNTER, strlen(COUNTER), test_after, strlen(test_after)},
    };
    CHECK_EQ_INT(afd_gate_run(fs, 2, 1, G), 0);
    if (!afd_gate_passed(G)) {
        dump();
        FAIL_AT("clean multi-file patch refused");
    }
    CHECK_EQ_INT(afd_gate_run(fs, 2, 0, G), 0);
    CHECK(!G[AFD_GATE_SRC_ALLOWED].passed);
    free(src_after);
    free(test_after);
}

TEST(hostile_inputs)
{
    /* Deep nesting, garbage and NULs: no crash, the parse check fails. */
    size_t n = 300000;
    char *s = malloc(n + 1);
    CHECK(s != NULL);
    for (size_t i = 0; i < n; i++)
        s[i] = i < n / 2 ? '(' : ')';
    s[n] = 0;
    run_file("tests/test_x.py", "x = 1\n", s, 0);
    CHECK(!G[AFD_GATE_PARSES].passed);
    for (size_t i = 0; i < n; i++)
        s[i] = (char)(afd_mix64(i) & 0xff);
    afd_gate_file f = {"tests/test_x.py", "x = 1\n", 6, s, n};
    CHECK_EQ_INT(afd_gate_run(&f, 1, 0, G), 0);
    CHECK(!G[AFD_GATE_PARSES].passed);
    /* A long `1+1+...` chain nests the tree 100,000 deep. */
    afd_buf b;
    afd_buf_init(&b);
    afd_buf_printf(&b, "async def test_x():\n    x = 1");
    for (int i = 0; i < 100000; i++)
        afd_buf_printf(&b, "+1");
    afd_buf_printf(&b, "\n    await asyncio.sleep(x)\n");
    f = (afd_gate_file){"tests/test_x.py", "x = 1\n", 6, (const char *)b.data, b.len};
    CHECK_EQ_INT(afd_gate_run(&f, 1, 0, G), 0);
    CHECK(!G[AFD_GATE_NO_SLEEP].passed);
    afd_buf_finish(&b);
    /* Hundreds of nested async withs: the cycle check gives up, refusing, instead of stalling. */
    afd_buf_init(&b);
    afd_buf_printf(&b, "async def test_x(locks):\n");
    for (int i = 0; i < 40; i++)
        afd_buf_printf(&b, "%*sasync with locks.l%02d:\n", 4 * (i + 1), "", i);
    afd_buf_printf(&b, "%*spass\n", 4 * 41, "");
    f = (afd_gate_file){"tests/test_x.py", "x = 1\n", 6, (const char *)b.data, b.len};
    CHECK_EQ_INT(afd_gate_run(&f, 1, 0, G), 0);
    CHECK(!G[AFD_GATE_NO_LOCK_CYCLE].passed);
    CHECK(strstr(G[AFD_GATE_NO_LOCK_CYCLE].reason, "too many") != NULL);
    afd_buf_finish(&b);
    free(s);
}

TEST(clean_taskgroup_handle)
{
    char *before = subst(
        ORDER,
        "    w = asyncio.create_task(writer())\n    r = await reader()\n    assert r == [\"written\"]\n",
        "    async with asyncio.TaskGroup() as tg:\n        w = tg.create_task(writer())\n"
        "        r = await reader()\n        assert r == [\"written\"]\n");
    char *after =
        subst(before, "        r = await reader()\n", "        await w\n        r = await reader()\n");
    CLEAN("tests/test_order.py", before, after);
    free(before);
    free(after);
}

/* A sender that tests a connection's Event flag before the handshake set it. */
static const char FLAG[] = "import asyncio\n"
                           "\n"
                           "\n"
                           "class Connection:\n"
                           "    def __init__(self):\n"
                           "        self.connected = asyncio.Event()\n"
                           "        self.proc = None\n"
                           "\n"
                           "    async def send(self):\n"
                           "        await asyncio.sleep(0.001)\n"
                           "        if not self.connected.is_set():\n"
                           "            raise ConnectionError(\"not connected\")\n"
                           "\n"
                           "\n"
                           "async def test_send():\n"
                           "    conn = Connection()\n"
                           "    await conn.send()\n";

TEST(clean_wait_on_existing_event)
{
    char *after = subst(FLAG, "        if not self.connected.is_set():\n",
                        "        await self.connected.wait()\n        if not self.connected.is_set():\n");
    CLEAN("tests/test_flag.py", FLAG, after);
    CHECK(strstr(G[AFD_GATE_SYNC_PRIMITIVE].reason, "existing asyncio.Event") != NULL);
    free(after);
}

TEST(attack_wait_on_something_else)
{
    /* `.wait()` on an object the program never made an Event or Condition: no synchronization */
    char *after = subst(FLAG, "        if not self.connected.is_set():\n",
                        "        await self.proc.wait()\n        if not self.connected.is_set():\n");
    ATTACK("tests/test_flag.py", FLAG, after, AFD_GATE_SYNC_PRIMITIVE);
    free(after);
}

TEST(clean_lock_order)
{
    static const char before[] = "import asyncio\n"
                                 "\n"
                                 "\n"
                                 "async def transfer(first, second):\n"
                                 "    async with first:\n"
                                 "        await asyncio.sleep(0)\n"
                                 "        async with second:\n"
                                 "            pass\n"
                                 "\n"
                                 "\n"
                                 "async def test_transfers():\n"
                                 "    a, b = asyncio.Lock(), asyncio.Lock()\n"
                                 "    await asyncio.gather(transfer(a, b), transfer(b, a))\n";
    char *after =
        subst(before,
              "    async with first:\n        await asyncio.sleep(0)\n        async with second:\n"
              "            pass\n",
              "    _affidavit_lock_a, _affidavit_lock_b = sorted((first, second), key=id)\n"
              "    async with _affidavit_lock_a, _affidavit_lock_b:\n        await asyncio.sleep(0)\n"
              "        pass\n");
    CLEAN("tests/test_transfers.py", before, after);
    free(after);
}

/* A coroutine that blocks the loop with a synchronous call. */
static const char BLOCKING[] = "import asyncio\n"
                               "import time\n"
                               "\n"
                               "\n"
                               "async def reload():\n"
                               "    time.sleep(0.03)\n"
                               "\n"
                               "\n"
                               "async def test_reload():\n"
                               "    await reload()\n";

TEST(clean_offload)
{
    /* the same blocking call moved to a thread: no sleep added, a blocking call off the loop */
    char *after =
        subst(BLOCKING, "    time.sleep(0.03)\n", "    await asyncio.to_thread(time.sleep, 0.03)\n");
    CLEAN("tests/test_reload.py", BLOCKING, after);
    CHECK(strstr(G[AFD_GATE_SYNC_PRIMITIVE].reason, "off the event loop") != NULL);
    free(after);
    after = subst(BLOCKING, "    time.sleep(0.03)\n",
                  "    await asyncio.get_running_loop().run_in_executor(None, time.sleep, 0.03)\n");
    CLEAN("tests/test_reload.py", BLOCKING, after);
    free(after);
}

TEST(attack_sleep_in_a_thread)
{
    /* a new sleep, in a worker thread, is still a sleep */
    char *after = subst(BLOCKING, "    await reload()\n",
                        "    await asyncio.to_thread(time.sleep, 0.1)\n    await reload()\n");
    ATTACK("tests/test_reload.py", BLOCKING, after, AFD_GATE_NO_SLEEP);
    free(after);
}

TEST(mutations_never_crash)
{
    /* Random byte edits of a clean fix: the gate always answers (usually `parses` fails). */
    char *after = lock_fix(COUNTER);
    size_t n = strlen(after);
    const char alphabet[] = "():[]{}'\"#\\\n \tax=@.,";
    for (uint64_t k = 0; k < 300; k++) {
        char *m = malloc(n + 1);
        CHECK(m != NULL);
        memcpy(m, after, n + 1);
        uint64_t r = afd_mix64(k);
        for (int j = 0; j < 4; j++, r >>= 16)
            m[(r & 0xfff) % n] = alphabet[((r >> 12) & 0xf) % (sizeof alphabet - 1)];
        afd_gate_file f = {"tests/test_counter.py", COUNTER, strlen(COUNTER), m,
                           (size_t)(afd_mix64(k + 7) % (n + 1))};
        CHECK_EQ_INT(afd_gate_run(&f, 1, 0, G), 0);
        free(m);
    }
    free(after);
}

int main(void)
{
    RUN_TESTS(
        "gate", T(names_and_groups), T(paths), T(clean_lock_fix), T(clean_event_fix),
        T(clean_await_task_handle), T(clean_condition_and_queue), T(pre_existing_constructs_do_not_fail),
        T(clean_src_with_allow_src), T(attack_sleep_alias), T(attack_call_later), T(attack_polling_loop),
        T(attack_sleep_replaced), T(attack_wait_for), T(attack_timeout_mark), T(attack_flaky_decorator),
        T(attack_retry_loop), T(attack_assert_removed), T(attack_assert_weakened), T(attack_approx_added),
        T(attack_bare_except_pass), T(attack_contextlib_suppress), T(attack_skip_mark), T(attack_skip_call),
        T(attack_test_renamed), T(attack_test_file_deleted), T(attack_no_primitive), T(attack_event_only_set),
        T(attack_noop), T(attack_lock_order_inversion), T(attack_third_party), T(attack_does_not_parse),
        T(multi_file), T(hostile_inputs), T(clean_taskgroup_handle), T(clean_wait_on_existing_event),
        T(attack_wait_on_something_else), T(clean_lock_order), T(clean_offload), T(attack_sleep_in_a_thread),
        T(mutations_never_crash));
}
