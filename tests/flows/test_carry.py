"""--keep-edits: a Gate edit re-applied to a phase's new output by row key (rows moved,
removed, key changed), and a re-run or reopen that would replace an edited output refused
without a choice; the receipt marks the superseded edits."""

from __future__ import annotations

import hashlib
import json

import pytest

from praxis.flows.engine import carry, reconcile, runner
from praxis.flows.report.status import status_of
from praxis.flows.store.handle import RunHandle
from praxis.flows.store.objects import RunStore

from .helpers import Fakes, write_flow

WROTE = b"day,city,temp\n1,Oslo,5\n2,Bergen,7\n3,Olso,6\n4,Troms,2\n"
# the reviewer fixes day 3's city, removes day 4, adds day 5
EDITED = b"day,city,temp\n1,Oslo,5\n2,Bergen,7\n3,Oslo,6\n5,Bergen,8\n"


def test_rows_that_moved_are_found_by_their_key() -> None:
    new = b"day,city,temp\n4,Troms,2\n3,Olso,6.5\n2,Bergen,7\n1,Oslo,5\n"
    out = carry.reapply("w.csv", ["day"], WROTE, EDITED, new)
    assert out.data == b"day,city,temp\n3,Oslo,6.5\n2,Bergen,7\n1,Oslo,5\n5,Bergen,8\n"
    assert out.applied == [
        "w.csv row day='3': city 'Olso' -> 'Oslo'",
        "w.csv row day='4': removed",
        "w.csv row day='5': added",
    ]
    assert out.skipped == []


def test_an_edit_of_a_row_that_was_removed_is_reported_not_applied() -> None:
    new = b"day,city,temp\n1,Oslo,5\n2,Bergen,7\n5,Bergen,9\n"  # no day 3, nor 4; a day 5
    out = carry.reapply("w.csv", ["day"], WROTE, EDITED, new)
    assert out.data == new
    assert out.applied == []
    assert out.skipped == [
        "w.csv row day='3' is not in the new output: its edit is not applied",
        "w.csv row day='4': removed at the Gate; not in the new output",
        "w.csv row day='5': added at the Gate; the new output has this key",
    ]


def test_a_value_the_phase_now_writes_differently_is_not_overwritten() -> None:
    new = b"day,city,temp\n1,Oslo,5\n2,Bergen,7\n3,Lillehammer,6\n4,Troms,2\n"
    out = carry.reapply("w.csv", ["day"], WROTE, EDITED, new)
    assert out.skipped == [
        "w.csv row day='3': city is now 'Lillehammer' (the edit changed 'Olso' to 'Oslo'): "
        "not applied"
    ]
    assert b"3,Lillehammer,6" in out.data and b"\n4," not in out.data  # the rest applied


def test_a_key_the_reviewer_changed_is_found_by_the_old_key() -> None:
    wrote = b"station,day,temp\nOSL,1,5\nBGN,1,7\n"
    edited = b"station,day,temp\nOSL,1,5\nBGO,1,7\n"  # station code corrected
    new = b"station,day,temp\nBGN,1,7.5\nOSL,1,5\n"
    out = carry.reapply("t.csv", ["station", "day"], wrote, edited, new)
    assert out.data == b"station,day,temp\nBGO,1,7.5\nOSL,1,5\n"
    assert out.applied == ["t.csv row station='BGN', day='1': station 'BGN' -> 'BGO'"]


def test_a_key_the_phase_changed_leaves_the_edit_unapplied() -> None:
    new = b"day,city,temp\n2026-01-01,Oslo,5\n2026-01-03,Olso,6\n"  # days renamed
    edited = b"day,city,temp\n1,Oslo,5\n2,Bergen,7\n3,Oslo,6\n4,Troms,2\n"
    out = carry.reapply("w.csv", ["day"], WROTE, edited, new)
    assert out.data == new
    assert out.skipped == ["w.csv row day='3' is not in the new output: its edit is not applied"]


