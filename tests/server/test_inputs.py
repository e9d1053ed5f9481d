"""The input contract (``signoff.inputs``) over real HTTP, on both backends: NUL, oversized
and odd values in every path parameter, query, header and body field of every route in
``/openapi.json`` and of the inbox pages get a typed 4xx — never a 5xx, never a database's
own words — and real ids such as ``org/repo#12`` work end to end, links included."""

from __future__ import annotations

import re
import socket
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from procs import Live

from signoff.remote import Client

BAD_IDS = {"nul": "a\x00b", "8kb": "t" * 8192, "space": "a b", "hangul filler": "a\u3164",
           "superscript": "\u00b2", "tab": "\t"}
LEAKS = re.compile(r"psycopg|sqlite|index row|Traceback|NUL \(0x00\)|postgres", re.I)
PROPOSE = {"tool": "execute", "args": {"command": "make build"}, "call_id": "c1",
           "context": {"thread_id": "t1"}}


def _typed_4xx(response: httpx.Response, *codes: str) -> dict[str, Any]:
    where = f"{response.request.method} {response.request.url}"
    assert 400 <= response.status_code < 500, (where, response.status_code, response.text)
    assert response.headers["content-type"].startswith("application/problem+json"), where
    assert not LEAKS.search(response.text), (where, response.text)
    body: dict[str, Any] = response.json()
    if codes:
        assert body["code"] in codes, (where, body)
    return body


def _routes(client: httpx.Client) -> list[tuple[str, str, list[str]]]:
    """(method, path template, path parameters) of every operation in /openapi.json."""
    spec = client.get("/openapi.json").json()
    found = []
    for path, item in spec["paths"].items():
        for method, operation in item.items():
            params = [p["name"] for p in operation.get("parameters", []) if p["in"] == "path"]
            found.append((method.upper(), path, params))
    return found


