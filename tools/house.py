"""The rules of the house a tool can hold, beyond ruff, mypy and .importlinter (run by
``make lint``; each prints ``path:line: what`` and the script exits 1 on any finding):

- no module cycle among praxis's modules, counting the imports inside functions (import-linter
  checks cycles only between packages, and a function-local import hides one from it);
- no function-local import of a praxis module, but the deliberate ones of ``DEFERRED``: each
  keeps a heavy or rarely needed module out of a quick command's start-up
  (tests/test_imports.py pins those budgets);
- no module of praxis over ``MAX_LINES`` lines (split it by job);
- one home per rule (``ONE_HOME``): a name only the module that owns its rule may use in code
  (a string that becomes another process's script is that script's business): ``O_NOFOLLOW``
  in ``sandbox/files/`` (the one file-safety module), ``docker.errors`` in
  ``sandbox/daemon.py`` (the one conversion of the SDK's errors), ``docker`` and ``zmq`` in
  ``sandbox/`` (their errors stop there);
- no test skips by itself: a missing dependency fails, or skips through a marker's policy in
  tests/conftest.py (``PRAXIS_REQUIRE_*``: CI fails instead); no ``pytest.importorskip``,
  ``pytest.skip`` or ``skip`` mark elsewhere, and a ``skipif`` only on a condition CI cannot
  meet silently (one naming ``CI`` or a ``PRAXIS_REQUIRE_*`` variable).

An import under ``if TYPE_CHECKING:`` never runs and does not count.

    python tools/house.py [ROOT]      # ROOT: the folder holding the praxis package
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

MAX_LINES = 500
PACKAGE = "praxis"

# (importer, imported): why the import waits until the function runs. Start-up of the quick
# commands (``status``, ``runs``, ``check``, ``--help``) and the heavy stacks (web, chat, MCP,
# models) that only some commands need.
_CLI = "the parser alone for --help; each command loads what it needs"
_QUICK = "not needed by status, runs or check (tests/test_imports.py)"
_STACK = "a heavy stack (web, MCP, chat, models) loaded only by the command that serves it"
DEFERRED: dict[tuple[str, str], str] = {
    ("praxis.cli", "praxis.flows.report.trace"): _CLI,
    ("praxis.cli", "praxis.flows.definition.contract"): _CLI,
    ("praxis.cli", "praxis.flows.model.decisions"): _CLI,
    ("praxis.cli", "praxis.flows.store.handle"): _CLI,
    ("praxis.cli", "praxis.service.reading"): _CLI,
    ("praxis.cli", "praxis.service.authority"): _CLI,
    ("praxis.cli", "praxis.flows.definition.isolation"): _CLI,
    ("praxis.cli", "praxis.overview"): _CLI,
    ("praxis.overview", "praxis.flows.store.layout"): _CLI,
    ("praxis.overview", "praxis.flows.store.state_file"): _CLI,
    ("praxis.terminal", "praxis.overview"): _CLI,
    ("praxis.commands.runs", "praxis.service.acting"): _QUICK,
    ("praxis.flows.store.handle", "praxis.flows.model.machine"): _QUICK,
    ("praxis.flows.engine.reconcile", "praxis.flows.model.transitions"): _QUICK,
    ("praxis.commands.serving", "praxis.mcp_server"): _STACK,
    ("praxis.commands.serving", "praxis.web.app"): _STACK,
    ("praxis.commands.serving", "praxis.web.background"): _STACK,
    ("praxis.commands.serving", "praxis.chat.terminal"): _STACK,
    ("praxis.chat.chat", "praxis.agent.scripted"): _STACK,
    ("praxis.web.chat_routes", "praxis.chat.transcript"): _STACK,
    ("praxis.web.chat_routes", "praxis.chat.chat"): _STACK,
    ("praxis.web.chat_routes", "praxis.chat.workfiles"): _STACK,
    ("praxis.web.chat_routes", "praxis.chat.authoring"): _STACK,
    ("praxis.web.chat_routes", "praxis.agent.model"): _STACK,
    ("praxis.web.chat_routes", "praxis.llm.loop"): _STACK,
    ("praxis.web.warm", "praxis.flows.definition.kinds"): _STACK,
    ("praxis.web.warm", "praxis.flows.store.record"): _STACK,
    ("praxis.phases.kinds", "praxis.flows.definition.notebook_check"): "notebook flows only",
    ("praxis.flows.store.handle", "praxis.flows.model.events"): _QUICK,
    ("praxis.flows.store.handle", "praxis.flows.store.event_log"): _QUICK,
    ("praxis.flows.model.transitions", "praxis.flows.model.events"): _QUICK,
    ("praxis.flows.model.phase_moves", "praxis.flows.model.events"): _QUICK,
    ("praxis.flows.model.run_moves", "praxis.flows.model.events"): _QUICK,
    ("praxis.flows.model.partition_moves", "praxis.flows.model.events"): _QUICK,
    ("praxis.flows.engine.acks", "praxis.flows.model.events"): _QUICK,
    ("praxis.flows.engine.binding", "praxis.flows.model.events"): _QUICK,
    ("praxis.flows.report.receipt", "praxis.flows.model.events"): _QUICK,
    ("praxis.flows.report.facts", "praxis.flows.engine.carry"): _QUICK,
    ("praxis.flows.report.facts", "praxis.flows.engine.checks"): _QUICK,
    ("praxis.flows.report.status", "praxis.flows.engine.checks"): _QUICK,
    ("praxis.flows.report.status", "praxis.flows.engine.carry"): _QUICK,
    ("praxis.flows.engine.reconcile", "praxis.flows.store.snapshot"): _QUICK,
    ("praxis.flows.engine.reconcile", "praxis.flows.store.objects"): _QUICK,
    ("praxis.flows.engine.reconcile", "praxis.flows.engine.edits"): _QUICK,
}

# name -> (the paths that may use it in code: a folder ends in /, what to do instead). A module
# of sandbox that runs without the package (inside the image) keeps its own, listed with why.
_IN_IMAGE = "sandbox/zygote_sweep.py"  # runs inside the sandbox image, without the package
ONE_HOME: dict[str, tuple[tuple[str, ...], str]] = {
    "O_NOFOLLOW": (
        ("sandbox/files/", _IN_IMAGE),
        "open it through sandbox.files (open_nofollow, open_below, walk, replace_at)",
    ),
    "docker.errors": (("sandbox/daemon.py",), "convert through sandbox.daemon.docker_errors"),
    "docker": (("sandbox/",), "ask sandbox/ (its errors are the sandbox's tree)"),
    "zmq": (("sandbox/",), "ask sandbox/ (its errors are the sandbox's tree)"),
}

# Cycles another change is removing: a cycle found here is not a finding (none now). An entry
# here or in DEFERRED that no longer matches is one: remove it.
PENDING_CYCLES: list[frozenset[str]] = []


@dataclass(frozen=True)
class Import:
    importer: str
    imported: str  # the module, or the package a name was imported from
    path: Path
    line: int
    local: bool  # inside a function


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(root: Path, importer: str, is_package: bool, node: ast.ImportFrom) -> list[str]:
    if node.level:
        base = importer.split(".")
        base = base[: len(base) - node.level + (1 if is_package else 0)]
        where = ".".join([*base, *([node.module] if node.module else [])])
    else:
        where = node.module or ""
    found = []
    for alias in node.names:
        sub = f"{where}.{alias.name}"
        path = root / Path(*sub.split("."))
        found.append(sub if path.with_suffix(".py").is_file() or path.is_dir() else where)
    return found


def _type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def imports(root: Path, package: str = PACKAGE) -> Iterator[Import]:
    """Every import of a ``package`` module by a ``package`` module, at any depth."""
    for path in sorted((root / package).rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        yield from _walk(root, package, path, tree, local=False)


def _walk(root: Path, package: str, path: Path, node: ast.AST, local: bool) -> Iterator[Import]:
    importer = module_name(root, path)
    for child in ast.iter_child_nodes(node):
        if _type_checking(child):
            continue
        names: list[str] = []
        if isinstance(child, ast.Import):
            names = [a.name for a in child.names]
        elif isinstance(child, ast.ImportFrom):
            names = _resolve(root, importer, path.name == "__init__.py", child)
        for name in names:
            if name == package or name.startswith(package + "."):
                line = child.lineno if isinstance(child, ast.stmt) else 0
                yield Import(importer, name, path, line, local)
        inner = local or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
        yield from _walk(root, package, path, child, inner)


def cycles(found: list[Import]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's, iterative)."""
    edges: dict[str, set[str]] = {}
    for imp in found:
        if imp.imported != imp.importer:
            edges.setdefault(imp.importer, set()).add(imp.imported)
            edges.setdefault(imp.imported, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    groups: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on.add(start)
        while work:
            node, todo = work[-1]
            nxt = next(todo, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(edges[nxt]))))
                elif nxt in on:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return groups


