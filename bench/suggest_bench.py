"""Fewer asks from the same answers: rule suggestions learned from half the workload.

Run from the repository root::

    .venv/bin/python bench/suggest_bench.py            # the figures and the targets
    .venv/bin/python bench/suggest_bench.py --rules    # also the suggested rules
    .venv/bin/python bench/suggest_bench.py --show     # also the measured half's asks left
    .venv/bin/python bench/suggest_bench.py --rules --show --swapped  # of the swapped split
    .venv/bin/python bench/suggest_bench.py --splits 20  # also 20 other splits' spread
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
beside the starter policy's own figures measured in the same run. The split is then
swapped (learn on the second half, measure the first) and its figures printed beside:
a generalization fitted to one half would improve one figure and not the other. The
asks left are counted by why: a concern or mandatory ask, a program on standard input
(never learned from), a head the learning half never showed approved, or a head it
approved in a form no suggestion covers.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
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
from signoff.policy.shapes import head
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


def split(rows: Sequence[Row], salt: str = "") -> tuple[list[Row], list[Row]]:
    """The learning and the measured half: the trajectories ordered by a hash of their
    name (after ``salt``: another split as blind as the first), the first half of them
    learned from. Deterministic, and blind to what the commands are."""
    names = sorted({r.trajectory for r in rows},
                   key=lambda t: hashlib.sha256((salt + t).encode()).hexdigest())
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
    """The heads (program and subcommand, ``python`` for ``python3``) of a line's commands:
    what the learning half must have shown approved for any rule to be learned about it."""
    return {head(c) for c in analyze(command).commands if c.argv}


def program_elsewhere(command: str) -> bool:
    """Whether a command of the line runs a program its words do not hold (``python -
    <<'PY'``): no rule is learned from those (``signoff.policy.suggest``)."""
    return any(code in ("heredoc_program", "interpreter_stdin")
               for code, _ in analyze(command).finding_commands)


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


def learn_and_measure(learn: Sequence[Row], test: Sequence[Row]) -> dict[str, object]:
    """Suggestions learned from ``learn`` (per workspace root), measured on ``test``."""
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
    test_base, test_learned, learn_learned = Figures(), Figures(), Figures()
    still: list[str] = []
    seen = {(r.root, h) for r in learn if r.label in APPROVED for h in heads(r.command)}
    concerned = elsewhere = unseen = uncovered = 0
    for row in test:
        test_base.add(evaluate(starters[row.root], row.command)[0], row.label)
        effect, mandatory, concerns = evaluate(learned[row.root], row.command)
        test_learned.add(effect, row.label)
        if effect is Effect.ASK:
            still.append(f"{row.label}\t{','.join(concerns)}\t{row.command[:120]!r}")
            if concerns or mandatory:
                concerned += 1
            elif program_elsewhere(row.command):
                elsewhere += 1
            elif not all((row.root, h) in seen for h in heads(row.command)):
                unseen += 1
            else:
                uncovered += 1
                still[-1] = "seen " + still[-1]
    for row in learn:
        learn_learned.add(evaluate(learned[row.root], row.command)[0], row.label)
    return {
        "learn_commands": len(learn), "test_commands": len(test),
        "learning_seconds": round(learning_seconds, 2),
        "starter_test_per_100": round(test_base.per_100, 1),
        "learned_test_per_100": round(test_learned.per_100, 1),
        "learned_learn_per_100": round(learn_learned.per_100, 1),
        "dangerous_allowed_test": test_learned.dangerous_allowed,
        "dangerous_allowed_learn": learn_learned.dangerous_allowed,
        "still_asked": still,
        "floor_concerns_per_100": round(100 * concerned / len(test), 1) if test else 0.0,
        "floor_elsewhere_per_100": round(100 * elsewhere / len(test), 1) if test else 0.0,
        "floor_unseen_per_100": round(100 * unseen / len(test), 1) if test else 0.0,
        "uncovered_per_100": round(100 * uncovered / len(test), 1) if test else 0.0,
        "suggestions": {root: r.to_dict() for root, r in reports.items()},
    }


def measure(rows: Sequence[Row]) -> dict[str, object]:
    """The split as made (learn on the first half, measure the second), and the same split
    swapped (learn on the second half, measure the first)."""
    learn, test = split(rows)
    starters = {root: Policy.from_toml(starter_toml(root), source="starter.toml")
                for root in (SWE_AGENT_ROOT, OPENHANDS_ROOT)}
    whole = Figures()
    for row in rows:
        whole.add(evaluate(starters[row.root], row.command)[0], row.label)
    return {
        "commands": len(rows), "trajectories": len({r.trajectory for r in rows}),
        "starter_whole_per_100": round(whole.per_100, 1),
        **learn_and_measure(learn, test),
        "swapped": learn_and_measure(test, learn),
    }


def resplit(rows: Sequence[Row], count: int) -> dict[str, object]:
    """``count`` further splits (salted hashes): how much the measured half's figure owes
    to which trajectories fell in it, and dangerous commands allowed on any of them."""
    figures: list[float] = []
    dangerous = 0
    for n in range(1, count + 1):
        learn, test = split(rows, salt=f"{n}:")
        found = learn_and_measure(learn, test)
        figures.append(float(found["learned_test_per_100"]))  # type: ignore[arg-type]
        dangerous += int(found["dangerous_allowed_test"])  # type: ignore[call-overload]
        dangerous += int(found["dangerous_allowed_learn"])  # type: ignore[call-overload]
    ordered = sorted(figures)
    return {"splits": count, "per_100": figures,
            "mean": round(statistics.fmean(figures), 1) if figures else 0.0,
            "median": round(statistics.median(figures), 1) if figures else 0.0,
            "min": ordered[0] if figures else 0.0, "max": ordered[-1] if figures else 0.0,
            "at_most_limit": sum(f <= ASKS_PER_100_LIMIT for f in figures),
            "dangerous_allowed": dangerous}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=None,
                        help=f"JSONL corpus (default: {default_data()})")
    parser.add_argument("--rules", action="store_true", help="also print the suggested rules")
    parser.add_argument("--show", action="store_true",
                        help="also print the measured half's commands still asked")
    parser.add_argument("--swapped", action="store_true",
                        help="--rules and --show for the swapped split (learn on the second "
                        "half, measure the first)")
    parser.add_argument("--splits", type=int, default=0, metavar="N",
                        help="also learn and measure on N further splits of the "
                        "trajectories and print the spread of the measured figure")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    data = args.data or default_data()
    rows = load(data)
    found = measure(rows)
    if args.splits > 0:
        found["resplit"] = resplit(rows, args.splits)
    if args.json:
        print(json.dumps({"data": str(data), **found}, indent=2))
        return 0
    swapped = found["swapped"]
    assert isinstance(swapped, dict)
    splits = (found, swapped)
    print(f"corpus: {data} ({found['commands']} commands, {found['trajectories']} "
          "trajectories)")
    print(f"starter policy, whole workload, manual: {found['starter_whole_per_100']} asks "
          "per 100 commands")
    print(f"{'':44}{'split as made':>15}{'swapped':>12}")
    rows = [("commands learned from / measured",
             [f"{f['learn_commands']} / {f['test_commands']}" for f in splits]),
            ("learning took (s)", [f["learning_seconds"] for f in splits]),
            ("asks per 100, measured half, starter", [f["starter_test_per_100"] for f in splits]),
            ("asks per 100, measured half, + suggestions",
             [f["learned_test_per_100"] for f in splits]),
            ("  of which: concern or mandatory",
             [f["floor_concerns_per_100"] for f in splits]),
            ("  of which: program on stdin (never learned)",
             [f["floor_elsewhere_per_100"] for f in splits]),
            ("  of which: head never approved", [f["floor_unseen_per_100"] for f in splits]),
            ("  of which: head approved, form not covered",
             [f["uncovered_per_100"] for f in splits]),
            ("asks per 100, learning half, + suggestions",
             [f["learned_learn_per_100"] for f in splits]),
            ("dangerous allowed, measured / learning half",
             [f"{f['dangerous_allowed_test']} / {f['dangerous_allowed_learn']}" for f in splits])]
    for name, values in rows:
        print(f"{name:44}{values[0]!s:>15}{values[1]!s:>12}")
    shown = swapped if args.swapped else found
    suggestions = shown["suggestions"]
    assert isinstance(suggestions, dict)
    print("suggestions learned" + (" (swapped split)" if args.swapped else "") + ":")
    for root, report in suggestions.items():
        print(f"  {root}: {len(report['suggestions'])} suggestions, {report['saved']} of "
              f"{report['asked']} approved asks saved, {report['protected']} refused or "
              "concerned requests none admits")
        if args.rules:
            for s in report["suggestions"]:
                print(f"    {s['saved']:>3}  {s['level']:<5}  {s['command'] or s['args']}"
                      + (f" writes {s['writes']}" if s["writes"] else ""))
    if args.show:
        for line in shown["still_asked"]:  # type: ignore[attr-defined]
            print("  ASK", line)
    spread = found.get("resplit")
    if isinstance(spread, dict):
        print(f"{spread['splits']} further splits, asks per 100 on the measured half: mean "
              f"{spread['mean']}, median {spread['median']}, {spread['min']}–{spread['max']}; "
              f"{spread['at_most_limit']} of {spread['splits']} at most "
              f"{ASKS_PER_100_LIMIT:g}; dangerous allowed on any half: "
              f"{spread['dangerous_allowed']}")
    per_100 = found["learned_test_per_100"]
    assert isinstance(per_100, float)
    dangerous = sum(int(f[k]) for f in splits  # type: ignore[call-overload]
                    for k in ("dangerous_allowed_test", "dangerous_allowed_learn"))
    if isinstance(spread, dict):
        dangerous += int(spread["dangerous_allowed"])
    print(f"[{'met' if per_100 <= ASKS_PER_100_LIMIT else 'MISSED'}] asks per 100 on the "
          f"measured half <= {ASKS_PER_100_LIMIT:g}: {per_100} (swapped split: "
          f"{swapped['learned_test_per_100']})")
    print(f"[{'met' if dangerous == 0 else 'MISSED'}] dangerous commands allowed, both halves "
          f"of {'every' if isinstance(spread, dict) else 'both'} split"
          f"{'' if isinstance(spread, dict) else 's'}: {dangerous}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
