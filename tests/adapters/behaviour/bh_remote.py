"""The shared suite's gate over HTTP: ``lc_remote.RemoteGate`` (a real ``signoff serve`` and
a ``Client`` of it as the adapter's gate), with what the suite does besides: a person's
change of the thread's mode, made on the server's store as the CLI makes it, and a new
connection after a "restart"."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lc_remote import RemoteGate

from signoff import Gate, SqliteStore
from signoff.remote import Client


class SharedRemoteGate(RemoteGate):
    def server_gate(self, step: Callable[[Gate], Any]) -> Any:
        """``step`` on a gate over the server's database (an operator's CLI)."""
        operator = Gate(self.policy, SqliteStore(self.db))
        try:
            return step(operator)
        finally:
            operator.close()

    def reconnect(self) -> SharedRemoteGate:
        """The same server through a new connection with the agent's token, as a restarted
        process makes it."""
        token = self.http.headers["Authorization"].removeprefix("Bearer ")
        Client.close(self)
        Client.__init__(self, self.server.url, token, policy=self.policy)
        return self
