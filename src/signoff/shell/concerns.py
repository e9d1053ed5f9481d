"""What a shell command does that a reviewer must weigh, beyond what the rules say.

Each concern raises the verdict's risk (``high``; piping the network into a
shell is ``critical``), so the built-in auto reviewer, which approves only
low and medium risk, sends the call to a human, and every reviewer sees the
concerns among the verdict's reasons. The codes:

* ``hidden_exec`` — runs code the command does not say it runs: sed ``e``,
  awk ``system``, ``find -exec``, tar checkpoint actions, pager and editor
  escapes, git ``-c``, an unmodelled wrapper, ``eval``;
* ``inline_code`` — code given to an interpreter or a shell on the command
  line (``python -c``, ``bash -c``) or on a standard input nothing here can read
  (``curl … | sh``, an interactive ``python``). A here-document program
  (``python - <<'PY' … PY``) is written out in the command like a script the
  agent wrote and then ran, so it is judged like one: a declared program;
* ``network``, ``listener`` — talks to, or serves, other machines;
* ``privilege`` — ``sudo``, ``su``, ``doas`` …;
* ``system_install`` — installs or removes system packages;
* ``global_config`` — changes configuration outside the workspace;
* ``env_dump`` — prints the environment, secrets included (``env``, ``set``, ``declare
  -p``, ``ps e``, ``jq env``, ``print(os.environ)`` in inline code); a mandatory ask by
  default, like ``echo $AWS_SECRET_ACCESS_KEY``;
* ``secret_read`` — expands a variable whose name says it holds a credential (``echo
  $AWS_SECRET_ACCESS_KEY``): the environment's counterpart of reading ``~/.aws/credentials``,
  and a mandatory ask by default, like that read (``signoff.policy.evaluation`` judges the files);
* ``executes_written`` — a tool reads a file written earlier in the same command
  line (``echo … > conftest.py && pytest``);
* ``opaque`` — a part of the line whose effect cannot be known from its text
  (``signoff.shell.opaque``): a mandatory ask in every review mode, whatever
  ``always_ask`` says (``MANDATORY``);
* ``unknown_option`` — an option, subcommand or word a modelled command's model does
  not know (``git apply``, ``ls --frobnicate``, awk's ``ARGV``): the reviewer cannot
  lean on the model, so ``auto`` sends it to a human;
* ``runtime_name`` — a file a modelled command reads or writes is named by an
  expansion (``cat "$F"``, ``sort -o $(mktemp)``): known only when the shell runs it.

Writes to sensitive paths and outside the workspace are judged with the
workspace (``signoff.policy.evaluation``), not here.
"""

from __future__ import annotations

import re

from signoff.model import Risk
from signoff.shell import ShellAnalysis, SimpleCommand
from signoff.shell.commands import Concern, Kind
from signoff.shell.commands.models import STDIN_PROGRAM
from signoff.shell.opaque import CODE as OPAQUE
from signoff.shell.opaque import OPAQUE_FINDINGS
from signoff.shell.stdin import UNKNOWN_WORDS

# Concerns that are mandatory asks whatever ``[policy] always_ask`` says.
MANDATORY = frozenset({OPAQUE})

PRIVILEGE = frozenset({"sudo", "su", "doas", "pkexec", "runuser", "sg", "newgrp", "chroot",
                       "nsenter", "unshare", "setpriv", "capsh"})
_ENV_DUMPERS = frozenset({"printenv"})
_ENV_BUILTINS = frozenset({"set", "export", "declare", "typeset", "env"})
_PS_BSD = "aAcCeEfFhHjlLmMnrRsStTuvwxXZ"  # the letters of BSD-style ps options

# Variable names that say they hold a credential: SECRET, TOKEN, PASSWORD, API_KEY, a KEY
# word, AUTH (not AUTHOR), CREDENTIALS, COOKIE, a DSN or a database URL.
_SECRET_NAME = re.compile(
    r"secret|token|passw|passphrase|credential|cookie|auth(?!or)|api_?key|access_?key|"
    r"private_?key|(?:^|_)key(?:$|_)|(?:^|_)dsn(?:$|_)|database_?url|conn(?:ection)?_?str",
    re.IGNORECASE)
_NET_TOOLS = frozenset({"nc", "ncat", "netcat", "socat", "telnet", "ssh", "scp", "sftp",
                        "rsync", "ftp", "nmap"})
_HIDDEN_FINDINGS = {"find_exec": "find -exec runs another command",
                    "eval": "eval, source or exec runs code that cannot be judged",
                    "wrapper": "a wrapper runs another command this policy cannot model",
                    "sqlite_exec": "a sqlite3 statement runs a program or loads a library"}
