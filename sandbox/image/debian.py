"""A Debian bookworm base image built with debootstrap, for daemons that cannot pull one.

Debian bookworm's python3 is 3.11, the version the wheelhouse is downloaded for. The base
is ``debootstrap --variant=minbase --include=python3,python3-venv bookworm`` from the
mirror the host's apt uses, streamed into ``docker import``. It is cached by tag, so it
is built once per machine.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..daemon import docker_errors
from ..errors import DockerMissing, SandboxUnavailable

SUITE = "bookworm"
INCLUDE = ("python3", "python3-venv")
DEFAULT_MIRROR = "http://deb.debian.org/debian"
BASE_REPO = "praxis-base"
_RECIPE_VERSION = "1"

Progress = Callable[[str], None]


def base_tag() -> str:
    """``praxis-base:<12 hex>``, a hash of the recipe (suite, packages, variant)."""
    recipe = f"{_RECIPE_VERSION}|minbase|{SUITE}|{','.join(INCLUDE)}"
    return f"{BASE_REPO}:{hashlib.sha256(recipe.encode()).hexdigest()[:12]}"


def apt_mirror(etc_apt: Path = Path("/etc/apt")) -> str:
    """The Debian archive the host's apt uses (not the security archive), or the default.

    ``PRAXIS_DEBIAN_MIRROR`` overrides it. Reads one-line ``sources.list`` entries and
    deb822 ``*.sources`` files.
    """
    override = os.environ.get("PRAXIS_DEBIAN_MIRROR")
    if override:
        return override.rstrip("/")
    files = [etc_apt / "sources.list"]
    folder = etc_apt / "sources.list.d"
    if folder.is_dir():
        files += sorted(p for p in folder.iterdir() if p.suffix in (".list", ".sources"))
    for path in files:
        try:
            text = path.read_text(errors="replace")
        except OSError:
            continue
        for uri in _uris(text, deb822=path.suffix == ".sources"):
            if "/debian" in uri and "security" not in uri and "ports" not in uri:
                return uri.rstrip("/")
    return DEFAULT_MIRROR


def _uris(text: str, *, deb822: bool) -> list[str]:
    if deb822:
        found: list[str] = []
        for stanza in re.split(r"\n\s*\n", text):
            if re.search(r"^Enabled:\s*no\b", stanza, re.M | re.I):
                continue
            for match in re.finditer(r"^URIs:\s*(.+)$", stanza, re.M):
                found += match.group(1).split()
        return found
    uris = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("deb "):
            # "deb [options] URI suite components"; options may hold spaces.
            fields = re.sub(r"\[[^\]]*\]", "", line).split()
            if len(fields) >= 2:
                uris.append(fields[1])
    return uris


def _ensure_debootstrap(progress: Progress) -> str:
    found = shutil.which("debootstrap")
    if found:
        return found
    if os.geteuid() != 0:
        raise SandboxUnavailable(
            "no base image: python:3.11-slim cannot be pulled and debootstrap is not "
            "installed; install it (apt-get install debootstrap) or load python:3.11-slim "
            "with docker load, then run `praxis sandbox build` again"
        )
    progress("debootstrap is missing: installing it with apt-get (running as root)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in (["apt-get", "update"], ["apt-get", "install", "-y", "debootstrap"]):
        _run(cmd, env=env, what="installing debootstrap")
    found = shutil.which("debootstrap") or "/usr/sbin/debootstrap"
    return found


def build_base(client: Any, progress: Progress) -> str:
    """Build (once) and return the debootstrap base image's tag."""
    tag = base_tag()
    if _exists(client, tag):
        return tag
    if os.geteuid() != 0:
        raise SandboxUnavailable(
            "no base image: python:3.11-slim cannot be pulled and building a Debian base "
            "with debootstrap needs root; run `sudo praxis sandbox build` once, or load "
            "python:3.11-slim with docker load"
        )
    debootstrap = _ensure_debootstrap(progress)
    mirror = apt_mirror()
    progress(f"building base {tag} with debootstrap {SUITE} from {mirror} (about 75 s)")
    scratch = Path(tempfile.mkdtemp(prefix="praxis-base-", dir="/var/tmp"))
    root = scratch / "root"
    try:
        _run(
            [
                debootstrap,
                "--variant=minbase",
                f"--include={','.join(INCLUDE)}",
                SUITE,
                str(root),
                mirror,
            ],
            what="debootstrap",
        )
        for junk in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for item in (root / junk).glob("*"):
                if item.is_file():
                    item.unlink()
        progress(f"importing {root} as {tag}")
        _import(client, root, tag)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return tag


def _import(client: Any, root: Path, tag: str) -> None:
    repo, _, version = tag.partition(":")
    tar = subprocess.Popen(
        ["tar", "--numeric-owner", "-C", str(root), "-c", "."],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert tar.stdout is not None
    try:
        client.api.import_image_from_stream(
            tar.stdout,
            repository=repo,
            tag=version,
            changes=['CMD ["/bin/bash"]', "ENV LANG=C.UTF-8"],
        )
    finally:
        tar.stdout.close()
        _, err = tar.communicate()
    if tar.returncode != 0:
        raise SandboxUnavailable(f"tar of the debootstrap base failed: {err.decode()[-300:]}")
    if not _exists(client, tag):
        raise SandboxUnavailable(f"docker import did not create {tag}; see the daemon's log")


def _exists(client: Any, tag: str) -> bool:
    try:
        with docker_errors(f"inspect image {tag}"):
            client.images.get(tag)
    except DockerMissing:
        return False
    return True


def _run(cmd: list[str], *, what: str, env: dict[str, str] | None = None) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
        raise SandboxUnavailable(f"{what} failed (exit {proc.returncode}): " + " | ".join(tail))
