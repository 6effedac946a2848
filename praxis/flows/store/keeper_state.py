"""What a flow's keeper remembers: the ticks it started and the files it handled.

``<flow>/.praxis/keeper.json``, written atomically (a new file, fsync, ``os.replace``, fsync
of the folder), read bounded (``MAX_BYTES``) and never through a link (nor through a
``.praxis`` that is one: a flow from elsewhere may ship one); ``keeper.lock`` beside
it is held while a keeper (``praxis serve``'s, ``praxis schedule``'s) looks at the flow, so two
keepers on one folder take turns and each tick or file starts one run.

```json
{"schedule": {"cron": "...", "timezone": "...", "since": 1.0, "last": 2.0, "skipped": 0,
              "ticks": [{"tick": "2026-...", "at": 2.0, "state": "started", "run": "...",
                         "after": "<newest run id when claimed>"}]},
 "files": {"incoming/a.csv": {"sig": [size, mtime_ns], "since": 1.0, "handled": [...],
                              "state": "started", "run": "...", "after": "..."}}}
```

A tick or file is *claimed* (``state: starting``, with the newest run id then) before its
run is begun and marked ``started`` after; a claim a crash left is settled by looking for
its run among the runs created since (``keeper.py``).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from sandbox.files import folder_below, open_nofollow, replace_at

from ...errors import RecordCorrupt
from .layout import store_dir

MAX_BYTES = 4 << 20
KEPT_TICKS = 20  # the newest ticks kept in the record (status shows them)
MAX_FILES = 5000  # files of a trigger remembered at most


def path(flow_root: Path) -> Path:
    return store_dir(flow_root) / "keeper.json"


def lock_path(flow_root: Path) -> Path:
    return store_dir(flow_root) / "keeper.lock"


def folder(flow_root: Path) -> Path:
    """``<flow>/.praxis``, made if missing; RecordCorrupt when it is a link or not a folder."""
    where = store_dir(flow_root)
    try:
        where.mkdir(exist_ok=True)
        st = where.lstat()
    except OSError as exc:
        raise RecordCorrupt(f"{where}: cannot be made ({exc.strerror})") from None
    if not stat.S_ISDIR(st.st_mode):
        raise RecordCorrupt(f"{where}: not a folder (a link is never followed); move it away")
    return where


def read(flow_root: Path) -> dict[str, Any]:
    """The record, ``{}`` when there is none; RecordCorrupt when it cannot be trusted (a
    keeper then starts nothing rather than a tick twice)."""
    where = path(flow_root)
    try:
        with folder_below(flow_root, [where.parent.name]) as dir_fd:
            fd = open_nofollow(where.name, dir_fd=dir_fd)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise RecordCorrupt(f"{where}: cannot be read ({exc.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_BYTES:
            raise RecordCorrupt(f"{where}: not a regular file under {MAX_BYTES >> 20} MiB")
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(MAX_BYTES + 1)
    finally:
        os.close(fd)
    try:
        record = json.loads(data)
    except (ValueError, UnicodeError):
        raise RecordCorrupt(f"{where}: not JSON; move it away to start the record anew") from None
    if not isinstance(record, dict):
        raise RecordCorrupt(f"{where}: not a JSON object")
    return record


def write(flow_root: Path, record: dict[str, Any]) -> None:
    ticks = record.get("schedule", {}).get("ticks")
    if isinstance(ticks, list):
        del ticks[:-KEPT_TICKS]
    data = json.dumps(record, indent=1).encode()
    try:
        with folder_below(flow_root, [folder(flow_root).name]) as dir_fd:
            replace_at(dir_fd, path(flow_root).name, data, mode=0o644)
    except OSError as exc:
        raise RecordCorrupt(f"{path(flow_root)}: cannot be written ({exc.strerror})") from None
