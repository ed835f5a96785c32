"""The reports do not change: every golden document renders byte-for-byte as committed.

tests/data/report/ holds what build/c/report_render (afd_report_html, afd_report_sarif and
afd_report_chrome_trace) wrote for each golden document of tests/data/golden/ and for the
documents in tests/data/report/inputs/ (the C tests' fixtures, an empty document, one with every
key of the wrong type, and a partial one), rendered by the writers as they were before they read
the incident struct. A writer that changes one byte of a page fails here; a deliberate change of
a page regenerates the renders with REPORT_SAME_WRITE=1 and says why in its commit.
"""
import os
import subprocess
from pathlib import Path
from typing import List, Tuple

import pytest

from helpers import C_BUILD, REPO
RENDER = C_BUILD / "report_render"
EXPECTED = REPO / "tests" / "data" / "report"
GOLDEN = REPO / "tests" / "data" / "golden"

# (format, with traces built from the document, file suffix)
FORMATS = [("html", False, ".html"), ("sarif", False, ".sarif"), ("html", True, ".traces.html"),
           ("chrome-trace", True, ".chrome.json")]


def cases() -> List[Tuple[Path, str, bool, str]]:
    docs = sorted(GOLDEN.glob("*.json")) + sorted((EXPECTED / "inputs").glob("*.json"))
    return [(doc, fmt, traces, suffix) for doc in docs for fmt, traces, suffix in FORMATS]


def render(doc: Path, fmt: str, traces: bool) -> bytes:
    args = [str(RENDER), fmt, str(doc)] + (["--traces"] if traces else [])
    p = subprocess.run(args, capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr.decode()
    return p.stdout


def test_there_is_something_to_compare() -> None:
    assert len(sorted(GOLDEN.glob("*.json"))) >= 11
    assert len(sorted((EXPECTED / "inputs").glob("*.json"))) >= 5


@pytest.mark.parametrize("doc,fmt,traces,suffix", cases(), ids=lambda v: v.stem if isinstance(v, Path) else str(v))
def test_render_is_unchanged(doc: Path, fmt: str, traces: bool, suffix: str) -> None:
    got = render(doc, fmt, traces)
    want_path = EXPECTED / (doc.stem + suffix)
    if os.environ.get("REPORT_SAME_WRITE") == "1":
        want_path.write_bytes(got)
    want = want_path.read_bytes()
    if got != want:
        at = next(i for i in range(min(len(got), len(want)) + 1) if got[i:i + 1] != want[i:i + 1])
        pytest.fail(f"{want_path.name} differs at byte {at}: expected {want[max(0, at - 80):at + 80]!r}, "
                    f"got {got[max(0, at - 80):at + 80]!r}")
