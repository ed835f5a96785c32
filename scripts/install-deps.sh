#!/usr/bin/env bash
# Installs the Debian packages affidavit builds with (and chromium, which the report's browser test
# drives headless, and clang-format-14, the formatter scripts/check-format.sh is pinned to), if any
# is missing. Idempotent; quiet when everything is present. Python packages (into .venv) and the
# pinned tree-sitter-python grammar sources (npm ci --ignore-scripts, into node_modules/) are
# installed by the Makefile.
set -euo pipefail
need=()
for pkg in gcc libc6-dev pkg-config libtree-sitter-dev libsqlite3-dev zlib1g-dev libjansson-dev libmicrohttpd-dev chromium clang-format-14; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if ((${#need[@]})); then
  echo "installing Debian packages: ${need[*]}" >&2
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
# npm fetches the grammar sources. It usually comes with Node.js (here from NodeSource's nodejs
# package); only a machine without any npm gets Debian's.
if ! command -v npm >/dev/null 2>&1; then
  echo "installing Debian packages: npm" >&2
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq npm >/dev/null
fi
