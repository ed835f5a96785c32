/* test_fix_drain.c -- DRAIN_TASKS and AWAIT_TASK after a cancel (fix_drain.c): where a spawned
 * task's handle is kept, how a call passes it up, the exact patched text, and the refusals. */
#include "afd.h"
#include "fix_drain.h"
#include "gate.h"
#include "harness.h"

#include <stdlib.h>
#include <string.h>

/* A library shaped like the corpus's fire-and-forget endpoint: the task kept in a set. */
static const char *lib_src = "import asyncio\n"                                                     /* 1 */
                             "\n"                                                                   /* 2 */
                             "async def backfill(state, slot):\n"                                   /* 3 */
                             "    await asyncio.sleep(0)\n"                                         /* 4 */
                             "    state.posts.append(slot)\n"                                       /* 5 */
                             "\n"                                                                   /* 6 */
                             "async def link(state, slot):\n"                                       /* 7 */
                             "    task = asyncio.create_task(backfill(state, slot))\n"              /* 8 */
                             "    state._background_tasks.add(task)\n"                              /* 9 */
                             "    task.add_done_callback(state._background_tasks.discard)\n"        /* 10 */
                             "\n"                                                                   /* 11 */
                             "class Uploader:\n"                                                    /* 12 */
                             "    async def upload(self, name):\n"                                  /* 13 */
                             "        self.current = asyncio.ensure_future(self._commit(name))\n"   /* 14 */
                             "    async def put(self, key, name):\n"                                /* 15 */
                             "        self.by_key[key] = asyncio.create_task(self._commit(name))\n" /* 16 */
                             "    async def fire(self, name):\n"                                    /* 17 */
                             "        asyncio.create_task(self._commit(name))\n"                    /* 18 */
                             "    async def local(self, name):\n"                                   /* 19 */
                             "        tasks = set()\n"                                              /* 20 */
                             "        t = asyncio.create_task(self._commit(name))\n"                /* 21 */
                             "        tasks.add(t)\n"                                               /* 22 */
                             "    def sync(self):\n"                                                /* 23 */
                             "        return 1\n";                                                  /* 24 */

TEST(store_found_for_each_shape)
{
    afd_drain_store st;
    char why[256];
    CHECK_EQ_INT(afd_fix_drain_store(lib_src, strlen(lib_src), 8, &st, why, sizeof why), 0);
    CHECK_EQ_INT(st.shape, AFD_DRAIN_MANY);
    CHECK_EQ_INT(st.base.index, 0);
    CHECK_EQ_STR(st.base.name, "state");
    CHECK_EQ_STR(st.path, "._background_tasks");
    CHECK_EQ_INT(afd_fix_drain_store(lib_src, strlen(lib_src), 14, &st, why, sizeof why), 0);
    CHECK_EQ_INT(st.shape, AFD_DRAIN_ONE);
    CHECK_EQ_INT(st.base.index, -1); /* self: the receiver */
    CHECK_EQ_STR(st.path, ".current");
    CHECK_EQ_INT(afd_fix_drain_store(lib_src, strlen(lib_src), 16, &st, why, sizeof why), 0);
    CHECK_EQ_INT(st.shape, AFD_DRAIN_VALUES);
    CHECK_EQ_STR(st.path, ".by_key");
}

TEST(store_refusals)
{
    afd_drain_store st;
    char why[256];
    /* dropped handle */
    CHECK_EQ_INT(afd_fix_drain_store(lib_src, strlen(lib_src), 18, &st, why, sizeof why), AFD_EINVAL);
    CHECK(strstr(why, "keeps no handle") != NULL);
    /* kept in a local set only: nothing outside the function reaches it */
    CHECK_EQ_INT(afd_fix_drain_store(lib_src, strlen(lib_src), 21, &st, why, sizeof why), AFD_EINVAL);
    CHECK(strstr(why, "`tasks`, which is not a positional parameter") != NULL);
    /* no spawn at the line */
    CHECK_EQ_INT(afd_fix_drain_store(lib_src, strlen(lib_src), 5, &st, why, sizeof why), AFD_EINVAL);
    CHECK(strstr(why, "create_task") != NULL);
    CHECK_EQ_INT(afd_fix_drain_store(lib_src, strlen(lib_src), 999, &st, why, sizeof why), AFD_EINVAL);
}

