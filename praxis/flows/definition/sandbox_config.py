"""The ``sandbox:`` mapping of flow.yaml: the flow's own settings, and its backend's options.

The flow's own settings, on every backend:

| key      | allowed                                                                  |
|----------|--------------------------------------------------------------------------|
| backend  | ``auto`` or a backend's name (``sandbox.backends``)                      |
| timeout  | seconds per phase: more than 0, at most 7 days (604800)                  |
| packages | PEP 508 requirements beyond the image (``flows.definition.packages``)    |
| collect  | bytes of new files a phase may leave (``1g``): 1m to 16t                 |
| cluster  | backend ray: a cluster of the person's profile, by name (``prod``)       |

Every other key is an option of the backend, checked by the backend's own options class
(``sandbox.options``: its keys, their types and bounds), so flow.yaml and ``open_sandbox``
refuse the same values with the same words. A limit can be set but never switched off.

Keys of another backend are a warning (the flow may move between machines); a key no
backend knows is an error with the nearest known key suggested. ``read`` builds the typed
``SandboxSettings``; ``overlay`` lays a caller's mapping over them (``praxis.advance(sandbox=)``,
the chat), where a key the backend does not take is an error, never ignored.

A flow names no address (DESIGN.md §13): ``address:`` is refused with the profile entry to
write, ``cluster:`` names an entry of the person's profile (refused when the profile lacks
it), and ``opening`` hands the ray sandbox that entry's address (``PRAXIS_RAY_ADDRESS``
still wins; with neither, Ray's own ``auto``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from sandbox import backends
from sandbox.backends import AUTO, DOCKER, LOCAL, unknown
from sandbox.options import MAX_DISK as MAX_DISK
from sandbox.options import DockerOptions, Options, RayOptions, disk_size
from sandbox.values import disk_bytes
from sandbox.values import host_cpus as host_cpus
from sandbox.values import host_memory as host_memory
from sandbox.values import size as size

from ...command_line import typed
from ...errors import UsageError
from ..model.flow import DEFAULT_TIMEOUT, SandboxSettings
from . import packages, profile
from .yaml_values import ValueReader, nearest

FLOW_KEYS = ("backend", "timeout", "packages", "collect", "cluster")  # the flow's own
RAY = "ray"
ADDRESS_FIX = (
    'a flow names no cluster address: add `clusters: {prod: {address: "ray://…"}}` to '
    "your profile and write `sandbox: {backend: ray, cluster: prod}`"
)
CLUSTER_EXAMPLE = '{address: "ray://head:10001"}'
MAX_TIMEOUT = 7 * 24 * 3600
MIN_COLLECT = 1 << 20
FLOW_LABEL = "praxis.flow"  # the label naming a container's flow folder


class SandboxInvalid(UsageError):
    """Raised when a caller's sandbox override (``praxis.advance(sandbox=...)``, the chat's)
    sets an option the backend does not take, or a value it cannot use; ``problems`` names
    each, as ``praxis check`` would."""

    def __init__(self, problems: list[str]) -> None:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        super().__init__(f"{problems[0]}{more}")
        self.problems = problems


def read(reader: ValueReader, value: Any, *, strict: Collection[str] = ()) -> SandboxSettings:
    """The settings of the ``sandbox:`` mapping ``value``, each problem reported through
    ``reader`` (the defaults where a value cannot be used). ``strict``: keys that are an error,
    not a warning, when the backend does not take them (a caller's own)."""
    raw = reader.mapping(value, "sandbox", None)
    if raw is None:
        return SandboxSettings()
    errors = reader.errors
    backend = reader.choice(
        raw.get("backend", AUTO), "sandbox.backend", backends.names(), "backend"
    )
    if backend == LOCAL:
        reader.warn("sandbox.backend", "'local' runs phases on this machine without isolation")
    given = _options(reader, raw, backend, strict)
    collect = _collect(reader, raw["collect"]) if "collect" in raw else None
    timeout_s = timeout(raw["timeout"], "sandbox.timeout", reader) if "timeout" in raw else None
    packages = _packages(reader, raw)
    cluster = _cluster(reader, raw["cluster"], backend) if "cluster" in raw else None
    if backend is None or reader.errors > errors:
        return SandboxSettings(written=dict(raw))
    return SandboxSettings(
        backend=backend,
        options=backends.options_for(backend).build(given),
        timeout=timeout_s if timeout_s is not None else DEFAULT_TIMEOUT,
        packages=packages,
        collect=collect,
        cluster=cluster,
        written=dict(raw),
    )


def overlay(settings: SandboxSettings, override: Mapping[str, Any], root: Path) -> SandboxSettings:
    """``settings`` with a caller's ``override`` laid over the section flow.yaml wrote: a key of
    the flow's that the backend does not take is dropped (it was a warning), one of the
    override's is SandboxInvalid."""
    return _read_or_raise({**settings.written, **override}, root, strict=set(override))


def on_backend(settings: SandboxSettings, backend: str, root: Path) -> SandboxSettings:
    """``settings`` on another ``backend`` (PRAXIS_SANDBOX, ``auto`` pinned to docker): the
    options of the flow's section that backend takes (UnknownBackend for a name no backend
    has; SandboxInvalid for a value it cannot use)."""
    if backend == settings.backend:
        return settings
    if backends.options_for(backend) is type(settings.options):  # auto pinned to docker
        return dataclasses.replace(settings, backend=backend)
    return _read_or_raise({**settings.written, "backend": backend}, root)


def opening(settings: SandboxSettings, backend: str, root: Path) -> Options:
    """The options a sandbox opens with for ``settings`` on ``backend`` (the one ``isolation``
    chose): the flow's section on that backend, and on docker (or auto) its containers
    labelled with the flow folder ``root`` (``praxis sandbox prune``). The flow's own
    settings stay as flow.yaml gave them (reuse keys read them)."""
    options = on_backend(settings, backend, root).options
    if isinstance(options, RayOptions):  # the person's cluster, never the flow's address
        options = dataclasses.replace(options, address=cluster_address(settings.cluster))
    if backend in (AUTO, DOCKER) and isinstance(options, DockerOptions):
        labels = {**options.labels, FLOW_LABEL: str(root.resolve())}
        options = dataclasses.replace(options, labels=labels)
    return options


def _read_or_raise(
    mapping: Mapping[str, Any], root: Path, *, strict: Collection[str] = ()
) -> SandboxSettings:
    problems: list[str] = []

    def add(location: str, message: str, severity: str) -> None:
        if severity == "error":
            problems.append(f"{location}: {message}")

    settings = read(ValueReader(root, add), dict(mapping), strict=strict)
    if problems:
        raise SandboxInvalid(problems)
    return settings


def _options(
    reader: ValueReader, raw: dict[str, Any], backend: str | None, strict: Collection[str]
) -> dict[str, Any]:
    """The backend's options ``raw`` sets, each value checked; the keys it does not take
    reported (a warning for another backend's, an error for one no backend has)."""
    cls = backends.options_for(backend or AUTO)
    given: dict[str, Any] = {}
    for key in raw:
        if key in FLOW_KEYS:
            continue
        if key == "address":
            reader.error("sandbox.address", ADDRESS_FIX)
            continue
        if cls.takes(key, flow=key not in strict):  # a caller may set the operator's options
            given[key] = raw[key]
        elif backend is not None:
            _not_taken(reader, backend, key, strict)
    for name in cls.names():  # in the options' own order
        if name in given:
            for problem in cls.check(name, given[name]):
                reader.error(f"sandbox.{problem.key}", problem.message)
    return given


def _not_taken(reader: ValueReader, backend: str, key: str, strict: Collection[str]) -> None:
    loc = f"sandbox.{key}"
    if key in strict:  # a caller's own key: the words open_sandbox says
        reader.error("sandbox", unknown(backend, key))
        return
    if backends.options_for(backend).takes(key):
        reader.error(loc, f"the {backend} backend takes {key!r} from the program that opens "
                     "the sandbox, not from flow.yaml")  # fmt: skip
        return
    users = [b for b in backends.takers(key) if backends.options_for(b).takes(key, flow=True)]
    if users:
        verb = "does" if len(users) == 1 else "do"
        reader.warn(loc, f"the {backend} backend does not use {key!r} (only "
                    f"{' and '.join(users)} {verb}); it is ignored here")  # fmt: skip
        return
    known = [*FLOW_KEYS, *backends.options_for(backend).names(flow=True)]
    close = nearest(key, known)
    hint = f"did you mean {close!r}?" if close else "known: " + ", ".join(known)
    reader.error(loc, f"unknown key for the {backend} backend ({hint})")


def _cluster(reader: ValueReader, value: Any, backend: str | None) -> str | None:
    """The name of a cluster of the person's profile. Whether the profile has it is asked at
    ``check``, ``begin`` and ``run`` (host_resources), never while reading the flow, so a
    flow's status reads no profile."""
    name = reader.string(value, "sandbox.cluster")
    if name is None:
        return None
    if not profile.ENTRY.fullmatch(name):
        reader.error("sandbox.cluster", f"expected the name of a cluster of your profile, "
                     f"got {name!r}: {ADDRESS_FIX}")  # fmt: skip
        return None
    if backend not in (None, RAY):
        reader.warn("sandbox.cluster", f"only the ray backend runs on a cluster; the {backend} "
                    "backend ignores it")  # fmt: skip
    return name


class ClusterUnknown(UsageError):
    """The flow names a cluster the person's profile does not hold (any more)."""

    def next(self, flow: str) -> str:
        return typed("check", flow)


def cluster_address(name: str | None) -> str | None:
    """The address of the profile's cluster ``name`` (``${VAR}`` expanded); None when the
    flow names none (``PRAXIS_RAY_ADDRESS``, else Ray's ``auto``, then)."""
    if name is None:
        return None
    person = profile.load()
    cluster = person.clusters.get(name)
    if cluster is None:
        raise ClusterUnknown(
            "sandbox.cluster: " + profile.missing_entry("clusters", name, person, CLUSTER_EXAMPLE)
        )
    return profile.expand(cluster.address, where=f"clusters.{name}.address")


def _collect(reader: ValueReader, value: Any) -> int | None:
    problem = disk_size(MIN_COLLECT)(value)
    if problem is not None:
        reader.error("sandbox.collect", str(problem))
        return None

    return disk_bytes(value)


def _packages(reader: ValueReader, raw: dict[str, Any]) -> tuple[str, ...]:
    packages.check(raw.get("packages"), reader.root, reader)
    if "image" in raw and packages.requirements_named(raw, reader.root):
        reader.error("sandbox.image", "a flow with packages runs on the image built for them; "
                     "remove image: (or the packages)")  # fmt: skip
    listed = raw.get("packages")
    return tuple(str(p) for p in listed) if isinstance(listed, list) else ()


def timeout(value: Any, loc: str, reader: ValueReader) -> float | None:
    """Seconds, more than 0 and at most 7 days."""
    if reader.positive(value, loc) is None:
        return None
    if value > MAX_TIMEOUT:
        reader.error(loc, f"must be at most {MAX_TIMEOUT} seconds (7 days), got {value}")
        return None
    return float(value)
