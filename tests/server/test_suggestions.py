"""Rule suggestions for admins over HTTP and in the inbox (docs/insights.md): listed as
``signoff insights suggest --json`` lists them, applied into the server's own policy file,
and judged by at once — the call a suggestion covers is allowed over the API, a call a
human refused is still asked, the apply is audited with the admin's name. Refusals write
nothing: a stale version (409), an unknown id (422), no id, anyone but an admin (403), a
server with no policy file."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from html import unescape
from pathlib import Path
from typing import Any

import httpx
import pytest
from procs import Live
from server_helpers import Served

from histories import APPROVED, REFUSED, suggestible
from signoff import Gate, Policy, RunContext, SqliteStore, ToolCall
from signoff.cli import main
from signoff.errors import StoreError
from signoff.policy.starter import starter_toml
from signoff.server import ServerSettings, create_app
from signoff.server.running import ServerThread


@dataclass
class Suggesting:
    url: str
    gate: Gate
    policy: Path
    db: Path
    tokens: dict[str, str]
    ids: dict[str, str]

    def client(self, who: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.tokens[who]}"} if who else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)


@pytest.fixture
def suggesting(tmp_path: Path) -> Iterator[Suggesting]:
    """A server over a gate that loaded its policy from a file, with a decided history."""
    root = tmp_path / "ws"
    root.mkdir()
    policy = tmp_path / "signoff.toml"
    policy.write_text(starter_toml(str(root)), "utf-8")
    db = tmp_path / "server.db"
    gate = Gate(Policy.load(policy), SqliteStore(db))
    tokens = {name: gate.add_user(name, kind=kind)[1] for name, kind in [
        ("root", "admin"), ("alice", "approver"), ("bot", "agent")]}
    ids = suggestible(gate)
    with ServerThread(create_app(gate, ServerSettings(port=0), feed_poll=0.2)) as server:
        yield Suggesting(url=server.url, gate=gate, policy=policy, db=db, tokens=tokens,
                         ids=ids)
    gate.store.close()


def propose(client: httpx.Client, command: str, call_id: str,
            thread: str = "t-after") -> dict[str, Any]:
    answer = client.post("/api/v1/calls", json={
        "tool": "execute", "args": {"command": command}, "call_id": call_id,
        "context": {"thread_id": thread, "review_mode": "manual"}})
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def code(answer: httpx.Response) -> str:
    return str(answer.json()["code"])


def python_rule(listed: dict[str, Any]) -> dict[str, Any]:
    [found] = [s for s in listed["suggestions"] if any("python" in c for c in s["command"])]
    return found


def test_listed_as_the_cli_lists_applied_and_judged_by_at_once(
        suggesting: Suggesting, capsys: pytest.CaptureFixture[str]) -> None:
    with suggesting.client("root") as root, suggesting.client("bot") as bot:
        listed = root.get("/api/v1/insights/suggestions")
        assert listed.status_code == 200, listed.text
        listed_json = listed.json()
        # the same report as `signoff insights suggest --json`, over the same store and file
        assert main(["insights", "suggest", "--json", "--db", str(suggesting.db),
                     "--policy", str(suggesting.policy)]) == 0
        assert json.loads(capsys.readouterr().out) == listed_json
        assert listed_json["policy_version"] == "1"
        chosen = python_rule(listed_json)
        assert chosen["saved"] == 4  # python a.py twice, b.py, c.py
        assert {suggesting.ids[c] for c in APPROVED[:3]} <= set(chosen["evidence"])
        assert propose(bot, "python a.py", "before")["status"] == "pending"

        applied = root.post("/api/v1/insights/suggestions/apply",
                            json={"ids": [chosen["id"]], "expect_version": "1"})
        assert applied.status_code == 200, applied.text
        body = applied.json()
        assert (body["previous_version"], body["version"]) == ("1", "2")
        assert [s["id"] for s in body["applied"]] == [chosen["id"]]
        assert "+[[rules]]" in body["diff"] and body["policy"] == str(suggesting.policy)

        # the file on disk loads, at the new version, with the rule
        on_disk = Policy.load(suggesting.policy)
        assert on_disk.version == "2"
        assert chosen["rule_id"] in [r.id for r in on_disk.config.rules]
        text = suggesting.policy.read_text("utf-8")
        assert "applied by root" in text and "suggested-make" not in text  # only the chosen

        # the running server judges by it: the covered call runs, the refused one still asks
        assert propose(bot, "python b.py", "after-1")["status"] == "allowed"
        assert propose(bot, REFUSED, "after-2")["status"] == "pending"
        assert propose(bot, "python e.py", "after-3")["status"] == "pending"  # edited
        assert root.get("/healthz").json()["policy_version"] == "2"

        # audited with the admin's name, the rule, both versions
        events = root.get("/api/v1/audit").json()["events"]
        [changed] = [e for e in events if e["kind"] == "policy.changed"]
        assert changed["actor"] == "root"
        assert changed["data"]["from"] == "1" and changed["data"]["to"] == "2"
        assert changed["data"]["rules"] == [chosen["rule_id"]]
        assert changed["data"]["suggestions"] == [chosen["id"]]
        assert changed["data"]["via"] == "api"
        assert root.get("/api/v1/audit", params={"verify": "true"}).json()["verified"] is True

        # the suggestion is no longer offered; what is left is listed at the new version
        again = root.get("/api/v1/insights/suggestions").json()
        assert again["policy_version"] == "2"
        assert chosen["id"] not in [s["id"] for s in again["suggestions"]]


def test_refusals_write_nothing(suggesting: Suggesting) -> None:
    before = suggesting.policy.read_bytes()
    with suggesting.client("root") as root, suggesting.client("alice") as alice, \
            suggesting.client("bot") as bot:
        listed = root.get("/api/v1/insights/suggestions").json()
        chosen = python_rule(listed)
        url = "/api/v1/insights/suggestions/apply"
        stale = root.post(url, json={"ids": [chosen["id"]], "expect_version": "0"})
        assert stale.status_code == 409 and code(stale) == "policy_stale"
        unknown = root.post(url, json={"ids": ["s-00000000"], "expect_version": "1"})
        assert unknown.status_code == 422 and code(unknown) == "unknown_suggestion"
        assert unknown.json()["field"] == "ids"
        empty = root.post(url, json={"ids": [], "expect_version": "1"})
        assert empty.status_code == 422 and code(empty) == "nothing_chosen"
        missing = root.post(url, json={"ids": [chosen["id"]]})
        assert missing.status_code == 422 and code(missing) == "invalid_body"
        for other in (alice, bot):
            for answer in (other.get("/api/v1/insights/suggestions"),
                           other.post(url, json={"ids": [chosen["id"]],
                                                 "expect_version": "1"})):
                assert answer.status_code == 403 and code(answer) == "admin_required"
        # the file changed since it was listed (a person edited it): stale, by version
        edited = before.replace(b'version = "1"', b'version = "1-hand"')
        assert edited != before
        suggesting.policy.write_bytes(edited)
        moved = root.post(url, json={"ids": [chosen["id"]], "expect_version": "1"})
        assert moved.status_code == 409 and code(moved) == "policy_stale"
        assert suggesting.policy.read_bytes() == edited
        suggesting.policy.write_bytes(before)
        kinds = [e["kind"] for e in root.get("/api/v1/audit").json()["events"]]
    assert suggesting.policy.read_bytes() == before
    assert "policy.changed" not in kinds
    assert suggesting.gate.config.version == "1"


def test_an_apply_the_audit_cannot_record_puts_the_file_back(
        suggesting: Suggesting, monkeypatch: pytest.MonkeyPatch) -> None:
    before = suggesting.policy.read_bytes()

    def down(*_: object, **__: object) -> None:
        raise StoreError("the database is unreachable", code="store_unavailable")

    monkeypatch.setattr(suggesting.gate.records, "note_policy_changed", down)
    with suggesting.client("root") as root, suggesting.client("bot") as bot:
        chosen = python_rule(root.get("/api/v1/insights/suggestions").json())
        answer = root.post("/api/v1/insights/suggestions/apply",
                           json={"ids": [chosen["id"]], "expect_version": "1"})
        assert answer.status_code == 503 and code(answer) == "store_unavailable"
        assert answer.headers["retry-after"] == "5"
        assert propose(bot, "python b.py", "still")["status"] == "pending"
    assert suggesting.policy.read_bytes() == before
    assert suggesting.gate.config.version == "1"
    assert list(suggesting.policy.parent.glob(".signoff.toml.*")) == []


def test_a_server_without_a_policy_file_refuses(served: Served) -> None:
    with served.client(served.admin) as root:
        listed = root.get("/api/v1/insights/suggestions")
        assert listed.status_code == 400 and code(listed) == "no_policy_file"
        applied = root.post("/api/v1/insights/suggestions/apply",
                            json={"ids": ["s-00000000"], "expect_version": "server-1"})
        assert applied.status_code == 400 and code(applied) == "no_policy_file"
        page = root.get("/inbox/insights/suggestions")
        assert page.status_code == 400 and "no_policy_file" in page.text
    assert served.gate.config.version == "server-1"


def _hidden(html: str, name: str) -> list[str]:
    return [unescape(v) for v in re.findall(
        rf'<input type="hidden" name="{name}" value="([^"]*)">', html)]


@contextlib.contextmanager
def _signed_in(suggesting: Suggesting, who: str) -> Iterator[httpx.Client]:
    """A browser's session: the cookie, and the CSRF token in every form."""
    with httpx.Client(base_url=suggesting.url, timeout=30) as browser:
        answer = browser.post("/login", data={"token": suggesting.tokens[who]})
        assert answer.status_code == 303, answer.text
        yield browser


