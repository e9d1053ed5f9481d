"""Running the app: ``signoff serve`` in the foreground, or a ``ServerThread`` beside other
work (the demo, tests, benchmarks).

The listening socket is bound first (``listening.listen``), before anything is
announced and before uvicorn starts, so a busy port is one typed line, ``--port 0``
works and the printed URL always names the port actually bound. Ctrl-C and SIGTERM
stop it gracefully (``graceful.GracefulServer``): long-polls are answered and event
streams ended at once, other requests in flight get ``GRACE`` seconds to finish. On first
start with no users an admin is created and a one-time login link printed,
as Jupyter does — a link, not the admin's token: it works once, for
``login_link_ttl``, and ``signoff users login admin`` makes another. The
admin's token is never shown (``signoff users rotate admin`` issues one).
"""

from __future__ import annotations

import gc
import json
import socket
import sys
import threading
import time
from typing import TYPE_CHECKING, TextIO

import uvicorn

from signoff.identity import IdentityKind
from signoff.kernel.accounts import os_actor
from signoff.kernel.gate import Gate
from signoff.kernel.sessions import LINK_TTL
from signoff.kernel.sessions import login_url as link_url
from signoff.server.graceful import GRACE, GracefulServer
from signoff.server.listening import bind, listen
from signoff.server.settings import ServerSettings

if TYPE_CHECKING:
    from fastapi import FastAPI

__all__ = ["ADMIN", "ServerThread", "bind", "first_admin", "listen", "login_url", "serve"]

ADMIN = "admin"


def first_admin(gate: Gate, *, ttl: float = LINK_TTL) -> str | None:
    """Create the first admin if the database has no users; a one-time login code for it,
    else ``None``."""
    if gate.count_users():
        return None
    gate.add_user(ADMIN, kind=IdentityKind.ADMIN, actor=os_actor())
    code, _ = gate.mint_login_link(ADMIN, ttl=ttl, actor=os_actor())
    return code


def login_url(settings: ServerSettings, code: str) -> str:
    """The URL of a one-time login link."""
    return link_url(settings.base_url, code)


def _config(app: FastAPI, log_level: str) -> uvicorn.Config:
    return uvicorn.Config(app, log_level=log_level, access_log=False, lifespan="on",
                          timeout_graceful_shutdown=GRACE, ws="none")


def serve(app: FastAPI, settings: ServerSettings, *, gate: Gate, out: TextIO = sys.stdout,
          log_level: str = "warning", as_json: bool = False,
          sock: socket.socket | None = None) -> str | None:
    """Bind (unless ``sock`` is the socket already bound), print where to go
    (``as_json``: one JSON line), and serve until Ctrl-C or SIGTERM: the requests in
    flight are answered, then the signal that stopped the server is returned."""
    if sock is None:
        sock = listen(settings.host, settings.port)
    settings = settings.with_port(sock.getsockname()[1])
    app.state.signoff.settings = settings  # links the app makes name the port really bound
    server = GracefulServer(_config(app, log_level), on_stopping=app.state.signoff.feed.drain)
    with server.stop_signals():  # before the announcement: from here a signal only asks
        token = first_admin(gate, ttl=settings.limits.link_ttl)
        _announce(gate, settings, token, out=out, as_json=as_json)
        _freeze_heap()
        server.run(sockets=[sock])
    return server.stopped_by


def _announce(gate: Gate, settings: ServerSettings, token: str | None, *, out: TextIO,
              as_json: bool) -> None:
    """Where to go: the URL, the policy, the first admin's login link (if just made)."""
    config = gate.config
    if as_json:
        print(json.dumps({"url": settings.base_url, "backend": gate.backend,
                          "policy": config.source, "policy_version": config.version,
                          "admin_created": token is not None,
                          "login_url": login_url(settings, token) if token else None}),
              file=out)
    else:
        print(f"signoff {gate.backend} server at {settings.base_url} "
              f"(policy {config.source}, version {config.version})", file=out)
        if token:
            minutes = settings.limits.link_ttl / 60
            print(f"first start: created user 'admin'. Sign in with this link (it works once, "
                  f"within {minutes:g} min; `signoff users login admin` makes another):",
                  file=out)
            print(f"    {login_url(settings, token)}", file=out)
        else:
            print(f"sign in at {settings.base_url}/login with a link from "
                  "`signoff users login NAME` or a token from `signoff users add`", file=out)
    out.flush()


def _freeze_heap() -> None:
    """Leave what startup built (modules, the app, its schemas: some 130,000 objects) out
    of the garbage collector's full passes. Each full pass walks every tracked object
    with the interpreter lock held, so every request in flight waited 40–120 ms for it,
    a few times a minute under load; after ``gc.freeze`` it walks only what serving
    made. Frozen objects are never collected, which is what startup's are for."""
    gc.collect()
    gc.freeze()


class ServerThread:
    """A real uvicorn serving ``app`` on a background thread (port 0: a free one)."""

    def __init__(self, app: FastAPI, *, host: str = "127.0.0.1", port: int = 0,
                 log_level: str = "warning") -> None:
        self.sock = bind(host, port)
        self.port: int = self.sock.getsockname()[1]
        state = getattr(app.state, "signoff", None)
        if state is not None:  # links the app makes name the port really bound
            state.settings = state.settings.with_port(self.port)
        self.host = host
        self.server = uvicorn.Server(_config(app, log_level))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]},
                                       name="signoff-server", daemon=True)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self, timeout: float = 10.0) -> ServerThread:
        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()
