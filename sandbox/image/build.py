"""Build the sandbox kernel image: ``python -m sandbox.image.build`` (``praxis sandbox build``).

The tag is a content hash (Dockerfile + pinned requirements + builder version), so an
unchanged image is found at once and never rebuilt. Wheels are downloaded on the host with
the host's pip (its proxies, index and CA settings apply) into a cached wheelhouse, then
installed in the image offline. The base is ``python:3.11-slim`` when the daemon has it or
can pull it, else a Debian base built with debootstrap (see ``debian.py``).
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..daemon import connect, docker_errors
from ..errors import DockerMissing, SandboxUnavailable
from . import debian

HERE = Path(__file__).resolve().parent
DOCKERFILE = HERE / "Dockerfile"
REQUIREMENTS = HERE / "requirements.txt"
BUILDER_VERSION = "1"
REPO = "praxis-sandbox"
SLIM_BASE = "python:3.11-slim"
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")

Progress = Callable[[str], None]


def image_tag(dockerfile: Path = DOCKERFILE, requirements: Path = REQUIREMENTS) -> str:
    """``praxis-sandbox:<12 hex>``: a hash of the Dockerfile, requirements and builder version."""
    digest = hashlib.sha256()
    for part in (dockerfile.read_bytes(), requirements.read_bytes(), BUILDER_VERSION.encode()):
        digest.update(hashlib.sha256(part).digest())
    return f"{REPO}:{digest.hexdigest()[:12]}"


def wheelhouse_dir() -> Path:
    """Where downloaded wheels are cached (``PRAXIS_WHEELHOUSE`` overrides it)."""
    override = os.environ.get("PRAXIS_WHEELHOUSE")
    if override:
        return Path(override)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "praxis" / "wheelhouse"


def docker_client() -> Any:
    """A docker SDK client for building (long timeout), or SandboxUnavailable."""

    return connect(timeout=600, next_step="start Docker, then run `praxis sandbox build`")


def image_exists(client: Any, tag: str) -> bool:
    try:
        with docker_errors(f"inspect image {tag}"):
            client.images.get(tag)
    except DockerMissing:
        return False
    return True


def ensure_image(progress: Progress = print, force: bool = False) -> str:
    """Return the sandbox image's tag, building it first unless it exists (or ``force``)."""
    tag = image_tag()
    client = docker_client()
    try:
        if not force and image_exists(client, tag):
            return tag
        with build_lock(tag):  # a second builder of the same tag waits, then finds it
            if not force and image_exists(client, tag):
                return tag
            _build_base_image(client, tag, progress)
    finally:
        client.close()
    return tag


def _build_base_image(client: Any, tag: str, progress: Progress) -> None:
    steps = _Steps(progress)
    steps(f"building {tag}")
    wheels = download_wheels(wheelhouse_dir(), steps)
    base = choose_base(client, steps)
    build(client, tag, base, wheels, steps)
    steps(f"built {tag}")


@contextmanager
def build_lock(tag: str) -> Iterator[None]:
    """An exclusive lock per image tag, so concurrent builders build it once."""
    folder = wheelhouse_dir().parent / "locks"
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f"{tag.replace(':', '-')}.lock", "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


class _Steps:
    """Progress lines with the seconds elapsed since the build began."""

    def __init__(self, progress: Progress) -> None:
        self._progress = progress
        self._start = time.monotonic()

    def __call__(self, message: str) -> None:
        self._progress(f"[{time.monotonic() - self._start:6.1f}s] {message}")


