#!/usr/bin/env bash
# Creates build/bench-env, the environment the peer tools are measured in (bench/peers.py), and
# prints its interpreter's path on stdout. Idempotent: an existing env whose interpreter works and
# whose installed requirements match bench/requirements-peers.txt is left as it is.
#
# simloop and simloom require Python >= 3.12, so the env is a venv of the first of these that runs
# and is >= 3.12: python3.13, python3.12 on PATH (a pyenv shim that is not active counts as absent),
# then ~/.pyenv/versions/3.1[23]*/bin/python3.1[23]. With none, it says so in one line on stderr,
# prints nothing and exits 0: the bench then reports the peers as not measured.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ENV="$ROOT/build/bench-env"
REQ="$ROOT/bench/requirements-peers.txt"
STAMP="$ENV/.requirements-peers.sha256"

is_312() {  # runs, and is >= 3.12
  "$1" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' >/dev/null 2>&1
}

find_python() {
  local name p
  for name in python3.13 python3.12; do
    p="$(command -v "$name" 2>/dev/null)" || continue
    if is_312 "$p"; then "$p" -c 'import sys; print(sys.executable)'; return 0; fi
  done
  for p in "$HOME"/.pyenv/versions/3.1[23]*/bin/python3.1[23]; do
    if [ -x "$p" ] && is_312 "$p"; then "$p" -c 'import sys; print(sys.executable)'; return 0; fi
  done
  return 1
}

want="$(sha256sum "$REQ" | cut -d' ' -f1)"
if [ -x "$ENV/bin/python" ] && is_312 "$ENV/bin/python" && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; then
  echo "$ENV/bin/python"
  exit 0
fi

if ! base="$(find_python)"; then
  echo "bench-env: no Python >= 3.12 (python3.13, python3.12, ~/.pyenv/versions/3.1[23]*): peers not measured" >&2
  exit 0
fi

if ! { [ -x "$ENV/bin/python" ] && is_312 "$ENV/bin/python"; }; then
  rm -rf "$ENV"
  mkdir -p "$(dirname "$ENV")"
  echo "bench-env: creating $ENV with $base" >&2
  "$base" -m venv "$ENV"
fi
echo "bench-env: installing bench/requirements-peers.txt" >&2
"$ENV/bin/python" -m pip install -q --disable-pip-version-check -r "$REQ" >&2
echo "$want" > "$STAMP"
echo "$ENV/bin/python"
