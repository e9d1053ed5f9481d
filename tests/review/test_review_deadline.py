"""A review has one deadline in all, runs on its own few threads, and answers only in text.

Issue 42, items 6 and 8. The real ``openai`` client against real sockets: an endpoint
that drips its approval one byte every 60 ms (a per-read timeout never fires) is hung
up on at the deadline and the call goes to a human; reviews beyond the pool's slots go
to a human at once; an answer in any tool-call shape is not a verdict, whatever it says.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest
from chat_server import ChatServer, Reply
from drip_server import DripServer

from signoff import (
    Effect,
    Gate,
    Policy,
    PolicyError,
    ProposalKind,
    ReviewMode,
    RunContext,
    ToolCall,
)
from signoff.model import Risk
from signoff.policy.config import parse_policy
from signoff.review import (
    ChatCompletionsReviewer,
    ReviewOutcome,
    ReviewRequest,
    build_reviewer,
)
from signoff.review.pool import ReviewPool
from signoff.store.base import Store

POLICY = """
[policy]
version = "review-deadline"
gated = ["deploy"]
[tools.deploy]
"""
CALL = ToolCall(id="c1", name="deploy", args={"service": "web", "env": "staging"})
APPROVE = json.dumps({"verdict": "approve", "reason": "fits the intent"})


def _context(n: int = 1) -> RunContext:
    return RunContext(review_mode=ReviewMode.AUTO, thread_id=f"t{n}", run_id=f"r{n}",
                      intent="ship web to staging")


def _request(n: int = 1) -> ReviewRequest:
    return ReviewRequest(call=CALL, args=dict(CALL.args), context=_context(n),
                         risk=Risk.MEDIUM, reasons=())


def _wait_for(predicate: Any, timeout: float = 3.0) -> None:
    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, "timed out waiting"
        time.sleep(0.02)


# ---- a total deadline per review -------------------------------------------------------------


@pytest.mark.slow
def test_a_dripping_endpoint_escalates_within_the_deadline_and_is_hung_up_on(
        store: Store) -> None:
    with DripServer(drip=0.06) as drip:
        reviewer = ChatCompletionsReviewer("m", base_url=drip.base_url, api_key="k", timeout=2)
        gate = Gate(Policy.from_toml(POLICY, reviewer=reviewer), store)
        start = time.monotonic()
        proposal = gate.propose(CALL, _context())
        elapsed = time.monotonic() - start
        assert elapsed < 2.6, f"the review took {elapsed:.2f} s with timeout = 2"
        assert proposal.kind is ProposalKind.PENDING and proposal.request_id
        assert proposal.verdict.review is not None
        assert proposal.verdict.review["error"] == "review_timeout"
        assert not proposal.verdict.review["approve"]
        assert "deadline" in proposal.verdict.review["reason"]
        # The request was abandoned at the deadline, not left reading the approval.
        _wait_for(lambda: drip.closed_after)
        assert drip.closed_after[0] < 2.6 and drip.finished == 0
        # The server sees the hang-up before the review's thread has returned its slot.
        _wait_for(lambda: reviewer.pool.running == 0, timeout=1.0)
        # The late approval is never obeyed: the call waits for a human.
        again = gate.propose(CALL, _context())
        assert again.kind is ProposalKind.PENDING and again.request_id == proposal.request_id
        assert drip.requests == 1  # reviewed once: the resume recalls the escalation


def test_headers_dripped_too_are_hung_up_on() -> None:
    with DripServer(drip=0.06, headers_too=True) as drip:
        reviewer = ChatCompletionsReviewer("m", base_url=drip.base_url, api_key="k",
                                           timeout=1)
        start = time.monotonic()
        outcome = reviewer.review(_request())
        assert time.monotonic() - start < 1.5
        assert not outcome.approve and outcome.error == "review_timeout"
        _wait_for(lambda: drip.closed_after)
        assert drip.closed_after[0] < 1.5 and drip.finished == 0


def test_retries_share_the_one_deadline(chat_server: ChatServer) -> None:
    failing = Reply.error(500, delay=0.6, headers={"retry-after-ms": "1"})
    chat_server.script(failing, Reply.verdict("approve", "late", delay=0.6))
    reviewer = ChatCompletionsReviewer("m", base_url=chat_server.base_url, api_key="k",
                                       timeout=1, max_retries=3)
    start = time.monotonic()
    outcome = reviewer.review(_request())
    assert time.monotonic() - start < 1.4
    assert not outcome.approve and outcome.error == "review_timeout"


# ---- the review pool ---------------------------------------------------------------------------


@pytest.mark.slow
def test_reviews_beyond_the_pool_go_to_a_human_at_once() -> None:
    with DripServer(drip=0.06) as drip:
        reviewer = ChatCompletionsReviewer("m", base_url=drip.base_url, api_key="k",
                                           timeout=1.5, pool=ReviewPool(2))
        outcomes: list[ReviewOutcome] = []
        threads = [threading.Thread(target=lambda n=n: outcomes.append(
            reviewer.review(_request(n)))) for n in (1, 2)]
        for thread in threads:
            thread.start()
        _wait_for(lambda: drip.requests == 2)
        start = time.monotonic()
        busy = reviewer.review(_request(3))
        assert time.monotonic() - start < 0.1
        assert not busy.approve and busy.error == "review_busy"
        assert "not asked" in busy.reason and drip.requests == 2
        for thread in threads:
            thread.join()
        assert [o.error for o in outcomes] == ["review_timeout", "review_timeout"]
        _wait_for(lambda: reviewer.pool.running == 0)
    with ChatServer() as server:  # the slots are free again
        reviewer.client = ChatCompletionsReviewer("m", base_url=server.base_url,
                                                  api_key="k").client
        server.script(Reply.verdict("approve", "fits"))
        assert reviewer.review(_request(4)).approve


def test_the_pool_size_is_configurable() -> None:
    config = parse_policy(POLICY + '[review]\nreviewer = "openai"\nmodel = "m"\n'
                                   'max_concurrent = 3\n').review
    assert config.max_concurrent == 3
    reviewer = build_reviewer(config, {"OPENAI_API_KEY": "k"})
    assert isinstance(reviewer, ChatCompletionsReviewer) and reviewer.pool.size == 3
    with pytest.raises(PolicyError):
        parse_policy(POLICY + '[review]\nreviewer = "openai"\nmodel = "m"\nmax_concurrent = 0\n')


# ---- item 8: only plain text counts -----------------------------------------------------------


def _completion(message: dict[str, Any], finish_reason: str = "stop") -> Reply:
    return Reply(body={"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                       "choices": [{"index": 0, "message": message,
                                    "finish_reason": finish_reason}]})


_FN = {"name": "approve", "arguments": APPROVE}
_TOOL = {"id": "call_1", "type": "function", "function": _FN}


@pytest.mark.parametrize(("reply", "code"), [
    pytest.param(_completion({"role": "assistant", "content": APPROVE, "function_call": _FN},
                             "function_call"), "review_invalid", id="legacy-function-call"),
    pytest.param(_completion({"role": "assistant", "content": APPROVE, "function_call": _FN}),
                 "review_invalid", id="function-call-finish-stop"),
    pytest.param(_completion({"role": "assistant", "content": APPROVE}, "tool_calls"),
                 "review_invalid", id="finish-tool-calls-no-calls"),
    pytest.param(_completion({"role": "assistant", "content": APPROVE, "tool_calls": []},
                             "tool_calls"), "review_invalid", id="finish-tool-calls-empty"),
    pytest.param(_completion({"role": "assistant", "content": APPROVE, "tool_calls": []}),
                 "review_invalid", id="empty-tool-calls-finish-stop"),
    pytest.param(_completion({"role": "assistant", "content": APPROVE, "tool_calls": [_TOOL]}),
                 "review_invalid", id="tool-calls"),
    pytest.param(_completion({"role": "assistant", "content": APPROVE, "refusal": ""}),
                 "review_refused", id="empty-refusal-field"),
    pytest.param(_completion({"role": "assistant",
                              "content": [{"type": "text", "text": APPROVE}]}),
                 "review_invalid", id="content-parts"),
    pytest.param(_completion({"role": "tool", "content": APPROVE}), "review_invalid",
                 id="not-the-assistant"),
])
def test_an_answer_in_a_tool_call_shape_escalates(chat_server: ChatServer, reply: Reply,
                                                  code: str) -> None:
    chat_server.script(reply, reply)
    reviewer = ChatCompletionsReviewer("m", base_url=chat_server.base_url, api_key="k")
    verdict = Policy.from_toml(POLICY, reviewer=reviewer).evaluate(CALL, _context())
    assert verdict.effect is Effect.ASK
    outcome = reviewer.review(_request())
    assert not outcome.approve and outcome.error == code


def test_plain_text_still_approves(chat_server: ChatServer) -> None:
    chat_server.script(_completion({"role": "assistant", "content": APPROVE,
                                    "refusal": None, "tool_calls": None}))
    reviewer = ChatCompletionsReviewer("m", base_url=chat_server.base_url, api_key="k")
    assert Policy.from_toml(POLICY, reviewer=reviewer).evaluate(
        CALL, _context()).effect is Effect.ALLOW
