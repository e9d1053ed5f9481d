"""The gate is the one way round the kernel: callers above it neither reach through it to
its store or policy nor open transactions and write audit events of their own.

The one exception is named: the notifier is handed the store by ``gate.notifier_tables()``
(in ``server/app.py`` alone) and writes the tables that belong to it alone — the delivery
log, its timers, Slack message ids — with their events. The live feed and ``/metrics``
read through the kernel's ``Records``."""

import re
from pathlib import Path

import pytest

from signoff.kernel.gate import Gate

SRC = Path(__file__).resolve().parents[2] / "src" / "signoff"
ABOVE = [p for p in SRC.rglob("*.py")
         if p.relative_to(SRC).parts[0] not in ("kernel", "store")]
REACH = re.compile(r"\bgate\.(store|policy|revalidation_policy)")
WRITE = re.compile(r"\.transaction\(\)|\bappend_audits?\(|\brecord_audit\(")
HANDS_OVER = re.compile(r"\.notifier_tables\(\)")
NOTIFIER_OWN = {"notify/outbox.py", "notify/timers.py", "notify/slack.py"}


def _name(path: Path) -> str:
    return path.relative_to(SRC).as_posix()


def test_nothing_above_the_kernel_reaches_through_the_gate() -> None:
    found = {_name(p): len(REACH.findall(p.read_text())) for p in ABOVE}
    assert {k: v for k, v in found.items() if v} == {}


def test_only_the_server_hands_the_notifier_its_tables() -> None:
    found = {_name(p): len(HANDS_OVER.findall(p.read_text())) for p in ABOVE}
    assert {k: v for k, v in found.items() if v} == {"server/app.py": 1}


def test_nothing_above_the_kernel_opens_a_transaction_but_the_notifier() -> None:
    writers = {_name(p) for p in ABOVE if WRITE.search(p.read_text())}
    assert writers <= NOTIFIER_OWN, sorted(writers - NOTIFIER_OWN)


@pytest.mark.parametrize("name", ["propose", "decide", "decide_once", "claim", "report",
                                  "resume", "wait", "recover", "add_user", "sign_in",
                                  "get_request", "request", "list_requests", "audit_events"])
def test_every_face_is_on_the_gate_itself(name: str) -> None:
    """A reader finds each method in ``kernel/gate.py``, not in a base class."""
    assert name in vars(Gate)
