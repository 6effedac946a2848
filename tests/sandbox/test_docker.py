"""The docker backend against a real daemon: hardening, probes, limits, death, output.

docs/reliability.md items 1, 2, 4, 5, 6 and 7 at the sandbox level (prune: test_prune.py).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import pytest

from sandbox import ExecTimeout, KernelDied
from sandbox.container import ENVIRONMENT, RUN_LABEL, DockerSandbox
from sandbox.options import DockerOptions

from ..labels import TEST_LABELS, left_after
from ..probes import assert_contained, probe_code

pytestmark = pytest.mark.docker

CANARY = "PRAXIS_TEST_CANARY"


def _open(tmp: Path, **options: Any) -> DockerSandbox:
    name = f"test-{uuid.uuid4().hex[:8]}"
    box = DockerSandbox(
        workspace=tmp / name, name=name, options=DockerOptions(labels=TEST_LABELS, **options)
    )
    box.open()
    return box


@pytest.fixture(scope="module")
def box(docker_image: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DockerSandbox]:
    """One sandbox with default limits, shared by the tests that each take a fresh kernel."""
    os.environ[CANARY] = "host-secret"
    try:
        sandbox = _open(tmp_path_factory.mktemp("docker"), image=docker_image, grace=1.0)
    finally:
        del os.environ[CANARY]
    try:
        yield sandbox
    finally:
        sandbox.close()


def _rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS in /proc/self/status")


def test_container_has_every_hardening_setting(box: DockerSandbox) -> None:
    client = docker.from_env()
    try:
        attrs = client.api.inspect_container(box.container.id)
    finally:
        client.close()
    host, config = attrs["HostConfig"], attrs["Config"]
    assert host["NetworkMode"] == "none"
    assert host["CapDrop"] == ["ALL"]
    assert sorted(host["CapAdd"]) == ["KILL", "SETGID", "SETUID"]  # the kernel server's only
    assert "no-new-privileges" in host["SecurityOpt"]
    assert host["ReadonlyRootfs"] is True
    assert "size=256m" in host["Tmpfs"]["/tmp"]
    assert host["PidsLimit"] == 256
    assert host["Memory"] == host["MemorySwap"] == 2 * 1024**3
    assert host["NanoCpus"] == 10**9
    assert host["Init"] is True
    assert host["Privileged"] is False
    assert config["User"] == "0:0"  # the kernel server; phase code runs as 1000 with no caps
    assert host["LogConfig"]["Type"] == "json-file"
    assert host["LogConfig"]["Config"]["max-size"]
    assert host["LogConfig"]["Config"]["max-file"]
    assert config["Labels"][RUN_LABEL] == box.name
    mounts = {m["Destination"]: m["Source"] for m in attrs["Mounts"]}
    assert set(mounts) == {"/workspace", "/rt"}
    assert mounts["/workspace"] == str(box.workspace.root.resolve())
    assert not any("docker.sock" in source for source in mounts.values())
    names = {entry.split("=", 1)[0] for entry in config["Env"]}
    assert CANARY not in names
    assert names <= set(ENVIRONMENT) | {"HOSTNAME"}


def test_probes_from_inside_fail(box: DockerSandbox) -> None:
    kernel = box.kernel()
    try:
        result = kernel.execute(probe_code(CANARY), timeout=30)
    finally:
        kernel.shutdown()
    assert result.ok, result.traceback
    assert_contained(json.loads(result.stdout))


def test_hung_cell_times_out_and_the_kernel_is_killed(box: DockerSandbox) -> None:
    kernel = box.kernel()
    with pytest.raises(ExecTimeout, match="timed out after 3 s"):
        kernel.execute("while True:\n    pass\n", timeout=3)
    assert kernel.alive() is False  # type: ignore[attr-defined]


def test_kernel_that_kills_itself_raises_kernel_died(box: DockerSandbox) -> None:
    kernel = box.kernel()
    with pytest.raises(KernelDied, match="SIGKILL"):
        kernel.execute("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n", timeout=60)


def test_100_mb_of_output_is_capped_and_host_memory_stays_bounded(box: DockerSandbox) -> None:
    kernel = box.kernel()
    before = _rss_bytes()
    try:
        result = kernel.execute(
            "import sys\nchunk = 'x' * (1 << 20)\n"
            "for _ in range(100):\n    sys.stdout.write(chunk)\n",
            timeout=120,
        )
    finally:
        kernel.shutdown()
    grown = _rss_bytes() - before
    assert result.ok
    assert result.truncated
    assert "output truncated" in result.stdout
    assert len(result.stdout) < 2 << 20
    assert grown < 64 << 20, f"the host process grew by {grown} bytes"


def test_files_cross_between_host_and_kernel_uid(box: DockerSandbox, tmp_path: Path) -> None:
    private = tmp_path / "secret.csv"
    private.write_text("a,b\n1,2\n")
    os.chmod(private, 0o600)
    box.upload(private, "inputs/secret.csv")
    kernel = box.kernel()
    try:
        result = kernel.execute(
            "import os\nos.makedirs('made/deep', exist_ok=True)\n"
            "open('made/deep/out.txt', 'w').write(open('inputs/secret.csv').read())\n",
            timeout=30,
        )
    finally:
        kernel.shutdown()
    assert result.ok, result.traceback
    folder = box.workspace.root / "made" / "deep"
    written = folder / "out.txt"
    assert written.read_text() == "a,b\n1,2\n"
    assert written.stat().st_uid == 1000  # the kernel's own file, readable by the host
    assert written.stat().st_mode & stat.S_IROTH and folder.stat().st_mode & stat.S_IROTH
    assert "made/deep/out.txt" in box.listing()
    box.fetch("made/deep/out.txt", tmp_path / "fetched.txt")
    assert (tmp_path / "fetched.txt").read_text() == "a,b\n1,2\n"


def test_fork_bomb_fails_the_code_and_the_host_stays_responsive(
    docker_image: str, tmp_path: Path
) -> None:
    sandbox = _open(tmp_path, image=docker_image, pids=64, grace=1.0)
    try:
        kernel = sandbox.kernel()
        bomb = """
