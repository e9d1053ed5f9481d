"""Passkeys in a real browser: Chromium (Playwright) with a virtual WebAuthn authenticator
from the DevTools protocol, against a real uvicorn at ``http://localhost:PORT`` (WebAuthn
needs a domain: the RP id is ``localhost``).

An approver registers a passkey on the settings page and approves a passkey request in the
inbox: the call runs once. An authenticator that does not verify the user, another user's
authenticator, and an assertion captured from one approval replayed on another request or
for other arguments are all refused.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import httpx
import pytest
from playwright.sync_api import Browser, BrowserContext, Page

from kit import CHROMIUM, NO_CHROMIUM
from signoff import Gate, Policy, SqliteStore
from signoff.kernel.outcomes import OutcomeKind
from signoff.model import RequestStatus, RunContext, ToolCall
from signoff.policy import parse_policy
from signoff.server import create_app
from signoff.server.running import ServerThread
from signoff.server.settings import ServerSettings

pytestmark = [pytest.mark.slow, pytest.mark.browser,
              pytest.mark.skipif(not CHROMIUM.exists(), reason=NO_CHROMIUM)]

POLICY = """
[policy]
version = "pk-browser-1"
unknown_tools = "allow"

[tools.release]

[[rules]]
id = "signed-release"
effect = "ask"
tool = "release"
signature = "passkey"
"""

AUTHENTICATOR = {"protocol": "ctap2", "transport": "internal", "hasResidentKey": True,
                 "hasUserVerification": True, "isUserVerified": True,
                 "automaticPresenceSimulation": True}


@dataclass
class Served:
    gate: Gate
    url: str
    ran: list[str]
    n: int = 0

    def pending(self, version: str) -> str:
        self.n += 1
        proposal = self.gate.propose(ToolCall(id=f"c{self.n}", name="release",
                                              args={"version": version}),
                                     RunContext(thread_id="t", principal="paula"))
        assert proposal.request is not None and proposal.request.passkey
        return proposal.request.id



@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    gate = Gate(Policy(parse_policy(POLICY, source="pk.toml")),
                SqliteStore(tmp_path / "signoff.db"))
    ran: list[str] = []

    @gate.tool()
    def release(version: str) -> str:
        ran.append(version)
        return f"released {version}"

    gate.add_user("alice")
    gate.add_user("bob")
    server = ServerThread(create_app(gate, ServerSettings(host="localhost"), feed_poll=0.2),
                          host="127.0.0.1").start()
    try:
        yield Served(gate=gate, url=f"http://localhost:{server.port}", ran=ran)
    finally:
        server.stop()
        gate.store.close()


@dataclass
class Tab:
    context: BrowserContext
    page: Page
    cdp: Any
    authenticator: str
    errors: list[str]

    def with_authenticator(self, **options: Any) -> None:
        """Replace the virtual authenticator by one with these options (no passkeys)."""
        self.cdp.send("WebAuthn.removeVirtualAuthenticator",
                      {"authenticatorId": self.authenticator})
        self.authenticator = self.cdp.send("WebAuthn.addVirtualAuthenticator", {
            "options": {**AUTHENTICATOR, **options}})["authenticatorId"]


@pytest.fixture
def tabs(browser: Browser, served: Served) -> Iterator[Any]:
    opened: list[Tab] = []

    def open_as(name: str) -> Tab:
        context = browser.new_context(viewport={"width": 1200, "height": 800})
        context.set_default_timeout(10_000)
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        cdp = context.new_cdp_session(page)
        cdp.send("WebAuthn.enable", {"enableUI": False})
        authenticator = cdp.send("WebAuthn.addVirtualAuthenticator",
                                 {"options": AUTHENTICATOR})["authenticatorId"]
        code, _ = served.gate.mint_login_link(name)
        page.goto(f"{served.url}/login?code={code}")
        assert page.url == f"{served.url}/inbox"
        tab = Tab(context, page, cdp, authenticator, errors)
        opened.append(tab)
        return tab

    yield open_as
    for tab in opened:
        tab.context.close()
        assert [e for e in tab.errors if "Passkey" not in e] == []


def register(tab: Tab, name: str = "laptop") -> None:
    tab.page.goto(tab.page.url.split("/inbox")[0] + "/settings/passkeys")
    tab.page.fill("#passkey-name", name)
    tab.page.click("#passkey-add")
    tab.page.wait_for_url("**/settings/passkeys?done=added")
    assert name in tab.page.inner_text("#passkeys")


def approve(tab: Tab, served: Served, request_id: str) -> tuple[dict[str, Any], int]:
    """Click Approve once on the request's page; the posted form (as sent) and the status
    of the page that came back."""
    tab.page.goto(f"{served.url}/requests/{request_id}")
    assert "needs your passkey" in tab.page.inner_text("#passkey-note")
    with tab.page.expect_request(lambda r: r.url.endswith("/decide")) as sent, \
            tab.page.expect_navigation():
        tab.page.click("#approve-once")
    form = {k: v[0] for k, v in parse_qs(sent.value.post_data or "").items()}
    tab.page.wait_for_load_state()
    answer = sent.value.response()
    return form, answer.status if answer is not None else 0


def test_register_then_approve_runs_the_call_once(tabs: Any, served: Served) -> None:
    alice = tabs("alice")
    register(alice)
    (passkey,) = served.gate.passkeys.passkeys("alice")
    assert passkey.rp_id == "localhost" and passkey.origin == served.url
    request_id = served.pending("1.0")
    form, _ = approve(alice, served, request_id)
    assert json.loads(form["assertion"])["id"] == passkey.id
    assert served.gate.request(request_id).status is RequestStatus.APPROVED
    assert served.gate.resume(request_id).kind is OutcomeKind.EXECUTED
    assert served.gate.resume(request_id).kind is OutcomeKind.EXECUTED
    assert served.ran == ["1.0"]
    # Removing it on the settings page: listed no more, audited.
    alice.page.goto(f"{served.url}/settings/passkeys")
    alice.page.click("#passkeys button")
    alice.page.wait_for_url("**/settings/passkeys?done=removed")
    assert alice.page.query_selector("#no-passkeys") is not None
    assert "passkey.removed" in [e.kind for e in served.gate.audit_events()]


def test_an_unverified_user_is_refused(tabs: Any, served: Served) -> None:
    alice = tabs("alice")
    register(alice)
    # The same passkey, on an authenticator that now skips user verification.
    credentials = alice.cdp.send("WebAuthn.getCredentials",
                                 {"authenticatorId": alice.authenticator})["credentials"]
    alice.with_authenticator(isUserVerified=False)
    for credential in credentials:
        alice.cdp.send("WebAuthn.addCredential", {"authenticatorId": alice.authenticator,
                                                  "credential": credential})
    request_id = served.pending("2.0")
    alice.page.goto(f"{served.url}/requests/{request_id}")
    alice.page.click("#approve-once")
    # Chromium's authenticator gives no assertion without user verification when it is
    # required (and one sent without the flag is refused by the server: passkey_unverified).
    shown = alice.page.wait_for_selector("#passkey-error:not([hidden]), main > p.error")
    assert shown is not None and ("Passkey" in shown.inner_text()
                                  or "passkey_unverified" in shown.inner_text())
    assert served.gate.request(request_id).status is RequestStatus.PENDING
    assert served.ran == []


def test_another_users_authenticator_is_refused(tabs: Any, served: Served) -> None:
    alice, bob = tabs("alice"), tabs("bob")
    register(alice)
    register(bob, "bob's key")
    # Bob's passkey, moved into the authenticator of Alice's browser.
    bobs = bob.cdp.send("WebAuthn.getCredentials",
                        {"authenticatorId": bob.authenticator})["credentials"]
    alice.with_authenticator()
    for credential in bobs:
        alice.cdp.send("WebAuthn.addCredential", {"authenticatorId": alice.authenticator,
                                                  "credential": credential})
    request_id = served.pending("3.0")
    # Alice's page asks for Alice's passkeys only: the browser finds none it holds.
    alice.page.goto(f"{served.url}/requests/{request_id}")
    alice.page.click("#approve-once")
    alice.page.wait_for_selector("#passkey-error:not([hidden])")
    assert served.gate.request(request_id).status is RequestStatus.PENDING
    # Bob's assertion, sent as Alice's decision over HTTP, is refused too.
    refused = httpx.post(f"{served.url}/api/v1/requests/{request_id}/decisions",
                         json={"kind": "approve", "assertion": _captured(bob, served,
                                                                         request_id)},
                         headers=_bearer(served, "alice"))
    assert refused.status_code == 422 and refused.json()["code"] == "passkey_not_yours"
    assert served.gate.request(request_id).status is RequestStatus.PENDING


def test_a_captured_assertion_replayed_elsewhere_is_refused(tabs: Any, served: Served) -> None:
    alice = tabs("alice")
    register(alice)
    first, second = served.pending("4.0"), served.pending("5.0")
    form, _ = approve(alice, served, first)
    captured = json.loads(form["assertion"])
    assert served.gate.request(first).status is RequestStatus.APPROVED
    alice_token = _bearer(served, "alice")
    # On another request.
    other = httpx.post(f"{served.url}/api/v1/requests/{second}/decisions",
                       json={"kind": "approve", "assertion": captured}, headers=alice_token)
    assert other.status_code == 422 and other.json()["code"] == "passkey_invalid"
    # For other arguments: an edit of the second request carrying it.
    edited = httpx.post(f"{served.url}/api/v1/requests/{second}/decisions",
                        json={"kind": "edit", "args": {"version": "6.6"},
                              "assertion": captured}, headers=alice_token)
    assert edited.status_code == 422 and edited.json()["code"] == "passkey_invalid"
    assert served.gate.request(second).status is RequestStatus.PENDING
    assert served.ran == []


def _bearer(served: Served, name: str) -> dict[str, str]:
    token = served.gate.rotate_token(name)[1]
    return {"Authorization": f"Bearer {token}"}


def _captured(tab: Tab, served: Served, request_id: str) -> dict[str, Any]:
    """The assertion ``tab``'s browser makes when its user clicks Approve on ``request_id``,
    caught on its way out (the post itself is stopped: the request stays pending)."""
    caught: list[str] = []

    def stop(route: Any) -> None:
        caught.append(route.request.post_data or "")
        route.abort()

    tab.page.route("**/decide", stop)
    tab.page.goto(f"{served.url}/requests/{request_id}")
    tab.page.click("#approve-once")
    tab.page.wait_for_timeout(200)
    for _ in range(50):
        if caught:
            break
        tab.page.wait_for_timeout(100)
    tab.page.unroute("**/decide")
    form = {k: v[0] for k, v in parse_qs(caught[0]).items()}
    return dict(json.loads(form["assertion"]))


def test_an_edit_is_signed_over_the_edited_arguments(tabs: Any, served: Served) -> None:
    alice = tabs("alice")
    register(alice)
    request_id = served.pending("7.0")
    alice.page.goto(f"{served.url}/requests/{request_id}")
    alice.page.click("#edit-box summary")
    alice.page.fill("#edit-args", '{"version": "7.1"}')
    with alice.page.expect_request(lambda r: r.url.endswith("/decide")) as sent, \
            alice.page.expect_navigation():
        alice.page.click("#edit")
    form = {k: v[0] for k, v in parse_qs(sent.value.post_data or "").items()}
    assert form["action"] == "edit" and json.loads(form["assertion"])["type"] == "public-key"
    request = served.gate.request(request_id)
    assert request.status is RequestStatus.APPROVED and request.approved_args == \
        '{"version":"7.1"}'
    (decision,) = served.gate.decisions(request_id)
    assert json.loads(decision.assertion or "")["challenge"]["kind"] == "edit"
    assert served.gate.resume(request_id).kind is OutcomeKind.EXECUTED
    assert served.ran == ["7.1"]
