"""praxis sandbox prune: the containers of runs no longer running go, the others stay
(a real daemon)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox.prune import list_sandboxes, prune

from ..labels import TEST_LABELS, left_after
from .test_docker import _open

pytestmark = pytest.mark.docker


def test_prune_removes_the_containers_of_runs_not_running(
    docker_image: str, tmp_path: Path
) -> None:
    running = _open(tmp_path, image=docker_image, warm=False)
    stale = _open(tmp_path, image=docker_image, warm=False)
    ours = {running.name, stale.name}
    try:
        listed = {c.run: c for c in list_sandboxes() if c.run in ours}
        assert set(listed) == ours
        assert listed[stale.name].state == "running"
        assert listed[stale.name].labels["praxis.test"] == TEST_LABELS["praxis.test"]
        # Only our two runs are at stake: every other run is reported as still running.
        removed = prune(keep=lambda run: run != stale.name)
        assert removed == [stale.container.name]
        assert {c.run for c in list_sandboxes()} & ours == {running.name}
    finally:
        stale.close()  # its container is gone already: close must not mind
        running.close()
    assert left_after(running.name) == [] and left_after(stale.name) == []
