"""``examples/receipt_executor.py`` for real: a subprocess on 127.0.0.1 that runs a deploy
only when handed a valid receipt for exactly those arguments, verified offline against the
JWKS of a real running server (its URL) or a copy of it (a file)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from server_helpers import Served, propose_deploy, serve

from signoff import receipts
from signoff.keys import SigningKey

EXAMPLE = Path(__file__).parents[2] / "examples" / "receipt_executor.py"
ISSUER = "https://signoff.test"


@pytest.fixture
def signed(tmp_path: Path) -> Iterator[Served]:
    yield from serve(tmp_path, signing_key=SigningKey.generate())


@contextmanager
def executor(keys: str, log: Path) -> Iterator[str]:
    proc = subprocess.Popen([sys.executable, str(EXAMPLE), "--keys", keys, "--issuer", ISSUER,
                             "--port", "0", "--log", str(log)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("receipt executor at http://127.0.0.1:"), \
            line + (proc.stderr.read() if proc.stderr and proc.poll() is not None else "")
        yield line.split(" at ", 1)[1].strip()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def _approved(served: Served, thread: str) -> tuple[str, dict[str, object], str]:
    """A deploy proposed by the agent, approved by alice and bob, claimed: its request id,
    the arguments to run and the receipt the claim handed over."""
    rid = propose_deploy(served, thread)
    for token in (served.alice, served.bob):
        with served.client(token) as approver:
            assert approver.post(f"/api/v1/requests/{rid}/decisions",
                                 json={"kind": "approve"}).status_code == 200
    with served.client(served.agent) as agent:
        claimed = agent.post(f"/api/v1/calls/{rid}/claim").json()
    return rid, claimed["args"], claimed["receipt"]


def _flip(token: str) -> str:
    """One character of the signature changed (a different byte, still base64url)."""
    at = len(token) - 10
    return token[:at] + ("A" if token[at] != "A" else "B") + token[at + 1:]


def test_the_executor_runs_exactly_what_was_approved_once(signed: Served, tmp_path: Path) -> None:
    log = tmp_path / "deploys.jsonl"
    rid, args, token = _approved(signed, "t-1")
    # An approval whose time ran out: the server's clock set back two hours when it was
    # proposed and approved, so its one-hour expiry is behind the executor's clock.
    signed.clock.now -= 7200
    late, late_args, late_token = _approved(signed, "t-2")
    signed.clock.now += 7200
    foreign = receipts.sign(receipts.peek(token), SigningKey.generate())  # never published
    with executor(f"{signed.url}/.well-known/jwks.json", log) as url:
        def deploy(request_id: str, arguments: object, receipt: str) -> httpx.Response:
            return httpx.post(f"{url}/deploy", json={"request_id": request_id,
                                                     "args": arguments, "receipt": receipt})

        refusals = {
            "flipped": deploy(rid, args, _flip(token)),
            "other args": deploy(rid, {**args, "env": "staging"}, token),
            "other request": deploy(late, args, token),
            "expired": deploy(late, late_args, late_token),
            "unknown key": deploy(rid, args, foreign),
        }
        assert {name: (r.status_code, r.json()["code"]) for name, r in refusals.items()} == {
            "flipped": (403, "signature_invalid"), "other args": (403, "wrong_args"),
            "other request": (403, "wrong_request"), "expired": (403, "expired"),
            "unknown key": (403, "unknown_key")}
        assert not log.exists()  # nothing ran
        ran = deploy(rid, args, token)
        assert ran.status_code == 200, ran.text
        assert ran.json()["approved_by"] == ["alice", "bob"]
        again = deploy(rid, args, token)
        assert again.status_code == 409 and again.json()["code"] == "already_run"
    assert [json.loads(line) for line in log.read_text().splitlines()] == [
        {"request_id": rid, "args": args}]


def test_the_executor_verifies_with_a_jwks_file(signed: Served, tmp_path: Path) -> None:
    keys = tmp_path / "jwks.json"
    keys.write_text(httpx.get(f"{signed.url}/.well-known/jwks.json").text)
    rid, args, token = _approved(signed, "t-3")
    with executor(str(keys), tmp_path / "log.jsonl") as url:
        answer = httpx.post(f"{url}/deploy", json={"request_id": rid, "args": args,
                                                   "receipt": token})
    assert answer.status_code == 200 and answer.json()["deployed"] == args
