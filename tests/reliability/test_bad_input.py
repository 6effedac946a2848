"""docs/reliability.md items 16 and 17: a bad flow.yaml or path is one located line, exit 2.

Each folder of ``corpus/`` is a bad flow with an ``expected.txt`` holding the error line that
``praxis check`` must print. Cases that need megabytes or a symbolic link get them at test
time (see ``PREPARE``), in a copy of the folder.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from praxis.flows.definition import contract

CORPUS = Path(__file__).parent / "corpus"
MIB = 1 << 20


def _huge_definition(folder: Path) -> None:
    padding = "# padding to make this definition too large to read\n" * (2 * MIB // 52 + 1)
    text = "flow: huge\n" + padding
    (folder / "flow.yaml").write_text(text[: 2 * MIB])


def _huge_file(folder: Path) -> None:
    (folder / "data").mkdir()
    with open(folder / "data" / "big.csv", "wb") as f:
        f.truncate(60 * MIB)  # sparse: costs no disk space; data is streamed, no limit
    with open(folder / "clean.py", "ab") as f:
        f.truncate(60 * MIB)  # a script is read whole: refused


def _symlink_out(folder: Path) -> None:
    outside = folder.parent / "outside.py"
    outside.write_text("print('not a file of the flow')\n")
    (folder / "scripts").mkdir()
    (folder / "scripts" / "clean.py").symlink_to(outside)


PREPARE: dict[str, Callable[[Path], None]] = {
    "16-huge-definition": _huge_definition,
    "16-huge-file": _huge_file,
    "17-symlink-out": _symlink_out,
}


def _cases(item: str) -> list[str]:
    return sorted(p.name for p in CORPUS.iterdir() if p.name.startswith(f"{item}-"))


def _prepared(case: str, tmp_path: Path) -> Path:
    folder = tmp_path / case
    shutil.copytree(CORPUS / case, folder)
    PREPARE.get(case, lambda folder: None)(folder)
    return folder


def _assert_refused(case: str, tmp_path: Path) -> None:
    folder = _prepared(case, tmp_path)
    expected = (folder / "expected.txt").read_text().strip()

    flow, report = contract.load(folder)
    assert flow is None
    assert expected in report.lines()  # refused (an alias bomb before it is expanded)

    proc = subprocess.run(
        [sys.executable, "-m", "praxis", "check", str(folder)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 2, output
    assert expected in output.splitlines(), output
    assert "Traceback" not in output


def test_corpus_covers_items_16_and_17() -> None:
    assert len(_cases("16")) >= 13 and len(_cases("17")) >= 7
    for case in _cases("16") + _cases("17"):
        assert (CORPUS / case / "expected.txt").read_text().count("\n") == 1, case


@pytest.mark.parametrize("case", _cases("16"))
def test_item16_bad_flow_yaml_is_one_located_line_exit_2(case: str, tmp_path: Path) -> None:
    _assert_refused(case, tmp_path)


@pytest.mark.parametrize("case", _cases("17"))
def test_item17_bad_path_is_refused_when_declared(case: str, tmp_path: Path) -> None:
    _assert_refused(case, tmp_path)
