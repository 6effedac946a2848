"""A container's memory cgroup, read from the host: how many processes it OOM-killed."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

log = logging.getLogger("sandbox")

# Where a local daemon's containers keep their memory counters (cgroup v1 and v2 layouts).
CGROUP_FILES = (
    "/sys/fs/cgroup/memory/docker/{id}/memory.oom_control",
    "/sys/fs/cgroup/memory/system.slice/docker-{id}.scope/memory.oom_control",
    "/sys/fs/cgroup/system.slice/docker-{id}.scope/memory.events",
    "/sys/fs/cgroup/docker/{id}/memory.events",
)
INSIDE = "cat /sys/fs/cgroup/memory/memory.oom_control /sys/fs/cgroup/memory.events 2>/dev/null"


def oom_count(text: str) -> int:
    """The ``oom_kill N`` counter of a v1 memory.oom_control or a v2 memory.events."""
    match = re.search(r"^oom_kill (\d+)$", text, re.M)
    if match is None:
        raise ValueError("no oom_kill counter")
    return int(match.group(1))


def oom_kills(container: Any, user: str) -> int | None:
    """How many processes ``container``'s memory cgroup has OOM-killed, if it can be told.

    Read on the host when the daemon is local (a file read), else inside the container (a
    docker exec as ``user``).
    """
    for path in CGROUP_FILES:
        try:
            return oom_count(Path(path.format(id=container.id)).read_text())
        except (OSError, ValueError):
            continue
    try:
        out = container.exec_run(["sh", "-c", INSIDE], user=user).output
        return oom_count(out.decode(errors="replace"))
    except Exception:
        log.debug("cannot read the OOM counter", exc_info=True)
        return None
