"""The flow chat: what the model is told, and the loop of one message (DESIGN.md §9).

The system prompt explains what a flow is from the contract's own key lists
(``praxis.flows.definition.contract``), so it names exactly the keys ``praxis check`` accepts. One
message from the person is one turn: model calls with tool calls until the model answers
without one, or until ``max_calls`` calls, where the turn ends politely and says so (unlike
an agent phase, whose limit fails the phase). Every message is appended to the transcript
as it happens.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from praxis.agent.model import ENV, ModelUnavailable, resolve_model
from praxis.agent.spec import DEFAULT_LIMITS
from praxis.command_line import typed
from praxis.errors import PraxisError
from praxis.flows.definition import contract, kinds, safe_yaml
from praxis.flows.model.check_spec import CHECK_KEYS
from praxis.flows.model.flow import REVIEW_MODES
from praxis.llm import loop
from praxis.llm.given import Approver
from praxis.phases.kinds import KEYS
from sandbox import backends

from .authoring import NOBODY, SCHEMAS, Authoring, ToolResult
from .transcript import Transcript, latest, new_session
from .workfiles import Write

MAX_CALLS = 30
NOTE = "[praxis] "
# A chat without a model: the scripted model replaying this session writes a small flow
SCRIPTED = "praxis.agent.scripted:ScriptedChatModel"
EXAMPLE_SESSION = Path(__file__).resolve().with_name("example_session.json")

KEY_HELP: dict[str, str] = {
    # top level
    "flow": "the flow's name, [a-z0-9][a-z0-9-]*; defaults to the folder name",
    "description": "one or two sentences for people",
    "sandbox": (
        "where phases run: {backend: auto, memory: 2g, cpus: 1, timeout: 600, packages: [...]}; "
        "the backends are listed below, each with its own options"
    ),
    "model": "the chat model of agent phases, 'provider:model' (PRAXIS_MODEL overrides it)",
    "database": "for agent extracts: a connection of the person's profile by name (warehouse), "
    "or a SQLite or DuckDB file inside the flow folder (data/shop.sqlite); never a host, URL, "
    "password or ${VAR}",
    "phases": "the ordered list of phases (at least one)",
    "notify": (
        "who is told when a run waits at a Gate, fails or is done: {to: team, when: [gate, "
        "failed, done]}, naming targets of the person's profile; a webhook URL or a command "
        "is the person's (their profile), never flow.yaml's"
    ),
    "params": (
        "run parameters with their defaults, {name: value}; `praxis run FLOW -p name=value` "
        "overrides one; code reads the variable `params`"
    ),
    # a phase
    "id": "unique, [a-z0-9_-]+",
    "kind": "script | notebook | agent",
    "script": "the .py (script) or .ipynb (notebook) file the phase runs",
    "prompt": "agent phases: the prompt file (the task, in plain words)",
    "scripts": "agent phases: prepared scripts the agent may run without approval",
    "queries": "agent phases: prepared SQL queries for extract_prepared",
    "inputs": "{working: [...], reference: [...]}",
    "outputs": "the files the phase must produce, by plain name (unique across phases)",
    "may_be_empty": "declared .csv/.tsv outputs allowed to have a header and no rows",
    "review": (
        "none | required: 'required' puts a Gate after the phase, where a person reads and "
        "may edit its outputs before approving"
    ),
    "limits": "agent phases: {model_calls: N, run_python: N}",
    "timeout": "seconds, overrides sandbox.timeout for this phase",
    "notebook": (
        "notebook phases: {allow_errors: true} runs past a failing cell, as nbclient's "
        "allow_errors does, and records the error"
    ),
    "reuse": (
        "auto | never: 'never' always runs the phase, for code that reads the clock or "
        "randomness (by default a script or notebook phase whose definition and pre-state "
        "equal a done attempt of any run of the flow is restored, not run); a query phase: "
        "never (its default) or {within: 1h}, how long its result stays fresh"
    ),
    "retries": (
        "{count: 3, backoff: 10s, on: [timeout, kernel_died, out_of_memory]}: a failed "
        "attempt tried again from the phase's pre-state (agent phases only with agent: true)"
    ),
    "foreach": (
        "one phase over partitions, each in its own sandbox: {param: region, values: [...]}, "
        "{param: month, range: [2026-01, 2026-12]} or {files: data/parts/*.csv}; outputs go "
        "to output/<phase>/<partition>/"
    ),
    "parallel": "with foreach: how many partitions run at once (default 1)",
    "schedule": (
        '{cron: "0 6 * * 1-5", timezone: Europe/Berlin, catchup: latest|all|none}: praxis '
        "serve starts one run per tick; code reads params['tick']"
    ),
    "trigger": (
        '{files: "incoming/*.csv", settle: 30s}: one run per new or changed file once it '
        "stopped changing; code reads params['file']"
    ),
    "publish": (
        "[{output: summary.csv, to: {connection: NAME, table: T, mode: upsert|replace, key: "
        "[...]}}]: once a person approved the last Gate, written through a profile "
        "connection marked write: true"
    ),
    "checks": (
        "what a declared table must satisfy after the phase and after every Gate edit: "
        "{name.csv: {columns: [...], unique: [...], not_null: [...], values: {col: [...]}, "
        "min_rows: N, key: [...]}} (the keys of a table's checks are listed below)"
    ),
    # inputs
    "working": (
        "files uploaded to the phase's working directory: flow files (data/sales.csv) or "
        "outputs of earlier phases (clean.csv)"
    ),
    "reference": "files read into an agent's prompt (agents only)",
}

# The keys of one table's entry under a phase's checks: (check_spec.CHECK_KEYS).
CHECK_HELP: dict[str, str] = {
    "columns": "columns the table must have",
    "unique": "columns whose every value differs from the others'",
    "not_null": "columns with no empty cell",
    "values": "{column: [allowed values]}",
    "min_rows": "at least N data rows",
    "max_rows": "at most N data rows",
    "dtype": "{column: integer|number|bool|date|string}; empty cells are left to not_null",
    "script": "a flow file run with the table's name as sys.argv[1]; fails by raising",
    "same_columns": "at a Gate the edited table keeps the phase's header (default true)",
    "key": (
        "the columns that together identify a row (no two rows share them, none is empty); "
        "`rerun --keep-edits` re-applies a reviewer's edit to the new output by this key "
        "(default: the first unique column)"
    ),
}


def known_keys() -> dict[str, tuple[str, ...]]:
    """The keys flow.yaml may hold, by place, as the contract knows them."""
    return {
        "top level": tuple(contract.TOP_KEYS),
        "a phase": tuple(contract.PHASE_KEYS),
        "a phase's inputs": tuple(contract.INPUT_KEYS),
        "a table's checks": tuple(CHECK_KEYS),
    }


def system_prompt() -> str:
    sections = [
        "You help a person write or change a praxis flow. A flow is a folder holding "
        "flow.yaml and the scripts, notebooks, prompts and data files it names. A run "
        "executes the phases in order, each in a fresh sandboxed Python kernel whose working "
        "directory holds the phase's working inputs by the names flow.yaml gives them; a "
        "phase writes its outputs there by plain relative name. Files carry state between "
        "phases, memory never does.",
        _keys_text(),
        f"Phase kinds: {', '.join(kinds.names())}. A script phase runs `script:` (.py), a "
        "notebook phase runs `script:` (.ipynb), an agent phase is one model turn driven by "
        f"`prompt:`; only agent phases take {', '.join(repr(k) for k in KEYS['agent'])}.",
        f"Review modes: {', '.join(REVIEW_MODES)}. A Gate (review: required) pauses the run "
        "after the phase; a person reads and may edit that phase's outputs, then approves or "
        "reopens a phase with a note. You cannot approve a Gate, and neither can try_phase in "
        "the real flow: it passes Gates only inside its throwaway run.",
        f"Agent limits (limits:): {_defaults(DEFAULT_LIMITS)}. "
        f"Sandbox backends: {_backends_text()}.",
        "Rules the contract checks: an input is a file of the flow or an output of an EARLIER "
        "phase; output names are unique across phases; every declared output must be written "
        "by its phase; a declared .csv/.tsv with a header and no rows fails unless listed in "
        "may_be_empty; paths stay inside the folder.",
        "Tools: list_files(), read_file(path), write_file(path, text), check(), profile(path), "
        "run_python(code), try_phase(phase). write_file works inside the flow folder only "
        "(never runs/, run.lock or .chat/); the person sees every write as a diff and can undo "
        "it. run_python runs in a scratch sandbox with a copy of the flow's files and needs the "
        "person's approval. try_phase runs a phase (and the phases before it) in a throwaway "
        "copy of the flow and reports its outputs or its error.",
        "Work in small steps: look at the files and profile the data before writing; after "
        "writing flow.yaml call check and fix what it reports; try phases you wrote. Keep "
        "scripts short and plain (pandas is installed). When you are done or need the person, "
        "answer in a few sentences without a tool call.",
    ]
    return "\n\n".join(sections)


def _defaults(table: Mapping[str, Any]) -> str:
    return ", ".join(f"{k} (default {v})" for k, v in table.items())


def _backends_text() -> str:
    """Each backend, with the options flow.yaml may give it (auto takes docker's)."""
    parts = []
    for name in backends.names():
        options = backends.options_for(name).names(flow=True)
        parts.append(f"{name} ({', '.join(options) or 'no options of its own'})")
    return "; ".join(parts)


def _keys_text() -> str:
    blocks = []
    for place, keys in known_keys().items():
        lines = [f"Keys of {place}:"]
        for key in keys:
            helps = CHECK_HELP if place == "a table's checks" else KEY_HELP
            help_text = helps.get(key, "see the README")
            lines.append(f"- `{key}`: {help_text}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def folder_note(tools: Authoring) -> str:
    files = tools.files.listing()
    shown = ", ".join(f"{p} ({s:,} bytes)" for p, s in files[:40]) or "none"
    state = "has a flow.yaml" if (tools.root / "flow.yaml").is_file() else "has no flow.yaml yet"
    return f"The flow folder `{tools.root.name}` {state}. Its files: {shown}."


# -- the loop -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ChatEvent:
    """What the person sees as the turn goes: assistant text, a tool call, its result."""

    kind: str  # assistant | tool | result | diff | limit
    text: str
    tool: str = ""


@dataclass
class TurnOutcome:
    answer: str
    calls: int
    limited: bool = False  # the call limit ended the turn


class ChatError(PraxisError):
    """Raised when the model cannot be called (the transcript keeps what happened)."""

    def next(self, flow: str) -> str:
        return typed("chat", flow, resume=True)


@dataclass
class Chat:
    """One chat session over flow folder ``root`` (see ``open_chat``)."""

    root: Path
    session: str
    model: Any
    tools: Authoring
    transcript: Transcript
    max_calls: int = MAX_CALLS
    show: Callable[[ChatEvent], None] = lambda event: None
    messages: list[BaseMessage] = field(default_factory=list)

    def send(self, text: str) -> TurnOutcome:
        """One message from the person, answered by as many model calls as it takes."""
        first = not self.messages
        body = f"{text}\n\n{NOTE}{folder_note(self.tools)}" if first else text
        self._add(HumanMessage(body))
        self.tools.runs = 0
        try:
            bound = loop.bind(self.model, SCHEMAS)
        except loop.NoToolCalling as exc:
            raise ChatError(str(exc)) from exc
        ended = loop.run(
            call=lambda number: self._call(bound, number),
            add=self._add,
            answer=self._tool,
            max_calls=self.max_calls,
            said=lambda text, number: self.show(ChatEvent("assistant", text)),
        )
        if ended.limited:
            note = (
                f"The chat stopped after {ended.calls} model calls, its limit for one message. "
                "Nothing is lost: send another message to go on."
            )
            self.show(ChatEvent("limit", note))
            self._add(HumanMessage(f"{NOTE}{note}"))
        return TurnOutcome(ended.answer, ended.calls, limited=ended.limited)

    def note(self, text: str) -> None:
        """Tell the model something the person did outside the conversation (an undo)."""
        self._add(HumanMessage(f"{NOTE}{text}"))

    def undo(self) -> Write | None:
        """Undo the newest write of this session and tell the model so."""
        write = self.tools.files.undo()
        if write is not None:
            self._add(undo_note(write))
        return write

    def interrupted(self) -> None:
        """After Ctrl-C in a turn: answer the tool calls left open, so the chat can go on."""
        fixed = answered(self.messages)
        for message in fixed[len(self.messages) :]:
            self.transcript.append(message)
        self.messages = fixed
        self._add(HumanMessage(f"{NOTE}The person stopped your last answer before it finished."))

    def close(self) -> None:
        self.tools.close()

    def _tool(self, request: Mapping[str, Any], call_id: str) -> ToolMessage:
        name = str(request["name"])
        args = dict(request.get("args") or {})
        self.show(ChatEvent("tool", tool_summary(name, args), tool=name))
        result: ToolResult = self.tools.call(name, args)
        if result.diff:
            self.show(ChatEvent("diff", result.diff, tool=name))
        self.show(ChatEvent("result", result.text, tool=name))
        artifact = (
            {"status": result.status, "diff": result.diff}
            if result.diff
            else {"status": result.status}
        )
        return ToolMessage(
            result.text,
            tool_call_id=call_id,
            name=name,
            artifact=artifact,
            status="error" if result.status != "ok" else "success",
        )

    def _call(self, bound: Any, number: int) -> AIMessage:
        history = [SystemMessage(system_prompt()), *self.messages]
        try:
            reply, seconds = loop.invoke(bound, history, number)
        except loop.CallFailed as exc:
            raise ChatError(str(exc)) from exc.__cause__
        reply.response_metadata.setdefault("praxis_seconds", seconds)
        return reply

    def _add(self, message: BaseMessage) -> None:
        self.messages.append(message)
        self.transcript.append(message)


def undo_note(write: Write) -> HumanMessage:
    """What the model is told when the person undoes one of its writes."""
    if write.before is None:
        what = "removed it (your write had created it)"
    else:
        what = "restored the version before your write"
    return HumanMessage(f"{NOTE}The person undid your last write of {write.path}: praxis {what}.")


def tool_summary(name: str, args: Mapping[str, Any]) -> str:
    if name == "write_file":
        return f"write_file {args.get('path', '?')} ({len(str(args.get('text', ''))):,} characters)"
    if name == "run_python":
        code = str(args.get("code", ""))
        return f"run_python ({len(code.splitlines())} lines)"
    shown = ", ".join(str(v)[:80] for v in args.values())
    return f"{name} {shown}".rstrip()


def open_chat(
    root: Path,
    *,
    model: Any,
    resume: bool | str = False,
    approver: Approver | None = None,
    sandbox: Mapping[str, Any] | None = None,
    max_calls: int = MAX_CALLS,
    show: Callable[[ChatEvent], None] = lambda event: None,
    nobody: str = NOBODY,
) -> Chat:
    """A chat over ``root`` (created if missing): a new session, or with ``resume`` the
    newest one (or the session it names)."""
    root.mkdir(parents=True, exist_ok=True)
    root = root.resolve()
    probe = Authoring(root, "00000000-000000")
    chat_dir = probe.files.chat_dir()
    session = None
    if isinstance(resume, str):
        session = resume
    elif resume:
        session = latest(chat_dir)
    if session is None:
        session = new_session(chat_dir)
    tools = Authoring(root, session, approver=approver, sandbox=sandbox, nobody=nobody)
    transcript = Transcript(chat_dir, session)
    messages = answered(transcript.load())
    return Chat(root, session, model, tools, transcript, max_calls, show, messages)


def answered(messages: list[BaseMessage]) -> list[BaseMessage]:
    """``messages`` with a result for every tool call (a chat stopped mid-call leaves none)."""
    done = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    fixed: list[BaseMessage] = []
    for m in messages:
        fixed.append(m)
        if isinstance(m, AIMessage):
            for call in m.tool_calls:
                if call.get("id") and call["id"] not in done:
                    fixed.append(
                        ToolMessage("stopped: the chat ended before this call finished",
                                    tool_call_id=call["id"], name=call["name"], status="error")
                    )  # fmt: skip
    return fixed


def resolve_chat_model(root: Path, env: Mapping[str, str] | None = None) -> Any:
    """The chat model, chosen as an agent phase's is: PRAXIS_MODEL, else flow.yaml ``model``."""
    spec = None
    definition = root / "flow.yaml"
    if definition.is_file() and not definition.is_symlink():
        doc = safe_yaml.read(definition, max_bytes=contract.MAX_DEFINITION_BYTES)
        if doc.readable and isinstance(doc.data, dict) and isinstance(doc.data.get("model"), str):
            spec = doc.data["model"]
    try:
        return resolve_model(spec, env=env, flow_root=root)
    except ModelUnavailable as exc:
        if "no chat model" in str(exc):
            from praxis.agent.scripted import SCRIPT_ENV

            raise ModelUnavailable(
                f"no chat model for the chat: set {ENV}=openai:gpt-4.1-mini (or any "
                "provider:model, or package.module:Class), or 'model:' in flow.yaml; to try "
                f"the chat without one, set {ENV}={SCRIPTED} and {SCRIPT_ENV}={EXAMPLE_SESSION} "
                "(a scripted session that writes a small flow)"
            ) from None
        raise
