"""Review modes, interaction modes, and the trust boundary that builds a ``RunContext``.

Two rules from the design live here:

* a review mode that is unknown, missing or corrupt is ``manual`` (the safe
  end), and no thread may go above the operator's ceiling;
* an interaction mode that loosens anything can only come from a trusted caller,
  and an explicit value with no meaning is an error — never a quiet fallback to
  ``interactive``, which would let an unattended run wait on a human forever.

Public input may claim what only restricts it (``CLAIMABLE_KEYS``): an unattended
interaction mode (its asks are blocked, its clarification tool withdrawn; the
policy's ``unattended_asks = "allow"`` never applies to a claimed mode) and the
parent call of a subagent's call (a label; such a request also expires sooner and
is withdrawn when its waiter is gone). A remote agent's runs are then judged as
the application that runs them declared.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from signoff.errors import ConfigurationError, InvalidInput
from signoff.model import InteractionMode, ReviewMode, RunContext

# Keys only trusted callers may set; public input carrying them has them removed.
TRUSTED_KEYS = frozenset({
    "interaction_mode", "review_mode", "principal", "parent_call",
    # legacy hints (DeerFlow's gateway): each one changes who may be asked
    "non_interactive", "disable_clarification", "channel_name",
})
UNTRUSTED_KEYS = frozenset({"thread_id", "run_id", "session_id", "intent"})
# Trusted keys public input may still claim, because a claim can only restrict.
CLAIMABLE_KEYS = frozenset({"interaction_mode", "parent_call"})


def parse_review_mode(value: object) -> ReviewMode:
    """Any value → a review mode; anything unrecognised is ``manual``."""
    if isinstance(value, ReviewMode):
        return value
    if isinstance(value, str):
        try:
            return ReviewMode(value.strip().lower())
        except ValueError:
            return ReviewMode.MANUAL
    return ReviewMode.MANUAL


def clamp(mode: ReviewMode, ceiling: ReviewMode) -> ReviewMode:
    """The operator ceiling: a thread may not review less than the operator allows."""
    return ceiling if mode.rank > ceiling.rank else mode


def parse_interaction_mode(value: object) -> InteractionMode:
    """An explicit interaction mode; unknown values raise ``unknown_interaction_mode``."""
    if isinstance(value, InteractionMode):
        return value
    if isinstance(value, str):
        try:
            return InteractionMode(value.strip().lower())
        except ValueError:
            pass
    raise ConfigurationError(
        f"unknown interaction mode {value!r}: expected one of "
        + ", ".join(m.value for m in InteractionMode),
        code="unknown_interaction_mode",
    )


def resolve_interaction_mode(
    explicit: object = None,
    *,
    non_interactive: bool = False,
    channel_name: str | None = None,
    disable_clarification: bool = False,
) -> InteractionMode:
    """Explicit mode first; then the legacy hints; else interactive."""
    if explicit is not None:
        return parse_interaction_mode(explicit)
    if non_interactive:
        return InteractionMode.SCHEDULED
    if channel_name == "github":
        return InteractionMode.WEBHOOK
    if disable_clarification:
        return InteractionMode.AUTONOMOUS
    return InteractionMode.INTERACTIVE


def trusted_context(
    *,
    thread_id: str | None = None,
    run_id: str | None = None,
    session_id: str | None = None,
    review_mode: object = None,
    interaction_mode: object = None,
    principal: str | None = None,
    intent: str | None = None,
    parent_call: str | None = None,
    non_interactive: bool = False,
    channel_name: str | None = None,
    disable_clarification: bool = False,
) -> RunContext:
    """For callers inside the trust boundary (the operator's scheduler, the server itself)."""
    return RunContext(
        thread_id=thread_id,
        run_id=run_id,
        session_id=session_id,
        review_mode=None if review_mode is None else parse_review_mode(review_mode),
        interaction_mode=resolve_interaction_mode(
            interaction_mode,
            non_interactive=non_interactive,
            channel_name=channel_name,
            disable_clarification=disable_clarification,
        ),
        principal=principal,
        intent=intent,
        parent_call=parent_call,
    )


def untrusted_context(data: Mapping[str, Any]) -> tuple[RunContext, tuple[str, ...]]:
    """For public input (an HTTP body, a model-visible config): trusted keys are stripped,
    except the ones a claim of can only restrict (``CLAIMABLE_KEYS``).

    Returns the context and the names of the keys that were removed, so the
    boundary can log the attempt. Unknown keys are ignored, not errors: public
    clients send all sorts of things. A claimed interaction mode that names no mode is
    an error (``unknown_interaction_mode``), never read as interactive.
    """
    stripped = tuple(sorted(k for k in data if k in TRUSTED_KEYS - CLAIMABLE_KEYS))
    values: dict[str, str | None] = {}
    for key in UNTRUSTED_KEYS | {"parent_call"}:
        value = data.get(key)
        values[key] = value if isinstance(value, str) else None
    claimed = data.get("interaction_mode")
    interaction = InteractionMode.INTERACTIVE
    if claimed is not None:
        try:
            interaction = parse_interaction_mode(claimed)
        except ConfigurationError as exc:
            raise InvalidInput(f"context.interaction_mode: {exc.message}",
                               code="unknown_interaction_mode",
                               field="context.interaction_mode") from None
    try:
        context = RunContext(thread_id=values["thread_id"], run_id=values["run_id"],
                             session_id=values["session_id"], intent=values["intent"],
                             parent_call=values["parent_call"], interaction_mode=interaction,
                             interaction_claimed=claimed is not None)
    except InvalidInput as exc:  # name the field as the caller sent it
        raise InvalidInput(f"context.{exc.message}", code=exc.code,
                           field=f"context.{exc.field}") from None
    return context, stripped
