"""The praxis exception tree. Every error a person can act on is a ``PraxisError``: it
carries the CLI's exit code (``exit_code``, DESIGN.md §7) and the next command to try
(``next(flow)``). The web UI answers by branch (``praxis.web.refusals``). Each class lives
in the module that raises it; the branches live here.

PraxisError               1  something failed                                   (here)
├── PhaseError            1  a phase's code failed (the runner records it)      flows.engine.context
│   └── ModelUnavailable  2  no chat model can be built from the spec           agent.model
├── NotRecordable         1  a phase left what cannot be recorded               flows.store.snapshot
├── ChatError             1  the flow chat's model cannot be called             chat.chat
├── PublishIncomplete     1  an approved output not written to its table    flows.engine.publish
├── UsageError            2  a command, flow or name that cannot be acted on    (here)
│   ├── Usage                a command line                                     commands
│   ├── NotAFlow             FLOW is neither a flow folder nor its flow.yaml    terminal
│   │   └── NoFlowHere       a folder with no flow.yaml in it or above it       terminal
│   ├── FlowInvalid          flow.yaml has errors; ``report`` holds them flows.definition.contract
│   ├── BadParam             a -p the flow does not declare, or a bad value     flows.model.params
│   ├── BadValue             a Gate form's value its field refuses              flows.model.forms
│   ├── BadActor             an actor other than person or agent          flows.model.decisions
│   ├── AccountError         a name, role, token or duration not usable      service.accounts
│   ├── NotebookProblem      a notebook that cannot be run           flows.definition.notebook_check
│   ├── UnknownKind          a phase kind no entry point declares         flows.definition.kinds
│   ├── PackagesRefused      the flow's requirements.txt cannot be used flows.definition.packages
│   ├── SandboxInvalid       a sandbox override refused          flows.definition.sandbox_config
│   ├── NoRun                no run yet, or no run of that id                   flows.store.handle
│   ├── NoOutput             a run has no such output (yet)                     api
│   ├── NotFound             a URL names what is not below the served root      web.catalog
│   ├── Unreadable           drafts a page sent that it does not write          web.drafts
│   ├── ProfileInvalid       the person's profile cannot be read          flows.definition.profile
│   ├── ProfileUnset         a profile value reads an unset ${VAR}        flows.definition.profile
│   ├── ProfileLacks         a flow names an entry the profile lacks flows.definition.host_resources
│   ├── ClusterUnknown       a cluster the profile lost  flows.definition.sandbox_config
│   ├── Unusable             a connection that cannot be used as asked flows.definition.connections
│   └── TranscriptError      a chat transcript that cannot be read              chat.transcript
├── Busy                  3  another process holds the run's lock (or flow's)   flows.store.lock
├── Refused               4  not allowed now; nothing was changed               (here)
│   ├── Unbound           2  approve/reject bound to no revision and no Gate    flows.engine.binding
│   ├── NotWritable          a file the Gate does not open for writing          flows.store.layout
│   ├── IllegalTransition    a transition the current state does not allow      flows.model.moves
│   ├── NotAcknowledged      a decision without a receipt of each file to read  flows.engine.acks
│   ├── EditsAtRisk          a re-run replacing outputs edited at a Gate      flows.engine.runner
│   ├── OldLayout            a change of a run from before the flow's store     flows.store.upgrade
│   ├── NotAuthorized        a principal without authority for the verb     service.authority
│   ├── BadToken             a token of no live account                      service.accounts
│   ├── NotPerson            --as person by a caller known as an agent       service.principals
│   ├── ApprovalRefused      an approval request unknown, answered or closed    agent.approvals
│   ├── FileRefused          a path or a write the flow chat may not make       chat.workfiles
│   ├── RequestRefused       a form the reviewer UI turns down                  web.refusals
│   │   └── TokenRefused     the form's security token is missing or old        web.refusals
│   ├── LocalRefused         flow code on this host no person allowed     flows.definition.isolation
│   ├── BadEdit              a table edit that does not fit the file            web.tables
│   ├── NotATable            a file that cannot be edited as a table            web.csvedit
│   └── BadRow               a row or column the file does not have             web.csvedit
│       └── BadQuery         a filter naming a column or operation it lacks     web.find
├── RecordCorrupt         4  a run's record cannot be read; never reset         (here)
│   ├── StateCorrupt         run.json                                     flows.store.state_file
│   ├── ObjectTampered       a store object that does not hash to its name    flows.store.intact
│   └── EventLogCorrupt      events.jsonl, a line other than the last      flows.store.event_log
└── PortBusy              6  `praxis serve`'s port is in use                    commands.serving

Mapped here, raised elsewhere (``exit_code_of``, ``next_of``):
sandbox.SandboxUnavailable  5  no Docker daemon, image, Ray cluster or package (``sandbox``
                               never imports praxis, so it is not a PraxisError)
KeyboardInterrupt           7  SIGTERM or SIGHUP (130: Ctrl-C); the run is recorded as cancelled

Not for a person: caught inside praxis and turned into one of the above, a recorded failure
or a model's tool result (tests/test_errors.py holds that every class praxis raises or
defines is drawn in the tree or listed here):
ExtractError          a query the model wrote cannot run; its text goes to the model   agent.extract
SourceUnavailable     (an ExtractError) the phase has no usable data source            agent.extract
NoFiles               (a ValueError) foreach: files: finds no partition  flows.definition.foreach
_Unknown              an edit's failing rows need a whole pass: the pass runs   flows.engine.recheck
KindTaken             (a ValueError) an event kind registered twice           flows.model.event_base
Unreadable            a table that does not parse, or is too large to check      flows.store.csvread
Vanished              the lock's file left its folder: the run was deleted          flows.store.lock
CallFailed            a model call raised, or returned something other than a message       llm.loop
NoToolCalling         the chat model cannot be given tools                                  llm.loop
NotReadable           not Parquet, or the part asked for would pass a cap                    parquet
OverBudget            the cells asked for hold more text than a read may show          parquet_cells
QueryError            a query could not run; its text goes to the model              sources.connect
Unavailable           (a QueryError) the source cannot be opened                     sources.connect
UnboundParameter      (a ValueError) a query names a parameter the run lacks          sources.params
RunFailed             a query phase's or extract's query did not run; told as theirs sources.running
PublishError          a table not written; told as publish_failed            sources.publish
ColumnsRefused        output columns not the table's; told as a PublishError sources.table_write
CapReached            a result over a cap of one extract; no file was written           sources.sink
BadSource             (a ValueError) a database text that cannot be used              sources.source
Terminated            SIGTERM to ``praxis serve``, once it stopped: its sandboxes close next web.app
Misread               Arrow's reader and the row scan disagree: the slow pass reads it  web.columnar
_Changed              the table changed while its copy was carried over: copy dropped   web.columnar
_Spent                the page's budget ran out while a text was parsed                   web.render
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .command_line import typed

if TYPE_CHECKING:
    from sandbox.errors import SandboxUnavailable

EXIT = {
    "ok": 0,
    "failed": 1,
    "usage": 2,
    "busy": 3,
    "refused": 4,
    "unavailable": 5,
    "port": 6,
    "cancelled": 7,
}


class PraxisError(Exception):
    """Base class of every error praxis raises for a person to act on."""

    exit_code: int = EXIT["failed"]

    def next(self, flow: str) -> str:
        """The command to try next; ``flow`` is the FLOW argument as the person gave it."""
        return typed("status", flow)


class UsageError(PraxisError):
    """A command line, flow definition or name that cannot be acted on as it is."""

    exit_code = EXIT["usage"]

    def next(self, flow: str) -> str:
        return "praxis --help"


class Refused(PraxisError):
    """Raised when a change is not allowed now: a stale revision, a wrong state, not writable.
    Nothing was changed; ``revision`` is the run's current one when a stale one was given."""

    exit_code = EXIT["refused"]

    def __init__(self, message: str, *, revision: int | None = None) -> None:
        super().__init__(message)
        self.revision = revision


