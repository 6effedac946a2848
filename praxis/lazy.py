"""Names of a package that load on first use (PEP 562), so that importing it stays cheap."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable


def exports(
    package: str, names: Iterable[str], homes: dict[str, str], default: str = ""
) -> Callable[[str], object]:
    """A module ``__getattr__`` for ``package``: each of ``names`` is imported from its home
    module (``homes``, relative to the package; else ``default``) when first asked for, and
    kept in the package's namespace from then on."""
    known = frozenset(names)

    def __getattr__(name: str) -> object:
        if name not in known:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(homes.get(name, default), package), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
