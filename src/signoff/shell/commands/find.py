"""find: starting points, then an expression of single-dash primaries.

Tests are inert (``-name``, ``-type``, ``-newer FILE`` reads FILE); actions
that print go to standard output, except ``-fprint``, ``-fprint0``,
``-fprintf`` and ``-fls``, which write FILE, ``-delete``, which deletes what
matched, and ``-exec``/``-execdir``/``-ok``/``-okdir``, which run a command
(also parsed as a nested command by the shell analysis, so deny rules see
it). A primary find does not know is ``unknown``.

What find lists is read by whatever it hands the names to — ``-exec cat {} +``,
``| xargs cat``, ``| tar -T -`` — so ``listing`` says which files those are: every
file beneath the starting points, or, when the expression is a plain conjunction,
those its ``-name``/``-iname`` tests admit.
"""

from __future__ import annotations

from signoff.shell.commands.models import Invocation, Kind, Listing, Part, Tree

_INERT_VALUE = frozenset({
    "-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex",
    "-type", "-xtype", "-size", "-perm", "-user", "-group", "-uid", "-gid", "-links", "-inum",
    "-mtime", "-mmin", "-atime", "-amin", "-ctime", "-cmin", "-used", "-fstype", "-context",
    "-lname", "-ilname", "-maxdepth", "-mindepth", "-regextype", "-printf", "-D", "-newerat",
    "-newermt", "-newerct", "-newerBt",
})
_READ_VALUE = frozenset({"-samefile", "-newer", "-anewer", "-cnewer",
                         "-newermm", "-newerma", "-neweram", "-neweraa", "-newercm",
                         "-newerca", "-newermc", "-newerac", "-newercc", "-newerBm"})
_WRITE_VALUE = frozenset({"-fprint", "-fprint0", "-fls"})
_FLAGS = frozenset({
    "-empty", "-executable", "-readable", "-writable", "-nouser", "-nogroup", "-true",
    "-false", "-depth", "-d", "-mount", "-xdev", "-noleaf", "-ignore_readdir_race",
    "-noignore_readdir_race", "-daystart", "-follow", "-warn", "-nowarn", "-print", "-print0",
    "-ls", "-prune", "-quit", "-not", "-a", "-and", "-o", "-or", "!", "(", ")", ",", "-help",
    "--help", "-version", "--version", "-H", "-L", "-P",
})
_EXECS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
# Primaries followed by a value (-fprintf by two).
VALUED = _INERT_VALUE | _READ_VALUE | _WRITE_VALUE | {"-fprintf", "-files0-from"}


