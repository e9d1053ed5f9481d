"""Insights over HTTP (docs/insights.md): ``GET /api/v1/insights`` answers exactly
``Insights.to_dict()`` on both backends, and ``/inbox/insights`` shows the same figures as
charts drawn on the server (inline SVG, no script) and tables, over the known history of
``tests/histories.py``. A bad window is a 422 with the CLI's codes, from both; an agent's
token is refused; what agents named things is escaped."""

from __future__ import annotations

import contextlib
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any

import httpx
import pytest

from histories import DAY, POLICY, T0, history
from kit import CHROMIUM, NO_CHROMIUM
from signoff import Gate, Policy
from signoff.model import RunContext, ToolCall
from signoff.server import create_app
from signoff.server.running import ServerThread
from signoff.server.settings import ServerSettings
from signoff.store.base import Store

SVG = "{http://www.w3.org/2000/svg}"
EVIL_TOOL = "<script>alert('tool')</script>"
EVIL_THREAD = "<script>alert('thread')</script>"  # visible ASCII: a valid thread id


@dataclass
class Service:
    gate: Gate
    url: str
    tokens: dict[str, str]

    def client(self, name: str | None = None, **options: Any) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.tokens[name]}"} if name else {}
        return httpx.Client(base_url=self.url, timeout=30, headers=headers, **options)


@contextlib.contextmanager
def _serve(gate: Gate) -> Iterator[Service]:
    tokens = {name: gate.add_user(name, kind=kind)[1]
              for name, kind in [("boss", "admin"), ("cy", "approver"), ("bot", "agent")]}
    server = ServerThread(create_app(gate, ServerSettings(), feed_poll=0.2)).start()
    try:
        yield Service(gate=gate, url=server.url, tokens=tokens)
    finally:
        server.stop()


@pytest.fixture
def service(store: Store) -> Iterator[Service]:
    """The known history (its clock stands at T0 + 3 days), served."""
    with _serve(history(store)) as served:
        yield served


@pytest.fixture
def one(sqlite_store: Store) -> Iterator[Service]:
    """The known history on SQLite alone, for what does not depend on the backend."""
    with _serve(history(sqlite_store)) as served:
        yield served


@pytest.fixture
def evil(sqlite_store: Store) -> Iterator[Service]:
    """A history whose tool name and thread id are markup (a tool name cannot hide a
    character: the input contract refuses it; the charts' own test shows one)."""
    gate = Gate(Policy.from_toml(POLICY, source="insights.toml"), sqlite_store)
    for n in range(2):
        proposed = gate.propose(ToolCall(id=f"c{n}", name=EVIL_TOOL, args={"n": 1}),
                                RunContext(thread_id=EVIL_THREAD, principal="bot"))
        assert proposed.request is not None
    with _serve(gate) as served:
        yield served


def _plain(found: Any) -> Any:
    return json.loads(json.dumps(found.to_dict()))


# ---- the API --------------------------------------------------------------------------------


def test_the_api_answers_the_gates_figures(service: Service) -> None:
    with service.client("cy") as cy, service.client("boss") as boss:
        whole = cy.get("/api/v1/insights")
        assert whole.status_code == 200, whole.text
        assert whole.headers["content-type"] == "application/json"
        data = whole.json()
        assert data == _plain(service.gate.insights(top=10))
        assert (data["asks"], data["threads"], data["never_matched"]) == (6, 2, ["never-used"])
        assert data["rules"][1] == {
            "rule": "ask-push", "asks": 2, "decided": 2, "approved": 1, "edited": 0,
            "rejected": 0, "responded": 1, "approve_rate": 0.5, "edit_rate": 0.0,
            "reject_rate": 0.0, "respond_rate": 0.5}
        assert data["waits"] == [{"risk": "medium", "decided": 2, "median": 30.0, "p90": 60.0},
                                 {"risk": "high", "decided": 2, "median": 10.0, "p90": 100.0}]
        assert boss.get("/api/v1/insights").json() == data  # admins too
        # The CLI's time forms: an ISO date, epoch seconds, an age back from the gate's now.
        day_two = boss.get("/api/v1/insights", params={
            "since": "2026-01-02", "until": str(T0 + 2 * DAY), "top": "1"}).json()
        assert day_two == _plain(service.gate.insights(since=T0 + DAY, until=T0 + 2 * DAY,
                                                       top=1))
        assert (day_two["since"], day_two["until"], day_two["asks"]) == (
            T0 + DAY, T0 + 2 * DAY, 3)
        assert [t["thread"] for t in day_two["top_threads"]] == ["t2"]
        assert boss.get("/api/v1/insights", params={"since": "1d"}).json()["asks"] == 0
        assert boss.get("/api/v1/insights", params={"since": "3d"}).json()["asks"] == 6
        spec = boss.get("/openapi.json").json()["paths"]["/api/v1/insights"]["get"]
        assert {p["name"] for p in spec["parameters"]} == {"since", "until", "top"}


