"""Each backend's options, as a type: the fields it takes, their defaults, and the check of
a value given for each (the way jupyter_client's provisioners validate their own config).

``Options`` is a frozen dataclass; each field's metadata holds its ``Spec``: the check of a
value given for it (a ``Check``: None when the value will do, else what is wrong) and whether
flow.yaml may set it. ``sandbox.factory`` builds a backend's options from a mapping with these
checks, and praxis checks flow.yaml's ``sandbox:`` with the very same ones.

A limit can be set but never switched off: each has a floor and a ceiling, and a value
outside them (zero, negative, "unlimited", more than this machine has) is refused.

| option        | backends     | allowed                                                   |
|---------------|--------------|-----------------------------------------------------------|
| stream_limit  | docker,local | bytes of a phase's prints kept: 1 to 8388608 (8 MiB)      |
| display_limit | docker,local | bytes of its displays kept: 1 to 16777216 (16 MiB)        |
| grace         | docker,local | seconds an interrupted kernel gets: more than 0, to 600   |
| start_timeout | docker,local | seconds a kernel may take to start: more than 0, to 3600  |
| warm, spares  | docker,local | kernels started ahead: true/false, and how many (0 to 16) |
| image         | docker       | the image's tag (default: the sandbox image)              |
| memory        | docker       | a size (``2g``): at least 64m, at most the host's RAM     |
| tmp_size      | docker       | a whole size (``256m``): 16m to the host's RAM            |
| disk          | docker       | the workspace's disk quota (``10g``): 16m to 16t          |
| cpus          | docker       | a number: at least 0.01, at most the host's cores         |
| pids          | docker       | a whole number from 32 to 65536                           |
| labels        | docker       | the container's labels: names to strings (at most 64)     |
| address       | ray          | ``ray://host:10001``, ``host:6379`` or ``auto``; env wins |
| resources     | ray          | Ray resources a node must offer: names to positive numbers|

ray takes docker's options (its class extends docker's), local's are docker's first six.
On ray, memory and cpus are what a node of the cluster must have, not this machine: the
cluster's own check (when the sandbox opens) bounds them. ``address``, ``node_root`` and
``place_timeout`` (ray) are the operator's: a program opening the sandbox sets them,
flow.yaml cannot (praxis takes the address from the person's profile).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from .base import GRACE
from .output import DISPLAY_LIMIT, LIMITS, STREAM_LIMIT
from .values import describe, host_cpus, host_memory, parse_size, show, size

# What is wrong with a value given for an option: None when it will do, a message, or
# messages by sub-key for a mapping (``{"bigmem": "expected a positive number, ..."}``).
Check = Callable[[Any], str | dict[str, str] | None]
OptionsT = TypeVar("OptionsT", bound="Options")
T = TypeVar("T")

MIN_MEMORY = 64 << 20
MIN_TMP = 16 << 20
MIN_CPUS = 0.01
MAX_CLUSTER_CPUS = 4096
PIDS = (32, 65536)
MAX_DISK = 16 << 40
MAX_GRACE = 600.0
MAX_START = 3600.0
MAX_SPARES = 16
MAX_ENTRIES = 64  # labels or resources one mapping may hold
MAX_TEXT = 1024  # characters of an image tag, an address, a label's name or value
SPARES = 2  # warm kernels a sandbox keeps: a kernel start (~40 ms) outlasts a trivial phase
START_TIMEOUT = 60.0
DISK = "10g"
SPEC = "sandbox.option"  # the metadata key of a field's Spec


# -- checks ---------------------------------------------------------------------------------


def memory_size(floor: int, *, whole: bool, cluster: bool = False) -> Check:
    """A size of memory: on this machine at most its RAM; on a cluster (``cluster``) what a
    node must have, bounded by the cluster's own check when the sandbox opens."""
    example = "256m" if whole else "2g"
    where = "" if cluster else " (this machine's RAM)"

    def check(value: Any) -> str | None:
        n = parse_size(value, whole=whole)
        if n is None:
            return f"expected a size such as {example}, got {describe(value)}"
        ceiling = MAX_DISK if cluster else host_memory()
        if not floor <= n <= ceiling:
            return f"must be between {size(floor)} and {size(ceiling)}{where}, got {show(value)}"
        return None

    return check


def disk_size(floor: int) -> Check:
    """A size on disk (``10g``, ``1t``): from ``floor`` to 16t."""

    def check(value: Any) -> str | None:
        n = parse_size(value, disk=True) if isinstance(value, str) else None
        if n is None:
            return f"expected a size such as 10g, got {describe(value)}"
        if not floor <= n <= MAX_DISK:
            return (
                f"must be between {size(floor)} and 16t, got {show(value)}; set a size within "
                "them, or remove the key for the default"
            )
        return None

    return check