def findings(root: Path, package: str = PACKAGE) -> list[str]:
    """What breaks a rule, one line each (``package``: another package, for tests, is held
    to the rules without this one's allowances)."""
    found = list(imports(root, package))
    ours = package == PACKAGE
    out: list[str] = []
    groups = cycles(found)
    local = {(i.importer, i.imported) for i in found if i.local}
    for pending in PENDING_CYCLES if ours else []:
        if sorted(pending) not in groups:
            out.append(f"tools/house.py: PENDING_CYCLES lists {sorted(pending)}: gone, remove it")
    for pair in DEFERRED if ours else {}:
        if pair not in local:
            out.append(f"tools/house.py: DEFERRED lists {pair}: no such import, remove it")
    for group in groups:
        if ours and frozenset(group) in PENDING_CYCLES:
            continue
        ties = [i for i in found if i.importer in group and i.imported in group]
        where = "; ".join(sorted({f"{_rel(root, i.path)}:{i.line} -> {i.imported}" for i in ties}))
        out.append(f"module cycle {' <-> '.join(group)}: {where}")
    deferred = DEFERRED if ours else {}
    for imp in found:
        line = (
            f"{_rel(root, imp.path)}:{imp.line}: function-local import of {imp.imported}: import"
            " it at the top, or add it to DEFERRED in tools/house.py saying why it waits"
        )
        if imp.local and (imp.importer, imp.imported) not in deferred and line not in out:
            out.append(line)
    for path in sorted((root / package).rglob("*.py")):
        lines = len(path.read_text().splitlines())
        rel = path.relative_to(root).as_posix()
        if lines > MAX_LINES:
            out.append(f"{rel}: {lines} lines, over {MAX_LINES}: split it by job")
    return out


