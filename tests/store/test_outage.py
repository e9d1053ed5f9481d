"""``Outage`` and ``Streak`` alone (the real outage is tests/server/test_pg_outage.py): an
outage is logged once when a direct connection confirms it and once when it ends, callers
meanwhile fail at once with a ``reported`` ``store_unavailable``, and a failure the
database still answers through (busy) starts nothing. Workers log a streak's first
failure only, and an outage the store reported not at all."""

from __future__ import annotations

import logging

import pytest

from signoff.errors import StoreError
from signoff.store import outage as module
from signoff.store.outage import Outage, Streak


class Probe:
    def __init__(self) -> None:
        self.reason: str | None = None
        self.calls = 0

    def __call__(self) -> str | None:
        self.calls += 1
        return self.reason


def _lines(caplog: pytest.LogCaptureFixture, text: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if text in r.getMessage()]


def test_an_outage_is_logged_once_answered_at_once_and_ended_once(
        caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    probe, refreshed = Probe(), []
    watch = Outage("PostgreSQL at db:5432", probe, lambda: refreshed.append(1))
    watch.check()  # no outage: nothing probed
    assert probe.calls == 0 and not watch.down

    probe.reason = "Connection refused"
    with caplog.at_level(logging.WARNING, "signoff.store"):
        assert watch.confirm() and watch.confirm()  # two failing requests, one outage
        assert watch.down
        calls = probe.calls
        for _ in range(5):  # within PROBE_EVERY: answered at once, no connection tried
            with pytest.raises(StoreError) as caught:
                watch.check()
            assert caught.value.code == "store_unavailable" and caught.value.reported
        assert probe.calls == calls

        monkeypatch.setattr(module, "PROBE_EVERY", 0.0)
        with pytest.raises(StoreError):
            watch.check()  # due: tried, still down
        assert probe.calls == calls + 1
        probe.reason = None
        watch.check()  # due: tried, back
        watch.alive()
    assert not watch.down and refreshed == [1]
    gone = _lines(caplog, "database unavailable")
    back = _lines(caplog, "database back")
    assert len(gone) == 1 and "PostgreSQL at db:5432 (Connection refused)" in gone[0]
    assert len(back) == 1 and "answers again" in back[0]


def test_a_failure_while_the_database_answers_starts_no_outage(
        caplog: pytest.LogCaptureFixture) -> None:
    probe = Probe()  # answers: the pool or a lock was busy
    watch = Outage("PostgreSQL at db:5432", probe, lambda: None)
    with caplog.at_level(logging.WARNING, "signoff.store"):
        assert not watch.confirm()
        watch.check()
    assert not watch.down and not caplog.records


def test_a_worker_logs_the_first_failure_of_a_streak_only(
        caplog: pytest.LogCaptureFixture) -> None:
    log = logging.getLogger("signoff.test")
    streak = Streak(log, "notify")
    reported = StoreError("the database is unavailable", code="store_unavailable")
    reported.reported = True
    with caplog.at_level(logging.WARNING, "signoff.test"):
        for _ in range(3):
            streak.failed(reported)  # the store said it: nothing more
        streak.ok()
        for _ in range(3):
            streak.failed(StoreError("the database is busy", code="store_busy"))
        streak.ok()
        for _ in range(3):
            streak.failed(RuntimeError("a bug"))
    messages = [(r.getMessage(), r.exc_info is not None) for r in caplog.records]
    assert messages == [("notify: the database is busy; retrying", False),
                        ("notify failed; retrying", True)]
