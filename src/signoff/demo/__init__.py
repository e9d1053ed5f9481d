"""``signoff demo``: the approval server, a scripted agent, humans deciding, the audit.

One command: a temporary SQLite database and workspace, the starter policy,
the server with its inbox on 127.0.0.1, and a deterministic agent (no LLM)
whose tools really run inside the workspace — but only through the gate. It
reads a file, lists the workspace, reads ``/etc/passwd`` (outside: a human is
asked), tries ``rm -rf`` twice (denied), writes a file and searches the code
(each waits for a human), and a scheduled run comes back ``blocked``. Asks
are decided in the inbox, with ``signoff requests approve``, or — with
``--auto-approve-after SECONDS`` — by the demo's own approver identity through
the same authenticated ``gate.decide``. It ends with the audit trail, verified.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from signoff.demo.report import Report
from signoff.demo.tools import FILES, make_workspace, register_tools, write_policy
from signoff.errors import ConfigurationError, SignoffError
from signoff.extras import needs
from signoff.identity import Identity, IdentityKind
from signoff.kernel.gate import Gate
from signoff.kernel.outcomes import Outcome, OutcomeKind, ProposalKind
from signoff.model import Decision, Effect, ToolCall
from signoff.policy import Policy, trusted_context
from signoff.store.sqlite import SqliteStore

if TYPE_CHECKING:
    from signoff.server.settings import ServerSettings

APPROVER = "demo-approver"
ADMIN = "admin"
AGENT = "demo-agent"
NO_TTY_AUTO_APPROVE = 3.0
# What a human may legitimately answer to an ask; anything else is a failed step.
HUMAN_OUTCOMES = (OutcomeKind.EXECUTED, OutcomeKind.REJECTED, OutcomeKind.RESPONDED)
RAN = {Effect.ALLOW: (OutcomeKind.EXECUTED,), Effect.ASK: HUMAN_OUTCOMES,
       Effect.DENY: (OutcomeKind.DENIED,), Effect.BLOCKED: (OutcomeKind.BLOCKED,)}


@dataclass(frozen=True, slots=True)
class Step:
    say: str
    tool: str
    args: dict[str, Any]
    expect: Effect
    interaction: str = "interactive"


PLAN = "# plan\n\n1. greet by name in src/app.py\n2. ship it\n"
SCRIPT = (
    Step("read a file inside the workspace", "read_file", {"path": "README.md"}, Effect.ALLOW),
    Step("list the workspace", "execute", {"command": "ls"}, Effect.ALLOW),
    Step("read a file outside the workspace", "read_file", {"path": "/etc/passwd"}, Effect.ASK),
    Step("try to delete everything", "execute", {"command": "rm -rf ."}, Effect.DENY),
    Step("hide the delete behind sudo and quotes", "execute", {"command": "sudo r''m -rf ."},
         Effect.DENY),
    Step("write the plan to a file", "write_file", {"path": "plan.md", "content": PLAN},
         Effect.ASK),
    Step("save the TODOs to a file (grep is allowed, its redirection writes)", "execute",
         {"command": "grep -rn TODO src > todo.txt"}, Effect.ASK),
    Step("a scheduled run, with nobody to ask, wants the same", "execute",
         {"command": "grep -rn TODO src > todo.txt"}, Effect.BLOCKED, interaction="scheduled"),
)


class AutoApprover:
    """Approves a pending request after ``after`` seconds unless someone decided it first —
    as the identity ``demo-approver``, through the gate's authenticated ``decide``."""

    def __init__(self, gate: Gate, identity: Identity, after: float) -> None:
        self.gate, self.identity, self.after = gate, identity, after

    @contextlib.contextmanager
    def watching(self, request_id: str) -> Iterator[None]:
        timer = threading.Timer(self.after, self._approve, args=(request_id,))
        timer.daemon = True
        timer.start()
        try:
            yield
        finally:
            timer.cancel()

    def _approve(self, request_id: str) -> None:
        with contextlib.suppress(SignoffError):  # decided (or expired) meanwhile: nothing to do
            self.gate.decide(request_id, Decision.approve(), identity=self.identity)


