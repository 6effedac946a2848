"""`praxis mcp`: the route's verbs as tools of a Model Context Protocol server over stdio
(the official ``mcp`` SDK's ``MCPServer``).

Its client is always an agent (``agent_of_environment``: PRAXIS_TOKEN names which), under
the rules of ``praxis.service.authority`` (a delegatable Gate, a person's grant, passing checks,
a receipt of each file of ``route.read``: ``read_file`` returns it). Flows are named by their
folder relative to ``--root`` (``flows/sales-report``); nothing outside it is reachable, and a
run file is read only when the run's route names it, bounded and escaped. A refusal is a tool
error whose text starts with its code (``refused``, ``busy``, ``usage``, ...: the CLI's exit
codes by name). Each tool is a thin call of the function the CLI calls (``praxis.service``);
``status`` adds ``calls``, the route's commands as the tool calls that take them (built by
``praxis.command_line`` from the same typed commands as the route's argv: never parsed back).
Long calls (advance, and approve and reject, which advance) report progress per phase.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, cast

import anyio
import anyio.from_thread
import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from starlette.responses import PlainTextResponse
from starlette.types import Receive, Scope, Send

from sandbox.errors import PathRefused

from .argv import program_argv
from .console import format_event
from .errors import EXIT, PraxisError, UsageError, exit_code_of
from .flows.model.events import Event, PhaseDone, PhaseFailed, PhaseReused, PhaseStarted
from .flows.report import trace
from .flows.report.status import status_of
from .flows.store.handle import RunHandle
from .flows.store.layout import list_run_ids
from .service import acting, authority
from .service.accounts import Accounts, BadToken
from .service.principals import Principal, resolve
from .terminal import escape
from .web import catalog

MAX_READ = 64 << 10  # characters of a run file a tool returns
MAX_LOG = 500  # events the log tool returns
CODES = {code: name for name, code in EXIT.items()}


def serve(root: Path) -> int:
    """Serve the flows below ``root`` on stdin/stdout until the client closes them."""
    base = root.resolve()
    if not base.is_dir():
        raise UsageError(f"--root {root} is not a folder")
    os.chdir(base)  # flows, runs and the route's paths are named relative to the root
    server(base).run("stdio")
    return EXIT["ok"]


CALLER: ContextVar[Principal | None] = ContextVar("praxis_mcp_caller", default=None)
MAX_AUTHORIZATION = 300  # bytes of an Authorization header read


def agent_of_environment() -> Principal:
    """The stdio server's client: always an agent, the one whose token is PRAXIS_TOKEN (a
    person's token acts as an agent here), else an agent of no account."""
    return resolve(terminal=False, narrow="agent")


def server(root: Path, principal: Principal | None = None) -> MCPServer:
    """The MCP server over the flows below ``root``, its client ``principal`` (an agent;
    default: ``agent_of_environment``)."""
    app: MCPServer = MCPServer(
        "praxis",
        instructions=(
            "Operate praxis runs by their route: call status, take route.step with the tool "
            "in status.calls[0], call status again. Stop when route.who is 'person' or the "
            "step is 'none'. Read each file of route.read (read_file) before approve or "
            "reject, and pass the receipts read_file returned in receipts."
        ),
    )
    tools = Tools(root, agent_of_environment() if principal is None else principal.as_agent())
    for fn in (
        tools.flows,
        tools.runs,
        tools.status,
        tools.advance,
        tools.approve,
        tools.reject,
        tools.rerun,
        tools.cancel,
        tools.read_file,
        tools.log,
    ):
        app.add_tool(fn)
    return app


