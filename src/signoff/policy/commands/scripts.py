"""The two script languages read-only commands carry: sed scripts and awk programs.

``judge_script`` turns a script into the parts it amounts to: the files it
reads (``r``, ``R``, ``getline < f``) and writes (``w``, ``W``, ``s///w``,
``print > f``), and the commands it runs (``e``, ``s///e``, ``system()``,
``print | cmd``, ``cmd | getline``, gawk's ``@load``, indirect calls
``@f()``). A script with none of those is inert. Both readers err toward
finding too much: a ``>`` in an awk ``print`` statement is a redirection,
a sed command letter the reader does not know is ``unknown``.
"""

from __future__ import annotations

import re

from signoff.policy.commands.grammar import SCRIPT_JUDGES, Kind, Part

_SED_SIMPLE = set("=dDgGhHlnNpPqQxzF") | {"{", "}"}
_SED_TO_EOL = set("aic")  # text follows, to the end of the line
_SED_FILES = {"r": Kind.READ, "R": Kind.READ, "w": Kind.WRITE, "W": Kind.WRITE}
_SED_LABEL = set(":btT")
_REGEX_ADDRESS = r"/(?:\\.|[^/\\\n])*/[IM]*|\\(.)(?:\\.|(?!\1).)*\1[IM]*"
_SED_ADDRESS = re.compile(r"\s*(?:\d+(?:~\d+)?|\$|" + _REGEX_ADDRESS + ")")
_SED_SECOND = re.compile(r"\s*,\s*(?:[+~]\d+|\d+|\$|" + _REGEX_ADDRESS + ")")


def judge_script(language: str, text: str, literal: bool, word: str, index: int) -> list[Part]:
    """The parts a script amounts to; one ``unknown`` part if it cannot be read."""
    if not literal:
        return [Part(kind=Kind.UNKNOWN, word=word, index=index, literal=False,
                     why=f"a {language} script only known when the shell runs it")]
    found = sed_effects(text) if language == "sed" else awk_effects(text)
    if not found:
        return [Part(kind=Kind.INERT, word=word, index=index, why=f"{language} script")]
    # A file named by an expression (print > ENVIRON["HOME"] "/x") is somewhere unknown.
    return [Part(kind=kind, word=word, index=index, why=why,
                 value=value if value is not None or kind not in (Kind.READ, Kind.WRITE)
                 else word, literal=value is not None or kind not in (Kind.READ, Kind.WRITE))
            for kind, value, why in found]


def sed_effects(script: str) -> list[tuple[Kind, str | None, str]]:
    """What a GNU sed script does besides editing its stream."""
    out: list[tuple[Kind, str | None, str]] = []
    i, n = 0, len(script)
    while i < n:
        char = script[i]
        if char in " \t\n;":
            i += 1
            continue
        if char == "#":
            i = _eol(script, i)
            continue
        match = _SED_ADDRESS.match(script, i)
        if match is not None and match.end() > i:
            i = match.end()
            second = _SED_SECOND.match(script, i)
            if second is not None:
                i = second.end()
        while i < n and script[i] in " \t!":
            i += 1
        if i >= n:
            break
        cmd = script[i]
        i += 1
        if cmd in _SED_SIMPLE:
            if cmd in "lqQ":  # an optional number
                while i < n and (script[i].isdigit() or script[i] in " \t"):
                    i += 1
            continue
        if cmd in _SED_TO_EOL:
            i = _text_end(script, i)
            continue
        if cmd in _SED_LABEL or cmd == "v":
            while i < n and script[i] not in ";\n":
                i += 1
            continue
        if cmd in _SED_FILES:
            end = _eol(script, i)
            name = script[i:end].strip()
            verb = "reads" if cmd in "rR" else "writes"
            out.append((_SED_FILES[cmd], name or None, f"sed {cmd} {verb} a file"))
            i = end
            continue
        if cmd == "e":
            end = _eol(script, i)
            out.append((Kind.EXEC, script[i:end].strip() or None,
                        "sed e runs a command"))
            i = end
            continue
        if cmd in "sy":
            if i >= n or script[i] in "\n\\":
                out.append((Kind.UNKNOWN, None, f"sed {cmd} without a delimiter"))
                break
            delim = script[i]
            i += 1
            for _ in range(2):
                i = _delimited(script, i, delim)
                if i < 0:
                    return [*out, (Kind.UNKNOWN, None, f"unterminated sed {cmd} command")]
            if cmd == "y":
                continue
            while i < n and script[i] not in ";\n}":
                flag = script[i]
                if flag == "e":
                    out.append((Kind.EXEC, None, "sed s///e runs the pattern space as a command"))
                elif flag == "w":
                    end = _eol(script, i + 1)
                    out.append((Kind.WRITE, script[i + 1:end].strip() or None,
                                "sed s///w writes a file"))
                    i = end
                    break
                elif not (flag in "gpiImM " or flag.isdigit()):
                    out.append((Kind.UNKNOWN, None, f"sed s flag {flag!r}"))
                i += 1
            continue
        out.append((Kind.UNKNOWN, None, f"sed command {cmd!r} is not modelled"))
        break
    return out


def _eol(text: str, i: int) -> int:
    end = text.find("\n", i)
    return len(text) if end < 0 else end


def _text_end(text: str, i: int) -> int:
    """The end of a/i/c text: the line, continued by a trailing backslash."""
    while True:
        end = _eol(text, i)
        if end > 0 and text[end - 1] == "\\" and end < len(text):
            i = end + 1
            continue
        return end


def _delimited(text: str, i: int, delim: str) -> int:
    """Index after the next unescaped ``delim`` from ``i``, or -1."""
    n = len(text)
    while i < n:
        char = text[i]
        if char == "\\":
            i += 2
            continue
        if char == delim:
            return i + 1
        i += 1
    return -1


# ---- awk ----------------------------------------------------------------------------------

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
            elif text == "system" and nxt[1] == "(":
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
            end = _delimited(program, i + 1, '"')
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


SCRIPT_JUDGES["sed"] = judge_script
SCRIPT_JUDGES["awk"] = judge_script
