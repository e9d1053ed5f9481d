"""The resident hook: the command ``signoff hook install claude-code --url`` writes (the
standard-library client) against a real ``signoff serve`` — what it imports, what it
answers, whose requests it may use, and how it refuses when it cannot ask."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "server"))

from procs import Live, live_server

from signoff.policy.starter import starter_toml

pytestmark = pytest.mark.slow  # real hook processes and a real server, seconds each


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    where = tmp_path_factory.mktemp("resident")
    with live_server("sqlite", where, starter_toml("{root}", "claude-code")) as running:
        for name in ("bot", "rival"):
            token = running.tokens.get(name) or json.loads(running.cli(
                "users", "add", name, "--kind", "agent", "--json").stdout)["token"]
            running.tokens[name] = token
            (where / f"{name}.token").write_text(token, "utf-8")
        yield running


def installed(live: Live, who: str = "bot", url: str | None = None) -> dict[str, str]:
    """The commands ``signoff hook install claude-code --url`` writes, by event."""
    project = live.cwd / f"project-{who}-{abs(hash(url))}"
    done = subprocess.run(
        [sys.executable, "-m", "signoff.cli", "hook", "install", "claude-code", "--dir",
         str(project), "--url", url or live.url, "--token-file",
         str(live.cwd / f"{who}.token"), "--wait", "5"],
        capture_output=True, text=True, timeout=60, check=True)
    assert "signoff hooks" in done.stdout
    settings = json.loads((project / ".claude" / "settings.json").read_text("utf-8"))
    return {name: entries[0]["hooks"][0]["command"]
            for name, entries in settings["hooks"].items()}


def run(command: str, stdin: str, *, env: dict[str, str] | None = None
        ) -> subprocess.CompletedProcess[str]:
    """The command as Claude Code runs it: through a shell, the event on stdin."""
    return subprocess.run(["/bin/sh", "-c", command], input=stdin, capture_output=True,
                          text=True, timeout=60, check=False, env=env)


def event(session: str, tool: str, args: dict[str, object], name: str = "PreToolUse",
          **more: object) -> str:
    return json.dumps({"session_id": session, "cwd": "/tmp", "hook_event_name": name,
                       "tool_name": tool, "tool_input": args, "tool_use_id": "toolu_r",
                       **more})


def decision(done: subprocess.CompletedProcess[str]) -> tuple[str, str]:
    assert done.returncode == 0, done.stderr
    specific = json.loads(done.stdout)["hookSpecificOutput"]
    return specific["permissionDecision"], specific["permissionDecisionReason"]


def pending(live: Live, session: str) -> list[dict[str, object]]:
    with live.client("ann") as ann:
        found: list[dict[str, object]] = ann.get(
            "/api/v1/requests", params={"status": "pending", "thread_id": session}
        ).json()["requests"]
    return found


def test_the_installed_command_imports_no_part_of_signoff(served: Live) -> None:
    """What the harness starts for every call loads the client module and the standard
    library's core only: no signoff package, no json, no http.client, no ssl."""
    pre = installed(served)["PreToolUse"]
    assert " -S -I -c " in pre and "signoff hook claude-code" in pre
    traced = pre.replace(" -S -I -c ", " -S -I -X importtime -c ", 1)
    done = run(traced, event("imports", "Read", {"file_path": str(served.cwd / "x.txt")}))
    modules = {line.split("|")[-1].strip() for line in done.stderr.splitlines()
               if line.startswith("import time:") and "|" in line}
    assert "resident" in modules, done.stderr[-500:]
    assert not {m for m in modules if m.split(".")[0] in
                {"signoff", "json", "http", "ssl", "socket", "email", "re", "urllib"}}, modules
    assert json.loads(done.stdout)["hookSpecificOutput"]["permissionDecision"] == "allow"


def test_allowed_asked_approved_run_and_reported(served: Live) -> None:
    commands = installed(served)
    session = "resident-flow"
    kind, _ = decision(run(commands["PreToolUse"], event(session, "Bash",
                                                         {"command": "git status"})))
    assert kind == "allow"
    args = {"command": "make release"}
    asked = run(commands["PreToolUse"].replace("--wait 5", "--wait 0.3"),
                event(session, "Bash", args))
    kind, reason = decision(asked)
    [request] = pending(served, session)
    assert kind == "deny" and f"{served.url}/requests/{request['id']}" in reason
    # The request names the harness as its agent, the token's user as its principal, the
    # session as its thread.
    assert (request["agent"], request["principal"], request["tool"]) == (
        "claude-code", "bot", "Bash")
    served.cli("requests", "approve", str(request["id"]), "--token", served.tokens["ann"])
    kind, reason = decision(run(commands["PreToolUse"], event(session, "Bash", args)))
    assert kind == "allow" and str(request["id"]) in reason
    # The claim waits on the server for the result: the post-call event settles it.
    done = run(commands["PostToolUse"], event(session, "Bash", args, name="PostToolUse",
                                              tool_response={"stdout": "built"}))
    assert done.returncode == 0 and done.stdout == "", done.stderr
    with served.client("ann") as ann:
        shown = ann.get(f"/api/v1/requests/{request['id']}").json()
    assert shown["status"] == "succeeded"
    exported = served.cli("audit", "export", "--json")
    created = [e for e in json.loads(exported.stdout) if e["kind"] == "request.created"
               and e["request_id"] == request["id"]]
    assert [(e["data"]["agent"], e["data"]["thread_id"], e["actor"]) for e in created] == [
        ("claude-code", session, "bot")]
    assert json.loads(served.cli("audit", "verify", "--json").stdout)["ok"]
    # Approved once, run once: the same call again asks afresh.
    kind, reason = decision(run(commands["PreToolUse"].replace("--wait 5", "--wait 0.3"),
                                event(session, "Bash", args)))
    assert kind == "deny" and str(request["id"]) not in reason
    [again] = pending(served, session)
    assert again["id"] != request["id"]


