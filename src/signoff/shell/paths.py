"""Which paths a shell command reads or writes, and where ``cd`` leaves it.

Every literal argument may name a file (``cat link`` where ``link`` points
outside), so each is a path reference; so are option values (``--file=/x``,
``-c/x``), brace forms (``{/etc/passwd,x}``) and ``cd`` targets. A word that
cannot be placed statically — an expansion, ``~+``/``~-``, a path after
``cd $X`` — is recorded as not literal, and the workspace guard counts it as
outside. Kept apart from the tree walk in ``analysis.py``: this is what the
workspace step consumes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

from signoff.shell import commands
from signoff.shell import words as sw
from signoff.shell.commands import Invocation, Kind, Tree
from signoff.shell.commands.git import object_path
from signoff.shell.commands.models import Listing
from signoff.shell.commands.servers import UNKNOWN as SERVED_UNKNOWN
from signoff.shell.commands.servers import served
from signoff.shell.globoverlap import has_glob

if TYPE_CHECKING:
    from signoff.shell.results import SimpleCommand

# A word that hands a program a file's content: @FILE, field@FILE, field=@FILE, f:=@FILE
_AT_FILE = re.compile(r"(?:[\w.-]*(?::=|=)?)@(?P<file>[^@\s]+)")
# git's global options that make it work on another tree than the current directory's
_ELSEWHERE = frozenset({"-C", "--work-tree", "--git-dir"})
# Where PATH finds programs: /usr/bin/python3 runs what python3 runs, judged by its name.
# A program named by any other path is a file it reads and runs, judged by the workspace.
_PATH_DIRS = frozenset({"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin",
                        "/bin"})
PATH_MAX = 4096  # a longer word cannot name a file (ENAMETOOLONG), so it is no path reference


@dataclass(frozen=True, slots=True, kw_only=True)
class PathRef:
    """A path the command reads or writes, and the ``cd`` targets seen before it."""

    path: str
    literal: bool
    write: bool
    cds: tuple[str | None, ...] = ()  # None: a cd whose target cannot be known statically
    command: int = -1  # the index of the command it belongs to (-1: not known)
    redirect: bool = False  # a redirection target, not an argument
    tree: Tree | None = None  # read file by file, as a directory (grep -r): which files
    stat: bool = False  # only looked at (ls, stat): not a read of its content
    program: bool = False  # the file the command runs: named by a path, not on PATH


class PathSink(Protocol):
    """Where path references go: the shell walk's list, with its ``cd`` history."""

    cds: list[str | None]
    current: int

    def add_path(self, ref: PathRef) -> None: ...


def paths_of(cmd: SimpleCommand, words: list[sw.WordValue], walk: PathSink) -> None:
    name = cmd.basename
    args = words[1:]
    if name in ("cd", "pushd", "popd"):
        track_cd(name, args, walk)
        return
    cds = tuple(walk.cds)
    head = words[0] if words else None
    if head is not None and "/" in head.text and not (  # ./x.sh, ../../tmp/x: the file run
            head.literal and head.text.rpartition("/")[0] in _PATH_DIRS):
        for text in (_value_path(head.text) if head.literal else [head.text]):
            walk.add_path(PathRef(path=text, literal=head.literal, write=False, cds=cds,
                                  command=walk.current, program=True))
    directory = served(cmd.argv, cmd.literal)
    if directory is not None:  # python -m http.server: every file, to whoever asks
        walk.add_path(PathRef(path=directory, literal=directory != SERVED_UNKNOWN,
                              write=False, cds=cds, command=walk.current, tree=Tree()))
    inv = cmd.invocation
    if inv is not None and inv.modelled:
        _model_paths(inv, walk, cds)
        return
    for word in args:  # cat {/etc/passwd,x} is cat /etc/passwd x; "$F" is somewhere unknown
        _add_value(walk, word.text, literal=word.literal, write=False, cds=cds,
                   split=path_candidates)


def track_cd(name: str, args: list[sw.WordValue], walk: PathSink) -> None:
    """Track where a ``cd`` leaves the shell; one whose target is not one known path is unknown."""
    before = tuple(walk.cds)
    target = None if name == "popd" else next(
        (w for w in args if not w.text.startswith("-") or w.text == "-"), None)
    texts: list[str] = []
    if target is not None and target.literal:
        expanded = sw.brace_expand(target.text) if "{" in target.text else [target.text]
        texts = [t for t in expanded or () if t]
    if len(texts) == 1 and not texts[0].startswith(("~", "-")) and not has_glob(texts[0]):
        walk.add_path(PathRef(path=texts[0], literal=True, write=False, cds=before))
        walk.cds.append(texts[0])
        return
    # cd alone (home), cd -, cd ~, cd $X, cd {/etc,}, cd s*, popd: it lands somewhere unknown,
    # and a later ``ls`` with no argument reads whatever that is
    walk.cds.append(None)
    where = target.text if target is not None else "~" if name == "cd" else f"<{name}>"
    walk.add_path(PathRef(path=where, literal=False, write=False, cds=before))


