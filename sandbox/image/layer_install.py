"""Runs in a package layer's install stage (standard library only, as root).

pip (run from its wheel, so it is never installed) installs the flow's requirements offline,
constrained to the base image's pins, into their own prefix ``/opt/flow``, never into the
image's ``/opt/venv``: the kernel server runs only the image's own code, and only a kernel
that took uid 1000 puts the flow's packages on its path (``sandbox/zygote.py``). One file is
added to the image's packages, ``praxis-flow.pth``: it does the same for every Python process
that is not root's (a phase's subprocesses). A file of the base that the install would
change is an error: the base's packages stay exactly as pinned. The files of ``/opt/flow`` and
that one file are copied to /layer, which the final stage copies over the base.
"""

import os
import shutil
import subprocess
import sys

VENV = "/opt/venv"
FLOW = "/opt/flow"
LAYER = "/layer"
BUILD = "/build"
SITE = f"lib/python{sys.version_info[0]}.{sys.version_info[1]}/site-packages"
# Root never runs it: the flow's site folder (and its .pth hooks) only for other uids.
HOOK = (
    f"import os, site; os.getuid() and os.geteuid() and os.path.isdir({FLOW + '/' + SITE!r}) "
    f"and site.addsitedir({FLOW + '/' + SITE!r})\n"
)


def files(root: str) -> dict[str, tuple[int, int, int]]:
    found = {}
    for dirpath, dirs, names in os.walk(root):
        links = [d for d in dirs if os.path.islink(os.path.join(dirpath, d))]
        for name in names + links:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            found[path] = (st.st_size, st.st_mtime_ns, st.st_mode)
    return found


def main() -> int:
    before = files(VENV)
    cmd = [sys.executable, f"{BUILD}/pip.whl/pip", "install", "--no-index", "--no-cache-dir"]
    cmd += ["--disable-pip-version-check", "--no-warn-script-location", "--progress-bar", "off"]
    cmd += ["--find-links", f"{BUILD}/wheels", "-c", f"{BUILD}/constraints.txt"]
    cmd += ["--prefix", FLOW, "-r", f"{BUILD}/requirements.txt"]
    if subprocess.run(cmd).returncode != 0:
        return 1
    after = files(VENV)
    changed = sorted(p for p in set(before) | set(after) if after.get(p) != before.get(p))
    changed = [p for p in changed if "__pycache__" not in p]
    if changed:
        print("the packages would change the sandbox image's own files:", *changed[:5])
        return 1
    hook = f"{VENV}/{SITE}/praxis-flow.pth"
    os.makedirs(os.path.dirname(LAYER + hook), exist_ok=True)
    with open(LAYER + hook, "w") as f:
        f.write(HOOK)
    if os.path.isdir(FLOW):
        shutil.copytree(FLOW, LAYER + FLOW, symlinks=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
