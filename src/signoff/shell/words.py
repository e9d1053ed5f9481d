"""Word-level knowledge for shell analysis: quote removal and the commands that run other code.

Kept apart from ``analysis.py`` (the tree walk) because this is the part that
grows as new bypasses are found: another wrapper, another interpreter flag.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import tree_sitter

from signoff.shell.commands.find import VALUED as FIND_VALUED

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
    "dbus-run-session", "faketime", "chronic", "setpriv", "capsh", "sem", "with-contenv",
})

# Wrappers that hand a shell a string: ``su -c 'rm x'``, ``watch 'rm x'``, ``ssh host rm x``.
_SCRIPT_FLAGS: dict[str, frozenset[str]] = {
    name: frozenset({"-c", "--command"}) for name in ("su", "runuser", "script", "flock", "sg")
}
_JOINS_ARGS = frozenset({"ssh", "watch"})
_MAX_SCRIPT_CANDIDATES = 8

_MAX_BRACES = 64
_MAX_BRACE_WORD = 4096

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
    raw = node_text(node)
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
                parts.append(_DQ_ESCAPE.sub(_unescape_dq, node_text(child)))
            elif child.is_named:
                literal = False
                parts.append(node_text(child))
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


def backtick_scripts(text: str, limit: int = 16) -> list[str]:
    """The bodies of `…` substitutions in text bash expands but tree-sitter leaves opaque
    (an unquoted heredoc body, ``${x:-`cmd`}``). An unclosed one runs to the end."""
    out: list[str] = []
    index = 0
    while index < len(text) and len(out) < limit:
        char = text[index]
        if char == "\\":
            index += 2
            continue
        if char != "`":
            index += 1
            continue
        body: list[str] = []
        index += 1
        while index < len(text) and text[index] != "`":
            if text[index] == "\\" and index + 1 < len(text):
                body.append(text[index + 1] if text[index + 1] in "`$\\" else text[index:index + 2])
                index += 2
                continue
            body.append(text[index])
            index += 1
        out.append("".join(body))
        index += 1
    return out


def heredoc_expands(redirect: tree_sitter.Node) -> bool:
    """A heredoc whose delimiter is unquoted: its body undergoes expansion and substitution."""
    for child in redirect.children:
        if child.type == "heredoc_start":
            return not any(q in node_text(child) for q in ("'", '"', "\\"))
    return True


def plain_expansion(node: tree_sitter.Node) -> bool:
    """``${NAME}`` with no operator: as harmless as ``$NAME``."""
    return bool(_PLAIN_EXPANSION.match(node_text(node)))


def brace_expand(word: str, limit: int = 16) -> list[str] | None:
    """Bash brace expansion of comma lists (``{r,}m`` → ``rm``, ``m``), bounded.

    ``None`` when the word would expand to more than ``limit`` words or has too many
    braces to try: the caller must then treat the word as unknown, never as its first
    few expansions (``cat {1,…,16,/etc/passwd}``).
    """
    if word.count("{") > _MAX_BRACES or len(word) > _MAX_BRACE_WORD:
        return None
    out: list[str] = []
    stack = [word]
    while stack:
        if len(out) >= limit:
            return None
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


# Shell options that take the next word as their value (bash -o errexit -c …).
_SHELL_VALUE_OPTS = frozenset({"-o", "+o", "-O", "+O", "--rcfile", "--init-file"})


def _shell_options(argv: tuple[str, ...]) -> tuple[int | None, int]:
    """(index of the word holding ``c``, index of the first operand) of a shell's argv."""
    index = 1
    while index < len(argv):
        arg = argv[index]
        if arg in ("--", "-"):
            return None, index + 1
        if arg in _SHELL_VALUE_OPTS:
            index += 2
        elif arg.startswith("--"):
            index += 1
        elif arg.startswith(("-", "+")) and len(arg) > 1:
            if "c" in arg[1:]:
                return index, index + 1
            index += 2 if arg[-1] in "oO" else 1  # -eo pipefail
        else:
            return None, index
    return None, index


def shell_inline_script(argv: tuple[str, ...]) -> list[str] | None:
    """For ``bash -c SCRIPT …``: the strings that may be the script; ``None`` without ``-c``."""
    flag, first = _shell_options(argv)
    if flag is None:
        return None
    return [a for a in argv[first:] if not a.startswith("-")]


def shell_reads_stdin(argv: tuple[str, ...]) -> bool:
    """A shell with no script operand (``bash``, ``sh -s``, ``bash -o errexit``) reads stdin."""
    _flag, first = _shell_options(argv)
    return first >= len(argv) or any(a in ("-s", "/dev/stdin") for a in argv[1:first + 1])


