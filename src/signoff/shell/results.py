"""The records of a shell analysis: findings, simple commands, the result, and the walk.

``Walk`` is the mutable state one analysis accumulates; the shared ``budget``
bounds the work a command and all the scripts nested in it may cause.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import tree_sitter

from signoff.shell.commands import Invocation
from signoff.shell.commands.models import Listing
from signoff.shell.paths import PathRef

MAX_SIMPLE_COMMANDS = 50
MAX_NESTED_SCRIPTS = 3  # bash -c "bash -c '…'" depth we are willing to look into
NESTED_BUDGET = 64 * 1024  # characters of nested scripts and argv one analysis may look into
MAX_PATH_REFS = 1024  # more distinct paths than this and the rest count as one unknown path


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    """Why no allow rule may match this command (``code`` is stable)."""

    code: str
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SimpleCommand:
    argv: tuple[str, ...]  # after quote removal; a non-literal word keeps its source text
    literal: tuple[bool, ...]  # per word: free of expansions
    name_plain: bool  # argv[0] is an unquoted, unescaped, expansion-free word
    nested: bool = False  # inside a substitution, wrapper, eval or -c string
    pipeline: int = 0  # commands sharing a pipeline share this id
    source: str = ""
    # Seen by deny and ask rules only: a wrapper's argument suffixes that may be its command
    # (``timeout 5 rm x`` → ``5 rm x``, ``rm x``). No allow rule has to admit them.
    deny_only: bool = False
    invocation: Invocation | None = None  # argv read against the command's model
    # argv without the global options before a subcommand (``git -c x=y push`` → ``git push``),
    # and whether those options were all inert (then an allow rule may match it too).
    sub_argv: tuple[str, ...] | None = None
    globals_inert: bool = False
    heredoc: bool = False  # standard input is a here-document or here-string in the command
    # argv[0] without its directory (/bin/rm: rm): asked of every command by every check,
    # so computed once
    basename: str = field(init=False, default="")

    def __post_init__(self) -> None:
        object.__setattr__(self, "basename", self.argv[0].rsplit("/", 1)[-1] if self.argv
                           else "")

    @property
    def name(self) -> str:
        return self.argv[0] if self.argv else ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ShellAnalysis:
    source: str
    commands: tuple[SimpleCommand, ...]
    never_allow: tuple[Finding, ...]
    paths: tuple[PathRef, ...]
    # For each never-allow finding raised by one command's own arguments (a wrapper, inline
    # code), the indexes of the commands that raised it; structural findings are absent.
    finding_commands: tuple[tuple[str, frozenset[int]], ...] = ()
    variables: tuple[str, ...] = ()  # the parameters it expands ($HOME, ${TOKEN:-x}), in order
    code_names: tuple[str, ...] = ()  # string literals of inline code (open(".env"))
    dumps_env: bool = False  # inline code prints or walks the whole environment
    # the commands whose words from their input are the paths a find lists (find | xargs)
    listed_paths: frozenset[int] = frozenset()

    def waivable(self, exact: set[int]) -> bool:
        """True when every never-allow finding came from commands an exact rule names."""
        owners = dict(self.finding_commands)
        return all(f.code in owners and owners[f.code] <= exact for f in self.never_allow)

    @property
    def allowable(self) -> bool:
        return not self.never_allow


@dataclass(slots=True)
class Walk:
    depth: int
    commands: list[SimpleCommand] = field(default_factory=list)
    findings: dict[str, Finding] = field(default_factory=dict)
    paths: list[PathRef] = field(default_factory=list)
    variables: list[str] = field(default_factory=list)
    code_names: list[str] = field(default_factory=list)
    dumps_env: bool = False
    cds: list[str | None] = field(default_factory=list)
    pipelines: int = 0
    # Words tree-sitter hangs on a redirection (``ls > f x``, ``cat <<EOF x``) that bash
    # passes to a command as arguments, keyed by the id of that command's node.
    extra_words: dict[int, list[tree_sitter.Node]] = field(default_factory=dict)
    seen_paths: set[PathRef] = field(default_factory=set)
    # The literal values the line assigns its variables (variables.py).
    assigned: dict[str, list[str]] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)  # $(echo .env): ".env"
    listed: dict[str, Listing] = field(default_factory=dict)  # $(find .): what it lists
    concurrent: bool = False  # a command runs in the background (&): no order to rely on
    # The redirections of a statement, by the id of the simple command they belong to.
    redirects_of: dict[int, list[tree_sitter.Node]] = field(default_factory=dict)
    # The commands of the pipeline being read, each by the one before it (stdin.py).
    before: dict[int, dict[int, tree_sitter.Node | None]] = field(default_factory=dict)
    finding_commands: dict[str, set[int]] = field(default_factory=dict)
    current: int = -1  # the index of the command whose words are being read
    raised: list[str] = field(default_factory=list)
    collecting: bool = False  # a command's own redirections are being read
    pending_redirects: list[PathRef] = field(default_factory=list)
    arithmetic: list[str] = field(default_factory=list)  # variables arithmetic evaluates
    listed_paths: set[int] = field(default_factory=set)  # see ShellAnalysis.listed_paths
    # Shared by a walk and the walks of its nested scripts: what is left to look into.
    budget: list[int] = field(default_factory=lambda: [NESTED_BUDGET])

    def spend(self, cost: int) -> bool:
        """Take ``cost`` from the shared budget; False (and a finding) once it runs out."""
        if self.budget[0] < cost:
            self.find("too_complex", "too much nested code to judge")
            return False
        self.budget[0] -= cost
        return True

    def merge(self, inner: Walk, *, deny_only: bool = False,
              findings: frozenset[str] | None = None) -> None:
        """Take a nested walk's commands (as nested, on fresh pipeline ids), findings, paths.

        ``deny_only``: its commands are seen by deny and ask rules, and need no allow rule
        (what an option or a string of code runs: the outer command is judged for it);
        ``findings``: take only these codes (a string of code may be no script at all)."""
        ids: dict[int, int] = {}
        for c in inner.commands:
            if c.pipeline not in ids:
                self.pipelines += 1
                ids[c.pipeline] = self.pipelines
            self.commands.append(SimpleCommand(
                argv=c.argv, literal=c.literal, name_plain=c.name_plain, nested=True,
                pipeline=ids[c.pipeline], source=c.source, deny_only=c.deny_only or deny_only,
                invocation=c.invocation, sub_argv=c.sub_argv, globals_inert=c.globals_inert,
                heredoc=c.heredoc))
        for finding in inner.findings.values():
            if findings is None or finding.code in findings:
                self.findings.setdefault(finding.code, finding)
        for ref in inner.paths:
            self.add_path(ref)
        self.variables.extend(inner.variables)
        self.code_names.extend(inner.code_names)
        self.dumps_env = self.dumps_env or inner.dumps_env

    def find(self, code: str, text: str) -> None:
        self.findings.setdefault(code, Finding(code=code, text=text))
        self.raised.append(code)  # every raise, so each command's own can be told apart

    def add_path(self, ref: PathRef) -> None:
        """Record a path once; past ``MAX_PATH_REFS`` the rest become one unknown path."""
        if ref in self.seen_paths:
            return
        if len(self.paths) >= MAX_PATH_REFS:
            overflow = PathRef(path=f"<more than {MAX_PATH_REFS} paths>", literal=False,
                               write=True)
            if overflow not in self.seen_paths:
                self.seen_paths.add(overflow)
                self.paths.append(overflow)
            return
        self.seen_paths.add(ref)
        self.paths.append(ref)
