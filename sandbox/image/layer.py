"""A flow's extra packages as an image layer over the sandbox image.

``ensure_layer(["scikit-learn==1.6.1", "statsmodels"])`` returns ``praxis-sandbox:<hash>``,
the hash of the base image's tag, the sorted requirements and this recipe: one image per
distinct list, built once and reused by every flow that names the same list. The wheels are
downloaded on the host with the host's pip into the same wheelhouse as the base image's,
constrained to the base image's pins (a flow can add packages, never change the base's),
and installed in the image offline (``Layer.Dockerfile``, ``layer_install.py``).
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

from ..errors import SandboxUnavailable
from .build import (
    PLATFORMS,
    REPO,
    REQUIREMENTS,
    Progress,
    _Steps,
    build_lock,
    docker_build,
    docker_client,
    ensure_image,
    image_exists,
    image_tag,
    link_or_copy,
    wheelhouse_dir,
)

HERE = Path(__file__).resolve().parent
DOCKERFILE = HERE / "Layer.Dockerfile"
INSTALLER = HERE / "layer_install.py"
LAYER_VERSION = "1"
_NOT_FOUND = (
    re.compile(r"No matching distribution found for (\S+)"),
    re.compile(r"satisfies the requirement (\S+)"),
)


class PackagesUnavailable(SandboxUnavailable):
    """Raised when pip cannot fetch a flow's package; ``package`` names it when pip said which."""

    def __init__(self, message: str, *, package: str | None = None) -> None:
        super().__init__(message)
        self.package = package


def normalize(requirements: Iterable[str]) -> tuple[str, ...]:
    """The requirements as the tag sees them: whitespace collapsed, duplicates dropped, sorted."""
    return tuple(sorted({" ".join(r.split()) for r in requirements if r.strip()}))


def layer_tag(requirements: Iterable[str], base: str | None = None) -> str:
    """``praxis-sandbox:<12 hex>`` for these requirements over ``base`` (the sandbox image)."""
    digest = hashlib.sha256()
    parts = [base or image_tag(), "\n".join(normalize(requirements)), LAYER_VERSION]
    parts += [DOCKERFILE.read_text(), INSTALLER.read_text()]
    for part in parts:
        digest.update(hashlib.sha256(part.encode()).digest())
    return f"{REPO}:{digest.hexdigest()[:12]}"


def layer_exists(requirements: Iterable[str]) -> bool:
    client = docker_client()
    try:
        return image_exists(client, layer_tag(requirements))
    finally:
        client.close()


def ensure_layer(
    requirements: Iterable[str], progress: Progress = print, force: bool = False
) -> str:
    """The tag of the image with these packages, building it (and the base) when missing."""
    wanted = normalize(requirements)
    base = ensure_image(progress)
    if not wanted:
        return base
    tag = layer_tag(wanted, base)
    client = docker_client()
    try:
        if not force and image_exists(client, tag):
            return tag
        with build_lock(tag):
            if not force and image_exists(client, tag):
                return tag
            steps = _Steps(progress)
            steps(f"building {tag} with {', '.join(wanted)} over {base}")
            with tempfile.TemporaryDirectory(prefix="praxis-layer-") as tmp:
                context = Path(tmp)
                _context(context, wanted, download_packages(wanted, wheelhouse_dir(), steps))
                docker_build(client, tag, context, base, steps, labels={"praxis.base": base})
            steps(f"built {tag}")
    finally:
        client.close()
    return tag


def download_packages(requirements: tuple[str, ...], dest: Path, progress: Progress) -> list[Path]:
    """Download the wheels of ``requirements`` (and pip itself) with the host's pip.

    Returns the wheel files the install needs. A requirement pip cannot fetch raises
    PackagesUnavailable naming it.
    """
    dest.mkdir(parents=True, exist_ok=True)
    progress(f"downloading {', '.join(requirements)} into {dest} with the host's pip")
    cmd = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check"]
    cmd += ["--progress-bar", "off", "--only-binary=:all:", "--python-version", "3.11"]
    cmd += ["--implementation", "cp", "--abi", "cp311"]
    for platform in PLATFORMS:
        cmd += ["--platform", platform]
    cmd += ["--dest", str(dest), "-c", str(REQUIREMENTS), "pip", *requirements]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise _pip_failed(proc.stderr, requirements)
    wheels = []
    for line in proc.stdout.splitlines():
        line = line.strip()
        for prefix in ("Saved ", "File was already downloaded "):
            if line.startswith(prefix):
                wheels.append(dest / Path(line[len(prefix) :]).name)
    return [w for w in wheels if w.is_file()] or sorted(dest.glob("*.whl"))


def _pip_failed(stderr: str, requirements: tuple[str, ...]) -> PackagesUnavailable:
    errors = [ln.removeprefix("ERROR: ").strip() for ln in stderr.splitlines() if "ERROR" in ln]
    package = None
    for pattern in _NOT_FOUND:
        found = next((m.group(1) for m in map(pattern.search, errors) if m), None)
        if found:
            package = found
            break
    if package is not None:
        message = (
            f"pip cannot fetch the package {package!r} for the sandbox (no wheel for Linux "
            "x86_64, CPython 3.11 on the host's index); fix sandbox.packages in flow.yaml or "
            "the host's pip settings"
        )
    elif any("conflicting dependencies" in e for e in errors):
        message = (
            f"the packages {', '.join(requirements)} conflict with each other or with the "
            "sandbox image's own pins (sandbox/image/requirements.txt: pandas, numpy, ...), "
            "which a flow cannot change; fix sandbox.packages in flow.yaml"
        )
    else:
        detail = " | ".join(errors[:2]) or stderr.strip()[-300:]
        message = f"pip cannot fetch the packages {', '.join(requirements)}: {detail}"
    return PackagesUnavailable(message, package=package)


def _context(context: Path, requirements: tuple[str, ...], wheels: list[Path]) -> None:
    build = context / "build"
    (build / "wheels").mkdir(parents=True)
    shutil.copy2(DOCKERFILE, context / "Dockerfile")
    shutil.copy2(INSTALLER, build / "install.py")
    shutil.copy2(REQUIREMENTS, build / "constraints.txt")
    (build / "requirements.txt").write_text("\n".join(requirements) + "\n")
    for wheel in wheels:
        if wheel.name.startswith("pip-"):
            link_or_copy(wheel, build / "pip.whl")
        else:
            link_or_copy(wheel, build / "wheels" / wheel.name)
    if not (build / "pip.whl").exists():
        raise SandboxUnavailable("the host's pip did not download a pip wheel for the layer")
