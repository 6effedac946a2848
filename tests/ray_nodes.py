"""A two-node Ray cluster on this machine (``ray.cluster_utils.Cluster``) with token
authentication, for the tests of the ray backend: the head and a second node, both offering
``praxis-docker``; only the second offers the custom resource ``node-2``."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .ports import free_port

GIB = 1 << 30
NODE = {"num_cpus": 2, "memory": 4 * GIB, "object_store_memory": 128 << 20}


class TwoNodes:
    def __init__(self, cluster: Any, second: Any, client: str) -> None:
        self.cluster = cluster
        self.second = second
        self.client = client  # the head's Ray client server: ray://127.0.0.1:<port>

    @property
    def address(self) -> str:
        return str(self.cluster.address)


@contextmanager
def two_nodes(workdir: Path, env: dict[str, str] | None = None) -> Iterator[TwoNodes]:
    """The cluster, with ``env`` (and the token) in the environment its nodes inherit; this
    process's environment is put back afterwards."""
    import ray
    import ray.cluster_utils as cluster_utils

    saved = dict(os.environ)
    os.environ.update(env or {})
    os.environ["RAY_AUTH_MODE"] = "token"
    os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(32)
    os.environ["PRAXIS_RAY_WORKDIR"] = str(workdir)
    _reread_auth()  # Ray read RAY_AUTH_MODE when it was imported
    client_port = free_port()
    cluster = cluster_utils.Cluster(
        initialize_head=True,
        head_node_args={
            **NODE,
            "resources": {"praxis-docker": 1},
            "include_dashboard": False,
            "ray_client_server_port": client_port,
        },
    )
    try:
        second = cluster.add_node(**NODE, resources={"praxis-docker": 1, "node-2": 1})
        cluster.wait_for_nodes()
        yield TwoNodes(cluster, second, f"ray://127.0.0.1:{client_port}")
    finally:
        ray.shutdown()
        cluster.shutdown()
        os.environ.clear()
        os.environ.update(saved)
        _reread_auth()


def _reread_auth() -> None:
    from ray._raylet import AuthenticationTokenLoader, Config

    Config.initialize("")
    AuthenticationTokenLoader.instance().reset_cache()
