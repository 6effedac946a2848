"""praxis/flows/definition/profile.py and host_resources.py: the person's profile read
strictly, ${VAR} expanded there only, and what a flow asks of the host listed and required."""

from __future__ import annotations

from pathlib import Path

import pytest

from praxis.flows.definition import host_resources, profile
from praxis.flows.definition.host_resources import ProfileLacks
from praxis.flows.definition.profile import ProfileInvalid, ProfileUnset
from praxis.flows.model.flow import Flow, Phase, SandboxSettings

GOOD = """\
connections:
  warehouse:
    url: postgresql+psycopg://analyst@db.internal/shop
    password: ${WAREHOUSE_PASSWORD}
  sales_write: {url: "postgresql+psycopg://loader@db.internal/shop", write: true}
clusters:
  prod: {address: "ray://head.internal:10001"}
notify:
  team: {webhook: "https://hooks.example/T123", include_error: false}
  pager: {command: [notify-send, praxis]}
"""


def write(tmp_path: Path, text: str) -> dict[str, str]:
    path = tmp_path / "profile.yaml"
    path.write_text(text)
    return {"PRAXIS_PROFILE": str(path), "HOME": str(tmp_path)}


def test_a_profile_is_read_into_its_entries(tmp_path: Path) -> None:
    found = profile.load(write(tmp_path, GOOD))
    assert found.exists
    warehouse = found.connections["warehouse"]
    assert warehouse.url == "postgresql+psycopg://analyst@db.internal/shop"
    assert warehouse.password == "${WAREHOUSE_PASSWORD}"  # kept as written until used
    assert (warehouse.write, warehouse.allow_superuser) == (False, False)
    assert warehouse.references == ("WAREHOUSE_PASSWORD",)
    assert found.connections["sales_write"].write is True
    assert found.clusters["prod"].address == "ray://head.internal:10001"
    assert found.notify["team"].webhook == "https://hooks.example/T123"
    assert found.notify["pager"].command == ("notify-send", "praxis")


def test_no_profile_is_an_empty_one(tmp_path: Path) -> None:
    env = {"PRAXIS_PROFILE": str(tmp_path / "absent.yaml")}
    found = profile.load(env)
    assert not found.exists
    assert (dict(found.connections), dict(found.clusters), dict(found.notify)) == ({}, {}, {})


def test_the_default_place_is_the_xdg_config_folder(tmp_path: Path) -> None:
    assert profile.path_of({"HOME": "/home/a"}) == Path("/home/a/.config/praxis/profile.yaml")
    assert profile.path_of({"XDG_CONFIG_HOME": "/x", "HOME": "/h"}) == Path(
        "/x/praxis/profile.yaml"
    )
    assert profile.path_of({"PRAXIS_PROFILE": "/p.yaml", "HOME": "/h"}) == Path("/p.yaml")


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("connections: {w: {password: x}}", "connections.w: needs a url"),
        ("connections: {w: {url: x, writ: true}}", "did you mean 'write'"),
        ("connections: {w: {url: x, write: 'yes'}}", "connections.w.write: expected true or false"),
        ("clusters: {prod: {}}", "clusters.prod: needs an address"),
        ("notify: {team: {include_error: true}}", "notify.team: needs a webhook"),
        ("notify: {team: {command: 'rm -rf /'}}", "notify.team.command: expected a list"),
        ("connection: {}", "did you mean 'connections'"),
        ("connections: {'bad name': {url: x}}", "is not an entry name"),
        ("a: &x [1]\nb: *x\n", "alias *x refused"),
        ("connections: {w: {url: x}}\nconnections: {}\n", "duplicate key 'connections'"),
    ],
)
def test_a_malformed_profile_is_one_line_naming_the_file(
    tmp_path: Path, text: str, said: str
) -> None:
    env = write(tmp_path, text)
    with pytest.raises(ProfileInvalid) as caught:
        profile.load(env)
    assert said in str(caught.value)
    assert str(caught.value).startswith(str(tmp_path / "profile.yaml"))
    assert "\n" not in str(caught.value)
    assert caught.value.exit_code == 2