class Tools:
    """The tools, bound to the root. Each docstring is the tool's description."""

    def __init__(self, root: Path, principal: Principal) -> None:
        self.root = root
        self._principal = principal

    @property
    def caller(self) -> Principal:
        """This call's agent: over HTTP, the one its bearer token names; else the server's."""
        return CALLER.get() or self._principal

    def flows(self) -> list[dict[str, Any]]:
        """The flows below the root: folder (the `flow` argument of every tool), name,
        description, a problem if flow.yaml does not load, and runs (newest first)."""
        return [
            {
                "flow": row.ref,
                "name": row.name,
                "description": row.description,
                "problem": row.problem,
                "runs": [_run_row(r) for r in row.runs],
            }
            for row in catalog.flow_rows(self.root)
        ]

    def runs(self, flow: str) -> list[dict[str, Any]]:
        """The runs of a flow, newest first: id, status, and the Gate it waits at."""
        try:
            folder = catalog.flow_folder(self.root, _ref(flow))
        except PraxisError as exc:
            raise _error(exc) from None
        return [_run_row(catalog.run_row(folder, rid)) for rid in reversed(list_run_ids(folder))]

    def status(self, flow: str, run: str | None = None) -> dict[str, Any]:
        """A run's state, its route (step, reason, who, read, commands, problems), its
        receipt, and `calls`: the route's commands as the tool calls that take them."""
        return self._call("status", flow, run, {}, lambda handle: None)

    async def advance(
        self, flow: str, ctx: Context, run: str | None = None, expect_revision: int | None = None
    ) -> dict[str, Any]:
        """Run the run's phases until a Gate, a failure or the end (progress per phase),
        refused when the run is no longer at `expect_revision`; returns its status."""
        args = {"flow": flow, "run": run, "expect_revision": expect_revision}
        handle = self._open(flow, run, "advance")
        _traced(handle, "advance", args, None, self.caller)
        await self._advance(handle, ctx, args, expect_revision)
        return self._result("advance", handle, args)

    async def approve(
        self,
        flow: str,
        gate: str,
        expect_revision: int,
        ctx: Context,
        run: str | None = None,
        attempt: int | None = None,
        receipts: list[str] | None = None,
        values: dict[str, str | int | float | bool] | None = None,
    ) -> dict[str, Any]:
        """Approve attempt `attempt` of the Gate after phase `gate`, as an agent, bound to
        `expect_revision`; `receipts`: the receipt read_file gave for each file of route.read;
        `values`: the Gate's form answered, by field (route.gate.form lists the fields).
        Then advance; returns the status."""
        args = {"flow": flow, "run": run, "gate": gate, "attempt": attempt,
                "expect_revision": expect_revision, "values": values}  # fmt: skip
        handle = self._open(flow, run, "approve")
        self._do("approve", handle, args | {"receipts": receipts}, lambda: acting.approve(
            handle.flow, handle.id, expect_revision=expect_revision, gate=gate,
            attempt=attempt, principal=self.caller, receipts=list(receipts or []),
            values=values,
        ))  # fmt: skip
        await self._advance(handle, ctx, args)
        return self._result("approve", handle, args)

    async def reject(
        self,
        flow: str,
        gate: str,
        reopen: str,
        note: str,
        expect_revision: int,
        ctx: Context,
        run: str | None = None,
        attempt: int | None = None,
        receipts: list[str] | None = None,
        edits: str | None = None,
    ) -> dict[str, Any]:
        """Reject at attempt `attempt` of the Gate after phase `gate`, as an agent: phase
        `reopen` runs again with `note`. Bound and with receipts like approve; `edits`
        ("keep" or "discard") when the reopen replaces outputs edited at a Gate. Then
        advance; returns the status."""
        args = {"flow": flow, "run": run, "gate": gate, "attempt": attempt, "reopen": reopen,
                "note": note}  # fmt: skip
        handle = self._open(flow, run, "reject")
        self._do("reject", handle, args | {"receipts": receipts}, lambda: acting.reject(
            handle.flow, reopen, note, handle.id, expect_revision=expect_revision, gate=gate,
            attempt=attempt, principal=self.caller, receipts=list(receipts or []),
            edits=edits,
        ))  # fmt: skip
        await self._advance(handle, ctx, args)
        return self._result("reject", handle, args)

    def rerun(
        self,
        flow: str,
        from_phase: str,
        expect_revision: int,
        run: str | None = None,
        edits: str | None = None,
        partition: str | None = None,
    ) -> dict[str, Any]:
        """Put a failed, cancelled or done run back at phase `from_phase` (later phases
        become stale); advance runs it. `edits` ("keep" or "discard") when it would replace
        outputs edited at a Gate; `partition`: of a fan-out, only that one runs again.
        Returns the status."""
        args = {"flow": flow, "run": run, "from_phase": from_phase}
        return self._call("rerun", flow, run, args, lambda handle: acting.rerun(
            handle.flow, from_phase, handle.id, expect_revision=expect_revision, edits=edits,
            partition=partition,
            principal=self.caller,
        ))  # fmt: skip

    def cancel(self, flow: str, expect_revision: int, run: str | None = None) -> dict[str, Any]:
        """Cancel a run (a running phase is stopped). Returns the status."""
        return self._call("cancel", flow, run, {"flow": flow, "run": run}, lambda handle: (
            acting.cancel(
                handle.flow, handle.id, expect_revision=expect_revision, principal=self.caller
            )
        ))  # fmt: skip

    def read_file(self, flow: str, path: str, run: str | None = None) -> dict[str, Any]:
        """A file the run's route names (route.read): its text (at most 64 KiB, control
        characters escaped), and `receipt`, recorded for you: approve and reject pass it in
        `receipts`. Any other path is refused."""
        handle = self._open(flow, run, "read_file")
        named = [item["path"] for item in status_of(handle).route.get("read", [])]
        if path not in named:
            raise ToolError(
                f"refused: {path!r} is not a file the route of run {handle.id} names "
                f"(route.read: {', '.join(named) or 'none'})"
            )
        return _read_bounded(handle, path, self.caller)

    def log(self, flow: str, run: str | None = None, last: int = 100) -> list[str]:
        """The run's last `last` events (at most 500), one line each, escaped."""
        handle = self._open(flow, run, "log")
        events = handle.log.read()[-max(1, min(last, MAX_LOG)) :]
        return [format_event(e) for e in events]

    # -- the plumbing every tool shares ---------------------------------------------------

    def _open(self, flow: str, run: str | None, tool: str) -> RunHandle:
        try:
            loaded = catalog.load_flow(self.root, _ref(flow))
            return RunHandle.open(loaded, run)
        except PraxisError as exc:
            raise _error(exc) from None

    def _call(
        self, tool: str, flow: str, run: str | None, args: dict[str, Any], act: Callable[..., Any]
    ) -> dict[str, Any]:
        handle = self._open(flow, run, tool)
        self._do(tool, handle, args, lambda: act(handle))
        return self._result(tool, handle, args)

    def _do(
        self, tool: str, handle: RunHandle, args: dict[str, Any], act: Callable[[], Any]
    ) -> None:
        _traced(handle, tool, args, None, self.caller)  # as it starts
        try:
            act()
        except PraxisError as exc:
            _traced(handle, tool, args, exit_code_of(exc), self.caller)
            raise _error(exc) from None

    def _result(self, tool: str, handle: RunHandle, args: dict[str, Any]) -> dict[str, Any]:
        now = RunHandle.open(handle.flow, handle.id)
        st = status_of(now, authority.standing(self.caller, now))  # the agent's own route
        code = EXIT["failed"] if st.status == "failed" and tool != "status" else EXIT["ok"]
        _traced(now, tool, args, code, self.caller)
        data = st.to_dict()
        data["calls"] = [c.tool_call() for c in st.steps]  # None: a person's (no tool)
        return data

    async def _advance(
        self,
        handle: RunHandle,
        ctx: Context,
        args: dict[str, Any],
        expect_revision: int | None = None,
    ) -> None:
        total = len(handle.flow.phases)
        done = [sum(1 for p in handle.state.phases if p.status == "done")]

        def on_event(ev: Event) -> None:
            if isinstance(ev, PhaseDone | PhaseReused):
                done[0] += 1
            if isinstance(ev, PhaseStarted | PhaseDone | PhaseReused | PhaseFailed):
                message = f"{ev.phase}: {ev.kind.removeprefix('phase_')}"
                anyio.from_thread.run(ctx.report_progress, done[0], total, message)

        caller = self.caller

        def go() -> None:
            acting.advance(
                handle.flow, handle.id, on_event=on_event, expect_revision=expect_revision,
                principal=caller,
            )  # fmt: skip

        try:
            await anyio.to_thread.run_sync(go)
        except PraxisError as exc:
            _traced(handle, "advance", args, exit_code_of(exc), self.caller)
            raise _error(exc) from None
        except Exception as exc:  # the sandbox's SandboxUnavailable: not a bug of ours
            if type(exc).__name__ not in ("SandboxUnavailable", "PackagesUnavailable"):
                raise
            raise ToolError(f"unavailable: {type(exc).__name__}: {escape(str(exc))}") from None


