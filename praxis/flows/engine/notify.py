"""Telling a person that a run needs them: when ``run`` or ``advance`` leaves a run waiting
at a Gate, failed, or done.

```yaml
notify: {to: [team], when: [gate, failed, done]}    # flow.yaml: targets, by name
```

The targets are the person's, in their profile (``definition.profile``):
``notify: {team: {webhook: https://…, command: [...], include_error: false}}``. A webhook
(``http``/``https`` only, ``${VAR}`` expanded from the environment) gets a JSON POST; a
command (an argv, run without a shell) reads the same JSON on its stdin. The person may also
set one command of their own for every flow, ``$PRAXIS_NOTIFY_COMMAND`` or ``praxis serve
--notify-command`` (split like a shell line, run without one).

The body is a fixed schema, nothing else: ``flow``, ``run``, ``event`` (``gate``, ``failed``,
``done``, or ``deadline``: a Gate waited past it), ``status``, ``phase`` (the phase the Gate
follows, or the failed phase) and ``url``, the run's page (``praxis serve``'s address, or
``$PRAXIS_URL``; never its token).
No host path and no text a phase wrote: only a target whose entry says
``include_error: true`` also gets ``error``, the run's error cut to ``ERROR_CHARS`` with its
control characters escaped. Redirects are not followed; a webhook gives up after
``TIMEOUT`` seconds, a command after ``COMMAND_TIMEOUT``. A notifier that fails, or a target
the profile no longer has, is logged and recorded (``notify_failed``, naming the fix); it
never fails the run.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shlex
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode, urlsplit

from ...errors import UsageError
from ..definition import notify_spec, profile
from ..definition.host_resources import EXAMPLES
from ..model.events import GateEscalated, Notified, NotifyFailed

if TYPE_CHECKING:
    from ..model.events import Event

log = logging.getLogger(__name__)

TIMEOUT = 5.0  # seconds, the webhook's
COMMAND_TIMEOUT = 30.0
ERROR_CHARS = 500  # of a run's error, for a target that says include_error
# C0 and C1 control characters but newline and tab, shown as \xNN (as ``praxis.terminal``
# shows them, which this floor may not import): no escape sequence reaches a chat or a terminal
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")

Call = Callable[[bytes], None]


@dataclass(frozen=True)
class Notifier:
    """The person's part: their own command (``()``: none), the address of the run pages
    (None: the body's ``url`` is null), the folder they serve (flows are named below it),
    and the environment the profile and its ``${VAR}`` are read from (None: praxis's)."""

    command: tuple[str, ...] = ()
    base_url: str | None = None
    root: Path | None = None
    environ: Any = None

    @classmethod
    def from_env(
        cls, env: Any = os.environ, *, base_url: str | None = None, root: Path | None = None
    ) -> Notifier:
        line = str(env.get("PRAXIS_NOTIFY_COMMAND", "")).strip()
        command = tuple(shlex.split(line)) if line else ()
        return cls(command, base_url or env.get("PRAXIS_URL") or None, root, env)


def about(state: Any) -> str | None:
    """What there is to tell of a run in ``state``: gate, failed, done, or None."""
    if state.waiting == "gate":
        return "gate"
    if state.status in ("failed", "done"):
        return str(state.status)
    return None


def body(run: Any, what: str, notifier: Notifier, *, include_error: bool = False) -> dict[str, Any]:
    """The JSON a notifier gets: the fixed schema (the page's URL carries no token); the
    run's error, bounded and escaped, only when ``include_error``."""
    state = run.state
    url = None
    if notifier.base_url:
        query = urlencode({"flow": _ref(run.flow.root, notifier.root), "run": run.id})
        url = f"{notifier.base_url.rstrip('/')}/run?{query}"
    told: dict[str, Any] = {
        "flow": run.flow.name,
        "run": run.id,
        "event": what,
        "status": state.status,
        "phase": _phase(state, what),
        "url": url,
    }
    if include_error:
        told["error"] = bounded(state.error) if what == "failed" else None
    return told


def bounded(text: str | None) -> str | None:
    """A run's error for a target that asked for it: control characters escaped, then cut to
    ``ERROR_CHARS`` (an ellipsis says it was)."""
    if text is None:
        return None
    shown = escape(text)
    return shown if len(shown) <= ERROR_CHARS else shown[: ERROR_CHARS - 1] + "…"


def tell(run: Any, notifier: Notifier | None) -> None:
    """Call the run's notifiers about the state it is in now (if it is one to tell of);
    each failure is logged and recorded, never raised."""
    what = about(run.state)
    spec = run.flow.notify
    notifier = notifier or Notifier()
    if what is None or what not in spec.get("when", notify_spec.EVENTS):
        return
    calls = _targets(run, what, spec.get("to", ()), notifier.environ)
    if notifier.command:
        calls.append(("command", partial(_run, notifier.command), False))
    for target, call, include_error in calls:
        data = json.dumps(body(run, what, notifier, include_error=include_error)).encode()
        try:
            call(data)
        except Exception as exc:  # a notifier never fails the run
            _failed(run, target, what, f"{type(exc).__name__}: {exc}")
        else:
            _record(run, Notified(target=target, about=what))


def escalate(run: Any, names: tuple[str, ...], since: float, notifier: Notifier | None) -> None:
    """Tell ``names`` that the run's Gate waited past its deadline (body ``event``:
    ``deadline``). Recorded first (``gate_escalated``): told at most once, whatever happens."""
    notifier = notifier or Notifier()
    _record(run, GateEscalated(phase=str(run.state.gate), since=since, targets=list(names)))
    for target, call, include_error in _targets(run, "deadline", names, notifier.environ):
        data = json.dumps(body(run, "deadline", notifier, include_error=include_error)).encode()
        try:
            call(data)
        except Exception as exc:  # a notifier never fails the run
            _failed(run, target, "deadline", f"{type(exc).__name__}: {exc}")
        else:
            _record(run, Notified(target=target, about="deadline"))


def _targets(run: Any, what: str, names: Any, environ: Any) -> list[tuple[str, Call, bool]]:
    """The calls of the profile's targets ``names``; each that cannot be made (no profile
    entry, a ``${VAR}`` unset, not an http(s) URL) is recorded as notify_failed instead."""
    if not names:
        return []
    try:
        person = profile.load(environ)
    except UsageError as exc:
        for name in names:
            _failed(run, name, what, str(exc))
        return []
    calls: list[tuple[str, Call, bool]] = []
    for name in names:
        target = person.notify.get(name)
        if target is None:
            fix = profile.missing_entry("notify", name, person, EXAMPLES["notify"])
            _failed(run, name, what, fix)
            continue
        try:
            calls += _calls(target, environ)
        except (UsageError, ValueError) as exc:
            _failed(run, name, what, str(exc))
    return calls


def _calls(target: profile.Target, environ: Any) -> list[tuple[str, Call, bool]]:
    """A target's webhook and command, their ``${VAR}`` expanded (ProfileUnset if one is not
    set); ValueError for a webhook that is not an http(s) URL."""
    name, found = target.name, []
    if target.webhook:
        where = f"notify.{name}.webhook"
        url = profile.expand(target.webhook, environ, where=where)
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"the profile's {where} is not an http:// or https:// URL")
        found.append((f"{name} (webhook {parts.hostname})", partial(_post, url)))
    if target.command:
        where = f"notify.{name}.command"
        argv = tuple(profile.expand(a, environ, where=where) for a in target.command)
        found.append((f"{name} (command)", partial(_run, argv)))
    return [(label, call, target.include_error) for label, call in found]


def escape(text: str) -> str:
    """``text`` with its control characters (but newline and tab) shown as ``\\xNN``."""
    return CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _phase(state: Any, what: str) -> str | None:
    """The phase a notification is about: the Gate's, or the one that failed."""
    if what in ("gate", "deadline"):
        return str(state.gate)
    if what == "failed":
        return next((p.id for p in state.phases if p.status == "failed"), None)
    return None


def _ref(folder: Path, root: Path | None) -> str:
    """The flow as the run pages name it: its folder below the served one."""
    if root is not None:
        try:
            return folder.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            pass
    return folder.name


def _failed(run: Any, target: str, what: str, error: str) -> None:
    error = error[:500]
    log.warning("notify %s of run %s failed: %s", target, run.id, escape(error))
    _record(run, NotifyFailed(target=target, about=what, error=error))


def _record(run: Any, ev: Event) -> None:
    try:
        run.emit(ev)
    except Exception:
        log.warning("could not record %s for run %s", ev.kind, run.id, exc_info=True)


def _post(url: str, data: bytes) -> None:
    """POST ``data`` to ``url``; OSError naming what went wrong but never the URL, whose
    path or query may hold a secret the profile expanded (the error is recorded in the run)."""
    import http.client
    import urllib.error
    import urllib.request  # heavy: http.client, ssl and email, for a webhook only

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None  # a 3xx is an answer, not an address to go to

    opener = urllib.request.build_opener(NoRedirect())
    request = urllib.request.Request(
        url, data=data, method="POST", headers={"Content-Type": "application/json"}
    )
    try:
        with opener.open(request, timeout=TIMEOUT) as answer:
            status = answer.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    except urllib.error.URLError as exc:
        raise OSError(f"the webhook cannot be reached: {exc.reason}") from None
    except http.client.InvalidURL:
        raise OSError("the webhook's URL is not valid: see the profile's entry") from None
    if not 200 <= status < 300:
        raise OSError(f"the webhook answered {status}")


def _run(command: tuple[str, ...], data: bytes) -> None:
    done = subprocess.run(
        list(command), input=data, capture_output=True, timeout=COMMAND_TIMEOUT, check=False
    )
    if done.returncode != 0:
        last = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
        raise OSError(f"{command[0]} exited {done.returncode}: {last[0][:300]}")
