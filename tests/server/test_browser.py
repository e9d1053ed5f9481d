"""The web inbox in a real browser: Debian's Chromium driven by Playwright, against a real
uvicorn on SQLite, with the agent on the other side talking plain HTTP.

Each test starts its own server on a fresh database; the browser is shared by the
module and every test gets a fresh context (no cookies). The agent proposes over
``POST /api/v1/calls`` and waits on ``GET /api/v1/calls/{id}?wait=`` in a thread while
the approver clicks, so "the agent proceeds" is observed, not assumed.

``SIGNOFF_SCREENSHOTS=1`` makes ``test_screenshots`` also write ``docs/img/inbox.png``
and ``docs/img/request.png`` (the README shows them); otherwise it writes to a
temporary directory only.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Dialog, Page

from kit import CHROMIUM, NO_CHROMIUM, WRITES_POLICY
from signoff import Gate, Policy, SqliteStore
from signoff.canonical import args_hash, canonical_text
from signoff.policy import parse_policy
from signoff.server import create_app
from signoff.server.running import ServerThread, first_admin, login_url
from signoff.server.settings import ServerSettings

DOCS_IMG = Path(__file__).parents[2] / "docs" / "img"

pytestmark = [pytest.mark.slow, pytest.mark.browser,
              pytest.mark.skipif(not CHROMIUM.exists(), reason=NO_CHROMIUM)]

# execute is gated and low risk (auto mode's reviewer approves it); deploy is gated and
# high risk (auto mode still asks a human); reading a .env file always asks, critical.
POLICY = """
[policy]
version = "browser-1"
gated = ["execute", "deploy"]
default_expires = "1h"

[tools.execute]
shell = "command"
risk = "low"
[tools.deploy]
risk = "high"
[tools.read_file]
paths = ["path"]

[[rules]]
id = "no-rm"
effect = "deny"
tool = "execute"
command = "rm *"

[[rules]]
id = "env-files"
effect = "ask"
mandatory = true
tool = "read_file"
args = { path = "**/.env" }
risk = "critical"
reason = "secrets live in .env files"
"""

WAIT = 20.0  # the agent's long-poll; every test finishes far sooner


@dataclass
class Service:
    """A running server, its gate, the admin's first-start login link and an agent speaking
    HTTP."""

    gate: Gate
    url: str
    login: str  # works once
    agent: httpx.Client
    waiters: list[threading.Thread] = field(default_factory=list)

    def another_link(self) -> str:
        """A fresh one-time login link for the admin (``signoff users login admin``)."""
        code, _ = self.gate.mint_login_link("admin")
        return f"{self.url}/login?code={code}"

    def propose(self, tool: str, args: dict[str, Any], call_id: str, thread: str,
                description: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"tool": tool, "args": args, "call_id": call_id,
                                "context": {"thread_id": thread}}
        if description is not None:
            body["description"] = description
        answer = self.agent.post("/api/v1/calls", json=body)
        assert answer.status_code == 200, answer.text
        return dict(answer.json())

    def wait_in_background(self, request_id: str) -> dict[str, Any]:
        """Start the agent's long-poll now; the dict fills in when it returns."""
        got: dict[str, Any] = {}

        def poll() -> None:
            answer = self.agent.get(f"/api/v1/calls/{request_id}", params={"wait": WAIT})
            got.update(answer.json(), http_status=answer.status_code)

        waiter = threading.Thread(target=poll, name=f"agent-wait-{request_id}")
        waiter.start()
        self.waiters.append(waiter)
        got["_thread"] = waiter
        return got

    def run(self, request_id: str, result: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        """Claim the approved call and report ``result``: (the claim, the final outcome)."""
        claim = self.agent.post(f"/api/v1/calls/{request_id}/claim")
        assert claim.status_code == 200, claim.text
        report = self.agent.post(f"/api/v1/calls/{request_id}/result",
                                 json={"fencing_token": claim.json()["fencing_token"],
                                       "result": result})
        assert report.status_code == 200, report.text
        return claim.json(), report.json()


def joined(got: dict[str, Any]) -> dict[str, Any]:
    waiter: threading.Thread = got.pop("_thread")
    waiter.join(timeout=WAIT + 5)
    assert not waiter.is_alive(), "the agent is still waiting"
    return got



@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    yield from _serve(tmp_path, POLICY)


def _serve(tmp_path: Path, policy: str) -> Iterator[Service]:
    gate = Gate(Policy(parse_policy(policy, source="browser.toml")),
                SqliteStore(tmp_path / "signoff.db"))
    admin = first_admin(gate)
    assert admin is not None
    _, agent_token = gate.add_user("build-bot", kind="agent")
    settings = ServerSettings()
    server = ServerThread(create_app(gate, settings, feed_poll=0.2)).start()
    with httpx.Client(base_url=server.url, timeout=WAIT + 10,
                      headers={"Authorization": f"Bearer {agent_token}"}) as agent:
        running = Service(gate=gate, url=server.url,
                          login=login_url(settings.with_port(server.port), admin), agent=agent)
        try:
            yield running
        finally:
            for waiter in running.waiters:
                waiter.join(timeout=WAIT + 5)
            server.stop()
            gate.store.close()


@pytest.fixture
def page(browser: Browser, service: Service) -> Iterator[Page]:
    """A signed-in approver's tab (the admin from the first-start login URL)."""
    yield from _tab(browser, service)


def _tab(browser: Browser, service: Service) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1200, "height": 800})
    context.set_default_timeout(10_000)
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    tab.goto(service.another_link())
    assert tab.url == f"{service.url}/inbox"
    try:
        yield tab
    finally:
        context.close()
    assert errors == [], f"JavaScript errors: {errors}"


