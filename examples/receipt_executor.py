"""An executor elsewhere: it runs a deploy only when handed a receipt for exactly that deploy.

    python examples/receipt_executor.py --keys https://signoff.example/.well-known/jwks.json \
        --issuer https://signoff.example --port 8800

A tiny HTTP service (the standard library's, plus ``signoff`` itself: no server extras)
on 127.0.0.1. ``POST /deploy`` takes ``{"request_id": …, "args": {…}, "receipt": "…"}``
— the request id, the arguments and the receipt an agent got from ``POST
/api/v1/calls/{id}/claim`` — and runs the deploy only if the receipt verifies offline
against the signoff server's public keys (a JWKS file or URL), was issued by the expected
deployment, is for that request and for exactly these arguments (their canonical hash),
and has not expired. Each request id runs once. Anything else is refused with the
receipt's code (``signature_invalid``, ``wrong_args``, ``expired``, ``unknown_key``, …)
and nothing runs.

The keys are fetched once at start, and again when a receipt names a key not seen yet (a
rotation, a new server): never per request.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

from signoff import receipts
from signoff.canonical import args_hash
from signoff.errors import SignatureInvalid

MAX_BODY = 512 * 1024


class Keys:
    """The issuer's JWKS, from a file or a URL, read again when a receipt names a key it
    does not hold."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.document = self.read()

    def read(self) -> Any:
        if self.source.startswith(("http://", "https://")):
            response = httpx.get(self.source, timeout=10)
            response.raise_for_status()
            return response.json()
        return json.loads(Path(self.source).read_text("utf-8"))

    def verify(self, token: str, **expected: Any) -> receipts.Receipt:
        try:
            return receipts.verify(token, self.document, **expected)
        except SignatureInvalid as exc:
            if exc.code != "unknown_key":
                raise
            self.document = self.read()  # a key published since: once more, then refuse
            return receipts.verify(token, self.document, **expected)


class Executor:
    def __init__(self, keys: Keys, issuer: str | None, log: Path) -> None:
        self.keys = keys
        self.issuer = issuer
        self.log = log
        self.ran: set[str] = set()
        self.lock = threading.Lock()

    def deploy(self, body: Any) -> tuple[int, dict[str, Any]]:
        if not isinstance(body, dict) or not isinstance(body.get("args"), dict) \
                or not isinstance(body.get("request_id"), str) \
                or not isinstance(body.get("receipt"), str):
            return 400, {"code": "bad_request",
                         "detail": "send {request_id, args (an object), receipt}"}
        request_id, args = body["request_id"], body["args"]
        try:
            receipt = self.keys.verify(body["receipt"], request_id=request_id,
                                       args_hash=args_hash(args), issuer=self.issuer)
        except SignatureInvalid as exc:
            return 403, {"code": exc.code, "detail": exc.message}
        with self.lock:  # each approval runs once
            if request_id in self.ran:
                return 409, {"code": "already_run", "detail": f"{request_id} already ran"}
            self.ran.add(request_id)
            with self.log.open("a", encoding="utf-8") as out:  # the "deploy"
                out.write(json.dumps({"request_id": request_id, "args": args}) + "\n")
        return 200, {"deployed": args, "request_id": request_id,
                     "approved_by": [a.approver for a in receipt.approvals]}


def handler(executor: Executor) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            if self.path != "/deploy":
                return self.answer(404, {"code": "not_found"})
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY:
                return self.answer(413, {"code": "too_large"})
            try:
                body = json.loads(self.rfile.read(length) or b"null")
            except ValueError:
                return self.answer(400, {"code": "bad_json"})
            self.answer(*executor.deploy(body))

        def answer(self, status: int, data: dict[str, Any]) -> None:
            raw = json.dumps(data).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # quiet: the answers say it all

    return Handler


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--keys", required=True, help="the signoff server's JWKS: file or URL")
    parser.add_argument("--issuer", help="the deployment its receipts must name")
    parser.add_argument("--port", type=int, default=8800, help="port on 127.0.0.1 (0: free)")
    parser.add_argument("--log", default="deploys.jsonl", help="where each deploy is written")
    args = parser.parse_args(argv)
    executor = Executor(Keys(args.keys), args.issuer, Path(args.log))
    server = ThreadingHTTPServer(("127.0.0.1", args.port), handler(executor))
    print(f"receipt executor at http://127.0.0.1:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
