"""The reviewer web UI: ``praxis serve`` (Starlette, server-rendered pages, plain forms).

Pages: the flows below the root and their runs; a run (timeline, events, records, files);
at a Gate, the writable artifacts as tables or text to edit, and the approve / reject /
re-run / cancel forms. Every form carries the revision the page showed; the runner refuses
a change when the run has moved on, and the page says so in plain words.
"""

from __future__ import annotations

import json
import secrets
import socket
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import uvicorn
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

import praxis.agent.events  # noqa: F401  (registers agent event kinds for the events list)
from praxis.agent.approvals import ApprovalRefused
from praxis.flows import live, runner
from praxis.flows.handle import RunHandle
from praxis.flows.layout import NotWritable, writable
from praxis.flows.lock import Busy
from praxis.flows.state import StateCorrupt
from sandbox.errors import PathRefused
from sandbox.paths import confined

from . import catalog, changes, csvedit, notebook, render, tables, validate, views
from .background import Advancer
from .chat_routes import ChatPanel
from .files import file_response
from .security import Guard, GuardMiddleware

HERE = Path(__file__).parent
NOTICES = {
    "saved": "Saved. The next phase will read the edited file.",
    "approved": "Approved. The run continues in the background; this page follows it.",
    "saved-approved": "Your unsaved edits were saved, then the Gate was approved. "
    "The run continues in the background; this page follows it.",
    "rejected": "Rejected. The reopened phase runs again with your note.",
    "rerun": "Going back: the run continues from the chosen phase.",
    "cancelled": "Cancelled.",
    "cancelling": "Cancel requested: the run stops after the phase that is running.",
    "advancing": "The run continues in the background; this page follows it.",
    "answered": "Answer sent to the phase.",
}
MAX_FORM_FIELDS = 100_000
MAX_DRAFTS_BYTES = 8 * 1024 * 1024
MAX_VIEW_BYTES = 2 * 1024 * 1024
MAX_NOTEBOOK_BYTES = 64 * 1024 * 1024


class Refusal(Exception):
    """A request the UI turns down with a message for the person (HTTP ``status``)."""

    def __init__(self, message: str, status: int = 409) -> None:
        super().__init__(message)
        self.status = status


def create_app(
    root: Path,
    *,
    guard: Guard | None = None,
    advancer: Advancer | None = None,
    allowed_hosts: set[str] | None = None,
) -> Starlette:
    """The ASGI app over every flow below ``root``. ``allowed_hosts`` None accepts any Host."""
    guard = guard or Guard()
    templates = Jinja2Templates(directory=str(HERE / "templates"))
    templates.env.globals["when"] = views.when
    templates.env.globals["chart_width"] = views.CHART_WIDTH
    templates.env.globals["page_rows"] = tables.PAGE_ROWS
    ui = UI(root, guard, advancer or Advancer(), templates)
    chat = ChatPanel(ui)
    routes = [
        *chat.routes(),
        Route("/", ui.index),
        Route("/run", ui.run_page),
        Route("/run/state", ui.run_state),
        Route("/run/live", ui.live),
        Route("/rows", ui.rows),
        Route("/changes", ui.changes),
        Route("/view", ui.view),
        Route("/record", ui.record),
        Route("/file", ui.file),
        Route("/save", ui.save, methods=["POST"]),
        Route("/approve", ui.approve, methods=["POST"]),
        Route("/reject", ui.reject, methods=["POST"]),
        Route("/rerun", ui.rerun, methods=["POST"]),
        Route("/cancel", ui.cancel, methods=["POST"]),
        Route("/advance", ui.advance, methods=["POST"]),
        Route("/approval", ui.approval, methods=["POST"]),
        Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
    ]
    app = Starlette(routes=routes)
    app.add_middleware(GuardMiddleware, guard=guard, allowed_hosts=allowed_hosts)
    app.state.ui = ui
    app.state.chat = chat
    return app


