"""Project-wide fixtures and the ``docker`` marker policy.

Tests marked ``docker`` are skipped when no Docker daemon answers, and FAIL instead when
``PRAXIS_REQUIRE_DOCKER=1`` (as in CI), so a broken daemon never looks green there.
"""

from __future__ import annotations

import gc
import os
import subprocess
import warnings
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

from sandbox import Sandbox, open_sandbox

from .labels import TEST_LABEL


@cache
def docker_reason() -> str | None:
    """None when a Docker daemon answers, else why not."""
    try:
        from sandbox.container import docker_available
    except ImportError as exc:
        return f"the docker backend cannot be loaded: {exc}"
    # the docker SDK leaks the unix socket of a failed connect (docker/transport/unixconn.py):
    # collect it here, quietly, so it cannot fail whichever test runs next
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        try:
            return docker_available()
        finally:
            gc.collect()


def require_docker() -> bool:
    return os.environ.get("PRAXIS_REQUIRE_DOCKER") == "1"


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("docker") is None:
        return
    reason = docker_reason()
    if reason is None:
        return
    if require_docker():
        pytest.fail(f"PRAXIS_REQUIRE_DOCKER=1 but Docker is unavailable: {reason}")
    pytest.skip(f"no Docker daemon: {reason}")


@pytest.fixture
def local_sandbox(tmp_path: Path) -> Iterator[Sandbox]:
    """An open local sandbox (kernels as subprocesses) on ``tmp_path/workspace``."""
    sandbox = open_sandbox({"backend": "local"}, workspace=tmp_path / "workspace", name="test")
    sandbox.open()
    try:
        yield sandbox
    finally:
        sandbox.close()


@pytest.fixture
def fake_sandbox(tmp_path: Path) -> Iterator[Sandbox]:
    """An open in-process fake sandbox on ``tmp_path/workspace``."""
    sandbox = open_sandbox({"backend": "fake"}, workspace=tmp_path / "workspace", name="test")
    sandbox.open()
    try:
        yield sandbox
    finally:
        sandbox.close()


@pytest.fixture(scope="session")
def docker_image() -> str:
    """The sandbox image's tag, built once per session if missing (needs a daemon)."""
    reason = docker_reason()
    if reason is not None:
        if require_docker():
            pytest.fail(f"PRAXIS_REQUIRE_DOCKER=1 but Docker is unavailable: {reason}")
        pytest.skip(f"no Docker daemon: {reason}")
    from sandbox.image.build import ensure_image

    return ensure_image(progress=lambda _line: None)


def _remove_test_containers() -> None:
    try:
        found = subprocess.run(
            ["docker", "ps", "-aq", "--filter", f"label={TEST_LABEL}"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return
    ids = found.stdout.split()
    if ids:
        subprocess.run(["docker", "rm", "-f", *ids], capture_output=True, timeout=60, check=False)


@pytest.fixture(scope="session", autouse=True)
def _reap_test_containers() -> Iterator[None]:
    """After the session, remove the containers this session's tests left behind."""
    yield
    if docker_reason() is None:
        _remove_test_containers()