def test_the_inbox_page_lists_reviews_and_applies(suggesting: Suggesting) -> None:
    with _signed_in(suggesting, "root") as browser:
        assert 'href="/inbox/insights/suggestions"' in browser.get("/inbox").text
        page = browser.get("/inbox/insights/suggestions")
        assert page.status_code == 200, page.text
        html = page.text
        # agent-supplied commands are escaped, never markup
        assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
        ids = re.findall(r'name="id" value="(s-[0-9a-f]{8})"', html)
        assert len(ids) == 2
        assert suggesting.ids[REFUSED] in html  # the proof names the refused call
        assert "[[rules]]" in html and 'id="policy-version">1<' in html
        listed = browser.get("/api/v1/insights/suggestions").json()  # the cookie works too
        chosen = python_rule(listed)["id"]

        review = browser.get("/inbox/insights/suggestions/review",
                             params={"id": chosen, "expect_version": "1"})
        assert review.status_code == 200, review.text
        assert '<span class="diff-add">+[[rules]]</span>' in review.text
        assert '<span class="diff-add">+version = &#34;2&#34;</span>' in review.text
        assert "+command = [&#34;make &#39;&lt;script&gt;" not in review.text  # not chosen
        assert suggesting.policy.read_text("utf-8").count("[[rules]]") == \
            starter_toml("/x").count("[[rules]]")  # a review writes nothing
        form = {"csrf": _hidden(review.text, "csrf")[0], "id": _hidden(review.text, "id"),
                "expect_version": _hidden(review.text, "expect_version")[0],
                "digest": _hidden(review.text, "digest")[0]}
        assert form["id"] == [chosen] and form["expect_version"] == "1"

        forged = browser.post("/inbox/insights/suggestions/apply",
                              data={**form, "csrf": "wrong"})
        assert forged.status_code == 403 and code(forged) == "csrf_failed"
        changed = browser.post("/inbox/insights/suggestions/apply",
                               data={**form, "digest": "sha256:" + "0" * 64})
        assert changed.status_code == 409 and "suggestions_changed" in changed.text
        assert suggesting.gate.config.version == "1"

        done = browser.post("/inbox/insights/suggestions/apply", data=form)
        assert done.status_code == 200, done.text
        assert 'id="applied-version">2<' in done.text
        assert Policy.load(suggesting.policy).version == "2"
        again = browser.post("/inbox/insights/suggestions/apply", data=form)
        assert again.status_code == 409 and "policy_stale" in again.text
    events = list(suggesting.gate.audit_events())
    [changed_event] = [e for e in events if e.kind == "policy.changed"]
    assert changed_event.actor == "root" and json.loads(changed_event.data)["via"] == "inbox"


