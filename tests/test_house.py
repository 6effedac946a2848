"""tools/house.py (run by `make lint`): praxis keeps the rules it holds, and each rule finds
what breaks it in a package made to break it."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
TOOL = ROOT / "tools" / "house.py"


def house() -> ModuleType:
    spec = importlib.util.spec_from_file_location("house", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["house"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "probe" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_praxis_keeps_the_rules_of_the_house() -> None:
    done = subprocess.run([sys.executable, str(TOOL), str(ROOT)], capture_output=True, text=True)
    assert (done.returncode, done.stderr) == (0, "")


def test_a_cycle_hidden_in_a_function_is_found_with_its_import(tmp_path: Path) -> None:
    root = package(
        tmp_path,
        {
            "__init__.py": "",
            "a.py": "from .b import B\n",
            "b.py": "B = 1\n\ndef f():\n    from . import a\n    return a\n",
            "c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import a\n",
        },
    )
    found = house().findings(root, "probe")
    assert found == [
        "module cycle probe.a <-> probe.b: probe/a.py:1 -> probe.b; probe/b.py:4 -> probe.a",
        "probe/b.py:4: function-local import of probe.a: import it at the top, or add it to"
        " DEFERRED in tools/house.py saying why it waits",
    ]


def test_a_flows_module_over_500_lines_is_found(tmp_path: Path) -> None:
    root = package(
        tmp_path,
        {
            "__init__.py": "",
            "flows/__init__.py": "",
            "flows/long.py": "x = 1\n" * 501,
            "flows/short.py": "x = 1\n" * 500,
        },
    )
    assert house().findings(root, "probe") == [
        "probe/flows/long.py: 501 lines, over 500: split it by job"
    ]


def test_an_allowance_that_no_longer_matches_is_found() -> None:
    tool = house()
    tool.DEFERRED[("praxis.nowhere", "praxis.cli")] = "gone"
    tool.PENDING_CYCLES.append(frozenset({"praxis.cli", "praxis.errors"}))
    assert tool.findings(ROOT) == [
        "tools/house.py: PENDING_CYCLES lists ['praxis.cli', 'praxis.errors']: gone, remove it",
        "tools/house.py: DEFERRED lists ('praxis.nowhere', 'praxis.cli'): no such import,"
        " remove it",
    ]