BAD = [({"since": "yesterday-ish"}, "invalid_time", "since"),
       ({"until": "2026-13-45"}, "invalid_time", "until"),
       ({"since": "a\x00b"}, "invalid_time", "since"),
       ({"since": "t" * 8192}, "invalid_time", "since"),
       ({"since": "2026-01-02", "until": "2026-01-01"}, "invalid_window", "since"),
       ({"since": "2026-01-01", "until": "2026-01-01"}, "invalid_window", "since"),
       ({"top": "0"}, "invalid_limit", "top"), ({"top": "1001"}, "invalid_limit", "top"),
       ({"top": "ten"}, "invalid_limit", "top"), ({"top": "-1"}, "invalid_limit", "top"),
       ({"top": "\u00b2"}, "invalid_limit", "top"), ({"top": "9" * 40}, "invalid_limit", "top"),
       ({"top": ""}, "invalid_limit", "top")]


def test_a_bad_window_is_a_typed_422(one: Service) -> None:
    with one.client("cy") as cy:
        for params, code, field in BAD:
            answer = cy.get("/api/v1/insights", params=params)
            assert answer.status_code == 422, (params, answer.text)
            assert answer.headers["content-type"].startswith("application/problem+json")
            assert (answer.json()["code"], answer.json()["field"]) == (code, field), params
            page = cy.get("/inbox/insights", params=params)
            if params == {"top": ""}:  # an empty field of the form is not given
                assert page.status_code == 200
                continue
            assert page.status_code == 422, (params, page.text[:300])
            assert page.headers["content-type"].startswith("text/html")
            assert f"<strong>{code}</strong>" in page.text, params
            assert "\x00" not in page.text and "<svg" not in page.text
            # the form shows again what was typed, visible and cut, to correct it
            shown = Parsed(page.text).value(next(iter(params)))
            assert shown == {"a\x00b": "a\u27e6U+0000 control character\u27e7b",
                             "t" * 8192: "t" * 63 + "\u2026"}.get(
                                 next(iter(params.values())), next(iter(params.values())))


def test_agents_and_strangers_are_refused(one: Service) -> None:
    with one.client("bot") as bot, one.client() as nobody:
        for path in ("/api/v1/insights", "/inbox/insights"):
            refused = bot.get(path)
            assert refused.status_code == 403, (path, refused.text)
            assert refused.json()["code"] == "approver_required"
        assert nobody.get("/api/v1/insights").json()["code"] == "unauthenticated"
        assert nobody.get("/api/v1/insights").status_code == 401
        page = nobody.get("/inbox/insights")  # as every inbox page: to the sign-in
        assert (page.status_code, page.headers["location"]) == (303, "/login")
        # A person signed in by a login link reads it with the session's cookie.
        code, _ = one.gate.mint_login_link("cy")
        assert nobody.get(f"/login?code={code}").status_code == 303
        assert nobody.get("/inbox/insights").status_code == 200
        assert nobody.get("/api/v1/insights").json()["asks"] == 6


