"""Latency ``signoff mcp-proxy`` adds to an allowed ``tools/call`` over stdio, beside calling
the same server directly and through a bare pass-through relay, in the same run.

Run from the repository root::

    .venv/bin/python bench/mcp_bench.py                 # 2,000 timed calls per system
    .venv/bin/python bench/mcp_bench.py --quick         # 300 (a smoke check)
    .venv/bin/python bench/mcp_bench.py --calls 5000 --batch 50
    .venv/bin/python bench/mcp_bench.py --profile       # then where the proxy's time goes

The client is the official ``mcp`` Python client (``mcp.Client`` over ``stdio_client``),
one session per system, all open at once in this process. The server is
``bench/_mcp_peer.py echo`` — the official SDK's low-level ``Server`` with one trivial
tool, ``echo`` — a fresh process per session. Each system is a real process chain:

* **direct**: client → echo server;
* **bare relay**: client → ``bench/_mcp_peer.py relay`` → echo server: the SDK's stdio
  transports on both sides (``stdio_server`` to the client, ``stdio_client`` to the
  server), every message forwarded as it comes, no gate — the floor of a stdio proxy on
  that SDK, which is what ``signoff mcp-proxy`` is built on;
* **pipe relay**: the same relay with asyncio pipes to the client instead of
  ``stdio_server`` (which moves every line read, write and flush to a worker thread):
  for information, what the hop costs without those thread hand-offs;
* **signoff mcp-proxy**: client → ``signoff mcp-proxy --policy P --db D -- echo server``
  (the console script next to ``sys.executable``), a policy that allows ``echo``
  (declared, ``unknown_tools = "allow"``, no hint that asks), SQLite in a temp dir.

With the official filesystem server installed (``tests/adapters/mcp/node/node_modules``, as the
proxy's tests install it) direct, bare relay and proxy are also measured against it on
``read_text_file`` of a small file, the proxy's workspace path guard included; without
it that part is skipped and the run says so.

After a warm-up the systems take turns in batches (``--batch`` calls each, the order
rotating every round), so drift on a shared machine lands on all of them. One sample is
one ``await client.call_tool(...)`` timed with ``perf_counter_ns`` (the client's garbage
collector paused during a batch); every result is checked after the clock stops (its
text, no ``isError``, nothing signoff wrote), and so are the proxies' audit events.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import math
import os
import platform
import pstats
import shutil
import sqlite3
import statistics
import sys
import tempfile
import textwrap
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters, types
from mcp.client.stdio import stdio_client

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import expect, version

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
EXE = Path(sys.executable).with_name("signoff")
PEER = HERE / "_mcp_peer.py"
FS_SERVER = (REPO / "tests" / "adapters" / "mcp" / "node" / "node_modules" / ".bin"
             / "mcp-server-filesystem")
TARGET_MS = 1.0  # added per allowed call at p50 over stdio (the issue's target)

POLICY = """\
[policy]
version = "mcp-bench-1"
unknown_tools = "allow"

[workspace]
name = "bench"
root = "{root}"

[tools.b__echo]

