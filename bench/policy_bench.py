"""Policy evaluation latency: signoff against cedarpy and casbin, measured in the same run.

Run from the repository root::

    .venv/bin/python bench/policy_bench.py            # full run (~20k iterations per case)
    .venv/bin/python bench/policy_bench.py --quick    # ~2k iterations, for a smoke check

Every case is timed the same way: ``time.perf_counter_ns()`` around one call,
after a warm-up, with the garbage collector disabled during the timed loop
(collected before, re-enabled after). Reported: median and p99 (nearest rank)
in microseconds, and signoff's ratio to each peer (signoff ÷ peer; above 1 is
slower). See bench/README.md for what each case measures.
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import signoff
from _common import expect, version
from signoff import Effect, Policy, RunContext, ToolCall, Verdict
from signoff.shell import analysis as signoff_shell

# ----------------------------------------------------------------------------------------------
# The signoff policy: 100 rules over 30 tool names, a [workspace] and a few [tools].
# ----------------------------------------------------------------------------------------------

# The tool measured in case (a). It is known to the policy (rules name it) but has
# NO [tools] entry, so its `path` argument is not a declared path: no workspace
# resolution happens and case (a) measures rule lookup and matching alone.
CASE_A_TOOL = "view_file"

_HEAD = """\
[policy]
version = "bench-1"
default_review_mode = "manual"
ceiling = "full"
gated = ["execute", "run_in_background", "schedule_task"]
unknown_tools = "ask"

[workspace]
name = "bench-workspace"
root = "{root}"
outside = "approve"
allowlist = ["/etc/hostname"]

