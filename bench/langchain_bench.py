"""Time SignoffMiddleware adds to a LangChain agent's model turn on a non-gated call.

Run from the repository root::

    .venv/bin/python bench/langchain_bench.py            # full run
    .venv/bin/python bench/langchain_bench.py --quick    # a smoke check

Agents built by ``langchain.agents.create_agent`` with the same scripted
chat model, the same tool and LangGraph's InMemorySaver, measured in the same
run, interleaved: no middleware; signoff's ``SignoffMiddleware`` over a gate on
SQLite (WAL, synchronous=FULL); LangChain's ``HumanInTheLoopMiddleware``
interrupting on another tool; and a middleware whose ``wrap_model_call`` and
``wrap_tool_call`` only call on — what LangChain itself charges any middleware
for the two hooks signoff uses (create_agent wraps each hook call in LangSmith's
``traceable``, tracing off or not). Each run is one user message and ``--turns``
model turns, each calling a tool the policy
allows — then a final answer: ``lookup`` (a non-gated tool with no paths: the
target's case) and, for information, ``read_file`` inside the workspace (the
path guard's filesystem walk on top). The added time per turn is (the
middleware's median run − the bare agent's median run) ÷ turns; it includes
signoff's run start (once per run), the policy verdict and the (batched) audit
of every allowed call.

A last section times the LLM auto reviewer (``ChatCompletionsReviewer``, through the
real ``openai`` client) against the tests' scripted chat-completions server
(``tests/review/chat_server.py``), which answers at once: ``Gate.propose`` of one gated
call in auto mode, reviewed by it or by the built-in ``RiskReviewer``, interleaved in
the same run. The difference is what the reviewer adds per reviewed call with a model
that takes no time: signoff's prompt and answer handling, the client and local HTTP.
A real model adds its own latency on top.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import expect, version

TARGET_US = 30.0

POLICY = """
[policy]
gated = ["execute"]
[workspace]
name = "bench"
root = "{root}"
[tools.read_file]
paths = ["path"]
[tools.lookup]
[tools.execute]
shell = "command"
"""


def build(kind: str, turns: int, work: Path, *, tool_name: str = "lookup") -> tuple[Any, Any]:
    from langchain.agents import create_agent
    from langchain.agents.middleware import HumanInTheLoopMiddleware
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver

    from signoff import Gate, Policy, SqliteStore
    from signoff.adapters.langchain import SignoffMiddleware

    class Scripted(FakeMessagesListChatModel):
        def bind_tools(self, tools: Any, **_: Any) -> Any:  # type: ignore[override]
            return self

    @tool
    def read_file(path: str) -> str:
        """Read a file."""
        return "contents"

    @tool
    def lookup(query: str) -> str:
        """Look something up."""
        return "found"

    @tool
    def execute(command: str) -> str:
        """Run a command."""
        return "ran"

    args = {"path": "README.md"} if tool_name == "read_file" else {"query": "weather"}
    responses = [AIMessage(content="", tool_calls=[
        {"name": tool_name, "args": args, "id": f"call_{i}", "type": "tool_call"}])
        for i in range(turns)]
    responses.append(AIMessage(content="done"))
    gate = None
    middleware: list[Any] = []
    if kind == "signoff":
        root = work / "ws"
        root.mkdir(exist_ok=True)
        gate = Gate(Policy.from_toml(POLICY.format(root=root), source="bench.toml"),
                    SqliteStore(work / f"signoff-{uuid.uuid4().hex[:6]}.db"), agent="bench")
        middleware = [SignoffMiddleware(gate)]
    elif kind == "hitl":
        middleware = [HumanInTheLoopMiddleware(interrupt_on={"execute": True})]
    elif kind == "hooks":
        middleware = [PassThrough()]
    agent = create_agent(Scripted(responses=responses), tools=[read_file, lookup, execute],
                         middleware=middleware, checkpointer=InMemorySaver())
    return agent, gate


class PassThrough:
    """Built on first use (langchain is a bench extra): a middleware whose two hooks only
    call on. What any middleware using these hooks pays LangChain per turn."""

    def __new__(cls) -> Any:
        from langchain.agents.middleware import AgentMiddleware

        class _PassThrough(AgentMiddleware):  # type: ignore[type-arg]
            def wrap_model_call(self, request: Any, handler: Any) -> Any:
                return handler(request)

            def wrap_tool_call(self, request: Any, handler: Any) -> Any:
                return handler(request)

        return _PassThrough()


def traceable_cost(calls: int = 20_000) -> tuple[float, float]:
    """µs per call of a no-op hook, direct and wrapped in LangSmith's ``traceable`` as
    ``create_agent`` wraps every ``wrap_*`` hook (langchain/agents/factory.py) — tracing
    off. A deterministic floor under the noisy per-turn figures: two such calls a turn."""
    import timeit

    from langsmith import traceable

    def hook(request: Any, handler: Any) -> Any:
        return handler(request)

    wrapped = traceable(name="PassThrough.wrap_tool_call",
                        process_inputs=lambda inputs: inputs)(hook)
    direct = timeit.timeit(lambda: hook(1, abs), number=calls) / calls * 1e6
    traced = timeit.timeit(lambda: wrapped(1, abs), number=calls) / calls * 1e6
    return direct, traced


def one_run(agent: Any, cpu: list[float] | None = None) -> float:
    """Wall microseconds of one run; its process CPU microseconds (every thread) go to
    ``cpu``: CPU time counts the work a middleware adds and not the machine's other load."""
    config = {"configurable": {"thread_id": uuid.uuid4().hex}}
    cpu_started = time.process_time_ns()
    started = time.perf_counter_ns()
    out = agent.invoke({"messages": [{"role": "user", "content": "read it"}]}, config)
    elapsed = time.perf_counter_ns() - started
    if cpu is not None:
        cpu.append((time.process_time_ns() - cpu_started) / 1000.0)
    if out["messages"][-1].content != "done" or "__interrupt__" in out:
        raise SystemExit("benchmark setup is wrong: a run did not finish")
    return elapsed / 1000.0


