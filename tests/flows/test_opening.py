"""A sandbox made and opened on its own thread: what make or open raised comes out of box(),
and a sandbox nobody takes is closed."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from praxis.flows.engine.opening import Opening
from sandbox import SandboxUnavailable
from sandbox.fake import FakeSandbox


class Slow(FakeSandbox):
    """Opens only when the test lets it; counts its closes."""

    def __init__(self, *, fail: bool = False, **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.go = threading.Event()
        self.fail = fail
        self.closes = 0

    def open(self) -> None:
        self.go.wait(30)
        if self.fail:
            raise SandboxUnavailable("no Docker daemon answers")
        super().open()

    def close(self) -> None:
        self.closes += 1
        super().close()


def test_box_waits_for_the_open_and_gives_the_sandbox(tmp_path: Path) -> None:
    box = Slow(workspace=tmp_path / "ws", name="r")
    opening = Opening(lambda: box)
    assert not opening.opened() and opening.usable()  # still opening
    box.go.set()
    assert opening.box() is box and box.opened
    assert opening.opened() and opening.usable()


def test_what_open_raised_comes_out_of_box(tmp_path: Path) -> None:
    box = Slow(workspace=tmp_path / "ws", name="r", fail=True)
    box.go.set()
    opening = Opening(lambda: box)
    with pytest.raises(SandboxUnavailable, match="no Docker daemon"):
        opening.box()
    assert not opening.opened() and not opening.usable()


def test_abandon_waits_for_the_open_then_closes(tmp_path: Path) -> None:
    box = Slow(workspace=tmp_path / "ws", name="r")
    opening = Opening(lambda: box)
    box.go.set()
    opening.abandon()
    assert box.closes == 1


def test_what_make_raised_comes_out_of_box_and_abandon_has_nothing_to_close() -> None:
    def make() -> Slow:
        raise SandboxUnavailable("unknown sandbox backend 'dokcer'")

    opening = Opening(make)
    with pytest.raises(SandboxUnavailable, match="dokcer"):
        opening.box()
    assert not opening.opened() and not opening.usable()
    opening.abandon()  # nothing was made: nothing to close
