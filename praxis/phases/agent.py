"""Executor of ``kind: agent`` phases: one model turn with tools (praxis.agent)."""

from __future__ import annotations

from praxis.agent import run_turn
from praxis.flows.engine.context import PhaseContext


def run(ctx: PhaseContext) -> None:
    """Run the phase's model turn. Its answer is in the record; files that code or an extract
    wrote are refused to ``write_output`` during the turn, and beat staged ones at collection."""
    run_turn(ctx)
