"""Static analysis of a shell command on a real bash grammar.

Why tree-sitter-bash rather than bashlex: it is maintained (bashlex's last
release is from 2023 and it rejects much of modern bash: ``[[ ]]``, ``|&``,
ANSI-C strings, heredocs with substitutions), it parses in microseconds, and
its error recovery marks exactly where input stops being bash (``ERROR`` and
``MISSING`` nodes), which we treat as "never allow".

``analyze`` turns a command string into the facts the policy needs:

* every simple command that would run, with its argv after quote removal
  (``r''m`` is ``rm``; ``$'\\x72m'`` is ``rm``), including the commands hidden
  in substitutions, wrappers (``sudo``, ``env``, ``xargs``, ``timeout``,
  ``find -exec``), ``eval`` and ``bash -c`` strings — those are *nested*: deny
  rules see them, and their presence already forbids an allow;
* ``never_allow`` findings: constructs no allow rule may ever match;
* path references (redirection targets, every literal argument — any word may
  name a symlink that leads out —, ``cd`` targets) for the workspace guard,
  with the ``cd`` history that places relative ones.

Where tree-sitter-bash reads input differently from bash, bash wins or the
input is never allowed: ``\\r``/``\\v``/``\\f`` split words for the parser but
not for bash (``control_character``); a backslash-newline inside a word joins
it for bash (re-parsed joined, ``line_continuation``); words after a
redirection target are arguments (``echo x > f /etc/passwd``); backticks in
unquoted heredoc bodies and in ``${…}`` are substitutions.

It never executes anything and never raises on hostile input; the work spent
on nested scripts is bounded (``too_complex``).
"""

from __future__ import annotations

import dataclasses
import re
import shlex
from functools import lru_cache

import tree_sitter
import tree_sitter_bash

from signoff.shell import chain, commands, gaps, opaque, redirects, variables
from signoff.shell import nested as nesting
from signoff.shell import paths as pathrefs
from signoff.shell import stdin as feeds
from signoff.shell import words as sw
from signoff.shell.results import (
    MAX_NESTED_SCRIPTS,
    MAX_SIMPLE_COMMANDS,
    ShellAnalysis,
    SimpleCommand,
    Walk,
)

MAX_SHELL_BYTES = 64 * 1024

_PARSER = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))

# Containers whose simple commands an allow rule may judge one by one.
_CONTAINERS = frozenset(
    {"program", "list", "pipeline", "redirected_statement", "subshell",
     "compound_statement", "negated_command", "comment"}
)
_SUBSTITUTIONS = frozenset({"command_substitution", "process_substitution"})
_REDIRECTS = redirects.REDIRECTS
# Characters bash keeps inside a word but tree-sitter-bash splits words on (\v, \f, \r), and
# other C0 controls: the parse would no longer be what bash runs, or what an approver sees.
_CONTROL = re.compile(r"[\x01-\x08\x0b-\x1f\x7f]")
_IFS = re.compile(r"\$\{IFS[^}]*\}|\$IFS(?![A-Za-z0-9_])")
_POSITIONAL = re.compile(r"\$[0-9]|\$\{[0-9]\}")  # empty in an agent's shell: rm$IFS$9x
_LINE_CONTINUATION = re.compile(r"\\(\n|.)", re.DOTALL)


def analyze(command: str) -> ShellAnalysis:
    """Analyse one shell command string. Never raises; hostile input yields findings."""
    return _analyze_cached(command)


@lru_cache(maxsize=512)
def _analyze_cached(command: str) -> ShellAnalysis:
    walk = Walk(depth=0)
    try:
        _analyze_into(command, walk, nested=False)
    except RecursionError:
        walk.find("too_deep", "command nests too deeply to judge")
    if len(walk.commands) > MAX_SIMPLE_COMMANDS:
        walk.find("too_many_commands", f"more than {MAX_SIMPLE_COMMANDS} simple commands")
    chained = chain.executes_written(walk.commands, walk.paths)
    if chained is not None:
        walk.find("executes_written", chained)
    paths = chain.settle_ignores(walk.commands, walk.paths, sequential=not (
        walk.concurrent or {"compound", "function_definition"} & walk.findings.keys()))
    return ShellAnalysis(
        source=command,
        commands=tuple(walk.commands),
        never_allow=tuple(walk.findings.values()),
        paths=tuple(paths),
        variables=tuple(dict.fromkeys(walk.variables)),
        code_names=tuple(dict.fromkeys(walk.code_names))[:sw.MAX_CODE_STRINGS],
        dumps_env=walk.dumps_env,
        listed_paths=frozenset(walk.listed_paths),
        finding_commands=tuple((code, frozenset(owners))
                               for code, owners in walk.finding_commands.items()),
    )


