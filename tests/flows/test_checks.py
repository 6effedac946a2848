"""flow.yaml checks: validated by praxis check, evaluated after the phase (a failed check
fails it, naming the check, the column and up to 5 rows) and on edits at a Gate."""

from __future__ import annotations

import pytest

from praxis.flows.definition import contract
from praxis.flows.engine import checks, runner
from praxis.flows.store.handle import RunHandle

from .gates import FILES, TWO_GATES, two_gates
from .helpers import Fakes, write_flow

SPEC = {
    "columns": ["id", "v"],
    "unique": ["id"],
    "not_null": ["v"],
    "values": {"v": ["a", "b"]},
    "min_rows": 1,
    "max_rows": 3,
}


@pytest.mark.parametrize(
    "data, check, column, rows",
    [
        (b"id,v\n1,a\n2,b\n", None, None, ()),
        (b"id\n1\n", "columns", None, ()),
        (b"id,v\n1,a\n1,b\n1,a\n", "unique", "id", (2, 3)),
        (b"id,v\n1,a\n2,\n", "not_null", "v", (2,)),
        (b"id,v\n" + b"".join(b"%d,c\n" % i for i in range(3)), "values", "v", (1, 2, 3)),
        (b"id,v\n", "min_rows", None, ()),
        (b"id,v\n1,a\n2,a\n3,a\n4,a\n", "max_rows", None, ()),
        (b'id,v\n1,"a\n', "parse", None, ()),
        (b"id,v\n1,a,extra\n", "parse", None, ()),
    ],
)
def test_each_check(data: bytes, check, column, rows) -> None:  # type: ignore[no-untyped-def]
    failures = checks.evaluate("t.csv", SPEC, data)
    if check is None:
        assert failures == []
        return
    assert failures[0].check == check
    assert failures[0].column == column and failures[0].rows == rows


def test_at_most_five_rows_are_named() -> None:
    data = b"id,v\n" + b"".join(b"%d,zz\n" % i for i in range(9))
    (failure,) = checks.evaluate("t.csv", {"values": {"v": ["a"]}}, data)
    assert failure.rows == (1, 2, 3, 4, 5) and failure.count == 9
    assert str(failure) == (
        "t.csv: check values failed on column 'v': 9 row(s) with values not in ['a']; "
        "data rows 1 (line 2), 2 (line 3), 3 (line 4), 4 (line 5), 5 (line 6) (of 9)"
    )


def test_rows_are_named_with_the_line_an_editor_shows() -> None:
    # a quoted field over two lines and a blank line: data row 3 starts on line 6
    data = b'id,note\n1,"two\nlines"\n\n2,ok\n2,again\n'
    (failure,) = checks.evaluate("t.csv", {"unique": ["id"]}, data)
    assert failure.rows == (3,) and failure.lines == (6,)
    assert str(failure).endswith("; data row 3 (line 6)")
    assert failure.to_dict()["lines"] == [6]


def test_dtypes() -> None:
    spec = {"dtype": {"n": "integer", "x": "number", "d": "date", "b": "bool"}}
    good = b"n,x,d,b\n1,1.5,2026-11-30,true\n,,,\n"
    assert checks.evaluate("t.csv", spec, good) == []
    bad = b"n,x,d,b\n1.5,x,30/11/2026,maybe\n"
    assert {f.column for f in checks.evaluate("t.csv", spec, bad)} == {"n", "x", "d", "b"}


def test_flow_yaml_checks_are_validated(tmp_path) -> None:
    bad = TWO_GATES.replace(
        "dtype: {amount: number}, min_rows: 1}",
        "dtype: {amount: float}, min_rows: -1, colums: [x], script: checks/missing.py}",
    )
    bad = bad.replace("columns: [id, amount, action]", "columns: id")
    bad = bad.replace("outputs: [total.csv]", "outputs: [total.csv]\n        checks: {x.csv: {}}")
    flow = write_flow(tmp_path / "bad", bad % {"backend": "fake"}, FILES)
    report = contract.check(flow)
    text = "\n".join(report.lines())
    assert "phases[pick].checks.picks.csv: unknown key 'colums' (did you mean 'columns'?)" in text
    assert "phases[pick].checks.picks.csv.columns: expected a list of column names" in text
    assert "phases[pick].checks.picks.csv.min_rows: expected a whole number" in text
    assert "'float' is not a dtype" in text
    assert "checks/missing.py' does not exist in the flow folder" in text
    assert "phases[total].checks.x.csv: 'x.csv' is not an output of this phase" in text


def test_review_may_be_delegatable(tmp_path) -> None:
    flow = runner.load_flow(two_gates(tmp_path))
    assert [(p.review, p.delegatable) for p in flow.phases] == [
        ("required", True),
        ("required", False),
        ("none", False),
    ]
    bad = TWO_GATES.replace("{required: true, delegatable: true}", "{delegatable: yes please}")
    root = write_flow(tmp_path / "bad", bad % {"backend": "fake"}, FILES)
    assert "phases[pick].review.delegatable: expected true or false" in "\n".join(
        contract.check(root).lines()
    )


def test_a_failed_check_fails_the_phase_naming_it(tmp_path) -> None:
    files = dict(FILES, **{"data/orders.csv": "id,amount\n1,10\n1,20\n2,5\n2,6\n2,7\n"})
    flow = write_flow(tmp_path / "f", TWO_GATES % {"backend": "fake"}, files)
    run = runner.begin(flow)
    state = runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    assert state.status == "failed" and state.phase("pick").status == "failed"
    error = state.phase("pick").error or ""
    assert error == (
        "picks.csv: check unique failed on column 'id': 3 row(s) with repeated values; "
        "data rows 2 (line 3), 4 (line 5), 5 (line 6)"
    )
    assert not run.paths.out("total.csv").exists()


