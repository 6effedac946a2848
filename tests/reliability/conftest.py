"""Item 7's finaliser: no container this session's flows created outlives the session."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator

import pytest

from tests.conftest import docker_reason

from ._flows import SESSION, SESSION_LABEL


def _ours() -> list[str]:
    found = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label={SESSION_LABEL}={SESSION}"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return found.stdout.split()


@pytest.fixture(scope="session", autouse=True)
def _no_orphan_containers() -> Iterator[None]:
    yield
    if docker_reason() is not None:
        return
    deadline = time.monotonic() + 30  # a killed container is removed by the daemon
    while (left := _ours()) and time.monotonic() < deadline:
        time.sleep(0.2)
    if left:  # remove them (they are ours), then fail the session
        subprocess.run(["docker", "rm", "-f", *left], capture_output=True, timeout=60)
    assert not left, f"containers of this session outlived it: {left}"
