"""The incident store and what people look at: ls/show/report, the HTML report (escaping, the
browser view through `serve`), SARIF against the 2.1.0 schema, the Chrome trace, durability under
SIGKILL."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any, Dict, List, Tuple

import jsonschema
import pytest

from helpers import AFFIDAVIT, C_BUILD, REPO, engine, investigate

SARIF_SCHEMA = REPO / "node_modules" / "@microsoft" / "sarif-multitool-linux" / "sarif-2.1.0.json"
ARTIFACTS = REPO / "build" / "test-artifacts"
LOST_UPDATE = "examples/test_lost_update.py::test_concurrent_deposits"
ESCAPE = "tests/cases/case_escape.py::test_hostile[<script>alert(1)</script>\"'</svg>&]"


def affidavit(*args: str, cwd: Path = REPO, timeout: float = 300) -> Tuple[int, str, str]:
    """affidavit with args in cwd: its exit code, stdout and stderr."""
    p = engine(*args, cwd=cwd, timeout=timeout, workers=False)
    return p.returncode, p.stdout, p.stderr


def recorded(nodeid: str, *extra: str) -> Dict[str, Any]:
    """The --json document of an investigation of nodeid, which must have recorded an incident."""
    rc, data, err = investigate(nodeid, *extra, timeout=300, workers=False)
    assert rc in (1, 4), err
    assert isinstance(data["incident"], int) and data["incident"] > 0, (data.get("incident"), err)
    return data


@pytest.fixture(scope="module")
def lost_update() -> Dict[str, Any]:
    return recorded(LOST_UPDATE, "--fix")


def test_every_investigation_is_an_incident(lost_update: Dict[str, Any]) -> None:
    n = lost_update["incident"]
    rc, out, err = affidavit("ls", "--json")
    assert rc == 0, err
    rows = {r["incident"]: r for r in json.loads(out)}
    assert rows[n]["nodeid"] == LOST_UPDATE and rows[n]["verdict"] == "reproduced"
    assert rows[n]["runs"] == lost_update["natural"]["runs"]
    rc, out, err = affidavit("show", str(n), "--json")
    assert rc == 0, err
    stored = json.loads(out)
    assert stored["incident"] == n and stored["token"] == lost_update["token"]
    assert stored["cause"] == lost_update["cause"] and stored["fix"]["diff"] == lost_update["fix"]["diff"]
    rc, out, err = affidavit("show", str(n))
    assert rc == 0 and f"incident {n}" in out and "affidavit replay afd1:" in out, out + err
    assert re.search(r"runs:\s+\d+ stored; traces: failing passing", out), out
    # the HTML report was written with the incident, and is regenerated from the store alike
    report = REPO / ".affidavit" / "reports" / f"incident-{n}.html"
    assert report.exists()
    rc, out, err = affidavit("report", str(n), "--format", "html")
    assert rc == 0, err
    for section in ("verdict", "timeline", "evidence", "window", "gate", "tiers", "diff", "replay", "environment"):
        assert f'id="{section}"' in out, section
    assert "<script" not in out.lower() and "http://" not in out and "https://" not in out  # self-contained


def test_the_chrome_trace_has_every_step_of_the_run(lost_update: Dict[str, Any]) -> None:
    n = lost_update["incident"]
    for which in ("failing", "passing"):
        rc, out, err = affidavit("report", str(n), "--format", "chrome-trace", "--run", which)
        assert rc == 0, err
        events = json.loads(out)["traceEvents"]
        steps = [e for e in events if e["ph"] == "X"]
        names = {e["args"]["name"] for e in events if e["ph"] == "M"}
        assert steps and all(e["dur"] >= 0 and e["ts"] >= 0 for e in steps)
        assert "deposit#0" in names and "deposit#1" in names, names


def validate_sarif(text: str) -> Dict[str, Any]:
    schema = json.loads(SARIF_SCHEMA.read_text())
    doc = json.loads(text)
    jsonschema.validators.validator_for(schema)(schema).validate(doc)
    return doc


def test_sarif_validates_against_the_2_1_0_schema(lost_update: Dict[str, Any]) -> None:
    rc, out, err = affidavit("report", str(lost_update["incident"]), "--format", "sarif")
    assert rc == 0, err
    doc = validate_sarif(out)
    assert doc["version"] == "2.1.0"
    results = doc["runs"][0]["results"]
    located = [loc["physicalLocation"] for r in results for loc in r.get("locations", [])
               if "region" in loc.get("physicalLocation", {})]
    # the lost update's read and writes, at their source lines
    assert {(p["artifactLocation"]["uri"], p["region"]["startLine"]) for p in located} >= {
        ("examples/test_lost_update.py", 15), ("examples/test_lost_update.py", 18)}, located
    # an order violation too (another cause kind, its own rule)
    data = recorded("examples/test_taskgroup_read.py::test_report_is_finalized")
    rc, out, err = affidavit("report", str(data["incident"]), "--format", "sarif")
    assert rc == 0, err
    validate_sarif(out)


def test_markup_from_the_test_comes_out_inert() -> None:
    data = recorded(ESCAPE)
    assert data["verdict"] == "deterministic"
    n = data["incident"]
    rc, html, err = affidavit("report", str(n), "--format", "html")
    assert rc == 0, err
    assert "<script" not in html.lower()
    assert html.count("</svg>") == html.count("<svg"), "every </svg> in the page closes an <svg> of ours"
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "&lt;/svg&gt;" in html
    assert "&quot;" in html or "&#34;" in html
    for fmt in ("json", "sarif"):
        rc, out, err = affidavit("report", str(n), "--format", fmt)
        assert rc == 0, err
        assert "<script>alert(1)</script>" in json.dumps(json.loads(out), ensure_ascii=False)
    rc, out, err = affidavit("ls")
    assert rc == 0 and "<script>alert(1)</script>" in out  # a terminal shows the text as it is


def test_store_commands_refuse_bad_input(tmp_path: Path) -> None:
    rc, out, err = affidavit("show", "999999")
    assert rc == 2 and err.strip().count("\n") == 0 and "no incident 999999" in err, err
    rc, out, err = affidavit("report", "abc")
    assert rc == 2 and "not an incident number" in err
    rc, out, err = affidavit("report", "1", "--format", "pdf")
    assert rc == 2 and "--format" in err
    # an empty project: no incidents yet
    rc, out, err = affidavit("ls", cwd=tmp_path)
    assert rc == 0 and "no incidents yet" in out
    # a corrupt store and one from another schema version: one line each, no crash
    db = tmp_path / ".affidavit" / "incidents.db"
    db.write_bytes(b"this is not a database" * 100)
    rc, out, err = affidavit("ls", cwd=tmp_path)
    assert rc == 3 and err.count("\n") == 1 and "not an affidavit incident store" in err, err
    db.unlink()
    con = sqlite3.connect(db)
    con.execute("pragma user_version=7")
    con.commit()
    con.close()
    rc, out, err = affidavit("ls", cwd=tmp_path)
    assert rc == 3 and err.count("\n") == 1 and "7" in err and "1" in err, err


def test_committed_incidents_survive_sigkill(tmp_path: Path) -> None:
    stress = C_BUILD / "store_stress"
    db = tmp_path / "store" / "incidents.db"
    committed: List[int] = []
    rnd = random.Random(20261129)
    for _ in range(50):
        p = subprocess.Popen([str(stress), str(db), "1000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        time.sleep(rnd.uniform(0.02, 0.3))
        p.send_signal(signal.SIGKILL)
        out, err = p.communicate(timeout=30)
        assert p.returncode == -signal.SIGKILL, (p.returncode, err)
        committed += [int(x) for x in out.split()]
        if not db.exists():
            # killed before it made the store's directory: then it reported nothing committed either
            assert not committed, "an incident reported committed, but there is no store"
            continue
        con = sqlite3.connect(db)
        assert con.execute("pragma integrity_check").fetchone()[0] == "ok"
        # a kill before the first write made the schema leaves a database with no table yet: then
        # nothing was reported committed either, and the check below still says so
        tables = {r[0] for r in con.execute("select name from sqlite_master where type = 'table'")}
        stored = {r[0] for r in con.execute("select id from incidents")} if "incidents" in tables else set()
        con.close()
        assert set(committed) <= stored, "an incident reported committed is gone"
    assert len(committed) >= 50, "the kills should land among many writes"


def test_an_investigation_killed_at_any_moment_leaves_the_store_sound(tmp_path: Path) -> None:
    """The engine itself, SIGKILLed at random moments of `investigate` (the store write is its last
    act): the store stays sound and every incident a finished investigation reported is there."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_flaky.py").write_text((REPO / "examples" / "test_lost_update.py").read_text())
    rnd = random.Random(7)
    reported: List[int] = []
    for i in range(10):
        p = subprocess.Popen([AFFIDAVIT, "investigate", "test_flaky.py::test_concurrent_deposits", "--json",
                              "--natural", "10"], cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, start_new_session=True)
        try:
            out, _ = p.communicate(timeout=rnd.uniform(0.5, 3.0) if i % 3 else 120)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, _ = p.communicate(timeout=30)
        if p.returncode == 1:
            reported.append(json.loads(out)["incident"])
        db = project / ".affidavit" / "incidents.db"
        if db.exists():
            con = sqlite3.connect(db)
            assert con.execute("pragma integrity_check").fetchone()[0] == "ok"
            assert set(reported) <= {r[0] for r in con.execute("select id from incidents")}
            con.close()
    assert reported, "some investigations ran to the end"


