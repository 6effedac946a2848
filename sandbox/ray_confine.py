"""The confinement of the Ray bridge (``sandbox/ray_bridge.py``), with bubblewrap.

The bridge unpickles what the cluster sends, so it runs as if that were hostile code: in
its own pid, ipc and uts namespaces with every capability dropped and no new privileges,
in a mount namespace that holds only the system's programs and libraries (read-only), the
Python it runs and the ``sandbox`` package (read-only), a few files of ``/etc`` that name
resolution and TLS need, an empty ``/tmp`` as its home, and, for a driver on a node of the
cluster, Ray's own session folder (``/tmp/ray`` or ``$RAY_TMPDIR``). Not there: the person's
home and profile, run folders, flow folders, the Docker socket. Its environment is only
``PATH``, the locale and Ray's own variables. It keeps the network: it must reach the
cluster (and so can reach what the host's network reaches, which is its one limit).

A driver (an address that is not ``ray://``) joins the Ray node of this machine, which Ray
finds by listing its processes: it sees ``/proc`` read-only, as any unprivileged user does
(without capabilities it reads no other process's memory, environment or files, and signals
none: they are outside its pid namespace), and binds Ray's session folder to reach its
sockets. A ``ray://`` client sees neither.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path

from .ray_cluster import RayUnavailable

ETC = (
    "resolv.conf", "hosts", "nsswitch.conf", "gai.conf", "host.conf", "services",
    "protocols", "passwd", "group", "localtime", "ld.so.cache", "ld.so.conf",
    "ld.so.conf.d", "ssl", "ca-certificates", "pki", "crypto-policies",
)  # fmt: skip
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
KEEP_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ")
HOME = "/tmp"
INSTALL = "apt-get install bubblewrap (or your system's bubblewrap package)"


def bwrap() -> str:
    """The bubblewrap program; RayUnavailable with the install command when it is missing."""
    found = shutil.which("bwrap")
    if found is None:
        raise RayUnavailable(
            "the ray backend confines its Ray connection with bubblewrap, which is not "
            f"installed here: {INSTALL}"
        )
    return found


def command(
    address: str, environ: Mapping[str, str] | None = None
) -> tuple[list[str], dict[str, str]]:
    """The argv and environment that start the bridge for the cluster at ``address``."""
    env = os.environ if environ is None else environ
    package = Path(__file__).resolve().parent  # the sandbox package
    argv = [bwrap(), "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc"]
    argv += ["--unshare-uts", "--unshare-cgroup-try", "--cap-drop", "ALL"]
    for path in SYSTEM:
        if os.path.islink(path):
            argv += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            argv += ["--ro-bind", path, path]
    for name in ETC:
        argv += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    if address.startswith("ray://"):  # a client: nothing of this machine's processes
        argv += ["--proc", "/proc"]
    else:  # a driver finds its node's raylet among this machine's processes
        argv += ["--ro-bind", "/proc", "/proc"]
    argv += ["--dev", "/dev", "--tmpfs", "/tmp"]
    for path in _python_paths():
        argv += ["--ro-bind", path, path]
    argv += ["--ro-bind", str(package), str(package)]
    ray_tmp = env.get("RAY_TMPDIR") or "/tmp/ray"
    if not address.startswith("ray://") and os.path.isdir(
        ray_tmp
    ):  # a driver talks to its node's raylet through these sockets
        argv += ["--bind", ray_tmp, ray_tmp]
    token = Path(env.get("HOME") or "/nonexistent") / ".ray" / "auth_token"
    if "RAY_AUTH_TOKEN" not in env and token.is_file():
        argv += ["--ro-bind", str(token), f"{HOME}/.ray/auth_token"]
    argv += ["--chdir", HOME, "--", sys.executable, "-s", "-E", "-c", _start(package.parent)]
    kept = {k: v for k, v in env.items() if k in KEEP_ENV or k.startswith("RAY_")}
    return argv, {**kept, "HOME": HOME, "PYTHONDONTWRITEBYTECODE": "1"}


def _start(root: Path) -> str:
    path = f"import sys; sys.path.insert(0, {str(root)!r})"
    return f"{path}\nfrom sandbox.ray_bridge import main\nmain()"


def _python_paths() -> list[str]:
    """The Python installation and virtual environment the bridge runs in."""
    paths = {sys.base_prefix, sys.prefix, str(Path(sys.executable).resolve().parent.parent)}
    inside = [p for p in paths if not any(p != q and p.startswith(q + "/") for q in paths)]
    return sorted(p for p in inside if p not in ("/", "/usr") and os.path.isdir(p))
