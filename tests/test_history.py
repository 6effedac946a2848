"""Run history and comparison: `praxis runs` (start, time, parameters, who decided each
Gate), `praxis diff FLOW RUN_A RUN_B` and the report under them."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

from praxis.flows.engine import carry, runner
from praxis.flows.engine.runner import load_flow
from praxis.flows.report import compare, history
from praxis.flows.store.handle import RunHandle

from .flows.helpers import Fakes, write_flow
from .test_cli import praxis

FLOW = """
    flow: weather
    sandbox: {backend: fake, timeout: 60}
    params: {scale: 1, place: north}
    phases:
      - id: clean
        kind: script
        script: clean.py
        outputs: [clean.csv, plain.csv, notes.md]
        review: required
        checks:
          clean.csv: {key: [day], not_null: [city]}
      - id: report
        kind: script
        script: report.py
        inputs: {working: [notes.md]}
        outputs: [report.txt]
"""
CLEAN = """
    rows = %s
    scale = int(params["scale"])
    with open("clean.csv", "w") as fh:
        fh.write("day,city,temp\\n" + "".join(f"{d},{c},{t * scale}\\n" for d, c, t in rows))
    with open("plain.csv", "w") as fh:
        fh.write("day,city,temp\\n" + "".join(f"{d},{c},{t}\\n" for d, c, t in rows))
    open("notes.md", "w").write("notes\\n")
"""
ROWS = '[(1, "Oslo", 5), (2, "Bergen", 7), (3, "Olso", 6)]'
REPORT = 'open("report.txt", "w").write(open("notes.md").read())\n'
# what the reviewer of run B left: another order, day 2 corrected, day 3 gone, day 4 new
EDITED = b"day,city,temp\n2,Bergen,8\n1,Oslo,5\n4,Troms,2\n"


def two_runs(tmp_path: Path) -> tuple[Path, str, str]:
    """Run A (approved as the phase wrote it) and run B (rejected once, so its clean ran again;
    edited at the Gate and approved): B's report reads only notes.md, unchanged: reused."""
    flow = write_flow(tmp_path / "weather", FLOW, {"clean.py": CLEAN % ROWS, "report.py": REPORT})
    ids = []
    for second in (False, True):
        run = runner.begin(flow)
        assert (
            runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes())).waiting
            == "gate"
        )
        if second:
            runner.reject(flow, "clean", "look again", run.id, gate="clean")
            assert (
                runner.advance(
                    flow, run.id, options=runner.RunOptions(make_sandbox=Fakes())
                ).waiting
                == "gate"
            )
            runner.edit(flow, "clean.csv", EDITED, run.id)
            runner.edit(flow, "plain.csv", EDITED, run.id)
        runner.approve(flow, run.id, gate="clean", attempt=2 if second else 1)
        state = runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
        assert state.status == "done", state.error
        ids.append(run.id)
    return flow, ids[0], ids[1]


def waiting_run(flow: Path, scale: str) -> str:
    run = runner.begin(flow, params={"scale": scale})
    assert (
        runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes())).waiting
        == "gate"
    )
    return run.id


def test_compare_names_what_changed_per_phase_and_table_row(tmp_path: Path) -> None:
    flow, a, b = two_runs(tmp_path)
    loaded = load_flow(flow)
    c = compare.compare(RunHandle.open(loaded, a), RunHandle.open(loaded, b))
    assert [(p.name, p.before, p.after, p.same) for p in c.params] == [
        ("place", "north", "north", True),
        ("scale", 1, 1, True),
    ]
    assert [(p.phase, p.before, p.after, p.definition_changed) for p in c.phases] == [
        ("clean", "ran", "ran", False),
        ("report", "ran", "reused", False),
    ]
    by_name = {o.name: o for o in c.outputs}
    keyed = by_name["clean.csv"]
    assert (keyed.state, keyed.key) == ("differs", ["day"])
    assert (keyed.added, keyed.removed, keyed.changed) == (1, 1, 1)  # reordered rows are equal
    assert keyed.rows == [
        {"row": "day=3", "change": "removed"},
        {"row": "day=4", "change": "added"},
    ]
    assert keyed.cells == [{"row": "day=2", "column": "temp", "old": "7", "new": "8"}]
    plain = by_name["plain.csv"]  # no key: the cell-level diff a Gate edit is recorded with
    assert plain.key is None and plain.state == "differs"
    assert (plain.added, plain.removed, plain.changed) == (1, 1, 1)
    assert by_name["notes.md"].state == "same" and by_name["report.txt"].state == "same"


