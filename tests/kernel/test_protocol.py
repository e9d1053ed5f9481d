"""One gate protocol: the in-process ``Gate`` and the HTTP ``Client`` both implement
``GateProtocol`` with the same signatures (checked by mypy) and the same types."""

from __future__ import annotations

from pathlib import Path

import pytest
from mypy import api

from signoff import Gate
from signoff.kernel.protocol import GateProtocol
from signoff.remote import Client

HERE = Path(__file__).parent
ROOT = HERE.parent.parent


def test_every_member_of_the_protocol_is_on_both_gates() -> None:
    members = [name for name in vars(GateProtocol) if not name.startswith("_")]
    assert {"propose", "wait", "claim", "report", "cancel", "get_request"} <= set(members)
    for name in members:
        declared = any(name in vars(k).get("__annotations__", {}) for k in Gate.__mro__)
        assert hasattr(Gate, name) or declared, name  # ``policy``: set in __init__
        assert hasattr(Client, name), name


@pytest.mark.slow
def test_mypy_accepts_a_gate_and_a_client_as_the_protocol(tmp_path: Path) -> None:
    # pyproject's mypy_path: this tree's src, whatever signoff is installed
    out, err, status = api.run([
        "--strict", "--no-incremental", "--cache-dir", str(tmp_path / "cache"),
        "--config-file", str(ROOT / "pyproject.toml"),
        str(HERE / "protocol_conformance.py")])
    assert status == 0, out + err
