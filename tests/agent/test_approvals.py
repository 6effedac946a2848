"""The in-memory approval queue and the terminal approver."""

from __future__ import annotations

import io
import threading

import pytest

from praxis.agent import ApprovalQueue, ApprovalRefused, terminal_approver


def test_queue_answers_a_pending_request() -> None:
    queue = ApprovalQueue()
    request = queue.ask("clean", "print(1)")
    assert [r.id for r in queue.pending()] == [request.id]
    queue.answer(request.id, True)
    assert queue.wait(request.id) is True
    assert queue.pending() == []


def test_late_duplicate_and_unknown_answers_are_refused() -> None:
    queue = ApprovalQueue()
    request = queue.ask("clean", "print(1)")
    queue.answer(request.id, False)
    with pytest.raises(ApprovalRefused, match="already answered"):
        queue.answer(request.id, True)
    assert queue.get(request.id).approved is False
    with pytest.raises(ApprovalRefused, match="no such request"):
        queue.answer("a99", True)


def test_queue_as_approver_blocks_until_answered() -> None:
    queue = ApprovalQueue()
    answers: list[bool] = []
    worker = threading.Thread(target=lambda: answers.append(queue("clean", "x = 1")))
    worker.start()
    while not queue.pending():
        threading.Event().wait(0.01)
    assert answers == []
    queue.answer(queue.pending()[0].id, True)
    worker.join()
    assert answers == [True]


def test_unanswered_request_times_out_as_no() -> None:
    queue = ApprovalQueue(timeout=0.05)
    assert queue("clean", "x = 1") is False


def test_close_says_no_to_pending_and_later_requests() -> None:
    queue = ApprovalQueue()
    request = queue.ask("clean", "x = 1")
    queue.close()
    assert queue.wait(request.id) is False
    assert queue("clean", "y = 2") is False


def test_terminal_approver_is_none_without_a_tty() -> None:
    assert terminal_approver(io.StringIO("y\n"), io.StringIO()) is None


@pytest.mark.parametrize(
    ("typed", "approved"),
    [("y\n", True), ("yes\n", True), ("\n", False), ("n\n", False), ("", False)],
)
def test_terminal_approver_shows_code_and_asks(typed: str, approved: bool) -> None:
    out = io.StringIO()
    approve = terminal_approver(io.StringIO(typed), out, tty=True)
    assert approve is not None
    assert approve("analyse", "import os\nos.listdir('.')") is approved
    shown = out.getvalue()
    assert "phase analyse" in shown
    assert "   2 | os.listdir('.')" in shown
    assert shown.endswith("Run it? [y/N] ")
