"""Which chat model an agent phase talks to.

The spec comes from flow.yaml ``model`` or the environment variable ``PRAXIS_MODEL`` (the
environment wins), in one of two forms:

- ``provider:model`` (``openai:gpt-4.1-mini``, ``anthropic:claude-sonnet-4-5``,
  ``ollama:llama3.1``): built by ``langchain.chat_models.init_chat_model``, which needs the
  ``langchain`` package and the provider's package (``langchain-openai``, ...).
- ``module:Class`` (``mymodels:MyChat``, ``package.module:Class``): any langchain-core chat
  model class in a module Python can import, instantiated with no arguments.

``provider:model`` is taken only for a known provider (``PROVIDERS``); any other prefix is a
module to import, and the error for one that does not import shows both forms.

A test or an embedding program passes a model object directly: ``advance(model=...)``,
which the phase is given (``ctx.given``, a ``praxis.llm.given.ModelGiven``).
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from praxis.command_line import typed
from praxis.errors import EXIT
from praxis.flows.engine.context import PhaseContext, PhaseError
from praxis.llm.given import ModelGiven

ENV = "PRAXIS_MODEL"
PROVIDER_PACKAGES = {
    "openai": "langchain-openai",
    "azure_openai": "langchain-openai",
    "anthropic": "langchain-anthropic",
    "google_genai": "langchain-google-genai",
    "ollama": "langchain-ollama",
    "mistralai": "langchain-mistralai",
    "groq": "langchain-groq",
    "bedrock": "langchain-aws",
}
# the providers langchain's init_chat_model knows
PROVIDERS = (
    *PROVIDER_PACKAGES,
    *("azure_ai", "google_vertexai", "google_anthropic_vertex", "bedrock_converse", "cohere"),
    *("fireworks", "together", "huggingface", "deepseek", "ibm", "nvidia", "xai", "perplexity"),
)
FORMS = (
    "use provider:model (e.g. openai:gpt-4.1-mini; providers: "
    + ", ".join(sorted(PROVIDERS))
    + ") or module:Class (e.g. mymodels:MyChat, a module Python can import)"
)


class ModelUnavailable(PhaseError):
    """Raised when no chat model can be built from the spec (missing, malformed, not installed)."""

    exit_code = EXIT["usage"]

    def next(self, flow: str) -> str:
        return "PRAXIS_MODEL=openai:gpt-4.1-mini " + typed("chat", flow)


def model_for(ctx: PhaseContext, env: Mapping[str, str] | None = None) -> Any:
    """The chat model of this phase: the one the run was given (``praxis.llm.given``), else
    the resolved spec."""
    if isinstance(ctx.given, ModelGiven) and ctx.given.model is not None:
        return ctx.given.model
    return resolve_model(ctx.flow.model, env=env, flow_root=ctx.flow.root)


def resolve_model(
    spec: str | None, *, env: Mapping[str, str] | None = None, flow_root: Path | None = None
) -> Any:
    """Build the chat model ``spec`` names; ``PRAXIS_MODEL`` in ``env`` overrides ``spec``.
    A ``module:Class`` is imported only from installed modules: never from the working
    directory or from ``flow_root`` (a flow folder is not code praxis runs on the host)."""
    environ = os.environ if env is None else env
    chosen = (environ.get(ENV) or spec or "").strip()
    if not chosen:
        raise ModelUnavailable(
            f"no chat model for the agent phase: set 'model: provider:model' in flow.yaml "
            f"or {ENV}=openai:gpt-4.1-mini"
        )
    left, sep, right = chosen.partition(":")
    if not sep or not left or not right:
        raise ModelUnavailable(f"model {chosen!r} has no ':'; {FORMS}; fix flow.yaml or {ENV}")
    if left in PROVIDERS:
        return _from_provider(chosen, left, right)
    unsafe = [Path.cwd().resolve()] + ([flow_root.resolve()] if flow_root else [])
    return _from_class(chosen, left, right, unsafe)


def _from_class(spec: str, module_name: str, class_name: str, unsafe: list[Path]) -> Any:
    try:
        module = _import_installed(spec, module_name, unsafe)
    except ModuleNotFoundError as exc:
        if exc.name is not None and module_name.split(".")[0] == exc.name.split(".")[0]:
            raise ModelUnavailable(
                f"model {spec!r}: {module_name!r} is neither a known provider nor a module "
                f"Python can import; {FORMS}"
            ) from exc
        raise ModelUnavailable(f"model {spec!r}: importing {module_name} failed: {exc}") from exc
    except ImportError as exc:
        raise ModelUnavailable(
            f"model {spec!r}: cannot import {module_name} ({exc}); install it or fix the spec"
        ) from exc
    cls = getattr(module, class_name, None)
    if cls is None:
        raise ModelUnavailable(f"model {spec!r}: {module_name} has no {class_name}")
    try:
        return cls()
    except Exception as exc:
        raise ModelUnavailable(f"model {spec!r}: {class_name}() failed: {exc}") from exc


def _import_installed(spec: str, module_name: str, unsafe: list[Path]) -> Any:
    """``module_name``, imported only from where modules are installed: never from the working
    directory (``sys.path[0]`` of ``python -m``, ``''``) nor from a flow folder. Its top-level
    package is found without those and loaded from the spec found, so a same-named file in
    the working directory cannot take its place; submodules come from the package itself."""
    top = module_name.split(".")[0]
    found = _installed_spec(top, unsafe)
    loaded = sys.modules.get(top)
    if found is None or found.loader is None:
        if loaded is None and importlib.util.find_spec(top) is None:
            raise ModuleNotFoundError(f"No module named {top!r}", name=top)
        raise ModelUnavailable(
            f"model {spec!r}: {top} is not an installed module (a module in the working "
            "directory or in a flow folder is never imported as a model); install it "
            "(pip install DIR) or fix the spec"
        )
    if loaded is None:
        module = importlib.util.module_from_spec(found)
        sys.modules[top] = module
        try:
            found.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(top, None)
            raise
    elif getattr(loaded.__spec__, "origin", None) != found.origin:
        raise ModelUnavailable(
            f"model {spec!r}: the {top} loaded is not the installed one ({found.origin}); "
            "install it or fix the spec"
        )
    return importlib.import_module(module_name)


def _safe_path(unsafe: list[Path]) -> list[str]:
    """sys.path without the working directory Python put first (``''`` or its full path,
    as ``python -m`` does), without ``''``/``.`` anywhere, and without any folder at or below a
    flow folder (``unsafe[1:]``)."""
    out = []
    for i, entry in enumerate(sys.path):
        if entry in ("", "."):
            continue
        try:
            resolved = Path(entry).resolve()
        except OSError:
            continue
        if i == 0 and resolved == unsafe[0]:
            continue
        if not any(resolved.is_relative_to(r) for r in unsafe[1:]):
            out.append(entry)
    return out


def _installed_spec(top: str, unsafe: list[Path]) -> Any:
    """The spec of top-level module ``top`` as the import system finds it, with the path
    finder searching only ``_safe_path`` (other finders: built-in, frozen, editable installs)."""
    for finder in sys.meta_path:
        if finder is importlib.machinery.PathFinder:
            found = finder.find_spec(top, _safe_path(unsafe))
        elif hasattr(finder, "find_spec"):
            found = finder.find_spec(top, None)
        else:
            continue
        if found is not None:
            origin = Path(found.origin).resolve() if found.has_location and found.origin else None
            if origin is not None and any(origin.is_relative_to(r) for r in unsafe[1:]):
                return None  # an editable install of a flow folder is still the flow folder
            return found
    return None


def _from_provider(spec: str, provider: str, name: str) -> Any:
    package = PROVIDER_PACKAGES.get(provider, f"langchain-{provider.replace('_', '-')}")
    try:
        from langchain.chat_models import init_chat_model
    except ImportError as exc:
        raise ModelUnavailable(
            f"model {spec!r} needs langchain: pip install langchain {package}"
        ) from exc
    try:
        return init_chat_model(name, model_provider=provider)
    except ImportError as exc:
        raise ModelUnavailable(f"model {spec!r} needs its provider: pip install {package}") from exc
    except Exception as exc:
        raise ModelUnavailable(f"model {spec!r} could not be built: {exc}") from exc
