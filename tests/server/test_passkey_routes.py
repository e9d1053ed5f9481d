"""Passkeys over HTTP, the CLI and Slack, against a real uvicorn on SQLite: an approver
registers a passkey through the JSON API (the relying party is the server's public URL),
approves a passkey request with an assertion over the options the server gave; every
surface without one — an API token alone, ``signoff requests approve``, a Slack button —
is refused with ``passkey_required`` and told where to approve. The assertions come from
``tests/softkey.py``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from signoff import Gate, Policy, SqliteStore
from signoff.cli import main
from signoff.kernel.outcomes import Outcome
from signoff.model import RequestStatus, RunContext, ToolCall
from signoff.notify.config import SlackConfig
from signoff.notify.slack_actions import APPROVE, act
from signoff.notify.slack_payload import Interaction
from signoff.server import create_app
from signoff.server.running import ServerThread
from signoff.server.settings import ServerSettings
from softkey import SoftKey

POLICY = """
[policy]
version = "pk-http-1"
unknown_tools = "allow"

[tools.release]

[[rules]]
id = "signed-release"
effect = "ask"
tool = "release"
signature = "passkey"
"""


@dataclass
class Rig:
    gate: Gate
    url: str
    alice: httpx.Client
    token: str
    n: int = 0

    def pending(self) -> str:
        self.n += 1
        proposal = self.gate.propose(ToolCall(id=f"c{self.n}", name="release",
                                              args={"version": str(self.n)}),
                                     RunContext(thread_id="t"))
        assert proposal.request is not None and proposal.request.passkey
        return proposal.request.id


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[Rig]:
    (tmp_path / "signoff.toml").write_text(POLICY)
    gate = Gate(Policy.load(tmp_path / "signoff.toml"), SqliteStore(tmp_path / "signoff.db"))
    _, token = gate.add_user("alice")
    server = ServerThread(create_app(gate, ServerSettings(host="localhost"),
                                     feed_poll=0.2), host="127.0.0.1").start()
    url = f"http://localhost:{server.port}"
    with httpx.Client(base_url=url, timeout=30,
                      headers={"Authorization": f"Bearer {token}"}) as alice:
        try:
            yield Rig(gate=gate, url=url, alice=alice, token=token)
        finally:
            server.stop()
            gate.store.close()


def _register(rig: Rig) -> SoftKey:
    options = rig.alice.post("/api/v1/passkeys/options")
    assert options.status_code == 200, options.text
    assert options.json()["rp"]["id"] == "localhost"
    assert options.json()["authenticatorSelection"]["userVerification"] == "required"
    key = SoftKey(origin=rig.url)
    made = rig.alice.post("/api/v1/passkeys", json={"credential": key.register(options.json()),
                                                    "name": "laptop"})
    assert made.status_code == 201, made.text
    assert made.json()["origin"] == rig.url and made.json()["rp_id"] == "localhost"
    return key


def _signed(rig: Rig, request_id: str, key: SoftKey) -> dict[str, Any]:
    options = rig.alice.post(f"/api/v1/requests/{request_id}/passkey-options",
                             json={"kind": "approve"})
    assert options.status_code == 200, options.text
    assert [c["id"] for c in options.json()["allowCredentials"]] == [key.id]
    return key.assert_(options.json()["challenge"])


def test_register_approve_and_remove_over_the_api(rig: Rig) -> None:
    key = _register(rig)
    assert [p["name"] for p in rig.alice.get("/api/v1/passkeys").json()["passkeys"]] == [
        "laptop"]
    request_id = rig.pending()
    assert rig.alice.get(f"/api/v1/requests/{request_id}").json()["passkey"] is True
    bare = rig.alice.post(f"/api/v1/requests/{request_id}/decisions", json={"kind": "approve"})
    assert bare.status_code == 403 and bare.json()["code"] == "passkey_required"
    assert f"{rig.url}/requests/{request_id}" in bare.text
    other = rig.pending()
    wrong = rig.alice.post(f"/api/v1/requests/{other}/decisions",
                           json={"kind": "approve", "assertion": _signed(rig, request_id, key)})
    assert wrong.status_code == 422 and wrong.json()["code"] == "passkey_invalid"
    done = rig.alice.post(f"/api/v1/requests/{request_id}/decisions",
                          json={"kind": "approve", "assertion": _signed(rig, request_id, key)})
    assert done.status_code == 200, done.text
    assert done.json()["status"] == "approved"
    gone = rig.alice.delete(f"/api/v1/passkeys/{key.id}")
    assert gone.status_code == 204
    assert rig.alice.get("/api/v1/passkeys").json() == {"passkeys": []}
    assert rig.alice.delete(f"/api/v1/passkeys/{key.id}").json()["code"] == "passkey_not_found"
    # Its approval no longer runs: the claim checks it again.
    claimed = rig.gate.claim(request_id)
    assert isinstance(claimed, Outcome) and claimed.code == "signature_invalid"
    assert rig.gate.request(request_id).status is RequestStatus.INVALIDATED
    kinds = [e.kind for e in rig.gate.audit_events()]
    assert "passkey.registered" in kinds and "passkey.removed" in kinds


def test_a_cookie_write_needs_the_csrf_token(rig: Rig) -> None:
    code, _ = rig.gate.mint_login_link("alice")
    with httpx.Client(base_url=rig.url, timeout=30) as browser:
        assert browser.get(f"/login?code={code}").status_code in (200, 303)
        refused = browser.post("/api/v1/passkeys/options")
        assert refused.status_code == 403, refused.text
        page = browser.get("/settings/passkeys")
        assert page.status_code == 200 and "Add a passkey" in page.text


def test_the_cli_and_slack_are_refused_and_told_where(rig: Rig, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    key = _register(rig)
    request_id = rig.pending()
    monkeypatch.setenv("SIGNOFF_DB", str(tmp_path / "signoff.db"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SIGNOFF_PUBLIC_URL", rig.url)
    assert main(["requests", "approve", request_id, "--token", rig.token]) == 2
    refused = capsys.readouterr().err
    assert "[passkey_required]" in refused and f"{rig.url}/requests/{request_id}" in refused
    slack = SlackConfig(token="x", signing_secret="y", channel="C1",
                        users={"U1": "alice"})
    reply = act(rig.gate, slack, Interaction(
        kind="block_actions", user="U1", action_id=APPROVE, action_ts="1.0",
        value=f"{request_id} {rig.gate.request(request_id).run_hash}"))
    assert reply.code == "passkey_required"
    assert f"{rig.url}/requests/{request_id}" in reply.message
    assert rig.gate.request(request_id).status is RequestStatus.PENDING
    assert main(["users", "passkeys", "alice", "--json"]) == 0
    (listed,) = json.loads(capsys.readouterr().out)
    assert listed["id"] == key.id and listed["name"] == "laptop"
    # A base64url id may begin with "-": after "--" it is never read as an option.
    assert main(["users", "remove-passkey", "alice", "--", key.id]) == 0
    assert "removed passkey 'laptop' of alice" in capsys.readouterr().out
    assert main(["users", "passkeys", "alice"]) == 0
    assert "alice has no passkeys" in capsys.readouterr().out


def test_a_slack_message_offers_no_approve_button_for_a_passkey_request(rig: Rig) -> None:
    """A button carries no passkey assertion: the message sends the approver to the inbox
    (reject and open stay), and its payload says the call needs one."""
    from signoff.notify.events import payload
    from signoff.notify.slack import request_message

    request_id = rig.pending()
    request = rig.gate.request(request_id)
    created = next(e for e in rig.gate.audit_events()
                   if e.request_id == request_id and e.kind == "request.created")
    data = json.loads(payload(created, "request.created", request, [],
                              base_url=rig.url))["data"]
    assert data["passkey"] is True
    _, blocks = request_message(data)
    actions = next(b for b in blocks if b["type"] == "actions")["elements"]
    assert APPROVE not in [e.get("action_id") for e in actions] and len(actions) == 2
    assert any("passkey" in str(b) for b in blocks if b["type"] == "context")
    _, plain = request_message({**data, "passkey": False})
    assert APPROVE in [e.get("action_id") for b in plain if b["type"] == "actions"
                       for e in b["elements"]]
