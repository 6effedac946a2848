"""One extract in a worker process: the runner never holds a row, nor the database's secrets
in its environment's reach.

``run`` starts ``python -m praxis.sources.worker`` in its own session with a clean
environment (no ``PG*`` variable, ``HOME`` a private empty folder: libpq reads no
``.pgpass``, service file or certificate of the person's), hands it the job on stdin (the
password travels there, never in argv or the environment), and waits at most the phase's
budget plus a grace before killing it. The worker caps its own address space (``worker``);
the runner reads its answer (bounded) and its peak memory (its own ``VmHWM``, else
``wait4``'s, which also counts the pages it shared with the runner before ``exec``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .source import Target

MEMORY = 256 << 20  # what one extract's worker may map beyond its start: the memory cap
GRACE_SECONDS = 30.0
MAX_ANSWER = 1 << 20
MAX_STDERR = 4_000


@dataclass(frozen=True)
class Job:
    target: Target
    database: Path | None  # a file engine's database on the host (a private copy of a flow's)
    query: str
    dest: Path
    spool: Path
    seconds: float
    max_rows: int
    max_bytes: int
    memory: int  # bytes the worker may map beyond what it maps when the query starts
    batch_rows: int
    tables: dict[str, Path]
    params: dict[str, Any] = field(default_factory=dict)  # what the query's placeholders bind


@dataclass(frozen=True)
class Outcome:
    answer: dict[str, Any]  # the worker's: columns, rows, sample; or error, message
    peak_rss: int  # the worker's peak resident memory, bytes (wait4's when it told none)


def run(job: Job, home: Path) -> Outcome:
    """Run ``job`` in a worker whose ``HOME`` and working folder is private folder ``home``."""
    payload = {
        "target": asdict(job.target),
        "database": str(job.database) if job.database else None,
        "query": job.query,
        "dest": str(job.dest),
        "spool": str(job.spool),
        "seconds": job.seconds,
        "max_rows": job.max_rows,
        "max_bytes": job.max_bytes,
        "memory": job.memory,
        "batch_rows": job.batch_rows,
        "tables": {k: str(v) for k, v in job.tables.items()},
        "params": job.params,
    }
    return call(payload, home, job.seconds)


def call(payload: dict[str, Any], home: Path, seconds: float) -> Outcome:
    """Hand ``payload`` to a worker (its ``HOME`` and working folder private folder
    ``home``) and wait for its answer, killing it past ``seconds`` plus a grace."""
    out, err = home / "answer.json", home / "worker.err"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "praxis.sources.worker"],
            stdin=subprocess.PIPE,
            stdout=stdout,
            stderr=stderr,
            env=_environment(home),
            cwd=home,
            start_new_session=True,
        )
    killed = threading.Event()

    def kill() -> None:
        killed.set()
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    timer = threading.Timer(seconds + GRACE_SECONDS, kill)
    timer.daemon = True
    timer.start()
    try:
        assert proc.stdin is not None
        try:
            proc.stdin.write(json.dumps(payload).encode())
            proc.stdin.close()
        except BrokenPipeError:  # the worker ended before reading its job
            try:
                proc.stdin.close()
            except BrokenPipeError:
                pass
        _, status, usage = os.wait4(proc.pid, 0)
    finally:
        timer.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)
    peak = usage.ru_maxrss * 1024
    if killed.is_set():
        return Outcome({"error": "query", "message": _budget(seconds)}, peak)
    try:
        with out.open("rb") as fh:
            answer = json.loads(fh.read(MAX_ANSWER))
        if not isinstance(answer, dict):
            raise ValueError(answer)
        if isinstance(answer.get("peak_rss"), int):  # its own, since exec
            peak = answer.pop("peak_rss")
    except ValueError:
        with err.open("rb") as fh:
            said = fh.read(MAX_STDERR).decode("utf-8", "replace").strip().splitlines()
        last = said[-1] if said else f"exit status {proc.returncode}"
        why = "killed by the system (out of memory?)" if proc.returncode < 0 else last
        answer = {"error": "query", "message": f"the extract's worker ended early: {why}"}
    return Outcome(answer, peak)


def _environment(home: Path) -> dict[str, str]:
    """The worker's whole environment: nothing a driver would read as a setting or secret."""
    env = {"PATH": os.defpath, "HOME": str(home), "LANG": "C.UTF-8", "TMPDIR": str(home)}
    # the worker imports the very praxis the runner runs, installed or not
    paths = [str(Path(__file__).resolve().parents[2])]
    if os.environ.get("PYTHONPATH"):
        paths.append(os.environ["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


def _budget(seconds: float) -> str:
    return (
        f"the query ran past the phase's budget of {seconds:g} s and was cancelled; "
        "make it cheaper (filter, aggregate, LIMIT) or raise the phase's timeout"
    )
