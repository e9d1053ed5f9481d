"""What signoff's hook adds to each allowed tool call of a coding agent (Claude Code).

Run from the repository root::

    .venv/bin/python bench/hook_bench.py            # 40 spawns per case, 4 agent runs each way
    .venv/bin/python bench/hook_bench.py --quick    # 10 spawns, 1 agent run each way

Two measurements, in the same run, interleaved:

1. **The hook process**, spawned once per event as Claude Code spawns it (``sh -c
   COMMAND``, the event as JSON on stdin, the answer on stdout), for an allowed call — a
   ``Read`` inside the workspace, and a read-only ``Bash`` command (the shell analyser
   judges it): ``signoff hook claude-code`` in-process on a SQLite file, its
   ``PostToolUse`` twin, and the resident mode — the standard-library client that
   ``signoff hook install claude-code --url`` writes, against a running ``signoff
   serve`` — and the whole CLI with ``--url``. Beside them, the floors on this machine: a
   bare ``python -S -I``, a Python that parses the event, and one that also imports what
   judging a call in-process needs (the gate, the policy, the SQLite store).
2. **The real Claude Code** (the tests' pinned CLI, against the tests' scripted Messages
   API on loopback) running the same ``N`` allowed reads with no hook, with no-op hooks
   (``cat >/dev/null``: what Claude Code itself spends running any hook, the floor), and
   with signoff's hooks as ``signoff hook install claude-code`` writes them, in-process
   and resident: ``(with − without) / N`` is what the hooks add per call, both hooks and
   their process starts included.

Targets (the issue's): ≤ 150 ms p50 in-process, ≤ 30 ms p50 resident.
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import json
import os
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _common import expect

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
SIGNOFF = [PYTHON, "-m", "signoff.cli"]
TARGET_IN_PROCESS_MS = 150.0
TARGET_RESIDENT_MS = 30.0


def run_signoff(*argv: str, env: dict[str, str]) -> str:
    done = subprocess.run([*SIGNOFF, *argv], capture_output=True, text=True, env=env,
                          timeout=120, check=False)
    expect(done.returncode == 0, f"signoff {' '.join(argv)}: {done.stderr[-500:]}")
    return done.stdout


def spawn_ms(command: str, stdin: bytes, env: dict[str, str],
             check: Callable[[bytes], bool]) -> float:
    """One hook spawn as Claude Code makes it: ``sh -c command``, stdin in, stdout out."""
    started = time.perf_counter_ns()
    done = subprocess.run(["/bin/sh", "-c", command], input=stdin, capture_output=True,
                          env=env, timeout=60, check=False)
    elapsed = (time.perf_counter_ns() - started) / 1e6
    expect(done.returncode == 0 and check(done.stdout),
           f"{command!r} answered {done.returncode} {done.stdout[:300]!r} "
           f"{done.stderr[-300:]!r}")
    return elapsed


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def allowed(out: bytes) -> bool:
    return json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "allow"


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


class World:
    """A workspace, its policy (the claude-code preset), a database and a token."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.ws = tmp / "project"
        self.ws.mkdir()
        (self.ws / "notes.txt").write_text("remember the milk\n")
        self.policy = tmp / "signoff.toml"
        self.db = tmp / "signoff.db"
        self.env = {**os.environ, "XDG_STATE_HOME": str(tmp / "state"),
                    "HOME": str(tmp / "home")}
        (tmp / "home").mkdir()
        run_signoff("init", str(self.policy), "--root", str(self.ws), "--preset",
                    "claude-code", env=self.env)
        run_signoff("db", "migrate", "--db", str(self.db), env=self.env)
        added = json.loads(run_signoff("users", "add", "hook-agent", "--kind", "agent",
                                       "--db", str(self.db), "--json", env=self.env))
        self.token = tmp / "agent.token"
        self.token.write_text(added["token"])
        self.server: subprocess.Popen[bytes] | None = None
        self.url = ""

    def serve(self) -> None:
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.server = subprocess.Popen(
            [*SIGNOFF, "serve", "--db", str(self.db), "--policy", str(self.policy),
             "--port", str(port)], env=self.env, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.1)
        raise SystemExit("benchmark setup is wrong: signoff serve did not start")

    def stop(self) -> None:
        if self.server is not None:
            os.killpg(self.server.pid, signal.SIGTERM)
            self.server.wait(timeout=30)

    def event(self, name: str = "PreToolUse", tool: str = "Read") -> bytes:
        """An allowed call: a read inside the workspace, or a read-only command in it."""
        args = {"file_path": str(self.ws / "notes.txt")} if tool == "Read" \
            else {"command": "ls -la && git status"}
        event: dict[str, object] = {
            "session_id": "bench-session", "cwd": str(self.ws), "hook_event_name": name,
            "tool_name": tool, "tool_input": args, "tool_use_id": "toolu_bench"}
        if name == "PostToolUse":
            event["tool_response"] = {"type": "text", "file": {"content": "remember"}}
        return json.dumps(event).encode()