def live(page: Page) -> None:
    """Wait until the page's event stream is connected. (A selector, not wait_for_function:
    the page's CSP forbids the eval that polling a JavaScript predicate needs.)"""
    status = page.wait_for_selector("#live-status.on")
    assert status is not None and status.inner_text() == "live"


# ---- 1. sign in ----------------------------------------------------------------------------------

def test_login_url_signs_in_and_lands_on_the_inbox(browser: Browser, service: Service) -> None:
    context = browser.new_context()
    try:
        tab = context.new_page()
        tab.goto(f"{service.url}/inbox")
        assert tab.url == f"{service.url}/login"  # not signed in yet: sent to sign in
        assert tab.locator("h1").inner_text() == "Sign in"

        tab.goto(service.login)
        assert tab.url == f"{service.url}/inbox"  # the link does not stay in the address bar
        assert tab.locator("h1").inner_text() == "Waiting for you"
        assert "admin (admin)" in tab.locator(".who").inner_text()
        assert tab.locator("p.empty").inner_text() == "Nothing is waiting for a decision."
        cookie, = context.cookies()
        assert (cookie["httpOnly"], cookie["sameSite"]) == (True, "Strict")
        live(tab)

        again = context.new_page()  # the first-start link works once
        answer = again.goto(service.login)
        assert answer is not None and answer.status == 410
        assert "login_link_used" in again.locator("[role=alert]").inner_text()

        bad = browser.new_context()  # a pasted token is posted, never put in a URL
        try:
            form = bad.new_page()
            form.goto(f"{service.url}/login")
            form.fill("#token", "not-a-token")
            form.click("button.primary")
            assert "unknown or disabled token" in form.locator("[role=alert]").inner_text()
            assert form.url == f"{service.url}/login"
        finally:
            bad.close()
    finally:
        context.close()


# ---- 2. live updates -------------------------------------------------------------------------

def test_a_request_appears_live_while_the_inbox_is_open(page: Page, service: Service) -> None:
    navigations: list[str] = []
    page.on("framenavigated", lambda frame: navigations.append(frame.url))
    page.evaluate("window.__sameDocument = true")
    live(page)

    proposal = service.propose("execute", {"command": "make build"}, "call-1", "t-live",
                               description="build the project")
    assert proposal["status"] == "pending"
    rid = proposal["request_id"]

    row = page.wait_for_selector(f"tr[data-request-row='{rid}']", timeout=5_000)
    assert row is not None
    assert "make build" in row.inner_text()
    assert page.locator(f"tr[data-request-row='{rid}'] .risk").inner_text() == "low"
    assert page.locator(".count").inner_text() == "1"
    assert "t-live" in page.locator(".threads").inner_text()  # a thread needs attention

    # A second one arrives too, and the page is still the same document.
    second = service.propose("deploy", {"env": "prod"}, "call-2", "t-live-2")["request_id"]
    page.wait_for_selector(f"tr[data-request-row='{second}']", timeout=5_000)
    assert page.locator(".count").inner_text() == "2"
    assert page.evaluate("window.__sameDocument") is True
    assert navigations == []
    # Highest risk first.
    rows = page.locator("tr[data-request-row]")
    assert rows.nth(0).get_attribute("data-request-row") == second