def download_wheels(dest: Path, progress: Progress) -> Path:
    """Download every pinned wheel (and dependency) into ``dest`` with the host's pip."""
    dest.mkdir(parents=True, exist_ok=True)
    progress(f"downloading wheels into {dest} with the host's pip")
    cmd = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check"]
    cmd += ["--only-binary=:all:", "--python-version", "3.11"]
    cmd += ["--implementation", "cp", "--abi", "cp311"]
    for platform in PLATFORMS:
        cmd += ["--platform", platform]
    cmd += ["--dest", str(dest), "-r", str(REQUIREMENTS)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        errors = [ln for ln in proc.stderr.splitlines() if "ERROR" in ln] or [proc.stderr[-300:]]
        raise SandboxUnavailable(
            f"pip download of the sandbox wheels failed: {' | '.join(errors[:3])}; check the "
            "host's pip settings (index, proxy, certificates), then run `praxis sandbox build`"
        )
    return dest


def choose_base(client: Any, progress: Progress) -> str:
    """``python:3.11-slim`` if the daemon has it or can pull it, else the debootstrap base."""
    if image_exists(client, SLIM_BASE):
        progress(f"base {SLIM_BASE} (already present)")
        return SLIM_BASE
    try:
        progress(f"pulling {SLIM_BASE}")
        with docker_errors(f"pull {SLIM_BASE}"):
            client.images.pull(SLIM_BASE)
        return SLIM_BASE
    except SandboxUnavailable as exc:
        progress(f"{str(exc).splitlines()[0][:160]}")
    tag = debian.base_tag()
    if image_exists(client, tag):
        progress(f"base {tag} (Debian {debian.SUITE}, built earlier)")
        return tag
    return debian.build_base(client, progress)


def build(client: Any, tag: str, base: str, wheels: Path, progress: Progress) -> None:
    """``docker build`` with a context of the Dockerfile, requirements and the wheelhouse."""
    with tempfile.TemporaryDirectory(prefix="praxis-image-") as tmp:
        context = Path(tmp)
        shutil.copy2(DOCKERFILE, context / "Dockerfile")
        shutil.copy2(REQUIREMENTS, context / "requirements.txt")
        (context / "wheels").mkdir()
        for wheel in wheels.glob("*.whl"):
            link_or_copy(wheel, context / "wheels" / wheel.name)
        docker_build(client, tag, context, base, progress)


def docker_build(
    client: Any,
    tag: str,
    context: Path,
    base: str,
    progress: Progress,
    labels: dict[str, str] | None = None,
) -> None:
    """Build ``context`` (its Dockerfile takes ``ARG BASE``) as ``tag``; drop the install stage."""
    progress(f"docker build {tag} from {base}")
    with docker_errors(f"docker build {tag}"):
        stream = client.api.build(
            path=str(context),
            tag=tag,
            buildargs={"BASE": base},
            rm=True,
            forcerm=True,
            decode=True,
            labels={"praxis.image": tag, **(labels or {})},
        )
        for chunk in stream:
            if "error" in chunk:
                raise SandboxUnavailable(f"docker build of {tag} failed: {chunk['error'].strip()}")
            line = str(chunk.get("stream", "")).strip()
            if line.startswith("Step "):
                progress(line)
    if not image_exists(client, tag):
        raise SandboxUnavailable(f"docker build finished without creating {tag}")
    _drop_install_stage(client)


def _drop_install_stage(client: Any) -> None:
    """Remove the untagged image of the Dockerfile's install stage (it holds the wheels)."""
    try:
        with docker_errors("prune the install stage's image"):
            client.images.prune(filters={"dangling": True, "label": "praxis.build-stage=install"})
    except SandboxUnavailable:
        pass  # only disk space is at stake


def link_or_copy(src: Path, dest: Path) -> None:
    try:
        os.link(src, dest)
    except OSError:
        shutil.copy2(src, dest)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m sandbox.image.build", description="Build the praxis sandbox image."
    )
    parser.add_argument("--force", action="store_true", help="rebuild even if the tag exists")
    parser.add_argument("--print-tag", action="store_true", help="print the tag and exit")
    args = parser.parse_args(argv)
    if args.print_tag:
        print(image_tag())
        return 0
    try:
        tag = ensure_image(progress=lambda line: print(line, flush=True), force=args.force)
    except SandboxUnavailable as exc:
        print(f"SandboxUnavailable: {exc}", file=sys.stderr)
        return 5
    print(tag)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