import os, time
root, end = os.getpid(), time.time() + 5
while True:
    if os.getpid() != root and time.time() > end:
        os._exit(0)
    try:
        os.fork()
    except OSError:
        if os.getpid() == root:
            raise
        os._exit(0)
"""
        result = kernel.execute(bomb, timeout=60)
        assert result.status == "error"
        assert result.ename in ("BlockingIOError", "OSError")
        assert subprocess.run(["true"], timeout=30).returncode == 0
        kernel.shutdown()
        assert sandbox.kernel().execute("1 + 1", timeout=60).result == {"text/plain": "2"}
    finally:
        sandbox.close()


def test_memory_bomb_raises_kernel_died_out_of_memory(docker_image: str, tmp_path: Path) -> None:
    sandbox = _open(tmp_path, image=docker_image, memory="384m", warm=False)
    try:
        kernel = sandbox.kernel()
        hog = "blocks = []\nwhile True:\n    blocks.append(b'x' * (16 << 20))\n"
        with pytest.raises(KernelDied, match="out of memory"):
            kernel.execute(hog, timeout=120)
    finally:
        sandbox.close()


def test_close_leaves_no_container_and_keeps_the_workspace(
    docker_image: str, tmp_path: Path
) -> None:
    sandbox = _open(tmp_path, image=docker_image)
    kernel = sandbox.kernel()
    assert kernel.execute("open('kept.txt', 'w').write('x')", timeout=30).ok
    sandbox.close()
    sandbox.close()  # idempotent
    assert left_after(sandbox.name) == []  # killed at close; the daemon removes it
    sandbox.open()  # the workspace (and its quota image) is there again
    try:
        assert (sandbox.workspace.root / "kept.txt").read_text() == "x"
    finally:
        sandbox.close()


# Run in the container as root: the kernel servers are the python processes with the
# server's socket in their command line whose parent is not a server (kernels are forks).
SERVERS = """
import os, signal
def cmdline(pid):
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return f.read()
def parent(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])
def is_server(pid):
    line, up = cmdline(pid), parent(pid)
    return line.startswith(b"python") and b"zygote.sock" in line and not (
        up and cmdline(up).startswith(b"python")
    )
servers = []
for pid in [p for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()]:
    try:
        if is_server(pid):
            servers.append(int(pid))
    except OSError:
        pass
"""
KILL_ZYGOTE = SERVERS + "for pid in servers:\n    os.kill(pid, signal.SIGKILL)\n"
COUNT_SERVERS = SERVERS + "print(len(servers))\n"


def test_the_kernel_server_starts_with_the_container_and_again_when_it_ended(
    docker_image: str, tmp_path: Path
) -> None:
    """The container's command starts the kernel server (no exec on the way to the first
    kernel); once it ended, the container says so and the next kernel starts it again."""
    sandbox = _open(tmp_path, image=docker_image, warm=False)
    try:
        assert sandbox.kernel().execute("1 + 1", timeout=60).result == {"text/plain": "2"}
        assert not sandbox._command_ended()
        sandbox.quiesce()
        sandbox.container.exec_run(["python", "-c", KILL_ZYGOTE], user="0:0")
        for _ in range(100):
            if sandbox._command_ended():
                break
            time.sleep(0.1)
        assert sandbox._command_ended()
        assert sandbox.kernel().execute("2 + 2", timeout=60).result == {"text/plain": "4"}
    finally:
        sandbox.close()


def _servers(sandbox: DockerSandbox) -> int:
    """How many kernel servers run in the sandbox's container."""
    done = sandbox.container.exec_run(["python", "-c", COUNT_SERVERS], user="0:0")
    return int(done.output.decode().strip().splitlines()[-1])


def test_reopening_at_once_waits_for_the_killed_container(
    docker_image: str, tmp_path: Path
) -> None:
    """close() only kills the container (the daemon removes it): an open of the same run
    right after waits until it is gone, so the workspace's disk image is mounted once."""
    sandbox = _open(tmp_path, image=docker_image, warm=False)
    try:
        for n in range(5):
            kernel = sandbox.kernel()
            code = f"open('round{n}.txt', 'w').write('{n}')"
            assert kernel.execute(code, timeout=60).ok
            assert _servers(sandbox) == 1  # the container's own, not one more by an exec
            sandbox.close()
            sandbox.open()
            names = sorted(p.name for p in sandbox.workspace.root.glob("round*.txt"))
            assert names == [f"round{i}.txt" for i in range(n + 1)]
            assert sandbox.workspace.quota is not None  # the quota mount, not a plain folder
    finally:
        sandbox.close()
    assert left_after(sandbox.name) == []
