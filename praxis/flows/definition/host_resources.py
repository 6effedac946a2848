"""What a flow asks of the host, like an app's permissions: the profile entries it names.

A flow names a connection (``database: warehouse``), a cluster (``sandbox: {cluster: prod}``)
or notification targets (``notify: {to: team}``) by name; the person's profile holds what
each name stands for (``profile.py``). ``asked`` lists what a flow names, ``missing`` the
one-line fix for each name the profile lacks, ``lines`` what ``praxis check`` prints.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...command_line import typed
from ...errors import UsageError
from . import profile
from .profile import ENTRY, Profile, missing_entry

EXAMPLES = {  # what a person writes in the profile for an entry of each section
    "connections": '{url: "postgresql+psycopg://USER@HOST/DB", password: "${PASSWORD_VARIABLE}"}',
    "clusters": '{address: "ray://HEAD:10001"}',
    "notify": '{webhook: "https://hooks.example/…"}',
}
WHAT = {"connections": "connection", "clusters": "cluster", "notify": "notify target"}


@dataclass(frozen=True)
class Asked:
    section: str  # connections | clusters | notify
    name: str
    where: str  # the key of flow.yaml that names it
    publish: bool = False  # needed only to publish (checked then: the run goes on without it)


def is_entry_name(text: str) -> bool:
    """``text`` names a profile entry, not a file (no ``/``, no ``.``) nor a URL."""
    return bool(ENTRY.fullmatch(text))


def asked(flow: Any) -> list[Asked]:
    """The profile entries ``flow`` names, in flow.yaml's order, once each."""
    found: list[Asked] = []
    if flow.database and is_entry_name(flow.database):
        found.append(Asked("connections", flow.database, "database"))
    for phase in flow.phases:
        database = getattr(phase.spec, "database", None)
        if isinstance(database, str) and is_entry_name(database):
            found.append(Asked("connections", database, f"phases.{phase.id}.database"))
    for i, entry in enumerate(getattr(flow, "publish", ())):
        at = f"publish[{i}].to.connection"
        found.append(Asked("connections", entry.connection, at, publish=True))
    if flow.sandbox.cluster:
        found.append(Asked("clusters", flow.sandbox.cluster, "sandbox.cluster"))
    for name in flow.notify.get("to", ()):
        found.append(Asked("notify", name, "notify.to"))
    for phase in flow.phases:
        for name in getattr(phase, "escalate", ()):
            found.append(Asked("notify", name, f"phases.{phase.id}.review.escalate"))
    once: dict[tuple[str, str], Asked] = {}
    for a in found:
        once.setdefault((a.section, a.name), a)
    return list(once.values())


class ProfileLacks(UsageError):
    """A flow names a connection, cluster or notify target the person's profile lacks."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        self.problems = problems
        where, fix = problems[0]
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        super().__init__(f"flow.yaml: {where}: {fix}{more}")

    def next(self, flow: str) -> str:
        return typed("check", flow)


def require(flow: Any, person: Profile | None = None) -> None:
    """Raise ProfileLacks when ``flow`` names an entry the person's profile (``person``, or
    the one ``profile.load`` reads) does not have. A flow that names none reads no profile,
    so a broken profile never stops it."""
    problems = missing(flow, person)
    if problems:
        raise ProfileLacks(problems)


def missing(flow: Any, person: Profile | None = None) -> list[tuple[str, str]]:
    """(flow.yaml location, the fix) for each entry ``flow`` names that the person's profile
    (``person``, or the one ``profile.load`` reads, only when the flow names any) lacks."""
    wanted = [a for a in asked(flow) if not a.publish]
    if not wanted:
        return []
    person = profile.load() if person is None else person
    return [
        (a.where, missing_entry(a.section, a.name, person, EXAMPLES[a.section]))
        for a in wanted
        if a.name not in getattr(person, a.section)
    ]


def lines(flow: Any, profile: Profile) -> list[str]:
    """``praxis check``'s listing: each entry the flow names, and whether the profile has it."""
    wanted = asked(flow)
    if not wanted:
        return []
    head = f"host resources this flow asks for (your profile: {profile.shown()}"
    out = [head + ("" if profile.exists else ", which does not exist yet") + "):"]
    for a in wanted:
        entry = getattr(profile, a.section).get(a.name)
        state = f"ok: {_describe(entry)}" if entry is not None else "MISSING from the profile"
        if a.publish:
            writes = getattr(entry, "write", False)
            state += "" if entry is None or writes else " (not write: true: publishing stops)"
            state += "; needed to publish"
        out.append(f"  {WHAT[a.section]} {a.name} ({a.where}): {state}")
    return out


def _describe(entry: Any) -> str:
    """An entry as the person wrote it, its secrets left as the ``${VAR}`` they are."""
    for key in ("url", "address", "webhook"):
        value = getattr(entry, key, None)
        if value:
            return _without_password(str(value))
    return " ".join(getattr(entry, "command", ()))[:200]


def _without_password(url: str) -> str:
    scheme, sep, rest = url.partition("://")
    if not sep or "@" not in rest.split("/", 1)[0]:
        return url
    auth, _, host = rest.partition("@")
    user, colon, _ = auth.partition(":")
    return f"{scheme}://{user}{':***' if colon else ''}@{host}"
