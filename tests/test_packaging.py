"""The package as a user installs it (docs/install.md).

The wheel is built once from a copy of the tree (``python -m build --wheel``: no
deprecation warning, the LICENSE inside, the SPDX license in its metadata). Then each
extra is installed ALONE from that wheel into a fresh virtual environment — the
dependencies from the package index, through the shared pip cache — and runs its
example: the core ``init``/``check``/``requests``/``users``/``audit`` on SQLite (and one
typed ``missing_extra`` line for each optional part), the server answering ``/healthz``,
PostgreSQL, Slack, the LangChain, deepagents and MCP examples, the reviewers.

A quick test runs the core in a subprocess with every optional library hidden by an
import hook: what the core reaches must never import them.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
# The libraries the extras bring (and their own big dependencies): none is the core's.
OPTIONAL = ("fastapi", "starlette", "uvicorn", "jinja2", "multipart", "python_multipart",
            "prometheus_client", "pydantic", "psycopg", "psycopg_pool", "slack_sdk",
            "langchain", "langchain_core", "langchain_openai", "langgraph", "deepagents",
            "mcp", "openai", "webauthn", "claude_agent_sdk", "agents", "google",
            "agent_framework")
SLACK = """
[notify.slack]
token_env = "SLACK_TOKEN"
signing_secret_env = "SLACK_SIGNING"
channel = "C0123456789"
"""
REVIEW = """
[review]
reviewer = "openai"
model = "gpt-4.1-mini"
base_url = "http://127.0.0.1:9/v1"
api_key_env = "SIGNOFF_TEST_KEY"
"""
ENV = {"SLACK_TOKEN": "xoxb-test", "SLACK_SIGNING": "signing-test",
       "SIGNOFF_TEST_KEY": "sk-test"}


# ---------------------------------------------------------------------------------------
# The core with every optional library hidden (quick: one subprocess)

_HIDDEN_RUN = """
import contextlib, importlib.abc, io, json, os, sys
HIDE = set(sys.argv[1].split(","))

class Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in HIDE:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Hide())
from signoff.cli import main

results = {}
for argv in json.loads(sys.argv[2]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    results[argv[0] + (" pg" if "--db" in argv else "")] = [code, out.getvalue(), err.getvalue()]
try:
    import signoff.adapters.langchain
except ModuleNotFoundError as exc:
    results["import langchain adapter"] = [1, "", str(exc)]
try:
    import signoff.adapters.claude_agent
except ModuleNotFoundError as exc:
    results["import claude-agent adapter"] = [1, "", str(exc)]
try:
    import signoff.adapters.openai_agents
except ModuleNotFoundError as exc:
    results["import openai-agents adapter"] = [1, "", str(exc)]
try:
    import signoff.adapters.pydantic_ai
except ModuleNotFoundError as exc:
    results["import pydantic-ai adapter"] = [1, "", str(exc)]
try:
    import signoff.adapters.google_adk
except ModuleNotFoundError as exc:
    results["import google-adk adapter"] = [1, "", str(exc)]
try:
    import signoff.adapters.agent_framework
except ModuleNotFoundError as exc:
    results["import agent-framework adapter"] = [1, "", str(exc)]
import signoff.remote
import signoff.receipts  # what an executor elsewhere imports: the core alone
exec("from signoff import *")  # the public API's star import needs no extra
results["star"] = [0, " ".join(sorted(k for k in dir() if k in ("Gate", "SqliteStore"))), ""]
results["loaded"] = [0, " ".join(sorted(m for m in sys.modules if m.split(".")[0] in HIDE)), ""]
print(json.dumps(results))
"""


def test_the_core_runs_with_every_optional_library_hidden(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    commands = [
        ["init", "--root", "ws"],
        ["check", "--tool", "read_file", "--args", '{"path": "ws/notes.md"}', "--json"],
        ["db", "migrate"],
        ["users", "add", "alice"],
        ["requests", "list"],
        ["audit", "verify"],
        ["keys", "list"],
        ["serve", "--port", "0"],
        ["demo", "--port", "0"],
        ["requests", "list", "--db", "postgresql://127.0.0.1:1/none"],
        ["mcp-proxy", "--", "true"],
    ]
    done = subprocess.run([sys.executable, "-c", _HIDDEN_RUN, ",".join(OPTIONAL),
                           json.dumps(commands)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout)
    for command in ("init", "check", "db", "users", "requests", "audit", "keys"):
        assert results[command][0] == 0, (command, results[command])
    assert json.loads(results["check"][1])["effect"] == "allow"
    assert "no requests" in results["requests"][1]
    assert "audit ok" in results["audit"][1]
    assert "no signing key published" in results["keys"][1]
    assert results["star"][1] == "Gate SqliteStore"
    for command, extra in (("serve", "server"), ("demo", "server"), ("requests pg", "postgres"),
                           ("mcp-proxy", "mcp")):
        code, out, err = results[command]
        assert code == 2, (command, out, err)
        assert err.count("\n") == 1, err  # one line
        assert "[missing_extra]" in err
        assert f"pip install 'signoff[{extra}]'" in err
    assert "pip install 'signoff[langchain]'" in results["import langchain adapter"][2]
    assert "pip install 'signoff[claude-agent]'" in results["import claude-agent adapter"][2]
    assert "pip install 'signoff[openai-agents]'" in results["import openai-agents adapter"][2]
    assert "pip install 'signoff[google-adk]'" in results["import google-adk adapter"][2]
    assert "pip install 'signoff[pydantic-ai]'" in results["import pydantic-ai adapter"][2]
    assert ("pip install 'signoff[agent-framework]'"
            in results["import agent-framework adapter"][2])
    assert results["loaded"][1] == ""  # nothing optional was imported, even in part


# ---------------------------------------------------------------------------------------
# Each extra alone, from the wheel, in a fresh virtual environment (slow)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built from a copy of the tree (the build writes beside its sources)."""
    base = tmp_path_factory.mktemp("wheel")
    tree = base / "tree"
    tree.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, tree / name)
    shutil.copytree(ROOT / "src", tree / "src", ignore=shutil.ignore_patterns(
        "__pycache__", "*.egg-info", "*.pyc"))
    built = subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir",
                            str(base / "dist"), str(tree)], capture_output=True, text=True,
                           timeout=600, check=False)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    assert "Deprecat" not in built.stdout + built.stderr  # e.g. a license = { text = … }
    (found,) = (base / "dist").glob("signoff-*.whl")
    return found