def test_compare_gives_each_parameter_in_both_runs(tmp_path: Path) -> None:
    flow, a, _ = two_runs(tmp_path)
    c = waiting_run(flow, "3")
    loaded = load_flow(flow)
    found = compare.compare(RunHandle.open(loaded, a), RunHandle.open(loaded, c))
    assert [(p.name, p.before, p.after, p.same) for p in found.params] == [
        ("place", "north", "north", True),
        ("scale", 1, 3, False),
    ]
    assert [(p.phase, p.before, p.after) for p in found.phases] == [
        ("clean", "ran", "ran"),
        ("report", "ran", "pending"),
    ]
    assert [p.definition_changed for p in found.phases] == [True, False]  # params are in it
    assert {o.name: o.state for o in found.outputs}["report.txt"] == "only before"


def test_history_rows_say_when_how_long_with_what_and_who_decided(tmp_path: Path) -> None:
    flow, a, b = two_runs(tmp_path)
    rows = history.rows(load_flow(flow))
    assert [r.id for r in rows] == [b, a]  # newest first
    assert [r.status for r in rows] == ["done", "done"]
    assert [r.params for r in rows] == [{"scale": 1, "place": "north"}] * 2
    assert [[(d.phase, d.decision, d.actor) for d in r.decisions] for r in rows] == [
        [("clean", "rejected", "person"), ("clean", "approved", "person")],
        [("clean", "approved", "person")],
    ]
    for r in rows:  # when and how long: what the run itself recorded, not a clock read now
        state = RunHandle.open(load_flow(flow), r.id).state
        assert r.started == state.created
        first = min(p.started for p in state.phases if p.started is not None)
        last = max(p.ended for p in state.phases if p.ended is not None)
        assert r.seconds == max(last - first, 0.0)  # a wall clock set back shows 0, never less


def test_praxis_runs_lists_start_time_parameters_and_deciders(tmp_path: Path) -> None:
    flow, a, b = two_runs(tmp_path)
    c = waiting_run(flow, "3")
    res = praxis("runs", str(flow))
    assert res.returncode == 0, res.stderr
    head, *lines = res.stdout.splitlines()
    assert head.split() == [
        "run",
        "status",
        "began",
        "(UTC)",
        "took",
        "parameters",
        "Gates",
        "decided",
    ]
    assert [line.split()[0] for line in lines] == [c, b, a]
    when = r"\d{4}-\d\d-\d\d \d\d:\d\d"
    took = r"[\d.]+ (µs|ms|s)"
    assert re.match(
        rf"{c}  waiting at the Gate after clean  {when}  {took} +place=north scale=3$", lines[0]
    ), lines[0]
    decided = "clean rejected by person; clean approved by person"
    assert re.match(rf"{b}  done +{when}  {took} +place=north scale=1  {decided}$", lines[1]), (
        lines[1]
    )
    assert lines[2].endswith("place=north scale=1  clean approved by person")


def test_praxis_diff_prints_parameters_phases_and_rows_by_key(tmp_path: Path) -> None:
    flow, a, b = two_runs(tmp_path)
    res = praxis("diff", str(flow), a, b)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    plain = [line for line in lines if line.startswith(("  plain.csv", "    row "))]
    assert lines == [
        f"weather: run {a} -> run {b}",
        "parameters:",
        "  place: north (same)",
        "  scale: 1 (same)",
        "phases:",
        "  clean   ran -> ran",
        "  report  ran -> reused",
        "outputs:",
        "  clean.csv (clean): differs: 1 row(s) added, 1 removed, 1 changed by key day",
        "    day=3: removed",
        "    day=4: added",
        "    day=2: temp '7' -> '8'",
        *plain,
        "  notes.md (clean): same",
        "  report.txt (report): same",
    ]
    assert plain == [
        "  plain.csv (clean): differs: 1 row(s) added, 1 removed, 1 changed "
        "(rows aligned by content: no key declared)",
        "    row 3: day '2' -> '4'",
        "    row 3: city 'Bergen' -> 'Troms'",
        "    row 3: temp '7' -> '2'",
    ]
    shown = json.loads(praxis("diff", str(flow), a, b, "--json").stdout)
    assert shown["phases"][1] == {
        "phase": "report", "before": "ran", "after": "reused", "definition_changed": False,
        "seconds": shown["phases"][1]["seconds"],
    }  # fmt: skip


