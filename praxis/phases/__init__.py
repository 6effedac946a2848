"""The built-in phase kinds (``kinds``) and their executors, one module per kind:
``run(ctx: PhaseContext) -> None``.

An executor's result is the files it leaves (see ``praxis.flows.engine.context``); it fails the
phase by raising. The runner finds a kind through ``praxis.flows.definition.kinds`` (entry
points), never by importing this package."""
