"""Bulk approval in the inbox (issue 48, item 3), in Debian's Chromium (Playwright), against
a real server on both backends.

The approver ticks calls of one shape, reads them on one confirmation page and approves
them with one click: each is approved by its own decision (its own audit event). A call
proposed while the inbox is open appears unticked; one proposed after the confirmation
was drawn is not approved. A mandatory ask has no checkbox, and a forged form that lists
it is refused. The same over plain form posts (no JavaScript): mixed shapes are refused.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page

from kit import CHROMIUM, NO_CHROMIUM
from signoff import Gate, Policy
from signoff.server import create_app
from signoff.server.running import ServerThread, first_admin
from signoff.server.settings import ServerSettings
from signoff.store.base import Store

pytestmark = [pytest.mark.slow, pytest.mark.browser,
              pytest.mark.skipif(not CHROMIUM.exists(), reason=NO_CHROMIUM)]

POLICY = """
[policy]
version = "bulk-browser-1"
gated = ["execute", "deploy"]
default_expires = "1h"

[tools.execute]
shell = "command"
[tools.deploy]

[[rules]]
id = "prod-is-mandatory"
effect = "ask"
tool = "deploy"
args = { env = "prod" }
mandatory = true
"""
THREAD = {"thread_id": "t-bulk", "run_id": "run-1"}


@dataclass
class Service:
    gate: Gate
    url: str
    agent: httpx.Client

    def propose(self, tool: str, args: dict[str, Any], call_id: str) -> str:
        answer = self.agent.post("/api/v1/calls", json={
            "tool": tool, "args": args, "call_id": call_id, "context": THREAD})
        assert answer.status_code == 200 and answer.json()["status"] == "pending", answer.text
        return str(answer.json()["request_id"])

    def status(self, request_id: str) -> str:
        return self.gate.get_request(request_id).status.value


@pytest.fixture
def service(store: Store) -> Iterator[Service]:
    gate = Gate(Policy.from_toml(POLICY, source="bulk.toml"), store)
    assert first_admin(gate) is not None
    _, token = gate.add_user("build-bot", kind="agent")
    server = ServerThread(create_app(gate, ServerSettings(), feed_poll=0.2)).start()
    agent = httpx.Client(base_url=server.url, timeout=10,
                         headers={"Authorization": f"Bearer {token}"})
    try:
        yield Service(gate=gate, url=server.url, agent=agent)
    finally:
        agent.close()
        server.stop()


@pytest.fixture
def page(browser: Browser, service: Service) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    context.set_default_timeout(10_000)
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    code, _ = service.gate.mint_login_link("admin")
    tab.goto(f"{service.url}/login?code={code}")
    assert tab.url == f"{service.url}/inbox"
    try:
        yield tab
    finally:
        context.close()
    assert errors == [], f"JavaScript errors: {errors}"


def _pick(page: Page, request_id: str) -> Any:
    return page.locator(f"tr[data-request-row='{request_id}'] input[name=id]")


def _sealed(service: Service, request_id: str) -> None:
    """Until the request's events are in the audit chain, which the inbox's live feed
    reads. On PostgreSQL an event joins the chain once every transaction older than it on
    the whole server has ended: another test's transaction on the shared server holds it
    back, as long as that test likes. Reading the audit waits for it, up to the bound the
    suite gives sealing (``SEAL_WAIT``, conftest); the page's own wait then times the feed
    and the browser only."""
    assert any(e.request_id == request_id for e in service.gate.audit_events()), \
        f"the events of {request_id} were not sealed"


def _bulk_events(service: Service) -> list[dict[str, Any]]:
    return [{"request_id": e.request_id, **json.loads(e.data)}
            for e in service.gate.audit_events() if e.kind == "decision.recorded"]


def test_tick_confirm_and_each_is_approved_by_itself(page: Page, service: Service) -> None:
    tests = [service.propose("execute", {"command": f"pytest tests/test_{n}.py"}, f"p{n}")
             for n in ("a", "b")]
    hidden = service.propose("execute", {"command": "pytest tests/test_\u202ec.py"}, "pc")
    other = service.propose("execute", {"command": "git push"}, "g1")
    prod = service.propose("deploy", {"env": "prod"}, "d1")
    page.goto(f"{service.url}/inbox")
    page.wait_for_selector("#live-status.on")

    # a mandatory ask has no checkbox at all; the others have one
    assert _pick(page, prod).count() == 0
    assert "mandatory" in (page.locator(f"tr[data-request-row='{prod}'] .no-pick")
                           .get_attribute("title") or "")
    assert page.locator("#bulk-review").is_disabled()
    _pick(page, tests[0]).check()
    # once a pytest call is ticked, another shape cannot be
    assert _pick(page, other).is_disabled() and not _pick(page, tests[1]).is_disabled()
    _pick(page, tests[1]).check()
    _pick(page, hidden).check()
    assert page.locator("#bulk-review").inner_text() == "Review 3 selected…"

    # a call proposed while the inbox is open appears, unticked; the ticks stay
    page.locator("h1").click()  # nothing focused in the list: the refresh may replace it
    live = service.propose("execute", {"command": "pytest tests/test_live.py"}, "pl")
    _sealed(service, live)
    page.wait_for_selector(f"tr[data-request-row='{live}']")
    assert not _pick(page, live).is_checked()
    assert all(_pick(page, rid).is_checked() for rid in (*tests, hidden))

    page.locator("#bulk-review").click()
    # the click returns once the confirmation starts loading: read it once it has loaded
    page.wait_for_url(re.compile(re.escape(f"{service.url}/bulk?") + ".*"))
    listed = page.locator("li.bulk-call").evaluate_all(
        "els => els.map(e => e.getAttribute('data-request-id'))")
    assert sorted(listed) == sorted([*tests, hidden])
    assert page.locator("#bulk-shape code").inner_text() == "execute(command): pytest"
    # every call's exact arguments and hash, hidden characters flagged as on its own page
    call = page.locator(f"li.bulk-call[data-request-id='{hidden}']")
    assert call.locator("pre.args mark.hidden-char").count() == 1
    assert "1 invisible" in call.locator("[role=alert]").inner_text()
    assert call.locator(".args-hash").inner_text() == service.gate.get_request(hidden).run_hash
    assert "test_a.py" in page.locator(f"li.bulk-call[data-request-id='{tests[0]}'] "
                                       "pre.args").inner_text()

    # proposed after the confirmation was drawn: same thread, same shape, not approved
    late = service.propose("execute", {"command": "pytest tests/test_late.py"}, "pz")
    page.locator("#bulk-approve").click()
    page.wait_for_url(f"{service.url}/bulk")  # the answer, loaded
    assert page.locator("#bulk-summary").inner_text().startswith("3 approved")
    for request_id in (*tests, hidden):
        assert service.status(request_id) == "approved"
        decision, = service.gate.decisions(request_id)
        assert decision.approver == "admin"
    for kept in (late, live, other, prod):
        assert service.status(kept) == "pending", kept
        assert service.gate.decisions(kept) == []
    events = _bulk_events(service)
    assert sorted(e["request_id"] for e in events) == sorted([*tests, hidden])
    assert {e["via"] for e in events} == {"bulk"}
    assert len({e["decision_id"] for e in events}) == 3


def test_a_forged_listing_of_a_mandatory_ask_is_refused(page: Page, service: Service) -> None:
    prod = service.propose("deploy", {"env": "prod"}, "d1")
    staging = service.propose("execute", {"command": "make staging"}, "m1")
    page.goto(f"{service.url}/inbox")
    assert _pick(page, prod).count() == 0
    # the confirmation does not offer it either, when asked for it by hand
    page.goto(f"{service.url}/bulk?id={prod}")
    assert page.locator("#bulk-approve").count() == 0
    assert "mandatory" in page.locator("#bulk-left-out").inner_text()
    # a form forged with its id and hash, posted with the page's session and CSRF token
    csrf = page.locator("meta[name=csrf-token]").get_attribute("content")
    shown = service.gate.get_request(prod).run_hash
    answer = page.request.post(f"{service.url}/bulk", form={
        "csrf": csrf or "", "listed": f"{prod} {shown}"})
    assert answer.status == 200
    refused = re.search(r'<ul id="bulk-refused">(.*?)</ul>', answer.text(), re.S)
    assert refused is not None and "mandatory" in refused.group(1) and prod in refused.group(1)
    assert service.status(prod) == "pending" and service.gate.decisions(prod) == []
    # mixed shapes are refused whole: nothing approved
    both = f"{service.url}/bulk?id={staging}&id={prod}"
    page.goto(both)
    assert page.locator("#bulk-approve").count() == 1  # the mandatory one is left out
    git = service.propose("execute", {"command": "git status"}, "g1")
    page.goto(f"{service.url}/bulk?id={staging}&id={git}")
    assert "mixed_shapes" in page.locator("[role=alert]").first.inner_text()
    assert page.locator("#bulk-approve").count() == 0
    assert service.status(staging) == "pending" and service.status(git) == "pending"