def _analyze_into(command: str, walk: Walk, *, nested: bool, joined: bool = False) -> None:
    data = command.encode("utf-8", "surrogatepass")
    if len(data) > MAX_SHELL_BYTES:
        walk.find("too_large", f"shell command longer than {MAX_SHELL_BYTES} bytes")
        return
    if "\x00" in command:
        walk.find("nul_byte", "shell command contains a NUL byte")
        return
    if _CONTROL.search(command):
        walk.find("control_character",
                  "control character (\\r, \\v, \\f, ESC, ...) that bash and the parser "
                  "read differently")
    start = len(walk.commands)
    root = _PARSER.parse(data).root_node
    if root.has_error:
        walk.find("unparseable", "not valid bash (unbalanced quotes or syntax error)")
        _fallback_commands(command, walk)
    else:
        lost = gaps.skipped(root)
        if lost is not None:
            walk.find("unparseable", f"the parser left {lost[:40]!r} out of every node")
    _visit(root, walk, nested=nested, pipeline=None)
    if "$" in command:  # no expansion without one: spare the second walk of the tree
        walk.variables.extend(_expanded_names(root))
    if walk.arithmetic:
        opaque.settle_arithmetic(walk.arithmetic, walk.assigned, walk)
        walk.arithmetic = []
    if "{" in command:
        opaque.brace_formed(command, walk, start, broken=root.has_error,
                                 analyze_into=_analyze_into)
    if walk.assigned or walk.outputs:  # F=.env; cat $F reads .env
        (assigned, walk.assigned), (outputs, walk.outputs) = (walk.assigned, {}), (walk.outputs, {})
        for variant in variables.substituted(command, assigned, outputs):
            _nested_script(variant, walk, paths_only=True)
    if "\\\n" in command and not joined:
        _line_continuations(command, walk, start)


def _line_continuations(command: str, walk: Walk, start: int) -> None:
    """Bash drops every backslash-newline before it splits words; tree-sitter splits there.

    ``r\\<newline>m x`` is ``rm x`` to bash but two words to the parser. Parse the joined
    text too: when it reads differently, deny rules see its commands and no allow may match.
    """
    text = _LINE_CONTINUATION.sub(lambda m: "" if m.group(1) == "\n" else m.group(0), command)
    if not walk.spend(len(text)):
        return
    inner = Walk(depth=walk.depth, budget=walk.budget)
    _analyze_into(text, inner, nested=True, joined=True)
    if [c.argv for c in inner.commands] == [c.argv for c in walk.commands[start:]]:
        return
    walk.find("line_continuation", "a backslash-newline joins what the parser splits")
    walk.merge(inner)


def _fallback_commands(command: str, walk: Walk) -> None:
    """Best-effort words of input bash rejects, so deny rules still see ``{r,}m`` as ``rm``.

    These commands are only ever *nested* (deny-side): the input is already
    never-allow because it did not parse.
    """
    lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    lexer.commenters = ""
    words: list[str] = []
    try:
        tokens = list(lexer)
    except ValueError:  # unbalanced quotes: fall back to whitespace
        tokens = command.replace(";", " ; ").replace("|", " | ").replace("&", " & ").split()
    for token in [*tokens, ";"]:
        if token and set(token) <= set(";&|()<>\n"):
            if words:
                names = sw.brace_expand(words[0]) if "{" in words[0] else None
                for name in names or [words[0]]:
                    walk.commands.append(SimpleCommand(
                        argv=(name, *words[1:]), literal=(True,) * len(words), name_plain=False,
                        nested=True, pipeline=0, source=command))
            words = []
            if len(walk.commands) > MAX_SIMPLE_COMMANDS * 2:
                return
        else:
            words.append(token)