class RecordCorrupt(PraxisError):
    """A file of a run's record cannot be read as what it must be; it is never reset."""

    exit_code = EXIT["refused"]


SANDBOX_NEXT: dict[str, Callable[[str], str]] = {
    "PackagesUnavailable": lambda flow: (
        "fix sandbox.packages, then: " + typed("sandbox build", flow)
    ),
    "RayUnavailable": lambda flow: (
        "fix what it names (README: Ray cluster), then: " + typed("advance", flow)
    ),
    "SandboxUnavailable": lambda flow: (
        "start Docker (dockerd), or, for a flow you trust: "
        + typed("advance", flow, allow_local=True)
        + " (no isolation)"
    ),
}


def exit_code_of(exc: PraxisError | SandboxUnavailable) -> int:
    """The CLI's exit code for ``exc`` (DESIGN.md §7)."""
    return exc.exit_code if isinstance(exc, PraxisError) else EXIT["unavailable"]


def next_of(exc: PraxisError | SandboxUnavailable, flow: str) -> str:
    """The command to try after ``exc``; a sandbox error by its most specific known class."""
    if isinstance(exc, PraxisError):
        return exc.next(flow)
    for cls in type(exc).__mro__:
        if cls.__name__ in SANDBOX_NEXT:
            return SANDBOX_NEXT[cls.__name__](flow)
    return SANDBOX_NEXT["SandboxUnavailable"](flow)