def test_praxis_diff_of_a_run_that_is_not_there_names_the_runs(tmp_path: Path) -> None:
    flow, a, _ = two_runs(tmp_path)
    res = praxis("diff", str(flow), a, "20200101-000000-dead")
    assert res.returncode != 0
    assert "20200101-000000-dead" in res.stderr and "next: " in res.stderr
    assert "Traceback" not in res.stderr


def test_decisions_are_read_from_whole_gate_lines_only(tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    events.write_bytes(
        b'{"kind": "run_begun", "note": "{\\"kind\\": \\"gate_approved\\"}"}\n'
        b'{"kind": "gate_approved", "rev": 3, "phase": "a", "actor": "person"}\n'
        b'{"kind": "gate_rejected", not json\n'
        b'{"kind": "gate_waiting", "phase": "b"}\n'
        b'{"kind": "gate_rejected", "rev": 5, "phase": "b", "actor": "agent"}\n'
        b'{"kind": "gate_approved", "rev": 6, "phase": "b", "act'  # torn: being written
    )
    assert history.decisions(events) == [
        history.Decision("a", "approved", "person"),
        history.Decision("b", "rejected", "agent"),
    ]
    assert history.decisions(tmp_path / "missing.jsonl") == []
    (tmp_path / "link.jsonl").symlink_to(events)
    assert history.decisions(tmp_path / "link.jsonl") == []  # never through a link


def test_rows_both_versions_share_are_left_out_of_the_keyed_diff_and_change_nothing() -> None:
    rng = random.Random(5)
    for _ in range(200):
        ids = rng.sample(range(40), rng.randrange(1, 20))
        old = {i: rng.randrange(10**9) for i in ids}
        new = {i: v for i, v in old.items() if rng.random() > 0.2}
        new |= {i: rng.randrange(10**9) for i in rng.sample(range(40), 5)}
        order = list(new)
        rng.shuffle(order)

        def table(rows: dict[int, int], keys: list[int]) -> bytes:
            return b"id,v\n" + b"".join(b"%d,%d\n" % (k, rows[k]) for k in keys)

        a, b = table(old, list(old)), table(new, order)
        whole = carry.changes_by_key("t.csv", ["id"], a, b)
        cut = carry.changes_by_key("t.csv", ["id"], *compare.unshared(a, b))
        assert sorted(map(repr, cut)) == sorted(map(repr, whole))
    quoted = b'id,v\n1,"a\nb"\n'
    assert compare.unshared(quoted, quoted) == (quoted, quoted)  # its rows are not its lines
    assert compare.unshared(b"id,v\n1,2\n2,3\n", b"id,v\n2,3\n1,4\n") == (
        b"id,v\n1,2\n",
        b"id,v\n1,4\n",
    )


def test_a_large_table_without_a_key_says_how_to_compare_its_rows(tmp_path: Path) -> None:
    flow, a, b = two_runs(tmp_path)
    loaded = load_flow(flow)
    after = RunHandle.open(loaded, b)
    big = after.paths.out("plain.csv")
    big.chmod(0o644)
    big.write_bytes(b"day,city,temp\n" + b"9,Oslo,1\n" * ((compare.MAX_UNKEYED >> 3) + 1))
    found = compare.compare(RunHandle.open(loaded, a), after)
    plain = {o.name: o for o in found.outputs}["plain.csv"]
    assert plain.state == "differs" and plain.cells == [] and plain.added == 0
    assert plain.problem == (
        "no key declared and over 16 MiB: declare key: under its checks in flow.yaml to "
        "compare its rows by key"
    )
