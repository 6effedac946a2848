"""One evaluator of table checks (issue 41, part 3): the rules and words of flow.yaml's
declarative checks live in ``praxis.flows.model.check_rules``; the engine's streamed pass
(``checks.evaluate``), the page's flagged rows (``find.flagged``) and its cell-save checks
(``cellchecks``) all evaluate them, so they mark the same rows with the same messages."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import praxis
from praxis.flows.engine import checks
from praxis.flows.model import check_rules
from praxis.flows.model.check_rules import cell_rules
from praxis.web import cellchecks, columnar, csvedit, csvsplice, find

HEADER = b"id,city,temp,flag,day,note\n"
# Cells at the edges of each rule: Unicode blanks, a zero-width space (not blank), exponents,
# a bool in capitals, an impossible date, a value allowed only as typed.
BODY = (
    "1,Oslo,1e3,TRUE,2024-02-29,ok\n"
    "2,\u00a0,12,yes,2024-02-30,Ok\n"
    "3,\u200b,x,maybe,2024-13-01,ok\n"
    "1,\t,,0,,fine\n"
    "5,Rome,-0.5,n,2024-01-01T10:00,\n"
    "3,Oslo,nan,F,20240101,ok \n"
).encode()
SPEC = {
    "columns": ["id", "city", "region"],
    "unique": ["id", "nowhere"],
    "not_null": ["city", "note"],
    "values": {"note": ["ok", "fine"], "gone": ["x"]},
    "dtype": {"temp": "integer", "flag": "bool", "day": "date", "id": "number"},
    "min_rows": 7,
    "max_rows": 3,
}


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRAXIS_CACHE", str(tmp_path / "cache"))
    (tmp_path / "cache").mkdir()


def test_a_cell_rule_is_one_test_of_a_cells_text() -> None:
    rules = {(r.check, r.column): r for r in cell_rules(SPEC)}
    assert [k[0] for k in rules] == ["not_null", "not_null", "values", "values", "dtype",
                                     "dtype", "dtype", "dtype"]  # fmt: skip
    empty = rules["not_null", "city"].failing
    assert (empty("\u00a0"), empty("\t"), empty("\u200b"), empty(" x ")) == (True, True, False,
                                                                             False)  # fmt: skip
    allowed = rules["values", "note"].failing
    assert (allowed("ok"), allowed("Ok"), allowed("ok "), allowed("")) == (False, True, True, True)
    integer, date = rules["dtype", "temp"].failing, rules["dtype", "day"].failing
    assert (integer("12"), integer("1e3"), integer(""), integer(" 7 ")) == (False, True, False,
                                                                          False)  # fmt: skip
    assert (date("2024-02-29"), date("2024-02-30"), date("2024-01-01T10:00")) == (False, True,
                                                                                False)  # fmt: skip
    assert rules["dtype", "flag"].what == "values that are not bool"


def test_the_engine_and_the_page_mark_the_same_rows_with_the_same_words(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_bytes(HEADER + BODY)
    engine = checks.evaluate("t.csv", SPEC, HEADER + BODY)
    assert {f.check for f in engine} == {"columns", "unique", "not_null", "values", "dtype",
                                         "min_rows", "max_rows"}  # fmt: skip
    assert [str(f) for f in engine if f.message == "no such column"] == [
        "t.csv: check unique failed on column 'nowhere': no such column",
        "t.csv: check values failed on column 'gone': no such column",
    ]
    # the page's flagged rows (0-based, every one) are the engine's (1-based, the first 5)
    idx = csvedit.index(path)
    flags = find.flagged(columnar.copy_of(idx), SPEC)
    page = {(f.check, f.column): (f.message, [r + 1 for r in f.rows.to_pylist()]) for f in flags}
    rows = {(f.check, f.column): (f.message, list(f.rows)) for f in engine if f.rows}
    assert page == rows
    # a cell save checked on the copy says what the engine says of the saved file
    edits = {1: {1: "\u3000"}, 4: {3: "Yes"}}
    saved = cellchecks.check_cells(idx, "t.csv", SPEC, edits)
    assert saved is not None
    assert list(map(str, saved)) == list(
        map(str, checks.evaluate("t.csv", SPEC, csvsplice.splice(idx, edits)))
    )


def test_no_module_of_the_engine_or_the_page_says_what_a_check_finds_but_check_rules() -> None:
    words = ("row(s) with", "no such column", "rows, at least", "rows, at most",
             "missing column(s)", "empty cells", "values not in", "values that are not",
             "repeated values")  # fmt: skip
    home = Path(check_rules.__file__)
    found = []
    top = Path(praxis.__file__).parent
    for path in [*(top / "flows").rglob("*.py"), *(top / "web").rglob("*.py")]:
        if path == home:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                found += [f"{path.name}:{node.lineno}: {w}" for w in words if w in node.value]
    assert found == []


def test_the_pages_column_kernels_are_the_cell_rules_own_tests() -> None:
    import pyarrow as pa

    # every code point, alone and around a letter, and the values a values check allows
    cells = [chr(i) for i in range(0x110000) if not 0xD800 <= i < 0xE000]
    cells += [f"{c}a{c}" for c in cells[:0x3100]] + ["ok", "Ok", "ok ", "fine", ""]
    column = pa.chunked_array([pa.array(cells)])
    spec = {"not_null": ["c"], "values": {"c": ["ok", "fine"]}}
    for rule in cell_rules(spec):
        marked = find._failing_cells(column, rule).to_pylist()
        assert marked == [rule.failing(v) for v in cells], rule.check