def test_the_dashboard_in_a_browser(lost_update: Dict[str, Any]) -> None:
    n = lost_update["incident"]
    server = subprocess.Popen([AFFIDAVIT, "serve", "--port", "0"], cwd=REPO, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline() if server.stdout else ""
        m = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        assert m, line
        base = m.group(0)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)

        # the browser is not ours to sanitize: make test-asan's preloaded ASan runtime stays out of it
        browser_env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS")}

        def chromium(*args: str) -> str:
            p = subprocess.run(["chromium", "--headless=new", "--no-sandbox", "--disable-gpu",
                                "--hide-scrollbars", *args], capture_output=True, text=True, timeout=120,
                               env=browser_env)
            assert p.returncode == 0, p.stderr[-2000:]
            return p.stdout

        listing = chromium("--dump-dom", base)
        assert 'id="incidents"' in listing and f'href="/incident/{n}"' in listing
        page = chromium("--dump-dom", f"{base}incident/{n}")
        # the timeline with the outlined pair, the gate list and the tiers, as the browser built them
        assert re.search(r'<svg[^>]*class="timeline"', page), page[:2000]
        assert re.search(r'class="[^"]*\bpair\b', page)
        gate = page[page.index('id="gate"'):]
        assert gate.count("<li") >= 13 and "refused shortcut" in gate.lower()
        tiers = page[page.index('id="tiers"'):]
        assert "200" in tiers and "50" in tiers
        for width in (1280, 390):
            shot = ARTIFACTS / f"report-{width}.png"
            chromium(f"--window-size={width},2400", f"--screenshot={shot}", f"{base}incident/{n}")
            assert shot.exists() and shot.stat().st_size > 10_000
        shot = ARTIFACTS / "dashboard-1280.png"
        chromium("--window-size=1280,900", f"--screenshot={shot}", base)
        assert shot.exists()
        # loopback only, and nothing but GET
        assert os.path.exists("/proc/net/tcp")
        with open("/proc/net/tcp") as f:
            port_hex = f"{int(m.group(1)):04X}"
            listening = [l.split() for l in f if l.split()[1].endswith(":" + port_hex) and l.split()[3] == "0A"]
        assert listening and all(l[1].startswith("0100007F:") for l in listening), listening
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=30)
    assert server.returncode == 0
