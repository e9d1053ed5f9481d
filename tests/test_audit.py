"""``signoff.audit`` on its own: the hash chain and ``verify``, no store involved."""

from __future__ import annotations

import dataclasses
import hashlib
import json

import pytest
import rfc8785
from hypothesis import given
from hypothesis import strategies as st

from signoff.audit import GENESIS, AuditEvent, Verification, canonical_data, chain_hash, verify


def chain(n: int) -> list[AuditEvent]:
    events: list[AuditEvent] = []
    prev = GENESIS
    for index in range(1, n + 1):
        data = canonical_data({"n": index, "text": "é☃", "nested": {"b": 1, "a": [1.5]}})
        kind = "request.created" if index % 2 else "decision.recorded"
        request_id = f"req_{index // 2}" if index % 3 else None
        actor = "alice" if index % 2 else None
        digest = chain_hash(prev, index=index, at_us=1_700_000_000_000_000 + index, kind=kind,
                            request_id=request_id, actor=actor, data=data)
        events.append(AuditEvent(index=index, at_us=1_700_000_000_000_000 + index, kind=kind,
                                 request_id=request_id, actor=actor, data=data, prev_hash=prev,
                                 hash=digest))
        prev = digest
    return events


def test_empty_chain_verifies() -> None:
    assert verify([]) == Verification(True, 0)


def test_good_chain_verifies() -> None:
    events = chain(10)
    result = verify(events)
    assert result.ok and result.count == 10 and result.first_bad is None and result.reason is None
    assert result.to_dict() == {"ok": True, "count": 10, "first_bad": None, "reason": None,
                                "unsealed": 0, "unsealed_since_us": None, "anchor": 0,
                                "findings": []}
    assert verify(iter(events)).ok  # any iterable, read once


def test_a_chain_whose_prefix_was_purged_verifies_from_its_checkpoint() -> None:
    events = chain(10)
    anchor = (4, events[3].hash)  # events 1..4 purged; the checkpoint keeps the 4th hash
    rest = events[4:]
    result = verify(rest, head=(10, events[-1].hash), anchor=anchor)
    assert result.ok and result.count == 6 and result.anchor == 4
    assert verify(rest, anchor=(0, GENESIS)).first_bad == 1  # no anchor: the prefix is missing
    wrong = verify(rest, anchor=(4, events[2].hash))
    assert not wrong.ok and wrong.first_bad == 5 and "link" in (wrong.reason or "")
    gap = verify(events[5:], anchor=anchor)  # the first event after the anchor removed
    assert not gap.ok and gap.first_bad == 5 and "missing" in (gap.reason or "")
    # Everything after the anchor gone: the head still says how far the chain went.
    assert verify([], head=(4, events[3].hash), anchor=anchor).ok
    assert verify([], head=(10, events[-1].hash), anchor=anchor).first_bad == 5


def test_canonical_data_is_rfc8785() -> None:
    assert canonical_data({"b": 1, "a": [1.0, "é"], "c": None}) == '{"a":[1,"é"],"b":1,"c":null}'


def test_hash_covers_every_field_and_the_previous_hash() -> None:
    base = {"index": 3, "at_us": 5, "kind": "k", "request_id": "r", "actor": "a", "data": "{}"}
    reference = chain_hash(GENESIS, **base)  # type: ignore[arg-type]
    assert reference.startswith("sha256:") and len(reference) == 7 + 64
    assert chain_hash("sha256:" + "1" * 64, **base) != reference  # type: ignore[arg-type]
    for name, other in (("index", 4), ("at_us", 6), ("kind", "K"), ("request_id", None),
                        ("actor", None), ("data", '{"x":1}')):
        changed = {**base, name: other}
        assert chain_hash(GENESIS, **changed) != reference, name  # type: ignore[arg-type]


def test_no_field_boundary_ambiguity() -> None:
    """Moving text between adjacent fields must change the hash."""
    a = chain_hash(GENESIS, index=1, at_us=1, kind="ab", request_id="c", actor=None, data="{}")
    b = chain_hash(GENESIS, index=1, at_us=1, kind="a", request_id="bc", actor=None, data="{}")
    assert a != b


@pytest.mark.parametrize("field", ["at_us", "kind", "request_id", "actor", "data"])
@pytest.mark.parametrize("position", [0, 4, 9])
def test_a_changed_field_is_reported_at_its_index(field: str, position: int) -> None:
    events = chain(10)
    replacement: object = {"at_us": 1, "kind": "request.rejected", "request_id": "req_x",
                           "actor": "mallory", "data": '{"n":0}'}[field]
    events[position] = dataclasses.replace(events[position], **{field: replacement})
    result = verify(events)
    assert not result.ok
    assert result.first_bad == position + 1
    assert result.reason == "content does not match its hash"
    assert result.count == position + 1  # stops at the first bad event


def test_a_changed_hash_is_reported_where_it_stops_matching() -> None:
    events = chain(5)
    events[2] = dataclasses.replace(events[2], hash="sha256:" + "f" * 64)
    result = verify(events)
    assert not result.ok and result.first_bad == 3


