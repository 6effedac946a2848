"""The flow's content store: shared by runs, held through refs, swept by gc (store.py)."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import stat
from pathlib import Path

import pytest

from praxis.flows.definition.contract import require
from praxis.flows.engine import runner
from praxis.flows.store import objects as store
from praxis.flows.store.layout import RunPaths, run_paths
from praxis.flows.store.snapshot import load_manifest
from praxis.flows.store.upgrade import OldLayout

from .helpers import Fakes, three_phase_flow


def held_by(run: Path) -> set[str]:
    """Every object run folder ``run`` names: in its manifests and its outputs' hashes."""
    found: set[str] = set()
    for path in (run / "snapshots").rglob("*.json"):
        found |= {i.sha256 for n, i in (load_manifest(path) or {}).items() if not n.endswith("/")}
    return found


def test_runs_of_a_flow_share_one_read_only_store(tmp_path: Path) -> None:
    root = three_phase_flow(tmp_path)
    fakes = Fakes()
    first = runner.run(root, options=runner.RunOptions(make_sandbox=fakes, reuse=False))
    second = runner.run(root, options=runner.RunOptions(make_sandbox=fakes, reuse=False))
    objects = root / ".praxis" / "objects"
    names = {p.name for p in objects.iterdir() if len(p.name) == 64}
    for state in (first, second):
        paths = run_paths(root, state.run)
        assert not paths.legacy_objects.exists()
        held = set(store.read_refs(paths.root))
        assert held_by(paths.root) <= held <= names
        clean = paths.out("clean.csv")  # a recorded output is the store's read-only file
        sha = first.phases[0].hashes["clean.csv"]
        assert os.stat(clean).st_ino == os.stat(objects / sha).st_ino
    # the same inputs, the same outputs: the same objects, each stored once
    assert held_by(run_paths(root, first.run).root) == held_by(run_paths(root, second.run).root)
    for path in objects.iterdir():
        if len(path.name) == 64:
            assert stat.S_IMODE(path.stat().st_mode) == 0o444


def test_deleting_a_run_removes_only_what_no_other_run_holds(tmp_path: Path) -> None:
    root = three_phase_flow(tmp_path)
    (root / "scripts" / "load.py").write_text(
        (root / "scripts" / "load.py").read_text()
        + "import secrets\nopen('nonce.txt', 'w').write(secrets.token_hex(8))\n"
    )
    fakes = Fakes()
    first = runner.run(root, options=runner.RunOptions(make_sandbox=fakes, reuse=False))
    second = runner.run(root, options=runner.RunOptions(make_sandbox=fakes, reuse=False))
    a, b = run_paths(root, first.run), run_paths(root, second.run)
    only_a = (a.scratch_of("load") / "nonce.txt").read_bytes()
    assert only_a != (b.scratch_of("load") / "nonce.txt").read_bytes()
    flow = require(root)
    runner.delete_runs(flow, [first.run])
    objects = root / ".praxis" / "objects"
    left = {p.name for p in objects.iterdir() if len(p.name) == 64}
    assert held_by(b.root) <= left  # everything the other run holds is there
    assert not any((objects / n).read_bytes() == only_a for n in left)
    # and the other run goes on: re-run from its first phase, every file where it should be
    runner.rerun(flow, "load", second.run)
    assert (
        runner.advance(flow, second.run, options=runner.RunOptions(make_sandbox=fakes)).waiting
        == "gate"
    )
    runner.delete_runs(flow, [second.run])
    assert {p.name for p in objects.iterdir() if len(p.name) == 64} == set()


def _sweep_loop(root: str, rounds: int) -> None:
    for _ in range(rounds):
        store.sweep(Path(root))


@pytest.mark.parametrize("how", ["add_file", "add_flow_file", "add_bytes"])
def test_every_way_a_run_keeps_a_host_file_holds_it_before_it_is_used(
    tmp_path: Path, how: str
) -> None:
    """A flow file uploaded as a working input goes through the store too: the run names it
    in its refs under the store's lock, so a gc sweeping right after keeps it."""
    root = three_phase_flow(tmp_path)
    paths = run_paths(root, runner.begin(root).id)
    data = os.urandom(1 << 12)
    (root / "in.bin").write_bytes(data)
    kept = store.RunStore(paths)
    if how == "add_file":
        sha, _ = kept.add_file(root / "in.bin")
    elif how == "add_flow_file":
        sha, _ = kept.add_flow_file(root, "in.bin")
    else:
        sha = kept.add_bytes(data)
    assert sha in store.read_refs(paths.root)
    assert store.sweep(root).objects == 0
    assert kept.path(sha).read_bytes() == data


