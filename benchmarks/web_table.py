"""The reviewer's page over a big Gate file: ``python -m benchmarks.web_table [ROWS]``.

Runs flows/sales-report to its Gate (local kernels) in a temporary folder, replaces the
writable review.csv with ROWS rows (default 1,000,000), then through the real app:
opens the run page (first page: builds the row index), opens it again (index cached),
fetches rows from the middle by offset, filters, searches, sorts and asks for the flagged
rows (the first builds the table's columnar copy), and saves one cell; then `praxis status`
after each of three hand edits of the file (another tool changes a cell in place: the
command records the edit) and once more after it (wall, and CPU of the command), and
the Approve click (answered when the page is back; the run goes on in the background).
Prints bytes, wall seconds and CPU seconds of this process (the app runs in it; CPU time
says what a step costs on a machine shared with other work) of each step, and each of the
save, status and approve over one plain read of the file. Not a test: nothing here asserts
on time.
"""

from __future__ import annotations

import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from starlette.testclient import TestClient

from praxis.flows.engine import runner
from praxis.web.app import create_app
from praxis.web.background import Advancer
from praxis.web.security import Guard
from sandbox import open_sandbox

from .person import act_as_person

REPO = Path(__file__).resolve().parents[1]


def write_rows(path: Path, rows: int) -> None:
    header = path.read_bytes().split(b"\n", 1)[0] + b"\n"
    with path.open("wb") as fh:
        fh.write(header)
        for start in range(0, rows, 10_000):
            fh.write(
                b"".join(
                    b"O%07d,North,widget,%d,%d.5,negative amount,drop\n" % (i, i % 50, i)
                    for i in range(start, min(start + 10_000, rows))
                )
            )


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def main(rows: int) -> None:
    import shutil

    with tempfile.TemporaryDirectory() as tmp:
        act_as_person(Path(tmp) / "praxis-data")  # the reviewer: a person decides the Gate
        flow = Path(tmp) / "flows" / "sales-report"
        shutil.copytree(
            REPO / "flows" / "sales-report", flow, ignore=shutil.ignore_patterns("runs")
        )
        run = runner.begin(flow)
        runner.advance(
            flow,
            run.id,
            options=runner.RunOptions(
                make_sandbox=lambda f, r: open_sandbox(
                    {"backend": "local"}, workspace=r.paths.workspace, name=r.id
                )
            ),
        )
        review = flow / "runs" / run.id / "output" / "review.csv"
        draft = Path(tmp) / "big.csv"
        draft.write_bytes(review.read_bytes())
        write_rows(draft, rows)
        runner.edit(flow, "review.csv", draft.read_bytes(), run.id, by="hand")
        print(f"review.csv: {rows} rows, {review.stat().st_size} bytes")
        guard = Guard()
        local = Advancer(
            make_sandbox=lambda f, r: open_sandbox(
                {"backend": "local"}, workspace=r.paths.workspace, name=r.id
            )
        )
        app = create_app(Path(tmp), guard=guard, advancer=local)
        with TestClient(app, base_url="http://127.0.0.1:8765") as client:
            client.get(f"/?token={guard.token}")
            q = f"flow=flows/sales-report&run={run.id}"

            print(f"{'step':<44} {'HTTP':>4} {'bytes':>12} {'wall':>9} {'CPU':>9}")

            def step(label: str, method: str, url: str, **kw: object) -> str:
                t0, c0 = time.perf_counter(), time.process_time()
                r = client.request(method, url, **kw)  # type: ignore[arg-type]
                took, cpu = time.perf_counter() - t0, time.process_time() - c0
                print(
                    f"{label:<44} {r.status_code:>4} {len(r.content):>10} B "
                    f"{took:7.3f} s {cpu:7.3f} s"
                )
                if r.status_code >= 400:  # a refusal is no figure of the step
                    raise SystemExit(f"{label}: HTTP {r.status_code}: {_refusal(r.text)}")
                return r.text

            page = step("run page (builds the row index)", "GET", f"/run?{q}")
            step("run page again (index cached)", "GET", f"/run?{q}")
            step(
                "rows 500000..500100 by offset",
                "GET",
                f"/rows?{q}&name=review.csv&start={rows // 2}&n=100",
            )
            rq = f"/rows?{q}&name=review.csv&n=100"
            step("filter qty = 7 (builds the columnar copy)", "GET", f"{rq}&f0=3&op0=eq&v0=7")
            step("filter qty = 7 again (copy cached)", "GET", f"{rq}&f0=3&op0=eq&v0=8")
            step("filter amount 100..200.5 (numeric range)", "GET",
                 f"{rq}&f0=4&op0=range&v0=100&to0=200.5")  # fmt: skip
            step("search 'O00999' in every column", "GET", f"{rq}&q=O00999")
            step("sort by amount, descending", "GET", f"{rq}&sort=4&desc=1")
            step("flagged rows (the declared checks)", "GET", f"{rq}&flagged=1")
            csrf = page.split('name="csrf" value="', 1)[1].split('"', 1)[0]
            revision = page.split('name="revision" value="', 1)[1].split('"', 1)[0]
            version = page.split('name="version" value="', 1)[1].split('"', 1)[0]
            form = {
                "csrf": csrf,
                "flow": "flows/sales-report",
                "run": run.id,
                "revision": revision,
                "name": "review.csv",
                "version": version,
                f"cell.{rows // 2}.6": "keep",
            }
            t0 = time.perf_counter()
            with review.open("rb") as fh:
                while fh.read(1 << 20):
                    pass
            once = time.perf_counter() - t0
            print(f"{'(reading the file once, for scale)':<44} {once:27.3f} s")
            t0 = time.perf_counter()
            step("save one cell (stream, check, record)", "POST", "/save", data=form,
                 follow_redirects=False)  # fmt: skip
            took = time.perf_counter() - t0
            print(f"save / one read of the file: {took / once:.1f}x")
            page = step("run page after the save (index carried)", "GET", f"/run?{q}")
            time.sleep(3)  # the saved file's columnar copy is carried over in a thread
            for key in ("revision", "version"):
                form[key] = page.split(f'name="{key}" value="', 1)[1].split('"', 1)[0]
            form[f"cell.{rows // 2}.6"] = "drop"
            form[f"cell.{rows - 1}.5"] = "checked twice"
            t0 = time.perf_counter()
            step("save two cells (the next save)", "POST", "/save", data=form,
                 follow_redirects=False)  # fmt: skip
            print(f"second save / one read of the file: {(time.perf_counter() - t0) / once:.1f}x")
            step("filter after the saves (copy carried)", "GET", f"{rq}&f0=6&op0=eq&v0=keep")

            for n, (at, value) in enumerate(((-5, b"keep\n"), (-40, b"3"), (-5, b"drop\n"))):
                with review.open("r+b") as fh:  # a hand edit: another tool changes a cell
                    fh.seek(at, 2)
                    fh.write(value)
                for label in (f"status after hand edit {n + 1} (records it)", "status again"):
                    t0, c0 = time.perf_counter(), _children_cpu()
                    done = subprocess.run(
                        [sys.executable, "-m", "praxis", "status", str(flow)],
                        capture_output=True,
                        check=False,
                    )
                    took, cpu = time.perf_counter() - t0, _children_cpu() - c0
                    print(f"{label:<44} {done.returncode:>4} {'':>12} {took:7.3f} s {cpu:7.3f} s "
                          f"({took / once:.1f}x one read)")  # fmt: skip

            page = client.get(f"/run?{q}").text
            decision = {
                "csrf": csrf,
                "flow": "flows/sales-report",
                "run": run.id,
                "revision": page.split('name="revision" value="', 1)[1].split('"', 1)[0],
            }
            t0 = time.perf_counter()
            step("approve (answered; the run goes on)", "POST", "/approve", data=decision,
                 follow_redirects=False)  # fmt: skip
            print(f"approve / one read of the file: {(time.perf_counter() - t0) / once:.1f}x")
            local.wait(600)


def _refusal(page: str) -> str:
    found = re.search(r'class="refus[^>]*>([^<]*)', page)
    return found.group(1).strip() if found else page[:300]


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000)
