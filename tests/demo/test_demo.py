"""``signoff demo``: the server, a scripted agent whose tools really run, humans deciding.

The demo runs as a real subprocess, as a user (or CI) runs it: its output is
what is tested, and with ``--dir`` its database and workspace are opened again
afterwards to check what really happened.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from signoff.cli import main
from signoff.demo import AGENT, APPROVER, PLAN, SCRIPT, auto_approval
from signoff.store.sqlite import SqliteStore

SIGNOFF = str(Path(sys.executable).parent / "signoff")
LIMIT = 120  # seconds: a demo that hangs fails the test instead of the run


def _demo(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SIGNOFF, "demo", *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=LIMIT, check=False)


@pytest.mark.slow
def test_demo_auto_approve_runs_every_step_and_the_audit_verifies(tmp_path: Path) -> None:
    home = tmp_path / "demo"
    done = _demo("--auto-approve-after", "1", "--dir", str(home))
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    lines = out.splitlines()
    for number, step in enumerate(SCRIPT, start=1):
        at = lines.index(f"{number:2}. {step.say}")
        assert lines[at + 1].lstrip().startswith(step.tool), lines[at + 1]
        assert lines[at + 2].split()[0] == step.expect.value.upper(), lines[at + 2]
    words = " ".join(out.split())  # long lines are wrapped
    assert words.count("approved by demo-approver; ran once") == 3
    assert "BLOCKED risk medium: BLOCKED: this call needs a human decision" in words
    assert words.count("DENY risk critical [no-rm]: Denied by policy") == 2
    assert "ASK risk high: Waiting for human approval: access outside workspace 'workspace': " \
        "/etc/passwd" in words
    assert "wrote 50 bytes to plan.md" in words
    assert re.search(r"http://127\.0\.0\.1:\d+/login\?code=sol_\S+", out)
    # No token is printed: the commands name a file only this user can read.
    token_file = home / "admin.token"
    assert f"--token-file {token_file}" in out and "--token so_" not in out
    assert (token_file.stat().st_mode & 0o777) == 0o600
    assert token_file.read_text("utf-8").strip() not in out
    assert "All 8 steps went as the script expected." in out
    assert "run `signoff serve` to keep an inbox running" in out

    # The audit the demo verified is the one on disk, and it still verifies.
    printed = re.search(r"^audit verified: (\d+) events$", out, flags=re.MULTILINE)
    assert printed
    store = SqliteStore(home / "signoff.db")
    try:
        check = store.verify_audit()
        events = list(store.audit_events())
    finally:
        store.close()
    assert check.ok and check.count == int(printed.group(1)) == len(events)
    kinds = [e.kind for e in events]
    assert kinds.count("call.allowed") == 2 and kinds.count("call.denied") == 2
    assert kinds.count("call.blocked") == 1 and kinds.count("request.created") == 3
    assert {e.actor for e in events if e.kind == "decision.recorded"} == {APPROVER}
    assert {e.actor for e in events if e.kind == "request.created"} == {AGENT}
    for event in events:  # the audit trail is printed, one line per event
        assert re.search(rf"^\s+{event.index}\s+{re.escape(event.kind)}\s", out, re.MULTILINE)

    # The write happened in the workspace, exactly once.
    assert (home / "workspace" / "plan.md").read_text("utf-8") == PLAN
    write = next(e.request_id for e in events if e.kind == "request.created"
                 and json.loads(e.data)["tool"] == "write_file")
    ran = [e.kind for e in events if e.request_id == write]
    assert ran.count("request.executing") == 1 and ran.count("request.succeeded") == 1
    # Denied and blocked calls never ran: rm left the workspace as it was; the approved
    # redirection wrote todo.txt once (the blocked scheduled run did not append to it).
    assert sorted(p.name for p in (home / "workspace").iterdir()) == [
        "README.md", "notes.md", "plan.md", "src", "todo.txt"]
    assert (home / "workspace" / "todo.txt").read_text("utf-8").count("TODO") == 1


def _read_events(proc: subprocess.Popen[str]) -> Any:
    assert proc.stdout is not None
    for line in proc.stdout:
        yield json.loads(line)


@pytest.mark.slow  # the demo and a server as real processes
def test_decisions_over_http_while_the_demo_waits(tmp_path: Path) -> None:
    """A human answers through the HTTP API (as the inbox does): one rejection with a reason,
    two approvals. The demo never approves on its own here; the port it asked for is taken."""
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    proc = subprocess.Popen(
        [SIGNOFF, "demo", "--json", "--no-auto-approve", "--port", str(port),
         "--dir", str(tmp_path / "demo")],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    watchdog = threading.Timer(LIMIT, proc.kill)
    watchdog.start()
    try:
        events = _read_events(proc)
        start = next(events)
        assert start["event"] == "start"
        assert any(f"port {port} is taken" in note for note in start["notes"])
        assert not start["inbox"].endswith(f":{port}")
        assert "token=" not in start["login_url"] and "admin_token" not in start
        token = Path(start["admin_token_file"]).read_text("utf-8").strip()
        auth = {"Authorization": f"Bearer {token}"}
        steps: dict[int, dict[str, Any]] = {}
        rest: list[dict[str, Any]] = []
        with httpx.Client(base_url=start["inbox"], headers=auth, timeout=30) as client, \
                httpx.Client(timeout=30, follow_redirects=True) as browser:
            signed_in = browser.get(start["login_url"])  # the printed link signs the browser in
            assert signed_in.status_code == 200 and signed_in.url.path == "/inbox"
            with httpx.Client(timeout=30) as other:  # …once
                again = other.get(start["login_url"])
                assert again.status_code == 410 and "login_link_used" in again.text
            for event in events:
                if event["event"] == "pending":
                    assert event["inbox_url"] == f"{start['inbox']}/requests/{event['request_id']}"
                    page = browser.get(event["inbox_url"])
                    assert page.status_code == 200 and event["request_id"] in page.text
                    assert "--db" in event["cli"] and event["request_id"] in event["cli"]
                    body = ({"kind": "reject", "reason": "stay inside the workspace"}
                            if event["step"] == 3 else {"kind": "approve"})
                    answer = client.post(f"/api/v1/requests/{event['request_id']}/decisions",
                                         json=body)
                    assert answer.status_code == 200, answer.text
                elif event["event"] == "step":
                    steps[event["step"]] = event
                else:
                    rest.append(event)
        assert proc.wait(timeout=LIMIT) == 0, proc.stderr.read() if proc.stderr else ""
    finally:
        watchdog.cancel()
        proc.kill()
        proc.wait()
        taken.close()
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
    assert [steps[n]["effect"] for n in sorted(steps)] == [s.expect.value for s in SCRIPT]
    assert all(step["ok"] for step in steps.values())
    assert steps[3]["outcome"]["kind"] == "rejected"
    assert steps[3]["outcome"]["reason"] == "stay inside the workspace"
    assert steps[3]["decided_by"] == ["admin"]
    assert steps[6]["outcome"]["kind"] == "executed" and steps[6]["decided_by"] == ["admin"]
    assert steps[7]["outcome"]["result"]["exit_code"] == 0
    assert steps[8]["outcome"]["kind"] == "blocked"
    verified = next(e for e in rest if e["event"] == "verified")
    assert verified["ok"] and verified["count"] == sum(e["event"] == "audit" for e in rest)
    assert rest[-1] == {"event": "end", "ok": True, "steps": 8, "unexpected": [],
                        "kept": str((tmp_path / "demo").resolve())}
    assert (tmp_path / "demo" / "workspace" / "plan.md").read_text("utf-8") == PLAN


def test_without_a_terminal_the_demo_approves_after_3_seconds() -> None:
    assert auto_approval(None, no_auto_approve=False, interactive=False)[0] == 3.0
    assert "stdin is not a terminal" in (auto_approval(None, no_auto_approve=False,
                                                       interactive=False)[1] or "")
    assert auto_approval(None, no_auto_approve=False, interactive=True) == (None, None)
    assert auto_approval(1.0, no_auto_approve=False, interactive=False) == (1.0, None)
    assert auto_approval(None, no_auto_approve=True, interactive=False) == (None, None)


def test_demo_refuses_a_directory_that_is_not_empty(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "something").write_text("x")
    assert main(["demo", "--dir", str(tmp_path), "--auto-approve-after", "0"]) == 2
    assert "file_exists" in capsys.readouterr().err
    assert main(["demo", "--auto-approve-after", "-1"]) == 2
    assert "invalid_argument" in capsys.readouterr().err
