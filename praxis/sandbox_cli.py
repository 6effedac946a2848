"""`praxis sandbox build | status | prune`."""

from __future__ import annotations

import sys
from pathlib import Path

from sandbox import SandboxUnavailable

from .flows.store.layout import run_paths
from .flows.store.lock import is_held


def run_sandbox_command(
    action: str, labels: list[str] | None = None, *, flow: str | None = None
) -> int:
    if action == "build":
        return _build(flow)
    if action == "status":
        return _status()
    return _prune(labels or [])


def _build(flow_ref: str | None) -> int:
    """The sandbox image; with a FLOW, also the image with the flow's packages (its tag)."""
    from sandbox.image.build import ensure_image

    def to_stderr(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    if flow_ref is None:
        print(ensure_image(progress=to_stderr))
        return 0
    from sandbox.image.layer import ensure_layer

    from .flows.definition import contract
    from .flows.definition.packages import requirements_of

    flow = contract.require(Path(flow_ref))
    wanted = requirements_of(flow)
    if not wanted:
        print(f"{flow.name} names no packages; it runs on the sandbox image", file=sys.stderr)
    print(ensure_layer(wanted, progress=to_stderr))
    return 0


def _status() -> int:
    from sandbox.daemon import available as docker_available

    reason = docker_available()
    if reason is not None:
        print(f"docker: unavailable ({reason}); flows with backend auto run on local kernels")
        return 0
    from sandbox.image.build import docker_client, image_exists, image_tag
    from sandbox.prune import list_sandboxes

    tag = image_tag()
    built = image_exists(docker_client(), tag)
    print(f"docker: available; image {tag}: {'built' if built else 'not built'}")
    for box in list_sandboxes():
        print(f"  container {box.name}: run {box.run} ({box.state})")
    return 0


def _still_running(labels: dict[str, str]) -> bool:
    """A container is kept while the run it serves is being advanced (its lock is held)."""
    root, run = labels.get("praxis.flow"), labels.get("praxis.run")
    if root is None or not run or "/" in run or run.startswith("."):
        return False
    return is_held(run_paths(Path(root), run).lock) is not None


def _prune(labels: list[str]) -> int:
    """Remove the containers of runs no longer running (only those with every ``labels``)."""
    from sandbox.daemon import available as docker_available
    from sandbox.prune import list_sandboxes, prune

    reason = docker_available()
    if reason is not None:
        raise SandboxUnavailable(f"no Docker daemon ({reason}): nothing to prune")
    wanted = dict(label.partition("=")[::2] for label in labels)
    keep = {
        box.run
        for box in list_sandboxes()
        if any(box.labels.get(k) != v for k, v in wanted.items()) or _still_running(box.labels)
    }
    removed = prune(keep=lambda run: run in keep)
    print(f"removed {len(removed)} container(s)" + (": " + ", ".join(removed) if removed else ""))
    return 0