def installed(world: World, *flags: str) -> dict[str, str]:
    """The hook commands ``signoff hook install claude-code FLAGS`` writes, by event."""
    project = Path(tempfile.mkdtemp(dir=world.tmp))
    run_signoff("hook", "install", "claude-code", "--dir", str(project), *flags, env=world.env)
    settings = json.loads((project / ".claude" / "settings.json").read_text("utf-8"))
    return {name: entries[0]["hooks"][0]["command"]
            for name, entries in settings["hooks"].items()}


def hook_cases(world: World) -> dict[str, tuple[str, bytes, Callable[[bytes], bool]]]:
    signoff = " ".join(shlex.quote(part) for part in SIGNOFF)
    local = f"{signoff} hook claude-code --db {world.db} --policy {world.policy}"
    remote = f"{signoff} hook claude-code --url {world.url} --token-file {world.token}"
    resident = installed(world, "--url", world.url, "--token-file", str(world.token))
    read_only = f"{PYTHON} -c 'import json, sys; json.load(sys.stdin); print(1)'"
    bare = f"{PYTHON} -S -I -c 'print(1)'"
    imports = (f"{PYTHON} -c 'import json, sys; json.load(sys.stdin); "
               "import signoff.kernel.gate, signoff.policy, signoff.store.sqlite; print(1)'")
    read, bash = world.event(), world.event(tool="Bash")
    one = lambda out: out == b"1\n"  # noqa: E731
    return {
        "floor: Python -S -I starts": (bare, read, one),
        "floor: Python parses the event": (read_only, read, one),
        "floor: + imports gate, policy, store": (imports, read, one),
        "in-process PreToolUse, Read": (local + " || exit 2", read, allowed),
        "in-process PreToolUse, Bash": (local + " || exit 2", bash, allowed),
        "in-process PostToolUse": (local + " --event post", world.event("PostToolUse"),
                                   lambda out: out == b""),
        "resident (installed) PreToolUse, Read": (resident["PreToolUse"], read, allowed),
        "resident (installed) PreToolUse, Bash": (resident["PreToolUse"], bash, allowed),
        "resident (installed) PostToolUse": (resident["PostToolUse"],
                                             world.event("PostToolUse"),
                                             lambda out: out == b""),
        "signoff hook --url (whole CLI), Read": (remote + " || exit 2", read, allowed),
    }


def measure_hooks(world: World, spawns: int) -> dict[str, list[float]]:
    cases = hook_cases(world)
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for command, stdin, check in cases.values():  # warm the page cache
        spawn_ms(command, stdin, world.env, check)
    for _ in range(spawns):
        for name, (command, stdin, check) in cases.items():
            samples[name].append(spawn_ms(command, stdin, world.env, check))
    return samples


def measure_agent(world: World, runs: int, calls: int) -> dict[str, list[float]] | str:
    """Claude Code's wall time for ``calls`` allowed reads: with no hook, with the hooks
    as ``signoff hook install claude-code`` writes them on the database (in-process), and
    with ``--url`` (resident)."""
    sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "adapters" / "claude_code")]
    try:
        from claude_rig import Project, claude_bin
        from messages_api import MessagesServer, ToolCall

        claude_bin()
    except BaseException as exc:  # pytest.skip raises outside pytest: say why, go on
        return f"Claude Code is not installed here ({type(exc).__name__}: {exc})"
    # Inside the policy's workspace root: a read there is allowed without asking.
    projects = {name: Project(world.ws / name)
                for name in ("bare", "noop", "local", "resident")}
    for project in projects.values():
        (project.dir / "notes.txt").write_text("remember the milk\n")
    projects["bare"].settings({})
    # The floor of any hook: Claude Code starting a command that reads the event and
    # answers nothing, before and after each call.
    noop = [{"matcher": "*", "hooks": [{"type": "command", "command": "cat >/dev/null",
                                         "timeout": 60}]}]
    projects["noop"].settings({"hooks": {"PreToolUse": noop, "PostToolUse": noop}})
    run_signoff("hook", "install", "claude-code", "--project", "--dir",
                str(projects["local"].dir), "--db", str(world.db), "--policy",
                str(world.policy), "--signoff", " ".join(SIGNOFF), env=world.env)
    run_signoff("hook", "install", "claude-code", "--project", "--dir",
                str(projects["resident"].dir), "--url", world.url, "--token-file",
                str(world.token), env=world.env)
    walls: dict[str, list[float]] = {name: [] for name in AGENT_CASES}
    for _ in range(runs):
        for (label, project) in zip(AGENT_CASES, projects.values(), strict=True):
            script = [ToolCall("Read", {"file_path": str(project.dir / "notes.txt")})] * calls
            with MessagesServer(script) as server:
                started = time.perf_counter_ns()
                done = project.run(server, "Read the notes.",
                                   env={"XDG_STATE_HOME": world.env["XDG_STATE_HOME"]})
                walls[label].append((time.perf_counter_ns() - started) / 1e6)
                expect(done.returncode == 0 and len(server.script.turns()) == calls + 1,
                       f"Claude Code run: {done.stderr[-500:]}")
                expect(server.script.escapes() == [], "the CLI tried to leave loopback")
    return walls


