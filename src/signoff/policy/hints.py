"""What an MCP server says of its own tools, and the ``[mcp]`` table that weighs it.

MCP tools carry annotations (``destructiveHint``, ``readOnlyHint``,
``openWorldHint``). They come from the server, so they are untrusted: a hint
may make signoff more careful — a tool the server calls destructive is asked
by review mode (``gated``) or always by a human (``mandatory``), at a higher
risk — but never less. Only a hint that is explicitly ``true`` counts: a
missing hint, or ``readOnlyHint: true``, changes nothing, so a server that
lies in its annotations gets exactly the treatment it would get without them.
An explicit allow rule for the tool still decides before a ``gated`` hint
(the operator named the tool), as for any gated tool (the evaluation order, step 6).

``[mcp] server`` names the server for the policy: its tools are known to the
policy as ``<server>__<tool>`` (``fs__write_file``), so one policy can hold the
tools of several servers. The hints themselves are learnt at run time from the
server's ``tools/list`` and kept in a ``HintBook`` that a gate's policies share.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from signoff.errors import PolicyError
from signoff.model import Risk

TREATMENTS = ("gated", "mandatory", "ignore")
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.")


@dataclass(frozen=True, slots=True, kw_only=True)
class McpConfig:
    """The ``[mcp]`` table."""

    server: str | None = None  # the namespace: policy names are f"{server}{separator}{tool}"
    separator: str = "__"
    destructive: str = "gated"  # what an explicit destructiveHint does: gated|mandatory|ignore
    open_world: str = "ignore"  # what an explicit openWorldHint does
    destructive_risk: Risk = Risk.HIGH
    open_world_risk: Risk = Risk.MEDIUM

    def policy_name(self, tool: str, server: str | None = None) -> str:
        """The name the policy knows an MCP tool by (``server`` overrides the table's)."""
        prefix = self.server if server is None else server
        return f"{prefix}{self.separator}{tool}" if prefix else tool


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolHints:
    """The annotations of one tool that can add care (explicitly ``true`` ones only)."""

    destructive: bool = False
    open_world: bool = False

    @classmethod
    def from_annotations(cls, annotations: object) -> ToolHints | None:
        """From a tool's ``annotations`` object as listed; ``None`` when nothing counts."""
        if not isinstance(annotations, Mapping):
            return None
        hints = cls(destructive=annotations.get("destructiveHint") is True,
                    open_world=annotations.get("openWorldHint") is True)
        return hints if hints.destructive or hints.open_world else None


@dataclass(frozen=True, slots=True)
class HintEffect:
    """What the hints of one tool do under ``[mcp]``: the treatment, the risk, why."""

    treatment: str  # gated | mandatory
    risk: Risk
    text: str


def hint_effect(config: McpConfig, tool: str, hints: ToolHints | None) -> HintEffect | None:
    if hints is None:
        return None
    found: list[tuple[str, Risk, str]] = []
    if hints.destructive and config.destructive != "ignore":
        found.append((config.destructive, config.destructive_risk, "destructive"))
    if hints.open_world and config.open_world != "ignore":
        found.append((config.open_world, config.open_world_risk, "open-world"))
    if not found:
        return None
    treatment = "mandatory" if any(t == "mandatory" for t, _, _ in found) else "gated"
    risk = max((r for _, r, _ in found), key=lambda r: r.rank)
    what = " and ".join(word for _, _, word in found)
    return HintEffect(treatment, risk, f"the MCP server marks {tool} {what} (an untrusted "
                                       "hint: it can only add care)")


class HintBook:
    """Tool name (as the policy knows it) → hints; shared by a gate's policies, replaced
    whenever the server lists its tools again. ``generation`` tells a policy to forget
    the views it built from older hints."""

    def __init__(self) -> None:
        self._hints: dict[str, ToolHints] = {}
        self._lock = threading.Lock()
        self.generation = 0

    def get(self, tool: str) -> ToolHints | None:
        return self._hints.get(tool)

    def update(self, hints: Mapping[str, ToolHints | None]) -> None:
        """Set (or, with ``None``, clear) the hints of the tools named."""
        with self._lock:
            merged = dict(self._hints)
            for name, value in hints.items():
                if value is None:
                    merged.pop(name, None)
                else:
                    merged[name] = value
            if merged != self._hints:
                self._hints = merged
                self.generation += 1

    def __len__(self) -> int:
        return len(self._hints)


def parse_mcp(raw: object, error: Callable[..., PolicyError]) -> McpConfig:
    """The ``[mcp]`` table; ``error(message, rule=, field=)`` builds the loader's error."""
    if raw is None:
        return McpConfig()
    where = "[mcp]"
    if not isinstance(raw, dict):
        raise error("must be a table", rule=where)
    table: dict[str, Any] = raw
    allowed = {"server", "separator", "destructive", "open_world", "destructive_risk",
               "open_world_risk"}
    for key in table:
        if key not in allowed:
            raise error(f"unknown key (one of {', '.join(sorted(allowed))})", rule=where,
                        field=key)
    server = table.get("server")
    if server is not None and not (isinstance(server, str) and server
                                   and set(server) <= _NAME_CHARS):
        raise error("must be a name of letters, digits, _ - .", rule=where, field="server")
    separator = table.get("separator", "__")
    if not isinstance(separator, str) or not separator or len(separator) > 8:
        raise error("must be a short non-empty string", rule=where, field="separator")
    out: dict[str, Any] = {}
    for key in ("destructive", "open_world"):
        value = table.get(key, McpConfig.__dataclass_fields__[key].default)
        if value not in TREATMENTS:
            raise error("must be one of " + ", ".join(TREATMENTS), rule=where, field=key)
        out[key] = value
    for key in ("destructive_risk", "open_world_risk"):
        value = table.get(key)
        if value is None:
            continue
        try:
            out[key] = Risk(value)
        except ValueError:
            raise error("must be one of low, medium, high, critical", rule=where,
                        field=key) from None
    return McpConfig(server=server, separator=separator, **out)