def _visit(node: tree_sitter.Node, walk: Walk, *, nested: bool, pipeline: int | None,
           parent: tree_sitter.Node | None = None) -> None:
    # Iterative over siblings, recursive over depth, bounded by the tree's own depth;
    # 64 KiB of input cannot nest deeper than Python's default recursion allows
    # for the shapes bash permits without an ERROR node, and errors stop here. Each node
    # travels with its parent: ``Node.parent`` walks down from the root, so asking it of
    # every node of a deep tree (``x=$(x=$(…``) is quadratic.
    stack: list[tuple[tree_sitter.Node, bool, int | None, tree_sitter.Node | None]] = [
        (node, nested, pipeline, parent)]
    while stack:
        current, is_nested, pipe, above = stack.pop()
        kind = current.type
        if current.is_error or current.is_missing:
            walk.find("unparseable", "not valid bash (unbalanced quotes or syntax error)")
        if kind in opaque.ARITHMETIC_KINDS and opaque.arithmetic_node(current):
            walk.arithmetic.extend(opaque.arithmetic_names(current))
        if kind == "command":
            _command(current, walk, nested=is_nested, pipeline=pipe, parent=above)
            continue
        if kind == "coproc_statement" or (kind == "&" and not current.is_named):
            walk.concurrent = True
        if kind in ("for_statement", "while_statement"):  # for f in .env; do cat $f
            variables.record_loop(current, above, walk)
        if kind in _SUBSTITUTIONS:
            walk.find("substitution", f"{kind.replace('_', ' ')} {sw.node_text(current)[:40]!r}")
            if kind == "command_substitution":
                variables.record_output(current, walk.outputs)
                feeds.record_listing(current, walk.listed)
            is_nested = True
        elif kind == "arithmetic_expansion":
            walk.find("arithmetic", "arithmetic expansion can run code through array subscripts")
        elif kind == "expansion" and not sw.plain_expansion(current):
            walk.find("parameter_expansion", f"parameter expansion {sw.node_text(current)[:40]!r}")
            opaque.expansion(sw.node_text(current), walk)
            _backticks(current, walk)
        elif kind == "heredoc_body" and above is not None and sw.heredoc_expands(above):
            _backticks(current, walk)
        elif kind in ("variable_assignment", "variable_assignments"):
            walk.find("assignment", f"variable assignment {sw.node_text(current)[:40]!r}")
            if kind == "variable_assignment":
                variables.record(current, walk)
                opaque.assignment(current, walk, _nested_script)
        elif kind == "function_definition":
            walk.find("function_definition", "defines a shell function (could shadow a command)")
        elif kind in _REDIRECTS:
            redirects.record(current, walk)
        elif kind == "redirected_statement":
            redirects.attach(current, walk)
        elif kind == "pipeline":
            walk.pipelines += 1
            pipe = walk.pipelines
        elif (current.is_named and kind not in _CONTAINERS and kind != "ERROR"
              and _is_statement(current, above)):
            walk.find("compound", f"{kind.replace('_', ' ')} is not judged command by command")
            if kind == "declaration_command":  # declare -p, export: seen by the concerns
                words = tuple(sw.node_text(c) for c in current.children)
                if any(c.type != "variable_assignment" and ("$" in w or "`" in w)
                       for c, w in zip(current.children, words, strict=True)):
                    opaque.find(walk, f"{words[0]} sets variables whose names are "
                                     "known only when the shell runs it")
                walk.commands.append(SimpleCommand(
                    argv=words, literal=(True,) * len(words), name_plain=True, nested=True,
                    pipeline=pipe or 0, source=sw.node_text(current), deny_only=True))
        children = current.children
        for child in reversed(children):
            stack.append((child, is_nested, pipe, current))


def _expanded_names(root: tree_sitter.Node) -> list[str]:
    """The parameters the command expands: ``$X``, ``${X…}``, ``${X[i]}``, in strings and
    unquoted here-documents too (single quotes and quoted here-documents expand nothing,
    and the parser gives them no expansion nodes). Parents travel down with the nodes:
    ``Node.parent`` walks from the root, quadratic on a deep tree."""
    names: list[str] = []
    stack: list[tuple[tree_sitter.Node, str, str]] = [(root, "", "")]
    while stack:
        node, parent, grandparent = stack.pop()
        kind = node.type
        if kind == "variable_name" and (parent in ("simple_expansion", "expansion") or (
                parent == "subscript" and grandparent == "expansion")):
            names.append(sw.node_text(node))
        stack.extend((child, kind, parent) for child in reversed(node.children))
    return names


