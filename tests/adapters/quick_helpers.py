"""A gate whose policy allows ``lookup`` on the quick path (no rule or argument can change
its verdict), which records the gate calls an adapter sends to a worker thread (every one
but ``propose_now``), and reads back the allowed calls it audited."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from signoff import Gate, Policy, SqliteStore

POLICY = """
[policy]
gated = ["deploy"]
[tools.lookup]
[tools.deploy]
"""
WORKER_CALLS = ("start_run", "context_for", "propose")


def quick_gate(directory: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Gate, list[str]]:
    """The gate, and the list its worker-thread calls are appended to, by name."""
    store = SqliteStore(directory / "quick.db")
    # Remembered memory lasts 50 ms (another process's changes); here only commits drop it,
    # so what is read from memory does not depend on the machine's speed.
    monkeypatch.setattr(store, "memory_staleness", None)
    gate = Gate(Policy.from_toml(POLICY, source="quick.toml"), store, agent="quick-bot")
    made: list[str] = []
    for name in WORKER_CALLS:
        method = getattr(gate, name)

        def counted(*args: object, _method: object = method, _name: str = name,
                    **kwargs: object) -> object:
            made.append(_name)
            return _method(*args, **kwargs)  # type: ignore[operator]
        monkeypatch.setattr(gate, name, counted)
    return gate, made


def audited(gate: Gate) -> list[tuple[str, str]]:
    """(call id, thread) of every ``call.allowed`` event, in order."""
    gate.flush()
    return [(data["call_id"], data["thread_id"]) for data in
            (json.loads(e.data) for e in gate.store.audit_events() if e.kind == "call.allowed")]
