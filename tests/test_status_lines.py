"""What `praxis status` prints: the timeline, the route and the receipt in words."""

from __future__ import annotations

from praxis.flows.model.state import PhaseState, RunState
from praxis.status_lines import receipt_lines, route_lines, timeline


def test_the_timeline_places_phases_on_the_run_clock() -> None:
    state = RunState(
        run="r",
        flow="f",
        phases=[
            PhaseState(id="a", status="done", attempt=1, started=0.0, ended=10.0),
            PhaseState(id="b", status="failed", attempt=2, started=10.0, ended=20.0, error="x"),
            PhaseState(id="c"),
        ],
    )
    rows = timeline(state, width=10).splitlines()
    assert rows[0].startswith("  ✓ done     a") and rows[0].endswith("10.0 s  █████")
    assert rows[1].startswith("  ✗ failed   b") and rows[1].endswith("10.0 s       █████  x")
    assert rows[2].startswith("  · pending  c")


def test_a_running_phase_reaches_now_and_says_how_long_it_has_run() -> None:
    state = RunState(
        run="r",
        flow="f",
        phases=[
            PhaseState(id="a", status="done", attempt=1, started=0.0, ended=10.0),
            PhaseState(id="b", status="running", attempt=1, started=10.0),
        ],
    )
    rows = timeline(state, width=10, now=135.0).splitlines()
    assert rows[1].startswith("  ▶ running  b") and rows[1].endswith(
        "2 min 05 s  ██████████  running for 2 min 05 s"
    )


def test_the_route_names_who_takes_the_step_and_escapes_what_a_phase_wrote() -> None:
    route = {
        "step": "review",
        "reason": "gate",
        "why": "a Gate waits",
        "who": "person",
        "gate": {"phase": "flag", "delegatable": False, "managed": False},
        "read": [{"path": "output/re\x1bview.csv"}],  # named, never by digest
        "problems": ["bad\x07"],
        "commands": [["praxis", "approve", "my flow"]],
    }
    assert route_lines(route) == [
        "route: review (gate): a Gate waits; only a person may take it",
        "  Gate after flag: not delegatable, run not managed",
        "  read: output/re^[view.csv",
        "  problem: bad^G",
        "  do: praxis approve 'my flow'",
    ]


def test_the_receipt_lists_each_phase_its_decisions_and_edits() -> None:
    receipt = {
        "ok": False,
        "done": 1,
        "total": 2,
        "ledger": [
            {
                "phase": "flag",
                "status": "done",
                "attempts": 2,
                "reused": False,
                "seconds": 1.25,
                "decisions": [
                    {"decision": "rejected", "actor": "person", "revision": 4, "reopen": "flag"}
                ],
                "edits": [{"name": "review.csv", "by": "hand", "diff": "1 row changed"}],
            },
            {"phase": "report", "status": "pending", "attempts": 0, "reused": False,
             "seconds": None, "decisions": [], "edits": []},
        ],
        "changed_outside": ["out\x1b.csv"],
    }  # fmt: skip
    assert receipt_lines(receipt, managed=True) == [
        "receipt: not ok, 1/2 phases done, managed",
        "  flag: done, 2 attempt(s), 1.2 s",
        "    rejected by person at revision 4, reopened flag",
        "    review.csv edited by hand: 1 row changed",
        "  report: pending, 0 attempt(s)",
        "  changed outside praxis: out^[.csv",
    ]
