"""JupyterKernel, the client every kernel backend shares: a kernel that never answers is
given up on (and killed), one that is gone is named with its cause."""

from __future__ import annotations

from pathlib import Path

import pytest
from jupyter_client.blocking.client import BlockingKernelClient

from sandbox import KernelDied, SandboxUnavailable
from sandbox.client import JupyterKernel


def _silent_client(tmp_path: Path) -> BlockingKernelClient:
    """A client whose kernel never answers: nothing listens on its sockets."""
    client = BlockingKernelClient(transport="ipc", ip=str(tmp_path / "nobody"))
    client.session.key = b"k"
    return client


def test_ready_gives_up_on_a_kernel_that_never_answers(tmp_path: Path) -> None:
    killed: list[bool] = []
    kernel = JupyterKernel(
        _silent_client(tmp_path), is_alive=lambda: True, kill=lambda: killed.append(True)
    )
    with pytest.raises(SandboxUnavailable, match="did not answer within 0.5 s"):
        kernel.ready(0.5)
    assert killed == [True]
    kernel.shutdown()
    assert killed == [True]


def test_ready_names_the_cause_when_the_kernel_is_gone(tmp_path: Path) -> None:
    kernel = JupyterKernel(
        _silent_client(tmp_path),
        is_alive=lambda: False,
        kill=lambda: None,
        death_cause=lambda: "out of memory",
    )
    with pytest.raises(KernelDied, match="out of memory"):
        kernel.ready(30)
    kernel.shutdown()


def test_abandon_closes_this_end_and_leaves_the_process_to_its_backend(tmp_path: Path) -> None:
    killed: list[bool] = []
    kernel = JupyterKernel(
        _silent_client(tmp_path), is_alive=lambda: True, kill=lambda: killed.append(True)
    )
    assert not kernel.closed
    kernel.abandon()
    assert kernel.closed and not kernel.client.channels_running
    with pytest.raises(KernelDied, match="shut down"):
        kernel.execute("1", timeout=5)
    kernel.shutdown()  # already closed: nothing more, the backend ends the process
    assert killed == []
