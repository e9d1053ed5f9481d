"""Reading one typed field of a ``signoff.toml`` table, or refusing it by name.

Every error is a ``PolicyError`` naming the file, the rule (id, index or table) and the
field, so a typo in a security policy is found where it is (``signoff.policy.config``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from signoff.errors import PolicyError
from signoff.model import ReviewMode, Risk


class TableReader:
    """Typed fields of the tables of one policy source; the error names where each is."""

    def __init__(self, source: str) -> None:
        self.source = source

    def error(
        self, message: str, *, rule: str | None = None, field: str | None = None
    ) -> PolicyError:
        return PolicyError(message, file=self.source, rule=rule, field=field)

    def known(self, table: Mapping[str, Any], allowed: set[str], where: str | None) -> None:
        for key in table:
            if key not in allowed:
                import difflib  # noqa: PLC0415 (a typo's suggestion only)

                hint = difflib.get_close_matches(key, sorted(allowed), n=1)
                extra = f" (did you mean '{hint[0]}'?)" if hint else ""
                raise self.error(f"unknown key{extra}", rule=where, field=key)


    def table(self, raw: object, where: str) -> dict[str, Any]:
        if not isinstance(raw, dict):
            raise self.error("must be a table", rule=where)
        return raw

    def strings(self, table: Mapping[str, Any], key: str, default: tuple[str, ...],
                where: str) -> tuple[str, ...]:
        value = table.get(key)
        if value is None:
            return default
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise self.error("must be a list of non-empty strings", rule=where, field=key)
        return tuple(value)

    def requires(self, table: Mapping[str, Any], where: str) -> tuple[tuple[str, int], ...]:
        """``requires = [{role = "ops", approvals = 1}, ...]``: all of them (dual control)."""
        raw = table.get("requires")
        if raw is None:
            return ()
        if "roles" in table or "approvals" in table:
            raise self.error("requires names every role and count itself; drop roles and "
                             "approvals from this rule", rule=where, field="requires")
        if not isinstance(raw, list) or not raw:
            raise self.error("must be a non-empty array of {role, approvals} tables",
                             rule=where, field="requires")
        out: dict[str, int] = {}
        for index, entry in enumerate(raw):
            field_name = f"requires[{index}]"
            if not isinstance(entry, dict):
                raise self.error("must be a table {role = ..., approvals = ...}", rule=where,
                                 field=field_name)
            self.known(entry, {"role", "approvals"}, f"{where} {field_name}")
            role = entry.get("role")
            if not isinstance(role, str) or not role:
                raise self.error("needs a role", rule=where, field=f"{field_name}.role")
            if role in out:
                raise self.error(f"role {role!r} is named twice", rule=where,
                                 field=f"{field_name}.role")
            out[role] = self.count(entry, "approvals", 1, where)
        return tuple(out.items())

    def flag(self, table: Mapping[str, Any], key: str, where: str) -> bool:
        value = table.get(key, False)
        if not isinstance(value, bool):
            raise self.error("must be true or false", rule=where, field=key)
        return value

    def count(self, table: Mapping[str, Any], key: str, default: int | None,
              where: str) -> Any:
        value = table.get(key, default)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 100:
            raise self.error("must be an integer from 1 to 100", rule=where, field=key)
        return value

    def integer(self, table: Mapping[str, Any], key: str, default: int, where: str, *,
                low: int, high: int) -> int:
        value = table.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise self.error(f"must be an integer from {low} to {high}", rule=where, field=key)
        return value

    def number(self, table: Mapping[str, Any], key: str, default: float, where: str, *,
               high: float, zero: bool = False) -> float:
        value = table.get(key, default)
        if (isinstance(value, bool) or not isinstance(value, int | float)
                or not (value >= 0 if zero else value > 0) or value > high):
            low = "from 0" if zero else "above 0"
            raise self.error(f"must be a number {low} up to {high:g}", rule=where, field=key)
        return float(value)

    def choice(self, table: Mapping[str, Any], key: str, options: tuple[str, ...], default: str,
               where: str) -> str:
        value = table.get(key, default)
        if value not in options:
            raise self.error("must be one of " + ", ".join(options), rule=where, field=key)
        return str(value)

    def mode(self, table: Mapping[str, Any], key: str, default: ReviewMode,
             where: str) -> ReviewMode:
        value = table.get(key, default.value)
        try:
            return ReviewMode(value)
        except ValueError:
            raise self.error("must be one of manual, auto, full", rule=where, field=key) from None

    def signature(self, table: Mapping[str, Any], where: str, ask: bool) -> str | None:
        """A rule's ``signature``: ``"passkey"`` (its approvals need one), on ask rules only."""
        value = table.get("signature")
        if value is None:
            return None
        if value != "passkey":
            raise self.error("must be \"passkey\"", rule=where, field="signature")
        if not ask:
            raise self.error("only ask rules can require a passkey", rule=where,
                             field="signature")
        return "passkey"

    def risk(self, table: Mapping[str, Any], where: str, *, field: str = "risk"
             ) -> Risk | None:
        value = table.get("risk")
        if value is None:
            return None
        try:
            return Risk(value)
        except ValueError:
            raise self.error("must be one of low, medium, high, critical", rule=where,
                             field=field) from None