# ---- the page -------------------------------------------------------------------------------


class Parsed(HTMLParser):
    """The page's elements (tag, attributes), its table rows' cell texts, its scripts."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.rows: list[list[str]] = []
        self.scripts: list[dict[str, str | None]] = []
        self.script_text = ""
        self._cell: list[str] | None = None
        self._in: list[str] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))
        self._in.append(tag)
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "script":
            self.scripts.append(dict(attrs))

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append(" ".join("".join(self._cell).split()))
            self._cell = None
        if tag in self._in:
            while self._in.pop() != tag:
                pass

    def handle_data(self, data: str) -> None:
        if self._cell is not None and "svg" not in self._in:
            self._cell.append(data)
        if self._in and self._in[-1] == "script":
            self.script_text += data

    def value(self, name: str) -> str | None:
        """The value of the input named ``name``."""
        return next(a.get("value") for t, a in self.elements
                    if t == "input" and a.get("name") == name)

    def row(self, first: str) -> list[str]:
        return next(r for r in self.rows if r and r[0] == first)


def _svgs(html: str) -> list[ET.Element]:
    """Every inline SVG, parsed as XML: each well-formed, an image with its summary."""
    found = [ET.fromstring(s) for s in re.findall(r"<svg\b.*?</svg>", html, flags=re.S)]
    for svg in found:
        title = svg.findtext(f"{SVG}title")
        assert svg.get("role") == "img" and title and svg.get("aria-label") == title
    return found


def _no_script_but_the_inbox_own(parsed: Parsed, html: str) -> None:
    assert [s.get("src") for s in parsed.scripts] == ["/static/inbox.js"]
    assert parsed.script_text.strip() == ""
    assert " style=" not in html  # the CSP (style-src 'self') would drop it


def test_the_page_draws_the_figures(service: Service) -> None:
    with service.client("cy") as cy:
        page = cy.get("/inbox/insights")
    assert page.status_code == 200, page.text[:500]
    assert "script-src 'self'" in page.headers["content-security-policy"]
    html = page.text
    parsed = Parsed(html)
    _no_script_but_the_inbox_own(parsed, html)
    assert ("a", {"href": "/inbox/insights", "id": "insights-link"}) in parsed.elements
    svgs = _svgs(html)
    titles = [s.findtext(f"{SVG}title") or "" for s in svgs]
    # days, tools, rules, waits, a sparkline per thread (2), repeated calls, expired
    assert len(svgs) == 8, titles
    assert titles[0].startswith("Asks per day from 2026-01-01 to 2026-01-02: 6 asks in all")
    assert titles[0].endswith("by tool: execute 4, deploy 1, send_mail 1")
    assert [g.get("data-day") for g in svgs[0].iter(f"{SVG}g") if g.get("class") == "bar"] \
        == ["2026-01-01", "2026-01-02"]
    assert titles[1] == "Asks per tool: execute 4; deploy 1; send_mail 1"
    assert "ask-push: 2 asks, 2 decided, approve 50%, edit 0%, reject 0%, respond 50%" \
        in titles[2]
    assert titles[3] == ("Time to decision per risk: medium: median 30s, p90 60s, of 2 "
                         "decided; high: median 10s, p90 100s, of 2 decided")
    assert titles[4] == "Thread t1: 3 asks on 1 day, per day: 2026-01-01 3"
    assert titles[7] == "Expired unanswered per tool (1 in all): execute 1"
    # The same figures as text.
    assert "6 asks from 2 threads, the whole history." in " ".join(
        re.sub(r"<[^>]+>", "", html).split())
    assert parsed.row("execute")[:3] == ["execute", "4", "67%"]
    assert parsed.row("(gated)") == ["(gated)", "2", "1", "0%", "0%", "100%", "0%"]
    assert parsed.row("ask-push") == ["ask-push", "2", "2", "50%", "0%", "0%", "50%"]
    assert parsed.row("(unknown_tool)") == ["(unknown_tool)", "1", "0", "-", "-", "-", "-"]
    assert parsed.row("deploy-prod") == ["deploy-prod", "1", "1", "0%", "100%", "0%", "0%"]
    assert parsed.row("medium") == ["medium", "2", "30s", "60s"]
    assert parsed.row("high") == ["high", "2", "10s", "100s"]
    assert parsed.row("t2") == ["t2", "3", "1", "2026-01-02 3"]
    assert parsed.row("2026-01-01") == ["2026-01-01", "3", "execute 2, deploy 1"]
    assert "<li><code>never-used</code></li>" in html
    assert "Expired unanswered: 1</h2>" in html


def test_a_window_narrows_the_page(service: Service) -> None:
    with service.client("boss") as boss:
        page = boss.get("/inbox/insights", params={"since": "2026-01-02", "until": "",
                                                    "top": "1"})
        empty = boss.get("/inbox/insights", params={"since": "2030-01-01"})
    assert page.status_code == 200 and empty.status_code == 200
    parsed = Parsed(page.text)
    assert parsed.value("since") == "2026-01-02"  # the form shows the window in force
    assert "3 asks from 1 thread, from 2026-01-02 00:00 UTC." in " ".join(
        re.sub(r"<[^>]+>", "", page.text).split())
    assert [r[0] for r in parsed.rows if r and r[0].startswith("t")] == ["t2"]
    for never in ("no-rm", "allow-ls", "deploy-prod", "never-used"):
        assert f"<li><code>{never}</code></li>" in page.text
    assert "<svg" not in empty.text and "No asks in this window." in empty.text


def test_what_agents_named_is_escaped(evil: Service) -> None:
    with evil.client("cy") as cy:
        html = cy.get("/inbox/insights").text
        data = cy.get("/api/v1/insights").json()
    assert data["tools"][0] == {"key": EVIL_TOOL, "asks": 2}  # JSON carries it as it is
    assert "<script>alert" not in html
    assert "&lt;script&gt;alert(&#39;tool&#39;)&lt;/script&gt;" in html
    assert "&lt;script&gt;alert(&#39;thread&#39;)&lt;/script&gt;" in html
    parsed = Parsed(html)
    _no_script_but_the_inbox_own(parsed, html)
    svgs = _svgs(html)  # still well-formed: nothing broke out of a text or an attribute
    assert not [e for s in svgs for e in s.iter() if e.tag.endswith("script")]
    assert any(EVIL_TOOL in (s.get("aria-label") or "") for s in svgs)
    assert any(f"Thread {EVIL_THREAD}" in (s.get("aria-label") or "") for s in svgs)
    assert ("a", {"href": "/threads/%3Cscript%3Ealert%28%27thread%27%29%3C%2Fscript%3E"}) \
        in parsed.elements


# ---- in a browser with JavaScript off -------------------------------------------------------


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason=NO_CHROMIUM)
def test_the_charts_draw_with_javascript_off(one: Service, browser: Any) -> None:
    context = browser.new_context(java_script_enabled=False,
                                  viewport={"width": 1200, "height": 900})
    try:
        tab = context.new_page()
        code, _ = one.gate.mint_login_link("cy")
        tab.goto(f"{one.url}/login?code={code}")
        tab.click("#insights-link")
        assert tab.url == f"{one.url}/inbox/insights"
        charts = tab.locator("svg[role=img]")
        assert charts.count() == 8
        for i in range(charts.count()):
            box = charts.nth(i).bounding_box()
            assert box is not None and box["width"] > 50 and box["height"] > 10, i
        bars = tab.locator("#insights-days svg g.bar rect")
        assert bars.count() == 4  # two days, each two tools
        assert all((bars.nth(i).bounding_box() or {}).get("height", 0) > 10
                   for i in range(4))
        tab.fill("input[name=since]", "whenever")
        tab.click("#insights-window-form button")
        assert "invalid_time" in tab.locator(".error").inner_text()
        assert tab.locator("svg[role=img]").count() == 0
    finally:
        context.close()
