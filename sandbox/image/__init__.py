"""The sandbox kernel image: its Dockerfile, pinned requirements and builder."""

from __future__ import annotations

from typing import Any

from . import build

__all__ = ["ensure_image", "image_tag"]


def __getattr__(name: str) -> Any:
    # Lazy, so ``python -m sandbox.image.build`` does not import the module twice.
    if name in __all__:
        return getattr(build, name)
    raise AttributeError(name)