def path_candidates(text: str) -> list[str]:
    """The paths a literal argument may name.

    Any plain word may be a file (``cat link`` where ``link`` points outside), so every
    one is judged; an option's attached value (``--file=/x``, ``-c/x``) and the value of a
    ``key=/x`` word too.
    """
    text = text.split("\x00", 1)[0]  # $'/etc/passwd\0x' reaches the kernel as /etc/passwd
    if not text or text == "-" or len(text.encode("utf-8", "surrogateescape")) > PATH_MAX:
        return []
    out: list[str] = []
    if text.startswith("-"):
        if "=" in text:
            value = text.split("=", 1)[1]
        elif not text.startswith("--"):
            value = text[2:]  # -c/etc/x, -C.., -f~/x
        else:
            return []
        if value and ("/" in value or value.startswith("~") or value in (".", "..")):
            out.append(value)
        return out
    out.append(text)
    if "=" in text:
        value = text.split("=", 1)[1]
        if value.startswith(("/", "~")) or value in (".", "..") or value.startswith("../"):
            out.append(value)
    at = _AT_FILE.fullmatch(text)  # httpie and the like: @FILE, field@FILE, field=@FILE
    if at is not None and at["file"]:
        out.append(at["file"])
    return out


def names_from_stdin(kind: str, lines: list[str], known: bool, walk: PathSink) -> None:
    """The files a command reads by names on its standard input (``tar -T -``, ``git
    cat-file --batch``): each line the command line writes there (for git, the path in
    ``HEAD:.env``, also after ``contents``), and one path nothing can place unless the
    line wrote all of the input."""
    if kind not in ("paths", "objects"):
        return
    cds = tuple(walk.cds)
    for line in lines:
        names = [line, line.split(" ", 1)[1]] if kind == "objects" and " " in line else [line]
        for name in names:
            path = object_path(name) if kind == "objects" else name
            for text in _value_path(path or ""):
                walk.add_path(PathRef(path=text, literal=True, write=False, cds=cds,
                                      command=walk.current))
    if not known:
        walk.add_path(PathRef(path=f"<{kind} named on standard input>", literal=False,
                              write=False, cds=cds, command=walk.current))


def reads_marked(argv: tuple[str, ...], mark: str) -> bool:
    """Whether the command ``argv`` may read the file a word with ``mark`` in it names
    (``cat {}`` under ``find -exec``): a modelled command when the word is a read or
    code operand, not one it only looks at or writes; a command with no model, always."""
    inv = commands.invocation(argv, (True,) * len(argv))
    if not inv.modelled:
        return any(mark in word for word in argv[1:])
    return any(mark in (p.value or p.word) and not p.stat and p.kind in (
        Kind.READ, Kind.EXEC, Kind.UNKNOWN) for p in inv.parts)


def listed_reads(listing: Listing, walk: PathSink, cds: tuple[str | None, ...],
                 command: int) -> None:
    """The files ``find`` or ``ls`` lists, read one by one by the command it hands them
    to."""
    for start in listing.starts:
        for text in _value_path(start):
            walk.add_path(PathRef(path=text, literal=True, write=False, cds=cds,
                                  command=command, tree=listing.tree))


def substituted_reads(argv: tuple[str, ...], listed: dict[str, Listing], walk: PathSink,
                      command: int) -> None:
    """The files a substitution lists, when the command reads the word it stands in."""
    for written, found in listed.items():
        if any(written in word for word in argv[1:]) and reads_marked(argv, written):
            listed_reads(found, walk, tuple(walk.cds), command)


def _model_paths(inv: Invocation, walk: PathSink, cds: tuple[str | None, ...]) -> None:
    """The files a modelled command reads and writes, as its model classes them."""
    moved = [p for p in inv.parts if p.option in _ELSEWHERE and p.index < inv.subcommand_index]
    if inv.tree is not None and moved:  # git -C DIR add -A: DIR's files, whatever its rules
        inv = replace(inv, tree=Tree())
        for part in moved:
            walk.add_path(PathRef(path=part.value or part.word, literal=part.literal and bool(
                part.value), write=False, cds=cds, command=walk.current, tree=Tree()))
    for part in inv.parts:
        kind = part.kind
        if part.value is None:
            if kind is Kind.WRITE and not part.literal:  # find -delete, tar -P: somewhere
                walk.add_path(PathRef(path=part.word, literal=False, write=True, cds=cds,
                                      command=walk.current))
            continue
        if kind in (Kind.EXEC, Kind.NETWORK) and not part.path and not (
                kind is Kind.EXEC and part.declared and part.option is None):
            continue  # a program or a URL, not a file
        if kind not in (Kind.READ, Kind.WRITE, Kind.EXEC, Kind.NETWORK):
            continue
        _add_value(walk, part.value, literal=part.literal, write=kind is Kind.WRITE, cds=cds,
                   split=_value_path,
                   tree=inv.tree if kind is Kind.READ and part.option is None else None,
                   stat=part.stat)


def _value_path(text: str) -> list[str]:
    """A value a model says is a path: up to a NUL (where the kernel stops reading)."""
    text = text.split("\x00", 1)[0]
    if not text or text == "-" or len(text.encode("utf-8", "surrogateescape")) > PATH_MAX:
        return []
    return [text]


def _add_value(walk: PathSink, value: str, *, literal: bool, write: bool,
               cds: tuple[str | None, ...], split: Callable[[str], list[str]],
               tree: Tree | None = None, stat: bool = False) -> None:
    """Record the paths one word names: each brace form, each candidate ``split`` finds;
    a word with an expansion (or too many braces) as one path nothing can place."""
    expanded = (sw.brace_expand(value) if "{" in value else [value]) if literal else None
    if expanded is None:
        walk.add_path(PathRef(path=value, literal=False, write=write, cds=cds,
                              command=walk.current, tree=tree, stat=stat))
        return
    for each in expanded:
        for text in split(each):
            # ~+ is $PWD and ~- is $OLDPWD: nothing static knows where those are
            walk.add_path(PathRef(path=text, literal=not text.startswith(("~+", "~-")),
                                  write=write, cds=cds, command=walk.current, tree=tree,
                                  stat=stat))