def wrapper_scripts(argv: tuple[str, ...]) -> list[str]:
    """Shell strings a wrapper passes to a shell: the ``-c`` value, or its joined arguments."""
    name = argv[0].rsplit("/", 1)[-1] if argv else ""
    out: list[str] = []
    flags = _SCRIPT_FLAGS.get(name)
    if flags is not None:
        for index, arg in enumerate(argv[1:-1], start=1):
            if arg in flags or (arg[:1] == "-" and arg[1:2] != "-" and arg.endswith("c")):
                out.append(argv[index + 1])  # -c SCRIPT, -qc SCRIPT
            elif arg.startswith("--command="):
                out.append(arg.split("=", 1)[1])
    if name in _JOINS_ARGS:
        starts = [i for i in range(1, len(argv)) if not argv[i].startswith("-")]
        out.extend(" ".join(argv[i:]) for i in starts[:_MAX_SCRIPT_CANDIDATES])
    return out[:_MAX_SCRIPT_CANDIDATES]


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


_SSH_COMMAND_OPTIONS = ("proxycommand=", "localcommand=", "knownhostscommand=")
TAKES_COMMANDS = frozenset({"git", "zip", "npx", "npm", "alias", "ssh", "scp", "sftp",
                             "autossh"})
_VALUE_COMMANDS = frozenset({("-TT", "zip"), ("-c", "npx"), ("--call", "npx"), ("-c", "npm"),
                             ("--call", "npm")})


def commands_in_arguments(argv: tuple[str, ...]) -> list[str]:
    """Command lines a command takes as an argument where no model reads them: ``git
    rebase --exec CMD``, ``git bisect run CMD…``, ``git submodule foreach CMD``, ``zip -TT
    CMD``, ``npx -c CMD``, ``npm exec -c CMD``, ``alias NAME=CMD``, ``ssh -o
    ProxyCommand=CMD`` (and ``LocalCommand``, ``KnownHostsCommand``)."""
    if not argv:
        return []
    name = argv[0].rsplit("/", 1)[-1]
    if name not in TAKES_COMMANDS:
        return []
    words = list(argv[1:])
    out: list[str] = []
    for index, word in enumerate(words):
        following = words[index + 1] if index + 1 < len(words) else None
        if name == "git" and word in ("--exec", "-x") and following is not None:
            out.append(following)
        elif name == "git" and word.startswith("--exec="):
            out.append(word.partition("=")[2])
        elif name == "git" and word == "run" and index and words[index - 1] == "bisect":
            out.append(" ".join(words[index + 1:]))
        elif name == "git" and word == "foreach" and "submodule" in words[:index]:
            rest = [w for w in words[index + 1:] if w not in ("--recursive", "-q", "--quiet")]
            out.append(" ".join(rest))
        elif following is not None and (word, name) in _VALUE_COMMANDS:
            out.append(following)  # zip -TT CMD, npx -c CMD, npm exec --call CMD
        elif (name in ("npx", "npm") and word.startswith("--call=")) or (
                name == "alias" and "=" in word):
            out.append(word.partition("=")[2])
        elif name in ("ssh", "scp", "sftp", "autossh"):
            option = word[2:] if word.startswith("-o") and len(word) > 2 else (
                following if word == "-o" and following is not None else "")
            if option.lower().startswith(_SSH_COMMAND_OPTIONS):
                out.append(option.partition("=")[2])
    return [text for text in out[:_MAX_SCRIPT_CANDIDATES] if text.strip()]


def trap_script(argv: tuple[str, ...]) -> str | None:
    """The command string of ``trap [--] SCRIPT SIGNAL…`` (``None`` for ``trap -p`` etc.)."""
    rest = list(argv[1:])
    while rest and rest[0].startswith("-") and rest[0] != "-":
        if rest.pop(0) == "--":
            break
    return rest[0] if len(rest) > 1 and rest[0] != "-" else None


def reads_stdin(argv: tuple[str, ...]) -> bool:
    """An interpreter with no program argument, or with ``-``/``-s``, runs what is piped in.

    ``--version`` and ``--help`` (``-V``, ``-h``) print and exit: nothing is read.
    """
    rest = argv[1:]
    if rest and rest[0] in ("--version", "-V", "--help", "-h", "-VV"):
        return False
    if any(a in ("-", "-s", "/dev/stdin") for a in rest):
        return True
    return not any(not a.startswith("-") for a in rest)


