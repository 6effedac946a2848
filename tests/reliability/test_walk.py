"""RELIABILITY.md item 41: the workspace walk is bounded and never skips.

A phase leaves a folder chain 50,000 deep, or 100,000 sibling folders with files behind
them: on docker the host's walk refuses it naming the folder (it never skips one), costs the
runner bounded memory, and a re-run from the phase before gets back that phase's exact
workspace. A walk out of descriptors (EMFILE) or refused a folder (EACCES) fails naming the
folder, in a child process with its own limits.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox import WalkRefused
from sandbox.files.walk import MAX_DEPTH
from sandbox.tree import Tree

from ..labels import left_after
from ._bounds import BUDGET, counted_flow, measured, remove_containers, rerun_gives_back_phase_one
from ._flows import begin, state_of

CHAIN = r"""
import os
top = os.open(".", os.O_RDONLY)
for _ in range(50_000):
    os.mkdir("d")
    os.chdir("d")
for n in range(400):
    with open(f"hidden{n}.txt", "w") as fh:
        fh.write("x")
os.chdir(top)
with open("ok.txt", "w") as fh:
    fh.write("ok")
"""

SIBLINGS = r"""
import os
os.mkdir("many")
for n in range({folders}):
    os.mkdir(f"many/d{{n:06d}}")
for n in range(400):
    with open(f"many/d{{{folders} - 1 - n % 10:06d}}/hidden{{n}}.txt", "w") as fh:
        fh.write("x")
with open("ok.txt", "w") as fh:
    fh.write("ok")
