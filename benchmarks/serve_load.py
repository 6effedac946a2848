"""A team on one `praxis serve`: many runs of one flow started at once through the page,
clients that poll their pages and approve their Gates, every request timed.

Used by the load test (tests/reliability/test_load.py, RELIABILITY 32) and by
``python -m benchmarks.many_runs``. ``load_flow`` writes the flow: three script phases
(extract → total → report, a Gate after extract unless ``gate=False``), each run's rows
made from its ``region`` parameter, so every run's outputs are known in advance
(``expected``). ``Serve`` starts the real ``praxis serve`` command in its own process.
"""

from __future__ import annotations

import html
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx

EXTRACT = """\
import csv
n = 40 + int(params["region"].lstrip("r"))
with open("rows.csv", "w", newline="") as fh:
    out = csv.writer(fh)
    out.writerow(["id", "region", "amount"])
    for i in range(n):
        out.writerow([i, params["region"], 3 * i])
"""
TOTAL = """\
import pandas as pd
rows = pd.read_csv("rows.csv")
pd.DataFrame({"region": [params["region"]], "rows": [len(rows)],
              "total": [int(rows["amount"].sum())]}).to_csv("total.csv", index=False)
"""
REPORT = """\
import pandas as pd
t = pd.read_csv("total.csv").iloc[0]
open("report.txt", "w").write(f"{t['region']}: {t['rows']} rows, total {t['total']}\\n")
"""


def load_flow(root: Path, sandbox: dict[str, Any], *, gate: bool = True) -> Path:
    """The flow at ``root``: extract (Gate after it when ``gate``), total, report."""
    root.mkdir(parents=True, exist_ok=True)
    for name, code in (("extract", EXTRACT), ("total", TOTAL), ("report", REPORT)):
        (root / f"{name}.py").write_text(code, encoding="utf-8")
    review = "required" if gate else "none"
    (root / "flow.yaml").write_text(
        "flow: load\n"
        f"sandbox: {json.dumps(sandbox)}\n"
        "params: {region: r0}\n"
        "phases:\n"
        f"  - {{id: extract, kind: script, script: extract.py, outputs: [rows.csv], "
        f"review: {review}}}\n"
        "  - {id: total, kind: script, script: total.py, inputs: {working: [rows.csv]}, "
        "outputs: [total.csv]}\n"
        "  - {id: report, kind: script, script: report.py, inputs: {working: [total.csv]}, "
        "outputs: [report.txt]}\n",
        encoding="utf-8",
    )
    return root


def expected(region: str) -> dict[str, str]:
    """The outputs of a run of ``load_flow`` with this region, byte for byte."""
    n = 40 + int(region.lstrip("r"))
    rows = "".join(f"{i},{region},{3 * i}\r\n" for i in range(n))
    total = 3 * n * (n - 1) // 2
    return {
        "rows.csv": "id,region,amount\r\n" + rows,
        "total.csv": f"region,rows,total\n{region},{n},{total}\n",
        "report.txt": f"{region}: {n} rows, total {total}\n",
    }


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Serve:
    """``praxis serve --root ROOT --max-runs N`` in its own process; ``stop`` sends Ctrl-C."""

    def __init__(self, root: Path, *, max_runs: int, env: dict[str, str] | None = None) -> None:
        self.port = _free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        argv = [sys.executable, "-m", "praxis", "serve", "--root", str(root)]
        argv += ["--port", str(self.port), "--max-runs", str(max_runs)]
        self.stderr = ""  # what it printed after its URL, once it stopped
        self._drainer = threading.Thread(target=self._drain, daemon=True)
        self.proc = subprocess.Popen(
            argv,
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
            env={**os.environ, **(env or {})},
        )
        self.token = self._token()
        self._wait_listening()

    def _wait_listening(self) -> None:
        """serve prints its URL just before its server listens: wait for the port."""
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), 1).close()
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"praxis serve never listened: {self.stderr}") from None
                time.sleep(0.05)

    def _token(self) -> str:
        assert self.proc.stderr is not None
        deadline = time.monotonic() + 120
        seen = []
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            if not line and self.proc.poll() is not None:
                break
            seen.append(line)
            found = re.search(r"\?token=(\S+)", line)
            if found:
                self._drainer.start()
                return found.group(1)
        self.proc.kill()
        raise RuntimeError(f"praxis serve did not print its URL: {''.join(seen)[-2000:]}")

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        self.stderr += self.proc.stderr.read()

    @contextmanager
    def client(self, timeout: float = 120.0) -> Iterator[httpx.Client]:
        """A reviewer's browser: logged in (the session cookie), following nothing."""
        with httpx.Client(base_url=self.base, timeout=timeout, follow_redirects=False) as client:
            answer = client.get(f"/?token={self.token}")
            if answer.status_code != 303:
                raise RuntimeError(f"login answered {answer.status_code}")
            yield client

    def stop(self, timeout: float = 120.0, sig: int = signal.SIGINT) -> int:
        """Ctrl-C (or ``sig``: SIGTERM, as a service manager stops it); its exit code."""
        try:
            if self.proc.poll() is None:
                self.proc.send_signal(sig)
                self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise
        finally:
            if self._drainer.is_alive():
                self._drainer.join(timeout)
            if self.proc.stderr is not None:
                self.proc.stderr.close()
        return int(self.proc.returncode)


