#!/bin/bash
# usage: run20.sh <dir> <outfile> files...
dir=$1; out=$2; shift 2
cd "$dir"
: > "$out"
for f in "$@"; do
  pass=0
  for i in $(seq 1 20); do
    if /work/main/.venv/bin/python -m pytest -q -p no:cacheprovider -o asyncio_mode=strict "$f" >/dev/null 2>&1; then pass=$((pass+1)); fi
  done
  echo "$f $pass/20" >> "$out"
done
echo DONE >> "$out"
