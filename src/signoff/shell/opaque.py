"""What the shell analysis cannot see through: the ``opaque`` finding.

A part of a command line is *opaque* when its effect cannot be known from the
text: the command it runs, the options it takes or the code it loads is decided
when the shell runs it. Opaque is never "probably fine": it is a mandatory ask
in every review mode (no rule, grant, reviewer or ``full`` mode admits it). The
forms, each found here or where the walk meets it (``analysis.py``):

* a variable that configures execution is set (``GIT_EXTERNAL_DIFF=… git diff``,
  ``LD_PRELOAD=./x.so ls``, ``export PAGER=…``, ``env TAR_OPTIONS=… tar``): the
  table is data, in ``execenv``. A command value is parsed as a nested script too,
  so deny rules see what it runs;
* brace expansion forms a command (``{sh,-c,'id'}``, ``{cat,~/.ssh/id_rsa}``): the
  expanded line is parsed and judged as a line of its own;
* a variable or a substitution is the command (``$SHELL``, ``$(…) x``, ``exec $X``);
* parameter transformation or indirection (``${x@P}``, ``${!x}``) and arithmetic on
  variables the line does not set to a number (``$((x))``, ``[[ $x -eq 1 ]]``,
  ``let``): bash evaluates the value, and ``a[$(cmd)]`` in it runs ``cmd``;
* code whose text is not on the line (``eval "$x"``, ``bash -c "$x"``, ``python -c
  "$x"``, ``source "$f"``), or a program read from a pipe (``… | base64 -d | sh``);
* input the parser and bash read differently, or too much of it to judge
  (``unparseable``, ``line_continuation``, ``control_character``, ``nul_byte``,
  ``too_large`` and the other limits): ``signoff.shell.concerns`` maps those
  findings to ``opaque``.
"""

from __future__ import annotations

import itertools
import re
import shlex
from collections.abc import Callable
from typing import Protocol

import tree_sitter

from signoff.shell import commands, execenv
from signoff.shell import words as sw
from signoff.shell.paths import PathRef
from signoff.shell.results import MAX_NESTED_SCRIPTS, Walk

Script = Callable[[str, Walk], None]


class AnalyzeInto(Protocol):
    """``shell._analyze_into``: a line parsed into a walk (the parser lives there)."""

    def __call__(self, command: str, walk: Walk, *, nested: bool) -> None: ...

CODE = "opaque"
# Findings that mean the analysis could not see the whole line.
OPAQUE_FINDINGS = frozenset({"unparseable", "line_continuation", "control_character",
                             "nul_byte", "too_large", "too_many_commands", "too_deep",
                             "too_complex", "dynamic_command_name"})
# Integers bash itself keeps: arithmetic on them evaluates no text from outside.
_SHELL_INTEGERS = frozenset({"RANDOM", "SRANDOM", "SECONDS", "LINENO", "BASHPID", "PPID",
                             "UID", "EUID", "EPOCHSECONDS", "OPTIND", "SHLVL", "COLUMNS",
                             "LINES"})
_TEST_ARITHMETIC = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_INTEGER = re.compile(r"[+-]?[0-9]+")
_READERS = frozenset({"read", "mapfile", "readarray", "printf", "getopts"})
SETTERS = _READERS | {"let"}  # commands that set variables from their words or input
ARITHMETIC_KINDS = frozenset({"arithmetic_expansion", "c_style_for_statement",
                              "compound_statement", "binary_expression"})
_MAX_BRACE_WORDS = 64


def find(walk: Walk, text: str) -> None:
    walk.find(CODE, text)


# --- variables that configure execution -------------------------------------------------


def assignment(node: tree_sitter.Node, walk: Walk, script: Script) -> None:
    """``NAME=value`` (alone, before a command, after ``export``/``declare``/``local``)."""
    name = node.child_by_field_name("name")
    if name is None:
        return
    text = sw.node_text(name)
    if name.type == "subscript":  # NAME[i]=value
        inner = name.child_by_field_name("name")
        text = sw.node_text(inner) if inner is not None else text
    if execenv.lookup(text) is None:
        return
    value = node.child_by_field_name("value")
    word = sw.word_value(value) if value is not None else sw.WordValue("", True, True)
    variable(text, word.text, word.literal, walk, script,
             raw=sw.node_text(value) if value is not None else "")