@dataclass
class Answer:
    what: str  # "page", "state", "index", "runs", "approve", "begin"
    status: int  # 0: no answer (the error is in ``error``)
    seconds: float
    run: str = ""
    refusal: str = ""
    error: str = ""


@dataclass
class Load:
    """Every request the clients made, and what they found."""

    answers: list[Answer] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, answer: Answer) -> None:
        with self.lock:
            self.answers.append(answer)

    def timed(
        self, what: str, run: str, call: Callable[[], httpx.Response]
    ) -> httpx.Response | None:
        started = time.perf_counter()
        try:
            response = call()
        except httpx.HTTPError as exc:
            self.add(Answer(what, 0, time.perf_counter() - started, run, error=repr(exc)))
            return None
        seconds = time.perf_counter() - started
        refusal = ""
        if response.status_code >= 400:
            found = re.search(r'id="refusal">(.*?)</p>', response.text, re.S)
            refusal = html.unescape(found.group(1)) if found else response.text[:300]
        self.add(Answer(what, response.status_code, seconds, run, refusal))
        return response

    def slowest(self) -> Answer:
        return max(self.answers, key=lambda a: a.seconds)


def _csrf(page: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
    if found is None:
        raise RuntimeError("a page without its form token")
    return found.group(1)


def begin_runs(serve: Serve, ref: str, regions: list[str], load: Load) -> list[str]:
    """Start one run per region at once, each from its own client (POST /begin)."""
    ids: dict[str, str] = {}

    def start(region: str) -> None:
        with serve.client() as client:
            csrf = _csrf(client.get("/").text)
            form = {"flow": ref, "csrf": csrf, "param.region": region}
            answer = load.timed("begin", "", lambda: client.post("/begin", data=form))
            if answer is not None and answer.status_code == 303:
                found = re.search(r"run=([\w.-]+)", answer.headers["location"])
                if found:
                    ids[region] = found.group(1)

    threads = [threading.Thread(target=start, args=(r,)) for r in regions]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    missing = [r for r in regions if r not in ids]
    if missing:
        raise RuntimeError(f"no run began for {missing}: {load.answers[-len(regions) :]}")
    return [ids[r] for r in regions]


def _approve_form(page: str) -> dict[str, str] | None:
    if 'action="/approve"' not in page:
        return None
    form = page.split('action="/approve"', 1)[1].split("</form>", 1)[0]
    fields = re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', form)
    return {name: html.unescape(value) for name, value in fields}


def follow(
    serve: Serve,
    ref: str,
    runs: list[str],
    load: Load,
    *,
    clients: int = 20,
    poll: float = 0.5,
    deadline: float = 600.0,
) -> list[str]:
    """``clients`` reviewers, each following one run's page (run n % len(runs)), polling
    the page, its state and the flows page, approving the Gate whenever the page offers it,
    until every run is done, failed or cancelled (or ``deadline`` seconds pass); the runs
    that were not, when the deadline passed."""
    until = time.monotonic() + deadline
    finished = threading.Event()
    done: set[str] = set()

    def reviewer(n: int) -> None:
        run = runs[n % len(runs)]
        q = urlencode({"flow": ref, "run": run})
        with serve.client() as client:
            turn = 0
            while not finished.is_set() and time.monotonic() < until:
                turn += 1
                page = load.timed("page", run, lambda: client.get(f"/run?{q}"))
                fields = _approve_form(page.text) if page is not None else None
                if fields is not None:
                    load.timed("approve", run, lambda f=fields: client.post("/approve", data=f))
                state = load.timed("state", run, lambda: client.get(f"/run/state?{q}"))
                if turn % 4 == 0:
                    load.timed("index", "", lambda: client.get("/"))
                    load.timed("runs", "", lambda: client.get("/runs/state"))
                if state is not None and state.status_code == 200:
                    if state.json()["status"] in ("done", "failed", "cancelled"):
                        with load.lock:
                            done.add(run)
                            if done >= set(runs):
                                finished.set()
                time.sleep(poll)

    threads = [threading.Thread(target=reviewer, args=(n,)) for n in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sorted(set(runs) - done)
