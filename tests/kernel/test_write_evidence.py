"""Write evidence: a proposed write carries the diff against the file as it is at proposal,
bound to that file's version, on SQLite and PostgreSQL.

The tools are deepagents-shaped (``file_path``/``content``; ``file_path``/``old_string``/
``new_string``/``replace_all``; virtual paths). ``write_file`` and ``edit_file`` are not
registered with the gate (an adapter proposes, claims and runs them itself, as the
LangChain middleware does); ``save`` is registered and run by the gate.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from signoff import PolicyError
from signoff.kernel import write_evidence as writes
from signoff.kernel.execution import Execution
from signoff.kernel.gate import Gate
from signoff.kernel.outcomes import Outcome, OutcomeKind, ProposalKind
from signoff.model import ApprovalRequest, Decision, RequestStatus, RunContext, ToolCall
from signoff.policy import Policy, parse_policy
from signoff.store.base import Store

POLICY = """
[policy]
version = "writes-1"
gated = ["write_file", "edit_file", "execute", "save", "write_any"]

[workspace]
name = "ws"
root = "{root}"
outside = "approve"

[tools.write_file]
paths = ["file_path"]
writes = true
virtual = true
content = "content"

[tools.edit_file]
paths = ["file_path"]
writes = true
virtual = true
edit = {{ old = "old_string", new = "new_string", all = "replace_all" }}

[tools.save]
paths = ["path"]
writes = true
content = "text"

[tools.write_any]
paths = ["path"]
writes = true

