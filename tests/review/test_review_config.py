"""``[review]`` in signoff.toml: parsed strictly, the key only from the environment."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from chat_server import ChatServer, Reply

from signoff import (
    ConfigurationError,
    Effect,
    Policy,
    PolicyError,
    ReviewMode,
    RunContext,
    ToolCall,
)
from signoff.model import Risk
from signoff.policy import parse_policy
from signoff.review import ChatCompletionsReviewer, ReviewConfig, RiskReviewer

BASE = """
[policy]
version = "review-config"
gated = ["deploy"]
[tools.deploy]
"""


def _review(table: str) -> str:
    return BASE + "\n[review]\n" + table


def test_no_review_table_is_the_rules_reviewer() -> None:
    config = parse_policy(BASE)
    assert config.review == ReviewConfig()
    reviewer = Policy(config).reviewer
    assert isinstance(reviewer, RiskReviewer) and reviewer.threshold is Risk.MEDIUM


def test_every_key_parses() -> None:
    config = parse_policy(_review("""
reviewer = "openai"
model = "gpt-4.1-mini"
base_url = "http://127.0.0.1:11434/v1"
api_key_env = "OLLAMA_KEY"
timeout = 2.5
max_retries = 1
max_output_tokens = 200
json_mode = false
token_limit_param = "max_completion_tokens"
temperature = 0
max_risk = "low"
max_reviews_per_run = 5
max_reviews_per_minute = 30
"""))
    assert config.review == ReviewConfig(
        reviewer="openai", model="gpt-4.1-mini", base_url="http://127.0.0.1:11434/v1",
        api_key_env="OLLAMA_KEY", timeout=2.5, max_retries=1, max_output_tokens=200,
        json_mode=False, token_limit_param="max_completion_tokens", temperature=0.0,
        max_risk=Risk.LOW, max_reviews_per_run=5, max_reviews_per_minute=30)


@pytest.mark.parametrize(("table", "field", "message"), [
    ('reviewer = "openai"\nmodel = "m"\napi_key = "sk-live-123"', "api_key", "environment"),
    ('api_key = "sk-live-123"', "api_key", "never read from signoff.toml"),
    ('reviewer = "openai"\nmodel = "m"\nmodle = "x"', "modle", "unknown key"),
    ('reviewer = "claude"', "reviewer", "one of rules, openai"),
    ('reviewer = "openai"', "model", "needs a model"),
    ('model = "m"', "model", 'only meaningful with reviewer = "openai"'),
    ('max_risk = "extreme"', "max_risk", "low, medium, high, critical"),
    ('reviewer = "openai"\nmodel = "m"\ntimeout = 0', "timeout", "above 0"),
    ('reviewer = "openai"\nmodel = "m"\ntimeout = "10s"', "timeout", "number"),
    ('reviewer = "openai"\nmodel = "m"\nmax_retries = 9', "max_retries", "0 to 5"),
    ('reviewer = "openai"\nmodel = "m"\nmax_output_tokens = true', "max_output_tokens",
     "integer"),
    ('reviewer = "openai"\nmodel = "m"\nbase_url = "ftp://x"', "base_url", "http"),
    ('reviewer = "openai"\nmodel = "m"\napi_key_env = "MY-KEY"', "api_key_env",
     "environment variable"),
    ('reviewer = "openai"\nmodel = "m"\ntoken_limit_param = "max"', "token_limit_param",
     "max_tokens"),
    ('reviewer = "openai"\nmodel = "m"\nmax_reviews_per_run = 0', "max_reviews_per_run",
     "integer"),
    ('reviewer = "openai"\nmodel = "m"\ntemperature = 3', "temperature", "up to 2"),
])
def test_a_bad_review_table_does_not_load(table: str, field: str, message: str) -> None:
    with pytest.raises(PolicyError) as caught:
        parse_policy(_review(table), source="p.toml")
    assert caught.value.field == field and caught.value.rule == "[review]"
    assert message in str(caught.value) and "p.toml" in str(caught.value)
    assert "sk-live-123" not in str(caught.value)


def test_max_risk_sets_the_rules_reviewers_threshold() -> None:
    policy = Policy.from_toml(_review('max_risk = "low"'))
    assert isinstance(policy.reviewer, RiskReviewer) and policy.reviewer.threshold is Risk.LOW
    verdict = policy.evaluate(ToolCall(id="c", name="deploy", args={}),
                              RunContext(review_mode=ReviewMode.AUTO))
    assert verdict.effect is Effect.ASK and verdict.risk is Risk.MEDIUM  # beyond the bound


def test_the_openai_reviewer_from_config_reads_its_key_from_the_environment(
        chat_server: ChatServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REVIEW_KEY", "key-from-env")
    policy = Policy.from_toml(_review(f"""
reviewer = "openai"
model = "scripted"
base_url = "{chat_server.base_url}"
api_key_env = "REVIEW_KEY"
max_reviews_per_run = 1
"""))
    assert isinstance(policy.reviewer, ChatCompletionsReviewer)
    chat_server.default = Reply.verdict("approve", "fits")
    context = RunContext(review_mode=ReviewMode.AUTO, run_id="r1")
    first = policy.evaluate(ToolCall(id="c", name="deploy", args={}), context)
    second = policy.evaluate(ToolCall(id="c", name="deploy", args={}), context)
    assert (first.effect, second.effect) == (Effect.ALLOW, Effect.ASK)  # budget: 1 per run
    assert chat_server.hits == 1
    assert chat_server.headers[0]["authorization"] == "Bearer key-from-env"
    assert chat_server.requests[0]["model"] == "scripted"


def test_a_missing_key_is_an_error_at_load(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigurationError) as caught:
        Policy.from_toml(_review('reviewer = "openai"\nmodel = "m"'))
    assert caught.value.code == "review_no_key" and "OPENAI_API_KEY" in str(caught.value)
    assert parse_policy(_review('reviewer = "openai"\nmodel = "m"')).review.reviewer == "openai"


def test_without_the_openai_package_the_error_says_what_to_install(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.setitem(sys.modules, "openai", None)  # import openai -> ImportError
    with pytest.raises(ConfigurationError) as caught:
        Policy.from_toml(_review('reviewer = "openai"\nmodel = "m"'))
    assert caught.value.code == "review_unavailable" and "signoff[review]" in str(caught.value)


def test_signoff_imports_without_openai() -> None:
    import subprocess

    code = ("import sys; sys.modules['openai'] = None; sys.modules['langchain_core'] = None\n"
            "import signoff, signoff.review\n"
            "from signoff import Policy\n"
            "Policy.from_toml('[policy]\\nversion = \"v\"')\n"
            "print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).parent)
    assert out.stdout.strip() == "ok"
