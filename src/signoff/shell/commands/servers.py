"""Static file servers: a command that hands every file beneath a directory to whoever asks.

``python -m http.server``, ``php -S``, ``ruby -run -e httpd``, busybox ``httpd`` and
``npx http-server`` serve the directory they are started in (or the one they are
told), ``.env`` included: a ``curl`` from anywhere then reads it. So the directory
counts as read file by file, as ``tar c .`` reads it (``served``).
"""

from __future__ import annotations

_NPX_SERVERS = frozenset({"http-server", "serve", "live-server", "static-server"})
_SERVER_STARTS = ("python", "php")
_SERVER_NAMES = _NPX_SERVERS | {"ruby", "httpd", "npx", "pnpx", "bunx", "darkhttpd"}


def served(argv: tuple[str, ...], literal: tuple[bool, ...]) -> str | None:
    """The directory ``argv`` serves, when it is a static file server (``UNKNOWN`` when
    it is not known before it runs: ``-d "$DIR"``); ``None`` when it is not one."""
    if argv and literal[0] and argv[0].rsplit("/", 1)[-1] == "busybox":
        argv, literal = argv[1:], literal[1:]  # busybox httpd: the applet
    if not argv or not literal[0]:
        return None
    name = argv[0].rsplit("/", 1)[-1]
    if not name.startswith(_SERVER_STARTS) and name not in _SERVER_NAMES:
        return None  # most commands: no server
    words = list(zip(argv[1:], literal[1:], strict=True))
    if name.startswith("python") and _module(words) in ("http.server", "SimpleHTTPServer",
                                                        "CGIHTTPServer"):
        return _option(words, ("-d", "--directory"))
    if name.startswith("php") and any(w in ("-S",) or w.startswith("-S") for w, _ in words):
        return _option(words, ("-t", "--docroot"))
    if name == "ruby" and any(w in ("-run", "-rhttpd") for w, _ in words) and any(
            w in ("httpd", "-ehttpd") for w, _ in words):
        return _operand(words[_index(words, "httpd") + 1:])
    if name == "httpd" and literal[0]:  # busybox httpd: -h HOME
        return _option(words, ("-h",))
    if name in ("npx", "pnpx", "bunx"):
        at = next((i for i, (w, _) in enumerate(words) if not w.startswith("-")), None)
        if at is not None and words[at][0].split("@", 1)[0] in _NPX_SERVERS:
            return _operand(words[at + 1:])
    if name in _NPX_SERVERS or name == "darkhttpd":
        return _operand(words)
    return None


UNKNOWN = "<the directory it serves>"


def _module(words: list[tuple[str, bool]]) -> str | None:
    for i, (word, _) in enumerate(words):
        if word == "-m" and i + 1 < len(words):
            return words[i + 1][0]
        if word.startswith("-m") and len(word) > 2:
            return word[2:]
    return None


def _index(words: list[tuple[str, bool]], suffix: str) -> int:
    return next(i for i, (w, _) in enumerate(words) if w.endswith(suffix))


def _option(words: list[tuple[str, bool]], names: tuple[str, ...]) -> str | None:
    """The value of the last of ``names`` (``-d D``, ``--directory=D``, ``-dD``), or ``.``."""
    found = "."
    for i, (word, ok) in enumerate(words):
        for option in names:
            if word == option and i + 1 < len(words):
                found = words[i + 1][0] if words[i + 1][1] else UNKNOWN
            elif word.startswith(option + "=") or (
                    not option.startswith("--") and word.startswith(option) and word != option):
                found = word.split("=", 1)[1] if "=" in word else word[len(option):]
                found = found if ok else UNKNOWN
    return found


def _operand(words: list[tuple[str, bool]]) -> str:
    """The first operand that is not an option or a port, or ``.``."""
    for word, ok in words:
        if not word.startswith("-") and not word.isdigit():
            return word if ok else UNKNOWN
    return "."