def test_a_new_output_without_the_key_column_applies_nothing() -> None:
    out = carry.reapply("w.csv", ["day"], WROTE, EDITED, b"date,city\n1,Oslo\n")
    assert out.applied == [] and "no key column(s) ['day']" in out.skipped[0]


FLOW = """
    flow: weather
    sandbox: {backend: fake, timeout: 60}
    params: {scale: 1}
    phases:
      - id: clean
        kind: script
        script: clean.py
        outputs: [clean.csv, notes.md]
        review: required
        checks:
          clean.csv: {%(key)s, not_null: [city]}
      - id: report
        kind: script
        script: report.py
        inputs: {working: [clean.csv]}
        outputs: [report.txt]
"""
CLEAN = """
    rows = [(3, "Olso", 6), (1, "Oslo", 5), (2, "Bergen", 7)]
    if params["scale"] != 1:
        rows = rows[::-1]  # another order, other temperatures
    with open("clean.csv", "w") as fh:
        fh.write("day,city,temp\\n")
        for day, city, temp in rows:
            fh.write(f"{day},{city},{temp * params['scale']}\\n")
    open("notes.md", "w").write("notes\\n")
"""
REPORT = 'open("report.txt", "w").write(open("clean.csv").read())\n'


def weather(tmp_path, key: str = "key: [day]"):  # type: ignore[no-untyped-def]
    files = {"clean.py": CLEAN, "report.py": REPORT}
    flow = write_flow(tmp_path / "weather", FLOW % {"key": key}, files)
    run = runner.begin(flow)
    assert (
        runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes())).waiting
        == "gate"
    )
    fixed = run.paths.out("clean.csv").read_bytes().replace(b"Olso", b"Oslo")
    runner.edit(flow, "clean.csv", fixed, run.id)
    return flow, run


def test_a_rerun_that_would_replace_an_edit_needs_a_choice(tmp_path) -> None:
    flow, run = weather(tmp_path)
    revision = RunHandle.open(run.flow, run.id).state.revision
    for ask in (
        lambda: runner.rerun(flow, "clean", run.id, params={"scale": "2"}),
        lambda: runner.reject(flow, "clean", "again", run.id, gate="clean"),
    ):
        with pytest.raises(runner.EditsAtRisk) as caught:
            ask()
        assert "would replace clean.csv (at the Gate after clean), edited by a reviewer" in str(
            caught.value
        )
        assert "--keep-edits" in caught.value.next(str(flow))
        assert caught.value.exit_code == 4
    assert RunHandle.open(run.flow, run.id).state.revision == revision  # nothing changed


def test_keep_edits_re_applies_the_fix_to_the_new_output_and_records_it(tmp_path) -> None:
    flow, run = weather(tmp_path)
    runner.rerun(flow, "clean", run.id, params={"scale": "2"}, edits="keep")
    state = runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    assert state.waiting == "gate" and state.phase("clean").attempt == 2
    # the new output has its rows in another order and other temperatures: the fix is kept
    assert run.paths.out("clean.csv").read_bytes() == (
        b"day,city,temp\n2,Bergen,14\n1,Oslo,10\n3,Oslo,12\n"
    )
    events = RunHandle.open(run.flow, run.id).log.read()
    (carried,) = [e for e in events if e.kind == "edits_carried"]
    assert carried.applied == ["clean.csv row day='3': city 'Olso' -> 'Oslo'"]  # type: ignore[attr-defined]
    edits = [e for e in events if e.kind == "artifact_edited"]
    assert [(e.by, e.attempt) for e in edits] == [("reviewer", 1), ("carried", 2)]  # type: ignore[attr-defined]
    entries = json.loads((run.root / "edits" / "clean" / "2.json").read_text())
    assert entries[0]["by"] == "carried" and entries[0]["diff"]["changed"] == 1
    ledger = {p["phase"]: p for p in status_of(RunHandle.open(run.flow, run.id)).receipt["ledger"]}
    first, again = ledger["clean"]["edits"]
    assert first["superseded"] and first["carried_to"] == 2
    assert again["by"] == "carried" and not again["superseded"]
    assert ledger["clean"]["carried"] == [
        {"name": "clean.csv", "attempt": 2, "applied": 1, "skipped": []}
    ]
    assert RunHandle.open(run.flow, run.id).state.phase("clean").edited  # edited again


