"""git: global options, then one model per subcommand.

Read-only subcommands (status, diff, log, show, blame, grep, ls-files, …) are
modelled option by option; what in them runs programs (``--ext-diff``,
``--textconv``, ``-O``/``--open-files-in-pager``, ``--show-signature``) or
writes files (``--output``) is classed so. Global ``-c``, ``--config-env``,
``--exec-path=DIR``, ``--git-dir`` and ``-p`` can make any subcommand run a
program, so they are ``exec``. Subcommands that change the repository are
writes of it; those that talk to remotes are network; aliases and subcommands
not listed here are ``unknown``. Files git itself trusts (``.git/config``,
``.git/hooks``, ``.gitattributes``) are sensitive paths: writing them is the
other way to make git run code.
"""

from __future__ import annotations

import re
from dataclasses import replace

from signoff.shell.commands.models import Kind, Model, Opt, Part, State, Tree, model

R, W, X, N, I, U = (Kind.READ, Kind.WRITE, Kind.EXEC, Kind.NETWORK, Kind.INERT,  # noqa: E741
                    Kind.UNKNOWN)

_DIFF_LONG = (
    "patch no-patch unified= output= output-indicator-new= output-indicator-old= "
    "output-indicator-context= raw patch-with-raw indent-heuristic no-indent-heuristic minimal "
    "patience histogram anchored= diff-algorithm= stat=? stat-width= stat-name-width= "
    "stat-graph-width= stat-count= compact-summary numstat shortstat dirstat=? cumulative "
    "dirstat-by-file=? summary patch-with-stat name-only name-status submodule=? color=? "
    "no-color color-moved=? no-color-moved color-moved-ws= no-color-moved-ws word-diff=? "
    "word-diff-regex= color-words=? no-renames rename-empty no-rename-empty check "
    "ws-error-highlight= full-index binary abbrev=? break-rewrites=? find-renames=? "
    "find-copies=? find-copies-harder irreversible-delete diff-filter= find-object= "
    "pickaxe-all pickaxe-regex skip-to= rotate-to= relative=? no-relative text "
    "ignore-cr-at-eol ignore-space-at-eol ignore-space-change ignore-all-space "
    "ignore-blank-lines ignore-matching-lines= inter-hunk-context= function-context "
    "exit-code quiet ext-diff no-ext-diff textconv no-textconv ignore-submodules=? "
    "src-prefix= dst-prefix= no-prefix default-prefix line-prefix= ita-invisible-in-index "
    "ita-visible-in-index cached staged merge-base no-index base ours theirs combined-all-paths "
    "remerge-diff diff-merges= no-diff-merges cc dd")
_LOG_LONG = (
    "follow no-decorate decorate=? decorate-refs= decorate-refs-exclude= clear-decorations "
    "source mailmap no-mailmap use-mailmap no-use-mailmap full-diff log-size max-count= skip= "
    "since= after= since-as-filter= until= before= author= committer= grep-reflog= grep= "
    "all-match invert-grep regexp-ignore-case basic-regexp extended-regexp fixed-strings "
    "perl-regexp remove-empty merges no-merges min-parents= max-parents= no-min-parents "
    "no-max-parents first-parent exclude-first-parent-only not all branches=? tags=? "
    "remotes=? glob= exclude= exclude-hidden= reflog alternate-refs single-worktree "
    "ignore-missing bisect stdin cherry-mark cherry-pick left-only right-only cherry "
    "walk-reflogs merge boundary simplify-by-decoration show-pulls full-history dense sparse "
    "simplify-merges ancestry-path=? date-order author-date-order topo-order reverse "
    "no-walk=? do-walk pretty=? format= abbrev-commit no-abbrev-commit oneline encoding= "
    "expand-tabs=? no-expand-tabs notes=? no-notes show-notes=? standard-notes "
    "no-standard-notes show-signature relative-date date= parents children left-right "
    "graph show-linear-break=? show-origin show-notes-by-default count")

_EXEC_OPTS: dict[str, Kind | tuple[Kind, str] | Opt] = {
    "output": (W, "writes its output to FILE"),
    "ext-diff": (X, "runs the external diff program the configuration names"),
    "textconv": (X, "runs the text conversion filters the configuration names"),
}