def parse_find(argv: tuple[str, ...], literal: tuple[bool, ...]) -> Invocation:
    parts: list[Part] = []
    i, n = 1, len(argv)
    # Leading -H -L -P -D debug -Olevel, then starting points.
    while i < n and literal[i] and argv[i] in ("-H", "-L", "-P"):
        parts.append(Part(kind=Kind.INERT, word=argv[i], index=i, option=argv[i]))
        i += 1
    while i < n and literal[i] and (argv[i] == "-D" or argv[i].startswith("-O")):
        if argv[i] == "-D":
            parts.append(Part(kind=Kind.INERT, word=f"-D {argv[i + 1] if i + 1 < n else ''}",
                              index=i, option="-D"))
            i += 2
        else:
            parts.append(Part(kind=Kind.INERT, word=argv[i], index=i, option="-O"))
            i += 1
    while i < n and not (literal[i] and (argv[i].startswith("-") or argv[i] in "!(),")):
        parts.append(Part(kind=Kind.READ, word=argv[i], index=i, value=argv[i],
                          literal=literal[i], why="a starting point find walks"))
        i += 1
    while i < n:
        word = argv[i]
        if not literal[i]:
            parts.append(Part(kind=Kind.UNKNOWN, word=word, index=i, literal=False,
                              why="a word only known when the shell runs it"))
            i += 1
        elif word in _EXECS:
            end = i + 1
            while end < n and argv[end] not in (";", "+", "\\;"):
                end += 1
            shown = " ".join(argv[i:end + 1])
            parts.append(Part(kind=Kind.EXEC, word=shown, index=i, option=word,
                              value=" ".join(argv[i + 1:end]), why=f"find {word} runs a command"))
            i = end + 1
        elif word == "-files0-from":
            parts.append(Part(kind=Kind.UNKNOWN, word=" ".join(argv[i:i + 2]), index=i,
                              option=word, why="reads its starting points from FILE"))
            i += 2
        elif word == "-delete":
            starts = [p for p in parts if p.option is None and p.kind is Kind.READ] or [
                Part(kind=Kind.READ, word=".", index=i, value=".")]
            for start in starts:  # it deletes beneath each starting point
                parts.append(Part(kind=Kind.WRITE, word=word, index=i, option=word,
                                  value=start.value, literal=start.literal,
                                  why="find -delete deletes every file that matches"))
            i += 1
        elif word in _FLAGS:
            parts.append(Part(kind=Kind.INERT, word=word, index=i, option=word))
            i += 1
        elif word in _INERT_VALUE or (word.startswith("-newer") and len(word) == 8
                                      and word[-1] == "t"):
            parts.append(Part(kind=Kind.INERT, word=" ".join(argv[i:i + 2]), index=i,
                              option=word))
            i += 2
        elif word in _READ_VALUE or word.startswith("-newer"):
            value = argv[i + 1] if i + 1 < n else None
            parts.append(Part(kind=Kind.READ, word=f"{word} {value}", index=i, option=word,
                              value=value, literal=i + 1 < n and literal[i + 1]))
            i += 2
        elif word in _WRITE_VALUE or word == "-fprintf":
            value = argv[i + 1] if i + 1 < n else None
            parts.append(Part(kind=Kind.WRITE, word=f"{word} {value}", index=i, option=word,
                              value=value, literal=i + 1 < n and literal[i + 1],
                              why=f"find {word} writes FILE"))
            i += 3 if word == "-fprintf" else 2
        else:
            parts.append(Part(kind=Kind.UNKNOWN, word=word, index=i,
                              why=f"find has no primary {word}"))
            i += 1
    return Invocation(model="find", parts=tuple(parts))


# Primaries that make the expression more than a conjunction of tests: a file another
# branch admits is listed whatever the -name tests say, so they narrow nothing.
_BRANCHES = frozenset({"-o", "-or", "!", "-not", "(", ")", ",", "-prune"})


def listing(argv: tuple[str, ...], literal: tuple[bool, ...]) -> Listing | None:
    """The files ``find`` names beneath the starting points it spells (``.`` when it
    spells none; only those with ``-maxdepth 0``), or ``None`` when nothing here can
    place them (``find "$DIR"``)."""
    i, n = 1, len(argv)
    follow = False
    while i < n and literal[i] and (argv[i] in ("-H", "-L", "-P", "-D")
                                    or argv[i].startswith("-O")):
        follow = follow or argv[i] == "-L"
        i += 2 if argv[i] == "-D" else 1
    starts: list[str] = []
    unplaced = False  # find "$DIR": nothing here can walk it
    while i < n and not (literal[i] and (argv[i].startswith("-") or argv[i] in "!(),")):
        if literal[i]:
            starts.append(argv[i])
        unplaced = unplaced or not literal[i]
        i += 1
    names: list[str] = []
    fold = broad = False
    depth: int | None = None
    while i < n:
        word = argv[i]
        value = argv[i + 1] if i + 1 < n and literal[i + 1] else None
        if word in _EXECS:
            while i < n and argv[i] not in (";", "+", "\\;"):
                i += 1
        elif word in ("-name", "-iname") and value is not None:
            names.append(value)
            fold = fold or word == "-iname"
        elif word == "-maxdepth" and value is not None and value.isdigit():
            depth = int(value)
        broad = broad or word in _BRANCHES or not literal[i]
        follow = follow or word == "-follow"
        i += (3 if word == "-fprintf" else 2) if word in VALUED else 1
    if unplaced and not starts:
        return None
    return Listing(tuple(starts) or (".",), paths=True, tree=None if depth == 0 else Tree(
        follow=follow, depth=depth, fold=fold, include=() if broad else tuple(names)))