@dataclass(slots=True)
class Demo:
    db: Path
    base_url: str
    token_file: Path
    agent: Gate
    report: Report
    approver: AutoApprover | None

    def cli(self, request_id: str) -> str:
        # The token stays in its file: a command line would keep it in shell history.
        return (f"{_command()} requests approve {request_id} --db {self.db} "
                f"--token-file {self.token_file}")

    def run_step(self, number: int, step: Step) -> bool:
        self.report.step(number, step.say, step.tool, step.args, step.interaction)
        context = trusted_context(
            thread_id="nightly" if step.interaction == "scheduled" else "demo",
            run_id=f"run-{number}", interaction_mode=step.interaction)
        call = ToolCall(id=f"call-{number}", name=step.tool, args=step.args)
        proposal = self.agent.propose(call, context)
        self.report.verdict(proposal.verdict)
        decided_by: list[str] = []
        if proposal.kind is ProposalKind.ALLOWED:
            outcome = self._run_allowed(step)
        elif proposal.kind in (ProposalKind.PENDING, ProposalKind.DECIDED):
            assert proposal.request is not None
            outcome, decided_by = self._ask(number, proposal.request.id)
        else:
            outcome = Outcome(kind=OutcomeKind.DENIED if proposal.kind is ProposalKind.DENIED
                              else OutcomeKind.BLOCKED, code=proposal.verdict.code,
                              message=proposal.verdict.message)
        effect = proposal.verdict.effect
        ok = effect is step.expect and outcome.kind in RAN[effect]
        row = {"say": step.say, "tool": step.tool, "args": step.args,
               "interaction": step.interaction, "expected": step.expect.value,
               "effect": effect.value, "risk": proposal.verdict.risk.value,
               "rules": [r.rule for r in proposal.verdict.reasons if r.rule],
               "message": proposal.verdict.message, "request_id": proposal.request_id}
        self.report.outcome(number, row, outcome, decided_by, ok)
        return ok

    def _run_allowed(self, step: Step) -> Outcome:
        """An allowed call runs now, as ``Gate.run`` runs it: no request, no human."""
        try:
            return Outcome(kind=OutcomeKind.EXECUTED,
                           result=self.agent.tools[step.tool].fn(**step.args))
        except Exception as exc:  # the tool's failure is the step's outcome
            return Outcome(kind=OutcomeKind.FAILED, error=f"{type(exc).__name__}: {exc}")

    def _ask(self, number: int, request_id: str) -> tuple[Outcome, list[str]]:
        self.report.pending(number, request_id, url=f"{self.base_url}/requests/{request_id}",
                            cli=self.cli(request_id),
                            auto_after=self.approver.after if self.approver else None)
        watch = self.approver.watching(request_id) if self.approver else contextlib.nullcontext()
        with watch:
            waited = self.agent.wait(request_id)
        outcome = self.agent.resume(request_id) if waited.kind is OutcomeKind.APPROVED \
            else waited
        decided_by = list(dict.fromkeys(
            d.approver for d in self.agent.store.decisions(request_id)))
        return outcome, decided_by


def _command() -> str:
    """``signoff`` as it was invoked (``.venv/bin/signoff`` from the README), so the printed
    command works when pasted into another terminal in the same directory."""
    invoked = sys.argv[0] if sys.argv else ""
    return invoked if os.path.basename(invoked) == "signoff" else "signoff"


def auto_approval(seconds: float | None, *, no_auto_approve: bool,
                  interactive: bool) -> tuple[float | None, str | None]:
    """After how many seconds ``demo-approver`` approves, and why if the flag did not say."""
    if no_auto_approve:
        return None, None
    if seconds is None and not interactive:
        return NO_TTY_AUTO_APPROVE, (
            f"stdin is not a terminal: behaving as --auto-approve-after "
            f"{NO_TTY_AUTO_APPROVE:g} (give --no-auto-approve to wait for humans).")
    return seconds, None


def run_demo(*, as_json: bool = False, port: int = 8765, auto_approve_after: float | None = None,
             no_auto_approve: bool = False, keep_serving: bool = False,
             directory: str | None = None, interactive: bool = True) -> int:
    """Run the demo; 0 when every step went as scripted and the audit verifies."""
    with needs("server", "signoff demo"):  # it serves the inbox
        import signoff.server.app  # noqa: PLC0415
        import signoff.server.running  # noqa: F401, PLC0415
    if auto_approve_after is not None and not 0 <= auto_approve_after < 86400:
        raise ConfigurationError("--auto-approve-after takes 0 or more seconds (under a day)",
                                 code="invalid_argument")
    after, note = auto_approval(auto_approve_after, no_auto_approve=no_auto_approve,
                                interactive=interactive)
    with _ctrl_c_stops(), _home(directory) as home:
        return _run(home, report=Report(as_json=as_json), notes=[note] if note else [],
                    port=port, auto_after=after, keep_serving=keep_serving,
                    kept=str(home) if directory else None)


