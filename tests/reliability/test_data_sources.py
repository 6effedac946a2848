"""RELIABILITY item 36: an agent phase extracts from a real PostgreSQL server.

flows/agent-example-postgres runs with `praxis run` (a scripted model turn, PRAXIS_TRACE=1),
through the connection `shop` of the person's profile, its password in the environment only.
A prepared query that writes is refused by the server and the model is told; nothing changed
in the database; and the password is in no file of the flow folder (run folder, content store,
trace), in no command's output and in no page of `praxis serve`.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from praxis.web.app import create_app
from praxis.web.security import Guard

from ..pg_server import Server
from ._flows import docker_sandbox, praxis

FLOWS = Path(__file__).resolve().parents[2] / "flows"
NAME = "agent-example-postgres"
PURGE = "DELETE FROM orders RETURNING id\n"


def turn(path: Path) -> Path:
    """The example's scripted turn, with a prepared write slipped in before it ends."""
    replies = json.loads((FLOWS / NAME / "scripted-turn.json").read_text())
    replies[0]["tool_calls"].append(
        {"name": "extract_prepared", "args": {"query_name": "purge", "name": "gone.csv"}}
    )
    path.write_text(json.dumps(replies))
    return path


def example(dest: Path, sandbox: str) -> Path:
    flow = dest / NAME
    shutil.copytree(FLOWS / NAME, flow, ignore=shutil.ignore_patterns("runs", "run.lock"))
    (flow / "queries" / "purge.sql").write_text(PURGE)
    text = (flow / "flow.yaml").read_text()
    text = text.replace("queries: [queries/top_products.sql]",
                        "queries: [queries/top_products.sql, queries/purge.sql]")  # fmt: skip
    lines = [sandbox if ln.startswith("sandbox:") else ln for ln in text.splitlines()]
    (flow / "flow.yaml").write_text("\n".join(lines) + "\n")
    return flow


def every_file(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()]


@pytest.fixture(params=["local", pytest.param("docker", marks=pytest.mark.docker)])
def sandbox(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "docker":
        return docker_sandbox(request.getfixturevalue("docker_image"), timeout=120)
    monkeypatch.setenv("PRAXIS_SANDBOX", "local")  # the person allows local kernels
    return 'sandbox: {"backend": "local", "timeout": 120}'


def test_item36_extracts_are_read_only_and_leave_no_secret(
    postgres: Server, sandbox: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    postgres.create("shop", (FLOWS / NAME / "data" / "shop.sql").read_text())
    flow = example(tmp_path, sandbox)
    env = {
        **postgres.profile(tmp_path, "shop"),  # the connection `shop` of the person's profile
        "PRAXIS_TRACE": "1",
        "PRAXIS_MODEL": "praxis.agent.scripted:ScriptedChatModel",
        "PRAXIS_MODEL_SCRIPT": str(turn(tmp_path / "turn.json")),
    }
    check = praxis("check", str(flow), env=env)
    run = praxis("run", str(flow), env=env)
    assert run.returncode == 0, run.stderr
    status = praxis("status", str(flow), "--json", env=env)
    runs = sorted(p for p in (flow / "runs").iterdir() if p.is_dir())
    assert len(runs) == 1
    folder = runs[0]

    # the extract read the server, with the password the environment gave
    assert (folder / "output" / "top_products.csv").read_text().splitlines()[:3] == [
        "product,units",
        "pencil set,28",
        "notebook,10",
    ]
    # the write was refused by the server, and the model was told so
    events = [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines()]
    purge = [e for e in events if e["kind"] == "tool_called" and e["args"].get("query_name")
             == "purge"]  # fmt: skip
    assert [e["status"] for e in purge] == ["error"]
    assert "cannot execute DELETE in a read-only transaction" in purge[0]["detail"]
    assert not (folder / "output" / "gone.csv").exists()
    with postgres.connect("shop") as conn:
        assert conn.execute("SELECT count(*) FROM orders").fetchone()[0] == 14

    # the password is nowhere: not in a file of the flow folder (run, store, .praxis) ...
    secret = postgres.password.encode()
    files = every_file(flow)
    assert folder / "records" / "summarise.ipynb" in files
    assert folder / "trace.jsonl" in files  # every command and route, traced
    assert any(p.is_relative_to(flow / ".praxis" / "objects") for p in files)  # the flow's store
    assert [p for p in files if secret in p.read_bytes()] == []
    # ... not in what the commands printed ...
    for done in (check, run, status):
        assert postgres.password not in done.stdout + done.stderr
    # ... and not in a page of `praxis serve`
    monkeypatch.setenv("PRAXIS_PROFILE", env["PRAXIS_PROFILE"])  # the same person serves
    guard = Guard()
    with TestClient(create_app(tmp_path, guard=guard), base_url="http://127.0.0.1:8765") as web:
        assert web.get(f"/?token={guard.token}", follow_redirects=False).status_code == 303
        q = f"flow={NAME}&run={folder.name}"
        pages = [web.get("/"), web.get(f"/run?{q}"), web.get(f"/changes?{q}")]
        shown = ("output/top_products.csv", "events.jsonl", "records/summarise.ipynb")
        pages += [web.get(f"/view?{q}&path={name}") for name in shown]
    assert [p.status_code for p in pages] == [200] * len(pages)
    assert "read-only transaction" in pages[-1].text  # the refused write, in the record
    assert [p.url for p in pages if postgres.password in p.text] == []
