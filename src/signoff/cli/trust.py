"""The keys ``signoff audit verify`` trusts, from outside the database it checks.

A signed checkpoint proves the chain only against a key the rewriter could not replace:
the keys published in the database can be swapped by whoever rewrites it. So the verifier
takes them from elsewhere — ``--keys`` (a JWKS file, or the URL a server serves it at) or
``--signing-key`` (the server's key file: its public half) — and without either uses the
published ones and says so (``signoff.kernel.auditing``).
"""

from __future__ import annotations

import argparse
import json
import urllib.request
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from signoff import keys
from signoff.errors import ConfigurationError
from signoff.kernel.auditing import Trust

MAX_JWKS = 1024 * 1024  # bytes: a JWKS of many keys stays far below this
TIMEOUT = 10.0  # seconds to fetch a JWKS URL


def trust_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--keys", action="append", default=[], metavar="FILE|URL",
                        help="trust the keys of this JWKS (a file, or an http(s) URL such as "
                        "a server's JWKS route); repeatable")
    parser.add_argument("--signing-key", action="append", default=[], metavar="PATH",
                        help="trust the public half of this signing key file; repeatable")


def trust_of(args: argparse.Namespace) -> Trust | None:
    """The outside keys the flags name (``None``: none given: the database's are used)."""
    if not args.keys and not args.signing_key:
        return None
    trusted: dict[str, Ed25519PublicKey] = {}
    for where in args.keys:
        trusted.update(keys.read_jwks(_document(where)))
    for path in args.signing_key:
        key = keys.load(path)
        trusted[key.kid] = key.public
    names = [*(f"--keys {where}" for where in args.keys),
             *(f"--signing-key {path}" for path in args.signing_key)]
    return Trust(trusted, ", ".join(names))


def _document(where: str) -> Any:
    try:
        if where.startswith(("http://", "https://")):
            with urllib.request.urlopen(where, timeout=TIMEOUT) as response:  # noqa: S310
                data = response.read(MAX_JWKS + 1)
        elif "://" in where:
            raise ConfigurationError(f"--keys {where}: a file, or an http(s) URL",
                                     code="keys_unreadable")
        else:
            data = Path(where).read_bytes()
        if len(data) > MAX_JWKS:
            raise ConfigurationError(f"--keys {where}: more than {MAX_JWKS} bytes",
                                     code="keys_unreadable")
        return json.loads(data)
    except OSError as exc:
        raise ConfigurationError(f"--keys {where}: {exc}", code="keys_unreadable") from None
    except ValueError as exc:
        raise ConfigurationError(f"--keys {where}: not JSON ({exc})",
                                 code="keys_unreadable") from None