class BearerAgents:
    """The MCP server over streamable HTTP (``praxis serve``'s ``/mcp``): each request's
    caller is the agent whose token ``Authorization: Bearer`` carries (a person's token acts
    as an agent here too); a request without a live token is refused, 401, before the SDK
    sees it. Stateless: every request is authenticated, none rides on another's session."""

    def __init__(self, root: Path, accounts: Accounts | None = None) -> None:
        self.accounts = accounts
        nobody = Principal("agent", "unnamed", (), "none")  # never used: CALLER is set
        mcp = server(root, principal=nobody)
        self.inner = mcp.streamable_http_app(
            streamable_http_path="/mcp", stateless_http=True, json_response=True
        )

    def lifespan(self, app: object) -> AbstractAsyncContextManager[None]:
        """The SDK's session manager, run for as long as the server that mounts this."""
        made = self.inner.router.lifespan_context(self.inner)
        return cast("AbstractAsyncContextManager[None]", made)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        raw = dict(scope.get("headers") or []).get(b"authorization", b"")[:MAX_AUTHORIZATION]
        word, _, token = raw.decode("latin-1").partition(" ")
        try:
            if word.lower() != "bearer" or not token.strip():
                raise BadToken("Authorization: Bearer <an agent's token> is required")
            found = (self.accounts or Accounts()).authenticate(token.strip())
        except BadToken as exc:
            response = PlainTextResponse(
                f"praxis: refused: {escape(str(exc))} (praxis agents add NAME prints one)\n",
                status_code=401,
                headers={"WWW-Authenticate": "Bearer"},
            )
            await response(scope, receive, send)
            return
        reset = CALLER.set(Principal(found.kind, found.name, (), "mcp").as_agent())
        try:
            await self.inner(scope, receive, send)
        finally:
            CALLER.reset(reset)


