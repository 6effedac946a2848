"""flow.yaml's foreach: and parallel: read at `praxis check` (DESIGN.md §17): each form read
into a FanOut, each mistake reported on one line naming where it is."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from praxis.flows.definition import contract, foreach
from praxis.flows.definition.digests import digest_of
from praxis.flows.model.fanout import expand_range, select

HEAD = "flow: f\nsandbox: {backend: fake}\nphases:\n"


def _flow(root: Path, phases: str, files: dict[str, str] | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "s.py").write_text("print(1)\n")
    for name, text in (files or {}).items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (root / "flow.yaml").write_text(HEAD + phases)
    return root


def _errors(root: Path) -> list[str]:
    return contract.check(root).lines()


def test_values_range_and_files_are_read(tmp_path: Path) -> None:
    root = _flow(
        tmp_path / "f",
        "  - {id: a, kind: script, script: s.py, outputs: [a.csv], parallel: 3,\n"
        "     foreach: {param: region, values: [north, south, 7]}}\n"
        "  - {id: b, kind: script, script: s.py, outputs: [b.csv],\n"
        '     foreach: {param: month, range: ["2025-11", "2026-02"]}}\n'
        "  - {id: c, kind: script, script: s.py, outputs: [c.csv],\n"
        '     foreach: {files: "data/parts/*.csv"}}\n',
        {"data/parts/east.csv": "a\n", "data/parts/west.csv": "a\n", "data/parts/n.txt": ""},
    )
    flow = contract.require(root)
    a, b, c = (p.fanout for p in flow.phases)
    assert a is not None and a.values == ("north", "south", "7") and a.parallel == 3
    assert b is not None and b.values == ("2025-11", "2025-12", "2026-01", "2026-02")
    assert b.parallel == 1
    assert c is not None and c.param == "file" and c.files == "data/parts/*.csv"
    assert foreach.files_of(root, "data/parts/*.csv") == [
        ("east", "data/parts/east.csv"),
        ("west", "data/parts/west.csv"),
    ]


@pytest.mark.parametrize(
    ("entry", "line"),
    [
        (
            "foreach: {param: m, values: [a/b]}",
            "flow.yaml: phases[a].foreach.values[0]: 'a/b' cannot name a partition's folder: "
            "letters, digits and _ . = + - (not first), at most 64",
        ),
        (
            "foreach: {param: m, values: [x, x]}",
            "flow.yaml: phases[a].foreach.values[1]: 'x' is listed twice",
        ),
        (
            'foreach: {param: m, range: ["2026-03", "2026-01"]}',
            "flow.yaml: phases[a].foreach.range: the range ends before it begins ('2026-03' first)",
        ),
        (
            'foreach: {param: m, range: ["2026-13", "2027-01"]}',
            "flow.yaml: phases[a].foreach.range: '2026-13'..'2027-01': a month is 01 to 12",
        ),
        (
            "foreach: {values: [x]}",
            "flow.yaml: phases[a].foreach: missing param: (the run parameter that holds the "
            "partition's value)",
        ),
        (
            "foreach: {param: m, values: [x], range: [1, 2]}",
            "flow.yaml: phases[a].foreach: give one of values:, range: or files: (the partitions)",
        ),
        (
            "parallel: 2",
            "flow.yaml: phases[a].parallel: parallel needs a foreach: (the partitions to run)",
        ),
        (
            "foreach: {param: m, values: [x]}, parallel: 0",
            "flow.yaml: phases[a].parallel: expected a whole number 1 to 64, got integer 0",
        ),
        (
            'foreach: {files: "../*.csv"}',
            "flow.yaml: phases[a].foreach.files: '../*.csv': a folder of the flow, then a file "
            "pattern (data/parts/*.csv)",
        ),
        (
            'foreach: {files: "parts/*.csv"}',
            "flow.yaml: phases[a].foreach.files: 'parts/*.csv': the folder 'parts' does not exist",
        ),
    ],
)
def test_each_mistake_is_one_line(tmp_path: Path, entry: str, line: str) -> None:
    root = _flow(tmp_path / "f", f"  - {{id: a, kind: script, script: s.py, {entry}}}\n")
    assert line in _errors(root)


def test_a_pattern_that_matches_nothing(tmp_path: Path) -> None:
    root = _flow(
        tmp_path / "f",
        '  - {id: a, kind: script, script: s.py, foreach: {files: "p/*.csv"}}\n',
        {"p/x.txt": ""},
    )
    assert _errors(root) == [
        "flow.yaml: phases[a].foreach.files: 'p/*.csv' matches no file of the flow "
        "(one partition per file)"
    ]


def test_a_link_is_never_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "east.csv").write_text("a\n")
    root = _flow(
        tmp_path / "f", '  - {id: a, kind: script, script: s.py, foreach: {files: "p/*.csv"}}\n'
    )
    os.symlink(outside, root / "p")
    assert any("cannot be read, a link is never followed" in e for e in _errors(root))
    os.unlink(root / "p")
    (root / "p").mkdir()
    os.symlink(outside / "east.csv", root / "p" / "east.csv")
    assert any("is not a regular file (a link is never followed)" in e for e in _errors(root))


def test_a_later_phase_names_no_partition_output_as_input(tmp_path: Path) -> None:
    root = _flow(
        tmp_path / "f",
        "  - {id: a, kind: script, script: s.py, outputs: [o.csv],\n"
        "     foreach: {param: r, values: [x]}}\n"
        "  - {id: b, kind: script, script: s.py, inputs: {working: [o.csv]}}\n",
    )
    assert (
        "flow.yaml: phases[b].inputs.working[0]: 'o.csv' is an output of the fan-out phase 'a', "
        "one per partition: a later phase finds each at <phase>/<partition>/o.csv in its "
        "workspace; remove it from inputs"
    ) in _errors(root)


def test_parallel_is_not_part_of_the_definition(tmp_path: Path) -> None:
    """How many partitions run at once does not change what each computes: settled work is
    found again; the partitions do."""
    one = "  - {id: a, kind: script, script: s.py, foreach: {param: r, values: [x, y]}%s}\n"
    a = contract.require(_flow(tmp_path / "a", one % ""))
    b = contract.require(_flow(tmp_path / "b", one % ", parallel: 2"))
    c = contract.require(_flow(tmp_path / "c", one.replace("y]", "z]") % ""))
    assert digest_of(a, a.phases[0], {}) == digest_of(b, b.phases[0], {})
    assert digest_of(a, a.phases[0], {}) != digest_of(c, c.phases[0], {})
    plain = contract.require(_flow(tmp_path / "d", "  - {id: a, kind: script, script: s.py}\n"))
    assert "foreach" not in str(digest_of(plain, plain.phases[0], {}))


def test_ranges_and_selections() -> None:
    assert expand_range("2026-11", "2027-02") == ["2026-11", "2026-12", "2027-01", "2027-02"]
    assert expand_range("3", "5") == ["3", "4", "5"]
    with pytest.raises(ValueError, match="neither two months"):
        expand_range("a", "b")
    months = expand_range("2026-01", "2026-12")
    assert select(months, "2026-03..2026-05") == ["2026-03", "2026-04", "2026-05"]
    assert select(months, "2026-05,2026-01") == ["2026-01", "2026-05"]
    assert select(months, None) == months
    with pytest.raises(ValueError, match="'2027-01' is not a partition"):
        select(months, "2026-03..2027-01")
    with pytest.raises(ValueError, match="comes before"):
        select(months, "2026-05..2026-03")