[tools.read_file]
paths = ["path"]
[tools.write_file]
paths = ["path"]
writes = true
[tools.edit_file]
paths = ["path"]
writes = true
[tools.delete_file]
paths = ["path"]
writes = true
[tools.move_file]
paths = ["src", "dst"]
writes = true
[tools.execute]
shell = "command"
[tools.run_in_background]
shell = "command"
"""

# Hand-written rules: the global ones, the shell rules on `execute`, and the rules
# that apply to the measured tools (view_file, read_file).
_RULES: list[dict[str, Any]] = [
    {"id": "deny-secrets", "effect": "deny", "tool": "*",
     "args": {"path": ["**/.ssh/**", "**/id_rsa*", "**/*.pem"]}},
    {"id": "env-files", "effect": "ask", "mandatory": True, "tool": "*_file",
     "args": {"path": "**/.env"}, "risk": "critical", "roles": ["security"], "approvals": 2,
     "expires": "30m"},
    {"id": "no-rm", "effect": "deny", "tool": "execute", "command": ["rm *", "shred *"]},
    {"id": "no-force-push", "effect": "deny", "tool": "execute",
     "command": ["git push --force *", "git push -f *"]},
    {"id": "no-sudo", "effect": "deny", "tool": "execute",
     "command": ["sudo *", "su *", "doas *"]},
    {"id": "no-disk-tools", "effect": "deny", "tool": "execute",
     "command": ["dd *", "mkfs *", "fdisk *"]},
    {"id": "net-shell", "effect": "ask", "tool": "execute",
     "command": ["curl *", "wget *", "ssh *", "scp *"]},
    {"id": "installs", "effect": "ask", "tool": "execute",
     "command": ["pip install *", "npm install *", "uv pip install *"]},
    {"id": "safe-shell", "effect": "allow", "tool": "execute",
     "command": ["ls *", "cat *", "echo *", "pwd", "head *", "tail *", "wc *", "grep *",
                 "git status", "git diff *", "git log *", "pytest *", "python -m pytest *"]},
    {"id": "bg-safe", "effect": "allow", "tool": "run_in_background",
     "command": ["pytest *", "npm run dev"]},
    {"id": "view-shadow", "effect": "deny", "tool": "view_file", "args": {"path": "/etc/shadow"}},
    {"id": "view-etc", "effect": "ask", "tool": "view_file", "args": {"path": "/etc/**"}},
    {"id": "view-project", "effect": "allow", "tool": "view_file",
     "args": {"path": ["src/**", "docs/**", "tests/**", "*.md"]}},
    {"id": "read-shadow", "effect": "deny", "tool": "read_file", "args": {"path": "/etc/shadow"}},
    {"id": "read-project", "effect": "allow", "tool": "read_file",
     "args": {"path": ["src/**", "docs/**", "tests/**", "*.md"]}},
    {"id": "mcp-push-main", "effect": "deny", "tool": "mcp__github__push",
     "args": {"branch": ["main", "master", "release/*"]}},
    {"id": "mcp-ask", "effect": "ask", "tool": "mcp__*"},
    {"id": "db-drop", "effect": "deny", "tool": "db_*",
     "args": {"sql": r"re:(?is).*\bdrop\s+(table|database)\b.*"}},
    {"id": "db-writes", "effect": "ask", "tool": "db_query",
     "args": {"sql": r"re:(?is)\s*(insert|update|delete|alter)\b.*"}},
    {"id": "db-select", "effect": "allow", "tool": "db_query",
     "args": {"sql": r"re:(?is)\s*select\b.*"}},
    {"id": "db-migrate", "effect": "ask", "mandatory": True, "tool": "db_migrate",
     "roles": ["dba"]},
    {"id": "deploy-prod", "effect": "ask", "mandatory": True, "tool": "deploy",
     "args": {"env": ["prod", "production"]}, "risk": "high", "roles": ["release"],
     "approvals": 2},
    {"id": "deploy-staging", "effect": "allow", "tool": "deploy", "args": {"env": "staging"}},
]

# Generated rules, three per tool (deny / ask / allow on one argument), to reach 100.
_GENERATED: list[tuple[str, str, str, str, str]] = [
    # tool, argument, deny glob, ask glob, allow glob
    ("write_file", "path", "/etc/**", "**/*.lock", "src/**"),
    ("edit_file", "path", "/usr/**", "**/pyproject.toml", "src/**"),
    ("delete_file", "path", "/**", "**/.git/**", "tmp/**"),
    ("move_file", "dst", "/etc/**", "**/.git/**", "src/**"),
    ("list_dir", "path", "/proc/**", "/home/**", "**"),
    ("grep", "path", "/proc/**", "/home/**", "**"),
    ("glob", "pattern", "/proc/**", "/home/**", "**"),
    ("web_fetch", "url", "re:https?://(localhost|127\\.0\\.0\\.1|169\\.254\\.).*",
     "http://*", "https://docs.*/**"),
    ("web_search", "query", "re:(?i).*password.*", "re:(?i).*internal.*", "**"),
    ("http_request", "url", "re:https?://169\\.254\\..*", "re:https?://.*",
     "https://api.example.com/**"),
    ("send_email", "to", "*@competitor.com", "*@*", "*@example.com"),
    ("post_slack", "channel", "#general", "#*-public", "#bots"),
    ("create_issue", "repo", "*/secret-*", "*/*", "example/*"),
    ("comment_issue", "repo", "*/secret-*", "*/*", "example/*"),
    ("merge_pr", "base", "release/*", "main", "feature/*"),
    ("s3_get", "bucket", "*-secrets", "*-prod", "*-public"),
    ("s3_put", "bucket", "*-secrets", "*-prod", "*-scratch"),
    ("calendar_create", "calendar", "ceo@*", "*@*", "team@example.com"),
    ("notebook_edit", "path", "/**", "**/prod/**", "notebooks/**"),
    ("mcp__github__create_pr", "base", "release/*", "main", "feature/*"),
    ("mcp__jira__create_ticket", "project", "SEC", "OPS", "DEV"),
    ("schedule_task", "cron", "* * * * *", "*/5 * * * *", "0 3 * * *"),
    ("deploy", "service", "billing", "auth", "docs"),
    ("db_query", "database", "prod_*", "analytics", "dev_*"),
    ("web_fetch", "method", "DELETE", "POST", "GET"),
    ("http_request", "method", "DELETE", "POST", "GET"),
    ("send_email", "subject", "re:(?i).*invoice.*", "re:(?i).*urgent.*", "**"),
]

RULE_COUNT = 100


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return "'" + value + "'" if "'" not in value else '"' + value.replace("\\", "\\\\") + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + " }"
    return str(value)


def policy_rules() -> list[dict[str, Any]]:
    rules = list(_RULES)
    for tool, arg, deny, ask, allow in _GENERATED:
        base = f"{tool}-{arg}".replace("_", "-")
        rules.append({"id": f"{base}-deny", "effect": "deny", "tool": tool, "args": {arg: deny}})
        rules.append({"id": f"{base}-ask", "effect": "ask", "tool": tool, "args": {arg: ask}})
        rules.append({"id": f"{base}-allow", "effect": "allow", "tool": tool,
                      "args": {arg: allow}})
        if len(rules) >= RULE_COUNT:
            break
    return rules[:RULE_COUNT]


def policy_toml(root: str) -> str:
    lines = [_HEAD.format(root=root)]
    for rule in policy_rules():
        lines.append("[[rules]]")
        lines.extend(f"{key} = {_toml_value(value)}" for key, value in rule.items())
        lines.append("")
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------
# The peers.
# ----------------------------------------------------------------------------------------------

CEDAR_POLICIES = """\
permit(principal == Agent::"coder", action == Action::"view_file", resource)
  when { context.path like "src/*" };
