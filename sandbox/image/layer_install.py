"""Runs in a package layer's install stage (standard library only, as root).

pip (run from its wheel, so it is never installed) installs the flow's requirements into
/opt/venv offline, constrained to the base image's pins; then the files that appeared are
copied to /layer, which the final stage copies over the base. A file of the base that the
install would change is an error: the base's packages stay exactly as pinned.
"""

import os
import shutil
import subprocess
import sys

VENV = "/opt/venv"
LAYER = "/layer"
BUILD = "/build"


def files() -> dict[str, tuple[int, int, int]]:
    found = {}
    for dirpath, dirs, names in os.walk(VENV):
        links = [d for d in dirs if os.path.islink(os.path.join(dirpath, d))]
        for name in names + links:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            found[path] = (st.st_size, st.st_mtime_ns, st.st_mode)
    return found


def main() -> int:
    before = files()
    cmd = [sys.executable, f"{BUILD}/pip.whl/pip", "install", "--no-index", "--no-cache-dir"]
    cmd += ["--disable-pip-version-check", "--no-warn-script-location", "--progress-bar", "off"]
    cmd += ["--find-links", f"{BUILD}/wheels", "-c", f"{BUILD}/constraints.txt"]
    cmd += ["-r", f"{BUILD}/requirements.txt"]
    if subprocess.run(cmd).returncode != 0:
        return 1
    after = files()
    changed = sorted(p for p in before if after.get(p) != before[p] and "__pycache__" not in p)
    if changed:
        print("the packages would change the sandbox image's own files:", *changed[:5])
        return 1
    os.makedirs(LAYER, exist_ok=True)
    for path in sorted(set(after) - set(before)):
        dest = LAYER + path
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copy2(path, dest, follow_symlinks=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
