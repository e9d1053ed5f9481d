"""``signoff receipts verify|show`` and ``signoff keys list|rotate`` against a real SQLite
file, and ``verify`` against the JWKS URL of a real running server."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "server"))
from server_helpers import propose_make, serve

from signoff import Policy, RunContext, ToolCall, keys, receipts
from signoff.canonical import args_hash
from signoff.cli import main
from signoff.kernel.gate import Gate
from signoff.model import Decision
from signoff.store.sqlite import SqliteStore

RUN = RunContext(thread_id="t1")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def signed(tmp_path: Path, policy: Policy, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A database with one approved request signed by the key in ``key``."""
    db, key_file = str(tmp_path / "cli.db"), tmp_path / "keys" / "server.pem"
    monkeypatch.setenv("SIGNOFF_DB", db)
    monkeypatch.setenv("SIGNOFF_SIGNING_KEY", str(key_file))
    monkeypatch.chdir(tmp_path)
    key = keys.load_or_create(key_file)
    gate = Gate(policy, SqliteStore(db), signing_key=key)
    identity = gate.authenticate(gate.add_user("alice", roles=["ops"])[1])
    pending = gate.propose(ToolCall(id="c1", name="execute", args={"command": "make build"}),
                           RUN)
    assert pending.request is not None
    rid = pending.request.id
    gate.decide(rid, Decision.approve(), identity=identity)
    (tmp_path / "receipt.jws").write_text(gate.receipt(rid))
    (tmp_path / "jwks.json").write_text(json.dumps(gate.jwks()))
    gate.store.close()
    return {"db": db, "request": rid, "kid": key.kid, "key": str(key_file)}


def test_verify_with_a_jwks_file(signed: dict[str, str], tmp_path: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    rid, made = signed["request"], args_hash({"command": "make build"})
    code, out, _ = run(capsys, "receipts", "verify", "receipt.jws", "--keys", "jwks.json",
                       "--request", rid, "--args-hash", made, "--json")
    assert code == 0, out
    answer = json.loads(out)
    assert answer["valid"] and answer["kid"] == signed["kid"]
    assert answer["receipt"]["request_id"] == rid and answer["receipt"]["args_hash"] == made
    code, out, _ = run(capsys, "receipts", "verify", "receipt.jws", "--keys", "jwks.json")
    assert code == 0 and out.startswith(f"valid: request {rid}")
    code, out, _ = run(capsys, "receipts", "verify", "receipt.jws", "--keys", "jwks.json",
                       "--args-hash", args_hash({"command": "make deploy"}), "--json")
    assert code == 1 and json.loads(out)["code"] == "wrong_args"
    token = (tmp_path / "receipt.jws").read_text()
    (tmp_path / "flipped.jws").write_text(token[:-2] + ("A" if token[-2] != "A" else "B")
                                          + token[-1])
    code, out, _ = run(capsys, "receipts", "verify", "flipped.jws", "--keys", "jwks.json")
    assert code == 1 and out.startswith("refused [signature_invalid]")
    (tmp_path / "other.json").write_text(json.dumps(keys.jwks([keys.SigningKey.generate().jwk()])))
    code, out, _ = run(capsys, "receipts", "verify", "receipt.jws", "--keys", "other.json",
                       "--json")
    assert code == 1 and json.loads(out)["code"] == "unknown_key"
    code, _, err = run(capsys, "receipts", "verify", "receipt.jws", "--keys", "missing.json")
    assert code == 2 and "keys_unreadable" in err


def test_show_list_and_rotate(signed: dict[str, str], policy: Policy,
                              capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "receipts", "show", signed["request"], "--json")
    assert code == 0 and json.loads(out)["kid"] == signed["kid"]
    old_token = json.loads(out)["receipt"]
    code, out, _ = run(capsys, "keys", "list", "--json")
    assert code == 0 and [k["kid"] for k in json.loads(out)["keys"]] == [signed["kid"]]
    code, out, _ = run(capsys, "keys", "rotate", "--json")
    assert code == 0, out
    rotated = json.loads(out)
    assert rotated["retired"] == signed["kid"] and rotated["published"] != signed["kid"]
    key_file = Path(signed["key"])
    assert keys.load(key_file).kid == rotated["published"]  # the old private key is gone
    assert oct(key_file.stat().st_mode & 0o777) == "0o600"
    assert not list(key_file.parent.glob("*.next"))
    code, out, _ = run(capsys, "keys", "list", "--json")
    listed = {k["kid"]: k["retired_at"] for k in json.loads(out)["keys"]}
    assert listed[signed["kid"]] is not None and listed[rotated["published"]] is None
    code, out, _ = run(capsys, "keys", "list")
    assert f"{signed['kid']}  published" in out and "retired" in out and "signing" in out
    # The old receipt still verifies with the JWKS as it is now; new ones use the new key.
    gate = Gate(policy, SqliteStore(signed["db"]), signing_key=keys.load(key_file))
    try:
        assert receipts.verify(old_token, gate.jwks()).kid == signed["kid"]
        rotated_events = [e for e in gate.audit_events() if e.kind == "key.rotated"]
        assert len(rotated_events) == 1 and rotated_events[0].actor.startswith("os:")
    finally:
        gate.store.close()


def test_rotate_without_a_key_file_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, "keys", "rotate", "--signing-key", str(tmp_path / "none.pem"),
                       "--db", str(tmp_path / "x.db"))
    assert code == 2 and "signing_key_missing" in err


def test_verify_with_the_jwks_url_of_a_running_server(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    for served in serve(tmp_path, signing_key=keys.SigningKey.generate()):
        rid = propose_make(served, "t-url")
        with served.client(served.alice) as alice:
            assert alice.post(f"/api/v1/requests/{rid}/decisions",
                              json={"kind": "approve"}).status_code == 200
            answer = alice.get(f"/api/v1/requests/{rid}/receipt")
        (tmp_path / "answer.json").write_text(answer.text)  # the API's JSON, as saved
        code, out, _ = run(capsys, "receipts", "verify", str(tmp_path / "answer.json"),
                           "--keys", f"{served.url}/.well-known/jwks.json",
                           "--issuer", "https://signoff.test", "--request", rid, "--json")
        assert code == 0, out
        assert json.loads(out)["receipt"]["tool"] == "execute"
        code, out, _ = run(capsys, "receipts", "verify", str(tmp_path / "answer.json"),
                           "--keys", f"{served.url}/.well-known/jwks.json",
                           "--issuer", "https://elsewhere.test", "--json")
        assert code == 1 and json.loads(out)["code"] == "wrong_issuer"
