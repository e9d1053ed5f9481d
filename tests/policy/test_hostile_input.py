"""Hostile arguments get a verdict quickly and never an exception."""

from __future__ import annotations

import time
from typing import Any

import pytest

from signoff import Policy, ToolCall
from signoff.model import Effect

POLICY = """
[policy]
version = "hostile"
[workspace]
name = "ws"
root = "{root}"
[tools.read_file]
paths = ["path"]
[tools.execute]
shell = "command"
[[rules]]
id = "env"
effect = "ask"
mandatory = true
tool = "read_file"
args = {{ path = "**/.env" }}
"""


@pytest.fixture(scope="module")
def policy(tmp_path_factory: pytest.TempPathFactory) -> Policy:
    root = tmp_path_factory.mktemp("hostile")
    return Policy.from_toml(POLICY.format(root=root))


CASES: list[tuple[str, str, Any, Effect]] = [
    ("many-outside-paths", "read_file", {"path": [f"/etc/x{i}" for i in range(50_000)]},
     Effect.ASK),
    ("many-inside-paths", "read_file", {"path": [f"src/x{i}" for i in range(50_000)]},
     Effect.ASK),
    ("env-hidden-past-the-cap", "read_file",
     {"path": [*(f"src/x{i}" for i in range(5_000)), ".env"]}, Effect.ASK),
    ("huge-path", "read_file", {"path": "a/" * 300_000}, Effect.DENY),
    ("deep-args", "read_file", '{"a":' * 10_000 + "1" + "}" * 10_000, Effect.DENY),
    ("wide-args", "read_file", {f"k{i}": i for i in range(60_000)}, Effect.ALLOW),
    ("shell-64k", "execute", {"command": "ls " + "a" * 70_000}, Effect.ASK),
    ("shell-many-words", "execute", {"command": "ls " + " ".join(["x"] * 20_000)}, Effect.ASK),
    ("shell-deep-subst", "execute", {"command": "$(" * 5_000 + ")" * 5_000}, Effect.ASK),
    ("shell-nul", "execute", {"command": "ls\x00rm"}, Effect.ASK),
    ("tool-name-control", "read\x1b[31m", {}, Effect.DENY),
]


@pytest.mark.parametrize(("tool", "args", "effect"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_hostile(policy: Policy, tool: str, args: Any, effect: Effect) -> None:
    started = time.thread_time()  # this thread's CPU seconds: blind to load and to other threads
    verdict = policy.evaluate(ToolCall(id="c", name=tool, args=args))
    elapsed = time.thread_time() - started
    assert verdict.effect is effect, verdict.to_dict()
    assert elapsed < 2.0, f"{elapsed:.2f}s"

