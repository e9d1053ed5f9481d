"""sqlite3: a database, then SQL and dot-commands, each of which may read, write or run.

``sqlite3 app.db 'select count(*) from users'`` only reads the database; but the shell
also takes dot-commands and SQL functions that reach outside it: ``.shell``/``.system``
run a command, ``.load`` and ``load_extension()`` load a library, ``.read``/``.import``
read a file (or, with ``|``, run a command), ``.output``/``.once``/``.backup``/``.save``
and ``writefile()`` write one, ``readfile()`` reads one, ``edit()`` and ``.excel`` run a
program, ``ATTACH`` opens another database. Each statement on the command line (an
operand after the database, ``-cmd``) is judged for them (``statements``); without
one, sqlite3 reads its statements from standard input, and a here-document that holds
them is judged the same way (``signoff.shell.nested``). ``-init FILE`` runs FILE's statements,
as ``.read`` does; ``-safe`` refuses all of the above, and is judged as what it says.
"""

from __future__ import annotations

import re

from signoff.shell.commands.models import STDIN_PROGRAM, Invocation, Kind, Part

R, W, X, I, U = Kind.READ, Kind.WRITE, Kind.EXEC, Kind.INERT, Kind.UNKNOWN  # noqa: E741

# Options that take a value, and the flags, both spelled with one dash or two.
_VALUED = frozenset({"cmd", "init", "separator", "newline", "nullvalue", "mmap", "vfs", "heap",
                     "lookaside", "pagecache", "maxsize", "nonce", "escape", "limit"})
_FLAGS = frozenset({
    "append", "ascii", "bail", "batch", "box", "column", "csv", "deserialize", "echo",
    "header", "noheader", "html", "interactive", "json", "line", "list", "markdown",
    "memtrace", "nofollow", "nonce", "no-rowid-in-view", "pcachetrace", "quote", "readonly",
    "safe", "stats", "table", "tabs", "unsafe-testing", "utf8", "version", "help", "zip",
    "sorterref", "lookaside", "mmap", "heap",
} - _VALUED)
# dot-command → what its first argument is
_DOT_READ = frozenset({"read", "import", "restore", "open"})
_DOT_WRITE = frozenset({"output", "once", "backup", "save", "log", "trace", "clone"})
_DOT_EXEC = frozenset({"shell", "system", "load", "excel", "edit"})
_DOT_INERT = frozenset({
    "tables", "schema", "headers", "header", "mode", "separator", "nullvalue", "indexes",
    "indices", "databases", "width", "timer", "show", "stats", "eqp", "explain", "fullschema",
    "print", "prompt", "quit", "exit", "bail", "changes", "dbinfo", "echo", "help", "lint",
    "parameter", "progress", "scanstats", "selftest", "timeout", "vfsinfo", "vfslist",
    "vfsname", "limit", "dbconfig", "crnl", "binary", "connection", "expert", "filectrl",
    "imposter", "iotrace", "nonce", "recover", "testcase", "testctrl", "unmodule", "check",
    "auth", "www", "sha3sum", "dump",
})
_EXEC_FUNCTIONS = re.compile(r"\b(?:load_extension|edit)\s*\(", re.IGNORECASE)
# A file name in SQL: a string literal, or a double-quoted one (the CLI takes those for
# strings when no column has the name).
_NAME = r"(?:'(?P<path>(?:[^']|'')*)'|\"(?P<quoted>[^\"]*)\")?"
_READFILE = re.compile(r"\breadfile\s*\(\s*" + _NAME, re.IGNORECASE)
_WRITEFILE = re.compile(r"\bwritefile\s*\(\s*" + _NAME, re.IGNORECASE)
_ATTACH = re.compile(r"\b(?:attach(?:\s+database)?|vacuum\s+into)\s+" + _NAME, re.IGNORECASE)


