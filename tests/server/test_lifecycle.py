"""``signoff serve`` starts and stops like a well-behaved server (issue 43, item 1), through
real processes: a real SIGINT or SIGTERM ends it with one goodbye line and exit 0, what was
in flight is answered; a busy port or a bad host is one typed line, exit 2, before anything
is announced or any database made.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from procs import EXE, signoff

from signoff.server.graceful import GRACE

GOODBYE = "signoff serve: stopped"


@dataclass
class Running:
    proc: subprocess.Popen[str]
    url: str
    db: Path

    def stop(self, sig: signal.Signals = signal.SIGINT, timeout: float = 15
             ) -> tuple[int, str]:
        """Send ``sig``; the exit code and everything the server wrote to stderr."""
        self.proc.send_signal(sig)
        _, err = self.proc.communicate(timeout=timeout)
        return self.proc.returncode, err


def site(tmp_path: Path) -> Path:
    """A policy whose workspace is a subdirectory: serve has nothing to warn about."""
    (tmp_path / "ws").mkdir()
    signoff("init", "signoff.toml", "--root", str(tmp_path / "ws"), cwd=tmp_path)
    return tmp_path


@pytest.fixture
def running(tmp_path: Path) -> Iterator[Running]:
    """A real ``signoff serve --json`` on a free port, answering /healthz."""
    cwd = site(tmp_path)
    db = cwd / "signoff.db"
    proc = subprocess.Popen([str(EXE), "serve", "--db", str(db), "--port", "0", "--json"],
                            cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line, f"serve did not start: {proc.communicate(timeout=10)}"
        url = json.loads(line)["url"]
        deadline = time.monotonic() + 15
        while True:
            try:
                if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline and proc.poll() is None, "serve did not answer"
            time.sleep(0.05)
        yield Running(proc=proc, url=url, db=db)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=10)


def serve_once(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(EXE), "serve", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=60, check=False)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_serve_with_one_goodbye_line(running: Running,
                                                    sig: signal.Signals) -> None:
    code, err = running.stop(sig)
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert err.splitlines() == [f"{GOODBYE} ({sig.name})"], err
    assert code == 0


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_right_after_the_start_line_stops_serve(tmp_path: Path,
                                                         sig: signal.Signals) -> None:
    """The stop handlers are in place before the start-up line: a signal sent as soon as
    it is read (what a supervisor's quick restart does) stops the server too — it once
    met the event loop's own Ctrl-C handler and the server never stopped."""
    cwd = site(tmp_path)
    proc = subprocess.Popen([str(EXE), "serve", "--db", str(cwd / "signoff.db"), "--port",
                             "0", "--json"], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert json.loads(proc.stdout.readline())["url"]
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)
    assert err.splitlines() == [f"{GOODBYE} ({sig.name})"], err
    assert proc.returncode == 0


@pytest.mark.slow
def test_a_long_poll_and_an_event_stream_in_flight_are_answered_on_ctrl_c(
        running: Running) -> None:
    """A stop answers the agent's long-poll with the call's state (still pending) and ends
    the approver's event stream cleanly, at once — not a reset after the grace period."""
    cwd = running.db.parent

    def token(name: str, kind: str) -> str:
        added = signoff("users", "add", name, "--kind", kind, "--db", str(running.db),
                        "--json", cwd=cwd)
        return str(json.loads(added.stdout)["token"])

    agent, boss = token("bot", "agent"), token("boss", "admin")
    with httpx.Client(base_url=running.url, timeout=30,
                      headers={"Authorization": f"Bearer {agent}"}) as bot:
        proposed = bot.post("/api/v1/calls", json={
            "tool": "execute", "args": {"command": "make deploy"}, "call_id": "c1",
            "context": {"thread_id": "t1"}}).json()
    assert proposed["status"] == "pending", proposed
    answers: dict[str, Any] = {}

    def long_poll() -> None:
        with httpx.Client(base_url=running.url, timeout=60,
                          headers={"Authorization": f"Bearer {agent}"}) as http:
            try:
                answers["poll"] = http.get(f"/api/v1/calls/{proposed['request_id']}",
                                           params={"wait": 60})
            except httpx.HTTPError as exc:
                answers["poll"] = exc

    def stream() -> None:
        with httpx.Client(base_url=running.url, timeout=60,
                          headers={"Authorization": f"Bearer {boss}"}) as http:
            try:
                with http.stream("GET", "/api/v1/events") as events:
                    answers["stream_status"] = events.status_code
                    answers["stream"] = list(events.iter_lines())
            except httpx.HTTPError as exc:
                answers["stream"] = exc

    threads = [threading.Thread(target=f, daemon=True) for f in (long_poll, stream)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 15
    while True:  # both in flight, as the server counts them
        metrics = httpx.get(running.url + "/metrics", timeout=5).text
        if "signoff_waiters 1.0" in metrics and "signoff_event_streams 1.0" in metrics:
            break
        assert time.monotonic() < deadline, metrics
        time.sleep(0.05)
    asked = time.monotonic()
    code, err = running.stop(signal.SIGINT)
    took = time.monotonic() - asked
    for thread in threads:
        thread.join(10)
    poll = answers["poll"]
    assert isinstance(poll, httpx.Response), poll  # an answer, not a reset
    assert poll.status_code == 200 and poll.json()["kind"] == "pending", poll.text
    assert answers["stream_status"] == 200
    assert isinstance(answers["stream"], list), answers["stream"]  # ended, not cut
    assert ": connected" in answers["stream"]
    assert took < GRACE, f"the stop waited out the grace period ({took:.1f} s)"
    assert err.splitlines() == [f"{GOODBYE} (SIGINT)"], err
    assert code == 0


@pytest.mark.slow
def test_a_busy_port_is_one_typed_line_naming_its_holder(tmp_path: Path, busy: int) -> None:
    cwd = site(tmp_path)
    done = serve_once("--db", str(cwd / "signoff.db"), "--port", str(busy), cwd=cwd)
    assert done.returncode == 2
    assert done.stdout == "", "nothing announced"
    [line] = done.stderr.splitlines()
    assert line.startswith("signoff: error [port_in_use]: "), line
    assert f"127.0.0.1:{busy} is already in use (by pid {os.getpid()} " in line, line
    assert "--port 0" in line
    assert not (cwd / "signoff.db").exists(), "no database made for a server that can't run"


@pytest.mark.slow
def test_a_busy_port_with_json_is_one_json_line(tmp_path: Path, busy: int) -> None:
    cwd = site(tmp_path)
    done = serve_once("--db", str(cwd / "signoff.db"), "--port", str(busy), "--json",
                      cwd=cwd)
    assert done.returncode == 2
    [line] = done.stdout.splitlines()
    error = json.loads(line)["error"]
    assert error["code"] == "port_in_use"
    assert f":{busy} is already in use (by pid {os.getpid()} " in error["message"]


@pytest.mark.slow
def test_a_bad_host_is_one_typed_line(tmp_path: Path) -> None:
    cwd = site(tmp_path)
    done = serve_once("--db", str(cwd / "signoff.db"), "--host", "999.1.1.1", "--port", "0",
                      cwd=cwd)
    assert done.returncode == 2
    assert done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith("signoff: error [bad_host]: '999.1.1.1' is not an IPv4 address")
    assert not (cwd / "signoff.db").exists()
