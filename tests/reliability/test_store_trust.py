"""The content store is praxis's own (RELIABILITY 51), on docker and on the fake.

A flow folder that came from elsewhere may carry a ``.praxis/objects/`` of its choosing, run
folders and reuse entries: none of it reaches a phase unverified. A recorded output is a hard
link to its object: one made writable and edited in place changes the object, and the run
that would restore it fails, naming the object, before any phase sees the edit.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from praxis.flows.store.snapshot import Item, load_manifest, manifest_text

from ._flows import docker_sandbox, event_kinds, praxis_here, state_of
from ._flows import write_flow as _write_flow

PAIR = """
    flow: pair
    SANDBOX
    phases:
      - {id: p1, kind: script, script: p1.py, inputs: {working: [data/in.csv]}, outputs: [p1.csv]}
      - {id: p2, kind: script, script: p2.py, inputs: {working: [p1.csv]}, outputs: [p2.csv]}
"""
FILES = {
    "data/in.csv": "fruit,count\napple,1\n",
    "p1.py": "open('p1.csv', 'w').write(open('data/in.csv').read() + 'picked,1\\n')\n",
    "p2.py": "open('p2.csv', 'w').write(open('p1.csv').read() + 'seen,2\\n')\n",
}
REAL = FILES["data/in.csv"].encode()
P1 = REAL + b"picked,1\n"  # what p1 writes
P2 = P1 + b"seen,2\n"  # what p2 writes


@pytest.fixture(params=[pytest.param("docker", marks=pytest.mark.docker), "fake"])
def sandbox_line(request: pytest.FixtureRequest) -> str:
    if request.param == "docker":
        return docker_sandbox(request.getfixturevalue("docker_image"), timeout=120)
    for allowance in ("local_env", "allow_local"):  # the person's --allow-local: code on this host
        request.getfixturevalue(allowance)
    return 'sandbox: {"backend": "fake", "timeout": 120}'


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def pair(root: Path, line: str) -> Path:
    return _write_flow(root, PAIR.replace("SANDBOX", line), FILES)


def runs_of(root: Path) -> list[Path]:
    return sorted(p for p in (root / "runs").iterdir() if not p.name.startswith("."))


def objects(root: Path) -> Path:
    return root / ".praxis" / "objects"


def everything_recorded(run: Path) -> bytes:
    """Every file the run recorded (outputs, scratch, attempts), joined."""
    found = b""
    for folder in ("output", "scratch", "attempts"):
        for path in sorted((run / folder).rglob("*")):
            if path.is_file():
                found += path.read_bytes()
    return found


def test_a_store_shipped_with_the_flow_never_hands_a_phase_its_planted_bytes(
    sandbox_line: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = pair(tmp_path / "shipped", sandbox_line)
    planted = objects(root) / sha(REAL)  # named for data/in.csv, holding something else
    planted.parent.mkdir(parents=True)
    planted.write_bytes(b"fruit,count\napple,999999\n")

    res = praxis_here(capsys, "run", str(root))

    assert res.returncode == 0, res.stderr
    (run,) = runs_of(root)
    assert (run / "output" / "p1.csv").read_bytes() == P1  # from what data/in.csv holds
    assert b"999999" not in everything_recorded(run)
    assert sha(planted.read_bytes()) == planted.name  # the store holds what its name says


def test_an_output_edited_in_place_never_reaches_a_phase(
    sandbox_line: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = pair(tmp_path / "edited", sandbox_line)
    assert praxis_here(capsys, "run", str(root)).returncode == 0
    (first,) = runs_of(root)
    recorded = state_of(first).phase("p1").hashes["p1.csv"]
    obj = objects(root) / recorded
    out = first / "output" / "p1.csv"  # a hard link to the object
    os.chmod(out, 0o644)  # the person makes the recorded output writable and edits it in place
    with open(out, "r+b") as fh:
        fh.write(b"fruit,count\napple,7\n")

    # a new run would restore p1 from the first run: it fails naming the object and the file
    # it stood for, before p2 could run on the edited bytes
    res = praxis_here(capsys, "run", str(root))
    assert res.returncode != 0
    second = runs_of(root)[-1]
    error = state_of(second).phase("p1").error or ""
    assert recorded in error and "p1.csv" in error, error
    assert f"rm {obj}" in error  # the next step: remove the object, run again
    assert state_of(second).phase("p2").attempt == 0  # p2 never ran
    assert b"apple,7" not in everything_recorded(second)

    obj.unlink()  # as the error says: then p1 runs again and the store holds what it wrote
    res = praxis_here(capsys, "run", str(root))
    assert res.returncode == 0, res.stderr
    third = runs_of(root)[-1]
    assert (third / "output" / "p1.csv").read_bytes() == P1
    assert (third / "output" / "p2.csv").read_bytes() == P2
    assert sha(obj.read_bytes()) == recorded
    assert b"apple,7" not in everything_recorded(third)


def _forge(root: Path, run: Path, output: bytes) -> None:
    """Rewrite run's reuse entry of p1 to name ``output`` as what p1 wrote: objects that hash
    to their names, an entry under the key p1 really has."""
    entries = list((root / ".praxis" / "reuse").rglob(f"{run.name}.1.json"))
    entry_path = next(p for p in entries if json.loads(p.read_text())["phase"] == "p1")
    entry = json.loads(entry_path.read_text())
    store = objects(root)
    forged = sha(output)
    (store / forged).write_bytes(output)
    post = load_manifest(store / entry["post"])
    assert post is not None
    post["p1.csv"] = Item(forged, len(output))
    text = manifest_text(post).encode()
    (store / sha(text)).write_bytes(text)
    entry["post"], entry["outputs"] = sha(text), {"p1.csv": forged}
    entry_path.write_text(json.dumps(entry))


def test_runs_shipped_with_a_flow_are_never_reused(
    sandbox_line: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    made = pair(tmp_path / "theirs" / "pair", sandbox_line)
    assert praxis_here(capsys, "run", str(made)).returncode == 0
    (theirs,) = runs_of(made)
    _forge(made, theirs, b"fruit,count\napple,999999\n")
    root = tmp_path / "ours" / "pair"
    shutil.copytree(made, root)  # the folder as someone sends it: its runs and store with it

    res = praxis_here(capsys, "run", str(root))

    assert res.returncode == 0, res.stderr
    mine = runs_of(root)[-1]
    assert mine.name != theirs.name
    assert "phase_reused" not in event_kinds(mine)  # ran here: nothing taken from their run
    assert (mine / "output" / "p1.csv").read_bytes() == P1
    assert b"999999" not in everything_recorded(mine)
    # runs this folder made here are settled work for the next
    res = praxis_here(capsys, "run", str(root))
    assert res.returncode == 0, res.stderr
    assert event_kinds(runs_of(root)[-1]).count("phase_reused") == 2
