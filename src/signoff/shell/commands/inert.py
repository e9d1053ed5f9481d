"""Commands whose words are data, not files: printing, testing, looking things up.

``echo`` and ``printf`` print their operands; ``true``, ``test``, ``which``,
``basename`` and the like read no file's content and write none. A word of
unknown value (``echo $HOME``) is harmless here: no option of theirs does
anything but format. ``printf -v`` is the exception: it assigns a shell
variable (``printf -v PATH …`` changes what every later command runs).
"""

from __future__ import annotations

from signoff.shell.commands.models import Kind, Model, State, model

I = Kind.INERT  # noqa: E741


def _date_finish(state: State) -> None:
    """``date +FORMAT`` prints; ``date MMDDhhmm`` sets the clock."""
    for n, index in enumerate(list(state.operands)):
        if not state.parts[index].word.startswith("+"):
            state.set_operand(n, Kind.UNKNOWN, "a date operand sets the system clock")

MODELS: list[Model] = [
    model("echo", "neE", operand=I, lenient=True),
    model("printf", "v:", "help version", operand=I, lenient=True, posix=True, kinds={
        "v": (Kind.UNKNOWN, "printf -v assigns a shell variable (PATH, IFS, ...)")}),
    model("true", operand=I, lenient=True),
    model("false", operand=I, lenient=True),
    model(":", operand=I, lenient=True),
    model("pwd", "LP", "help version", operand=I),
    model("test", operand=I, lenient=True),
    model("[", operand=I, lenient=True),
    model("which", "a", "all skip-alias skip-functions help version", operand=I, lenient=True),
    model("type", "afptP", operand=I),
    model("basename", "as:z", "multiple suffix= zero help version", operand=I),
    model("dirname", "z", "zero help version", operand=I),
    model("sleep", "", "help version", operand=I),
    model("whoami", "", "help version", operand=I),
    model("uname", "asnrvmpio", "all kernel-name nodename kernel-release kernel-version "
          "machine processor hardware-platform operating-system help version", operand=I),
    model("nproc", "", "all ignore= help version", operand=I),
    model("seq", "f:s:w", "format= separator= equal-width help version", operand=I,
          lenient=True),
    model("expr", operand=I, lenient=True),
    model("yes", "", "help version", operand=I),
    model("tr", "cCdst", "complement delete squeeze-repeats truncate-set1 help version",
          operand=I),
    model("date", "d:f:I::r:Rs:u", "date= file= iso-8601=? reference= rfc-email "
          "rfc-3339= set= debug utc universal resolution help version", operand=I,
          finish=_date_finish, kinds={
              "f": (Kind.READ, "reads dates from FILE"),
              "file": (Kind.READ, "reads dates from FILE"),
              "r": (Kind.READ, "reads FILE's modification time"),
              "reference": (Kind.READ, "reads FILE's modification time"),
              "s": (Kind.UNKNOWN, "date -s sets the system clock"),
              "set": (Kind.UNKNOWN, "date --set sets the system clock")}),
]