"""


@pytest.mark.docker
def test_item41_a_chain_50000_deep_is_refused_naming_it_and_a_rerun_restores(
    docker_image: str, tmp_path: Path
) -> None:
    root = counted_flow(tmp_path, docker_image, CHAIN)
    run = begin(root)
    try:
        first = measured("advance", str(root))
        assert "Traceback" not in first.err, first
        assert first.rss < BUDGET, f"praxis advance peaked at {first.rss >> 20} MiB"
        assert (run / "output" / "total.csv").read_text() == "what,count\nTOTAL,0\n"
        p2 = state_of(run).phase("p2")
        assert first.code == 1 and p2.status == "failed", first
        error = str(p2.error)
        assert f"more than {MAX_DEPTH} folder levels deep" in error, error
        assert "'d/d/d/d/" in error and len(error) < 600, error
        rerun_gives_back_phase_one(root, run)
        assert left_after(run.name) == []
    finally:
        remove_containers(run)


@pytest.mark.docker
def test_item41_100000_sibling_folders_are_refused_and_a_rerun_restores(
    docker_image: str, tmp_path: Path
) -> None:
    root = counted_flow(tmp_path, docker_image, SIBLINGS.format(folders=100_000))
    run = begin(root)
    try:
        first = measured("advance", str(root))
        assert "Traceback" not in first.err, first
        assert first.rss < BUDGET, f"praxis advance peaked at {first.rss >> 20} MiB"
        p2 = state_of(run).phase("p2")
        assert p2.status == "failed", first
        error = str(p2.error)
        assert "the workspace holds more than 100000 files and folders" in error, error
        assert "(the count passed it in folder 'many')" in error, error
        assert "bytes" not in error, error
        rerun_gives_back_phase_one(root, run)
        assert left_after(run.name) == []
    finally:
        remove_containers(run)


@pytest.mark.docker
def test_item41_files_behind_20500_sibling_folders_are_all_collected(
    docker_image: str, tmp_path: Path
) -> None:
    """The attack that hid files from the walk (a descriptor per pending folder, EMFILE
    skipped): every file is in the manifest and in scratch/, and p1 re-run sees none."""
    root = counted_flow(tmp_path, docker_image, SIBLINGS.format(folders=20_500))
    run = begin(root)
    try:
        first = measured("advance", str(root))
        assert first.code == 0 and first.rss < BUDGET, first
        post = json.loads((run / "snapshots" / "p2" / "1.post.json").read_text())
        hidden = sorted(n for n in post["files"] if "/hidden" in n)
        assert len(hidden) == 400, len(hidden)
        assert len([n for n in post["folders"] if n.startswith("many/")]) == 20_500
        scratch = run / "scratch" / "p2" / "many"
        assert sum(1 for p in scratch.rglob("hidden*.txt")) == 400
        rerun_gives_back_phase_one(root, run)
        assert left_after(run.name) == []
    finally:
        remove_containers(run)


# -- a walk that cannot open a folder fails naming it -----------------------------------------


def _walk_limited(root: str, nofile: int, uid: int | None, out: multiprocessing.Queue) -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
    os.chdir(root)  # the folders above it need not be open to ``uid``
    if uid is not None:
        os.setgid(uid)
        os.setuid(uid)
    try:
        found = Tree(Path(".")).listing()
        out.put(("ok", len(found)))
    except WalkRefused as exc:
        out.put(("refused", str(exc)))


def _in_child(root: Path, nofile: int, uid: int | None = None) -> tuple[str, object]:
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    child = ctx.Process(target=_walk_limited, args=(str(root), nofile, uid, out))
    child.start()
    result = out.get(timeout=120)
    child.join(timeout=60)
    return result


def _chain(root: Path, depth: int) -> str:
    here = root
    for _ in range(depth):
        here = here / "c"
    here.mkdir(parents=True)
    (here / "deep.txt").write_text("x")
    return "/".join(["c"] * depth)


def test_item41_out_of_descriptors_fails_naming_the_folder(tmp_path: Path) -> None:
    _chain(tmp_path / "ws", 120)
    kind, said = _in_child(tmp_path / "ws", nofile=64)
    assert kind == "refused", said
    shape = r"^folder .c/c/c/.*: cannot be (opened|listed) \(Too many open files\)$"
    assert re.search(shape, str(said)), said


def test_item41_many_siblings_need_no_descriptor_each(tmp_path: Path) -> None:
    """3,000 sibling folders with a file in each, walked with 64 descriptors: all found."""
    ws = tmp_path / "ws"
    for n in range(3000):
        (ws / f"s{n}").mkdir(parents=True)
        (ws / f"s{n}" / "f.txt").write_text("x")
    assert _in_child(ws, nofile=64) == ("ok", 3000)


def test_item41_a_folder_it_may_not_open_fails_naming_it(tmp_path: Path) -> None:
    """Walked as a user the folder's mode shuts out: root (who may open anything) walks as
    nobody, any other user as itself."""
    ws = tmp_path / "ws"
    (ws / "a" / "locked").mkdir(parents=True)
    (ws / "a" / "locked" / "secret.txt").write_text("x")
    (ws / "a").chmod(0o755)
    (ws / "a" / "locked").chmod(0)
    kind, said = _in_child(ws, nofile=256, uid=65534 if os.geteuid() == 0 else None)
    assert kind == "refused", said
    assert str(said) == "folder 'a/locked': cannot be opened (Permission denied)", said


def test_item41_clear_empties_a_chain_deeper_than_any_walk(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    _chain(ws, 3 * MAX_DEPTH)
    (ws / "top.txt").write_text("x")
    with pytest.raises(WalkRefused, match="folder levels deep"):
        Tree(ws).listing()
    assert Tree(ws).clear() == 3 * MAX_DEPTH + 2
    assert list(ws.iterdir()) == []


DEEP = r"""
import os
for _ in range(200):
    os.mkdir("e")
    os.chdir("e")
with open("hidden.txt", "w") as fh:
    fh.write("x")
"""

LIMITED = r"""
import resource, subprocess, sys
resource.setrlimit(resource.RLIMIT_NOFILE, (int(sys.argv[1]), int(sys.argv[1])))
sys.exit(subprocess.run(sys.argv[2:]).returncode)
"""


@pytest.mark.docker
def test_item41_a_runner_out_of_descriptors_fails_the_phase_naming_the_folder(
    docker_image: str, tmp_path: Path
) -> None:
    """The walk under `ulimit -n 128` meets a 200-deep chain: the phase fails naming the
    folder it could not open (it was skipped before, and its files never collected)."""
    root = counted_flow(tmp_path, docker_image, DEEP)
    run = begin(root)
    try:
        done = subprocess.run(
            [sys.executable, "-c", LIMITED, "128", sys.executable, "-m", "praxis", "advance",
             str(root)],
            capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert "Traceback" not in done.stderr, done.stderr[-3000:]
        p2 = state_of(run).phase("p2")
        assert done.returncode == 1 and p2.status == "failed", (done.stderr[-2000:], p2)
        error = str(p2.error)
        shape = r"^WalkRefused: folder 'e/e/.*' \(\d+ levels deep\): cannot be (opened|listed) "
        assert re.search(shape + r"\(Too many open files\)$", error), error
        assert left_after(run.name) == []
    finally:
        remove_containers(run)
