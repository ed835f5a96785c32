"""One engine for a whole pytest session: ``affidavit explore --stdin FILES...``.

Starting an engine starts its workers, and a worker imports pytest and collects before its first
run: about two seconds, against milliseconds for a run. So ``--affidavit-explore`` starts one
engine, on the first test it explores, whose workers collect every file of the session once; each
test to explore is then one line on the engine's stdin, answered by one JSON line on its stdout.

An engine that cannot start (a file that does not collect in a worker, say) gives its reason to
every test after; one that dies or overruns a test's time limit is stopped, that test gets the
reason, and the next test starts a fresh engine.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import tempfile
import time
from typing import Any, Dict, List, Optional


class EngineSession:
    def __init__(self, cmd: List[str], cwd: str, env: Dict[str, str], limit: float) -> None:
        self.cmd = cmd  # the engine's command line, the files to collect included
        self.cwd = cwd
        self.env = env
        self.limit = limit  # seconds one test's exploration may take
        self.proc: Optional[subprocess.Popen[bytes]] = None
        self.log: Optional[Any] = None  # the engine's stderr
        self.answered = 0  # tests the running engine has answered
        self.broken = ""  # why no engine can start: every later test is told
        self.buffer = b""

    def explore(self, nodeid: str) -> Dict[str, Any]:
        if self.broken:
            return {"error": self.broken}
        if self.proc is None:
            try:
                self._start()
            except OSError as exc:
                self.broken = f"the engine could not be started: {exc}"
                return {"error": self.broken}
        assert self.proc is not None and self.proc.stdin is not None
        try:
            self.proc.stdin.write(nodeid.encode() + b"\n")
            self.proc.stdin.flush()
        except OSError:
            pass  # it died: reading says how
        line = self._read_line(time.monotonic() + self.limit)
        if line is None:
            self.stop(graceful=False)
            return {"error": f"the exploration did not end within {self.limit:.0f} s"}
        if not line:
            return {"error": self._died()}
        self.answered += 1
        try:
            data: Dict[str, Any] = json.loads(line)
        except ValueError:
            return {"error": "the engine printed no result"}
        return data

    def _start(self) -> None:
        self.log = tempfile.TemporaryFile()
        self.buffer = b""
        self.answered = 0
        self.proc = subprocess.Popen(self.cmd, cwd=self.cwd, env=self.env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.log, start_new_session=True)

    def _read_line(self, deadline: float) -> Optional[bytes]:
        """The engine's next line; b"" when it closed its stdout; None past the deadline."""
        assert self.proc is not None and self.proc.stdout is not None
        out = self.proc.stdout
        with selectors.DefaultSelector() as sel:
            sel.register(out, selectors.EVENT_READ)
            while b"\n" not in self.buffer:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                if not sel.select(left):
                    continue
                chunk = os.read(out.fileno(), 65536)
                if not chunk:
                    return b""
                self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line

    def _died(self) -> str:
        """The reason an engine gave when it stopped answering; one that never answered cannot
        start, and says so to every later test."""
        assert self.proc is not None
        try:
            code = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            code = None
        text = ""
        if self.log is not None:
            self.log.seek(0)
            text = self.log.read().decode("utf-8", "replace")
        lines = [l[len("affidavit: error: "):] if l.startswith("affidavit: error: ") else l
                 for l in text.splitlines() if l.strip()]
        reason = lines[-1] if lines else f"the engine exited with code {code}"
        never = self.answered == 0
        self.stop()
        if never:
            self.broken = reason
        return reason

    def stop(self, graceful: bool = True) -> None:
        """Ends the engine: its stdin closed (it finishes and exits), then stopped with SIGTERM
        (it stops its workers and the runs in flight) if it lingers or is not graceful."""
        proc, self.proc = self.proc, None
        if proc is not None:
            try:
                if proc.stdin is not None:
                    proc.stdin.close()
            except OSError:
                pass
            try:
                proc.wait(timeout=5 if graceful else 0.001)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                    proc.wait(timeout=5)
                except (OSError, subprocess.TimeoutExpired):
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
        if self.log is not None:
            self.log.close()
            self.log = None
