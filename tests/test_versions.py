"""Every Python from 3.10 to 3.13 that this machine has (pyenv's, or python3.X on PATH): affidavit
built for it, its in-process suites (and the await-chain recording tests) run under it, and
`pytest --affidavit` finds, explains and fixes a lost update with it. The venvs live in build/ and
are reused, and rebuilt only when what the package is built from changed (BUILT_FROM)."""

from __future__ import annotations

import fcntl
import glob
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from helpers import REPO  # noqa: E402
from test_plugin import ALWAYS_LOSES  # noqa: E402  (one source for the lost update)


def interpreters() -> Dict[str, str]:
    found: Dict[str, str] = {}
    roots = [os.environ.get("PYENV_ROOT", ""), os.path.expanduser("~/.pyenv")]
    for minor in ("3.10", "3.11", "3.12", "3.13"):
        candidates: List[str] = []
        for root in filter(None, roots):
            candidates += sorted(glob.glob(os.path.join(root, "versions", f"{minor}.*", "bin", "python3")))
        on_path = shutil.which(f"python{minor}")
        if not candidates and on_path and "/shims/" not in on_path:  # a pyenv shim may point nowhere
            candidates.append(on_path)
        if candidates:
            found[minor] = candidates[-1]
    return found


INTERPRETERS = interpreters()


# What the package is built from: a venv whose build was made from the same bytes is not rebuilt
# (pip rebuilds and reinstalls the wheel whenever it is asked, ~30 s a Python, and every test that
# needs another Python asked, in every xdist worker, in make test and again in make test-asan).
BUILT_FROM = ("meson.build", "meson.options", "pyproject.toml", "src", "python")


def source_digest() -> str:
    h = hashlib.sha256()
    for top in BUILT_FROM:
        root = REPO / top
        files = [root] if root.is_file() else sorted(
            f for f in root.rglob("*") if f.is_file() and "__pycache__" not in f.parts)
        for f in files:
            h.update(str(f.relative_to(REPO)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def env_for(minor: str) -> Dict[str, str]:
    venv = REPO / "build" / f"py{minor}-venv"
    env = dict(os.environ, PATH=f"{venv / 'bin'}:{os.environ['PATH']}")
    env.pop("VIRTUAL_ENV", None)
    # The build (pip, meson, the compiler) is not what make test-asan checks: it runs without the
    # ASan runtime that suite preloads (a compiler's deliberate leaks would fail it).
    build_env = {k: v for k, v in env.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS", "LSAN_OPTIONS")}
    py = venv / "bin" / "python"
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f"py{minor}-venv.lock", "w") as lock:  # one build at a time, across workers
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not py.exists():
            subprocess.run([INTERPRETERS[minor], "-m", "venv", str(venv)], check=True, env=build_env)
            subprocess.run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--upgrade", "pip"],
                           check=True, env=build_env)
            subprocess.run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", "-r",
                            str(REPO / "requirements-dev.txt")], check=True, env=build_env)
        stamp, digest = venv / ".affidavit-built-from", source_digest()
        if not stamp.exists() or stamp.read_text() != digest:
            stamp.unlink(missing_ok=True)
            build_dir = REPO / "build" / f"py{minor}-build"
            p = subprocess.run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                                "--no-build-isolation", "--no-deps", f"-Cbuild-dir={build_dir}", str(REPO)],
                               capture_output=True, text=True, env=build_env)
            assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
            stamp.write_text(digest)
    return env


def test_the_machine_has_more_than_the_baseline() -> None:
    assert "3.11" in INTERPRETERS, INTERPRETERS
    assert len(INTERPRETERS) >= 2, f"only {sorted(INTERPRETERS)}: nothing to check compatibility against"


@pytest.mark.plain_build
@pytest.mark.parametrize("minor", sorted(m for m in INTERPRETERS if m != "3.11"))
def test_affidavit_under_every_python(minor: str, tmp_path: Path) -> None:
    env = env_for(minor)
    py = str(REPO / "build" / f"py{minor}-venv" / "bin" / "python")
    # the in-process suites: the controlled loop, the hooks, the line tracer, under this Python
    # (test_loop.py's TaskGroup programs use `except*`, which 3.10 cannot parse)
    suites = ["tests/test_hooks.py", "tests/test_tracer.py"] + (["tests/test_loop.py"] if minor != "3.10" else [])
    p = subprocess.run([py, "-m", "pytest", "-q", "-p", "no:cacheprovider", *suites], cwd=REPO, capture_output=True,
                       text=True, env=env, timeout=600)
    assert p.returncode == 0, p.stdout[-4000:]
    # the await chains the runtime records (its in-process tests: a suspension, an access and a
    # traced line through several user frames), under this Python's frames and coroutines
    chains = ["tests/test_await_chain.py", "-k", "records"]
    p = subprocess.run([py, "-m", "pytest", "-q", "-p", "no:cacheprovider", *chains], cwd=REPO,
                       capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0 and p.stdout.splitlines()[-1].startswith("3 passed"), p.stdout[-4000:]
    # the plugin on a project of its own, with this Python's pytest and engine
    (tmp_path / "test_always_loses.py").write_text(ALWAYS_LOSES)
    (tmp_path / "pyproject.toml").write_text('[tool.pytest.ini_options]\nasyncio_default_fixture_loop_scope = '
                                             '"function"\n')
    p = subprocess.run([py, "-m", "pytest", "--affidavit", "-q", "-p", "no:cacheprovider"], cwd=tmp_path,
                       capture_output=True, text=True, env=env, timeout=600)
    out = p.stdout + p.stderr
    assert p.returncode == 1, out
    summary = out[out.index("= affidavit ="):]
    assert "cause:    lost update on test_always_loses.BALANCE[\"amount\"]" in summary, summary
    assert "fix:      LOCK, verified" in summary, summary
    assert f"{minor}." in subprocess.run([py, "-c", "import platform; print(platform.python_version())"],
                                         capture_output=True, text=True).stdout
