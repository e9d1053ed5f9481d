"""Webhook targets on a real ``signoff serve``, on both backends: loopback, link-local,
private, shared, multicast and this server's own addresses are refused — when an
endpoint is registered (API and CLI) and, after resolving its name, at every delivery —
unless ``[notify] allow_private_targets = true``; and the delivery log keeps a short,
escaped excerpt of what a receiver answered.

Only loopback receivers are ever sent anything: every other address here is refused by
the check itself, before any connection (an allowed one is registered with a filter
that matches no event, so nothing is sent to it)."""

from __future__ import annotations

import contextlib
import datetime
import socket
import ssl
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import procs
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from receiver import Receiver

from signoff.errors import ConfigurationError
from signoff.notify.config import WebhookEndpoint, new_secret, parse_notify
from signoff.store.deliveries import Delivery

POLICY = """
[policy]
version = "targets-1"
gated = ["deploy"]

[workspace]
name = "ws"
root = "{root}"

[tools.deploy]

[notify]
retry_base = 0.2
retry_max = 1
timeout = 2
"""
ALLOW = "allow_private_targets = true\n"
# Refused by default whatever DNS says: every one an address literal or localhost.
REFUSED = ["http://169.254.169.254/latest/meta-data/", "http://10.0.0.1/", "http://172.16.5.4/",
           "http://192.168.1.1/", "http://100.64.0.1/", "http://0.0.0.0/", "http://224.0.0.1/",
           "http://127.1/", "http://2130706433/", "http://0x7f.1/", "http://[fe80::1]/",
           "http://[fd00::1]/", "http://[::ffff:127.0.0.1]/", "http://[::]/",
           "http://LOCALHOST./", "http://api.localhost/"]


@dataclass
class Rig:
    db: str
    cwd: Path
    tokens: dict[str, str]
    server: procs.Server
    v4: Receiver
    v6: Receiver

    def client(self, user: str) -> httpx.Client:
        return self.server.client(self.tokens[user])

    def cli(self, *args: str, check: bool = True) -> Any:
        return procs.signoff("webhooks", *args, "--db", self.db, cwd=self.cwd, check=check)

    def loopback_urls(self) -> dict[str, str]:
        return {"v6": self.v6.url, "localhost": f"http://localhost:{self.v4.port}/hook"}


@contextlib.contextmanager
def rig(backend: str, directory: Path, *, allow: bool) -> Iterator[Rig]:
    v4, v6 = Receiver(""), Receiver("", bind="::1")
    with procs.database(backend, directory) as db:
        tokens = procs.prepare(backend, db, directory, POLICY + (ALLOW if allow else ""))
        server = procs.start_server(db, directory)
        try:
            yield Rig(db=db, cwd=directory, tokens=tokens, server=server, v4=v4, v6=v6)
        finally:
            server.stop()
            v4.close()
            v6.close()


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _ask(rig: Rig, call_id: str) -> str:
    with rig.client("bot") as bot:
        answer = bot.post("/api/v1/calls", json={"tool": "deploy", "args": {"n": call_id},
                                                 "call_id": call_id})
    assert answer.json()["status"] == "pending", answer.text
    return str(answer.json()["request_id"])


def _log(rig: Rig, endpoint: str, *, until: Any, timeout: float = 15.0) -> dict[str, Any]:
    """The endpoint's newest delivery, once ``until(delivery)`` holds."""
    deadline = time.monotonic() + timeout
    with rig.client("boss") as boss:
        while True:
            found = boss.get("/api/v1/webhooks/deliveries",
                             params={"endpoint": endpoint}).json()["deliveries"]
            if found and until(found[0]):
                return dict(found[0])
            assert time.monotonic() < deadline, found
            time.sleep(0.05)


