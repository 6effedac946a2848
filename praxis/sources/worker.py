"""The extract's worker process: connect, run one query, write its result to a file.

Run as ``python -m praxis.sources.worker`` by ``fetch``, with a job (JSON) on stdin and an
environment holding no variable of the runner's. Before the query runs, its address space is
capped at what it uses plus the job's memory budget, so whatever one row or value holds, the
host spends at most that on it: a value too large ends the extract naming the cap (a
``MemoryError``, DuckDB's or libpq's out-of-memory, SQLite's length limit). Its answer is one
JSON object on stdout: ``{"columns", "rows", "sample"}`` or ``{"error", "message"}``.
A job whose ``action`` is ``publish`` writes a table instead (``table_write``).
"""

from __future__ import annotations

import json
import resource
import sys
from pathlib import Path
from typing import Any

from . import connect, sink, table_write
from .source import Target

SAMPLE_CHARS = 200


def main() -> int:
    job = json.loads(sys.stdin.read(4 << 20))
    try:
        answer = table_write.run(job, limit) if job.get("action") == "publish" else run(job)
    except MemoryError:
        answer = {"error": "cap", "message": memory_cap(job["memory"])}
    answer["peak_rss"] = status("VmHWM")  # since exec: wait4's counts the runner's fork too
    sys.stdout.write(json.dumps(answer))
    sys.stdout.flush()
    return 0


def run(job: dict[str, Any]) -> dict[str, Any]:
    target = Target(**{**job["target"], "secrets": tuple(job["target"]["secrets"])})
    connect.BATCH_ROWS = job["batch_rows"]
    sink.MAX_ROWS, sink.MAX_BYTES = job["max_rows"], job["max_bytes"]
    database = Path(job["database"]) if job["database"] else None
    if database is not None and target.engine == "duckdb" and not database.exists():
        import duckdb  # the phase's files alone: an empty database, read-only

        duckdb.connect(str(database)).close()
    tables = {name: Path(path) for name, path in job["tables"].items()}
    try:
        session = connect.open_session(
            target,
            database,
            seconds=job["seconds"],
            max_value=job["memory"],
            scratch=Path(job["spool"]).parent,
            tables=tables,
        )
    except connect.Unavailable as exc:
        return {"error": "unavailable", "message": str(exc)}
    with session:
        session.start_timer()
        if job["dest"].endswith(".parquet"):
            import pyarrow  # noqa: F401  (its allocator reserves address space once)
        limit(job["memory"])
        try:
            columns, batches = session.rows(job["query"], job.get("params"))
            written = sink.write(Path(job["dest"]), columns, batches, Path(job["spool"]))
        except (connect.QueryError, sink.CapReached) as exc:
            text = str(exc)
            if out_of_memory(text):
                return {"error": "cap", "message": memory_cap(job["memory"])}
            return {"error": "query", "message": text}
    sample = [[_shown(v) for v in row] for row in written.sample]
    return {"columns": columns, "rows": written.rows, "sample": sample}


def limit(budget: int) -> None:
    """Cap this process's address space at what it maps now plus ``budget`` bytes."""
    size = status("VmSize")
    resource.setrlimit(resource.RLIMIT_AS, (size + budget, size + budget))


def status(key: str) -> int:
    """A size from /proc/self/status, in bytes."""
    with open("/proc/self/status", encoding="ascii") as fh:
        return next(int(ln.split()[1]) * 1024 for ln in fh if ln.startswith(key + ":"))


def out_of_memory(text: str) -> bool:
    lowered = text.lower()
    return any(s in lowered for s in ("out of memory", "string or blob too big", "memoryerror"))


def memory_cap(budget: int) -> str:
    return (
        f"the result needs more than {budget // 2**20} MiB of memory on the host (the memory "
        "cap of one extract: a row or a value is too large); select fewer or narrower columns, "
        "or cut large values in SQL (substr, length)"
    )


def _shown(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float):
        return value
    text = str(value)
    return text if len(text) <= SAMPLE_CHARS else text[:SAMPLE_CHARS] + "…"


if __name__ == "__main__":
    sys.exit(main())