# ---- 3. approve once -------------------------------------------------------------------------

def test_approve_once_releases_the_waiting_agent(page: Page, service: Service) -> None:
    args = {"command": "make build", "workdir": "."}
    rid = service.propose("execute", args, "call-1", "t-approve")["request_id"]
    waiting = service.wait_in_background(rid)

    page.reload()
    page.click(f"tr[data-request-row='{rid}'] a[href='/requests/{rid}']")
    assert page.url == f"{service.url}/requests/{rid}"
    assert page.locator("#status").inner_text() == "pending"
    assert waiting["_thread"].is_alive()  # the agent is still waiting for a human

    page.click("#approve-once")
    assert page.locator(".flash").inner_text() == "Approved."
    assert page.locator("#status").inner_text() == "approved"
    assert "admin" in page.locator("#approvals").inner_text()

    outcome = joined(waiting)
    assert (outcome["http_status"], outcome["kind"]) == (200, "approved")
    claim, final = service.run(rid, {"exit": 0})
    assert claim["args"] == args  # exactly the approved arguments
    assert (final["kind"], final["result"]) == ("executed", {"exit": 0})
    page.reload()
    assert page.locator("#status").inner_text() == "succeeded"


def test_the_request_page_follows_a_decision_taken_elsewhere(page: Page,
                                                            service: Service) -> None:
    _, bob = service.gate.add_user("bob", roles=["ops"])
    rid = service.propose("deploy", {"env": "prod"}, "call-1", "t-elsewhere")["request_id"]
    page.goto(f"{service.url}/requests/{rid}")
    page.evaluate("window.__sameDocument = true")
    live(page)
    assert page.locator("#approve-once").is_visible()

    decided = service.agent.post(f"/api/v1/requests/{rid}/decisions", json={"kind": "approve"},
                                 headers={"Authorization": f"Bearer {bob}"})
    assert decided.status_code == 200, decided.text
    page.wait_for_selector("#status.status-approved", timeout=5_000)
    assert "bob" in page.locator("#approvals").inner_text()
    assert page.locator("#approve-once").count() == 0  # nothing left to decide
    # The details follow too: no expiry once decided, but who decided and when (UTC).
    assert page.locator("#expires").count() == 0
    assert page.locator("#settled").inner_text().startswith("approved by bob, ")
    assert page.locator("#settled").inner_text().endswith(" UTC")
    assert page.evaluate("window.__sameDocument") is True


# ---- 4. reject with a reason ---------------------------------------------------------------------

def test_reject_with_a_reason_reaches_the_agent(page: Page, service: Service) -> None:
    rid = service.propose("deploy", {"env": "prod", "ref": "main"}, "call-1",
                          "t-reject")["request_id"]
    waiting = service.wait_in_background(rid)
    page.goto(f"{service.url}/requests/{rid}")

    reason = "Not on a Friday — deploy to staging first."
    page.click("#reject-box summary")
    page.fill("#reject-reason", reason)
    page.fill("#reject-alternatives", "deploy env=staging\nwait until Monday")
    page.click("#reject")
    assert page.locator(".flash").inner_text() == "Rejected; the agent gets your reason."
    assert page.locator("#status").inner_text() == "rejected"

    outcome = joined(waiting)
    assert outcome["kind"] == "rejected"
    assert outcome["reason"] == reason
    assert outcome["alternatives"] == ["deploy env=staging", "wait until Monday"]
    refused = service.agent.post(f"/api/v1/calls/{rid}/claim")
    assert refused.status_code == 409  # a rejected call never runs


# ---- 5. edit the arguments -----------------------------------------------------------------------

