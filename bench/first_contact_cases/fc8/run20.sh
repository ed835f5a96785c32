#!/usr/bin/env bash
# Usage: run20.sh DIR OUTFILE file1.py [file2.py ...]
# Runs every file 20 times with plain pytest from inside DIR and writes one
# "FILE passed/20" line per file to OUTFILE, followed by "DONE".
set -u
if [ "$#" -lt 3 ]; then
    echo "usage: $0 DIR OUTFILE files..." >&2
    exit 2
fi
DIR=$1
OUT=$2
shift 2
case "$OUT" in
    /*) ;;
    *) OUT="$PWD/$OUT" ;;
esac
PY=/work/main/.venv/bin/python
RUNS=${RUNS:-20}
cd "$DIR" || exit 2
: > "$OUT"
for f in "$@"; do
    f=${f#"$DIR"/}
    passed=0
    for _ in $(seq 1 "$RUNS"); do
        if timeout 600 "$PY" -m pytest -q -p no:cacheprovider -o asyncio_mode=strict "$f" \
            > /dev/null 2>&1; then
            passed=$((passed + 1))
        fi
    done
    echo "$f $passed/$RUNS" >> "$OUT"
done
echo DONE >> "$OUT"
