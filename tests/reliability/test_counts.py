"""RELIABILITY.md item 42: counts are counts.

On docker: a phase that leaves 100,000 files fails with a message that counts files (never
"bytes"), and the run can still be re-run from the phase before (its restore does not fail
the same way). A scratch file named like the host's temp name for a collected file
(``.x.collect`` beside ``x``) is collected with its own content.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ..labels import left_after
from ._bounds import (
    BUDGET,
    counted_flow,
    flow,
    measured,
    phase,
    remove_containers,
    rerun_gives_back_phase_one,
)
from ._flows import begin, state_of

pytestmark = pytest.mark.docker

MANY = r"""
import os
os.mkdir("many")
for n in range(100_000):
    with open(f"many/f{n}", "w") as fh:
        fh.write("x")
with open("ok.txt", "w") as fh:
    fh.write("ok")
"""

NAMES = r"""
for name, text in (("x", "the file x"), (".x.collect", "not x"), (".out.csv.collect", "n")):
    with open(name, "w") as fh:
        fh.write(text)
with open("out.csv", "w") as fh:
    fh.write("a\n1\n")
"""


def test_item42_100000_files_fail_counting_files_and_the_run_reruns(
    docker_image: str, tmp_path: Path
) -> None:
    root = counted_flow(tmp_path, docker_image, MANY)
    run = begin(root)
    try:
        first = measured("advance", str(root))
        assert "Traceback" not in first.err, first
        assert first.rss < BUDGET, f"praxis advance peaked at {first.rss >> 20} MiB"
        p2 = state_of(run).phase("p2")
        assert first.code == 1 and p2.status == "failed", first
        error = str(p2.error)
        assert "holds more than 100000 files and folders" in error, error
        assert "bytes" not in error, error
        rerun_gives_back_phase_one(root, run)  # its restore does not fail as p2 did
        assert "holds more than 100000 files" in str(state_of(run).phase("p2").error)
        assert left_after(run.name) == []
    finally:
        remove_containers(run)


def test_item42_a_scratch_file_named_like_the_temp_name_is_collected(
    docker_image: str, tmp_path: Path
) -> None:
    root = flow(
        tmp_path / "flow", docker_image, [phase("p", "names.py", ["out.csv"])], {"names.py": NAMES}
    )
    run = begin(root)
    try:
        done = measured("advance", str(root))
        assert done.code == 0, done
        scratch = run / "scratch" / "p"
        assert (scratch / "x").read_text() == "the file x"
        assert (scratch / ".x.collect").read_text() == "not x"
        assert (scratch / ".out.csv.collect").read_text() == "n"
        assert (run / "output" / "out.csv").read_text() == "a\n1\n"
        assert left_after(run.name) == []
    finally:
        remove_containers(run)
