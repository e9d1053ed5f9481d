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
an unknown part it does not name (see ``signoff.policy.admit``).
"""

from __future__ import annotations

from dataclasses import replace

from signoff.shell.commands.models import (
    NONE,
    OPTIONAL,
    SCRIPT_JUDGES,
    Invocation,
    Kind,
    Model,
    Opt,
    Part,
    State,
)


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
                      concerns=tuple(state.concerns), subcommand_index=sub_index,
                      stdin_names=state.stdin_names, stdin_delimiter=state.stdin_delimiter,
                      stdin_replace=state.stdin_replace, tree=state.tree)


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
        declared=spec.operand_declared, stat=spec.stat))


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
    return _next_word_value(spec, state, opt, i, canonical)


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
        return _next_word_value(spec, state, opt, i, canonical)
    return i + 1


def _next_word_value(spec: Model, state: State, opt: Opt, i: int, canonical: str) -> int:
    """``-o FILE``, ``--output FILE``: the value is the next word, which must exist."""
    word = state.argv[i]
    if i + 1 >= len(state.argv):
        state.parts.append(Part(kind=Kind.UNKNOWN, word=word, index=i, option=canonical,
                                why=f"{canonical} needs a value"))
        return i + 1
    _valued(spec, state, opt, word, i, canonical=canonical, value=state.argv[i + 1],
            literal=_lit(state, i + 1))
    return i + 2


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