AGENT_CASES = ("no hook", "no-op hooks (floor)", "in-process hooks", "resident hooks")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run")
    parser.add_argument("--spawns", type=int, help="hook spawns per case (default 40)")
    parser.add_argument("--runs", type=int, help="Claude Code runs each way (default 4)")
    parser.add_argument("--calls", type=int, default=8, help="allowed reads per run")
    parser.add_argument("--no-agent", action="store_true", help="skip the Claude Code runs")
    args = parser.parse_args()
    spawns = args.spawns or (10 if args.quick else 40)
    runs = args.runs or (1 if args.quick else 4)
    # As pip install does: every hook start then reads compiled bytecode, whatever
    # PYTHONDONTWRITEBYTECODE says (a spawn that compiles signoff measures the compiler).
    spec = importlib.util.find_spec("signoff")
    expect(spec is not None and bool(spec.submodule_search_locations), "signoff is not installed")
    assert spec is not None and spec.submodule_search_locations is not None
    compileall.compile_dir(spec.submodule_search_locations[0], quiet=1)
    with tempfile.TemporaryDirectory(prefix="signoff-hook-bench-") as tmp:
        world = World(Path(tmp))
        try:
            world.serve()
            samples = measure_hooks(world, spawns)
            agent = "skipped (--no-agent)" if args.no_agent else \
                measure_agent(world, runs, args.calls)
        finally:
            world.stop()
    print(f"Hook processes ({spawns} spawns each, interleaved; sh -c COMMAND, event on stdin):")
    print(f"  {'case':<42} {'p50 ms':>8} {'p90 ms':>8}")
    for name, values in samples.items():
        print(f"  {name:<42} {statistics.median(values):8.1f} {percentile(values, 0.9):8.1f}")
    p50 = {name: statistics.median(values) for name, values in samples.items()}
    if isinstance(agent, str):
        print(f"\nClaude Code: {agent}")
    else:
        print(f"\nClaude Code, {args.calls} allowed reads per run, {runs} runs each way "
              "(median wall time; PreToolUse + PostToolUse hooks, as installed):")
        bare = statistics.median(agent["no hook"])
        for label, walls in agent.items():
            added = (statistics.median(walls) - bare) / args.calls
            print(f"  {label:<20} {statistics.median(walls):8.0f} ms"
                  + ("" if label == "no hook" else f"  → {added:+.0f} ms per call (both hooks)"))
    floor = p50["floor: + imports gate, policy, store"]
    print("\nTargets (p50 of the PreToolUse hook):")
    for name, target in (("in-process PreToolUse, Read", TARGET_IN_PROCESS_MS),
                         ("in-process PreToolUse, Bash", TARGET_IN_PROCESS_MS),
                         ("resident (installed) PreToolUse, Read", TARGET_RESIDENT_MS),
                         ("resident (installed) PreToolUse, Bash", TARGET_RESIDENT_MS)):
        verdict = "met" if p50[name] <= target else "MISSED"
        print(f"  {name:<42} {p50[name]:6.1f} ms (target ≤ {target:g}): {verdict}")
    print(f"  floors: Python -S -I starts in {p50['floor: Python -S -I starts']:.1f} ms, "
          f"parses the event in {p50['floor: Python parses the event']:.1f} ms, and with "
          f"the gate, policy and store imported in {floor:.1f} ms")
    read = p50["in-process PreToolUse, Read"]
    if floor > TARGET_IN_PROCESS_MS:
        print(f"  in-process: its floor ({floor:.1f} ms: start + importing the gate, the "
              f"policy and the store) is above the {TARGET_IN_PROCESS_MS:g} ms target; the "
              f"hook judges a Read {read - floor:+.1f} ms from that floor. The resident "
              "hook is the fast mode.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
