"""Packages a flow needs: one image layer per distinct list, built once, reused by tag."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from praxis.cli import main
from praxis.flows.definition import contract, packages
from praxis.flows.store import state_file
from sandbox import FakeOptions
from sandbox.image import layer

from .flows.helpers import write_flow
from .labels import TEST_LABELS

SKLEARN_FLOW = """
    flow: {name}
    sandbox: {{backend: docker, packages: [scikit-learn], labels: {{{labels}}}, timeout: 300}}
    phases:
      - {{id: fit, kind: script, script: fit.py, outputs: [fit.json]}}
"""
FIT = """
    import json
    import sklearn
    from sklearn.linear_model import LinearRegression

    model = LinearRegression().fit([[0], [1], [2]], [1, 3, 5])
    with open("fit.json", "w") as fh:
        json.dump({"sklearn": sklearn.__version__, "slope": round(model.coef_[0], 6)}, fh)
"""


def test_the_tag_depends_on_the_list_not_its_order() -> None:
    base = "praxis-sandbox:0123456789ab"
    one = layer.layer_tag(["statsmodels", "scikit-learn==1.6.1"], base)
    assert one == layer.layer_tag(["scikit-learn==1.6.1", " statsmodels ", "statsmodels"], base)
    assert one != layer.layer_tag(["scikit-learn==1.6.1"], base)
    assert one != layer.layer_tag(["statsmodels", "scikit-learn==1.6.1"], "praxis-sandbox:other")
    assert one.startswith("praxis-sandbox:") and len(one.split(":")[1]) == 12


def test_flow_yaml_and_requirements_txt_both_count(tmp_path: Path) -> None:
    flow_dir = write_flow(
        tmp_path / "f",
        """
        sandbox: {backend: fake, packages: [scikit-learn]}
        phases:
          - {id: a, kind: script, script: s.py}
        """,
        {"s.py": "", "requirements.txt": "# stats\nstatsmodels>=0.14  # models\n\n"},
    )
    flow = contract.require(flow_dir)
    assert packages.requirements_of(flow) == ["scikit-learn", "statsmodels>=0.14"]
    # on a backend that runs the host's Python the list is dropped, nothing is built
    assert packages.image_options(flow, "fake", FakeOptions()) == FakeOptions()


def test_pip_errors_name_the_package() -> None:
    stderr = (
        "ERROR: Could not find a version that satisfies the requirement no-such-pkg "
        "(from versions: none)\nERROR: No matching distribution found for no-such-pkg\n"
    )
    error = layer._pip_failed(stderr, ("no-such-pkg",))
    assert error.package == "no-such-pkg"
    assert str(error).startswith("pip cannot fetch the package 'no-such-pkg' for the sandbox")
    stderr = (
        "ERROR: Cannot install numpy==1.26.4 because these package versions have conflicting "
        "dependencies.\nERROR: ResolutionImpossible: for help visit https://pip.pypa.io\n"
    )
    error = layer._pip_failed(stderr, ("numpy==1.26.4",))
    assert error.package is None
    assert str(error).startswith(
        "the packages numpy==1.26.4 conflict with each other or with the sandbox image's own pins"
    )


def _sklearn_flow(tmp_path: Path, name: str) -> Path:
    labels = ", ".join(f'"{k}": "{v}"' for k, v in TEST_LABELS.items())
    return write_flow(
        tmp_path / name, SKLEARN_FLOW.format(name=name, labels=labels), {"fit.py": FIT}
    )


def _image_of(flow: Path) -> str:
    run = sorted((flow / "runs").iterdir())[-1]
    for line in (run / "events.jsonl").read_text().splitlines():
        event = json.loads(line)
        if event["kind"] == "sandbox_opened":
            return str(event["detail"]["image"])
    raise AssertionError("no sandbox_opened event")


@pytest.mark.docker
def test_a_flow_with_packages_runs_on_its_layer_and_a_second_flow_reuses_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], docker_image: str
) -> None:
    import docker

    first, second = _sklearn_flow(tmp_path, "first"), _sklearn_flow(tmp_path, "second")
    tag = layer.layer_tag(["scikit-learn"], docker_image)
    client = docker.from_env()
    try:
        if layer.layer_exists(["scikit-learn"]):  # prove the build, not a leftover
            client.images.remove(tag, force=True)
        assert main(["run", str(first)]) == 0, capsys.readouterr().err
        err = capsys.readouterr().err
        assert "building the sandbox image for first's packages: scikit-learn" in err
        built = client.images.get(tag).id

        assert main(["run", str(second)]) == 0
        assert "building" not in capsys.readouterr().err  # no second build
        assert client.images.get(tag).id == built
        assert main(["sandbox", "build", str(second)]) == 0  # names the flow's image
        assert capsys.readouterr().out == f"{tag}\n"
    finally:
        client.close()
    assert _image_of(first) == _image_of(second) == tag
    for flow in (first, second):
        run = sorted((flow / "runs").iterdir())[-1]
        assert state_file.load(run / "run.json").status == "done"
        fit = json.loads((run / "output" / "fit.json").read_text())
        assert fit["slope"] == 2.0 and fit["sklearn"]


@pytest.mark.docker
def test_a_package_pip_cannot_fetch_is_one_line_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], docker_image: str
) -> None:
    flow = write_flow(
        tmp_path / "f",
        """
        sandbox: {backend: docker, packages: [praxis-no-such-package-xyz]}
        phases:
          - {id: a, kind: script, script: s.py}
        """,
        {"s.py": "print('never runs')\n"},
    )
    assert main(["run", str(flow)]) == 5
    err = capsys.readouterr().err.splitlines()
    failure = [line for line in err if line.startswith("PackagesUnavailable: ")]
    assert failure == [
        "PackagesUnavailable: pip cannot fetch the package 'praxis-no-such-package-xyz' for the "
        "sandbox (no wheel for Linux x86_64, CPython 3.11 on the host's index); fix "
        "sandbox.packages in flow.yaml or the host's pip settings"
    ]
    assert err[-1] == f"  next: fix sandbox.packages, then: praxis sandbox build {flow}"
    run = sorted((flow / "runs").iterdir())[-1]
    state = state_file.load(run / "run.json")
    assert (state.status, state.phases[0].status) == ("paused", "pending")  # nothing ran
