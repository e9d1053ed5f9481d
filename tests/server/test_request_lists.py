"""``GET /api/v1/requests`` over real HTTP on both backends: keyset pages (``next_cursor``),
filters and a text search; a cursor it did not hand out is a typed 4xx."""

from __future__ import annotations

import pytest
from procs import Live


def _propose(bot: object, n: int, *, tool: str, thread: str, command: str) -> list[str]:
    ids = []
    for i in range(n):
        response = bot.post("/api/v1/calls", json={  # type: ignore[attr-defined]
            "tool": tool, "args": {"command": f"{command} {i}"}, "call_id": f"{thread}-{i}",
            "context": {"thread_id": thread}})
        assert response.status_code == 200 and response.json()["status"] == "pending", \
            response.text
        ids.append(response.json()["request_id"])
    return ids


@pytest.mark.slow
def test_pages_filters_and_search_over_http(live: Live) -> None:
    with live.client("boss") as boss, live.client("bot") as bot:
        builds = _propose(bot, 7, tool="execute", thread="org/repo#12", command="make build")
        cleans = _propose(bot, 4, tool="execute", thread="t-clean", command="make clean")
        seen, cursor, sizes = [], None, []
        while True:
            params: dict[str, str | int] = {"limit": 3}
            if cursor:
                params["cursor"] = cursor
            page = boss.get("/api/v1/requests", params=params)
            assert page.status_code == 200, page.text
            body = page.json()
            sizes.append(len(body["requests"]))
            seen += [r["id"] for r in body["requests"]]
            cursor = body["next_cursor"]
            if cursor is None:
                break
        assert sizes == [3, 3, 3, 2]
        assert sorted(seen) == sorted(builds + cleans) and len(set(seen)) == 11
        whole = boss.get("/api/v1/requests", params={"limit": 500}).json()
        assert [r["id"] for r in whole["requests"]] == seen and whole["next_cursor"] is None

        def ids(**params: str) -> set[str]:
            response = boss.get("/api/v1/requests", params=params)
            assert response.status_code == 200, response.text
            return {r["id"] for r in response.json()["requests"]}

        assert ids(thread_id="org/repo#12") == set(builds)
        assert ids(q="CLEAN") == set(cleans)  # in the summary, case-insensitive
        assert ids(q="repo#1") == set(builds)  # in the thread id
        assert ids(requester="bot") == set(builds + cleans)
        assert ids(requester="ann") == set()
        assert ids(tool="execute", status="pending") == set(builds + cleans)
        assert ids(since="4102444800") == set()  # 2100-01-01: nothing yet
        assert ids(until="4102444800") == set(builds + cleans)
        # The CLI's time forms: an ISO date or time, an age.
        assert ids(since="2100-01-01") == set()
        assert ids(until="2100-01-01T00:00Z") == set(builds + cleans)
        assert ids(since="1h") == set(builds + cleans)
        for bad in ("yesterday", "-5", "9" * 40):
            refused = boss.get("/api/v1/requests", params={"since": bad})
            assert refused.status_code == 422, (bad, refused.text)
            assert refused.json()["code"] == "invalid_time", refused.text
        for bad in ("nonsense", "W10", "²", "A" * 401):
            refused = boss.get("/api/v1/requests", params={"cursor": bad})
            assert refused.status_code in (400, 422), (bad, refused.text)
            assert refused.headers["content-type"].startswith("application/problem+json")
        assert boss.get("/api/v1/requests", params={"cursor": "W10"}).json()["code"] == \
            "invalid_cursor"
        assert boss.get("/api/v1/requests", params={"q": "a\x00b"}).status_code == 422
        assert boss.get("/api/v1/requests", params={"risk": "extreme"}).status_code == 422


@pytest.mark.slow
def test_the_all_requests_page_filters_searches_and_pages(live: Live) -> None:
    import re

    with live.client("ann") as ann, live.client("bot") as bot:
        builds = _propose(bot, 52, tool="execute", thread="org/repo#12", command="make build")
        cleans = _propose(bot, 3, tool="execute", thread="t-clean", command="make clean")
        inbox = ann.get("/inbox").text  # a page of the pending, and the way to the rest
        assert len(re.findall(r'data-request-row="', inbox)) == 50
        assert 'href="/requests?status=pending"' in inbox and ">50+<" in inbox
        first = ann.get("/requests")
        assert first.status_code == 200 and 'href="/requests"' in first.text
        rows = re.findall(r'data-request-row="([^"]+)"', first.text)
        assert len(rows) == 50 and set(rows) <= set(builds + cleans)
        older = re.search(r'href="([^"]+)" rel="next"', first.text)
        assert older is not None
        second = ann.get(older.group(1).replace("&amp;", "&"))
        rest = re.findall(r'data-request-row="([^"]+)"', second.text)
        assert sorted(rows + rest) == sorted(builds + cleans) and 'rel="next"' not in second.text
        assert 'rel="first"' in second.text

        def found(**params: str) -> set[str]:
            page = ann.get("/requests", params=params)
            assert page.status_code == 200, page.text[:300]
            return set(re.findall(r'data-request-row="([^"]+)"', page.text))

        assert found(q="clean") == set(cleans)
        assert found(thread_id="t-clean", status="pending") == set(cleans)
        assert found(requester="nobody") == set()
        kept = ann.get("/requests", params={"q": "build"}).text
        assert 'value="build"' in kept  # the form shows the filter in force
        paged = re.search(r'href="([^"]+)" rel="next"', kept)
        assert paged is not None and "q=build" in paged.group(1)
        for params in ({"cursor": "W10"}, {"q": "a\x00b"}, {"risk": "extreme"},
                       {"thread_id": "t" * 8192}):
            refused = ann.get("/requests", params=params)
            assert 400 <= refused.status_code < 500, (params, refused.status_code)
