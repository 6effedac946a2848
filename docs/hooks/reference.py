"""The reference pages of the docs site, written from the code as the site is built.

MkDocs runs this file as a hook (``hooks:`` in mkdocs.yml): ``on_files`` adds four pages that
exist in no file of docs/, each read from the module that holds its contract, so a page can
never say what the code no longer does:

- reference/cli.md: every command's ``--help``, from ``praxis.cli_parser.parser``;
- reference/flow-yaml.md: flow.yaml's keys, from ``praxis.flows.definition.contract``, the
  phase kinds (``praxis.phases.kinds``) and each sandbox backend's options
  (``sandbox.options``);
- reference/exit-codes.md: ``praxis.errors.EXIT`` and the exception tree;
- reference/events.md: the catalogue of events.jsonl (``praxis.flows.model.events``).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import inspect
import os
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

WIDTH = "96"  # the columns argparse wraps the help text to: the same on every machine


def on_files(files: Files, config: MkDocsConfig) -> Files:
    for name, render in PAGES.items():
        files.append(File.generated(config, f"reference/{name}", content=render()))
    return files


def cli_page() -> str:
    from praxis.cli_parser import parser

    with _columns(WIDTH):  # read by argparse's HelpFormatter as it wraps
        return _cli_page(parser())


@contextlib.contextmanager
def _columns(width: str) -> Iterator[None]:
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = width
    try:
        yield
    finally:
        if before is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = before


def _cli_page(top: argparse.ArgumentParser) -> str:
    out = [
        "# The command line",
        "",
        "Written from the parser of `praxis` (`praxis/cli.py`) as this site was built: what",
        "`praxis COMMAND --help` prints. What each exit code means is on",
        "[Exit codes and errors](exit-codes.md).",
        "",
        "```text",
        top.format_help().rstrip(),
        "```",
    ]
    for name, sub in _commands(top):
        out += ["", f"## praxis {name}", "", "```text", sub.format_help().rstrip(), "```"]
    return "\n".join(out) + "\n"


def _commands(top: argparse.ArgumentParser) -> Iterable[tuple[str, argparse.ArgumentParser]]:
    for action in top._actions:
        if isinstance(action, argparse._SubParsersAction):
            yield from action.choices.items()


def flow_yaml_page() -> str:
    from praxis.flows.definition import (
        contract,
        gate_deadline,
        kinds,
        publish_spec,
        reuse_spec,
        sandbox_config,
        unattended,
    )
    from praxis.phases import kinds as builtin
    from sandbox import backends

    out = [
        "# flow.yaml",
        "",
        "Written from the contract `praxis check` holds a flow to",
        "(`praxis/flows/definition/contract.py`, the phase kinds, `sandbox/options.py`) as this",
        "site was built. A key not listed here is refused, with the nearest key it may have",
        "meant; [the tutorial](../tutorial.md) shows a whole flow.",
        "",
        "## Top-level keys",
        "",
        _keys(contract.TOP_KEYS),
        "",
        "## The keys of every phase",
        "",
        _keys(contract.PHASE_KEYS),
        "",
        f"`reuse:` takes {_alternatives(reuse_spec.MODES)} or `{{within: DURATION}}` (`30m`, "
        "`1h`, `2d`: a done attempt that young stands for the phase; a query phase's default "
        f"is `never`); `inputs:` is a list of file names or a mapping of "
        f"{_alternatives(contract.INPUT_KEYS)}.",
        "",
        "## Schedules, triggers and Gate deadlines",
        "",
        f"`schedule:` takes {_alternatives(unattended.SCHEDULE_KEYS)} (or a cron string alone);"
        f" `catchup:` is one of {_alternatives(unattended.CATCHUP)}. `trigger:` takes "
        f"{_alternatives(unattended.TRIGGER_KEYS)}. A Gate's `review:` mapping also takes "
        f"{_alternatives(gate_deadline.KEYS)} ([schedules](../how-to/schedules.md)).",
        "",
        "## The keys of each kind of phase",
        "",
        "| kind | its own keys |",
        "|---|---|",
    ]
    for name in kinds.names():
        own = builtin.KEYS.get(name, ())
        out.append(f"| `{name}` | {', '.join(f'`{k}`' for k in own) or '(none)'} |")
    out += [
        "",
        f"A notebook phase's `notebook:` takes {_alternatives(builtin.NOTEBOOK_KEYS)}.",
        "",
        "## publish",
        "",
        f"Each entry of `publish:` takes {_alternatives(publish_spec.KEYS)}; its `to:` takes "
        f"{_alternatives(publish_spec.TO_KEYS)}, `mode:` one of "
        f"{_alternatives(publish_spec.MODES)} (`upsert` needs `key:`). See "
        "[query phases and publishing](../how-to/query-and-publish.md).",
        "",
        "## The sandbox mapping",
        "",
        f"`sandbox:` takes the flow's own {_alternatives(sandbox_config.FLOW_KEYS)}; `backend:` "
        f"is one of {_alternatives(backends.names())} (`auto`: docker when a daemon answers, "
        "else local). Each backend takes these options besides, and refuses the others:",
        "",
        "| option | backends | default | allowed |",
        "|---|---|---|---|",
    ]
    allowed = _allowed(inspect.getdoc(_module("sandbox.options")) or "")
    taken: dict[str, list[str]] = {}
    defaults: dict[str, str] = {}
    for backend in [b for b in backends.names() if b != backends.AUTO]:
        options = backends.options_for(backend)
        fields = {f.name: f for f in dataclasses.fields(options)}
        for option in options.names(flow=True):
            taken.setdefault(option, []).append(backend)
            defaults.setdefault(option, _default(fields[option]))
    for option, names in taken.items():
        said = allowed.get(option, "")
        out.append(f"| `{option}` | {', '.join(names)} | {defaults[option]} | {said} |")
    return "\n".join(out) + "\n"


def _allowed(doc: str) -> dict[str, str]:
    """What each option allows, by name, from the table of sandbox.options' docstring
    (``| option | backends | allowed |``, a row may name several options)."""
    found = {}
    for line in doc.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) == 3 and not cells[0].startswith("-"):
            for name in cells[0].split(","):
                found[name.strip()] = cells[2].replace("``", "`")
    return found


def _keys(keys: Iterable[str]) -> str:
    return ", ".join(f"`{k}`" for k in keys)


def _alternatives(keys: Iterable[str]) -> str:
    return _keys(keys) or "(none)"


def _default(f: dataclasses.Field[Any]) -> str:
    if f.default is not dataclasses.MISSING:
        return "(unset)" if f.default is None else f"`{f.default}`"
    if f.default_factory is not dataclasses.MISSING:
        return "(empty)"
    return "(required)"


def _module(name: str) -> Any:
    import importlib

    return importlib.import_module(name)


def exit_codes_page() -> str:
    from praxis import errors

    said = _exit_meanings(inspect.getdoc(_module("praxis.cli")) or "")
    from sandbox import errors as sandbox_errors

    doc = inspect.getdoc(errors) or ""
    tree = doc.split("\n\n", 1)[1] if "\n\n" in doc else doc
    tree, _, inside = tree.partition("\n\nNot for a person")
    sandbox_doc = inspect.getdoc(sandbox_errors) or ""
    sandbox_tree = sandbox_doc[sandbox_doc.find("SandboxError ") :]
    sandbox_tree, _, sandbox_inside = sandbox_tree.partition("\n\nCaught where raised")
    out = [
        "# Exit codes and errors",
        "",
        "Written from `praxis/errors.py` as this site was built. Every error a person can act on",
        "prints one line (`TypeName: message`) and the next command to try; its exit code says",
        "which kind of error it was.",
        "",
        "| code | name | when |",
        "|---|---|---|",
        *(f"| {code} | `{name}` | {said.get(code, '')} |" for name, code in errors.EXIT.items()),
        f"| 130 | | {said.get(130, 'Ctrl-C')} |",
        "",
        "## The exception tree",
        "",
        "Each class with the exit code of its branch, and the module that raises it:",
        "",
        "```text",
        tree.rstrip(),
        "```",
        "",
        "## The sandbox's errors",
        "",
        "Written from `sandbox/errors.py`: the sandbox never imports praxis, so its errors are",
        "not a `PraxisError`; praxis maps `SandboxUnavailable` to exit 5. Each class with the",
        "module of `sandbox` that raises it:",
        "",
        "```text",
        sandbox_tree.rstrip(),
        "```",
        "",
        "## Caught inside",
        "",
        "Classes a module raises and catches itself, or turns into one of the above, a recorded",
        "failure or a model's tool result: no person sees them. In `praxis`:",
        "",
        "```text",
        _listed(inside),
        "```",
        "",
        "In `sandbox`:",
        "",
        "```text",
        _listed(sandbox_inside),
        "```",
    ]
    return "\n".join(out) + "\n"


def _listed(section: str) -> str:
    """The rows of a "caught inside" list (its heading, up to the colon that ends it, aside)."""
    return section.split("):\n", 1)[1].rstrip() if "):\n" in section else section.rstrip()


def _exit_meanings(doc: str) -> dict[int, str]:
    """What each exit code means, by code, from the CLI's docstring ("Exit codes: 0 done or
    waiting at a Gate; 1 a phase failed; ...", up to "Errors print")."""
    if "Exit codes:" not in doc:
        return {}
    words = " ".join(doc.split("Exit codes:", 1)[1].split("Errors print", 1)[0].split())
    found = {}
    for part in words.split(";"):
        m = re.match(r"\s*(\d+) (.*)", part)
        if m:
            found[int(m.group(1))] = m.group(2).rstrip(".").replace("|", "\\|")
    return found