def test_a_row_rehashed_after_editing_breaks_the_next_link() -> None:
    events = chain(6)
    victim = events[2]
    forged = canonical_data({"forged": True})
    events[2] = dataclasses.replace(victim, data=forged, hash=chain_hash(
        victim.prev_hash, index=victim.index, at_us=victim.at_us, kind=victim.kind,
        request_id=victim.request_id, actor=victim.actor, data=forged))
    result = verify(events)
    assert not result.ok and result.first_bad == 4
    assert result.reason == "link to the previous event broken"


def test_a_broken_link_is_reported() -> None:
    events = chain(5)
    events[3] = dataclasses.replace(events[3], prev_hash=GENESIS)
    result = verify(events)
    assert not result.ok and result.first_bad == 4
    assert result.reason == "link to the previous event broken"


def test_the_first_event_must_link_to_genesis() -> None:
    events = chain(3)
    events[0] = dataclasses.replace(events[0], prev_hash="sha256:" + "1" * 64)
    assert verify(events).first_bad == 1


@pytest.mark.parametrize("missing", [0, 3, 7])
def test_a_gap_is_reported_at_the_missing_index(missing: int) -> None:
    events = chain(9)
    del events[missing]
    result = verify(events)
    assert not result.ok and result.first_bad == missing + 1
    assert result.reason == f"event {missing + 1} is missing (next is {missing + 2})"


def test_reordered_events_are_reported() -> None:
    events = chain(6)
    events[2], events[3] = events[3], events[2]
    result = verify(events)
    assert not result.ok and result.first_bad == 3


def test_renumbered_events_are_reported() -> None:
    """Deleting a row and renumbering the rest keeps indexes gap-free but breaks the chain."""
    events = chain(6)
    del events[2]
    events = [dataclasses.replace(e, index=i) for i, e in enumerate(events, start=1)]
    result = verify(events)
    assert not result.ok and result.first_bad == 3


def test_a_duplicated_event_is_reported() -> None:
    events = chain(4)
    events.insert(2, events[1])
    result = verify(events)
    assert not result.ok and result.first_bad == 3


def test_a_chain_that_does_not_start_at_one_is_reported() -> None:
    assert verify(chain(5)[1:]).first_bad == 1


def test_event_to_dict_parses_data() -> None:
    event = chain(1)[0]
    out = event.to_dict()
    assert out["data"] == json.loads(event.data)
    assert out["index"] == 1 and out["prev_hash"] == GENESIS and out["hash"] == event.hash


def test_the_recorded_head_catches_a_truncated_tail() -> None:
    events = chain(6)
    head = (events[-1].index, events[-1].hash)
    assert verify(events, head=head).ok
    shortened = verify(events[:-2], head=head)
    assert not shortened.ok and shortened.first_bad == 5
    assert verify(events[:-2]).ok  # without the head, nothing can tell


def test_a_head_that_disagrees_with_the_chain_is_reported() -> None:
    events = chain(4)
    stale = verify(events, head=(2, events[1].hash))
    assert not stale.ok and stale.first_bad == 2
    forged = verify(events, head=(4, GENESIS))
    assert not forged.ok and forged.first_bad == 4


_json = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**60), max_value=2**60)
    | st.text(st.characters(blacklist_categories=("Cs",)), max_size=8),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.text(st.characters(blacklist_categories=("Cs",)), max_size=4), inner,
                      max_size=3),
    max_leaves=12,
)


@given(st.dictionaries(st.text(max_size=6).filter(lambda k: k < "\ud800" or k > "\udfff"),
                       _json, max_size=5))
def test_canonical_data_fast_path_is_exactly_rfc8785(data: dict[str, object]) -> None:
    try:
        expected = rfc8785.dumps(data).decode("utf-8")
    except rfc8785.CanonicalizationError:
        return  # integers out of range: rfc8785 refuses, and so must the fast path
    assert canonical_data(data) == expected


_text = st.text(max_size=12)


@given(st.tuples(st.integers(min_value=0, max_value=2**62),
                 st.integers(min_value=0, max_value=2**62),
                 _text, st.none() | _text, st.none() | _text, _text))
def test_chain_hash_fast_path_hashes_the_same_bytes(
        event: tuple[int, int, str, str | None, str | None, str]) -> None:
    index, at_us, kind, request_id, actor, data = event
    body = json.dumps([index, at_us, kind, request_id, actor, data], ensure_ascii=True,
                      separators=(",", ":")).encode("ascii")
    expected = "sha256:" + hashlib.sha256(GENESIS.encode("ascii") + b"\n" + body).hexdigest()
    assert chain_hash(GENESIS, index=index, at_us=at_us, kind=kind, request_id=request_id,
                      actor=actor, data=data) == expected


class _Mapping(dict):  # type: ignore[type-arg]
    """A dict subclass: the fast path's general branch judges it."""


@pytest.mark.parametrize("text", ["\x7f", "a\x7fb", "\x00\x1f\x7f", "tab\there"])
def test_fast_path_matches_rfc8785_on_ascii_controls_and_del(text: str) -> None:
    """The standard library escapes DEL (U+007F); RFC 8785 writes it as is."""
    for data in ({"k": text}, {text: [text]}, {"k": _Mapping({text: 1})},
                 {"k": _Mapping({"v": text})}, {"k": [(text, None)]}):
        assert canonical_data(data) == rfc8785.dumps(data).decode("utf-8")
