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

from .lazy import exports

_HOME = {
    "Busy": ".flows.store.lock",
    "FlowInvalid": ".flows.definition.contract",
    "NoRun": ".flows.store.handle",
    "NotWritable": ".flows.store.layout",
    "PraxisError": ".errors",
    "Refused": ".errors",
    "SandboxInvalid": ".flows.definition.sandbox_config",
    "Unbound": ".service.acting",
}


__all__ = [
    "Busy",
    "FlowInvalid",
    "NoOutput",
    "NoRun",
    "NotWritable",
    "PraxisError",
    "Refused",
    "SandboxInvalid",
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
# Names load on first use: `import praxis` (and the CLI) stays fast.
__getattr__ = exports(__name__, __all__, _HOME, default=".api")
