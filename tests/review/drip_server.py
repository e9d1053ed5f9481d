"""A chat-completions endpoint that answers one byte at a time, on a real socket.

Each connection reads one request, then sends a well-formed 200 response whose
body is an *approving* verdict — but ``drip`` seconds apart per byte, the headers
too when ``headers_too``. A per-read timeout never fires against it, so only a
deadline on the whole review stops it. ``closed_after`` records, per connection,
how long after the request the client hung up (a write failed or EOF was read):
the proof that the request was abandoned, not left reading.

A plain module (``from drip_server import DripServer``), like ``chat_server``.
"""

from __future__ import annotations

import json
import socket
import threading
import time

APPROVE = json.dumps({
    "id": "chatcmpl-drip", "object": "chat.completion", "created": 0, "model": "drip",
    "choices": [{"index": 0, "finish_reason": "stop", "message": {
        "role": "assistant",
        "content": json.dumps({"verdict": "approve", "reason": "late but sure"})}}],
}).encode()


class DripServer:
    """A context manager: ``base_url`` while it runs; ``closed_after`` per connection."""

    def __init__(self, drip: float = 0.06, *, headers_too: bool = False) -> None:
        self.drip = drip
        self.headers_too = headers_too
        self.closed_after: list[float] = []
        self.finished = 0  # responses sent whole: a client that read a late answer
        self.requests = 0
        self._lock = threading.Lock()
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.1)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True, name="drip-server")

    @property
    def base_url(self) -> str:
        host, port = self._sock.getsockname()[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> DripServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._sock.close()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            if not _read_request(conn):
                return
            with self._lock:
                self.requests += 1
            start = time.monotonic()
            head = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    b"Content-Length: " + str(len(APPROVE)).encode() + b"\r\n\r\n")
            slow = head + APPROVE if self.headers_too else APPROVE
            try:
                if not self.headers_too:
                    conn.sendall(head)
                for i in range(len(slow)):
                    if self._stop.is_set():
                        return
                    conn.sendall(slow[i:i + 1])
                    if _hung_up(conn, self.drip):
                        raise ConnectionResetError
            except OSError:
                with self._lock:
                    self.closed_after.append(time.monotonic() - start)
                return
            with self._lock:
                self.finished += 1


def _read_request(conn: socket.socket) -> bool:
    conn.settimeout(5)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return False
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            return False
        body += chunk
    return True


def _hung_up(conn: socket.socket, wait: float) -> bool:
    """Wait ``wait`` seconds; True if the client closed its side meanwhile."""
    conn.settimeout(wait)
    try:
        return conn.recv(1) == b""
    except TimeoutError:
        return False
    except OSError:
        return True


