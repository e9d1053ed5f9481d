"""Verifying the audit: the hash chain, then the checks that run beside it.

The store walks the chain (``Store.verify_audit``) and shows each event it found good to
every check in ``CHECKS``; each check then names what it found (``Finding``, with the index)
and sums up what it looked at. The first is ``CheckpointCheck``: every signed checkpoint
(``signoff.checkpoints``) above the retention anchor must verify with a trusted key and name
exactly the hash the recomputed chain has at its index. Another check — a decision's
passkey assertion, say — is one more entry in ``CHECKS``.

Trusted keys come from outside the database when the caller has them (``--keys``,
``--signing-key``): whoever can rewrite the chain can also replace the keys published
beside it. Without them the published keys are used, and the summary says so. Only with
outside keys are events left unsigned past a bound named: a running signing server signs
within a second or two, so a long unsigned tail is a rewrite past the last checkpoint, or
events written while no server with a key ran.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from signoff.audit import AuditEvent, Finding, Verification, to_us
from signoff.errors import SignatureInvalid
from signoff.kernel.assertions import PasskeyCheck
from signoff.store.base import Store

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from signoff import checkpoints

UNSIGNED_SECONDS = 300.0  # with outside keys: events this old past the last checkpoint are named
UNSIGNED_EVENTS = 10_000  # …and so is a tail of this many events, whatever their times say


@dataclass(frozen=True, slots=True)
class Trust:
    """The keys a verification trusts: given from outside, or (``None``) the database's."""

    keys: Mapping[str, Ed25519PublicKey] | None = None
    source: str = "database"  # where they came from, for the summary ("--keys FILE", …)


class AuditCheck(Protocol):
    """One check beside the chain's: made before the walk, shown every good event in order,
    then asked what it found."""

    name: str

    def see(self, event: AuditEvent) -> None: ...

    def findings(self, result: Verification) -> list[Finding]: ...

    def summary(self) -> dict[str, Any]: ...


def verify_audit(store: Store, *, trust: Trust | None = None,
                 clock: Callable[[], float]) -> Verification:
    """The chain's verification, with every check's findings and summary added; not ``ok``
    when any check found something (``first_bad``: the first such index, if the chain
    itself was good)."""
    trust = trust or Trust()
    checks = [make(store, trust, clock) for make in CHECKS]

    def tap(event: AuditEvent) -> None:
        for check in checks:
            check.see(event)

    result = store.verify_audit(tap=tap)
    found = [finding for check in checks for finding in check.findings(result)]
    summaries = {check.name: check.summary() for check in checks}
    if not found:
        return dataclasses.replace(result, checks=summaries)
    if result.ok:
        first = min(found, key=lambda f: (f.index is None, f.index or 0))
        result = dataclasses.replace(result, ok=False, first_bad=first.index,
                                     reason=first.reason)
    return dataclasses.replace(result, findings=tuple(found), checks=summaries)


class CheckpointCheck:
    """Every signed checkpoint above the retention anchor against the recomputed chain."""

    name = "checkpoints"

    def __init__(self, store: Store, trust: Trust, clock: Callable[[], float]) -> None:
        self.store = store
        self.clock = clock
        self.outside = trust.keys is not None
        self.source = trust.source
        self.trusted = trust.keys if trust.keys is not None else published(store)
        # Read before the walk: every checkpoint is at or below the head the walk reaches.
        self.anchor = store.audit_anchor()
        self.signed = store.audit_signatures(after=max(0, self.anchor[0] - 1))
        self.below_anchor = (store.count_audit_signatures(upto=self.anchor[0] - 1)
                             if self.anchor[0] > 1 else 0)
        self.wanted = {checkpoint.index for checkpoint in self.signed}
        self.hashes: dict[int, str] = {}
        self.last = self.anchor[0]  # the last index the walk found good
        self.verified: list[checkpoints.Checkpoint] = []
        self.unchecked = 0
        self.unsigned = 0

    def see(self, event: AuditEvent) -> None:
        if event.index in self.wanted:
            self.hashes[event.index] = event.hash
        self.last = event.index

    def findings(self, result: Verification) -> list[Finding]:
        found = []
        for checkpoint in self.signed:
            problem = self._problem(checkpoint, result)
            if problem is None:
                self.verified.append(checkpoint)
            elif problem[0]:
                found.append(Finding(self.name, problem[0], checkpoint.index, problem[1],
                                     kid=checkpoint.kid))
        newest = max((c.index for c in self.verified), default=0)
        if result.ok:
            self.unsigned = max(0, self.last - max(newest, self.anchor[0]))
            if self.outside and self.unsigned:
                found.extend(self._unsigned(max(newest, self.anchor[0])))
        return found

    def _problem(self, checkpoint: checkpoints.Checkpoint,
                 result: Verification) -> tuple[str, str] | None:
        """What is wrong with one checkpoint (``None``: nothing; an empty code: not checked,
        the chain broke before its index)."""
        from signoff import checkpoints  # noqa: PLC0415 (verifying: cryptography)

        try:
            checkpoints.check(checkpoint, self.trusted)
        except SignatureInvalid as exc:
            return exc.code, f"checkpoint at index {checkpoint.index}: {exc}"
        if checkpoint.index == self.anchor[0]:
            expected: str | None = self.anchor[1]
        else:
            expected = self.hashes.get(checkpoint.index)
        if expected is None:
            if not result.ok:
                self.unchecked += 1
                return "", ""
            return ("checkpoint_beyond_end",
                    f"a checkpoint was signed at index {checkpoint.index} but the log ends at "
                    f"{self.last}: events were removed from its end")
        if expected != checkpoint.hash:
            return ("checkpoint_mismatch",
                    f"the chain's hash at index {checkpoint.index} is not the one signed "
                    "there: an event at or before it was rewritten")
        return None

    def _unsigned(self, covered: int) -> list[Finding]:
        first = next(iter(self.store.audit_events(after=covered, limit=1, seal=False)), None)
        if first is None:
            return []
        age = (to_us(self.clock()) - first.at_us) / 1_000_000
        if age < UNSIGNED_SECONDS and self.unsigned < UNSIGNED_EVENTS:
            return []
        return [Finding(self.name, "unsigned", first.index,
                        f"no trusted checkpoint covers the {self.unsigned} events from index "
                        f"{first.index} (the first written {age:.0f} s ago): written while no "
                        "server with a key ran, or rewritten past the last checkpoint")]

    def summary(self) -> dict[str, Any]:
        newest = max(self.verified, key=lambda c: c.index, default=None)
        return {"keys": "outside" if self.outside else "database",
                "keys_from": self.source,
                "signed": len(self.signed), "verified": len(self.verified),
                "unchecked": self.unchecked, "below_anchor": self.below_anchor,
                "newest": newest.index if newest else None,
                "newest_hash": newest.hash if newest else None,
                "unsigned": self.unsigned,
                "kids": sorted({c.kid for c in self.verified})}


def published(store: Store) -> dict[str, Ed25519PublicKey]:
    """The keys published in the database, by ``kid`` (a malformed one is skipped)."""
    from signoff import keys  # noqa: PLC0415

    found = {}
    for jwk in store.published_keys():
        try:
            kid, public = keys.key_from_jwk(jwk)
        except SignatureInvalid:
            continue
        found[kid] = public
    return found


# The checks every verification runs beside the chain's, each made from the store, the
# trusted keys and the clock.
CHECKS: list[Callable[[Store, Trust, Callable[[], float]], AuditCheck]] = [
    CheckpointCheck, PasskeyCheck]