static const char *test_src = "import pytest\n"                                                   /* 1 */
                              "\n"                                                                /* 2 */
                              "async def test_link(lib):\n"                                       /* 3 */
                              "    state = lib.State()\n"                                         /* 4 */
                              "    await lib.link(state, \"s1\")\n"                               /* 5 */
                              "    await lib.link(slot=\"s2\", state=state)\n"                    /* 6 */
                              "    await lib.link(make(), \"s3\")\n"                              /* 7 */
                              "    await asyncio.gather(up.upload(\"a\"), up.upload(\"b\"))\n"    /* 8 */
                              "    await asyncio.gather(up.upload(\"a\"), other.upload(\"b\"))\n" /* 9 */
                              "    assert state.posts == [\"s1\"]\n"                              /* 10 */
                              "def plain(state):\n"                                               /* 11 */
                              "    lib.link(state, 1)\n"                                          /* 12 */
                              "    return state.posts\n";                                         /* 13 */

TEST(arguments_passed_up)
{
    afd_drain_ref ref = {0, "state"}, up;
    char arg[128], why[256];
    CHECK_EQ_INT(
        afd_fix_drain_arg(test_src, strlen(test_src), 5, "link", &ref, arg, sizeof arg, &up, why, sizeof why),
        0);
    CHECK_EQ_STR(arg, "state");
    CHECK_EQ_INT(up.index, -2); /* a local of the test, not a parameter */
    CHECK_EQ_INT(
        afd_fix_drain_arg(test_src, strlen(test_src), 6, "link", &ref, arg, sizeof arg, &up, why, sizeof why),
        0);
    CHECK_EQ_STR(arg, "state"); /* by keyword */
    afd_drain_ref self = {-1, "self"};
    CHECK_EQ_INT(afd_fix_drain_arg(test_src, strlen(test_src), 8, "upload", &self, arg, sizeof arg, &up, why,
                                   sizeof why),
                 0);
    CHECK_EQ_STR(arg, "up");
    /* a parameter of the caller is passed on up */
    CHECK_EQ_INT(afd_fix_drain_arg(test_src, strlen(test_src), 12, "link", &ref, arg, sizeof arg, &up, why,
                                   sizeof why),
                 0);
    CHECK_EQ_INT(up.index, 0);
    CHECK_EQ_STR(up.name, "state");
}

TEST(argument_refusals)
{
    afd_drain_ref ref = {0, "state"}, self = {-1, "self"}, up;
    char arg[128], why[256];
    /* a call's result is not a name the reader can evaluate again */
    CHECK_EQ_INT(
        afd_fix_drain_arg(test_src, strlen(test_src), 7, "link", &ref, arg, sizeof arg, &up, why, sizeof why),
        AFD_EINVAL);
    CHECK(strstr(why, "does not pass") != NULL);
    /* two receivers in one statement: which one holds the task is not known */
    CHECK_EQ_INT(afd_fix_drain_arg(test_src, strlen(test_src), 9, "upload", &self, arg, sizeof arg, &up, why,
                                   sizeof why),
                 AFD_EINVAL);
    CHECK_EQ_INT(afd_fix_drain_arg(test_src, strlen(test_src), 10, "link", &ref, arg, sizeof arg, &up, why,
                                   sizeof why),
                 AFD_EINVAL);
    CHECK(strstr(why, "does not call link") != NULL);
}

