"""The reviewer UI's actions: the forms a page posts (``/begin``, ``/save``, ``/approve``,
``/reject``, ``/rerun``, ``/cancel``, ``/advance``, ``/approval``), each a call of
``praxis.service``. Every form carries the CSRF token and the revision the page showed; the
service refuses a change when the run has moved on, and the run's page is shown again saying
so in plain words (with the person's unsaved drafts kept). Each action is traced
(``tracing``) as it starts and with its outcome.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from praxis.errors import PraxisError, Refused
from praxis.flows.model import forms
from praxis.service import acting
from sandbox.errors import PathRefused

from . import catalog, drafts, refusals, tables
from .refusals import RequestRefused, TokenRefused
from .tracing import code_of, traced

if TYPE_CHECKING:
    from .app import UI

MAX_FORM_FIELDS = 100_000


class Actions:
    """The form posts of one UI (``ui`` gives the root, the guard, the advancer and the
    pages a refusal shows again)."""

    def __init__(self, ui: UI) -> None:
        self.ui = ui

    async def form(self, request: Request) -> tuple[Any, str, str, int | None]:
        form = await request.form(max_fields=MAX_FORM_FIELDS)
        sid = request.cookies.get(self.ui.guard.cookie)
        if not self.ui.guard.csrf_ok(sid, str(form.get("csrf", ""))):
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
            await run_in_threadpool(catalog.open_run, self.ui.root, ref, run_id)
            verb = request.url.path.strip("/")
            await run_in_threadpool(traced, self.ui.root, ref, run_id, verb, form, None)
            try:
                notice = await run_in_threadpool(action, form, ref, run_id, expect)
            except (PraxisError, PathRefused) as exc:
                await run_in_threadpool(traced, self.ui.root, ref, run_id, verb, form, code_of(exc))
                raise
            await run_in_threadpool(traced, self.ui.root, ref, run_id, verb, form, 0)
        except catalog.NotFound as exc:
            return self.ui.render(request, "error.html", 404, message=str(exc))
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
                self.ui.show_run,
                request,
                ref,
                run_id,
                refusal=message,
                status=status,
                drafts=drafts,
            )
        except catalog.NotFound:
            return self.ui.render(request, "error.html", status, message=message)

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
            return self.ui.render(request, "error.html", 404, message=str(exc))
        except PraxisError as exc:
            message, status = refusals.sentence(exc, None), refusals.status_of(exc)
            return await run_in_threadpool(self.ui.show_index, request, message, status)
        query = urlencode({"flow": ref, "run": run_id, "notice": "begun"})
        return RedirectResponse(f"/run?{query}", status_code=303)

    def begin_run(self, ref: str, params: dict[str, str]) -> str:
        flow = catalog.load_flow(self.ui.root, ref)
        shown = {k: str(v) for k, v in flow.params.items()}
        given = {k: v for k, v in params.items() if v and v != shown.get(k)}
        run = acting.begin(flow, params=given)
        self.ui.advancer.start(flow.root, run.id)
        return run.id

    def flow_of(self, ref: str) -> Path:
        return catalog.flow_folder(self.ui.root, ref)

    def continue_run(self, ref: str, run_id: str) -> None:
        self.ui.advancer.start(self.flow_of(ref), run_id)

    async def save(self, request: Request) -> Response:
        def do(form: Any, ref: str, run_id: str, expect: int | None) -> str:
            name = str(form.get("name", ""))
            run = catalog.open_run(self.ui.root, ref, run_id)
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
                flow = catalog.open_run(self.ui.root, ref, run_id).flow
                gate = seen_gate(form)["gate"]
                if gate in [p.id for p in flow.phases]:
                    forms.answers(flow.phase(gate).form, values, gate)
            unsaved = drafts.parse(form)
            if unsaved:
                run = catalog.open_run(self.ui.root, ref, run_id)
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
            run = catalog.open_run(self.ui.root, ref, run_id)
            if expect is not None and expect != run.state.revision:
                raise Refused("stale", revision=run.state.revision)
            self.continue_run(ref, run_id)
            return "advancing"

        return await self.act(request, do)

    async def approval(self, request: Request) -> Response:
        def do(form: Any, ref: str, run_id: str, expect: int | None) -> str:
            yes = str(form.get("answer", "")) == "approve"
            self.ui.advancer.answer(self.flow_of(ref), run_id, str(form.get("request", "")), yes)
            return "answered"

        return await self.act(request, do)


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
