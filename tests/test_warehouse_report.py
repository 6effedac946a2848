"""The warehouse-report example end to end in the Docker sandbox, as `make run` runs it: a
query phase on the DuckDB file it ships, the Gate, the summary, then publishing, which stops
with one line while the profile lacks a `write: true` connection and writes the table once
it has one (the same digest again: nothing)."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from .test_examples import copy_flow, praxis

TABLE = (
    "CREATE TABLE weekly_summary (region VARCHAR, week VARCHAR, orders INTEGER, "
    "revenue DECIMAL(12, 2), PRIMARY KEY (region, week))"
)


def profile(tmp_path: Path, write: bool) -> dict[str, str]:
    target = tmp_path / "reporting.duckdb"
    if not target.exists():
        with duckdb.connect(str(target)) as conn:
            conn.execute(TABLE)
            conn.execute("INSERT INTO weekly_summary VALUES ('North', '2023-W52', 3, 10.00)")
    path = tmp_path / "profile.yaml"
    flag = ", write: true" if write else ""
    path.write_text(f'connections:\n  warehouse_write: {{url: "duckdb:///{target}"{flag}}}\n')
    return {"PRAXIS_PROFILE": str(path)}


def table(tmp_path: Path) -> list[tuple[object, ...]]:
    with duckdb.connect(str(tmp_path / "reporting.duckdb"), read_only=True) as conn:
        return conn.execute("SELECT * FROM weekly_summary ORDER BY region, week").fetchall()


@pytest.mark.docker
def test_warehouse_report_queries_reviews_and_publishes(tmp_path: Path, docker_image: str) -> None:
    flow = copy_flow("warehouse-report", tmp_path, docker_image)
    none = {"PRAXIS_PROFILE": str(tmp_path / "absent.yaml")}
    res = praxis("run", str(flow), "-p", "start=2024-02-01", env=none)
    assert res.returncode == 0, res.stderr
    assert "waiting at the Gate after clean" in res.stdout
    status = json.loads(praxis("status", str(flow), "--json", env=none).stdout)
    res = praxis("approve", str(flow), "--gate", "clean", env=none)
    assert "every phase done" in res.stdout
    [line, hint] = res.stderr.strip().splitlines()[-2:]
    assert line.startswith(f"PublishIncomplete: run {status['run']}: not published summary.csv")
    assert "add `connections: {warehouse_write: {url:" in line and "write: true}}`" in line
    # `praxis`, or the path it was run by when no `praxis` is on PATH (the CLI's next: rule)
    assert hint.startswith("  next: ") and hint.endswith(
        f"praxis publish {flow} --run {status['run']}"
    )
    assert res.returncode != 0

    unmarked = profile(tmp_path, write=False)
    res = praxis("publish", str(flow), env=unmarked)
    assert "not marked for writing: add `write: true` under connections.warehouse_write" in (
        res.stderr
    )
    assert table(tmp_path) == [("North", "2023-W52", 3, pytest.approx(10))]

    marked = profile(tmp_path, write=True)
    after = json.loads(praxis("status", str(flow), "--json", env=marked).stdout)
    assert after["route"]["step"] == "publish"
    res = praxis("publish", str(flow), env=marked)
    assert res.returncode == 0, res.stderr
    assert "published summary.csv -> warehouse_write: weekly_summary (upsert by region, week)" in (
        res.stdout
    )
    rows = table(tmp_path)
    summary = (flow / "runs" / status["run"] / "output" / "summary.csv").read_text().splitlines()
    assert len(rows) == len(summary) - 1 + 1  # the output's rows and the one already there
    assert all(w >= "2024-W05" for _, w, _, _ in rows[1:] if w != "2023-W52")  # from -p start
    again = praxis("publish", str(flow), env=marked)
    assert "already published" in again.stdout
    assert table(tmp_path) == rows
    done = json.loads(praxis("status", str(flow), "--json", env=marked).stdout)
    assert done["route"]["reason"] == "done"