def _diff_like(name: str, extra_long: str = "", *, log: bool = False) -> Model:
    kinds = dict(_EXEC_OPTS)
    if log:
        kinds["show-signature"] = (X, "runs the configured signature program (gpg)")
    kinds["O"] = (R, "reads the order file")
    return model(name, "pusz0U:M::C::B::D::l:S:G:O:RaibwWX::n:EFPgcmtL:I:",
                 f"{_DIFF_LONG} {_LOG_LONG if log else ''} {extra_long}", digits=True,
                 kinds=kinds, finish=_diff_finish)


def _diff_finish(state: State) -> None:
    """git diff --no-index compares two paths outside git: directories file by file,
    printing every file one side alone holds, whole."""
    _object_paths(state)
    if _given(state, "--no-index"):
        state.tree = Tree()


# <rev>:<path>, :<path> (the index) and :<stage>:<path> name a file's content as git
# stored it; :/<text> searches commit messages, and <rev>: is a whole tree.
_OBJECT_PATH = re.compile(r"(?::[0-3]:|[^:]*:)(?!/)(?P<path>.+)", re.DOTALL)


def object_path(text: str) -> str | None:
    """The path a git object name reads (``HEAD:.env`` → ``.env``), or ``None``."""
    found = _OBJECT_PATH.fullmatch(text)
    return None if found is None else found["path"]


def _object_paths(state: State, first: int = 0) -> None:
    """``git show HEAD:.env`` reads ``.env`` (as committed): an operand that names a path
    in an object is a read of that path, so the secrets and the workspace see it."""
    for index in state.operands[first:]:
        part = state.parts[index]
        path = object_path(part.word) if part.kind in (R, I) else None
        if path is not None:
            state.parts[index] = replace(part, kind=R, value=path,
                                         why="reads a file as git stored it")


def _cat_file_finish(state: State) -> None:
    """``--batch`` and ``--batch-command`` print the objects named on standard input
    (``--batch-check`` only their sizes); with ``--batch-all-objects``, every object."""
    _object_paths(state)
    if "batch" not in state.modes:
        return
    if "all_objects" in state.modes:
        state.parts.append(Part(kind=R, word="--batch-all-objects", index=0, literal=False,
                                value="<every object in the repository>",
                                why="prints every file the repository holds"))
    else:
        state.stdin_names = "objects"


def _writes_repo(name: str, short: str = "", long: str = "", **kw: object) -> Model:
    """A subcommand that changes the repository or the working tree (its purpose)."""
    return model(name, short, long, finish=_marks_repo_write, **kw)  # type: ignore[arg-type]


def _marks_repo_write(state: State) -> None:
    state.parts.append(_repo_part(state))


def _repo_part(state: State) -> Part:
    sub = state.modes.get("subcommand", "")
    return Part(kind=W, word=f"git {sub}", index=0, cause=sub,
                why="changes the repository (and runs its hooks)")


def _stash_finish(state: State) -> None:
    first = state.parts[state.operands[0]].word if state.operands else "push"
    if first not in ("list", "show"):
        _marks_repo_write(state)
    if first in ("push", "save", "-u", "-a") and _given(state, "-u", "--include-untracked",
                                                        "-a", "--all"):
        _stores_tree(state, everything=_given(state, "-a", "--all"), top=True)


def _add_finish(state: State) -> None:
    """git add copies files into the object store (``git diff --cached`` prints them):
    a directory it is given, or the whole repository with ``-A`` and no path, file by
    file — what ``.gitignore`` excludes only with ``-f``. ``-u`` adds tracked files."""
    _marks_repo_write(state)
    if _given(state, "-u", "--update"):
        return
    magic = any(state.parts[i].word.startswith(":") for i in state.operands)  # :/, :(top)
    whole = not state.operands and _given(state, "-A", "--all", "--no-ignore-removal")
    if state.operands or whole:
        _stores_tree(state, everything=_given(state, "-f", "--force"), top=magic or whole)


def _stores_tree(state: State, *, everything: bool, top: bool) -> None:
    state.tree = Tree(ignores=() if everything else (".gitignore",), top=top)
    if top:
        state.parts.append(Part(kind=R, word=".", index=0, value=".",
                                why="stores the repository's files"))