def test_an_object_added_while_gc_sweeps_is_always_there(tmp_path: Path) -> None:
    """A run adds the same content again and again while another process sweeps: every add
    leaves the object in the store, and held (gc's exclusive lock against the add's shared
    one, the reference written in the same hold)."""
    root = three_phase_flow(tmp_path)
    state = runner.begin(root)
    paths = run_paths(root, state.id)
    src = tmp_path / "src.bin"
    src.write_bytes(os.urandom(1 << 16))
    sweeper = multiprocessing.get_context("spawn").Process(
        target=_sweep_loop, args=(str(root), 400)
    )
    sweeper.start()
    try:
        for n in range(40):
            other = runner.begin(root)  # a run that holds nothing: its objects are swept
            orphan = store.RunStore(run_paths(root, other.id))
            orphan.add_bytes(os.urandom(64))
            shutil.rmtree(run_paths(root, other.id).root)
            fresh = store.RunStore(paths)  # no memory of what it added before
            sha, _ = fresh.add_file(src)
            assert fresh.path(sha).read_bytes() == src.read_bytes(), n
            assert sha in store.read_refs(paths.root)
    finally:
        sweeper.join(timeout=120)
    assert sweeper.exitcode == 0
    assert (
        store.sweep(root).kept == 1
    )  # every orphan goes (in the loop, or now); the held one stays


def old_layout_run(root: Path) -> tuple[str, RunPaths, str]:
    """A run as made before the flow had a store: runs/<id>/objects/ and no refs, at a Gate;
    its id, paths and the hash of its first output."""
    state = runner.run(root, options=runner.RunOptions(make_sandbox=Fakes(), reuse=False))
    paths = run_paths(root, state.run)
    objects = root / ".praxis" / "objects"
    paths.legacy_objects.mkdir()
    for sha in store.read_refs(paths.root):
        os.link(objects / sha, paths.legacy_objects / sha)
    shutil.rmtree(root / ".praxis")
    (paths.root / "refs").unlink()
    return state.run, paths, state.phases[0].hashes["clean.csv"]


def test_a_run_from_before_the_flow_store_reads_as_it_is_and_changes_after_upgrade(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It reads as it is; a change is refused naming `praxis upgrade`, which moves its objects
    into the flow's store once; no other command moves anything."""
    from praxis import cli

    root = three_phase_flow(tmp_path)
    run_id, paths, clean = old_layout_run(root)
    legacy, objects = paths.legacy_objects, root / ".praxis" / "objects"
    assert paths.object(clean) == legacy / clean  # read where it is
    flow = require(root)
    before = paths.state.read_bytes(), sorted(p.name for p in legacy.iterdir())
    with pytest.raises(OldLayout, match=f"run {run_id} keeps its files in runs/{run_id}/obj"):
        runner.approve(flow, run_id, gate="review")
    with pytest.raises(OldLayout) as refused:
        runner.advance(flow, run_id, options=runner.RunOptions(make_sandbox=Fakes()))
    assert refused.value.next(str(root)) == f"praxis upgrade {root}"
    assert (paths.state.read_bytes(), sorted(p.name for p in legacy.iterdir())) == before
    assert not objects.exists()  # nothing moved by the refused commands

    assert cli.main(["upgrade", str(root)]) == 0
    moved = len(before[1])
    assert capsys.readouterr().out == f"moved {moved} object(s) of 1 run(s) into the flow's store\n"
    assert not legacy.exists()
    assert paths.object(clean) == objects / clean and (objects / clean).is_file()
    assert held_by(paths.root) <= set(store.read_refs(paths.root))
    assert cli.main(["upgrade", str(root)]) == 0  # once: nothing left to do
    assert "nothing to upgrade" in capsys.readouterr().out

    runner.approve(flow, run_id, gate="review")
    done = runner.advance(flow, run_id, options=runner.RunOptions(make_sandbox=Fakes()))
    assert done.status == "done"
    assert (paths.out("total.txt")).read_text() == "60"
    assert runner.gc(flow).objects == 0


def test_an_old_run_refused_by_the_cli_names_the_upgrade(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from praxis import cli

    root = three_phase_flow(tmp_path)
    run_id, _, _ = old_layout_run(root)
    assert cli.main(["approve", str(root), "--gate", "review"]) == 4
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"OldLayout: run {run_id} keeps its files in runs/{run_id}/objects/")
    assert err[1].endswith(f"upgrade {root}")


def test_praxis_gc_says_what_it_removed_and_keeps_what_runs_hold(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from praxis import cli

    root = three_phase_flow(tmp_path)
    state = runner.run(root, options=runner.RunOptions(make_sandbox=Fakes(), reuse=False))
    paths = run_paths(root, state.run)
    orphan = store.RunStore(paths).add_bytes(b"held by nobody once its reference is gone")
    (paths.root / "refs").write_text(
        "".join(f"{s}\n" for s in store.read_refs(paths.root) if s != orphan)
    )
    capsys.readouterr()
    assert cli.main(["gc", str(root)]) == 0
    out = capsys.readouterr().out
    held = len(set(store.read_refs(paths.root)))
    assert out.startswith("removed 1 object(s), ") and out.endswith(f"; {held} kept\n"), out
    assert not (paths.objects / orphan).exists()
    assert all((paths.objects / s).is_file() for s in store.read_refs(paths.root))
