"""praxis against papermill and bare python, side by side: ``python -m benchmarks.compare``.

Runs every benchmark (medians over ``--repeats`` runs, every ratio from figures measured in
this same invocation), prints the table and writes it, dated, to benchmarks/results/ as
Markdown and JSON. The docker backend is measured when a daemon answers and the sandbox
image is built (``praxis sandbox build``); otherwise the table says it was not measured.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys
from pathlib import Path

from . import pipeline, runner_costs, scale, serve_start
from .measure import BenchmarkFailed
from .person import act_as_person
from .report import RESULTS, Results, markdown, write

WORK = Path(__file__).resolve().parent / "work"
SECTIONS = ("quick", "pipeline", "overhead", "cold", "serve", "transfer", "scale")


def docker_ready() -> str | None:
    """None when the docker backend can run here, else why not."""
    from sandbox.daemon import available as docker_available

    reason = docker_available()
    if reason is not None:
        return f"no Docker daemon ({reason})"
    from sandbox.image.build import docker_client, image_exists, image_tag

    tag, client = image_tag(), docker_client()
    try:
        built = image_exists(client, tag)
    finally:
        client.close()
    return None if built else f"image {tag} not built (run `praxis sandbox build`)"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.compare", description=__doc__)
    p.add_argument("--repeats", type=int, default=5, help="runs per figure (median; default 5)")
    p.add_argument("--only", action="append", choices=SECTIONS, help="run only these sections")
    p.add_argument("--no-docker", action="store_true", help="skip the docker backend")
    p.add_argument("--keep", action="store_true", help="keep benchmarks/work/ afterwards")
    p.add_argument(
        "--code",
        type=Path,
        help="measure the praxis of this checkout (its praxis/ and sandbox/ first on "
        "PYTHONPATH), e.g. a worktree of an earlier commit, for a before/after table",
    )
    p.add_argument(
        "--results",
        type=Path,
        default=RESULTS,
        help="the folder the dated table is written to (default benchmarks/results)",
    )
    args = p.parse_args(argv)
    if args.code is not None:
        os.environ["PYTHONPATH"] = str(args.code.resolve())  # every measured process
    # Measured processes cache their bytecode, as python does by default, whatever the shell
    # says: the warm-up round writes it, and no figure includes compiling praxis's source.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sections = args.only or list(SECTIONS)
    results = Results(repeats=args.repeats)
    backends = ["local"]
    reason = "--no-docker" if args.no_docker else docker_ready()
    if reason is None:
        backends.append("docker")
    else:
        results.skipped.append(f"docker backend: {reason}")
    print(f"backends: {', '.join(backends)}; sections: {', '.join(sections)}", file=sys.stderr)
    WORK.mkdir(parents=True, exist_ok=True)
    act_as_person(WORK / "praxis-data")  # the reviewer at a Gate is a person
    try:
        if "quick" in sections:
            runner_costs.quick_commands(results, WORK, args.repeats)
        if "pipeline" in sections:
            pipeline.measure(results, WORK, args.repeats, backends)
        if "overhead" in sections:
            runner_costs.overhead(results, WORK, args.repeats, backends)
        if "cold" in sections:
            runner_costs.cold_start(results, WORK, args.repeats, backends)
        if "serve" in sections:
            serve_start.measure(results, WORK, args.repeats, backends)
        if "transfer" in sections:
            runner_costs.transfer(results, WORK, max(3, args.repeats // 2), backends[-1])
        if "scale" in sections:
            scale.measure(results, WORK, args.repeats)
            scale.big_input(results, WORK, args.repeats)
    except BenchmarkFailed as exc:  # what was measured before it is still written
        failed = f"BenchmarkFailed: {exc}"
        results.skipped.append(failed[:500])
    else:
        failed = ""
    finally:
        if not args.keep:
            shutil.rmtree(WORK, ignore_errors=True)
    command = "python -m benchmarks.compare" + (
        " " + shlex.join(argv if argv is not None else sys.argv[1:])
        if (argv if argv is not None else sys.argv[1:])
        else ""
    )
    table = markdown(results, command)
    md, js = write(results, command, args.results)
    print(table)
    print(
        f"written: {md.relative_to(Path.cwd()) if md.is_relative_to(Path.cwd()) else md}, "
        f"{js.name}",
        file=sys.stderr,
    )
    if failed:
        print(failed, file=sys.stderr)
        print("  next: fix the failing run (its command is above), then run again", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
