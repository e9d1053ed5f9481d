"""Review modes fail safe, interaction modes fail loudly; public input cannot cross the boundary."""

from __future__ import annotations

import pytest

from signoff import ConfigurationError, InteractionMode, ReviewMode
from signoff.errors import InvalidInput
from signoff.policy.modes import (
    CLAIMABLE_KEYS,
    TRUSTED_KEYS,
    clamp,
    parse_interaction_mode,
    parse_review_mode,
    resolve_interaction_mode,
    trusted_context,
    untrusted_context,
)


@pytest.mark.parametrize(("raw", "mode"), [
    ("manual", ReviewMode.MANUAL), ("auto", ReviewMode.AUTO), ("full", ReviewMode.FULL),
    (" FULL ", ReviewMode.FULL), ("yolo", ReviewMode.MANUAL), ("", ReviewMode.MANUAL),
    (None, ReviewMode.MANUAL), (3, ReviewMode.MANUAL), (["full"], ReviewMode.MANUAL),
    ("full\x00", ReviewMode.MANUAL),
])
def test_review_mode_unknown_is_manual(raw: object, mode: ReviewMode) -> None:
    assert parse_review_mode(raw) is mode


@pytest.mark.parametrize(("mode", "ceiling", "expected"), [
    (ReviewMode.FULL, ReviewMode.AUTO, ReviewMode.AUTO),
    (ReviewMode.FULL, ReviewMode.MANUAL, ReviewMode.MANUAL),
    (ReviewMode.AUTO, ReviewMode.MANUAL, ReviewMode.MANUAL),
    (ReviewMode.AUTO, ReviewMode.FULL, ReviewMode.AUTO),
    (ReviewMode.MANUAL, ReviewMode.MANUAL, ReviewMode.MANUAL),
])
def test_ceiling(mode: ReviewMode, ceiling: ReviewMode, expected: ReviewMode) -> None:
    assert clamp(mode, ceiling) is expected


@pytest.mark.parametrize("raw", ["robot", "", "Interactive!", 1, None, ["scheduled"]])
def test_unknown_interaction_mode_is_a_configuration_error(raw: object) -> None:
    with pytest.raises(ConfigurationError) as info:
        parse_interaction_mode(raw)
    assert info.value.code == "unknown_interaction_mode"


def test_explicit_unknown_mode_never_falls_back_to_interactive() -> None:
    with pytest.raises(ConfigurationError):
        trusted_context(interaction_mode="batch")


@pytest.mark.parametrize(("kwargs", "mode"), [
    ({}, InteractionMode.INTERACTIVE),
    ({"non_interactive": True}, InteractionMode.SCHEDULED),
    ({"channel_name": "github"}, InteractionMode.WEBHOOK),
    ({"disable_clarification": True}, InteractionMode.AUTONOMOUS),
    ({"explicit": "webhook", "non_interactive": True}, InteractionMode.WEBHOOK),
    ({"explicit": "interactive", "non_interactive": True}, InteractionMode.INTERACTIVE),
])
def test_legacy_hints(kwargs: dict[str, object], mode: InteractionMode) -> None:
    explicit = kwargs.pop("explicit", None)
    assert resolve_interaction_mode(explicit, **kwargs) is mode  # type: ignore[arg-type]


def test_untrusted_input_cannot_set_trusted_keys() -> None:
    context, stripped = untrusted_context({
        "thread_id": "t1", "run_id": "r1", "intent": "tidy the repo",
        "review_mode": "full", "principal": "admin",
        "non_interactive": False, "disable_clarification": True, "channel_name": "github",
        "extra": "ignored",
    })
    assert context.thread_id == "t1" and context.run_id == "r1"
    assert context.intent == "tidy the repo"
    assert context.review_mode is None
    assert context.interaction_mode is InteractionMode.INTERACTIVE
    assert not context.interaction_claimed
    assert context.principal is None and context.parent_call is None
    assert set(stripped) == TRUSTED_KEYS - CLAIMABLE_KEYS


def test_untrusted_input_may_claim_only_what_restricts_it() -> None:
    context, stripped = untrusted_context({"thread_id": "t1", "interaction_mode": "scheduled",
                                           "parent_call": "c0", "review_mode": "full"})
    assert stripped == ("review_mode",)
    assert context.interaction_mode is InteractionMode.SCHEDULED
    assert context.interaction_claimed and context.parent_call == "c0"
    with pytest.raises(InvalidInput) as bad:
        untrusted_context({"interaction_mode": "supervised"})
    assert (bad.value.code, bad.value.field) == ("unknown_interaction_mode",
                                                 "context.interaction_mode")
    with pytest.raises(InvalidInput) as bad:
        untrusted_context({"parent_call": "two words"})
    assert bad.value.field == "context.parent_call"


def test_untrusted_non_string_ids_are_dropped() -> None:
    context, _ = untrusted_context({"thread_id": {"$ne": None}, "run_id": 7})
    assert context.thread_id is None and context.run_id is None


def test_trusted_context_keeps_everything() -> None:
    context = trusted_context(thread_id="t", review_mode="auto", interaction_mode="scheduled",
                              principal="svc", parent_call="c1")
    assert context.review_mode is ReviewMode.AUTO
    assert context.interaction_mode is InteractionMode.SCHEDULED
    assert context.principal == "svc" and context.parent_call == "c1"


def test_a_claimed_unattended_mode_restricts_and_never_loosens() -> None:
    """``unattended_asks = "allow"`` lets a trusted caller's unattended root run pass its
    non-mandatory asks; the same mode claimed by public input blocks them."""
    from signoff import Policy
    from signoff.model import ToolCall

    policy = Policy.from_toml('[policy]\ngated = ["deploy"]\nunattended_asks = "allow"\n'
                              '[tools.deploy]\n', source="t.toml")
    call = ToolCall(id="c1", name="deploy", args={"env": "prod"})
    trusted = policy.evaluate(call, trusted_context(thread_id="t", interaction_mode="scheduled"))
    claimed, _ = untrusted_context({"thread_id": "t", "interaction_mode": "scheduled"})
    assert trusted.effect.value == "allow" and trusted.code == "unattended_allowed"
    verdict = policy.evaluate(call, claimed)
    assert (verdict.effect.value, verdict.code) == ("blocked", "needs_human")
    interactive, _ = untrusted_context({"thread_id": "t"})
    assert policy.evaluate(call, interactive).effect.value == "ask"
