"""Hostile arguments against backtracking-prone rules, on a real ``signoff serve``.

Each call carries an argument of about 1 MiB built to make a backtracking matcher retry
every split (``**/build/**/*.log`` against ``build/build/…``, ``re:(a+)+b`` against a run
of ``a``). While they are judged, another client asks ``/healthz`` again and again: every
answer must come promptly, and every call must get the verdict its rules say. Before RE2,
one such call held the server for seconds to hours (the GIL stays with Python's ``re``).
The speed goal itself (<= 50 ms a call) is measured by bench/linear_bench.py.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import httpx
import pytest
from procs import live_server

POLICY = """
[policy]
version = "hostile"
unknown_tools = "ask"
gated = ["read_file", "fetch", "send_email"]

[tools.read_file]
[tools.fetch]
[tools.search]
[tools.send_email]

[[rules]]
id = "build-logs"
effect = "allow"
tool = "read_file"
args = { path = "**/build/**/*.log" }

[[rules]]
id = "nested-repeat"
effect = "deny"
tool = "fetch"
args = { url = "re:(a+)+b" }

[[rules]]
id = "many-stars"
effect = "ask"
mandatory = true
tool = "search"
args = { q = "*a*a*a*a*a*a*b" }

[[rules]]
id = "colleagues"
effect = "allow"
tool = "send_email"
args = { to = "*@example.com" }

[[rules]]
id = "no-competitor"
effect = "deny"
tool = "send_email"
args = { cc = "re:(?:.*,)*.*@competitor\\\\.example" }
"""

SIZE = 1024 * 1024 - 256  # the arguments' limit is 1 MiB of canonical JSON
BUILD = "build/" * (SIZE // 6)
RUN = "a" * SIZE
CALLS = [
    ("read_file", {"path": BUILD + "x.log"}, "allowed"),
    ("read_file", {"path": BUILD + "x.lo"}, "pending"),
    ("fetch", {"url": RUN + "b"}, "denied"),
    ("fetch", {"url": RUN}, "pending"),
    ("search", {"q": RUN}, "allowed"),
    ("search", {"q": RUN + "b"}, "pending"),
    ("send_email", {"to": ["a@example.com", RUN + "@example.co"]}, "pending"),
    ("send_email", {"to": "a@example.com", "cc": "x," * (SIZE // 2 - 64)}, "allowed"),
]
PROMPT = 2.0  # seconds: /healthz waits for no judgement


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_hostile_arguments_are_judged_while_healthz_answers(backend: str,
                                                            tmp_path: Path) -> None:
    with live_server(backend, tmp_path, POLICY) as live:
        verdicts: list[tuple[str, str]] = []
        failures: list[BaseException] = []
        done = threading.Event()

        def agent() -> None:
            try:
                with live.client("bot") as bot:
                    for n, (tool, args, _) in enumerate(CALLS):
                        answer = bot.post("/api/v1/calls", json={
                            "tool": tool, "args": args, "call_id": f"hostile-{n}",
                            "context": {"thread_id": "t-hostile"}})
                        verdicts.append((tool, answer.json().get("status", answer.text)))
            except BaseException as exc:  # the main thread reports it
                failures.append(exc)
            finally:
                done.set()

        worker = threading.Thread(target=agent)
        worker.start()
        slowest = 0.0
        with httpx.Client(base_url=live.url, timeout=30) as probe:
            while not done.is_set():
                start = time.monotonic()
                assert probe.get("/healthz").status_code == 200
                slowest = max(slowest, time.monotonic() - start)
                time.sleep(0.02)
        worker.join()
        assert not failures, failures
        assert verdicts == [(tool, expected) for tool, _, expected in CALLS]
        assert slowest < PROMPT, f"/healthz waited {slowest:.2f} s"
