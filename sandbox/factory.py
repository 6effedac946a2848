"""Choose a backend by name and hand it opaque config (jupyter_client's provisioning factory).

``open_sandbox({"backend": "docker", "memory": "2g"}, workspace=..., name=...)``: every key
but ``backend`` becomes a keyword argument of the backend's constructor. ``auto`` means
docker when a daemon answers, else local with a one-line warning.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .base import Sandbox
from .errors import SandboxUnavailable

log = logging.getLogger("sandbox")

BACKENDS: dict[str, str] = {
    "docker": "sandbox.container:DockerSandbox",
    "local": "sandbox.local:LocalSandbox",
    "fake": "sandbox.fake:FakeSandbox",
    "ray": "sandbox.ray:RaySandbox",  # the docker backend on a Ray cluster's node
}


def _load(backend: str) -> Callable[..., Sandbox]:
    try:
        target = BACKENDS[backend]
    except KeyError:
        names = ", ".join(sorted([*BACKENDS, "auto"]))
        raise SandboxUnavailable(f"unknown sandbox backend {backend!r} (choose {names})") from None
    module, _, cls = target.partition(":")
    return getattr(importlib.import_module(module), cls)  # type: ignore[no-any-return]


def _docker_reason() -> str | None:
    """None when a Docker daemon answers, else why not."""
    from .daemon import available as docker_available  # the docker SDK: only when asked

    return docker_available()


def open_sandbox(
    config: Mapping[str, Any] | None,
    *,
    workspace: Path,
    name: str,
    warn: Callable[[str], None] | None = None,
) -> Sandbox:
    """Build (not yet open) the sandbox ``config`` names, for the run called ``name``."""
    options = dict(config or {})
    backend = str(options.pop("backend", "auto"))
    if backend == "auto":
        reason = _docker_reason()
        if reason is None:
            backend = "docker"
        else:
            backend = "local"
            message = (
                f"no Docker daemon ({reason}): running on the local backend, WITHOUT isolation"
            )
            log.warning(message)
            if warn:
                warn(message)
    cls = _load(backend)
    return cls(workspace=workspace, name=name, **options)
