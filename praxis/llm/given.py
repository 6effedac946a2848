"""What the caller of a run gives the phases a model drives (agent phases): the chat model to
use instead of the one flow.yaml names, and who approves code the model wrote.

The engine hands it to those phases untouched (``PhaseContext.given``, by kind): it knows
neither models nor approvers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# An approver answers "may this code run?"; None means nobody can be asked (the answer is no).
Approver = Callable[[str, str], bool]  # (phase id, code) -> yes/no


@dataclass(frozen=True)
class ModelGiven:
    model: Any = None  # a langchain-core chat model; None: flow.yaml's (or PRAXIS_MODEL's)
    approver: Approver | None = None


def given_to(kind: str, model: Any = None, approver: Approver | None = None) -> dict[str, object]:
    """The ``given`` mapping of a run for an agent's model and approver (empty: none given)."""
    if model is None and approver is None:
        return {}
    return {kind: ModelGiven(model=model, approver=approver)}
