"""tar, zip, unzip: archives read and write files, and can run programs.

GNU tar runs programs through ``-I``/``--use-compress-program``,
``--to-command``, ``--rsh-command``, ``--rmt-command``, ``--info-script``
(``-F``, ``--new-volume-script``) and ``--checkpoint-action=exec=…``; an
archive name with a ``host:`` prefix is opened over rsh. Extracting writes
files whose names come from the archive, so it is a write (of the directory
it extracts into) that an allow rule must name; ``-O`` extracts to standard
output and writes nothing. The old bundled form (``tar xvf a.tar``) is read
as the dashed one.
"""

from __future__ import annotations

from signoff.shell.commands.models import Kind, Model, Opt, Part, State, model

R, W, X, N, I = Kind.READ, Kind.WRITE, Kind.EXEC, Kind.NETWORK, Kind.INERT  # noqa: E741
_SCRIPT = (X, "tar runs this program")
_MODE = {"c": "create", "r": "append", "u": "update", "A": "concatenate", "x": "extract",
         "t": "list", "d": "diff"}
_TAR_SHORT = "AcdrtuxaBb:C:f:F:g:GhiI:jJkK:lL:mMN:oOpPRsSST:UvV:wWX:zZH:"


def _tar_prepare(argv: tuple[str, ...], literal: tuple[bool, ...]
                 ) -> tuple[tuple[str, ...], tuple[bool, ...]]:
    """``tar xvf a.tar`` → ``tar -x -v -f a.tar``: the first word's letters are options,
    and each letter that takes a value takes the next word."""
    if len(argv) < 2 or argv[1].startswith("-") or not literal[1]:
        return argv, literal
    letters = argv[1]
    rest = list(argv[2:])
    rest_lit = list(literal[2:])
    out: list[str] = [argv[0]]
    lit: list[bool] = [literal[0]]
    for char in letters:
        index = _TAR_SHORT.find(char)
        takes = index >= 0 and index + 1 < len(_TAR_SHORT) and _TAR_SHORT[index + 1] == ":"
        out.append("-" + char)
        lit.append(True)
        if takes and rest:
            out.append(rest.pop(0))
            lit.append(rest_lit.pop(0))
    return tuple(out + rest), tuple(lit + rest_lit)


def _tar_finish(state: State) -> None:
    mode = next((m for m in ("create", "append", "update", "concatenate", "delete", "extract",
                             "list", "diff") if m in state.modes), "")
    archive = state.modes.get("archive")
    if archive is not None and ":" in archive.split("/", 1)[0] and "force_local" not in state.modes:
        state.parts.append(Part(kind=X, word=f"-f {archive}", index=0, value=archive,
                                why="an archive on host: is opened by running rsh"))
    elif archive is not None and archive != "-":
        writes = mode in ("create", "append", "update", "concatenate", "delete")
        state.parts.append(Part(kind=W if writes else R, word=f"-f {archive}", index=0,
                                value=archive, cause=state.modes.get(mode + "_option"),
                                why="writes the archive" if writes else "reads the archive"))
    if mode == "extract" and "to_stdout" not in state.modes:
        target = state.modes.get("directory") or "."
        state.parts.append(Part(kind=W, word="-x", index=0, value=target,
                                cause=state.modes.get("extract_option"),
                                why="extracting writes the archive's files"))
        if "absolute" in state.modes:
            state.parts.append(Part(kind=W, word="-P", index=0, value=None, literal=False,
                                    why="-P extracts to absolute paths anywhere"))
    if mode in ("extract", "list", "diff", "delete"):
        for n in range(len(state.operands)):
            state.set_operand(n, I, "an archive member")
    if mode in ("create", "append", "update"):
        _named_in_lists(state)
        if "no_recursion" not in state.modes:
            state.copies_trees()


def _named_in_lists(state: State) -> None:
    """``tar c -T LIST`` archives the files LIST names: ``-`` is standard input, which the
    command line may write; any other list is a file nothing here reads."""
    for part in list(state.parts):
        if part.option not in ("-T", "--files-from") or part.value is None:
            continue
        if part.value == "-":
            state.stdin_names = "paths"
        else:
            state.parts.append(Part(kind=R, word=part.word, index=part.index, literal=False,
                                    value=f"<the files named in {part.value}>",
                                    why="archives the files its list names"))


