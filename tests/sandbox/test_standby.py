"""Standby: warm kernels handed out once each, a failed or dead one skipped, the spares shut
down at close and the kernels handed out returned to the caller (kernels made in-process)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from sandbox import ExecResult, Kernel, KernelDied, SandboxUnavailable
from sandbox.standby import Standby, StandbyKernels


class Made(Kernel):
    """A kernel that only records whether it was activated and shut down."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.activated = False
        self.closed = False

    def execute(self, code: str, *, timeout: float, on_output: Any = None) -> ExecResult:
        return ExecResult(status="ok")

    def interrupt(self) -> None:
        pass

    def shutdown(self) -> None:
        self.closed = True


class Starts:
    """``start`` for a Standby: numbered kernels; the first ``failing`` starts raise."""

    def __init__(self, failing: int = 0) -> None:
        self.failing = failing
        self.made: list[Made] = []
        self.calls = 0
        self.lock = threading.Lock()

    def __call__(self) -> Kernel:
        with self.lock:
            self.calls += 1
            if self.calls <= self.failing:
                raise SandboxUnavailable(f"start {self.calls} failed")
            kernel = Made(self.calls)
            self.made.append(kernel)
            return kernel


def wait_for(done: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 30
    while not done():
        assert time.monotonic() < deadline, "the standby never started its spares"
        time.sleep(0.005)


@pytest.fixture
def made() -> Iterator[Callable[..., tuple[Standby, Starts]]]:
    boxes: list[Standby] = []

    def make(failing: int = 0, **options: Any) -> tuple[Standby, Starts]:
        starts = Starts(failing)
        standby = Standby(starts, **options)
        boxes.append(standby)
        return standby, starts

    yield make
    for standby in boxes:
        standby.close()


def test_warm_starts_one_kernel_and_each_take_fills_the_spares(made: Any) -> None:
    standby, starts = made(spares=2)
    standby.warm()
    standby.warm()  # idempotent
    assert standby.started == 1  # the first kernel starts alone
    first = standby.take()
    assert standby.started == 3  # handed out: both spares start
    second = standby.take()
    assert first is not second and standby.started == 4
    assert standby.handed_out() == [first, second]
    standby.close()
    # a spare still queued at close is cancelled, never started; one started is shut down
    assert all(k.closed for k in starts.made if k not in (first, second))


def test_a_kernel_that_failed_to_start_is_skipped(made: Any) -> None:
    standby, _ = made(failing=2, spares=2)
    kernel = standby.take()  # the first two starts failed: the third kernel
    assert isinstance(kernel, Made) and kernel.n == 3


def test_when_every_try_fails_the_start_error_is_raised(made: Any) -> None:
    standby, starts = made(failing=100, spares=2)
    with pytest.raises(SandboxUnavailable, match="start .* failed"):
        standby.take()
    assert starts.calls >= 3  # spares + 1 tries
    assert standby.handed_out() == []


def test_a_kernel_usable_rejects_is_shut_down_and_the_next_handed_out(made: Any) -> None:
    standby, _ = made(spares=2)
    rejected: list[Kernel] = []

    def usable(kernel: Kernel) -> bool:
        if not rejected:
            rejected.append(kernel)
            return False
        return True

    kernel = standby.take(usable)
    assert kernel is not rejected[0] and rejected[0].closed
    with pytest.raises(KernelDied, match="ended before it was handed out"):
        standby.take(lambda k: False)


def test_activate_runs_on_the_kernel_handed_out_and_a_failure_tries_the_next(
    made: Any,
) -> None:
    seen: list[Made] = []

    def activate(kernel: Kernel, code: str | None, timeout: float) -> ExecResult | None:
        assert isinstance(kernel, Made) and code is None
        seen.append(kernel)
        if len(seen) == 1:
            raise KernelDied("activation failed")
        kernel.activated = True
        return None

    standby, _ = made(spares=2, activate=activate)
    kernel = standby.take()
    assert isinstance(kernel, Made) and kernel.activated
    assert seen[0].closed and seen[0] is not kernel
    assert standby.handed_out() == [kernel]


def test_code_runs_once_in_the_kernel_handed_out_within_the_activation_if_it_takes_it(
    made: Any,
) -> None:
    ran: list[tuple[int, str | None]] = []

    def activate(kernel: Kernel, code: str | None, timeout: float) -> ExecResult | None:
        assert isinstance(kernel, Made)
        ran.append((kernel.n, code))
        return ExecResult(status="ok", stdout="set") if code is not None else None

    standby, _ = made(spares=2, activate=activate)
    kernel, result = standby.take_running(code="params = {}")
    assert isinstance(kernel, Made) and ran == [(kernel.n, "params = {}")]
    assert result is not None and result.stdout == "set"

    class Counting(Made):
        def execute(self, code: str, *, timeout: float, on_output: Any = None) -> ExecResult:
            executed.append(code)
            return ExecResult(status="ok")

    executed: list[str] = []
    plain = Standby(lambda: Counting(0), spares=1)  # no activation: the code is executed
    try:
        kernel, result = plain.take_running(code="params = {}")
        assert executed == ["params = {}"] and result is not None and result.ok
        assert plain.take_running()[1] is None and executed == ["params = {}"]
    finally:
        plain.close()


def test_close_shuts_the_spares_and_returns_the_kernels_still_out(made: Any) -> None:
    standby, starts = made(spares=2)
    kept, ended = standby.take(), standby.take()
    wait_for(lambda: len(starts.made) == 4)  # both spares started
    ended.shutdown()
    assert standby.handed_out() == [kept]
    assert standby.close() == [kept]
    spares = [k for k in starts.made if k not in (kept, ended)]
    assert len(spares) == 2 and all(k.closed for k in spares)
    assert not kept.closed  # the caller releases it
    assert standby.close() == []


def test_a_sandbox_not_open_has_no_kernel_to_hand_out() -> None:
    class Closed(StandbyKernels):
        backend = "local"
        _standby = None

    with pytest.raises(SandboxUnavailable, match="the local sandbox is not open"):
        Closed().kernel()
    assert Closed().kernels_started == 0


def test_every_hand_out_is_announced_to_the_sandbox_whichever_way_it_is_asked(
    made: Any,
) -> None:
    """A backend sweeps at quiesce only after a kernel was handed out (docker's dirty flag):
    ``kernel_running`` must say so as ``kernel`` does, or what its phase starts survives."""
    standby, _ = made(spares=1)

    class Counting(StandbyKernels):
        backend = "local"

        def __init__(self) -> None:
            self._standby = standby
            self.announced = 0

        def _handing_out(self) -> None:
            self.announced += 1

    box = Counting()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("sandbox.client.alive", lambda kernel: True)
        box.kernel()
        box.kernel_running("params = {}", timeout=5)
    assert box.announced == 2
