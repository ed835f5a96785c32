"""Readable causes: what a report says names what the user wrote and what is known, nothing else.

- task and callback labels are the functions written in the test's code, never
  functools.partial or a caching wrapper's __call__ (tests/cases/case_labels.py);
- a standard-library frame is shown as asyncio/timeouts.py:115, relative to the stdlib, not as a
  walk up from the project (tests/cases/case_stdlib_frame.py);
- an unknown place is left out or said in words, never "?" (tests/cases/case_unknown_await.py);
- `affidavit check` finds a method a class inherits (same module, another project module, an
  installed package's base left to the harness), and a failure that replays every time is
  reproduced even when the traces differ, never ABSTAINED beside "replayed: 10/10 failed".

Each output is checked in investigate's text and JSON, the HTML report and `affidavit show`.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

from helpers import CASES, REPO, describe, engine

LABELS = f"{CASES}/case_labels.py"
STDLIB = f"{CASES}/case_stdlib_frame.py::test_reply_within_timeout"
UNKNOWN = f"{CASES}/case_unknown_await.py::test_callback_reads_after_prepare"
TARGETS = f"{CASES}/check_targets.py"
# Placeholders a reader must never see where a place or a name belongs.
PLACEHOLDER = re.compile(r"at \?|: \?(\s|$)|\(\?\)|\?:\d|^\s*\w+:\s+\?\s*$", re.M)


# An investigation takes a while on a loaded machine; every call here gets the same bound.
TIMEOUT = 240.0


def investigate_and_show(nodeid: str) -> Tuple[Dict[str, Any], str, str]:
    """The JSON of one investigation, the text of `show` for its incident, and its HTML report."""
    proc = engine("investigate", nodeid, "--json", timeout=TIMEOUT)
    assert proc.returncode == 1, describe(proc)
    data = json.loads(proc.stdout)
    shown = engine("show", str(data["incident"]), timeout=TIMEOUT, workers=False)
    assert shown.returncode == 0, describe(shown)
    html = (REPO / data["report"]).read_text()
    return data, shown.stdout, html


def investigate_text(nodeid: str) -> str:
    proc = engine("investigate", nodeid, timeout=TIMEOUT)
    assert proc.returncode == 1, describe(proc)
    return proc.stdout


def task_labels(data: Dict[str, Any]) -> List[str]:
    ops = list(data["cause"]["operations"])
    for race in data.get("races") or []:
        ops += race["operations"]
    return [op["task"] for op in ops if "task" in op]


# ---- labels ----


def test_partial_callbacks_are_labelled_by_the_function_they_call() -> None:
    nodeid = f"{LABELS}::test_partial_callbacks"
    data, shown, html = investigate_and_show(nodeid)
    text = investigate_text(nodeid)
    labels = set(task_labels(data))
    # partial(bump, ...) and partial(meter.add, ...) are two callbacks, each named for its function
    assert {"bump", "Meter.add"} <= labels, labels
    for out in (json.dumps(data), shown, html, text):
        assert "functools.partial" not in out and "partial#" not in out, out
    assert "bump writes it" in data["cause"]["summary"], data["cause"]
    assert "bump writes it" in text and "bump writes it" in shown and "bump writes it" in html


def test_a_wrapper_objects_coroutines_are_labelled_by_the_wrapped_function() -> None:
    nodeid = f"{LABELS}::test_wrapped_coroutine_tasks"
    data, shown, html = investigate_and_show(nodeid)
    labels = task_labels(data)
    assert labels and all(label.startswith("fetch_count#") for label in labels), labels
    for out in (json.dumps(data), shown, html):
        assert "__call__" not in out and "_Wrapper" not in out, out


def test_partials_of_bound_methods_keep_the_method_name() -> None:
    """A guard (it passed before labels.c too): a task made from a partial of a bound method is
    named by the method, since the coroutine is the method's."""
    data, shown, _ = investigate_and_show(f"{LABELS}::test_partial_and_bound_method_tasks")
    labels = task_labels(data)
    assert labels and all(label.startswith("Cache.get#") for label in labels), labels
    assert "functools.partial" not in shown


# ---- library frames ----


def test_a_stdlib_frame_is_shown_relative_to_the_stdlib() -> None:
    proc = engine("investigate", STDLIB, "--json", timeout=TIMEOUT)
    assert proc.returncode == 1, describe(proc)
    data = json.loads(proc.stdout)
    assert re.match(r"asyncio/(timeouts|tasks)\.py:\d+: TimeoutError", data["failure"]), data["failure"]
    html = (REPO / data["report"]).read_text()
    shown = engine("show", str(data["incident"]), timeout=TIMEOUT, workers=False).stdout
    replayed = engine("replay", data["token"], STDLIB, "-n", "2", timeout=TIMEOUT)
    for out in (proc.stdout, html, shown, replayed.stdout):
        assert "../" not in out, out
    for out in (html, replayed.stdout):  # show prints no failure text
        assert re.search(r"asyncio/(timeouts|tasks)\.py:\d+: TimeoutError", out), out


def test_the_runtime_shows_library_paths_relative_to_their_directory() -> None:
    import asyncio
    import sysconfig

    from affidavit import _runtime

    assert _runtime.library_path(asyncio.__file__) == "asyncio/__init__.py"
    purelib = sysconfig.get_paths()["purelib"]
    assert _runtime.library_path(f"{purelib}/pytest/__init__.py") == "pytest/__init__.py"  # not python3.x/site-...
    assert _runtime.library_path(str(REPO / "tests" / "test_cli.py")) is None
    assert _runtime.library_path(sysconfig.get_paths()["stdlib"]) is None  # the directory itself is no file of it


# ---- unknown places ----


