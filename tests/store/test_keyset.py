"""Keyset pages of requests (``signoff.store.pages``): every request once, newest first,
however the list is cut and whatever is created while someone pages."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from signoff.canonical import args_hash, canonical_text
from signoff.errors import InvalidInput
from signoff.model import ApprovalRequest, RequestStatus, Risk
from signoff.store.base import Store
from signoff.store.pages import RequestQuery, cursor_of, parse_cursor


def make_request(**changes: Any) -> ApprovalRequest:
    fields: dict[str, Any] = {
        "id": "req_" + uuid.uuid4().hex, "call_id": "call_" + uuid.uuid4().hex[:8],
        "tool": "execute", "args": canonical_text({}), "args_hash": args_hash({}),
        "status": RequestStatus.PENDING, "risk": Risk.MEDIUM, "summary": "Run it",
        "policy_version": "p-1", "created_at": 1.0, "updated_at": 1.0, "thread_id": "t-1"}
    fields.update(changes)
    return ApprovalRequest(**fields)


def _insert(store: Store, n: int, **fields: object) -> list[str]:
    ids = []
    with store.transaction() as tx:
        for _ in range(n):
            request = make_request(**fields)
            tx.insert_request(request)
            ids.append(request.id)
    return ids


def _all_pages(store: Store, query: RequestQuery, limit: int) -> list[list[str]]:
    pages, after = [], None
    while True:
        page = store.list_requests(query=query, limit=limit, after=after)
        if not page:
            return pages
        pages.append([r.id for r in page])
        after = parse_cursor(cursor_of(page[-1]))


def test_pages_cover_every_request_once_in_order_with_ties(store: Store) -> None:
    # Requests made at one instant (a fixed clock) tie on created_at: the id breaks it.
    ids = _insert(store, 23, created_at=100.0) + _insert(store, 7, created_at=50.0)
    whole = [r.id for r in store.list_requests(limit=100)]
    pages = _all_pages(store, RequestQuery(), 4)
    assert [len(p) for p in pages] == [4] * 7 + [2]
    assert [i for p in pages for i in p] == whole and sorted(whole) == sorted(ids)


def test_a_request_created_while_paging_does_not_shift_the_next_page(store: Store) -> None:
    _insert(store, 10, created_at=10.0)
    first = store.list_requests(limit=5)
    _insert(store, 3, created_at=20.0)  # newer: on the first page, not the second
    second = store.list_requests(limit=5, after=parse_cursor(cursor_of(first[-1])))
    assert not {r.id for r in first} & {r.id for r in second} and len(second) == 5


def test_filters_narrow_the_list(store: Store) -> None:
    _insert(store, 3, tool="deploy", risk=Risk.HIGH, thread_id="ops/repo#12",
            principal="paula", created_at=10.0, summary="deploy the api")
    _insert(store, 2, tool="read_file", risk=Risk.LOW, agent="robot", created_at=20.0)
    count = lambda **q: len(store.list_requests(query=RequestQuery(**q)))  # noqa: E731
    assert count() == 5
    assert count(tool="deploy") == 3 and count(risk=Risk.LOW) == 2
    assert count(thread_id="ops/repo#12") == 3 and count(requester="paula") == 3
    assert count(requester="robot") == 2 and count(requester="nobody") == 0
    assert count(since=15.0) == 2 and count(until=15.0) == 3
    assert count(status=RequestStatus.PENDING) == 5
    assert count(text="API") == 3 and count(text="repo#1") == 3
    assert count(text="%") == 0 and count(text="y_t") == 0  # LIKE wildcards are literal
    assert count(text="y t") == 3


@pytest.mark.parametrize("bad", ["", "x", "!!!", "W10", "WzEsMl0", "Wy0xLCIiXQ",
                                 "eyJhIjoxfQ", "W3RydWUsImEiXQ", "²", "A" * 401])
def test_a_cursor_not_handed_out_is_refused_with_a_code(bad: str) -> None:
    with pytest.raises(InvalidInput) as raised:
        parse_cursor(bad)
    assert raised.value.code == "invalid_cursor"