def test_an_edit_whose_object_was_changed_behind_praxis_is_not_carried(tmp_path) -> None:
    flow, run = weather(tmp_path)
    fixed = hashlib.sha256(run.paths.out("clean.csv").read_bytes()).hexdigest()
    obj = run.paths.object(fixed)
    obj.chmod(0o644)
    obj.write_bytes(b"day,city,temp\n3,Evil,1\n1,Oslo,5\n2,Bergen,7\n")  # same rows, planted
    runner.rerun(flow, "clean", run.id, params={"scale": "2"}, edits="keep")
    state = runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    assert state.waiting == "gate"
    assert b"Evil" not in run.paths.out("clean.csv").read_bytes()
    events = RunHandle.open(run.flow, run.id).log.read()
    (carried,) = [e for e in events if e.kind == "edits_carried"]
    assert carried.applied == []  # type: ignore[attr-defined]
    (skipped,) = carried.skipped  # type: ignore[attr-defined]
    assert fixed in skipped and "not re-applied" in skipped


def test_discard_edits_replaces_the_fix_and_the_receipt_says_so(tmp_path) -> None:
    flow, run = weather(tmp_path)
    runner.reject(flow, "clean", "again", run.id, gate="clean", edits="discard")
    state = runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    assert state.waiting == "gate"
    assert b"Olso" in run.paths.out("clean.csv").read_bytes()
    assert b"Oslo,6" in (run.paths.attempt("clean", 1) / "output" / "clean.csv").read_bytes()
    requested = [
        e for e in RunHandle.open(run.flow, run.id).log.read() if e.kind == "rerun_requested"
    ]
    assert [(e.edits, e.edited) for e in requested] == [("discard", ["clean.csv"])]  # type: ignore[attr-defined]
    ledger = {p["phase"]: p for p in status_of(RunHandle.open(run.flow, run.id)).receipt["ledger"]}
    (edit,) = ledger["clean"]["edits"]
    assert edit["superseded"] and edit["carried_to"] is None and edit["discarded"]
    # nothing edited now: a re-run needs no choice
    runner.rerun(flow, "clean", run.id)


def test_keep_edits_is_refused_for_an_output_without_a_row_key(tmp_path) -> None:
    flow, run = weather(tmp_path, key="columns: [day]")
    with pytest.raises(runner.EditsAtRisk, match="not a table with a row key") as caught:
        runner.rerun(flow, "clean", run.id, edits="keep")
    revision = RunHandle.open(run.flow, run.id).state.revision
    assert caught.value.next(str(flow)) == (  # the same re-run, with the choice that can hold
        f"praxis rerun {flow} --run {run.id} --from clean --discard-edits "
        f"--expect-revision {revision}"
    )
    runner.rerun(flow, "clean", run.id, edits="discard")


def test_an_unchanged_stale_phase_is_reused_with_its_edit_in_place(tmp_path) -> None:
    flow, run = weather(tmp_path)
    runner.approve(flow, run.id, gate="clean")
    assert (
        runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes())).status
        == "done"
    )
    with pytest.raises(runner.EditsAtRisk):
        runner.rerun(flow, "clean", run.id)
    runner.rerun(flow, "report", run.id)  # after the edited phase: no choice needed


def test_the_cli_refuses_without_a_choice_and_names_the_next_command(tmp_path) -> None:
    from tests.test_cli import praxis

    flow, run = weather(tmp_path)
    res = praxis("rerun", str(flow), "--run", run.id, "--from", "clean")
    assert res.returncode == 4, res.stderr
    assert "would replace clean.csv (at the Gate after clean), edited by a reviewer" in res.stderr
    assert f"praxis rerun {flow} --run {run.id} --from clean" in res.stderr
    assert "--keep-edits" in res.stderr
    res = praxis("rerun", str(flow), "--run", run.id, "--from", "clean", "--keep-edits")
    assert res.returncode == 0, res.stderr
    assert RunHandle.open(run.flow, run.id).state.phase("clean").carry


