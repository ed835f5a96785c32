#!/usr/bin/env bash
# Installs the interpreter of .venv-asan (make test-asan): `asan-python.sh VENV LIBASAN`.
#
# CPython is not built with ASan, and the ASan runtime must be the first library of a process for
# the instrumented extension to load, so VENV's python, python3 and python3.X become scripts that
# start the real interpreter (VENV/bin/python3.real) with LIBASAN preloaded and argv[0] kept, so
# that sys.executable, and with it the venv, stay what they were. A .pth file removes LD_PRELOAD
# from the environment once an interpreter has started: what Python starts (pgrep, sleep, a
# compiler, a browser) runs without the ASan runtime, and another Python of the venv preloads it
# again.
#
# Leak checking is off in those interpreters (detect_leaks=0) and back on for what they start: the
# suppressions (tests/lsan.supp) hide every allocation with a libpython frame, which is nearly
# every allocation a Python process makes, the extension's included, yet LeakSanitizer still scans
# the whole heap at each exit, about 0.9 s of CPU for a worker that imported pytest, and the suite
# starts thousands of them. The launcher keeps the caller's ASAN_OPTIONS in
# AFFIDAVIT_ASAN_OPTIONS and the .pth file puts them back, so the engine a test starts is
# leak-checked in full, as before. Idempotent.
set -euo pipefail
venv=$1 libasan=$2
bin="$venv/bin"
if [ ! -e "$bin/python3.real" ]; then
  ln -s "$(readlink -f "$bin/python3")" "$bin/python3.real"
fi
for name in python python3 $(cd "$bin" && ls | grep -E '^python3\.[0-9]+$' || true); do
  rm -f "$bin/$name"
  cat >"$bin/$name" <<LAUNCHER
#!/usr/bin/env bash
# written by scripts/asan-python.sh: the real interpreter, with the ASan runtime preloaded
here=\$(cd "\$(dirname "\${BASH_SOURCE[0]}")" && pwd)
export AFFIDAVIT_ASAN_OPTIONS="\${ASAN_OPTIONS-}"
ASAN_OPTIONS="\${ASAN_OPTIONS:+\$ASAN_OPTIONS:}detect_leaks=0" LD_PRELOAD='$libasan' \\
  exec -a "\$here/$name" "\$here/python3.real" "\$@"
LAUNCHER
  chmod +x "$bin/$name"
done
for site in "$venv"/lib/python3*/site-packages; do
  cat >"$site/affidavit_asan_preload.pth" <<'PTH'
import os; os.environ.pop("LD_PRELOAD", None); o = os.environ.pop("AFFIDAVIT_ASAN_OPTIONS", None); o is None or (os.environ.__setitem__("ASAN_OPTIONS", o) if o else os.environ.pop("ASAN_OPTIONS", None))
PTH
done