def test_the_page_is_for_admins_only(suggesting: Suggesting) -> None:
    with _signed_in(suggesting, "alice") as browser:
        assert "/inbox/insights/suggestions" not in browser.get("/inbox").text
        for path in ("/inbox/insights/suggestions",
                     "/inbox/insights/suggestions/review?id=s-00000000"):
            page = browser.get(path)
            assert page.status_code == 403 and "admin_required" in page.text, path
            assert page.headers["content-type"].startswith("text/html")
        csrf = re.search(r'name="csrf-token" content="([^"]+)"',
                         browser.get("/inbox").text)
        assert csrf is not None
        posted = browser.post("/inbox/insights/suggestions/apply", data={
            "csrf": csrf.group(1), "id": "s-00000000", "expect_version": "1", "digest": "x"})
        assert posted.status_code == 403 and "admin_required" in posted.text
    with suggesting.client("bot") as bot:  # an agent's token: the inbox's own refusal
        page = bot.get("/inbox/insights/suggestions")
        assert page.status_code == 403 and code(page) == "approver_required"
    with suggesting.client() as nobody:
        assert nobody.get("/inbox/insights/suggestions").status_code == 303  # to /login


def test_reload_keeps_what_the_gate_protects(tmp_path: Path) -> None:
    """``Gate.reload_policy``: the store's files and those ``protect_files`` named stay
    protected under the new policy, the reviewer stays, the event comes first."""
    root = tmp_path / "ws"
    root.mkdir()
    policy = tmp_path / "signoff.toml"
    policy.write_text(starter_toml(str(root)), "utf-8")
    gate = Gate(Policy.load(policy), SqliteStore(tmp_path / "g.db"))
    key = root / "key.pem"
    gate.protect_files([key], "the server's signing key", secret=True)
    reviewer = gate.policy.reviewer
    fresh = Policy.load(policy).config
    assert all(g.path != str(key) for g in fresh.guarded)
    gate.reload_policy(fresh, actor="root", data={"via": "test"})
    for part in (gate.policy, gate.revalidation_policy, gate.proposer.policy,
                 gate.decider.policy, gate.accounts.policy, gate.executor.revalidation_policy):
        guarded = {g.path for g in part.config.guarded}
        assert str(key) in guarded and str(tmp_path / "g.db") in guarded
        assert str(policy) in guarded
    assert gate.proposer.policy is gate.policy and gate.bulk.config is gate.config
    assert gate.policy.reviewer is reviewer
    verdict = gate.check(ToolCall(id="r", name="read_file", args={"path": str(key)}),
                         RunContext(thread_id="t"))
    assert verdict.effect.value == "ask"  # a secret: reading it asks
    [event] = [e for e in gate.audit_events() if e.kind == "policy.changed"]
    assert json.loads(event.data) == {"source": str(policy), "from": "1", "to": "1",
                                      "via": "test"}
    gate.store.close()