@pytest.mark.slow
def test_bad_ids_in_every_path_query_and_header_are_typed_4xx(live: Live) -> None:
    with live.client("boss") as boss, live.client("bot") as bot:
        pending = bot.post("/api/v1/calls", json=PROPOSE).json()
        assert pending["status"] == "pending", pending
        request_id = pending["request_id"]
        routes = _routes(boss)
        with_ids = [r for r in routes if r[2]]
        assert len(with_ids) >= 7, routes  # calls/{id}, claim, result, requests/{id}, …
        for method, template, params in with_ids:
            for bad in BAD_IDS.values():
                path = template
                for name in params:
                    path = path.replace("{" + name + "}", quote(bad, safe=""))
                body = {"review_mode": "manual"} if "threads" in template else (
                    {"kind": "approve"} if "decisions" in template else
                    {"fencing_token": 1} if "result" in template else None)
                answer = boss.request(method, path, json=body)
                _typed_4xx(answer, "nul_character", "too_long", "invalid_identifier")
        # The same ids in the query string and in headers.
        for bad in BAD_IDS.values():
            _typed_4xx(boss.get("/api/v1/requests", params={"thread_id": bad}),
                       "nul_character", "too_long", "invalid_identifier")
        for key in ("k" * 8192, "a b", "\u3164"):
            answer = boss.post(f"/api/v1/requests/{request_id}/decisions",
                               json={"kind": "approve"},
                               headers={"Idempotency-Key": key.encode("utf-8")})
            body = _typed_4xx(answer, "too_long", "invalid_identifier")
            assert body["field"].lower() == "idempotency-key", body
        for value in ("\u00b2".encode(), b"1e3", b"-1", b"9" * 30, b"7 7"):
            answer = boss.get("/api/v1/events", headers={"Last-Event-ID": value})
            body = _typed_4xx(answer, "invalid_index")
            assert body["field"].lower() == "last-event-id"
        _typed_4xx(boss.get("/api/v1/audit", params={"after": "\u00b2"}), "invalid_body")
        # A NUL in a header never reaches the app: the HTTP parser refuses it (400).
        assert _raw_status(live.url, b"GET /api/v1/requests HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                           b"Idempotency-Key: a\x00b\r\n\r\n") == 400
        # The request these probes aimed at is untouched, and the log still verifies.
        assert boss.get(f"/api/v1/requests/{request_id}").json()["status"] == "pending"
        assert boss.get("/api/v1/audit", params={"verify": "true"}).json()["verified"] is True


@pytest.mark.slow
def test_bad_text_in_every_body_field_is_a_typed_422(live: Live) -> None:
    with live.client("ann") as ann, live.client("bot") as bot:
        request_id = bot.post("/api/v1/calls", json=PROPOSE).json()["request_id"]
        for field, value, code in [
                ("call_id", "c\x00", "nul_character"), ("call_id", "c" * 8192, "too_long"),
                ("call_id", "call 1", "invalid_identifier"), ("tool", "exec\x00",
                                                              "invalid_tool_name"),
                ("tool", "exec\u3164", "invalid_tool_name"),
                ("description", "d\x00", "nul_character"),
                ("description", "d" * 10_001, "too_long")]:
            body = _typed_4xx(bot.post("/api/v1/calls", json={**PROPOSE, field: value}), code)
            assert body["field"] == field, body
        for key, value, code in [("thread_id", "t\x00", "nul_character"),
                                 ("thread_id", "t" * 8192, "too_long"),
                                 ("run_id", "r\u3164", "invalid_identifier"),
                                 ("session_id", "s s", "invalid_identifier"),
                                 ("intent", "i\x00", "nul_character")]:
            answer = bot.post("/api/v1/calls", json={**PROPOSE, "context": {key: value}})
            assert _typed_4xx(answer, code)["field"] == f"context.{key}"
        assert _typed_4xx(bot.post("/api/v1/calls", json={**PROPOSE, "evidence": ["e\x00"]}),
                          "nul_character")["field"] == "evidence.0"
        assert _typed_4xx(bot.post("/api/v1/check", json={"tool": "execute", "args": {},
                                                           "context": {"thread_id": "\x00"}}),
                          "nul_character")
        for body, field, code in [
                ({"kind": "reject", "reason": "no\x00"}, "reason", "nul_character"),
                ({"kind": "reject", "reason": "no", "alternatives": ["a\x00"]},
                 "alternatives.0", "nul_character"),
                ({"kind": "reject", "reason": "x" * 10_001}, "reason", "too_long"),
                ({"kind": "respond", "message": "m\x00"}, "message", "nul_character")]:
            answer = ann.post(f"/api/v1/requests/{request_id}/decisions", json=body)
            assert _typed_4xx(answer, code)["field"] == field
        # The Python client carries the code and field as InvalidInput.
        with Client(live.url, token=live.tokens["bot"]) as client:
            try:
                client.propose("execute", {"command": "ls"}, call_id="c\x00", thread_id="t9")
            except Exception as exc:
                assert type(exc).__name__ == "InvalidInput", exc
                assert getattr(exc, "code", None) == "nul_character"
                assert getattr(exc, "field", None) == "call_id"
            else:
                raise AssertionError("a NUL call id was accepted")
        # The inbox's forms: a NUL reason re-renders the page with the code, 422.
        form = ann.post(f"/requests/{request_id}/decide",
                        data={"action": "reject", "reason": "no\x00"})
        assert form.status_code == 422 and "nul_character" in form.text
        assert not LEAKS.search(form.text)
        _typed_4xx(ann.get("/requests/" + quote("r\x00", safe="")), "nul_character")
        _typed_4xx(ann.post("/threads/" + quote("t" * 8192, safe="") + "/mode",
                            data={"review_mode": "manual"}), "too_long")
        assert ann.get(f"/api/v1/requests/{request_id}").json()["status"] == "pending"
    # An admin's rule suggestions: the ids and the version, in the body and in the page's form.
    policy = (live.cwd / "signoff.toml").read_bytes()
    with live.client("boss") as boss:
        url = "/api/v1/insights/suggestions/apply"
        for body, field, code in [
                ({"ids": ["s\x00"], "expect_version": "1"}, "ids.0", "nul_character"),
                ({"ids": ["s" * 8192], "expect_version": "1"}, "ids.0", "too_long"),
                ({"ids": ["s 1"], "expect_version": "1"}, "ids.0", "invalid_identifier"),
                ({"ids": ["s-1"], "expect_version": "1\x00"}, "expect_version",
                 "nul_character"),
                ({"ids": ["s-1"], "expect_version": "v" * 8192}, "expect_version",
                 "too_long")]:
            assert _typed_4xx(boss.post(url, json=body), code)["field"] == field
        for params in ({"id": "s\x00"}, {"id": "s-1", "expect_version": "v\x00"},
                       {"id": "s" * 8192}):
            page = boss.get("/inbox/insights/suggestions/review", params=params)
            assert page.status_code == 422 and not LEAKS.search(page.text), params
        form = boss.post("/inbox/insights/suggestions/apply",
                         data={"id": "s\u3164", "expect_version": "1", "digest": "x"})
        assert form.status_code == 422 and "invalid_identifier" in form.text
    assert (live.cwd / "signoff.toml").read_bytes() == policy


@pytest.mark.slow
def test_bad_windows_of_insights_are_typed_422(live: Live) -> None:
    """``since``, ``until`` and ``top`` of ``/api/v1/insights`` and ``/inbox/insights``:
    odd values are the CLI's codes, never a 5xx, never a database's words."""
    with live.client("ann") as ann:
        for bad in BAD_IDS.values():
            for name, code in (("since", "invalid_time"), ("until", "invalid_time"),
                               ("top", "invalid_limit")):
                body = _typed_4xx(ann.get("/api/v1/insights", params={name: bad}), code)
                assert body["field"] == name, body
                page = ann.get("/inbox/insights", params={name: bad})
                if not bad.strip():  # a field left empty (a tab) is not given
                    assert page.status_code == 200
                    continue
                assert page.status_code == 422 and code in page.text, (name, bad)
                assert not LEAKS.search(page.text) and "\x00" not in page.text
        _typed_4xx(ann.get("/api/v1/insights", params={"since": "2026-02-01",
                                                       "until": "2026-01-01"}),
                   "invalid_window")
        assert ann.get("/api/v1/insights", params={"since": "30d", "top": "5"}).json()[
            "asks"] == 0

@pytest.mark.slow
def test_real_thread_ids_work_through_api_client_and_inbox_links(live: Live) -> None:
    ids = ["org/repo#12", "slack:C123/1700000000.123", "a?b=c&d=%41", "/lead/../slash"]
    with live.client("ann") as ann, live.client("bot") as bot:
        for number, thread in enumerate(ids):
            answer = bot.post("/api/v1/calls", json={
                **PROPOSE, "call_id": f"c{number}", "context": {"thread_id": thread}})
            assert answer.status_code == 200 and answer.json()["status"] == "pending", answer
        inbox = ann.get("/inbox")
        assert inbox.status_code == 200
        links = set(re.findall(r'href="(/threads/[^"]+)"', inbox.text))
        for thread in ids:
            link = "/threads/" + quote(thread, safe="")
            assert link in links, (link, links)
            page = ann.get(link)
            assert page.status_code == 200, (link, page.text[:300])
            assert "make build" in page.text
            moved = ann.post(link + "/mode", data={"review_mode": "auto"})
            assert moved.status_code == 303, moved.text
            assert moved.headers["location"] == link + "?done=mode"
            api = ann.get("/api/v1/threads/" + quote(thread, safe="")).json()
            assert api["thread_id"] == thread and api["review_mode"] == "auto", api
            listed = ann.get("/api/v1/requests", params={"thread_id": thread}).json()
            assert [r["thread_id"] for r in listed["requests"]] == [thread]
        with Client(live.url, token=live.tokens["ann"]) as client:
            assert client.set_mode("org/repo#12", "manual")["review_mode"] == "manual"
            assert client.thread("org/repo#12")["thread_id"] == "org/repo#12"


@pytest.mark.slow
def test_hidden_characters_are_flagged_in_the_inbox(live: Live) -> None:
    hidden = "\u3164\u115f\u1160\uffa0\u17b4\u180b\u202e\u200b"
    with live.client("ann") as ann, live.client("bot") as bot:
        answer = bot.post("/api/v1/calls", json={
            "tool": "execute", "args": {"command": f"make build{hidden}"}, "call_id": "h1",
            "description": f"harmless{hidden}", "context": {"thread_id": "t-hidden"}}).json()
        page = ann.get(f"/requests/{answer['request_id']}").text
        for name in ("hangul filler", "hangul choseong filler", "hangul jungseong filler",
                     "halfwidth hangul filler", "khmer vowel inherent aq",
                     "mongolian free variation selector one", "right-to-left override",
                     "zero width space"):
            assert name in page, name
        for ch in hidden:
            assert ch not in page, f"U+{ord(ch):04X} shown raw"
        flagged = re.search(r"⚠ (\d+) invisible", page)
        assert flagged is not None and int(flagged.group(1)) >= 2 * len(hidden), flagged
        listing = ann.get("/inbox").text
        assert "\u3164" not in listing and "hangul filler" in listing


def _raw_status(url: str, request: bytes) -> int:
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(request)
        head = sock.recv(4096).decode("latin-1")
    return int(head.split(" ", 2)[1])


def test_the_contract_codes_are_documented() -> None:
    from pathlib import Path

    from signoff.inputs import CODES

    doc = (Path(__file__).parents[2] / "docs" / "server.md").read_text("utf-8")
    for code in [*sorted(CODES), "store_full", "store_read_only", "store_busy",
                 "store_unavailable"]:
        assert f"`{code}`" in doc, code
