"""Flows, by floor: each floor imports only the floors below it (``.importlinter`` holds the
contract, ``make lint`` checks it).

- ``model``: what a flow and a run are, as values: the flow and its phases, parameters,
  the run's state machine and the catalogue of events that move it.
- ``definition``: a flow's definition read and checked: flow.yaml, the files it names,
  notebooks, packages, sandbox settings, and the digests of what a phase computes.
- ``store``: a run folder on disk: its paths, run.json and events.jsonl written together,
  the lock, snapshots, records and the content store.
- ``engine``: running phases: the runner's verbs, an attempt in a sandbox, collecting
  outputs, checks, reuse, reviewers' edits carried over, notifications.
- ``report``: what a run says to a person or a program: status, route, receipt, replay and
  trace. Reads only.
"""