def test_an_order_violation_without_an_await_says_what_ran_instead_of_a_placeholder() -> None:
    data, shown, html = investigate_and_show(UNKNOWN)
    text = investigate_text(UNKNOWN)
    cause = data["cause"]
    assert cause["kind"] == "order_violation", cause
    assert "?" not in cause["summary"], cause
    assert "look is a loop callback" in cause["summary"], cause
    assert cause["await_site"] is None, cause
    for out in (text, shown, html):
        assert not PLACEHOLDER.search(out), out
        assert "look is a loop callback" in out, out
    assert "await:" not in text, text


# ---- check ----


def check(*args: str, cwd: Path = REPO, json_out: bool = True) -> "subprocess.CompletedProcess[str]":
    return engine("check", *args, "--calls", "5", "--natural", "10", *(("--json",) if json_out else ()), cwd=cwd,
                  timeout=TIMEOUT)


def test_check_accepts_a_method_inherited_from_a_base_in_the_same_module() -> None:
    proc = check(TARGETS, "--cls", "MemoryCounter", "--method", "increment")
    assert proc.returncode == 1, describe(proc)
    data = json.loads(proc.stdout)
    assert data["verdict"] == "reproduced" and data["cause"]["kind"] == "lost_update", data


def write_project(root: Path) -> None:
    pkg = root / "store"
    (pkg / "backends").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "backends" / "__init__.py").write_text("")
    (pkg / "base.py").write_text(
        "import asyncio\n\n\nclass BaseCache:\n    def __init__(self) -> None:\n        self.hits = 0\n\n"
        "    async def increment(self, key: str) -> None:\n        seen = self.hits\n"
        "        await asyncio.sleep(0)\n        self.hits = seen + 1\n\n    def plain(self) -> None:\n        pass\n"
    )
    (pkg / "backends" / "memory.py").write_text(
        "import json\nfrom store.base import BaseCache\nfrom .. import base\nimport store.base\n\n\n"
        "class SimpleMemoryBackend(BaseCache):\n    pass\n\n\nclass SimpleMemoryCache(SimpleMemoryBackend):\n    pass\n\n\n"
        "class Relative(base.BaseCache):\n    pass\n\n\nclass Dotted(store.base.BaseCache):\n    pass\n\n\n"
        "class Decoder(json.JSONDecoder):\n    pass\n\n\nclass Mapping(dict):\n    pass\n"
    )


@pytest.mark.parametrize("cls", ["SimpleMemoryCache", "Relative", "Dotted"])
def test_check_accepts_a_method_inherited_from_another_project_module(tmp_path: Path, cls: str) -> None:
    write_project(tmp_path)
    proc = check("store/backends/memory.py", "--cls", cls, "--method", "increment", "--args", "'k'", cwd=tmp_path)
    assert proc.returncode == 1, describe(proc)
    data = json.loads(proc.stdout)
    assert data["verdict"] == "reproduced", data
    assert "not serializable" in data["failure"], data


def test_check_reads_an_inherited_methods_own_definition(tmp_path: Path) -> None:
    write_project(tmp_path)
    proc = check("store/backends/memory.py", "--cls", "SimpleMemoryCache", "--method", "increment", cwd=tmp_path)
    assert proc.returncode == 2, describe(proc)
    assert "needs arguments (key)" in proc.stderr, describe(proc)
    proc = check("store/backends/memory.py", "--cls", "SimpleMemoryCache", "--method", "plain", cwd=tmp_path)
    assert proc.returncode == 2, describe(proc)
    assert "SimpleMemoryCache inherits it from BaseCache: store/base.py, line 13" in proc.stderr, describe(proc)


def test_check_names_the_bases_it_searched_and_leaves_installed_ones_to_python(tmp_path: Path) -> None:
    write_project(tmp_path)
    proc = check("store/backends/memory.py", "--cls", "SimpleMemoryCache", "--method", "nope", cwd=tmp_path)
    assert proc.returncode == 2, describe(proc)
    assert "has no method nope, nor do its bases (SimpleMemoryBackend)" in proc.stderr, describe(proc)
    proc = check("store/backends/memory.py", "--cls", "Mapping", "--method", "nope", cwd=tmp_path)
    assert proc.returncode == 2 and "has no method nope" in proc.stderr, describe(proc)
    # json.JSONDecoder is outside the project: the harness's import (Python's MRO) decides, and a
    # method it does not have is still one line and exit code 2
    proc = check("store/backends/memory.py", "--cls", "Decoder", "--method", "nope", cwd=tmp_path)
    assert proc.returncode == 2, describe(proc)
    assert proc.stderr.startswith("affidavit: error: ") and "has no method nope" in proc.stderr, describe(proc)


def test_a_failure_that_replays_every_time_is_reproduced_even_when_traces_differ() -> None:
    proc = check(TARGETS, "--cls", "StampedCounter", "--method", "bump", json_out=False)
    assert proc.returncode == 1, describe(proc)
    assert "ABSTAINED" not in proc.stdout and "REPRODUCED" in proc.stdout, proc.stdout
    assert re.search(r"replayed: (\d+)/\1 failed", proc.stdout), proc.stdout
    assert "the traces differ between replays" in proc.stdout and "wall-clock read" in proc.stdout, proc.stdout
    proc = check(TARGETS, "--cls", "StampedCounter", "--method", "bump")
    assert proc.returncode == 1, describe(proc)
    data = json.loads(proc.stdout)
    assert data["verdict"] == "reproduced", data
    assert data["replay"]["failed"] == data["replay"]["runs"] == 10, data["replay"]
    assert data["replay"]["identical_traces"] is False, data["replay"]
    assert data["cause"]["kind"] == "lost_update", data["cause"]
