"""Make the invisible visible: characters that do not print as themselves, in text an
approver must judge.

``rm -rf /tmp/x\u202e`` can render as something else entirely; a zero-width
space splits a word a reviewer thinks they read; a Hangul filler (U+3164) is a
letter that draws nothing. Which characters hide is Unicode's to say, not a
hand-kept list: a character is flagged when it is

* ``Default_Ignorable_Code_Point`` (drawn as nothing when unsupported: U+3164,
  U+115F, U+1160, U+FFA0, U+17B4, U+180B, variation selectors, zero-width
  characters, …) or ``Bidi_Control`` (changes the direction of what follows);
* a control, format (``Cf``), line or paragraph separator, private-use,
  surrogate or unassigned code point;
* a space other than U+0020 (tab and newline are kept as they are).

Python's ``unicodedata`` has no ``Default_Ignorable_Code_Point``; the ``regex``
module, which tracks the current Unicode release, does. Each flagged character
is replaced by a visible, labelled marker and counted, so the page can say
"3 characters flagged" above the arguments. Canonical JSON already escapes C0
controls (``\\u0000``–``\\u001f``) in arguments.
"""

from __future__ import annotations

import json
import unicodedata

import regex
from markupsafe import Markup, escape

HIDDEN = regex.compile(
    r"[[\p{Default_Ignorable_Code_Point}\p{Bidi_Control}\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Co}"
    r"\p{Cs}\p{Cn}\p{Zs}]--[ \t\n]]", regex.VERSION1)
_SPLIT = regex.compile(f"({HIDDEN.pattern})", regex.VERSION1)


def suspicious(ch: str) -> bool:
    return HIDDEN.fullmatch(ch) is not None


def reveal(text: str | None) -> tuple[Markup, int]:
    """Escaped HTML with every hidden character shown as a flagged marker; and how many."""
    if not text:
        return Markup(""), 0
    if text.isascii() and text.isprintable():  # the common case: nothing can hide
        return escape(text), 0
    parts: list[str] = []
    flagged = 0
    for i, piece in enumerate(_SPLIT.split(text)):
        if i % 2 == 0:  # text between hidden characters
            parts.append(str(escape(piece)))
            continue
        flagged += 1
        name = unicodedata.name(piece, "") or _label(piece)
        code = f"U+{ord(piece):04X}"
        parts.append(f'<mark class="hidden-char" title="{escape(name)}">'
                     f"\u27e6{code} {escape(name.lower())}\u27e7</mark>")
    return Markup("".join(parts)), flagged  # noqa: S704 (every piece is escaped above)


def reveal_plain(text: str | None) -> tuple[str, int]:
    """Plain text with every hidden character shown as ``⟦U+202E right-to-left
    override⟧`` (a dialog or a terminal renders no HTML); and how many were flagged."""
    if not text:
        return "", 0
    if text.isascii() and text.isprintable():
        return text, 0
    flagged = 0

    def marker(found: regex.Match[str]) -> str:
        nonlocal flagged
        flagged += 1
        piece = found.group()
        name = unicodedata.name(piece, "") or _label(piece)
        return f"\u27e6U+{ord(piece):04X} {name.lower()}\u27e7"

    return HIDDEN.sub(marker, text), flagged


def escape_json(text: str) -> str:
    """JSON text (to edit in a form) with every hidden character written as its ``\\u``
    escape: the same JSON value, and nothing in the text box that cannot be seen."""
    return HIDDEN.sub(lambda found: json.dumps(found.group())[1:-1], text)


def _label(ch: str) -> str:
    category = unicodedata.category(ch)
    return {"Cc": "CONTROL CHARACTER", "Co": "PRIVATE USE CHARACTER",
            "Cs": "SURROGATE", "Cn": "UNASSIGNED CHARACTER"}.get(category, "UNNAMED CHARACTER")
