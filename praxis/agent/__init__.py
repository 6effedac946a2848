"""Agent phases: one model turn with tools in the phase's kernel (DESIGN.md §6).

Names load on first use: a run without agent phases (and the CLI asking for the terminal
approver) does not import the model stack (langchain-core) or pandas.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from praxis.lazy import exports

if TYPE_CHECKING:  # the names as the type checker sees them; at run time, __getattr__ below
    from praxis.flows.model.events import ApprovalAnswered as ApprovalAnswered
    from praxis.flows.model.events import ApprovalAsked as ApprovalAsked
    from praxis.flows.model.events import ModelCalled as ModelCalled
    from praxis.flows.model.events import ToolCalled as ToolCalled

    from .approvals import ApprovalQueue as ApprovalQueue
    from .approvals import ApprovalRefused as ApprovalRefused
    from .approvals import ApprovalRequest as ApprovalRequest
    from .approvals import terminal_approver as terminal_approver
    from .model import ModelUnavailable as ModelUnavailable
    from .model import resolve_model as resolve_model
    from .turn import TurnResult as TurnResult
    from .turn import run_turn as run_turn

_EVENTS = "praxis.flows.model.events"  # the catalogue of every event kind
_HOME = {
    "ApprovalAnswered": _EVENTS,
    "ApprovalAsked": _EVENTS,
    "ApprovalQueue": ".approvals",
    "ApprovalRefused": ".approvals",
    "ApprovalRequest": ".approvals",
    "ModelCalled": _EVENTS,
    "ModelUnavailable": ".model",
    "ToolCalled": _EVENTS,
    "TurnResult": ".turn",
    "resolve_model": ".model",
    "run_turn": ".turn",
    "terminal_approver": ".approvals",
}


__all__ = sorted(_HOME)
__getattr__ = exports(__name__, __all__, _HOME)
