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
which the phase sees as ``ctx.model``.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from typing import Any

from praxis.errors import EXIT
from praxis.flows.context import PhaseContext, PhaseError

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
        return f"PRAXIS_MODEL=openai:gpt-4.1-mini praxis chat {flow}"


def model_for(ctx: PhaseContext, env: Mapping[str, str] | None = None) -> Any:
    """The chat model of this phase: ``ctx.model`` if set, else the resolved spec."""
    if ctx.model is not None:
        return ctx.model
    return resolve_model(ctx.flow.model, env=env)


def resolve_model(spec: str | None, *, env: Mapping[str, str] | None = None) -> Any:
    """Build the chat model ``spec`` names; ``PRAXIS_MODEL`` in ``env`` overrides ``spec``."""
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
    return _from_class(chosen, left, right)


def _from_class(spec: str, module_name: str, class_name: str) -> Any:
    try:
        module = importlib.import_module(module_name)
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