def test_another_agent_cannot_run_an_approval_it_was_not_given(served: Live) -> None:
    """The same session id and call from another agent's token finds the first agent's
    request by its call id but may not read or claim it: a deny, and the approval is
    still there for the agent it was given to."""
    mine, theirs = installed(served, "bot"), installed(served, "rival")
    session, args = "resident-shared", {"command": "make deploy"}
    decision(run(mine["PreToolUse"].replace("--wait 5", "--wait 0.3"),
                 event(session, "Bash", args)))
    [request] = pending(served, session)
    served.cli("requests", "approve", str(request["id"]), "--token", served.tokens["ann"])
    kind, reason = decision(run(theirs["PreToolUse"], event(session, "Bash", args)))
    assert kind == "deny" and "not allowed" in reason
    with served.client("ann") as ann:
        assert ann.get(f"/api/v1/requests/{request['id']}").json()["status"] == "approved"
    kind, reason = decision(run(mine["PreToolUse"], event(session, "Bash", args)))
    assert kind == "allow" and str(request["id"]) in reason


def test_a_denied_call_is_denied_with_the_policy_message(served: Live) -> None:
    kind, reason = decision(run(installed(served)["PreToolUse"],
                                event("resident-deny", "Bash", {"command": "rm -rf /"})))
    assert kind == "deny" and reason


@pytest.mark.parametrize("case", ["closed port", "bad token", "no token file", "not http",
                                  "a query in the harness"])
def test_it_refuses_with_exit_2_when_it_cannot_ask(served: Live, tmp_path: Path,
                                                   case: str) -> None:
    """Every harness blocks a call on exit 2 and shows stderr as the reason."""
    command = installed(served)["PreToolUse"]
    token = str(served.cwd / "bot.token")
    if case == "closed port":
        command = command.replace(served.url, "http://127.0.0.1:9")
    elif case == "bad token":
        (tmp_path / "bad.token").write_text("not-a-token", "utf-8")
        command = command.replace(token, str(tmp_path / "bad.token"))
    elif case == "no token file":
        command = command.replace(token, str(tmp_path / "missing.token"))
    elif case == "not http":
        command = command.replace(served.url, "ftp://127.0.0.1:9")
    else:  # a pre-call event sent as a post-call one would answer nothing (no block)
        command = command.replace("hook claude-code", "hook 'claude-code?event=post&x='")
    done = run(command.removesuffix(" || exit 2"),
               event("resident-refuse", "Bash", {"command": "git status"}))
    assert done.returncode == 2 and done.stdout == ""
    assert "signoff hook:" in done.stderr and "not allowed" in done.stderr
    if case == "bad token":
        assert "HTTP 401" in done.stderr


def test_the_route_says_what_it_answers(served: Live) -> None:
    """The route's own shape: the hook's stdout as the body, its exit code and stderr in
    headers; an unknown harness is a 404 with its code; codex refuses an ask handed to a
    prompt it does not have, saying so on stderr."""
    with served.client("bot") as bot:
        got = bot.post("/api/v1/hooks/claude-code", content=event(
            "resident-route", "Read", {"file_path": str(served.cwd / "x.txt")}))
        assert got.status_code == 200 and got.headers["signoff-exit-code"] == "0"
        assert json.loads(got.text)["hookSpecificOutput"]["hookEventName"] == "PreToolUse"
        missing = bot.post("/api/v1/hooks/cursor", content="{}")
        assert missing.status_code == 404 and missing.json()["code"] == "unknown_harness"
        # Not a JSON object: a typed 4xx (the client then exits 2, which blocks the call).
        for junk, code in (("not json", "invalid_json"), ("[1]", "not_an_object")):
            refused = bot.post("/api/v1/hooks/claude-code", content=junk)
            assert refused.status_code == 422 and refused.json()["code"] == code, refused.text
        codex = bot.post("/api/v1/hooks/codex", params={"ask_locally": "true"},
                         content=event("resident-route", "Bash", {"command": "ls"}))
        assert "--ask-locally is not supported" in json.loads(codex.headers["signoff-stderr"])
        assert json.loads(codex.text)["hookSpecificOutput"]["permissionDecision"] == "deny"
    with served.client() as nobody:
        assert nobody.post("/api/v1/hooks/claude-code", content="{}").status_code == 401


