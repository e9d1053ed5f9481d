"""Commands that run other code: ``eval``, ``bash -c``, wrappers, ``find -exec``, inline code.

They are never allowed; what they would run is parsed where it can be (the
inner commands become *nested* commands that deny rules see) and otherwise
recorded as a finding. What they hand the code — the names it spells, the
environment variables it reads — is kept for ``secret_read`` and ``env_dump``.
``script`` parses a nested script into the same walk; it is passed in by
``analysis.py``, which owns the parser.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from signoff.shell import codecommands, commands, opaque
from signoff.shell import words as sw
from signoff.shell.commands.awkprogram import awk_commands
from signoff.shell.commands.find import listing
from signoff.shell.commands.models import ARGUMENT_OF, STDIN_PROGRAM
from signoff.shell.commands.sqlite3 import statements_of
from signoff.shell.paths import PathRef, listed_reads, reads_marked
from signoff.shell.results import MAX_NESTED_SCRIPTS, MAX_SIMPLE_COMMANDS, SimpleCommand, Walk
from signoff.shell.stdin import NO_FEED, Feed

Script = Callable[[str, Walk], None]


class DeepScript(Protocol):
    """``shell._nested_script`` with its options (``Walk.merge`` says what they do)."""

    def __call__(self, text: str, walk: Walk, *, paths_only: bool = False,
                 deny_only: bool = False, findings: frozenset[str] | None = None) -> None: ...


def judge_special(cmd: SimpleCommand, walk: Walk, *, script: Script,
                  stdin: tuple[str, ...] = (), modelled_wrapper: bool = False,
                  feed: Feed = NO_FEED) -> None:
    """Findings for commands that run other code, and the inner commands deny rules must see.

    A wrapper with a command model (``timeout``, ``xargs``, ``env`` …) raises no
    ``wrapper`` finding: the shell walk records its command as a command of its own,
    which an allow rule must admit too; its argument suffixes are still shown to deny
    rules (``deny_only``), in case the model misreads an option's value.
    """
    name = cmd.basename
    argv = cmd.argv
    if name in sw.EVALUATORS:
        walk.find("eval", f"{name} runs code that cannot be judged here")
        if not all(cmd.literal[1:]) and name != "alias":  # eval "$x", source "$f", exec $X
            opaque.find(walk, f"{name} runs code or a command known only when the "
                             "shell runs it")
        if name == "eval" and len(argv) > 1:
            script(" ".join(argv[1:]), walk)
        elif name == "trap":
            handler = sw.trap_script(argv)
            if handler is not None:
                script(handler, walk)
        elif name in ("exec", "coproc"):  # exec -a NAME CMD, coproc [NAME] CMD
            _nested_suffixes(cmd, walk, stdin, script)
        elif name in ("source", ".") and len(argv) > 1 and argv[1] in _STDIN_FILES:
            for text in stdin:  # source /dev/stdin <<'EOF' … EOF: the script is here
                script(text, walk)
            _program_input(name, stdin, feed, walk)
        return
    if name in sw.SHELLS:
        inline = sw.shell_inline_script(argv)
        if inline is not None:
            walk.find("shell_inline", f"{name} -c runs an inline script")
            if not all(cmd.literal[1:]):  # bash -c "$x": the script is not on the line
                opaque.find(walk, f"{name} -c runs a script known only when the shell "
                                 "runs it")
            for text in inline:
                script(text, walk)
        elif sw.shell_reads_stdin(argv):
            if stdin:
                walk.find("heredoc_program", f"{name} runs the script of a here-document")
            else:
                walk.find("interpreter_stdin", f"{name} reads its program from standard input")
            _program_input(name, stdin, feed, walk)
            for text in stdin:  # bash <<< 'rm x', sh <<EOF … EOF
                script(text, walk)
        return
    if name in sw.WRAPPERS:
        if not modelled_wrapper:
            walk.find("wrapper", f"{name} runs another command")
        if name == "env":  # env GIT_PAGER=… git log
            opaque.env_words(argv, cmd.literal, walk, script)
        scripts = sw.env_split_strings(argv) if name == "env" else sw.wrapper_scripts(argv)
        for text in scripts:  # env -S 'rm x', su -c 'rm x', ssh host 'rm x'
            script(text, walk)
        _nested_suffixes(cmd, walk, stdin, script)
        return
    if name == "find":
        inner = sw.find_exec(argv)
        if inner is not None:
            walk.find("find_exec", "find -exec runs another command")
            for part in inner:
                _nested_argv(part, cmd, walk, script=script)
            listed = listing(argv, cmd.literal)
            if listed is not None and any(reads_marked(part, "{}") for part in inner):
                listed_reads(listed, walk, tuple(walk.cds), walk.current)
        return
    inv = cmd.invocation
    if inv is not None and inv.model == "sqlite3":
        _sqlite(inv, walk, stdin=stdin, script=script)
        return
    if inv is not None and inv.model in ("python", "node"):
        # A modelled interpreter: its parse knows which option takes code, where its
        # options end (node script.js -e x passes -e to the script) and --version.
        if any(p.kind is commands.Kind.EXEC and p.why == "runs inline code" for p in inv.parts):
            walk.find("inline_code", f"{name} runs inline code")
            if any(p.why == "runs inline code" and not p.literal for p in inv.parts):
                opaque.find(walk, f"{name} runs code known only when the shell runs it")
            return  # the code is an exec part: handed_names reads it
        if not any(p.why == STDIN_PROGRAM for p in inv.parts):
            return
    else:
        finding = sw.inline_code(name, argv)
        if finding is not None:
            walk.find(*finding)
            if not all(cmd.literal[1:]):  # perl -e "$x": the code is not on the line
                opaque.find(walk, f"{name} runs code known only when the shell runs it")
            _code(" ".join(argv[1:]), walk)
            return
    if sw.is_interpreter(name) and sw.reads_stdin(argv):
        if stdin:  # python - <<'PY' … PY: the program is in the command, for all to read
            walk.find("heredoc_program", f"{name} runs the program of a here-document")
            for text in stdin:
                _code(text, walk)
        else:
            walk.find("interpreter_stdin", f"{name} reads its program from standard input")
        _program_input(name, stdin, feed, walk)


def _program_input(name: str, stdin: tuple[str, ...], feed: Feed, walk: Walk) -> None:
    """A program read from standard input is opaque unless the line writes it out: a pipe
    (``curl … | sh``), nothing at all (an interactive ``bash``), or a here-document whose
    expansions the shell fills in first (``python - <<EOF … $CODE … EOF``). A file it is
    redirected from (``bash < setup.sh``) is a script it runs, as ``bash setup.sh`` is."""
    if stdin and feed.built:
        opaque.find(walk, f"{name} runs a here-document the shell fills in when it runs")
    elif not stdin and not feed.from_file:
        opaque.find(walk, f"{name} reads its program from its input")


def _sqlite(inv: commands.Invocation, walk: Walk, *, stdin: tuple[str, ...],
            script: Script) -> None:
    """sqlite3's statements that run a command (``.shell``, ``.system``, ``.read '|cmd'``)
    are nested scripts deny rules see; a here-document of statements is judged as the
    operands are (``commands.sqlite``): its files count, its programs are found."""
    parts = list(inv.parts)
    for text in stdin:
        written = statements_of(text, 0)
        parts.extend(written)
        for part in written:
            if part.kind in (commands.Kind.READ, commands.Kind.WRITE) and part.value:
                walk.add_path(PathRef(path=part.value, literal=True, cds=tuple(walk.cds),
                                      write=part.kind is commands.Kind.WRITE,
                                      command=walk.current))
    for part in parts:
        if part.kind is commands.Kind.EXEC and part.why != STDIN_PROGRAM and not part.path:
            walk.find("sqlite_exec", f"sqlite3: {part.word[:60]!r} {part.why}")
            if part.value and part.why.endswith(("runs a program", "pipes through a command")):
                script(part.value, walk)


def handed_names(inv: commands.Invocation, walk: Walk) -> None:
    """Names a command hands to what it runs, for ``secret_read`` alone: the arguments of
    a script (``python x.py .env``), the value of an option nothing here models (``file -f
    /etc/shadow``), the names in code given on the line (``make --eval='$(file
    </etc/shadow)'``)."""
    for part in inv.parts:
        if not part.literal:
            continue
        if part.why.startswith(ARGUMENT_OF):
            walk.code_names.append(part.word)
        elif part.kind is commands.Kind.UNKNOWN and part.value:
            walk.code_names.append(part.value)
        elif part.kind is commands.Kind.EXEC and part.value and not part.path:
            _code(part.value, walk)


