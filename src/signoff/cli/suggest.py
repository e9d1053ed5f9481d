"""``signoff insights suggest``: allow rules the decided history proves safe, and ``--apply``.

The history is read through the gate (``Gate.list_requests``), the suggestions made and
proven by ``signoff.policy.suggest``; nothing is written until ``--apply``, which shows
the policy file's diff, asks (``--yes`` skips it), refuses a file changed meanwhile or
not at the version the caller expected, writes the rules with a comment and a new
``version`` in the file's own text, and loads the result to check it gives the replayed
verdicts.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from signoff.cli.common import emit, leaf, open_gate
from signoff.errors import ConfigurationError, Conflict, NotFound, PolicyError
from signoff.model import Effect
from signoff.policy import Policy
from signoff.policy.amend import diff, next_version, set_version
from signoff.policy.reviewing import Reviewer
from signoff.policy.suggest import (
    Decided,
    Replay,
    Report,
    Suggestion,
    read_history,
    suggest,
    with_rules,
)


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
    chosen = _chosen(report, args.apply)
    base = Policy.from_toml(text, source=str(path), reviewer=reviewer)
    if args.expect_version is not None and base.version != args.expect_version:
        raise Conflict(f"{path} is at version {base.version!r}, not {args.expect_version!r}: "
                       "list the suggestions again", code="policy_stale")
    today = datetime.date.today().isoformat()
    version = next_version(base.version, today) if not base.version.startswith("sha256:") \
        else f"{today}.1"
    comments = [f"Suggested by `signoff insights suggest` on {today}: saved {s.saved} asks "
                f"({s.level}).\nEvidence: {_evidence(s)}" for s in chosen]
    after = set_version(with_rules(text, base, chosen, comments), version)
    _check(after, text, history, chosen, path=path, reviewer=reviewer)
    shown = diff(text, after, path.name)
    if not args.json:
        print(shown, end="")
    if not args.yes and not _confirmed(len(chosen), path):
        emit(args, {"applied": [], "policy": str(path)}, "nothing written")
        return 0
    _write(path, text, after)
    Policy.load(path, reviewer=reviewer)
    emit(args, {"applied": [s.to_dict() for s in chosen], "policy": str(path),
                "version": version, "diff": shown},
         f"wrote {len(chosen)} rule(s) into {path} (version {version})")
    return 0


def _chosen(report: Report, ids: list[str]) -> list[Suggestion]:
    if not report.suggestions:
        raise NotFound("no suggestion to apply: the history proves none", code="no_suggestions")
    if not ids:
        return list(report.suggestions)
    by_id = {s.id: s for s in report.suggestions}
    unknown = [i for i in ids if i not in by_id]
    if unknown:
        raise NotFound(f"no suggestion {', '.join(unknown)} (the ids are: "
                       f"{', '.join(by_id)})", code="unknown_suggestion")
    return [by_id[i] for i in dict.fromkeys(ids)]


def _check(after: str, before: str, history: list[Decided], chosen: list[Suggestion], *,
           path: Path, reviewer: Reviewer) -> None:
    """The text to be written loads and gives the replayed verdicts: every ask a chosen
    rule saved is allowed, and no refused, mandatory or concerned request is."""
    replay = Replay(before, history, source=str(path), reviewer=reviewer)
    policy = replay.policy(after)
    effects = replay.run(policy, range(len(history)))
    leaked = [d.request_id for i, d in enumerate(history) if d.protected
              and effects[i] is Effect.ALLOW and replay.effects[i] is not Effect.ALLOW]
    saved = {r for s in chosen for r in s.evidence}
    lost = [d.request_id for i, d in enumerate(history)
            if d.request_id in saved and effects[i] is not Effect.ALLOW]
    if leaked or lost:
        raise Conflict(f"the policy to be written does not give the replayed verdicts "
                       f"(would admit {leaked[:5]}, would still ask {lost[:5]})",
                       code="suggestion_unproven")


def _confirmed(count: int, path: Path) -> bool:
    if not sys.stdin.isatty():
        raise ConfigurationError("--apply asks before writing and there is no terminal to "
                                 "ask: add --yes", code="confirmation_required")
    answer = input(f"Write {count} rule(s) into {path}? [y/N] ")
    return answer.strip().lower() in ("y", "yes")


def _write(path: Path, before: str, after: str) -> None:
    """Write ``after`` in place of ``before``, atomically; refuse a file changed since."""
    try:
        current = path.read_text("utf-8")
    except OSError as exc:
        raise ConfigurationError(f"{path}: {exc.strerror}", code="policy_unwritable") from None
    if current != before:
        raise Conflict(f"{path} changed while the suggestions were made: list them again",
                       code="policy_stale")
    try:
        fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(after)
        os.chmod(temp, path.stat().st_mode & 0o7777)
        os.replace(temp, path)
    except OSError as exc:
        raise ConfigurationError(f"cannot write {path}: {exc.strerror}",
                                 code="policy_unwritable") from None


def _evidence(s: Suggestion) -> str:
    shown = ", ".join(s.evidence[:8])
    return shown + (f" and {s.saved - 8} more" if s.saved > 8 else "")


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
        lines.append(f"      evidence: {_evidence(s)}")
    lines.append("Apply with: signoff insights suggest --apply [ID ...]")
    return "\n".join(lines)
