"""Type-checked, never run: ``mypy --strict`` must accept both gates as a
``GateProtocol`` (``test_protocol.py`` runs it)."""

from signoff import Gate
from signoff.kernel.protocol import GateProtocol
from signoff.remote import Client


def in_process(gate: Gate) -> GateProtocol:
    return gate


def remote(client: Client) -> GateProtocol:
    return client