[tools.execute]
shell = "command"
"""


class Writes:
    def __init__(self, store: Store, root: Path) -> None:
        self.root = root.resolve()
        self.store = store
        self.gate = Gate(Policy.from_toml(POLICY.format(root=self.root)), store)
        self.alice, _ = self.gate.add_user("alice", roles=["ops"])
        self.context = RunContext(thread_id="t-w", principal="paula")
        self.ran: list[dict[str, Any]] = []
        self.calls = 0

        @self.gate.tool()
        def save(path: str, text: str) -> int:
            self.ran.append({"path": path, "text": text})
            Path(path).write_text(text)
            return len(text)

    def propose(self, tool: str, **args: Any) -> ApprovalRequest:
        self.calls += 1
        proposal = self.gate.propose(ToolCall(id=f"c-{self.calls}", name=tool, args=args),
                                     self.context)
        assert proposal.kind is ProposalKind.PENDING, proposal.verdict
        assert proposal.request is not None
        stored = self.store.get_request(proposal.request.id)
        assert stored is not None
        assert [dict(c) for c in stored.changes] == [dict(c) for c in proposal.request.changes]
        return stored

    def change(self, tool: str, **args: Any) -> dict[str, Any]:
        request = self.propose(tool, **args)
        assert len(request.changes) == 1, request.changes
        return dict(request.changes[0])

    def approve(self, request: ApprovalRequest) -> None:
        self.gate.decide(request.id, Decision.approve(), identity=self.alice)


@pytest.fixture
def w(store: Store, workspace: Path) -> Writes:
    return Writes(store, workspace)


def sha(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


# ---- what the diff says ------------------------------------------------------------------------


def test_write_file_shows_a_unified_diff_of_the_virtual_path(w: Writes) -> None:
    (w.root / "notes.md").write_text("one\ntwo\nthree\n")
    change = w.change("write_file", file_path="/notes.md", content="one\n2\nthree\n")
    assert change["kind"] == "diff"
    assert change["path"] == "/notes.md"
    assert change["resolved"] == str(w.root / "notes.md")  # <root>/notes.md, not /notes.md
    assert change["diff"] == ("--- a/notes.md\n+++ b/notes.md\n@@ -1,3 +1,3 @@\n"
                              " one\n-two\n+2\n three\n")
    assert change["truncated"] is False
    assert change["size"] == 14 and change["sha256"] == sha(b"one\ntwo\nthree\n")
    assert change["new_sha256"] == sha(b"one\n2\nthree\n")


def test_a_new_file_is_a_diff_from_empty(w: Writes) -> None:
    change = w.change("write_file", file_path="/sub/new.txt", content="hello\nworld")
    assert change["kind"] == "new" and change["note"] == "a new file"
    assert change["exists"] is False
    assert change["diff"] == ("--- /dev/null\n+++ b/sub/new.txt\n@@ -0,0 +1,2 @@\n"
                              "+hello\n+world\n\\ No newline at end of file\n")


def test_edit_file_replaces_exactly_one_occurrence(w: Writes) -> None:
    (w.root / "a.py").write_text("x = 1\ny = 2\n")
    change = w.change("edit_file", file_path="/a.py", old_string="y = 2", new_string="y = 3")
    assert change["kind"] == "diff"
    assert "-y = 2\n+y = 3\n" in change["diff"] and " x = 1\n" in change["diff"]


def test_edit_file_replace_all(w: Writes) -> None:
    (w.root / "a.py").write_text("a\nb\na\n")
    change = w.change("edit_file", file_path="/a.py", old_string="a", new_string="c",
                      replace_all=True)
    assert change["diff"].count("-a\n") == 2 and change["diff"].count("+c\n") == 2


@pytest.mark.parametrize(("content", "old", "note"), [
    ("a\nb\na\n", "a", "appears 2 times"),
    ("a\nb\n", "zzz", "not in the file"),
    ("a\nb\n", "", "old text is empty"),
])
def test_an_edit_that_cannot_apply_says_so(w: Writes, content: str, old: str,
                                           note: str) -> None:
    (w.root / "a.txt").write_text(content)
    change = w.change("edit_file", file_path="/a.txt", old_string=old, new_string="c")
    assert change["kind"] == "edit_failed" and change["diff"] is None
    assert note in change["note"] and "the edit would fail" in change["note"]


def test_an_edit_of_a_missing_file_says_so(w: Writes) -> None:
    change = w.change("edit_file", file_path="/none.txt", old_string="a", new_string="b")
    assert change["kind"] == "edit_failed" and "does not exist" in change["note"]


def test_a_binary_file_is_described_not_diffed(w: Writes) -> None:
    data = b"\x89PNG\r\n\x1a\n\x00\x00binary"
    (w.root / "img.png").write_bytes(data)
    change = w.change("write_file", file_path="/img.png", content="text now")
    assert change["kind"] == "binary" and change["diff"] is None
    assert change["size"] == len(data) and change["sha256"] == sha(data)
    assert change["new_size"] == 8


def test_not_utf8_is_binary(w: Writes) -> None:
    (w.root / "latin.txt").write_bytes("café".encode("latin-1"))
    assert w.change("write_file", file_path="/latin.txt", content="cafe")["kind"] == "binary"


def test_a_file_over_the_read_limit_is_too_large(w: Writes) -> None:
    big = b"x" * (writes.READ_MAX + 1)
    (w.root / "big.log").write_bytes(big)
    change = w.change("write_file", file_path="/big.log", content="small\n")
    assert change["kind"] == "too_large" and change["diff"] is None
    assert change["size"] == len(big) and change["sha256"] == sha(big)


def test_a_large_diff_is_truncated_visibly(w: Writes) -> None:
    (w.root / "many.txt").write_text("".join(f"line {i}\n" for i in range(2000)))
    change = w.change("write_file", file_path="/many.txt",
                      content="".join(f"LINE {i}\n" for i in range(2000)))
    assert change["kind"] == "diff" and change["truncated"] is True
    assert change["lines"] == 4003  # two headers, one hunk header, 2000 - and 2000 +
    shown = change["diff"].splitlines()
    assert len(shown) == writes.DIFF_LINES + 1
    assert shown[-1] == (f"… {4003 - writes.DIFF_LINES} more lines not shown "
                         "(the diff has 4003 lines)")
    assert len(change["diff"].encode()) <= writes.DIFF_BYTES + 100


def test_a_hostile_diff_is_bounded_in_time(w: Writes) -> None:
    """Lines chosen to make difflib's matching quadratic: one replacement hunk instead."""
    import time

    (w.root / "h.txt").write_text("same\n" + "".join(f"{i % 150}\n" for i in range(6000)))
    started = time.monotonic()
    change = w.change("write_file", file_path="/h.txt",
                      content="same\n" + "".join(f"{i * 7 % 150}\n" for i in range(6000)))
    assert time.monotonic() - started < 2.0
    assert change["kind"] == "diff" and change["truncated"] is True
    assert change["diff"].splitlines()[:3] == ["--- a/h.txt", "+++ b/h.txt",
                                               "@@ -3,5999 +3,5999 @@"]  # "0" is common
    assert change["lines"] == 3 + 2 * 5999