def test_variables_are_expanded_in_profile_values_only_when_set() -> None:
    text = "postgresql+psycopg://${USER_NAME}@db/shop"
    assert profile.expand(text, {"USER_NAME": "ann"}) == "postgresql+psycopg://ann@db/shop"
    with pytest.raises(ProfileUnset) as caught:
        profile.expand(text, {"OTHER": "secret"}, where="connections.w.url")
    assert "${USER_NAME}" in str(caught.value)
    assert "connections.w.url" in str(caught.value)
    assert "secret" not in str(caught.value)


def flow_asking(
    tmp_path: Path, *, database: str | None, cluster: str | None, to: tuple[str, ...]
) -> Flow:
    return Flow(
        name="f",
        root=tmp_path,
        phases=(Phase(id="a", kind="script"),),
        sandbox=SandboxSettings(cluster=cluster),
        database=database,
        notify={"to": to} if to else {},
    )


def test_what_a_flow_asks_of_the_host_is_listed_with_what_the_profile_has(
    tmp_path: Path,
) -> None:
    found = profile.load(write(tmp_path, GOOD))
    flow = flow_asking(tmp_path, database="warehouse", cluster="prod", to=("team", "ops"))
    asked = host_resources.asked(flow)
    assert [(a.section, a.name, a.where) for a in asked] == [
        ("connections", "warehouse", "database"),
        ("clusters", "prod", "sandbox.cluster"),
        ("notify", "team", "notify.to"),
        ("notify", "ops", "notify.to"),
    ]
    lines = host_resources.lines(flow, found)
    assert lines[0].startswith("host resources this flow asks for (your profile: ")
    assert (
        "connection warehouse (database): ok: postgresql+psycopg://analyst@db.internal/shop"
        in lines[1]
    )
    assert "cluster prod (sandbox.cluster): ok: ray://head.internal:10001" in lines[2]
    assert lines[4] == "  notify target ops (notify.to): MISSING from the profile"
    [(where, fix)] = host_resources.missing(flow, found)
    assert where == "notify.to"
    assert "'ops' is not in your profile" in fix
    assert "(it has: pager, team)" in fix
    assert 'add `notify: {ops: {webhook: "https://hooks.example/…"}}` there' in fix
    with pytest.raises(ProfileLacks) as caught:
        host_resources.require(flow, found)
    assert str(caught.value).startswith("flow.yaml: notify.to: 'ops' is not in your profile")
    assert caught.value.next("FLOW") == "praxis check FLOW"


def test_a_file_of_the_flow_is_not_a_profile_entry(tmp_path: Path) -> None:
    flow = flow_asking(tmp_path, database="data/shop.sqlite", cluster=None, to=())
    assert host_resources.asked(flow) == []
    assert host_resources.lines(flow, profile.load({"PRAXIS_PROFILE": "/nonexistent"})) == []


def test_a_password_in_a_profile_url_is_never_listed(tmp_path: Path) -> None:
    env = write(tmp_path, "connections: {w: {url: 'postgresql+psycopg://u:hunter2@db/x'}}\n")
    flow = flow_asking(tmp_path, database="w", cluster=None, to=())
    lines = host_resources.lines(flow, profile.load(env))
    assert "hunter2" not in "\n".join(lines)
    assert "postgresql+psycopg://u:***@db/x" in lines[1]


@pytest.mark.parametrize("page", ["README.md", "docs/how-to/data.md"])
def test_the_profile_a_person_copies_from_the_docs_is_read_whole(tmp_path: Path, page: str) -> None:
    text = (Path(__file__).resolve().parents[2] / page).read_text(encoding="utf-8")
    block = text.split("```yaml\nconnections:", 1)[1].split("```", 1)[0]
    found = profile.load(write(tmp_path, "connections:" + block))
    assert sorted(found.connections) == ["sales_write", "warehouse"]
    assert found.connections["sales_write"].write
    assert found.clusters["prod"].address == "ray://head.internal:10001"
    assert found.notify["team"].webhook == "https://hooks.example/T123"
