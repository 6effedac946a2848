"""Phase executors, one module per kind: ``run(ctx: PhaseContext) -> None``.

An executor's result is the files it leaves (see ``praxis.flows.context``); it fails the
phase by raising."""

from __future__ import annotations

import importlib
from collections.abc import Callable

from praxis.flows.context import PhaseContext

Executor = Callable[[PhaseContext], None]


def executor(kind: str) -> Executor:
    module = importlib.import_module(f"praxis.phases.{kind}")
    return module.run  # type: ignore[no-any-return]
