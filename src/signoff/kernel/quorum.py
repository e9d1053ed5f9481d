"""Dual control: a request that needs approvals from several roles at once (all of them).

A rule's ``requires = [{role = "business-owner"}, {role = "ops-owner"}]`` asks for one
approval holding each role (say a business owner and an ops owner); ``approvals = n`` in
an entry asks for n of that role. Each approver counts once, for one requirement: one
person holding both roles is not two people, so the quorum is a matching of distinct
approvers to the requirements' seats. Beside it, ``roles``/``approvals`` stay any-of.
"""

from __future__ import annotations

from collections.abc import Sequence

from signoff.identity import Identity

Requires = tuple[tuple[str, int], ...]  # (role, approvals) pairs, every one needed


def met(requires: Requires, approvers: Sequence[Identity]) -> bool:
    """Whether distinct ``approvers`` can fill every seat of ``requires``."""
    seats = [role for role, count in requires for _ in range(count)]
    if len(seats) > len(approvers):
        return False
    holder: dict[int, int] = {}  # seat → approver

    def place(person: int, tried: set[int]) -> bool:  # an augmenting path (Kuhn)
        for seat, role in enumerate(seats):
            if seat in tried or role not in approvers[person].roles:
                continue
            tried.add(seat)
            if seat not in holder or place(holder[seat], tried):
                holder[seat] = person
                return True
        return False

    for person in range(len(approvers)):
        place(person, set())
    return len(holder) == len(seats)


def covers(have: Requires, need: Requires) -> bool:
    """Whether a request asking ``have`` already asks at least ``need``."""
    asked = dict(have)
    return all(asked.get(role, 0) >= count for role, count in need)


def describe(requires: Requires) -> str:
    return " and ".join(f"{count} from {role}" for role, count in requires)
