"""Wrappers: commands that run another command line (timeout, nice, xargs, env, …).

A wrapper's own options are modelled; its command is parsed as a command of its
own, and an allow rule admits the pair only when the wrapped command is admitted
too. ``xargs`` appends words read from its input: the ones the command line writes
(``xargs cat <<< .env``, ``echo .env | xargs cat``) are judged, and any others
are an argument nothing can know.
Wrappers that change who runs (``sudo``, ``su``, ``doas``) or where (``ssh``,
``chroot``) are not modelled: they stay never-allow (``wrapper``).
"""

from __future__ import annotations

from signoff.shell.commands.models import Kind, Model, Opt, Part, State, model

R, W, X, I, U = Kind.READ, Kind.WRITE, Kind.EXEC, Kind.INERT, Kind.UNKNOWN  # noqa: E741


def _lead_inert(state: State) -> None:
    for n in range(len(state.operands)):
        state.set_operand(n, I, "a setting of the wrapper")


def _xargs_finish(state: State) -> None:
    state.inner_tail = True
    if "arg_file" not in state.modes:  # -a FILE: the words come from FILE, not the input
        state.stdin_names = "items" if "split" in state.modes else "words"
    if state.modes.get("split_option") in ("-d", "--delimiter"):
        state.stdin_delimiter = _delimiter(state.modes["split"])
    if state.modes.get("split_option") in ("-I", "-i", "--replace"):
        state.stdin_replace = state.modes["split"] or "{}"  # -i, --replace: {}
    if state.inner is None:
        state.parts.append(Part(kind=I, word="xargs", index=0, why="runs echo"))


def _delimiter(value: str) -> str:
    """xargs -d's separator: a character, or a C escape (``\\n``, ``\\x2c``, ``\\054``)."""
    if len(value) == 1:
        return value
    escapes = {"\\n": "\n", "\\t": "\t", "\\0": "\x00", "\\\\": "\\", "\\r": "\r"}
    if value in escapes:
        return escapes[value]
    for prefix, base in (("\\x", 16), ("\\", 8)):
        if value.startswith(prefix):
            try:
                return chr(int(value[len(prefix):], base))
            except (ValueError, OverflowError):
                return ""
    return ""


def _env_finish(state: State) -> None:
    for n, index in enumerate(list(state.operands)):
        state.set_operand(n, U, "an environment assignment changes what the command runs "
                          "(PATH, LD_PRELOAD, …)")
        del index
    quiet = "stop" in state.modes or ("clear" in state.modes and not state.operands)
    if state.inner is None and "split" not in state.modes and not quiet:
        state.concern("env_dump", "env with no command prints the whole environment "
                      "(secrets included)")
        state.parts.append(Part(kind=U, word="env", index=0,
                                why="prints the whole environment (secrets included)"))


def _flock_lead(state: State) -> None:
    if state.operands:
        state.set_operand(0, W, "the lock file flock creates", declared=True)


MODELS: list[Model] = [
    model("timeout", "k:s:v", "foreground kill-after= preserve-status signal= verbose help "
          "version", wraps=True, lead=1, posix=True, finish=_lead_inert),
    model("nice", "n:", "adjustment= help version", wraps=True, posix=True, digits=True),
    model("nohup", "", "help version", wraps=True, posix=True),
    model("stdbuf", "i:o:e:", "input= output= error= help version", wraps=True, posix=True),
    model("ionice", "c:n:p:P:tu:", "class= classdata= pid= pgid= ignore uid= help version",
          wraps=True, posix=True),
    model("time", "af:o:pqv", "append format= output= portability quiet verbose help version",
          wraps=True, posix=True, kinds={"o": (W, "writes its report to FILE"),
                                         "output": (W, "writes its report to FILE")}),
    model("flock", "sxunw:E:oFc:", "shared exclusive unlock nonblock nb timeout= wait= "
          "conflict-exit-code= close no-fork command= verbose help version", wraps=True,
          lead=1, posix=True, finish=_flock_lead,
          kinds={"c": (X, "flock -c runs a shell command"),
                 "command": (X, "flock --command runs a shell command")}),
    model("watch", "bcCd::eghn:pq:r:tw:x", "beep color no-color differences=? errexit "
          "chgexit equexit= interval= precise no-rerun no-title no-wrap exec help version",
          wraps=True, posix=True),
    model("xargs", "0a:d:E:e::I:i::L:l::n:oP:prs:tx", "null arg-file= delimiter= eof=? "
          "replace=? max-lines=? max-args= open-tty max-procs= interactive no-run-if-empty "
          "max-chars= show-limits verbose exit process-slot-var= help version",
          wraps=True, posix=True, finish=_xargs_finish,
          kinds={"a": Opt(kind=R, sets="arg_file", why="reads its arguments from FILE"),
                 "arg-file": Opt(kind=R, sets="arg_file", why="reads its arguments from FILE"),
                 "process-slot-var": (U, "sets an environment variable"),
                 **{o: Opt(sets="split") for o in ("0", "d", "I", "i", "L", "l", "null",
                                                   "delimiter", "replace", "max-lines")}}),
    model("env", "0iu:C:S:v", "ignore-environment null unset= chdir= split-string= "
          "block-signal=? default-signal=? ignore-signal=? list-signal-handling debug help "
          "version", wraps=True, posix=True, assigns=True, finish=_env_finish,
          kinds={"i": Opt(sets="clear"), "ignore-environment": Opt(sets="clear"),
                 "C": (U, "runs the command in another directory"),
                 "chdir": (U, "runs the command in another directory"),
                 "S": Opt(kind=X, sets="split", why="splits a string into a command line"),
                 "split-string": Opt(kind=X, sets="split",
                                     why="splits a string into a command line")}),
]
