"""``python -m affidavit`` runs the engine that was installed beside this package."""

from __future__ import annotations

import os
import shutil
import sys


def main() -> None:
    exe = os.path.join(os.path.dirname(sys.executable), "affidavit")
    if not os.path.exists(exe):
        exe = shutil.which("affidavit") or exe
    os.execv(exe, [exe, *sys.argv[1:]])


if __name__ == "__main__":
    main()