def test_a_script_check_runs_after_the_phase_and_at_the_gate(tmp_path, allow_local) -> None:
    yaml_text = TWO_GATES.replace(
        "dtype: {amount: number}, min_rows: 1}",
        "dtype: {amount: number}, min_rows: 1, script: checks/total.py}",
    )
    script = """
        import csv, sys
        rows = list(csv.DictReader(open(sys.argv[1])))
        kept = sum(float(r["amount"]) for r in rows if r["action"] == "keep")
        assert kept >= 20, f"kept only {kept}"
    """
    flow = write_flow(
        tmp_path / "s", yaml_text % {"backend": "fake"}, dict(FILES, **{"checks/total.py": script})
    )
    run = runner.begin(flow)
    state = runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    assert state.waiting == "gate"  # 60 kept: passed in the sandbox's kernel
    picks = run.paths.out("picks.csv")
    picks.write_bytes(picks.read_bytes().replace(b",keep", b",drop"))
    with pytest.raises(runner.Refused, match="check script failed.*kept only 0"):
        runner.approve(flow, run.id, gate="pick")
    assert RunHandle.open(run.flow, run.id).state.waiting == "gate"


def test_at_a_gate_the_header_stays_unless_the_flow_says_otherwise() -> None:
    before, after = b"id,v\n1,a\n", b"id,value\n1,a\n"
    (failure,) = checks.evaluate("t.csv", {}, after, original=before)
    assert failure.check == "same_columns"
    assert checks.evaluate("t.csv", {"same_columns": False}, after, original=before) == []
    assert checks.evaluate("t.csv", {}, after) == []  # after the phase: nothing to keep


WEATHER = """
    flow: weather
    sandbox: {backend: fake, timeout: 60}
    phases:
      - id: clean
        kind: script
        script: scripts/clean.py
        outputs: [clean.csv]
        review: required
        checks:
          clean.csv: {unique: [day], values: {city: [Oslo, Bergen]}, script: checks/range.py}
"""
RANGE = """
    import csv, sys
    bad = [n for n, r in enumerate(csv.DictReader(open(sys.argv[1])), start=1)
           if float(r["min"]) > float(r["max"])]
    assert not bad, f"min > max on rows {bad}"
"""


def weather(tmp_path, rows: str):  # type: ignore[no-untyped-def]
    clean = f'open("clean.csv", "w").write("""day,city,min,max\\n{rows}""")\n'
    files = {"scripts/clean.py": clean, "checks/range.py": RANGE}
    return write_flow(tmp_path / "weather", WEATHER, files)


def test_after_the_phase_every_failing_check_is_named_with_its_rows(tmp_path) -> None:
    flow = weather(tmp_path, "1,Oslo,1,5\\n2,Olso,9,3\\n3,Bergen,2,4\\n4,Bregen,1,2\\n")
    run = runner.begin(flow)
    state = runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    assert state.status == "failed"
    assert state.phase("clean").error == (
        "2 checks fail: (1) clean.csv: check values failed on column 'city': 2 row(s) with "
        "values not in ['Oslo', 'Bergen']; data rows 2 (line 3), 4 (line 5); (2) clean.csv: check "
        "script failed: "
        "checks/range.py: AssertionError: min > max on rows [2]"
    )


def test_approve_and_save_name_every_failing_check_not_the_first(tmp_path, allow_local) -> None:
    # the Gate's script check runs in a sandbox of the flow's (fake) backend: the person allows it
    flow = weather(tmp_path, "1,Oslo,1,5\\n2,Bergen,3,4\\n")
    run = runner.begin(flow)
    assert (
        runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes())).waiting
        == "gate"
    )
    # the reviewer mistypes a city and swaps a row's min and max: both are refused at once
    edited = b"day,city,min,max\n1,Olso,1,5\n2,Bergen,4,3\n"
    run.paths.out("clean.csv").write_bytes(edited)
    with pytest.raises(runner.Refused) as caught:
        runner.approve(flow, run.id, gate="clean")
    text = str(caught.value)
    assert "2 checks fail" in text
    assert "check values failed on column 'city': 1 row(s) with values not in" in text
    assert "data row 1 (line 2);" in text and "min > max on rows [2]" in text
    failures = checks.check_data(run.flow, run.flow.phase("clean"), "clean.csv", edited, None)
    assert [(f.check, f.rows) for f in failures] == [("values", (1,)), ("script", ())]


def test_a_key_is_unique_and_never_empty_together() -> None:
    spec = {"key": ["station", "day"]}
    ok = b"station,day\nOSL,1\nOSL,2\nBGN,1\n"
    assert checks.evaluate("t.csv", spec, ok) == []
    (failure,) = checks.evaluate("t.csv", spec, b"station,day\nOSL,1\nOSL,1\n,2\n")
    assert (failure.check, failure.column, failure.rows) == ("key", "station+day", (2, 3))
    (missing,) = checks.evaluate("t.csv", {"key": ["id"]}, ok)
    assert missing.check == "key" and "['id']" in missing.message


def test_a_key_names_at_least_one_column(tmp_path) -> None:
    text = TWO_GATES.replace("unique: [id],", "unique: [id], key: [],") % {"backend": "fake"}
    flow = write_flow(tmp_path / "k", text, FILES)
    _, report = contract.load(flow)
    assert any("key: expected at least one column name" in str(e) for e in report.errors)
