"""The kernel zygote: fresh forked kernels, process-group kills, exit statuses, a dead zygote.

Local-backend tests use real forked kernels on this interpreter; the docker ones run the same
zygote inside the sandbox container.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox import KernelDied, SandboxUnavailable
from sandbox.client import JupyterKernel
from sandbox.container import DockerSandbox
from sandbox.forkserver import ForkServer, ZygoteSupervisor, describe_status
from sandbox.local import LocalSandbox
from sandbox.options import DockerOptions, LocalOptions

from ..labels import TEST_LABELS

TIMEOUT = 60.0


@pytest.fixture
def box(tmp_path: Path) -> Iterator[LocalSandbox]:
    sandbox = LocalSandbox(
        workspace=tmp_path / "ws", name="zygote", options=LocalOptions(grace=1.0)
    )
    sandbox.open()
    try:
        yield sandbox
    finally:
        sandbox.close()


def _kernel(sandbox: LocalSandbox | DockerSandbox) -> JupyterKernel:
    kernel = sandbox.kernel()
    assert isinstance(kernel, JupyterKernel)
    return kernel


def _out(kernel: JupyterKernel, code: str) -> str:
    result = kernel.execute(code, timeout=TIMEOUT)
    assert result.ok, (result.ename, result.evalue, result.traceback)
    return result.stdout


def _gone(pid: int) -> bool:
    """True when ``pid`` no longer runs (absent, or a zombie waiting for its reaper)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def _wait(predicate: object, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.02)
    return False


def test_each_kernel_is_a_fresh_process_with_no_earlier_state(box: LocalSandbox) -> None:
    first = _kernel(box)
    pid1 = int(_out(first, "import os\nleftover = 42\nprint(os.getpid())"))
    first.shutdown()
    second = _kernel(box)
    try:
        out = _out(second, "import os\nprint(os.getpid(), 'leftover' in dir(), os.getsid(0))")
    finally:
        second.shutdown()
    pid2, seen, session = out.split()
    assert int(pid2) != pid1
    assert seen == "False"
    assert int(session) == int(pid2)  # its own session: a kill takes its whole group


def test_forked_kernels_use_numpy_and_pandas_without_hanging(box: LocalSandbox) -> None:
    code = (
        "import numpy as np, pandas as pd\n"
        "a = np.arange(250_000, dtype=float).reshape(500, 500) / 1e5\n"
        "b = a @ a.T\n"
        "df = pd.DataFrame({'k': np.arange(10_000) % 7, 'v': np.arange(10_000)})\n"
        "print(round(float(b.trace()), 3), int(df.groupby('k').v.sum().sum()))"
    )
    expected = None
    for _ in range(2):  # two kernels forked from the same zygote
        kernel = _kernel(box)
        try:
            out = _out(kernel, code)
        finally:
            kernel.shutdown()
        assert out.split()[1] == str(sum(range(10_000)))
        expected = expected or out
        assert out == expected


def test_kill_takes_the_kernels_whole_process_group(box: LocalSandbox) -> None:
    kernel = _kernel(box)
    pids = _out(
        kernel,
        "import subprocess\n"
        "child = subprocess.Popen(['sleep', '300'])\n"
        "grandchild = subprocess.Popen(['sh', '-c', 'sleep 300 & wait'])\n"
        "import os\nprint(os.getpid(), child.pid, grandchild.pid)",
    )
    kernel_pid, *children = (int(p) for p in pids.split())
    assert not any(_gone(p) for p in children)
    kernel.shutdown()
    assert _wait(lambda: all(_gone(p) for p in [kernel_pid, *children]))


def test_the_zygote_reports_exit_codes_and_signals(box: LocalSandbox) -> None:
    server = box.server
    assert server is not None
    exits = _kernel(box)
    assert exits.client.connection_file
    key = Path(exits.client.connection_file).stem
    assert server.status(key).startswith("running ")
    with pytest.raises(KernelDied) as info:
        exits.execute("import os\nos._exit(7)", timeout=TIMEOUT)
    assert info.value.cause == "exit code 7"
    assert server.status(key) == "exit 7"
    killed = _kernel(box)
    other = Path(killed.client.connection_file).stem
    server.kill(other)
    assert _wait(lambda: server.status(other) == "signal 9")
    assert (server.folder / f"{other}.exit").read_text() == "signal 9\n"
    assert describe_status(server.status(other)) == "killed by signal SIGKILL"
    assert server.status("never-spawned") == "unknown"
    killed.shutdown()


def test_a_dead_zygote_fails_the_running_kernel_and_is_started_again(box: LocalSandbox) -> None:
    kernel = _kernel(box)
    assert box._process is not None
    box._process.kill()  # the zygote, as a hostile phase or the OOM killer might
    box._process.wait()
    with pytest.raises(KernelDied, match="kernel server ended"):
        kernel.execute("import time\ntime.sleep(30)", timeout=TIMEOUT)
    kernel.shutdown()
    # the spares died with the zygote: the sandbox starts a new zygote and goes on
    fresh = _kernel(box)
    try:
        assert _out(fresh, "print(6 * 7)") == "42\n"
    finally:
        fresh.shutdown()


def test_a_zygote_that_never_starts_is_sandbox_unavailable(tmp_path: Path) -> None:
    (tmp_path / "zygote.log").write_text("ModuleNotFoundError: No module named 'ipykernel'\n")
    zygote = ZygoteSupervisor(ForkServer(tmp_path), lambda: lambda: True, timeout=30)
    with pytest.raises(SandboxUnavailable, match="ended while starting.*ipykernel"):
        zygote.spawn("k1", {})


