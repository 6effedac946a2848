"""Two rules of the sandbox boundary have one home each, held by reading the source (as
import-linter reads imports): a file is opened without following a link only through
``sandbox/files`` (``open_nofollow`` and the walks), and only ``sandbox/daemon.py`` names
the docker SDK's errors (``docker_errors`` converts them)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
# Sources that run with the standard library alone, sent into the container (the zygote's
# sweep) or run as a script (the watchdog's, a string in watchdog.py, not seen here).
STANDALONE = {"sandbox/zygote_sweep.py"}
# The ray node is being rewritten beside this rule; it is to call open_nofollow and
# docker_errors as the docker backend does.
PENDING: set[str] = set()  # none: every module keeps both rules


def sources() -> Iterator[tuple[str, ast.Module]]:
    for package in ("praxis", "sandbox"):
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            yield rel, ast.parse(path.read_text(encoding="utf-8"), filename=rel)


def names_nofollow(tree: ast.Module) -> list[int]:
    """Lines that use O_NOFOLLOW: ``os.O_NOFOLLOW``, a bare name, ``getattr(os, "O_NOFOLLOW")``."""
    lines = []
    for node in ast.walk(tree):
        if (
            (isinstance(node, ast.Attribute) and node.attr == "O_NOFOLLOW")
            or (isinstance(node, ast.Name) and node.id == "O_NOFOLLOW")
            or (isinstance(node, ast.Constant) and node.value == "O_NOFOLLOW")
        ):
            lines.append(node.lineno)
    return lines


def names_docker_errors(tree: ast.Module) -> list[int]:
    """Lines that import or name ``docker.errors``."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(
            a.name.startswith("docker.errors") for a in node.names
        ):
            lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("docker.errors"):
            lines.append(node.lineno)
        elif (
            isinstance(node, ast.ImportFrom)
            and node.module == "docker"
            and any(a.name == "errors" for a in node.names)
        ):
            lines.append(node.lineno)
        elif (
            isinstance(node, ast.Attribute)
            and node.attr == "errors"
            and isinstance(node.value, ast.Name)
            and node.value.id == "docker"
        ):
            lines.append(node.lineno)
    return lines


def test_no_module_opens_a_file_without_following_links_but_sandbox_files() -> None:
    found = {
        f"{rel}:{line}"
        for rel, tree in sources()
        if not rel.startswith("sandbox/files/") and rel not in STANDALONE | PENDING
        for line in names_nofollow(tree)
    }
    assert not found, f"open it with sandbox.files.open_nofollow (or a walk of it): {sorted(found)}"


def test_the_checks_see_what_they_look_for() -> None:
    seen = ast.parse(
        'import os, docker.errors\nos.open(p, os.O_NOFOLLOW)\ngetattr(os, "O_NOFOLLOW")\n'
    )
    assert names_nofollow(seen) == [2, 3]
    assert names_docker_errors(seen) == [1]
    assert names_docker_errors(ast.parse("import docker\ndocker.errors.NotFound\n")) == [2]
    files = dict(sources())
    assert names_nofollow(files["sandbox/files/__init__.py"])
    assert names_docker_errors(files["sandbox/daemon.py"])


def test_only_the_daemon_module_names_the_docker_sdks_errors() -> None:
    found = {
        f"{rel}:{line}"
        for rel, tree in sources()
        if rel not in {"sandbox/daemon.py"} | PENDING
        for line in names_docker_errors(tree)
    }
    assert not found, f"convert them with sandbox.daemon.docker_errors: {sorted(found)}"
