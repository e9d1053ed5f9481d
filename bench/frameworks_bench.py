"""What each of signoff's four newer adapters adds to a non-gated tool call, beside the
framework's own approval hook answering "no approval needed", in the same run.

For the OpenAI Agents SDK (``gate_agent``), Pydantic AI (``Signoff``), Google ADK
(``SignoffPlugin``) and Microsoft Agent Framework (``SignoffMiddleware``): an agent run of
N model turns, each calling ``lookup`` once (a tool the policy allows), then a final
answer, timed bare, with the native hook (``bench/_agents.py`` says which, per
framework) and with signoff over an in-process ``Gate`` on SQLite (WAL,
synchronous=FULL). Runs are interleaved in short blocks over every framework and
variant; added time per call = the median, over rounds, of (the variant's run − the bare
agent's run in the same round) ÷ N. The
target (issue 47): signoff's added time ≤ max(0.5 × the native hook's, 200 µs).

    python bench/frameworks_bench.py             # 300 runs per agent, 10 calls each
    python bench/frameworks_bench.py --quick     # 20 runs per agent
    python bench/frameworks_bench.py --only pydantic-ai
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _agents import BUILDERS, Agents
from _common import expect, version

FLOOR_US = 200.0
VARIANTS = ("bare", "native", "signoff")
WORKER_CALLS = ("start_run", "context_for", "propose")  # what the adapters send to a thread

POLICY = """
[policy]
gated = ["execute"]
[tools.lookup]
[tools.execute]
shell = "command"
"""


def new_gate(work: Path, name: str) -> Any:
    from signoff import Gate, Policy, SqliteStore

    return Gate(Policy.from_toml(POLICY, source="bench.toml"), SqliteStore(work / f"{name}.db"),
                agent="bench")


def counted(gate: Any) -> dict[str, int]:
    """Count the gate calls the adapters make in a worker thread (each one a thread hop;
    ``propose_now`` is answered on the loop): the instance's methods, wrapped."""
    counts = dict.fromkeys(WORKER_CALLS, 0)

    def counting(name: str) -> Any:
        method = getattr(gate, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            counts[name] += 1
            return method(*args, **kwargs)
        return call

    for name in WORKER_CALLS:
        setattr(gate, name, counting(name))
    return counts


def timed(loop: asyncio.AbstractEventLoop, run: Any, wall: list[float],
          cpu: list[float]) -> None:
    """One run: its wall and process CPU microseconds (CPU: every thread, so a gate call
    sent to a worker counts, and the machine's other load does not)."""
    cpu_started = time.process_time_ns()
    started = time.perf_counter_ns()
    loop.run_until_complete(run())
    wall.append((time.perf_counter_ns() - started) / 1000.0)
    cpu.append((time.process_time_ns() - cpu_started) / 1000.0)


def floor(loop: asyncio.AbstractEventLoop, work: Path, calls: int) -> dict[str, float]:
    """Median µs of signoff's own steps for one allowed ``lookup`` call, timed alone: the
    gate's verdict in the caller's thread (``propose_now`` from remembered thread memory,
    ``propose`` on a thread remembered and on one it must read), and the worker-thread hop
    an event loop pays to send a call that may touch the store (``asyncio.to_thread``)."""
    from signoff import RunContext, ToolCall

    gate = new_gate(work, "floor")
    context = gate.start_run(RunContext(thread_id="floor", run_id="floor"))
    ids = iter(range(10**9))

    def call() -> Any:
        return ToolCall(id=f"f{next(ids)}", name="lookup", args={"query": "weather"})

    def unread() -> Any:  # a thread this process has not read: its memory is read first
        return RunContext(thread_id=f"new{next(ids)}", run_id="floor")

    def now() -> Any:
        found = gate.propose_now(call(), context)
        if found is None:  # remembered memory lasts 50 ms: read it again, untimed
            gate.propose(call(), context)
            raise LookupError
        return found

    steps: dict[str, Any] = {
        "Gate.propose_now (thread memory remembered)": now,
        "Gate.propose (thread memory remembered)": lambda: gate.propose(call(), context),
        "Gate.propose (a thread it must read)": lambda: gate.propose(call(), unread()),
        "asyncio.to_thread of a no-op, from a loop": lambda: loop.run_until_complete(
            asyncio.to_thread(int)),
        "the same loop running a no-op (harness)": lambda: loop.run_until_complete(
            asyncio.sleep(0)),
    }
    found: dict[str, list[float]] = {name: [] for name in steps}
    for round_ in range(calls // 10 + 5):
        for name, step in steps.items():
            for _ in range(10):
                started = time.perf_counter_ns()
                try:
                    step()
                except LookupError:
                    continue
                if round_ >= 5:  # the first rounds warm up
                    found[name].append((time.perf_counter_ns() - started) / 1000.0)
    gate.close()
    expect(all(found.values()), "every step was timed")
    return {name: statistics.median(times) for name, times in found.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a short smoke run")
    parser.add_argument("--only", choices=list(BUILDERS), action="append",
                        help="this framework only (repeatable)")
    parser.add_argument("--runs", type=int, default=None, help="timed runs per agent")
    parser.add_argument("--turns", type=int, default=10, help="model turns (calls) per run")
    args = parser.parse_args()
    runs = args.runs or (20 if args.quick else 300)
    names = args.only or list(BUILDERS)
    work = Path(tempfile.mkdtemp(prefix="signoff-fwbench-"))
    loop = asyncio.new_event_loop()
    try:
        return measure(loop, work, names, runs, args.turns, quick=args.quick)
    finally:
        loop.run_until_complete(loop.shutdown_default_executor())
        loop.close()


def measure(loop: asyncio.AbstractEventLoop, work: Path, names: list[str], runs: int,
            turns: int, *, quick: bool) -> int:
    load = os.getloadavg()[0]
    gates = {name: new_gate(work, name) for name in names}
    hops = {name: counted(gate) for name, gate in gates.items()}
    built: dict[str, Agents] = {name: BUILDERS[name](turns, gates[name]) for name in names}
    cases = [(name, variant) for name in names for variant in (*VARIANTS, "hooks")
             if variant in built[name].runs]
    wall: dict[tuple[str, str], list[float]] = {case: [] for case in cases}
    cpu: dict[tuple[str, str], list[float]] = {case: [] for case in cases}
    for name, variant in cases:  # warm up, and check each runs to its final answer
        for _ in range(5):
            loop.run_until_complete(built[name].runs[variant]())
    for name in names:
        built[name].asked[0] = 0
        hops[name].update(dict.fromkeys(WORKER_CALLS, 0))
    gc.collect()
    gc.disable()
    try:
        for round_ in range(runs):  # one run of each agent a round, the order rotating
            shift = round_ % len(cases)
            for name, variant in cases[shift:] + cases[:shift]:
                timed(loop, built[name].runs[variant], wall[name, variant],
                      cpu[name, variant])
            if round_ % 10 == 9:
                gc.collect()
    finally:
        gc.enable()
    done = len(wall[cases[0]])
    for name in names:
        gate = gates[name]
        gate.flush()
        audited = sum(1 for e in gate.store.audit_events() if e.kind == "call.allowed")
        expect(audited == (done + 5) * turns, f"every allowed {name} call is audited once "
               f"({audited} events)")
        expect(gate.store.list_requests() == [], "the allowed call creates no request")
        expect(built[name].asked[0] >= done * turns,
               f"the native hook of {name} was asked about every call "
               f"({built[name].asked[0]} times)")
        gate.close()

    def added(data: dict[tuple[str, str], list[float]], name: str, variant: str) -> float:
        # Paired by round (each round runs every case once, close together in time): the
        # machine's drift over the minutes of the bench falls out of each difference.
        return statistics.median(ours - bare for ours, bare in
                                 zip(data[name, variant], data[name, "bare"], strict=True)) / turns

    print(f"signoff {version('signoff')}, Python {platform.python_version()}, "
          f"{platform.platform()}, {os.cpu_count()} cores, load {load:.1f} at the start and "
          f"{os.getloadavg()[0]:.1f} at the end")
    print(f"{done} runs per agent, {turns} model turns each calling lookup (allowed, not "
          "gated) then a final answer; interleaved one run at a time; added = median of "
          "per-round differences from the bare run; "
          "signoff on SQLite (WAL, synchronous=FULL)\n")
    print(f"{'framework':<26} {'bare run':>9} {'native/call':>12} {'signoff/call':>13} "
          f"{'ratio':>6} {'target':>8}  result   {'CPU native':>10} {'CPU signoff':>11} "
          f"{'worker calls/run':>17}")
    missed = 0
    floors: list[str] = []
    for name in names:
        agents = built[name]
        native, ours = added(wall, name, "native"), added(wall, name, "signoff")
        target = max(0.5 * native, FLOOR_US)
        met = ours <= target
        missed += not met
        if "hooks" in agents.runs:
            hooks = added(wall, name, "hooks")
            floors.append(f"  {agents.framework}: its callbacks signoff uses, doing nothing: "
                          f"{hooks:.1f} µs per call; signoff beyond them: {ours - hooks:.1f} µs"
                          + (" (the floor alone is above the target)" if hooks > target
                             else ""))
        ratio = f"{ours / native:.2f}×" if native > 0 else "—"
        print(f"{agents.framework:<26} {statistics.median(wall[name, 'bare']) / 1000:>6.2f} ms "
              f"{native:>9.1f} µs {ours:>10.1f} µs {ratio:>6} {target:>5.0f} µs  "
              f"{'MET' if met else 'MISSED':<7} {added(cpu, name, 'native'):>7.1f} µs "
              f"{added(cpu, name, 'signoff'):>8.1f} µs {sum(hops[name].values()) / done:>17.2f}")
    if floors:
        print("\nthe framework's own charge for the hooks signoff uses (a floor under it):")
        print("\n".join(floors))
    print("\nnative hooks:")
    for name in names:
        agents = built[name]
        print(f"  {agents.framework} ({agents.dist} {version(agents.dist)}): {agents.native}")
    steps = floor(loop, work, 200 if quick else 2000)
    print("\nsignoff's steps for one allowed lookup call, timed alone (median):")
    for step, micros in steps.items():
        print(f"  {step:<44} {micros:>8.1f} µs")
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
