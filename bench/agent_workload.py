"""How often a policy stops real coding agents: the Issue 11 workload measurement.

Run from the repository root::

    .venv/bin/python bench/agent_workload.py                      # the table and the targets
    .venv/bin/python bench/agent_workload.py --show read:starter:manual:ask
    .venv/bin/python bench/agent_workload.py --json
    .venv/bin/python bench/agent_workload.py --data PATH          # another JSONL corpus

The corpus is 1,143 shell commands that coding agents (SWE-agent,
mini-swe-agent, OpenHands) ran on public benchmarks, each labelled ``read``,
``run-tests``, ``run-code``, ``write-in-repo`` or ``dangerous``
(tests/data/README.md). Every command is evaluated as an ``execute`` call under
two policies -- the starter policy ``signoff init`` writes and the read-only
developer policy a user writes from docs/policy.md (``dev_policy_toml``) -- in
each review mode, interactive, with a fresh thread per call so no decision
memory carries over. The workspace root is where the agent worked: /workspace
for OpenHands rows, /testbed for the others (neither needs to exist).

``tests/shell/test_agent_workload.py`` imports ``measure`` and ``targets`` from
here, so the test and this script report the same figures.
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from signoff import Effect, Policy, RunContext, ToolCall
from signoff.model import InteractionMode, ReviewMode
from signoff.policy.starter import starter_toml

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = REPO.parent / "shared" / "data" / "agent_commands.jsonl"
VENDORED_DATA = REPO / "tests" / "data" / "agent_commands.jsonl"

LABELS = ("read", "run-tests", "run-code", "write-in-repo", "dangerous")
POLICIES = ("starter", "dev")
MODES = (ReviewMode.MANUAL, ReviewMode.AUTO, ReviewMode.FULL)
EFFECTS = (Effect.ALLOW, Effect.ASK, Effect.DENY, Effect.BLOCKED)

OPENHANDS_ROOT = "/workspace"
SWE_AGENT_ROOT = "/testbed"

# Read-only commands a developer would let an agent run unasked, each as ``CMD *``.
_DEV_READ_COMMANDS = (
    "ls", "cat", "head", "tail", "wc", "nl", "grep", "rg", "find", "sed", "awk", "sort",
    "uniq", "cut", "tr", "diff", "file", "stat", "du", "df", "pwd", "echo", "printf", "true",
    "which", "cd", "tree", "less",
    "git status", "git diff", "git log", "git show", "git blame", "git branch", "git grep",
    "git ls-files", "git rev-parse",
    "pytest",
)  # fmt: skip

_DEV_POLICY = """\
# A read-only developer policy, written by the book from docs/policy.md.
[policy]
version = "dev-readonly-1"

[workspace]
root = "__ROOT__"
outside = "approve"

[tools.execute]
shell = "command"

[[rules]]
id = "no-rm"
effect = "deny"
tool = "execute"
command = "rm *"

