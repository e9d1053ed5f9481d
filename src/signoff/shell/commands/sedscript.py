"""GNU sed scripts: what a script does besides editing its stream.

Addresses (``1``, ``$``, ``/re/``, ``\\%re%``, ``first~step``, ``addr,+N``)
are skipped; the commands that matter are ``e`` (runs a command), ``r``/``R``
(read a file), ``w``/``W`` (write one), and the ``e`` and ``w`` flags of ``s``.
Text of ``a``/``i``/``c`` runs to the end of its line. A command letter the
reader does not know is ``unknown``: it errs toward finding too much.
"""

from __future__ import annotations

import re

from signoff.shell.commands.models import Kind
from signoff.shell.commands.text_util import delimited, end_of_line

_SED_SIMPLE = set("=dDgGhHlnNpPqQxzF") | {"{", "}"}
_SED_TO_EOL = set("aic")  # text follows, to the end of the line
_SED_FILES = {"r": Kind.READ, "R": Kind.READ, "w": Kind.WRITE, "W": Kind.WRITE}
_SED_LABEL = set(":btT")
_REGEX_ADDRESS = r"/(?:\\.|[^/\\\n])*/[IM]*|\\(.)(?:\\.|(?!\1).)*\1[IM]*"
_SED_ADDRESS = re.compile(r"\s*(?:\d+(?:~\d+)?|\$|" + _REGEX_ADDRESS + ")")
_SED_SECOND = re.compile(r"\s*,\s*(?:[+~]\d+|\d+|\$|" + _REGEX_ADDRESS + ")")


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
            i = end_of_line(script, i)
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
            end = end_of_line(script, i)
            name = script[i:end].strip()
            verb = "reads" if cmd in "rR" else "writes"
            out.append((_SED_FILES[cmd], name or None, f"sed {cmd} {verb} a file"))
            i = end
            continue
        if cmd == "e":
            end = end_of_line(script, i)
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
                i = delimited(script, i, delim)
                if i < 0:
                    return [*out, (Kind.UNKNOWN, None, f"unterminated sed {cmd} command")]
            if cmd == "y":
                continue
            while i < n and script[i] not in ";\n}":
                flag = script[i]
                if flag == "e":
                    out.append((Kind.EXEC, None, "sed s///e runs the pattern space as a command"))
                elif flag == "w":
                    end = end_of_line(script, i + 1)
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


def _text_end(text: str, i: int) -> int:
    """The end of a/i/c text: the line, continued by a trailing backslash."""
    while True:
        end = end_of_line(text, i)
        if end > 0 and text[end - 1] == "\\" and end < len(text):
            i = end + 1
            continue
        return end
