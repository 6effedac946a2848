"""The Gate's checks of a file are kept by the file's content: asked again of the same
content they are not run again; any change to the file, or to what decides them, runs them,
and an edit of a few rows is checked in those rows from the version before it."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from praxis.flows.definition import digest
from praxis.flows.engine import checked, checks

SPEC = {"values": {"action": ["keep", "drop"]}}


class Counted:
    def __init__(self, path: Path, spec: dict) -> None:
        self.path, self.spec, self.calls = path, spec, 0

    def __call__(self) -> list[checks.Failure]:
        self.calls += 1
        return checks.evaluate("t.csv", self.spec, self.path)


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def ask(
    store: Path, counted: Counted, original: str | None = "a" * 64, objects: Path | None = None
) -> list[str]:
    def stored(version: str) -> Path | None:
        found = objects / version if objects else None
        return found if found and found.is_file() else None

    found = checked.evaluated(
        store, "t.csv", counted.path, counted.spec, original, counted, digest=sha, stored=stored
    )
    return [f"{f.check}:{f.column}:{f.rows}" for f in found]


@pytest.fixture
def table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(digest, "FINE_SETTLED_NS", -1)  # every file counts as settled
    monkeypatch.setattr(digest, "SETTLED_NS", -1)
    path = tmp_path / "t.csv"
    path.write_bytes(b"id,action\n1,keep\n2,maybe\n")
    return path


def test_the_same_content_is_answered_from_what_was_kept(table: Path, tmp_path: Path) -> None:
    store, counted = tmp_path / "checked.json", Counted(table, SPEC)
    first = ask(store, counted)
    assert first == ["values:action:(2,)"] and counted.calls == 1
    assert ask(store, counted) == first and counted.calls == 1  # kept, not run again
    again = Counted(table, SPEC)  # another process: what is on disk answers
    assert ask(store, again) == first and again.calls == 0
    table.write_bytes(table.read_bytes())  # written again, the same content: still kept
    assert ask(store, again) == first and again.calls == 0


def test_any_change_runs_the_checks_again(table: Path, tmp_path: Path) -> None:
    store, counted = tmp_path / "checked.json", Counted(table, SPEC)
    ask(store, counted)
    stat = table.stat()
    with open(table, "r+b") as fh:  # the same size, the mtime set back
        fh.seek(-6, os.SEEK_END)
        fh.write(b"drop\n\n"[:6])
    os.utime(table, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert table.stat().st_size == stat.st_size
    assert ask(store, counted) == [] and counted.calls == 2  # mended: no failure
    assert ask(store, Counted(table, {**SPEC, "unique": ["id"]})) == []  # other checks: run
    assert ask(store, counted, original="b" * 64) == [] and counted.calls == 3  # other original


def test_an_edit_of_a_few_rows_is_checked_from_the_version_before(
    table: Path, tmp_path: Path
) -> None:
    objects = tmp_path / "objects"
    objects.mkdir()
    store, counted = tmp_path / "checked.json", Counted(table, SPEC)
    assert ask(store, counted, objects=objects) == ["values:action:(2,)"]
    (objects / sha(table)).write_bytes(table.read_bytes())  # the run's store holds it
    table.write_bytes(b"id,action\n1,nope\n2,maybe\n")  # row 1 broken too
    assert ask(store, counted, objects=objects) == ["values:action:(1, 2)"]
    assert counted.calls == 1  # from the kept version's failures and the changed row
    table.write_bytes(b"id,action\n1,keep\n2,maybe\n3,keep\n")  # a row added: a whole pass
    assert ask(store, counted, objects=objects) == ["values:action:(2,)"]
    assert counted.calls == 2


def test_a_first_edit_is_checked_from_the_phase_version(table: Path, tmp_path: Path) -> None:
    objects = tmp_path / "objects"
    objects.mkdir()
    table.write_bytes(b"id,action\n1,keep\n2,drop\n")  # as the phase wrote it: it passed
    original = sha(table)
    (objects / original).write_bytes(table.read_bytes())
    table.write_bytes(b"id,action\n1,keep\n2,maybe\n")
    store, counted = tmp_path / "checked.json", Counted(table, SPEC)
    assert ask(store, counted, original, objects) == ["values:action:(2,)"]
    assert counted.calls == 0


def test_a_forged_or_broken_store_costs_a_pass_and_hides_nothing_else(
    table: Path, tmp_path: Path
) -> None:
    store, counted = tmp_path / "checked.json", Counted(table, SPEC)
    ask(store, counted)
    kept = json.loads(store.read_text())
    table.write_bytes(b"id,action\n1,keep\n2,drop\n")  # mended after the entry was kept
    forged = {k: {**v, "failures": []} for k, v in kept.items()}  # "no failure" for the old
    store.write_text(json.dumps(forged))
    table.write_bytes(b"id,action\n1,keep\n2,never\n")  # broken again: other content
    assert ask(store, counted) == ["values:action:(2,)"] and counted.calls == 2
    for junk in (b"not json", b"[1, 2]", b'{"x": 5}', b"{" + b" " * (2 << 20) + b"}"):
        store.write_bytes(junk)
        assert ask(store, Counted(table, SPEC)) == ["values:action:(2,)"]


def test_a_file_changed_just_now_is_not_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(digest, "FINE_SETTLED_NS", 60_000_000_000)
    monkeypatch.setattr(digest, "SETTLED_NS", 60_000_000_000)
    path = tmp_path / "t.csv"
    path.write_bytes(b"id,action\n1,keep\n")
    store, counted = tmp_path / "checked.json", Counted(path, SPEC)
    ask(store, counted)
    ask(store, counted)
    assert counted.calls == 2 and not store.exists()  # a write in the same clock tick could hide