@pytest.mark.slow
def test_the_wheel_carries_the_license_and_its_metadata(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        info = next(n for n in names if n.endswith(".dist-info/METADATA"))
        metadata = zf.read(info).decode()
        license_file = next(n for n in names if n.endswith(".dist-info/licenses/LICENSE"))
        assert "Apache License" in zf.read(license_file).decode()
    assert "License-Expression: Apache-2.0" in metadata
    assert "Project-URL: Repository, https://github.com/signoff-dev/signoff" in metadata
    assert "Classifier: Typing :: Typed" in metadata
    for extra in ("server", "postgres", "slack", "langchain", "deepagents", "mcp", "review",
                  "claude-agent", "openai-agents", "google-adk", "agent-framework",
                  "all", "dev"):
        assert f"Provides-Extra: {extra}" in metadata
    # The core stays slim: none of the extras' libraries is a plain requirement.
    plain = [line.split(":", 1)[1].strip() for line in metadata.splitlines()
             if line.startswith("Requires-Dist:") and "extra ==" not in line]
    for heavy in ("fastapi", "uvicorn", "psycopg", "slack-sdk", "langchain", "openai", "mcp",
                  "claude-agent-sdk", "openai-agents", "google-adk",
                  "agent-framework-core"):
        assert not any(dep.startswith(heavy) for dep in plain), plain
    checked = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", str(wheel)],
                             capture_output=True, text=True, timeout=120, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr


class Venv:
    """A fresh virtual environment holding the wheel with one extra."""

    def __init__(self, home: Path, wheel: Path, extra: str) -> None:
        self.home = home
        self.bin = home / "venv" / "bin"
        subprocess.run([sys.executable, "-m", "venv", str(home / "venv")], check=True,
                       timeout=120)
        target = f"{wheel}[{extra}]" if extra else str(wheel)
        installed = subprocess.run(
            [str(self.bin / "python"), "-m", "pip", "install", "-q",
             "--disable-pip-version-check", target],
            capture_output=True, text=True, timeout=1200, check=False)
        assert installed.returncode == 0, installed.stderr[-3000:]
        self.work = home / "work"
        (self.work / "ws").mkdir(parents=True)

    def env(self) -> dict[str, str]:
        return {**os.environ, **ENV, "PATH": f"{self.bin}{os.pathsep}{os.environ['PATH']}"}

    def signoff(self, *args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([str(self.bin / "signoff"), *args], cwd=self.work, env=self.env(),
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == code, (args, done.stdout[-2000:], done.stderr[-2000:])
        return done

    def python(self, source: str) -> str:
        done = subprocess.run([str(self.bin / "python"), "-c", textwrap.dedent(source)],
                              cwd=self.work, env=self.env(), capture_output=True, text=True,
                              timeout=300, check=False)
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout

    def example(self, name: str, says: str) -> None:
        done = subprocess.run([str(self.bin / "python"), str(ROOT / "examples" / name)],
                              cwd=self.work, env=self.env(), capture_output=True, text=True,
                              timeout=300, check=False)
        assert done.returncode == 0, done.stderr[-3000:]
        assert says in done.stdout, done.stdout[-2000:]

    def has(self, module: str) -> bool:
        done = subprocess.run([str(self.bin / "python"), "-c", f"import {module}"],
                              capture_output=True, timeout=60, check=False)
        return done.returncode == 0

    def init(self, extra_toml: str = "") -> None:
        self.signoff("init", "--root", "ws")
        if extra_toml:
            with (self.work / "signoff.toml").open("a", encoding="utf-8") as fh:
                fh.write(extra_toml)

    def missing(self, extra: str, *args: str) -> None:
        """``args`` fail with one ``missing_extra`` line naming ``extra``."""
        done = self.signoff(*args, code=2)
        assert done.stderr.count("\n") == 1, done.stderr
        assert "[missing_extra]" in done.stderr
        assert f"pip install 'signoff[{extra}]'" in done.stderr


def serve_answers_healthz(venv: Venv) -> None:
    """``signoff serve`` on a free port answers /healthz, and stops on SIGTERM."""
    with subprocess.Popen([str(venv.bin / "signoff"), "serve", "--port", "0", "--json"],
                          cwd=venv.work, env=venv.env(), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as server:
        _healthz(server)


def _healthz(server: subprocess.Popen[str]) -> None:
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        assert line, server.stderr.read() if server.stderr else ""
        url = json.loads(line)["url"]
        with urllib.request.urlopen(f"{url}/healthz", timeout=10) as answer:
            assert answer.status == 200
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    assert server.returncode == 0, server.stderr.read() if server.stderr else ""


def mcp_listens(venv: Venv) -> None:
    """``signoff mcp-proxy --listen`` serves HTTP with the mcp extra alone: its Origin guard
    answers a foreign page with a problem (no FastAPI needed)."""
    with subprocess.Popen([str(venv.bin / "signoff"), "mcp-proxy", "--listen", "127.0.0.1:0",
                           "--json", "--", "true"], cwd=venv.work, env=venv.env(),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proxy:
        _refuses_a_foreign_origin(proxy)


def _refuses_a_foreign_origin(proxy: subprocess.Popen[str]) -> None:
    try:
        assert proxy.stdout is not None
        line = proxy.stdout.readline()
        assert line, proxy.stderr.read() if proxy.stderr else ""
        asked = urllib.request.Request(json.loads(line)["url"], data=b"{}", method="POST",
                                       headers={"Origin": "http://evil.example",
                                                "Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(asked, timeout=10)
        body = refused.value.read()
        refused.value.close()
        assert refused.value.code == 403
        assert json.loads(body)["code"] == "origin_not_allowed"
    finally:
        proxy.send_signal(signal.SIGINT)
        try:
            proxy.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proxy.kill()
            proxy.wait()
    assert proxy.returncode == 0, proxy.stderr.read() if proxy.stderr else ""


def mcp(venv: Venv) -> None:
    venv.example("mcp_proxy.py", "todo.md still there: False")
    venv.init()
    mcp_listens(venv)
    venv.missing("server", "serve")


def core(venv: Venv) -> None:
    venv.init()
    checked = venv.signoff("check", "--tool", "read_file", "--args", '{"path": "ws/a.md"}',
                           "--json")
    assert json.loads(checked.stdout)["effect"] == "allow"
    venv.signoff("db", "migrate")
    venv.signoff("users", "add", "alice")
    assert "no requests" in venv.signoff("requests", "list").stdout
    assert "audit ok" in venv.signoff("audit", "verify").stdout
    venv.python("import signoff, signoff.remote")
    venv.missing("server", "serve")
    venv.missing("server", "demo", "--port", "0")
    venv.missing("postgres", "requests", "list", "--db", "postgresql://127.0.0.1:1/none")
    venv.missing("mcp", "mcp-proxy", "--", "true")
    said = venv.python("""
        try:
            import signoff.adapters.langchain
        except ModuleNotFoundError as exc:
            print(exc)
    """)
    assert "pip install 'signoff[langchain]'" in said
    for module in ("fastapi", "uvicorn", "psycopg", "slack_sdk", "langchain", "mcp", "openai",
                   "claude_agent_sdk"):
        assert not venv.has(module), module
    assert not venv.has("pytest")  # nothing of the dev tools


def server(venv: Venv) -> None:
    venv.init()
    serve_answers_healthz(venv)
    venv.missing("postgres", "serve", "--db", "postgresql://127.0.0.1:1/none")
    with (venv.work / "signoff.toml").open("a", encoding="utf-8") as fh:
        fh.write(SLACK)
    venv.missing("slack", "serve", "--port", "0")


def postgres(venv: Venv, url: str) -> None:
    venv.init()
    venv.signoff("db", "migrate", "--db", url)
    venv.signoff("users", "add", "alice", "--db", url)
    assert "no requests" in venv.signoff("requests", "list", "--db", url).stdout
    venv.missing("server", "serve", "--db", url)


def slack(venv: Venv) -> None:
    venv.init(SLACK)
    said = venv.python("""
        import time
        from signoff import SqliteStore
        from signoff.notify.config import load_notify
        from signoff.notify.slack import SlackChannel
        store = SqliteStore("signoff.db")
        channel = SlackChannel(load_notify("signoff.toml").slack, store, clock=time.time,
                               timeout=5)
        print(channel.channel, type(channel.client).__name__)
        store.close()
    """)
    assert said.split() == ["slack", "WebClient"]


def review(venv: Venv) -> None:
    venv.init(REVIEW)
    # The policy builds its openai reviewer on load; the rule allows, so no model is asked.
    checked = venv.signoff("check", "--tool", "read_file", "--args", '{"path": "ws/a.md"}',
                           "--json")
    assert json.loads(checked.stdout)["effect"] == "allow"
    said = venv.python("""
        from langchain_openai import ChatOpenAI
        from signoff.review import ChatModelReviewer
        reviewer = ChatModelReviewer(ChatOpenAI(model="gpt-4.1-mini", api_key="sk-test"),
                                     timeout=5)
        print(reviewer.name)
    """)
    assert said.strip() == "langchain"


def claude_agent(venv: Venv) -> None:
    venv.init()
    said = venv.python("""
        from claude_agent_sdk import ClaudeAgentOptions
        from signoff import Gate, Policy, SqliteStore
        from signoff.adapters.claude_agent import signoff_can_use_tool
        gate = Gate(Policy.load("signoff.toml"), SqliteStore("signoff.db"))
        permit = signoff_can_use_tool(gate)
        options = ClaudeAgentOptions(can_use_tool=permit, hooks=permit.hooks)
        print(gate.agent, *sorted(options.hooks or {}))
        gate.close()
    """)
    assert said.split() == ["claude-agent-sdk", "PostToolUse", "PostToolUseFailure",
                            "PreToolUse"]
    venv.missing("server", "serve")


def everything(venv: Venv) -> None:
    venv.init(SLACK)
    serve_answers_healthz(venv)
    venv.python("""
        import signoff.adapters.deepagents, signoff.adapters.langchain, signoff.adapters.mcp
        import signoff.adapters.claude_agent, signoff.adapters.pydantic_ai
        import signoff.adapters.google_adk, signoff.adapters.openai_agents
        import signoff.adapters.agent_framework
        import signoff.review.chat_completions, signoff.store.postgres, signoff.notify.slack
        import langchain_openai
    """)


EXAMPLES: dict[str, Callable[[Venv], None]] = {
    "": core,
    "server": server,
    "slack": slack,
    "langchain": lambda v: v.example("langchain_agent.py", "audit verified: True"),
    "deepagents": lambda v: v.example("deepagents_agent.py",
                                      "[full] ask_user offered to the model: False"),
    "mcp": mcp,
    "review": review,
    "claude-agent": claude_agent,
    "openai-agents": lambda v: v.example("openai_agents_agent.py", "audit verified: True"),
    "pydantic-ai": lambda v: v.example("pydantic_ai_agent.py", "audit verified: True"),
    "google-adk": lambda v: v.example("google_adk_agent.py", "audit verified: True"),
    "agent-framework": lambda v: v.example("agent_framework_agent.py", "audit verified: True"),
    "all": everything,
}


@pytest.mark.slow
@pytest.mark.parametrize("extra", list(EXAMPLES), ids=lambda e: e or "core")
def test_each_extra_alone_from_the_wheel_runs_its_example(
        wheel: Path, tmp_path: Path, extra: str) -> None:
    EXAMPLES[extra](Venv(tmp_path, wheel, extra))


@pytest.mark.slow
def test_the_postgres_extra_alone_uses_postgresql(
        wheel: Path, tmp_path: Path, postgres_database: str) -> None:
    postgres(Venv(tmp_path, wheel, "postgres"), postgres_database)
