"""The one way the sandbox reaches the Docker daemon: a client that answered a ping, or why
not. The docker SDK loads only when one of these is called."""

from __future__ import annotations

from typing import Any

from .errors import SandboxUnavailable

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
