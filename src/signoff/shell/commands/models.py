"""The records of a command model and of one parse against it.

``Model`` is a command's option grammar as data (built with ``model()`` from
getopt-style strings); ``Part`` and ``Invocation`` are what a parse produces;
``State`` is a parse in progress, which a model's ``finish`` hook may re-read.
The parse itself is in ``grammar.py``.
"""


from __future__ import annotations

import enum
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import cache

from signoff.model import Risk


class Kind(enum.StrEnum):
    """What one part of an invocation does."""

    INERT = "inert"
    READ = "read"  # reads the path it names
    WRITE = "write"  # writes (creates, changes, deletes) the path it names
    EXEC = "exec"  # runs a program, a script or code
    NETWORK = "network"  # talks to another machine
    UNKNOWN = "unknown"  # not in the model: could be anything


@dataclass(frozen=True, slots=True, kw_only=True)
class Concern:
    """Something an invocation does that a reviewer must weigh (``code`` is stable)."""

    code: str
    text: str
    risk: Risk = Risk.HIGH


@dataclass(frozen=True, slots=True, kw_only=True)
class Part:
    """One option (with its value) or operand of an invocation, classified."""

    kind: Kind
    word: str  # as given: "-o", "--output=x", "-ofile", "README.md"
    index: int  # argv index of its first word
    option: str | None = None  # canonical name ("--output", "-o"); None for an operand
    value: str | None = None  # the path, program or code this part names
    literal: bool = True  # the value is known before the shell runs (no expansion)
    declared: bool = False  # the command's purpose (cp's target, python's script)
    why: str = ""
    cause: str | None = None  # the option that made an operand what it is (sed's -i)
    path: bool = False  # an exec part whose value is a file (sed -f FILE, pytest -c FILE)
    stat: bool = False  # a read operand only looked at (Model.stat): its content is not read

    def show(self) -> str:
        return self.word if self.option is None or self.value is None or \
            self.word.endswith(self.value) else f"{self.word} {self.value}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Tree:
    """How a command reads a directory file by file (``grep -r``, ``rg``): which files."""

    hidden: bool = True  # dot-files too (grep -r); rg skips them without --hidden
    follow: bool = False  # linked directories too (grep -R, rg -L)
    include: tuple[str, ...] = ()  # only files whose name matches one (grep --include, rg -g)
    exclude: tuple[str, ...] = ()  # not files whose name matches one (grep --exclude, rg -g!)
    exclude_dirs: tuple[str, ...] = ()  # not directories whose name matches one
    fold: bool = False  # the globs match without regard to case (find -iname, rg --iglob)
    depth: int | None = None  # how deep it goes: 1, the directory's own files (find -maxdepth)
    # the ignore files it honours (git add: .gitignore; rg: .ignore, .rgignore too), when
    # the line cannot have changed them first (chain.settle_ignores)
    ignores: tuple[str, ...] = ()
    top: bool = False  # from the repository's top, whatever the directory (git add -A)


@dataclass(frozen=True, slots=True)
class Listing:
    """The files a command prints the names of (``find``, ``ls``): those ``tree`` admits
    beneath each starting point, or the starting points themselves when ``tree`` is
    ``None`` (``ls -d``, ``find -maxdepth 0``)."""

    starts: tuple[str, ...]
    tree: Tree | None
    # every name printed starts with a starting point (find's ./x, src/x): a path, never an
    # option, so the command it is handed reads files, whatever they are called
    paths: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Invocation:
    """One simple command read against its model."""

    model: str  # "sed", "git log"; "" when the command has no model
    parts: tuple[Part, ...] = ()
    inner: int | None = None  # argv index where a wrapped command starts (timeout 5 CMD…)
    inner_tail: bool = False  # the wrapper appends words of its own to the wrapped command
    # What the command reads from standard input as names: "paths" (tar -T -), "objects"
    # (git cat-file --batch), "words" or "items" (xargs: split on blanks, or otherwise)
    stdin_names: str = ""
    stdin_delimiter: str = ""  # xargs -d: what separates the names
    stdin_replace: str = ""  # xargs -I R: R in its command is each line, nothing appended
    tree: Tree | None = None  # its operand directories are read file by file (grep -r, rg)
    concerns: tuple[Concern, ...] = ()
    subcommand_index: int = 0  # argv index of the subcommand (git log: where "log" is)

    @property
    def modelled(self) -> bool:
        return bool(self.model)


