"""The server's signing key: made outside the project 0600, refused inside the workspace,
and protected from the agents the gate judges."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from signoff.cli.common import open_gate, server_key
from signoff.errors import ConfigurationError
from signoff.model import Effect, ToolCall
from signoff.policy import Policy

POLICY = """
[policy]
version = "keys"
[workspace]
root = "{root}"
outside = "allow"
[tools.write_file]
paths = ["path"]
writes = true
[tools.read_file]
paths = ["path"]
[[rules]]
id = "reads"
tool = "read_file"
effect = "allow"
[[rules]]
id = "writes"
tool = "write_file"
effect = "allow"
"""


def test_a_key_inside_the_workspace_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    policy = Policy.from_toml(POLICY.format(root=root))
    with pytest.raises(ConfigurationError) as caught:
        server_key(str(root / "keys" / "k.pem"), policy)
    assert caught.value.code == "signing_key_in_workspace"
    assert not (root / "keys").exists()  # refused before anything was written
    outside = server_key(str(tmp_path / "outside" / "k.pem"), policy)
    assert (tmp_path / "outside" / "k.pem").stat().st_mode & 0o777 == 0o600
    assert outside.kid


def test_the_servers_gate_signs_and_its_key_file_is_out_of_the_agents_reach(
        tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    policy_file = tmp_path / "signoff.toml"
    key_file = tmp_path / "keys" / "server-key"  # no name that reads as a secret
    policy_file.write_text(POLICY.format(root=root))
    gate = open_gate(argparse.Namespace(policy=str(policy_file), db=str(tmp_path / "s.db")),
                     creates=True, signing_key=str(key_file))
    try:
        assert gate.signing.key is not None
        assert [k["kid"] for k in gate.jwks()["keys"]] == [gate.signing.key.kid]
        write = gate.check(ToolCall(id="w", name="write_file",
                                    args={"path": str(key_file), "content": "x"}))
        assert write.effect is not Effect.ALLOW
        assert "protected_path" in {r.code for r in write.reasons}
        read = gate.check(ToolCall(id="r", name="read_file", args={"path": str(key_file)}))
        assert read.effect is not Effect.ALLOW
        assert "secret_read" in {r.code for r in read.reasons}
    finally:
        gate.close()


def test_the_default_key_follows_xdg_data_home(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.delenv("SIGNOFF_SIGNING_KEY", raising=False)
    key = server_key("", Policy.from_toml('[policy]\nversion = "v"'))
    assert (tmp_path / "data" / "signoff" / "signing-key.pem").exists() and key.kid
