"""The resident hook's client: one hook event sent to a running ``signoff serve``.

A coding agent starts its hook command anew for every tool call, so what that process
imports is paid on every call. This file imports only what a bare interpreter has
already loaded or builds in (``os``, ``sys``, ``_socket``, ``_json``) — ``http.client``
alone (with ``email`` and ``ssl``) would cost more than the whole call — and speaks the
little HTTP/1.1 it needs by hand: one ``POST /api/v1/hooks/<harness>`` with the event
verbatim and the agent's token, answered by the server (``signoff.adapters.hooks.served``) with
the hook's stdout as the body, its exit status in ``Signoff-Exit-Code`` and its stderr as
a JSON string in ``Signoff-Stderr``. ``https://`` works too, loading ``ssl`` only then.

``signoff hook install <harness> --url …`` writes the command that imports this module
alone from its directory with ``python -S -I`` (no site, no environment): no other part
of signoff is imported, and the module's compiled form is cached as any module's is.
``signoff hook <harness> --url …`` sends through ``send`` as well.

Anything that goes wrong — no token, a server that does not answer or answers with an
error — refuses the call: stderr says why and the exit status is 2, which every
supported harness takes as "block this call, here is the reason" (a post-call event
exits 1: the result is lost, said, and nothing is blocked).
"""

from __future__ import annotations

import _json  # the C scanner: decodes the one JSON string the answer may carry
import _socket
import os
import sys

TIMEOUT_MARGIN = 15.0  # seconds beyond the wait: the server answers first
USAGE = ("usage: [signoff] hook HARNESS --url URL [--token-file FILE | --token TOKEN] "
         "[--wait SECONDS] [--event pre|post] [--ask-locally]")


class WireError(Exception):
    """The event could not be answered: the reason, for the refusal."""


def send(url: str, token: str, harness: str, raw: bytes, *, event: str = "pre",
         wait: float = 45.0, ask_locally: bool = False) -> tuple[bytes, int, str]:
    """Send one event; the hook's stdout, exit status and stderr as the server answered."""
    if not harness or not all(c in "abcdefghijklmnopqrstuvwxyz-" for c in harness):
        raise WireError(f"no harness is called {harness!r}")  # nor a path or query in it
    scheme, _, rest = url.partition("://")
    if scheme not in ("http", "https") or not rest:
        raise WireError(f"--url must be http:// or https://, not {url!r}")
    authority, _, prefix = rest.partition("/")
    host, port = _host_port(authority, 443 if scheme == "https" else 80)
    path = (f"/{prefix.strip('/')}" if prefix.strip("/") else "") + \
        f"/api/v1/hooks/{harness}?event={event}&wait={wait:g}" + \
        ("&ask_locally=true" if ask_locally else "")
    if any(c in token for c in "\r\n") or any(c in path for c in " \r\n"):
        raise WireError("the token or the URL holds a line break or a space")
    head = (f"POST {path} HTTP/1.1\r\nHost: {authority}\r\n"
            f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(raw)}\r\nConnection: close\r\n"
            "User-Agent: signoff-hook\r\n\r\n").encode("latin-1")
    answer = _exchange(scheme, host, port, head + raw, timeout=wait + TIMEOUT_MARGIN)
    return _parse(answer)


def _host_port(authority: str, default: int) -> tuple[str, int]:
    if authority.startswith("["):  # [::1]:8000
        host, _, tail = authority[1:].partition("]")
        port = tail[1:] if tail.startswith(":") else ""
    else:
        host, _, port = authority.rpartition(":") if ":" in authority else (authority, "", "")
    if not host:
        raise WireError(f"no host in {authority!r}")
    try:
        return host, int(port) if port else default
    except ValueError:
        raise WireError(f"bad port in {authority!r}") from None


def _exchange(scheme: str, host: str, port: int, data: bytes, *, timeout: float) -> bytes:
    last: OSError | None = None
    for family, address in _addresses(host, port):
        sock = _socket.socket(family, _socket.SOCK_STREAM)
        try:
            sock.settimeout(timeout)
            sock.connect(address)
            if scheme == "https":
                return _exchange_tls(sock, host, data)
            sock.sendall(data)
            return _read_all(sock)
        except OSError as exc:
            last = exc
        finally:
            sock.close()
    raise WireError(f"{host}:{port}: {last}")


