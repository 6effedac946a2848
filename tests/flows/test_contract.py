"""contract.load: one test per kind of problem, each asserting the exact reported line."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from praxis.agent.spec import DEFAULT_LIMITS, AgentSpec
from praxis.flows.definition import contract, host_resources
from praxis.flows.model.flow import Flow, Phase, SandboxSettings
from praxis.phases.kinds import ScriptSpec
from sandbox import DockerOptions

GOOD = """\
    flow: sales-report
    description: Weekly sales report
    sandbox: {backend: auto, memory: 2g, cpus: 1, timeout: 600}
    model: openai:gpt-4.1-mini
    database: data/shop.sqlite
    phases:
      - id: clean
        kind: script
        description: Drop broken rows.
        script: scripts/clean.py
        inputs:
          working: [data/sales.csv]
        outputs: [clean.csv, rejects.csv]
        may_be_empty: [rejects.csv]
        timeout: 30
      - id: analyse
        kind: agent
        prompt: prompts/analyse.md
        scripts: [scripts/profile.py]
        queries: [queries/top.sql]
        inputs: {working: [clean.csv], reference: [docs/notes.md]}
        outputs: [findings.md, top.csv]
        review: required
        limits: {model_calls: 5}
      - id: chart
        kind: notebook
        script: notebooks/chart.ipynb
        inputs: {working: [top.csv]}
        outputs: [chart.png]
    """
GOOD_FILES = (
    "scripts/clean.py",
    "scripts/profile.py",
    "prompts/analyse.md",
    "queries/top.sql",
    "data/sales.csv",
    "data/shop.sqlite",
    "docs/notes.md",
    "notebooks/chart.ipynb",
)
EMPTY_NOTEBOOK = '{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": []}\n'
SCRIPT_PHASE = "flow: f\nphases:\n  - id: clean\n    kind: script\n    script: clean.py\n"


def make(tmp_path: Path, text: str, files: tuple[str, ...] = ("clean.py",)) -> Path:
    folder = tmp_path / "flow"
    folder.mkdir()
    (folder / "flow.yaml").write_text(textwrap.dedent(text))
    for name in files:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        text = EMPTY_NOTEBOOK if name.endswith(".ipynb") else "# a file of the flow\n"
        (folder / name).write_text(text)
    return folder


def lines(folder: Path) -> list[str]:
    return contract.check(folder).lines()


def only(folder: Path) -> str:
    """The single problem reported for ``folder``."""
    found = lines(folder)
    assert len(found) == 1, found
    return found[0]


# -- a valid flow ------------------------------------------------------------------------------


def test_valid_flow_loads_into_dataclasses(tmp_path: Path) -> None:
    folder = make(tmp_path, GOOD, GOOD_FILES)
    flow, report = contract.load(folder)
    assert report.problems == [] and report.ok
    assert isinstance(flow, Flow)
    assert flow.name == "sales-report"
    assert flow.root == folder.resolve()
    assert flow.description == "Weekly sales report"
    assert flow.sandbox == SandboxSettings(
        backend="auto",
        options=DockerOptions(memory="2g", cpus=1),
        timeout=600,
        written={"backend": "auto", "memory": "2g", "cpus": 1, "timeout": 600},
    )
    assert flow.model == "openai:gpt-4.1-mini"
    assert flow.database == "data/shop.sqlite"
    clean, analyse, chart = flow.phases
    assert clean == Phase(
        id="clean",
        kind="script",
        spec=ScriptSpec("scripts/clean.py"),
        working=("data/sales.csv",),
        outputs=("clean.csv", "rejects.csv"),
        may_be_empty=("rejects.csv",),
        timeout=30,
        description="Drop broken rows.",
    )
    assert analyse == Phase(
        id="analyse",
        kind="agent",
        spec=AgentSpec(
            prompt="prompts/analyse.md",
            scripts=("scripts/profile.py",),
            queries=("queries/top.sql",),
            limits={"model_calls": 5, "run_python": DEFAULT_LIMITS["run_python"]},
        ),
        working=("clean.csv",),
        reference=("docs/notes.md",),
        outputs=("findings.md", "top.csv"),
        review="required",
    )
    assert analyse.gated and not clean.gated
    assert chart.kind == "notebook" and chart.spec.script == "notebooks/chart.ipynb"
    assert flow.producer("top.csv") is analyse


def test_path_to_the_flow_yaml_itself_works(tmp_path: Path) -> None:
    folder = make(tmp_path, GOOD, GOOD_FILES)
    assert contract.require(folder / "flow.yaml") == contract.require(folder)


def test_name_defaults_to_the_folder_lowercased(tmp_path: Path) -> None:
    folder = make(tmp_path, "phases: [{id: a, kind: script, script: clean.py}]")
    folder = folder.rename(tmp_path / "Weekly-Sales")
    assert contract.require(folder).name == "weekly-sales"


def test_folder_name_that_is_not_a_valid_name_needs_a_flow_key(tmp_path: Path) -> None:
    folder = make(tmp_path, "phases: [{id: a, kind: script, script: clean.py}]")
    folder = folder.rename(tmp_path / "My Flow")
    assert only(folder) == (
        "flow.yaml: no flow: name, and the folder name 'My Flow' is not one; "
        "add flow: <name> matching [a-z0-9][a-z0-9-]*"
    )


def test_warnings_keep_the_flow(tmp_path: Path) -> None:
    text = """\
        flow: f
        sandbox: {backend: local}
        phases:
          - {id: a, kind: script, script: clean.py, inputs: {reference: [clean.py]}}
        """
    flow, report = contract.load(make(tmp_path, text))
    assert flow is not None and report.ok and not report.errors
    assert report.lines() == [
        "flow.yaml: sandbox.backend: warning: 'local' runs phases on this machine without "
        "isolation",
        "flow.yaml: phases[a].inputs.reference: warning: only agents read reference inputs; "
        "this script phase ignores them (list them under working:)",
    ]


# -- the file and its YAML ---------------------------------------------------------------------


def test_missing_folder_or_definition(tmp_path: Path) -> None:
    assert only(tmp_path) == (
        f"{tmp_path / 'flow.yaml'}: cannot be read (No such file or directory); "
        "give a flow folder or its flow.yaml"
    )


def test_definition_that_is_not_a_regular_file(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "flow.yaml")  # opening it would block: never opened
    assert only(tmp_path) == "flow.yaml: is not a regular file"


def test_definition_over_1_mib_is_refused_before_parsing(tmp_path: Path) -> None:
    (tmp_path / "flow.yaml").write_text("[" * (2 << 20))  # would be a syntax error if parsed
    assert only(tmp_path) == "flow.yaml: is 2.0 MiB, over the 1 MiB limit for a flow definition"


def test_empty_file_and_wrong_top_level(tmp_path: Path) -> None:
    assert only(make(tmp_path, "")) == "flow.yaml: is empty: a flow needs at least a phases: list"
    (tmp_path / "flow" / "flow.yaml").write_text("- id: a\n")
    assert only(tmp_path / "flow") == "flow.yaml: expected a mapping, got a list"


# -- keys, types and values ----------------------------------------------------------------------


def test_unknown_keys_at_every_level(tmp_path: Path) -> None:
    text = """\
        flow: f
        phase: []
        phases:
          - id: a
            kind: script
            script: clean.py
            inputs: {workin: []}
            limit: {}
        """
    assert lines(make(tmp_path, text)) == [
        "flow.yaml: unknown key 'phase' (did you mean 'phases'?)",
        # a key is known by the phase's kind: a script phase takes no limits
        "flow.yaml: phases[a]: unknown key 'limit' (known: id, kind, inputs, outputs, "
        "may_be_empty, review, timeout, description, checks, reuse, retries, foreach, "
        "parallel, script)",
        "flow.yaml: phases[a].inputs: unknown key 'workin' (did you mean 'working'?)",
    ]


def test_unknown_key_with_nothing_close_lists_the_known_ones(tmp_path: Path) -> None:
    text = "flow: f\nowner: me\nphases: [{id: a, kind: script, script: clean.py}]\n"
    assert only(make(tmp_path, text)) == (
        "flow.yaml: unknown key 'owner' (known: flow, description, sandbox, model, database, "
        "params, notify, schedule, trigger, phases, publish)"
    )


def test_wrong_types(tmp_path: Path) -> None:
    text = SCRIPT_PHASE + '    outputs: clean.csv\n    timeout: "ten"\n    description: [a, b]\n'
    text += "model: 4\n"
    assert lines(make(tmp_path, text)) == [
        "flow.yaml: model: expected a string, got integer 4 (quote it)",
        "flow.yaml: phases[clean].outputs: expected a list, got string 'clean.csv' "
        "(write ['clean.csv'])",
        "flow.yaml: phases[clean].timeout: expected a positive number, got string 'ten'",
        "flow.yaml: phases[clean].description: expected a string, got a list",
    ]


@pytest.mark.parametrize(("word", "shown"), [("no", "false"), ("on", "true"), ("yes", "true")])
def test_yaml11_boolean_where_a_string_is_meant(tmp_path: Path, word: str, shown: str) -> None:
    text = f"flow: f\nphases: [{{id: {word}, kind: script, script: clean.py}}]\n"
    assert only(make(tmp_path, text)) == (
        f"flow.yaml: phases[0].id: expected a string, got boolean {shown} (quote it)"
    )


def test_null_where_a_string_is_meant(tmp_path: Path) -> None:
    text = "flow: f\nmodel:\nphases: [{id: a, kind: script, script: clean.py}]\n"
    assert (
        only(make(tmp_path, text)) == "flow.yaml: model: expected a string, got null (give a value)"
    )


def test_wrong_enums(tmp_path: Path) -> None:
    text = """\
        flow: f
        sandbox: {backend: kubernetes}
        phases:
          - {id: a, kind: shell, review: maybe}
        """
    assert lines(make(tmp_path, text)) == [
        "flow.yaml: sandbox.backend: 'kubernetes' is not a backend (use one of: auto, docker, "
        "fake, local, ray)",
        "flow.yaml: phases[a].kind: 'shell' is not a phase kind (use one of: script, notebook, "
        "agent, query)",
        "flow.yaml: phases[a].review: 'maybe' is not a review (use one of: none, required)",
    ]


def test_bad_ids(tmp_path: Path) -> None:
    text = "flow: Sales_Report\nphases: [{id: Clean!, kind: script, script: clean.py}]\n"
    assert lines(make(tmp_path, text)) == [
        "flow.yaml: flow: 'Sales_Report' is not a valid flow name (use [a-z0-9][a-z0-9-]*)",
        "flow.yaml: phases[0].id: 'Clean!' is not a valid phase id (use [a-z0-9_-]+)",
    ]


def test_missing_required_keys(tmp_path: Path) -> None:
    text = """\
        flow: f
        phases:
          - {description: nothing}
          - {id: s, kind: script}
          - {id: n, kind: notebook}
          - {id: a, kind: agent}
        """
    assert lines(make(tmp_path, text)) == [
        "flow.yaml: phases[0]: missing required key 'id'",
        "flow.yaml: phases[0]: missing required key 'kind'",
        "flow.yaml: phases[s]: missing required key 'script' (the .py file a script phase runs)",
        "flow.yaml: phases[n]: missing required key 'script' (the .ipynb file a notebook phase "
        "runs)",
        "flow.yaml: phases[a]: missing required key 'prompt' (the prompt file of an agent)",
    ]


def test_missing_phases_and_no_phases(tmp_path: Path) -> None:
    assert only(make(tmp_path, "flow: f\n")) == (
        "flow.yaml: missing required key 'phases' (the list of phases)"
    )
    (tmp_path / "flow" / "flow.yaml").write_text("flow: f\nphases: []\n")
    assert only(tmp_path / "flow") == "flow.yaml: phases: is empty: a flow needs at least one phase"


def test_script_suffix_must_fit_the_kind(tmp_path: Path) -> None:
    text = "flow: f\nphases: [{id: n, kind: notebook, script: clean.py}]\n"
    assert only(make(tmp_path, text)) == (
        "flow.yaml: phases[n].script: 'clean.py' must end in .ipynb for a notebook phase"
    )


def test_keys_that_do_not_fit_the_kind(tmp_path: Path) -> None:
    text = """\
        flow: f
        phases:
          - id: s
            kind: script
            script: clean.py
            prompt: clean.py
            limits: {model_calls: 1}
          - {id: a, kind: agent, prompt: clean.py, script: clean.py}
        """
    assert lines(make(tmp_path, text)) == [
        "flow.yaml: phases[s].prompt: only agent phases take 'prompt' (this is a script phase)",
        "flow.yaml: phases[s].limits: only agent phases take 'limits' (this is a script phase)",
        "flow.yaml: phases[a].script: agent phases take no 'script' (list prepared scripts "
        "under scripts:)",
    ]


def test_limits_timeouts_and_sandbox_values(tmp_path: Path) -> None:
    text = """\
        flow: f
        sandbox: {timeout: -1, image: praxis:latest}
        phases:
          - id: a
            kind: agent
            prompt: clean.py
            limits: {model_calls: 0, run_python: 2.5, tokens: 9}
            timeout: .inf
        """
    assert lines(make(tmp_path, text)) == [
        "flow.yaml: sandbox.timeout: must be a positive number, got -1",
        "flow.yaml: phases[a].limits: unknown key 'tokens' (known: model_calls, run_python)",
        "flow.yaml: phases[a].limits.model_calls: must be a positive number, got 0",
        "flow.yaml: phases[a].limits.run_python: expected a positive whole number, got number 2.5",
        "flow.yaml: phases[a].timeout: must be a positive number, got inf",
    ]


def test_packages_are_pep508_requirements(tmp_path: Path) -> None:
    packages = "[scikit-learn==1.6.1, 'statsmodels>=0.14', 'x y', 3]"
    text = SCRIPT_PHASE + f"sandbox: {{packages: {packages}}}\n"
    folder = make(tmp_path, text)
    (folder / "requirements.txt").write_text("# extra\npandas>=2  # fine\n--index-url http://x\n")
    problems = lines(folder)
    assert problems[0].startswith(
        "flow.yaml: sandbox.packages[2]: 'x y' is not a package requirement ("
    )
    assert problems[1:] == [
        "flow.yaml: sandbox.packages[3]: expected a string, got integer 3 (quote it)",
        "flow.yaml: sandbox.packages: requirements.txt line 3: '--index-url http://x' is a pip "
        "option; list package requirements only (name, version, extras)",
    ]
    (folder / "requirements.txt").write_text("pandas>=2\n")
    (folder / "flow.yaml").write_text(SCRIPT_PHASE + "sandbox: {image: mine}\n")
    assert lines(folder) == [
        "flow.yaml: sandbox.image: a flow with packages runs on the image built for them; "
        "remove image: (or the packages)"
    ]


def test_review_yes_says_which_values_work(tmp_path: Path) -> None:
    text = SCRIPT_PHASE + "    review: yes\n"
    assert only(make(tmp_path, text)) == (
        "flow.yaml: phases[clean].review: true (yes/no) is not a review; write review: required "
        "(a Gate after this phase) or review: none"
    )


def test_values_get_a_suggestion(tmp_path: Path) -> None:
    text = SCRIPT_PHASE.replace("kind: script", "kind: scrpit")
    assert only(make(tmp_path, text)) == (
        "flow.yaml: phases[clean].kind: 'scrpit' is not a phase kind (did you mean 'script'? "
        "use one of: script, notebook, agent, query)"
    )


def test_inputs_get_a_suggestion_from_the_flow_folder(tmp_path: Path) -> None:
    text = SCRIPT_PHASE + "    inputs: {working: [data/sale.csv]}\n"
    folder = make(tmp_path, text, files=("clean.py", "data/sales.csv"))
    assert only(folder) == (
        "flow.yaml: phases[clean].inputs.working[0]: 'data/sale.csv' is neither a file of the "
        "flow nor an output of an earlier phase; did you mean 'data/sales.csv'?"
    )


def test_database_is_a_file_of_the_flow_or_a_connection_of_the_profile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PRAXIS_PROFILE", str(tmp_path / "profile.yaml"))
    folder = make(tmp_path, SCRIPT_PHASE + "database: shop.sqlite\n")
    assert only(folder) == (
        "flow.yaml: database: 'shop.sqlite' does not exist in the flow folder "
        "(a database file is read inside the flow folder only)"
    )
    (folder / "flow.yaml").write_text(SCRIPT_PHASE + "database: warehouse\n")
    flow = contract.require(folder)  # reading a flow needs no profile
    assert flow.database == "warehouse"
    assert [(a.section, a.name) for a in host_resources.asked(flow)] == [
        ("connections", "warehouse")
    ]  # checked against the profile at check and run (tests/flows/test_profile.py)


def test_a_database_file_is_read_below_the_flow_folder_with_no_link_followed(
    tmp_path: Path,
) -> None:
    secret = tmp_path / "secret.sqlite"
    secret.write_bytes(b"SQLite format 3\x00")
    folder = make(tmp_path, SCRIPT_PHASE + "database: data/shop.sqlite\n")
    (folder / "data").mkdir()
    (folder / "data" / "shop.sqlite").symlink_to(secret)
    assert only(folder) == (
        "flow.yaml: database: 'data/shop.sqlite' is or passes through a symbolic link or a "
        "non-folder (a database file is read inside the flow folder only)"
    )
    (folder / "data" / "shop.sqlite").unlink()
    (folder / "data").rmdir()
    (folder / "data").symlink_to(tmp_path)  # a linked folder
    assert "is or passes through a symbolic link" in only(folder)
    (folder / "data").unlink()
    (folder / "data").mkdir()
    (folder / "data" / "shop.sqlite").write_bytes(secret.read_bytes())
    assert contract.require(folder).database == "data/shop.sqlite"


PROFILE_FIX = "a flow names a connection of your profile instead: add `connections: {NAME: {url:"


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("postgresql://u:hunter2@h/x", f"names a host (h): {PROFILE_FIX}"),
        ("postgresql+psycopg://${ADV4_SECRET}@127.0.0.1:55432/${HOME}",
         f"reads ${{ADV4_SECRET}}, ${{HOME}} from praxis's environment: {PROFILE_FIX}"),
        ("postgresql:///shop?host=trusted.example&hostaddr=127.0.0.1",
         f"names a postgresql server: {PROFILE_FIX}"),
        ("postgresql+psycopg://u@h/x?password=hunter2", f"names a host (h): {PROFILE_FIX}"),
        ("mysql://u@h/x", f"names a host (h): {PROFILE_FIX}"),
        ("sqlite:////var/tmp/secret.sqlite",
         "names a file outside the flow folder (/var/tmp/secret.sqlite): copy it into the flow "
         "folder and write `database: data/FILE`, or add `connections: {NAME: {url: "
         '"sqlite:////var/tmp/secret.sqlite"}}` to '),
        ("duckdb:////var/tmp/x.duckdb", '{url: "duckdb:////var/tmp/x.duckdb"}}` to '),
        ("/var/tmp/secret.sqlite", "names a file outside the flow folder (/var/tmp/secret.sq"),
        ("sqlite:///../up.sqlite", "names a file outside the flow folder (../up.sqlite)"),
        ("data/../../up.duckdb", "names a file outside the flow folder (data/../../up.duckdb)"),
        ("sqlite:///data/x.sqlite?mode=rw", "holds connection parameters (mode): a flow"),
        ("sqlite:///x.sqlite?password=hunter2", "holds connection parameters (password): a flow"),
        ("postgresql://u:a/hunter2@c@h/db", f"names a host (h): {PROFILE_FIX}"),
        ("postgresql://u:hunter2$$x@h/db", f"holds a $: {PROFILE_FIX}"),
        ("sqlite://", "'sqlite://' names no file"),
    ],
)  # fmt: skip
def test_a_database_that_names_the_host_is_refused_with_the_profile_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str, says: str
) -> None:
    monkeypatch.setenv("PRAXIS_PROFILE", str(tmp_path / "profile.yaml"))
    folder = make(tmp_path, SCRIPT_PHASE + f"database: '{url}'\n")
    _, report = contract.load(folder)
    assert [p.location for p in report.errors] == ["database"]
    assert says in str(report.errors[0])
    assert "hunter2" not in str(report)
    assert "profile.yaml" in str(report.errors[0]) or "names no file" in says


# -- paths ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("'../up.csv'", "'../up.csv' has a '..' component"),
        ("/tmp/x.csv", "'/tmp/x.csv' is an absolute path"),
        ("'a\\b.csv'", "'a\\\\b.csv' contains a backslash (use / between folders)"),
        ('"a\\0b.csv"', "'a\\x00b.csv' contains a NUL byte"),
        ('""', "'' is empty"),
        ("a//b.csv", "'a//b.csv' has an empty path component"),
        ("x" * 256, "'" + "x" * 55 + "...' has a component over 255 bytes"),
    ],
)
def test_unsafe_names_are_refused(tmp_path: Path, name: str, problem: str) -> None:
    text = SCRIPT_PHASE + f"    outputs: [{name}]\n"
    assert only(make(tmp_path, text)) == f"flow.yaml: phases[clean].outputs[0]: {problem}"


def test_definition_files_must_exist(tmp_path: Path) -> None:
    text = """\
        flow: f
        phases:
          - {id: a, kind: agent, prompt: p.md, scripts: [s.py], queries: [q.sql]}
        """
    assert lines(make(tmp_path, text)) == [
        "flow.yaml: phases[a].prompt: 'p.md' does not exist in the flow folder",
        "flow.yaml: phases[a].scripts[0]: 's.py' does not exist in the flow folder",
        "flow.yaml: phases[a].queries[0]: 'q.sql' does not exist in the flow folder",
    ]


def test_symlink_leading_out_of_the_flow_is_refused(tmp_path: Path) -> None:
    folder = make(tmp_path, SCRIPT_PHASE.replace("clean.py", "link.py"), files=())
    (tmp_path / "elsewhere.py").write_text("print('outside')\n")
    (folder / "link.py").symlink_to(tmp_path / "elsewhere.py")
    assert (
        only(folder) == "flow.yaml: phases[clean].script: 'link.py' leads outside the flow folder"
    )


def test_a_symlink_is_refused_even_inside_the_flow(tmp_path: Path) -> None:
    """Flow files are read by descriptor with no link followed, wherever the link points."""
    folder = make(tmp_path, SCRIPT_PHASE.replace("clean.py", "link.py"))
    (folder / "link.py").symlink_to(folder / "clean.py")
    assert lines(folder) == [
        "flow.yaml: phases[clean].script: 'link.py' is or passes through a symbolic link or a "
        "non-folder: a flow file is read without links"
    ]


def test_definition_file_must_be_regular_and_a_script_not_huge(tmp_path: Path) -> None:
    text = SCRIPT_PHASE + "    inputs: {working: [data, big.csv]}\n"
    folder = make(tmp_path, text)
    (folder / "data").mkdir()
    with open(folder / "big.csv", "wb") as f:
        f.truncate(51 << 20)  # sparse; a data input is streamed: no limit
    with open(folder / "clean.py", "ab") as f:
        f.truncate(51 << 20)  # a script is read whole: limited
    assert lines(folder) == [
        "flow.yaml: phases[clean].script: 'clean.py' is 51.0 MiB, over the 50 MiB praxis reads"
        " whole of a script, notebook, prompt or query: keep data out of it and list the data"
        " under inputs (a working input of any size is streamed)",
        "flow.yaml: phases[clean].inputs.working[0]: 'data' is not a regular file",
    ]


# -- references between phases -------------------------------------------------------------------


def phases_text(*phases: str) -> str:
    return "flow: f\nphases:\n" + "".join(f"  - {{{p}}}\n" for p in phases)


def test_input_that_is_neither_a_file_nor_an_earlier_output(tmp_path: Path) -> None:
    text = phases_text(
        "id: a, kind: script, script: clean.py, outputs: [clean.csv]",
        "id: b, kind: script, script: clean.py, inputs: {working: [clean.cvs]}",
    )
    assert only(make(tmp_path, text)) == (
        "flow.yaml: phases[b].inputs.working[0]: 'clean.cvs' is neither a file of the flow "
        "nor an output of an earlier phase; did you mean 'clean.csv'?"
    )


def test_forward_reference(tmp_path: Path) -> None:
    text = phases_text(
        "id: a, kind: agent, prompt: clean.py, inputs: {reference: [notes.md]}",
        "id: b, kind: script, script: clean.py, outputs: [notes.md]",
    )
    assert only(make(tmp_path, text)) == (
        "flow.yaml: phases[a].inputs.reference[0]: 'notes.md' is a forward reference to an "
        "output of the later phase 'b'"
    )


def test_phase_reading_its_own_output_is_a_cycle(tmp_path: Path) -> None:
    text = phases_text(
        "id: a, kind: script, script: clean.py, inputs: {working: [x.csv]}, outputs: [x.csv]"
    )
    assert only(make(tmp_path, text)) == (
        "flow.yaml: phases[a].inputs.working[0]: 'x.csv' is an output of this same phase: "
        "a phase cannot read its own output (a cycle)"
    )


def test_output_that_also_names_an_uploaded_flow_file_is_fine(tmp_path: Path) -> None:
    text = phases_text(
        "id: a, kind: script, script: clean.py, inputs: {working: [d.csv]}, outputs: [d.csv]",
        "id: b, kind: script, script: clean.py, inputs: {working: [d.csv]}",
    )
    flow = contract.require(make(tmp_path, text, files=("clean.py", "d.csv")))
    assert flow.producer("d.csv") is flow.phases[0]


def test_duplicate_phase_ids(tmp_path: Path) -> None:
    text = phases_text(*["id: a, kind: script, script: clean.py"] * 3)
    assert lines(make(tmp_path, text)) == [
        "flow.yaml: phases[1].id: duplicate phase id 'a' (also phases[0])",
        "flow.yaml: phases[2].id: duplicate phase id 'a' (also phases[0])",
    ]


def test_duplicate_outputs(tmp_path: Path) -> None:
    text = phases_text(
        "id: a, kind: script, script: clean.py, outputs: [x.csv, x.csv]",
        "id: b, kind: script, script: clean.py, outputs: [x.csv]",
    )
    assert lines(make(tmp_path, text)) == [
        "flow.yaml: phases[a].outputs[1]: 'x.csv' is listed twice",
        "flow.yaml: phases[b].outputs[0]: 'x.csv' is already an output of phase 'a' "
        "(output names are unique across phases)",
    ]


def test_may_be_empty_names_an_output_of_the_same_phase(tmp_path: Path) -> None:
    text = phases_text(
        "id: a, kind: script, script: clean.py, outputs: [x.csv, r.md]",
        "id: b, kind: script, script: clean.py, outputs: [y.tsv], may_be_empty: [x.csv, r.md]",
    )
    assert lines(make(tmp_path, text)) == [
        "flow.yaml: phases[b].may_be_empty[0]: 'x.csv' is not an output of this phase",
        "flow.yaml: phases[b].may_be_empty[1]: 'r.md' is not an output of this phase",
    ]
    text = phases_text(
        "id: a, kind: script, script: clean.py, outputs: [r.md], may_be_empty: [r.md]"
    )
    (tmp_path / "flow" / "flow.yaml").write_text(text)
    assert lines(tmp_path / "flow") == []  # any output may be allowed to be empty


def test_prepared_names_must_be_unique(tmp_path: Path) -> None:
    text = phases_text("id: a, kind: agent, prompt: p.md, scripts: [a/run.py, b/run.py]")
    assert only(make(tmp_path, text, files=("p.md", "a/run.py", "b/run.py"))) == (
        "flow.yaml: phases[a].scripts[1]: another entry is also named 'run' (names are file "
        "stems and must be unique)"
    )


# -- the API -------------------------------------------------------------------------------------


def test_every_problem_is_collected_and_require_raises(tmp_path: Path) -> None:
    text = phases_text(
        "id: no, kind: script, script: missing.py",
        "id: b, kind: script, script: clean.py, outputs: x.csv",
    )
    folder = make(tmp_path, text)
    flow, report = contract.load(folder)
    assert flow is None and not report.ok
    assert len(report.errors) == 3 and report.warnings == []
    assert str(report) == "\n".join(report.lines())
    with pytest.raises(contract.FlowInvalid) as caught:
        contract.require(folder)
    assert caught.value.report.lines() == report.lines()
    assert str(caught.value) == f"{report.errors[0]} (and 2 more)"


# -- notebook options ---------------------------------------------------------------------------

NOTEBOOK_PHASE = "flow: f\nphases:\n  - id: nb\n    kind: notebook\n    script: n.ipynb\n"


def test_a_notebook_phase_may_allow_errors(tmp_path: Path) -> None:
    folder = make(tmp_path, NOTEBOOK_PHASE + "    notebook: {allow_errors: true}\n", ("n.ipynb",))
    assert contract.require(folder).phase("nb").spec.allow_errors is True
    (tmp_path / "plain").mkdir()
    plain = make(tmp_path / "plain", NOTEBOOK_PHASE, ("n.ipynb",))
    assert contract.require(plain).phase("nb").spec.allow_errors is False


@pytest.mark.parametrize(
    ("text", "files", "problem"),
    [
        (
            SCRIPT_PHASE + "    notebook: {allow_errors: true}\n",
            ("clean.py",),
            "flow.yaml: phases[clean].notebook: only notebook phases take 'notebook' "
            "(this is a script phase)",
        ),
        (
            NOTEBOOK_PHASE + "    notebook: {allow_errors: yes please}\n",
            ("n.ipynb",),
            "flow.yaml: phases[nb].notebook.allow_errors: expected true or false, "
            "got string 'yes please'",
        ),
    ],
)
def test_notebook_options_are_checked(
    tmp_path: Path, text: str, files: tuple[str, ...], problem: str
) -> None:
    assert only(make(tmp_path, text, files)) == problem


# -- reuse ---------------------------------------------------------------------------------------


def test_a_phase_may_say_it_is_never_reused(tmp_path: Path) -> None:
    folder = make(tmp_path, SCRIPT_PHASE + "    reuse: never\n")
    assert contract.require(folder).phase("clean").reuse == "never"
    (tmp_path / "plain").mkdir()
    assert contract.require(make(tmp_path / "plain", SCRIPT_PHASE)).phase("clean").reuse == "auto"


def test_reuse_takes_auto_or_never_and_not_on_an_agent_phase(tmp_path: Path) -> None:
    problem = only(make(tmp_path, SCRIPT_PHASE + "    reuse: sometimes\n"))
    assert problem.startswith("flow.yaml: phases[clean].reuse: "), problem
    assert "'sometimes'" in problem and "never" in problem
    agent = "flow: f\nphases:\n  - {id: a, kind: agent, prompt: p.md, reuse: never}\n"
    (tmp_path / "agent").mkdir()
    assert only(make(tmp_path / "agent", agent, ("p.md",))) == (
        "flow.yaml: phases[a].reuse: agent phases are never reused: remove 'reuse'"
    )
