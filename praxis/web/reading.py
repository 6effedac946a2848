"""Pages that read a run without changing it: a file shown the way a person reads it, table
rows by byte offset, a phase's live output, and the Changes view.

Plain ``def`` handlers: Starlette runs them in its thread pool, so reading a big file or
hashing never holds up the event loop.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response

from praxis import parquet
from praxis.flows.report.compare import compare as compare_runs
from praxis.flows.store import live
from praxis.flows.store.handle import RunHandle
from sandbox.errors import PathRefused
from sandbox.files import confined

from . import catalog, changes, csvedit, find, notebook, parquet_view, render, tables, views
from .files import record_file
from .security import FRAME_HEADERS

if TYPE_CHECKING:
    from .app import UI

MAX_VIEW_BYTES = 2 * 1024 * 1024
MAX_NOTEBOOK_BYTES = 64 * 1024 * 1024


def rendered(run: RunHandle, ref: str, name: str, path: Path) -> notebook.Notebook:
    """The notebook at ``path`` (``name`` in the run folder) as the page shows it."""
    folder = name.rsplit("/", 1)[0] if "/" in name else ""
    budget = render.Budget.start()  # one for the page: its cells share the time

    def markdown(text: str, attachments: dict[str, str]) -> Markup:
        return render.markdown(
            text, flow=ref, run=run.id, folder=folder, attachments=attachments, budget=budget
        )

    def frame(cell: int, output: int) -> str:
        query = {"flow": ref, "run": run.id, "path": name, "cell": cell, "output": output}
        return "/output?" + urlencode(query)

    return notebook.load(path, markdown=markdown, frame=frame)


class Reader:
    """The read-only pages; ``ui`` (app.UI) gives the root and renders templates."""

    def __init__(self, ui: UI) -> None:
        self.ui = ui

    def open(self, request: Request) -> RunHandle:
        q = request.query_params
        return catalog.open_run(self.ui.root, q.get("flow", ""), q.get("run", ""))

    def live(self, request: Request) -> Response:
        """The live output of a phase from byte ``offset`` on: {text, offset, status, elapsed}."""
        q = request.query_params
        try:
            run = self.open(request)
            phase = self.phase_of(run, q.get("phase", ""))
        except catalog.NotFound as exc:
            return JSONResponse({"error": str(exc)}, status_code=404)
        offset = int(q["offset"]) if q.get("offset", "").isdigit() else 0
        text, offset = views.read_live(live.path(run.root, phase), offset)
        data = views.summary(run.state)
        p = run.state.phase(phase)
        data.update(text=text, offset=offset, phase=phase, phase_status=p.status, started=p.started)
        return JSONResponse(data)

    def rows(self, request: Request) -> Response:
        """Data rows [start, start + n) of a table output, read by byte offset."""
        q = request.query_params
        try:
            run = self.open(request)
            name = q.get("name", "")
            path = confined(run.paths.output, name)
            if parquet.is_parquet(name):
                return self.parquet_rows(path, q.get("start", ""), q.get("n", ""))
            if not tables.is_table(name):
                raise catalog.NotFound(f"{name} is not a table")
            idx = tables.fits(csvedit.index(path))
        except (catalog.NotFound, PathRefused, csvedit.NotATable) as exc:
            return JSONResponse({"error": str(exc)}, status_code=404)
        start = int(q["start"]) if q.get("start", "").isdigit() else 0
        count = int(q["n"]) if q.get("n", "").isdigit() else tables.PAGE_ROWS
        try:
            query = find.parse_query(dict(q), len(csvedit.header(idx)))
            if not query.empty:
                spec = checks_of(run, name)
                return JSONResponse(tables.found_rows(idx, query, start, count, spec))
        except csvedit.BadRow as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        except csvedit.NotATable as exc:
            return JSONResponse({"error": str(exc)}, status_code=409)
        rows, clipped = tables.rows_of(idx, start, count)
        return JSONResponse(
            {
                "start": start,
                "rows": rows,
                "clipped": clipped,
                "total": idx.data_rows,
                "version": idx.token,
            }
        )

    def parquet_rows(self, path: Path, start_text: str, n_text: str) -> Response:
        start = int(start_text) if start_text.isdigit() else 0
        count = int(n_text) if n_text.isdigit() else tables.PAGE_ROWS
        try:
            total = parquet.shape(path).rows
            rows = parquet_view.rows_of(path, start, count)
        except parquet.NotReadable as exc:
            return JSONResponse({"error": str(exc)}, status_code=404)
        version = parquet_view.version(path)
        shown = [[i, c] for i, cells in rows for c in range(len(cells))]  # every cell: read-only
        data = {"start": start, "rows": rows, "clipped": shown, "total": total, "version": version}
        return JSONResponse(data)

    def text(self, request: Request) -> Response:
        """The text of an output as its edit box shows it (up to views.MAX_TEXT_EDIT bytes)."""
        q = request.query_params
        try:
            run = self.open(request)
            path = confined(run.paths.output, q.get("name", ""))
        except (catalog.NotFound, PathRefused) as exc:
            return JSONResponse({"error": str(exc)}, status_code=404)
        if path.stat().st_size > views.MAX_TEXT_EDIT:
            return JSONResponse({"error": "too large to edit in the page"}, status_code=413)
        return JSONResponse({"text": views.decoded_text(path)})

    def changes(self, request: Request) -> Response:
        q = request.query_params
        try:
            run = self.open(request)
        except catalog.NotFound as exc:
            return self.ui.render(request, "error.html", 404, message=str(exc))
        return self.ui.render(
            request,
            "changes.html",
            ref=q.get("flow", ""),
            run=run,
            changes=changes.run_changes(run),
        )

    def compare(self, request: Request) -> Response:
        """Two runs of a flow side by side: parameters, phases, output rows (``before``,
        ``after``: run ids)."""
        q = request.query_params
        ref = q.get("flow", "")
        try:
            before = catalog.open_run(self.ui.root, ref, q.get("before", ""))
            after = catalog.open_run(self.ui.root, ref, q.get("after", ""))
        except catalog.NotFound as exc:
            return self.ui.render(request, "error.html", 404, message=str(exc))
        return self.ui.render(
            request, "compare.html", ref=ref, flow=after.flow, c=compare_runs(before, after)
        )

    def view(self, request: Request) -> Response:
        """A file of the run the way a person reads it: markdown, notebook, image, table."""
        q = request.query_params
        ref, name = q.get("flow", ""), q.get("path", "")
        try:
            run = self.open(request)
            path = record_file(run.root, name)
        except catalog.NotFound as exc:
            return self.ui.render(request, "error.html", 404, message=str(exc))
        except PathRefused as exc:
            return self.ui.render(request, "error.html", 404, message=f"{name!r}: {exc.reason}")
        ctx: dict[str, Any] = {"ref": ref, "run": run, "path": name, "size": path.stat().st_size}
        kind, lower = "download", name.lower()
        folder = name.rsplit("/", 1)[0] if "/" in name else ""
        if lower.endswith(".ipynb") and ctx["size"] <= MAX_NOTEBOOK_BYTES:
            try:
                ctx["nb"], kind = rendered(run, ref, name, path), "notebook"
            except (ValueError, UnicodeError, AttributeError, TypeError):
                kind = "text"
        elif lower.endswith((".md", ".markdown")) and ctx["size"] <= MAX_VIEW_BYTES:
            text = path.read_bytes().decode("utf-8", errors="replace")
            ctx["html"] = render.markdown(text, flow=ref, run=run.id, folder=folder)
            kind = "markdown"
        elif lower.endswith(views.IMAGE_SUFFIXES + (".svg",)):
            kind = "image"
        elif tables.is_table(name):
            try:
                page = int(q["page"]) if q.get("page", "").isdigit() else 1
                ctx["table"], kind = tables.page_of(path, page), "table"
            except csvedit.NotATable:
                kind = "text"
        elif parquet.is_parquet(name):
            try:
                page = int(q["page"]) if q.get("page", "").isdigit() else 1
                ctx["table"], kind = parquet_view.page_of(path, page), "table"
            except parquet.NotReadable as exc:
                ctx["problem"] = str(exc)
        elif lower.endswith(views.TEXT_SUFFIXES + (".jsonl", ".csv", ".tsv", ".ipynb")):
            kind = "text"
        if kind == "text":
            with open(path, "rb") as fh:
                data = fh.read(MAX_VIEW_BYTES + 1)
            ctx["text"] = data[:MAX_VIEW_BYTES].decode("utf-8", errors="replace")
            ctx["clipped"] = len(data) > MAX_VIEW_BYTES
        return self.ui.render(request, "view.html", kind=kind, **ctx)

    def output(self, request: Request) -> Response:
        """An HTML output of a notebook of the run, as the document of its sandboxed frame."""
        q = request.query_params
        name = q.get("path", "")
        try:
            run = self.open(request)
            path = confined(run.root, name)
            if not name.endswith(".ipynb") or path.stat().st_size > MAX_NOTEBOOK_BYTES:
                raise catalog.NotFound(f"{name} is not a notebook this page shows")
            cell, output = (int(q[k]) if q.get(k, "").isdigit() else -1 for k in ("cell", "output"))
            html = notebook.html_output(path, cell, output)
        except (catalog.NotFound, PathRefused, ValueError, UnicodeError) as exc:
            return PlainTextResponse(f"praxis: no such output: {exc}\n", status_code=404)
        if html is None:
            return PlainTextResponse("praxis: no such output\n", status_code=404)
        return HTMLResponse(notebook.frame_document(html), headers=FRAME_HEADERS)

    def phase_of(self, run: RunHandle, phase: str) -> str:
        if phase not in [p.id for p in run.state.phases]:
            raise catalog.NotFound(f"{run.flow.name} has no phase {phase!r}")
        return phase


def checks_of(run: RunHandle, name: str) -> dict[str, Any]:
    """flow.yaml's checks of output ``name`` of the phase that wrote it ({} when none)."""
    for phase in run.flow.phases:
        if name in phase.outputs:
            return dict(phase.checks.get(name, {}))
    return {}