def test_identical_content_says_no_change(w: Writes) -> None:
    (w.root / "same.txt").write_text("same\n")
    change = w.change("write_file", file_path="/same.txt", content="same\n")
    assert change["kind"] == "diff" and change["diff"] == "" and "no change" in change["note"]


def test_a_shell_write_records_the_path_and_its_state_not_a_diff(w: Writes) -> None:
    (w.root / "log.txt").write_text("before\n")
    request = w.propose("execute", command="echo hi >> log.txt && date > fresh.txt")
    by_path = {c["path"]: dict(c) for c in request.changes}
    assert set(by_path) == {"log.txt", "fresh.txt"}
    log, fresh = by_path["log.txt"], by_path["fresh.txt"]
    assert log["kind"] == fresh["kind"] == "shell_write"
    assert log["diff"] is None and log["size"] == 7 and log["sha256"] == sha(b"before\n")
    assert fresh["exists"] is False and fresh["size"] is None
    assert "known only once it runs" in log["note"]
    assert request.resource_versions == {
        f"file:{w.root / 'log.txt'}": "sha256:" + sha(b"before\n"),
        f"file:{w.root / 'fresh.txt'}": "absent"}


def test_a_shell_command_that_writes_nothing_has_no_changes(w: Writes) -> None:
    (w.root / "Makefile.in").write_text("x")
    request = w.propose("execute", command="cat Makefile.in | wc -l")
    assert request.changes == () and request.resource_versions == {}


def test_a_write_tool_without_content_declared_records_the_state(w: Writes) -> None:
    (w.root / "x.txt").write_text("x")
    change = w.change("write_any", path=str(w.root / "x.txt"))
    assert change["kind"] == "write" and change["diff"] is None
    assert change["sha256"] == sha(b"x") and "declares no content" in change["note"]


def test_a_symlink_to_outside_is_not_read(w: Writes, tmp_path: Path) -> None:
    secret = tmp_path / "outside-secret.txt"
    secret.write_text("TOP SECRET VALUE\n")
    os.symlink(secret, w.root / "link.txt")
    request = w.propose("write_file", file_path="/link.txt", content="overwrite\n")
    [change] = request.changes
    assert change["kind"] == "outside" and change["resolved"] == str(secret)
    assert change["size"] is None and change["sha256"] is None and change["diff"] is None
    assert "TOP SECRET" not in json.dumps(request.to_dict())
    assert request.resource_versions == {}


def test_a_fifo_is_described_without_blocking(w: Writes) -> None:
    os.mkfifo(w.root / "pipe")
    change = w.change("write_file", file_path="/pipe", content="x")
    assert change["kind"] == "unreadable" and "FIFO" in change["note"]


def test_a_credentials_file_is_bound_but_its_text_never_copied(w: Writes) -> None:
    (w.root / ".env").write_text("API_KEY=hunter2\n")
    request = w.propose("write_file", file_path="/.env", content="API_KEY=other\n")
    [change] = request.changes
    assert change["kind"] == "secret" and change["diff"] is None
    assert "hunter2" not in json.dumps(request.to_dict())
    assert request.resource_versions[f"file:{w.root / '.env'}"] == \
        "sha256:" + sha(b"API_KEY=hunter2\n")


def test_html_in_a_file_is_kept_as_text(w: Writes) -> None:
    change = w.change("write_file", file_path="/x.html", content="<script>x()</script>\n</pre>\n")
    assert "+<script>x()</script>\n+</pre>\n" in change["diff"]


# ---- bound to the file -------------------------------------------------------------------------


def _claim(w: Writes, request: ApprovalRequest) -> Execution | Outcome:
    w.approve(request)
    return w.gate.claim(request.id)


