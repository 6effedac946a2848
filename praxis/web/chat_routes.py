"""The flow chat in the reviewer UI: ``/chat?flow=REF`` shows a chat session with the model
(the same ``praxis.chat`` code as ``praxis chat``), ``POST /chat/send`` sends one message,
``POST /chat/undo`` undoes the last write. Forms carry the CSRF token like every other POST.

Nobody can approve ``run_python`` code from here yet: the model is told so and can use
``try_phase`` instead. One message at a time per flow; a second one is refused until the
first is answered.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from sandbox import close_thread_loop

from . import catalog

if TYPE_CHECKING:
    from .app import UI

MAX_MESSAGE_CHARS = 20_000
SHOWN_RESULT_CHARS = 1_500


@dataclass
class Item:
    """One line of the conversation as the page shows it."""

    kind: str  # you | model | call | result | diff | note
    text: str


class ChatPanel:
    """The chat routes of one UI (``ui`` gives the root, the guard and the renderer)."""

    def __init__(self, ui: UI) -> None:
        self.ui = ui
        self.model_factory: Callable[[Path], Any] = _default_model
        self.sandbox: Mapping[str, Any] | None = None  # laid over a flow's sandbox: section
        self._busy: dict[Path, threading.Lock] = {}
        self._guard_lock = threading.Lock()

    def routes(self) -> list[BaseRoute]:
        return [
            Route("/chat", self.page),
            Route("/chat/send", self.send, methods=["POST"]),
            Route("/chat/undo", self.undo, methods=["POST"]),
        ]

    # -- the page --------------------------------------------------------------------------

    async def page(self, request: Request) -> Response:
        q = request.query_params
        ref = q.get("flow", "")
        try:
            folder = catalog.flow_folder(self.ui.root, ref)
        except catalog.NotFound as exc:
            return self.ui.render(request, "error.html", 404, message=str(exc))
        return self.show(request, ref, folder, q.get("session", ""), refusal=None)

    def show(
        self, request: Request, ref: str, folder: Path, session: str, *, refusal: str | None,
        status: int = 200, draft: str = "",
    ) -> Response:  # fmt: skip
        from praxis.chat.transcript import SESSION, Transcript, TranscriptError, latest

        chat_dir = folder / ".chat"
        if session == "new":
            session = ""
        elif not SESSION.match(session):
            session = latest(chat_dir) or "" if chat_dir.is_dir() else ""
        items: list[Item] = []
        if session:
            try:
                items = conversation(Transcript(chat_dir, session).load())
            except TranscriptError as exc:
                refusal = refusal or str(exc)
        return self.ui.render(
            request,
            "chat.html",
            status,
            ref=ref,
            flow_name=folder.name,
            session=session,
            items=items,
            refusal=refusal,
            draft=draft,
        )

    # -- actions ---------------------------------------------------------------------------

    async def send(self, request: Request) -> Response:
        form, ref, session, folder, problem = await self._form(request)
        if problem is not None or folder is None:
            return problem or self.ui.render(request, "error.html", 404, message="no flow")
        text = str(form.get("message", "")).replace("\r\n", "\n").strip()
        if not text:
            return self.show(request, ref, folder, session, refusal="Write a message first.")
        if len(text) > MAX_MESSAGE_CHARS:
            return self.show(
                request, ref, folder, session, status=413, draft=text[:MAX_MESSAGE_CHARS],
                refusal=f"The message is over {MAX_MESSAGE_CHARS:,} characters; shorten it.",
            )  # fmt: skip
        lock = self._lock(folder)
        if not lock.acquire(blocking=False):
            return self.show(
                request, ref, folder, session, status=409, draft=text,
                refusal="The model is still answering the previous message; wait for it.",
            )  # fmt: skip
        try:
            session, error = await run_in_threadpool(self._turn, folder, session, text)
        finally:
            lock.release()
        if error:
            return self.show(request, ref, folder, session, refusal=error, status=409, draft=text)
        return self._back(ref, session)

    async def undo(self, request: Request) -> Response:
        form, ref, session, folder, problem = await self._form(request)
        if problem is not None or folder is None:
            return problem or self.ui.render(request, "error.html", 404, message="no flow")
        from praxis.chat.chat import undo_note
        from praxis.chat.transcript import SESSION, Transcript
        from praxis.chat.workfiles import WorkFiles

        if not SESSION.match(session):
            return self.show(request, ref, folder, "", refusal="No chat session to undo in.")
        lock = self._lock(folder)
        if not lock.acquire(blocking=False):
            return self.show(
                request, ref, folder, session, status=409,
                refusal="The model is answering a message; undo when it is done.",
            )  # fmt: skip
        try:
            write = WorkFiles(folder, session).undo()
            if write is None:
                return self.show(request, ref, folder, session, refusal="Nothing to undo.")
            Transcript(folder / ".chat", session).append(undo_note(write))
        finally:
            lock.release()
        return self._back(ref, session)

    # -- helpers ---------------------------------------------------------------------------

    def _turn(self, folder: Path, session: str, text: str) -> tuple[str, str | None]:
        """Run one message in a worker thread: (session, refusal message or None)."""
        from praxis.agent.model import ModelUnavailable
        from praxis.chat.authoring import WEB_NOBODY
        from praxis.chat.chat import ChatError, open_chat
        from praxis.chat.transcript import SESSION, TranscriptError

        try:
            model = self.model_factory(folder)
            chat = open_chat(
                folder,
                model=model,
                resume=session if SESSION.match(session) else False,
                approver=None,
                nobody=WEB_NOBODY,
                sandbox=self.sandbox,
            )
        except (ModelUnavailable, TranscriptError) as exc:
            return session, f"Not sent: {exc}"
        try:
            chat.send(text)
        except ChatError as exc:
            return chat.session, f"The model stopped: {exc}. The conversation so far is kept."
        finally:
            chat.close()
            close_thread_loop()  # try_phase's kernels left their client's loop on this thread
        return chat.session, None

    async def _form(self, request: Request) -> tuple[Any, str, str, Path | None, Response | None]:
        form = await request.form(max_fields=100)
        ref, session = str(form.get("flow", "")), str(form.get("session", ""))
        sid = request.cookies.get(self.ui.guard.cookie)
        if not self.ui.guard.csrf_ok(sid, str(form.get("csrf", ""))):
            msg = "the form's security token is missing or old: reload the page"
            return form, ref, session, None, self.ui.render(request, "error.html", 403, message=msg)
        try:
            folder = catalog.flow_folder(self.ui.root, ref)
        except catalog.NotFound as exc:
            return (
                form,
                ref,
                session,
                None,
                self.ui.render(request, "error.html", 404, message=str(exc)),
            )
        return form, ref, session, folder, None

    def _lock(self, folder: Path) -> threading.Lock:
        with self._guard_lock:
            return self._busy.setdefault(folder, threading.Lock())

    @staticmethod
    def _back(ref: str, session: str) -> Response:
        return RedirectResponse(f"/chat?{urlencode({'flow': ref, 'session': session})}", 303)


def _default_model(folder: Path) -> Any:
    from praxis.chat.chat import resolve_chat_model

    return resolve_chat_model(folder)


def conversation(messages: list[Any]) -> list[Item]:
    """The transcript as the page shows it: your messages, the model's, its tool calls."""
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    from praxis.chat.chat import NOTE, tool_summary
    from praxis.llm.loop import message_text

    items: list[Item] = []
    for m in messages:
        if isinstance(m, HumanMessage):
            text = message_text(m)
            if text.startswith(NOTE):
                items.append(Item("note", text[len(NOTE) :]))
            else:
                items.append(Item("you", text.split(f"\n\n{NOTE}", 1)[0]))
        elif isinstance(m, AIMessage):
            if message_text(m).strip():
                items.append(Item("model", message_text(m)))
            for call in m.tool_calls:
                items.append(Item("call", tool_summary(call["name"], call.get("args") or {})))
        elif isinstance(m, ToolMessage):
            artifact = m.artifact if isinstance(m.artifact, dict) else {}
            if artifact.get("diff"):
                items.append(Item("diff", str(artifact["diff"])))
            else:
                text = message_text(m)
                if len(text) > SHOWN_RESULT_CHARS:
                    text = text[:SHOWN_RESULT_CHARS] + "\n..."
                items.append(Item("result", text))
    return items
