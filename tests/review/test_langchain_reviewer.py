"""``ChatModelReviewer``: a LangChain chat model as the auto reviewer (langchain_core's fakes)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatResult
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool

from signoff import ConfigurationError, Effect, Policy, ReviewMode, RunContext, ToolCall
from signoff.model import Risk
from signoff.review import ChatModelReviewer, ReviewOutcome, ReviewRequest, prompt_hash

POLICY = """
[policy]
version = "lc-review"
gated = ["deploy"]
[tools.deploy]
"""
CONTEXT = RunContext(review_mode=ReviewMode.AUTO, run_id="r1", intent="ship web to staging")
CALL = ToolCall(id="c1", name="deploy", args={"service": "web", "env": "staging"})
USAGE = {"input_tokens": 210, "output_tokens": 12, "total_tokens": 222}


class Recording(GenericFakeChatModel):
    """langchain_core's fake chat model, keeping what each call was given."""

    calls: list[dict[str, Any]] = []  # noqa: RUF012 (a pydantic field, copied per instance)

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: Any = None, **kwargs: Any) -> ChatResult:
        self.calls.append({"messages": messages, "kwargs": kwargs})
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


def _model(*replies: AIMessage | str) -> Recording:
    return Recording(messages=iter(replies), calls=[])


def _answer(verdict: str, reason: str, **kwargs: Any) -> AIMessage:
    return AIMessage(content=json.dumps({"verdict": verdict, "reason": reason}), **kwargs)


def _request() -> ReviewRequest:
    return ReviewRequest(call=CALL, args=dict(CALL.args), context=CONTEXT, risk=Risk.MEDIUM,
                         reasons=())


def test_an_approval_through_the_policy_and_the_record() -> None:
    model = _model(_answer("approve", "fits the intent", usage_metadata=USAGE,
                           response_metadata={"model_name": "fake-1"}))
    reviewer = ChatModelReviewer(model)
    verdict = Policy.from_toml(POLICY, reviewer=reviewer).evaluate(CALL, CONTEXT)
    assert verdict.effect is Effect.ALLOW and verdict.source == "reviewer"
    (call,) = model.calls
    assert call["kwargs"] == {}  # invoked as given: no tools, no tool_choice
    system, user = call["messages"]
    assert (system.type, user.type) == ("system", "human")
    data = json.loads(user.content)
    assert data["arguments"] == '{"env":"staging","service":"web"}'
    assert data["intent"] == "ship web to staging"

    model = _model(_answer("approve", "fits", usage_metadata=USAGE,
                           response_metadata={"model_name": "fake-1"}))
    outcome = ChatModelReviewer(model).review(_request())
    assert outcome.approve and outcome.reviewer == "langchain" and outcome.model == "fake-1"
    assert outcome.tokens == {"prompt": 210, "completion": 12}
    messages = [{"role": "system", "content": model.calls[0]["messages"][0].content},
                {"role": "user", "content": model.calls[0]["messages"][1].content}]
    assert outcome.prompt_hash == prompt_hash(messages)


