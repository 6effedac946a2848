"""The one way the sandbox reaches the Docker daemon: a client that answered a ping, or why
not, and ``docker_errors``, where the docker SDK's errors become the sandbox's (as httpx's
``map_httpcore_exceptions``): nothing above this floor catches ``docker.errors``. The docker
SDK loads only when one of these is called."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .errors import DockerConflict, DockerMissing, SandboxUnavailable

START_DOCKER = "start Docker or use the local backend"


def connect(*, timeout: int = 60, next_step: str = START_DOCKER) -> Any:
    """A docker SDK client whose daemon answered; SandboxUnavailable saying ``next_step``."""
    import docker
    import docker.errors

    client = None
    try:
        client = docker.from_env(timeout=timeout)
        client.ping()
    except BaseException as exc:
        if client is not None:
            client.close()
        if isinstance(exc, docker.errors.DockerException):
            raise SandboxUnavailable(f"no Docker daemon answers ({exc}); {next_step}") from exc
        raise
    return client


@contextmanager
def docker_errors(doing: str) -> Iterator[None]:
    """Run the block; a docker SDK error raised in it leaves as the sandbox's own, chained
    (``raise ... from``), its message ``cannot <doing>: <the daemon's words>``: the daemon's
    404 as ``DockerMissing``, its 409 as ``DockerConflict``, anything else (a refused request,
    a daemon gone) as ``SandboxUnavailable``."""
    import docker.errors

    try:
        yield
    except docker.errors.DockerException as exc:
        status = getattr(exc, "status_code", None)
        kind: type[SandboxUnavailable] = SandboxUnavailable
        if isinstance(exc, docker.errors.NotFound) or status == 404:
            kind = DockerMissing
        elif status == 409:
            kind = DockerConflict
        raise kind(f"cannot {doing}: {exc}") from exc


def available(timeout: float = 2.0) -> str | None:
    """None when a Docker daemon answers a ping within ``timeout`` s, else a short reason."""
    try:
        client = connect(timeout=max(1, round(timeout)))
    except SandboxUnavailable as exc:
        text = str(exc.__cause__ or exc).strip().splitlines()
        return (text[0] if text else "no Docker daemon")[:200]
    except Exception as exc:  # requests' connection errors and timeouts
        text = str(exc).strip().splitlines()
        return (text[0] if text else type(exc).__name__)[:200]
    client.close()
    return None
