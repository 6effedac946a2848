"""A database flow.yaml names, as what one opens: the person's profile connection (read, or
``write: true`` to publish to) or a file of the flow (``praxis.sources.source``)."""

from __future__ import annotations

from ...errors import UsageError
from ...sources.source import BadSource, Source, Target, parse, target
from . import profile

EXAMPLE = '{url: "postgresql+psycopg://USER@HOST/DB"}'


class Unusable(UsageError):
    """The connection cannot be used as asked; one line naming the fix."""


def source_of(text: str) -> Source:
    """flow.yaml's ``database:`` text as a Source; Unusable with the fix otherwise."""
    try:
        return parse(text, profile.shown_path(profile.path_of()))
    except BadSource as exc:
        raise Unusable(f"flow.yaml: database: {exc}") from None


def target_for(source: Source) -> Target:
    """What ``source`` opens: a file of the flow as it is, a connection from the profile."""
    if source.connection is None:
        assert source.engine is not None
        return Target(source.engine, flow_file=source.path)
    return _connection(source.connection, write=False)


def writer(name: str, where: str) -> Target:
    """Profile connection ``name``, which flow.yaml's ``where`` publishes to: it must say
    ``write: true``. Unusable with the profile entry to write otherwise."""
    return _connection(name, write=True, where=where)


def _connection(name: str, *, write: bool, where: str = "database") -> Target:
    try:
        person = profile.load()
        shown = person.shown()
        conn = person.connections.get(name)
        if conn is None:
            example = EXAMPLE.replace("}", ", write: true}") if write else EXAMPLE
            fix = profile.missing_entry("connections", name, person, example)
            raise Unusable(f"flow.yaml: {where}: {fix}")
        if write and not conn.write:
            raise Unusable(
                f"flow.yaml: {where}: connection {name!r} of your profile {shown} is not marked "
                f"for writing: add `write: true` under connections.{name} there (a role that "
                "may write the table), then publish again"
            )
        return target(conn, lambda text, at: profile.expand(text, where=at), shown)
    except Unusable:
        raise
    except (UsageError, BadSource) as exc:
        raise Unusable(str(exc)) from None