class UI:
    def __init__(self, root: Path, guard: Guard, advancer: Advancer, templates: Any) -> None:
        self.root = root.resolve()
        self.guard = guard
        self.advancer = advancer
        self.templates = templates

    # --- pages ---------------------------------------------------------------------------

    def render(self, request: Request, name: str, status: int = 200, **ctx: Any) -> Response:
        sid = request.cookies.get(self.guard.cookie, "")
        ctx.setdefault("csrf", self.guard.csrf_for(sid))
        return self.templates.TemplateResponse(request, name, ctx, status_code=status)

    def index(self, request: Request) -> Response:
        flows = catalog.flow_rows(self.root)
        return self.render(request, "index.html", flows=flows, root=self.root)

    def run_page(self, request: Request) -> Response:
        q = request.query_params
        try:
            return self.show_run(request, q.get("flow", ""), q.get("run", ""))
        except catalog.NotFound as exc:
            return self.render(request, "error.html", 404, message=str(exc))

    def show_run(
        self,
        request: Request,
        ref: str,
        run_id: str,
        *,
        refusal: str | None = None,
        status: int = 200,
        drafts: dict[str, str] | None = None,
    ) -> Response:
        run = catalog.open_run(self.root, ref, run_id)
        pages = {}
        for key, value in request.query_params.items():
            if key.startswith("page.") and value.isdigit():
                pages[key[5:]] = int(value)
        job = self.advancer.job(run.flow.root, run.id)
        return self.render(
            request,
            "run.html",
            status,
            ref=ref,
            run=run,
            flow=run.flow,
            view=views.run_view(run, pages),
            notice=NOTICES.get(request.query_params.get("notice", "")),
            refusal=refusal,
            drafts=drafts or {},
            pending=self.advancer.pending(run.flow.root, run.id),
            job=job,
            phase_status={p.id: p.status for p in run.state.phases},
            render_md=lambda text, folder: render.markdown(
                text, flow=ref, run=run.id, folder=folder
            ),
        )

    def run_state(self, request: Request) -> Response:
        q = request.query_params
        try:
            run = catalog.open_run(self.root, q.get("flow", ""), q.get("run", ""))
        except catalog.NotFound as exc:
            return JSONResponse({"error": str(exc)}, status_code=404)
        data = views.summary(run.state)
        job = self.advancer.job(run.flow.root, run.id)
        data["advancing"] = bool(job and job.active)
        data["pending"] = len(self.advancer.pending(run.flow.root, run.id))
        return JSONResponse(data)

    def live(self, request: Request) -> Response:
        """The live output of a phase from byte ``offset`` on: {text, offset, status, elapsed}."""
        q = request.query_params
        try:
            run = catalog.open_run(self.root, q.get("flow", ""), q.get("run", ""))
            phase = self.phase_of(run, q.get("phase", ""))
        except catalog.NotFound as exc:
            return JSONResponse({"error": str(exc)}, status_code=404)
        offset = int(q["offset"]) if q.get("offset", "").isdigit() else 0
        text, offset = views.read_live(live.path(run.root, phase), offset)
        data = views.summary(run.state)
        p = run.state.phase(phase)
        data.update(text=text, offset=offset, phase=phase, phase_status=p.status)
        return JSONResponse(data)

    def rows(self, request: Request) -> Response:
        """Data rows [start, start + n) of a table output, read by byte offset."""
        q = request.query_params
        try:
            run = catalog.open_run(self.root, q.get("flow", ""), q.get("run", ""))
            name = q.get("name", "")
            path = confined(run.paths.output, name)
            if not tables.is_table(name):
                raise catalog.NotFound(f"{name} is not a table")
            idx = csvedit.index(path)
        except (catalog.NotFound, PathRefused, csvedit.NotATable) as exc:
            return JSONResponse({"error": str(exc)}, status_code=404)
        start = int(q["start"]) if q.get("start", "").isdigit() else 0
        count = int(q["n"]) if q.get("n", "").isdigit() else tables.PAGE_ROWS
        rows = tables.rows_of(idx, start, count)
        return JSONResponse(
            {"start": start, "rows": rows, "total": idx.data_rows, "version": idx.token}
        )

    def changes(self, request: Request) -> Response:
        q = request.query_params
        try:
            run = catalog.open_run(self.root, q.get("flow", ""), q.get("run", ""))
        except catalog.NotFound as exc:
            return self.render(request, "error.html", 404, message=str(exc))
        return self.render(
            request,
            "changes.html",
            ref=q.get("flow", ""),
            run=run,
            changes=changes.run_changes(run),
        )

    def view(self, request: Request) -> Response:
        """A file of the run the way a person reads it: markdown, notebook, image, table."""
        q = request.query_params
        ref, name = q.get("flow", ""), q.get("path", "")
        try:
            run = catalog.open_run(self.root, ref, q.get("run", ""))
            path = confined(run.root, name)
        except catalog.NotFound as exc:
            return self.render(request, "error.html", 404, message=str(exc))
        except PathRefused as exc:
            return self.render(request, "error.html", 404, message=f"{name!r}: {exc.reason}")
        ctx: dict[str, Any] = {"ref": ref, "run": run, "path": name, "size": path.stat().st_size}
        kind, lower = "download", name.lower()
        folder = name.rsplit("/", 1)[0] if "/" in name else ""
        if lower.endswith(".ipynb") and ctx["size"] <= MAX_NOTEBOOK_BYTES:
            try:
                ctx["nb"], kind = notebook.load(path), "notebook"
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
        elif lower.endswith(views.TEXT_SUFFIXES + (".jsonl", ".csv", ".tsv", ".ipynb")):
            kind = "text"
        if kind == "text":
            with open(path, "rb") as fh:
                data = fh.read(MAX_VIEW_BYTES + 1)
            ctx["text"] = data[:MAX_VIEW_BYTES].decode("utf-8", errors="replace")
            ctx["clipped"] = len(data) > MAX_VIEW_BYTES
        return self.render(request, "view.html", kind=kind, **ctx)

    def phase_of(self, run: RunHandle, phase: str) -> str:
        if phase not in [p.id for p in run.state.phases]:
            raise catalog.NotFound(f"{run.flow.name} has no phase {phase!r}")
        return phase

    def record(self, request: Request) -> Response:
        q = request.query_params
        try:
            run = catalog.open_run(self.root, q.get("flow", ""), q.get("run", ""))
            phase = q.get("phase", "")
            if phase not in [p.id for p in run.state.phases]:
                raise catalog.NotFound(f"{run.flow.name} has no phase {phase!r}")
            path = run.paths.record(phase)
            if not path.is_file():
                raise catalog.NotFound(f"phase {phase} has no record yet: it has not run")
        except catalog.NotFound as exc:
            return self.render(request, "error.html", 404, message=str(exc))
        return self.render(
            request,
            "record.html",
            ref=q.get("flow", ""),
            run=run,
            phase=phase,
            nb=notebook.load(path),
        )

    def file(self, request: Request) -> Response:
        q = request.query_params
        try:
            run = catalog.open_run(self.root, q.get("flow", ""), q.get("run", ""))
        except catalog.NotFound as exc:
            return self.render(request, "error.html", 404, message=str(exc))
        return file_response(run.root, q.get("path", ""))

    # --- actions -------------------------------------------------------------------------

    async def form(self, request: Request) -> tuple[Any, str, str, int | None]:
        form = await request.form(max_fields=MAX_FORM_FIELDS)
        sid = request.cookies.get(self.guard.cookie)
        if not self.guard.csrf_ok(sid, str(form.get("csrf", ""))):
            raise Refusal("the form's security token is missing or old: reload the page", 403)
        revision = str(form.get("revision", ""))
        expect = int(revision) if revision.isdigit() else None
        return form, str(form.get("flow", "")), str(form.get("run", "")), expect

    async def act(self, request: Request, action: Any) -> Response:
        """Run ``action(form, ref, run_id, expect)`` -> notice; refusals re-render the page."""
        ref = run_id = ""
        drafts: dict[str, str] = {}
        expect = None
        try:
            form, ref, run_id, expect = await self.form(request)
            if "text" in form:
                drafts = {str(form.get("name", "")): str(form["text"])}
            for name, draft in parse_drafts(form).items():
                if "text" in draft:
                    drafts[name] = str(draft["text"])
            await run_in_threadpool(catalog.open_run, self.root, ref, run_id)
            notice = await run_in_threadpool(action, form, ref, run_id, expect)
        except Refusal as exc:
            return await self.refused(request, ref, run_id, str(exc), exc.status, drafts)
        except catalog.NotFound as exc:
            return self.render(request, "error.html", 404, message=str(exc))
        except runner.Refused as exc:
            return await self.refused(request, ref, run_id, plain_refusal(exc, expect), 409, drafts)
        except Busy as exc:
            msg = f"Not done: another process is working on this flow now ({exc}). Try again soon."
            return await self.refused(request, ref, run_id, msg, 409, drafts)
        except (NotWritable, tables.BadEdit, ApprovalRefused, StateCorrupt) as exc:
            return await self.refused(request, ref, run_id, f"Not done: {exc}", 409, drafts)
        except PathRefused as exc:
            return await self.refused(request, ref, run_id, f"Not done: {exc.reason}", 409, drafts)
        query = urlencode({"flow": ref, "run": run_id, "notice": notice})
        return RedirectResponse(f"/run?{query}", status_code=303)

    async def refused(
        self,
        request: Request,
        ref: str,
        run_id: str,
        message: str,
        status: int,
        drafts: dict[str, str],
    ) -> Response:
        try:
            return await run_in_threadpool(
                self.show_run, request, ref, run_id, refusal=message, status=status, drafts=drafts
            )
        except catalog.NotFound:
            return self.render(request, "error.html", status, message=message)

    def flow_of(self, ref: str) -> Path:
        return catalog.flow_folder(self.root, ref)

    def continue_run(self, ref: str, run_id: str) -> None:
        self.advancer.start(self.flow_of(ref), run_id)

    async def save(self, request: Request) -> Response:
        def do(form: Any, ref: str, run_id: str, expect: int | None) -> str:
            name = str(form.get("name", ""))
            run = catalog.open_run(self.root, ref, run_id)
            if "text" in form:
                draft: dict[str, Any] = {"text": str(form["text"])}
            else:
                cells = tables.parse_cell_fields([(k, str(v)) for k, v in form.multi_items()])
                if not cells:
                    raise Refusal("Nothing saved: no cell of this table was changed.")
                draft = {"cells": cells, "version": str(form.get("version", ""))}
            self.save_drafts(run, {name: draft}, expect)
            return "saved"

        return await self.act(request, do)

    def save_drafts(
        self, run: RunHandle, drafts: dict[str, dict[str, Any]], expect: int | None
    ) -> int | None:
        """Check every draft, then write them one by one; the revision after the last write.

        A draft is {"text": str} or {"cells": {(row, col): value}, "version": str}. Nothing
        is written unless every draft passes its checks (``validate``).
        """
        if expect is not None and expect != run.state.revision:
            raise runner.Refused("stale", revision=run.state.revision)
        planned = []
        for name, draft in drafts.items():
            path = writable(run.flow, run.state, run.paths, name)
            if "text" in draft and draft.get("cells"):
                raise Refusal(f"Not saved: {name} has both cell edits and a text edit; keep one")
            if "text" in draft:
                data = validate.text_save(path, str(draft["text"]))
            else:
                data = validate.cell_save(path, draft["cells"], str(draft.get("version", "")))
            validate.check_save(run.flow, str(run.state.gate), name, data)
            planned.append((name, data))
        for name, data in planned:
            changes.keep_original(run, name)
            state = runner.edit(run.flow, name, data, run.id, expect_revision=expect, by="web")
            expect = state.revision if expect is not None else None
            run = RunHandle.open(run.flow, run.id)
        return expect

    async def approve(self, request: Request) -> Response:
        def do(form: Any, ref: str, run_id: str, expect: int | None) -> str:
            drafts = parse_drafts(form)
            if drafts:
                run = catalog.open_run(self.root, ref, run_id)
                expect = self.save_drafts(run, drafts, expect)
            runner.approve(self.flow_of(ref), run_id, expect_revision=expect)
            self.continue_run(ref, run_id)
            return "saved-approved" if drafts else "approved"

        return await self.act(request, do)

    async def reject(self, request: Request) -> Response:
        def do(form: Any, ref: str, run_id: str, expect: int | None) -> str:
            note = str(form.get("note", "")).strip()
            if not note:
                raise Refusal("Not rejected: write a note saying what the reopened phase should do")
            reopen = str(form.get("reopen", ""))
            runner.reject(self.flow_of(ref), reopen, note, run_id, expect_revision=expect)
            self.continue_run(ref, run_id)
            return "rejected"

        return await self.act(request, do)

    async def rerun(self, request: Request) -> Response:
        def do(form: Any, ref: str, run_id: str, expect: int | None) -> str:
            phase = str(form.get("phase", ""))
            runner.rerun(self.flow_of(ref), phase, run_id, expect_revision=expect)
            self.continue_run(ref, run_id)
            return "rerun"

        return await self.act(request, do)

    async def cancel(self, request: Request) -> Response:
        def do(form: Any, ref: str, run_id: str, expect: int | None) -> str:
            _, now = runner.cancel(self.flow_of(ref), run_id, expect_revision=expect)
            return "cancelled" if now else "cancelling"

        return await self.act(request, do)

    async def advance(self, request: Request) -> Response:
        def do(form: Any, ref: str, run_id: str, expect: int | None) -> str:
            run = catalog.open_run(self.root, ref, run_id)
            if expect is not None and expect != run.state.revision:
                raise runner.Refused("stale", revision=run.state.revision)
            self.continue_run(ref, run_id)
            return "advancing"

        return await self.act(request, do)

    async def approval(self, request: Request) -> Response:
        def do(form: Any, ref: str, run_id: str, expect: int | None) -> str:
            yes = str(form.get("answer", "")) == "approve"
            self.advancer.answer(self.flow_of(ref), run_id, str(form.get("request", "")), yes)
            return "answered"

        return await self.act(request, do)


