"""RELIABILITY.md item 44: limits that bound the host cannot be raised past their bounds.

``stream_limit``, ``display_limit`` and ``collect`` above their bounds are errors of `praxis
check` (and of `praxis advance`, which checks the flow first) naming the key, the bound and
the fix; the sandbox's own collector refuses them too; record size has no key at all. On
docker, a phase printing 384 MB with stream_limit at its bound leaves the runner under
256 MiB (RSS measured with RUSAGE_CHILDREN).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox.collector import Collector
from sandbox.output import LIMITS

from ..labels import left_after
from ._bounds import BUDGET, flow, measured, phase, remove_containers
from ._flows import begin, praxis, state_of, write_flow

PRINTS = r"""
import sys
chunk = "p" * (1 << 20)
for _ in range(384):
    sys.stdout.write(chunk)
with open("ok.txt", "w") as fh:
    fh.write("ok")
"""

OVER = {
    "stream_limit": (402653184, "must be between 1 and 8388608 bytes (8 MiB"),
    "display_limit": (1 << 30, "must be between 1 and 16777216 bytes (16 MiB"),
    "collect": ("20t", "must be between 1m and 16t"),
}


@pytest.mark.parametrize("key", sorted(OVER))
def test_item44_check_and_advance_refuse_a_limit_past_its_bound(tmp_path: Path, key: str) -> None:
    value, said = OVER[key]
    shown = f'"{value}"' if isinstance(value, str) else str(value)
    root = write_flow(
        tmp_path / "flow",
        f"""\
        sandbox: {{backend: local, {key}: {shown}}}
        phases:
          - {{id: p, kind: script, script: p.py, outputs: [ok.txt]}}
        """,
        {"p.py": "open('ok.txt', 'w').write('ok')\n"},
    )
    checked = praxis("check", str(root))
    assert checked.returncode == 2, (checked.stdout, checked.stderr)
    (line,) = [x for x in checked.stdout.splitlines() if x.startswith(f"flow.yaml: sandbox.{key}:")]
    assert said in line and "remove the key for the default" in line, line
    advanced = praxis("advance", str(root))
    assert advanced.returncode == 2, (advanced.stdout, advanced.stderr)
    assert line.replace("flow.yaml", "FlowInvalid: flow.yaml", 1) in advanced.stderr
    assert not (root / "runs").exists() or not any((root / "runs").iterdir())


def test_item44_the_collector_refuses_limits_past_their_bounds() -> None:
    for key, (_low, high) in LIMITS.items():
        args = {"stream_limit": 1 << 20, "display_limit": 1 << 20, key: high + 1}
        with pytest.raises(ValueError, match=rf"^{key} must be a whole number of bytes"):
            Collector(args["stream_limit"], args["display_limit"])


def test_item44_record_size_has_no_key_to_raise_it(tmp_path: Path) -> None:
    root = write_flow(
        tmp_path / "flow",
        """\
        sandbox: {backend: local, record_limit: 1000000000}
        phases:
          - {id: p, kind: script, script: p.py, outputs: [ok.txt]}
        """,
        {"p.py": "open('ok.txt', 'w').write('ok')\n"},
    )
    res = praxis("check", str(root))
    assert res.returncode == 2
    assert "flow.yaml: sandbox.record_limit: unknown key for the local backend" in res.stdout


@pytest.mark.docker
def test_item44_printing_384_mb_at_the_stream_bound_stays_in_budget(
    docker_image: str, tmp_path: Path
) -> None:
    high = LIMITS["stream_limit"][1]
    root = flow(
        tmp_path / "flow",
        docker_image,
        [phase("p", "prints.py", ["ok.txt"])],
        {"prints.py": PRINTS},
        sandbox={"stream_limit": high},
    )
    run = begin(root)
    try:
        res = measured("advance", str(root))
        assert "Traceback" not in res.err, res
        assert res.rss < BUDGET, f"praxis advance peaked at {res.rss >> 20} MiB"
        assert res.code == 0 and state_of(run).phase("p").status == "done", res
        record = (run / "records" / "p.ipynb").read_text()
        assert high <= len(record) < 4 * high, len(record)
        assert left_after(run.name) == []
    finally:
        remove_containers(run)