def test_the_full_command_with_url_speaks_the_same_route(served: Live) -> None:
    """``signoff hook claude-code --url`` (the whole CLI) sends the event the same way."""
    done = subprocess.run(
        [sys.executable, "-m", "signoff.cli", "hook", "claude-code", "--url", served.url,
         "--token-file", str(served.cwd / "bot.token")],
        input=event("resident-cli", "Bash", {"command": "git status"}), capture_output=True,
        text=True, timeout=60, check=False, env={**os.environ})
    assert decision(done)[0] == "allow"


@pytest.mark.parametrize("harness", ["claude-code", "gemini", "codex"])
def test_switching_to_the_resident_hook_replaces_the_in_process_one(tmp_path: Path,
                                                                   harness: str) -> None:
    """Hooks installed with ``--signoff "python -m signoff.cli"`` are signoff's too: the
    resident install replaces them, and the other way round — one hook per event."""
    env = {**os.environ, "HOME": str(tmp_path / "home"), "CODEX_HOME": str(tmp_path / "cx")}
    base = [sys.executable, "-m", "signoff.cli", "hook", "install", harness, "--dir",
            str(tmp_path)]
    modes = (["--db", str(tmp_path / "s.db"), "--signoff", f"{sys.executable} -m signoff.cli"],
             ["--url", "http://127.0.0.1:8765", "--token-file", str(tmp_path / "t")],
             ["--db", str(tmp_path / "s.db"), "--signoff", f"{sys.executable} -m signoff.cli"])
    folder = {"claude-code": ".claude/settings.json", "gemini": ".gemini/settings.json",
              "codex": ".codex/hooks.json"}[harness]
    for flags in modes:
        subprocess.run([*base, *flags], capture_output=True, text=True, timeout=60,
                       check=True, env=env)
        hooks = json.loads((tmp_path / folder).read_text("utf-8"))["hooks"]
        commands = [h["command"] for entries in hooks.values() for e in entries
                    for h in e["hooks"]]
        assert len(commands) == 2, commands
        assert all(flags[1] in command for command in commands), commands


def test_codex_through_the_resident_hook(served: Live, tmp_path: Path) -> None:
    """Codex's installed resident hook (its trust written for that command) answers in
    Codex's form: an allowed command gets no output, a denied one a deny."""
    env = {**os.environ, "HOME": str(tmp_path / "home"), "CODEX_HOME": str(tmp_path / "cx")}
    subprocess.run([sys.executable, "-m", "signoff.cli", "hook", "install", "codex", "--dir",
                    str(tmp_path), "--url", served.url, "--token-file",
                    str(served.cwd / "bot.token"), "--wait", "1"],
                   capture_output=True, text=True, timeout=60, check=True, env=env)
    hooks = json.loads((tmp_path / ".codex" / "hooks.json").read_text("utf-8"))["hooks"]
    pre = hooks["PreToolUse"][0]["hooks"][0]["command"]
    assert " -S -I -c " in pre and "signoff hook codex" in pre
    assert "trusted_hash" in (tmp_path / "cx" / "config.toml").read_text("utf-8")
    allowed = run(pre, event("resident-codex", "Bash", {"command": "git status"}))
    assert (allowed.returncode, allowed.stdout) == (0, ""), allowed.stderr
    denied = run(pre, event("resident-codex", "Bash", {"command": "rm -rf /"}))
    assert denied.returncode == 0
    assert json.loads(denied.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    with served.client("ann") as ann:
        requests = ann.get("/api/v1/requests", params={"thread_id": "resident-codex"}).json()
    assert requests["requests"] == []  # allowed and denied outright: nothing to approve


def test_an_ask_approved_while_the_hook_waits_runs_at_once(served: Live) -> None:
    """The server's wait wakes on the decision (its change feed), not at the wait's end:
    approved while the hook waits 30 s, the call is allowed."""
    command = installed(served)["PreToolUse"].replace("--wait 5", "--wait 30")
    session, args = "resident-wake", {"command": "make wake"}
    answered: list[subprocess.CompletedProcess[str]] = []
    waiting = threading.Thread(target=lambda: answered.append(
        run(command, event(session, "Bash", args))))
    started = time.monotonic()
    waiting.start()
    while not (found := pending(served, session)):
        assert time.monotonic() - started < 20, "no request appeared"
        time.sleep(0.05)
    served.cli("requests", "approve", str(found[0]["id"]), "--token", served.tokens["ann"])
    waiting.join(timeout=40)
    kind, reason = decision(answered[0])
    assert kind == "allow" and str(found[0]["id"]) in reason
    assert time.monotonic() - started < 25  # woken, not timed out (30 s)
