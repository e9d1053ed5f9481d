"""``signoff serve``: the approval server (API, web inbox, SSE) in the foreground."""

from __future__ import annotations

import argparse
import os
from typing import Any

from signoff.cli.boundary import warn_serve
from signoff.cli.common import DEFAULT_DB, open_gate
from signoff.cli.stopping import stoppable
from signoff.errors import PolicyError
from signoff.extras import needs


def add_serve(commands: Any) -> None:
    serve = commands.add_parser(
        "serve", help="run the approval server: HTTP API and web inbox",
        description="Serve the HTTP API (/api/v1, /openapi.json), the web inbox, SSE, "
        "/healthz and /metrics. Binds 127.0.0.1:8765 by default. On first start with no "
        "users it creates 'admin' and prints a one-time login link (not a token). Settings: "
        "flags, then SIGNOFF_HOST / SIGNOFF_PORT / SIGNOFF_PUBLIC_URL / SIGNOFF_DB, then "
        "[server] in signoff.toml.")
    serve.add_argument("--db", help=f"a SQLite file or postgresql:// URL (default: "
                       f"$SIGNOFF_DB or {DEFAULT_DB})")
    serve.add_argument("--policy", help="policy file (default: signoff.toml); the server "
                       "does not start without one it can read")
    serve.add_argument("--host", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port (default 8765; 0 picks a free one)")
    serve.add_argument("--public-url", help="the URL approvers use, if not http://HOST:PORT")
    serve.add_argument("--signing-key", help="the Ed25519 key receipts and audit checkpoints "
                       "are signed with; made there 0600 if missing (default: "
                       "$SIGNOFF_SIGNING_KEY, else ~/.local/share/signoff/signing-key.pem); "
                       "never inside the workspace")
    serve.add_argument("--issuer", help="the deployment its receipts name (iss); the same on "
                       "every server of one deployment (default: $SIGNOFF_ISSUER, else the "
                       "public URL, else 'signoff')")
    serve.add_argument("--log-level", default="warning",
                       choices=["critical", "error", "warning", "info", "debug"],
                       help="how much the server logs to standard error (default warning)")
    serve.add_argument("--json", action="store_true",
                       help="print the start-up line (URL, login link) as JSON")
    serve.set_defaults(handler=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    """Serve until Ctrl-C or SIGTERM: requests in flight answered, one goodbye line,
    exit 0 (docs/server.md)."""
    with stoppable("signoff serve") as stop:
        stop.signal = _serve(args)
    return 0


def _issuer(args: argparse.Namespace, public_url: str | None) -> str:
    """What receipts name as their issuer: ``--issuer``, ``$SIGNOFF_ISSUER``, the public URL
    (which every server behind one address shares), else ``signoff``."""
    return (args.issuer or os.environ.get("SIGNOFF_ISSUER")
            or (public_url.rstrip("/") if public_url else "signoff"))


def _serve(args: argparse.Namespace) -> str | None:
    from signoff.notify.config import load_notify  # noqa: PLC0415
    from signoff.server.listening import listen  # noqa: PLC0415

    with needs("server", "signoff serve"):
        from signoff.server import create_app, load_settings  # noqa: PLC0415 (heavy imports)
        from signoff.server.running import serve  # noqa: PLC0415

    # A server judges every agent's calls: it never starts on an empty policy by accident.
    policy_path = args.policy or "signoff.toml"
    # Settings first: a bad [server] table must not create or open a database.
    settings = load_settings(policy_path=policy_path, host=args.host, port=args.port,
                             public_url=args.public_url)
    notify = load_notify(policy_path)
    # Bound before the database is opened and anything announced: a busy port or a bad
    # host is one typed line (port_in_use, bad_host), exit 2.
    sock = listen(settings.host, settings.port)
    try:
        gate = open_gate(argparse.Namespace(policy=policy_path, db=args.db), proposes=True,
                         creates=True, signing_key=args.signing_key or "",
                         issuer=_issuer(args, settings.public_url))
    except PolicyError as exc:
        if exc.code != "policy_unreadable":
            raise
        cause = exc.__cause__
        why = cause.strerror if isinstance(cause, OSError) and cause.strerror else exc.message
        raise PolicyError(
            f"`signoff serve` does not start without a policy it can read ({why}); write one "
            f"with `signoff init {policy_path}` or pass --policy FILE", file=policy_path,
            code="policy_unreadable") from exc
    workspace = gate.config.workspace
    warn_serve(workspace.root if workspace else None, policy_path, args.db)
    try:
        from signoff.adapters.hooks import served  # noqa: PLC0415  (the hook route)

        app = create_app(gate, settings, notify=notify, routes=[served.router])
        return serve(app, settings, gate=gate, log_level=args.log_level, as_json=args.json,
                     sock=sock)
    finally:
        gate.close()  # the verdict log is flushed first, as the store's close would
