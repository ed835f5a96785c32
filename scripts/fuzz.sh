#!/usr/bin/env bash
# scripts/fuzz.sh [SECONDS [TARGET...]]: real fuzzing runs of the decoders of untrusted input with
# libFuzzer, ASan and UBSan. Each target (default: token trace proto udiff pyscan) is built with
# clang from fuzz/fuzz_TARGET.c and the src/lib/*.c files it needs, then runs for SECONDS (default
# 600) on a fresh copy of its seed corpus fuzz/corpus/TARGET in build/fuzz/corpus/TARGET, which
# keeps what libFuzzer adds. Crash inputs go to build/fuzz/artifacts/, logs to build/fuzz/TARGET.log,
# and one summary line per target ends the output. FUZZ_JOBS (default 2) targets run at once.
#
# A crash reproduces with `build/fuzz/fuzz_TARGET ARTIFACT`. Once the bug is fixed, copy the input
# to fuzz/corpus/TARGET/regress-WHAT so that the plain-main replay (meson test --suite c) keeps
# covering it. Installs clang with apt-get when it is missing. Run from anywhere; exit status 1 when
# any target crashed or failed to build.
set -uo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-600}"
shift $(($# > 0 ? 1 : 0))
targets=("$@")
((${#targets[@]})) || targets=(token trace proto udiff pyscan)
jobs="${FUZZ_JOBS:-2}"
out=build/fuzz
art="$out/artifacts"

if ! command -v clang >/dev/null 2>&1; then
  echo "installing clang" >&2
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq clang >/dev/null || exit 1
fi
mkdir -p "$out" "$art"

san=(-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all)
cflags=(-std=c11 -D_GNU_SOURCE -DAFD_LIBFUZZER -g -O1 -Isrc/lib -Wall -Wextra -Werror -Wno-unused-parameter)

# The library sources each target links; everything else of src/lib stays out so that a target
# does not pull SQLite or jansson in.
lib_sources() {
  case "$1" in
    token) echo src/lib/afd.c src/lib/buf.c src/lib/token.c ;;
    trace) echo src/lib/afd.c src/lib/buf.c src/lib/token.c src/lib/trace.c ;;
    proto) echo src/lib/afd.c src/lib/buf.c src/lib/trace.c src/lib/token.c src/lib/proto.c ;;
    udiff) echo src/lib/afd.c src/lib/buf.c src/lib/udiff.c ;;
    pyscan) echo src/lib/afd.c src/lib/buf.c src/lib/pysrc.c src/lib/pyscan.c ;;
    *) return 1 ;;
  esac
}

# The tree-sitter-python grammar is generated code, not ours: built once, instrumented (so the
# fuzzer sees its coverage and ASan its memory) but without our warning flags.
grammar() {
  local g=node_modules/tree-sitter-python/src
  [ -f "$g/parser.c" ] || { echo "fuzz.sh: $g/parser.c missing (run make deps)" >&2; return 1; }
  if [ ! -f "$out/ts-python.a" ] || [ "$g/parser.c" -nt "$out/ts-python.a" ]; then
    clang -std=c11 -g -O1 -w -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all \
      -I"$g" -c "$g/parser.c" -o "$out/ts-parser.o" &&
      clang -std=c11 -g -O1 -w -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all \
        -I"$g" -c "$g/scanner.c" -o "$out/ts-scanner.o" &&
      ar rcs "$out/ts-python.a" "$out/ts-parser.o" "$out/ts-scanner.o"
  fi
}

build() {
  local t="$1" extra=()
  local src
  src=$(lib_sources "$t") || { echo "fuzz.sh: unknown target $t" >&2; return 1; }
  if [ "$t" = pyscan ]; then
    grammar || return 1
    extra=("$out/ts-python.a" -ltree-sitter)
  fi
  # shellcheck disable=SC2086 # src is a list of paths without blanks
  clang "${cflags[@]}" "${san[@]}" "fuzz/fuzz_$t.c" $src "${extra[@]}" -o "$out/fuzz_$t"
}

# Runs one target; its summary fields go to build/fuzz/TARGET.summary for the table at the end.
run() {
  local t="$1" corpus="$out/corpus/$1" log="$out/$1.log"
  rm -rf "$corpus"
  mkdir -p "$corpus"
  cp "fuzz/corpus/$t"/* "$corpus"/
  local before start end
  before=$(find "$corpus" -type f | wc -l)
  rm -f "$art/fuzz_$t-"*
  start=$(date +%s)
  "$out/fuzz_$t" "$corpus" -max_total_time="$seconds" -print_final_stats=1 -timeout=10 \
    -artifact_prefix="$art/fuzz_$t-" >"$log" 2>&1
  local rc=$?
  end=$(date +%s)
  local execs rate after crashes
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  after=$(find "$corpus" -type f | wc -l)
  crashes=$(find "$art" -name "fuzz_$t-*" -type f | sort | tr '\n' ' ')
  printf 'fuzz_%s: %s s, %s execs, %s exec/s, corpus %s -> %s, exit %s, crashes: %s\n' \
    "$t" "$((end - start))" "${execs:-?}" "${rate:-?}" "$before" "$after" "$rc" "${crashes:-0}" \
    >"$out/$t.summary"
}

status=0
for t in "${targets[@]}"; do
  echo "building fuzz_$t" >&2
  rm -f "$out/$t.summary" "$out/fuzz_$t"
  if ! build "$t"; then
    echo "fuzz_$t: build failed" >"$out/$t.summary"
    status=1
  fi
done

echo "fuzzing ${targets[*]} for $seconds s each, $jobs at a time" >&2
running=0
for t in "${targets[@]}"; do
  [ -x "$out/fuzz_$t" ] || continue
  if ((running >= jobs)); then
    wait -n
    running=$((running - 1))
  fi
  run "$t" &
  running=$((running + 1))
done
wait

echo "== summary (logs and corpora in $out/, crash inputs in $art/)"
for t in "${targets[@]}"; do
  if [ -f "$out/$t.summary" ]; then
    cat "$out/$t.summary"
    grep -q 'crashes: 0$' "$out/$t.summary" || status=1
  else
    echo "fuzz_$t: no result"
    status=1
  fi
done
exit "$status"
