"""The one service every front door calls: the CLI, the reviewer web UI, ``praxis.api`` (the
Python API), the MCP server and the flow chat's trial runs.

Two modules, split by what they import, so a command loads only what it needs:

- ``reading``: what a flow and its runs are, changing nothing (load, check, status,
  outputs, events). It never imports the runner.
- ``acting``: what changes a run (begin, run, advance, approve, reject, manage, accept,
  rerun, cancel, edit, delete runs, gc): the only caller of ``praxis.flows.engine.runner``
  outside ``praxis.flows``.

Every function takes its flow as a ``Flow``, a flow folder or its flow.yaml (``FlowRef``)
and its run as an id (None: the newest run); options are keyword-only and typed. Errors are
the ``PraxisError`` tree's (``praxis.errors``), each with its exit code and next command.
"""
