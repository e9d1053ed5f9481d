"""What a command line says flows into a command's standard input.

Some commands take the names of what they read from standard input: ``xargs``
appends them to its command, ``git cat-file --batch`` prints the objects they
name, ``tar -T -`` archives the files. ``echo HEAD:.env | git cat-file --batch``
reads ``.env`` as surely as ``git show HEAD:.env`` does, so when the text is
written in the command — a here-string, a here-document, ``echo`` or ``printf``
before a pipe — the names in it are judged as the reads they are. When it is
not (a file, another program's output, an expansion), what is read cannot be
known and counts as a path nothing can place. A ``find`` before the pipe names
files beneath its starting points, and those are read as a search reads them
(``find . -type f | xargs cat`` reads ``.env``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

import tree_sitter

from signoff.shell import words as sw
from signoff.shell.commands import Invocation
from signoff.shell.commands.listings import listing
from signoff.shell.commands.models import Listing
from signoff.shell.redirects import REDIRECTS

# printf formats whose output is exactly their arguments, each followed by a separator
_LIST_FORMATS = {"%s\\n": "\n", "%s\\0": "\x00", "%s ": " ", "%s\\t": "\t", "%s": ""}
_PRINTF_ESCAPES = {"\\n": "\n", "\\t": "\t", "\\0": "\x00", "\\\\": "\\"}
_PRINTF_ESCAPE = re.compile(r"\\.")
_QUOTES = re.compile(r"['\"\\]")
_BLANKS = re.compile(r"[\s\x00]+")
_LINES = re.compile(r"[\n\x00]")


# An expansion in a here-document the shell expands: $x, ${x}, $(…), $1, `…`
_EXPANSION = re.compile(r"\$[A-Za-z_{(0-9@*#?!$-]|`")

class Feed:
    """Standard input as the command line gives it.

    ``bodies`` are here-document and here-string texts (a shell given one runs it);
    ``texts`` is every text known to flow in, those or what an ``echo`` before a pipe
    writes; ``known`` says the texts are all of it, with nothing expanded when it runs.
    What a pipe brings is looked at only when asked (few commands read names).
    """

    __slots__ = ("_known", "_listing", "_pipe", "_texts", "bodies", "built", "from_file")

    def __init__(self, bodies: tuple[str, ...] = (), *, known: bool = False,
                 pipe: tuple[tree_sitter.Node, tree_sitter.Node, Before] | None = None,
                 built: bool = False, from_file: bool = False) -> None:
        self.bodies = bodies
        self.built = built  # a body the shell expands has an expansion: known when it runs
        self.from_file = from_file  # input redirected from a file (< script.sh)
        self._texts = bodies
        self._known = known
        self._pipe = pipe
        self._listing: Listing | None = None

    @property
    def texts(self) -> tuple[str, ...]:
        self._resolve()
        return self._texts

    @property
    def known(self) -> bool:
        self._resolve()
        return self._known

    @property
    def listing(self) -> Listing | None:
        """The files a ``find`` before the pipe names, when one does."""
        self._resolve()
        return self._listing

    def _resolve(self) -> None:
        if self._pipe is not None:
            node, parent, before = self._pipe
            self._pipe = None
            writer = _writer(node, parent, before)
            self._texts, self._known = ((), False) if writer is None else printed(writer)
            self._listing = listed_through(_writers(writer, parent, before))


def _writers(writer: tree_sitter.Node | None, parent: tree_sitter.Node | None,
             before: Before) -> Iterator[tree_sitter.Node]:
    """The commands before a pipeline's command, nearest first."""
    while writer is not None:
        yield writer
        writer = _writer(writer, parent, before)


def listed_through(writers: Iterable[tree_sitter.Node]) -> Listing | None:
    """What a ``find`` or ``ls`` lists, when ``writers`` (nearest first) reach one through
    commands that pass whole lines on (``find . | sort | head``)."""
    for count, writer in enumerate(writers):
        found = listed(writer)
        values = _argv(writer, _FILTERS)
        if found is not None or values is None or count >= MAX_FILTERS or any(
                _ONLY_MATCHING.fullmatch(v.text) for v in values):
            return found
    return None


def record_listing(node: tree_sitter.Node, listed: dict[str, Listing]) -> None:
    """Remember what ``$(find . -type f)`` lists, for the command whose word it is."""
    found = substituted_listing(node)
    if found is not None and len(listed) < MAX_LISTINGS:
        listed[sw.node_text(node)] = found


def substituted_listing(node: tree_sitter.Node) -> Listing | None:
    """What ``$(find . -type f)`` or ``$(ls -a | sort)`` stands for: the names listed."""
    named = [c for c in node.children if c.is_named and c.type != "comment"]
    if len(named) != 1:
        return None
    inner = named[0]
    if inner.type == "pipeline":
        return listed_through(reversed([c for c in inner.children
                                        if c.is_named and c.type != "comment"]))
    return listed(inner)


