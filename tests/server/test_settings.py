"""Where ``signoff serve`` listens: flags, then environment, then ``[server]``."""

from __future__ import annotations

from pathlib import Path

import pytest

from signoff.errors import ConfigurationError
from signoff.policy import Policy
from signoff.server.guard import Guard
from signoff.server.settings import ServerSettings, load_settings


def test_defaults_and_precedence(tmp_path: Path) -> None:
    assert load_settings(environ={}) == ServerSettings()
    policy = tmp_path / "signoff.toml"
    policy.write_text('[server]\nhost = "0.0.0.0"\nport = 9000\n'
                      'allowed_hosts = ["signoff.internal"]\n')
    Policy.load(policy)  # the policy loader accepts the [server] table
    from_file = load_settings(policy_path=str(policy), environ={})
    assert (from_file.host, from_file.port, from_file.allowed_hosts) == \
        ("0.0.0.0", 9000, ("signoff.internal",))
    from_env = load_settings(policy_path=str(policy), environ={"SIGNOFF_PORT": "9100"})
    assert from_env.port == 9100
    from_flag = load_settings(policy_path=str(policy), port=9200,
                              environ={"SIGNOFF_PORT": "9100"})
    assert from_flag.port == 9200
    https = load_settings(public_url="https://signoff.example.com", environ={})
    assert https.secure_cookies
    assert https.base_url == "https://signoff.example.com"
    assert "signoff.example.com" in https.host_names()


def test_bad_settings_are_refused(tmp_path: Path) -> None:
    policy = tmp_path / "signoff.toml"
    policy.write_text('[server]\nprot = 1\n')
    with pytest.raises(ConfigurationError, match="prot"):
        load_settings(policy_path=str(policy), environ={})
    with pytest.raises(ConfigurationError) as bad:
        load_settings(environ={"SIGNOFF_PORT": "http"})
    assert bad.value.code == "invalid_port"


@pytest.mark.parametrize(("host", "ok"), [
    ("127.0.0.1:8765", True), ("localhost:8765", True), ("[::1]:8765", True),
    ("attacker.example", False), ("127.0.0.1.nip.io:8765", False), ("", False),
])
def test_host_check(host: str, ok: bool) -> None:
    guard = Guard(app=None, settings=ServerSettings())  # type: ignore[arg-type]
    refusal = guard.refusal("GET", {"host": host})
    assert (refusal is None) is ok
