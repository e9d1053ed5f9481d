"""Every code block in README.md and docs/ that is meant to run runs, one test per block.

The convention (docs/internals/snippets.md): ```python blocks are executed, ```toml blocks
load as policies, ```json blocks parse, ```sh blocks of ``signoff`` commands run in a
temporary directory and ```sh usage lines (``signoff users add NAME [--roles a,b]``) are
checked against the command's ``--help``. A block preceded by ``<!-- snippet: no-run: WHY
-->`` is not run; ``<!-- snippet: continues -->`` runs a Python block in the namespace of
the page's previous one. Whatever a block needs from outside — a policy, a server, a chat
model, an approver — the test stands in for, the way a reader's setup would.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from signoff import Decision, Gate, Policy, SqliteStore
from signoff.model import RequestStatus
from signoff.policy import parse_policy
from signoff.policy.starter import starter_toml

ROOT = Path(__file__).parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
MARKER = re.compile(r"<!--\s*snippet:\s*([\w-]+)(.*?)-->\s*\Z", re.S)
RUNS = {"python", "toml", "json", "sh"}
SIGNOFF = re.compile(r"^(\.venv/bin/)?signoff(\s|$)")
BIN = Path(sys.executable).parent


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    lang: str
    code: str
    marker: str  # "", "no-run", "continues"
    reason: str

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks() -> list[Block]:
    found = []
    for page in PAGES:
        text = page.read_text("utf-8")
        for match in FENCE.finditer(text):
            before = text[:match.start()].rstrip()
            marked = MARKER.search(before[-300:])
            found.append(Block(page, text.count("\n", 0, match.start()) + 1, match[1],
                               match[2], marked[1] if marked else "",
                               marked[2].strip(" :—-") if marked else ""))
    return found


ALL = blocks()


def _commands(code: str) -> list[str]:
    """The block's commands: continuation lines joined, comments and blank lines dropped."""
    joined = re.sub(r"\\\n\s*", " ", code)
    out = []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        if words:
            out.append(line)
    return out


def _is_usage(code: str) -> bool:
    """A usage line: ``[--option]`` brackets or a placeholder word such as ``NAME``."""
    return bool(re.search(r"\s\[|(?:^|[\s(|])[A-Z][A-Z_]+(?=[\s)|\]]|$)", code, re.M))


def _kind(block: Block) -> str:
    if block.marker == "no-run":
        return "no-run"
    if block.lang == "sh":
        commands = _commands(block.code)
        if SIGNOFF.match(block.code) and _is_usage(block.code):
            return "usage"
        if not all(SIGNOFF.match(c) for c in commands):
            return "unmarked"  # a shell block that isn't signoff's says why it doesn't run
        return "sh"
    return block.lang


def test_snippets_are_found() -> None:
    kinds = [_kind(b) for b in ALL]
    assert kinds.count("python") >= 8 and kinds.count("usage") >= 20 and kinds.count("sh") >= 2
    assert all(b.reason for b in ALL if b.marker == "no-run"), "a no-run marker says why"


def test_every_shell_block_runs_or_says_why() -> None:
    unmarked = [b.id for b in ALL if _kind(b) == "unmarked"]
    assert not unmarked, f"mark these <!-- snippet: no-run: WHY --> or make them run: {unmarked}"


# --- stand-ins ------------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Approver:
    """A person at the inbox: approves whatever waits in the database, until stopped."""

    def __init__(self, gate: Gate, name: str = "stand-in-approver") -> None:
        self.gate = gate
        self.identity = gate.authenticate(gate.add_user(name)[1])
        self.stop = threading.Event()
        self.approved: list[str] = []
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.wait(0.05):
            for request in self.gate.store.list_requests(status=RequestStatus.PENDING):
                self.gate.decide(request.id, Decision.approve(), identity=self.identity)
                self.approved.append(request.id)

    def __enter__(self) -> Approver:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        self.thread.join(5)


