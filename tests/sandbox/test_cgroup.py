"""The OOM-kill counter of a container's memory cgroup, from either cgroup layout."""

from __future__ import annotations

import pytest

from sandbox.cgroup import oom_count, oom_kills

V1 = "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n"
V2 = "low 0\nhigh 0\nmax 12\noom 2\noom_kill 2\noom_group_kill 0\n"


def test_the_counter_is_read_from_v1_and_v2_files() -> None:
    assert oom_count(V1) == 3
    assert oom_count(V2) == 2
    assert oom_count(V1 + V2) == 3  # the inside read may cat both: the first counter


@pytest.mark.parametrize("text", ["", "oom_kill_disable 0\n", "oom_kill three\n", "xoom_kill 1"])
def test_text_without_the_counter_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="no oom_kill counter"):
        oom_count(text)


class Exec:
    def __init__(self, output: bytes | Exception) -> None:
        self.output = output
        self.id = "no-such-container-" + "0" * 46
        self.users: list[str] = []

    def exec_run(self, cmd: list[str], user: str) -> Exec:
        self.users.append(user)
        if isinstance(self.output, Exception):
            raise self.output
        return self


def test_without_a_host_file_the_counter_is_read_inside_as_the_user() -> None:
    container = Exec(V2.encode())
    assert oom_kills(container, "1000") == 2
    assert container.users == ["1000"]


def test_a_counter_that_cannot_be_read_is_unknown_not_zero() -> None:
    assert oom_kills(Exec(b"cat: no such file\n"), "1000") is None
    assert oom_kills(Exec(RuntimeError("container gone")), "1000") is None