[tools.fs__read_text_file]
paths = ["path"]
"""


def nearest_rank(samples: Sequence[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


# ----------------------------------------------------------------------------------------------
# The systems: one client session each.
# ----------------------------------------------------------------------------------------------


@dataclass
class System:
    key: str
    label: str
    server: str  # which upstream: "echo" or "fs"
    kind: str  # "direct" | "relay" | "proxy"
    command: list[str]
    tool: str
    args: dict[str, Any]
    expect_text: str | None  # None: the text of the call's own argument (echo)
    samples: list[int] = field(default_factory=list)  # ns per call
    client: Any = None
    pid: int | None = None  # the process the client started
    cpu_start: float = 0.0
    cpu_end: float = 0.0
    rss_kb: int | None = None
    hwm_kb: int | None = None
    protocol: str = "?"

    def ms(self, q: float) -> float:
        if q == 0.5:
            return statistics.median(self.samples) / 1e6
        return nearest_rank(self.samples, q) / 1e6

    @property
    def cpu_per_call_us(self) -> float:
        return (self.cpu_end - self.cpu_start) / max(1, len(self.samples)) * 1e6


def echo_command() -> list[str]:
    return [sys.executable, str(PEER), "echo"]


def fs_command(root: Path) -> list[str]:
    return [str(FS_SERVER), str(root)]


def build_systems(tmp: Path, root: Path, policy: Path, with_fs: bool) -> list[System]:
    systems: list[System] = []
    servers = [("echo", echo_command(), "echo", "b")]
    if with_fs:
        servers.append(("fs", fs_command(root), "read_text_file", "fs"))
    for server, command, tool, name in servers:
        if server == "echo":
            args: dict[str, Any] = {"text": ""}  # filled per call
            text: str | None = None
        else:
            args = {"path": str(root / "hello.txt")}
            text = (root / "hello.txt").read_text()
        proxy = [str(EXE), "mcp-proxy", "--policy", str(policy), "--db", str(tmp / "signoff.db"),
                 "--name", name, "--no-elicit", "--", *command]
        relay = [sys.executable, str(PEER), "relay", "--", *command]
        suffix = "" if server == "echo" else " (fs)"
        systems += [
            System(f"{server}-direct", f"direct{suffix}", server, "direct", command, tool,
                   args, text),
            System(f"{server}-relay", f"bare relay{suffix}", server, "relay", relay, tool,
                   args, text),
        ]
        if server == "echo":
            pipes = [sys.executable, str(PEER), "pipe-relay", "--", *command]
            systems.append(System(f"{server}-pipes", "pipe relay (info)", server, "relay",
                                  pipes, tool, args, text))
        systems.append(System(f"{server}-proxy", f"signoff mcp-proxy{suffix}", server,
                              "proxy", proxy, tool, args, text))
    return systems


def children() -> dict[int, str]:
    """This process's child processes (Linux ``/proc``): pid → command line."""
    found: dict[int, str] = {}
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(stat[1]) == me:
                found[int(entry.name)] = (entry / "cmdline").read_bytes() \
                    .replace(b"\0", b" ").decode(errors="replace")
        except (OSError, IndexError, ValueError):
            continue
    return found


def cpu_seconds(pid: int | None) -> float:
    if pid is None:
        return 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def memory_kb(pid: int | None) -> tuple[int | None, int | None]:
    """VmRSS and VmHWM (peak RSS) of a process, in KiB."""
    if pid is None:
        return None, None
    values: dict[str, int] = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                values[key] = int(rest.split()[0])
    except (OSError, ValueError, IndexError):
        return None, None
    return values.get("VmRSS"), values.get("VmHWM")


@contextlib.asynccontextmanager
async def connect(system: System, cwd: Path, env: dict[str, str],
                  errlog: Any) -> AsyncIterator[Any]:
    before = set(children())
    params = StdioServerParameters(command=system.command[0], args=system.command[1:],
                                   env=env, cwd=str(cwd))
    async with Client(stdio_client(params, errlog=errlog)) as client:
        new = [pid for pid in children() if pid not in before]
        system.pid = new[0] if len(new) == 1 else None
        system.protocol = str(client.protocol_version)
        yield client


async def call(system: System, n: int) -> tuple[int, types.CallToolResult, str]:
    args = dict(system.args)
    if system.server == "echo":
        args["text"] = f"{system.key} {n}"
    clock = time.perf_counter_ns
    t0 = clock()
    result = await system.client.call_tool(system.tool, args)
    t1 = clock()
    want = args["text"] if system.expect_text is None else system.expect_text
    return t1 - t0, result, want


def check(system: System, result: types.CallToolResult, want: str) -> None:
    texts = [c.text for c in result.content if isinstance(c, types.TextContent)]
    expect(not result.is_error, f"{system.label}: the call came back as an error: {texts}")
    expect("signoff" not in (result.meta or {}), f"{system.label}: signoff answered the call "
           f"itself: {result.meta}")
    expect(texts == [want], f"{system.label}: expected {want!r}, got {texts!r}")


# ----------------------------------------------------------------------------------------------
# The run.
# ----------------------------------------------------------------------------------------------


