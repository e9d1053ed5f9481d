"""Whether a shell glob word can name a path that a policy glob names.

A glob the analysis cannot expand against the disk — no workspace, a fixed
prefix outside it, too many matches — still names a set of paths. ``cat
~/.ss*/id_*`` reads a private key if one is there when it runs, so it counts as a
read of ``.ssh/**`` before anything is there to see. Two globs name a common path
when the languages of their patterns meet: the product of their automata reaches
the end of both. Each side is a list of tokens that match one character (a
literal, ``?``, a bracket class) or a run of them (``*``, which stops at ``/``; a
policy's ``**``, which does not), so the search is over pairs of token positions,
memoised: quadratic in the patterns' lengths.

A wildcard that names nothing in particular is not taken for a read of every
secret it could match: ``cat *`` or ``grep x /var/log/*`` could name a
``server.pem``, but so could any command line. The word must spell part of the
secret's name itself — a letter or digit of the policy's pattern matched by a
letter of the word, not by its wildcard: ``.e*`` spells the ``e`` of ``.env``,
``*.ke?`` the ``ke`` of ``*.key``. Bash's rule that a wildcard never matches a
leading dot is kept (``*`` is not ``.env``); a named class (``[[:alpha:]]``) or
a wide range stands for any character but ``/``.
"""

from __future__ import annotations

# A token: (kind, negated, chars, spells). kind "one" matches one character in (or,
# negated, not in) chars; "run" matches any number of such characters. ``spells``: a
# word's literal letter or digit, or the dot that starts a name (``.*`` aims at dotfiles).
Token = tuple[str, bool, frozenset[str], bool]

_SLASH = frozenset("/")


def has_glob(word: str) -> bool:
    return "*" in word or "?" in word or "[" in word  # three scans in C, not a regex's
_DOT = frozenset(".")
_MAX_ALTERNATIVES = 16
_MAX_WORD = 256  # characters of a glob word worth comparing
_ANY_BUT_SLASH: Token = ("one", True, _SLASH, False)
_STAR: Token = ("run", True, _SLASH, False)
_DEEP: Token = ("run", True, frozenset(), False)
_MAX_RANGE = 256  # wider ranges stand for any character but "/"


def _literal(char: str, *, spells: bool | None = None) -> Token:
    return ("one", False, frozenset(char), char.isalnum() if spells is None else spells)


def _bracket(text: str, i: int) -> tuple[Token, int] | None:
    """The class that opens at ``text[i]`` and the index after it, or ``None`` (a literal
    ``[``). It never matches ``/``, as in bash's pathname expansion."""
    j = i + 1
    negated = j < len(text) and text[j] in "!^"
    if negated:
        j += 1
    start = j
    if j < len(text) and text[j] == "]":
        j += 1  # a leading "]" is a member
    named = False
    while j < len(text) and text[j] != "]":
        if text.startswith(("[:", "[=", "[."), j):
            close = text.find(text[j + 1] + "]", j + 2)
            if close < 0:
                return None
            named, j = True, close + 2
        else:
            j += 1
    if j >= len(text):
        return None
    if named:
        return _ANY_BUT_SLASH, j + 1
    body = text[start:j]
    chars: set[str] = set()
    k = 0
    while k < len(body):
        if k + 2 < len(body) and body[k + 1] == "-":
            low, high = ord(body[k]), ord(body[k + 2])
            if high - low > _MAX_RANGE:
                return _ANY_BUT_SLASH, j + 1
            chars.update(chr(c) for c in range(low, high + 1))
            k += 3
        else:
            chars.add(body[k])
            k += 1
    if negated:
        return ("one", True, frozenset(chars) | _SLASH, False), j + 1
    members = frozenset(chars) - _SLASH
    return ("one", False, members, len(members) == 1 and next(iter(members)).isalnum()), j + 1


def shell_tokens(word: str) -> list[tuple[Token, ...]]:
    """A glob word, as the token lists of its alternatives: ``*`` and ``?`` stop at ``/``,
    and a wildcard at the start of a name never matches its leading dot (``*`` there is
    "nothing, or a first character other than ``.``, then anything"); ``**`` crosses
    ``/`` (bash's ``globstar``, and the tools' globs); ``\\x`` is a literal ``x``."""
    alternatives: list[list[Token]] = [[]]
    i = 0
    at_start = True  # the next character begins a name
    while i < len(word):
        char = word[i]
        if char == "\\" and i + 1 < len(word):
            token, i = _literal(word[i + 1]), i + 2
        elif word.startswith("**", i):
            alternatives = [[*a, _DEEP] for a in alternatives]
            i, at_start = i + 2, False
            continue
        elif char == "*":
            i += 1
            if at_start:
                first: Token = ("one", True, _SLASH | _DOT, False)
                alternatives = [*alternatives, *([*a, first, _STAR] for a in alternatives)]
                at_start = False
                continue
            token = _STAR
        elif char == "?":
            token, i = _ANY_BUT_SLASH, i + 1
        elif char == "[" and (found := _bracket(word, i)) is not None:
            token, i = found
        else:
            token, i = _literal(char), i + 1
        if at_start and token == _literal("."):
            token = _literal(".", spells=True)
        elif at_start and token[0] == "one":
            token = _no_dot(token)
        alternatives = [[*a, token] for a in alternatives]
        at_start = token == _literal("/")
        if len(alternatives) > _MAX_ALTERNATIVES:
            return [_plain_tokens(word)]
    return [tuple(a) for a in alternatives]


