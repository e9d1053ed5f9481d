"""Email through a real SMTP server on loopback (``aiosmtpd``): from a real ``signoff serve``,
as a digest with a clock the test moves, over STARTTLS with a login, and a refused
recipient."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import procs
import pytest
from smtp_server import SmtpServer, self_signed

from signoff import Gate, Policy, RunContext, ToolCall
from signoff.notify.config import EmailList, Filters, NotifyConfig, Retry, SmtpConfig
from signoff.notify.notifier import Notifier
from signoff.store.base import Store

EMAIL = """
[notify]
retry_base = 0.2
timeout = 5

[notify.smtp]
host = "127.0.0.1"
port = {port}
security = "none"
from = "signoff@example.test"

[notify.email.ops]
to = ["ops@example.test", "lead@example.test"]
events = ["request.created", "request.decided"]
"""
POLICY = """
[policy]
version = "mail-1"
[tools.deploy]
[[rules]]
id = "deploys"
effect = "ask"
tool = "deploy"
risk = "high"
"""


def wait_for(server: SmtpServer, count: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while len(server.messages) < count:
        assert time.monotonic() < deadline, f"{len(server.messages)} of {count} messages"
        time.sleep(0.02)


@pytest.fixture(params=["sqlite", "postgres"])
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[procs.Live,
                                                                             SmtpServer]]:
    smtp = SmtpServer()
    with procs.database(request.param, tmp_path) as db:
        tokens = procs.prepare(request.param, db, tmp_path)
        with (tmp_path / "signoff.toml").open("a", encoding="utf-8") as fh:
            fh.write(EMAIL.format(port=smtp.port))
        server = procs.start_server(db, tmp_path)
        try:
            yield procs.Live(backend=request.param, db=db, cwd=tmp_path, tokens=tokens,
                             server=server), smtp
        finally:
            server.stop()
            smtp.stop()


@pytest.mark.slow
def test_a_request_is_mailed_with_a_link_that_never_decides(
        served: tuple[procs.Live, SmtpServer]) -> None:
    live, smtp = served
    with live.client("bot") as bot, live.client("ann") as ann:
        answer = bot.post("/api/v1/calls", json={
            "tool": "execute", "args": {"command": "make release"}, "call_id": "m1",
            "context": {"thread_id": "t-1"}}).json()
        request_id = answer["request_id"]
        wait_for(smtp, 1)
        recipients, message = smtp.messages[0]
        assert sorted(recipients) == ["lead@example.test", "ops@example.test"]
        assert message["From"] == "signoff@example.test"
        assert message["Subject"].startswith("[signoff] Approval needed: execute")
        body = message.get_payload(decode=True).decode()
        assert '"command": "make release"' in body
        detail = ann.get(f"/api/v1/requests/{request_id}").json()
        assert detail["args_hash"] in body
        link = f"{live.url}/requests/{request_id}"
        assert f"Open the request: {link}" in body
        # a mail client, a scanner or anyone following the link decides nothing
        for client in (httpx.Client(), live.client("ann")):
            with client:
                client.get(link, follow_redirects=True)
        assert ann.get(f"/api/v1/requests/{request_id}").json()["status"] == "pending"
        ann.post(f"/api/v1/requests/{request_id}/decisions",
                 json={"kind": "reject", "reason": "not today"})
        wait_for(smtp, 2)
        decided = smtp.messages[1][1]
        assert decided["Subject"].startswith("[signoff] Rejected: execute")
        assert "reject by ann: not today" in decided.get_payload(decode=True).decode()
        assert decided["Message-ID"] != message["Message-ID"]


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_100.0

    def __call__(self) -> float:
        return self.now


@contextlib.contextmanager
def mailer(store: Store, smtp: SmtpConfig, email: EmailList) -> Iterator[tuple[Gate, Notifier,
                                                                               Clock]]:
    clock = Clock()
    gate = Gate(Policy.from_toml(POLICY), store, clock=clock, agent="bot")
    notifier = Notifier(store, NotifyConfig(smtp=smtp, email=(email,),
                                            retry=Retry(base=1, cap=2, max_attempts=3)),
                        base_url=lambda: "http://inbox.test", clock=clock)
    notifier.tick()
    try:
        yield gate, notifier, clock
    finally:
        notifier.stop()


def ask(gate: Gate, n: int) -> str:
    proposal = gate.propose(ToolCall(id=f"c{n}", name="deploy", args={"service": f"s{n}"}),
                            RunContext(thread_id=f"t{n}"))
    assert proposal.request is not None
    return proposal.request.id


def test_a_digest_holds_its_period_then_sends_one_message(store: Store) -> None:
    smtp = SmtpServer()
    try:
        config = SmtpConfig(host="127.0.0.1", port=smtp.port, security="none")
        with mailer(store, config, EmailList(name="daily", to=("ops@example.test",),
                                             digest=900.0)) as (gate, notifier, clock):
            made = [ask(gate, n) for n in range(3)]
            notifier.tick()
            assert smtp.messages == [], "held until the period ends"
            clock.now = 1_700_000_100.0 // 900 * 900 + 900  # the period's end
            notifier.tick()
            wait_for(smtp, 1)
            [(_, message)] = smtp.messages
            assert message["Subject"] == "[signoff] 3 notifications (daily)"
            body = message.get_payload(decode=True).decode()
            assert all(f"/requests/{r}" in body for r in made)
            assert {d.status for d in store.deliveries()} == {"delivered"}
    finally:
        smtp.stop()


def test_starttls_and_login_with_a_private_ca(store: Store, tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    smtp = SmtpServer(tls=(cert, key), login=("mailer", "s3cret"))
    try:
        config = SmtpConfig(host="127.0.0.1", port=smtp.port, security="starttls",
                            username="mailer", password="s3cret", ca_file=str(cert))
        with mailer(store, config, EmailList(name="ops", to=("ops@example.test",))) as (
                gate, notifier, _):
            ask(gate, 1)
            notifier.tick()
            wait_for(smtp, 1)
        wrong = SmtpConfig(host="127.0.0.1", port=smtp.port, security="starttls",
                           username="mailer", password="wrong", ca_file=str(cert))
        with mailer(store, wrong, EmailList(name="ops2", to=("ops@example.test",))) as (
                gate, notifier, _):
            ask(gate, 2)
            notifier.tick()
            [dead] = store.deliveries(channel="email:ops2")
            assert dead.status == "dead" and "SMTPAuthenticationError" in (dead.last_error or "")
        untrusted = SmtpConfig(host="127.0.0.1", port=smtp.port, security="starttls",
                               username="mailer", password="s3cret")  # no ca_file
        with mailer(store, untrusted, EmailList(name="ops3", to=("ops@example.test",))) as (
                gate, notifier, _):
            ask(gate, 3)
            notifier.tick()
            [failed] = store.deliveries(channel="email:ops3")
            assert failed.status == "pending" and "CERTIFICATE_VERIFY_FAILED" in (
                failed.last_error or "")
        assert len(smtp.messages) == 1
    finally:
        smtp.stop()


def test_a_refused_recipient_is_dead_at_once(store: Store) -> None:
    smtp = SmtpServer()
    smtp.mailbox.refuse.add("gone@example.test")
    try:
        config = SmtpConfig(host="127.0.0.1", port=smtp.port, security="none")
        with mailer(store, config, EmailList(name="ops", to=("gone@example.test",),
                                             filters=Filters())) as (gate, notifier, _):
            ask(gate, 1)
            notifier.tick()
            [dead] = store.deliveries()
            assert dead.status == "dead" and dead.attempts == 1
            assert "SMTPRecipientsRefused" in (dead.last_error or "")
    finally:
        smtp.stop()
