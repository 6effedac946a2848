"""Publishing an output to a table, on the host: the write runs in a worker process as an
extract does (``fetch.call``: a clean environment, the profile's credentials only, a capped
address space, killed past its budget), in one transaction (``table_write``).

``PRAXIS_TEST_PUBLISH_PAUSE`` (tests only) names a file: the worker writes its pid there
once a batch is written and waits inside the open transaction, to be killed.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from . import fetch
from .source import Target

DEFAULT_SECONDS = 600.0
PAUSE = "PRAXIS_TEST_PUBLISH_PAUSE"


class PublishError(Exception):
    """The table was not written (it is as it was): ``kind`` is ``columns`` (refused before
    writing), ``unavailable`` (no connection) or ``write`` (rolled back)."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class Written:
    rows: int
    columns: list[str]


def write(
    target: Target,
    table: str,
    mode: str,
    key: tuple[str, ...],
    source: Path,
    *,
    seconds: float = DEFAULT_SECONDS,
) -> Written:
    """Write host file ``source`` (CSV, TSV or Parquet) to ``table`` of ``target``."""
    payload = {
        "action": "publish",
        "target": asdict(target),
        "database": target.file,
        "table": table,
        "mode": mode,
        "key": list(key),
        "source": str(source),
        "seconds": seconds,
        "memory": fetch.MEMORY,
        "pause": os.environ.get(PAUSE) or None,
    }
    with tempfile.TemporaryDirectory(prefix="praxis-publish-") as tmp:
        outcome = fetch.call(payload, Path(tmp), seconds)
    answer = outcome.answer
    if "error" in answer:
        message = (
            str(answer["message"])
            .replace("the extract's worker", "the publish worker")
            .replace("the query ran past the phase's budget", "the publish ran past its budget")
        )
        raise PublishError(message, str(answer["error"]))
    return Written(int(answer["rows"]), list(answer["columns"]))
