"""docs/reliability.md items 17-18 at run time: what a phase leaves and what a reviewer edits."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from praxis import api
from praxis.flows.engine import runner
from praxis.flows.store.layout import NotWritable

from ._flows import begin, one_line_error, praxis, state_of, write_flow

# every flow here asks for the fake or local backend: the person allows it
pytestmark = pytest.mark.usefixtures("local_env")

PHASE = """
    flow: paths
    sandbox: {backend: local, timeout: 60}
    phases:
      - id: make
        kind: script
        script: make.py
        outputs: [out.csv]
"""
CASES = {
    "symlink-out": ("import os\nos.symlink('/etc/passwd', 'out.csv')\n", "out.csv"),
    "fifo": ("import os\nos.mkfifo('out.csv')\n", "out.csv"),
    "symlink-undeclared": (
        "import os\nopen('out.csv', 'w').write('a\\n1\\n')\nos.makedirs('d')\n"
        "os.symlink('/etc', 'd/etc')\nos.symlink('/etc/passwd', 'secret.txt')\n",
        None,
    ),
    "backslash": (
        "open('out.csv', 'w').write('a\\n1\\n')\nopen('bad\\\\name.txt', 'w').write('x')\n",
        "bad\\\\name.txt",
    ),
}


def _symlinks(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_symlink()]


@pytest.mark.parametrize("case", sorted(CASES))
def test_item17_unsafe_files_are_not_collected(case: str, tmp_path: Path) -> None:
    script, named = CASES[case]
    flow = write_flow(tmp_path / "flow", PHASE, {"make.py": script})
    run = begin(flow)
    res = praxis("advance", str(flow))
    output = run / "output"
    record_of_run = [p for p in run.iterdir() if p.name != "workspace"]
    assert not any(_symlinks(p) or p.is_symlink() for p in record_of_run), res.stdout
    assert not any(p.is_fifo() for p in run.rglob("*") if "workspace" not in p.parts)
    if named is None:  # undeclared links are never collected; the phase itself is fine
        assert res.returncode == 0, res.stderr
        assert sorted(p.name for p in output.iterdir()) == ["out.csv"]
        assert not (run / "scratch" / "make" / "secret.txt").exists()
        return
    assert res.returncode == 1, (res.stdout, res.stderr)
    line = one_line_error(res, "PhaseFailed: ")
    assert named in line, line
    assert state_of(run).phase("make").status == "failed"
    assert not (output / "out.csv").exists() or (output / "out.csv").read_text() == "a\n1\n"


GATED = """
    flow: gated
    sandbox: {backend: fake, timeout: 30}
    phases:
      - id: first
        kind: script
        script: first.py
        outputs: [first.csv]
      - id: flag
        kind: script
        script: flag.py
        outputs: [review.csv]
        review: required
"""
GATED_FILES = {
    "first.py": "open('first.csv', 'w').write('a\\n1\\n')\n",
    "flag.py": "open('review.csv', 'w').write('id,action\\n1,keep\\n')\n",
}


@pytest.fixture
def at_gate(tmp_path: Path) -> Path:
    flow = write_flow(tmp_path / "gated", GATED, GATED_FILES)
    res = praxis("run", str(flow))
    assert res.returncode == 0, res.stderr
    assert state_of(next((flow / "runs").iterdir())).waiting == "gate"
    return flow


def test_item18_edits_outside_the_writable_outputs_are_refused(
    at_gate: Path, tmp_path: Path
) -> None:
    run = next((at_gate / "runs").iterdir())

    def record() -> dict[Path, bytes]:
        # hashes.json is a cache of file hashes by identity, which any command may fill
        return {
            p: p.read_bytes() for p in run.rglob("*") if p.is_file() and p.name != "hashes.json"
        }

    snapshot = record()
    for name in (
        "first.csv",
        "run.json",
        "../run.json",
        "/etc/passwd",
        "review.csv/x",
        "records/flag.ipynb",
        "..\\run.json",
        "",
        "review.csv\x00",
    ):
        with pytest.raises(NotWritable):
            api.edit(at_gate, name, b"id,action\n1,drop\n")
    assert record() == snapshot
    state = api.edit(at_gate, "review.csv", "id,action\n1,drop\n")  # the writable one works
    assert (run / "output" / "review.csv").read_text() == "id,action\n1,drop\n"
    assert state.phase("flag").hashes["review.csv"]


def test_item18_edits_through_a_symlink_are_refused(at_gate: Path, tmp_path: Path) -> None:
    run = next((at_gate / "runs").iterdir())
    outside = tmp_path / "outside.csv"
    outside.write_text("precious\n")
    review = run / "output" / "review.csv"
    review.unlink()
    review.symlink_to(outside)
    with pytest.raises(NotWritable, match="leads outside|symbolic link"):
        runner.edit(at_gate, "review.csv", b"id,action\n1,drop\n")
    assert outside.read_text() == "precious\n"

    review.unlink()
    review.write_text("id,action\n1,keep\n")
    planted = run / "output" / ".review.csv.edit"  # a link where the edit writes its temp file
    planted.symlink_to(outside)
    runner.edit(at_gate, "review.csv", b"id,action\n1,drop\n")
    assert outside.read_text() == "precious\n"
    assert not review.is_symlink() and review.read_text() == "id,action\n1,drop\n"
    planted.unlink(missing_ok=True)

    moved = tmp_path / "elsewhere"
    (run / "output").rename(moved)
    (run / "output").symlink_to(moved)  # the whole output folder replaced by a link
    with pytest.raises(NotWritable):
        runner.edit(at_gate, "review.csv", b"id,action\n1,drop\n")
    assert (moved / "review.csv").read_text() == "id,action\n1,drop\n"
    assert os.path.islink(run / "output")
