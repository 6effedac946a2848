"""praxis/errors.py: the tree its docstring draws is the classes' real one, exit codes and
next commands by class, and the CLI printing any of them as one line and the next command."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from pathlib import Path
from types import ModuleType

import pytest

import praxis
import sandbox
from praxis import errors
from praxis.cli import main
from praxis.errors import EXIT, PraxisError, exit_code_of, next_of
from praxis.flows.engine import runner
from sandbox import errors as sandbox_errors
from sandbox.errors import SandboxError, SandboxUnavailable
from sandbox.image.layer import PackagesUnavailable

ROW = re.compile(r"^(?P<indent>[│├└─ ]*)(?P<name>[A-Z]\w+)\s+(?P<code>\d )?.*?\s(?P<home>\S+)$")


def drawn() -> list[tuple[int, str, int | None, str]]:
    """(depth, class name, exit code or None, module) for each row of the drawn tree."""
    doc = errors.__doc__ or ""
    tree = doc[doc.index("PraxisError ") : doc.index("\n\n", doc.index("PraxisError "))]
    rows = []
    for line in tree.splitlines():
        match = ROW.match(line)
        assert match, line
        code = match["code"]
        rows.append(
            (len(match["indent"]) // 4, match["name"], int(code) if code else None, match["home"])
        )
    return rows


def cls_of(name: str, home: str) -> type[BaseException]:
    module = "praxis.errors" if home == "(here)" else f"praxis.{home}"
    value = getattr(importlib.import_module(module), name)
    assert isinstance(value, type)
    return value


def test_the_drawn_tree_is_the_class_tree_with_its_exit_codes() -> None:
    rows = drawn()
    assert len(rows) >= 30
    parents: list[type[BaseException]] = []
    for depth, name, code, home in rows:
        cls = cls_of(name, home)
        parents[depth:] = [cls]
        if depth:
            assert cls.__mro__[1] is parents[depth - 1] or parents[depth - 1] in cls.__bases__
        assert issubclass(cls, PraxisError)
        if code is not None:
            assert cls.exit_code == code, name  # type: ignore[attr-defined]
        else:
            assert cls.exit_code == parents[depth - 1].exit_code, name  # type: ignore[attr-defined]


def every_praxis_module() -> list[ModuleType]:
    names = [m.name for m in pkgutil.walk_packages(praxis.__path__, "praxis.")]
    return [importlib.import_module(n) for n in names if not n.endswith(".__main__")]


def raised_in(module: ModuleType) -> set[type[BaseException]]:
    """The classes a module's ``raise X(...)`` / ``raise a.b.X`` name, resolved in the module."""
    found: set[type[BaseException]] = set()
    if module.__file__ is None:
        return found
    for node in ast.walk(ast.parse(Path(module.__file__).read_text())):
        if not isinstance(node, ast.Raise) or node.exc is None:
            continue
        target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        chain: list[str] = []
        while isinstance(target, ast.Attribute):
            chain.insert(0, target.attr)
            target = target.value
        if not isinstance(target, ast.Name):
            continue
        value: object = getattr(module, target.id, None)
        for attr in chain:
            value = getattr(value, attr, None)
        if isinstance(value, type) and issubclass(value, BaseException):
            found.add(value)
    return found


def subclasses(cls: type[PraxisError]) -> set[type[PraxisError]]:
    found = set(cls.__subclasses__())
    for sub in list(found):
        found |= subclasses(sub)
    return found


def test_every_praxis_error_raised_or_defined_is_drawn_in_the_tree() -> None:
    modules = every_praxis_module()
    raised = set().union(*(raised_in(m) for m in modules))
    ours = {c for c in raised if issubclass(c, PraxisError)}
    assert {errors.Refused, runner.Unbound, errors.UsageError} <= ours  # the scan resolves names
    defined = {c for c in subclasses(PraxisError) if c.__module__.startswith("praxis.")}
    rows = {(name, cls_of(name, home).__module__) for _, name, _, home in drawn()}
    missing = sorted(
        f"{c.__module__}.{c.__name__}"
        for c in ours | defined | {PraxisError}
        if (c.__name__, c.__module__) not in rows
    )
    assert missing == [], f"draw these in praxis/errors.py's tree: {missing}"


def test_the_public_errors_are_the_tree_s() -> None:
    assert praxis.Refused is errors.Refused is runner.Refused
    assert issubclass(praxis.Unbound, praxis.Refused) and praxis.Unbound.exit_code == 2
    for name in ("Busy", "FlowInvalid", "NoOutput", "NoRun", "NotWritable", "PraxisError"):
        assert issubclass(getattr(praxis, name), PraxisError), name


def test_value_and_lookup_errors_stay_what_they_were() -> None:
    from praxis.api import NoOutput
    from praxis.flows.model.decisions import BadActor
    from praxis.flows.model.params import BadParam

    assert issubclass(BadParam, ValueError) and issubclass(BadActor, ValueError)
    assert issubclass(NoOutput, LookupError)


