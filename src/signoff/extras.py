"""Optional parts and the extra that installs each: one typed line when one is missing.

``pip install signoff`` is the core: the policy, the kernel, the SQLite store and the
command line. The server, PostgreSQL, Slack, the agent adapters and the LLM reviewer
each need libraries of their own, installed with an extra (``signoff[server]``…;
docs/install.md). Code that reaches for one imports it inside ``needs(...)``, so a
missing library is ``missing_extra`` naming the extra to install, never a traceback.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from signoff.errors import ConfigurationError

EXTRAS = ("server", "postgres", "slack", "langchain", "deepagents", "mcp", "review",
          "claude-agent", "openai-agents", "pydantic-ai", "google-adk", "agent-framework")


def missing(extra: str, what: str, module: str | None) -> ConfigurationError:
    """The error for ``what`` when ``extra`` is not installed (``module``: the one missing)."""
    if extra not in EXTRAS:
        raise ValueError(f"no extra {extra!r}")
    because = f" ({module.split('.')[0]} is missing)" if module else ""
    return ConfigurationError(f"{what} needs the {extra} extra: pip install "
                              f"'signoff[{extra}]'{because}", code="missing_extra")


@contextmanager
def needs(extra: str, what: str) -> Iterator[None]:
    """Imports in this block come from ``extra``: one that fails is ``missing_extra``."""
    try:
        yield
    except ImportError as exc:
        raise missing(extra, what, exc.name) from None


def absent(extra: str, module: str, exc: ImportError) -> ModuleNotFoundError:
    """For a library module of ``extra`` imported without it: the ``ImportError`` Python
    code expects, saying which extra to install."""
    return ModuleNotFoundError(f"{module} needs the {extra} extra: pip install "
                               f"'signoff[{extra}]' ({exc.name} is missing)", name=exc.name)