def _scripted_model(*_: Any, **__: Any) -> Any:
    """What ``init_chat_model("provider:model")`` returns here: a model that asks to run
    ``make deploy`` once, then answers."""
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
    from langchain_core.messages import AIMessage

    class Scripted(FakeMessagesListChatModel):
        def bind_tools(self, tools: Any, **_: Any) -> Any:  # type: ignore[override]
            return self

    return Scripted(responses=[
        AIMessage(content="", tool_calls=[
            {"name": "execute", "args": {"command": "make deploy"}, "id": "call_1"}]),
        AIMessage(content="Deployed.")])


@pytest.fixture
def place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A reader's working directory: a starter signoff.toml over ./workspace, a home."""
    (tmp_path / "workspace").mkdir()
    (tmp_path / "home").mkdir()
    (tmp_path / ".venv").symlink_to(BIN.parent)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PATH", f"{BIN}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("OPENAI_API_KEY", "stand-in")
    for name in [n for n in os.environ if n.startswith("SIGNOFF_")]:
        monkeypatch.delenv(name)
    return tmp_path


def _policy(place: Path) -> None:
    (place / "signoff.toml").write_text(starter_toml(str(place / "workspace")), "utf-8")


# --- Python ---------------------------------------------------------------------------

PYTHON = [b for b in ALL if _kind(b) == "python"]
NEEDS_SERVER = re.compile(r"\bClient\(")


def _python_params() -> Iterator[Any]:
    for block in PYTHON:
        heavy = NEEDS_SERVER.search(block.code) or "create_deep_agent" in block.code
        slow = [pytest.mark.slow] if heavy else []
        yield pytest.param(block, id=block.id, marks=slow)


def _policy_for(place: Path, code: str) -> None:
    """The policy the page set up before its block: deepagents' preset for deepagents."""
    if "deepagents" in code:
        root = "/srv/agent/workspace" if "/srv/agent/workspace" in code else str(place)
        (place / "signoff.toml").write_text(starter_toml(root, "deepagents"), "utf-8")
    else:
        _policy(place)


