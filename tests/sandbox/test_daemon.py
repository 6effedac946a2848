"""daemon.docker_errors: the one place the docker SDK's errors become the sandbox's, chained,
named by what was being done (a real daemon for the 404; the SDK's own error classes for the
rest)."""

from __future__ import annotations

import docker.errors
import pytest
import requests

from sandbox.daemon import connect, docker_errors
from sandbox.errors import DockerConflict, DockerMissing, SandboxUnavailable


def _api_error(status: int) -> docker.errors.APIError:
    response = requests.Response()
    response.status_code = status
    return docker.errors.APIError(f"the daemon said {status}", response=response)


@pytest.mark.docker
def test_the_daemons_404_becomes_docker_missing_chained_and_named() -> None:
    client = connect()
    try:
        with pytest.raises(DockerMissing) as caught:
            with docker_errors("inspect container praxis-no-such"):
                client.api.inspect_container("praxis-no-such-container-at-all")
    finally:
        client.close()
    assert str(caught.value).startswith("cannot inspect container praxis-no-such: ")
    assert isinstance(caught.value.__cause__, docker.errors.NotFound)
    assert isinstance(caught.value, SandboxUnavailable)


def test_a_409_is_a_conflict_and_any_other_docker_error_is_unavailable() -> None:
    with pytest.raises(DockerConflict, match="^cannot remove a container: "):
        with docker_errors("remove a container"):
            raise _api_error(409)
    with pytest.raises(SandboxUnavailable) as caught:
        with docker_errors("start a container"):
            raise _api_error(500)
    assert type(caught.value) is SandboxUnavailable
    assert isinstance(caught.value.__cause__, docker.errors.APIError)
    with pytest.raises(SandboxUnavailable, match="^cannot connect: "):
        with docker_errors("connect"):
            raise docker.errors.DockerException("no socket")


def test_errors_that_are_not_dockers_pass_unchanged() -> None:
    with pytest.raises(KeyError):
        with docker_errors("read a row"):
            raise KeyError("State")
