"""Type-checked, never run: ``mypy --strict`` must accept both gates as a
``GateProtocol`` (``test_protocol.py`` runs it)."""

from signoff import Gate
from signoff.client import Client
from signoff.kernel.protocol import GateProtocol


def in_process(gate: Gate) -> GateProtocol:
    return gate


def remote(client: Client) -> GateProtocol:
    return client
