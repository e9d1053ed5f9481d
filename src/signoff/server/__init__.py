"""The approval server: HTTP API, SSE, the web inbox (DESIGN §6)."""

from signoff.server.app import create_app
from signoff.server.settings import ServerSettings, load_settings

__all__ = ["ServerSettings", "create_app", "load_settings"]