permit(principal == Agent::"coder", action == Action::"view_file", resource)
  when { context.path like "docs/*" };
forbid(principal, action, resource) when { context has path && context.path like "*.pem" };
forbid(principal, action, resource) when { context has path && context.path like "*/.ssh/*" };
permit(principal, action == Action::"read_file", resource) when { context.path like "src/*" };
permit(principal, action == Action::"web_search", resource);
forbid(principal, action == Action::"execute", resource)
  when { context has command && context.command like "rm *" };
permit(principal, action in [Action::"list_dir", Action::"grep"], resource);
forbid(principal == Agent::"untrusted", action, resource);
permit(principal, action == Action::"db_query", resource)
  when { context has sql && context.sql like "SELECT *" };
"""

CASBIN_MODEL = """\
[request_definition]
r = sub, obj, act

[policy_definition]
p = sub, obj, act, eft

[policy_effect]
e = some(where (p.eft == allow)) && !some(where (p.eft == deny))

[matchers]
m = r.sub == p.sub && keyMatch(r.obj, p.obj) && r.act == p.act
"""

CASBIN_POLICY = """\
p, coder, src/*, view_file, allow
p, coder, docs/*, view_file, allow
p, coder, /etc/*, view_file, deny
p, coder, src/*, read_file, allow
p, coder, /etc/*, read_file, deny
p, coder, *, web_search, allow
p, coder, *, list_dir, allow
p, coder, src/*, write_file, allow
p, untrusted, *, view_file, deny
p, coder, *, db_query, allow
"""

# ----------------------------------------------------------------------------------------------
# Timing.
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Result:
    label: str
    samples_ns: Sequence[int]

    @property
    def median_us(self) -> float:
        return statistics.median(self.samples_ns) / 1000

    @property
    def p99_us(self) -> float:
        ordered = sorted(self.samples_ns)
        return ordered[max(0, math.ceil(0.99 * len(ordered)) - 1)] / 1000


def measure(label: str, fn: Callable[[Any], object], inputs: Sequence[Any],
            warmup: Sequence[Any]) -> Result:
    """Time ``fn(x)`` for each x in ``inputs``, one perf_counter_ns pair around each call."""
    for item in warmup:
        fn(item)
    samples = [0] * len(inputs)
    clock = time.perf_counter_ns
    gc.collect()
    gc.disable()
    try:
        for i, item in enumerate(inputs):
            start = clock()
            fn(item)
            samples[i] = clock() - start
    finally:
        gc.enable()
    return Result(label, samples)


# ----------------------------------------------------------------------------------------------
# The run.
# ----------------------------------------------------------------------------------------------


def make_workspace(tmp: Path) -> Path:
    root = tmp / "workspace"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "pkg" / "mod.py").write_text("x = 1\n")
    (root / "docs").mkdir()
    return Path(os.path.realpath(root))


def run(iterations: int, warmup_count: int) -> None:
    import casbin
    import cedarpy

    print("signoff policy benchmark")
    print(f"  python    {sys.version.split()[0]} ({platform.python_implementation()}), "
          f"{platform.platform()}")
    print(f"  machine   {platform.machine()}, {os.cpu_count()} CPUs, "
          f"processor {platform.processor() or 'unknown'}")
    print(f"  packages  signoff {signoff.__version__}, cedarpy {version('cedarpy')}, "
          f"casbin {version('casbin')}, tree-sitter {version('tree-sitter')}, "
          f"tree-sitter-bash {version('tree-sitter-bash')}")
    print(f"  method    perf_counter_ns around each single call; {warmup_count} warm-up calls, "
          f"then {iterations} timed calls per case; gc disabled while timing")
    print()

    with tempfile.TemporaryDirectory(prefix="signoff-bench-") as tmpname:
        tmp = Path(tmpname)
        root = make_workspace(tmp)

        # ---- signoff ---------------------------------------------------------------------
        policy_file = tmp / "signoff.toml"
        policy_file.write_text(policy_toml(str(root)))
        policy = Policy.load(policy_file)
        config = policy.config
        tool_globs = {r.tool for r in config.rules}
        tool_names = {t for t in tool_globs if not any(c in t for c in "*?[")}
        expect(len(config.rules) == RULE_COUNT, f"{len(config.rules)} rules, not {RULE_COUNT}")
        expect(CASE_A_TOOL not in config.tools, f"{CASE_A_TOOL} must not be in [tools]")
        expect(config.workspace is not None, "the policy needs a [workspace]")
        context = RunContext(thread_id="bench-thread")
        evaluate = policy.evaluate
        total = warmup_count + iterations

        def ev(call: ToolCall) -> Verdict:
            return evaluate(call, context)

        # (a) a non-gated call, no declared path argument: rule lookup and matching only.
        a_args = {"path": "src/signoff/policy/engine.py"}
        a_calls = [ToolCall(id=f"a{i}", name=CASE_A_TOOL, args=a_args) for i in range(total)]
        verdict = ev(a_calls[0])
        expect(verdict.effect is Effect.ALLOW, f"case (a) verdict {verdict.effect}")
        a_decided = verdict.code

        # (b) a 3-segment shell command, every command distinct (uncached shell analysis).
        b_calls = [ToolCall(id=f"b{i}", name="execute",
                            args={"command": f"ls -la src/d{i} && git status | cat"})
                   for i in range(total)]
        b_probe_command = "ls -la src/probe && git status | cat"
        b_probe = ToolCall(id="b-probe", name="execute", args={"command": b_probe_command})
        verdict = ev(b_probe)
        expect(verdict.effect is Effect.ALLOW and verdict.code == "rule_allow",
                f"case (b) verdict {verdict.effect} {verdict.code}")
        expect(len(signoff_shell.analyze(b_probe_command).commands) == 3,
                "case (b) must be three simple commands")
        b_same = [ToolCall(id=f"bc{i}", name="execute",
                           args={"command": "ls -la src/pkg && git status | cat"})
                  for i in range(total)]

        # (c) a declared path argument, resolved by the path guard inside the workspace.
        c_calls = [ToolCall(id=f"c{i}", name="read_file", args={"path": "src/pkg/mod.py"})
                   for i in range(total)]
        verdict = ev(c_calls[0])
        expect(verdict.effect is Effect.ALLOW, f"case (c) verdict {verdict.effect}")
        assert policy.workspace is not None
        guard = policy.workspace.check("src/pkg/mod.py")
        expect(guard.inside and guard.resolved == str(root / "src/pkg/mod.py"),
                f"case (c) path guard said {guard.note}")

        # ---- cedarpy ---------------------------------------------------------------------
        cedar_policies = cedarpy.PolicySet.from_str(CEDAR_POLICIES)
        cedar_entities = cedarpy.Entities.from_json_str("[]")
        # Entity uids in the structured dict form: cedarpy's fastest request path (the
        # 'Agent::"coder"' string form is parsed by Cedar's parser on every call, ~50% slower).
        cedar_request = {
            "principal": {"type": "Agent", "id": "coder"},
            "action": {"type": "Action", "id": "view_file"},
            "resource": {"type": "File", "id": "src/signoff/policy/engine.py"},
            "context": {"path": "src/signoff/policy/engine.py"},
        }
        is_authorized = cedarpy.is_authorized
        is_authorized_batch = cedarpy.is_authorized_batch
        cedar_result = is_authorized(cedar_request, cedar_policies, cedar_entities)
        expect(cedar_result.allowed, f"cedar said {cedar_result.decision}")
        expect(len(cedar_policies) == 10, "cedarpy needs 10 policies")

        def cedar(request: dict[str, Any]) -> object:
            return is_authorized(request, cedar_policies, cedar_entities)

        batch = 100
        batch_requests = [cedar_request] * batch

        def cedar_batch(requests: list[dict[str, Any]]) -> object:
            return is_authorized_batch(requests, cedar_policies, cedar_entities)

        # ---- casbin ----------------------------------------------------------------------
        (tmp / "model.conf").write_text(CASBIN_MODEL)
        (tmp / "policy.csv").write_text(CASBIN_POLICY)
        enforcer = casbin.Enforcer(str(tmp / "model.conf"), str(tmp / "policy.csv"))
        enforce = enforcer.enforce
        casbin_request = ("coder", "src/signoff/policy/engine.py", "view_file")
        expect(enforce(*casbin_request) is True, "casbin must allow the request")
        expect(len(enforcer.get_policy()) == 10, "casbin needs 10 policy lines")

        def casbin_enforce(request: tuple[str, str, str]) -> object:
            return enforce(*request)

        def noop(item: object) -> object:
            return item

        # ---- measure (same harness for every case) ---------------------------------------
        def split(items: Sequence[Any]) -> tuple[Sequence[Any], Sequence[Any]]:
            return items[iterations:], items[:iterations]  # (warm-up, timed)

        results: dict[str, Result] = {}
        results["floor"] = measure("harness floor (no-op call)", noop, [None] * iterations,
                                   [None] * warmup_count)
        warm, timed = split(a_calls)
        results["a"] = measure("(a) non-gated call, 100 rules", ev, timed, warm)
        signoff_shell._analyze_cached.cache_clear()
        warm, timed = split(b_calls)
        results["b"] = measure("(b) 3-segment shell, uncached", ev, timed, warm)
        info_b = signoff_shell._analyze_cached.cache_info()
        expect(info_b.hits == 0, f"case (b) hit the shell cache: {info_b}")
        # What (b) is made of: the bash parse alone, and the whole analysis (uncached).
        parse_texts = [f"ls -la src/p{i} && git status | cat".encode() for i in range(total)]
        parser = signoff_shell._PARSER
        warm, timed = split(parse_texts)
        results["b_parse"] = measure("(b) part: tree-sitter parse alone", parser.parse,
                                     timed, warm)
        analyze_texts = [f"ls -la src/s{i} && git status | cat" for i in range(total)]
        warm, timed = split(analyze_texts)
        results["b_analysis"] = measure("(b) part: shell analysis (models included)",
                                        signoff_shell._analyze_cached.__wrapped__, timed, warm)
        warm, timed = split(b_same)
        results["b_cached"] = measure("(b') same command repeated (cached)", ev, timed, warm)
        warm, timed = split(c_calls)
        results["c"] = measure("(c) declared path in workspace", ev, timed, warm)
        results["cedar"] = measure("cedarpy is_authorized, 10 policies", cedar,
                                   [cedar_request] * iterations, [cedar_request] * warmup_count)
        batches = max(20, iterations // batch)
        cedar_batch_result = measure("cedarpy batch", cedar_batch, [batch_requests] * batches,
                                     [batch_requests] * max(2, warmup_count // batch))
        results["cedar_batch"] = Result(
            f"cedarpy batch of {batch}, per request",
            [s // batch for s in cedar_batch_result.samples_ns])
        results["casbin"] = measure("casbin enforce, 10 policy lines", casbin_enforce,
                                    [casbin_request] * iterations,
                                    [casbin_request] * warmup_count)

    report(results, a_decided, len(tool_names), len(tool_globs) - len(tool_names), iterations)


TARGETS = {"a": 10.0, "b": 150.0, "c": 30.0}
# cedarpy's median on the machine the targets were measured on (issue 2's closing run).
TARGET_CEDAR_US = 21.92


def report(results: dict[str, Result], a_decided: str, tool_count: int, glob_count: int,
           iterations: int) -> None:
    cedar = results["cedar"].median_us
    cedar_p99 = results["cedar"].p99_us
    casbin = results["casbin"].median_us
    casbin_p99 = results["casbin"].p99_us
    width = 46
    header = (f"{'case':<{width}} {'median µs':>10} {'p99 µs':>9} {'÷cedarpy':>9} "
              f"{'÷casbin':>8} {'target':>8}  met")
    print(header)
    print("-" * len(header))
    for key in ("a", "b", "b_parse", "b_analysis", "b_cached", "c"):
        r = results[key]
        target = TARGETS.get(key)
        target_text = f"≤{target:g}" if target is not None else ""
        met = ("yes" if r.median_us <= target else "NO") if target is not None else "(info)"
        print(f"{r.label:<{width}} {r.median_us:>10.2f} {r.p99_us:>9.2f} "
              f"{r.median_us / cedar:>8.2f}× {r.median_us / casbin:>7.2f}× {target_text:>8}  "
              f"{met}")
    for key in ("cedar", "cedar_batch", "casbin", "floor"):
        r = results[key]
        note = "" if key in ("cedar", "casbin") else "   (info)"
        print(f"{r.label:<{width}} {r.median_us:>10.2f} {r.p99_us:>9.2f}{note}")
    print()
    print("Ratios are signoff ÷ peer on the median (above 1× means signoff is slower); p99 "
          f"ratios: (a) {results['a'].p99_us / cedar_p99:.2f}× cedarpy, "
          f"{results['a'].p99_us / casbin_p99:.2f}× casbin.")
    print(f"(a) calls `{CASE_A_TOOL}`, a tool whose `path` argument is NOT declared in [tools]: "
          "no path resolution, so it isolates rule lookup and matching "
          f"({RULE_COUNT} rules over {tool_count} tool names and {glob_count} tool globs; "
          f"decided by: {a_decided}).")
    print("(b) every timed command is distinct (`ls -la src/d{i} && git status | cat`), so "
          "shell analysis is never served from its lru_cache; (b') repeats one command "
          "(cache hit) for information. Both include workspace checks of the path words.")
    print("(c) `read_file` with path `src/pkg/mod.py`, a declared path argument resolved "
          "component by component (lstat) in a real temp-dir workspace.")
    print("cedarpy: pre-parsed PolicySet and Entities handles, entity uids as dicts (its "
          "fastest form), one is_authorized call per request (the context dict is serialised "
          "per call, as the public API does); the batch row amortises one is_authorized_batch "
          "call over its requests and is not used in ratios.")
    print("casbin: Enforcer(model.conf, policy.csv) with keyMatch on the object; "
          "enforce(sub, obj, act).")
    print(f"Harness floor: the cost of the timing loop itself around a no-op call "
          f"(included in every figure, not subtracted). Iterations per case: {iterations}.")
    print()
    scale = TARGET_CEDAR_US / cedar
    print(f"The targets were set on a machine where this cedarpy call took "
          f"{TARGET_CEDAR_US} µs; here it takes {cedar:.2f} µs ({1 / scale:.2f}× as long). "
          f"Scaled to that machine, (b) is {results['b'].median_us * scale:.1f} µs "
          f"({results['b'].median_us / cedar:.2f}× cedarpy; the target was "
          f"{TARGETS['b'] / TARGET_CEDAR_US:.2f}× cedarpy there). Of (b), the bash parse is "
          f"{results['b_parse'].median_us:.1f} µs and the whole shell analysis "
          f"{results['b_analysis'].median_us:.1f} µs; the rest of the evaluation (rules, "
          f"workspace checks, risk, the verdict) is at least the cached case (b').")
    print()
    print("Targets (median per evaluation):")
    for key, label in (("a", "(a) non-gated call"), ("b", "(b) 3-segment shell, uncached"),
                       ("c", "(c) path in workspace")):
        value = results[key].median_us
        target = TARGETS[key]
        verdict = "met" if value <= target else "MISSED"
        print(f"  {label:<32} ≤ {target:>5g} µs: {value:8.2f} µs  {verdict}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="~2k iterations per case")
    parser.add_argument("--iterations", type=int, help="timed calls per case (default 20000)")
    parser.add_argument("--warmup", type=int, help="warm-up calls per case (default 1000)")
    args = parser.parse_args(argv)
    iterations = args.iterations or (2000 if args.quick else 20000)
    warmup = args.warmup if args.warmup is not None else (200 if args.quick else 1000)
    if iterations < 100:
        parser.error("--iterations must be at least 100 for a meaningful p99")
    run(iterations, warmup)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
