"""What a gate knows about a tool it can run: the function and its declared hooks.

* ``schema`` — a JSON Schema the arguments (and edited arguments) must satisfy;
* ``preconditions`` — name → function of the arguments returning a version
  string (e.g. a file's content hash), recorded when the request is made and
  compared before the approved call runs (compare-and-swap on the resource);
* ``verify`` — settles a call whose run died mid-way: returns ``True``
  (it happened), ``False`` (it did not) or ``None`` (can't tell: a human must);
* ``summary`` / ``expected_effect`` — what approvers read, from the call itself.
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from signoff.errors import InvalidArguments, InvalidDecision

Precondition = Callable[[Mapping[str, Any]], str]
Verify = Callable[[Mapping[str, Any], str], "bool | None"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolEntry:
    name: str
    fn: Callable[..., Any]
    schema: Mapping[str, Any] | None = None
    preconditions: Mapping[str, Precondition] = field(default_factory=dict)
    verify: Verify | None = None
    summary: Callable[[Mapping[str, Any]], str] | None = None
    expected_effect: str | Callable[[Mapping[str, Any]], str] | None = None
    is_async: bool = False
    wants_key: bool = False  # the function takes ``idempotency_key``

    @classmethod
    def build(cls, name: str, fn: Callable[..., Any], **kwargs: Any) -> ToolEntry:
        try:
            wants_key = "idempotency_key" in inspect.signature(fn).parameters
        except (TypeError, ValueError):
            wants_key = False
        return cls(name=name, fn=fn, is_async=inspect.iscoroutinefunction(fn),
                   wants_key=wants_key, **kwargs)

    def validate(self, args: Mapping[str, Any], *, edit: bool = True) -> None:
        """Check arguments against the declared JSON Schema. An approver's edit that breaks
        it is ``InvalidDecision(invalid_edit)``; a proposed call that breaks it is
        ``InvalidArguments(schema_violation)``."""
        if self.schema is None:
            return
        import jsonschema  # noqa: PLC0415 (80 ms to import: only for a tool with a schema)

        try:
            jsonschema.validate(dict(args), self.schema)
        except jsonschema.ValidationError as exc:
            where = "/".join(str(p) for p in exc.absolute_path) or "(arguments)"
            if not edit:
                raise InvalidArguments(f"{self.name} arguments break its schema: {where}: "
                                       f"{exc.message}", code="schema_violation") from exc
            raise InvalidDecision(f"{where}: {exc.message}", code="invalid_edit") from exc

    def versions(self, args: Mapping[str, Any]) -> dict[str, str]:
        return {name: str(fn(args)) for name, fn in sorted(self.preconditions.items())}


def file_version(argument: str) -> Precondition:
    """A ready precondition: the SHA-256 of the file named by ``argument`` (or ``absent``)."""

    def version(args: Mapping[str, Any]) -> str:
        try:
            return "sha256:" + hashlib.sha256(Path(str(args[argument])).read_bytes()).hexdigest()
        except FileNotFoundError:
            return "absent"

    return version