def test_a_sandbox_error_maps_to_exit_5_and_its_own_next_command() -> None:
    assert exit_code_of(SandboxUnavailable("no daemon")) == EXIT["unavailable"] == 5
    assert next_of(SandboxUnavailable("no daemon"), "f").startswith("start Docker")
    packages = PackagesUnavailable.__new__(PackagesUnavailable)
    assert next_of(packages, "f") == "fix sandbox.packages, then: praxis sandbox build f"


def test_next_commands_name_the_flow_or_the_instance() -> None:
    from praxis.commands.serving import PortBusy

    assert PraxisError("x").next("f") == "praxis status f"
    assert runner.Unbound("unbound", "praxis approve f --gate g").next("f") == (
        "praxis approve f --gate g"
    )
    assert PortBusy("127.0.0.1", 8765).next("f") == "praxis serve --port 8766"


def test_an_invalid_flow_is_one_line_and_the_check_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flow = tmp_path / "bad"
    flow.mkdir()
    (flow / "flow.yaml").write_text("flow: bad\nphases: []\nsurprise: 1\n")
    assert main(["status", str(flow)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and err[0].startswith("FlowInvalid: flow.yaml")
    assert err[1] == f"  next: praxis check {flow}"


# --- every exception class of praxis and sandbox, documented --------------------------------

INTERNAL = re.compile(r"^(?P<name>_?[A-Z]\w+)\s+.*\s(?P<home>\S+)$")


def sandbox_drawn() -> list[tuple[int, str, str]]:
    """(depth, class name, module) for each row of sandbox/errors.py's tree (a row's second
    line, its text only, aside)."""
    doc = sandbox_errors.__doc__ or ""
    tree = doc[doc.index("SandboxError ") : doc.index("\n\n", doc.index("SandboxError "))]
    rows = []
    for line in tree.splitlines():
        match = ROW.match(line)
        if match is None:
            assert not line.strip()[:1].isupper(), line  # the text of the row above
            continue
        rows.append((len(match["indent"]) // 4, match["name"], match["home"]))
    return rows


def internal(module: ModuleType) -> list[tuple[str, str]]:
    """(class name, module) of the classes an errors module lists as caught inside."""
    doc = module.__doc__ or ""
    listed = doc.split("listed here):\n" if module is errors else "recorded failure):\n", 1)[1]
    found = []
    for line in listed.strip().splitlines():
        match = INTERNAL.match(line)
        assert match, line
        found.append((match["name"], match["home"]))
    return found


def sandbox_cls(name: str, home: str) -> type[BaseException]:
    module = "sandbox.errors" if home == "(here)" else f"sandbox.{home}"
    value = getattr(importlib.import_module(module), name)
    assert isinstance(value, type) and issubclass(value, BaseException), (name, home)
    return value


def test_the_sandbox_s_drawn_tree_is_its_class_tree() -> None:
    rows = sandbox_drawn()
    assert len(rows) >= 15
    parents: list[type[BaseException]] = []
    for depth, name, home in rows:
        cls = sandbox_cls(name, home)
        parents[depth:] = [cls]
        assert issubclass(cls, SandboxError)
        if depth:
            assert parents[depth - 1] in cls.__bases__, name


def documented() -> set[type[BaseException]]:
    """Every class drawn in a tree, mapped, or listed as caught inside, by praxis/errors.py
    and sandbox/errors.py."""
    found: set[type[BaseException]] = {SandboxUnavailable, KeyboardInterrupt}  # mapped
    found |= {cls_of(name, home) for _, name, _, home in drawn()}
    found |= {sandbox_cls(name, home) for _, name, home in sandbox_drawn()}
    found |= {cls_of(name, home) for name, home in internal(errors)}
    found |= {sandbox_cls(name, home) for name, home in internal(sandbox_errors)}
    return found


def every_module(package: ModuleType) -> list[ModuleType]:
    names = [m.name for m in pkgutil.walk_packages(package.__path__, f"{package.__name__}.")]
    return [importlib.import_module(n) for n in names if not n.endswith(".__main__")]


def test_every_exception_class_praxis_or_sandbox_raises_or_defines_is_documented() -> None:
    modules = every_module(praxis) + every_module(sandbox)
    raised = set().union(*(raised_in(m) for m in modules))
    defined = {
        value
        for m in modules
        for value in vars(m).values()
        if isinstance(value, type)
        and issubclass(value, BaseException)
        and value.__module__ == m.__name__
    }
    ours = {c for c in raised | defined if c.__module__.split(".")[0] in ("praxis", "sandbox")}
    assert {sandbox_errors.WalkRefused, errors.Refused} <= ours  # the scan finds both packages
    missing = sorted(f"{c.__module__}.{c.__name__}" for c in ours - documented())
    assert missing == [], f"draw these in praxis/errors.py's or sandbox/errors.py's: {missing}"


def test_a_class_listed_as_caught_inside_is_in_no_tree() -> None:
    for name, home in internal(errors):
        assert not issubclass(cls_of(name, home), PraxisError | SandboxError), name
    for name, home in internal(sandbox_errors):
        assert not issubclass(sandbox_cls(name, home), PraxisError | SandboxError), name
