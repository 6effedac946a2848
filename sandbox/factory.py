"""Make the sandbox a backend's name and options say (jupyter_client's provisioning factory).

``open_sandbox({"backend": "docker", "memory": "2g"}, workspace=..., name=...)``: every key
but ``backend`` is an option of that backend, checked by its options class
(``sandbox.options``): an option it does not take, or a value it cannot use, is ``BadOption``
naming the nearest option it does take. ``open_backend(name, options, ...)`` takes the options
object itself. ``auto`` means docker when a daemon answers, else local with a one-line
warning (keeping the options both take).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from . import backends
from .backends import AUTO, DOCKER, LOCAL, unknown
from .base import Sandbox
from .daemon import available as docker_available  # the docker SDK: only when asked
from .errors import BadOption
from .options import Options, Problem
from .values import describe

log = logging.getLogger("sandbox")


def options_from(backend: str, config: Mapping[str, Any]) -> Options:
    """The options of ``backend`` (or ``auto``) that ``config`` sets, every value checked;
    BadOption naming each option it does not take and each value it cannot use."""
    cls = backends.options_for(backend)
    problems: list[str] = []
    for key, value in config.items():
        if not isinstance(key, str):
            problems.append(f"option names are strings, got {describe(key)}")
        elif not cls.takes(key):
            problems.append(unknown(backend, key))
        else:
            problems += [_said(backend, p) for p in cls.check(key, value)]
    if problems:
        raise BadOption(backend, problems)
    return cls.build(config)


def _said(backend: str, problem: Problem) -> str:
    return f"option {problem.key!r} of the {backend} backend: {problem.message}"


def open_sandbox(
    config: Mapping[str, Any] | None,
    *,
    workspace: Path,
    name: str,
    warn: Callable[[str], None] | None = None,
) -> Sandbox:
    """Build (not yet open) the sandbox ``config`` names, for the run called ``name``."""
    options = dict(config or {})
    backend = str(options.pop("backend", AUTO))
    return open_backend(
        backend, options_from(backend, options), workspace=workspace, name=name, warn=warn
    )


def open_backend(
    backend: str,
    options: Options,
    *,
    workspace: Path,
    name: str,
    warn: Callable[[str], None] | None = None,
) -> Sandbox:
    """Build (not yet open) a sandbox of ``backend`` with ``options`` (its own type; ``auto``:
    docker's), for the run called ``name``."""
    if backend == AUTO:
        backend, options = _auto(options, warn)
    return backends.get(backend).sandbox(options, workspace=workspace, name=name)


def _auto(options: Options, warn: Callable[[str], None] | None) -> tuple[str, Options]:
    reason = _docker_reason()
    if reason is None:
        return DOCKER, options
    message = f"no Docker daemon ({reason}): running on the local backend, WITHOUT isolation"
    log.warning(message)
    if warn:
        warn(message)
    return LOCAL, options.to(backends.options_for(LOCAL))


def _docker_reason() -> str | None:
    """None when a Docker daemon answers, else why not."""

    return docker_available()