def _stand_in_models(code: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if "init_chat_model" in code or "create_" in code:
        import langchain.agents.factory
        import langchain.chat_models

        monkeypatch.setattr(langchain.chat_models, "init_chat_model", _scripted_model)
        monkeypatch.setattr(langchain.agents.factory, "init_chat_model", _scripted_model)
        if "deepagents" in code:
            import deepagents._models

            monkeypatch.setattr(deepagents._models, "init_chat_model", _scripted_model)


def _execute(block: Block, place: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Run the block (after the one it continues) with what it needs standing in."""
    namespace: dict[str, Any] = {"__name__": "__snippet__"}
    if block.marker == "continues":
        earlier = [b for b in PYTHON if b.page == block.page and b.line < block.line]
        assert earlier, f"{block.id} continues nothing"
        namespace = _execute(earlier[-1], place, monkeypatch)
    else:
        _policy_for(place, block.code)
    _stand_in_models(block.code, monkeypatch)
    code = compile(block.code, block.id, "exec")
    if NEEDS_SERVER.search(block.code):
        _with_server(place, monkeypatch, code, namespace)
    elif "wait_and_resume(" in block.code and "agent.invoke" in block.code:
        gate = Gate(Policy.load("signoff.toml"), SqliteStore("signoff.db"))
        with Approver(gate) as approver:
            exec(code, namespace)
        assert approver.approved, "the run paused for a human, who approved"
        gate.close()
    else:
        exec(code, namespace)
    return namespace


@pytest.mark.parametrize("block", list(_python_params()))
def test_python_block_runs(block: Block, place: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """It runs; where it ends with a call's outcome, the call ran, and an agent run that
    paused for a human finished after the approval."""
    namespace = _execute(block, place, monkeypatch)
    outcome = namespace.get("outcome")
    if outcome is not None:
        assert outcome.kind.value == "executed", outcome
    out = namespace.get("out")
    if isinstance(out, dict) and "messages" in out:
        assert out["messages"][-1].content == "Deployed.", out["messages"][-1]


def _with_server(place: Path, monkeypatch: pytest.MonkeyPatch, code: Any,
                 namespace: dict[str, Any]) -> None:
    from signoff.server import ServerSettings, create_app
    from signoff.server.running import ServerThread

    gate = Gate(Policy.load("signoff.toml"), SqliteStore("signoff.db"))
    _, token = gate.add_user("my-agent", kind="agent")
    (place / "home" / ".config" / "signoff").mkdir(parents=True)
    (place / "home" / ".config" / "signoff" / "token").write_text(token + "\n", "utf-8")
    monkeypatch.setenv("SIGNOFF_TOKEN", token)
    app = create_app(gate, ServerSettings(port=0), feed_poll=0.2)
    with ServerThread(app) as server, Approver(gate) as approver:
        monkeypatch.setenv("SIGNOFF_URL", server.url)
        exec(code, namespace)
    assert approver.approved, "the call waited for a human, who approved"
    gate.close()


# --- TOML and JSON --------------------------------------------------------------------

@pytest.mark.parametrize("block", [b for b in ALL if _kind(b) == "toml"], ids=lambda b: b.id)
def test_toml_block_loads_as_a_policy(block: Block) -> None:
    parse_policy(block.code, source=block.id)


@pytest.mark.parametrize("block", [b for b in ALL if _kind(b) == "json"], ids=lambda b: b.id)
def test_json_block_parses(block: Block) -> None:
    json.loads(block.code)


# --- shell ----------------------------------------------------------------------------

def _usage_params() -> Iterator[Any]:
    for block in ALL:
        if _kind(block) == "usage":
            command = " ".join(block.code.split())
            yield pytest.param(command, id=f"{block.id}:{command.split('[')[0].strip()}")


def _help(path: list[str]) -> str:
    """``signoff PATH --help``, from the parser the command line uses (in-process: quick)."""
    import contextlib
    import io

    from signoff.cli import build_parser

    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exited:
        build_parser().parse_args([*path, "--help"])
    assert exited.value.code == 0, path
    return out.getvalue()


_HELP: dict[tuple[str, ...], str] = {}


@pytest.mark.parametrize("command", list(_usage_params()))
def test_usage_line_matches_the_help(command: str) -> None:
    """A documented usage line names a real command, and every option it shows exists."""
    words = command.split()[1:]
    path = []
    for word in words:
        if not re.fullmatch(r"[a-z][a-z-]*", word):
            break
        path.append(word)
    key = tuple(path)
    if key not in _HELP:
        _HELP[key] = _help(path)
    for option in re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", command):
        assert option in _HELP[key], f"signoff {' '.join(path)} has no {option}"


SHELL = [b for b in ALL if _kind(b) == "sh"]


@pytest.mark.slow
@pytest.mark.parametrize("block", SHELL, ids=lambda b: b.id)
def test_shell_block_runs(block: Block, place: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each command exits 0; ``signoff serve`` runs in the background meanwhile, on a free
    port, and ends with SIGTERM."""
    if " init " not in f" {block.code} ":
        _policy(place)
    port = _free_port()
    monkeypatch.setenv("SIGNOFF_PORT", str(port))
    server: subprocess.Popen[str] | None = None
    try:
        for command in _commands(block.code):
            if shlex.split(command, comments=True)[1:2] == ["serve"]:
                server = subprocess.Popen(["bash", "-c", f"exec {command}"], text=True,
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                _wait_for(port, server)
                continue
            out = subprocess.run(["bash", "-c", command], capture_output=True, text=True,
                                 timeout=60, check=False)
            assert out.returncode == 0, (command, out.stdout, out.stderr)
    finally:
        if server is not None:
            server.terminate()
            server.communicate(timeout=30)


def _wait_for(port: int, server: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert server.poll() is None, server.communicate()
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"signoff serve did not listen on {port}")
