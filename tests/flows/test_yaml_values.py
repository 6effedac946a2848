"""Typed readers for flow.yaml values: each returns the value or None and reports what is
wrong at its location, so every problem of a document is collected."""

from __future__ import annotations

import datetime
import os
import re
from pathlib import Path

import pytest

from praxis.flows.definition.yaml_values import MAX_FILE_BYTES, ValueReader, describe, mib, show


class Reader(ValueReader):
    """A reader that keeps what it reported: (location, message, severity)."""

    def __init__(self, root: Path) -> None:
        self.said: list[tuple[str, str, str]] = []
        super().__init__(root, lambda loc, msg, sev: self.said.append((loc, msg, sev)))


@pytest.fixture
def reader(tmp_path: Path) -> Reader:
    return Reader(tmp_path)


def test_a_usable_value_is_returned_and_nothing_reported(reader: Reader) -> None:
    assert reader.mapping({"a": 1}, "x", ("a", "b")) == {"a": 1}
    assert reader.string("s", "x") == "s"
    assert reader.choice("local", "x", ("docker", "local"), "backend") == "local"
    assert reader.ident("clean_1", "x", re.compile(r"[a-z_0-9]+"), "phase id") == "clean_1"
    assert reader.positive(2.5, "x") == 2.5 and reader.positive(3, "x", whole=True) == 3
    assert reader.names(["a.csv", "d/b.csv"], "x") == [("x[0]", "a.csv"), ("x[1]", "d/b.csv")]
    assert reader.said == [] and reader.errors == 0


def test_each_reader_says_what_is_wrong_where(reader: Reader) -> None:
    assert reader.mapping(["a"], "m", None) is None
    assert reader.mapping({"colour": 1, 2: 3}, "m", ("color", "size")) == {}
    assert reader.string(None, "s") is None
    assert reader.string(5, "s") is None
    assert reader.string(["a"], "s") is None
    assert reader.choice("dokcer", "c", ("docker", "local"), "backend") is None
    assert reader.choice("podman", "c", ("docker", "local"), "backend") is None
    assert reader.ident("Bad Id", "i", re.compile(r"[a-z]+"), "phase id") is None
    assert reader.positive(True, "p") is None
    assert reader.positive(0, "p") is None
    assert reader.positive(float("inf"), "p") is None
    assert reader.positive(2.5, "p", whole=True) is None
    assert reader.said == [
        ("m", "expected a mapping, got a list", "error"),
        ("m", "unknown key 'colour' (did you mean 'color'?)", "error"),
        ("m", "key integer 2 is not a string (quote it)", "error"),
        ("s", "expected a string, got null (give a value)", "error"),
        ("s", "expected a string, got integer 5 (quote it)", "error"),
        ("s", "expected a string, got a list", "error"),
        ("c", "'dokcer' is not a backend (did you mean 'docker'? use one of: docker, local)",
         "error"),
        ("c", "'podman' is not a backend (use one of: docker, local)", "error"),
        ("i", "'Bad Id' is not a valid phase id (use [a-z]+)", "error"),
        ("p", "expected a positive number, got boolean true", "error"),
        ("p", "must be a positive number, got 0", "error"),
        ("p", "must be a positive number, got inf", "error"),
        ("p", "expected a positive whole number, got number 2.5", "error"),
    ]  # fmt: skip
    assert reader.errors == len(reader.said)


def test_a_warning_is_not_an_error(reader: Reader) -> None:
    reader.warn("w", "ignored here")
    assert reader.said == [("w", "ignored here", "warning")] and reader.errors == 0


def test_names_keep_the_good_ones_and_locate_the_bad(reader: Reader) -> None:
    assert reader.names(["a.csv", "../up.csv", 3], "outputs") == [("outputs[0]", "a.csv")]
    assert [loc for loc, _, _ in reader.said] == ["outputs[1]", "outputs[2]"]
    assert reader.names("a.csv", "outputs") == []
    assert reader.said[-1][1] == "expected a list, got string 'a.csv' (write ['a.csv'])"


def test_a_flow_file_must_exist_inside_be_regular_and_not_huge(tmp_path: Path) -> None:
    root = tmp_path / "flow"
    root.mkdir()
    reader = Reader(root.resolve())
    (root / "ok.py").write_text("")
    (tmp_path / "outside.py").write_text("")
    os.symlink(tmp_path / "outside.py", root / "out.py")
    os.mkdir(root / "folder.py")
    os.symlink("loop.py", root / "loop.py")
    with open(root / "huge.csv", "wb") as fh:
        fh.truncate(MAX_FILE_BYTES + 1)
    for name in ("ok.py", "missing.py", "out.py", "folder.py", "loop.py", "huge.csv"):
        reader.flow_file(name, name)
    said = {loc: msg.split(" ", 1)[1] for loc, msg, _ in reader.said}
    assert said.pop("loop.py").startswith("cannot be read (")
    assert said == {
        "missing.py": "does not exist in the flow folder",
        "out.py": "leads outside the flow folder",
        "folder.py": "is not a regular file",
        "huge.csv": "is 50.0 MiB, over the 50 MiB praxis reads whole of a script, notebook,"
        " prompt or query: keep data out of it and list the data under inputs (a working"
        " input of any size is streamed)",
    }
    reader.said.clear()
    reader.flow_file("huge.csv", "inputs.working[0]", streamed=True)  # data: no limit
    assert reader.said == []


def test_values_are_described_by_type_and_long_ones_shortened() -> None:
    assert [describe(v) for v in (None, False, 3, 1.5, "x", [1], {"a": 1})][:6] == [
        "null",
        "boolean false",
        "integer 3",
        "number 1.5",
        "string 'x'",
        "a list",
    ]
    assert describe(datetime.date(2026, 11, 30)) == "date 2026-11-30"
    assert show("x" * 100) == "'" + "x" * 55 + "...'" and len(show("x" * 100)) == 60
    assert mib(3 << 20) == "3.0 MiB"
