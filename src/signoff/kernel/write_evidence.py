"""Write evidence: what a proposed file write will change, bound to the file as it is now.

For an ask on a tool that writes (``[tools.X] writes = true``, and the paths a shell
command writes), each written path is judged by the same resolution the scope check
uses (virtual paths included). A path inside the workspace (or allowlisted) is read
safely — through :mod:`signoff.safeopen` beneath the root, regular files only (a FIFO,
device or directory is described, never opened for reading), at most ``READ_MAX``
bytes — and described as a *change*:

* ``diff``: a unified diff of the current text to the new text (``content`` argument,
  or an ``edit`` applied the way an edit_file tool applies it); ``new``: the same, from
  an empty file, for a file that does not exist yet;
* ``binary`` (NUL bytes or not UTF-8: size and SHA-256, no diff), ``too_large`` (over
  ``READ_MAX``), ``secret`` (a credentials file: its text is never copied into a
  request), ``unreadable`` (not a regular file, or it cannot be opened);
* ``edit_failed``: the edit's old text is not in the file, or not once: said plainly,
  never guessed;
* ``shell_write``: a shell command writes it; the new content is known only once it
  runs, so only the current state is recorded (absent, or size and SHA-256); ``write``:
  the same for a write tool that declares no ``content``/``edit``;
* ``outside``: outside the workspace — never read (see docs/workspace.md).

Each file read is bound to the request as a resource version, ``file:<resolved path>``
→ ``sha256:…`` | ``absent`` | ``unreadable:…``, re-read before the approved call runs
(``file_versions_now``): a file changed since proposal refuses the claim with
``resource_changed``, for registered and unregistered tools alike.

Large diffs are cut visibly: at most ``DIFF_LINES`` lines and ``DIFF_BYTES`` bytes per
file (a last line says how many more were not shown), ``CHANGES_BYTES`` per request,
``CHANGES_MAX`` files per request. The diff is text: every surface shows it escaped.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from signoff.globs.pathglob import is_secret
from signoff.kernel.file_state import (
    PREFIX,
    READ_MAX,
    FileState,
    base_for,
    file_state,
    file_versions_now,
)
from signoff.policy import Policy
from signoff.policy.scope import MAX_PATHS_PER_ARGUMENT, judge_scope
from signoff.policy.spec import ToolSpec
from signoff.policy.workspace import PathVerdict

__all__ = ["CHANGES_MAX", "DIFF_BYTES", "DIFF_LINES", "PREFIX", "READ_MAX", "FileState",
           "WriteEvidence", "file_state", "file_versions_now", "write_evidence"]

DIFF_LINES = 400  # lines of one file's diff kept
DIFF_BYTES = 64 * 1024  # bytes of one file's diff kept
LINE_CHARS = 1000  # characters of one diff line kept
CHANGES_BYTES = 256 * 1024  # bytes of diffs kept for one request
CHANGES_MAX = 32  # files described (and bound) per request
# Changed lines (old × new, after the common head and tail) past which difflib's matching
# can take more than a fraction of a second (seconds at 6,000 × 6,000 on hostile input): the
# changed block is then shown as one replacement hunk, without a line-by-line match.
_DIFF_WORK = 4_000_000
# (the changes, the file versions they were read from)
WriteEvidence = tuple[tuple[dict[str, Any], ...], dict[str, str]]


# ---- proposal ------------------------------------------------------------------------------


def write_evidence(policy: Policy, tool: str, args: Mapping[str, Any]) -> WriteEvidence:
    """The changes a call will make (``ApprovalRequest.changes``) and the versions of the
    files they were read from (``file:<path>`` keys of ``resource_versions``)."""
    spec = policy.config.tools.get(tool)
    if spec is None or not (spec.writes or spec.shell):
        return (), {}
    command = args.get(spec.shell) if spec.shell else None
    analysis = None
    if isinstance(command, str):
        from signoff.shell import analyze  # noqa: PLC0415 (a shell command's tool only)

        analysis = analyze(command)
    if not spec.writes and (analysis is None or not any(ref.write for ref in analysis.paths)):
        return (), {}  # a shell command that writes no file
    builder = _Builder(policy, spec, args)
    if policy.workspace is None:
        builder.without_workspace(analysis)
    else:
        scope = judge_scope(policy.workspace, policy.config.workspace, spec, args, analysis)
        declared = {id(v) for v in scope.written[:_declared_count(spec, args)]}
        for verdict in scope.written:
            builder.add(verdict, shell=id(verdict) not in declared)
    return builder.done()


def _declared_count(spec: ToolSpec, args: Mapping[str, Any]) -> int:
    """How many of ``ScopeResult.written`` come from declared path arguments (they are first)."""
    if not spec.writes:
        return 0
    count = 0
    for name in spec.paths:  # as judge_scope walks them
        value = args.get(name)
        if name not in args or (value is None and spec.virtual):
            continue
        count += min(len(value), MAX_PATHS_PER_ARGUMENT) if isinstance(value, list) else 1
    return count


class _Builder:
    def __init__(self, policy: Policy, spec: ToolSpec, args: Mapping[str, Any]) -> None:
        self.policy = policy
        self.spec = spec
        self.args = args
        self.changes: list[dict[str, Any]] = []
        self.versions: dict[str, str] = {}
        self.seen: set[str] = set()
        self.budget = CHANGES_BYTES
        self.omitted = 0
        single = spec.paths[0] if len(spec.paths) == 1 else None
        self.single = single if single is not None and isinstance(args.get(single), str) \
            else None

    def done(self) -> WriteEvidence:
        if self.omitted:
            self.changes.append(_entry("", "omitted", note=f"{self.omitted} more written "
                                       f"path(s) not shown (at most {CHANGES_MAX} per request); "
                                       "they are not bound to the request"))
        return tuple(self.changes), self.versions

    def full(self) -> bool:
        if len(self.changes) >= CHANGES_MAX:
            self.omitted += 1
            return True
        return False

    def without_workspace(self, analysis: Any) -> None:
        given: list[tuple[str, bool]] = []
        if self.spec.writes:
            for name in self.spec.paths:
                value = self.args.get(name)
                for item in value if isinstance(value, list) else [value]:
                    if isinstance(item, str):
                        given.append((item, False))
        if analysis is not None:
            given.extend((ref.path, True) for ref in analysis.paths if ref.write)
        for path, _shell in given:
            if path in self.seen or self.full():
                continue
            self.seen.add(path)
            self.changes.append(_entry(path, "outside", note="no workspace is configured: "
                                       "signoff reads no file to show what changes"))

    def add(self, verdict: PathVerdict, *, shell: bool) -> None:
        key = verdict.resolved or verdict.given
        if key in self.seen:
            return
        if self.full():
            return
        self.seen.add(key)
        workspace = self.policy.workspace
        assert workspace is not None
        base = base_for(workspace, verdict)
        if base is None or verdict.resolved is None:
            why = verdict.note if verdict.code is not None or verdict.resolved is None else (
                f"resolves to {verdict.resolved!r}, outside workspace {workspace.name!r}")
            self.changes.append(_entry(verdict.given, "outside", resolved=verdict.resolved,
                                       note=f"not read: {why}"))
            return
        resolved = verdict.resolved
        secret = is_secret(resolved, self.policy.config.secrets) is not None
        state = file_state(base, resolved, want_data=not secret and not shell)
        self.versions[PREFIX + resolved] = state.version
        entry = _entry(verdict.given, "write", resolved=resolved, state=state)
        if not state.readable:
            entry.update(kind="unreadable", note=f"{verdict.given!r} {state.note}")
        elif shell:
            entry.update(kind="shell_write", note="the command writes this file; what it "
                         "writes is known only once it runs, so no diff is shown")
        elif secret:
            entry.update(kind="secret", note="a credentials file: its content is not copied "
                         "into the request")
        elif self.single is None or (self.spec.content is None and self.spec.edit is None):
            entry.update(note="this tool declares no content or edit argument: what it "
                         "writes is not known before it runs")
        else:
            self.describe(entry, verdict.given, state)
        self.changes.append(entry)

    def describe(self, entry: dict[str, Any], given: str, state: FileState) -> None:
        """A diff of the file's current text to what the content or edit makes of it."""
        if state.data is None and not state.absent:
            entry.update(kind="too_large", note=f"over {READ_MAX} bytes: no diff is shown")
            return
        current = b"" if state.data is None else state.data
        old_text = _text(current)
        new_text, problem = self.new_text(old_text, state.absent)
        if problem is not None:
            entry.update(kind="edit_failed", note=problem)
            return
        assert new_text is not None
        new_bytes = new_text.encode("utf-8", "surrogatepass")
        entry.update(new_size=len(new_bytes), new_sha256=hashlib.sha256(new_bytes).hexdigest())
        if old_text is None or "\x00" in new_text:
            entry.update(kind="binary", note="binary content (NUL bytes or not UTF-8): "
                         "described, no diff")
            return
        if len(new_bytes) > READ_MAX:
            entry.update(kind="too_large", note=f"the new content is over {READ_MAX} bytes: "
                         "no diff is shown")
            return
        kind = "new" if state.absent else "diff"
        diff, lines, shown = _unified(old_text, new_text, given, created=state.absent,
                                      budget=self.budget)
        self.budget -= len(diff.encode("utf-8", "surrogatepass"))
        entry.update(kind=kind, diff=diff, lines=lines, truncated=shown < lines)
        if kind == "new":
            entry["note"] = "a new file"
        elif lines == 0:
            entry["note"] = "no change: the new content is the file's current content"

    def new_text(self, old: str | None, absent: bool) -> tuple[str | None, str | None]:
        """(the file's text after the write, or why the edit cannot apply)."""
        spec = self.spec
        if spec.content is not None:
            value = self.args.get(spec.content)
            if not isinstance(value, str):
                return None, f"the content argument {spec.content!r} is not text"
            return value, None
        edit = spec.edit
        assert edit is not None
        old_part, new_part = self.args.get(edit.old), self.args.get(edit.new)
        every = self.args.get(edit.all) if edit.all is not None else False
        if not isinstance(old_part, str) or not isinstance(new_part, str):
            return None, (f"the edit's {edit.old!r} and {edit.new!r} arguments must be text; "
                          "the edit cannot be shown")
        if every is not None and not isinstance(every, bool):
            return None, f"the edit's {edit.all!r} argument is not true or false"
        if absent:
            return None, "the file does not exist: the edit would fail"
        if old is None:
            return None, "the file is binary (NUL bytes or not UTF-8): the edit is not shown"
        if not old_part:
            return None, "the old text is empty: the edit would fail"
        found = old.count(old_part)
        if found == 0:
            return None, "the old text is not in the file: the edit would fail"
        if found > 1 and not every:
            return None, (f"the old text appears {found} times and replacing every "
                          "occurrence was not asked for: the edit would fail")
        return old.replace(old_part, new_part, -1 if every else 1), None


