"""Telling a person that a run needs them: when an advance leaves a run waiting at a Gate,
failed, or done.

```yaml
notify: {webhook: https://hooks.example.org/praxis, when: [gate, failed, done]}
```

The webhook (``http``/``https`` only) gets a JSON POST: ``flow``, ``run``, ``event``
(``gate``, ``failed`` or ``done``), ``status``, ``gate`` (the phase the Gate follows),
``files`` (at a Gate, the outputs to review; else the run's outputs), ``error`` and ``url``,
the run's page (``praxis serve``'s address, or ``$PRAXIS_URL``; never its token). Redirects
are not followed, and the call gives up after ``TIMEOUT`` seconds.

A command is a person's, never the flow's (nothing a flow names runs on the host): it comes
from ``$PRAXIS_NOTIFY_COMMAND`` or ``praxis serve --notify-command``, is split like a shell
line but run without one, and reads the same JSON on its stdin. A notifier that fails is
logged and recorded (``notify_failed``); it never fails the run.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode, urlsplit

from ..model.events import Notified, NotifyFailed
from ..store.layout import writable_names

if TYPE_CHECKING:
    from ..model.events import Event

from ..definition.notify_spec import EVENTS

log = logging.getLogger(__name__)

TIMEOUT = 5.0  # seconds, the webhook's
COMMAND_TIMEOUT = 30.0


@dataclass(frozen=True)
class Notifier:
    """The person's part: the command to run (``()``: none), the address of the run pages
    (None: the body's ``url`` is null) and the folder they serve (flows are named below it)."""

    command: tuple[str, ...] = ()
    base_url: str | None = None
    root: Path | None = None

    @classmethod
    def from_env(
        cls, env: Any = os.environ, *, base_url: str | None = None, root: Path | None = None
    ) -> Notifier:
        line = str(env.get("PRAXIS_NOTIFY_COMMAND", "")).strip()
        command = tuple(shlex.split(line)) if line else ()
        return cls(command, base_url or env.get("PRAXIS_URL") or None, root)


def about(state: Any) -> str | None:
    """What there is to tell of a run in ``state``: gate, failed, done, or None."""
    if state.waiting == "gate":
        return "gate"
    if state.status in ("failed", "done"):
        return str(state.status)
    return None


def body(run: Any, what: str, notifier: Notifier) -> dict[str, Any]:
    """The JSON a notifier gets (the page's URL carries no token)."""

    state = run.state
    if what == "gate":
        names = writable_names(run.flow, state)
    else:
        names = [n for p in state.phases for n in sorted(p.hashes)]
    url = None
    if notifier.base_url:
        query = urlencode({"flow": _ref(run.flow.root, notifier.root), "run": run.id})
        url = f"{notifier.base_url.rstrip('/')}/run?{query}"
    return {
        "flow": run.flow.name,
        "run": run.id,
        "event": what,
        "status": state.status,
        "gate": state.gate if what == "gate" else None,
        "files": [str(run.paths.out(n)) for n in names],
        "error": state.error,
        "url": url,
    }


def tell(run: Any, notifier: Notifier | None) -> None:
    """Call the run's notifiers about the state it is in now (if it is one to tell of);
    each failure is logged and recorded, never raised."""
    what = about(run.state)
    spec = run.flow.notify
    notifier = notifier or Notifier()
    if what is None or what not in spec.get("when", EVENTS):
        return
    calls: list[tuple[str, Callable[[bytes], None]]] = []
    if spec.get("webhook"):
        url = str(spec["webhook"])
        calls.append((f"webhook {urlsplit(url).hostname}", partial(_post, url)))
    if notifier.command:
        calls.append(("command", partial(_run, notifier.command)))
    if not calls:
        return

    data = json.dumps(body(run, what, notifier)).encode("utf-8")
    for target, call in calls:
        try:
            call(data)
        except Exception as exc:  # a notifier never fails the run
            error = f"{type(exc).__name__}: {exc}"[:500]
            log.warning("notify %s of run %s failed: %s", target, run.id, error)
            _record(run, NotifyFailed(target=target, about=what, error=error))
        else:
            _record(run, Notified(target=target, about=what))


def _ref(folder: Path, root: Path | None) -> str:
    """The flow as the run pages name it: its folder below the served one."""
    if root is not None:
        try:
            return folder.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            pass
    return folder.name


def _record(run: Any, ev: Event) -> None:
    try:
        run.emit(ev)
    except Exception:
        log.warning("could not record %s for run %s", ev.kind, run.id, exc_info=True)


def _post(url: str, data: bytes) -> None:
    import urllib.request  # heavy: http.client, ssl and email, for a webhook only

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None  # a 3xx is an answer, not an address to go to

    opener = urllib.request.build_opener(NoRedirect())
    request = urllib.request.Request(
        url, data=data, method="POST", headers={"Content-Type": "application/json"}
    )
    with opener.open(request, timeout=TIMEOUT) as answer:
        if not 200 <= answer.status < 300:
            raise OSError(f"the webhook answered {answer.status}")


def _run(command: tuple[str, ...], data: bytes) -> None:

    done = subprocess.run(
        list(command), input=data, capture_output=True, timeout=COMMAND_TIMEOUT, check=False
    )
    if done.returncode != 0:
        last = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
        raise OSError(f"{command[0]} exited {done.returncode}: {last[0][:300]}")
