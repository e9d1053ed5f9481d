"""``signoff receipts``: verify a receipt offline against a JWKS, or show a request's.

``verify`` needs no database and no token: the receipt (a file, or ``-`` for standard
input; the bare token or the JSON the API answers with) and the issuer's keys (a JWKS
file, or its URL: ``https://host/.well-known/jwks.json``). Exit 0: valid; 1: refused, with
the code (``malformed``, ``unknown_key``, ``signature_invalid``, ``expired``,
``wrong_issuer``, ``wrong_request``, ``wrong_args``); 2: bad input (an unreadable file, keys
that cannot be fetched).
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path
from typing import Any

from signoff import receipts
from signoff.cli.common import emit, leaf, open_gate
from signoff.errors import ConfigurationError, SignatureInvalid

EXIT_REFUSED = 1


def add_receipts(commands: Any) -> None:
    parser = commands.add_parser(
        "receipts", help="verify a signed receipt of an approval, or show one",
        description="Verify a receipt offline against the issuer's JWKS, or show the "
        "receipt of a request on this database.")
    sub = parser.add_subparsers(title="subcommands", metavar="SUBCOMMAND")
    verify = sub.add_parser("verify", help="verify a receipt against a JWKS (exit 0 valid, "
                            "1 refused)", description="Verify a receipt against the issuer's "
                            "public keys, offline. Exit 0: valid; 1: refused, with its code.")
    verify.add_argument("file", help="the receipt: a file holding the token (or the API's "
                        "JSON answer), or - for standard input")
    verify.add_argument("--keys", required=True, metavar="URL|FILE",
                        help="the issuer's JWKS: a file, or a URL (/.well-known/jwks.json)")
    verify.add_argument("--request", help="require a receipt for this request id")
    verify.add_argument("--args-hash", help="require a receipt for these arguments (sha256:…)")
    verify.add_argument("--issuer", help="require this issuer")
    verify.add_argument("--json", action="store_true", help="machine-readable output")
    verify.set_defaults(handler=cmd_verify)
    show = leaf(sub, "show", "show the receipt of a request on this database", cmd_show)
    show.add_argument("request_id", metavar="ID", help="the request id")


def cmd_verify(args: argparse.Namespace) -> int:
    token = _token(args.file)
    document = _jwks(args.keys)
    try:
        got = receipts.verify(token, document, request_id=args.request,
                              args_hash=args.args_hash, issuer=args.issuer)
    except SignatureInvalid as exc:
        if args.json:
            print(json.dumps({"valid": False, "code": exc.code, "message": exc.message}))
        else:
            print(f"refused [{exc.code}]: {exc.message}")
        return EXIT_REFUSED
    emit(args, {"valid": True, "kid": got.kid, "receipt": got.to_dict()}, _text(got, "valid"))
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    gate = open_gate(args)
    token = gate.receipt(args.request_id)
    got = receipts.verify(token, gate.jwks(), now=0.0)  # signed by a key published here
    emit(args, {"receipt": token, "kid": got.kid, "payload": got.to_dict()},
         f"{_text(got, 'signed')}\n{token}")
    return 0


def _text(got: receipts.Receipt, what: str) -> str:
    approvals = ", ".join(f"{a.approver} ({a.kind}{', passkey' if a.passkey else ''})"
                          for a in got.approvals)
    return (f"{what}: request {got.request_id}, {got.tool} {got.args_hash}\n"
            f"approved by {approvals} at {_when(got.approved_at)}, issuer {got.issuer}, "
            f"key {got.kid}, expires {_when(got.expires_at)}")


def _when(at: float) -> str:
    return datetime.datetime.fromtimestamp(at, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _token(source: str) -> str:
    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"cannot read the receipt {source}: {exc}",
                                 code="receipt_unreadable") from None
    text = text.strip()
    if text.startswith("{"):  # the API's answer ({"receipt": …}) or a claim's
        try:
            return str(json.loads(text)["receipt"])
        except (ValueError, KeyError, TypeError):
            return text  # verify says it is malformed
    return text


def _jwks(source: str) -> Any:
    if source.startswith(("http://", "https://")):
        import httpx  # noqa: PLC0415 (only for a URL)

        try:
            response = httpx.get(source, timeout=10, follow_redirects=False)
            response.raise_for_status()
            return response.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise ConfigurationError(f"cannot fetch the keys from {source}: {exc}",
                                     code="keys_unreadable") from None
    try:
        return json.loads(Path(source).read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigurationError(f"cannot read the keys {source}: {exc}",
                                 code="keys_unreadable") from None