def test_edit_runs_the_edited_call(page: Page, service: Service) -> None:
    proposed = {"command": "make deploy", "workdir": "."}
    rid = service.propose("execute", proposed, "call-1", "t-edit")["request_id"]
    waiting = service.wait_in_background(rid)
    page.goto(f"{service.url}/requests/{rid}")

    # An edit the policy denies is refused on the page, and the request stays pending.
    page.click("#edit-box summary")
    page.fill("#edit-args", '{"command": "rm -rf build"}')
    page.click("#edit")
    assert page.locator("p.error").is_visible()
    assert page.locator("#status").inner_text() == "pending"
    assert waiting["_thread"].is_alive()

    edited = {"command": "make build", "workdir": "."}
    page.click("#edit-box summary")
    page.fill("#edit-args", '{"workdir": ".", "command": "make build"}')
    page.fill("#edit-reason", "build, do not deploy")
    page.click("#edit")
    assert page.locator(".flash").inner_text() == "Approved with your edited arguments."
    assert page.locator("#args").inner_text() == canonical_text(edited)
    assert page.locator("#args-hash").inner_text() == args_hash(edited)
    assert "make deploy" in page.locator(".note").inner_text()  # what the agent proposed

    outcome = joined(waiting)
    assert outcome["kind"] == "approved"
    claim, final = service.run(rid, "built")
    assert claim["args"] == edited  # the edited call is the one that runs
    assert (final["kind"], final["result"]) == ("executed", "built")


# ---- 6. the thread's review mode -----------------------------------------------------------------

def test_auto_mode_lets_the_next_low_risk_call_through(page: Page, service: Service) -> None:
    thread = "t-mode"
    first = service.propose("execute", {"command": "make build"}, "call-1", thread)
    assert first["status"] == "pending"  # manual: a human reviews every gated call

    dialogs: list[str] = []
    answer = {"accept": False}

    def on_dialog(dialog: Dialog) -> None:
        dialogs.append(dialog.message)
        if answer["accept"]:
            dialog.accept()
        else:
            dialog.dismiss()

    page.on("dialog", on_dialog)
    page.goto(f"{service.url}/threads/{thread}")
    assert page.locator("input[value=manual]").is_checked()
    group = page.locator("fieldset[role=radiogroup]")
    assert group.get_attribute("aria-label") == "Review mode for this thread"
    assert page.locator("input[value=auto]").get_attribute("aria-label") == "auto review mode"

    # full asks first; declining changes nothing.
    page.check("input[value=full]")
    page.click("#save-mode")
    assert len(dialogs) == 1 and "Full mode" in dialogs[0]
    assert page.url == f"{service.url}/threads/{thread}"
    assert service.agent.get(f"/api/v1/threads/{thread}").json()["review_mode"] == "manual"

    page.check("input[value=auto]")
    page.click("#save-mode")
    assert page.locator(".flash").inner_text() == "Review mode saved."
    assert page.locator("input[value=auto]").is_checked()
    assert len(dialogs) == 1  # only full asks
    assert service.agent.get(f"/api/v1/threads/{thread}").json()["review_mode"] == "auto"

    low = service.propose("execute", {"command": "make test"}, "call-2", thread)
    assert low["status"] == "allowed"
    assert (low["verdict"]["code"], low["request_id"]) == ("reviewer_approved", None)
    high = service.propose("deploy", {"env": "prod"}, "call-3", thread)
    assert high["status"] == "pending"  # auto still sends high risk to a human

    # Accepting the confirmation switches to full.
    answer["accept"] = True
    page.check("input[value=full]")
    page.click("#save-mode")
    assert page.locator(".flash").inner_text() == "Review mode saved."
    assert len(dialogs) == 2
    assert service.agent.get(f"/api/v1/threads/{thread}").json()["review_mode"] == "full"


# ---- 7. what the approver sees ---------------------------------------------------------------

