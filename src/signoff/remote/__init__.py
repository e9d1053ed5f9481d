"""A gate on another machine: ``Client`` speaks the HTTP API of a ``signoff serve`` and
implements the same ``GateProtocol`` as the in-process ``Gate`` (``wire`` turns the API's
JSON back into the kernel's types), so an adapter gates an agent either way."""

from signoff.remote.client import Client

__all__ = ["Client"]
