"""The reviewer web UI: ``praxis serve`` (Starlette, server-rendered pages, plain forms).

Pages: the flows below the root and their runs; a run (timeline, events, records, files);
at a Gate, the writable artifacts as tables or text to edit, and the approve / reject /
re-run / cancel forms. What those forms post is done in ``actions`` (each a call of
``praxis.service``); the read-only views of a run's files in ``reading``; the chat in
``chat_routes``. Here: the app and its routes, the pages, and ``serve``.
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
from praxis.errors import RecordCorrupt, Refused
from praxis.flows.engine.notify import Notifier
from praxis.flows.engine.reconcile import reconcile_if_free
from praxis.flows.model import retry_policy
from praxis.flows.report import keeping
from praxis.flows.store.handle import NoRun, RunHandle
from praxis.flows.store.layout import writable_names
from praxis.flows.store.lock import Busy
from praxis.service import acting, keeper
from praxis.service.accounts import MAX_PASSWORD, Accounts
from praxis.service.authority import flow_key, may_decide, who_may
from praxis.service.principals import CURRENT, Principal

from . import catalog, columnar, highlight, refusals, render, tables, views
from .actions import Actions
from .background import MAX_RUNS, Advancer
from .chat_routes import ChatPanel
from .files import file_response
from .keeping import KeeperLoop
from .reading import Reader, rendered
from .security import Guard, GuardMiddleware, McpApp, McpDoor, host_names, set_session

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


def create_app(
    root: Path,
    *,
    guard: Guard | None = None,
    advancer: Advancer | None = None,
    allowed_hosts: set[str] | None = None,
    mcp: McpApp | None = None,
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
    actions = Actions(ui)
    routes = [
        *chat.routes(),
        Route("/", ui.index),
        Route("/login", ui.login_page),
        Route("/audit", ui.audit),
        Route("/login", ui.login, methods=["POST"]),
        Route("/runs/state", ui.runs_state),
        Route("/begin", actions.begin, methods=["POST"]),
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
        Route("/save", actions.save, methods=["POST"]),
        Route("/approve", actions.approve, methods=["POST"]),
        Route("/reject", actions.reject, methods=["POST"]),
        Route("/rerun", actions.rerun, methods=["POST"]),
        Route("/cancel", actions.cancel, methods=["POST"]),
        Route("/advance", actions.advance, methods=["POST"]),
        Route("/approval", actions.approval, methods=["POST"]),
        Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
    ]
    app = Starlette(routes=routes, lifespan=mcp.lifespan if mcp is not None else None)
    app.add_middleware(GuardMiddleware, guard=guard)
    if mcp is not None:  # /mcp: its bearer tokens, not the page's session, say who calls
        app.add_middleware(McpDoor, mcp=mcp)
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
        ctx.setdefault("who", CURRENT.get())
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
            mine=waiting_for(CURRENT.get(), self.root, flows),
            root=self.root,
            here=self.here,
            refusal=refusal,
            advancing=advancing,
            queued=queued,
            max_runs=self.advancer.max_runs,
        )

    def login_page(
        self, request: Request, refusal: str | None = None, status: int = 200
    ) -> Response:
        """The sign-in form: a person's name and password (``praxis users password NAME``)."""
        return self.render(request, "login.html", status, refusal=refusal)

    async def login(self, request: Request) -> Response:
        """Sign a person in: a new session of theirs (the old one, if any, ends)."""
        form = await request.form(max_fields=4, max_files=0)
        name = str(form.get("name", ""))[:64].strip()
        password = str(form.get("password", ""))[: MAX_PASSWORD + 1]
        found = await run_in_threadpool(Accounts().login, name, password)
        if found is None:
            return self.login_page(
                request, "Not signed in: that name and password do not match.", 403
            )
        self.guard.end_session(request.cookies.get(self.guard.cookie))
        response = RedirectResponse("/", status_code=303)
        who = Principal("person", found.name, found.roles, "login")
        set_session(response, self.guard, self.guard.new_session(who))
        return response

    def audit(self, request: Request) -> Response:
        """Every decision, grant and refusal on a flow's runs: who, when, what revision."""
        ref = request.query_params.get("flow", "")
        try:
            flow = catalog.load_flow(self.root, ref)
        except catalog.NotFound as exc:
            return self.render(request, "error.html", 404, message=str(exc))
        entries = Accounts().audit(flow_key(flow))
        return self.render(request, "audit.html", ref=ref, flow_name=flow.name, entries=entries)

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
            part = q.get("partition")
            if part is not None and part not in run.state.phase(phase).partitions:
                raise catalog.NotFound(f"phase {phase} has no partition {part!r}")
            path = (
                run.paths.record(phase) if part is None else run.paths.partition_record(phase, part)
            )
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
            partition=part,
            path=str(path.relative_to(run.root)),
            nb=rendered(run, q.get("flow", ""), str(path.relative_to(run.root)), path),
        )

    def file(self, request: Request) -> Response:
        q = request.query_params
        try:
            run = catalog.open_run(self.root, q.get("flow", ""), q.get("run", ""))
        except catalog.NotFound as exc:
            return self.render(request, "error.html", 404, message=str(exc))
        receipt(run, q.get("path", ""))
        return file_response(run.root, q.get("path", ""))


def waiting_for(
    who: Principal | None, root: Path, flows: list[catalog.FlowRow]
) -> list[dict[str, str]]:
    """The runs waiting at a Gate ``who`` may decide: flow, run, gate, and who may."""
    if who is None:
        return []
    accounts, found = Accounts(), []
    for f in flows:
        waiting = [r for r in f.runs if r.state is not None and r.state.waiting == "gate"]
        if f.problem or not waiting:
            continue
        flow = catalog.load_flow(root, f.ref)
        for r in waiting:
            gate = str(r.state.gate) if r.state is not None else ""
            if may_decide(who, flow, gate, r.id, accounts):
                found.append({"flow": f.ref, "name": f.name, "run": r.id, "gate": gate,
                              "may": who_may(who, flow, gate)})  # fmt: skip
    return found


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
    mcp: McpApp | None = None,
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
    app = create_app(root, guard=guard, advancer=advancer, allowed_hosts=hosts, mcp=mcp)
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


def receipt(run: RunHandle, path: str) -> None:
    """A file to review at the Gate, served to the page, is read by the person: its receipt is
    recorded (``acks``). A run another process holds is served without one."""
    state = run.state
    if state.waiting != "gate" or not path.startswith("output/"):
        return
    if path.removeprefix("output/") not in writable_names(run.flow, state):
        return
    try:
        acting.read(run.flow, path, run.id, limit=0)  # the page's caller reads it
    except (Busy, Refused):
        return  # the file is served as it is (or refused); a person decides without receipts