def one_home_findings(
    root: Path,
    packages: tuple[str, ...] = (PACKAGE, "sandbox"),
    rules: dict[str, tuple[tuple[str, ...], str]] | None = None,
) -> list[str]:
    """Each line where a module outside a name's home uses the name in code."""
    table = ONE_HOME if rules is None else rules
    out: list[str] = []
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            rel = _rel(root, path)
            for node in ast.walk(ast.parse(path.read_text(), rel)):
                for text in _dotted(node):
                    for name, (homes, instead) in table.items():
                        if not _names(text, name) or any(_under(rel, h) for h in homes):
                            continue
                        line = f"{rel}:{getattr(node, 'lineno', 0)}: {name} outside"
                        line += f" {', '.join(homes)}: {instead}"
                        if line not in out:
                            out.append(line)
    for name, (homes, _) in table.items() if rules is None else []:
        for home in homes:
            if not (root / home).exists():
                out.append(f"tools/house.py: ONE_HOME[{name!r}] names {home}: gone, remove it")
    return out


def _dotted(node: ast.AST) -> list[str]:
    """The dotted names ``node`` uses: a name, an attribute chain, what an import imports."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [ast.unparse(node)]
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom) and not node.level and node.module:
        return [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
    return []


def _names(text: str, name: str) -> bool:
    return text == name or text.startswith(name + ".") or text.endswith("." + name)


def _under(rel: str, home: str) -> bool:
    return rel.startswith(home) if home.endswith("/") else rel == home


SKIPS = ("skip", "importorskip", "skipif")


def skip_findings(root: Path, tests: str = "tests") -> list[str]:
    """Each place a test skips by itself, outside tests/conftest.py's marker policies."""
    out = []
    for path in sorted((root / tests).rglob("*.py")):
        rel = _rel(root, path)
        if rel == f"{tests}/conftest.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), rel)):
            if not (isinstance(node, ast.Attribute) and node.attr in SKIPS):
                continue
            if ast.unparse(node.value) not in ("pytest", "pytest.mark"):
                continue
            line = f"{rel}:{node.lineno}: pytest.{node.attr}"
            call = _call_of(path, node)
            if node.attr == "skipif" and call is not None and call.args:
                condition = ast.unparse(call.args[0])
                if "'CI'" in condition or "PRAXIS_REQUIRE_" in condition:
                    continue
            out.append(
                f"{line}: a test that skips by itself; let a missing dependency fail, or mark"
                " it (docker, ray, ...) so tests/conftest.py skips it, and fails it in CI"
            )
    return out


def _call_of(path: Path, attribute: ast.Attribute) -> ast.Call | None:
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and ast.dump(node.func) == ast.dump(attribute):
            if node.lineno == attribute.lineno:
                return node
    return None


def _rel(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix()


def main(argv: list[str]) -> int:
    root = Path(argv[0]) if argv else Path(__file__).resolve().parent.parent
    found = findings(root) + one_home_findings(root) + skip_findings(root)
    for line in found:
        print(line, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
