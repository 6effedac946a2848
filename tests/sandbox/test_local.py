"""The local backend and the shared Jupyter client: timeouts, kernel death, output caps."""

from __future__ import annotations

import threading
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox import ExecTimeout, KernelDied, Sandbox, SandboxUnavailable, open_sandbox
from sandbox.client import JupyterKernel
from sandbox.local import LocalSandbox
from sandbox.output import truncation_marker

TIMEOUT = 60.0


@pytest.fixture
def quick(tmp_path: Path) -> Iterator[Sandbox]:
    """A local sandbox with a one-second grace period and small output caps."""
    sb = open_sandbox(
        {"backend": "local", "grace": 1.0, "stream_limit": 1000},
        workspace=tmp_path / "ws",
        name="quick",
    )
    sb.open()
    try:
        yield sb
    finally:
        sb.close()


def test_a_hung_cell_times_out_and_the_kernel_is_killed(quick: Sandbox) -> None:
    kernel = quick.kernel()
    assert isinstance(kernel, JupyterKernel)
    with pytest.raises(ExecTimeout) as info:
        kernel.execute("while True: pass", timeout=1.0)
    assert info.value.timeout == 1.0 and str(info.value) == "timed out after 1 s"
    assert not kernel.alive()
    with pytest.raises(KernelDied):
        kernel.execute("1", timeout=TIMEOUT)
    kernel.shutdown()  # idempotent on a dead kernel


def test_a_kernel_that_kills_itself_raises_kernel_died(quick: Sandbox) -> None:
    kernel = quick.kernel()
    # the generous timeout proves the death was noticed long before it
    with pytest.raises(KernelDied) as info:
        kernel.execute("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", timeout=TIMEOUT)
    assert info.value.cause == "killed by signal SIGKILL"
    kernel.shutdown()


def test_a_kernel_that_exits_names_its_exit_code(quick: Sandbox) -> None:
    kernel = quick.kernel()
    with pytest.raises(KernelDied) as info:
        kernel.execute("import os\nos._exit(3)", timeout=TIMEOUT)
    assert info.value.cause == "exit code 3"


def test_printing_100_mb_is_capped_and_host_memory_stays_bounded(
    local_sandbox: Sandbox,
) -> None:
    kernel = local_sandbox.kernel()
    tracing = tracemalloc.is_tracing()
    tracemalloc.start()
    tracemalloc.reset_peak()
    try:
        result = kernel.execute("for _ in range(100): print('x' * 1_000_000)", timeout=TIMEOUT)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        if not tracing:
            tracemalloc.stop()
        kernel.shutdown()
    assert result.ok and result.truncated
    limit = 1 << 20
    dropped = 100 * 1_000_001 - limit
    assert result.stdout == (("x" * 1_000_000 + "\n") * 2)[:limit] + truncation_marker(dropped)
    assert result.outputs[-1]["text"] == truncation_marker(dropped)
    assert peak < 32 * 2**20, f"host allocated {peak / 2**20:.0f} MiB while reading output"


def test_stream_cap_counts_both_streams_and_marks_once(quick: Sandbox) -> None:
    kernel = quick.kernel()
    code = (
        "import sys\nprint('a' * 600)\nsys.stdout.flush()\n"
        "print('b' * 600, file=sys.stderr)\nsys.stderr.flush()\nprint('c' * 10)"
    )
    result = kernel.execute(code, timeout=TIMEOUT)
    kernel.shutdown()
    assert result.truncated
    assert result.stdout == "a" * 600 + "\n"
    assert result.stderr.startswith("b" * 399) and result.stderr.count("[praxis:") == 1
    assert result.stderr.endswith(truncation_marker(1213 - 1000))


def test_display_data_and_small_output_are_not_truncated(local_sandbox: Sandbox) -> None:
    kernel = local_sandbox.kernel()
    code = "from IPython.display import display, HTML\ndisplay(HTML('<b>hi</b>'))\nprint('ok')"
    result = kernel.execute(code, timeout=TIMEOUT)
    kernel.shutdown()
    assert not result.truncated and result.stdout == "ok\n"
    assert result.display[0]["text/html"] == "<b>hi</b>"
    assert [o["output_type"] for o in result.outputs] == ["display_data", "stream"]


def test_the_warm_kernel_has_pandas_imported_and_a_clean_namespace(
    local_sandbox: Sandbox,
) -> None:
    kernel = local_sandbox.kernel()
    code = "import sys\nprint('pandas' in sys.modules, [n for n in dir() if 'praxis' in n])"
    result = kernel.execute(code, timeout=TIMEOUT)
    kernel.shutdown()
    assert result.stdout == "True []\n"


def test_each_kernel_call_starts_one_more_kernel(local_sandbox: Sandbox) -> None:
    assert isinstance(local_sandbox, LocalSandbox)
    first = local_sandbox.kernel()
    second = local_sandbox.kernel()
    assert first is not second
    assert local_sandbox.kernels_started == 2 + local_sandbox.spares  # handed out, and spares
    local_sandbox.close()
    assert not first.alive() and not second.alive()  # type: ignore[attr-defined]


def test_kernel_before_open_is_refused(tmp_path: Path) -> None:
    sb = LocalSandbox(workspace=tmp_path / "ws", name="x")
    with pytest.raises(SandboxUnavailable, match="call open"):
        sb.kernel()


def test_describe_says_it_is_not_isolated(local_sandbox: Sandbox) -> None:
    info = local_sandbox.describe()
    assert info["backend"] == "local" and info["isolated"] is False
    assert "WITHOUT isolation" in info["warning"]


def test_interrupt_stops_running_code_and_the_kernel_lives_on(local_sandbox: Sandbox) -> None:
    kernel = local_sandbox.kernel()
    timer = threading.Timer(1.0, kernel.interrupt)
    timer.start()
    try:
        result = kernel.execute("import time\ntime.sleep(60)", timeout=TIMEOUT)
        after = kernel.execute("print('still here')", timeout=TIMEOUT)
    finally:
        timer.cancel()
        kernel.shutdown()
    assert (result.status, result.ename) == ("error", "KeyboardInterrupt")
    assert after.stdout == "still here\n"
