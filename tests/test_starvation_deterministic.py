"""Starvation that fails every time is named: a coroutine that calls time.sleep unconditionally,
under a heartbeat that asserts its intervals, fails under every schedule. The verdict stays
`deterministic` (it is about the rate: no schedule passes), and the cause names kind starvation,
the blocking call's task and its line, in the JSON document and in the terminal text. The control
fails every time for an ordinary reason beside the same heartbeat and keeps no cause."""

from __future__ import annotations

from helpers import REPO, engine, investigate

CASE = "tests/cases/case_starvation_always.py"
STARVED = f"{CASE}::test_heartbeat_survives_reindex"
CONTROL = f"{CASE}::test_index_has_every_word"
BUDGET = ("--natural", "10")


def blocking_line() -> int:
    lines = (REPO / CASE).read_text().splitlines()
    hits = [i + 1 for i, line in enumerate(lines) if "time.sleep(0.03)" in line]
    assert len(hits) == 1, hits
    return hits[0]


def test_a_blocking_call_that_fails_every_schedule_is_named() -> None:
    rc, data, err = investigate(STARVED, *BUDGET)
    assert rc == 1, err
    assert data["verdict"] == "deterministic", data
    assert data["natural"]["failed"] == data["natural"]["runs"] == 10, data["natural"]
    site = f"{CASE}:{blocking_line()}"
    cause = data["cause"]
    assert cause is not None, data
    assert cause["kind"] == "starvation", cause
    assert cause["resource"] == "event loop", cause
    assert cause["await_site"] == site, cause
    assert site in cause["summary"] and "reindex#0" in cause["summary"], cause
    assert [(op["access"], op["task"], op["site"]) for op in cause["operations"]] == [
        ("block", "reindex#0", site)], cause["operations"]
    claims = [row["claim"] for row in data["evidence"]]
    assert claims[0].startswith("it fails under every schedule tried"), claims
    assert any("blocking call" in claim for claim in claims), claims


def test_the_text_names_the_blocking_call_under_the_deterministic_head() -> None:
    proc = engine("investigate", STARVED, *BUDGET, timeout=240)
    assert proc.returncode == 1, proc.stderr
    out = proc.stdout
    assert out.splitlines()[0] == f"{STARVED}: FAILS UNDER EVERY SCHEDULE TRIED: NOT TIMING-DEPENDENT", out
    site = f"{CASE}:{blocking_line()}"
    assert f"  cause:    starvation: reindex#0 blocks the event loop for 30.0 ms at {site}" in out, out
    assert f"  await:    {site}" in out, out


def test_an_ordinary_deterministic_failure_keeps_no_cause() -> None:
    rc, data, err = investigate(CONTROL, *BUDGET)
    assert rc == 1, err
    assert data["verdict"] == "deterministic", data
    assert data["cause"] is None, data["cause"]
    assert not any("blocking call" in row["claim"] for row in data["evidence"]), data["evidence"]
