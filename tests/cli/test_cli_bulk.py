"""``signoff requests approve`` with several REQUEST_IDs: each call listed as it will be
approved, a confirmation (a terminal, or ``--yes``), then one bulk approval bound to the
hash of each call listed — on the database (``--db``, the gate) and on a server (``--url``,
a ``Client``), alike. A call proposed after the listing, or changed since, is not approved;
mandatory asks are refused; mixed shapes, an agent's token, no terminal without ``--yes``
and a declined question approve nothing. And one reject, edit or respond, on either."""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bulk_policy import POLICY
from signoff.cli import main
from signoff.kernel.gate import Gate
from signoff.model import Decision, RunContext, ToolCall
from signoff.policy import Policy
from signoff.server import create_app
from signoff.server.running import ServerThread
from signoff.server.settings import ServerSettings
from signoff.store.sqlite import SqliteStore


@dataclass
class Where:
    """The gate the test proposes on and reads, and the flags that make the command
    approve on it: ``--db`` (the command opens the database) or ``--url`` (a server)."""

    gate: Gate
    flags: list[str]
    tokens: dict[str, str]  # token files

    def ask(self, call_id: str, tool: str, *, principal: str = "bot", thread: str = "t1",
            **args: Any) -> str:
        proposal = self.gate.propose(ToolCall(id=call_id, name=tool, args=args),
                                     RunContext(thread_id=thread, principal=principal))
        assert proposal.request is not None, proposal
        return proposal.request.id

    def status(self, request_id: str) -> str:
        return self.gate.get_request(request_id).status.value

    def head(self) -> int:
        return list(self.gate.audit_events())[-1].index

    def written_since(self, head: int) -> list[str]:
        return [e.kind for e in self.gate.audit_events(after=head)]


@pytest.fixture(params=["db", "url"])
def where(request: pytest.FixtureRequest, tmp_path: Path,
          monkeypatch: pytest.MonkeyPatch) -> Iterator[Where]:
    (tmp_path / "signoff.toml").write_text(POLICY, "utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SIGNOFF_TOKEN", raising=False)
    db = str(tmp_path / "cli.db")
    monkeypatch.setenv("SIGNOFF_DB", db)
    gate = Gate(Policy.load(tmp_path / "signoff.toml"), SqliteStore(db))
    tokens = {}
    for name, kind, roles in (("ann", "approver", ["ops"]), ("bob", "approver", ["ops"]),
                              ("bot", "agent", [])):
        path = tmp_path / f"{name}.token"
        path.write_text(gate.add_user(name, kind=kind, roles=roles)[1], "utf-8")
        tokens[name] = str(path)
    if request.param == "db":
        yield Where(gate, ["--db", db], tokens)
    else:
        with ServerThread(create_app(gate, ServerSettings(), feed_poll=0.2)) as server:
            yield Where(gate, ["--url", server.url], tokens)
    gate.store.close()


class Terminal:
    """Standard input on a terminal: answers the question, after ``meanwhile`` (what
    happens while the approver reads)."""

    def __init__(self, answer: str, meanwhile: Callable[[], None] = lambda: None) -> None:
        self.answer = answer
        self.meanwhile = meanwhile
        self.asked = 0

    def isatty(self) -> bool:
        return True

    def readline(self) -> str:
        self.asked += 1
        self.meanwhile()
        return self.answer