# Commands that pass on whole lines of their input, a subset of them: what a find before
# them names, they name too (grep -o prints parts of lines, which may name other files).
_FILTERS = ("sort", "uniq", "head", "tail", "grep", "egrep", "fgrep", "cat", "tee")
_ONLY_MATCHING = re.compile(r"-[A-Za-z]*o[A-Za-z]*|--only-matching|--o(?:n(?:l(?:y.*)?)?)?")
MAX_FILTERS = 8
_LISTERS = ("find", "ls", "dir", "vdir")
MAX_LISTINGS = 8  # substitutions that list files ($(find …)), remembered per line

# pipeline node id → {command node id: the node before it in the pipeline}
Before = dict[int, dict[int, tree_sitter.Node | None]]
NO_FEED = Feed()


def feed_of(node: tree_sitter.Node, outer: list[tree_sitter.Node],
            parent: tree_sitter.Node | None, before: Before) -> Feed:
    """The standard input of the simple command ``node`` (whose parent is ``parent``),
    given the redirections of the statement it ends (``outer``); ``before`` is the walk's
    memory of the last pipeline's commands."""
    redirects = [c for c in node.children if c.type in REDIRECTS] + outer
    piped = parent is not None and parent.type == "pipeline"
    if not redirects:  # most commands: nothing written to their input, or a pipe
        return Feed(pipe=(node, parent, before)) if piped and parent is not None else NO_FEED
    bodies: list[str] = []
    known = True
    redirected = False
    built = from_file = False
    for redirect in redirects:
        if redirect.type == "herestring_redirect":
            for child in redirect.children:
                if child.is_named:
                    value = sw.word_value(child)
                    bodies.append(value.text + "\n")
                    known = known and value.literal
                    built = built or not value.literal
            redirected = True
        elif redirect.type == "heredoc_redirect":
            expands = sw.heredoc_expands(redirect)
            for child in redirect.children:
                if child.type == "heredoc_body":
                    body = sw.node_text(child)
                    bodies.append(body)
                    built = built or (expands and bool(_EXPANSION.search(body)))
                    if expands and any(c in body for c in "$`\\"):
                        known = False  # expanded, or joined at a backslash-newline
                        bodies.append(body.replace("\\\n", "").replace("\\", ""))
            redirected = redirected or _descriptor(redirect) in (None, "0")  # not 3<<E
        elif _reads_input(redirect):
            known, redirected = False, True
            from_file = True
    if not redirected and piped and parent is not None:  # 2>/dev/null: the pipe still feeds
        return Feed(tuple(bodies), pipe=(node, parent, before), built=built)
    # a redirection wins over a pipe
    return Feed(tuple(bodies), known=known and redirected, built=built, from_file=from_file)


def words(feed: Feed, *, whole_lines: bool, delimiter: str = "") -> tuple[list[str], bool]:
    """The words ``xargs`` makes of the feed (blank-separated; with ``whole_lines``, for
    ``-0``, ``-d``, ``-I``, also each line whole, and each piece between ``delimiter``s),
    and whether that is all of them. A word with quotes or backslashes, which xargs
    removes, counts both ways."""
    out: list[str] = []
    known = feed.known
    for text in feed.texts:
        for word in _BLANKS.split(text):
            if not word:
                continue
            out.append(word)
            if _QUOTES.search(word):
                known = False
                out.append(_QUOTES.sub("", word))
    for line in lines(feed) if whole_lines else ():
        if _BLANKS.search(line):
            out.append(line)
        if delimiter:
            out.extend(piece.strip() for piece in line.split(delimiter) if piece.strip())
    return out, known


UNKNOWN_WORDS = "<words read from standard input>"
MAX_RUNS = 4  # xargs -I: the lines judged one by one


def xargs_runs(inner: list[sw.WordValue], inv: Invocation,
               feed: Feed) -> list[list[sw.WordValue]]:
    """The command lines ``xargs`` runs: its command with the words of its input appended
    (``echo .env | xargs cat`` is ``cat .env``), or with ``-I R``, each line put where R
    is (nothing appended). Input the line does not write is a word nothing can know."""
    if inv.stdin_replace:
        items = [line.strip() for line in lines(feed)] if inv.stdin_names else []
        known = inv.stdin_names != "" and feed.known and not any(
            _QUOTES.search(item) for item in items)
        fills: list[sw.WordValue] = [sw.WordValue(item, True, False) for item in items[:MAX_RUNS]]
        if not known or len(items) > MAX_RUNS:
            fills.append(sw.WordValue(UNKNOWN_WORDS, False, False))
        return [[_put(word, inv.stdin_replace, fill) for word in inner] for fill in fills]
    tail, known = words(feed, whole_lines=inv.stdin_names == "items",
                        delimiter=inv.stdin_delimiter) if inv.stdin_names else ([], False)
    run = inner + [sw.WordValue(word, True, True) for word in tail]
    if not (known and inv.stdin_names == "words"):
        run.append(sw.WordValue(UNKNOWN_WORDS, False, False))
    return [run]


