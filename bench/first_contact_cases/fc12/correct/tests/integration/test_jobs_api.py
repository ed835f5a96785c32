import asyncio

import pytest

pytestmark = pytest.mark.asyncio


async def submit(client, kind, payload=None):
    resp = await client.post_json("/jobs", {"kind": kind, "payload": payload})
    assert resp.status == 202
    return resp.data()["id"]


async def test_submit_and_wait(client):
    job_id = await submit(client, "echo", {"n": 1})
    resp = await client.get(f"/jobs/{job_id}/wait?timeout=20")
    assert resp.status == 200
    assert resp.data() == {"id": job_id, "kind": "echo", "status": "done", "attempts": 1,
                           "result": {"n": 1}, "error": None}


async def test_retries_through_the_api(client, ns):
    job_id = await submit(client, "flaky", {"key": ns, "failures": 2})
    data = (await client.get(f"/jobs/{job_id}/wait?timeout=20")).data()
    assert (data["status"], data["attempts"], data["result"]) == ("done", 3, {"key": ns, "attempts": 3})


async def test_failing_job_is_dead_lettered(client, service):
    job_id = await submit(client, "fail", {"why": "nope"})
    data = (await client.get(f"/jobs/{job_id}/wait?timeout=20")).data()
    assert (data["status"], data["error"]) == ("dead", "ValueError: nope")
    assert job_id in [j.id for j in service.jobs.dead_letters]


async def test_unknown_job_and_missing_kind(client):
    assert (await client.get("/jobs/job-999999")).status == 404
    assert (await client.post_json("/jobs", {"payload": 1})).status == 400


async def test_wait_endpoint_times_out(client):
    job_id = await submit(client, "sleep", {"s": 0.6})
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    resp = await client.get(f"/jobs/{job_id}/wait?timeout=0.2")
    assert resp.status == 504 and resp.data()["status"] in ("queued", "running")
    assert 0.19 <= loop.time() - t0 < 10
    assert (await client.get(f"/jobs/{job_id}/wait?timeout=20")).data()["status"] == "done"


async def test_job_events_on_the_broker(client, service):
    with service.broker.subscribe("jobs.done") as sub:
        job_id = await submit(client, "echo", "hi")
        async with asyncio.timeout(20):
            while True:
                _, data = await sub.get()
                if data["id"] == job_id:
                    break
    assert data["result"] == "hi"
