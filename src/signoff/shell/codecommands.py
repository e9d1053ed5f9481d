"""The shell commands that code given on a command line runs, where it spells them.

``python -c 'import os; os.system("rm -rf ~")'``, ``perl -e 'system "rm -rf ~"'``,
``awk 'BEGIN { system("rm -rf ~") }'``, ``node -e 'require("child_process")
.execSync("rm -rf ~")'``: the command is in a string of the code. These strings are
parsed as nested scripts, so a deny rule sees ``rm`` as it would on the line itself,
and the paths they name count for the workspace guard and the secret checks.
What code builds at run time (``os.system(cmd)``) is not found here: such code is
already inline code, which a human or the reviewer judges.
"""

from __future__ import annotations

import re

MAX_COMMANDS = 16

# A call that runs a shell command or a program, then a string (or a list of strings).
_CALL = re.compile(
    r"""\b(?:system|popen|popen2|popen3|shell_exec|passthru|proc_open|exec|execSync|"""
    r"""execFileSync|execFile|spawn|spawnSync|getoutput|getstatusoutput|check_output|"""
    r"""check_call|call|run|Popen|spawnl|spawnlp|spawnv|spawnvp|execl|execlp|execle|execv|"""
    r"""execvp|execvpe|pty\.spawn|IO\.popen|Open3\.\w+)\s*(?:\(\s*)?(?P<list>\[\s*)?"""
    r"""(?P<q>['"])(?P<body>(?:\\.|(?!(?P=q)).){1,4096})(?P=q)""", re.DOTALL)
_LIST_ITEM = re.compile(r"""\s*,\s*(?P<q>['"])(?P<body>(?:\\.|(?!(?P=q)).){0,4096})(?P=q)""")
# Perl, Ruby, PHP and shell-style backticks; Perl's qx; awk's pipes and perl's piped open.
_BACKTICK = re.compile(r"`([^`\n]{1,4096})`")
_QX = re.compile(r"\bqx\s*([({\[/|!])(.{1,4096}?)[)}\]/|!]", re.DOTALL)
_AWK_PIPE = re.compile(r"""\|\s*"([^"\n]{1,4096})"|"([^"\n]{1,4096})"\s*\|&?\s*getline""")
_PIPED_OPEN = re.compile(r"""\bopen\s*\(?[^,;]*,\s*(['"])\s*(\|[^'"]+|[^'"]+\|)\s*\1""")


def commands_in_code(code: str) -> list[str]:
    """The command lines ``code`` spells in calls that run them, at most ``MAX_COMMANDS``."""
    found: list[str] = []
    for match in _CALL.finditer(code):
        words = [_unescape(match.group("body"))]
        if match.group("list"):  # subprocess.run(["rm", "-rf", "x"])
            rest = code[match.end():]
            for item in _iter_list(rest):
                words.append(_unescape(item))
            found.append(" ".join(_quote(w) for w in words))
        else:
            found.append(words[0])
    found.extend(m.group(1) for m in _BACKTICK.finditer(code))
    found.extend(m.group(2) for m in _QX.finditer(code))
    found.extend(m.group(1) or m.group(2) for m in _AWK_PIPE.finditer(code))
    found.extend(m.group(2).strip("| ") for m in _PIPED_OPEN.finditer(code))
    return list(dict.fromkeys(c for c in found if c.strip()))[:MAX_COMMANDS]


def _iter_list(rest: str) -> list[str]:
    items: list[str] = []
    while len(items) < 64:
        match = _LIST_ITEM.match(rest)
        if match is None:
            break
        items.append(match.group("body"))
        rest = rest[match.end():]
    return items


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def _quote(word: str) -> str:
    """A list item as one shell word (``["sh", "-c", "rm x"]`` keeps ``rm x`` whole)."""
    if word and re.fullmatch(r"[A-Za-z0-9_@%+=:,./~-]+", word):
        return word
    return "'" + word.replace("'", "'\\''") + "'"