@pytest.mark.slow
def test_private_targets_are_refused_at_registration(backend: str, tmp_path: Path) -> None:
    with rig(backend, tmp_path, allow=False) as made, made.client("boss") as boss:
        for n, url in enumerate([*REFUSED, *made.loopback_urls().values(), made.v4.url]):
            answer = boss.post("/api/v1/webhooks", json={"name": f"h{n}", "url": url})
            assert answer.status_code == 400, (url, answer.text)
            assert answer.json()["code"] == "webhook_target_refused", url
        cli = made.cli("add", "desk", "--url", "http://169.254.169.254/", check=False)
        assert cli.returncode != 0 and "webhook_target_refused" in cli.stderr
        assert boss.get("/api/v1/webhooks").json()["webhooks"] == []
        kinds = [e["kind"] for e in boss.get("/api/v1/audit",
                                             params={"limit": 1000}).json()["events"]]
        assert "webhook.added" not in kinds
        # a public name is not judged until it is resolved, at delivery
        public = boss.post("/api/v1/webhooks", json={"name": "pub", "url": "https://x.test/h",
                                                     "tools": ["no-such-tool"]})
        assert public.status_code == 201, public.text
    assert made.v4.hosts == [] and made.v6.hosts == []


@pytest.mark.slow
def test_allowed_private_targets_are_registered_and_loopback_ones_delivered_to(
        backend: str, tmp_path: Path) -> None:
    with rig(backend, tmp_path, allow=True) as made, made.client("boss") as boss:
        for n, url in enumerate(["http://169.254.169.254/", "http://10.0.0.1/"]):
            # registered, but with a filter no event matches: nothing is ever sent there
            added = boss.post("/api/v1/webhooks", json={"name": f"far{n}", "url": url,
                                                        "tools": ["no-such-tool"]})
            assert added.status_code == 201, added.text
        secrets = {}
        for name, url in made.loopback_urls().items():
            added = boss.post("/api/v1/webhooks", json={"name": name, "url": url})
            assert added.status_code == 201, added.text
            secrets[name] = added.json()["secret"]
        made.v6.secret, made.v4.secret = secrets["v6"], secrets["localhost"]
        request_id = _ask(made, "c1")
        for receiver in (made.v4, made.v6):
            receiver.wait_for(1)
            assert all(a.verified for a in receiver.arrivals), receiver.refused
            assert receiver.arrivals[0].payload["data"]["request_id"] == request_id
        # connected to the checked address, with the URL's own name as Host
        assert made.v4.hosts[0] == f"localhost:{made.v4.port}"
        assert made.v6.hosts[0] == f"[::1]:{made.v6.port}"
        assert {d["channel"] for d in boss.get("/api/v1/webhooks/deliveries").json()[
            "deliveries"]} == {"webhook:v6", "webhook:localhost"}


@pytest.mark.slow
def test_a_name_resolving_to_a_refused_address_is_refused_at_delivery(
        backend: str, tmp_path: Path) -> None:
    with rig(backend, tmp_path, allow=False) as made:
        # registered by someone whose configuration allowed it; this server's does not
        (tmp_path / "permissive.toml").write_text(
            POLICY.replace("{root}", str(tmp_path)) + ALLOW, "utf-8")
        made.cli("add", "late", "--url", made.loopback_urls()["localhost"],
                 "--policy", str(tmp_path / "permissive.toml"))
        # this machine's own name passes registration (no DNS is asked there) and is
        # judged by what it resolves to: loopback, private or this server's own address
        own = socket.gethostname()
        with made.client("boss") as boss:
            added = boss.post("/api/v1/webhooks", json={
                "name": "own", "url": f"http://{own}:{made.v4.port}/hook"})
        assert added.status_code == 201, added.text
        _ask(made, "c1")
        late = _log(made, "late", until=lambda d: d["last_error"])
        assert late["status"] != "delivered" and late["last_status"] is None
        assert late["last_error"].startswith("webhook_target_refused: ")
        assert "localhost is loopback" in late["last_error"]
        mine = _log(made, "own", until=lambda d: d["last_error"])
        try:
            first = socket.getaddrinfo(own, None, type=socket.SOCK_STREAM)[0][4][0]
        except OSError:  # a machine whose name does not resolve: refused all the same
            assert mine["last_error"].startswith("webhook_target_unresolved: "), mine
        else:
            assert mine["last_error"].startswith(
                f"webhook_target_refused: webhook target {own.lower()} resolves to {first}, "
                ), mine
        time.sleep(0.5)  # retries come and go: none of them connects
    assert made.v4.hosts == []


