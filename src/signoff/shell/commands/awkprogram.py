"""awk programs: what a program does besides reading its input and printing.

Commands run through ``system()``, ``print | cmd``, ``cmd | getline`` and
``|&``; files read with ``getline < FILE`` and written with ``print > FILE``
(a ``>`` inside a ``print`` statement, outside parentheses, is a redirection;
elsewhere a comparison); gawk's ``@load``, ``@include`` and indirect calls
(``@f()``) run code; ``/inet/`` special files open connections; ``ENVIRON``,
``PROCINFO``, ``ARGV`` and ``ARGC`` are ``unknown``.
"""

from __future__ import annotations

import re

from signoff.shell.commands.models import Kind
from signoff.shell.commands.text_util import delimited

_AWK_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_AWK_OPERAND_END = set(")]$") | set("0123456789")
_AWK_IO_FUNCS = {"system": "awk system() runs a command"}


def awk_effects(program: str) -> list[tuple[Kind, str | None, str]]:
    """What an awk program does besides reading its input and printing."""
    out: list[tuple[Kind, str | None, str]] = []
    tokens = _awk_tokens(program)
    if tokens is None:
        return [(Kind.UNKNOWN, None, "awk program could not be read")]
    in_print = False
    depth = 0
    for n, (kind, text) in enumerate(tokens):
        nxt = tokens[n + 1] if n + 1 < len(tokens) else ("", "")
        if kind == "word":
            if text in ("print", "printf"):
                in_print, depth = True, 0
            elif text == "system":  # reserved: any use of the name is the call
                out.append((Kind.EXEC, None, "awk system() runs a command"))
            elif text == "getline":
                target = _getline_source(tokens, n + 1)
                if target is not None:
                    out.append((Kind.READ, target[1] if target[0] == "string" else None,
                                "awk getline < FILE reads a file"))
            elif text in ("ARGV", "ARGC"):
                out.append((Kind.UNKNOWN, None, f"awk {text} can change the files awk reads"))
            elif text in ("ENVIRON", "PROCINFO"):
                out.append((Kind.UNKNOWN, None, f"awk {text} reads the process environment"))
        elif kind == "at":
            out.append((Kind.EXEC, None, f"gawk {text} loads code or calls a function by name"))
        elif kind == "op":
            if text in ("|", "|&"):
                out.append((Kind.EXEC, None, "an awk pipe runs a command"))
            elif text in ("(", "["):
                depth += 1
            elif text in (")", "]"):
                depth -= 1
            elif text in (";", "{", "}", "\n"):
                in_print = False
            elif text in (">", ">>") and in_print and depth <= 0:
                target = nxt
                path = target[1] if target[0] == "string" else None
                out.append((Kind.WRITE, path, "awk print > FILE writes a file"))
        elif kind == "string" and "/inet" in text:
            out.append((Kind.NETWORK, text, "gawk /inet special files open network connections"))
    return out


def awk_commands(program: str) -> tuple[list[str], bool]:
    """The command lines an awk program runs (``system("…")``, ``print | "…"``, ``"…" |
    getline``), and whether it runs one it builds when it runs (``system($0)``, ``print |
    cmd``, ``"ls " dir | getline``): that one no text shows."""
    tokens = _awk_tokens(program)
    if tokens is None:
        return [], "system" in program or "|" in program
    found: list[str] = []
    computed = False
    ends = (("op", ")"), ("op", ";"), ("op", "}"), ("op", "\n"), ("", ""))
    for n, (kind, text) in enumerate(tokens):
        after = tokens[n + 1:n + 4] + [("", "")] * 3
        if kind == "word" and text == "system":
            literal = after[0] == ("op", "(") and after[1][0] == "string" and \
                after[2] == ("op", ")")
            if literal:
                found.append(after[1][1])
            computed = computed or not literal
        elif kind == "op" and text in ("|", "|&"):
            if after[0] == ("word", "getline"):
                before = tokens[n - 1] if n else ("", "")
                glued = tokens[n - 2] if n > 1 else ("", "")
                literal = before[0] == "string" and glued[0] not in ("string", "word",
                                                                       "number")
                if literal:
                    found.append(before[1])
            else:
                literal = after[0][0] == "string" and after[1] in ends
                if literal:
                    found.append(after[0][1])
            computed = computed or not literal
    return found, computed


def _getline_source(tokens: list[tuple[str, str]], start: int) -> tuple[str, str] | None:
    """The token after ``<`` in ``getline [var] < FILE``, or ``None`` for plain getline."""
    for index in range(start, min(start + 3, len(tokens))):
        kind, text = tokens[index]
        if kind == "op" and text == "<":
            return tokens[index + 1] if index + 1 < len(tokens) else ("", "")
        if kind == "op" and text in (";", "}", "\n", ")"):
            return None
    return None


def _awk_tokens(program: str) -> list[tuple[str, str]] | None:
    """Strings, regexes, words, ``@name`` and operators; comments dropped."""
    tokens: list[tuple[str, str]] = []
    i, n = 0, len(program)
    while i < n:
        char = program[i]
        if char in " \t\r":
            i += 1
        elif char == "\\" and i + 1 < n and program[i + 1] == "\n":
            i += 2
        elif char == "#":
            end = program.find("\n", i)
            i = n if end < 0 else end
        elif char == '"':
            end = delimited(program, i + 1, '"')
            if end < 0:
                return None
            tokens.append(("string", _awk_unescape(program[i + 1:end - 1])))
            i = end
        elif char == "/" and not _after_operand(tokens):
            end = _regex_end(program, i + 1)
            if end < 0:
                return None
            tokens.append(("regex", program[i + 1:end - 1]))
            i = end
        elif char == "@":
            match = _AWK_WORD.match(program, i + 1)
            tokens.append(("at", "@" + (match.group(0) if match else "")))
            i = match.end() if match else i + 1
        elif char.isalpha() or char == "_":
            match = _AWK_WORD.match(program, i)
            assert match is not None
            tokens.append(("word", match.group(0)))
            i = match.end()
        elif char.isdigit() or char == ".":
            j = i
            while j < n and (program[j].isalnum() or program[j] == "."):
                j += 1
            tokens.append(("number", program[i:j]))
            i = j
        else:
            for op in ("|&", ">>", ">=", "<=", "==", "!=", "&&", "||", "++", "--"):
                if program.startswith(op, i):
                    tokens.append(("op", op))
                    i += len(op)
                    break
            else:
                tokens.append(("op", char))
                i += 1
    return tokens


def _after_operand(tokens: list[tuple[str, str]]) -> bool:
    """A ``/`` after an operand divides; anywhere else it opens a regex."""
    if not tokens:
        return False
    kind, text = tokens[-1]
    if kind in ("number", "string", "regex"):
        return True
    if kind == "word":
        return text not in ("print", "printf", "return", "in", "case", "getline")
    return kind == "op" and text in (")", "]", "$", "++", "--")


def _regex_end(text: str, i: int) -> int:
    n = len(text)
    in_class = False
    while i < n:
        char = text[i]
        if char == "\\":
            i += 2
            continue
        if char == "[":
            in_class = True
        elif char == "]":
            in_class = False
        elif char == "/" and not in_class:
            return i + 1
        elif char == "\n":
            return -1
        i += 1
    return -1


def _awk_unescape(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), text)