def _code(text: str, walk: Walk) -> None:
    """What inline code spells: the names it may open or read from the environment, and
    whether it dumps the environment whole."""
    walk.code_names.extend(sw.code_strings(text))
    walk.variables.extend(sw.code_variables(text))  # os.environ["API_KEY"]: as $API_KEY
    if sw.code_reads_environment(text):
        walk.dumps_env = True


def _nested_suffixes(cmd: SimpleCommand, walk: Walk, stdin: tuple[str, ...],
                     script: Script) -> None:
    """Every suffix of a wrapper's argv that starts with a non-option word may be the command.

    Options that take a value (``sudo -u root``, ``timeout 5``) cannot be told apart
    from the command without knowing every wrapper's flags, so each candidate counts.
    """
    argv = cmd.argv
    for start in range(1, len(argv)):
        if len(walk.commands) > MAX_SIMPLE_COMMANDS * 2:
            walk.find("too_many_commands", f"more than {MAX_SIMPLE_COMMANDS} simple commands")
            break
        if not argv[start].startswith("-") and "=" not in argv[start]:
            _nested_argv(argv, cmd, walk, stdin=stdin, script=script, start=start)


def _nested_argv(argv: tuple[str, ...], outer: SimpleCommand, walk: Walk, *, script: Script,
                 stdin: tuple[str, ...] = (), start: int = 0) -> None:
    """``argv[start:]`` as a command of its own. The budget is paid before the slice is
    made: a long wrapper line has as many suffixes as words, and copying each one first
    made hostile input quadratic (``watch`` × 6 + 30,000 words: 4 s of copying)."""
    if len(argv) <= start or not walk.spend(len(argv) - start):
        return
    if start:
        argv = argv[start:]
    if "$" in argv[0] or "`" in argv[0]:  # exec $X, sudo "$CMD", find -exec $X {} ;
        opaque.find(walk, f"the command {argv[0][:40]!r} is known only when the shell "
                         "runs it")
    literal = (True,) * len(argv)
    inner = SimpleCommand(argv=argv, literal=literal, name_plain=False, nested=True,
                          pipeline=outer.pipeline, source=outer.source, deny_only=True,
                          invocation=commands.invocation(argv, literal))
    walk.commands.append(inner)
    if walk.depth < MAX_NESTED_SCRIPTS and len(walk.commands) <= MAX_SIMPLE_COMMANDS * 2:
        walk.depth += 1
        judge_special(inner, walk, stdin=stdin, script=script)
        walk.depth -= 1


