"""Find and remove sandbox containers left behind (``praxis sandbox status`` / ``prune``).

Every container the docker backend creates carries the label ``praxis.run=<run>``. A run
whose process died without ``close()`` leaves its container running; ``prune`` removes the
containers of runs the caller says are no longer running.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .container import RUN_LABEL
from .daemon import connect as connect_docker
from .errors import SandboxUnavailable


@dataclass(frozen=True)
class SandboxContainer:
    """One labelled container, as ``docker ps -a`` sees it."""

    id: str
    name: str
    run: str
    state: str  # created | running | exited | ...
    image: str
    labels: dict[str, str] = field(default_factory=dict)


def list_sandboxes(client: Any = None) -> list[SandboxContainer]:
    """Every container labelled ``praxis.run``, running or not."""
    import docker.errors

    own = client is None
    client = client or connect_docker()
    try:
        found = client.api.containers(all=True, filters={"label": RUN_LABEL})
        return [_describe(c) for c in found]
    except docker.errors.DockerException as exc:
        raise SandboxUnavailable(f"cannot list sandbox containers: {exc}") from exc
    finally:
        if own:
            client.close()


def prune(keep: Callable[[str], bool] | None = None, client: Any = None) -> list[str]:
    """Remove the labelled containers whose run ``keep(run)`` says is no longer running.

    Without ``keep`` every labelled container goes. Returns the names removed.
    """
    import docker.errors

    own = client is None
    client = client or connect_docker()
    removed = []
    try:
        for box in list_sandboxes(client):
            if keep is not None and keep(box.run):
                continue
            try:
                client.api.remove_container(box.id, force=True)
            except docker.errors.NotFound:
                continue  # gone meanwhile
            except docker.errors.DockerException as exc:
                raise SandboxUnavailable(f"cannot remove container {box.name}: {exc}") from exc
            removed.append(box.name)
    finally:
        if own:
            client.close()
    return removed


def _describe(row: dict[str, Any]) -> SandboxContainer:
    """A row of the daemon's container list (one call, no inspect per container)."""
    labels = dict(row.get("Labels") or {})
    names = row.get("Names") or [row["Id"][:12]]
    return SandboxContainer(
        id=row["Id"],
        name=names[0].lstrip("/"),
        run=labels.get(RUN_LABEL, ""),
        state=str(row.get("State", "")),
        image=str(row.get("Image", "")),
        labels=labels,
    )
