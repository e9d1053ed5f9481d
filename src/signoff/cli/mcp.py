"""``signoff mcp-proxy``: put the gate between an MCP client and an MCP server.

    signoff mcp-proxy -- npx -y @modelcontextprotocol/server-filesystem /srv/ws
    signoff mcp-proxy --upstream http://127.0.0.1:3001/mcp
    signoff mcp-proxy --listen 127.0.0.1:8766 -- python -m mcp_server_git

stdout belongs to the MCP client (stdio mode): everything signoff has to say goes to
stderr.
"""

from __future__ import annotations

import argparse
import json
import logging
import socket
import sys
from typing import TYPE_CHECKING, Any

from signoff.cli.common import DEFAULT_DB, open_gate
from signoff.cli.stopping import stoppable
from signoff.errors import ConfigurationError
from signoff.extras import needs
from signoff.identity import check_name, parse_roles
from signoff.model import ReviewMode
from signoff.policy.modes import parse_interaction_mode

if TYPE_CHECKING:
    from signoff.adapters.mcp.stopping import Stopping


def add_mcp_proxy(commands: Any) -> None:
    proxy = commands.add_parser(
        "mcp-proxy", help="gate every tools/call between an MCP client and server",
        description="Speak MCP to a client (stdio by default, or streamable HTTP with "
        "--listen) and relay it to an upstream server (the command after --, started as a "
        "child process, or --upstream URL). Every tools/call goes through the policy: "
        "allowed calls are forwarded, denied ones return an error result, asked ones wait "
        "for a decision in the inbox (and, if the client supports it, an elicitation "
        "dialog), then run once. Everything else passes through untouched. See docs/mcp.md.")
    proxy.add_argument("--policy", help="policy file (default: signoff.toml)")
    proxy.add_argument("--db", help=f"a SQLite file or postgresql:// URL (default: "
                       f"$SIGNOFF_DB or {DEFAULT_DB}); the inbox of `signoff serve` on the "
                       "same database shows the requests")
    proxy.add_argument("--upstream", metavar="URL",
                       help="proxy a streamable-HTTP MCP server instead of a command")
    proxy.add_argument("--listen", metavar="HOST:PORT",
                       help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio")
    proxy.add_argument("--name", help="the server's name in the policy: its tools are "
                       "NAME__tool (default: [mcp] server, else the bare tool names)")
    proxy.add_argument("--interaction", default="interactive",
                       help="interactive (default) | scheduled | webhook | autonomous: an "
                       "unattended run never waits, its asks return BLOCKED results")
    proxy.add_argument("--mode", help="review mode of the session: manual | auto | full "
                       "(default: the thread's, else the policy's)")
    proxy.add_argument("--wait", type=float, default=300.0, metavar="SECONDS",
                       help="how long an asked call waits for a decision before it returns "
                       "an error result naming its request (default 300)")
    proxy.add_argument("--approver", metavar="NAME",
                       help="who an elicitation answer counts as (default: local:<your OS "
                       "user>, created on first use)")
    proxy.add_argument("--approver-roles", metavar="ROLES",
                       help="comma-separated roles of that approver (given when it is "
                       "created; must match if it exists)")
    proxy.add_argument("--no-elicit", action="store_true",
                       help="never ask through the client: decisions come from the inbox")
    proxy.add_argument("--inbox-url", help="the inbox's address, shown in waiting "
                       "messages (default: [server] public_url, else none)")
    proxy.add_argument("--cwd", help="working directory of the upstream command (default: "
                       "the policy's workspace root, else this directory)")
    proxy.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                       help="with --listen, also answer requests whose Host is NAME (or "
                       "NAME:PORT; repeatable). By default only the listen address and "
                       "localhost, with the port, are answered (DNS rebinding)")
    proxy.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                       help="with --listen, also answer browser requests from ORIGIN "
                       "(http(s)://HOST[:PORT]; repeatable)")
    proxy.add_argument("--json", action="store_true",
                       help="with --listen, print the start-up line as JSON (url)")
    proxy.add_argument("--log-level", default="warning",
                       choices=["critical", "error", "warning", "info", "debug"],
                       help="how much the proxy logs to standard error (default warning)")
    proxy.add_argument("command", nargs=argparse.REMAINDER,
                       help="-- COMMAND ARGS…: the upstream MCP server to start")
    proxy.set_defaults(handler=cmd_mcp_proxy)


def cmd_mcp_proxy(args: argparse.Namespace) -> int:
    """Proxy until the client leaves, or Ctrl-C or SIGTERM: calls waiting for a human
    answered, one goodbye line, exit 0 (docs/mcp.md)."""
    with stoppable("signoff mcp-proxy") as stop:  # from the start: imports take a while
        stop.signal = _mcp_proxy(args)
    return 0