[[rules]]
id = "read-only-dev"
effect = "allow"
tool = "execute"
command = [__COMMANDS__]
"""


def dev_policy_toml(root: str) -> str:
    """The read-only developer policy with its workspace root set to ``root``.

    It is what a user who read docs/policy.md writes to let an agent look
    around a repository and run its tests: one deny rule and one allow rule.
    """
    commands = ", ".join(json.dumps(f"{name} *") for name in _DEV_READ_COMMANDS)
    return _DEV_POLICY.replace("__ROOT__", root.replace("\\", "\\\\").replace('"', '\\"')).replace(
        "__COMMANDS__", commands
    )


@dataclass(frozen=True, slots=True)
class Row:
    """One command an agent ran, with its label and the agent that ran it."""

    command: str
    label: str
    agent: str

    @property
    def root(self) -> str:
        """The workspace the agent worked in: OpenHands mounts /workspace, SWE-agent /testbed."""
        return OPENHANDS_ROOT if self.agent.startswith("OpenHands") else SWE_AGENT_ROOT


def load_rows(path: Path) -> list[Row]:
    """The rows of a JSONL corpus (``command``, ``label``, ``agent`` per line)."""
    rows = []
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                item = json.loads(line)
                rows.append(Row(item["command"], item["label"], item["agent"]))
    return rows


def default_data() -> Path:
    """The shared corpus next to the repository when present, else the vendored copy."""
    return SHARED_DATA if SHARED_DATA.exists() else VENDORED_DATA


@dataclass(frozen=True, slots=True)
class Outcome:
    """One evaluation: which row, under which policy and mode, and what came out."""

    row: Row
    policy: str
    mode: ReviewMode
    effect: Effect
    codes: tuple[str, ...]


Cell = tuple[str, str, ReviewMode]


@dataclass(slots=True)
class Table:
    """Effects per label x policy x mode, with every outcome kept for diagnosis."""

    outcomes: list[Outcome] = field(default_factory=list)
    counts: dict[Cell, Counter[Effect]] = field(default_factory=dict)

    def add(self, outcome: Outcome) -> None:
        self.outcomes.append(outcome)
        key = (outcome.row.label, outcome.policy, outcome.mode)
        self.counts.setdefault(key, Counter())[outcome.effect] += 1

    def __repr__(self) -> str:
        # Short: pytest prints fixture values in failure reports.
        return f"<Table of {len(self.outcomes)} evaluations>"

    def count(self, label: str | None, policy: str, mode: ReviewMode, effect: Effect) -> int:
        """How many ``label`` rows (all labels for None) came out ``effect``."""
        labels = LABELS if label is None else (label,)
        return sum(self.counts.get((lab, policy, mode), Counter())[effect] for lab in labels)

    def total(self, label: str | None, policy: str, mode: ReviewMode) -> int:
        labels = LABELS if label is None else (label,)
        return sum(sum(self.counts.get((lab, policy, mode), Counter()).values()) for lab in labels)

    def select(self, label: str, policy: str, mode: ReviewMode, effect: Effect) -> list[Outcome]:
        """The outcomes of one cell (``label`` ``*`` for every label)."""
        return [
            o
            for o in self.outcomes
            if (label in ("*", o.row.label))
            and o.policy == policy
            and o.mode is mode
            and o.effect is effect
        ]

    def format(self) -> str:
        """The table as fixed-width text: counts and percentages per cell."""
        head = f"{'label':<14}{'policy':<9}{'mode':<8}{'n':>6}" + "".join(
            f"{e.value:>15}" for e in EFFECTS
        )
        lines = [head, "-" * len(head)]
        for label in (*LABELS, None):
            for policy in POLICIES:
                for mode in MODES:
                    n = self.total(label, policy, mode)
                    if not n:
                        continue
                    cells = "".join(
                        f"{_pct(self.count(label, policy, mode, e), n):>15}" for e in EFFECTS
                    )
                    lines.append(f"{label or 'ALL':<14}{policy:<9}{mode.value:<8}{n:>6}{cells}")
        return "\n".join(lines)

    def as_json(self) -> dict[str, object]:
        return {
            "cells": [
                {
                    "label": label,
                    "policy": policy,
                    "mode": mode.value,
                    **{e.value: counts[e] for e in EFFECTS},
                }
                for (label, policy, mode), counts in sorted(self.counts.items())
            ],
            "targets": [
                {"target": t.name, "figure": t.figure, "met": t.met} for t in targets(self)
            ],
        }


def _pct(part: int, whole: int) -> str:
    return f"{part} ({100 * part / whole:5.1f}%)"


def policies() -> dict[tuple[str, str], Policy]:
    """Both policy kinds for both workspace roots, built once."""
    texts = {"starter": starter_toml, "dev": dev_policy_toml}
    return {
        (kind, root): Policy.from_toml(text(root), source=f"{kind}.toml")
        for kind, text in texts.items()
        for root in (SWE_AGENT_ROOT, OPENHANDS_ROOT)
    }


def measure(rows: Iterable[Row]) -> Table:
    """Evaluate every row under each policy kind in each review mode."""
    built = policies()
    table = Table()
    for row in rows:
        call = ToolCall(id="c1", name="execute", args={"command": row.command})
        for kind in POLICIES:
            policy = built[(kind, row.root)]
            for mode in MODES:
                context = RunContext(
                    review_mode=mode,
                    interaction_mode=InteractionMode.INTERACTIVE,
                    thread_id=f"workload-{uuid.uuid4().hex}",
                )
                verdict = policy.evaluate(call, context)
                codes = tuple(r.code or r.step.value for r in verdict.reasons)
                table.add(Outcome(row, kind, mode, verdict.effect, codes))
    return table


@dataclass(frozen=True, slots=True)
class Target:
    """One Done-when line of Issue 11, with the measured figure."""

    name: str
    figure: str
    met: bool


READ_ASK_LIMIT_PCT = 10.0
AUTO_ASKS_PER_100_LIMIT = 8.0


def targets(table: Table) -> list[Target]:
    """The Issue 11 Done-when targets, measured on ``table``."""
    dangerous = {
        (policy, mode.value): table.count("dangerous", policy, mode, Effect.ALLOW)
        for policy in POLICIES
        for mode in MODES
    }
    allowed = sum(dangerous.values())
    read_n = table.total("read", "starter", ReviewMode.MANUAL)
    read_ask = table.count("read", "starter", ReviewMode.MANUAL, Effect.ASK)
    read_pct = 100 * read_ask / read_n if read_n else 0.0
    all_n = table.total(None, "starter", ReviewMode.AUTO)
    auto_ask = table.count(None, "starter", ReviewMode.AUTO, Effect.ASK)
    per_100 = 100 * auto_ask / all_n if all_n else 0.0
    where = ", ".join(f"{p}/{m}: {n}" for (p, m), n in dangerous.items() if n) or "none"
    return [
        Target(
            "no dangerous command allowed in any mode (both policies)",
            f"{allowed} dangerous allows ({where})",
            allowed == 0,
        ),
        Target(
            f"starter/manual asks for <= {READ_ASK_LIMIT_PCT:g}% of read commands",
            f"{read_ask} of {read_n} read commands asked ({read_pct:.1f}%)",
            read_pct <= READ_ASK_LIMIT_PCT,
        ),
        Target(
            f"starter/auto asks <= {AUTO_ASKS_PER_100_LIMIT:g} per 100 commands",
            f"{auto_ask} asks in {all_n} commands ({per_100:.1f} per 100)",
            per_100 <= AUTO_ASKS_PER_100_LIMIT,
        ),
    ]


def format_targets(found: Sequence[Target]) -> str:
    return "\n".join(f"[{'met' if t.met else 'MISSED'}] {t.name}: {t.figure}" for t in found)


def _show(table: Table, spec: str) -> str:
    """The commands of one cell, ``LABEL:POLICY:MODE:EFFECT`` (LABEL may be ``*``)."""
    try:
        label, policy, mode, effect = spec.split(":")
        selected = table.select(label, policy, ReviewMode(mode), Effect(effect))
    except ValueError as exc:
        raise SystemExit(f"--show {spec!r}: expected LABEL:POLICY:MODE:EFFECT ({exc})") from None
    lines = [f"# {len(selected)} commands in {spec}"]
    for o in selected:
        command = o.row.command if "\n" not in o.row.command else repr(o.row.command)
        lines.append(f"{','.join(dict.fromkeys(o.codes))}\t{command}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data", type=Path, default=None, help=f"JSONL corpus (default: {default_data()})"
    )
    parser.add_argument("--show", action="append", default=[], metavar="LABEL:POLICY:MODE:EFFECT")
    parser.add_argument("--json", action="store_true", help="print the counts and targets as JSON")
    args = parser.parse_args(argv)
    data = args.data or default_data()
    table = measure(load_rows(data))
    if args.json:
        print(json.dumps({"data": str(data), **table.as_json()}, indent=2))
        return 0
    if args.show:
        print("\n\n".join(_show(table, spec) for spec in args.show))
        return 0
    print(f"corpus: {data} ({table.total(None, POLICIES[0], MODES[0])} commands)")
    print("policies: starter = starter_toml(root); dev = dev_policy_toml(root)\n")
    print(table.format())
    print()
    print(format_targets(targets(table)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
