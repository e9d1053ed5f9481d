"""The LangChain tests' gate over HTTP: a real ``signoff serve`` (a subprocess on a free
port, over a SQLite file) and a ``Client`` to it as the middleware's gate.

``RemoteGate`` is that ``Client`` (every call the middleware makes crosses the wire),
with what the tests do beside the agent: decisions through the API with the approver's
own token (``decide``, ``withdraw``), users set up out of band on the database as an
operator's CLI would (``add_user``, ``authenticate``), and ``store``, the server's
database file opened for the tests that inspect it."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from signoff import Decision, Gate, Policy, SqliteStore
from signoff.identity import Identity
from signoff.remote import Client


def _procs() -> Any:
    """``tests/server/procs.py``, which starts real servers for the server tests."""
    path = Path(__file__).parents[1] / "server" / "procs.py"
    if "procs" in sys.modules:
        return sys.modules["procs"]
    spec = importlib.util.spec_from_file_location("procs", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["procs"] = module
    spec.loader.exec_module(module)
    return module


class RemoteGate(Client):
    def __init__(self, policy_text: str, policy: Policy, directory: Path) -> None:
        self.db = directory / "signoff.db"
        (directory / "signoff.toml").write_text(policy_text, "utf-8")
        admin = Gate(policy, SqliteStore(self.db), agent="agent-bot")
        try:
            _, agent_token = admin.add_user("agent-bot", kind="agent")
            self.alice, alice_token = admin.add_user("alice")
        finally:
            admin.close()
        self.tokens = {"alice": alice_token}
        self.server = _procs().start_server(str(self.db), directory)
        super().__init__(self.server.url, agent_token, policy=policy)
        self._store: SqliteStore | None = None

    @property
    def store(self) -> SqliteStore:
        """The server's database, for tests that look at what it holds."""
        if self._store is None:
            self._store = SqliteStore(self.db)
        return self._store

    def _as(self, identity: Identity | None) -> Client:
        return Client(self.server.url, self.tokens[identity.name if identity else "alice"])

    def decide(self, request_id: str, kind: Any, *args: Any,  # type: ignore[override]
               identity: Identity | None = None, **kwargs: Any) -> Any:
        """``Gate.decide(request_id, Decision, identity=…)``, taken over the API with that
        approver's token."""
        if not isinstance(kind, Decision):
            return super().decide(request_id, kind, *args, **kwargs)
        edited = kind.args if isinstance(kind.args, Mapping) else None
        with self._as(identity) as approver:
            return approver.decide(request_id, kind.kind.value, reason=kind.reason,
                                   alternatives=kind.alternatives, args=edited,
                                   message=kind.message, scope=kind.scope.value,
                                   expected_args_hash=kind.expected_args_hash)

    def withdraw(self, request_id: str, *, identity: Identity, reason: str) -> Any:
        with self._as(identity) as holder:
            return holder.cancel(request_id, reason)

    def add_user(self, name: str, **kwargs: Any) -> tuple[Identity, str]:
        operator = Gate(self.policy, SqliteStore(self.db))
        try:
            made = operator.add_user(name, **kwargs)
        finally:
            operator.close()
        self.tokens[name] = made[1]
        return made

    def authenticate(self, token: str) -> Identity:
        operator = Gate(self.policy, SqliteStore(self.db))
        try:
            return operator.authenticate(token)
        finally:
            operator.close()

    def close(self) -> None:
        super().close()
        self.server.stop()
        if self._store is not None:
            self._store.close()
