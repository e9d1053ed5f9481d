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
