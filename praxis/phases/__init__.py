"""Phase executors, one module per kind: ``run(ctx: PhaseContext) -> PhaseOutcome``."""

from __future__ import annotations

import importlib
from collections.abc import Callable

from praxis.flows.context import PhaseContext, PhaseOutcome

Executor = Callable[[PhaseContext], PhaseOutcome]


def executor(kind: str) -> Executor:
    module = importlib.import_module(f"praxis.phases.{kind}")
    return module.run  # type: ignore[no-any-return]
