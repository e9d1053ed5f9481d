"""What the shared behaviour suite runs every adapter in: one policy, one set of tools that
write a ledger (the oracle for "ran exactly once"), a thread, an approver, and a gate that
is either an in-process ``Gate`` on SQLite or a ``Client`` of a real ``signoff serve``.

Each framework's ``Driver`` (``bh_<framework>.py``) turns the neutral script below — turns
of ``(tool, args, call id)`` calls, or a final text — into its own scripted model, runs its
own agent loop with signoff's adapter, and keeps the run's paused state where that
framework keeps it across a process (a checkpointer, a serialised run state, a session
store): every ``resume`` builds new framework objects from it, as a restarted process
would."""

from __future__ import annotations

import abc
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from signoff import Decision, Gate, Policy, SqliteStore
from signoff.identity import Identity
from signoff.model import ApprovalRequest

POLICY = """
[policy]
version = "shared-1"
gated = ["deploy", "refund"]
clarification_tool = "ask_user"

[tools.lookup]
[tools.deploy]
risk = "high"
[tools.refund]
risk = "low"
[tools.wipe]
[tools.ask_user]
[tools.delegate]

[[rules]]
id = "reads"
effect = "allow"
tool = "lookup"

[[rules]]
id = "no-wipe"
effect = "deny"
tool = "wipe"

[[rules]]
id = "delegating"
effect = "allow"
tool = "delegate"
"""

THREAD = "t-shared"
Call = tuple[str, dict[str, Any], str]  # tool, arguments, call id
Turn = Sequence[Call] | str  # the model's calls of one turn, or its final text


def tools(ledger: Path) -> list[Callable[..., Any]]:
    """The plain functions every framework wraps as its tools (names, parameters and
    docstrings are what the frameworks read); each call appends a line to ``ledger``."""
    def note(line: str) -> None:
        with ledger.open("a") as out:
            out.write(line + "\n")

    def lookup(key: str) -> str:
        """Look a key up."""
        note(f"lookup {key}")
        return f"value of {key}"

    def deploy(env: str) -> str:
        """Deploy to an environment."""
        note(f"deploy {env}")
        return f"deployed {env}"

    def refund(to: str, amount: int) -> str:
        """Refund someone."""
        note(f"refund {to} {amount}")
        return f"refunded {amount} to {to}"

    def wipe(target: str) -> str:
        """Wipe a target."""
        note(f"wipe {target}")
        return "wiped"

    def ask_user(question: str) -> str:
        """Ask the user a clarifying question."""
        note(f"ask_user {question}")
        return "the user says: main"

    return [lookup, deploy, refund, wipe, ask_user]


@dataclass
class World:
    """The gate, the approver and the ledger of one test."""

    tmp: Path
    remote: bool
    gate: Any  # a Gate, or a Client of a real server (``lc_remote.RemoteGate``)
    alice: Identity
    ledger: Path
    thread: str = THREAD
    policy_text: str = POLICY
    closing: list[Callable[[], None]] = field(default_factory=list)
    shared: bool = False  # the gate is a server's client other tests use after this one

    def ran(self) -> list[str]:
        return self.ledger.read_text().splitlines() if self.ledger.exists() else []

    def request(self, request_id: str) -> ApprovalRequest:
        return self.gate.get_request(request_id)  # type: ignore[no-any-return]

    def requests(self) -> list[ApprovalRequest]:
        """Every request of the thread, oldest first."""
        return list(self.gate.thread_requests(self.thread))

    def all_requests(self) -> list[ApprovalRequest]:
        """This test's requests, on its thread or another (a subagent may run on its own
        thread, named after this one's)."""
        return [r for r in self.gate.store.list_requests(status=None, limit=10_000)
                if r.thread_id is not None and r.thread_id.startswith(self.thread)]

    def decide(self, request_id: str, decision: Decision) -> None:
        """Alice's decision: in process, or over the API with her own token."""
        self.gate.decide(request_id, decision, identity=self.alice)

    def set_mode(self, mode: str) -> None:
        """The thread's review mode, set by an operator (``signoff threads mode``), never by
        the agent's run."""
        if self.remote:
            self.gate.server_gate(lambda g: g.set_thread_mode(self.thread, mode))
        else:
            self.gate.set_thread_mode(self.thread, mode)

    def restart(self) -> None:
        """A new gate over the same store, as a restarted process opens it."""
        if self.remote:
            self.gate = self.gate.reconnect()
            return
        self.gate.store.close()
        policy = Policy.from_toml(self.policy_text, source="shared.toml")
        self.gate = Gate(policy, SqliteStore(self.tmp / "signoff.db"), agent="agent-bot")

    def close(self) -> None:
        for step in reversed(self.closing):
            step()
        if self.shared:
            return
        if self.remote:
            self.gate.close()
        else:
            self.gate.store.close()


