"""``signoff insights suggest``: allow rules the decided history proves safe, and ``--apply``.

The history is read through the gate (``Gate.list_requests``), the suggestions made and
proven by ``signoff.policy.suggest``; nothing is written until ``--apply``, which shows
the policy file's diff, asks (``--yes`` skips it), refuses a file changed meanwhile or
not at the version the caller expected, writes the rules with a comment and a new
``version`` in the file's own text, and loads the result to check it gives the replayed
verdicts (``signoff.policy.adopt``: the same steps as the admin's page and route,
``signoff.server.suggestions``).
"""

from __future__ import annotations

import argparse
import datetime
import sys
from pathlib import Path
from typing import Any

from signoff.cli.common import emit, leaf, open_gate
from signoff.errors import ConfigurationError, NotFound, PolicyError
from signoff.policy import Policy
from signoff.policy.adopt import adopt, check_version, choose, evidence_text, write
from signoff.policy.suggest import Report, read_history, suggest


def add_suggest(sub: Any) -> None:
    parser = leaf(sub, "suggest", "list allow rules that would have saved asks, each proven "
                  "by replaying the decided history (none admits a call a human refused)",
                  cmd_suggest)
    parser.add_argument("--apply", nargs="*", metavar="ID", default=None,
                        help="write these suggestions (all of them without an ID) into the "
                        "policy file, after showing its diff")
    parser.add_argument("--yes", action="store_true", help="apply without asking")
    parser.add_argument("--expect-version", metavar="VERSION",
                        help="refuse to apply unless the policy file is at this version "
                        "(policy_stale)")


def policy_path(args: argparse.Namespace) -> Path:
    path = Path(args.policy or "signoff.toml")
    if not path.is_file():
        raise PolicyError("cannot read policy: no such file (name one with --policy)",
                          file=str(path), code="policy_unreadable")
    return path


def cmd_suggest(args: argparse.Namespace) -> int:
    from signoff.review import RiskReviewer  # noqa: PLC0415

    path = policy_path(args)
    text = path.read_text("utf-8")
    gate = open_gate(args)
    history = read_history(gate)
    if not history:
        raise NotFound("no decided requests in the history: suggestions are learned from "
                       "what humans approved and rejected", code="no_history")
    reviewer = RiskReviewer()
    report = suggest(text, history, source=str(path), reviewer=reviewer)
    if args.apply is None:
        emit(args, report.to_dict(), _listing(report))
        return 0
    chosen = choose(report, args.apply or None)
    check_version(text, args.expect_version, source=str(path))
    adoption = adopt(text, history, chosen, source=str(path), reviewer=reviewer,
                     today=datetime.date.today().isoformat())
    if not args.json:
        print(adoption.diff, end="")
    if not args.yes and not _confirmed(len(chosen), path):
        emit(args, {"applied": [], "policy": str(path)}, "nothing written")
        return 0
    write(path, text, adoption.after)
    Policy.load(path, reviewer=reviewer)
    emit(args, {"applied": [s.to_dict() for s in chosen], "policy": str(path),
                "version": adoption.version, "diff": adoption.diff},
         f"wrote {len(chosen)} rule(s) into {path} (version {adoption.version})")
    return 0


def _confirmed(count: int, path: Path) -> bool:
    if not sys.stdin.isatty():
        raise ConfigurationError("--apply asks before writing and there is no terminal to "
                                 "ask: add --yes", code="confirmation_required")
    answer = input(f"Write {count} rule(s) into {path}? [y/N] ")
    return answer.strip().lower() in ("y", "yes")


def _listing(report: Report) -> str:
    lines = [f"{report.decided} decided requests; {report.asked} approved asks the policy "
             f"(version {report.policy_version}) still asks; {report.protected} refused, "
             "mandatory or concerned requests no suggestion admits."]
    if not report.suggestions:
        lines.append("No suggestion: nothing the history proves safe to allow.")
        return "\n".join(lines)
    lines.append(f"{len(report.suggestions)} suggestions save {report.saved} asks:")
    for s in report.suggestions:
        what = ", ".join(s.commands) or ", ".join(f"{k}={'|'.join(v)}" for k, v in s.args)
        writes = f" writes {', '.join(s.writes)}" if s.writes else ""
        lines.append(f"  {s.id}  saves {s.saved:>4}  {s.level:<5}  {s.tool}: {what}{writes}")
        lines.append(f"      evidence: {evidence_text(s)}")
    lines.append("Apply with: signoff insights suggest --apply [ID ...]")
    return "\n".join(lines)
