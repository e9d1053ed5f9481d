"""The scripts read-only commands carry, judged as parts of an invocation.

``judge_script`` turns a sed script or an awk program (``sedscript.py``,
``awkprogram.py``) into the parts it amounts to: the files it reads and writes
and the commands it runs; a script with none of those is inert.
"""

from __future__ import annotations

from signoff.shell.commands.awkprogram import awk_effects
from signoff.shell.commands.models import SCRIPT_JUDGES, Kind, Part
from signoff.shell.commands.sedscript import sed_effects


def judge_script(language: str, text: str, literal: bool, word: str, index: int) -> list[Part]:
    """The parts a script amounts to; one ``unknown`` part if it cannot be read."""
    if not literal:
        return [Part(kind=Kind.UNKNOWN, word=word, index=index, literal=False,
                     why=f"a {language} script only known when the shell runs it")]
    found = sed_effects(text) if language == "sed" else awk_effects(text)
    if not found:
        return [Part(kind=Kind.INERT, word=word, index=index, why=f"{language} script")]
    # A file named by an expression (print > ENVIRON["HOME"] "/x") is somewhere unknown.
    return [Part(kind=kind, word=word, index=index, why=why,
                 value=value if value is not None or kind not in (Kind.READ, Kind.WRITE)
                 else word, literal=value is not None or kind not in (Kind.READ, Kind.WRITE))
            for kind, value, why in found]


SCRIPT_JUDGES["sed"] = judge_script
SCRIPT_JUDGES["awk"] = judge_script