def parse_sqlite(argv: tuple[str, ...], literal: tuple[bool, ...]) -> Invocation:
    parts: list[Part] = []
    database: str | None = None
    statements = 0
    i, n = 1, len(argv)
    options = True
    while i < n:
        word, known = argv[i], literal[i]
        name = word.lstrip("-")
        if options and known and word == "--":
            options = False
        elif options and known and word.startswith("-") and len(word) > 1:
            value = argv[i + 1] if i + 1 < n else ""
            value_known = i + 1 < n and literal[i + 1]
            if name in _VALUED:
                if name == "cmd":
                    parts.extend(statements_of(value, i) if value_known else [_unknown(value, i)])
                    statements += 1
                elif name == "init":
                    parts.append(Part(kind=X, word=f"{word} {value}", index=i, option=word,
                                      value=value, literal=value_known, path=True,
                                      why="runs the statements FILE holds"))
                else:
                    parts.append(Part(kind=I, word=f"{word} {value}", index=i, option=word))
                i += 2
                continue
            if name in ("A", "archive") or name.startswith("A"):
                parts.append(Part(kind=U, word=" ".join(argv[i:]), index=i, option="-A",
                                  why="an archive command: reads and writes files"))
                return Invocation(model="sqlite3", parts=tuple(parts))
            if name in ("version", "help"):
                parts.append(Part(kind=I, word=word, index=i, option=word))
                return Invocation(model="sqlite3", parts=tuple(parts))
            parts.append(Part(kind=I if name in _FLAGS else U, word=word, index=i, option=word,
                              why="" if name in _FLAGS else f"sqlite3 has no option {word}"))
        elif database is None:
            database = word
            parts.append(Part(kind=R, word=word, index=i, value=word, literal=known,
                              declared=True, why="the database it opens"))
        else:
            parts.extend(statements_of(word, i) if known else [_unknown(word, i)])
            statements += 1
        i += 1
    if not statements:
        parts.append(Part(kind=X, word=argv[0], index=0, why=STDIN_PROGRAM))
    return Invocation(model="sqlite3", parts=tuple(parts))


def _unknown(word: str, index: int) -> Part:
    return Part(kind=U, word=word, index=index, literal=False,
                why="a statement only known when the shell runs it")


def statements_of(text: str, index: int) -> list[Part]:
    """What one operand's statements do beyond the database: a dot-command when it
    starts with ``.``, SQL otherwise (several, separated by ``;``, may share it)."""
    parts: list[Part] = []
    for line in text.splitlines() or [""]:
        stripped = line.strip()
        if stripped.startswith("."):
            parts.extend(_dot(stripped, index))
        else:
            parts.extend(_sql(stripped, index))
    return parts


def _dot(line: str, index: int) -> list[Part]:
    words = _dot_words(line)
    name = words[0][1:] if words else ""
    argument = next((w for w in words[1:] if not w.startswith("-")), None)
    if name in _DOT_EXEC:
        return [Part(kind=X, word=line, index=index, value=" ".join(words[1:]),
                     why=f"the .{name} command runs a program")]
    if argument is not None and argument.startswith("|"):  # .read '|cmd', .output '|cmd'
        return [Part(kind=X, word=line, index=index, value=argument[1:],
                     why=f".{name} pipes through a command")]
    if name in ("once", "output") and any(w in ("-x", "-e", "--excel") for w in words[1:]):
        return [Part(kind=X, word=line, index=index, why=f".{name} opens a program")]
    if name in _DOT_READ and argument is not None:
        return [Part(kind=R, word=line, index=index, value=argument,
                     why=f".{name} reads FILE")]
    if name in _DOT_WRITE and argument is not None:
        return [Part(kind=W, word=line, index=index, value=argument,
                     why=f".{name} writes FILE")]
    if name in _DOT_READ | _DOT_WRITE | _DOT_INERT or name == "":
        return [Part(kind=I, word=line, index=index)]
    return [Part(kind=U, word=line, index=index, why=f"sqlite3 has no command .{name}")]


def _dot_words(line: str) -> list[str]:
    """A dot-command's words: blank-separated, with '…' and "…" quoting."""
    return [m.group(1) if m.group(1) is not None else m.group(2) if m.group(2) is not None
            else m.group(3) for m in re.finditer(r"'([^']*)'|\"([^\"]*)\"|(\S+)", line)]


def _sql(text: str, index: int) -> list[Part]:
    parts: list[Part] = []
    if _EXEC_FUNCTIONS.search(text):
        parts.append(Part(kind=X, word=text[:80], index=index,
                          why="loads a library or runs an editor (load_extension, edit)"))
    for pattern, kind, why in ((_READFILE, R, "readfile() reads FILE"),
                               (_WRITEFILE, W, "writefile() writes FILE"),
                               (_ATTACH, W, "opens another database")):
        for found in pattern.finditer(text):
            path = found.group("path")
            path = path.replace("''", "'") if path is not None else found.group("quoted")
            parts.append(Part(kind=kind, word=found.group(0), index=index, value=path,
                              why=why) if path is not None else
                         Part(kind=U, word=found.group(0), index=index,
                              why=why.replace("FILE", "a file named at run time")))
    return parts or [Part(kind=I, word=text[:80], index=index, why="SQL on the database")]