def variable(name: str, value: str, literal: bool, walk: Walk, script: Script, *,
             raw: str | None = None) -> None:
    """Judge ``name=value`` against the table: opaque, or read as what it names
    (``raw``: the value as written, for ``PATH=$PATH:…``)."""
    entry = execenv.lookup(name)
    if entry is None:
        return
    if entry.reading == "system":
        if not execenv.system_entries(name, value if literal else (raw or value)):
            find(walk, f"{name}={value[:40]!r}: {entry.why}, from a directory not the "
                 "system's")
        return
    if not literal:
        find(walk, f"{name} is set to a value known only when the shell runs ({entry.why})")
        return
    if entry.reading == "command":
        if value.strip():
            script(value, walk)  # deny rules see what it runs
        if not execenv.harmless_program(value):
            find(walk, f"{name}={value[:40]!r}: {entry.why}")
    elif entry.reading == "paths":
        entries = execenv.relative_entries(value)
        if entries is None:
            find(walk, f"{name}={value[:40]!r}: {entry.why}")
            return
        for path in entries:  # PYTHONPATH=src: the workspace guard judges src
            walk.add_path(PathRef(path=path, literal=True, write=False, cds=tuple(walk.cds),
                                  command=walk.current))
    elif entry.reading == "options":
        try:
            argv = (entry.command_of, *shlex.split(value))
        except ValueError:
            find(walk, f"{name}={value[:40]!r}: {entry.why} that cannot be read")
            return
        script(shlex.join(argv), walk)  # judged as that command's options too
        inv = commands.invocation(argv, (True,) * len(argv))
        if any(p.kind not in (commands.Kind.INERT, commands.Kind.READ) for p in inv.parts):
            find(walk, f"{name}={value[:40]!r}: {entry.why} that do more than print")
    else:
        find(walk, f"{name}={value[:40]!r}: {entry.why}")


def env_words(argv: tuple[str, ...], literal: tuple[bool, ...], walk: Walk,
              script: Script) -> None:
    """``env [-i] [-u NAME] NAME=value … cmd``: the assignments before its command."""
    index = 1
    while index < len(argv):
        word = argv[index]
        if word == "--":
            index += 1
            continue
        if word.startswith("-"):
            index += 2 if word in ("-u", "--unset", "-C", "--chdir", "-S",
                                   "--split-string") else 1
            continue
        name, eq, value = word.partition("=")
        if not eq or not _IDENTIFIER.fullmatch(name):
            return
        variable(name, value, literal[index] if index < len(literal) else False, walk, script)
        index += 1


def leading_assignments(argv: tuple[str, ...], literal: tuple[bool, ...], walk: Walk,
                        script: Script) -> None:
    """``NAME=value`` words where a command name stands: after ``time`` bash reads them as
    assignments (after ``nice`` they would be a command that fails): judged as such."""
    for index, word in enumerate(argv):
        name, eq, value = word.partition("=")
        if not eq or not _IDENTIFIER.fullmatch(name):
            return
        variable(name, value, literal[index], walk, script)


def reads_into(argv: tuple[str, ...], walk: Walk) -> None:
    """``read PAGER``, ``printf -v GIT_SSH_COMMAND …``: a table variable set from input."""
    name = argv[0].rsplit("/", 1)[-1] if argv else ""
    if name not in _READERS:
        return
    for word in argv[1:]:
        entry = execenv.lookup(word) if _IDENTIFIER.fullmatch(word) else None
        if entry is not None:
            find(walk, f"{name} sets {word} from its input ({entry.why})")
            return


# --- expansions bash evaluates ---------------------------------------------------------


_TRANSFORM = re.compile(r"@[A-Za-z]\}$")
_INDIRECT = re.compile(r"^\$\{!(?![^}]*[*@]\}$)")


def expansion(text: str, walk: Walk) -> None:
    """``${x@P}`` (prompt expansion runs ``$(…)`` in the value), any ``@`` transformation,
    and ``${!x}`` (the named variable, whose subscript bash evaluates)."""
    if _TRANSFORM.search(text):
        find(walk, f"parameter transformation {text[:40]!r} evaluates the value")
    elif _INDIRECT.match(text):
        find(walk, f"indirect expansion {text[:40]!r} evaluates the variable it names")