def test_bad_requests_get_error_answers_and_the_zygote_lives_on(box: LocalSandbox) -> None:
    _kernel(box).shutdown()  # the zygote is up
    server = box.server
    assert server is not None
    assert server.request("spawn", key="../escape", connection={})["ok"] is False
    assert server.request("spawn", key="k98", connection="x")["ok"] is False
    assert server.request("spawn", key="k99")["ok"] is False
    assert server.request("launch", key="k99")["ok"] is False
    assert server.request("kill", key="k99")["ok"] is False
    assert server.ping()


# -- docker --------------------------------------------------------------------------------


@pytest.fixture
def docker_box(docker_image: str, tmp_path: Path) -> Iterator[DockerSandbox]:
    name = f"test-{uuid.uuid4().hex[:8]}"
    sandbox = DockerSandbox(
        workspace=tmp_path / name,
        name=name,
        options=DockerOptions(image=docker_image, labels=TEST_LABELS, pids=48),
    )
    sandbox.open()
    try:
        yield sandbox
    finally:
        sandbox.close()


@pytest.mark.docker
def test_docker_fork_failure_is_an_error_answer_not_a_crash(docker_box: DockerSandbox) -> None:
    kernel = _kernel(docker_box)
    hog = (
        "import subprocess\nheld = []\n"
        "try:\n"
        "    while True:\n"
        "        held.append(subprocess.Popen(['sleep', '300']))\n"
        "except OSError as exc:\n"
        "    print(type(exc).__name__)\n"
    )
    assert _out(kernel, hog) == "BlockingIOError\n"  # the pids limit is used up
    zygote = docker_box._zygote
    assert zygote is not None
    errors = []
    for n in range(20):  # a pid may free up now and then: a fork soon fails all the same
        try:
            zygote.server.spawn(f"extra{n}", {})
        except SandboxUnavailable as exc:
            errors.append(str(exc))
            break
    assert errors and "cannot fork a kernel" in errors[0]
    assert zygote.server.ping()
    kernel.shutdown()  # frees the pids: the group kill takes every sleep
    fresh = _kernel(docker_box)
    assert _out(fresh, "print(1 + 1)") == "2\n"
    fresh.shutdown()


SIGNAL_ALL = """\
import os, signal
refused, sent = 0, []
for name in os.listdir("/proc"):
    if not name.isdigit() or int(name) == os.getpid():
        continue
    try:
        with open(f"/proc/{name}/status") as fh:
            uid = int(next(line for line in fh if line.startswith("Uid:")).split()[1])
    except (OSError, StopIteration):
        continue
    if uid == os.getuid():
        continue  # the phase's own uid (a kernel shut down a moment ago, still exiting)
    for sig in (signal.SIGSTOP, signal.SIGKILL):
        try:
            os.kill(int(name), sig)
            sent.append(int(name))
        except PermissionError:
            refused += 1
        except ProcessLookupError:
            pass
print(refused > 0, sent)
"""


@pytest.mark.docker
def test_docker_a_phase_cannot_signal_the_zygote_or_the_spares(docker_box: DockerSandbox) -> None:
    kernel = _kernel(docker_box)
    _kernel(docker_box).shutdown()  # a spare was forked after this kernel: it waits dormant
    assert _out(kernel, SIGNAL_ALL) == "True []\n"  # every other process refused the signals
    assert docker_box._zygote is not None and docker_box._zygote.server.ping()
    kernel.shutdown()
    fresh = _kernel(docker_box)  # the spare the phase tried to kill starts as usual
    try:
        assert _out(fresh, "import os\nprint(os.getuid(), os.getsid(0) == os.getpid())") == (
            "1000 True\n"
        )
    finally:
        fresh.shutdown()


@pytest.mark.docker
def test_docker_a_dead_zygote_is_named_and_replaced(docker_box: DockerSandbox) -> None:
    kernel = _kernel(docker_box)
    zygote_pid = _out(kernel, "import os\nprint(os.getppid())").strip()
    code = "import time\ntime.sleep(30)"
    killed = docker_box.container.exec_run(
        ["python", "-c", f"import os; os.kill({zygote_pid}, 9)"], user="0:0"
    )
    assert killed.exit_code == 0, killed.output
    with pytest.raises(KernelDied, match="kernel server ended"):
        kernel.execute(code, timeout=TIMEOUT)
    kernel.shutdown()
    fresh = _kernel(docker_box)
    try:
        assert _out(fresh, "import os\nprint(os.getsid(0) == os.getpid())") == "True\n"
    finally:
        fresh.shutdown()
    assert os.path.exists(docker_box._runtime / "zygote.sock")  # type: ignore[operator]


PEEK = """\
import glob, os
own, zygote = os.getpid(), os.getppid()


def parent(pid):
    try:
        with open(f"/proc/{pid}/status") as fh:
            return int(next(line for line in fh if line.startswith("PPid:")).split()[1])
    except OSError:  # the process ended while we looked (a kernel just shut down)
        return None


pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
others = [zygote] + [p for p in pids if p != own and parent(p) == zygote]  # and the spares
readable = []
for pid in others:
    try:
        with open(f"/proc/{pid}/mem", "rb") as fh:
            readable.append(pid)
    except OSError:
        pass
print(len(others), readable, sorted(glob.glob("/rt/*.json")))
"""


@pytest.mark.docker
def test_docker_a_phase_cannot_reach_the_spare_kernels_or_the_zygote(
    docker_box: DockerSandbox,
) -> None:
    kernel = _kernel(docker_box)
    try:
        _kernel(docker_box).shutdown()  # make sure a spare was forked after this kernel
        count, readable, files = _out(kernel, PEEK).split(" ", 2)
        assert int(count) >= 2  # the zygote and at least one spare kernel
        assert readable == "[]"  # no other process's memory: not the spares' keys, not the zygote
        assert files.strip() == "[]"  # no connection file left to read a key from
    finally:
        kernel.shutdown()