def _mcp_proxy(args: argparse.Namespace) -> str | None:
    with needs("mcp", "signoff mcp-proxy"):
        import anyio  # noqa: PLC0415

        from signoff.adapters import mcp as proxy  # noqa: PLC0415
    logging.basicConfig(stream=sys.stderr, level=args.log_level.upper(),
                        format="signoff mcp-proxy: %(message)s")
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if bool(command) == bool(args.upstream):
        raise ConfigurationError("give the upstream server as `-- COMMAND ARGS…` or as "
                                 "--upstream URL (one of them)", code="no_upstream")
    if args.upstream and not args.upstream.startswith(("http://", "https://")):
        raise ConfigurationError("--upstream must be an http:// or https:// URL",
                                 code="invalid_upstream")
    if args.wait <= 0 or args.wait > 86400:
        raise ConfigurationError("--wait must be between 0 and 86400 seconds",
                                 code="invalid_wait")
    interaction = parse_interaction_mode(args.interaction)
    mode: ReviewMode | None = None
    if args.mode:
        try:
            mode = ReviewMode(args.mode.strip().lower())
        except ValueError:
            raise ConfigurationError(f"--mode must be manual, auto or full, not "
                                     f"{args.mode!r}", code="invalid_mode") from None
    if args.name is not None and args.name != "" and not _plain_name(args.name):
        raise ConfigurationError("--name must be letters, digits, _ - .", code="invalid_name")
    approver = None
    if not args.no_elicit:
        name = check_name(args.approver or proxy.default_approver())
        roles = parse_roles(args.approver_roles)
        approver = proxy.ApproverSpec(name=name, roles=roles,
                                      roles_given=args.approver_roles is not None)
    # Bound before the database is opened and anything announced: a busy port or a bad
    # host is one typed line (port_in_use, bad_host), exit 2 — never "serving MCP at …".
    sock = _listen(args.listen) if args.listen else None
    policy_path = args.policy or "signoff.toml"
    gate = open_gate(argparse.Namespace(policy=policy_path, db=args.db), proposes=True,
                     creates=True)  # the agent's side may start first (docs/mcp.md)
    gate.agent = "mcp-proxy"
    workspace = gate.config.workspace
    inbox = args.inbox_url or _public_url(policy_path)
    stopping = proxy.Stopping()  # Ctrl-C, SIGTERM: calls waiting for a human are answered
    options = proxy.ProxyOptions(server=args.name, interaction=interaction, review_mode=mode,
                                 wait_seconds=args.wait, approver=approver, inbox_url=inbox,
                                 stopping=stopping)
    upstream = proxy.upstream_url(args.upstream) if args.upstream else proxy.upstream_command(
        command[0], command[1:], cwd=args.cwd or (workspace.root if workspace else None))
    try:
        if sock is not None:
            host, port = args.listen.rpartition(":")[0], sock.getsockname()[1]
            guard = proxy.HostGuard.for_listen(host, port, extra_hosts=args.allow_host,
                                               extra_origins=args.allow_origin)
            return _serve_http(args, proxy.http_app(gate, options, upstream, guard=guard),
                               f"http://{host}:{port}/mcp", sock, stopping)
        anyio.run(proxy.run_stdio, gate, options, upstream)
        return stopping.signal
    finally:
        gate.close()


def _listen(listen: str) -> socket.socket:
    from signoff.server.listening import listen as bind  # noqa: PLC0415

    host, _, port = listen.rpartition(":")
    if not host or not port.isdigit() or int(port) > 65535:
        raise ConfigurationError("--listen must be HOST:PORT (PORT 0 picks a free one)",
                                 code="invalid_listen")
    return bind(host, int(port), hint="pass --listen HOST:N, or HOST:0 for a free one")


def _serve_http(args: argparse.Namespace, app: Any, url: str, sock: socket.socket,
                stopping: Stopping) -> str | None:
    """Announce ``url``, serve ``app`` on ``sock`` (already bound) until Ctrl-C or SIGTERM
    (``stopping`` is told first: calls waiting for a human are answered); the signal that
    stopped it."""
    import uvicorn  # noqa: PLC0415

    from signoff.server.graceful import GRACE, GracefulServer  # noqa: PLC0415

    server = GracefulServer(uvicorn.Config(app, log_level=args.log_level,
                                           timeout_graceful_shutdown=GRACE))
    server.on_stopping = lambda: stopping.stop(server.stopped_by or "SIGTERM")
    with server.stop_signals():  # before the announcement: from here a signal only asks
        if args.json:
            print(json.dumps({"url": url}), flush=True)
        else:
            print(f"signoff mcp-proxy: serving MCP at {url}", file=sys.stderr, flush=True)
        server.run(sockets=[sock])
    return server.stopped_by


def _plain_name(name: str) -> bool:
    return all(c.isalnum() or c in "_-." for c in name)


def _public_url(policy_path: str) -> str | None:
    try:
        from signoff.server import load_settings  # noqa: PLC0415

        return load_settings(policy_path=policy_path).base_url
    except Exception:  # a [server] table `signoff serve` would refuse: no link
        return None