def arithmetic_names(node: tree_sitter.Node) -> list[str]:
    """The variables an arithmetic context reads (``$((x+1))``, ``((i++))``, c-style for)."""
    names: list[str] = []
    stack = [node]
    if node.type == "c_style_for_statement":  # the header, not the body's commands
        stack = [c for f in ("initializer", "condition", "update")
                 for c in node.children_by_field_name(f)]
    while stack:
        current = stack.pop()
        if current.type in ("variable_name", "word") and \
                _IDENTIFIER.fullmatch(sw.node_text(current)):
            names.append(sw.node_text(current))
        elif current.type in ("command_substitution", "process_substitution"):
            continue  # judged as commands of their own
        stack.extend(current.children)
    return names


def arithmetic_node(node: tree_sitter.Node) -> bool:
    """Is this node an arithmetic context? ``[[ a -eq b ]]`` is one, ``[[ a = b ]]`` not."""
    kind = node.type
    if kind in ("arithmetic_expansion", "c_style_for_statement"):
        return True
    if kind == "compound_statement":
        return bool(node.children) and node.children[0].type == "(("
    if kind == "binary_expression":
        operator = node.child_by_field_name("operator")
        return operator is not None and sw.node_text(operator) in _TEST_ARITHMETIC
    return False


def let_names(argv: tuple[str, ...]) -> list[str]:
    """``let x=y+1``: every name in its expressions."""
    if not argv or argv[0] != "let":
        return []
    return [m.group(0) for word in argv[1:] for m in _IDENTIFIER.finditer(word)]


def settle_arithmetic(names: list[str], assigned: dict[str, list[str]], walk: Walk) -> None:
    """Arithmetic on a variable is opaque unless the line sets it only to integers (or it
    is one bash keeps: ``$RANDOM``)."""
    for name in dict.fromkeys(names):
        if name in _SHELL_INTEGERS:
            continue
        values = assigned.get(name)
        if values and all(_INTEGER.fullmatch(v) for v in values):
            continue
        find(walk, f"arithmetic on ${name}: bash evaluates its value as an expression")
        return


# --- brace expansion that forms a command ----------------------------------------------


def brace_formed(command: str, walk: Walk, start: int, *, broken: bool,
                 analyze_into: AnalyzeInto) -> None:
    """Brace expansion that forms a command (``{sh,-c,'id'}``, ``{r,}m x``) is opaque, and
    the line as bash expands it is judged as a line of its own: deny and ask rules, the
    secret and sensitive checks and the workspace guard see ``cat ~/.ssh/id_rsa``.
    tree-sitter reads a leading ``{`` as a group, so an unparseable line is tried too."""
    formed = [c.argv[0] for c in walk.commands[start:]
              if c.argv and c.literal[0] and forms_command(c.argv[0])]
    if not formed and not broken:
        return
    if formed:
        find(walk, f"brace expansion forms the command {formed[0][:40]!r}")
    variant = brace_variant(command)
    if variant is None or walk.depth >= MAX_NESTED_SCRIPTS or not walk.spend(len(variant)):
        return
    inner = Walk(depth=walk.depth + 1, budget=walk.budget)
    walk.depth += 1
    analyze_into(variant, inner, nested=True)
    walk.depth -= 1
    names = [c.argv[0] for c in inner.commands if c.argv]
    if not formed and names != [c.argv[0] for c in walk.commands[start:] if c.argv]:
        find(walk, f"brace expansion forms the command {(names or [''])[0][:40]!r}")
    walk.merge(inner)


def brace_variant(source: str) -> str | None:
    """``source`` with every unquoted brace expansion expanded as bash would, before any
    other expansion (``{sh,-c,'id'}`` → ``sh -c 'id'``); ``None`` when nothing expands or
    the expansion grows past the limit (then the caller has only the original)."""
    out: list[str] = []
    changed = False
    for word, is_word in _tokens(source):
        if not is_word or "{" not in word or re.match(r"[A-Za-z_][A-Za-z0-9_]*=", word):
            out.append(word)
            continue
        expanded = _expand(word)
        if expanded is None:
            return None
        if expanded != [word]:
            changed = True
        out.append(" ".join(expanded))
    return "".join(out) if changed else None


