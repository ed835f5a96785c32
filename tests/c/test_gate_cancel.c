/* test_gate_cancel.c -- the gate's checks against fixes that hide cancellation (no_cancel_swallow,
 * no_shield, no_uncancel): patches adding the construct in its spellings are refused, the near
 * misses (a cleanup that re-raises, a narrower type, a construct that was already there or that
 * the patch removes) pass. */
#include "gate_harness.h"
#include "harness.h"

/* ---- hiding cancellation: no_cancel_swallow, no_shield, no_uncancel ---- */

/* A consumer cancelled while it waits for an item. */
static const char WAITER[] = "import asyncio\n"
                             "\n"
                             "\n"
                             "async def fetch(q):\n"
                             "    item = await q.get()\n"
                             "    return item\n"
                             "\n"
                             "\n"
                             "async def test_fetch():\n"
                             "    q = asyncio.Queue()\n"
                             "    t = asyncio.create_task(fetch(q))\n"
                             "    await asyncio.sleep(0)\n"
                             "    t.cancel()\n"
                             "    q.put_nowait(1)\n"
                             "    assert q.qsize() == 1\n";

#define AWAIT_LINE "    item = await q.get()\n"
#define TRY_GET "    try:\n        item = await q.get()\n"

/* Each replaces AWAIT_LINE; refused: check `id` must fail (else it must pass). */
static const struct {
    const char *to;
    int id, refused;
} CANCEL_CASES[] = {
    {TRY_GET "    except asyncio.CancelledError:\n        item = None\n", AFD_GATE_NO_CANCEL_SWALLOW, 1},
    {"    from asyncio import CancelledError as Stop\n" TRY_GET "    except Stop:\n        return None\n",
     AFD_GATE_NO_CANCEL_SWALLOW, 1},
    {"    import asyncio as aio\n" TRY_GET "    except aio.exceptions.CancelledError:\n        pass\n",
     AFD_GATE_NO_CANCEL_SWALLOW, 1},
    {TRY_GET "    except:\n        item = None\n", AFD_GATE_NO_CANCEL_SWALLOW, 1},
    {TRY_GET "    except BaseException:\n        q.task_done()\n        item = None\n",
     AFD_GATE_NO_CANCEL_SWALLOW, 1},
    {TRY_GET "    except (KeyError, asyncio.CancelledError) as e:\n        item = e\n",
     AFD_GATE_NO_CANCEL_SWALLOW, 1},
    {TRY_GET "    except* asyncio.CancelledError:\n        item = None\n", AFD_GATE_NO_CANCEL_SWALLOW, 1},
    {TRY_GET "    except anyio.get_cancelled_exc_class():\n        item = None\n", AFD_GATE_NO_CANCEL_SWALLOW,
     1},
    /* re-raising only sometimes, or raising something else, hides it the other times */
    {TRY_GET
     "    except asyncio.CancelledError:\n        if q.empty():\n            return None\n        raise\n",
     AFD_GATE_NO_CANCEL_SWALLOW, 1},
    {TRY_GET
     "    except asyncio.CancelledError:\n        if q.empty():\n            raise\n        item = None\n",
     AFD_GATE_NO_CANCEL_SWALLOW, 1},
    {TRY_GET "    except asyncio.CancelledError:\n        raise RuntimeError('stopped')\n",
     AFD_GATE_NO_CANCEL_SWALLOW, 1},
    {TRY_GET "    except asyncio.CancelledError as e:\n        raise other\n", AFD_GATE_NO_CANCEL_SWALLOW, 1},
    {"    while True:\n        try:\n            item = await q.get()\n        except "
     "asyncio.CancelledError:\n"
     "            break\n",
     AFD_GATE_NO_CANCEL_SWALLOW, 1},
    {"    with contextlib.suppress(asyncio.CancelledError):\n        item = await q.get()\n",
     AFD_GATE_NO_CANCEL_SWALLOW, 1},
    {"    item = await asyncio.shield(q.get())\n", AFD_GATE_NO_SHIELD, 1},
    {"    from asyncio import shield as guard\n    item = await guard(q.get())\n", AFD_GATE_NO_SHIELD, 1},
    {"    import asyncio as aio\n    item = await aio.shield(q.get())\n", AFD_GATE_NO_SHIELD, 1},
    {AWAIT_LINE "    asyncio.current_task().uncancel()\n", AFD_GATE_NO_UNCANCEL, 1},
    {"    task = asyncio.current_task()\n" AWAIT_LINE "    if task.cancelling():\n        task.uncancel()\n",
     AFD_GATE_NO_UNCANCEL, 1},
    /* near misses: a cleanup that passes the cancellation on, a narrower type */
    {TRY_GET "    except asyncio.CancelledError:\n        q.task_done()\n        raise\n",
     AFD_GATE_NO_CANCEL_SWALLOW, 0},
    {"    from asyncio import CancelledError\n" TRY_GET "    except CancelledError as e:\n        cleanup()\n"
     "        raise e\n",
     AFD_GATE_NO_CANCEL_SWALLOW, 0},
    {TRY_GET
     "    except (asyncio.CancelledError, KeyError) as e:\n        log(e)\n        raise e from None\n",
     AFD_GATE_NO_CANCEL_SWALLOW, 0},
    {TRY_GET "    except asyncio.CancelledError:\n        for w in waiters:\n            if not w.done():\n"
             "                w.set_result(None)\n                break\n        raise\n",
     AFD_GATE_NO_CANCEL_SWALLOW, 0},
    {TRY_GET "    except asyncio.CancelledError:\n        def later():\n            return 1\n"
             "        loop.call_soon(later)\n        raise\n",
     AFD_GATE_NO_CANCEL_SWALLOW, 0},
    {TRY_GET "    except Exception:\n        item = None\n", AFD_GATE_NO_CANCEL_SWALLOW, 0},
    {"    with contextlib.suppress(KeyError):\n        item = await q.get()\n", AFD_GATE_NO_CANCEL_SWALLOW,
     0},
    {"    item = await shield_of(q.get())\n", AFD_GATE_NO_SHIELD, 0},
    {AWAIT_LINE "    asyncio.current_task().cancelling()\n", AFD_GATE_NO_UNCANCEL, 0},
};

