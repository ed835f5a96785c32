#!/usr/bin/env bash
# Installs the interpreter of .venv-asan (make test-asan): `asan-python.sh VENV LIBASAN`.
#
# CPython is not built with ASan, and the ASan runtime must be the first library of a process for
# the instrumented extension to load, so VENV's python, python3 and python3.X become scripts that
# start the real interpreter (VENV/bin/python3.real) with LIBASAN preloaded and argv[0] kept, so
# that sys.executable, and with it the venv, stay what they were. A .pth file removes LD_PRELOAD
# from the environment once an interpreter has started: what Python starts (pgrep, sleep, a
# compiler, a browser) runs without the ASan runtime, and another Python of the venv preloads it
# again. Idempotent.
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
LD_PRELOAD='$libasan' exec -a "\$here/$name" "\$here/python3.real" "\$@"
LAUNCHER
  chmod +x "$bin/$name"
done
for site in "$venv"/lib/python3*/site-packages; do
  echo 'import os; os.environ.pop("LD_PRELOAD", None)' >"$site/affidavit_asan_preload.pth"
done