def forms_command(name: str) -> bool:
    """Does brace expansion turn this command name (quotes removed) into other words?"""
    if "{" not in name:
        return False
    expanded = _expand(name)
    return expanded is None or expanded != [name]


def _tokens(source: str) -> list[tuple[str, bool]]:
    """Words and the text between them; quotes and escapes keep a word whole."""
    tokens: list[tuple[str, bool]] = []
    quoted = _quoting(source)
    start = 0
    i = 0
    n = len(source)
    while i < n:
        if not quoted[i] and (source[i].isspace() or source[i] in ";&|()<>"):
            if i > start:
                tokens.append((source[start:i], True))
            j = i
            while j < n and not quoted[j] and (source[j].isspace() or source[j] in ";&|()<>"):
                j += 1
            tokens.append((source[i:j], False))
            start = i = j
            continue
        i += 1
    if start < n:
        tokens.append((source[start:], True))
    return tokens


def _quoting(text: str) -> list[bool]:
    """Per character: inside quotes or escaped (True), or open to expansion (False)."""
    marks = [False] * len(text)
    i = 0
    n = len(text)
    while i < n:
        char = text[i]
        if char == "\\":
            marks[i:i + 2] = [True] * len(marks[i:i + 2])
            i += 2
            continue
        if char == "'" or (char == "$" and text[i + 1:i + 2] == "'"):
            j = text.find("'", i + (2 if char == "$" else 1))
            j = n - 1 if j < 0 else j
            marks[i:j + 1] = [True] * (j + 1 - i)
            i = j + 1
            continue
        if char == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j = min(j, n - 1)
            marks[i:j + 1] = [True] * (j + 1 - i)
            i = j + 1
            continue
        i += 1
    return marks


_SEQUENCE = re.compile(r"(-?[0-9]+)\.\.(-?[0-9]+)(?:\.\.(-?[0-9]+))?|([A-Za-z])\.\.([A-Za-z])")


def _expand(word: str) -> list[str] | None:
    """Bash brace expansion of one word, quotes kept; ``None`` past the limit."""
    results = [word]
    done: list[str] = []
    while results:
        if len(done) + len(results) > _MAX_BRACE_WORDS:
            return None
        current = results.pop(0)
        found = _first_brace(current)
        if found is None:
            done.append(current)
            continue
        start, end, options = found
        results[0:0] = [current[:start] + option + current[end + 1:] for option in options]
    return done


def _first_brace(word: str) -> tuple[int, int, list[str]] | None:
    """The first unquoted ``{…}`` that expands: its bounds and its alternatives."""
    quoted = _quoting(word)
    for start, char in enumerate(word):
        if char != "{" or quoted[start] or (start and word[start - 1] == "$"):
            continue
        depth = 0
        commas: list[int] = []
        for end in range(start, len(word)):
            if quoted[end]:
                continue
            if word[end] == "{":
                depth += 1
            elif word[end] == "}":
                depth -= 1
                if depth == 0:
                    body = word[start + 1:end]
                    if commas:
                        cuts = [start, *commas, end]
                        return start, end, [word[a + 1:b] for a, b in itertools.pairwise(cuts)]
                    sequence = _sequence(body)
                    if sequence is not None:
                        return start, end, sequence
                    break
            elif word[end] == "," and depth == 1:
                commas.append(end)
    return None


def _sequence(body: str) -> list[str] | None:
    match = _SEQUENCE.fullmatch(body)
    if match is None:
        return None
    if match.group(4):
        a, b = ord(match.group(4)), ord(match.group(5))
        step = 1 if b >= a else -1
        return [chr(c) for c in range(a, b + step, step)][:_MAX_BRACE_WORDS + 1]
    a, b = int(match.group(1)), int(match.group(2))
    step = abs(int(match.group(3) or 1)) or 1
    step = step if b >= a else -step
    if abs(b - a) // abs(step) > _MAX_BRACE_WORDS:
        return [str(a)] * (_MAX_BRACE_WORDS + 1)  # too many: the caller gives up
    return [str(v) for v in range(a, b + (1 if step > 0 else -1), step)]
