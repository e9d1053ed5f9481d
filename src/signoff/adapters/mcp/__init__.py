"""``signoff mcp-proxy``: any MCP client, any MCP server, every ``tools/call`` gated.

* ``relay`` — the session between client and server, message by message;
* ``calls`` — ``tools/call`` through the gate (allow / deny / ask, run once);
* ``asking`` — an asked call's wait: the inbox, elicitation, progress;
* ``client_version`` — handshake-era and 2026-07-28 clients, and the latter's approval question;
* ``results`` — the tool results signoff writes itself;
* ``hosts`` — the HTTP listener's Host/Origin allow-list (DNS rebinding);
* ``proxy`` — sessions and transports (stdio, streamable HTTP), and the options;
* ``stopping`` — Ctrl-C and SIGTERM: waiting calls answered before the sessions end.

See docs/mcp.md.
"""

from signoff.adapters.mcp.asking import ApproverSpec, default_approver
from signoff.adapters.mcp.hosts import HostGuard
from signoff.adapters.mcp.proxy import (
    ProxyOptions,
    http_app,
    run_session,
    run_stdio,
    upstream_command,
    upstream_url,
)
from signoff.adapters.mcp.stopping import Stopping

__all__ = [
    "ApproverSpec",
    "HostGuard",
    "ProxyOptions",
    "Stopping",
    "default_approver",
    "http_app",
    "run_session",
    "run_stdio",
    "upstream_command",
    "upstream_url",
]