def test_unregistered_write_runs_when_the_file_is_unchanged(w: Writes) -> None:
    (w.root / "notes.md").write_text("v1\n")
    request = w.propose("write_file", file_path="/notes.md", content="v2\n")
    assert request.resource_versions == {f"file:{w.root / 'notes.md'}": "sha256:" + sha(b"v1\n")}
    claimed = _claim(w, request)
    assert isinstance(claimed, Execution) and claimed.args["content"] == "v2\n"


@pytest.mark.parametrize("change", ["edit", "delete", "create"])
def test_unregistered_write_refuses_when_the_file_changed(w: Writes, change: str) -> None:
    target = w.root / "notes.md"
    if change != "create":
        target.write_text("v1\n")
    request = w.propose("write_file", file_path="/notes.md", content="v2\n")
    if change == "edit":
        target.write_text("someone else's\n")
    elif change == "delete":
        target.unlink()
    else:
        target.write_text("appeared\n")
    claimed = _claim(w, request)
    assert isinstance(claimed, Outcome)
    assert claimed.kind is OutcomeKind.INVALIDATED and claimed.code == "resource_changed"
    assert claimed.reason is not None and str(target) in claimed.reason
    after = w.store.get_request(request.id)
    assert after is not None and after.status is RequestStatus.INVALIDATED


def test_registered_write_refuses_when_the_file_changed(w: Writes) -> None:
    target = w.root / "conf.txt"
    target.write_text("a=1\n")
    request = w.propose("save", path=str(target), text="a=2\n")
    assert request.changes[0]["kind"] == "diff"
    target.write_text("a=9\n")
    w.approve(request)
    outcome = w.gate.resume(request.id)
    assert outcome.kind is OutcomeKind.INVALIDATED and outcome.code == "resource_changed"
    assert w.ran == [] and target.read_text() == "a=9\n"


def test_registered_write_runs_when_the_file_is_unchanged(w: Writes) -> None:
    target = w.root / "conf.txt"
    target.write_text("a=1\n")
    request = w.propose("save", path=str(target), text="a=2\n")
    w.approve(request)
    assert w.gate.resume(request.id).kind is OutcomeKind.EXECUTED
    assert target.read_text() == "a=2\n"


def test_a_shell_write_refuses_when_its_file_changed(w: Writes) -> None:
    request = w.propose("execute", command="echo hi > out.txt")
    (w.root / "out.txt").write_text("raced\n")
    claimed = _claim(w, request)
    assert isinstance(claimed, Outcome) and claimed.code == "resource_changed"


def test_a_parent_swapped_for_a_symlink_after_proposal_refuses(w: Writes) -> None:
    (w.root / "d").mkdir()
    (w.root / "d" / "f.txt").write_text("inside\n")
    request = w.propose("write_file", file_path="/d/f.txt", content="new\n")
    (w.root / "other").mkdir()
    (w.root / "other" / "f.txt").write_text("inside\n")  # same content, another file
    (w.root / "d" / "f.txt").unlink()
    (w.root / "d").rmdir()
    os.symlink(w.root / "other", w.root / "d")  # still inside: the policy has no objection
    claimed = _claim(w, request)
    assert isinstance(claimed, Outcome) and claimed.code == "resource_changed"


def test_an_edit_recomputes_the_diff_and_keeps_the_binding(w: Writes) -> None:
    target = w.root / "notes.md"
    target.write_text("v1\n")
    request = w.propose("write_file", file_path="/notes.md", content="v2\n")
    w.gate.decide(request.id, Decision.edit({"file_path": "/notes.md", "content": "v3\n"}),
                  identity=w.alice)
    edited = w.store.get_request(request.id)
    assert edited is not None and edited.status is RequestStatus.APPROVED
    [change] = edited.changes
    assert change["edited"] is True and "-v1\n+v3\n" in change["diff"]
    assert edited.resource_versions == request.resource_versions
    claimed = w.gate.claim(request.id)
    assert isinstance(claimed, Execution) and claimed.args["content"] == "v3\n"


