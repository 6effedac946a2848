"""``kind: query`` on a DuckDB file of the flow: a prepared query with a bound parameter feeds a
script phase; it is reused only within its declared freshness; flow.yaml's query and publish
keys are checked; and publishing to a DuckDB file through a ``write: true`` connection."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import duckdb
import pytest

from praxis.errors import Refused
from praxis.flows.definition import contract
from praxis.flows.engine import runner
from praxis.flows.engine.runner import PublishIncomplete
from praxis.flows.store.handle import RunHandle
from praxis.service import acting
from praxis.service.reading import load

QUERY = "SELECT id, region, amount FROM orders WHERE day >= CAST(:start AS DATE) ORDER BY id\n"
CLEAN = """\
import pandas as pd
df = pd.read_parquet("orders.parquet")
assert str(df["amount"].dtype) != "object" or df["amount"].map(type).nunique() == 1
df.groupby("region", as_index=False)["amount"].sum().to_csv("clean.csv", index=False)
"""


def shop(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with duckdb.connect(str(path)) as conn:
        conn.execute("CREATE TABLE orders (id INT, region TEXT, day DATE, amount DECIMAL(8,2))")
        conn.execute(
            "INSERT INTO orders VALUES (1, 'north', '2024-01-01', 10.5), "
            "(2, 'south', '2024-02-01', 20), (3, 'north', '2024-03-01', 7.25)"
        )


def make_flow(root: Path, extra: str = "", reuse: str = "", review: str = "none") -> Path:
    shop(root / "data" / "shop.duckdb")
    (root / "queries").mkdir(parents=True, exist_ok=True)
    (root / "queries" / "orders.sql").write_text(QUERY)
    (root / "clean.py").write_text(CLEAN)
    (root / "flow.yaml").write_text(
        textwrap.dedent(f"""\
        flow: q
        sandbox: {{backend: local}}
        database: data/shop.duckdb
        params: {{start: "2024-02-01"}}
        phases:
          - {{id: orders, kind: query, query: queries/orders.sql, outputs: [orders.parquet]{reuse}}}
          - id: clean
            kind: script
            script: clean.py
            inputs: {{working: [orders.parquet]}}
            outputs: [clean.csv]
            review: {review}
        """)
        + extra
    )
    return root


def test_a_query_phase_feeds_a_script_with_its_types_kept(
    tmp_path: Path, allow_local: None
) -> None:
    root = make_flow(tmp_path / "f")
    state = acting.run(root)
    assert state.status == "done", state.error
    out = root / "runs" / state.run / "output"
    assert (out / "clean.csv").read_text() == "region,amount\nnorth,7.25\nsouth,20.00\n"
    import pyarrow.parquet as pq

    schema = pq.read_schema(out / "orders.parquet")
    assert str(schema.field("amount").type).startswith("decimal128(")  # not text, not float
    record = (root / "runs" / state.run / "records" / "orders.ipynb").read_text()
    assert '{\\"start\\": \\"2024-02-01\\"}' in record and "2 rows" in record


def test_a_query_is_run_again_by_default_and_reused_within_its_freshness(
    tmp_path: Path, allow_local: None
) -> None:
    never = make_flow(tmp_path / "never")
    for _ in range(2):
        state = acting.run(never)
    assert not state.phases[0].reused_from  # reuse: never, by default

    now = [1_000_000.0]
    fresh = make_flow(tmp_path / "fresh", reuse=", reuse: {within: 1h}")
    flow = load(fresh)
    runner.run(flow, clock=lambda: now[0])
    now[0] += 1800  # half an hour later: what the query read is still fresh
    second = runner.run(flow, clock=lambda: now[0])
    assert second.phases[0].reused_from == f"{_first_run(fresh)}/1"
    now[0] += 7200  # two hours after the first: stale, it runs
    third = runner.run(flow, clock=lambda: now[0])
    assert third.phases[0].reused_from is None


def _first_run(root: Path) -> str:
    return sorted(os.listdir(root / "runs"))[0]


def test_a_database_file_is_read_inside_the_flow_folder_only(
    tmp_path: Path, allow_local: None
) -> None:
    root = make_flow(tmp_path / "f")
    secret = tmp_path / "elsewhere.duckdb"
    shop(secret)
    (root / "data" / "shop.duckdb").unlink()
    (root / "data" / "shop.duckdb").symlink_to(secret)
    flow, report = contract.load(root)
    assert flow is None and "link" in str(report)
    text = (root / "flow.yaml").read_text().replace("data/shop.duckdb", "../elsewhere.duckdb")
    (root / "flow.yaml").write_text(text)
    assert "outside the flow folder" in str(contract.check(root))


@pytest.mark.parametrize(
    "phase, publish, message",
    [
        ("{id: a, kind: query, outputs: [a.csv]}", "",
         "missing required key 'query'"),
        ("{id: a, kind: query, query: a.py, outputs: [a.csv]}", "",
         "must end in .sql"),
        ("{id: a, kind: query, query: a.sql, outputs: [a.csv], reuse: {within: soon}}", "",
         "expected a duration such as 30m"),
        ("{id: a, kind: script, script: a.py, query: a.sql, outputs: [a.csv]}", "",
         "only query phases take 'query'"),
        ("{id: a, kind: query, query: a.sql, database: 'postgresql://db.internal/x', "
         "outputs: [a.csv]}", "", "names a host (db.internal)"),
        ("{id: a, kind: query, query: a.sql, database: '${DB_URL}', outputs: [a.csv]}", "",
         "reads ${DB_URL} from praxis's environment"),
        ("{id: a, kind: query, query: a.sql, outputs: [a.csv]}",
         "publish: [{output: b.csv, to: {connection: w, table: t}}]",
         "'b.csv' is not an output of a phase"),
        ("{id: a, kind: query, query: a.sql, outputs: [a.csv]}",
         "publish: [{output: a.csv, to: {connection: w, table: t, mode: upsert}}]",
         "mode: upsert needs key:"),
        ("{id: a, kind: query, query: a.sql, outputs: [a.csv]}",
         "publish: [{output: a.csv, to: {connection: w, table: 't; DROP TABLE x'}}]",
         "is not a table: [schema.]name"),
        ("{id: a, kind: query, query: a.sql, outputs: [a.csv]}",
         "publish: [{output: a.csv, to: {connection: 'postgresql://h/db', table: t}}]",
         "is not a connection of your profile"),
    ],
)  # fmt: skip
def test_flow_yaml_query_and_publish_keys_are_checked(
    tmp_path: Path, phase: str, publish: str, message: str
) -> None:
    (tmp_path / "a.sql").write_text("SELECT 1 AS x\n")
    (tmp_path / "a.py").write_text("")
    (tmp_path / "flow.yaml").write_text(
        f"flow: f\ndatabase: 'duckdb:///:memory:'\nphases:\n  - {phase}\n{publish}\n"
    )
    assert message in str(contract.check(tmp_path))


def write_profile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, write: bool) -> Path:
    target = tmp_path / "target.duckdb"
    with duckdb.connect(str(target)) as conn:
        conn.execute("CREATE TABLE summary (region TEXT, amount DECIMAL(10, 2))")
        conn.execute("INSERT INTO summary VALUES ('west', 1)")
    profile = tmp_path / "profile.yaml"
    flag = ", write: true" if write else ""
    profile.write_text(f'connections:\n  out: {{url: "duckdb:///{target}"{flag}}}\n')
    monkeypatch.setenv("PRAXIS_PROFILE", str(profile))
    return target


PUBLISH = (
    "publish:\n  - {output: clean.csv, "
    "to: {connection: out, table: summary, mode: upsert, key: [region]}}\n"
)


def summary(target: Path) -> list[tuple[object, ...]]:
    with duckdb.connect(str(target), read_only=True) as conn:
        return [(r, str(a)) for r, a in conn.execute("SELECT * FROM summary ORDER BY 1").fetchall()]


def test_publish_to_a_duckdb_file_after_a_persons_approval(
    tmp_path: Path, allow_local: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = write_profile(tmp_path, monkeypatch, write=True)
    root = make_flow(tmp_path / "f", extra=PUBLISH, review="required")
    state = acting.run(root)
    with pytest.raises(Refused, match="published once every phase is done"):
        acting.publish(root, state.run)
    acting.approve(root, state.run, gate="clean", actor="person")
    assert acting.advance(root, state.run).status == "done"
    [out] = acting.publish(root, state.run)
    assert out.rows == 2
    assert summary(target) == [("north", "7.25"), ("south", "20.00"), ("west", "1.00")]
    assert acting.publish(root, state.run)[0].status == "already"
    log = RunHandle.open(load(root), state.run).log.read()
    assert [e.kind for e in log if e.kind.startswith("publish")] == ["published"]


def test_publish_without_a_gate_or_write_true_is_refused(
    tmp_path: Path, allow_local: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = write_profile(tmp_path, monkeypatch, write=False)
    ungated = make_flow(tmp_path / "ungated", extra=PUBLISH)
    state = acting.run(ungated)
    assert state.status == "done"
    with pytest.raises(Refused, match="needs a Gate a person approves"):
        acting.publish(ungated, state.run)
    gated = make_flow(tmp_path / "gated", extra=PUBLISH, review="required")
    state = acting.run(gated)
    acting.approve(gated, state.run, gate="clean", actor="person")
    acting.advance(gated, state.run)
    with pytest.raises(PublishIncomplete, match="not marked for writing"):
        acting.publish(gated, state.run)
    assert summary(target) == [("west", "1.00")]


def test_a_duckdb_query_reads_the_phases_working_inputs_as_tables(
    tmp_path: Path, allow_local: None
) -> None:
    root = tmp_path / "f"
    (root / "data").mkdir(parents=True)
    (root / "data" / "sales.csv").write_text("region,amount\nnorth,2\nsouth,3\nnorth,4\n")
    (root / "by_region.sql").write_text(
        'SELECT region, sum(amount) AS total FROM "data/sales.csv" '
        "WHERE amount >= :least GROUP BY region ORDER BY region\n"
    )
    (root / "flow.yaml").write_text(
        textwrap.dedent("""\
        flow: files
        sandbox: {backend: local}
        database: "duckdb:///:memory:"
        params: {least: 3}
        phases:
          - id: q
            kind: query
            query: by_region.sql
            inputs: {working: [data/sales.csv]}
            outputs: [by_region.csv]
        """)
    )
    state = acting.run(root)
    assert state.status == "done", state.error
    out = root / "runs" / state.run / "output" / "by_region.csv"
    assert out.read_text() == "region,total\nnorth,4\nsouth,3\n"
