#!/usr/bin/env bash
# make demo: investigate a bundled flaky example end to end: how often it fails on its own, a
# schedule that makes it fail, and that schedule replayed. Run from the repository root with the
# project's .venv on PATH (the Makefile does both). The evidence goes to .affidavit/demo/.
set -uo pipefail
node="examples/test_rare_flake.py::test_uses_fresh_token"
dir=".affidavit/demo"
mkdir -p "$dir"
say() { printf '\n== %s\n' "$*"; }
field() { python -c 'import json,sys; d=json.load(open(sys.argv[1])); v=d[sys.argv[2]]; print("" if v is None else v)' "$@"; }

say "1. how often does $node fail on its own? (100 natural runs)"
affidavit sample "$node" -n 100 --json > "$dir/sample.json"
echo "   $(field "$dir/sample.json" failed) of $(field "$dir/sample.json" runs) runs failed (95% CI upper bound $(python -c 'import json;print("%.1f%%" % (100*json.load(open(".affidavit/demo/sample.json"))["ci95"][1]))'))"

say "2. search for a schedule that makes it fail (the controlled loop, a portfolio of strategies)"
affidavit explore "$node" --runs 500 --json > "$dir/explore.json"
token=$(field "$dir/explore.json" token)
if [ -z "$token" ]; then echo "   no failing schedule within 500 runs"; exit 1; fi
echo "   found after $(field "$dir/explore.json" runs) runs: $(field "$dir/explore.json" schedule)"
echo "   failure: $(field "$dir/explore.json" failure)"
echo "   token:   $token"

say "3. replay that token 10 times"
affidavit replay "$token" "$node" -n 10 --json > "$dir/replay.json"
rc=$?
echo "   $(field "$dir/replay.json" failed)/$(field "$dir/replay.json" runs) failed, identical traces: $(field "$dir/replay.json" identical_traces)"

say "verdict"
if [ "$rc" = 1 ]; then
  echo "   REPRODUCED ON DEMAND: a flake that failed $(field "$dir/sample.json" failed) times in $(field "$dir/sample.json" runs) natural runs"
  echo "   fails every time under: affidavit replay $token $node"
  echo "   evidence: $dir/sample.json, $dir/explore.json, $dir/replay.json"
  exit 0
fi
echo "   replay did not reproduce the failure deterministically (exit $rc); evidence in $dir/"
exit 1