_EXEC = commands.Kind.EXEC
# What a string of code may be: only what says it runs something counts, never a parse error.
_CODE_FINDINGS = frozenset({opaque.CODE, "dynamic_command_name", "interpreter_stdin"})


def programs_named(cmd: SimpleCommand, inv: commands.Invocation | None, walk: Walk, *,
                   script: DeepScript) -> None:
    """What an option or the code on the line runs, judged as a nested command: ``sed 'e
    rm x'``, ``tar --to-command='rm x'``, ``man -P 'rm x'``, ``git -c core.pager='rm x'``,
    ``rsync -e``, ``awk 'BEGIN { system("rm x") }'``, ``python -c 'os.system("rm x")'``.
    Deny and ask rules see them; no allow rule has to admit them (the option is judged)."""
    codes: list[str] = []
    name = cmd.basename
    if inv is not None and inv.model:
        for part in inv.parts:
            if part.kind is not _EXEC or not part.literal or part.path or \
                    part.why == STDIN_PROGRAM or part.declared:
                continue
            if _from_data(inv.model, part, walk):
                continue
            if part.value is None or inv.model in ("python", "node"):
                codes.append(part.value if part.value is not None else part.word)
                continue
            program = _program_of(inv.model, part)
            if part.option is None and program == part.word:
                continue  # a program operand (npx serve): its words follow as commands do
            if program:
                script(program, walk, deny_only=True)
    elif sw.is_interpreter(name) and sw.inline_code(name, cmd.argv) is not None:
        codes.append(" ".join(cmd.argv[1:]))  # perl -e, ruby -e, php -r
    for code in codes:
        if inv is not None and inv.model == "awk":
            found, computed = awk_commands(code)
            if computed:
                opaque.find(walk, "awk runs a command it builds when it runs")
            for text in found:
                script(text, walk, deny_only=True)
            continue
        for text in codecommands.commands_in_code(code):
            script(text, walk, deny_only=True, findings=_CODE_FINDINGS)
    if name in sw.TAKES_COMMANDS:
        for text in sw.commands_in_arguments(cmd.argv):  # git rebase --exec, npx -c, alias
            script(text, walk, deny_only=True)
    if name == "make":  # make SHELL=… CC=…: as in the environment
        for index, word in enumerate(cmd.argv[1:], start=1):
            variable, eq, value = word.partition("=")
            if eq and variable.isidentifier():
                opaque.variable(variable, value, cmd.literal[index], walk, script)


def _from_data(model: str, part: commands.Part, walk: Walk) -> bool:
    """A command taken from what the program reads, or a configuration that names files
    of programs (sed ``e`` alone, ``s///e``; git's ``core.hooksPath``): opaque."""
    if model == "sed" and part.value in (None, ""):
        opaque.find(walk, f"sed {part.word[:40]!r} runs a command made of its input")
        return True
    if model.startswith("git") and (part.option == "--exec-path" or (
            part.option in ("-c", "--config") and (part.value or "").lower().startswith(
                _GIT_FILE_KEYS))):
        opaque.find(walk, f"git {part.show()[:60]!r} runs programs from files it names")
        return True
    return False


_STDIN_FILES = frozenset({"/dev/stdin", "/dev/fd/0", "/proc/self/fd/0", "-"})
# git configuration that runs what files hold, rather than a command it spells
_GIT_FILE_KEYS = ("core.hookspath", "include.", "includeif.", "core.worktree",
                  "core.gitproxy", "init.templatedir")


def _program_of(model: str, part: commands.Part) -> str:
    """The command line an exec option's value runs (``exec=CMD``, ``core.pager=CMD``)."""
    value = part.value or ""
    if part.why == "runs an editor command":  # vim -c '!cmd': only a bang runs a shell
        command = value.lstrip(": ")
        return command[1:] if command.startswith("!") else ""
    if model.startswith("git") and part.option in ("-c", "--config"):
        value = value.partition("=")[2].lstrip("!")  # alias.x=!cmd, core.pager=cmd
    elif value.startswith("exec="):  # tar --checkpoint-action=exec=CMD
        value = value[len("exec="):]
    return value
