"""Lost update or check-then-act, decided by what the source says each access does (pyscan's
roles): a flag both tasks set to the same literal after a stale check loses no value and is a
check-then-act, though no re-read precedes the write; a count read before an await and used to
build what is written after a re-read is a lost update, though the write re-reads. Run end to end
on un-annotated code (tests/cases/case_plain_lazy_flag.py, case_plain_stale_count.py)."""
from __future__ import annotations

import pytest

from helpers import investigate


def line_of(path: str, text: str) -> int:
    with open(path) as f:
        return next(i for i, line in enumerate(f, 1) if text in line)


CASES = [
    # (node id, kind, resource, the line of the read the cause names, its await's text)
    ("tests/cases/case_plain_lazy_flag.py::test_index_is_built_once", "check_then_act", "Index#0._ready",
     "if self._ready:", "await self._build()"),
    ("tests/cases/case_plain_stale_count.py::test_trim_keeps_new_entries", "lost_update", "Window#0.entries",
     "count = len(self.entries)", "keep = await self._live()"),
]


@pytest.mark.parametrize("nodeid,kind,resource,read_text,await_text", CASES,
                         ids=["lazy_flag", "stale_count"])
def test_the_kind_follows_what_was_lost(nodeid: str, kind: str, resource: str, read_text: str,
                                        await_text: str) -> None:
    rc, data, err = investigate(nodeid)
    assert rc == 1, err
    cause = data["cause"]
    assert cause is not None, data
    assert cause["kind"] == kind, cause
    assert cause["resource"] == resource, cause
    path = nodeid.split("::")[0]
    assert cause["operations"][0]["line"] == line_of(path, read_text), cause["operations"]
    assert cause["await_site"] == f"{path}:{line_of(path, await_text)}", cause
