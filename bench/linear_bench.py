"""Pattern matching on hostile arguments: every rule's worst time with a 1 MiB argument.

Run from the repository root::

    .venv/bin/python bench/linear_bench.py           # the goal: every call judged in <= 50 ms
    .venv/bin/python bench/linear_bench.py --size 65536 --repeat 5

An agent writes the arguments a policy's globs and ``re:`` patterns are matched on, so a
pattern that backtracks can be made to take seconds (``**/build/**/*.log`` against 180 kB
took 10 s before RE2). For every rule that names argument patterns, in the starter policy
and each preset, the policy bench's 100 rules and a set of rules written to backtrack,
each argument the rule names is given texts of the largest size the gate accepts (1 MiB
canonical) built to hurt: runs of one character, of path segments, and of the pattern's
own literal text with its last character dropped (the shape that makes a backtracking
matcher retry every split). One call per shape goes through ``Policy.evaluate``; its CPU
time (``time.thread_time``, so a busy machine's waits are not counted) is the least of
``--repeat`` runs. Printed: each rule's worst shape and time, then the
worst overall against the goal. Exit 1 when a call is over the goal.
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from _common import expect, version
from policy_bench import make_workspace, policy_toml
from signoff import Policy, RunContext, ToolCall
from signoff.canonical import MAX_BYTES
from signoff.policy.spec import Rule
from signoff.policy.starter import PRESETS, starter_toml

GOAL_MS = 50.0

# Rules written to backtrack: nested stars, deep globs, alternations under repetition.
HOSTILE = """
[policy]
version = "hostile"
unknown_tools = "ask"
[tools.read_file]
[tools.fetch]
[tools.send_email]

[[rules]]
id = "build-logs"
effect = "allow"
tool = "read_file"
args = { path = "**/build/**/*.log" }

[[rules]]
id = "many-stars"
effect = "ask"
tool = "read_file"
args = { path = "*a*a*a*a*a*a*b" }

[[rules]]
id = "deep-stars"
effect = "deny"
tool = "read_file"
args = { path = "**/a/**/a/**/a/**/b" }

[[rules]]
id = "nested-repeat"
effect = "ask"
tool = "fetch"
args = { url = "re:(a+)+b" }

[[rules]]
id = "alternation-repeat"
effect = "ask"
tool = "fetch"
args = { url = "re:(a|aa)*c" }

[[rules]]
id = "recipients"
effect = "allow"
tool = "send_email"
args = { to = ["*@example.com", "*@*.example.com"], subject = "re:.*(x+x+)+y.*" }
"""


def policies(root: str) -> Iterator[tuple[str, Policy]]:
    for preset in PRESETS:
        yield f"starter:{preset}", Policy.from_toml(starter_toml(root, preset))
    yield "policy_bench", Policy.from_toml(policy_toml(root))
    yield "hostile", Policy.from_toml(HOSTILE)


def tool_for(rule: Rule) -> str:
    """A tool name the rule's tool glob matches (its literal characters, ``x`` for the rest)."""
    return "".join("x" if c in "*?" else c for c in rule.tool if c not in "[]!^")


def shapes(sources: Sequence[str], size: int) -> Iterator[tuple[str, str]]:
    yield "a-run", "a" * size
    yield "segments", "/a" * (size // 2)
    yield "dots", "a." * (size // 2)
    for source in sources:
        literal = "".join(c for c in source.removeprefix("re:") if c.isalnum() or c in "/.@_-")
        if len(literal) > 1:
            yield f"{source[:24]}-repeated", (literal * (size // len(literal) + 1))[:size]
            yield f"{source[:24]}-cut", (literal[:-1] * (size // len(literal) + 1))[:size]


def judge(policy: Policy, tool: str, args: dict[str, object], repeat: int) -> float:
    """The CPU time of one call (this thread's, so a busy machine's waits are not
    counted), the least of ``repeat``: the work is the same each time."""
    best = float("inf")
    for n in range(repeat):
        call = ToolCall(id=f"c{n}", name=tool, args=args)
        start = time.thread_time()
        policy.evaluate(call, RunContext(thread_id="bench"))
        best = min(best, time.thread_time() - start)
    return best * 1000


def run(size: int, repeat: int) -> float:
    print(f"# linear_bench: Python {platform.python_version()} on {platform.platform()}; "
          f"google-re2 {version('google-re2')}; argument {size} characters; "
          f"CPU time per call, least of {repeat} per shape, worst shape per rule")
    worst_overall = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        root = str(make_workspace(Path(tmp)))
        for label, policy in policies(root):
            judged = [r for r in policy.config.rules if r.args]
            expect(bool(judged), f"{label} has no rule with argument patterns")
            for rule in judged:
                tool = tool_for(rule)
                worst, shape_name = 0.0, ""
                for arg in rule.args:
                    for name, text in shapes([p.source for p in arg.patterns], size):
                        ms = judge(policy, tool, {arg.name: text}, repeat)
                        if ms > worst:
                            worst, shape_name = ms, f"{arg.name}: {name}"
                worst_overall = max(worst_overall, worst)
                flag = "" if worst <= GOAL_MS else "  OVER"
                print(f"{label:22} {rule.id:28} {worst:8.2f} ms  {shape_name}{flag}")
    print(f"# worst call: {worst_overall:.2f} ms (goal <= {GOAL_MS:.0f} ms)")
    return worst_overall


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--size", type=int, default=MAX_BYTES - 64,
                        help="characters per hostile argument (default: the 1 MiB limit)")
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args(argv)
    return 0 if run(options.size, options.repeat) <= GOAL_MS else 1


if __name__ == "__main__":
    sys.exit(main())
