"""Executor of ``kind: agent`` phases: one model turn with tools (praxis.agent)."""

from __future__ import annotations

from praxis.agent import run_turn
from praxis.flows.context import PhaseContext, PhaseOutcome


def run(ctx: PhaseContext) -> PhaseOutcome:
    """Run the phase's model turn; files written by code are protected from transcription."""
    result = run_turn(ctx)
    return PhaseOutcome(protected=set(result.written), summary=result.answer)
