"""``signoff keys``: the keys receipts are signed with — list them, rotate this server's.

``rotate`` makes a new key, retires the old one and publishes the new one in one
transaction through the gate (a ``key.rotated`` event), then puts the new key in the old
one's file. The old private key is gone afterwards (the file is replaced): a retired key
stays in the JWKS so that what it signed still verifies, so its private half must sign
nothing again. A server still running with the old key is refused at its next start
(``signing_key_retired``) unless given the new file: restart it after a rotation.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import os
from pathlib import Path
from typing import Any

from signoff import keys
from signoff.cli.common import emit, key_path, leaf, open_gate
from signoff.errors import ConfigurationError

KEY_HELP = ("the server's key file (default: $SIGNOFF_SIGNING_KEY, else "
            "~/.local/share/signoff/signing-key.pem)")


def add_keys(commands: Any) -> None:
    parser = commands.add_parser(
        "keys", help="the keys receipts are signed with: list, rotate",
        description="List the published signing keys (the JWKS) or rotate this server's.")
    sub = parser.add_subparsers(title="subcommands", metavar="SUBCOMMAND")
    leaf(sub, "list", "list every published signing key, retired ones included", cmd_list)
    rotate = leaf(sub, "rotate", "retire this server's signing key and publish a new one "
                  "(old receipts stay verifiable; the old private key is removed)", cmd_rotate)
    rotate.add_argument("--signing-key", help=KEY_HELP)


def cmd_list(args: argparse.Namespace) -> int:
    published = open_gate(args).published_keys()
    rows = [{"kid": k["kid"], "created_at": k["created_at"], "retired_at": k["retired_at"]}
            for k in published]
    lines = [f"{r['kid']}  published {_when(r['created_at'])}"
             + (f"  retired {_when(r['retired_at'])}" if r["retired_at"] else "  signing")
             for r in rows]
    emit(args, {"keys": rows}, "\n".join(lines) or "no signing key published")
    return 0


def cmd_rotate(args: argparse.Namespace) -> int:
    from signoff.kernel.accounts import os_actor  # noqa: PLC0415 (one command's)

    path = Path(key_path(args.signing_key or ""))
    if not path.exists():
        raise ConfigurationError(f"no signing key at {path}: nothing to rotate (signoff serve "
                                 "makes one on its first start)", code="signing_key_missing")
    gate = open_gate(args, signing_key=str(path))  # refused in the workspace, or exposed
    successor = keys.SigningKey.generate()
    staged = path.with_name(f"{path.name}.next")
    keys.write(staged, successor)  # on disk, 0600, before the database knows it
    try:
        retired = gate.rotate_signing_key(successor, actor=os_actor())
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(staged)
        raise
    os.replace(staged, path)  # the retired private key is gone
    emit(args, {"retired": retired, "published": successor.kid, "path": str(path)},
         f"retired {retired}\npublished {successor.kid} (now in {path}); restart the "
         "servers that used the old key")
    return 0


def _when(at: float) -> str:
    return datetime.datetime.fromtimestamp(at, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