def output_limit(key: str) -> Check:
    """What the host keeps of a phase's output, in bytes: within the sandbox's bounds (the
    runner holds it all, and copies it into the record)."""
    low, high = LIMITS[key]

    def check(value: Any) -> str | None:
        if isinstance(value, bool) or not isinstance(value, int):
            return f"expected a whole number of bytes, got {describe(value)}"
        if not low <= value <= high:
            return (
                f"must be between {low} and {high} bytes ({high >> 20} MiB, what the runner "
                f"may hold), got {value}; lower it, or remove the key for the default"
            )
        return None

    return check


def cores(*, cluster: bool = False) -> Check:
    def check(value: Any) -> str | None:
        ceiling = MAX_CLUSTER_CPUS if cluster else host_cpus()
        where = "" if cluster else " (this machine's cores)"
        if isinstance(value, bool) or not isinstance(value, int | float):
            return f"expected a number of cores, got {describe(value)}"
        if not (math.isfinite(value) and MIN_CPUS <= value <= ceiling):
            return f"must be between {MIN_CPUS} and {ceiling}{where}, got {value}"
        return None

    return check


def whole(low: int, high: int) -> Check:
    def check(value: Any) -> str | None:
        if isinstance(value, bool) or not isinstance(value, int):
            return f"expected a whole number, got {describe(value)}"
        if not low <= value <= high:
            return f"must be between {low} and {high}, got {value}"
        return None

    return check


def seconds(ceiling: float) -> Check:
    """A positive number of seconds, at most ``ceiling``."""

    def check(value: Any) -> str | None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return f"expected a positive number, got {describe(value)}"
        if not (value > 0 and math.isfinite(value)):
            return f"must be a positive number, got {value}"
        if value > ceiling:
            return f"must be at most {ceiling:g} seconds, got {value}"
        return None

    return check


def flag(value: Any) -> str | None:
    return None if isinstance(value, bool) else f"expected true or false, got {describe(value)}"


def text(what: str, *, optional: bool = True) -> Check:
    """A non-empty string of at most MAX_TEXT characters (``optional``: or null)."""

    def check(value: Any) -> str | None:
        if value is None and optional:
            return None
        if not isinstance(value, str) or not value.strip() or len(value) > MAX_TEXT:
            return f"expected {what}, got {describe(value)}"
        return None

    return check


def label_map(value: Any) -> str | dict[str, str] | None:
    """Container labels: names to strings (a number is written as one)."""
    if not isinstance(value, dict):
        return f"expected a mapping of names to strings, got {describe(value)}"
    if len(value) > MAX_ENTRIES:
        return f"has {len(value)} labels, over the limit of {MAX_ENTRIES}"
    wrong = {
        str(k): f"expected a string, got {describe(v)}"
        for k, v in value.items()
        if not isinstance(k, str)
        or not k
        or len(k) > MAX_TEXT
        or isinstance(v, bool)
        or not isinstance(v, str | int | float)
        or len(str(v)) > MAX_TEXT
    }
    return wrong or None


def resource_map(value: Any) -> str | dict[str, str] | None:
    """Ray resources: names to positive numbers."""
    if not isinstance(value, dict):
        return f"expected a mapping of names to numbers, got {describe(value)}"
    if len(value) > MAX_ENTRIES:
        return f"names {len(value)} resources, over the limit of {MAX_ENTRIES}"
    wrong = {}
    for key, item in value.items():
        ok = isinstance(item, int | float) and not isinstance(item, bool)
        if not isinstance(key, str) or not ok or not (math.isfinite(item) and item > 0):
            wrong[str(key)] = f"expected a positive number, got {describe(item)}"
    return wrong or None


# -- the options classes --------------------------------------------------------------------


@dataclass(frozen=True)
class Spec:
    """How a value given for an option is checked; ``flow``: flow.yaml may set it (False: only
    the program that opens the sandbox may)."""

    check: Check
    flow: bool = True


def option(default: T, check: Check, *, flow: bool = True) -> T:
    """A field of an options class: its default and its check."""
    return field(default=default, metadata={SPEC: Spec(check, flow)})


def mapping_option(check: Check) -> Any:
    """A field whose value is a mapping, empty by default."""
    return field(default_factory=dict, metadata={SPEC: Spec(check)})


@dataclass(frozen=True)
class Problem:
    """A value an option cannot take: ``key`` is the option (``resources.bigmem`` for an
    entry of a mapping), ``message`` what is wrong with it."""

    key: str
    message: str

    def __str__(self) -> str:
        return f"{self.key}: {self.message}"


