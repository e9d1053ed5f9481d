"""A real SMTP server on loopback (``aiosmtpd``) that keeps what it receives; optionally with
STARTTLS on a self-signed certificate (made here with ``cryptography``) and AUTH."""

from __future__ import annotations

import datetime
import ipaddress
import socket
import ssl
from email import message_from_bytes
from email.message import Message
from pathlib import Path
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key; the certificate is its own CA."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)

    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = directory / "smtp.crt", directory / "smtp.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


class Mailbox:
    def __init__(self) -> None:
        self.messages: list[tuple[list[str], Message]] = []
        self.refuse: set[str] = set()

    async def handle_RCPT(self, server: Any, session: Any, envelope: Any, address: str,
                          options: Any) -> str:
        if address in self.refuse:
            return "550 no such mailbox"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.messages.append((list(envelope.rcpt_tos), message_from_bytes(envelope.content)))
        return "250 Message accepted"


class SmtpServer:
    def __init__(self, *, tls: tuple[Path, Path] | None = None,
                 login: tuple[str, str] | None = None) -> None:
        self.mailbox = Mailbox()
        self.port = free_port()
        kwargs: dict[str, Any] = {}
        if tls is not None:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(str(tls[0]), str(tls[1]))
            kwargs.update(tls_context=context, require_starttls=True)
        if login is not None:
            def check(server: Any, session: Any, envelope: Any, mechanism: str,
                      data: Any) -> AuthResult:
                ok = isinstance(data, LoginPassword) and \
                    (data.login.decode(), data.password.decode()) == login
                return AuthResult(success=ok, handled=False)
            kwargs.update(authenticator=check, auth_required=True,
                          auth_require_tls=tls is not None)
        self.controller = Controller(self.mailbox, hostname="127.0.0.1", port=self.port,
                                     server_hostname="127.0.0.1", **kwargs)
        self.controller.start()

    @property
    def messages(self) -> list[tuple[list[str], Message]]:
        return self.mailbox.messages

    def stop(self) -> None:
        self.controller.stop()