def _backticks(node: tree_sitter.Node, walk: Walk) -> None:
    """`cmd` that tree-sitter leaves as text (unquoted heredoc bodies, ``${x:-`cmd`}``)."""
    text = sw.node_text(node)
    if "`" not in text:
        return
    scripts = sw.backtick_scripts(text)
    if scripts:
        walk.find("substitution", f"command substitution in {text[:40]!r}")
    for script in scripts:
        _nested_script(script, walk)


def _is_statement(node: tree_sitter.Node, parent: tree_sitter.Node | None) -> bool:
    return (parent is not None and parent.type in _CONTAINERS) or node.type.endswith("_statement")


def _command(node: tree_sitter.Node, walk: Walk, *, nested: bool, pipeline: int | None,
             parent: tree_sitter.Node | None) -> None:
    words: list[sw.WordValue] = []
    name_plain = False
    extra = walk.extra_words.pop(node.id, [])
    for child in node.children:
        kind = child.type
        if kind == "command_name":
            below = child.children
            inner = below[0] if below else child
            value = sw.word_value(inner)
            name_plain = value.plain
            words.append(value)
            _scan_word(inner, walk, nested=nested, pipeline=pipeline,
                       parent=child if below else node)
        elif kind in ("variable_assignment", "variable_assignments"):
            walk.find("assignment",
                      f"variable assignment {sw.node_text(child)[:40]!r} before a command")
            if kind == "variable_assignment":
                variables.record(child, walk)
            _scan_word(child, walk, nested=nested, pipeline=pipeline, parent=node)
        elif kind in _REDIRECTS:
            # the target is a path; a herestring's substitutions run; trailing words are args
            extra.extend(redirects.trailing_words(child))
            walk.collecting = True
            _visit(child, walk, nested=nested, pipeline=pipeline, parent=node)
            walk.collecting = False
        elif child.is_named and kind != "comment":
            words.append(sw.word_value(child))
            _scan_word(child, walk, nested=nested, pipeline=pipeline, parent=node)
    if parent is not None and parent.type == "redirected_statement" and words:
        words.extend([sw.WordValue("-", True, True)] * gaps.dashes_after(node, parent))
    # Words hung on a redirection: arguments to bash; their substitutions are visited
    # with the redirection they hang on.
    words.extend(sw.word_value(w) for w in extra)
    if not words:
        return
    if pipeline is None:
        walk.pipelines += 1
        pipeline = walk.pipelines
    index = len(walk.commands)
    for ref in walk.pending_redirects:  # this command's redirections, read before its words
        walk.add_path(dataclasses.replace(ref, command=index))
    walk.pending_redirects.clear()
    _simple(words, walk, nested=nested, pipeline=pipeline, source=sw.node_text(node),
            name_plain=name_plain, feed=feeds.feed_of(
                node, walk.redirects_of.pop(node.id, []), parent, walk.before),
            name_text=sw.node_text(node.children[0]) if node.children else "")