def find_exec(argv: tuple[str, ...]) -> list[tuple[str, ...]] | None:
    """The command lines of ``find … -exec CMD … ;`` (also ``-execdir``, ``-ok``, ``-okdir``).

    The value of a primary that takes one (``-name '-exec'``) is not a primary.
    """
    parts: list[tuple[str, ...]] = []
    index = 1
    while index < len(argv):
        if argv[index] in FIND_VALUED:
            index += 3 if argv[index] == "-fprintf" else 2
            continue
        if argv[index] in ("-exec", "-execdir", "-ok", "-okdir"):
            end = index + 1
            while end < len(argv) and argv[end] not in (";", "+", "\\;"):
                end += 1
            parts.append(argv[index + 1:end])
            index = end
        index += 1
    return parts if parts else None


def is_interpreter(name: str) -> bool:
    return name in INTERPRETERS or bool(_PYTHON.match(name))


def inline_code(name: str, argv: tuple[str, ...]) -> tuple[str, str] | None:
    """A finding when an interpreter, awk or sed is handed a program on the command line."""
    if _PYTHON.match(name):
        skip = False
        for arg in argv[1:]:
            if skip:  # the value of -W / -X
                skip = False
                continue
            if arg == "--" or not arg.startswith("-") or arg.startswith("-m"):
                return None
            if arg.startswith("--"):
                continue
            if "c" in arg[1:].split("W", 1)[0].split("X", 1)[0]:
                return ("inline_code", f"{name} -c runs inline code")
            skip = arg[-1] in "WX"  # -W ignore, -X dev; -Wignore carries its value
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
    return None


# A string literal in a program's text: 'x', "x" or `x` on one line.
_CODE_STRING = re.compile(r"""'([^'\\\n]{1,4096})'|"([^"\\\n]{1,4096})"|`([^`\\\n]{1,4096})`""")
MAX_CODE_STRINGS = 64
# An absolute, home or dot-file path written in code, quoted or not (not a method: .read)
_CODE_PATH = re.compile(r"(?<![\w.~/$])~?/[\w.@%+=:,-]+(?:/[\w.@%+=:,-]+)*|"
                        r"(?<![\w.~/$)\]])\.[A-Za-z_][\w.-]*(?:/[\w.@%+=:,-]+)*")
# The environment, whole or by name, in inline code: os.environ, process.env.X, %ENV, $ENV{X}
_CODE_ENV_NAME = re.compile(
    r"""process\.env\.([A-Za-z_]\w*)|\$ENV\{\s*['"]?(\w+)|(?:environ|ENV|env)\s*\[\s*['"](\w+)|"""
    r"""(?:getenv|environ\.get|ENV\.fetch|env\.get)\(\s*['"](\w+)""")
_CODE_ENV_WHOLE = re.compile(
    r"os\.environ(?!\s*[\[.])|environ\.(?:items|keys|values|copy)\(|process\.env(?![.\[\w])|"
    r"%ENV\b|\bENV\.(?:to_h|to_a|each|inspect|keys|values)\b|getenv\(\s*\)|\$_ENV\b(?!\[)")


def code_reads_environment(text: str) -> bool:
    """Inline code that prints or walks the whole environment (``print(os.environ)``)."""
    return bool(_CODE_ENV_WHOLE.search(text))


def code_variables(text: str) -> list[str]:
    """The environment variables inline code reads by name (``os.environ["X"]``,
    ``os.getenv("X")``, ``process.env.X``, ``$ENV{X}``, ``ENV["X"]``)."""
    return [next(g for g in m.groups() if g) for m in _CODE_ENV_NAME.finditer(text)]


def code_strings(text: str) -> list[str]:
    """The string literals of inline code (``open(".env")``, ``open(F, "<.env")``), each
    a name the program may open: what a program spells, as a shell line's words are."""
    out: list[str] = []
    found = [(m.group(1) or m.group(2) or m.group(3)) for m in _CODE_STRING.finditer(text)]
    found += _CODE_PATH.findall(text)  # $(file </etc/shadow): a path outside any quotes
    for raw in found:
        value = raw.lstrip("<>+|& ").strip()
        if value and value not in out:
            out.append(value)
            if len(out) >= MAX_CODE_STRINGS:
                break
    return out


def node_text(node: tree_sitter.Node) -> str:
    """A node's source text (bytes that are not UTF-8 kept as surrogates)."""
    raw = node.text
    return raw.decode("utf-8", "surrogateescape") if raw is not None else ""
