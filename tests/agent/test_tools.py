"""Tools: approval of unprepared code, protected names, extracts on the flow's database."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from praxis.agent import ApprovalQueue, run_turn
from praxis.agent import turn as agent

from .conftest import Make, call, reply

WRITE_EVIL = "open('evil.txt', 'w').write('ran')\n"
PREPARED = "open('made.csv', 'w').write('a\\n1\\n')\n"


def never(phase: str, code: str) -> bool:
    raise AssertionError("prepared code must not ask for approval")


def test_unprepared_code_without_approver_never_reaches_the_kernel(make: Make) -> None:
    h = make([reply(call("run_python", code=WRITE_EVIL)), reply(text="ok")])
    agent.run(h.ctx)
    assert not (h.workspace / "evil.txt").exists()
    (result,) = h.tool_results()
    assert result.startswith("refused: nobody can approve new code")
    (answer,) = h.of("approval_answered")
    assert (answer.approved, answer.by) == (False, "nobody")
    assert h.of("code_ran") == []
    assert all(c.cell_type == "markdown" for c in h.ctx.record.nb.cells)
    assert h.waits == []


def test_an_approver_that_says_yes_lets_code_run(make: Make) -> None:
    asked: list[tuple[str, str]] = []

    def yes(phase: str, code: str) -> bool:
        asked.append((phase, code))
        return True

    h = make([reply(call("run_python", code=WRITE_EVIL)), reply(text="ok")], approver=yes)
    result = run_turn(h.ctx)
    assert (h.workspace / "evil.txt").read_text() == "ran"
    assert asked == [("report", WRITE_EVIL)]
    assert h.waits == ["approval", None]
    assert [e.kind for e in h.events if e.kind.startswith("approval")] == [
        "approval_asked",
        "approval_answered",
    ]
    assert h.of("approval_answered")[0].approved is True
    assert result.written == {"evil.txt"}


def test_an_approver_that_says_no_is_reported_to_the_model(make: Make) -> None:
    h = make(
        [reply(call("run_python", code=WRITE_EVIL)), reply(text="ok")],
        approver=lambda phase, code: False,
    )
    agent.run(h.ctx)
    assert not (h.workspace / "evil.txt").exists()
    assert h.tool_results()[0].startswith("refused: the reviewer did not approve")
    assert h.waits == ["approval", None]


def test_prepared_code_runs_without_asking(make: Make, flow_root: Path) -> None:
    (flow_root / "scripts").mkdir()
    (flow_root / "scripts" / "make.py").write_text(PREPARED)
    h = make(
        [
            reply(call("run_python", code=PREPARED)),
            reply(call("run_prepared", name="make")),
            reply(call("run_prepared", name="missing")),
            reply(text="ok"),
        ],
        approver=never,
        scripts=("scripts/make.py",),
    )
    agent.run(h.ctx)
    assert (h.workspace / "made.csv").read_text() == "a\n1\n"
    assert [e.label for e in h.of("code_ran")] == ["prepared make", "prepared make"]
    assert h.tool_results()[-1].startswith("refused: no prepared script 'missing'; prepared: make")
    assert h.of("approval_asked") == []


def test_an_approval_queue_served_from_another_thread(make: Make) -> None:
    queue = ApprovalQueue()

    def reviewer() -> None:
        while True:
            pending = queue.pending()
            if pending:
                queue.answer(pending[0].id, True)
                return
            threading.Event().wait(0.01)

    thread = threading.Thread(target=reviewer)
    thread.start()
    h = make([reply(call("run_python", code=WRITE_EVIL)), reply(text="ok")], approver=queue)
    agent.run(h.ctx)
    thread.join()
    assert (h.workspace / "evil.txt").read_text() == "ran"


def test_write_output_refuses_names_code_wrote(make: Make, flow_root: Path) -> None:
    (flow_root / "scripts").mkdir()
    (flow_root / "scripts" / "make.py").write_text(PREPARED)
    h = make(
        [
            reply(call("run_prepared", name="make")),
            reply(call("write_output", name="made.csv", text="a\n999\n")),
            reply(call("write_output", name="notes.md", text="x")),
            reply(call("write_output", name="../escape.md", text="x")),
            reply(text="ok"),
        ],
        scripts=("scripts/make.py",),
        outputs=("made.csv", "summary.md"),
    )
    agent.run(h.ctx)
    results = [m.content for m in h.model.received[-1] if m.type == "tool"]
    assert results[1].startswith("refused: made.csv was written by code")
    assert results[2].startswith("refused: 'notes.md' is not a declared output")
    assert results[3].startswith("refused: output name '../escape.md' has a '..' component")
    assert (h.workspace / "made.csv").read_text() == "a\n1\n"
    assert not h.ctx.staging.exists() or list(h.ctx.staging.iterdir()) == []


def shop(root: Path) -> str:
    db = root / "data" / "shop.sqlite"
    db.parent.mkdir(parents=True)
    con = sqlite3.connect(db)
    con.executescript(
        "CREATE TABLE items (name TEXT, units INTEGER);"
        "INSERT INTO items VALUES ('pen', 3), ('ink', 1), ('pad', 7);"
    )
    con.commit()
    con.close()
    (root / "queries").mkdir()
    (root / "queries" / "top.sql").write_text("SELECT name, units FROM items ORDER BY units DESC")
    return "data/shop.sqlite"


def test_extract_prepared_writes_csv_and_protects_it(make: Make, flow_root: Path) -> None:
    h = make(
        [
            reply(call("extract_prepared", query_name="top", name="top.csv")),
            reply(call("write_output", name="top.csv", text="name,units\nfake,1\n")),
            reply(text="ok"),
        ],
        approver=never,
        database=shop(flow_root),
        queries=("queries/top.sql",),
        outputs=("top.csv",),
    )
    result = run_turn(h.ctx)
    assert (h.workspace / "top.csv").read_text() == "name,units\npad,7\npen,3\nink,1\n"
    first, second = [m.content for m in h.model.received[-1] if m.type == "tool"]
    assert first.startswith("wrote top.csv: 3 rows, columns name, units")
    assert second.startswith("refused: top.csv was written by code or an extract")
    assert result.written == {"top.csv"}
    assert h.of("tool_called")[0].files == ["top.csv"]


def test_adhoc_extract_needs_approval(make: Make, flow_root: Path) -> None:
    h = make(
        [reply(call("extract", query="SELECT * FROM items", name="all.csv")), reply(text="ok")],
        database=shop(flow_root),
    )
    agent.run(h.ctx)
    assert not (h.workspace / "all.csv").exists()
    assert h.tool_results()[0].startswith("refused: nobody can approve")


def test_extract_is_read_only_and_sql_errors_reach_the_model(make: Make, flow_root: Path) -> None:
    h = make(
        [
            reply(
                call("extract", query="DELETE FROM items RETURNING name", name="gone.csv"),
                call("extract", query="SELEC nonsense", name="bad.csv"),
                call("extract", query="SELECT count(*) AS n FROM items", name="n.csv"),
            ),
            reply(text="ok"),
        ],
        approver=lambda phase, code: True,
        database=shop(flow_root),
    )
    agent.run(h.ctx)
    deleted, bad, counted = h.tool_results()
    assert deleted.startswith("error: SQL error: attempt to write a readonly database")
    assert bad.startswith("error: SQL error: near")
    assert counted.startswith("wrote n.csv: 1 rows")
    assert (h.workspace / "n.csv").read_text() == "n\n3\n"
    con = sqlite3.connect(flow_root / "data" / "shop.sqlite")
    assert con.execute("SELECT count(*) FROM items").fetchone() == (3,)
    con.close()


def test_extract_without_a_database_says_so(make: Make) -> None:
    h = make(
        [reply(call("extract", query="SELECT 1", name="x.csv")), reply(text="ok")],
        approver=lambda phase, code: True,
    )
    agent.run(h.ctx)
    assert h.tool_results()[0] == (
        "error: this flow declares no 'database' in flow.yaml, and this phase has no "
        "CSV, TSV or Parquet working input to query"
    )


def test_extract_queries_the_phases_parquet_input_and_writes_parquet(
    make: Make, flow_root: Path
) -> None:
    import pandas as pd

    from praxis.agent.prompt import task_message

    (flow_root / "data").mkdir()
    sales = pd.DataFrame({"region": ["n", "s", "n"], "amount": [1.5, 2.0, 3.0]})
    sales.to_parquet(flow_root / "data" / "sales.parquet")
    query = "SELECT region, sum(amount) AS amount FROM 'data/sales.parquet' GROUP BY 1 ORDER BY 1"
    h = make(
        [
            reply(
                call("extract", query=query, name="by_region.parquet"),
                call("extract", query="SELECT 1", name="one.xlsx"),
            ),
            reply(text="ok"),
        ],
        approver=lambda phase, code: True,
        working=("data/sales.parquet",),
        outputs=("by_region.parquet",),
    )
    assert "'data/sales.parquet' (for example SELECT * FROM 'data/sales.parquet')" in (
        task_message(h.ctx)
    )
    agent.run(h.ctx)
    wrote, refused = h.tool_results()
    assert wrote.startswith("wrote by_region.parquet: 2 rows, columns region, amount")
    assert refused.startswith("refused: an extract is written as .csv, .tsv, .parquet")
    got = pd.read_parquet(h.workspace / "by_region.parquet")
    assert got.to_dict("list") == {"region": ["n", "s"], "amount": [4.5, 2.0]}


def test_a_host_file_behind_a_link_never_reaches_the_workspace(
    make: Make, flow_root: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.sqlite"  # RELIABILITY 47: a root-only file outside the flow
    con = sqlite3.connect(secret)
    con.execute("CREATE TABLE items (name TEXT, units INTEGER)")
    con.execute("INSERT INTO items VALUES ('root-only-secret', 1)")
    con.commit()
    con.close()
    secret.chmod(0o600)
    (flow_root / "data").mkdir(exist_ok=True)
    (flow_root / "data" / "shop.sqlite").symlink_to(secret)
    h = make(
        [reply(call("extract", query="SELECT * FROM items", name="x.csv")), reply(text="ok")],
        approver=lambda phase, code: True,
        database="data/shop.sqlite",
    )
    agent.run(h.ctx)
    assert h.tool_results()[0] == (
        "error: flow.yaml: database: 'data/shop.sqlite' is or passes through a symbolic link "
        "or a non-folder (a database file is read inside the flow folder only, with no link "
        "followed)"
    )
    assert not (h.workspace / "x.csv").exists()
    assert [
        p for p in h.workspace.rglob("*") if p.is_file() and b"root-only" in p.read_bytes()
    ] == []
