"""Code that probes the sandbox from inside, shared by the sandbox and the reliability tests.

``probe_code(canary)`` returns a script that tries to get out (network, /etc, the host's
environment, the docker socket) and reports what it found as JSON: printed, and written to
``probes.json`` in the working directory (a phase's declared output). ``assert_contained``
checks the report.
"""

from __future__ import annotations

from typing import Any

PROBE = """\
import json, os, socket
found = {}
try:
    socket.create_connection(("1.1.1.1", 53), timeout=3).close()
    found["net"] = "connected"
except OSError as exc:
    found["net"] = type(exc).__name__
try:
    with open("/etc/praxis-probe", "w") as fh:
        fh.write("x")
    found["etc"] = "written"
except OSError as exc:
    found["etc"] = type(exc).__name__
found["canary"] = os.environ.get(CANARY)
found["canary_anywhere"] = False
for pid in (p for p in os.listdir("/proc") if p.isdigit()):
    try:
        with open(f"/proc/{pid}/environ", errors="replace") as fh:
            found["canary_anywhere"] |= CANARY in fh.read()
    except OSError:
        pass
found["sock"] = [p for p in ("/var/run/docker.sock", "/run/docker.sock") if os.path.exists(p)]
found["uid"] = os.getuid()
with open("probes.json", "w") as fh:
    json.dump(found, fh)
print(json.dumps(found))
"""


def probe_code(canary: str) -> str:
    """The probe, looking for the host environment variable ``canary`` (name and value)."""
    return PROBE.replace("CANARY", repr(canary))


def assert_contained(found: dict[str, Any]) -> None:
    assert found["net"] != "connected"
    assert found["etc"] != "written"
    assert found["canary"] is None and found["canary_anywhere"] is False
    assert found["sock"] == []
    assert found["uid"] == 1000