TEST(attack_hiding_cancellation)
{
    for (size_t i = 0; i < sizeof CANCEL_CASES / sizeof CANCEL_CASES[0]; i++) {
        char *a = subst(WAITER, AWAIT_LINE, CANCEL_CASES[i].to);
        run_file("tests/test_fetch.py", WAITER, a, 0);
        int id = CANCEL_CASES[i].id;
        if (G[id].passed == CANCEL_CASES[i].refused || (CANCEL_CASES[i].refused && afd_gate_passed(G))) {
            dump();
            FAIL_AT("case %zu: %s expected to %s:\n%s", i, afd_gate_check_name(id),
                    CANCEL_CASES[i].refused ? "fail" : "pass", CANCEL_CASES[i].to);
        }
        CHECK(G[id].passed || strstr(G[id].reason, "tests/test_fetch.py") != NULL);
        free(a);
    }
}

/* What the code already did is no addition: a swallowing handler kept (re-indented under a new
 * lock, however long it is), a shield the patch removes. */
TEST(cancellation_already_there_passes)
{
    char pad[400];
    memset(pad, 'x', 300);
    pad[300] = 0;
    char handler[1024], locked[1100];
    snprintf(handler, sizeof handler,
             TRY_GET "    except asyncio.CancelledError:\n        log('%s')\n        item = None\n", pad);
    snprintf(locked, sizeof locked,
             "    async with LOCK:\n        try:\n            item = await q.get()\n"
             "        except asyncio.CancelledError:\n            log('%s')\n            item = None\n",
             pad);
    char *b = subst(WAITER, AWAIT_LINE, handler), *a = subst(WAITER, AWAIT_LINE, locked);
    char *b2 = subst(b, "async def fetch", "LOCK = asyncio.Lock()\n\n\nasync def fetch");
    char *a2 = subst(a, "async def fetch", "LOCK = asyncio.Lock()\n\n\nasync def fetch");
    CLEAN("tests/test_fetch.py", b2, a2);
    /* the same handler added is refused, and its reason names it */
    ATTACK("tests/test_fetch.py", WAITER, b2, AFD_GATE_NO_CANCEL_SWALLOW);
    CHECK(strstr(G[AFD_GATE_NO_CANCEL_SWALLOW].reason, "except asyncio.CancelledError") != NULL);
    free(a);
    free(b);
    free(a2);
    free(b2);
    b = subst(WAITER, AWAIT_LINE, "    item = await asyncio.shield(q.get())\n");
    run_file("tests/test_fetch.py", b, WAITER, 0);
    CHECK(G[AFD_GATE_NO_SHIELD].passed);
    free(b);
}

/* A lock fix whose cleanup on cancellation passes the cancellation on passes the whole gate. */
TEST(clean_lock_fix_with_cancel_cleanup)
{
    char *a = lock_fix(COUNTER);
    char *b = subst(a, "            self.value = v + 1\n",
                    "            try:\n                self.value = v + 1\n"
                    "            except asyncio.CancelledError:\n                self.value = v\n"
                    "                raise\n");
    CLEAN("tests/test_counter.py", COUNTER, b);
    free(a);
    free(b);
}

int main(void)
{
    RUN_TESTS("gate_cancel", T(attack_hiding_cancellation), T(cancellation_already_there_passes),
              T(clean_lock_fix_with_cancel_cleanup));
}
