"""The reviewer web UI: ``praxis serve`` (Starlette, server-rendered pages, plain forms).

Pages: the flows below the root and their runs; a run (timeline, events, records, files);
at a Gate, the writable artifacts as tables or text to edit, and the approve / reject /
re-run / cancel forms, each a call of ``praxis.service``. Every form carries the revision the
page showed; the service refuses a change when the run has moved on, and the page says so in
plain words.
"""

from __future__ import annotations

import os
import secrets
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import uvicorn
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from praxis import units
from praxis.command_line import typed
from praxis.errors import PraxisError, RecordCorrupt, Refused
from praxis.flows.engine.notify import Notifier
from praxis.flows.engine.reconcile import reconcile_if_free
from praxis.flows.model import forms, retry_policy
from praxis.flows.report import keeping
from praxis.flows.store.handle import NoRun, RunHandle
from praxis.flows.store.layout import writable_names
from praxis.flows.store.lock import Busy
from praxis.service import acting, keeper
from sandbox.errors import PathRefused

from . import catalog, columnar, drafts, highlight, refusals, render, tables, views
from .background import MAX_RUNS, Advancer
from .chat_routes import ChatPanel
from .files import file_response
from .keeping import KeeperLoop
from .reading import Reader, rendered
from .refusals import RequestRefused, TokenRefused
from .security import Guard, GuardMiddleware, host_names
from .tracing import code_of, traced

HERE = Path(__file__).parent
NOTICES = {
    "saved": "Saved. The next phase will read the edited file.",
    "approved": "Approved.",
    "saved-approved": "Your unsaved edits were saved, then the Gate was approved.",
    "rejected": "Rejected. The reopened phase runs again with your note.",
    "rerun": "Going back: the run continues from the chosen phase.",
    "cancelled": "Cancelled.",
    "cancelling": "Cancel requested: the run stops after the phase that is running.",
    "advancing": "The run continues in the background; this page follows it.",
    "answered": "Answer sent to the phase.",
    "begun": "Started. The run advances in the background (it waits for a place while the "
    "server advances as many runs as it may at once); this page follows it.",
}
MAX_FORM_FIELDS = 100_000


