#!/usr/bin/env bash
# Installs the Debian packages affidavit builds with, if any is missing. Idempotent; quiet when
# everything is present. Python packages are installed by the Makefile into .venv.
set -euo pipefail
need=()
for pkg in gcc libc6-dev pkg-config; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if ((${#need[@]})); then
  echo "installing Debian packages: ${need[*]}" >&2
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
