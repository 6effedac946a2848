"""Steps 5-6 of a phase: new files routed to output/ or scratch/, declared outputs checked,
and earlier attempts archived (through the runner on the fake, and on collect's own)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from praxis.flows.engine import collect, runner
from praxis.flows.engine.context import PhaseError
from praxis.flows.model.flow import Phase
from praxis.flows.store import intact, snapshot
from praxis.flows.store.event_log import EventLog
from praxis.flows.store.handle import RunHandle
from praxis.flows.store.layout import RunPaths
from praxis.flows.store.snapshot import FOLDER, Item, Manifest, Store
from sandbox import ExecResult

from .helpers import Fakes, one_script_flow, write_flow


def kinds(run: RunHandle) -> list[str]:
    return [e.kind for e in EventLog(run.paths.events).read()]


WRITE = "with open('clean.csv', 'w') as fh: fh.write('{}')"
ALLOW = " (list it under may_be_empty: in flow.yaml if load may write no rows)"
HEADER_ONLY = "output clean.csv has a header and no rows" + ALLOW
EMPTY = "output clean.csv is empty" + ALLOW


@pytest.mark.parametrize(
    ("script", "may_be_empty", "error"),
    [
        (WRITE.format("id,amount\\n"), "[]", HEADER_ONLY),
        (WRITE.format(""), "[]", EMPTY),
        ("pass", "[]", "output clean.csv was not written"),
        (WRITE.format("id,amount\\n"), "[clean.csv]", None),
    ],
)
def test_declared_outputs_are_checked(tmp_path, script: str, may_be_empty: str, error) -> None:
    flow = write_flow(
        tmp_path / "f",
        f"""
        sandbox: {{backend: fake}}
        phases:
          - id: load
            kind: script
            script: s.py
            outputs: [clean.csv]
            may_be_empty: {may_be_empty}
    """,
        {"s.py": script},
    )
    run = runner.begin(flow)
    state = runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    if error is None:
        assert state.status == "done"
    else:
        assert (state.status, state.phase("load").error) == ("failed", error)
        assert run.paths.record("load").is_file()
        assert "phase_failed" in kinds(run)


def test_sandbox_file_wins_over_a_staged_file(tmp_path) -> None:
    flow = one_script_flow(tmp_path / "f", "pass")
    run = runner.begin(flow)

    def stage_then_run(code, workspace):
        run.paths.staging.mkdir(parents=True, exist_ok=True)
        (run.paths.staging / "x.txt").write_text("transcribed")
        (workspace / "x.txt").write_text("from the sandbox")
        return ExecResult(status="ok")

    runner.advance(
        flow, run.id, options=runner.RunOptions(make_sandbox=Fakes(handler=stage_then_run))
    )
    assert run.paths.out("x.txt").read_text() == "from the sandbox"


# --- collect's own functions -----------------------------------------------------------------


@pytest.fixture
def paths(tmp_path: Path) -> RunPaths:
    paths = RunPaths(tmp_path / "runs" / "r1")
    paths.make()
    return paths


def stored(store: Store, tmp_path: Path, name: str, data: bytes) -> Item:
    src = tmp_path / "src" / name
    src.parent.mkdir(parents=True, exist_ok=True)
    src.write_bytes(data)
    sha, size = store.add_file(src)
    return Item(sha, size)


def test_route_files_new_and_changed_files_and_leaves_the_unchanged(
    paths: RunPaths, tmp_path: Path
) -> None:
    store = Store(paths.objects)
    same = stored(store, tmp_path, "same.txt", b"same")
    pre: Manifest = {"same.txt": same, "notes/": Item(FOLDER, 0)}
    post: Manifest = {
        **pre,
        "clean.csv": stored(store, tmp_path, "clean.csv", b"id\n1\n"),
        "notes/scratch.txt": stored(store, tmp_path, "scratch.txt", b"scratch"),
    }
    phase = Phase(id="load", kind="script", outputs=("clean.csv",))
    outputs = collect.route(paths, phase, pre, post, store, paths.staging)
    assert outputs == {"clean.csv": post["clean.csv"].sha256}
    out = paths.out("clean.csv")
    assert out.read_bytes() == b"id\n1\n"
    assert out.stat().st_ino == store.path(outputs["clean.csv"]).stat().st_ino  # a link
    assert (paths.scratch_of("load") / "notes" / "scratch.txt").read_bytes() == b"scratch"
    assert not paths.out("same.txt").exists()
    assert not (paths.scratch_of("load") / "same.txt").exists()


def test_an_output_taken_as_an_input_is_not_hashed_again(
    paths: RunPaths, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = Store(paths.objects)
    post: Manifest = {"clean.csv": stored(store, tmp_path, "clean.csv", b"id\n1\n")}
    phase = Phase(id="load", kind="script", outputs=("clean.csv",))
    outputs = collect.route(paths, phase, {}, post, store, paths.staging)
    read: list[int] = []
    monkeypatch.setattr(snapshot, "hash_fd", lambda fd: read.append(fd) or "unused")
    assert store.add_file(paths.out("clean.csv")) == (outputs["clean.csv"], 5)
    assert read == []  # the next phase's upload of it: known from route, not read
    gated = Phase(id="review", kind="script", outputs=("flags.csv",), review="required")
    post = {"flags.csv": post["clean.csv"]}
    collect.route(paths, gated, {}, post, store, paths.staging)
    store.add_file(paths.out("flags.csv"))
    assert len(read) == 1  # a reviewer may edit a gated output: it is read again


def test_an_output_linked_into_place_is_known_as_its_object_is_now(
    paths: RunPaths, tmp_path: Path
) -> None:
    # The link into output/ and its rename change the object's ctime: it is remembered as it
    # is after both, so checking the object again (the next phase's input) reads nothing.
    store = Store(paths.objects)
    post: Manifest = {"clean.csv": stored(store, tmp_path, "clean.csv", b"id\n1\n")}
    phase = Phase(id="load", kind="script", outputs=("clean.csv",))
    sha = collect.route(paths, phase, {}, post, store, paths.staging)["clean.csv"]
    assert intact.known(os.stat(store.path(sha)), sha)


def test_a_gated_output_is_a_writable_copy_the_store_never_shares(
    paths: RunPaths, tmp_path: Path
) -> None:
    store = Store(paths.objects)
    post: Manifest = {"flags.csv": stored(store, tmp_path, "flags.csv", b"id\n1\n")}
    phase = Phase(id="review", kind="script", outputs=("flags.csv",), review="required")
    outputs = collect.route(paths, phase, {}, post, store, paths.staging)
    out, obj = paths.out("flags.csv"), store.path(outputs["flags.csv"])
    assert out.stat().st_ino != obj.stat().st_ino
    assert stat.S_IMODE(out.stat().st_mode) == 0o644
    out.write_bytes(b"id\n2\n")  # a reviewer's edit at the Gate
    assert obj.read_bytes() == b"id\n1\n"


def test_route_refuses_an_unsafe_name(paths: RunPaths, tmp_path: Path) -> None:
    store = Store(paths.objects)
    post: Manifest = {"a\\b.txt": stored(store, tmp_path, "x", b"x")}
    phase = Phase(id="load", kind="script", outputs=())
    with pytest.raises(PhaseError, match="refused to collect"):
        collect.route(paths, phase, {}, post, store, paths.staging)


def test_check_outputs_names_the_near_miss_and_reads_tsv_rows(paths: RunPaths) -> None:
    phase = Phase(id="load", kind="script", outputs=("b.csv",))
    with pytest.raises(PhaseError, match=r"'b_typo.csv' \(now in scratch/load/\): a typo"):
        collect.check_outputs(paths, phase, scratch=["b_typo.csv", "other.txt"])
    with pytest.raises(PhaseError, match="b.csv was not written$"):
        collect.check_outputs(paths, phase, scratch=["other.txt"])
    tsv = Phase(id="load", kind="script", outputs=("t.tsv",))
    paths.out("t.tsv").write_text("id\tamount\n\n  \t \n")  # blank rows are not rows
    with pytest.raises(PhaseError, match="t.tsv has a header and no rows"):
        collect.check_outputs(paths, tsv)
    paths.out("t.tsv").write_text("id\tamount\n1\t10\n")
    collect.check_outputs(paths, tsv)


def test_archive_attempt_moves_outputs_scratch_and_record(paths: RunPaths) -> None:
    phase = Phase(id="load", kind="script", outputs=("clean.csv", "missing.csv"))
    assert collect.archive_attempt(paths, phase, 1) is None  # nothing to keep
    paths.out("clean.csv").write_text("id\n1\n")
    paths.scratch_of("load").mkdir()
    (paths.scratch_of("load") / "s.txt").write_text("s")
    paths.record("load").write_text("{}")
    dest = collect.archive_attempt(paths, phase, 1)
    assert dest == paths.attempt("load", 1)
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*")) == [
        "output",
        "output/clean.csv",
        "record.ipynb",
        "scratch",
        "scratch/s.txt",
    ]
    assert not paths.out("clean.csv").exists() and not paths.record("load").exists()


def test_archive_attempt_after_an_interrupted_one_keeps_both(paths: RunPaths) -> None:
    phase = Phase(id="load", kind="script", outputs=("clean.csv",))
    kept = paths.attempt("load", 1) / "output" / "clean.csv"
    kept.parent.mkdir(parents=True)
    kept.write_text("moved before the crash")
    paths.out("clean.csv").write_text("still in output")
    collect.archive_attempt(paths, phase, 1)
    assert kept.read_text() == "moved before the crash"
    assert kept.with_name("clean.csv.1").read_text() == "still in output"
    assert os.listdir(paths.output) == []
