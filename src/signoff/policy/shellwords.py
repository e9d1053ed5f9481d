"""Word-level knowledge for shell analysis: quote removal and the commands that run other code.

Kept apart from ``shell.py`` (the tree walk) because this is the part that
grows as new bypasses are found: another wrapper, another interpreter flag.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import tree_sitter

# Commands that run code given as a string or file, which nothing here can judge.
EVALUATORS = frozenset({"eval", "source", ".", "exec", "trap", "alias", "coproc"})

SHELLS = frozenset(
    {"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "csh", "tcsh", "yash", "rbash"}
)

# Commands whose arguments are (partly) another command line.
WRAPPERS = frozenset({
    "env", "xargs", "sudo", "doas", "su", "runuser", "pkexec", "timeout", "nice", "nohup",
    "stdbuf", "time", "command", "builtin", "setsid", "ionice", "taskset", "chroot", "strace",
    "ltrace", "watch", "flock", "unbuffer", "parallel", "script", "busybox", "chrt", "numactl",
    "systemd-run", "firejail", "bwrap", "fakeroot", "proot", "ssh", "nsenter", "unshare",
    "catchsegv", "valgrind", "gdb", "dbus-launch", "xvfb-run", "torsocks", "proxychains",
    "proxychains4", "daemonize", "start-stop-daemon", "cgexec", "sg", "newgrp", "expect",
})

_PYTHON = re.compile(r"^(python|pypy)[0-9.]*$")
INTERPRETERS = frozenset({
    "perl", "ruby", "node", "nodejs", "deno", "bun", "php", "lua", "luajit", "Rscript", "R",
    "tclsh", "wish", "osascript", "pwsh", "powershell", "irb", "jshell", "julia", "guile",
    "racket", "sbcl", "ghci", "scala", "groovy", "elixir", "erl",
})
_INLINE_FLAGS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    # name: (short letters that take inline code, long options that do)
    "perl": (frozenset("eE"), frozenset()),
    "ruby": (frozenset("e"), frozenset()),
    "node": (frozenset("ep"), frozenset({"--eval", "--print"})),
    "nodejs": (frozenset("ep"), frozenset({"--eval", "--print"})),
    "deno": (frozenset(), frozenset({"eval"})),
    "bun": (frozenset("e"), frozenset({"--eval", "--print"})),
    "php": (frozenset("rRBE"), frozenset()),
    "lua": (frozenset("e"), frozenset()),
    "luajit": (frozenset("e"), frozenset()),
    "Rscript": (frozenset("e"), frozenset()),
    "R": (frozenset("e"), frozenset()),
    "osascript": (frozenset("e"), frozenset()),
    "pwsh": (frozenset("cC"), frozenset({"-command", "-encodedcommand", "-c", "-ec"})),
    "powershell": (frozenset("cC"), frozenset({"-command", "-encodedcommand", "-c", "-ec"})),
    "julia": (frozenset("eE"), frozenset({"--eval", "--print"})),
    "guile": (frozenset("c"), frozenset()),
    "racket": (frozenset("e"), frozenset({"--eval"})),
    "sbcl": (frozenset(), frozenset({"--eval"})),
    "ghci": (frozenset("e"), frozenset()),
    "elixir": (frozenset("e"), frozenset({"--eval"})),
    "erl": (frozenset(), frozenset({"-eval"})),
}
_AWKS = frozenset({"awk", "gawk", "mawk", "nawk"})
_AWK_DANGER = re.compile(r"system|getline|\||>|@load|ENVIRON|PROCINFO|close\(")
_SED_EXEC = re.compile(
    r"(^|[;\n{}])\s*(?:[0-9$]+|/(?:\\.|[^/])*/)?(?:\s*,\s*(?:[0-9$]+|/(?:\\.|[^/])*/))?\s*!?\s*[ewWrR]"
    r"|s(.)(?:\\.|(?!\2).)*\2(?:\\.|(?!\2).)*\2[gpiImM0-9]*[ew]"
)
_PLAIN_EXPANSION = re.compile(r"^\$\{[A-Za-z_][A-Za-z0-9_]*\}$")
_BACKSLASH = re.compile(r"\\(\n|.)", re.DOTALL)
_DQ_ESCAPE = re.compile(r"\\([$`\"\\\n])")
_ANSI = re.compile(
    r"\\(x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|[0-7]{1,3}|c.|.)", re.DOTALL
)
_ANSI_SIMPLE = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n",
                "r": "\r", "t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}


@dataclass(frozen=True, slots=True)
class WordValue:
    text: str  # after quote removal; the source text when not literal
    literal: bool  # contains no expansion or substitution
    plain: bool  # an unquoted, unescaped word


def word_value(node: tree_sitter.Node) -> WordValue:
    kind = node.type
    raw = _text(node)
    if kind in ("word", "number"):
        if "\\" in raw:
            return WordValue(_BACKSLASH.sub(_unescape_word, raw), True, False)
        return WordValue(raw, True, True)
    if kind == "raw_string":
        return WordValue(raw[1:-1], True, False)
    if kind == "ansi_c_string":
        return WordValue(decode_ansi_c(raw[2:-1]), True, False)
    if kind in ("string", "translated_string"):
        parts: list[str] = []
        literal = True
        for child in node.children:
            if child.type == "string_content":
                parts.append(_DQ_ESCAPE.sub(_unescape_dq, _text(child)))
            elif child.is_named:
                literal = False
                parts.append(_text(child))
        if not literal:
            return WordValue(raw, False, False)
        return WordValue("".join(parts), True, False)
    if kind == "concatenation":
        values = [word_value(c) for c in node.children if c.is_named or c.type not in ('"',)]
        if all(v.literal for v in values):
            return WordValue("".join(v.text for v in values), True, all(v.plain for v in values))
        return WordValue(raw, False, False)
    return WordValue(raw, False, False)


def _unescape_word(match: re.Match[str]) -> str:
    char = match.group(1)
    return "" if char == "\n" else char


def _unescape_dq(match: re.Match[str]) -> str:
    char = match.group(1)
    return "" if char == "\n" else char


def decode_ansi_c(body: str) -> str:
    """Decode the body of ``$'…'`` as bash does (enough to see ``$'\\x72m'`` is ``rm``)."""

    def one(match: re.Match[str]) -> str:
        esc = match.group(1)
        head = esc[0]
        if head in "xuU" and len(esc) > 1:
            try:
                return chr(int(esc[1:], 16))
            except (ValueError, OverflowError):
                return ""
        if head in "01234567":
            return chr(int(esc, 8) & 0xFF)
        if head == "c" and len(esc) == 2:
            return chr(ord(esc[1]) & 0x1F)
        return _ANSI_SIMPLE.get(esc, "\\" + esc)

    return _ANSI.sub(one, body)


def plain_expansion(node: tree_sitter.Node) -> bool:
    """``${NAME}`` with no operator: as harmless as ``$NAME``."""
    return bool(_PLAIN_EXPANSION.match(_text(node)))


def brace_expand(word: str, limit: int = 16) -> list[str]:
    """Bash brace expansion of comma lists (``{r,}m`` → ``rm``, ``m``), bounded."""
    out: list[str] = []
    stack = [word]
    while stack and len(out) < limit:
        current = stack.pop()
        match = _innermost_brace(current)
        if match is None:
            out.append(current)
            continue
        start, end, options = match
        for option in reversed(options):
            stack.append(current[:start] + option + current[end + 1:])
    return out


def _innermost_brace(word: str) -> tuple[int, int, list[str]] | None:
    start = -1
    for i, char in enumerate(word):
        if char == "{":
            start = i
        elif char == "}" and start >= 0:
            body = word[start + 1:i]
            if "," in body:
                return start, i, body.split(",")
            start = -1
    return None


def shell_inline_script(argv: tuple[str, ...]) -> list[str] | None:
    """For ``bash -c SCRIPT …``: the strings that may be the script; ``None`` without ``-c``."""
    for index, arg in enumerate(argv[1:], start=1):
        if arg == "--":
            return None
        if arg.startswith("-") and not arg.startswith("--") and "c" in arg[1:]:
            return [a for a in argv[index + 1:] if not a.startswith("-")]
        if arg.startswith("+") and "c" in arg[1:]:
            return [a for a in argv[index + 1:] if not a.startswith("-")]
        if not arg.startswith(("-", "+")):
            return None
    return None


def env_split_strings(argv: tuple[str, ...]) -> list[str]:
    """The strings ``env -S``/``--split-string`` splits into a command line."""
    out: list[str] = []
    for index, arg in enumerate(argv[1:], start=1):
        following = argv[index + 1] if index + 1 < len(argv) else None
        if arg == "--":
            break
        if arg == "--split-string" and following is not None:
            out.append(following)
        elif arg.startswith("--split-string="):
            out.append(arg.split("=", 1)[1])
        elif arg.startswith("-") and not arg.startswith("--") and "S" in arg:
            rest = arg[arg.index("S") + 1:]
            if rest:
                out.append(rest)
            elif following is not None:
                out.append(following)
        elif not arg.startswith("-"):
            break
    return out


def trap_script(argv: tuple[str, ...]) -> str | None:
    """The command string of ``trap [--] SCRIPT SIGNAL…`` (``None`` for ``trap -p`` etc.)."""
    rest = list(argv[1:])
    while rest and rest[0].startswith("-") and rest[0] != "-":
        if rest.pop(0) == "--":
            break
    return rest[0] if len(rest) > 1 and rest[0] != "-" else None


def reads_stdin(argv: tuple[str, ...]) -> bool:
    """An interpreter with no program argument, or with ``-``/``-s``, runs what is piped in."""
    rest = argv[1:]
    if any(a in ("-", "-s", "/dev/stdin") for a in rest):
        return True
    return not any(not a.startswith("-") for a in rest)


def find_exec(argv: tuple[str, ...]) -> list[tuple[str, ...]] | None:
    """The command lines of ``find … -exec CMD … ;`` (also ``-execdir``, ``-ok``, ``-okdir``)."""
    parts: list[tuple[str, ...]] = []
    index = 1
    while index < len(argv):
        if argv[index] in ("-exec", "-execdir", "-ok", "-okdir"):
            end = index + 1
            while end < len(argv) and argv[end] not in (";", "+", "\\;"):
                end += 1
            parts.append(argv[index + 1:end])
            index = end
        index += 1
    return parts if parts else None


def inline_code(name: str, argv: tuple[str, ...]) -> tuple[str, str] | None:
    """A finding when an interpreter, awk or sed is handed a program on the command line."""
    if _PYTHON.match(name):
        for arg in argv[1:]:
            if arg == "--" or not arg.startswith("-"):
                return None
            if not arg.startswith("--") and "c" in arg[1:]:
                return ("inline_code", f"{name} -c runs inline code")
        return None
    flags = _INLINE_FLAGS.get(name)
    if flags is not None:
        short, long = flags
        for arg in argv[1:]:
            lowered = arg.lower() if name in ("pwsh", "powershell") else arg
            if lowered in long or lowered.split("=", 1)[0] in long:
                return ("inline_code", f"{name} {arg} runs inline code")
            if arg.startswith("-") and not arg.startswith("--") and set(arg[1:]) & short:
                return ("inline_code", f"{name} {arg} runs inline code")
        return None
    if name in _AWKS:
        if any(a == "-f" or a.startswith("--file") for a in argv[1:]):
            return ("inline_code", f"{name} -f runs a program file that cannot be judged here")
        if any(_AWK_DANGER.search(a) for a in argv[1:]):
            return ("inline_code", f"{name} program can run commands or write files")
        return None
    if name == "sed":
        for index, arg in enumerate(argv[1:], start=1):
            if arg in ("-f",) or arg.startswith("--file"):
                return ("inline_code", "sed -f runs a script file that cannot be judged here")
            script = arg
            if arg in ("-e", "--expression") and index + 1 < len(argv):
                script = argv[index + 1]
            elif arg.startswith("--expression="):
                script = arg.split("=", 1)[1]
            elif arg.startswith("-"):
                continue
            if _SED_EXEC.search(script):
                return ("inline_code",
                        f"sed script {script[:40]!r} can run commands or touch files")
        return None
    return None


def _text(node: tree_sitter.Node) -> str:
    raw = node.text
    return raw.decode("utf-8", "surrogateescape") if raw is not None else ""