@dataclass(frozen=True, kw_only=True)
class Options:
    """The options of a backend. Built from a mapping by ``sandbox.factory`` (each value
    checked), or directly in code (typed; the checks are the caller's)."""

    @classmethod
    def names(cls, *, flow: bool = False) -> tuple[str, ...]:
        """Its options, in order; ``flow``: only those flow.yaml may set."""
        return tuple(f.name for f in dataclasses.fields(cls) if not flow or _spec(f).flow)

    @classmethod
    def takes(cls, name: str, *, flow: bool = False) -> bool:
        return name in cls.names(flow=flow)

    @classmethod
    def check(cls, name: str, value: Any) -> list[Problem]:
        """What is wrong with ``value`` for option ``name`` (a name it takes)."""
        (spec,) = [_spec(f) for f in dataclasses.fields(cls) if f.name == name]
        found = spec.check(value)
        if found is None:
            return []
        if isinstance(found, str):
            return [Problem(name, found)]
        return [Problem(f"{name}.{key}", message) for key, message in found.items()]

    @classmethod
    def build(cls: type[OptionsT], given: Mapping[str, Any]) -> OptionsT:
        """The options ``given`` sets (each checked already), the defaults for the rest."""
        return cls(**{k: dict(v) if isinstance(v, dict) else v for k, v in given.items()})

    def to(self, other: type[OptionsT]) -> OptionsT:
        """These options as ``other``'s: the values of the options both take, the defaults of
        ``other`` for the rest (``auto`` falling back to local keeps the kernel tuning)."""
        shared = set(other.names())
        return other(**{f.name: getattr(self, f.name) for f in _fields(self) if f.name in shared})


def _fields(options: Options) -> tuple[dataclasses.Field[Any], ...]:
    return dataclasses.fields(options)


def _spec(f: dataclasses.Field[Any]) -> Spec:
    spec = f.metadata.get(SPEC)
    assert isinstance(spec, Spec), f"option {f.name} has no Spec (use option())"
    return spec


@dataclass(frozen=True, kw_only=True)
class FakeOptions(Options):
    """The fake takes no options: it runs code in this process."""


@dataclass(frozen=True, kw_only=True)
class LocalOptions(Options):
    """Kernels and what the host keeps of their output: every backend with real kernels."""

    stream_limit: int = option(STREAM_LIMIT, output_limit("stream_limit"))
    display_limit: int = option(DISPLAY_LIMIT, output_limit("display_limit"))
    grace: float = option(GRACE, seconds(MAX_GRACE))
    start_timeout: float = option(START_TIMEOUT, seconds(MAX_START))
    warm: bool = option(True, flag)
    spares: int = option(SPARES, whole(0, MAX_SPARES))


@dataclass(frozen=True, kw_only=True)
class DockerOptions(LocalOptions):
    """A hardened container on this machine, and its limits."""

    image: str | None = option(None, text("an image tag such as praxis-sandbox:<tag>"))
    memory: str | int = option("2g", memory_size(MIN_MEMORY, whole=False))
    tmp_size: str | int = option("256m", memory_size(MIN_TMP, whole=True))
    disk: str | int | None = option(DISK, disk_size(MIN_TMP))
    cpus: float = option(1.0, cores())
    pids: int = option(256, whole(*PIDS))
    labels: Mapping[str, str | int | float] = mapping_option(label_map)


@dataclass(frozen=True, kw_only=True)
class RayOptions(DockerOptions):
    """The docker backend's container on a node of a Ray cluster: memory and cpus are what
    the node must have (the cluster bounds them), not this machine."""

    memory: str | int = option("2g", memory_size(MIN_MEMORY, whole=False, cluster=True))
    cpus: float = option(1.0, cores(cluster=True))
    # the cluster: the operator's (praxis takes it from the person's profile, never a flow)
    address: str | None = option(None, text("ray://host:port, host:port or auto"), flow=False)
    resources: Mapping[str, float] = mapping_option(resource_map)
    # where the node keeps workspaces, and how long placement may take: the operator's
    node_root: str | None = option(None, text("a folder on the nodes"), flow=False)
    place_timeout: float = option(600.0, seconds(7 * 24 * 3600.0), flow=False)
    # spread sandboxes opened together over the nodes (Ray's SPREAD), rather than pack them:
    # the caller's choice for many sandboxes of one run (a fan-out's partitions)
    spread: bool = option(False, flag, flow=False)

    def docker(self) -> DockerOptions:
        """The options of the docker sandbox the node runs."""
        return self.to(DockerOptions)