def test_request_page_shows_exact_escaped_arguments_and_flags_hidden_chars(
        page: Page, service: Service) -> None:
    args = {"env": "prod\u202e\u200b", "note": "<script>window.__pwned = 1</script>"}
    description = "Deploys <b>main</b> to prod. Safe, trust me."
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    rid = service.propose("deploy", args, "call-1", "t-show", description=description)[
        "request_id"]
    page.goto(f"{service.url}/requests/{rid}")

    shown = page.locator("#args")
    marks = shown.locator("mark.hidden-char")
    assert marks.count() == 2
    assert [marks.nth(i).get_attribute("title") for i in range(2)] == [
        "RIGHT-TO-LEFT OVERRIDE", "ZERO WIDTH SPACE"]
    expected = (canonical_text(args)
                .replace("\u202e", "\u27e6U+202E right-to-left override\u27e7")
                .replace("\u200b", "\u27e6U+200B zero width space\u27e7"))
    assert shown.inner_text() == expected  # the canonical bytes, made visible
    assert page.locator("#args-hash").inner_text() == args_hash(args)
    assert page.locator("#flagged").is_visible()
    assert "2 invisible, control or direction-changing characters" in page.locator(
        "#flagged").inner_text()

    # Markup in arguments and description is text, never code.
    assert "<script>window.__pwned = 1</script>" in shown.inner_text()
    assert shown.locator("script").count() == 0
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert dialogs == []

    said = page.locator("#agent-description")
    assert said.inner_text() == description
    assert said.locator("b").count() == 0
    heading = page.locator("#desc-h").inner_text()
    assert heading.startswith("Agent-supplied description")
    assert "not verified" in heading
    assert page.locator("h1 .risk").inner_text() == "high risk"


# ---- 8. screenshots for the README ---------------------------------------------------------------

def test_screenshots(page: Page, service: Service, tmp_path: Path) -> None:
    """The inbox with requests of three risks, and a request page. Written to docs/img/
    when SIGNOFF_SCREENSHOTS=1."""
    service.propose("execute", {"command": "make build", "workdir": "."}, "call-1",
                    "ci-fix-42", description="Build the project to check the fix compiles.")
    deploy = service.propose(
        "deploy", {"env": "prod", "ref": "v2.3.1", "note": "hotfix\u200b for #812"}, "call-2",
        "release-2.3", description="Ship the hotfix for the login outage to production.")
    service.propose("read_file", {"path": "config/.env"}, "call-3", "ci-fix-42",
                    description="Read the database settings to debug the failing test.")
    page.reload()
    live(page)
    assert page.locator("tr[data-request-row]").count() == 3
    assert [page.locator("tr[data-request-row] .risk").nth(i).inner_text()
            for i in range(3)] == ["critical", "high", "low"]
    page.set_viewport_size({"width": 1100, "height": 480})
    inbox_png = tmp_path / "inbox.png"
    page.screenshot(path=str(inbox_png), full_page=True)

    page.goto(f"{service.url}/requests/{deploy['request_id']}")
    live(page)
    request_png = tmp_path / "request.png"
    page.screenshot(path=str(request_png), full_page=True)

    for png in (inbox_png, request_png):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    if os.environ.get("SIGNOFF_SCREENSHOTS") == "1":
        DOCS_IMG.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(inbox_png, DOCS_IMG / "inbox.png")
        shutil.copyfile(request_png, DOCS_IMG / "request.png")


def test_a_request_proposed_while_the_page_connects_is_not_lost(
        page: Page, service: Service) -> None:
    """The window between the page's render and its event stream's subscription: a request
    proposed there must still appear (the stream replays from the page's audit index)."""
    proposed: list[str] = []

    def propose_then_connect(route: Any) -> None:
        if not proposed:
            proposed.append(service.propose("execute", {"command": "make build"}, "call-1",
                                             "t-race")["request_id"])
        route.continue_()

    page.route("**/api/v1/events*", propose_then_connect)
    page.reload()
    live(page)
    assert proposed
    page.wait_for_selector(f"tr[data-request-row='{proposed[0]}']", timeout=5_000)


# ---- the approval card: auto-approve this thread -------------------------------------