@dataclass(frozen=True, slots=True)
class Opt:
    """One option: whether it takes a value, and what it (or its value) does."""

    kind: Kind = Kind.INERT
    arg: int = 0  # 0: a flag, 1: a required value, 2: an optional (attached/=) value
    why: str = ""
    declared: bool = False
    script: str | None = None  # the value is a program in this language (sed, awk)
    sets: str | None = None  # a mode the parse records (sed -i: "in_place")
    stop: bool = False  # the command ends here (--version, --help): no program runs
    bare: Kind | None = None  # the class when an optional value is not given
    ends: bool = False  # the words after it are operands, never options (python -m, -c)
    file: bool = False  # an exec option's value is a file: the workspace guard judges it


NONE, REQUIRED, OPTIONAL = 0, 1, 2
# language -> (language, script, literal, word, index) -> parts; filled by scripts.py
SCRIPT_JUDGES: dict[str, Callable[[str, str, bool, str, int], list[Part]]] = {}
STDIN_PROGRAM = "reads its program from standard input"
# The why of an operand a program is handed (python x.py ARG): it may name a file the
# program reads, which only secret_read looks at (``ShellAnalysis.code_names``).
ARGUMENT_OF = "an argument of the "


@dataclass(slots=True)
class State:
    """A parse in progress; ``finish`` hooks re-read operands with the modes it recorded."""

    argv: tuple[str, ...]
    literal: tuple[bool, ...]
    parts: list[Part] = field(default_factory=list)
    operands: list[int] = field(default_factory=list)  # indexes into parts
    modes: dict[str, str] = field(default_factory=dict)
    concerns: list[Concern] = field(default_factory=list)
    inner: int | None = None
    inner_tail: bool = False
    stdin_names: str = ""
    stdin_delimiter: str = ""  # xargs -d: what separates the names
    stdin_replace: str = ""
    tree: Tree | None = None

    def operand_parts(self) -> list[Part]:
        return [self.parts[i] for i in self.operands]

    def set_operand(self, n: int, kind: Kind, why: str = "", *, declared: bool = False,
                    cause: str | None = None) -> None:
        """Re-class the n-th operand (negative counts from the end)."""
        index = self.operands[n]
        part = self.parts[index]
        self.parts[index] = replace(
            part, kind=kind, why=why or part.why, declared=declared, cause=cause,
            value=None if kind is Kind.INERT else part.value or part.word)

    def copies_trees(self, *options: str) -> None:
        """When one of ``options`` is given (``cp -r``, ``zip -r``; none: always, ``tar
        c``), the directories it reads are read file by file, every file."""
        if not options or any(p.option in options for p in self.parts):
            self.tree = Tree()

    def concern(self, code: str, text: str, risk: Risk = Risk.HIGH) -> None:
        if all(c.code != code for c in self.concerns):
            self.concerns.append(Concern(code=code, text=text, risk=risk))


Finish = Callable[[State], None]


@dataclass(frozen=True, slots=True, kw_only=True)
class Model:
    """A command's option grammar and the class of each option and operand."""

    name: str
    short: Mapping[str, Opt] = field(default_factory=dict)
    long: Mapping[str, Opt] = field(default_factory=dict)
    operand: Kind = Kind.READ  # the default class of an operand
    operand_why: str = ""
    operand_declared: bool = False
    # Its operands are looked at, not read (ls, stat, du): a secret's name and size, never
    # its content, so they are no secret_read (the workspace guard still judges them).
    stat: bool = False
    posix: bool = False  # options end at the first operand (wrappers, find, git)
    digits: bool = False  # -NUM is a count (head -20, tail -5)
    wraps: bool = False  # the operands from the first one on are a command line
    lead: int = 0  # operands a wrapper takes before its command (timeout's duration)
    lenient: bool = False  # an unknown option is an inert operand (echo -x prints "-x")
    assigns: bool = False  # NAME=VALUE words before a wrapped command are operands (env)
    prepare: Callable[[tuple[str, ...], tuple[bool, ...]],
                      tuple[tuple[str, ...], tuple[bool, ...]]] | None = None
    finish: Finish | None = None
    subcommands: Mapping[str, Model] | None = None
    unknown_subcommand: Model | None = None
    # True when every option is inert and a word of unknown value can do no harm as
    # an option (echo, printf, pwd): computed by ``model()``.
    inert_options: bool = False


