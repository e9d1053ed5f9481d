"""A shell word with expansions, as the glob of the names it can stand for.

``cat .env$NOPE``, ``cat .e$@nv`` and ``cat "$HOME/.aws/credentials"`` read a
credential when the expansion is empty or what its name says. Nothing static knows
an expansion's value, but the text around it is known: each expansion (``$X``,
``${X}``, ``$(…)``, a backtick) may be any text, ``/`` and a leading dot included,
and the quotes are the shell's, not part of the name. So the word becomes a glob in
``globoverlap``'s language — an expansion a ``**`` (which crosses ``/`` and, there, takes
no leading-dot rule), a quoted or escaped character a literal — and ``can_name``
says which secrets it can name. The word must still spell part of the secret itself:
``cat $F`` alone names nothing in particular.
"""

from __future__ import annotations

_GLOB = frozenset("*?[]\\")
_SPECIAL = frozenset("@*#?$!-0123456789")  # $@, $1, $$: one-character parameters
ANY = "**"


def word_glob(text: str) -> str:
    """The glob of the names the shell word ``text`` (as written) can expand to."""
    out: list[str] = []
    i, n = 0, len(text)
    quoted = False  # inside double quotes
    while i < n:
        char = text[i]
        if char == '"':
            quoted, i = not quoted, i + 1
        elif char == "'" and not quoted:
            end = text.find("'", i + 1)
            end = n if end < 0 else end
            out.extend(_literal(c) for c in text[i + 1:end])
            i = end + 1
        elif char == "\\" and i + 1 < n:
            out.append(_literal(text[i + 1]) if not quoted or text[i + 1] in '$`"\\' else "\\\\")
            i += 1 if quoted and text[i + 1] not in '$`"\\' else 2
        elif char == "$" and i + 1 < n and text[i + 1] == "'" and not quoted:
            end = text.find("'", i + 2)  # $'…': escapes nothing here decodes
            out.append(ANY)
            i = n if end < 0 else end + 1
        elif char == "$" and (after := _after_expansion(text, i + 1)) > i + 1:
            out.append(ANY)
            i = after
        elif char == "`":
            end = text.find("`", i + 1)
            out.append(ANY)
            i = n if end < 0 else end + 1
        else:
            out.append(_literal(char) if quoted else char)
            i += 1
    return "".join(out)


def _literal(char: str) -> str:
    return f"\\{char}" if char in _GLOB else char


def _after_expansion(text: str, i: int) -> int:
    """The index after the expansion whose body starts at ``text[i]`` (after the ``$``);
    ``i`` when there is none (a ``$`` that is itself)."""
    if i >= len(text):
        return i
    char = text[i]
    if char in "({":
        close = ")" if char == "(" else "}"
        depth = 0
        for j in range(i, len(text)):
            if text[j] == char:
                depth += 1
            elif text[j] == close:
                depth -= 1
                if depth == 0:
                    return j + 1
        return len(text)
    if char in _SPECIAL:
        return i + 1
    j = i
    while j < len(text) and (text[j].isalnum() or text[j] == "_"):
        j += 1
    return j
