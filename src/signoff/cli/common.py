"""What every command shares: the database and the policy it opens, the approver's token,
the output (text, or JSON with ``--json``), the common flags.

The database comes from ``--db`` or ``SIGNOFF_DB`` (a file path for SQLite, a
``postgresql://`` URL for PostgreSQL; default ``signoff.db``). A decision's
approver is the identity holding ``--token-file`` / ``--token`` (or
``SIGNOFF_TOKEN``): there is no flag to name an approver. A token file keeps the
token out of shell history; ``--token`` puts it there.
"""

from __future__ import annotations

import argparse
import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from signoff.errors import ConfigurationError
from signoff.extras import needs
from signoff.kernel.gate import Gate
from signoff.policy import Policy, parse_policy
from signoff.store.base import Store
from signoff.store.sqlite import SqliteStore

if TYPE_CHECKING:
    from signoff import keys

DEFAULT_DB = "signoff.db"


def leaf(sub: Any, name: str, text: str, handler: Any, *, decides: bool = False,
         idempotent: bool = True) -> Any:
    """A subcommand with the common flags; one that ``decides`` also takes the token (and,
    if ``idempotent``, an idempotency key)."""
    parser = sub.add_parser(name, help=text, description=text[0].upper() + text[1:] + ".")
    common_args(parser)
    if decides:
        parser.add_argument("--token", help="your token (default: $SIGNOFF_TOKEN; "
                            "prefer --token-file: a command line stays in shell history)")
        parser.add_argument("--token-file", help="read your token from this file")
        if idempotent:
            parser.add_argument("--idempotency-key", help="make a retried decision safe")
    parser.set_defaults(handler=handler)
    return parser


def common_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", help=f"database: a file or postgresql:// URL (default: "
                        f"$SIGNOFF_DB or {DEFAULT_DB})")
    parser.add_argument("--policy", help="policy file (default: signoff.toml if present)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")


# Stores a command opened; ``close_opened`` closes them when the command ends, whether it
# succeeded or failed (a PostgreSQL pool left to the garbage collector stops its workers
# from one of them, which Python reports as an error).
_OPENED: list[Store] = []


# A URL missing its "://" (``postgresql//host/db``, ``postgres:host``) would otherwise be
# read as a file path in a directory named like the scheme.
_URL_TYPO = re.compile(r"(?i)^(postgresql|postgres|sqlite)(:|//)")


def refuse_url_typo(target: str) -> None:
    """``invalid_database_url`` for a URL missing its ``://``."""
    if "://" not in target and _URL_TYPO.match(target):
        raise ConfigurationError(
            f"--db {target}: neither a URL nor a file path: a PostgreSQL URL starts with "
            "postgresql:// (postgresql://USER@HOST:5432/DBNAME); a SQLite database is a file "
            "path", code="invalid_database_url")


def open_store(url: str | None, *, setup: bool = False, creates: bool = False) -> Store:
    """The store ``url`` names. Only a command that ``creates`` a database (``serve``,
    ``mcp-proxy``, ``db migrate``) makes a SQLite file that is not there; every other says
    ``database_missing``, so a mistyped ``--db`` never becomes a new, empty database."""
    target = url or os.environ.get("SIGNOFF_DB") or DEFAULT_DB
    store: Store
    scheme = target.split("://", 1)[0].lower() if "://" in target else None
    refuse_url_typo(target)
    if scheme in ("postgresql", "postgres"):
        with needs("postgres", "--db postgresql://…"):
            from signoff.store.postgres import PostgresStore  # noqa: PLC0415 (optional backend)

        store = PostgresStore(target, setup=setup)
    elif scheme in (None, "sqlite"):
        store = SqliteStore(target.split("://", 1)[1] if scheme else target, create=creates)
    else:
        raise ConfigurationError(
            f"--db {scheme}://… is not a database signoff stores in: give a SQLite file path "
            "(or sqlite:///path) or a postgresql:// URL", code="unsupported_database")
    _OPENED.append(store)
    return store


def close_opened() -> None:
    while _OPENED:
        _OPENED.pop().close()


def open_gate(args: argparse.Namespace, *, proposes: bool = False,
              creates: bool = False, signing_key: str | None = None,
              issuer: str = "signoff") -> Gate:
    """The gate a command works through. Only one that ``proposes`` calls (the server)
    builds the policy's auto reviewer: deciding, listing and recovering never review, so
    an approver needs no model key (``[review] api_key_env``). Only one that ``creates``
    (the server, the MCP proxy) makes a database that is not there (``open_store``). One
    given a ``signing_key`` path (``""``: the default) signs with it (``signing_key``), its
    receipts naming ``issuer``."""
    path = args.policy or ("signoff.toml" if Path("signoff.toml").exists() else None)
    reviewer = None
    if not proposes:
        from signoff.review import RiskReviewer  # noqa: PLC0415 (the hook starts without it)

        reviewer = RiskReviewer()
    policy = Policy.load(path, reviewer=reviewer) if path else \
        Policy(parse_policy("", source="<empty>"), reviewer=reviewer)
    key = None if signing_key is None else server_key(signing_key, policy)
    gate = Gate(policy, open_store(args.db, creates=creates), agent=None, signing_key=key,
                issuer=issuer)
    if signing_key is not None:
        gate.protect_files([key_path(signing_key)], "the server's signing key", secret=True)
    return gate


def key_path(given: str) -> str:
    """The signing key a server uses: ``given``, ``$SIGNOFF_SIGNING_KEY``, or the default
    beside the user's data (``signoff.keys.default_path``)."""
    from signoff import keys  # noqa: PLC0415

    return given or os.environ.get("SIGNOFF_SIGNING_KEY") or str(keys.default_path())


def server_key(given: str, policy: Policy) -> keys.SigningKey:
    """The server's signing key, made if missing; refused inside the workspace, where an
    agent's tools could read it and sign what no human approved."""
    path = key_path(given)
    workspace = policy.config.workspace
    if workspace is not None and inside_root(path, workspace.root):
        raise ConfigurationError(
            f"the signing key {path} is inside the workspace {workspace.root}: an agent could "
            f"read it; keep it outside (--signing-key PATH or SIGNOFF_SIGNING_KEY)",
            code="signing_key_in_workspace")
    from signoff import keys  # noqa: PLC0415

    return keys.load_or_create(path)


def inside_root(path: str, root: str) -> bool:
    """Whether ``path`` lies in ``root``, as written or with symlinks resolved (both ends)."""
    written, resolved = Path(os.path.abspath(path)), Path(os.path.realpath(path))
    roots = {Path(os.path.abspath(root)), Path(os.path.realpath(root))}
    return any(p.is_relative_to(r) for p in (written, resolved) for r in roots)


def emit(args: argparse.Namespace, data: Any, text: str) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False) if args.json else text)


def token_of(args: argparse.Namespace) -> str | None:
    if args.token_file:
        try:
            return Path(args.token_file).read_text("utf-8").strip()
        except OSError as exc:
            raise ConfigurationError(f"--token-file {args.token_file}: {exc.strerror}",
                                     code="token_file_unreadable") from None
    return args.token or os.environ.get("SIGNOFF_TOKEN")