def _simple(words: list[sw.WordValue], walk: Walk, *, nested: bool, pipeline: int, source: str,
            name_plain: bool, feed: feeds.Feed, name_text: str) -> None:
    """Record one simple command: its model, its findings, its paths, what it wraps."""
    argv = tuple(w.text for w in words)
    literal = tuple(w.literal for w in words)
    inv = commands.invocation(argv, literal) if name_plain or literal[0] else None
    sub_argv: tuple[str, ...] | None = None
    globals_inert = False
    if inv is not None and inv.subcommand_index > 1:
        sub_argv = (argv[0], *argv[inv.subcommand_index:])
        globals_inert = all(p.kind is commands.Kind.INERT for p in inv.parts
                            if p.index < inv.subcommand_index)
    cmd = SimpleCommand(
        argv=argv, literal=literal, name_plain=name_plain, nested=nested,
        pipeline=pipeline, source=source, invocation=inv, sub_argv=sub_argv,
        globals_inert=globals_inert, heredoc=bool(feed.bodies))
    index = len(walk.commands)
    walk.commands.append(cmd)
    if "=" in argv[0]:  # time GIT_PAGER=… git log: the wrapped line's own assignments
        opaque.leading_assignments(argv, literal, walk, _nested_script)
    if not literal[0]:
        walk.find("dynamic_command_name", f"command name {argv[0][:40]!r} is not a plain word")
        if "IFS" in argv[0]:
            # rm${IFS}x, rm$IFS$9x: bash splits the expansion into words; deny rules see rm
            _nested_script(_POSITIONAL.sub("", _IFS.sub(" ", cmd.source)), walk)
    elif not name_plain:
        walk.find("quoted_command_name", f"command name {name_text[:40]!r} is quoted")
    if argv[0] in opaque.SETTERS:  # read PAGER, printf -v X, let x=y+1
        opaque.reads_into(argv, walk)
        walk.arithmetic.extend(opaque.let_names(argv))
    if "{" in argv[0] and literal[0]:
        walk.find("brace_expansion", f"command name {argv[0][:40]!r} uses brace expansion")
        for expanded in sw.brace_expand(argv[0]) or ():
            walk.commands.append(SimpleCommand(
                argv=(expanded, *argv[1:]), literal=literal, name_plain=False, nested=True,
                pipeline=pipeline, source=cmd.source))
    walk.current = index
    pathrefs.paths_of(cmd, words, walk)
    if walk.listed:  # cat $(find . -type f)
        pathrefs.substituted_reads(argv, walk.listed, walk, index)
    if inv is not None:
        nesting.handed_names(inv, walk)
    if inv is not None and inv.stdin_names:
        pathrefs.names_from_stdin(inv.stdin_names, feeds.lines(feed), feed.known, walk)
        if inv.stdin_names == "paths" and feed.listing is not None:  # find . | tar c -T -
            pathrefs.listed_reads(feed.listing, walk, tuple(walk.cds), index)
    wrapped = inv is not None and inv.inner is not None
    before = len(walk.raised)
    nesting.judge_special(cmd, walk, stdin=feed.bodies, script=_nested_script, feed=feed,
                              modelled_wrapper=inv is not None and inv.modelled
                              and cmd.basename in sw.WRAPPERS)
    for code in walk.raised[before:]:  # this command's own findings, raised again or not
        walk.finding_commands.setdefault(code, set()).add(index)
    nesting.programs_named(cmd, inv, walk, script=_nested_script)
    walk.current = -1
    if wrapped and inv is not None and inv.inner is not None:
        inner = list(words[inv.inner:])
        runs = [inner]
        listing = None
        if inv.inner_tail:  # xargs: the words of its input, as far as the line says
            runs = feeds.xargs_runs(inner, inv, feed)
            listing = feed.listing if inv.stdin_names else None  # find . | xargs cat
            feed = feeds.NO_FEED  # xargs's command reads nothing from its input
        for run in runs:
            if run and walk.spend(len(run)):
                start = len(walk.commands)
                _simple(run, walk, nested=nested, pipeline=pipeline, source=source,
                        name_plain=run[0].plain or run[0].literal, feed=feed,
                        name_text=run[0].text)
                if listing is not None and start < len(walk.commands) and \
                        pathrefs.reads_marked(walk.commands[start].argv,
                                                feeds.UNKNOWN_WORDS):
                    pathrefs.listed_reads(listing, walk, tuple(walk.cds), start)
                    if listing.paths:  # find . | xargs grep x: its words are paths
                        walk.listed_paths.add(start)


def _scan_word(node: tree_sitter.Node, walk: Walk, *, nested: bool, pipeline: int | None,
               parent: tree_sitter.Node) -> None:
    """Look inside a word for substitutions and risky expansions."""
    if node.child_count or node.is_error or node.is_missing:
        _visit(node, walk, nested=nested, pipeline=pipeline, parent=parent)


def _nested_script(text: str, walk: Walk, *, paths_only: bool = False, deny_only: bool = False,
                   findings: frozenset[str] | None = None) -> None:
    """Judge ``text`` as a script the command runs; ``paths_only``: take only the paths
    it touches (a variant of the line that may not be what runs: no deny from it);
    ``deny_only`` and ``findings``: see ``Walk.merge``."""
    if walk.depth >= MAX_NESTED_SCRIPTS:
        walk.find("too_deep", "scripts nested too deeply to judge")
        return
    if not walk.spend(len(text)):
        return
    walk.depth += 1
    inner = Walk(depth=walk.depth, budget=walk.budget)
    _analyze_into(text, inner, nested=True)
    walk.depth -= 1
    if paths_only:
        for ref in inner.paths:
            walk.add_path(ref)
    else:
        walk.merge(inner, deny_only=deny_only, findings=findings)