def approve(where: Where, capsys: pytest.CaptureFixture[str], *ids: str,
            who: str = "ann", flags: tuple[str, ...] = ()) -> tuple[int, str, str]:
    code = main(["requests", "approve", *ids, *where.flags, "--token-file",
                 where.tokens[who], *flags])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_several_are_listed_confirmed_and_each_approved_by_itself(
        where: Where, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    ids = [where.ask(f"c{i}", "execute", command=f"pytest tests/t{i}.py") for i in range(2)]
    hidden = where.ask("c2", "execute", command="pytest tests/t\u202e.py")
    ids.append(hidden)
    later: list[str] = []
    terminal = Terminal("y\n", meanwhile=lambda: later.append(
        where.ask("c3", "execute", command="pytest tests/late.py")))
    monkeypatch.setattr(sys, "stdin", terminal)
    code, out, err = approve(where, capsys, *ids)
    assert (code, err) == (0, "")
    assert terminal.asked == 1
    listing, _, answer = out.partition("Approve these 3 calls? [y/N] ")
    for request_id in ids:  # every call, with its hash and the arguments that will run
        request = where.gate.get_request(request_id)
        assert f"{request_id}  execute  risk {request.risk.value}  thread t1  asked by bot" \
            in listing
        assert f"args ({request.run_hash}): " in listing
    assert '{"command":"pytest tests/t0.py"}' in listing
    assert '{"command":"pytest tests/t\\u202e.py"}  [1 hidden character(s)' in listing
    assert "\u202e" not in out
    assert answer.splitlines() == [
        *(f"{i}: approved (1/1 approvals)" for i in ids),
        "3 approved, 0 vote(s) recorded, 0 refused (execute(command): pytest)"]
    for request_id in ids:
        decision, = where.gate.decisions(request_id)
        assert (decision.approver, decision.scope.value) == ("ann", "once")
    # proposed while the approver read the listing: same thread, same shape, not approved
    assert where.status(later[0]) == "pending" and where.gate.decisions(later[0]) == []


def test_a_call_changed_after_the_listing_and_a_mandatory_one_are_refused(
        where: Where, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    deploys = [where.ask(f"d{i}", "deploy", env=f"e{i}") for i in range(2)]
    refund = where.ask("r1", "refund", amount="5")

    def edited() -> None:  # bob edits the second while ann reads: one vote, a new hash
        where.gate.decide(deploys[1], Decision.edit({"env": "elsewhere"}),
                          identity=where.gate.authenticate(
                              Path(where.tokens["bob"]).read_text("utf-8")))

    monkeypatch.setattr(sys, "stdin", Terminal("yes\n", meanwhile=edited))
    code, out, _ = approve(where, capsys, *deploys, refund)
    assert code == 1  # sent; some refused
    answer = out.rpartition("[y/N] ")[2].splitlines()
    assert answer[0] == f"{deploys[0]}: vote recorded, more approvals needed (1/2 approvals)"
    assert answer[1].startswith(f"{deploys[1]}: refused [args_changed]: ")
    assert answer[2].startswith(f"{refund}: refused [mandatory]: ")
    assert answer[3] == "0 approved, 1 vote(s) recorded, 2 refused (deploy(env))"
    assert [d.approver for d in where.gate.decisions(deploys[1])] == ["bob"]
    assert where.gate.decisions(refund) == [] and where.status(refund) == "pending"


def test_json_prints_the_bulk_result_and_lists_on_stderr(
        where: Where, capsys: pytest.CaptureFixture[str]) -> None:
    ids = [where.ask(f"c{i}", "execute", command=f"make t{i}") for i in range(2)]
    own = where.ask("o1", "execute", principal="ann", thread="t-ann", command="make mine")
    code, out, err = approve(where, capsys, *ids, own, flags=("--yes", "--json"))
    assert code == 1
    body = json.loads(out)
    assert body["approved"] == ids and body["recorded"] == []
    assert body["shape"] == "execute(command): make"
    assert body["shape_parts"] == {"tool": "execute", "keys": ["command"],
                                   "commands": ["make"]}
    assert [d["request_id"] for d in body["decisions"]] == ids
    assert [(r["request_id"], r["code"]) for r in body["refused"]] == [(own, "self_approval")]
    assert err.startswith("Approve once each of these 3 calls") and own in err
    assert "[y/N]" not in err  # --yes: nothing asked


def test_mixed_shapes_an_agent_and_a_listing_refused_whole_write_nothing(
        where: Where, capsys: pytest.CaptureFixture[str]) -> None:
    git = where.ask("g1", "execute", command="git status")
    push = where.ask("g2", "execute", command="git push")
    head = where.head()
    code, out, err = approve(where, capsys, git, push, flags=("--yes",))
    assert code == 2 and "[mixed_shapes]" in err and "git push" in err
    assert git in out  # listed, then refused whole
    code, _, err = approve(where, capsys, git, push, who="bot", flags=("--yes",))
    assert code == 2 and "[agent_cannot_decide]" in err
    code, _, err = approve(where, capsys, git, git, flags=("--yes",))
    assert code == 2 and "[duplicate_listed]" in err
    code, _, err = approve(where, capsys, git, "req_unknown", flags=("--yes",))
    assert code == 2 and "[not_found]" in err
    assert where.written_since(head) == []
    assert where.gate.decisions(git) == [] == where.gate.decisions(push)


def test_no_terminal_needs_yes_and_a_no_approves_nothing(
        where: Where, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    ids = [where.ask(f"c{i}", "execute", command=f"make t{i}") for i in range(2)]
    head = where.head()
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n"))  # a pipe, not a terminal
    code, out, err = approve(where, capsys, *ids)
    assert (code, out) == (2, "")
    assert "[confirmation_required]" in err and "--yes" in err
    code, out, err = approve(where, capsys, *ids, flags=("--json",))
    assert code == 2 and json.loads(out)["error"]["code"] == "confirmation_required"
    monkeypatch.setattr(sys, "stdin", Terminal("n\n"))
    code, out, err = approve(where, capsys, *ids)
    assert code == 2 and "[not_confirmed]" in err and out.endswith("[y/N] ")
    assert where.written_since(head) == []
    assert {where.status(i) for i in ids} == {"pending"}


def test_flags_for_one_request_are_usage_errors_with_several(
        where: Where, capsys: pytest.CaptureFixture[str]) -> None:
    ids = [where.ask(f"c{i}", "execute", command=f"make t{i}") for i in range(2)]
    for flags, named in ((["--thread-grant"], "--thread-grant"),
                         (["--auto-thread"], "--auto-thread"),
                         (["--also", f"{ids[1]}=sha256:{'0' * 64}"], "--also"),
                         (["--expect-hash", "sha256:" + "0" * 64], "--expect-hash"),
                         (["--idempotency-key", "k1"], "--idempotency-key")):
        with pytest.raises(SystemExit) as usage:
            approve(where, capsys, *ids, flags=("--yes", *flags))
        assert usage.value.code == 2
        err = capsys.readouterr().err
        assert f"error: {named} is for one REQUEST_ID" in err, err
    assert {where.status(i) for i in ids} == {"pending"}


def test_one_request_is_approved_as_before_on_either(
        where: Where, capsys: pytest.CaptureFixture[str]) -> None:
    first = where.ask("c1", "execute", command="make a")
    other = where.ask("c2", "execute", command="make b")
    shown = where.gate.get_request(other).run_hash
    code, out, err = approve(where, capsys, first, flags=("--auto-thread", "--also",
                                                          f"{other}={shown}"))
    assert code == 0, err
    assert out.strip() == (f"{first}: approved (1/1 approvals); thread t1 is auto; "
                           f"also approved {other}")
    third = where.ask("c3", "deploy", env="prod")
    code, out, _ = approve(where, capsys, third, flags=("--json",))
    assert code == 0 and json.loads(out)["status"] == "pending"
    code, _, err = approve(where, capsys, third, flags=("--expect-hash", "sha256:" + "1" * 64),
                           who="bob")
    assert code == 2 and "[args_changed]" in err


def test_url_takes_no_database_and_needs_a_token(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SIGNOFF_TOKEN", raising=False)
    with pytest.raises(SystemExit) as usage:
        main(["requests", "approve", "req_a", "--url", "http://127.0.0.1:9",
              "--db", str(tmp_path / "x.db")])
    assert usage.value.code == 2
    assert "give --db/--policy or --url, not both" in capsys.readouterr().err
    assert main(["requests", "approve", "req_a", "--url", "http://127.0.0.1:9"]) == 2
    assert "[unauthenticated]" in capsys.readouterr().err
    assert main(["requests", "approve", "req_a", "--url", "127.0.0.1:9", "--token", "t"]) == 2
    assert "[invalid_url]" in capsys.readouterr().err


# --- one decision of each kind, on the database or on a server ---------------------------

def decide(where: Where, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["requests", *argv, *where.flags, "--token-file", where.tokens["ann"]])
    out = capsys.readouterr()
    return code, out.out + out.err


def test_reject_edit_and_respond_decide_on_either(where: Where,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    rejected = where.ask("r1", "execute", command="pytest tests/a.py")
    code, out = decide(where, capsys, "reject", rejected, "--reason", "not now",
                       "--alternative", "run the unit tests only")
    assert (code, where.status(rejected)) == (0, "rejected"), out
    record = where.gate.get_request(rejected)
    assert record.outcome_reason is not None and "not now" in record.outcome_reason
    edited = where.ask("r2", "execute", command="pytest tests/b.py")
    code, out = decide(where, capsys, "edit", edited, "--args",
                       '{"command": "pytest tests/b.py -x"}', "--reason", "stop early",
                       "--expect-hash", where.gate.get_request(edited).run_hash)
    assert (code, where.status(edited)) == (0, "approved"), out
    assert json.loads(where.gate.get_request(edited).run_args) == {
        "command": "pytest tests/b.py -x"}
    answered = where.ask("r3", "execute", command="pytest tests/c.py")
    code, out = decide(where, capsys, "respond", answered, "--message", "it passed already")
    assert (code, where.status(answered)) == (0, "responded"), out


@pytest.mark.parametrize("edit", ['{"command": 1', '["x"]', '{"a": 1, "a": 2}'])
def test_a_bad_edit_is_refused_before_anything_is_decided(
        where: Where, capsys: pytest.CaptureFixture[str], edit: str) -> None:
    request_id = where.ask("e1", "execute", command="pytest tests/a.py")
    head = where.head()
    code, out = decide(where, capsys, "edit", request_id, "--args", edit)
    assert code == 2 and "[invalid_edit]" in out, out
    assert where.status(request_id) == "pending" and where.written_since(head) == []


def test_a_decision_bound_to_another_hash_is_refused_on_either(
        where: Where, capsys: pytest.CaptureFixture[str]) -> None:
    request_id = where.ask("h1", "execute", command="pytest tests/a.py")
    code, out = decide(where, capsys, "reject", request_id, "--reason", "no",
                       "--expect-hash", "sha256:" + "0" * 64)
    assert code == 2 and "[args_changed]" in out, out
    assert where.status(request_id) == "pending"


@pytest.mark.parametrize(("request_id", "code"), [
    ("req_\x00a", "nul_character"), ("r" * 8192, "too_long"), ("req_a\n", "invalid_identifier")])
def test_a_bad_request_id_is_typed_on_either(where: Where, capsys: pytest.CaptureFixture[str],
                                             request_id: str, code: str) -> None:
    head = where.head()
    status, out = decide(where, capsys, "reject", request_id, "--reason", "no")
    assert status == 2 and f"[{code}]" in out, out
    assert where.written_since(head) == []
