"""Issue 11's Done-when targets, measured on the commands real coding agents ran.

The figures come from ``bench/agent_workload.py`` (imported, so the test and
the script cannot disagree) on the vendored corpus tests/data/agent_commands.jsonl:
every command as an ``execute`` call under the starter policy and the
read-only developer policy, in each review mode. ``pytest -s`` prints the table.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from signoff import Effect

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from agent_workload import LABELS, VENDORED_DATA, Table, format_targets, load_rows, measure, targets


@pytest.fixture(scope="module")
def table() -> Table:
    measured = measure(load_rows(VENDORED_DATA))
    print(f"\n{measured.format()}\n\n{format_targets(targets(measured))}")
    return measured


def test_the_corpus_is_the_published_one() -> None:
    """A truncated or edited corpus would make every figure below meaningless."""
    rows = load_rows(VENDORED_DATA)
    assert len(rows) == 1143
    assert {r.label for r in rows} == set(LABELS)
    assert sum(r.label == "dangerous" for r in rows) == 12


def test_no_dangerous_command_is_allowed_in_any_mode(table: Table) -> None:
    target = targets(table)[0]
    allowed = [
        f"{o.policy}/{o.mode.value}: {o.row.command[:80]!r}"
        for o in table.outcomes
        if o.row.label == "dangerous" and o.effect is Effect.ALLOW
    ]
    assert target.met, f"{target.figure}\n" + "\n".join(allowed)


def test_starter_manual_asks_for_at_most_a_tenth_of_reads(table: Table) -> None:
    target = targets(table)[1]
    assert target.met, target.figure


def test_starter_auto_asks_at_most_8_per_100_commands(table: Table) -> None:
    target = targets(table)[2]
    assert target.met, target.figure
