"""Chosen suggestions written into the policy file: the new text, its proof, the write.

``signoff insights suggest --apply`` and the admin's page and route (``POST
/api/v1/insights/suggestions/apply``, ``signoff.server.suggestions``) change a policy
file the same way: ``check_version`` (the file is at the version the caller read),
``choose`` the suggestions by id, ``adopt`` them into the file's own text (each under a
comment, ``[policy] version`` moved on; the result must load and replaying the history
under it must give the replayed verdicts), then ``write`` it in place of the text read,
atomically, refusing a file that changed since.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from signoff.errors import ConfigurationError, Conflict, InvalidInput, NotFound
from signoff.model import Effect
from signoff.policy.amend import diff, next_version, set_version
from signoff.policy.config import parse_policy
from signoff.policy.engine import Policy
from signoff.policy.reviewing import Reviewer
from signoff.policy.suggest import Decided, Replay, Report, Suggestion, with_rules

EVIDENCE_SHOWN = 8  # request ids named in a rule's comment; the rest are counted


@dataclass(frozen=True, slots=True, kw_only=True)
class Adoption:
    """The policy text with the chosen suggestions written in, not written yet."""

    before: str
    after: str
    chosen: tuple[Suggestion, ...]
    version_before: str
    version: str
    diff: str  # unified, of the file, for a person to read before it is written

    @property
    def digest(self) -> str:
        """What a confirmation carries: the text it showed, so another is never written."""
        return "sha256:" + hashlib.sha256(self.after.encode("utf-8")).hexdigest()


def check_version(text: str, expected: str | None, *, source: str) -> str:
    """The version of the policy ``text``; ``Conflict(policy_stale)`` when it is not
    ``expected`` (``None``: any)."""
    version = parse_policy(text, source=source).version
    if expected is not None and version != expected:
        raise Conflict(f"{source} is at version {version!r}, not {expected!r}: list the "
                       "suggestions again", code="policy_stale")
    return version


def choose(report: Report, ids: Sequence[str] | None) -> list[Suggestion]:
    """The suggestions ``ids`` names, each once, in the order given; every one for
    ``None``. ``InvalidInput``: ``nothing_chosen`` (no id), ``unknown_suggestion`` (an id
    the report does not hold, field ``ids``); ``NotFound(no_suggestions)``: all of none."""
    if ids is None:
        if not report.suggestions:
            raise NotFound("no suggestion to apply: the history proves none",
                           code="no_suggestions")
        return list(report.suggestions)
    if not ids:
        raise InvalidInput("choose at least one suggestion", code="nothing_chosen",
                           field="ids")
    by_id = {s.id: s for s in report.suggestions}
    unknown = [i for i in dict.fromkeys(ids) if i not in by_id]
    if unknown:
        known = ", ".join(by_id) or "none: the history proves no suggestion"
        raise InvalidInput(f"no suggestion {', '.join(unknown)} (the ids are: {known})",
                           code="unknown_suggestion", field="ids")
    return [by_id[i] for i in dict.fromkeys(ids)]


def adopt(text: str, history: Sequence[Decided], chosen: Sequence[Suggestion], *,
          source: str, reviewer: Reviewer, today: str,
          applied_by: str | None = None) -> Adoption:
    """``text`` with ``chosen`` written in, each under a comment (its date, who applied it
    when known, the asks it saved, its evidence), and ``[policy] version`` moved on.
    Raises ``Conflict(suggestion_unproven)`` when the result does not give the replayed
    verdicts."""
    base = Policy.from_toml(text, source=source, reviewer=reviewer)
    version = next_version(base.version, today) if not base.version.startswith("sha256:") \
        else f"{today}.1"
    by = f", applied by {applied_by}" if applied_by else ""
    comments = [f"Suggested by `signoff insights suggest` on {today}{by}: saved {s.saved} "
                f"asks ({s.level}).\nEvidence: {evidence_text(s)}" for s in chosen]
    after = set_version(with_rules(text, base, chosen, comments), version)
    check(after, text, history, chosen, source=source, reviewer=reviewer)
    return Adoption(before=text, after=after, chosen=tuple(chosen),
                    version_before=base.version, version=version,
                    diff=diff(text, after, Path(source).name))


def check(after: str, before: str, history: Sequence[Decided], chosen: Sequence[Suggestion],
          *, source: str, reviewer: Reviewer) -> None:
    """The text to be written loads and gives the replayed verdicts: every ask a chosen
    rule saved is allowed, and no refused, mandatory or concerned request is."""
    replay = Replay(before, history, source=source, reviewer=reviewer)
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


def write(path: Path, before: str, after: str) -> None:
    """Write ``after`` in place of ``before``, atomically (a temporary file beside it, then
    a rename); ``Conflict(policy_stale)`` for a file changed since it was read,
    ``ConfigurationError(policy_unwritable)`` when it cannot be written (it is then as
    it was)."""
    try:
        current = path.read_text("utf-8")
    except OSError as exc:
        raise ConfigurationError(f"{path}: {exc.strerror}", code="policy_unwritable") from None
    if current != before:
        raise Conflict(f"{path} changed while the suggestions were made: list them again",
                       code="policy_stale")
    temp: str | None = None
    try:
        fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(after)
        os.chmod(temp, path.stat().st_mode & 0o7777)
        os.replace(temp, path)
    except OSError as exc:
        if temp is not None:
            with contextlib.suppress(OSError):
                os.unlink(temp)
        raise ConfigurationError(f"cannot write {path}: {exc.strerror}",
                                 code="policy_unwritable") from None


def evidence_text(s: Suggestion) -> str:
    """The request ids a suggestion saved, the first few named and the rest counted."""
    shown = ", ".join(s.evidence[:EVIDENCE_SHOWN])
    more = s.saved - EVIDENCE_SHOWN
    return shown + (f" and {more} more" if more > 0 else "")