@pytest.mark.parametrize(("reply", "code"), [
    pytest.param(_answer("escalate", "not the intent"), None, id="escalate"),
    pytest.param(AIMessage(content='{"verdict": "approve", "reason": "ok", "extra": 1}'),
                 "review_invalid", id="extra-field"),
    pytest.param(AIMessage(content="Sure! Approved."), "review_invalid", id="prose"),
    pytest.param(AIMessage(content="", tool_calls=[{"name": "deploy", "args": {}, "id": "t"}]),
                 "review_invalid", id="asks-for-a-tool"),
    pytest.param(AIMessage(content="", additional_kwargs={"refusal": "no"}), "review_refused",
                 id="refusal"),
    # Issue 42, item 8: a verdict in text beside any tool-call shape is not a verdict.
    pytest.param(_answer("approve", "ok", tool_calls=[{"name": "deploy", "args": {},
                                                       "id": "t"}]),
                 "review_invalid", id="approve-beside-a-tool-call"),
    pytest.param(_answer("approve", "ok", invalid_tool_calls=[
        {"name": "deploy", "args": "{", "id": "t", "error": "bad json",
         "type": "invalid_tool_call"}]), "review_invalid", id="invalid-tool-calls"),
    pytest.param(_answer("approve", "ok", additional_kwargs={
        "function_call": {"name": "approve", "arguments": "{}"}}), "review_invalid",
        id="legacy-function-call"),
    pytest.param(_answer("approve", "ok", additional_kwargs={"tool_calls": []}),
                 "review_invalid", id="raw-tool-calls"),
    pytest.param(_answer("approve", "ok", response_metadata={"finish_reason": "tool_calls"}),
                 "review_invalid", id="finish-tool-calls"),
    pytest.param(_answer("approve", "ok", response_metadata={"stop_reason": "tool_use"}),
                 "review_invalid", id="stop-reason-tool-use"),
    pytest.param(AIMessage(content=[
        {"type": "text", "text": '{"verdict": "approve", "reason": "ok"}'},
        {"type": "tool_use", "id": "t", "name": "deploy", "input": {}}]),
        "review_invalid", id="tool-use-block"),
])
def test_anything_but_an_approval_goes_to_a_human(reply: AIMessage, code: str | None) -> None:
    verdict = Policy.from_toml(POLICY, reviewer=ChatModelReviewer(_model(reply))).evaluate(
        CALL, CONTEXT)
    assert verdict.effect is Effect.ASK
    outcome = ChatModelReviewer(_model(reply)).review(_request())
    assert not outcome.approve and outcome.error == code


def test_content_blocks_are_read_as_text() -> None:
    reply = AIMessage(content=[{"type": "text", "text": '{"verdict": "approve", '},
                               {"type": "text", "text": '"reason": "fits"}'}])
    assert ChatModelReviewer(_model(reply)).review(_request()).approve


def test_a_failing_or_late_model_goes_to_a_human() -> None:
    class Failing(GenericFakeChatModel):
        error: Any = None

        def _generate(self, *args: Any, **kwargs: Any) -> ChatResult:
            raise self.error

    for error, code in ((TimeoutError("slow"), "review_timeout"),
                        (RuntimeError("boom"), "review_error")):
        model = Failing(messages=iter(()), error=error)
        outcome = ChatModelReviewer(model).review(_request())
        assert not outcome.approve and outcome.error == code

    class Slow(GenericFakeChatModel):
        def _generate(self, *args: Any, **kwargs: Any) -> ChatResult:
            time.sleep(0.5)
            return super()._generate(*args, **kwargs)

    start = time.monotonic()
    late = ChatModelReviewer(Slow(messages=iter([_answer("approve", "fits")])),
                             timeout=0.1).review(_request())
    assert time.monotonic() - start < 0.4  # the caller waits the deadline, not the model
    assert not late.approve and late.error == "review_timeout" and late.answer is None


def test_a_model_with_tools_bound_is_refused() -> None:
    @tool
    def deploy(service: str) -> str:
        """Deploy a service."""
        return service

    bound = _model("x").bind(tools=[deploy])
    with pytest.raises(ConfigurationError) as caught:
        ChatModelReviewer(bound)  # type: ignore[arg-type]
    assert caught.value.code == "review_not_tool_free"


def test_the_review_does_not_stream_into_the_surrounding_run() -> None:
    """Inside an agent's run, the reviewer's model call reports to none of its callbacks."""
    started: list[str] = []

    class Handler(BaseCallbackHandler):
        def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
            started.append("chat")

    reviewer = ChatModelReviewer(_model(_answer("approve", "fits")))
    outer = RunnableLambda(lambda _: reviewer.review(_request()))
    outcome: ReviewOutcome = outer.invoke(None, config={"callbacks": [Handler()]})
    assert outcome.approve and started == []


@pytest.mark.slow
def test_the_langchain_reviewer_needs_no_openai(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = ("import sys; sys.modules['openai'] = None\n"
            "from langchain_core.language_models.fake_chat_models import GenericFakeChatModel\n"
            "from signoff.review import ChatModelReviewer\n"
            "ChatModelReviewer(GenericFakeChatModel(messages=iter(())))\n"
            "print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=tmp_path)
    assert out.stdout.strip() == "ok"
