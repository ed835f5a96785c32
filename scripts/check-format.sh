#!/usr/bin/env bash
# Checks (or, with --fix, rewrites) the formatting of every C source and header in src/, tests/c/
# and fuzz/ against .clang-format. Checking changes nothing and exits non-zero, listing each
# offending place, when a file differs from what clang-format would write.
#
# The formatter is pinned to Debian bookworm's clang-format-14 (installed by
# scripts/install-deps.sh): clang-format's output changes between major versions, so a check that
# took whichever clang-format is first on PATH would fail or pass depending on the machine.
# CLANG_FORMAT overrides it (at the risk of a different layout).
set -euo pipefail
cd "$(dirname "$0")/.."
CLANG_FORMAT=${CLANG_FORMAT:-clang-format-14}
if ! command -v "$CLANG_FORMAT" >/dev/null 2>&1; then
  echo "check-format: $CLANG_FORMAT not found (scripts/install-deps.sh installs it)" >&2
  exit 2
fi
mapfile -d '' files < <(find src tests/c fuzz -type f \( -name '*.c' -o -name '*.h' \) -print0 | sort -z)
if ((${#files[@]} == 0)); then
  echo "check-format: no C files found" >&2
  exit 2
fi
if [ "${1:-}" = "--fix" ]; then
  "$CLANG_FORMAT" --style=file -i "${files[@]}"
else
  "$CLANG_FORMAT" --style=file --dry-run -Werror "${files[@]}"
fi
