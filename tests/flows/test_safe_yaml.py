"""flow.yaml read safely: duplicate keys, aliases, tags, depth, size and encoding refused with
their line (and column), through contract.check as a user sees them."""

from __future__ import annotations

from pathlib import Path

from .test_contract import SCRIPT_PHASE, lines, make, only


def test_duplicate_keys_are_reported_with_their_line_and_checking_goes_on(tmp_path: Path) -> None:
    text = SCRIPT_PHASE + "    outputs: [a.csv]\n    outputs: [b.csv]\nflow: g\n"
    assert lines(make(tmp_path, text)) == [
        "flow.yaml:7: duplicate key 'outputs' (first at line 6)",
        "flow.yaml:8: duplicate key 'flow' (first at line 1)",
    ]


def test_alias_is_refused(tmp_path: Path) -> None:
    text = "flow: &name f\ndescription: *name\nphases: []\n"
    assert only(make(tmp_path, text)) == (
        "flow.yaml:2:14: alias *name refused: write the value out in full"
    )


def test_syntax_error_has_line_and_column(tmp_path: Path) -> None:
    text = "flow: f\nphases: [\n  - id: a\n"
    assert only(make(tmp_path, text)) == (
        "flow.yaml:3:3: expected the node content, but found '-' (while parsing a flow node)"
    )


def test_explicit_tag_is_refused(tmp_path: Path) -> None:
    text = "flow: !!python/object/apply:os.system [echo hi]\n"
    assert only(make(tmp_path, text)) == (
        "flow.yaml:1:7: tag tag:yaml.org,2002:python/object/apply:os.system refused: "
        "only plain values are allowed"
    )


def test_deep_nesting_is_refused(tmp_path: Path) -> None:
    text = "flow: " + "[" * 5000 + "]" * 5000 + "\n"  # would exhaust the recursion limit
    assert only(make(tmp_path, text)) == (
        "flow.yaml:1:38: nested more than 32 levels deep: refused"
    )


def test_too_many_values_are_refused(tmp_path: Path) -> None:
    text = "flow: [" + "1, " * 20_000 + "]\n"
    assert only(make(tmp_path, text)) == (
        "flow.yaml:1:29999: more than 10000 values: refused as too large"
    )


def test_text_that_is_not_utf8(tmp_path: Path) -> None:
    folder = make(tmp_path, "flow: f\n")
    (folder / "flow.yaml").write_bytes(b"flow: f\ndescription: caf\xe9\n")
    assert only(folder) == "flow.yaml:2: not UTF-8 text (byte 0xe9): save it as UTF-8"


def test_impossible_date_is_a_located_error(tmp_path: Path) -> None:
    text = "flow: f\ndescription: 2024-13-45\n"
    assert only(make(tmp_path, text)) == (
        "flow.yaml:2:14: cannot read '2024-13-45': month must be in 1..12"
    )
