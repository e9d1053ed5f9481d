"""Managing webhooks over the admin API and ``signoff webhooks``, against real servers on both
backends, and the ``[notify]`` table's refusals."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import procs
import pytest
from receiver import Receiver
from test_webhooks_served import Rig, ask, decide, rig

from signoff.cli.common import open_store
from signoff.errors import ConfigurationError
from signoff.notify.config import new_secret, parse_notify


@pytest.fixture(params=["sqlite", "postgres"])
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Rig]:
    with rig(request.param, tmp_path) as made:
        yield made


@pytest.mark.slow
def test_only_admins_manage_webhooks(served: Rig) -> None:
    with served.client("ann") as ann:
        for method, path in (("GET", "/api/v1/webhooks"), ("POST", "/api/v1/webhooks"),
                             ("GET", "/api/v1/webhooks/deliveries"),
                             ("POST", "/api/v1/webhooks/deliveries/replay"),
                             ("DELETE", "/api/v1/webhooks/x")):
            answer = ann.request(method, path, json={"name": "x", "url": "http://x.test/"})
            assert answer.status_code == 403, (method, path, answer.text)
            assert answer.json()["code"] == "admin_required"
    with served.servers[0].client() as nobody:
        assert nobody.get("/api/v1/webhooks").status_code == 401


@pytest.mark.slow
def test_an_endpoint_registered_over_the_api_is_told_and_can_be_removed(served: Rig) -> None:
    second = Receiver("")
    try:
        with served.client("boss") as boss, served.client("bot") as bot, \
                served.client("ann") as ann:
            listed = boss.get("/api/v1/webhooks").json()["webhooks"]
            assert [(w["name"], w["source"], w["secret"]) for w in listed] == [
                ("ops", "config", None)]
            added = boss.post("/api/v1/webhooks", json={
                "name": "audit-desk", "url": second.url, "events": ["request.decided"]})
            assert added.status_code == 201, added.text
            second.secret = added.json()["secret"]
            assert second.secret.startswith("whsec_")
            listed = boss.get("/api/v1/webhooks").json()["webhooks"]
            assert {w["name"]: w["secret"] for w in listed} == {"ops": None,
                                                                 "audit-desk": None}
            request_id = ask(bot, "r1")
            decide(ann, request_id)
            second.wait_for(1)
            [arrival] = second.arrivals
            assert arrival.verified and arrival.payload["type"] == "request.decided"
            served.receiver.wait_for(2)  # the policy file's endpoint hears both events

            gone = boss.delete("/api/v1/webhooks/audit-desk")
            assert gone.status_code == 204
            decide(ann, ask(bot, "r2"))
            served.receiver.wait_for(4)
            assert len(second.arrivals) == 1, "a removed endpoint hears nothing more"
    finally:
        second.close()
    assert audit_kinds(served).count("webhook.added") == 1
    assert audit_kinds(served).count("webhook.removed") == 1
    verified = procs.signoff("audit", "verify", "--db", served.db, "--json", cwd=served.cwd)
    assert json.loads(verified.stdout)["ok"] is True


def audit_kinds(served: Rig) -> list[str]:
    store = open_store(served.db)
    try:
        return [e.kind for e in store.audit_events()]
    finally:
        store.close()


@pytest.mark.slow
@pytest.mark.parametrize(("body", "code"), [
    ({"name": "ops", "url": "http://x.test/"}, "webhook_exists"),
    ({"name": "has space", "url": "http://x.test/"}, "invalid_body"),
    ({"name": "x", "url": "ftp://x.test/"}, "invalid_body"),
    ({"name": "x", "url": "http://x.test/", "events": ["request.made"]}, "invalid_body"),
    ({"name": "x", "url": "http://x.test/", "risks": ["extreme"]}, "invalid_body"),
    ({"name": "x", "url": "http://x.test/\u0000"}, "invalid_body"),
    ({"name": "x", "url": "http://x.test/", "secret": "mine"}, "invalid_body"),
])
def test_bad_registrations_are_typed_refusals(served: Rig, body: dict[str, object],
                                              code: str) -> None:
    with served.client("boss") as boss:
        answer = boss.post("/api/v1/webhooks", json=body)
    assert 400 <= answer.status_code < 500, answer.text
    problem = answer.json()
    assert problem["code"] == code or (code == "invalid_body" and answer.status_code == 422), \
        problem


@pytest.mark.slow
def test_the_delivery_log_pages_and_a_replay_resends_with_the_same_id(served: Rig) -> None:
    with served.client("boss") as boss, served.client("bot") as bot, \
            served.client("ann") as ann:
        made = [ask(bot, f"p{n}", thread=f"t{n}") for n in range(3)]
        decide(ann, made[0])
        served.receiver.wait_for(4)
        first = boss.get("/api/v1/webhooks/deliveries", params={"limit": 2}).json()
        assert len(first["deliveries"]) == 2 and first["next_before"] is not None
        rest = boss.get("/api/v1/webhooks/deliveries",
                        params={"limit": 2, "before": first["next_before"]}).json()
        seen = [d["id"] for d in first["deliveries"] + rest["deliveries"]]
        assert len(seen) == len(set(seen)) == 4
        one = boss.get("/api/v1/webhooks/deliveries", params={"request_id": made[0]}).json()
        assert [d["type"] for d in one["deliveries"]] == ["request.decided", "request.created"]
        target = one["deliveries"][0]
        again = boss.post("/api/v1/webhooks/deliveries/replay", json={"ids": [target["id"]]})
        assert again.json() == {"replayed": [target["id"]]}
        deadline = time.monotonic() + 10
        while [a.webhook_id for a in served.receiver.arrivals].count(target["event_id"]) < 2:
            assert time.monotonic() < deadline, "the replay arrived"
            time.sleep(0.02)
        assert "webhook.replayed" in audit_kinds(served)
        unscoped = boss.post("/api/v1/webhooks/deliveries/replay", json={})
        assert unscoped.status_code == 422 and unscoped.json()["code"] == "replay_unscoped"
        missing = boss.post("/api/v1/webhooks/deliveries/replay", json={"ids": ["nope"]})
        assert missing.status_code == 404 and missing.json()["code"] == "delivery_not_found"


@pytest.mark.slow
def test_the_cli_manages_webhooks(served: Rig) -> None:
    def cli(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return procs.signoff("webhooks", *args, "--db", served.db, cwd=served.cwd,
                             check=check)

    listed = json.loads(cli("list", "--json").stdout)
    assert [w["name"] for w in listed] == ["ops"]
    added = json.loads(cli("add", "desk", "--url", "http://127.0.0.1:9/h", "--events",
                           "request.created", "--risks", "high,critical", "--json").stdout)
    assert added["secret"].startswith("whsec_") and added["risks"] == ["high", "critical"]
    assert "whsec_" not in cli("list").stdout
    assert "desk" in cli("list").stdout
    refused = cli("add", "desk", "--url", "http://127.0.0.1:9/h", check=False)
    assert refused.returncode != 0 and "webhook_exists" in refused.stderr
    refused = cli("add", "x", "--url", "http://127.0.0.1:9/h", "--events", "nope",
                  check=False)
    assert refused.returncode != 0 and "invalid_webhook" in refused.stderr
    with served.client("bot") as bot:
        request_id = ask(bot, "c1")
    served.receiver.wait_for(1)
    log = json.loads(cli("deliveries", "--endpoint", "ops", "--json").stdout)
    assert [(d["request_id"], d["status"]) for d in log] == [(request_id, "delivered")]
    replayed = json.loads(cli("replay", log[0]["id"], "--json").stdout)
    assert replayed == {"replayed": [log[0]["id"]]}
    assert "replay_unscoped" in cli("replay", check=False).stderr
    assert "webhook_in_policy" in cli("remove", "ops", check=False).stderr
    assert "removed webhook desk" in cli("remove", "desk").stdout
    assert "webhook_not_found" in cli("remove", "desk", check=False).stderr
    assert [k for k in audit_kinds(served) if k.startswith("webhook.")] == [
        "webhook.added", "webhook.replayed", "webhook.removed"]


@pytest.mark.parametrize(("table", "code"), [
    ({"webhook": {}}, "policy_invalid"),
    ({"webhooks": {"ops": {"url": "http://x.test/"}}}, "invalid_webhook"),
    ({"webhooks": {"ops": {"url": "http://x.test/", "secret": "abc"}}}, "invalid_webhook"),
    ({"webhooks": {"ops": {"url": "http://x.test/", "secret_env": "NOT_SET_ANYWHERE"}}},
     "invalid_webhook"),
    ({"webhooks": {"ops": {"url": "x.test", "secret": new_secret()}}}, "invalid_webhook"),
    ({"webhooks": {"ops": {"url": "http://x.test/", "secret": new_secret(),
                           "events": ["request.made"]}}}, "invalid_webhook"),
    ({"webhooks": {"ops": {"url": "http://x.test/", "secret": new_secret(),
                           "risks": ["huge"]}}}, "invalid_webhook"),
    ({"webhooks": {"o p": {"url": "http://x.test/", "secret": new_secret()}}},
     "invalid_webhook"),
    ({"slack": {"channel": "C1"}}, "invalid_slack"),  # no token_env
    ({"slack": {"token_env": "HOME", "signing_secret_env": "HOME"}}, "invalid_slack"),
    ({"slack": {"token_env": "HOME", "signing_secret_env": "HOME", "channel": "C1",
                "users": {"U1": 3}}}, "invalid_slack"),
    ({"email": {"ops": {"to": ["a@b.test"]}}}, "invalid_email"),  # no [notify.smtp]
    ({"smtp": {"host": "mail.test", "security": "tls"}}, "invalid_email"),
    ({"smtp": {"host": "mail.test"}, "email": {"ops": {"to": ["not an address"]}}},
     "invalid_email"),
    ({"smtp": {"host": "mail.test"}, "email": {"ops": {"to": ["a@b.test"],
                                                       "digest": "often"}}},
     "policy_invalid"),
    ({"escalation": [{"remind_after": "10m", "escalate_to": ["slack"]}]},
     "invalid_escalation"),  # escalate_to without escalate_after
    ({"escalation": [{"escalate_after": "1h", "escalate_to": ["email:nobody"]}]},
     "invalid_escalation"),
    ({"escalation": [{"risks": ["high"]}]}, "invalid_escalation"),
    ({"escalation": {"remind_after": "10m"}}, "policy_invalid"),
    ({"retry_base": "soon"}, "policy_invalid"),
    ({"max_attempts": 0}, "policy_invalid"),
])
def test_a_bad_notify_table_is_refused_by_name(table: dict[str, object], code: str) -> None:
    with pytest.raises(ConfigurationError) as refused:
        parse_notify(table, environ={"HOME": "/root"})
    assert refused.value.code == code


def test_serve_does_not_start_on_a_bad_notify_table(tmp_path: Path) -> None:
    procs.signoff("init", "signoff.toml", "--root", str(tmp_path), cwd=tmp_path)
    with (tmp_path / "signoff.toml").open("a", encoding="utf-8") as fh:
        fh.write('\n[notify.webhooks.ops]\nurl = "http://x.test/"\nsecret_env = "UNSET_X"\n')
    started = procs.signoff("serve", "--db", str(tmp_path / "s.db"), "--port", "0",
                            cwd=tmp_path, check=False, timeout=30)
    assert started.returncode != 0
    assert "invalid_webhook" in started.stderr and "UNSET_X" in started.stderr
    assert not (tmp_path / "s.db").exists(), "a bad [notify] opens no database"
