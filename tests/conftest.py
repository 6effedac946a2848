"""Project-wide fixtures and the ``docker`` marker policy.

Tests marked ``docker`` are skipped when no Docker daemon answers, and FAIL instead when
``PRAXIS_REQUIRE_DOCKER=1`` (as in CI), so a broken daemon never looks green there. The
``postgres`` fixture follows the same rule with ``PRAXIS_REQUIRE_POSTGRES=1``, and tests marked
``ray`` (which need the ray extra) with ``PRAXIS_REQUIRE_RAY=1``.
"""

from __future__ import annotations

import gc
import importlib.util
import os
import signal
import subprocess
import warnings
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

from sandbox import Sandbox, open_sandbox

from . import pg_server
from .labels import TEST_LABEL


@cache
def docker_reason() -> str | None:
    """None when a Docker daemon answers, else why not."""
    try:
        from sandbox.daemon import available as docker_available
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


def ray_reason() -> str | None:
    """None when Ray can be imported, else why not (the ray extra is not installed)."""
    if importlib.util.find_spec("ray") is None:
        return "ray is not installed: pip install -e '.[ray]'"
    return None


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("ray") is not None and (why := ray_reason()) is not None:
        if os.environ.get("PRAXIS_REQUIRE_RAY") == "1":
            pytest.fail(f"PRAXIS_REQUIRE_RAY=1 but {why}")
        pytest.skip(why)
    if item.get_closest_marker("docker") is None:
        return
    reason = docker_reason()
    if reason is None:
        return
    if require_docker():
        pytest.fail(f"PRAXIS_REQUIRE_DOCKER=1 but Docker is unavailable: {reason}")
    pytest.skip(f"no Docker daemon: {reason}")


@pytest.fixture
def allow_local() -> Iterator[None]:
    """The person's ``--allow-local``: for a test whose flow.yaml asks for the local or fake
    backend (code on this host), as a person passes the flag on the command line."""
    from praxis.flows.definition import isolation

    before = isolation.allow_local()
    try:
        yield
    finally:
        isolation.allow_local(before)


@pytest.fixture
def local_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """``PRAXIS_SANDBOX=local`` in the person's environment: their ``--allow-local`` for every
    ``praxis`` process a test starts (for tests whose flows all ask for local or fake)."""
    monkeypatch.setenv("PRAXIS_SANDBOX", "local")


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


@pytest.fixture(scope="session")
def postgres() -> Iterator[pg_server.Server]:
    """A PostgreSQL server of this session on a unix socket (tests/pg_server.py)."""
    where = pg_server.bindir()
    reason = None
    if where is None:
        reason = "no PostgreSQL server binaries: apt-get install postgresql"
    elif importlib.util.find_spec("psycopg") is None:
        reason = "psycopg is not installed: pip install 'praxis[postgres]'"
    if reason is not None:
        if os.environ.get("PRAXIS_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"PRAXIS_REQUIRE_POSTGRES=1 but {reason}")
        pytest.skip(reason)
    assert where is not None
    with pg_server.running(where) as server:
        yield server


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


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C is a KeyboardInterrupt here whatever started the tests: a shell that runs a
    command in the background without job control starts it with SIGINT ignored, and that
    would reach every `praxis` the tests start (the Ctrl-C tests would then wait in vain)."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session", autouse=True)
def _reap_test_containers() -> Iterator[None]:
    """After the session, remove the containers this session's tests left behind."""
    yield
    if docker_reason() is None:
        _remove_test_containers()


# -- workspace quota mounts ---------------------------------------------------------------
# A docker workspace with a disk quota is a loop mount under the run folder. A test that kills
# its runner (SIGKILL) leaves the mount behind; pytest's removal of old tmp folders would then
# delete inside it and fail on the mount point. Unmount what is ours (this session's folders,
# and those of sessions whose process is gone) before tmp folders are made and after the run.


def _mounts_below(root: Path) -> list[Path]:
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return []
    points = [Path(line.split()[1].replace("\\040", " ")) for line in lines if line.split()]
    return [p for p in points if p.is_relative_to(root)]


def _session_alive(numbered: Path) -> bool:
    """Whether the pytest session that made ``numbered`` (pytest-N) still runs."""
    try:
        pid = int((numbered / ".lock").read_text().strip())
    except (OSError, ValueError):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _unmount(points: list[Path]) -> None:
    for point in sorted(points, key=lambda p: len(p.parts), reverse=True):
        subprocess.run(["umount", "-l", str(point)], capture_output=True, check=False)


def pytest_sessionstart(session: pytest.Session) -> None:
    import tempfile

    for base in Path(tempfile.gettempdir()).glob("pytest-of-*"):
        dead = []
        for point in _mounts_below(base):
            top = base / point.relative_to(base).parts[0]
            if top.name.startswith("garbage-") or not _session_alive(top):
                dead.append(point)
        _unmount(dead)


def pytest_sessionfinish(session: pytest.Session) -> None:
    factory = getattr(session.config, "_tmp_path_factory", None)
    base = getattr(factory, "_basetemp", None)
    if base is not None:
        _unmount(_mounts_below(Path(base)))


@pytest.fixture(scope="session")
def _person_accounts(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """One data folder of accounts for the session: a person, ``tester`` (no role), and
    their token."""
    from praxis.service.accounts import Accounts

    folder = tmp_path_factory.mktemp("praxis-data")
    accounts = Accounts(folder)
    accounts.add("person", "tester")
    return folder, accounts.issue("person", "tester")


@pytest.fixture(autouse=True)
def person(
    _person_accounts: tuple[Path, str],
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> str:
    """Every test acts as a person (``person:tester``, by token), in its own copy of the
    session's accounts (a test's grants and audit stay its own), and never as whoever runs
    the suite; a test that wants an agent sets ``PRAXIS_TOKEN`` to an agent's token."""
    import shutil

    folder, token = _person_accounts
    mine = tmp_path_factory.mktemp("person") / "praxis-data"  # not in the test's tmp_path
    shutil.copytree(folder, mine)
    monkeypatch.setenv("PRAXIS_DATA", str(mine))
    monkeypatch.setenv("PRAXIS_TOKEN", token)
    monkeypatch.delenv("PRAXIS_ACTOR", raising=False)
    return token
