"""praxis/flows/definition/kinds.py: phase kinds are entry points; flow.yaml names them; another
distribution adds one; naming a kind imports nothing of its executor."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from praxis.errors import UsageError
from praxis.flows.definition import kinds
from praxis.flows.definition.kinds import PhaseKind, UnknownKind


def test_the_names_are_the_entry_points_of_the_group() -> None:
    declared = {e.name for e in importlib.metadata.entry_points(group=kinds.GROUP)}
    assert set(kinds.names()) == declared and kinds.names()[:3] == ("script", "notebook", "agent")
    assert all(isinstance(kinds.get(name), PhaseKind) for name in kinds.names())


def test_an_unknown_kind_names_the_nearest_and_the_choices() -> None:
    with pytest.raises(UnknownKind, match=r"'scirpt' \(did you mean 'script'\? use one of: script"):
        kinds.get("scirpt")
    assert issubclass(UnknownKind, UsageError)


def test_only_an_agent_reads_reference_inputs_and_is_never_reused() -> None:
    assert [kinds.get(n).reusable for n in ("script", "notebook", "agent")] == [True, True, False]
    assert [kinds.get(n).reads_reference for n in ("script", "notebook", "agent")] == [
        False, False, True,
    ]  # fmt: skip


TOY = """
from dataclasses import dataclass

@dataclass(frozen=True)
class ToySpec:
    query: str

@dataclass(frozen=True)
class Toy:
    reusable: bool = True
    reads_reference: bool = False

    def fit(self, raw, loc, reader):
        for key in [k for k in raw if k != "query"]:
            reader.unknown_key(loc, key, ("query",))
        if "query" not in raw:
            reader.error(loc, "missing required key 'query' (the SQL a toy phase runs)")
            return None
        return ToySpec(raw["query"])

    def files(self, flow, phase):
        return []

    def load(self):
        return None

    def run(self, ctx):
        raise NotImplementedError

kind = Toy()
"""


def test_another_distribution_adds_a_kind_that_flow_yaml_names(tmp_path: Path) -> None:
    """In a fresh process: a phase of the plug-in's kind is read by the plug-in into its own
    spec, which the definition digest holds."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "toy_kind.py").write_text(TOY)
    info = site / "toy_kind-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-kind\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[praxis.phase_kinds]\ntoy = toy_kind:kind\n")
    flows = {"missing": "", "typo": "    qeury: select 1\n", "one": "    query: select 1\n"}
    flows["two"] = "    query: select 2\n"
    for name, keys in flows.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "flow.yaml").write_text(
            f"flow: f\nphases:\n  - id: a\n    kind: toy\n    outputs: [a.csv]\n{keys}"
        )
    script = textwrap.dedent("""\
        import json, sys
        from praxis.flows.definition import contract, digests, kinds
        print(kinds.names())
        for folder in sys.argv[1:]:
            flow, report = contract.load(folder)
            phase = flow.phases[0] if flow else None
            print(json.dumps([
                [str(p) for p in report.problems],
                repr(phase.spec) if phase else None,
                digests.digest_of(flow, phase, {}) if phase else None,
            ]))
        print(sorted(m for m in sys.modules if m.startswith("praxis.phases.")))
        """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), *sys.path])}
    done = subprocess.run(
        [sys.executable, "-c", script, *(str(tmp_path / name) for name in flows)],
        capture_output=True, text=True, timeout=120, check=False, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    names, missing, typo, one, two, loaded = done.stdout.splitlines()
    assert names == "('script', 'notebook', 'agent', 'query', 'toy')"
    assert json.loads(missing)[0] == [
        "flow.yaml: phases[a]: missing required key 'query' (the SQL a toy phase runs)"
    ]
    assert "phases[a]: unknown key 'qeury' (did you mean 'query'?)" in json.loads(typo)[0][0]
    (problems, spec, digest), (_, spec2, digest2) = json.loads(one), json.loads(two)
    assert problems == [] and spec == "ToySpec(query='select 1')" and spec2.endswith("2')")
    assert digest != digest2  # the kind's own keys are what the phase computes
    assert loaded == "[]"  # no executor of a built-in kind was imported to check the flow
