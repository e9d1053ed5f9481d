"""Pagers, manuals and editors: they read files, and they can run programs.

``less`` writes a log with ``-o``/``-O``, reads key bindings (``-k``) and
runs initial commands (``+cmd``); ``man`` runs a browser (``-H``) or a pager
(``-P``) it is given. Editors (vi, vim, nano, emacs, ed) run commands from
their arguments (``-c``, ``+cmd``, ``--cmd``, ``-S``) and from the files they
open (modelines, scripts); an allow rule naming one admits only opening files.
"""

from __future__ import annotations

from signoff.shell.commands.models import Kind, Model, Opt, Part, State, model

R, W, X, I, U = Kind.READ, Kind.WRITE, Kind.EXEC, Kind.INERT, Kind.UNKNOWN  # noqa: E741


def _plus_commands(state: State, *, harmless: tuple[str, ...] = ()) -> None:
    """``+cmd`` operands are commands the program runs at start."""
    for n, index in enumerate(list(state.operands)):
        word = state.parts[index].word
        if word.startswith("+") and not (word[1:].isdigit() or word.startswith(harmless)):
            state.set_operand(n, X, "runs a command at start")


def _less_finish(state: State) -> None:
    _plus_commands(state, harmless=("+/", "+G", "+g", "+F"))


def _man_finish(state: State) -> None:
    local = "local" in state.modes
    for n, index in enumerate(list(state.operands)):
        word = state.parts[index].word
        if not local and "/" not in word:
            state.set_operand(n, I, "a manual page name")


def _editor_finish(state: State) -> None:
    _plus_commands(state)
    for n, index in enumerate(list(state.operands)):
        if state.parts[index].kind is R:
            state.set_operand(n, W, "a file it may change", declared=True)


_LESS_SHORT = "?aAbBcCdeEfFgGiIJKLmMnNo:O:p:P:qQrRsSt:T:uUVwWx:Xy:z:#:k:D:h:j:"

MODELS: list[Model] = [
    model("less", _LESS_SHORT, "help search-skip-screen auto-buffers buffers= "
          "clear-screen CLEAR-SCREEN dumb quit-at-eof QUIT-AT-EOF quit-if-one-screen "
          "hilite-search HILITE-SEARCH ignore-case IGNORE-CASE status-column "
          "lesskey-file= lesskey-src= lesskey-content= RAW-CONTROL-CHARS raw-control-chars "
          "LINE-NUMBERS line-numbers LONG-PROMPT long-prompt log-file= LOG-FILE= pattern= "
          "prompt= quiet QUIET silent SILENT chop-long-lines squeeze-blank-lines tag= "
          "tag-file= UNDERLINE-SPECIAL no-init no-keypad tabs= window= shift= mouse "
          "wheel-lines= use-color incsearch no-histdups follow-name header= version",
          digits=True, finish=_less_finish, kinds={
              "o": (W, "writes the input to a log FILE"), "O": (W, "writes a log FILE"),
              "log-file": (W, "writes a log FILE"), "LOG-FILE": (W, "writes a log FILE"),
              "k": (X, "reads key bindings (which can run commands)"),
              "lesskey-file": (X, "reads key bindings (which can run commands)"),
              "lesskey-src": (X, "reads key bindings (which can run commands)"),
              "lesskey-content": (X, "key bindings (which can run commands)"),
              "T": (R, "reads a tags file"), "tag-file": (R, "reads a tags file")}),
    model("more", "dlfpcsun:", "silent logical no-pause print-over clean-print squeeze "
          "plain lines= help version", digits=True, finish=_less_finish),
    model("man", "C:dDwWfkKlL:m:M:P:p:r:S:e:E:H::T::X::Z7aiIRt", "config-file= debug "
          "default where path where-cat location-cat whatis apropos global-apropos "
          "local-file locale= systems= manpath= pager= prompt= preprocessor= sections= "
          "extension= encoding= html=? troff-device=? gxditview=? ditroff no-subpages "
          "no-hyphenation no-justification regex wildcard names-only all ignore-case "
          "match-case recode= troff help version usage",
          finish=_man_finish, kinds={
              "H": (X, "man -H runs a web browser"), "html": (X, "man --html runs a browser"),
              "P": (X, "man -P runs PAGER"), "pager": (X, "man --pager runs PAGER"),
              "C": (U, "reads a configuration file"), "config-file": (U, "reads config"),
              "M": (R, "reads manual pages from PATH"), "manpath": (R, "reads pages from PATH"),
              "l": Opt(sets="local"), "local-file": Opt(sets="local"),
              "X": (X, "runs a viewer"), "gxditview": (X, "runs a viewer"),
              "r": (U, "sets the pager's prompt"), "prompt": (U, "sets the pager's prompt")}),
]

_EDITOR_RUN = (X, "runs an editor command")
for _name in ("vi", "vim", "nvim", "view", "vimdiff", "ex", "rvim", "gvim"):
    MODELS.append(model(
        _name, "c:S:u:U:t:q:i:T:w:W:beEhlLmMnNoOpRrsVxyZdADF", "cmd= help version noplugin "
        "clean startuptime= not-a-term ttyfail headless listen= remote= server= ",
        finish=_editor_finish, kinds={
            "c": _EDITOR_RUN, "cmd": _EDITOR_RUN, "S": (X, "sources a script"),
            "u": (X, "reads a vimrc"), "U": (X, "reads a gvimrc"),
            "s": (X, "reads commands from a script"), "w": (W, "records keys to FILE"),
            "W": (W, "records keys to FILE"), "i": (W, "writes a viminfo file"),
            "listen": (Kind.NETWORK, "listens for commands"),
            "remote": (X, "sends commands to a server"), "server": (X, "a server")}))
for _name in ("nano", "emacs", "ed", "pico", "joe", "micro"):
    MODELS.append(model(_name, lenient=True, finish=lambda s: s.parts.append(Part(
        kind=X, word=s.argv[0], index=0,
        why="an interactive editor can run shell commands"))))