@pytest.mark.slow
def test_a_real_signoff_serve_applies_and_judges_by_it(live: Live) -> None:
    """``signoff serve`` on each backend finds the file it loaded, writes it and judges by
    it without a restart."""
    with live.client("bot") as bot, live.client("ann") as ann, live.client("boss") as boss:
        for n, command in enumerate(["python a.py", "python b.py", "python a.py", REFUSED]):
            asked = propose(bot, command, f"live-{n}", thread="t-history")
            assert asked["status"] == "pending", asked
            decision = {"kind": "reject", "reason": "no"} if command == REFUSED else \
                {"kind": "approve"}
            answer = ann.post(f"/api/v1/requests/{asked['request_id']}/decisions",
                              json=decision)
            assert answer.status_code == 200, answer.text
        listed = boss.get("/api/v1/insights/suggestions").json()
        chosen = python_rule(listed)
        applied = boss.post("/api/v1/insights/suggestions/apply", json={
            "ids": [chosen["id"]], "expect_version": listed["policy_version"]})
        assert applied.status_code == 200, applied.text
        version = applied.json()["version"]
        assert Policy.load(live.cwd / "signoff.toml").version == version
        assert boss.get("/healthz").json()["policy_version"] == version
        assert propose(bot, "python b.py", "live-after")["status"] == "allowed"
        assert propose(bot, REFUSED, "live-refused")["status"] == "pending"
        events = boss.get("/api/v1/audit").json()["events"]
        assert [e["actor"] for e in events if e["kind"] == "policy.changed"] == ["boss"]
