"""Joining the Ray cluster, and checking that it could ever hold a sandbox (the ray backend).

Only the Ray bridge (``sandbox/ray_bridge.py``) joins: the runner never imports ray.

``connect`` fails in seconds, naming the address, when nothing answers there; Ray would
otherwise retry for minutes. ``check_capacity`` fails at once when no live node offers what
a sandbox asks for; Ray would otherwise wait for such a node forever.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from typing import Any
from urllib.parse import urlsplit

from .errors import SandboxUnavailable

log = logging.getLogger("sandbox")

RESOURCE = "praxis-docker"  # what a node offers when it has Docker and the sandbox image
NAMESPACE = "praxis"
CONNECT_TIMEOUT = 5.0


class RayUnavailable(SandboxUnavailable):
    """Raised when the Ray cluster, or the node the sandbox went to, cannot run it."""


def resolve_address(address: str | None) -> str:
    """``PRAXIS_RAY_ADDRESS``, else the configured address (praxis: the profile's cluster the
    flow names), else ``auto``."""
    return os.environ.get("PRAXIS_RAY_ADDRESS") or address or "auto"


def _reachable(address: str) -> None:
    """Fail fast (seconds, not minutes) when nothing listens at a host:port address."""
    if address == "auto":
        return
    parts = urlsplit(address if "://" in address else f"tcp://{address}")
    if not parts.hostname or not parts.port:
        raise RayUnavailable(
            f"the Ray cluster address {address!r} is not ray://host:port, host:port or auto"
        )
    try:
        socket.create_connection((parts.hostname, parts.port), CONNECT_TIMEOUT).close()
    except OSError as exc:
        raise RayUnavailable(
            f"no Ray cluster answers at {address} ({exc.strerror or exc}); start it with "
            "`ray start --head`, or correct the cluster's address in your profile "
            "(clusters: {NAME: {address: ...}}) or PRAXIS_RAY_ADDRESS"
        ) from None


_connected: list[str] = []  # the address this process joined (Ray allows one cluster)
_connecting = threading.Lock()


def connect(address: str) -> None:
    """Join the cluster at ``address`` as a driver (or reuse this process's connection). One
    thread at a time: sandboxes opened at once on threads of one process (``praxis serve``'s
    runs) would each call ``ray.init``, and all but one would fail."""
    try:
        import ray
    except ImportError:
        raise RayUnavailable("the ray backend needs Ray: pip install 'praxis[ray]'") from None
    with _connecting:
        _connect(ray, address)


def _connect(ray: Any, address: str) -> None:
    if ray.is_initialized():
        if _connected and address not in ("auto", _connected[0]):
            raise RayUnavailable(
                f"this process is connected to the Ray cluster at {_connected[0]} already "
                f"and cannot join {address} too: one cluster per process"
            )
        return
    _reachable(address)
    try:
        _init(ray, address)
    except Exception as exc:  # ConnectionError, AuthenticationError: Ray's own words follow
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        hint = ""
        if not _token_auth():
            hint = (
                "; if the cluster uses token authentication, set RAY_AUTH_MODE=token and "
                "its token (RAY_AUTH_TOKEN or ~/.ray/auth_token) here too"
            )
        raise RayUnavailable(
            f"cannot connect to the Ray cluster at {address}: {first}{hint}"
        ) from exc
    _connected[:] = [address]
    if not _token_auth():
        log.warning(
            "the Ray cluster at %s runs without token authentication: whoever reaches its "
            "ports can run code on its nodes; start it with RAY_AUTH_MODE=token (README: "
            "Running on a Ray cluster)",
            address,
        )


def _init(ray: Any, address: str, attempts: int = 3) -> None:
    """``ray.init``; again (up to ``attempts`` times in all) when a Ray client server says its
    per-client server failed to start: the proxy starts one process per client, and that
    start can fail once under load while the next one succeeds."""
    for attempt in range(1, attempts + 1):
        try:
            ray.init(
                address=address,
                namespace=NAMESPACE,
                log_to_driver=False,
                logging_level=logging.WARNING,
            )
            return
        except ConnectionAbortedError as exc:  # "Initialization failure from server"
            if attempt == attempts:
                raise
            log.warning("the Ray client server did not start a server for us (%s); again", exc)
            try:
                ray.shutdown()
            except Exception:
                log.debug("ray.shutdown after a failed connect", exc_info=True)
            time.sleep(attempt)


def _token_auth() -> bool:
    """Whether this driver speaks to the cluster with Ray's token authentication."""
    try:
        from ray._raylet import (  # type: ignore[attr-defined]
            AuthenticationMode,
            get_authentication_mode,
        )
    except ImportError:  # a Ray before 2.52 has no token authentication
        return False
    return bool(get_authentication_mode() == AuthenticationMode.TOKEN)


def show(resources: dict[str, float]) -> str:
    parts = []
    for key, value in sorted(resources.items()):
        if key == "memory":
            parts.append(f"memory {value / (1 << 30):.2g}g")
        elif key != RESOURCE:
            parts.append(f"{key} {value:g}")
    return ", ".join(parts)


def check_capacity(demand: dict[str, float], address: str) -> None:
    """SandboxUnavailable at once when no live node could ever hold ``demand`` (else Ray
    would wait for such a node forever)."""
    import ray

    nodes = [n for n in ray.nodes() if n.get("Alive")]
    docker = [n["Resources"] for n in nodes if n["Resources"].get(RESOURCE, 0) > 0]
    if not docker:
        raise RayUnavailable(
            f"no node of the Ray cluster at {address} offers the {RESOURCE} resource: start "
            "each node that has Docker and the sandbox image with "
            f"`ray start ... --resources='{{\"{RESOURCE}\": 1}}'`"
        )
    if any(all(n.get(k, 0) >= v for k, v in demand.items()) for n in docker):
        return
    largest = max(docker, key=lambda n: (n.get("memory", 0), n.get("CPU", 0)))
    raise RayUnavailable(
        f"no node of the Ray cluster at {address} has {show(demand)} for this sandbox "
        f"(the largest {RESOURCE} node has {show({k: largest.get(k, 0) for k in demand})}); "
        "lower sandbox.memory / sandbox.cpus / sandbox.resources, or add a bigger node"
    )
