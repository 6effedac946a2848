"""`praxis sandbox build | status | prune`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sandbox import SandboxUnavailable
from sandbox.daemon import available as docker_available
from sandbox.image.build import docker_client, ensure_image, image_exists, image_tag
from sandbox.image.layer import ensure_layer
from sandbox.prune import list_sandboxes, prune

from ..flows.definition import contract
from ..flows.definition.packages import requirements_of
from ..flows.store.layout import run_paths
from ..flows.store.lock import is_held
from ..terminal import find_flow


def cmd_sandbox(args: argparse.Namespace) -> int:
    flow = find_flow(args.flow) if args.flow else None
    return run_sandbox_command(args.action, args.label, flow=flow)


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

    def to_stderr(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    if flow_ref is None:
        print(ensure_image(progress=to_stderr))
        return 0
    flow = contract.require(Path(flow_ref))
    wanted = requirements_of(flow)
    if not wanted:
        print(f"{flow.name} names no packages; it runs on the sandbox image", file=sys.stderr)
    print(ensure_layer(wanted, progress=to_stderr))
    return 0


def _status() -> int:
    reason = docker_available()
    if reason is not None:
        print(f"docker: unavailable ({reason}); flows with backend auto run on local kernels")
        return 0
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