def create_app(
    root: Path,
    *,
    guard: Guard | None = None,
    advancer: Advancer | None = None,
    allowed_hosts: set[str] | None = None,
) -> Starlette:
    """The ASGI app over every flow below ``root``. ``allowed_hosts``: the hosts a request may
    name in its Host header (Starlette's TrustedHostMiddleware; a port given is ignored);
    None accepts any Host."""
    guard = guard or Guard()
    templates = Jinja2Templates(directory=str(HERE / "templates"))
    templates.env.globals["when"] = views.when
    templates.env.globals["chart_width"] = views.CHART_WIDTH
    templates.env.globals["duration"] = units.duration
    templates.env.filters["bytes"] = units.size  # {{ n|bytes }}: 50.6 MiB, not 53064342 B
    templates.env.globals["page_rows"] = tables.PAGE_ROWS
    templates.env.globals["row_links"] = refusals.row_links
    templates.env.globals["max_find_columns"] = columnar.MAX_COLUMNS
    templates.env.globals["left_words"] = keeping.left_words
    templates.env.globals["typed"] = typed  # a command, as praxis.command_line spells it
    ui = UI(root, guard, advancer or Advancer(), templates)
    chat = ChatPanel(ui)
    reader = Reader(ui)
    routes = [
        *chat.routes(),
        Route("/", ui.index),
        Route("/runs/state", ui.runs_state),
        Route("/begin", ui.begin, methods=["POST"]),
        Route("/run", ui.run_page),
        Route("/run/state", ui.run_state),
        Route("/run/live", reader.live),
        Route("/rows", reader.rows),
        Route("/text", reader.text),
        Route("/changes", reader.changes),
        Route("/compare", reader.compare),
        Route("/view", reader.view),
        Route("/record", ui.record),
        Route("/output", reader.output),
        Route("/notebook.css", notebook_css),
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
    app.add_middleware(GuardMiddleware, guard=guard)
    if allowed_hosts is not None:  # outermost: a request for another Host meets nothing else
        hosts = host_names(allowed_hosts)
        app.add_middleware(TrustedHostMiddleware, allowed_hosts=hosts, www_redirect=False)
    app.state.ui = ui
    app.state.chat = chat
    return app


def notebook_css(request: Request) -> Response:
    """The colours of highlighted code and of ANSI text in notebooks (``highlight``)."""
    return Response(highlight.stylesheet(), media_type="text/css")


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
        page: Response = self.templates.TemplateResponse(request, name, ctx, status_code=status)
        return page

    def index(self, request: Request) -> Response:
        return self.show_index(request)

    def show_index(
        self, request: Request, refusal: str | None = None, status: int = 200
    ) -> Response:
        flows = catalog.flow_rows(self.root)
        advancing, queued = self.advancer.counts()
        return self.render(
            request,
            "index.html",
            status,
            flows=flows,
            root=self.root,
            here=self.here,
            refusal=refusal,
            advancing=advancing,
            queued=queued,
            max_runs=self.advancer.max_runs,
        )

    def here(self, ref: str, run_id: str) -> str:
        """``advancing`` or ``queued`` when this server advances the run, else ""."""
        job = self.advancer.job(self.root / ref, run_id)
        if job is None or not job.active:
            return ""
        return "queued" if job.queued else "advancing"

    def runs_state(self, request: Request) -> Response:
        """Every run's state, for the flows page to follow (what the server advances too)."""
        flows: dict[str, list[dict[str, Any]]] = {}
        for f in catalog.flow_rows(self.root):
            rows = flows[f.ref] = []
            for r in f.runs:
                if r.state is None:
                    rows.append({"id": r.id, "error": r.error})
                    continue
                row = views.summary(r.state)
                del row["phases"]
                row.update(
                    id=r.id,
                    done=sum(1 for p in r.state.phases if p.status == "done"),
                    total=len(r.state.phases),
                    here=self.here(f.ref, r.id),
                )
                rows.append(row)
        advancing, queued = self.advancer.counts()
        return JSONResponse(
            {
                "flows": flows,
                "advancing": advancing,
                "queued": queued,
                "max_runs": self.advancer.max_runs,
            }
        )

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
        if reconciled(run):
            run = catalog.open_run(self.root, ref, run_id)
        pages = {}
        for key, value in request.query_params.items():
            if key.startswith("page.") and value.isdigit():
                pages[key[5:]] = int(value)
        self.advancer.prepare(run)  # at a Gate: its sandbox opens before the click
        job = self.advancer.job(run.flow.root, run.id)
        budget = render.Budget.start()  # the page's markdown outputs share its time
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
            going=views.going(run.state, job),
            edits=views.edits_question(run),
            max_runs=self.advancer.max_runs,
            phase_status={p.id: p.status for p in run.state.phases},
            deadline_left=keeping.time_left(run.flow, run, keeping.clock_from()()),
            flow_phases=[p.id for p in run.flow.phases],
            retry_words=lambda retry: retry_policy.words(retry, time.time()),
            render_md=lambda text, folder: render.markdown(
                text, flow=ref, run=run.id, folder=folder, budget=budget
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
        data["advancing"] = bool(job and job.active and job.advancing)
        data["queued"] = bool(job and job.queued)
        data["pending"] = len(self.advancer.pending(run.flow.root, run.id))
        if run.state.waiting == "gate":
            self.advancer.seen(run.flow.root, run.id)  # its sandbox stays warm for it
        return JSONResponse(data)

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
            nb=rendered(run, q.get("flow", ""), f"records/{phase}.ipynb", path),
        )

    def file(self, request: Request) -> Response:
        q = request.query_params
        try:
            run = catalog.open_run(self.root, q.get("flow", ""), q.get("run", ""))
        except catalog.NotFound as exc:
            return self.render(request, "error.html", 404, message=str(exc))
        receipt(run, q.get("path", ""))
        return file_response(run.root, q.get("path", ""))

    # --- actions -------------------------------------------------------------------------

    async def form(self, request: Request) -> tuple[Any, str, str, int | None]:
        form = await request.form(max_fields=MAX_FORM_FIELDS)
        sid = request.cookies.get(self.guard.cookie)
        if not self.guard.csrf_ok(sid, str(form.get("csrf", ""))):
            raise TokenRefused("the form's security token is missing or old: reload the page")
        revision = str(form.get("revision", ""))
        expect = int(revision) if revision.isdigit() else None
        return form, str(form.get("flow", "")), str(form.get("run", "")), expect

    async def act(self, request: Request, action: Any) -> Response:
        """Run ``action(form, ref, run_id, expect)`` -> notice; refusals re-render the page."""
        ref = run_id = ""
        texts: dict[str, str] = {}
        expect = None
        try:
            form, ref, run_id, expect = await self.form(request)
            if "text" in form:
                texts = {str(form.get("name", "")): str(form["text"])}
            for name, draft in drafts.parse(form).items():
                if "text" in draft:
                    texts[name] = str(draft["text"])
            await run_in_threadpool(catalog.open_run, self.root, ref, run_id)
            verb = request.url.path.strip("/")
            await run_in_threadpool(traced, self.root, ref, run_id, verb, form, None)
            try:
                notice = await run_in_threadpool(action, form, ref, run_id, expect)
            except (PraxisError, PathRefused) as exc:
                await run_in_threadpool(traced, self.root, ref, run_id, verb, form, code_of(exc))
                raise
            await run_in_threadpool(traced, self.root, ref, run_id, verb, form, 0)
        except catalog.NotFound as exc:
            return self.render(request, "error.html", 404, message=str(exc))
        except (PraxisError, PathRefused) as exc:
            message, status = refusals.sentence(exc, expect), refusals.status_of(exc)
            return await self.refused(request, ref, run_id, message, status, texts)
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

    async def begin(self, request: Request) -> Response:
        """Start a run of a flow (``param.NAME`` fields override flow.yaml's params; one left
        blank or as the form showed it keeps its default) and queue its advance."""
        ref = ""
        try:
            form, ref, _, _ = await self.form(request)
            params = {
                key.removeprefix("param."): str(value).strip()
                for key, value in form.multi_items()
                if key.startswith("param.")
            }
            run_id = await run_in_threadpool(self.begin_run, ref, params)
        except catalog.NotFound as exc:
            return self.render(request, "error.html", 404, message=str(exc))
        except PraxisError as exc:
            message, status = refusals.sentence(exc, None), refusals.status_of(exc)
            return await run_in_threadpool(self.show_index, request, message, status)
        query = urlencode({"flow": ref, "run": run_id, "notice": "begun"})
        return RedirectResponse(f"/run?{query}", status_code=303)

    def begin_run(self, ref: str, params: dict[str, str]) -> str:
        flow = catalog.load_flow(self.root, ref)
        shown = {k: str(v) for k, v in flow.params.items()}
        given = {k: v for k, v in params.items() if v and v != shown.get(k)}
        run = acting.begin(flow, params=given)
        self.advancer.start(flow.root, run.id)
        return run.id

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
                    raise RequestRefused("Nothing saved: no cell of this table was changed.")
                draft = {"cells": cells, "version": str(form.get("version", ""))}
            drafts.save(run, {name: draft}, expect)
            return "saved"

        return await self.act(request, do)

    async def approve(self, request: Request) -> Response:
        def do(form: Any, ref: str, run_id: str, expect: int | None) -> str:
            values = form_values(form)
            if values:  # checked before any draft is saved: a refused value changes nothing
                flow = catalog.open_run(self.root, ref, run_id).flow
                gate = seen_gate(form)["gate"]
                if gate in [p.id for p in flow.phases]:
                    forms.answers(flow.phase(gate).form, values, gate)
            unsaved = drafts.parse(form)
            if unsaved:
                run = catalog.open_run(self.root, ref, run_id)
                expect = drafts.save(run, unsaved, expect)
            acting.approve(
                self.flow_of(ref), run_id, expect_revision=expect, values=values,
                **seen_gate(form),
            )  # fmt: skip
            self.continue_run(ref, run_id)
            return "saved-approved" if unsaved else "approved"

        return await self.act(request, do)

    async def reject(self, request: Request) -> Response:
        def do(form: Any, ref: str, run_id: str, expect: int | None) -> str:
            note = str(form.get("note", "")).strip()
            if not note:
                raise RequestRefused(
                    "Not rejected: write a note saying what the reopened phase should do"
                )
            reopen = str(form.get("reopen", ""))
            acting.reject(
                self.flow_of(ref), reopen, note, run_id, expect_revision=expect,
                edits=str(form.get("edits", "")) or None, **seen_gate(form),
            )  # fmt: skip
            self.continue_run(ref, run_id)
            return "rejected"

        return await self.act(request, do)

    async def rerun(self, request: Request) -> Response:
        def do(form: Any, ref: str, run_id: str, expect: int | None) -> str:
            phase = str(form.get("phase", ""))
            edits = str(form.get("edits", "")) or None
            acting.rerun(self.flow_of(ref), phase, run_id, expect_revision=expect, edits=edits)
            self.continue_run(ref, run_id)
            return "rerun"

        return await self.act(request, do)

    async def cancel(self, request: Request) -> Response:
        def do(form: Any, ref: str, run_id: str, expect: int | None) -> str:
            _, now = acting.cancel(self.flow_of(ref), run_id, expect_revision=expect)
            return "cancelled" if now else "cancelling"

        return await self.act(request, do)

    async def advance(self, request: Request) -> Response:
        def do(form: Any, ref: str, run_id: str, expect: int | None) -> str:
            run = catalog.open_run(self.root, ref, run_id)
            if expect is not None and expect != run.state.revision:
                raise Refused("stale", revision=run.state.revision)
            self.continue_run(ref, run_id)
            return "advancing"

        return await self.act(request, do)

    async def approval(self, request: Request) -> Response:
        def do(form: Any, ref: str, run_id: str, expect: int | None) -> str:
            yes = str(form.get("answer", "")) == "approve"
            self.advancer.answer(self.flow_of(ref), run_id, str(form.get("request", "")), yes)
            return "answered"

        return await self.act(request, do)


def reconciled(run: RunHandle) -> bool:
    """Record hand edits before the page shows the run (as ``praxis status`` does), so the
    revision the page binds its forms to includes them. The run's lock is taken only when
    there is an edit to record, and not waited for: skipped while another holds it."""
    try:
        return reconcile_if_free(run.flow, run.id)
    except (Refused, RecordCorrupt, NoRun):
        return False


def serve(
    root: Path,
    *,
    port: int,
    host: str = "127.0.0.1",
    token: str | None = None,
    max_runs: int = MAX_RUNS,
    notify_command: str | None = None,
) -> int:
    """Serve the UI on 127.0.0.1 until Ctrl-C, advancing up to ``max_runs`` runs at once;
    prints the URL with its token. Returns 0."""
    if not root.is_dir():
        print(f"serve: {root} is not a folder; next: praxis serve --root DIR", file=sys.stderr)
        return 2
    guard = Guard(token or secrets.token_urlsafe(32), cookie=f"praxis_session_{port}")
    env = dict(os.environ)
    if notify_command:
        env["PRAXIS_NOTIFY_COMMAND"] = notify_command
    notifier = Notifier.from_env(env, base_url=f"http://{host}:{port}", root=root)
    # one run at a Gate keeps its sandbox warm
    advancer = Advancer(keep=1, max_runs=max_runs, notifier=notifier)
    keeper_loop = KeeperLoop(root, advancer, clock=keeper.clock_from(env), notifier=notifier)
    hosts = {f"{host}:{port}", f"localhost:{port}", f"127.0.0.1:{port}"}
    app = create_app(root, guard=guard, advancer=advancer, allowed_hosts=hosts)
    print(
        f"praxis: reviewing flows below {root.resolve()}; advancing up to {advancer.max_runs} "
        "runs at once",
        file=sys.stderr,
    )
    print(f"praxis: open http://{host}:{port}/?token={guard.token}", file=sys.stderr, flush=True)
    # uvicorn stops on SIGTERM as on Ctrl-C, then sends the signal again to the handler it
    # found: this one, so that the warm sandboxes (containers, workspace mounts) are closed
    # below instead of the process ending at once
    main = threading.current_thread() is threading.main_thread()  # signals: only there
    previous = signal.signal(signal.SIGTERM, _terminated) if main else None
    keeper_loop.start()
    try:
        uvicorn.run(app, host=host, port=port, log_level="warning")
    except Terminated:
        pass
    finally:
        if main:  # a second SIGTERM cannot cut the close short
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        try:
            keeper_loop.stop()
            advancer.close()
        finally:
            if main:
                signal.signal(signal.SIGTERM, previous)
    return 0


class Terminated(Exception):
    """Raised in ``serve`` on SIGTERM, once the server stopped: its sandboxes close next."""


def _terminated(signum: int, frame: object) -> None:
    raise Terminated()


def form_values(form: Any) -> dict[str, str]:
    """The Gate form's fields the page sent (``value.NAME``); an empty one is left out (its
    default applies, or the form says it is required)."""
    return {
        str(k)[len("value.") :]: str(v)
        for k, v in form.multi_items()
        if str(k).startswith("value.") and str(v).strip()
    }


def seen_gate(form: Any) -> dict[str, Any]:
    """The Gate and its attempt the page showed (the decision's form sends them), so that a
    decision made on one attempt never lands on another."""
    attempt = str(form.get("attempt", ""))
    return {
        "gate": str(form.get("gate", "")) or None,
        "attempt": int(attempt) if attempt.isdigit() else None,
    }


def receipt(run: RunHandle, path: str) -> None:
    """A file to review at the Gate, served to the page, is read by the person: its receipt is
    recorded (``acks``). A run another process holds is served without one."""
    state = run.state
    if state.waiting != "gate" or not path.startswith("output/"):
        return
    if path.removeprefix("output/") not in writable_names(run.flow, state):
        return
    try:
        acting.read(run.flow, path, run.id, actor="person", limit=0)
    except (Busy, Refused):
        return  # the file is served as it is (or refused); a person decides without receipts
