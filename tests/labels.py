"""The label every container a test session creates carries: unique to this session, so a
session's clean-up never removes another session's containers."""

import os

SESSION = f"{os.getpid()}"
TEST_LABELS = {"praxis.test": SESSION}
TEST_LABEL = f"praxis.test={SESSION}"


def left_after(run_id: str, timeout: float = 120.0) -> list[str]:
    """Names of the containers of run ``run_id`` still there once none is, or ``timeout`` s.

    A sandbox's container is ended when its run stops and the daemon removes it by itself
    (auto_remove): it may take a moment, never forever."""
    import time

    import docker

    from sandbox.container import RUN_LABEL

    client = docker.from_env()
    try:
        deadline = time.monotonic() + timeout
        while True:
            # the list's rows as they are: a container may go between a listing and an inspect
            found = client.api.containers(all=True, filters={"label": f"{RUN_LABEL}={run_id}"})
            if not found or time.monotonic() > deadline:
                return [str(row["Names"][0]).lstrip("/") for row in found]
            time.sleep(0.1)
    finally:
        client.close()
