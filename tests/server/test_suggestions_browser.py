"""Rule suggestions in the inbox, in Debian's Chromium (Playwright), against a real server
whose policy is a file: an admin follows the header's link, reads each rule, its saved asks
and its proof (a command that is markup shows as text), ticks one, reviews the exact diff
and applies it; the page shows the new version and the server allows the call at once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser

from histories import REFUSED, suggestible
from kit import CHROMIUM, NO_CHROMIUM
from signoff import Gate, Policy, SqliteStore
from signoff.policy.starter import starter_toml
from signoff.server import ServerSettings, create_app
from signoff.server.running import ServerThread, first_admin

pytestmark = [pytest.mark.slow, pytest.mark.browser,
              pytest.mark.skipif(not CHROMIUM.exists(), reason=NO_CHROMIUM)]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[ServerThread, Gate, str, Path]]:
    root = tmp_path / "ws"
    root.mkdir()
    policy = tmp_path / "signoff.toml"
    policy.write_text(starter_toml(str(root)), "utf-8")
    gate = Gate(Policy.load(policy), SqliteStore(tmp_path / "s.db"))
    assert first_admin(gate) is not None
    gate.add_user("alice")
    _, token = gate.add_user("bot", kind="agent")
    suggestible(gate)
    running = ServerThread(create_app(gate, ServerSettings(), feed_poll=0.2)).start()
    try:
        yield running, gate, token, policy
    finally:
        running.stop()
        gate.store.close()


def test_an_admin_reviews_and_applies_a_suggestion(
        browser: Browser, server: tuple[ServerThread, Gate, str, Path]) -> None:
    running, gate, token, policy = server
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    context.set_default_timeout(10_000)
    page = context.new_page()
    errors: list[str] = []
    dialogs: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    try:
        code, _ = gate.mint_login_link("admin")
        page.goto(f"{running.url}/login?code={code}")
        page.locator("#suggestions-link").click()
        assert page.url == f"{running.url}/inbox/insights/suggestions"
        items = page.locator("li.suggestion")
        assert items.count() == 2
        # a command that is markup is shown as text, in the rule and in its saved asks
        make = page.locator("li.suggestion", has_text="suggested-make")
        assert "<script>alert(1)</script>" in make.locator("pre.rule-toml").inner_text()
        assert "<script>alert(1)</script>" in make.locator("ul.saved-asks").inner_text()
        python = page.locator("li.suggestion", has_text="suggested-python")
        assert REFUSED in python.locator("ul.proof").inner_text()
        assert "rejected; replayed: ask" in python.locator("ul.proof").inner_text()

        python.locator("input[name=id]").check()
        page.locator("#suggest-review").click()
        assert "/inbox/insights/suggestions/review?" in page.url
        diff = page.locator("#policy-diff").inner_text()
        assert '+version = "2"' in diff and '+id = "suggested-python"' in diff
        assert "suggested-make" not in diff
        assert page.locator("#new-version").inner_text() == "2"
        assert Policy.load(policy).version == "1"  # a review writes nothing

        page.locator("#suggest-apply").click()
        assert page.locator("#applied-version").inner_text() == "2"
        assert Policy.load(policy).version == "2" and gate.config.version == "2"
        with httpx.Client(base_url=running.url, timeout=10,
                          headers={"Authorization": f"Bearer {token}"}) as agent:
            answer = agent.post("/api/v1/calls", json={
                "tool": "execute", "args": {"command": "python c.py"}, "call_id": "c1",
                "context": {"thread_id": "t-browser", "review_mode": "manual"}}).json()
        assert answer["status"] == "allowed", answer
    finally:
        context.close()
    assert errors == [] and dialogs == [], (errors, dialogs)
