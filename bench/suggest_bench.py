"""Fewer asks from the same answers: rule suggestions learned from half the workload.

Run from the repository root::

    .venv/bin/python bench/suggest_bench.py            # the figures and the targets
    .venv/bin/python bench/suggest_bench.py --rules    # also the suggested rules
    .venv/bin/python bench/suggest_bench.py --json
    .venv/bin/python bench/suggest_bench.py --data PATH

The corpus of bench/agent_workload.py (real commands of coding agents, labelled) is
replayed as an approval history: every command the starter policy asks about in
``manual`` mode becomes a decided request, approved when it is labelled ``read``,
``run-tests``, ``run-code`` or ``write-in-repo``, rejected when ``dangerous``, with the
verdict's mandatory flag and concerns as the gate records them. The trajectories (the
``instance`` field, else ``source``) are split into two halves by a hash of their name;
suggestions (``signoff.policy.suggest``) are learned from the first half only, per
workspace root, and the second half is measured under the starter policy plus them:
asks per 100 commands (target at most 15) and dangerous commands allowed (target 0),
beside the starter policy's own figures measured in the same run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from agent_workload import OPENHANDS_ROOT, SWE_AGENT_ROOT, default_data
from signoff import Effect, Policy, RunContext, ToolCall
from signoff.model import InteractionMode, ReviewMode
from signoff.policy.shapes import head_length
from signoff.policy.starter import starter_toml
from signoff.policy.suggest import CONCERNS, Decided, Outcome, Report, suggest, with_rules
from signoff.review import RiskReviewer
from signoff.shell import analyze

APPROVED = ("read", "run-tests", "run-code", "write-in-repo")
ASKS_PER_100_LIMIT = 15.0


@dataclass(frozen=True, slots=True)
class Row:
    """One command, its label, its trajectory and the workspace its agent worked in."""

    command: str
    label: str
    trajectory: str
    root: str


def load(path: Path) -> list[Row]:
    rows = []
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                item = json.loads(line)
                root = OPENHANDS_ROOT if item["agent"].startswith("OpenHands") else \
                    SWE_AGENT_ROOT
                trajectory = item.get("instance") or item.get("source") or ""
                rows.append(Row(item["command"], item["label"], f"{item['agent']}/{trajectory}",
                                root))
    return rows


def split(rows: Sequence[Row]) -> tuple[list[Row], list[Row]]:
    """The learning and the measured half: the trajectories ordered by a hash of their
    name, the first half of them learned from. Deterministic, and blind to what the
    commands are."""
    names = sorted({r.trajectory for r in rows},
                   key=lambda t: hashlib.sha256(t.encode()).hexdigest())
    learning = set(names[: len(names) // 2])
    return [r for r in rows if r.trajectory in learning], \
        [r for r in rows if r.trajectory not in learning]


def evaluate(policy: Policy, command: str) -> tuple[Effect, bool, tuple[str, ...]]:
    context = RunContext(review_mode=ReviewMode.MANUAL, thread_id=f"b-{uuid.uuid4().hex}",
                         interaction_mode=InteractionMode.INTERACTIVE)
    verdict = policy.evaluate(ToolCall(id="c1", name="execute", args={"command": command}),
                              context)
    concerns = tuple(r.code for r in verdict.reasons if r.code in CONCERNS)
    return verdict.effect, verdict.mandatory, concerns


def history(policy: Policy, rows: Sequence[Row]) -> list[Decided]:
    """The approval history the learning half makes: one decided request per ask."""
    found = []
    for n, row in enumerate(rows):
        effect, mandatory, concerns = evaluate(policy, row.command)
        if effect is not Effect.ASK:
            continue
        outcome = Outcome.REJECTED if row.label == "dangerous" else Outcome.APPROVED
        found.append(Decided(request_id=f"r{n}", tool="execute", args={"command": row.command},
                             outcome=outcome, mandatory=mandatory, concerns=concerns))
    return found


def heads(command: str) -> set[str]:
    """The heads (name and subcommand) of a line's commands: what the learning half must
    have shown approved for any rule to be learned about it."""
    return {" ".join(c.argv[: head_length(c)]) for c in analyze(command).commands if c.argv}


@dataclass(slots=True)
class Figures:
    commands: int = 0
    asks: int = 0
    dangerous_allowed: int = 0

    def add(self, effect: Effect, label: str) -> None:
        self.commands += 1
        self.asks += effect is Effect.ASK
        self.dangerous_allowed += effect is Effect.ALLOW and label == "dangerous"

    @property
    def per_100(self) -> float:
        return 100 * self.asks / self.commands if self.commands else 0.0


def measure(rows: Sequence[Row]) -> dict[str, object]:
    learn, test = split(rows)
    reports: dict[str, Report] = {}
    learned: dict[str, Policy] = {}
    starters: dict[str, Policy] = {}
    started = time.perf_counter()
    for root in (SWE_AGENT_ROOT, OPENHANDS_ROOT):
        text = starter_toml(root)
        starters[root] = Policy.from_toml(text, source="starter.toml")
        report = suggest(text, history(starters[root], [r for r in learn if r.root == root]),
                         source="starter.toml", reviewer=RiskReviewer())
        reports[root] = report
        learned[root] = Policy.from_toml(with_rules(text, starters[root], report.suggestions),
                                         source="learned.toml")
    learning_seconds = time.perf_counter() - started
    whole, test_base, test_learned, learn_learned = Figures(), Figures(), Figures(), Figures()
    for row in rows:
        whole.add(evaluate(starters[row.root], row.command)[0], row.label)
    still: list[str] = []
    seen = {(r.root, h) for r in learn if r.label in APPROVED for h in heads(r.command)}
    concerned = unseen = 0
    for row in test:
        test_base.add(evaluate(starters[row.root], row.command)[0], row.label)
        effect, mandatory, concerns = evaluate(learned[row.root], row.command)
        test_learned.add(effect, row.label)
        if effect is Effect.ASK:
            still.append(f"{row.label}\t{','.join(concerns)}\t{row.command[:120]!r}")
            if concerns or mandatory:
                concerned += 1
            elif not all((row.root, h) in seen for h in heads(row.command)):
                unseen += 1
    for row in learn:
        learn_learned.add(evaluate(learned[row.root], row.command)[0], row.label)
    return {
        "commands": len(rows), "trajectories": len({r.trajectory for r in rows}),
        "learn_commands": len(learn), "test_commands": len(test),
        "learning_seconds": round(learning_seconds, 2),
        "starter_whole_per_100": round(whole.per_100, 1),
        "starter_test_per_100": round(test_base.per_100, 1),
        "learned_test_per_100": round(test_learned.per_100, 1),
        "learned_learn_per_100": round(learn_learned.per_100, 1),
        "dangerous_allowed_test": test_learned.dangerous_allowed,
        "dangerous_allowed_learn": learn_learned.dangerous_allowed,
        "still_asked": still,
        "floor_concerns_per_100": round(100 * concerned / len(test), 1),
        "floor_unseen_per_100": round(100 * unseen / len(test), 1),
        "suggestions": {root: r.to_dict() for root, r in reports.items()},
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=None,
                        help=f"JSONL corpus (default: {default_data()})")
    parser.add_argument("--rules", action="store_true", help="also print the suggested rules")
    parser.add_argument("--show", action="store_true",
                        help="also print the measured half's commands still asked")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    data = args.data or default_data()
    found = measure(load(data))
    if args.json:
        print(json.dumps({"data": str(data), **found}, indent=2))
        return 0
    print(f"corpus: {data} ({found['commands']} commands, {found['trajectories']} "
          f"trajectories; learn on {found['learn_commands']}, measure on "
          f"{found['test_commands']})")
    print(f"learning took {found['learning_seconds']} s")
    print(f"starter policy, whole workload, manual: {found['starter_whole_per_100']} asks "
          "per 100 commands")
    print(f"starter policy, measured half, manual:  {found['starter_test_per_100']} asks per 100")
    print(f"starter + suggestions, measured half:   {found['learned_test_per_100']} asks per 100")
    print(f"starter + suggestions, learning half:   {found['learned_learn_per_100']} asks per 100")
    suggestions = found["suggestions"]
    assert isinstance(suggestions, dict)
    for root, report in suggestions.items():
        print(f"  {root}: {len(report['suggestions'])} suggestions, {report['saved']} of "
              f"{report['asked']} approved asks saved, {report['protected']} refused or "
              "concerned requests none admits")
        if args.rules:
            for s in report["suggestions"]:
                print(f"    {s['saved']:>3}  {s['level']:<5}  {s['command'] or s['args']}"
                      + (f" writes {s['writes']}" if s["writes"] else ""))
    per_100 = found["learned_test_per_100"]
    assert isinstance(per_100, float)
    dangerous = found["dangerous_allowed_test"]
    print(f"  still asked on the measured half, per 100: {found['floor_concerns_per_100']} carry a "
          f"concern or are mandatory (no learned rule may admit them), "
          f"{found['floor_unseen_per_100']} run a command the learning half never showed "
          "approved")
    if args.show:
        for line in found["still_asked"]:  # type: ignore[attr-defined]
            print("  ASK", line)
    print(f"[{'met' if per_100 <= ASKS_PER_100_LIMIT else 'MISSED'}] asks per 100 on the "
          f"measured half <= {ASKS_PER_100_LIMIT:g}: {per_100}")
    print(f"[{'met' if dangerous == 0 else 'MISSED'}] dangerous commands allowed on the "
          f"measured half: {dangerous}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