def model(name: str, short: str = "", long: str = "", *,
          kinds: Mapping[str, Kind | tuple[Kind, str] | Opt] | None = None,
          **rest: object) -> Model:
    """Build a model from getopt-style strings.

    ``short`` is a getopt optstring (``"c:n:qv"``: ``c:`` takes a value, ``c::`` an
    optional attached one); ``long`` is space-separated names, ``name=`` taking a
    value and ``name=?`` an optional one. ``kinds`` overrides the class of an option
    by its name (a letter or a long name): a ``Kind``, ``(Kind, why)`` or a full ``Opt``.
    Options not named in ``kinds`` are inert.
    """
    # Each letter and the colons after it (getopt's optstring), parsed by ``re`` in C.
    short_arity = {char: REQUIRED if len(colons) == 1 else OPTIONAL if colons else NONE
                   for char, colons in _OPTSTRING.findall(short)}
    long_arity: dict[str, int] = {}
    for word in long.split():
        last = word[-1]
        if last == "=":
            long_arity[word[:-1]] = REQUIRED
        elif last == "?" and word[-2:] == "=?":
            long_arity[word[:-2]] = OPTIONAL
        else:
            long_arity[word] = NONE
    overrides = dict(kinds or {})
    pop = overrides.pop
    # Plain options (most of them) share one Opt per arity (``_plain``); an option named in
    # ``kinds`` is built from its override, shorts first, then longs.
    shorts = {bare: _PLAIN[n] if (raw := pop(bare, None)) is None else _opt(raw, n)
              for bare, n in short_arity.items()}
    longs = {bare: _PLAIN[n] if (raw := pop(bare, None)) is None else _opt(raw, n)
             for bare, n in long_arity.items()}
    for bare in ("help", "version"):
        if bare in longs:
            longs[bare] = _stopping(longs[bare])
    if overrides:
        raise ValueError(f"{name}: kinds for options not in the grammar: {sorted(overrides)}")
    inert = all(o.kind is Kind.INERT and o.script is None and o.sets is None
                for o in (*shorts.values(), *longs.values()))
    finish = rest.get("finish")
    return Model(name=name, short=shorts, long=longs,
                 inert_options=inert and finish is None and not rest.get("wraps"),
                 **rest)  # type: ignore[arg-type]


_OPTSTRING = re.compile(r"(.)(:*)", re.DOTALL)


@cache
def _stopping(opt: Opt) -> Opt:
    return replace(opt, stop=True)


def _opt(raw: Kind | tuple[Kind, str] | Opt | None, arg: int) -> Opt:
    if isinstance(raw, Opt):
        return replace(raw, arg=arg)
    kind, why = (Kind.INERT, "") if raw is None else raw if isinstance(raw, tuple) else (raw, "")
    return _plain(kind, why, arg)


@cache
def _plain(kind: Kind, why: str, arg: int) -> Opt:
    """One ``Opt`` of a kind, reason and arity, shared by every option that has them (an
    ``Opt`` is immutable: the tables' thousands of plain options are a few objects, made
    once, which is most of building the tables)."""
    return Opt(kind=kind, why=why, arg=arg)


_PLAIN = (_plain(Kind.INERT, "", NONE), _plain(Kind.INERT, "", REQUIRED),
          _plain(Kind.INERT, "", OPTIONAL))  # by arity: an option no ``kinds`` names