def _put(word: sw.WordValue, mark: str, fill: sw.WordValue) -> sw.WordValue:
    if mark not in word.text:
        return word
    text = word.text.replace(mark, fill.text)
    return sw.WordValue(text, word.literal and fill.literal, word.plain and fill.plain)


def lines(feed: Feed) -> list[str]:
    """The names in the feed, one per line (or NUL-separated): ``tar -T -``, ``git
    cat-file --batch``."""
    return [line for text in feed.texts for line in _LINES.split(text) if line]


def _descriptor(redirect: tree_sitter.Node) -> str | None:
    descriptor = redirect.child_by_field_name("descriptor")
    return None if descriptor is None else sw.node_text(descriptor)


def _reads_input(redirect: tree_sitter.Node) -> bool:
    """``< file``, ``<> file``, ``0<&3``: standard input comes from elsewhere."""
    if _descriptor(redirect) not in (None, "0"):
        return False
    return any(not c.is_named and c.type in ("<", "<>", "<&", "<&-") for c in redirect.children)


def _writer(node: tree_sitter.Node, parent: tree_sitter.Node | None,
            before: Before) -> tree_sitter.Node | None:
    """The command before ``node`` in a pipeline."""
    if parent is None or parent.type != "pipeline":
        return None
    if parent.id not in before:  # once per pipeline: ``a | a | …`` × 10,000 stays linear
        named = [c for c in parent.children if c.is_named and c.type != "comment"]
        before.clear()
        before[parent.id] = {c.id: p for p, c in zip([None, *named], named, strict=False)}
    return before[parent.id].get(node.id)


def printed(writer: tree_sitter.Node) -> tuple[tuple[str, ...], bool]:
    """What a command writes when it is an ``echo`` or ``printf`` of literal words (and
    whether that is all of it); ``((), False)`` for any other command."""
    values = _argv(writer, ("echo", "printf"))
    if values is None:
        return (), False
    if not values or not all(v.literal for v in values):
        return tuple(v.text for v in values[1:] if v.literal), False
    name, args = values[0].text, [v.text for v in values[1:]]
    if name == "echo":
        return _echo(args)
    if name == "printf":
        return _printf(args)
    return (), False


def listed(writer: tree_sitter.Node) -> Listing | None:
    """The files a ``find`` or ``ls`` names, when ``writer`` is one (whatever else it
    prints)."""
    values = _argv(writer, _LISTERS)
    if values is None:
        return None
    return listing(tuple(v.text for v in values), tuple(v.literal for v in values))


def _argv(writer: tree_sitter.Node, names: tuple[str, ...]) -> list[sw.WordValue] | None:
    """The words of ``writer`` when it is a simple command named one of ``names``."""
    head = writer.child_by_field_name("name") if writer.type == "command" else None
    if head is None or sw.node_text(head) not in names:
        return None
    return [sw.word_value(c.children[0] if c.type == "command_name" and c.children else c)
            for c in writer.children if c.is_named and c.type not in REDIRECTS]


def _echo(args: list[str]) -> tuple[tuple[str, ...], bool]:
    while args and re.fullmatch(r"-[neE]+", args[0]):
        if "e" in args[0]:
            return tuple(args[1:]), False  # escapes: \x2eenv is .env
        args = args[1:]
    # dash's echo reads escapes whatever the options: a backslash makes it unknown
    return (" ".join(args) + "\n",), not any("\\" in a for a in args)


def _printf(args: list[str]) -> tuple[tuple[str, ...], bool]:
    if args and args[0] == "--":
        args = args[1:]
    if not args or args[0].startswith("-"):  # printf -v NAME writes no output
        return tuple(args), False
    form, rest = args[0], args[1:]
    if form in _LIST_FORMATS:
        sep = _LIST_FORMATS[form]
        return ("".join(a + sep for a in rest) if sep else "\n".join(rest),), not (
            sep == "" and len(rest) > 1)
    if "%" in form:  # printf 'HEAD:.e%s' nv: the output is not any of the words
        return (form, *rest), False
    known = all(m.group(0) in _PRINTF_ESCAPES for m in _PRINTF_ESCAPE.finditer(form))
    return (_PRINTF_ESCAPE.sub(lambda m: _PRINTF_ESCAPES.get(m.group(0), m.group(0)), form),
            ), known