def _plain_tokens(word: str) -> tuple[Token, ...]:
    """``word`` without the leading-dot rule (more paths: on the side of asking)."""
    out: list[Token] = []
    i = 0
    while i < len(word):
        if word[i] == "\\" and i + 1 < len(word):
            out.append(_literal(word[i + 1]))
            i += 2
        elif word.startswith("**", i):
            out.append(_DEEP)
            i += 2
        elif word[i] == "*":
            out.append(_STAR)
            i += 1
        else:
            token, i = _policy_one(word, i)
            out.append(token)
    return tuple(out)


def _no_dot(token: Token) -> Token:
    kind, negated, chars, spells = token
    return (kind, True, chars | _DOT, spells) if negated else (kind, False, chars - _DOT, spells)


def policy_tokens(pattern: str) -> list[tuple[Token, ...]]:
    """A policy glob (``signoff.globs.pathglob.glob_to_regex``) as the token lists of its
    alternatives: ``**/`` is "nothing, or anything ending in ``/``", a final ``/**`` is
    "nothing, or ``/`` and anything"."""
    alternatives: list[list[Token]] = [[]]
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            alternatives = [*alternatives, *([*a, _DEEP, _literal("/")] for a in alternatives)]
            i += 3
        elif pattern.startswith("/**", i) and i + 3 == len(pattern):
            alternatives = [*alternatives, *([*a, _literal("/"), _DEEP] for a in alternatives)]
            i += 3
        elif pattern.startswith("**", i):
            alternatives = [[*a, _DEEP] for a in alternatives]
            i += 2
        else:
            token, i = _policy_one(pattern, i)
            alternatives = [[*a, token] for a in alternatives]
    return [tuple(a) for a in alternatives]


def _policy_one(pattern: str, i: int) -> tuple[Token, int]:
    char = pattern[i]
    if char == "*":
        return _STAR, i + 1
    if char == "?":
        return _ANY_BUT_SLASH, i + 1
    if char == "[" and (found := _bracket(pattern, i)) is not None:
        return found
    return _literal(char), i + 1


def _overlap(a: Token, b: Token) -> bool:
    """Whether one character can match both tokens."""
    _, a_neg, a_chars, _ = a
    _, b_neg, b_chars, _ = b
    if a_neg and b_neg:
        return True  # the alphabet is larger than any two finite sets
    if a_neg:
        return bool(b_chars - a_chars)
    if b_neg:
        return bool(a_chars - b_chars)
    return bool(a_chars & b_chars)


def _spells(word: Token, pattern: Token) -> bool:
    """Whether the word's own character (``Token``'s ``spells``) is one the pattern names."""
    return word[3] and not pattern[1] and bool(word[2] & pattern[2])


def meet(word: tuple[Token, ...], pattern: tuple[Token, ...]) -> bool:
    """Whether some string matches both token lists with the word spelling part of the
    pattern (module docstring): a search of the pair automaton's states ``(i, j,
    spelled)``, iterative, so a long word costs time, never the stack."""
    end = (len(word), len(pattern), True)
    seen = {(0, 0, False)}
    todo = [(0, 0, False)]
    while todo:
        i, j, spelled = todo.pop()
        if (i, j, spelled) == end:
            return True
        a = word[i] if i < len(word) else None
        b = pattern[j] if j < len(pattern) else None
        moves: list[tuple[int, int, bool]] = []
        if a is not None and a[0] == "run":
            moves.append((i + 1, j, spelled))  # the run matches nothing more
            if b is not None and b[0] == "one" and _overlap(a, b):
                moves.append((i, j + 1, spelled))  # the run takes b's character
        if b is not None and b[0] == "run":
            moves.append((i, j + 1, spelled))
            if a is not None and a[0] == "one" and _overlap(a, b):
                moves.append((i + 1, j, spelled))
        if a is not None and b is not None and a[0] == b[0] == "one" and _overlap(a, b):
            moves.append((i + 1, j + 1, spelled or _spells(a, b)))
        for move in moves:
            if move not in seen:
                seen.add(move)
                todo.append(move)
    return False


def can_name(word: str, patterns: tuple[str, ...]) -> str | None:
    """The first of ``patterns`` (``signoff.globs.pathglob`` semantics: a pattern with no
    leading ``/`` matches at any depth) that a path the glob ``word`` names can match."""
    word = word.removeprefix("./")
    if len(word) > _MAX_WORD:
        return patterns[0] if patterns else None  # past judging: on the side of asking
    words = shell_tokens(word)
    spelled = {c for w in words for token in w if token[3] for c in token[2]}
    absolute = word.startswith("/")
    for pattern in patterns:
        if not spelled & set(pattern):
            continue  # nothing of the word's own can spell a character of it
        if pattern.startswith("/"):
            if not absolute:
                continue
            shapes = pattern
        else:
            shapes = ("/**/" if absolute else "**/") + pattern.strip("/")
        if any(meet(w, p) for w in words for p in policy_tokens(shapes)):
            return pattern
    return None
