"""``signoff serve``: the approval server (API, web inbox, SSE) in the foreground."""

from __future__ import annotations

import argparse
from typing import Any

from signoff.cli_kernel import DEFAULT_DB, open_gate


def add_serve(commands: Any) -> None:
    serve = commands.add_parser(
        "serve", help="run the approval server: HTTP API and web inbox",
        description="Serve the HTTP API (/api/v1, /openapi.json), the web inbox, SSE, "
        "/healthz and /metrics. Binds 127.0.0.1:8765 by default. On first start with no "
        "users it creates 'admin' and prints a one-time login URL. Settings: flags, then "
        "SIGNOFF_HOST / SIGNOFF_PORT / SIGNOFF_PUBLIC_URL / SIGNOFF_DB, then [server] in "
        "signoff.toml.")
    serve.add_argument("--db", help=f"a SQLite file or postgresql:// URL (default: "
                       f"$SIGNOFF_DB or {DEFAULT_DB})")
    serve.add_argument("--policy", help="policy file (default: signoff.toml if present)")
    serve.add_argument("--host", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port (default 8765; 0 picks a free one)")
    serve.add_argument("--public-url", help="the URL approvers use, if not http://HOST:PORT")
    serve.add_argument("--log-level", default="warning",
                       choices=["critical", "error", "warning", "info", "debug"])
    serve.add_argument("--json", action="store_true",
                       help="print the start-up line (URL, login URL) as JSON")
    serve.set_defaults(handler=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    from signoff.server import create_app, load_settings  # noqa: PLC0415 (heavy imports)
    from signoff.server.running import serve  # noqa: PLC0415

    gate = open_gate(argparse.Namespace(policy=args.policy, db=args.db))
    policy_path = gate.policy.config.source if gate.policy.config.source != "<empty>" else None
    settings = load_settings(policy_path=policy_path, host=args.host, port=args.port,
                             public_url=args.public_url)
    try:
        serve(create_app(gate, settings), settings, gate=gate, log_level=args.log_level,
              as_json=args.json)
    finally:
        gate.store.close()
    return 0