def _hash_object_finish(state: State) -> None:
    """git hash-object -w stores each file (git cat-file -p prints it back); with
    --stdin-paths it reads the names on its input."""
    if _given(state, "-w"):
        _marks_repo_write(state)
    if _given(state, "--stdin-paths"):
        state.stdin_names = "paths"


def _given(state: State, *options: str) -> bool:
    return any(p.option in options for p in state.parts)


def _grep_finish(state: State) -> None:
    """git grep's first operand is the pattern, unless -e or -f gave one; the trees it
    searches may name paths in objects (``HEAD:secrets``). With ``--no-index`` or
    ``--untracked`` it searches the working tree's files as ``grep -r`` does (an
    untracked ``.env`` too); the tracked files alone, nothing here can know."""
    if "pattern" not in state.modes and state.operands:
        state.set_operand(0, I, "the pattern")
        _object_paths(state, first=1)
    else:
        _object_paths(state)
    if any(p.option in ("--no-index", "--untracked") for p in state.parts):
        state.copies_trees()
        if not any(state.parts[i].kind is R for i in state.operands):
            state.parts.append(Part(kind=R, word=".", index=0, value=".",
                                    why="searches the working directory"))


# git -c KEY=VALUE for keys that only change what is printed; any other key may name a
# program git runs (core.pager, core.fsmonitor, diff.external, alias.*, …).
_HARMLESS_CONFIG = ("color.", "core.quotepath=", "core.abbrev=", "log.date=",
                    "log.decorate=", "log.abbrevcommit=", "diff.noprefix=", "diff.renames=",
                    "diff.algorithm=", "diff.context=", "diff.interhunkcontext=", "advice.",
                    "column.ui=", "i18n.", "user.name=", "user.email=", "init.defaultbranch=",
                    "core.safecrlf=", "grep.linenumber=", "grep.extendedregexp=",
                    "format.pretty=", "pager.color=", "status.short=", "status.branch=")


def _global_finish(state: State) -> None:
    for n, part in enumerate(state.parts):
        if part.option == "-c" and part.value is not None and part.literal and \
                part.value.lower().startswith(_HARMLESS_CONFIG) and "=" in part.value:
            state.parts[n] = Part(kind=I, word=part.word, index=part.index, option="-c",
                                  value=part.value, why="a setting that only changes output")


def _branch_finish(state: State) -> None:
    listing = {"list", "l", "a", "r", "all", "remotes", "contains", "no-contains", "merged",
               "no-merged", "points-at", "v", "vv"}
    if not state.modes.get("branch_write") and (
            not state.operands or any(state.modes.get(k) is not None for k in listing)):
        for n in range(len(state.operands)):
            state.set_operand(n, I, "a branch pattern")
        return
    for n in range(len(state.operands)):
        state.set_operand(n, W, "creates, renames or deletes a branch", cause="branch")


def _config_finish(state: State) -> None:
    writing = "config_write" in state.modes or len(state.operands) >= 2
    for n in range(len(state.operands)):
        state.set_operand(n, I, "a configuration key or value")
    if "config_read" in state.modes or not writing:
        return
    scope = state.modes.get("config_scope_option")
    target = state.modes.get("config_file") or {
        "--global": "~/.gitconfig", "--system": "/etc/gitconfig"}.get(scope or "", ".git/config")
    if scope is not None:
        state.concern("global_config", f"git config {scope} changes configuration outside "
                      "this repository")
    state.parts.append(Part(kind=W, word="git config", index=0, value=target,
                            why="writes git configuration (it can make git run programs)"))


def _talks_to_remotes(state: State) -> None:
    """fetch, pull, push: with or without a remote named, they talk to one."""
    _remote_urls(state)
    sub = state.modes.get("subcommand", "")
    state.parts.append(Part(kind=N, word=f"git {sub}", index=0, cause=sub,
                            why=f"git {sub} talks to a remote repository"))
    if sub in ("pull", "push"):
        state.parts.append(_repo_part(state))