def _tar_model() -> Model:
    def mode(name: str) -> Opt:
        return Opt(sets=name)

    kinds: dict[str, Kind | tuple[Kind, str] | Opt] = {
        "c": mode("create"), "create": mode("create"), "r": mode("append"),
        "append": mode("append"), "u": mode("update"), "update": mode("update"),
        "A": mode("concatenate"), "catenate": mode("concatenate"),
        "concatenate": mode("concatenate"), "x": mode("extract"), "extract": mode("extract"),
        "get": mode("extract"), "t": mode("list"), "list": mode("list"), "d": mode("diff"),
        "diff": mode("diff"), "compare": mode("diff"), "delete": mode("delete"),
        "f": Opt(sets="archive"), "file": Opt(sets="archive"),
        "force-local": Opt(sets="force_local"),
        "C": Opt(sets="directory", kind=R), "directory": Opt(sets="directory", kind=R),
        "O": Opt(sets="to_stdout"), "to-stdout": Opt(sets="to_stdout"),
        "P": Opt(sets="absolute"), "absolute-names": Opt(sets="absolute"),
        "I": _SCRIPT, "use-compress-program": _SCRIPT, "to-command": _SCRIPT,
        "rsh-command": _SCRIPT, "rmt-command": _SCRIPT, "F": _SCRIPT, "info-script": _SCRIPT,
        "new-volume-script": _SCRIPT,
        "checkpoint-action": (X, "a checkpoint action can run a program"),
        "T": (R, "reads names from FILE"), "files-from": (R, "reads names from FILE"),
        "X": (R, "reads exclusion globs"), "exclude-from": (R, "reads exclusion globs"),
        "g": (W, "writes the incremental snapshot FILE"),
        "listed-incremental": (W, "writes the snapshot FILE"),
        "index-file": (W, "writes verbose output to FILE"),
        "volno-file": (W, "writes the volume number to FILE"),
        "remove-files": (W, "deletes the files it archives"),
        "transform": (Kind.UNKNOWN, "renames the files it writes"),
        "xform": (Kind.UNKNOWN, "renames the files it writes"),
        "K": (R, "starts at a member"),
        "no-recursion": Opt(sets="no_recursion"),
    }
    return model(
        "tar", _TAR_SHORT, "catenate concatenate create delete diff compare append list "
        "test-label update extract get check-device no-check-device listed-incremental= "
        "incremental hole-detection= ignore-failed-read level= no-seek seek occurrence=? "
        "sparse-version= sparse keep-old-files keep-newer-files keep-directory-symlink "
        "no-overwrite-dir one-top-level=? overwrite overwrite-dir recursive-unlink "
        "remove-files skip-old-files unlink-first verify ignore-command-error "
        "no-ignore-command-error to-stdout to-command= atime-preserve=? delay-directory-restore "
        "no-delay-directory-restore group= group-map= mode= mtime= clamp-mtime owner= "
        "owner-map= no-same-owner no-same-permissions numeric-owner preserve-permissions "
        "same-permissions same-owner sort= acls no-acls selinux no-selinux xattrs no-xattrs "
        "xattrs-exclude= xattrs-include= force-local file= index-file= info-script= "
        "new-volume-script= tape-length= multi-volume rmt-command= rsh-command= volno-file= "
        "blocking-factor= read-full-records ignore-zeros record-size= format= old-archive "
        "portability posix pax-option= label= auto-compress use-compress-program= bzip2 xz lzip "
        "lzma lzop no-auto-compress zstd gzip gunzip ungzip compress uncompress "
        "add-file= backup=? directory= exclude= exclude-backups exclude-caches "
        "exclude-caches-all exclude-caches-under exclude-ignore= exclude-ignore-recursive= "
        "exclude-tag= exclude-tag-all= exclude-tag-under= exclude-vcs exclude-vcs-ignores "
        "exclude-from= files-from= no-null no-recursion no-unquote no-verbatim-files-from "
        "null recursion suffix= unquote verbatim-files-from anchored ignore-case no-anchored "
        "no-ignore-case no-wildcards no-wildcards-match-slash wildcards wildcards-match-slash "
        "after-date= newer= newer-mtime= starting-file= absolute-names dereference "
        "hard-dereference one-file-system strip-components= transform= xform= checkpoint=? "
        "checkpoint-action= full-time index-file= no-quote-chars= quote-chars= quoting-style= "
        "block-number show-defaults show-omitted-dirs show-snapshot-field-ranges "
        "show-transformed-names show-stored-names totals=? utc verbose warning= interactive "
        "confirmation restrict help usage version",
        kinds=kinds, finish=_tar_finish, prepare=_tar_prepare)


def _zip_finish(state: State) -> None:
    if state.operands:
        state.set_operand(0, W, "the archive zip writes", declared=True)
    state.copies_trees("-r", "-R", "--recurse-paths")


def _unzip_finish(state: State) -> None:
    if state.operands:
        state.set_operand(0, R, "the archive")
        for n in range(1, len(state.operands)):
            state.set_operand(n, I, "an archive member")
    if not any(m in state.modes for m in ("pipe", "list", "test")):
        state.parts.append(Part(kind=W, word="unzip", index=0,
                                value=state.modes.get("exdir") or ".",
                                why="extracting writes the archive's files"))


MODELS: list[Model] = [
    _tar_model(),
    model("zip", "0123456789AcdDeFfgHijJklLmoqrRSTuvwXyzb:n:t:x:i:P:O:U", "temp-path= "
          "unzip-command= test recurse-paths junk-paths quiet verbose encrypt password= "
          "names-stdin help version", kinds={
              "unzip-command": (X, "zip --unzip-command runs a command"),
              "b": (W, "writes temporary files in DIR"),
              "temp-path": (W, "writes temporary files in DIR"),
              "O": (W, "writes the archive to FILE"),
              "T": (X, "zip -T tests the archive by running unzip or the -TT command")},
          finish=_zip_finish),
    model("unzip", "lvtzpfuoqnjCKLMVaXsd:x:Z", kinds={
        "p": Opt(sets="pipe"), "l": Opt(sets="list"), "v": Opt(sets="list"),
        "t": Opt(sets="test"), "Z": Opt(sets="list"), "d": Opt(sets="exdir"),
        "x": Kind.INERT}, finish=_unzip_finish),
]
