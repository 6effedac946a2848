"""A real PostgreSQL server for the tests: Debian's ``postgresql`` binaries, a cluster in a
temporary folder, listening on a unix socket there only (no TCP), stopped after the session.

initdb refuses to run as root, so as root the cluster belongs to ``nobody``. Passwords are
checked (scram-sha-256) even on the socket, so a test proves that a password was needed and
where it came from. ``analyst`` owns the test databases: a write it attempts is refused only
because praxis holds the connection read-only, not for want of privileges. ``admin`` is a
superuser, the role praxis refuses unless the profile allows it. A flow reaches the server
through a connection of the person's profile (``profile``).
"""

from __future__ import annotations

import glob
import os
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ADMIN = "admin"
USER = "analyst"


def bindir() -> Path | None:
    """The newest installed PostgreSQL server's bin folder (PRAXIS_PG_BIN overrides)."""
    if os.environ.get("PRAXIS_PG_BIN"):
        return Path(os.environ["PRAXIS_PG_BIN"])
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4])
    )
    return Path(found[-1]).parent if found else None


@dataclass
class Server:
    folder: Path  # the socket's folder: PGHOST
    admin_password: str
    password: str  # analyst's: the secret the tests look for

    def connect(self, dbname: str, user: str = ADMIN) -> Any:
        import psycopg

        password = self.admin_password if user == ADMIN else self.password
        return psycopg.connect(
            host=str(self.folder), user=user, password=password, dbname=dbname, autocommit=True
        )

    def create(self, dbname: str, sql: str = "") -> str:
        """A fresh database owned by analyst, loaded with ``sql`` (run as analyst)."""
        with self.connect("postgres") as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{dbname}" OWNER {USER}')
        if sql:
            with self.connect(dbname, USER) as conn:
                conn.execute(sql)
        return dbname

    def profile(
        self,
        folder: Path,
        dbname: str,
        *,
        name: str = "shop",
        user: str = USER,
        reference: str = "PRAXIS_TEST_PGPASSWORD",
        extra: str = "",
    ) -> dict[str, str]:
        """Write a profile in ``folder`` whose connection ``name`` leads to ``dbname`` as
        ``user`` (the socket folder as libpq's ``host``, the password as ``${reference}``);
        the environment that reads it: ``PRAXIS_PROFILE`` and the password's variable."""
        url = f"postgresql+psycopg://{user}@/{dbname}?host={self.folder}"
        path = folder / "profile.yaml"
        path.write_text(
            f"connections:\n  {name}:\n    url: '{url}'\n    password: '${{{reference}}}'\n{extra}"
        )
        password = self.admin_password if user == ADMIN else self.password
        return {"PRAXIS_PROFILE": str(path), reference: password}


def _as_owner(argv: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return argv
    return ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", *argv]


@contextmanager
def running(bin_folder: Path) -> Iterator[Server]:
    """Start a server from ``bin_folder``; stop it and remove its folder afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="praxis-pg-"))
    if os.geteuid() == 0:
        shutil.chown(folder, "nobody", "nogroup")
    folder.chmod(0o700)
    server = Server(folder, "admin-" + secrets.token_hex(8), "pw-" + secrets.token_hex(12))
    pwfile = folder / "admin.pw"
    pwfile.write_text(server.admin_password + "\n")
    if os.geteuid() == 0:
        shutil.chown(pwfile, "nobody", "nogroup")
    data = folder / "data"
    log = folder / "server.log"
    try:
        subprocess.run(
            _as_owner(
                [
                    str(bin_folder / "initdb"),
                    "-D",
                    str(data),
                    "-U",
                    ADMIN,
                    "-E",
                    "UTF8",
                    "--locale=C.UTF-8",
                    "--auth=scram-sha-256",
                    f"--pwfile={pwfile}",
                ]
            ),  # fmt: skip
            check=True,
            capture_output=True,
            timeout=120,
        )
        options = f"-k {folder} -c listen_addresses='' -c fsync=off -c max_connections=40"
        subprocess.run(
            _as_owner(
                [
                    str(bin_folder / "pg_ctl"),
                    "-D",
                    str(data),
                    "-l",
                    str(log),
                    "-w",
                    "-t",
                    "60",
                    "-o",
                    options,
                    "start",
                ]
            ),  # fmt: skip
            check=True,
            capture_output=True,
            timeout=90,
        )
        with server.connect("postgres") as conn:
            conn.execute(f"CREATE ROLE {USER} LOGIN PASSWORD '{server.password}'")
        yield server
    finally:
        if (data / "postmaster.pid").exists():
            subprocess.run(
                _as_owner([str(bin_folder / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"]),
                capture_output=True,
                timeout=60,
                check=False,
            )
        shutil.rmtree(folder, ignore_errors=True)
