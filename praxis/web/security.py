"""Who may talk to the reviewer UI: a start-up token, a session cookie, CSRF and origin checks.

Like Jupyter, the server prints a URL with ``?token=...``. The first request carrying the
token gets a session cookie (HttpOnly, SameSite=Strict) and is redirected to the same URL
without the token; every later request must carry that cookie. State-changing requests are
POSTs; each form carries a CSRF token derived from the session (HMAC), and a request whose
``Origin`` is another site or whose ``Sec-Fetch-Site`` says cross-site is refused before any
handler runs. The Host header must name a host the server listens on (DNS rebinding):
Starlette's ``TrustedHostMiddleware`` holds that, outside every other check.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Iterable
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol
from urllib.parse import urlencode, urlsplit

from starlette.datastructures import URL, MutableHeaders
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..service.principals import Principal, acting_as, resolve

SAFE_METHODS = {"GET", "HEAD"}
PUBLIC = ("/login",)  # what a browser with no session may ask for
SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",  # "no-referrer" makes Chromium send Origin: null
    "Cache-Control": "no-store",
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "frame-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; "
        "connect-src 'self'"
    ),
}

# The document an HTML output is shown in (``/output``, inside ``<iframe sandbox>``): its own
# styles apply (pandas' table styles), nothing runs, nothing loads, only this page frames it.
FRAME_HEADERS = {
    "Content-Security-Policy": (
        "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
        "form-action 'none'; base-uri 'none'; frame-ancestors 'self'"
    ),
    "X-Frame-Options": "SAMEORIGIN",
}


class Guard:
    """The server's secrets and its live sessions (in memory: a restart logs everyone out)."""

    def __init__(self, token: str | None = None, *, cookie: str = "praxis_session") -> None:
        self.token = token or secrets.token_urlsafe(32)
        self.cookie = cookie
        self._key = secrets.token_bytes(32)
        self._sessions: dict[str, Principal | None] = {}  # None: the server's own caller
        self._owner: Principal | None = None

    def token_ok(self, given: str | None) -> bool:
        return given is not None and hmac.compare_digest(given.encode(), self.token.encode())

    def new_session(self, who: Principal | None = None) -> str:
        """A session: of ``who`` (a person signed in), or of whoever started the server
        (the start-up token's)."""
        sid = secrets.token_urlsafe(32)
        self._sessions[sid] = who
        return sid

    def end_session(self, sid: str | None) -> None:
        self._sessions.pop(sid or "", None)

    def who(self, sid: str | None) -> Principal:
        """The caller of a request with this session: its signed-in person, else whoever
        started the server (``resolve``, once: the OS user at its terminal, or its token)."""
        found = self._sessions.get(sid or "")
        if found is not None:
            return found
        if self._owner is None:
            self._owner = resolve()
        return self._owner

    def session_ok(self, sid: str | None) -> bool:
        return sid is not None and sid in self._sessions

    def csrf_for(self, sid: str) -> str:
        return hmac.new(self._key, f"csrf:{sid}".encode(), hashlib.sha256).hexdigest()

    def csrf_ok(self, sid: str | None, given: str | None) -> bool:
        if not sid or not given:
            return False
        return hmac.compare_digest(self.csrf_for(sid), given)


def refuse(status: int, message: str) -> Response:
    return PlainTextResponse(message + "\n", status_code=status, headers=SECURITY_HEADERS)


def cross_site(request: Request) -> str | None:
    """Why a state-changing request looks cross-site, or None when it comes from this page."""
    fetch_site = request.headers.get("sec-fetch-site")
    if fetch_site is not None and fetch_site not in ("same-origin", "none"):
        return f"Sec-Fetch-Site is {fetch_site}"
    origin = request.headers.get("origin")
    if origin is not None:
        own = f"{request.url.scheme}://{request.headers.get('host', '')}"
        if origin != own:
            return f"Origin {origin} is not {own}"
    return None


class McpApp(Protocol):
    """An ASGI app that authenticates each request itself (``praxis.mcp_server.BearerAgents``)
    and a lifespan to run beside the server's."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None: ...

    def lifespan(self, app: Any) -> AbstractAsyncContextManager[None]: ...


class McpDoor:
    """Sends ``/mcp`` to the MCP app (bearer tokens), everything else on to the page's guard."""

    def __init__(self, app: ASGIApp, mcp: McpApp) -> None:
        self.app = app
        self.mcp = mcp

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if path == "/mcp" or path.startswith("/mcp/"):
            await self.mcp(scope, receive, send)
            return
        await self.app(scope, receive, send)


class GuardMiddleware:
    """Refuses requests without a session (or the start-up token), and cross-site POSTs."""

    def __init__(self, app: ASGIApp, guard: Guard) -> None:
        self.app = app
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        response = self.check(request)
        if response is not None:
            await response(scope, receive, send)
            return
        sid = request.cookies.get(self.guard.cookie)
        public = request.url.path in PUBLIC and not self.guard.session_ok(sid)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers.setdefault(name, value)
            await send(message)

        with acting_as(None if public else self.guard.who(sid)):
            await self.app(scope, receive, send_with_headers)

    def check(self, request: Request) -> Response | None:
        sid = request.cookies.get(self.guard.cookie)
        if not self.guard.session_ok(sid) and request.url.path in PUBLIC:
            why = cross_site(request) if request.method not in SAFE_METHODS else None
            return refuse(403, f"praxis: refused a cross-site request ({why})") if why else None
        if not self.guard.session_ok(sid):
            if self.guard.token_ok(request.query_params.get("token")):
                if request.method not in SAFE_METHODS:
                    return refuse(403, "praxis: refused: open the page first, then submit")
                return self._login(request)
            return refuse(
                403,
                "praxis: refused: no valid token. Open the URL with ?token=... that "
                "`praxis serve` printed when it started.",
            )
        if request.method not in SAFE_METHODS:
            why = cross_site(request)
            if why:
                return refuse(403, f"praxis: refused a cross-site request ({why})")
        return None

    def _login(self, request: Request) -> Response:
        query = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
        target = URL(path=request.url.path, query=urlencode(query))
        response = RedirectResponse(str(target), status_code=303)
        set_session(response, self.guard, self.guard.new_session())
        return response


def set_session(response: Response, guard: Guard, sid: str) -> None:
    """The session cookie: HttpOnly, SameSite=Strict."""
    response.set_cookie(guard.cookie, sid, httponly=True, samesite="strict", path="/")


def host_names(hosts: Iterable[str]) -> list[str]:
    """The host names of ``hosts`` (``name``, ``name:port``, ``[::1]:port``), as
    ``TrustedHostMiddleware`` compares them: without their port."""
    names = []
    for host in hosts:
        name = urlsplit(f"//{host}").hostname
        if not name:
            raise ValueError(f"not a host: {host!r}")
        names.append(name)
    return sorted(set(names))
