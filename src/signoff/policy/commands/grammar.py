"""The option grammar of one command, and the parse of one invocation against it.

A ``Model`` is data: which short and long options a command takes, which of
them take a value, and what each option (or its value) does — ``inert``,
``read`` a path, ``write`` a path, ``exec`` a program or code, ``network`` —
plus what its operands are. ``parse`` reads an argv the way GNU getopt_long
does (clustered short options, attached values, ``--opt=value`` and
``--opt value``, any unambiguous prefix of a long option, ``--``, permutation
unless the command stops at its first operand) and classifies every word.

Anything the model does not know — an option it does not list, an ambiguous
prefix, a value on a flag, a word whose value is not known before the shell
runs it and could be an option — is ``unknown``; an allow rule never admits
an unknown part it does not name (see ``signoff.policy.commands.admit``).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

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

    def show(self) -> str:
        return self.word if self.option is None or self.value is None or \
            self.word.endswith(self.value) else f"{self.word} {self.value}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Invocation:
    """One simple command read against its model."""

    model: str  # "sed", "git log"; "" when the command has no model
    parts: tuple[Part, ...] = ()
    inner: int | None = None  # argv index where a wrapped command starts (timeout 5 CMD…)
    inner_tail: bool = False  # the wrapper appends words of its own to the wrapped command
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
    arity: dict[str, int] = {}
    shorts: dict[str, Opt] = {}
    i = 0
    while i < len(short):
        char = short[i]
        n = 0
        while i + 1 + n < len(short) and short[i + 1 + n] == ":":
            n += 1
        arity["-" + char] = REQUIRED if n == 1 else OPTIONAL if n >= 2 else NONE
        i += 1 + n
    for word in long.split():
        if word.endswith("=?"):
            arity["--" + word[:-2]] = OPTIONAL
        elif word.endswith("="):
            arity["--" + word[:-1]] = REQUIRED
        else:
            arity["--" + word] = NONE
    overrides = dict(kinds or {})
    longs: dict[str, Opt] = {}
    for key, n in arity.items():
        bare = key.lstrip("-")
        raw = overrides.pop(bare, None)
        opt = _opt(raw, n)
        if bare in ("help", "version"):
            opt = replace(opt, stop=True)
        if key.startswith("--"):
            longs[bare] = opt
        else:
            shorts[bare] = opt
    if overrides:
        raise ValueError(f"{name}: kinds for options not in the grammar: {sorted(overrides)}")
    inert = all(o.kind is Kind.INERT and o.script is None and o.sets is None
                for o in (*shorts.values(), *longs.values()))
    finish = rest.get("finish")
    return Model(name=name, short=shorts, long=longs,
                 inert_options=inert and finish is None and not rest.get("wraps"),
                 **rest)  # type: ignore[arg-type]


def _opt(raw: Kind | tuple[Kind, str] | Opt | None, arg: int) -> Opt:
    if raw is None:
        return Opt(arg=arg)
    if isinstance(raw, Opt):
        return replace(raw, arg=arg)
    if isinstance(raw, tuple):
        return Opt(kind=raw[0], why=raw[1], arg=arg)
    return Opt(kind=raw, arg=arg)


def parse(spec: Model, argv: tuple[str, ...], literal: tuple[bool, ...], start: int = 1,
          label: str | None = None) -> Invocation:
    """Classify ``argv[start:]`` against ``spec`` (``argv[0]`` is the command name)."""
    if spec.prepare is not None:
        argv, literal = spec.prepare(argv, literal)
    state = State(argv=argv, literal=literal)
    _parse_into(spec, state, start)
    sub = state.modes.get("subcommand")
    sub_index = int(state.modes.get("subcommand_index", "0"))
    return Invocation(model=label or (f"{spec.name} {sub}" if sub else spec.name),
                      parts=tuple(state.parts), inner=state.inner, inner_tail=state.inner_tail,
                      concerns=tuple(state.concerns), subcommand_index=sub_index)


def _parse_into(spec: Model, state: State, start: int) -> None:
    argv, literal = state.argv, state.literal
    n = len(argv)
    i = start
    only_operands = False
    while i < n:
        word = argv[i]
        known = literal[i] if i < len(literal) else False
        if spec.subcommands is not None and "stop" in state.modes:
            # git --version x: it prints and exits; nothing after runs
            state.parts.extend(Part(kind=Kind.INERT, word=argv[j], index=j) for j in range(i, n))
            return
        if spec.subcommands is not None and not only_operands and known and \
                not word.startswith("-"):
            sub = spec.subcommands.get(word, spec.unknown_subcommand)
            if sub is None:
                state.parts.append(Part(kind=Kind.UNKNOWN, word=word, index=i,
                                        why=f"{spec.name} {word!r} is not a known subcommand"))
                i += 1
                for j in range(i, n):
                    state.parts.append(Part(kind=Kind.UNKNOWN, word=argv[j], index=j))
                return
            state.modes["subcommand"] = word
            state.modes["subcommand_index"] = str(i)
            _parse_into(sub, state, i + 1)
            if spec.finish is not None:  # the global options' own hook, after the subcommand's
                spec.finish(state)
            return
        if not known and not only_operands:
            if spec.inert_options:
                _operand(spec, state, i, word, literal=False)
            else:
                state.parts.append(Part(
                    kind=Kind.UNKNOWN, word=word, index=i, literal=False,
                    why="a word whose value is only known when the shell runs could be any "
                        "option"))
            i += 1
            continue
        if only_operands or word == "-" or not word.startswith("-"):
            if spec.wraps and len(state.operands) >= spec.lead and not (
                    spec.assigns and "=" in word and word.split("=", 1)[0].isidentifier()):
                state.inner = i
                break
            _operand(spec, state, i, word, literal=known)
            if spec.posix and not spec.wraps:
                only_operands = True
            i += 1
            continue
        if word == "--":
            only_operands = True
            state.parts.append(Part(kind=Kind.INERT, word=word, index=i, option="--"))
            i += 1
            continue
        i = _long(spec, state, i) if word.startswith("--") else _short(spec, state, i)
        if "ends" in state.modes:
            only_operands = True
    if spec.finish is not None:
        spec.finish(state)


def _operand(spec: Model, state: State, i: int, word: str, *, literal: bool) -> None:
    kind = spec.operand
    state.operands.append(len(state.parts))
    state.parts.append(Part(
        kind=kind, word=word, index=i, literal=literal,
        value=word if kind is not Kind.INERT else None, why=spec.operand_why,
        declared=spec.operand_declared))


def long_option(spec: Model, name: str) -> tuple[str, Opt] | None:
    """The long option ``name`` names: itself, or the one option it is a prefix of."""
    opt = spec.long.get(name)
    if opt is not None:
        return name, opt
    matches = [k for k in spec.long if k.startswith(name)]
    if len(matches) == 1:
        return matches[0], spec.long[matches[0]]
    return None


def _long(spec: Model, state: State, i: int) -> int:
    argv = state.argv
    word = argv[i]
    name, eq, attached = word[2:].partition("=")
    found = long_option(spec, name) if name else None
    if found is None and spec.lenient:
        _operand(spec, state, i, word, literal=True)
        return i + 1
    if found is None:
        state.parts.append(Part(kind=Kind.UNKNOWN, word=word, index=i,
                                why=f"{spec.name} has no option --{name}"
                                if name else "an empty long option"))
        return i + 1
    full, opt = found
    canonical = "--" + full
    if opt.arg == NONE:
        if eq:
            state.parts.append(Part(kind=Kind.UNKNOWN, word=word, index=i, option=canonical,
                                    why=f"{canonical} takes no value"))
            return i + 1
        _flag(spec, state, opt, word, i, canonical=canonical)
        return i + 1
    if eq or opt.arg == OPTIONAL:
        _valued(spec, state, opt, word, i, canonical=canonical,
                value=attached if eq else None, literal=True)
        return i + 1
    if i + 1 >= len(argv):
        state.parts.append(Part(kind=Kind.UNKNOWN, word=word, index=i, option=canonical,
                                why=f"{canonical} needs a value"))
        return i + 1
    _valued(spec, state, opt, word, i, canonical=canonical, value=argv[i + 1],
                literal=_lit(state, i + 1))
    return i + 2


def _short(spec: Model, state: State, i: int) -> int:
    argv = state.argv
    word = argv[i]
    j = 1
    while j < len(word):
        char = word[j]
        opt = spec.short.get(char)
        if opt is None:
            if spec.digits and char.isdigit() and j == 1:
                state.parts.append(Part(kind=Kind.INERT, word=word, index=i, option="-NUM"))
                return i + 1
            if spec.lenient:
                _operand(spec, state, i, word, literal=True)
                return i + 1
            state.parts.append(Part(kind=Kind.UNKNOWN, word=word, index=i, option="-" + char,
                                    why=f"{spec.name} has no option -{char}"))
            return i + 1
        canonical = "-" + char
        if opt.arg == NONE:
            _flag(spec, state, opt, word, i, canonical=canonical)
            j += 1
            continue
        rest = word[j + 1:]
        if rest or opt.arg == OPTIONAL:
            _valued(spec, state, opt, word, i, canonical=canonical, value=rest or None,
                    literal=True)
            return i + 1
        if i + 1 >= len(argv):
            state.parts.append(Part(kind=Kind.UNKNOWN, word=word, index=i, option=canonical,
                                    why=f"{canonical} needs a value"))
            return i + 1
        _valued(spec, state, opt, word, i, canonical=canonical, value=argv[i + 1],
                literal=_lit(state, i + 1))
        return i + 2
    return i + 1


def _lit(state: State, i: int) -> bool:
    return state.literal[i] if i < len(state.literal) else False


def _flag(spec: Model, state: State, opt: Opt, word: str, i: int, *, canonical: str) -> None:
    if opt.ends:
        state.modes["ends"] = canonical
    if opt.sets:
        state.modes[opt.sets] = ""
        state.modes[opt.sets + "_option"] = canonical
    if opt.stop:
        state.modes["stop"] = canonical
    state.parts.append(Part(kind=opt.kind, word=word, index=i, option=canonical,
                            why=opt.why, declared=opt.declared))


def _valued(spec: Model, state: State, opt: Opt, word: str, i: int, *, canonical: str,
            value: str | None, literal: bool) -> None:
    if value is None and opt.bare is not None:
        _flag(spec, state, replace(opt, kind=opt.bare), word, i, canonical=canonical)
        return
    if opt.ends:
        state.modes["ends"] = canonical
    if opt.sets:
        state.modes[opt.sets] = value or ""
        state.modes[opt.sets + "_option"] = canonical
    shown = word if value is None or word.endswith(value) else f"{word} {value}"
    if opt.script is not None and value is not None:
        state.parts.extend(SCRIPT_JUDGES[opt.script](opt.script, value, literal, shown, i))
        return
    state.parts.append(Part(kind=opt.kind, word=shown, index=i, option=canonical, value=value,
                            literal=literal, why=opt.why, declared=opt.declared, path=opt.file))