def test_an_edit_to_another_path_binds_that_path(w: Writes) -> None:
    (w.root / "a.md").write_text("a\n")
    (w.root / "b.md").write_text("b\n")
    request = w.propose("write_file", file_path="/a.md", content="x\n")
    w.gate.decide(request.id, Decision.edit({"file_path": "/b.md", "content": "x\n"}),
                  identity=w.alice)
    edited = w.store.get_request(request.id)
    assert edited is not None
    assert edited.resource_versions == {f"file:{w.root / 'b.md'}": "sha256:" + sha(b"b\n")}
    assert edited.changes[0]["path"] == "/b.md"
    (w.root / "b.md").write_text("changed\n")
    claimed = w.gate.claim(request.id)
    assert isinstance(claimed, Outcome) and claimed.code == "resource_changed"


def test_an_edit_after_the_file_changed_still_refuses(w: Writes) -> None:
    target = w.root / "notes.md"
    target.write_text("v1\n")
    request = w.propose("write_file", file_path="/notes.md", content="v2\n")
    target.write_text("changed before the edit\n")
    w.gate.decide(request.id, Decision.edit({"file_path": "/notes.md", "content": "v3\n"}),
                  identity=w.alice)
    claimed = w.gate.claim(request.id)
    assert isinstance(claimed, Outcome) and claimed.code == "resource_changed"


# ---- the policy keys ---------------------------------------------------------------------------


@pytest.mark.parametrize(("body", "field", "text"), [
    ('paths = ["p"]\ncontent = "c"', "content", "writes = true"),
    ('paths = ["p", "q"]\nwrites = true\ncontent = "c"', "content", "exactly one"),
    ('paths = ["p"]\nwrites = true\ncontent = "p"', "content", "path argument"),
    ('paths = ["p"]\nwrites = true\ncontent = 3', "content", "new text"),
    ('paths = ["p"]\nwrites = true\ncontent = "c"\nedit = { old = "o", new = "n" }', "edit",
     "not both"),
    ('paths = ["p"]\nwrites = true\nedit = { old = "o" }', "edit.new", "argument"),
    ('paths = ["p"]\nwrites = true\nedit = { old = "o", new = "o" }', "edit.new", "twice"),
    ('paths = ["p"]\nwrites = true\nedit = { old = "o", new = "n", every = "a" }', "every",
     "unknown key"),
    ('paths = ["p"]\nwrites = true\nedit = "old"', None, "must be a table"),
])
def test_bad_write_keys_name_file_tool_and_field(body: str, field: str | None,
                                                 text: str) -> None:
    with pytest.raises(PolicyError) as info:
        parse_policy(f"[tools.w]\n{body}\n", source="p.toml")
    error = info.value
    assert error.file == "p.toml" and error.rule is not None and "[tools.w]" in error.rule
    assert error.field == field and text in str(error)


def test_an_allowlisted_file_outside_the_root_is_read_beneath_its_entry(
        store: Store, workspace: Path, tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "hosts").write_text("a\n")
    os.symlink(tmp_path / "elsewhere.txt", shared / "link")
    (tmp_path / "elsewhere.txt").write_text("not allowlisted\n")
    text = POLICY.format(root=workspace.resolve()).replace(
        'outside = "approve"', f'outside = "approve"\nallowlist = ["{shared}/"]')
    gate = Gate(Policy.from_toml(text), store)
    context = RunContext(thread_id="t-a")
    listed = gate.propose(ToolCall(id="a1", name="save", args={
        "path": str(shared / "hosts"), "text": "b\n"}), context)
    assert listed.request is not None
    [change] = listed.request.changes
    assert change["kind"] == "diff" and "-a\n+b\n" in change["diff"]
    linked = gate.propose(ToolCall(id="a2", name="save", args={
        "path": str(shared / "link"), "text": "b\n"}), context)
    assert linked.request is not None
    [change] = linked.request.changes
    assert change["kind"] == "outside" and change["sha256"] is None


def test_more_files_than_the_limit_are_counted_not_described(w: Writes) -> None:
    command = "; ".join(f"echo x > f{i}.txt" for i in range(writes.CHANGES_MAX + 5))
    request = w.propose("execute", command=command)
    assert len(request.changes) == writes.CHANGES_MAX + 1
    last = request.changes[-1]
    assert last["kind"] == "omitted" and last["note"].startswith("5 more written path(s)")
    assert len(request.resource_versions) == writes.CHANGES_MAX
