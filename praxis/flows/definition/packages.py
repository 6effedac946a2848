"""The packages a flow's sandbox needs beyond the base image (DESIGN.md §2).

A flow names them in flow.yaml (``sandbox: {packages: [scikit-learn==1.6.1]}``), in a
``requirements.txt`` beside flow.yaml, or both (the union is used). ``check`` validates
them for ``praxis check``; ``image_options`` gives the runner the options to open the
sandbox with, the image tag of the flow's package layer in place of the list.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sandbox.backends import AUTO, DOCKER
from sandbox.options import DockerOptions, Options

from ...command_line import typed
from ...errors import UsageError
from . import flow_files
from .flow_files import exists
from .yaml_values import ValueReader, describe, show

if TYPE_CHECKING:
    from ..model.flow import Flow

REQUIREMENTS = "requirements.txt"
MAX_REQUIREMENTS_BYTES = 64 << 10
MAX_PACKAGES = 200


class PackagesRefused(UsageError):
    """Raised when the flow's requirements.txt cannot be used (a link, unreadable, invalid)."""

    def next(self, flow: str) -> str:
        return typed("check", flow)


def requirement_problem(text: str) -> str | None:
    """Why ``text`` is not a PEP 508 requirement (``pandas>=2``, ``scikit-learn==1.6.1``)."""
    from packaging.requirements import InvalidRequirement, Requirement

    if text.lstrip().startswith("-"):
        return "is a pip option; list package requirements only (name, version, extras)"
    try:
        Requirement(text)
    except InvalidRequirement as exc:
        reason = str(exc).splitlines()[0]
        return f"is not a package requirement ({reason})"
    return None


def read_requirements(root: Path) -> tuple[list[str], list[tuple[int, str]]]:
    """The requirements in the requirements.txt of flow folder ``root``, and its problems as
    (line number, message). Read by descriptor inside the folder: a link is refused."""

    problems: list[tuple[int, str]] = []
    try:
        data = flow_files.read(root, REQUIREMENTS, MAX_REQUIREMENTS_BYTES)
    except flow_files.PathRefused as exc:
        return [], [(0, f"{exc.reason}: a flow's files must be inside its folder, not links")]
    except OSError as exc:
        return [], [(0, f"cannot be read ({exc.strerror})")]
    if len(data) > MAX_REQUIREMENTS_BYTES:
        return [], [(0, "is over the 64 KiB limit for a requirements file")]
    found = []
    for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
        text = line.split(" #", 1)[0].strip()
        if not text or text.startswith("#"):
            continue
        problem = requirement_problem(text)
        if problem:
            problems.append((number, f"{show(text)} {problem}"))
        else:
            found.append(text)
    return found, problems


def check(value: Any, root: Path, reader: ValueReader) -> None:
    """Report problems in ``sandbox.packages`` and in the flow's requirements.txt."""
    count = 0
    if value is not None:
        if not isinstance(value, list):
            hint = f" (write [{show(value)}])" if isinstance(value, str) else ""
            reader.error("sandbox.packages", f"expected a list, got {describe(value)}{hint}")
        else:
            for i, item in enumerate(value):
                at = f"sandbox.packages[{i}]"
                text = reader.string(item, at)
                problem = requirement_problem(text) if text is not None else None
                if problem:
                    reader.error(at, f"{show(text)} {problem}")
            count += len(value)
    if _has_requirements(root):
        found, problems = read_requirements(root)
        for number, message in problems:
            where = f"line {number}: " if number else ""
            reader.error("sandbox.packages", f"{REQUIREMENTS} {where}{message}")
        count += len(found)
    if count > MAX_PACKAGES:
        reader.error(
            "sandbox.packages", f"names {count} packages, over the limit of {MAX_PACKAGES}"
        )


def requirements_named(raw: dict[str, Any], root: Path) -> bool:
    """Whether a ``sandbox:`` mapping or a requirements.txt beside flow.yaml names packages."""
    return bool(raw.get("packages")) or _has_requirements(root)


def _has_requirements(root: Path) -> bool:
    """Whether the flow folder has anything named requirements.txt (a link too)."""

    return exists(root, REQUIREMENTS)


def requirements_of(flow: Flow) -> list[str]:
    """Every requirement the flow names, flow.yaml's first, then requirements.txt's."""
    listed = list(flow.sandbox.packages)
    if _has_requirements(flow.root):
        found, problems = read_requirements(flow.root)
        if problems:  # `praxis check` reports them; nothing of such a file reaches pip
            number, message = problems[0]
            raise PackagesRefused(f"{REQUIREMENTS} {f'line {number}: ' if number else ''}{message}")
        listed += found
    return listed


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def image_options(
    flow: Flow, backend: str, options: Options, on_message: Callable[[str], None] = _stderr
) -> Options:
    """``options`` for a sandbox of ``flow`` on ``backend``: on docker (or auto with a daemon),
    the image that holds the flow's packages in place of the sandbox image.

    The flow's package layer is built when missing, its progress lines handed to
    ``on_message``; a package pip cannot fetch raises PackagesUnavailable naming it, before
    any phase runs. Other backends run the host's Python, or their nodes' image: the list
    is not used (the local backend cannot install into the host).
    """
    wanted = requirements_of(flow)
    if not wanted or backend not in (AUTO, DOCKER) or not isinstance(options, DockerOptions):
        return options
    # the image builder and the daemon probe (subprocess, the docker SDK's helpers) load only
    # here: status and check read a flow with packages without them (DESIGN §11)
    from sandbox.daemon import available as docker_available
    from sandbox.image.layer import ensure_layer, layer_exists

    if backend == AUTO:
        if docker_available() is not None:
            return options  # auto falls back to local kernels, which say so themselves

    if not layer_exists(wanted):
        on_message(f"building the sandbox image for {flow.name}'s packages: {', '.join(wanted)}")
    return dataclasses.replace(options, image=ensure_layer(wanted, progress=on_message))