TEST(drain_text)
{
    afd_buf out;
    afd_buf_init(&out);
    char why[256];
    CHECK_EQ_INT(afd_fix_drain_tasks(test_src, strlen(test_src), 10, 5, "state._background_tasks",
                                     AFD_DRAIN_MANY, &out, why, sizeof why),
                 0);
    afd_buf_put_u8(&out, 0);
    CHECK_EQ_STR(
        (const char *)out.data,
        "import pytest\n"
        "import asyncio\n"
        "\n"
        "async def test_link(lib):\n"
        "    state = lib.State()\n"
        "    await lib.link(state, \"s1\")\n"
        "    await lib.link(slot=\"s2\", state=state)\n"
        "    await lib.link(make(), \"s3\")\n"
        "    await asyncio.gather(up.upload(\"a\"), up.upload(\"b\"))\n"
        "    await asyncio.gather(up.upload(\"a\"), other.upload(\"b\"))\n"
        "    await asyncio.gather(*list(state._background_tasks))  # affidavit: the write this reads "
        "happens in a background task\n"
        "    assert state.posts == [\"s1\"]\n"
        "def plain(state):\n"
        "    lib.link(state, 1)\n"
        "    return state.posts\n");
    CHECK_EQ_INT(afd_fix_drain_tasks(test_src, strlen(test_src), 10, 5, "up.current", AFD_DRAIN_ONE, &out,
                                     why, sizeof why),
                 0);
    afd_buf_put_u8(&out, 0);
    CHECK(strstr((const char *)out.data, "\n    await up.current  # affidavit") != NULL);
    CHECK(strstr((const char *)out.data, "import asyncio") == NULL); /* nothing of asyncio is used */
    CHECK_EQ_INT(afd_fix_drain_tasks(test_src, strlen(test_src), 10, 5, "up.by_key", AFD_DRAIN_VALUES, &out,
                                     why, sizeof why),
                 0);
    afd_buf_put_u8(&out, 0);
    CHECK(strstr((const char *)out.data, "await asyncio.gather(*list(up.by_key.values()))") != NULL);
    afd_buf_finish(&out);
}

TEST(drain_refusals)
{
    afd_buf out;
    afd_buf_init(&out);
    char why[256];
    /* a plain function cannot await */
    CHECK_EQ_INT(afd_fix_drain_tasks(test_src, strlen(test_src), 13, 12, "state._t", AFD_DRAIN_MANY, &out,
                                     why, sizeof why),
                 AFD_EINVAL);
    CHECK(strstr(why, "not in an async function") != NULL);
    /* the scope line is in another function, or after the read */
    CHECK_EQ_INT(afd_fix_drain_tasks(test_src, strlen(test_src), 10, 12, "state._t", AFD_DRAIN_MANY, &out,
                                     why, sizeof why),
                 AFD_EINVAL);
    CHECK_EQ_INT(afd_fix_drain_tasks(test_src, strlen(test_src), 5, 10, "state._t", AFD_DRAIN_MANY, &out, why,
                                     sizeof why),
                 AFD_EINVAL);
    CHECK_EQ_INT(
        afd_fix_drain_tasks(test_src, strlen(test_src), 10, 5, "a\nb", AFD_DRAIN_MANY, &out, why, sizeof why),
        AFD_EINVAL);
    afd_buf_finish(&out);
}

static const char *wait_for_src = "import random\n"                         /* 1 */
                                  "\n"                                      /* 2 */
                                  "async def wait_for(aw, timeout):\n"      /* 3 */
                                  "    inner = asyncio.ensure_future(aw)\n" /* 4 */
                                  "    try:\n"                              /* 5 */
                                  "        await gate\n"                    /* 6 */
                                  "        inner.cancel()\n"                /* 7 */
                                  "        raise asyncio.TimeoutError()\n"  /* 8 */
                                  "    finally:\n"                          /* 9 */
                                  "        timer.cancel()\n"                /* 10 */
                                  "\n"                                      /* 11 */
                                  "async def fixed(task):\n"                /* 12 */
                                  "    task.cancel()\n"                     /* 13 */
                                  "    await asyncio.wait([task])\n"        /* 14 */
                                  "def plain(task):\n"                      /* 15 */
                                  "    task.cancel()\n"                     /* 16 */
                                  "async def other(task):\n"                /* 17 */
                                  "    task.result()\n";                    /* 18 */

