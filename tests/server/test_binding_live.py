"""The inbox's live view after an edit, in Chromium: an open request page is refreshed with
the arguments that would run, their hash and the forms carrying it — together, never the
forms alone — and its Approve then approves those arguments."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page
from test_browser import Service, _serve, _tab, live

from kit import CHROMIUM, NO_CHROMIUM
from signoff.canonical import args_hash
from signoff.model import Decision

pytestmark = [pytest.mark.slow, pytest.mark.browser,
              pytest.mark.skipif(not CHROMIUM.exists(), reason=NO_CHROMIUM)]
POLICY = """
[policy]
version = "binding-live-1"
gated = ["deploy"]

[tools.deploy]
risk = "high"

[[rules]]
id = "deploys-need-two"
effect = "ask"
tool = "deploy"
approvals = 2
"""
STAGING, PROD = {"env": "staging"}, {"env": "prod"}


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    yield from _serve(tmp_path, POLICY)


@pytest.fixture
def page(browser: Browser, service: Service) -> Iterator[Page]:
    yield from _tab(browser, service)


def shown_hashes(page: Page) -> set[str]:
    return {page.locator("input[name=expected_args_hash]").nth(i).get_attribute("value") or ""
            for i in range(page.locator("input[name=expected_args_hash]").count())}


def test_an_edit_refreshes_the_open_page_with_what_would_run(page: Page,
                                                             service: Service) -> None:
    request_id = service.propose("deploy", STAGING, "d1", "t-edit")["request_id"]
    page.goto(f"{service.url}/requests/{request_id}")
    live(page)
    assert page.locator("#args-hash").inner_text() == args_hash(STAGING)
    assert shown_hashes(page) == {args_hash(STAGING)}

    _, token = service.gate.add_user("bob")
    bob = service.gate.authenticate(token)
    service.gate.decide(request_id, Decision.edit(PROD), identity=bob)  # one vote of two

    page.locator("#args-hash", has_text=args_hash(PROD)).wait_for()
    assert '"prod"' in page.locator("#args").inner_text()
    assert shown_hashes(page) == {args_hash(PROD)}  # the forms moved with the arguments
    assert "Edited by an approver" in page.locator("#request-args").inner_text()
    page.click("#approve-once")
    page.locator("#status", has_text="approved").wait_for()
    request = service.gate.get_request(request_id)
    assert request.status.value == "approved" and request.run_hash == args_hash(PROD)
