"""The demo's workspace, its policy and the tools its scripted agent really runs.

The tools are ordinary functions registered with ``@gate.tool``: the gate
decides whether a call may run, and an approved call runs exactly once, inside
the temporary workspace. They trust the verdict they were given — the policy
has already judged every path and parsed every shell command — but still open
files beneath the workspace root so a symlink swapped in after the check
cannot lead them out.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from signoff.errors import PathError
from signoff.kernel.gate import Gate
from signoff.policy.starter import starter_toml
from signoff.safeopen import open_beneath, read_beneath

FILES = {
    "README.md": "# demo project\n\nA tiny project the scripted agent works on.\n",
    "notes.md": "# notes\n\n- TODO: write the plan down in plan.md\n- ship it\n",
    "src/app.py": "def main() -> None:\n    print('hello')  # TODO: greet by name\n",
}

# Appended to the starter policy: every write asks a human (in manual review mode).
REVIEW_WRITES = """
# Added by `signoff demo`: a human reviews every file the agent writes.
[[rules]]
id = "review-writes"
effect = "ask"
tool = "write_file"
"""

OUTPUT_LIMIT = 4000
COMMAND_TIMEOUT = 60.0


def make_workspace(root: Path) -> None:
    for name, text in FILES.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, "utf-8")


def write_policy(target: Path, root: Path) -> str:
    """The starter policy of ``signoff init`` for ``root``, plus the demo's write rule."""
    text = starter_toml(str(root)) + REVIEW_WRITES
    target.write_text(text, "utf-8")
    return text


def register_tools(gate: Gate, root: Path) -> None:
    """``read_file``, ``write_file`` and ``execute``, acting inside ``root``."""
    base = str(root)

    @gate.tool(summary=lambda a: f"Read {a.get('path')!r}")
    def read_file(path: str) -> str:
        try:
            data = read_beneath(base, path)
        except PathError as exc:
            if exc.code != "path_escape" or not os.path.isabs(path):
                raise
            # Outside the workspace: the policy asked a human, and a human approved.
            data = Path(path).read_bytes()
        return data.decode("utf-8", "replace")

    @gate.tool(summary=lambda a: f"Write {len(str(a.get('content', '')))} characters to "
               f"{a.get('path')!r}", expected_effect="creates or overwrites a workspace file")
    def write_file(path: str, content: str) -> dict[str, Any]:
        data = content.encode("utf-8")
        fd = open_beneath(base, path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        return {"path": path, "bytes": len(data)}

    @gate.tool(summary=lambda a: f"Run in the workspace: {a.get('command')}",
               expected_effect="runs a shell command with the workspace as its directory")
    def execute(command: str) -> dict[str, Any]:
        shell = shutil.which("bash") or "/bin/sh"  # the policy judged it as bash
        done = subprocess.run([shell, "-c", command], cwd=base, capture_output=True,
                              text=True, timeout=COMMAND_TIMEOUT, check=False)
        return {"exit_code": done.returncode, "stdout": done.stdout[-OUTPUT_LIMIT:],
                "stderr": done.stderr[-OUTPUT_LIMIT:]}

    del read_file, write_file, execute  # registered with the gate; called through it


def describe_result(tool: str, result: Any) -> str:
    """One line about what a tool returned, for the demo's output."""
    if tool == "read_file" and isinstance(result, str):
        lines = result.splitlines()
        first = lines[0] if lines else ""
        return f"read {len(result.encode())} bytes, {len(lines)} lines; first: {first!r}"
    if tool == "write_file" and isinstance(result, Mapping):
        return f"wrote {result.get('bytes')} bytes to {result.get('path')}"
    if tool == "execute" and isinstance(result, Mapping):
        out = " | ".join(str(result.get("stdout", "")).split("\n")).strip(" |")
        if len(out) > 90:
            out = out[:89] + "…"
        return f"exit {result.get('exit_code')}: {out or '(no output)'}"
    return repr(result)[:100]