def _addresses(host: str, port: int) -> list[tuple[int, tuple[str, int]]]:
    """Where to connect: an address written as numbers as it is, without asking the
    resolver (whose libraries cost a new process more than the whole request); a name
    resolved."""
    for family in (_socket.AF_INET, _socket.AF_INET6):
        try:
            _socket.inet_pton(family, host)
        except OSError:
            continue
        return [(family, (host, port))]
    try:
        found = _socket.getaddrinfo(host, port, 0, _socket.SOCK_STREAM)
    except OSError as exc:
        raise WireError(f"{host}: {exc}") from None
    return [(family, (str(address[0]), int(address[1])))
            for family, _kind, _proto, _name, address in found]


def _exchange_tls(raw_sock: _socket.socket, host: str, data: bytes) -> bytes:
    import socket  # noqa: PLC0415  (TLS only: ssl wraps a socket.socket)
    import ssl  # noqa: PLC0415

    plain = socket.socket(fileno=raw_sock.detach())
    with ssl.create_default_context().wrap_socket(plain, server_hostname=host) as sock:
        sock.sendall(data)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
        return b"".join(chunks)


def _read_all(sock: _socket.socket) -> bytes:
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def _parse(answer: bytes) -> tuple[bytes, int, str]:
    head, sep, body = answer.partition(b"\r\n\r\n")
    if not sep:
        raise WireError("the server's answer ended early")
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[1].isdigit():
        raise WireError(f"not an HTTP answer: {lines[0][:80]!r}")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = _unchunk(body)
    elif "content-length" in headers:
        body = body[:int(headers["content-length"])]
    status = int(parts[1])
    if status != 200 or "signoff-exit-code" not in headers:
        text = body[:400].decode("utf-8", "replace")
        raise WireError(f"the server answered HTTP {status}: {text}")
    stderr = ""
    if "signoff-stderr" in headers:
        quoted = headers["signoff-stderr"]
        stderr, _ = _json.scanstring(quoted, 1) if quoted.startswith('"') else (quoted, 0)
    return body, int(headers["signoff-exit-code"]), stderr


def _unchunk(body: bytes) -> bytes:
    out = []
    while body:
        size_line, _, body = body.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out.append(body[:size])
        body = body[size + 2:]
    return b"".join(out)


def main(argv: list[str]) -> int:
    """``[signoff] hook HARNESS --url URL …`` as a hook command: the event on stdin."""
    options = {"--event": "pre", "--wait": "45"}
    flags = set()
    words = list(argv)
    for word in ("signoff", "hook"):  # the installed command's words before the harness
        if words[:1] == [word]:
            words = words[1:]
    harness = words.pop(0) if words and not words[0].startswith("-") else ""
    while words:
        word = words.pop(0)
        if word in ("--ask-locally", "--json"):
            flags.add(word)
        elif word in ("--url", "--token", "--token-file", "--wait", "--event", "--inbox-url",
                      "--db", "--policy") and words:
            options[word] = words.pop(0)
        else:
            return _refuse(f"unexpected argument {word!r}; {USAGE}", "pre")
    event = options["--event"]
    if event not in ("pre", "post"):
        return _refuse(f"--event must be pre or post, not {event!r}", "pre")
    try:
        wait = float(options["--wait"])
        if not 0 < wait <= 86400:
            raise ValueError(wait)
    except ValueError:
        return _refuse("--wait must be between 0 and 86400 seconds", event)
    url = options.get("--url")
    if not harness or not url:
        return _refuse(f"a harness and --url are needed; {USAGE}", event)
    try:
        token = _token(options)
        raw = sys.stdin.buffer.read()
        stdout, code, stderr = send(url, token, harness, raw, event=event, wait=wait,
                                    ask_locally="--ask-locally" in flags)
    except (WireError, OSError, ValueError) as exc:
        return _refuse(f"signoff is not reachable ({exc}); the call was not allowed", event)
    if stdout:
        sys.stdout.buffer.write(stdout + (b"" if stdout.endswith(b"\n") else b"\n"))
        sys.stdout.flush()
    if stderr:
        sys.stderr.write(stderr + "\n")
    return code


def _token(options: dict[str, str]) -> str:
    if "--token-file" in options:
        with open(options["--token-file"], encoding="utf-8") as handle:
            token = handle.read().strip()
    else:
        token = options.get("--token") or os.environ.get("SIGNOFF_TOKEN", "")
    if not token:
        raise WireError("--url needs a token (--token-file, --token or SIGNOFF_TOKEN)")
    return token


def _refuse(reason: str, event: str) -> int:
    """Exit 2 with the reason (pre-call: the harness blocks the call); 1 after a call."""
    sys.stderr.write(f"signoff hook: {reason}\n")
    return 1 if event == "post" else 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