def parse_drafts(form: Any) -> dict[str, dict[str, Any]]:
    """The unsaved edits the page sends with Approve: ``drafts`` as JSON
    {name: {"text": str} | {"cells": {"row.col": str}, "version": str}}."""
    raw = str(form.get("drafts", "") or "")
    if not raw:
        return {}
    if len(raw) > MAX_DRAFTS_BYTES:
        raise Refusal("Not done: the unsaved edits are too large to send at once; save them first")
    try:
        data = json.loads(raw)
    except ValueError:
        raise Refusal("Not done: the page sent unreadable edits; reload it") from None
    if not isinstance(data, dict):
        raise Refusal("Not done: the page sent unreadable edits; reload it")
    drafts: dict[str, dict[str, Any]] = {}
    for name, draft in data.items():
        if not isinstance(draft, dict):
            continue
        if isinstance(draft.get("text"), str):
            drafts[str(name)] = {"text": draft["text"]}
        elif isinstance(draft.get("cells"), dict) and draft["cells"]:
            items = [(f"cell.{k}", str(v)) for k, v in draft["cells"].items()]
            cells = tables.parse_cell_fields(items)
            drafts[str(name)] = {"cells": cells, "version": str(draft.get("version", ""))}
    return drafts


def plain_refusal(exc: runner.Refused, expect: int | None) -> str:
    if exc.revision is not None and expect is not None and exc.revision != expect:
        return (
            f"Not done: this run changed since this page was shown (the page showed revision "
            f"{expect}, the run is now at revision {exc.revision}). Nothing was changed. "
            "Look at the run as it is now below, then try again."
        )
    return f"Not done: {exc}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve(root: Path, *, port: int, host: str = "127.0.0.1", token: str | None = None) -> int:
    """Serve the UI on 127.0.0.1 until Ctrl-C; prints the URL with its token. Returns 0."""
    if not root.is_dir():
        print(f"serve: {root} is not a folder; next: praxis serve --root DIR", file=sys.stderr)
        return 2
    guard = Guard(token or secrets.token_urlsafe(32), cookie=f"praxis_session_{port}")
    advancer = Advancer()
    hosts = {f"{host}:{port}", f"localhost:{port}", f"127.0.0.1:{port}"}
    app = create_app(root, guard=guard, advancer=advancer, allowed_hosts=hosts)
    print(f"praxis: reviewing flows below {root.resolve()}", file=sys.stderr)
    print(f"praxis: open http://{host}:{port}/?token={guard.token}", file=sys.stderr, flush=True)
    try:
        uvicorn.run(app, host=host, port=port, log_level="warning")
    finally:
        advancer.close()
    return 0