@contextlib.contextmanager
def _ctrl_c_stops() -> Iterator[None]:
    """The demo says "Ctrl-C stops the demo", so Ctrl-C does, as it stops ``serve``: a
    SIGINT ignored or blocked by whatever started the process (a shell's background job, a
    parent that ignored it while forking) would leave it waiting for a human forever."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    blocked = signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


@contextlib.contextmanager
def _home(directory: str | None) -> Iterator[Path]:
    if directory is None:
        with tempfile.TemporaryDirectory(prefix="signoff-demo-") as tmp:
            yield Path(tmp)
        return
    home = Path(directory).resolve()
    if home.exists() and any(home.iterdir()):
        raise ConfigurationError(f"{home} is not empty; give a new or empty directory",
                                 code="file_exists")
    home.mkdir(parents=True, exist_ok=True)
    yield home


def _run(home: Path, *, report: Report, notes: list[str], port: int, auto_after: float | None,
         keep_serving: bool, kept: str | None) -> int:
    from signoff.server.running import login_url  # noqa: PLC0415 (heavy imports)

    root, db, policy_path = home / "workspace", home / "signoff.db", home / "signoff.toml"
    root.mkdir()
    make_workspace(root)
    write_policy(policy_path, root)
    policy = Policy.load(policy_path)
    with contextlib.ExitStack() as stack:
        # The server's side and the agent's side share the database, not a connection.
        server_gate = Gate(policy, SqliteStore(db), agent=None)
        stack.callback(server_gate.close)
        agent = Gate(policy, SqliteStore(db), agent=AGENT)
        stack.callback(agent.close)
        register_tools(agent, root)
        token_file = admin_token_file(server_gate, home)
        approver = None
        if auto_after is not None:
            identity, _ = server_gate.add_user(APPROVER)
            approver = AutoApprover(server_gate, identity, auto_after)
        settings = _start_server(stack, server_gate, port, notes)
        base_url = settings.base_url
        code, _ = server_gate.mint_login_link(ADMIN, ttl=settings.limits.link_ttl)
        try:
            report.start({"workspace": str(root), "files": sorted(FILES),
                          "policy": str(policy_path), "db": str(db), "inbox": base_url,
                          "login_url": login_url(settings, code),
                          "admin_token_file": str(token_file),
                          "auto_approve_after": auto_after}, notes=notes)
            demo = Demo(db=db, base_url=base_url, token_file=token_file, agent=agent,
                        report=report, approver=approver)
            failed = [n for n, step in enumerate(SCRIPT, start=1) if not demo.run_step(n, step)]
            agent.flush()  # the agent's allowed/denied/blocked verdicts are batched
            report.audit(server_gate.audit_events(), db=str(db))
            verification = server_gate.verify_audit()
            report.verified(verification)
            ok = verification.ok and not failed
            report.end(ok=ok, steps=len(SCRIPT), failed=failed, kept=kept, serving=keep_serving)
            if keep_serving:
                _serve_until_interrupted(report, base_url)
        except KeyboardInterrupt:
            report.note(_interrupted(home, kept))
            return 130
    return 0 if ok else 1


def _interrupted(home: Path, kept: str | None) -> str:
    """The goodbye after Ctrl-C, true to what happens next to the demo's files."""
    if kept is not None:
        return (f"interrupted: the demo stops here. Its database, policy and workspace stay "
                f"in {kept}; requests nobody decided stay pending there.")
    return (f"interrupted: the demo stops here and removes its temporary directory {home} "
            "(database, policy and workspace, with the requests nobody decided); run it with "
            "--dir DIR to keep them.")


def admin_token_file(gate: Gate, home: Path) -> Path:
    """Create ``admin`` and keep its token in ``home/admin.token``, readable by this user only
    (the printed commands name the file, never the token)."""
    _, token = gate.add_user(ADMIN, kind=IdentityKind.ADMIN)
    path = home / "admin.token"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(token + "\n")
    return path


def _start_server(stack: contextlib.ExitStack, gate: Gate, port: int,
                  notes: list[str]) -> ServerSettings:
    """The inbox on 127.0.0.1:``port`` (a free port if that one is taken), until ``stack``
    closes; the settings name the port really bound."""
    from signoff.server import ServerSettings, create_app  # noqa: PLC0415 (heavy imports)
    from signoff.server.running import ServerThread  # noqa: PLC0415

    # A short feed poll: the server stops (and the demo ends) without waiting out a long one.
    app = create_app(gate, ServerSettings(host="127.0.0.1", port=port), feed_poll=0.2)
    try:
        server = ServerThread(app, host="127.0.0.1", port=port)
    except OSError:
        server = ServerThread(app, host="127.0.0.1", port=0)
        notes.insert(0, f"port {port} is taken (or not available): the inbox uses port "
                     f"{server.port} instead.")
    server.start()
    stack.callback(server.stop)
    return ServerSettings(host="127.0.0.1", port=server.port)


def _serve_until_interrupted(report: Report, url: str) -> None:
    report.note(f"The inbox stays up at {url} until Ctrl-C.")
    with contextlib.suppress(KeyboardInterrupt):
        while True:
            time.sleep(3600)