def test_status_proposes_the_reopen_with_keep_edits_and_says_what_is_edited(tmp_path) -> None:
    flow, run = weather(tmp_path)
    st = status_of(RunHandle.open(run.flow, run.id))
    reject = next(c for c in st.next if c.startswith("praxis reject"))
    assert "--reopen clean --note '...' --keep-edits" in reject
    assert "edited at a Gate: clean.csv (a re-run or reopen keeps them with --keep-edits)" in (
        st.message
    )
    route = st.route
    assert any("--keep-edits" in argv for argv in route["commands"] if "reject" in argv)


def test_rows_the_edit_does_not_name_stay_byte_for_byte() -> None:
    wrote = b'id,note\r\n1,"a, b"\r\n2,x\r\n3,"line\r\nbreak"\r\n'
    edited = wrote.replace(b"2,x", b"2,y")
    new = b'id,note\r\n3,"line\r\nbreak"\r\n2,x\r\n1,"a, b"\r\n'
    out = carry.reapply("n.csv", ["id"], wrote, edited, new)
    assert out.data == b'id,note\r\n3,"line\r\nbreak"\r\n2,y\r\n1,"a, b"\r\n'
    assert out.applied == ["n.csv row id='2': note 'x' -> 'y'"]


LATER = """
    flow: trips
    sandbox: {backend: fake, timeout: 60}
    phases:
      - id: velocity
        kind: script
        script: velocity.py
        outputs: [velocity.csv]
      - id: reorder
        kind: script
        script: reorder.py
        inputs: {working: [velocity.csv]}
        outputs: [reorder.csv]
        review: required
        checks:
          reorder.csv: {key: [day]}
"""
VELOCITY = 'open("velocity.csv", "w").write("day,city,temp\\n1,Oslo,5\\n3,Olso,6\\n")\n'
REORDER = """
    lines = open("velocity.csv").readlines()
    open("reorder.csv", "w").writelines([lines[0], *lines[:0:-1]])  # rows the other way
"""


@pytest.mark.parametrize("back", ["rerun", "reject"])
def test_discard_edits_puts_back_a_later_phase_restored_by_reuse(tmp_path, back) -> None:
    flow = write_flow(tmp_path / "trips", LATER, {"velocity.py": VELOCITY, "reorder.py": REORDER})
    run = runner.begin(flow)
    assert (
        runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes())).gate
        == "reorder"
    )
    wrote = run.paths.out("reorder.csv").read_bytes()
    runner.edit(flow, "reorder.csv", wrote.replace(b"Olso", b"Oslo"), run.id)
    if back == "rerun":
        runner.rerun(flow, "velocity", run.id, edits="discard")
    else:
        runner.reject(flow, "velocity", "again", run.id, gate="reorder", edits="discard")
    assert run.paths.out("reorder.csv").read_bytes() == wrote  # put back at once
    state = runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    assert state.gate == "reorder" and state.phase("reorder").reused  # nothing it reads changed
    assert state.phase("reorder").attempt == 1 and state.phase("reorder").edited == {}
    assert run.paths.out("reorder.csv").read_bytes() == wrote  # restored without the edit
    handle = RunHandle.open(run.flow, run.id)
    assert not reconcile.changed_outputs(handle)  # nothing changed outside praxis
    ledger = {p["phase"]: p for p in status_of(handle).receipt["ledger"]}
    (edit,) = ledger["reorder"]["edits"]
    assert edit["discarded"] and edit["name"] == "reorder.csv"
    # no edit is at risk now: reopening velocity needs no choice
    runner.reject(flow, "velocity", "again", run.id, gate="reorder")
    assert (
        runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes())).gate
        == "reorder"
    )