async def measure(systems: list[System], *, cwd: Path, env: dict[str, str], calls: int,
                  batch: int, warmup: int, errlog: Any) -> None:
    async with contextlib.AsyncExitStack() as stack:
        for system in systems:
            system.client = await stack.enter_async_context(connect(system, cwd, env, errlog))
            await system.client.list_tools()  # what any client does first
        for system in systems:
            for n in range(warmup):
                _, result, want = await call(system, -1 - n)
                check(system, result, want)
        for system in systems:
            system.cpu_start = cpu_seconds(system.pid)
        rounds = math.ceil(calls / batch)
        done = 0
        for r in range(rounds):
            size = min(batch, calls - done)
            order = systems[r % len(systems):] + systems[:r % len(systems)]
            for system in order:
                results = []
                gc.collect()
                gc.disable()
                try:
                    for n in range(done, done + size):
                        elapsed, result, want = await call(system, n)
                        system.samples.append(elapsed)
                        results.append((result, want))
                finally:
                    gc.enable()
                for result, want in results:
                    check(system, result, want)
            done += size
        for system in systems:
            system.cpu_end = cpu_seconds(system.pid)
            system.rss_kb, system.hwm_kb = memory_kb(system.pid)


def audit_counts(db: Path) -> dict[str, int]:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        return dict(conn.execute("SELECT kind, count(*) FROM audit GROUP BY kind").fetchall())


async def profile_proxy(system: System, *, cwd: Path, env: dict[str, str], calls: int,
                        out: Path, errlog: Any) -> None:
    """The same proxy with every thread under cProfile (``_mcp_peer.py profile``)."""
    profiled = System(system.key + "-profiled", system.label + " (cProfile)", system.server,
                      system.kind, [sys.executable, str(PEER), "profile", str(out), "--",
                                    *system.command[1:]], system.tool, system.args,
                      system.expect_text)
    async with connect(profiled, cwd, env, errlog) as client:
        profiled.client = client
        await client.list_tools()
        for n in range(calls):
            _, result, want = await call(profiled, n)
            check(profiled, result, want)
    for _ in range(100):  # the proxy writes the profile as it exits
        if out.exists() and out.stat().st_size:
            break
        await anyio.sleep(0.1)


def run(args: argparse.Namespace) -> int:
    started = time.monotonic()
    with_fs = FS_SERVER.exists() and shutil.which("node") is not None
    print("signoff mcp-proxy: added latency per allowed tools/call over stdio")
    print(f"  python    {platform.python_version()} ({platform.python_implementation()}), "
          f"{platform.platform()}, {os.cpu_count()} CPUs")
    print(f"  packages  signoff {version('signoff')}, mcp {version('mcp')}, "
          f"anyio {version('anyio')}, pydantic {version('pydantic')}")
    print(f"  load      {_load()} (1/5/15 min) at the start")
    print(f"  plan      {args.warmup} warm-up calls, then {args.calls} timed calls per "
          f"system,\n            in batches of {args.batch}, the systems taking turns")
    with tempfile.TemporaryDirectory(prefix="signoff-mcp-bench-") as name:
        tmp = Path(name)
        root = tmp / "workspace"
        root.mkdir()
        (root / "hello.txt").write_text("hello from the bench\n")
        policy = tmp / "signoff.toml"
        policy.write_text(POLICY.format(root=root))
        env = dict(os.environ)
        systems = build_systems(tmp, root, policy, with_fs)
        log = tmp / "stderr.log"  # the servers' and proxies' stderr
        with open(log, "w") as errlog:
            try:
                anyio.run(lambda: measure(systems, cwd=tmp, env=env, calls=args.calls,
                                          batch=args.batch, warmup=args.warmup,
                                          errlog=errlog))
            except BaseException:
                print(f"the processes' stderr:\n{log.read_text(errors='replace')[-4000:]}")
                raise
            time.sleep(0.2)  # the proxies' last verdict batch
            counts = audit_counts(tmp / "signoff.db")
            per_proxy = args.calls + args.warmup
            proxies = sum(1 for s in systems if s.kind == "proxy")
            expect(counts.get("call.allowed", 0) >= per_proxy * proxies,
                   f"expected {per_proxy * proxies} call.allowed audit events, got {counts}")
            expect(counts.get("call.result", 0) >= per_proxy * proxies,
                   f"expected {per_proxy * proxies} call.result audit events, got {counts}")
            by_protocol: dict[str, list[str]] = {}
            for system in systems:
                by_protocol.setdefault(system.protocol, []).append(system.label)
            print(textwrap.fill("  protocol  " + "; ".join(
                f"{version_}: {', '.join(labels)}" for version_, labels in by_protocol.items()),
                width=100, subsequent_indent=" " * 12))
            print(f"  audit     {counts.get('call.allowed', 0)} call.allowed and "
                  f"{counts.get('call.result', 0)} call.result events written by the proxies")
            print()
            report(systems, with_fs)
            if args.profile:
                proxy = next(s for s in systems if s.key == "echo-proxy")
                out = tmp / "proxy.prof"
                anyio.run(lambda: profile_proxy(proxy, cwd=tmp, env=env, calls=args.calls,
                                                out=out, errlog=errlog))
                print_profile(out, args.calls)
    print(f"\nfinished in {time.monotonic() - started:.0f} s; load average now {_load()}")
    return 0