TEST(await_after_cancel_text)
{
    afd_buf out;
    afd_buf_init(&out);
    char why[256];
    CHECK_EQ_INT(afd_fix_await_cancelled(wait_for_src, strlen(wait_for_src), 7, &out, why, sizeof why), 0);
    afd_buf_put_u8(&out, 0);
    CHECK(
        strstr((const char *)out.data,
               "import random\n"
               "import asyncio\n"
               "\n"
               "async def wait_for(aw, timeout):\n"
               "    inner = asyncio.ensure_future(aw)\n"
               "    try:\n"
               "        await gate\n"
               "        inner.cancel()\n"
               "        await asyncio.wait([inner])  # affidavit: go on once the cancelled task has unwound "
               "(its finally ran)\n"
               "        raise asyncio.TimeoutError()\n") == (const char *)out.data);
    afd_buf_finish(&out);
}

TEST(await_after_cancel_refusals)
{
    afd_buf out;
    afd_buf_init(&out);
    char why[256];
    CHECK_EQ_INT(afd_fix_await_cancelled(wait_for_src, strlen(wait_for_src), 13, &out, why, sizeof why),
                 AFD_EINVAL);
    CHECK(strstr(why, "awaited right after") != NULL);
    CHECK_EQ_INT(afd_fix_await_cancelled(wait_for_src, strlen(wait_for_src), 16, &out, why, sizeof why),
                 AFD_EINVAL);
    CHECK(strstr(why, "not in an async function") != NULL);
    CHECK_EQ_INT(afd_fix_await_cancelled(wait_for_src, strlen(wait_for_src), 18, &out, why, sizeof why),
                 AFD_EINVAL);
    CHECK(strstr(why, "task.cancel()") != NULL);
    CHECK_EQ_INT(afd_fix_await_cancelled(wait_for_src, strlen(wait_for_src), 99, &out, why, sizeof why),
                 AFD_EINVAL);
    afd_buf_finish(&out);
}

/* The gate's sync_primitive check over a one-file patch of a test file. */
static int gate_substance(const char *before, const char *after, char *reason, size_t cap)
{
    afd_gate_file f = {"tests/test_x.py", before, strlen(before), after, strlen(after)};
    afd_gate_check out[AFD_GATE__COUNT];
    if (afd_gate_run(&f, 1, 0, out) < 0)
        return -1;
    snprintf(reason, cap, "%s", out[AFD_GATE_SYNC_PRIMITIVE].reason);
    return out[AFD_GATE_SYNC_PRIMITIVE].passed;
}

TEST(gate_counts_awaiting_handles_only)
{
    const char *before = "import asyncio\n"
                         "async def test_x(state):\n"
                         "    await link(state)\n"
                         "    assert state.posts\n";
    char reason[256];
    static const char *const counted[] = {
        "    await asyncio.gather(*list(state._background_tasks))\n",
        "    await asyncio.gather(*list(state.by_key.values()))\n",
        "    await asyncio.wait([state.current])\n",
        "    await asyncio.gather(state.a, state.b, return_exceptions=True)\n",
    };
    static const char *const not_counted[] = {
        "    await asyncio.gather(make(state))\n",              /* a new coroutine, no handle */
        "    await asyncio.wait([state.current], timeout=1)\n", /* may give up */
        "    await asyncio.gather()\n",
        "    await asyncio.gather(*list(state.t.items()))\n",
    };
    for (size_t i = 0; i < 8; i++) {
        const char *line = i < 4 ? counted[i] : not_counted[i - 4];
        char after[512];
        snprintf(after, sizeof after,
                 "import asyncio\nasync def test_x(state):\n    await link(state)\n%s"
                 "    assert state.posts\n",
                 line);
        int passed = gate_substance(before, after, reason, sizeof reason);
        CHECK_EQ_INT(passed, i < 4 ? 1 : 0);
    }
}

int main(void)
{
    RUN_TESTS("fix_drain", T(store_found_for_each_shape), T(store_refusals), T(arguments_passed_up),
              T(argument_refusals), T(drain_text), T(drain_refusals), T(await_after_cancel_text),
              T(await_after_cancel_refusals), T(gate_counts_awaiting_handles_only));
}
