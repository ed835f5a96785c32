#!/usr/bin/env bash
# make demo: investigate a bundled flaky example end to end -- how often it fails on its own, a
# schedule that makes it fail every time, that schedule shrunk to its collision window, and the
# cause in the code's terms, a fix gated and verified (the file is not touched). Run from the
# repository root with the project's .venv on PATH (the Makefile does both). The incident goes
# into .affidavit/incidents.db with its HTML report; the terminal text to .affidavit/demo/.
set -uo pipefail
node="${1:-examples/test_rare_flake.py::test_uses_fresh_token}"
dir=".affidavit/demo"
mkdir -p "$dir"
report="$dir/investigate.txt"

printf '== affidavit investigate %s\n\n' "$node"
affidavit investigate "$node" --fix | tee "$report"
rc=${PIPESTATUS[0]}
printf '\n== verdict\n'
case "$rc" in
  1) echo "   REPRODUCED ON DEMAND, minimized and explained (exit 1: a failure was reproduced)";;
  0) echo "   no failure found within the budget";;
  4) echo "   abstained: the failure depends on something affidavit does not control";;
  *) echo "   investigate failed (exit $rc)";;
esac
html=$(sed -n 's/.*; report: \(.*\.html\)$/\1/p' "$report" | tail -1)
echo "   report: ${html:-$report} (affidavit serve shows every incident in a browser)"
[ "$rc" = 1 ]
