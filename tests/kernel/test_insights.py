"""``Gate.insights``: exact figures of a history built through a real gate, on both backends
(docs/insights.md)."""

from __future__ import annotations

from typing import Any

import pytest

from backdoor import raw
from histories import DAY, POLICY, T0, history
from signoff.canonical import args_hash
from signoff.errors import InvalidInput
from signoff.insights import Count, Day, Repeat, RuleRates, Thread, Wait
from signoff.kernel.gate import Gate
from signoff.policy import Policy
from signoff.store.base import Store
from signoff.store.postgres import PostgresStore
from signoff.store.schema import MIGRATIONS


def test_the_figures_of_a_known_history(store: Store) -> None:
    gate = history(store)
    found = gate.insights()
    assert (found.since, found.until, found.asks, found.threads) == (None, None, 6, 2)
    assert found.statuses == (Count("approved", 2), Count("expired", 1), Count("pending", 1),
                              Count("rejected", 1), Count("responded", 1))
    assert found.tools == (Count("execute", 4), Count("deploy", 1), Count("send_mail", 1))
    assert found.rules == (
        RuleRates("(gated)", asks=2, decided=1, approved=0, edited=0, rejected=1, responded=0),
        RuleRates("ask-push", asks=2, decided=2, approved=1, edited=0, rejected=0, responded=1),
        RuleRates("(unknown_tool)", asks=1, decided=0, approved=0, edited=0, rejected=0,
                  responded=0),
        RuleRates("deploy-prod", asks=1, decided=1, approved=0, edited=1, rejected=0,
                  responded=0))
    assert found.top_threads == (Thread("t1", 3, (Count("2026-01-01", 3),)),
                                 Thread("t2", 3, (Count("2026-01-02", 3),)))
    assert found.days == (
        Day("2026-01-01", 3, (Count("execute", 2), Count("deploy", 1))),
        Day("2026-01-02", 3, (Count("execute", 2), Count("send_mail", 1))))
    # Nearest rank: of two waits the median is the first, p90 the second.
    assert found.waits == (Wait("medium", 2, 30.0, 60.0), Wait("high", 2, 10.0, 100.0))
    assert found.repeated == (
        Repeat("execute", args_hash({"command": "git push origin"}), 2),)
    assert found.never_matched == ("never-used",)
    assert (found.expired_unanswered, found.expired_by_tool) == (1, (Count("execute", 1),))
    data = found.to_dict()
    assert data["rules"][1]["approve_rate"] == 0.5
    assert data["rules"][2]["approve_rate"] is None  # nothing decided: no rate


def test_verdicts_not_yet_sealed_count_as_matches(postgres_store: Store,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """PostgreSQL chains audit events after commit: a rule whose verdict is still waiting in
    ``audit_pending`` has matched all the same."""
    assert isinstance(postgres_store, PostgresStore)
    monkeypatch.setattr(postgres_store.sealer, "poke", lambda: None)
    gate = history(postgres_store)
    assert postgres_store.unsealed()[0] > 0
    assert gate.insights().never_matched == ("never-used",)
    assert gate.insights(since=T0 + DAY).never_matched == (
        "no-rm", "allow-ls", "deploy-prod", "never-used")


def test_the_upgrade_computes_the_figures_of_the_requests_stored_before(store: Store) -> None:
    """A store from before the insights columns: the migration that adds them computes the
    rules that made each ask and how each was decided, and the figures come out the same."""
    gate = history(store)
    before = gate.insights()
    version = [m.name for m in MIGRATIONS].index("insights") + 1
    sqlite = store.backend == "sqlite"
    with raw(store) as conn:  # back to the schema before: no columns, trigger nor indexes
        if sqlite:
            conn.execute("DROP TRIGGER requests_decided")
            for index in ("requests_insights", "requests_repeats", "requests_thread_asks",
                          "requests_waits", "audit_verdict_rules"):
                conn.execute(f"DROP INDEX {index}")
        else:
            conn.execute("DROP TRIGGER requests_decided ON requests")
            conn.execute("DROP FUNCTION signoff_request_decided()")
            conn.execute("DROP INDEX audit_verdict_rules")
        for column in ("asked_by", "decided_at", "decided"):
            conn.execute(f"ALTER TABLE requests DROP COLUMN {column}"
                         + ("" if sqlite else " CASCADE"))
        conn.execute(f"DELETE FROM signoff_migrations WHERE version = {version}")
    assert store.migrate() == len(MIGRATIONS)
    assert gate.insights() == before
    assert before.rules and before.waits  # there were asks made by rules, and decisions


def test_a_window_counts_only_what_it_holds(store: Store) -> None:
    gate = history(store)
    found = gate.insights(since=T0 + DAY, until=T0 + 2 * DAY)
    assert (found.asks, found.threads) == (3, 1)
    assert [d.day for d in found.days] == ["2026-01-02"]
    assert found.repeated == ()
    # The allowed and denied verdicts of day one are outside: their rules did not match.
    assert found.never_matched == ("no-rm", "allow-ls", "deploy-prod", "never-used")
    assert found.waits == (Wait("high", 1, 100.0, 100.0),)
    empty = gate.insights(since=T0 + 10 * DAY)
    assert (empty.asks, empty.rules, empty.days, empty.waits) == (0, (), (), ())


@pytest.mark.parametrize(("window", "code"), [
    ({"since": T0, "until": T0}, "invalid_window"),
    ({"top": 0}, "invalid_limit"),
])
def test_a_bad_window_is_typed(sqlite_store: Store, window: dict[str, Any], code: str) -> None:
    gate = Gate(Policy.from_toml(POLICY, source="insights.toml"), sqlite_store)
    with pytest.raises(InvalidInput) as caught:
        gate.insights(**window)
    assert caught.value.code == code