def test_discard_edits_runs_a_phase_again_whose_written_version_is_gone(tmp_path) -> None:
    flow = write_flow(tmp_path / "trips", LATER, {"velocity.py": VELOCITY, "reorder.py": REORDER})
    run = runner.begin(flow)
    runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    wrote = run.paths.out("reorder.csv").read_bytes()
    runner.edit(flow, "reorder.csv", wrote.replace(b"Olso", b"Oslo"), run.id)
    (sha,) = RunHandle.open(run.flow, run.id).state.phase("reorder").edited.values()
    RunStore(run.paths).path(sha).unlink()  # the version the phase wrote is gone
    runner.rerun(flow, "velocity", run.id, edits="discard")
    assert RunHandle.open(run.flow, run.id).state.phase("reorder").status == "pending"
    state = runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    assert state.gate == "reorder" and state.phase("reorder").attempt == 2
    assert not state.phase("reorder").reused and state.phase("reorder").edited == {}
    assert b"Olso" in run.paths.out("reorder.csv").read_bytes()


def test_a_table_that_repeats_a_column_name_gets_no_edit() -> None:
    # the reviewer fixed the second `amount`; matched by name, it would land in the first
    wrote = b"id,amount,amount\n1,7,7\n2,3,3\n"
    edited = b"id,amount,amount\n1,7,8\n2,3,3\n"
    out = carry.reapply("pay.csv", ["id"], wrote, edited, wrote)
    assert out.data == wrote and out.applied == []
    assert out.skipped == [
        "pay.csv: its header repeats the column 'amount' and --keep-edits matches edits to "
        "columns by name: choose --discard-edits, or give the columns distinct names in the "
        "phase (in the table as the phase wrote it): no edit applied"
    ]
    new = b"id,amount,amount\n2,3,3\n1,7,7\n"  # the new output alone repeats it
    out = carry.reapply("pay.csv", ["id"], b"id,amount\n1,7\n", b"id,amount\n1,8\n", new)
    assert out.data == new and out.applied == [] and "(in the new table)" in out.skipped[0]


REPEATED = """
    with open("clean.csv", "w") as fh:
        fh.write("day,city,city\\n1,Oslo,Oslo\\n3,Olso,Olso\\n")
    open("notes.md", "w").write("notes\\n")
"""


def test_keep_edits_is_refused_for_a_table_that_repeats_a_column_name(tmp_path) -> None:
    files = {"clean.py": REPEATED, "report.py": REPORT}
    flow = write_flow(tmp_path / "weather", FLOW % {"key": "key: [day]"}, files)
    run = runner.begin(flow)
    assert (
        runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes())).waiting
        == "gate"
    )
    runner.edit(flow, "clean.csv", b"day,city,city\n1,Oslo,Oslo\n3,Olso,Oslo\n", run.id)
    revision = RunHandle.open(run.flow, run.id).state.revision
    route = status_of(RunHandle.open(run.flow, run.id)).route
    # the route never proposes the --keep-edits it would be refused: a person chooses
    assert not any("--keep-edits" in c for c in route["commands"]), route["commands"]
    assert any("column name repeated" in p for p in route["problems"]), route["problems"]
    with pytest.raises(runner.EditsAtRisk) as caught:
        runner.rerun(flow, "clean", run.id, edits="keep")
    assert str(caught.value) == (
        f"run {run.id}: --keep-edits cannot re-apply the edit of clean.csv: its header repeats "
        "the column 'city' and --keep-edits matches edits to columns by name: choose "
        "--discard-edits, or give the columns distinct names in the phase"
    )
    assert caught.value.next(str(flow)) == (  # the same re-run, with the choice that can hold
        f"praxis rerun {flow} --run {run.id} --from clean --discard-edits "
        f"--expect-revision {revision}"
    )
    assert RunHandle.open(run.flow, run.id).state.revision == revision  # nothing changed
    runner.rerun(flow, "clean", run.id, edits="discard")
