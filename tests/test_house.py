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


def test_a_module_over_500_lines_is_found_anywhere_in_the_package(tmp_path: Path) -> None:
    root = package(
        tmp_path,
        {
            "__init__.py": "",
            "cli.py": "x = 1\n" * 501,
            "flows/__init__.py": "",
            "flows/long.py": "x = 1\n" * 501,
            "flows/short.py": "x = 1\n" * 500,
            "web/__init__.py": "",
            "web/long.py": "x = 1\n" * 501,
            "web/short.py": "x = 1\n" * 500,
        },
    )
    assert house().findings(root, "probe") == [
        "probe/cli.py: 501 lines, over 500: split it by job",
        "probe/flows/long.py: 501 lines, over 500: split it by job",
        "probe/web/long.py: 501 lines, over 500: split it by job",
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


def test_a_name_used_outside_its_one_home_is_found(tmp_path: Path) -> None:
    root = package(
        tmp_path,
        {
            "__init__.py": "",
            "files/__init__.py": "import os\nFLAGS = os.O_RDONLY | os.O_NOFOLLOW\n",
            "store.py": "import os\n\ndef f(p):\n    return os.open(p, os.O_NOFOLLOW)\n",
            "walk.py": "from os import O_NOFOLLOW\n",
            "script.py": "SCRIPT = 'os.open(p, os.O_NOFOLLOW)'\n",  # another process's text
            "image.py": "import os\nF = os.O_NOFOLLOW\n",
            "daemon.py": "import docker.errors\n",
            "client.py": "from docker.errors import NotFound\n",
        },
    )
    rules = {
        "O_NOFOLLOW": (("probe/files/", "probe/image.py"), "use files"),
        "docker.errors": (("probe/daemon.py",), "use daemon"),
    }
    assert house().one_home_findings(root, ("probe",), rules) == [
        "probe/client.py:1: docker.errors outside probe/daemon.py: use daemon",
        "probe/store.py:4: O_NOFOLLOW outside probe/files/, probe/image.py: use files",
        "probe/walk.py:1: O_NOFOLLOW outside probe/files/, probe/image.py: use files",
    ]


def test_a_test_that_skips_by_itself_is_found(tmp_path: Path) -> None:
    root = package(
        tmp_path,
        {
            "conftest.py": "import pytest\n\ndef f():\n    pytest.skip('the policy')\n",
            "test_a.py": "import pytest\n\nray = pytest.importorskip('ray')\n",
            "test_b.py": "import pytest\n\n@pytest.mark.skip\ndef test_b():\n    pass\n",
            "test_c.py": "import os\nimport pytest\n\npytestmark = pytest.mark.skipif("
            "os.environ.get('CI') != 'true' and not os.path.exists('/x'), reason='x')\n",
            "test_d.py": "import pytest\n\npytestmark = pytest.mark.skipif(True, reason='x')\n",
        },
    )
    found = house().skip_findings(root, "probe")
    assert [line.split(": a test")[0] for line in found] == [
        "probe/test_a.py:3: pytest.importorskip",
        "probe/test_b.py:3: pytest.skip",
        "probe/test_d.py:3: pytest.skipif",
    ]
