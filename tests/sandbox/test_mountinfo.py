"""What the container's /proc/self/mountinfo tells phase code about the host (item 45).

Hidden: the workspace (a quota mount of its own: its root is ``/``), the runtime folder (a
tmpfs of its own when the host is root), the cgroup paths (a private cgroup namespace). Not
hidden, because Docker makes them: the binds of /etc/hosts, /etc/hostname and
/etc/resolv.conf (``/var/lib/docker/containers/<id>/...``), the overlay's lower and upper
folders in the root mount's options, docker-init's source, and the /dev/null binds that
mask files of /proc. This test pins both lists.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from sandbox.container import DockerSandbox
from sandbox.options import DockerOptions

from ..labels import TEST_LABELS

pytestmark = pytest.mark.docker

# mount points whose root (field 4) is not "/", as Docker makes them
DOCKERS_OWN = {
    "/etc/hosts",
    "/etc/hostname",
    "/etc/resolv.conf",
    "/usr/sbin/docker-init",
    "/proc/bus",
    "/proc/fs",
    "/proc/irq",
    "/proc/sys",
    "/proc/keys",
    "/proc/timer_list",
    "/proc/kcore",
    "/proc/latency_stats",
    "/proc/sched_debug",
    "/proc/scsi",
    "/proc/timer_stats",
    "/proc/sysrq-trigger",
}


def test_mountinfo_shows_no_host_path_of_the_run(docker_image: str, tmp_path: Path) -> None:
    assert os.geteuid() == 0, "the quota and runtime mounts need a root host"
    name = f"mountinfo-{uuid.uuid4().hex[:8]}"
    box = DockerSandbox(
        workspace=tmp_path / name,
        name=name,
        options=DockerOptions(image=docker_image, labels=TEST_LABELS, warm=False),
    )
    box.open()
    try:
        code = "print(open('/proc/self/mountinfo').read(), end='')"
        text = box.kernel().execute(code, timeout=60).stdout
    finally:
        box.close()
    lines = [line.split() for line in text.splitlines()]
    assert len(lines) > 10
    roots = {fields[4]: fields[3] for fields in lines}  # mount point -> its root
    assert roots["/workspace"] == "/" and roots["/rt"] == "/"
    assert all(root == "/" for point, root in roots.items() if point.startswith("/sys/fs/"))
    shown = {point for point, root in roots.items() if root != "/"}
    assert shown <= DOCKERS_OWN, shown - DOCKERS_OWN
    for secret in (str(tmp_path), name, "praxis-rt-"):
        assert secret not in text, secret
    # what Docker shows and cannot be switched off: its own folders
    assert all(
        root.startswith(("/var/lib/docker/containers/", "/usr/bin/tini", "/null", "/"))
        for root in roots.values()
    )