def _entry(path: str, kind: str, *, resolved: str | None = None,
           state: FileState | None = None, note: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"path": path, "resolved": resolved, "kind": kind, "diff": None,
                           "truncated": False, "lines": None, "size": None, "sha256": None,
                           "exists": None, "new_size": None, "new_sha256": None,
                           "edited": False, "note": note}
    if state is not None:
        out.update(exists=not state.absent and state.readable, size=state.size,
                   sha256=state.sha256)
    return out


def _text(data: bytes) -> str | None:
    if b"\x00" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _unified(old: str, new: str, label: str, *, created: bool = False,
             budget: int = CHANGES_BYTES) -> tuple[str, int, int]:
    """(the diff text, its line count, how many of them are kept)."""
    before = old.splitlines(keepends=True)
    after = new.splitlines(keepends=True)
    name = label.lstrip("/")
    head = 0
    limit = min(len(before), len(after))
    while head < limit and before[head] == after[head]:
        head += 1
    tail = 0
    while tail < limit - head and before[-1 - tail] == after[-1 - tail]:
        tail += 1
    removed = before[head:len(before) - tail]
    added = after[head:len(after) - tail]
    if len(removed) * len(added) > _DIFF_WORK:
        # Too much matching work for a proposal: the changed block as one replacement.
        lines = [f"--- {'/dev/null' if created else 'a/' + name}\n", f"+++ b/{name}\n",
                 f"@@ -{head + 1 if removed else head},{len(removed)} "
                 f"+{head + 1 if added else head},{len(added)} @@\n",
                 *(f"-{line}" for line in removed), *(f"+{line}" for line in added)]
    else:
        import difflib  # noqa: PLC0415 (a write's diff only)

        lines = list(difflib.unified_diff(before, after,
                                          fromfile="/dev/null" if created else f"a/{name}",
                                          tofile=f"b/{name}"))
    out: list[str] = []
    size = 0
    limit = min(DIFF_BYTES, max(budget, 0))  # bytes kept
    for raw in lines:
        line = raw if raw.endswith("\n") else raw + "\n\\ No newline at end of file\n"
        if len(line) > LINE_CHARS:
            line = line[:LINE_CHARS] + f"… [{len(line) - LINE_CHARS} more characters]\n"
        cost = len(line.encode("utf-8", "surrogatepass"))
        if len(out) >= DIFF_LINES or size + cost > limit:
            break
        out.append(line)
        size += cost
    shown = len(out)
    if shown < len(lines):
        out.append(f"… {len(lines) - shown} more lines not shown (the diff has "
                   f"{len(lines)} lines)\n")
    return "".join(out), len(lines), shown