_INLINE_FINDINGS = {"inline_code": "inline code given to an interpreter",
                    "shell_inline": "a shell given an inline script (-c)",
                    "interpreter_stdin": "a shell or interpreter reading its program from "
                                         "standard input (or started interactively)"}
def shell_concerns(analysis: ShellAnalysis) -> list[Concern]:
    found: dict[str, Concern] = {}

    def add(code: str, text: str, risk: Risk = Risk.HIGH) -> None:
        found.setdefault(code, Concern(code=code, text=text, risk=risk))

    for index, cmd in enumerate(analysis.commands):
        name = cmd.basename
        if name in PRIVILEGE:
            add("privilege", f"{name} runs a command with other privileges")
        if name == "printenv" and any(not a.startswith("-") for a in cmd.argv[1:]):
            for variable in (a for a in cmd.argv[1:] if not a.startswith("-")):
                if _SECRET_NAME.search(variable):
                    add("secret_read", f"printenv {variable}: a variable whose name says it "
                        "holds a credential")
        elif name in _ENV_DUMPERS or (name in _ENV_BUILTINS and _dumps_env(cmd)) or (
                name == "ps" and _ps_environment(cmd.argv[1:])):
            add("env_dump", f"{' '.join(cmd.argv)[:40]!r} prints the environment")
        if name in _NET_TOOLS:
            if any(a in ("-l", "-L", "--listen") or a.lower().startswith(
                    ("tcp-listen", "udp-listen")) for a in cmd.argv[1:]):
                add("listener", f"{name} listens for connections")
            add("network", f"{name} talks to other machines")
        inv = cmd.invocation
        if inv is None:
            continue
        for concern in inv.concerns:
            found.setdefault(concern.code, concern)
        heredoc = cmd.heredoc
        for part in inv.parts:
            if part.kind is Kind.EXEC and part.why == STDIN_PROGRAM and heredoc:
                continue  # the here-document is the program, written out in the command
            if part.kind is Kind.EXEC and not part.declared:
                add("hidden_exec", f"{inv.model}: {part.show()[:60]!r} "
                    f"{part.why or 'runs a program'}")
            elif part.kind is Kind.NETWORK:
                add("network", f"{inv.model}: {part.why or 'talks to other machines'}")
            elif part.kind is Kind.UNKNOWN and inv.model and not (
                    index in analysis.listed_paths and part.word == UNKNOWN_WORDS):
                add("unknown_option", f"{inv.model}: {part.show()[:60]!r} "
                    f"{part.why or 'is not in its model'}")
            if part.kind in (Kind.READ, Kind.WRITE) and not part.literal and inv.model:
                add("runtime_name", f"{inv.model}: {part.show()[:60]!r} names a file known "
                    "only when the shell runs it")
    for variable in analysis.variables:
        if _SECRET_NAME.search(variable):
            add("secret_read", f"expands ${variable}, a variable whose name says it holds a "
                "credential")
    if analysis.dumps_env:
        add("env_dump", "inline code prints the environment")

    for finding in analysis.never_allow:
        if finding.code == OPAQUE or finding.code in OPAQUE_FINDINGS:
            add(OPAQUE, finding.text)
    for finding in analysis.never_allow:
        if finding.code in _HIDDEN_FINDINGS:
            add("hidden_exec", _HIDDEN_FINDINGS[finding.code])
        elif finding.code in _INLINE_FINDINGS:
            add("inline_code", _INLINE_FINDINGS[finding.code])
    for finding in analysis.never_allow:
        if finding.code == "executes_written":
            add("executes_written", finding.text)
    return list(found.values())


def _ps_environment(args: tuple[str, ...]) -> bool:
    """``ps e``, ``ps auxe``, ``ps -ef e``: BSD-style ``e`` shows each process's environment.
    The values of ``-o``, ``-p`` and the like are not option letters."""
    valued = False
    for arg in args:
        if valued:
            valued = False
            continue
        if arg.startswith("-"):
            valued = arg.lstrip("-")[-1:] in ("o", "O", "p", "q", "u", "U", "g", "G", "t",
                                              "C", "s", "k") and "=" not in arg
            continue
        if "e" in arg and set(arg) <= set(_PS_BSD):
            return True
    return False


def _dumps_env(cmd: SimpleCommand) -> bool:
    """``set`` alone, ``export`` or ``export -p``, ``declare``/``typeset`` with no name
    (``-p``, ``-x``) list the variables; ``set -x`` turns on tracing and lists nothing."""
    args = cmd.argv[1:]
    name = cmd.basename
    if name == "env":
        return False  # judged by its model (env with no command)
    if name == "set":
        return not args
    if name == "export":
        return all(a == "-p" for a in args)
    return all(a in ("-p", "-x", "-px", "-xp") for a in args)
