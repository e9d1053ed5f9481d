"""Make the invisible visible: control, bidi and zero-width characters in text an
approver must judge.

``rm -rf /tmp/x\u202e`` can render as something else entirely; a zero-width
space splits a word a reviewer thinks they read. Canonical JSON already
escapes C0 controls (``\\u0000``–``\\u001f``); everything else that does not
print as itself is replaced here by a visible, labelled marker and counted,
so the page can say "3 characters flagged" above the arguments.
"""

from __future__ import annotations

import unicodedata

from markupsafe import Markup, escape

_SPACE_OK = {" "}
_EXTRA = {"\u034f", "\ufeff", "\u180e"}  # combining grapheme joiner, BOM, Mongolian vowel sep.


def suspicious(ch: str) -> bool:
    category = unicodedata.category(ch)
    if category in ("Cc", "Cf", "Zl", "Zp", "Co", "Cs") or ch in _EXTRA:
        return ch not in "\n\t"
    if category == "Zs" and ch not in _SPACE_OK:
        return True
    return 0xFE00 <= ord(ch) <= 0xFE0F or 0xE0100 <= ord(ch) <= 0xE01EF  # variation selectors


def reveal(text: str | None) -> tuple[Markup, int]:
    """Escaped HTML with every suspicious character shown as a flagged marker; and how many."""
    if not text:
        return Markup(""), 0
    parts: list[str] = []
    flagged = 0
    for ch in text:
        if suspicious(ch):
            flagged += 1
            name = unicodedata.name(ch, "UNNAMED CHARACTER")
            code = f"U+{ord(ch):04X}"
            parts.append(f'<mark class="hidden-char" title="{escape(name)}">'
                         f"\u27e6{code} {escape(name.lower())}\u27e7</mark>")
        else:
            parts.append(str(escape(ch)))
    return Markup("".join(parts)), flagged  # noqa: S704 (every piece is escaped above)
