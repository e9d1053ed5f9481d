"""``signoff audit verify`` with keys from outside the database: ``--keys FILE|URL`` (a JWKS)
and ``--signing-key PATH``; without them, the published keys, and the output says so."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from backdoor import rewrite_chain
from signoff import keys
from signoff.cli import main
from signoff.kernel.gate import Gate
from signoff.policy import Policy
from signoff.store.sqlite import SqliteStore


@pytest.fixture
def signed(tmp_path: Path, policy: Policy, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A database a server with a key wrote and closed (its head signed at close), that
    key's file, and a JWKS of it."""
    db = str(tmp_path / "audit.db")
    monkeypatch.setenv("SIGNOFF_DB", db)
    monkeypatch.chdir(tmp_path)
    key = keys.SigningKey.generate()
    key_file = tmp_path / "keys" / "server.pem"
    keys.write(key_file, key)
    gate = Gate(policy, SqliteStore(db), signing_key=key)
    for name in ("alice", "bob", "carol"):
        gate.add_user(name, roles=["ops"])
    head = gate.audit_head()
    gate.close()
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps(keys.jwks([key.jwk()])))
    return {"db": db, "key_file": str(key_file), "jwks": str(jwks), "kid": key.kid,
            "head": str(head[0])}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_verify_with_outside_keys_and_without(signed: dict[str, str],
                                              capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "audit", "verify", "--json")
    data = json.loads(out)
    assert code == 0 and data["ok"] is True and data["count"] == 3 and data["findings"] == []
    assert data["checkpoints"]["keys"] == "database"
    assert data["checkpoints"]["newest"] == int(signed["head"])
    code, out, _ = run(capsys, "audit", "verify")
    assert code == 0 and "audit ok: 3 events" in out
    assert "published in the database itself" in out and "--keys" in out
    for flags in (("--keys", signed["jwks"]), ("--signing-key", signed["key_file"])):
        code, out, _ = run(capsys, "audit", "verify", *flags, "--json")
        data = json.loads(out)
        assert code == 0 and data["ok"] is True, out
        assert data["checkpoints"]["keys"] == "outside"
        assert data["checkpoints"]["kids"] == [signed["kid"]]
        assert data["checkpoints"]["keys_from"] == " ".join(flags)
    code, out, _ = run(capsys, "audit", "verify", "--keys", signed["jwks"])
    assert code == 0 and f"verified with keys from outside the database (--keys {signed['jwks']})" \
        in out


def test_a_rewritten_log_fails_with_the_index_named(
        signed: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    store = SqliteStore(signed["db"])
    rewrite_chain(store, index=2, actor="mallory")
    store.close()
    code, out, _ = run(capsys, "audit", "verify", "--keys", signed["jwks"])
    head = signed["head"]
    assert code == 1
    assert f"checkpoints at index {head}: checkpoint_mismatch" in out
    assert "audit BROKEN at index" in out
    code, out, _ = run(capsys, "audit", "verify", "--keys", signed["jwks"], "--json")
    data = json.loads(out)
    assert data["ok"] is False and {"count", "first_bad", "reason", "unsealed", "anchor"} <= \
        set(data)
    assert {(f["code"], f["index"]) for f in data["findings"]} >= {
        ("checkpoint_mismatch", int(head))}


def test_a_checkpoint_by_a_key_not_trusted(signed: dict[str, str], tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    other = tmp_path / "other.json"
    other.write_text(json.dumps(keys.jwks([keys.SigningKey.generate().jwk()])))
    code, out, _ = run(capsys, "audit", "verify", "--keys", str(other), "--json")
    data = json.loads(out)
    assert code == 1 and data["checkpoints"]["verified"] == 0
    assert {(f["code"], f["kid"]) for f in data["findings"]} == {("unknown_key", signed["kid"])}


@pytest.fixture
def jwks_url(signed: dict[str, str]) -> Iterator[str]:
    body = Path(signed["jwks"]).read_bytes()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/.well-known/jwks.json"
    finally:
        server.shutdown()
        server.server_close()


def test_keys_from_a_url(jwks_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "audit", "verify", "--keys", jwks_url, "--json")
    assert code == 0 and json.loads(out)["checkpoints"]["keys"] == "outside"


def test_unreadable_keys_are_refused(signed: dict[str, str], tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "bad.json").write_text("{not json")
    for where in (str(tmp_path / "missing.json"), str(tmp_path / "bad.json"), "ftp://x/y"):
        code, _, err = run(capsys, "audit", "verify", "--keys", where)
        assert code == 2 and "[keys_unreadable]" in err
    code, _, err = run(capsys, "audit", "verify", "--signing-key", str(tmp_path / "nope.pem"))
    assert code == 2 and "[signing_key_unreadable]" in err
    with pytest.raises(SystemExit):
        main(["audit", "verify", "--help"])
    assert "--keys FILE|URL" in capsys.readouterr().out
