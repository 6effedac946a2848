"""Find and remove sandbox containers left behind (``praxis sandbox status`` / ``prune``).

Every container the docker backend creates carries the label ``praxis.run=<run>``. A run
whose process died without ``close()`` leaves its container running; ``prune`` removes the
containers of runs the caller says are no longer running, and their runtime folders (with
the tmpfs mounted on each, see ``container._mount_runtime``).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .container import RUN_LABEL, RUNTIME, RUNTIME_PREFIX
from .daemon import connect as connect_docker
from .daemon import docker_errors
from .errors import DockerConflict, DockerMissing
from .workspace import unmount


@dataclass(frozen=True)
class SandboxContainer:
    """One labelled container, as ``docker ps -a`` sees it."""

    id: str
    name: str
    run: str
    state: str  # created | running | exited | ...
    image: str
    labels: dict[str, str] = field(default_factory=dict)
    runtime: str = ""  # the host folder mounted at /rt, if any


def list_sandboxes(client: Any = None) -> list[SandboxContainer]:
    """Every container labelled ``praxis.run``, running or not."""
    own = client is None
    client = client or connect_docker()
    try:
        with docker_errors("list sandbox containers"):
            found = client.api.containers(all=True, filters={"label": RUN_LABEL})
        return [_describe(c) for c in found]
    finally:
        if own:
            client.close()


def prune(keep: Callable[[str], bool] | None = None, client: Any = None) -> list[str]:
    """Remove the labelled containers whose run ``keep(run)`` says is no longer running.

    Without ``keep`` every labelled container goes. Returns the names removed.
    """
    own = client is None
    client = client or connect_docker()
    removed = []
    try:
        for box in list_sandboxes(client):
            if keep is not None and keep(box.run):
                continue
            try:
                with docker_errors(f"remove container {box.name}"):
                    client.api.remove_container(box.id, force=True)
            except (DockerMissing, DockerConflict):
                pass  # gone meanwhile (its run's watchdog ended it), or the daemon is removing
                # it already: its runtime folder is not
            else:
                removed.append(box.name)
            _remove_runtime(box.runtime)
    finally:
        if own:
            client.close()
    return removed


def _remove_runtime(source: str) -> None:
    """Unmount and remove a dead runner's runtime folder: ``<tmp>/praxis-rt-*/rt`` only."""
    folder = Path(source)
    private = folder.parent
    if not source or folder.name != "rt" or not private.name.startswith(RUNTIME_PREFIX):
        return
    if private.parent != Path(tempfile.gettempdir()) or private.is_symlink():
        return
    unmount(folder)
    shutil.rmtree(private, ignore_errors=True)


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
        runtime=next(
            (
                str(m.get("Source", ""))
                for m in row.get("Mounts") or []
                if m.get("Destination") == RUNTIME
            ),
            "",
        ),
    )
