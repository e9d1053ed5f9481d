"""``signature = "passkey"`` and ``[policy] passkey_from_risk``: parsed, or refused by
name (file, rule, field)."""

from __future__ import annotations

import pytest

from signoff.errors import PolicyError
from signoff.model import Risk
from signoff.policy.config import parse_policy


def test_the_keys_load() -> None:
    config = parse_policy('[policy]\npasskey_from_risk = "high"\n[[rules]]\nid = "r"\n'
                          'effect = "ask"\ntool = "deploy"\nsignature = "passkey"\n',
                          source="p.toml")
    assert config.passkey_from_risk is Risk.HIGH and config.rules[0].passkey
    assert parse_policy("", source="p.toml").passkey_from_risk is None


@pytest.mark.parametrize(("text", "rule", "field"), [
    ('[[rules]]\nid = "r"\neffect = "allow"\ntool = "x"\nsignature = "passkey"\n',
     "rules[0] (id 'r')", "signature"),
    ('[[rules]]\nid = "r"\neffect = "ask"\ntool = "x"\nsignature = "pgp"\n',
     "rules[0] (id 'r')", "signature"),
    ('[policy]\npasskey_from_risk = "severe"\n', "[policy]", "passkey_from_risk"),
])
def test_bad_values_are_refused_by_name(text: str, rule: str, field: str) -> None:
    with pytest.raises(PolicyError) as refused:
        parse_policy(text, source="p.toml")
    assert "p.toml" in str(refused.value) and rule in str(refused.value)
    assert field in str(refused.value)
