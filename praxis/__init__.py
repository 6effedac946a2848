"""praxis: run data Flows of scripts, notebooks and agent turns in sandboxed Jupyter kernels.

The Python API mirrors the CLI (README: "Python API")::

    import praxis

    run = praxis.begin("flows/sales-report")
    praxis.advance("flows/sales-report", run.id)       # stops at the Gate
    review = praxis.read_table("flows/sales-report", "review.csv")
    praxis.edit("flows/sales-report", "review.csv", review.to_csv(index=False))
    praxis.approve("flows/sales-report", gate="flag")
    praxis.advance("flows/sales-report")
"""

from __future__ import annotations

_HOME = {
    "Busy": ".flows.lock",
    "FlowInvalid": ".flows.contract",
    "NoRun": ".flows.handle",
    "NotWritable": ".flows.layout",
    "PraxisError": ".errors",
    "Refused": ".errors",
    "Unbound": ".flows.runner",
}


def __getattr__(name: str) -> object:
    """Names load on first use: `import praxis` (and the CLI) stays fast."""
    import importlib

    if name not in __all__:
        raise AttributeError(f"module 'praxis' has no attribute {name!r}")
    module = importlib.import_module(_HOME.get(name, ".api"), __name__)
    value = getattr(module, name)
    globals()[name] = value
    return value


__all__ = [
    "Busy",
    "FlowInvalid",
    "NoOutput",
    "NoRun",
    "NotWritable",
    "PraxisError",
    "Refused",
    "Unbound",
    "accept",
    "advance",
    "approve",
    "begin",
    "cancel",
    "check",
    "edit",
    "events",
    "load",
    "manage",
    "outputs",
    "read_table",
    "reject",
    "rerun",
    "status",
]
