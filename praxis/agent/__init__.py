"""Agent phases: one model turn with tools in the phase's kernel (DESIGN.md §6)."""

from .approvals import ApprovalQueue, ApprovalRefused, ApprovalRequest, terminal_approver
from .events import ApprovalAnswered, ApprovalAsked, ModelCalled, ToolCalled
from .model import ModelUnavailable, resolve_model
from .turn import TurnResult, run_turn

__all__ = [
    "ApprovalAnswered",
    "ApprovalAsked",
    "ApprovalQueue",
    "ApprovalRefused",
    "ApprovalRequest",
    "ModelCalled",
    "ModelUnavailable",
    "ToolCalled",
    "TurnResult",
    "resolve_model",
    "run_turn",
    "terminal_approver",
]