def test_auto_approve_this_thread_from_the_card(page: Page, service: Service) -> None:
    """Issue 13, item 10: one click approves the call, switches the thread to auto and
    approves the pause's other undecided calls; the waiting agent sees each approval; a
    mandatory call stays. (A party of the thread is refused by every route:
    ``test_selfapproval``.)"""
    thread = "t-card"
    first = service.propose("execute", {"command": "make build"}, "c1", thread)["request_id"]
    second = service.propose("execute", {"command": "make test"}, "c2", thread)["request_id"]
    secret = service.propose("read_file", {"path": "app/.env"}, "c3", thread)["request_id"]
    waits = [service.wait_in_background(first), service.wait_in_background(second)]

    page.goto(f"{service.url}/requests/{first}")
    button = page.locator("#approve-auto-thread")
    assert button.inner_text() == "Auto-approve this thread"
    note = page.locator("#auto-note").inner_text()
    assert "switches thread t-card to auto" in note
    others = page.locator("#pause-others").inner_text()
    assert "make test" in others and "(mandatory)" in others  # the page says what it covers

    button.click()
    assert page.locator(".flash").inner_text().startswith("Approved; this thread is now on "
                                                          "auto-approve")
    assert page.locator("#status").inner_text() == "approved"
    assert "auto-approve this thread" in page.locator(".decisions").inner_text()
    for got in waits:
        outcome = joined(got)
        assert (outcome["http_status"], outcome["kind"]) == (200, "approved")
    assert service.gate.get_request(secret).status.value == "pending"  # mandatory: a human's
    view = service.agent.get(f"/api/v1/threads/{thread}").json()
    assert (view["review_mode"], view["set_by"]) == ("auto", "admin")
    # the thread is on auto now: the reviewer passes the next low-risk call
    assert service.propose("execute", {"command": "make lint"}, "c4", thread)["status"] \
        == "allowed"


# ---- 9. write evidence -----------------------------------------------------------------------


@pytest.fixture
def writes_service(tmp_path: Path) -> Iterator[Service]:
    root = tmp_path / "ws"
    root.mkdir()
    yield from _serve(tmp_path, WRITES_POLICY.format(root=root))


def test_the_request_page_shows_a_writes_diff_as_text(browser: Browser,
                                                       writes_service: Service) -> None:
    service = writes_service
    workspace = service.gate.policy.workspace
    assert workspace is not None
    notes = Path(workspace.root) / "notes.md"
    notes.write_text("keep\n<script>window.__old = 1</script>\n")
    new = "keep\n<script>window.__pwned = 1</script>\n</pre><b id=bold>bold</b>\n"
    dialogs: list[str] = []
    pages = _tab(browser, service)
    page = next(pages)
    try:
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        rid = service.propose("write_file", {"file_path": "/notes.md", "content": new},
                              "w-1", "t-diff")["request_id"]
        page.goto(f"{service.url}/requests/{rid}")
        change = page.locator("#changes .change")
        assert change.count() == 1
        assert change.locator(".change-path").inner_text() == "/notes.md"
        assert change.locator(".change-kind").inner_text() == "changes"
        diff = change.locator("pre.diff")
        assert diff.inner_text().splitlines() == [
            "--- a/notes.md", "+++ b/notes.md", "@@ -1,2 +1,3 @@", " keep",
            "-<script>window.__old = 1</script>", "+<script>window.__pwned = 1</script>",
            "+</pre><b id=bold>bold</b>"]
        # Styled by class only; the file's markup is text: no element came from it.
        classes = [diff.locator("span").nth(i).get_attribute("class") for i in range(7)]
        assert classes == ["diff-file", "diff-file", "diff-hunk", "diff-ctx", "diff-del",
                           "diff-add", "diff-add"]
        assert diff.locator("script").count() == 0 and page.locator("#bold").count() == 0
        assert page.evaluate("typeof window.__pwned") == "undefined"
        assert dialogs == []
        added = diff.locator("span.diff-add").first
        assert added.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(230, 255, 236)"
        assert f"sha256 {__import__('hashlib').sha256(notes.read_bytes()).hexdigest()}" in \
            change.locator(".change-facts").inner_text()

        # Approved, then the file changes under it: the claim refuses, the page says why.
        page.click("#approve-once")
        page.wait_for_selector(".flash")
        notes.write_text("changed by someone else\n")
        claim = service.agent.post(f"/api/v1/calls/{rid}/claim")
        assert claim.status_code == 409 and claim.json()["code"] == "resource_changed"
        page.goto(f"{service.url}/requests/{rid}")
        assert "invalidated" in page.locator("#request-status").inner_text()
        assert notes.read_text() == "changed by someone else\n"
    finally:
        pages.close()
