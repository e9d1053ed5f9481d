"""The approval server: HTTP API, SSE, the web inbox (docs/server.md).

``create_app`` is imported when first asked for: reading the settings (what ``signoff
mcp-proxy`` does for the inbox's address) should not load the web framework.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from signoff.server.settings import ServerSettings, load_settings

if TYPE_CHECKING:
    from signoff.server.app import create_app

__all__ = ["ServerSettings", "create_app", "load_settings"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from signoff.server.app import create_app  # noqa: PLC0415

        return create_app
    raise AttributeError(f"module 'signoff.server' has no attribute {name!r}")
