"""Virtual path arguments (issue 14, item 1): deepagents' file backends take ``/notes.md``
to mean the backend root's ``notes.md``; ``[tools.X] virtual = true`` judges them there,
through the same symlink-safe guard as real paths."""

from __future__ import annotations

from pathlib import Path

import pytest

from signoff import Policy, RunContext, ToolCall
from signoff.model import Effect

POLICY = """
[policy]
version = "virtual-1"
[workspace]
root = "{root}"
outside = "deny"
[tools.read_file]
paths = ["file_path"]
virtual = {virtual}
[tools.write_file]
paths = ["file_path"]
writes = true
virtual = {virtual}
[[rules]]
id = "files"
effect = "allow"
tool = "read_file"
[[rules]]
id = "writes"
effect = "allow"
tool = "write_file"
"""


def _policy(root: Path, virtual: bool) -> Policy:
    return Policy.from_toml(POLICY.format(root=root, virtual=str(virtual).lower()))


def _effect(policy: Policy, tool: str, path: str) -> Effect:
    return policy.evaluate(ToolCall(id="c", name=tool, args={"file_path": path,
                                                             "content": "x"}),
                           RunContext()).effect


@pytest.mark.parametrize(("path", "expected"), [
    ("/notes.md", Effect.ALLOW), ("/src/app.py", Effect.ALLOW), ("/", Effect.ALLOW),
    ("notes.md", Effect.ALLOW), ("/../outside.txt", Effect.DENY),
    ("/src/../../etc/passwd", Effect.DENY), ("/link/passwd", Effect.DENY),
    ("~/.bashrc", Effect.DENY), ("/notes\x00.md", Effect.DENY), ("/" + "a" * 8192, Effect.DENY)])
def test_virtual_paths_land_under_the_root(tmp_path: Path, path: str,
                                           expected: Effect) -> None:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "link").symlink_to("/etc")  # a symlink out of the workspace is still outside
    policy = _policy(root, virtual=True)
    assert _effect(policy, "read_file", path) is expected
    assert _effect(policy, "write_file", path) is expected


def test_the_same_paths_read_as_real_paths(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    real = _policy(root, virtual=False)
    assert _effect(real, "read_file", "/notes.md") is Effect.DENY  # the real /notes.md
    assert _effect(real, "read_file", str(root / "notes.md")) is Effect.ALLOW
    virtual = _policy(root, virtual=True)
    verdict = virtual.evaluate(ToolCall(id="c", name="read_file",
                                        args={"file_path": "/../x"}), RunContext())
    assert "'/../x'" in verdict.message  # the path as the model gave it


# ---- the real reading (issue 41): a virtual path as a real-path backend opens it ----------


@pytest.fixture
def beside(tmp_path: Path) -> Path:
    """<tmp>/ws (the root, with src/app.py and notes.md) and <tmp>/sibling/data.txt."""
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('app')\n")
    (root / "notes.md").write_text("notes\n")
    (tmp_path / "sibling").mkdir()
    (tmp_path / "sibling" / "data.txt").write_text("beside the root\n")
    return root


@pytest.mark.parametrize("path", ["/etc/passwd", "etc/passwd", "/etc/os-release", "//etc/passwd",
                                  "/proc/self/environ", "{tmp}/sibling/data.txt",
                                  "{tmp}/sibling", "/{tmp}/sibling/../sibling/data.txt"])
def test_a_virtual_path_whose_real_reading_reaches_a_file_outside_is_outside(
        beside: Path, path: str) -> None:
    """Under a virtual root these name <root>/etc/passwd, …; a backend that reads real paths
    (deepagents puts a "/" before a relative one) opens the real files: the stricter wins."""
    path = path.format(tmp=str(beside.parent).lstrip("/"))
    policy = _policy(beside, virtual=True)
    assert _effect(policy, "read_file", path) is Effect.DENY
    verdict = policy.evaluate(ToolCall(id="c", name="read_file", args={"file_path": path}),
                              RunContext())
    assert verdict.code == "outside_workspace"
    assert repr(path) in verdict.message  # quoted as the model gave it


@pytest.mark.parametrize("path", ["/notes.md", "notes.md", "/src/app.py", "/src", "/", "/.",
                                  "/missing.md", "/src/missing.py", "{root}/src/app.py",
                                  "/usr/no-such-file-here", "**/*.py", "/src/*.py"])
def test_a_virtual_path_whose_real_reading_reaches_nothing_outside_stays_virtual(
        beside: Path, path: str) -> None:
    """No noise: a real /notes.md does not exist, "/" is where every listing starts, a
    path under the root is inside in both readings, a glob is no file."""
    path = path.format(root=beside)
    assert _effect(_policy(beside, virtual=True), "read_file", path) is Effect.ALLOW


@pytest.mark.parametrize(("path", "expected"), [
    ("/out.md", Effect.ALLOW), ("/src/new.py", Effect.ALLOW), ("/new/dir/file.md", Effect.ALLOW),
    ("/notes.md", Effect.ALLOW), ("{tmp}/sibling/data.txt", Effect.DENY),
    ("{tmp}/sibling/new.txt", Effect.DENY), ("{tmp}/sibling/new/dir/x.txt", Effect.DENY),
    ("{tmp}/no-such-dir/x.txt", Effect.DENY)])
def test_a_virtual_write_counts_its_real_reading_where_it_would_create_a_file(
        beside: Path, path: str, expected: Effect) -> None:
    """A write creates the file and its missing directories: its real reading counts when
    the nearest directory that exists is not "/" (and may be written), so /out.md and
    /new/dir/file.md stay virtual, and a new file beside the root is outside."""
    path = path.format(tmp=beside.parent)
    assert _effect(_policy(beside, virtual=True), "write_file", path) is expected


def test_an_allowlisted_real_reading_is_admitted(beside: Path) -> None:
    text = POLICY.format(root=beside, virtual="true").replace(
        'outside = "deny"', 'outside = "deny"\nallowlist = ["/etc/hostname"]')
    policy = Policy.from_toml(text)
    assert _effect(policy, "read_file", "/etc/hostname") is Effect.ALLOW
    assert _effect(policy, "read_file", "/etc/passwd") is Effect.DENY


def test_the_real_reading_is_explained_and_outside_writes_are_not_read(beside: Path) -> None:
    """An ask names the real reading; the request's changes show both readings, the
    outside one unread."""
    from signoff.kernel.write_evidence import write_evidence

    text = POLICY.format(root=beside, virtual="true").replace('outside = "deny"',
                                                              'outside = "approve"')
    policy = Policy.from_toml(text)
    target = str(beside.parent / "sibling" / "data.txt")
    verdict = policy.evaluate(ToolCall(id="c", name="read_file", args={"file_path": target}),
                              RunContext())
    assert verdict.effect is Effect.ASK
    assert any("read as a real path" in r.text for r in verdict.reasons)
    changes, versions = write_evidence(policy, "write_file", {"file_path": target,
                                                              "content": "overwritten\n"})
    kinds = {c["resolved"]: c["kind"] for c in changes}
    assert kinds[target] == "outside"  # the real file: not read, not bound
    assert kinds[str(beside) + target] == "write"  # the virtual reading, <root>/<target>
    assert not any(target == key.partition(":")[2] for key in versions)