def _run_row(row: catalog.RunRow) -> dict[str, Any]:
    state = row.state
    if state is None:
        return {"run": row.id, "status": "unreadable", "problem": row.error}
    gate = state.gate if state.waiting == "gate" else None
    return {"run": row.id, "status": state.status, "gate": gate, "revision": state.revision}


def _ref(flow: str) -> str:
    return flow.strip().rstrip("/").removeprefix("./") or "."


def _error(exc: PraxisError) -> ToolError:
    code = CODES.get(exit_code_of(exc), "failed")
    return ToolError(f"{code}: {type(exc).__name__}: {escape(str(exc))}")


def _traced(
    handle: RunHandle, tool: str, args: dict[str, Any], code: int | None, who: Principal
) -> None:
    """Trace the tool call as the command line's are: as it starts (``code`` None) and as it
    ends, with its exit code."""
    if not trace.enabled():
        return
    shown = {k: v for k, v in args.items() if v is not None}
    try:
        fresh = RunHandle.open(handle.flow, handle.id)
        argv = [*program_argv(), "mcp", tool, json.dumps(shown, sort_keys=True)]
        if code is None:
            trace.start(fresh, argv, who.label)
        else:
            trace.record(fresh, argv, who.label, code, authority.standing(who, fresh))
    except Exception:  # a trace that cannot be written never changes the outcome
        return


def _read_bounded(handle: RunHandle, path: str, who: Principal) -> dict[str, Any]:
    """The first MAX_READ characters of the run file ``path`` (relative to the root), never
    through a link, with the receipt of reading it recorded for the agent."""
    run_root = Path(os.path.abspath(handle.root))
    rel = os.path.relpath(os.path.abspath(Path.cwd() / path), run_root)
    try:
        if rel == "." or rel.startswith(".."):
            raise PathRefused(path, "is not a file of the run")
        got = acting.read(handle.flow, Path(rel).as_posix(), handle.id, principal=who,
                          limit=MAX_READ * 4 + 1)  # fmt: skip
    except (PathRefused, OSError) as exc:
        raise ToolError(f"refused: {path}: {escape(str(exc))}") from None
    except PraxisError as exc:
        raise _error(exc) from None
    binary = b"\0" in got.head[:8192]
    text = "" if binary else got.head.decode("utf-8", errors="replace")
    truncated = binary or len(text) > MAX_READ or len(got.head) < got.size
    return {
        "path": path,
        "receipt": got.receipt,
        "bytes": got.size,
        "binary": binary,
        "truncated": truncated,
        "text": escape(text[:MAX_READ]),
    }
