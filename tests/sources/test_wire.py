"""RELIABILITY 46: what reaches a PostgreSQL server is only what the person's profile names.

A fake PostgreSQL server on loopback speaks just enough of the v3 protocol to log the startup
message's parameters and the password message, then refuses. A flow that names a host or a
``${VAR}`` sends it nothing (refused before connecting, by ``check``, ``run`` and an extract);
a profile connection sends the profile's user, database and password only: no other
environment variable, no ``PGPASSWORD``, no ``.pgpass`` entry.
"""

from __future__ import annotations

import os
import socket
import struct
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from praxis.agent.extract import Data, SourceUnavailable, run_query
from praxis.flows.definition import contract

SSL_REQUEST, GSS_REQUEST, STARTUP = 80877103, 80877104, 196608
LEAKS = {
    "ADV4_SECRET": "leak-env-secret",
    "PGPASSWORD": "leak-pgpassword",
    "PGUSER": "leak-pguser",
    "PGDATABASE": "leak-pgdatabase",
    "PGOPTIONS": "-c search_path=leak_pgoptions",
    "PGAPPNAME": "leak-pgappname",
    "PGDATESTYLE": "leak-datestyle",
    "PGTZ": "leak-tz",
}


class FakePostgres:
    """Logs each connection's startup parameters and password, then refuses it."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.startups: list[dict[str, str]] = []
        self.passwords: list[str] = []
        self.raw = bytearray()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(20)
                try:
                    self._serve(conn)
                except (OSError, struct.error):
                    pass

    def _read(self, conn: socket.socket, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = conn.recv(n - len(data))
            if not chunk:
                raise OSError("closed")
            data += chunk
        self.raw += data
        return data

    def _serve(self, conn: socket.socket) -> None:
        while True:
            length, code = struct.unpack("!ii", self._read(conn, 8))
            body = self._read(conn, length - 8)
            if code in (SSL_REQUEST, GSS_REQUEST):
                conn.sendall(b"N")
                continue
            if code != STARTUP:
                return
            parts = body.rstrip(b"\0").split(b"\0")
            pairs = zip(parts[::2], parts[1::2], strict=False)
            self.startups.append({k.decode(): v.decode() for k, v in pairs})
            break
        conn.sendall(b"R" + struct.pack("!ii", 8, 3))  # AuthenticationCleartextPassword
        kind = self._read(conn, 1)
        (n,) = struct.unpack("!i", self._read(conn, 4))
        body = self._read(conn, n - 4)
        if kind == b"p":
            self.passwords.append(body.rstrip(b"\0").decode())
        error = b"SFATAL\0C28P01\0Mpassword authentication failed (fake)\0\0"
        conn.sendall(b"E" + struct.pack("!i", len(error) + 4) + error)

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def fake() -> Iterator[FakePostgres]:
    server = FakePostgres()
    yield server
    server.close()


@pytest.fixture
def leaky(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake: FakePostgres) -> Path:
    """The runner's environment full of what must not cross: PG* variables, a secret, and a
    ~/.pgpass with an entry for the fake server and one for another host."""
    for key, value in LEAKS.items():
        monkeypatch.setenv(key, value)
    home = tmp_path / "home"
    home.mkdir()
    pgpass = home / ".pgpass"
    pgpass.write_text(
        f"127.0.0.1:{fake.port}:*:*:leak-pgpass-here\ntrusted.example:*:*:*:leak-pgpass-other\n"
    )
    pgpass.chmod(0o600)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PRAXIS_PROFILE", str(tmp_path / "profile.yaml"))
    return tmp_path


def flow_naming(root: Path, database: str) -> Path:
    folder = root / "flow"
    folder.mkdir(exist_ok=True)
    (folder / "clean.py").write_text("print(1)\n")
    (folder / "flow.yaml").write_text(
        "flow: f\nphases:\n  - id: clean\n    kind: script\n    script: clean.py\n"
        f"database: '{database}'\n"
    )
    return folder


def hostile(port: int) -> list[str]:
    return [
        f"postgresql+psycopg://${{ADV4_SECRET}}@127.0.0.1:{port}/${{HOME}}",
        f"postgresql+psycopg://u@trusted.example:{port}/db?hostaddr=127.0.0.1",
        f"postgresql:///db?host=127.0.0.1&port={port}",
    ]


def test_a_flow_naming_a_host_or_a_variable_sends_nothing(fake: FakePostgres, leaky: Path) -> None:
    for database in hostile(fake.port):
        folder = flow_naming(leaky, database)
        _, report = contract.load(folder)
        assert [p.location for p in report.errors] == ["database"], database
        assert "add `connections: {NAME: {url: " in str(report.errors[0])
        with pytest.raises(SourceUnavailable, match="a flow names a connection of your profile"):
            run_query(Data(database=database, root=folder), "SELECT 1", leaky / "o.csv")
        run = subprocess.run(
            [sys.executable, "-m", "praxis", "run", str(folder)],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PRAXIS_SANDBOX": "local"},
        )
        assert run.returncode == 2, run.stderr
        assert "flow.yaml: database: " in run.stderr and "profile" in run.stderr
        assert not (leaky / "o.csv").exists()
    assert (fake.startups, fake.passwords, bytes(fake.raw)) == ([], [], b"")


def test_a_profile_connection_sends_only_what_the_profile_names(
    fake: FakePostgres, leaky: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"postgresql+psycopg://alice@127.0.0.1:{fake.port}/shopdb"
    (leaky / "profile.yaml").write_text(
        f"connections:\n  shop: {{url: '{url}', password: '${{WIRE_PW}}'}}\n"
        f"  bare: {{url: '{url}'}}\n"
    )
    monkeypatch.setenv("WIRE_PW", "profile-secret")
    with pytest.raises(SourceUnavailable, match=r"password authentication failed \(fake\)"):
        run_query(Data(database="shop", root=leaky), "SELECT 1", leaky / "o.csv")
    with pytest.raises(SourceUnavailable, match="no password supplied"):
        run_query(Data(database="bare", root=leaky), "SELECT 1", leaky / "o.csv")
    assert [s["user"] for s in fake.startups] == ["alice", "alice"]
    assert [s["database"] for s in fake.startups] == ["shopdb", "shopdb"]
    assert {s["application_name"] for s in fake.startups} == {"praxis extract"}
    sent = {k for s in fake.startups for k in s}
    assert sent <= {"user", "database", "application_name", "options", "client_encoding"}
    assert fake.passwords == ["profile-secret"]  # once; the connection without one sends none
    assert b"leak" not in fake.raw