@pytest.mark.slow
def test_the_delivery_log_keeps_a_short_escaped_excerpt(backend: str, tmp_path: Path) -> None:
    with rig(backend, tmp_path, allow=True) as made:
        made.v4.mode = "noisy"
        with made.client("boss") as boss:
            assert boss.post("/api/v1/webhooks", json={"name": "noisy", "url": made.v4.url}
                             ).status_code == 201
        _ask(made, "c1")
        logged = _log(made, "noisy", until=lambda d: d["last_status"] == 500)
    error = logged["last_error"]
    assert error.startswith("HTTP 500: \\x1b[31mERROR\\x07\\r\\n\\u202eevil\\u200bxxx"), error
    assert len(error) <= len("HTTP 500: ") + 200 and error.endswith("…")
    assert error.isprintable() and "tail" not in error


def test_the_checks_without_a_server() -> None:
    """The policy file's endpoints and a server's own name are judged alike."""
    from signoff.notify.targets import check_url

    table: dict[str, Any] = {"webhooks": {"ops": {"url": "http://[::1]:9/h",
                                                  "secret": "whsec_" + "A" * 44}}}
    with pytest.raises(ConfigurationError) as refused:
        parse_notify(table)
    assert refused.value.code == "webhook_target_refused"
    assert "[notify].webhooks.ops" in refused.value.message
    assert parse_notify({**table, "allow_private_targets": True}).webhooks[0].url == \
        "http://[::1]:9/h"
    with pytest.raises(ConfigurationError) as wrong:
        parse_notify({"allow_private_targets": "yes"})
    assert wrong.value.code == "policy_invalid"
    with pytest.raises(ConfigurationError) as own:
        check_url("https://Signoff.Example.com./hook", allow_private=False,
                  own=["signoff.example.com"])
    assert own.value.code == "webhook_target_refused"
    check_url("https://hooks.example.com/x", allow_private=False, own=["signoff.example.com"])


def _certificate_for_localhost(directory: Path) -> tuple[Path, Path]:
    """A self-signed certificate naming ``localhost`` only — no address in it."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = directory / "hook.crt", directory / "hook.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


def test_https_connects_to_the_checked_address_and_verifies_the_name(tmp_path: Path) -> None:
    """The connection goes to the resolved address, yet TLS asks for and verifies the URL's
    name: a certificate for ``localhost`` only is accepted (an address in the URL would
    not match it) and the receiver hears ``localhost`` as the server name."""
    from signoff.notify.targets import Targets
    from signoff.notify.webhook import WebhookChannel

    cert, key = _certificate_for_localhost(tmp_path)
    serving = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    serving.load_cert_chain(cert, key)
    secret = new_secret()
    receiver = Receiver(secret, tls=serving)
    trusting = ssl.create_default_context(cafile=str(cert))
    url = f"https://localhost:{receiver.port}/hook"
    delivery = Delivery(id="webhook:tls/evt_1", channel="webhook:tls", event_index=1,
                        event_type="request.created", request_key="req_1",
                        payload='{"type": "request.created", "timestamp": "t", '
                                '"data": {"request_id": "req_1"}}',
                        next_at=0.0, event_at=0.0, created_at=0.0)
    try:
        with httpx.Client(verify=trusting, follow_redirects=False, timeout=5) as client:
            endpoint = WebhookEndpoint(name="tls", url=url, secret=secret)
            allowed = WebhookChannel(endpoint, client, Targets(allow_private=True))
            attempt = allowed.send(delivery)
            assert attempt.ok, attempt.error
            refused = WebhookChannel(endpoint, client, Targets()).send(delivery)
            assert not refused.ok and (refused.error or "").startswith(
                "webhook_target_refused: ")
    finally:
        receiver.close()
    assert receiver.server_names == ["localhost"]
    assert receiver.hosts == [f"localhost:{receiver.port}"]
    assert [a.verified for a in receiver.arrivals] == [True]