def events_page() -> str:
    from praxis.flows.model import events

    out = [
        "# The events catalogue",
        "",
        "Every kind of line praxis writes to a run's `events.jsonl` (and `trace.jsonl`),",
        "written from its catalogue, `praxis/flows/model/events.py` (each kind's class is in",
        "the module of what it records, beside it), as this site was built. Every line also",
        "holds `kind` and `at` (seconds since the epoch).",
        "",
        "| kind | fields | what it records |",
        "|---|---|---|",
    ]
    for cls in events.CATALOGUE:
        names = [f.name for f in dataclasses.fields(cls) if f.name != "at"]
        said = " ".join(_own_doc(cls).split()).replace("|", "\\|")
        out.append(f"| `{cls.kind}` | {_keys(names) or '(none)'} | {said} |")
    return "\n".join(out) + "\n"


def _own_doc(cls: type) -> str:
    """The class's own docstring: none when it has only the signature dataclass writes."""
    doc = cls.__dict__.get("__doc__") or ""
    return "" if doc.startswith(f"{cls.__name__}(") else doc


PAGES: dict[str, Callable[[], str]] = {
    "cli.md": cli_page,
    "flow-yaml.md": flow_yaml_page,
    "exit-codes.md": exit_codes_page,
    "events.md": events_page,
}
