#!/usr/bin/env bash
# Usage: run20.sh DIR OUTFILE file1.py [file2.py ...]
# Runs each test file 20 times (plain pytest, strict asyncio mode) from inside DIR
# and writes one "FILE passed/20" line per file to OUTFILE, then "DONE".
set -u
DIR="$1"; OUT="$2"; shift 2
PY=${PY:-/tmp/fc16venv/bin/python}
export PYTHONDONTWRITEBYTECODE=${PYTHONDONTWRITEBYTECODE:-1}
RUNS=${RUNS:-20}
OUT_ABS="$(cd "$(dirname "$OUT")" && pwd)/$(basename "$OUT")"
cd "$DIR" || exit 2
: > "$OUT_ABS"
for f in "$@"; do
  passed=0
  for _ in $(seq 1 "$RUNS"); do
    if nice -n 19 "$PY" -m pytest -p no:affidavit -p no:cacheprovider \
         -o asyncio_mode=strict -q "$f" >/dev/null 2>&1; then
      passed=$((passed + 1))
    fi
  done
  echo "$f $passed/$RUNS" >> "$OUT_ABS"
done
echo DONE >> "$OUT_ABS"