def report(systems: list[System], with_fs: bool) -> None:
    header = (f"{'system':<26} {'p50 ms':>7} {'p90 ms':>7} {'p99 ms':>7} {'mean ms':>7}  "
              f"{'+p50 ms':>8} {'+p99 ms':>8} {'÷direct p50':>11}  {'CPU µs/call':>11} "
              f"{'RSS MiB':>7} {'peak':>5}")
    print(header)
    print("-" * len(header))
    by_key = {s.key: s for s in systems}
    for system in systems:
        base = by_key[f"{system.server}-direct"]
        rss = f"{system.rss_kb / 1024:>7.1f}" if system.rss_kb else f"{'?':>7}"
        hwm = f"{system.hwm_kb / 1024:>5.1f}" if system.hwm_kb else f"{'?':>5}"
        added50 = system.ms(0.5) - base.ms(0.5)
        added99 = system.ms(0.99) - base.ms(0.99)
        print(f"{system.label:<26} {system.ms(0.5):>7.3f} {system.ms(0.9):>7.3f} "
              f"{system.ms(0.99):>7.3f} {statistics.fmean(system.samples) / 1e6:>7.3f}  "
              f"{added50:>+8.3f} {added99:>+8.3f} {system.ms(0.5) / base.ms(0.5):>10.2f}×  "
              f"{system.cpu_per_call_us:>11.0f} {rss} {hwm}")
    print()
    note("+p50/+p99 = the row's percentile − the direct row's (same server); ÷direct = the "
         "row's p50 ÷ direct's. CPU µs/call = user+system time of the process the client "
         "started (the proxy or relay, not the server behind it; for direct, the server), "
         "over the timed calls, ÷ calls. RSS = that process at the end of the run, peak = "
         "its VmHWM.")
    for server in ("echo", "fs") if with_fs else ("echo",):
        direct, relay, proxy = (by_key[f"{server}-{k}"] for k in ("direct", "relay", "proxy"))
        name = "echo server" if server == "echo" else "official filesystem server"
        print(f"\n{name + ':':<28} {'direct':>8} {'hop':>8} {'signoff':>8} {'added':>8}")
        for q, tag in ((0.5, "p50"), (0.99, "p99")):
            print(f"  {tag + ' ms':<26} {direct.ms(q):>8.3f} "
                  f"{relay.ms(q) - direct.ms(q):>+8.3f} {proxy.ms(q) - relay.ms(q):>+8.3f} "
                  f"{proxy.ms(q) - direct.ms(q):>+8.3f}")
        own = proxy.cpu_per_call_us - relay.cpu_per_call_us
        print(f"  CPU per call: proxy {proxy.cpu_per_call_us:.0f} µs, bare relay "
              f"{relay.cpu_per_call_us:.0f} µs: signoff's own {own:+.0f} µs")
        pipes = by_key.get(f"{server}-pipes")
        if pipes is not None:
            print(f"  the hop without stdio_server's thread hand-offs (pipe relay − direct): "
                  f"p50 {pipes.ms(0.5) - direct.ms(0.5):+.3f} ms,\n  p99 "
                  f"{pipes.ms(0.99) - direct.ms(0.99):+.3f} ms; CPU {pipes.cpu_per_call_us:.0f}"
                  f" µs per call against the bare relay's {relay.cpu_per_call_us:.0f}")
    print()
    note("hop = bare relay − direct: the extra process on the SDK's stdio transports, which "
         "any proxy built on them pays. signoff = proxy − bare relay: signoff's own cost (the "
         "relay's bookkeeping, the verdict, the audit of the call and its result). added = "
         "proxy − direct = hop + signoff.")
    if not with_fs:
        print(f"\nofficial filesystem server: SKIPPED ({FS_SERVER.relative_to(REPO)} is not "
              "installed; `npm ci` in tests/adapters/mcp/node, as the proxy's tests do, "
              "installs it)")
    echo_direct, echo_relay, echo_proxy = (by_key[f"echo-{k}"] for k in ("direct", "relay",
                                                                         "proxy"))
    added = echo_proxy.ms(0.5) - echo_direct.ms(0.5)
    hop = echo_relay.ms(0.5) - echo_direct.ms(0.5)
    verdict = "PASS" if added <= TARGET_MS else "MISS"
    print(f"\ntarget: ≤ {TARGET_MS:g} ms added per allowed call at p50 over stdio (echo "
          f"server): {added:.3f} ms added → {verdict}")
    if verdict == "MISS" and hop > TARGET_MS:
        note(f"The bare relay alone adds {hop:.3f} ms here: no proxy on the SDK's stdio "
             f"transports meets the target on this machine; signoff's own share is "
             f"{echo_proxy.ms(0.5) - echo_relay.ms(0.5):+.3f} ms.")