def _remote_urls(state: State) -> None:
    for n, index in enumerate(list(state.operands)):
        word = state.parts[index].word
        if word.startswith("ext::") or "::" in word.split("/", 1)[0]:
            state.set_operand(n, X, "a git remote helper URL runs a command")
        elif "://" in word or (":" in word and not word.startswith((".", "/"))):
            if word.startswith("file://"):
                state.set_operand(n, R, "a local repository")
            else:
                state.set_operand(n, N, "a remote repository",
                                  cause=state.modes.get("subcommand"))


def _clone_finish(state: State) -> None:
    _remote_urls(state)
    if len(state.operands) >= 2:
        state.set_operand(-1, W, "the directory clone creates", cause="clone")


def _remote_finish(state: State) -> None:
    if state.operands and state.parts[state.operands[0]].word not in ("show", "get-url"):
        state.parts.append(Part(kind=W, word="git remote", index=0, value=".git/config",
                                cause="remote", why="changes the remotes in .git/config"))


_CONFIG_READ = Opt(sets="config_read")
_UPLOAD = (X, "runs PROGRAM as the remote's upload-pack")

SUBCOMMANDS: dict[str, Model] = {
    "status": model("git status", "sbvuz::", "short branch show-stash porcelain=? long "
                    "verbose untracked-files=? ignored=? ignore-submodules=? column=? "
                    "no-column ahead-behind no-ahead-behind renames no-renames "
                    "find-renames=? null help"),
    "diff": _diff_like("git diff"),
    "log": _diff_like("git log", log=True),
    "show": _diff_like("git show", log=True),
    "whatchanged": _diff_like("git whatchanged", log=True),
    "shortlog": model("git shortlog", "nsecw::", "numbered summary email committer group= "
                      "format= all branches=? tags=? remotes=? no-merges merges since= until="),
    "blame": model("git blame", "bcL:lnpsteCMfwS:", "root show-stats progress no-progress "
                   "score-debug show-name show-number porcelain line-porcelain incremental "
                   "encoding= contents= date= reverse= first-parent abbrev=? ignore-rev= "
                   "ignore-revs-file= color-lines color-by-age minimal",
                   kinds={"S": (R, "reads revisions from FILE"),
                          "contents": (R, "annotates FILE's contents"),
                          "ignore-revs-file": (R, "reads revisions to ignore from FILE")}),
    "grep": model("git grep", "aiIwvhHEGPFnlLzoqWcpA:B:C:e:f:m:O::r", "cached no-index "
                  "untracked no-exclude-standard exclude-standard recurse-submodules text "
                  "textconv no-textconv ignore-case max-depth= recursive word-regexp "
                  "invert-match full-name extended-regexp basic-regexp perl-regexp "
                  "fixed-strings line-number column files-with-matches name-only "
                  "files-without-match null only-matching count color=? no-color break "
                  "heading show-function function-context after-context= before-context= "
                  "context= threads= and or not all-match quiet max-count= "
                  "open-files-in-pager=?", digits=True,
                  finish=_grep_finish,
                  kinds={"O": (X, "git grep -O opens the files in a pager it runs"),
                         "open-files-in-pager": (X, "opens the files in a pager it runs"),
                         "textconv": (X, "runs the configured text conversion filters"),
                         "f": (R, "reads patterns from FILE"), "e": Opt(sets="pattern")}),
    "ls-files": model("git ls-files", "cdmoiskuvftzx:X:", "cached deleted modified others "
                      "ignored stage killed directory no-empty-directory unmerged resolve-undo "
                      "exclude= exclude-from= exclude-per-directory= exclude-standard "
                      "error-unmatch with-tree= full-name recurse-submodules abbrev=? debug "
                      "eol deduplicate sparse format=",
                      kinds={"X": (R, "reads exclusion globs"), "exclude-from": (R, "reads")}),
    "ls-tree": model("git ls-tree", "dtrlz", "long name-only name-status object-only "
                     "full-name full-tree abbrev=? format="),
    "rev-parse": model("git rev-parse", operand=I, lenient=True),
    "rev-list": _diff_like("git rev-list", log=True),
    "cat-file": model("git cat-file", "tspeP", "batch=? batch-check=? batch-command=? "
                      "batch-all-objects buffer unordered follow-symlinks textconv filters "
                      "path= allow-unknown-type use-mailmap no-use-mailmap",
                      operand=I, finish=_cat_file_finish,
                      kinds={"textconv": (X, "runs conversion filters"),
                             "filters": (X, "runs the configured filters"),
                             "batch": Opt(sets="batch"), "batch-command": Opt(sets="batch"),
                             "batch-all-objects": Opt(sets="all_objects")}),
    "describe": model("git describe", "", "all tags contains abbrev= candidates= exact-match "
                      "debug long match= exclude= always first-parent dirty=? broken=?",
                      operand=I),
    "show-ref": model("git show-ref", "dqs::", "head heads tags branches verify dereference "
                      "hash=? abbrev=? quiet exclude-existing=? exists", operand=I),
    "for-each-ref": model("git for-each-ref", "", "count= shell perl python tcl sort= "
                          "format= color=? points-at= merged=? no-merged=? contains=? "
                          "no-contains=? ignore-case omit-empty exclude= stdin", operand=I),
    "merge-base": model("git merge-base", "a", "all octopus independent is-ancestor "
                        "fork-point", operand=I),
    "name-rev": model("git name-rev", "", "tags refs= exclude= all annotate-stdin "
                      "name-only undefined always", operand=I),
    "count-objects": model("git count-objects", "vH", "verbose human-readable", operand=I),
    "reflog": model("git reflog", "n:", "all", digits=True, operand=I),
    "version": model("git version", "", "build-options", operand=I),
    "help": model("git help", "agcimw", "all guides config info man web verbose "
                  "no-external-commands no-aliases user-interfaces developer-interfaces",
                  operand=I, kinds={"w": (X, "git help -w runs a web browser"),
                                    "web": (X, "runs a web browser"),
                                    "i": (X, "git help -i runs info"),
                                    "info": (X, "runs info")}),
    "config": model("git config", "elf:zt", "global system local worktree file= blob= "
                    "get get-all get-regexp get-urlmatch replace-all add unset unset-all "
                    "rename-section remove-section list edit type= bool int bool-or-int path "
                    "expiry-date null name-only show-origin show-scope default= includes "
                    "no-includes fixed-value comment=", operand=I,
                    kinds={"global": Opt(sets="config_scope"),
                           "system": Opt(sets="config_scope"),
                           "get": _CONFIG_READ, "get-all": _CONFIG_READ,
                           "get-regexp": _CONFIG_READ, "get-urlmatch": _CONFIG_READ,
                           "list": _CONFIG_READ, "l": _CONFIG_READ,
                           "f": Opt(sets="config_file"), "file": Opt(sets="config_file"),
                           "blob": Opt(sets="config_read"),
                           "e": (X, "git config -e runs an editor"),
                           "edit": (X, "git config --edit runs an editor"),
                           "add": Opt(sets="config_write"),
                           "replace-all": Opt(sets="config_write"),
                           "unset": Opt(sets="config_write"),
                           "unset-all": Opt(sets="config_write"),
                           "rename-section": Opt(sets="config_write"),
                           "remove-section": Opt(sets="config_write")},
                    finish=_config_finish, operand_why="a configuration key"),
    "branch": model("git branch", "dDmMcCfrlavqt::u:", "delete create-reflog force move copy "
                    "color=? no-color remotes all list show-current verbose quiet abbrev=? "
                    "no-abbrev column=? no-column sort= merged=? no-merged=? contains=? "
                    "no-contains=? points-at= format= ignore-case omit-empty track=? "
                    "no-track set-upstream-to= unset-upstream edit-description recurse-submodules",
                    operand=W, finish=_branch_finish,
                    kinds={k: Opt(sets="branch_write") for k in (
                        "d", "D", "m", "M", "c", "C", "f", "delete", "move", "copy", "force",
                        "set-upstream-to", "u", "unset-upstream", "track", "t")} | {
                        "edit-description": (X, "runs an editor"),
                        "l": Opt(sets="l"), "a": Opt(sets="a"), "r": Opt(sets="r"),
                        "list": Opt(sets="list"), "all": Opt(sets="all"),
                        "remotes": Opt(sets="remotes"), "v": Opt(sets="v"),
                        "contains": Opt(sets="contains"), "merged": Opt(sets="merged"),
                        "no-merged": Opt(sets="no-merged"), "points-at": Opt(sets="points-at"),
                        "no-contains": Opt(sets="no-contains")}),
    "add": model("git add", "nvfipeuANs", "dry-run verbose force interactive patch edit "
                        "update all no-all ignore-removal no-ignore-removal intent-to-add "
                        "refresh ignore-errors ignore-missing no-warn-embedded-repo renormalize "
                        "chmod= pathspec-from-file= pathspec-file-nul sparse",
                        kinds={"i": (X, "interactive"), "p": (X, "interactive"),
                               "e": (X, "runs an editor"), "interactive": (X, "interactive"),
                               "patch": (X, "interactive"), "edit": (X, "runs an editor"),
                               "pathspec-from-file": (R, "reads pathspecs from FILE")},
                        finish=_add_finish),
    "commit": _writes_repo("git commit", "apC:c:F:m:t:snevuz::qS::iox", "all patch "
                           "reuse-message= reedit-message= fixup= squash= reset-author short "
                           "branch porcelain long null file= author= date= message= template= "
                           "signoff no-signoff trailer= no-verify verify allow-empty "
                           "allow-empty-message cleanup= edit no-edit amend no-post-rewrite "
                           "include only pathspec-from-file= pathspec-file-nul "
                           "untracked-files=? verbose quiet dry-run status no-status "
                           "gpg-sign=? no-gpg-sign",
                           kinds={"F": (R, "reads the message from FILE"),
                                  "file": (R, "reads the message from FILE"),
                                  "t": (R, "reads a template"), "template": (R, "reads"),
                                  "p": (X, "interactive"), "patch": (X, "interactive"),
                                  "e": (X, "runs an editor"), "edit": (X, "runs an editor"),
                                  "c": (X, "runs an editor"), "reedit-message": (X, "editor"),
                                  "S": (X, "runs the signing program"),
                                  "gpg-sign": (X, "runs the signing program")},
                           operand=R),
    "checkout": _writes_repo("git checkout", "qfb:B:tlmp", "quiet progress no-progress "
                             "force ours theirs track=? no-track guess no-guess detach orphan= "
                             "ignore-skip-worktree-bits merge conflict= patch "
                             "ignore-other-worktrees recurse-submodules no-recurse-submodules "
                             "overlay no-overlay pathspec-from-file= pathspec-file-nul",
                             operand=W, kinds={"p": (X, "interactive"),
                                               "patch": (X, "interactive")}),
    "switch": _writes_repo("git switch", "c:C:dfmqt", "create= force-create= detach guess "
                           "no-guess force discard-changes merge conflict= quiet progress "
                           "no-progress track=? no-track orphan= ignore-other-worktrees "
                           "recurse-submodules no-recurse-submodules", operand=I),
    "restore": _writes_repo("git restore", "s:pWSqm", "source= patch worktree staged quiet "
                            "progress no-progress ours theirs merge conflict= "
                            "ignore-unmerged ignore-skip-worktree-bits recurse-submodules "
                            "no-recurse-submodules overlay no-overlay pathspec-from-file= "
                            "pathspec-file-nul", operand=W,
                            kinds={"p": (X, "interactive"), "patch": (X, "interactive")}),
    "hash-object": model("git hash-object", "t:w", "stdin stdin-paths no-filters "
                         "literally path= help", operand=R, finish=_hash_object_finish,
                         kinds={"w": (I, "writes the file into the object store")}),
    "stash": model("git stash", "pkuaqm:", "patch keep-index no-keep-index include-untracked "
                   "all quiet message= staged index only-untracked stat name-only",
                   operand=I, finish=_stash_finish, kinds={"p": (X, "interactive"),
                                                    "patch": (X, "interactive")}),
    "fetch": model("git fetch", "aAfkmnpPqtuv", "all append atomic depth= deepen= "
                   "shallow-since= shallow-exclude= unshallow update-shallow dry-run "
                   "write-fetch-head no-write-fetch-head force keep multiple auto-maintenance "
                   "no-auto-maintenance prune prune-tags no-tags refetch refmap= tags "
                   "recurse-submodules=? jobs= no-recurse-submodules set-upstream "
                   "update-head-ok upload-pack= quiet verbose progress server-option= "
                   "show-forced-updates no-show-forced-updates ipv4 ipv6 filter=",
                   operand=N,
                   kinds={"upload-pack": _UPLOAD}, finish=_talks_to_remotes),
    "pull": model("git pull", "qvr::n", "quiet verbose recurse-submodules=? "
                  "no-recurse-submodules commit no-commit edit no-edit ff no-ff ff-only "
                  "rebase=? no-rebase autostash no-autostash stat no-stat squash no-squash "
                  "verify no-verify strategy= strategy-option= all append depth= unshallow "
                  "force prune tags no-tags upload-pack= progress", operand=N,
                  kinds={"upload-pack": _UPLOAD, "edit": (X, "editor")},
                  finish=_talks_to_remotes),
    "push": model("git push", "nfuqv", "all mirror tags follow-tags atomic dry-run porcelain "
                  "delete prune force force-with-lease=? force-if-includes set-upstream "
                  "thin no-thin quiet verbose progress recurse-submodules= verify no-verify "
                  "receive-pack= exec= ipv4 ipv6 push-option= signed=? no-signed",
                  operand=N,
                  kinds={"receive-pack": (X, "runs PROGRAM as the remote's receive-pack"),
                         "exec": (X, "runs PROGRAM as the remote's receive-pack")},
                  finish=_talks_to_remotes),
    "clone": model("git clone", "lsqvnb:o:u:c:j:", "local no-hardlinks shared "
                   "reference= reference-if-able= dissociate quiet verbose progress "
                   "no-checkout bare mirror origin= branch= upload-pack= template= config= "
                   "depth= shallow-since= shallow-exclude= single-branch no-single-branch "
                   "no-tags recurse-submodules=? shallow-submodules separate-git-dir= jobs= "
                   "filter= also-filter-submodules remote-submodules sparse bundle-uri= "
                   "ref-format= server-option=", operand=N,
                   kinds={"u": _UPLOAD, "upload-pack": _UPLOAD,
                          "c": (X, "sets configuration that can run programs"),
                          "config": (X, "sets configuration that can run programs"),
                          "template": (X, "installs hooks from a template directory"),
                          "separate-git-dir": (W, "writes the repository to DIR")},
                   finish=_clone_finish),
    "ls-remote": model("git ls-remote", "hqt", "heads tags refs upload-pack= quiet exit-code "
                       "get-url sort= symref server-option=", operand=N,
                       kinds={"upload-pack": _UPLOAD}, finish=_talks_to_remotes),
    "remote": model("git remote", "v", "verbose", operand=I, finish=_remote_finish),
    "archive": model("git archive", "lvo:0123456789", "format= list verbose prefix= "
                     "add-file= add-virtual-file= output= worktree-attributes remote= exec= "
                     "mtime=", operand=I,
                     kinds={"o": (W, "writes the archive to FILE"),
                            "output": (W, "writes the archive to FILE"),
                            "add-file": (R, "adds FILE"), "remote": (N, "a remote"),
                            "exec": (X, "runs PROGRAM as the remote's upload-archive")}),
}

GLOBAL = model(
    "git", "C:c:hvpP", "exec-path=? html-path man-path info-path paginate no-pager "
    "no-replace-objects no-lazy-fetch no-optional-locks no-advice bare git-dir= work-tree= "
    "namespace= config-env= literal-pathspecs glob-pathspecs noglob-pathspecs "
    "icase-pathspecs list-cmds= attr-source= super-prefix= version help",
    kinds={"C": (R, "runs in DIR"), "c": (X, "git -c sets configuration that can run programs"),
           "config-env": (X, "sets configuration that can run programs"),
           "exec-path": Opt(kind=X, bare=I, stop=True,
                            why="git --exec-path=DIR runs git's commands from DIR"),
           "p": (X, "git -p runs the pager"), "paginate": (X, "git --paginate runs the pager"),
           "git-dir": (X, "a repository elsewhere brings its own hooks and configuration"),
           "work-tree": (R, "works in DIR")},
    subcommands=SUBCOMMANDS, posix=True, finish=_global_finish)

MODELS: list[Model] = [GLOBAL]