def reviewer_latency(calls: int, work: Path) -> None:
    """Median µs of Gate.propose on a reviewed call: LLM reviewer vs RiskReviewer."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "review"))
    from chat_server import ChatServer, Reply

    from signoff import Gate, Policy, ProposalKind, ReviewMode, RunContext, SqliteStore, ToolCall
    from signoff.review import (
        ChatCompletionsReviewer,
        ReviewRequest,
        RiskReviewer,
        build_messages,
        parse_answer,
        prompt_hash,
    )

    (work / "ws").mkdir(exist_ok=True)
    text = POLICY.format(root=work / "ws") + "[tools.deploy]\n"
    text = text.replace('gated = ["execute"]', 'gated = ["execute", "deploy"]')
    context = RunContext(review_mode=ReviewMode.AUTO, thread_id="bench", run_id="bench",
                         intent="Deploy the web service to staging.")
    with ChatServer(default=Reply.verdict("approve", "deploying web to staging is the intent")
                    ) as server:
        llm = ChatCompletionsReviewer("scripted-model", base_url=server.base_url,
                                      api_key="bench", timeout=10)
        gates = {name: Gate(Policy.from_toml(text, reviewer=reviewer), agent="bench",
                            store=SqliteStore(work / f"review-{name}.db"))
                 for name, reviewer in (("rules", RiskReviewer()), ("llm", llm))}
        times: dict[str, list[float]] = {name: [] for name in gates}
        counter = iter(range(10**9))

        def propose(name: str) -> float:
            call = ToolCall(id=f"r{next(counter)}", name="deploy",
                            args={"service": "web", "env": "staging"})
            started = time.perf_counter_ns()
            proposal = gates[name].propose(call, context)
            elapsed = (time.perf_counter_ns() - started) / 1000.0
            expect(proposal.kind is ProposalKind.ALLOWED
                   and proposal.verdict.source == "reviewer", f"{name} must approve")
            return elapsed

        for name in gates:  # warm up the client's connection and the stores
            for _ in range(20):
                propose(name)
        warm = server.hits
        request = ReviewRequest(call=ToolCall(id="x", name="deploy", args={"service": "web"}),
                                args={"service": "web"}, context=context,
                                risk=gates["llm"].policy.evaluate(
                                    ToolCall(id="x", name="deploy", args={}),
                                    RunContext()).risk, reasons=())
        messages = build_messages(request)
        round_trip: list[float] = []
        for block in range(max(1, calls // 10)):
            order = ["rules", "llm"] if block % 2 == 0 else ["llm", "rules"]
            for name in order:
                for _ in range(10):
                    times[name].append(propose(name))
            for _ in range(10):
                started = time.perf_counter_ns()
                llm.complete(messages)
                round_trip.append((time.perf_counter_ns() - started) / 1000.0)
        expect(server.hits - warm == len(times["llm"]) + len(round_trip),
               "every LLM-reviewed call made exactly one request")
        service = statistics.median(server.service_s[warm:]) * 1e6
        for gate in gates.values():
            gate.close()
    rules, model = statistics.median(times["rules"]), statistics.median(times["llm"])
    print(f"\nLLM auto reviewer (openai {version('openai')}) against the scripted server "
          f"(answers at once), {len(times['llm'])} gated calls each, Gate.propose medians:")
    print(f"{'reviewer':<48} {'median':>11} {'added/call':>11}")
    print(f"{'RiskReviewer (built-in)':<48} {rules:>8.1f} µs {0.0:>8.1f} µs")
    print(f"{'ChatCompletionsReviewer (openai client, HTTP)':<48} {model:>8.1f} µs "
          f"{model - rules:>8.1f} µs")
    trip = statistics.median(round_trip)
    answer = '{"verdict": "approve", "reason": "deploying web to staging is the intent"}'
    repeat = 2000
    started = time.perf_counter_ns()
    for _ in range(repeat):
        prompt_hash(build_messages(request))
        parse_answer(answer)
    own = (time.perf_counter_ns() - started) / 1000.0 / repeat
    print(f"of which: one chat completion through the openai client alone {trip:.1f} µs (the "
          f"server's own handling {service:.1f} µs); signoff's prompt, prompt hash and strict "
          f"answer check {own:.1f} µs (timed alone). A real model's latency comes on top.")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a short smoke run")
    parser.add_argument("--runs", type=int, default=None, help="timed runs per agent")
    parser.add_argument("--turns", type=int, default=10, help="model turns per run")
    parser.add_argument("--reviewed", type=int, default=None,
                        help="gated calls per reviewer in the LLM reviewer section")
    args = parser.parse_args()
    runs = args.runs or (30 if args.quick else 300)
    work = Path(tempfile.mkdtemp(prefix="signoff-lcbench-"))
    cases = {  # name: (middleware kind, the tool each turn calls)
        "bare": ("bare", "lookup"), "signoff": ("signoff", "lookup"),
        "hitl": ("hitl", "lookup"), "hooks": ("hooks", "lookup"),
        "bare-path": ("bare", "read_file"),
        "signoff-path": ("signoff", "read_file"),
    }
    agents = {name: build(kind, args.turns, work, tool_name=tool)
              for name, (kind, tool) in cases.items()}
    for name in cases:  # warm up, and check each runs to the end
        for _ in range(5):
            one_run(agents[name][0])
    for name in ("signoff", "signoff-path"):
        gate = agents[name][1]
        expect(gate is not None and gate.store.list_requests() == [],
               "the non-gated call must not create approval requests")
    names = list(cases)
    times: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    gc.disable()
    try:
        for block in range(runs // 10 or 1):
            shift = block % len(names)
            for name in names[shift:] + names[:shift]:
                for _ in range(10):
                    times[name].append(one_run(agents[name][0], cpu[name]))
            gc.collect()
    finally:
        gc.enable()
    for name in ("signoff", "signoff-path"):
        gate = agents[name][1]
        gate.flush()
        audited = sum(1 for e in gate.store.audit_events() if e.kind == "call.allowed")
        expect(audited >= len(times[name]) * args.turns,
               f"every allowed call is audited ({audited} events)")

    def added(name: str, base: str, of: dict[str, list[float]] | None = None) -> float:
        data = times if of is None else of
        return (statistics.median(data[name]) - statistics.median(data[base])) / args.turns

    print(f"signoff {version('signoff')}, langchain {version('langchain')}, langgraph "
          f"{version('langgraph')}, Python {platform.python_version()}, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.1f}")
    print(f"{len(times['bare'])} runs per agent, {args.turns} model turns per run; medians per "
          "run, interleaved\n")
    print(f"{'agent':<48} {'run median':>11} {'run p99':>10} {'added/turn':>11} "
          f"{'CPU added/turn':>15}")
    rows = [("bare", "bare", "no middleware (lookup: a non-gated call)"),
            ("signoff", "bare", "SignoffMiddleware (SQLite), lookup"),
            ("hitl", "bare", "HumanInTheLoopMiddleware, lookup"),
            ("hooks", "bare", "pass-through wrap_model_call + wrap_tool_call"),
            ("bare-path", "bare-path", "no middleware, read_file (a path)"),
            ("signoff-path", "bare-path", "SignoffMiddleware, read_file (path guard)")]
    for name, base, label in rows:
        data = sorted(times[name])
        p99 = data[min(len(data) - 1, int(len(data) * 0.99))]
        print(f"{label:<48} {statistics.median(data) / 1000:>8.2f} ms {p99 / 1000:>7.2f} ms "
              f"{added(name, base):>8.1f} µs {added(name, base, cpu):>12.1f} µs")
    ours, theirs = added("signoff", "bare"), added("hitl", "bare")
    verdict = "met" if ours <= TARGET_US else "NOT met"
    ratio = f" ({ours / theirs:.2f}× of it)" if theirs > 0 else ""
    print(f"\nsignoff adds {ours:.1f} µs of wall time per turn on a non-gated call (target ≤ "
          f"{TARGET_US:.0f} µs: {verdict}); HumanInTheLoopMiddleware adds {theirs:.1f} µs"
          f"{ratio}. With the workspace path guard: {added('signoff-path', 'bare-path'):.1f} µs.")
    print(f"CPU time added per turn (all threads): signoff {added('signoff', 'bare', cpu):.1f} "
          f"µs, HumanInTheLoopMiddleware {added('hitl', 'bare', cpu):.1f} µs.")
    direct, traced = traceable_cost()
    print(f"A hook call wrapped as create_agent wraps it (LangSmith traceable, tracing off): "
          f"{traced:.1f} µs, against {direct:.2f} µs direct; two per turn: "
          f"{2 * (traced - direct):.1f} µs per turn before any middleware does anything.")
    floor = added("hooks", "bare")
    print(f"LangChain's own cost of the two hooks signoff uses (a middleware that only calls "
          f"on): {floor:.1f} µs per turn (CPU {added('hooks', 'bare', cpu):.1f} µs); signoff "
          f"above it: {ours - floor:.1f} µs (CPU {added('signoff', 'hooks', cpu):.1f} µs).")
    reviewer_latency(args.reviewed or (50 if args.quick else 500), work)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