def world(tmp_path: Path, *, server: Any = None) -> World:
    """A new world in ``tmp_path``: over a new in-process gate, or over ``server`` (a
    ``bh_remote.SharedRemoteGate`` one worker's tests share, each on its own thread)."""
    policy = Policy.from_toml(POLICY, source="shared.toml")
    ledger = tmp_path / "ledger.txt"
    if server is not None:
        return World(tmp=tmp_path, remote=True, gate=server, alice=server.alice, ledger=ledger,
                     thread=f"t-{uuid.uuid4().hex[:12]}", shared=True)
    gate = Gate(policy, SqliteStore(tmp_path / "signoff.db"), agent="agent-bot")
    _, token = gate.add_user("alice")
    return World(tmp=tmp_path, remote=False, gate=gate, alice=gate.authenticate(token),
                 ledger=ledger)


class Script:
    """A scripted model's turns, consumed across the model objects of one agent's runs."""

    def __init__(self, turns: Sequence[Turn] = ()) -> None:
        self.queue: list[Turn] = list(turns)
        self.offered: list[list[str]] = []  # the tool names offered at each model call

    def next_turn(self) -> Turn:
        return self.queue.pop(0) if self.queue else "(the script ended)"


class Driver(Script, abc.ABC):
    """One framework's agent loop with signoff's adapter, driven by a neutral script.

    ``start`` runs a new run on the world's thread; ``resume`` wakes the paused run after
    people decided (new framework objects over the stored state; ``turns`` go on the
    script); ``replay`` delivers the last wake-up again, as a retrying framework would. Each
    returns the signoff request ids the run is paused on ([] once it ended). The model's
    turns come from one queue across runs, so a run that pauses before calling the model
    leaves its turns for the next."""

    name: str = ""
    # The framework ends a run whose model calls a tool it was not offered (the SDK's own
    # error), rather than telling the model: nothing runs either way.
    ends_on_unoffered_tool: bool = False

    def __init__(self, w: World) -> None:
        super().__init__()
        self.w = w
        self.told: dict[str, str] = {}  # call id → what the model last read for it

    @abc.abstractmethod
    def start(self, turns: Sequence[Turn], *, interaction_mode: str = "interactive",
              subagent_wait: float = 300.0) -> list[str]: ...

    @abc.abstractmethod
    def resume(self, turns: Sequence[Turn] = ()) -> list[str]: ...

    @abc.abstractmethod
    def replay(self) -> list[str]: ...

    def seen(self, call_id: str, text: str) -> None:
        self.told[call_id] = text

    @abc.abstractmethod
    def delegating(self, parent: Sequence[Turn], child: Sequence[Turn], *,
                   subagent_wait: float, interaction_mode: str = "interactive") -> list[str]:
        """A run whose ``delegate(task)`` tool runs a child agent of the same framework,
        gated by the same gate as the framework nests agents (an agent as a tool, a
        subagent inside a tool call), with the child's script. ``interaction_mode`` is the
        parent run's; the child is built as an application builds it, with no mode of its
        own: what it has of its parent's, the adapter gives it."""