def note(text: str) -> None:
    print(textwrap.fill(text, width=100))


def print_profile(out: Path, calls: int) -> None:
    print()
    note(f"Where the proxy spends its time: every thread under cProfile, {calls} calls. "
         "Profiling slows Python down several times and the clock is wall time (a write to "
         "a pipe that wakes the reader may count its preemption): read the shares, not the "
         "µs. signoff's functions and the SDK's stdio transports run at least once per 100 "
         "calls, by cumulative time per call; a coroutine's time counts only while it runs, "
         "not while it awaits.")
    if not out.exists():
        print("  (no profile was written)")
        return
    stats: dict[tuple[str, int, str], tuple[int, int, float, float, Any]] = \
        pstats.Stats(str(out)).stats  # type: ignore[attr-defined]
    rows = []
    for (filename, line, func), (_cc, ncalls, _tottime, cumtime, _callers) in stats.items():
        ours = "/signoff/" in filename or "/mcp/server/stdio" in filename \
            or "/mcp/client/stdio" in filename
        if ours and ncalls >= calls / 100:  # per call, not once per process (start-up, loops)
            rows.append((cumtime, ncalls, f"{_short(filename)}:{line} {func}"))
    rows.sort(reverse=True)
    print(f"  {'µs/call':>8} {'runs/call':>9}  function")
    for cumtime, ncalls, where in rows[:22]:
        print(f"  {cumtime / calls * 1e6:>8.1f} {ncalls / calls:>9.1f}  {where}")


def _short(filename: str) -> str:
    for marker in ("site-packages/", "/src/", "/lib/python"):
        if marker in filename:
            return filename.split(marker, 1)[1]
    return filename


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, help="timed calls per system (default 2,000; "
                        "300 with --quick)")
    parser.add_argument("--batch", type=int, default=100,
                        help="calls per system per turn (default %(default)s)")
    parser.add_argument("--warmup", type=int, default=200,
                        help="untimed calls per system first (default %(default)s)")
    parser.add_argument("--quick", action="store_true", help="a short run (a smoke check)")
    parser.add_argument("--profile", action="store_true",
                        help="then run the proxy under cProfile and print where its time goes")
    args = parser.parse_args(argv)
    args.calls = args.calls or (300 if args.quick else 2000)
    if args.calls < 1 or args.batch < 1 or args.warmup < 0:
        parser.error("--calls and --batch must be at least 1, --warmup at least 0")
    expect(EXE.exists(), f"no signoff console script next to {sys.executable}")
    return run(args)


if __name__ == "__main__":
    raise SystemExit(main())
