"""Text tools whose arguments mix data, files and programs: sed, awk, grep, rg, sort, uniq, diff.

The first operand of sed, awk and grep is a script or a pattern (data), unless
an option supplied it; the rest are files. A sed script and an awk program are
read for the commands they hide (``signoff.shell.commands.scripts``).
"""

from __future__ import annotations

import re

from signoff.shell.commands.models import Kind, Model, Opt, Part, State, Tree, model
from signoff.shell.commands.scripts import judge_script

R, W, X, I = Kind.READ, Kind.WRITE, Kind.EXEC, Kind.INERT  # noqa: E741


def _script_operand(state: State, language: str) -> None:
    """The first operand is the script, unless an option (``-e``, ``-f``) gave one."""
    if "script" in state.modes or not state.operands:
        return
    index = state.operands.pop(0)
    part = state.parts[index]
    found = judge_script(language, part.word, part.literal, part.word, part.index)
    state.parts[index:index + 1] = found
    shift = len(found) - 1
    state.operands = [i + shift if i > index else i for i in state.operands]


def _sed_finish(state: State) -> None:
    _script_operand(state, "sed")
    if "in_place" in state.modes:
        for n in range(len(state.operands)):
            state.set_operand(n, W, "sed -i rewrites the file in place",
                              cause=state.modes["in_place_option"])


def _awk_finish(state: State) -> None:
    for n, part in enumerate(state.parts):  # mawk -W version / -Wv: prints and exits
        if part.option == "-W" and (part.value or "").startswith(("v", "usage", "help")):
            state.parts[n] = Part(kind=I, word=part.word, index=part.index, option="-W")
    _script_operand(state, "awk")
    for n, index in enumerate(list(state.operands)):
        word = state.parts[index].word
        if "=" in word and word.split("=", 1)[0].isidentifier():
            state.set_operand(n, I, "an awk variable assignment")


def _uniq_finish(state: State) -> None:
    if len(state.operands) >= 2:
        state.set_operand(1, W, "uniq writes its output to the second operand")


def _sed_script() -> Opt:
    return Opt(script="sed", sets="script")


def _awk_script() -> Opt:
    return Opt(script="awk", sets="script")


_PROGRAM_FILE = Opt(kind=X, sets="script", file=True, why="runs an awk program from FILE")

SED = model(
    "sed", "nrsuzEe:f:i::l:", "quiet silent debug expression= file= follow-symlinks "
    "in-place=? line-length= null-data zero-terminated posix regexp-extended separate "
    "sandbox unbuffered help version",
    kinds={"e": _sed_script(), "expression": _sed_script(),
           "f": Opt(kind=X, sets="script", file=True, why="runs a sed script from FILE"),
           "file": Opt(kind=X, sets="script", file=True, why="runs a sed script from FILE"),
           "i": Opt(sets="in_place", why="rewrites its files in place (suffix: a backup)"),
           "in-place": Opt(sets="in_place", why="rewrites its files in place")},
    finish=_sed_finish)

_AWK_KINDS: dict[str, Kind | tuple[Kind, str] | Opt] = {
    "f": _PROGRAM_FILE, "file": _PROGRAM_FILE, "E": _PROGRAM_FILE, "exec": _PROGRAM_FILE,
    "e": _awk_script(), "source": _awk_script(),
    "i": (X, "gawk -i includes awk source"), "include": (X, "gawk --include includes awk source"),
    "l": (X, "gawk -l loads a shared library"), "load": (X, "gawk --load loads a library"),
    "o": (W, "gawk -o writes the pretty-printed program to FILE"),
    "pretty-print": (W, "gawk --pretty-print writes to FILE"),
    "p": (W, "gawk -p writes a profile to FILE"), "profile": (W, "gawk --profile writes"),
    "d": (W, "gawk -d dumps variables to FILE"),
    "dump-variables": (W, "gawk --dump-variables writes FILE"),
    "D": (X, "gawk -D runs the debugger"), "debug": (X, "gawk --debug runs the debugger"),
    "W": (Kind.UNKNOWN, "mawk -W options (-W exec runs a program file)"),
}

AWK = model(
    "awk", "bcCd::D::e:E:f:F:ghi:l:L::MnNo::Op::PrsStVv:W:", "characters-as-bytes traditional "
    "copyright dump-variables=? debug=? source= exec= file= field-separator= gen-pot help "
    "include= load= lint=? bignum non-decimal-data use-lc-numeric optimize pretty-print=? "
    "profile=? posix re-interval no-optimize sandbox lint-old assign= version csv",
    kinds=_AWK_KINDS, finish=_awk_finish)


def _grep_finish(state: State) -> None:
    if "pattern" not in state.modes and state.operands:
        state.set_operand(0, I, "the pattern")
    if state.modes.get("recurse") in ("", "recurse"):  # -r, -R, --directories=recurse
        _searches_trees(state, Tree(
            follow=_given(state, "-R", "--dereference-recursive"),
            include=_values(state, "--include"), exclude=_values(state, "--exclude"),
            exclude_dirs=_values(state, "--exclude-dir")))


# rg --type: the file names a few common types cover (an unknown type narrows nothing)
_RG_TYPES = {"py": ("*.py", "*.pyi"), "python": ("*.py", "*.pyi"), "js": ("*.js", "*.mjs", "*.cjs",
             "*.jsx"), "ts": ("*.ts", "*.tsx", "*.mts", "*.cts"), "rust": ("*.rs",),
             "go": ("*.go",), "java": ("*.java",), "c": ("*.c", "*.h"),
             "cpp": ("*.cpp", "*.cc", "*.cxx", "*.hpp", "*.hh", "*.h"), "md": ("*.md",),
             "markdown": ("*.md", "*.markdown"), "json": ("*.json",), "yaml": ("*.yaml", "*.yml"),
             "toml": ("*.toml",), "sh": ("*.sh", "*.bash"), "html": ("*.html", "*.htm"),
             "css": ("*.css",), "rb": ("*.rb",), "ruby": ("*.rb",)}


def _rg_finish(state: State) -> None:
    """rg searches directories, skipping hidden files unless told (--hidden, -uu, -.)."""
    if "pattern" not in state.modes and state.operands:
        state.set_operand(0, I, "the pattern")
    hidden = "hidden" in state.modes or sum(
        p.option in ("-u", "--unrestricted") for p in state.parts) >= 2  # -uu: --hidden
    globs = _values(state, "-g", "--glob", "--iglob")
    types = _values(state, "-t", "--type")
    include = [g for g in globs if not g.startswith("!")]
    if types and all(t in _RG_TYPES for t in types):
        include.extend(g for t in types for g in _RG_TYPES[t])
    elif types:
        include = []  # a type not known here: narrow nothing
    exclude = [g[1:] for g in globs if g.startswith("!")]
    exclude.extend(g for t in _values(state, "-T", "--type-not") for g in _RG_TYPES.get(t, ()))
    _searches_trees(state, Tree(hidden=hidden, follow=_given(state, "-L", "--follow"),
                                include=tuple(include), exclude=tuple(exclude),
                                fold=_given(state, "--iglob", "--glob-case-insensitive"),
                                ignores=_rg_ignores(state)))


def _rg_ignores(state: State) -> tuple[str, ...]:
    """The ignore files rg honours: none when told not to, or not to read some of those
    above (parents, .git/info/exclude) that the walk would read."""
    if _given(state, "-u", "--unrestricted", "--no-ignore", "--no-ignore-parent",
              "--no-ignore-exclude"):
        return ()
    vcs = () if _given(state, "--no-ignore-vcs") else (".gitignore",)
    return vcs + (() if _given(state, "--no-ignore-dot") else (".ignore", ".rgignore"))


def _given(state: State, *options: str) -> bool:
    return any(p.option in options for p in state.parts)


def _values(state: State, *options: str) -> tuple[str, ...]:
    return tuple(p.value for p in state.parts if p.option in options and p.value is not None)


def _searches_trees(state: State, tree: Tree) -> None:
    """Its path operands are directories it reads file by file; none is ``.``."""
    state.tree = tree
    if not any(state.parts[i].kind is R for i in state.operands):
        state.parts.append(Part(kind=R, word=".", index=0, value=".",
                                why="searches the working directory"))


_PATTERN = Opt(sets="pattern")
_RECURSE = Opt(sets="recurse")
_PATTERN_FILE = Opt(kind=R, sets="pattern", why="reads patterns from FILE")

GREP = model(
    "grep", "A:B:C:D:EFGHIPTUVZabcd:e:f:hiLlm:noqRrsuvwxyz", "extended-regexp fixed-strings "
    "basic-regexp perl-regexp regexp= file= ignore-case no-ignore-case word-regexp "
    "line-regexp null-data no-messages invert-match version help max-count= byte-offset "
    "line-number no-line-number line-buffered with-filename no-filename label= only-matching "
    "quiet silent binary-files= text directories= devices= recursive dereference-recursive "
    "include= exclude= exclude-from= exclude-dir= files-without-match files-with-matches "
    "count initial-tab null before-context= after-context= context= color=? colour=? binary",
    digits=True, kinds={"e": _PATTERN, "regexp": _PATTERN, "f": _PATTERN_FILE,
                        "file": _PATTERN_FILE,
                        "exclude-from": (R, "reads exclusion globs from FILE"),
                        "r": _RECURSE, "R": _RECURSE, "recursive": _RECURSE,
                        "dereference-recursive": _RECURSE,
                        "d": Opt(sets="recurse"), "directories": Opt(sets="recurse")},
    finish=_grep_finish)

_RG_EXEC = (X, "rg --pre runs a program on every file searched")
RG = model(
    "rg", "A:B:C:abcd:E:e:Ff:g:HhIij:LlM:m:NnoPpqr:SsT:t:UuvVwxz0.", "after-context= "
    "before-context= context= text byte-offset count count-matches color= colors= column "
    "context-separator= crlf dfa-size-limit= encoding= engine= regexp= file= files "
    "files-with-matches files-without-match fixed-strings follow glob= iglob= "
    "glob-case-insensitive "
    "heading no-heading hidden no-hidden ignore-case ignore-file= ignore-file-case-insensitive "
    "include-zero invert-match json no-json line-buffered line-number no-line-number "
    "line-regexp max-columns= max-columns-preview max-count= max-depth= max-filesize= mmap "
    "multiline multiline-dotall no-config no-ignore no-ignore-dot no-ignore-exclude "
    "no-ignore-files no-ignore-global no-ignore-parent no-ignore-vcs no-messages "
    "no-require-git no-unicode null null-data one-file-system only-matching passthru "
    "path-separator= pcre2 pcre2-version pretty quiet regex-size-limit= replace= "
    "search-zip no-search-zip smart-case sort= sortr= stats no-stats threads= trim type= "
    "type-not= type-list unrestricted vimgrep with-filename no-filename word-regexp "
    "case-sensitive pre= pre-glob= hostname-bin= hyperlink-format= help version "
    "field-context-separator= field-match-separator= debug trace",
    kinds={"e": _PATTERN, "regexp": _PATTERN, "f": _PATTERN_FILE, "file": _PATTERN_FILE,
           "pre": _RG_EXEC, "hostname-bin": (X, "rg --hostname-bin runs a program"),
           "z": (X, "rg -z runs decompression programs"),
           "search-zip": (X, "rg --search-zip runs decompression programs"),
           "ignore-file": (R, "reads ignore globs from FILE"),
           "hidden": Opt(sets="hidden"), ".": Opt(sets="hidden")},
    finish=_rg_finish)

SORT = model(
    "sort", "bcCdfghik:mMno:rRsS:t:T:uVzy", "ignore-leading-blanks dictionary-order "
    "ignore-case general-numeric-sort ignore-nonprinting month-sort human-numeric-sort "
    "numeric-sort random-sort random-source= reverse sort= version-sort batch-size= check=? "
    "compress-program= debug files0-from= key= merge output= stable buffer-size= "
    "field-separator= temporary-directory= parallel= unique zero-terminated help version",
    kinds={"o": (W, "sort -o writes its output to FILE"),
           "output": (W, "sort --output writes to FILE"),
           "T": (W, "sort -T writes temporary files in DIR"),
           "temporary-directory": (W, "sort writes temporary files in DIR"),
           "compress-program": (X, "sort --compress-program runs a program"),
           "random-source": (R, "reads random bytes from FILE"),
           "files0-from": (Kind.UNKNOWN, "reads the names of its inputs from FILE")})

UNIQ = model("uniq", "cdDf:is:uw:z", "count repeated all-repeated=? skip-fields= ignore-case "
             "skip-chars= unique group=? check-chars= zero-terminated help version",
             finish=_uniq_finish)

DIFF = model(
    "diff", "abBcC:dD:eEfF:hiI:lL:nNpPqrsS:tTuU:vwWx:X:y", "normal brief "
    "report-identical-files context=? unified=? ed rcs side-by-side width= left-column "
    "suppress-common-lines show-c-function show-function-line= label= expand-tabs "
    "initial-tab tabsize= suppress-blank-empty paginate recursive no-dereference new-file "
    "unidirectional-new-file ignore-file-name-case no-ignore-file-name-case exclude= "
    "exclude-from= starting-file= from-file= to-file= ignore-case ignore-tab-expansion "
    "ignore-trailing-space ignore-space-change ignore-all-space ignore-blank-lines "
    "ignore-matching-lines= text strip-trailing-cr old-line-format= new-line-format= "
    "unchanged-line-format= line-format= old-group-format= new-group-format= "
    "changed-group-format= unchanged-group-format= minimal horizon-lines= speed-large-files "
    "color=? palette= help version", digits=True,
    kinds={"X": (R, "reads exclusion globs from FILE"), "exclude-from": (R, "reads globs"),
           "from-file": (R, "compares FILE"), "to-file": (R, "compares FILE")},
    finish=lambda state: _compares_trees(state, "-r", "--recursive"))


def _compares_trees(state: State, *options: str) -> None:
    """diff -r compares the directories file by file and prints what differs (with -N,
    a file only one side holds, whole): each file counts as read, less its -x globs."""
    if any(p.option in options for p in state.parts):
        state.tree = Tree(exclude=_values(state, "-x", "--exclude"))


def _xxd_finish(state: State) -> None:
    if len(state.operands) >= 2:
        state.set_operand(1, W, "xxd writes to its second operand")


XXD = model("xxd", "abc:CEeg:hil:o:prs:uvdRn:", "autoskip bits cols= capitalize ebcdic "
            "groupsize= help include len= offset= ps postscript plain revert seek= "
            "uppercase version decimal name=", finish=_xxd_finish)


def _jq_finish(state: State) -> None:
    if "program_file" not in state.modes and state.operands:
        state.set_operand(0, I, "the jq filter")
        if _JQ_ENV.search(state.parts[state.operands[0]].word):
            state.concern("env_dump", "a jq filter that reads env or $ENV prints the "
                          "environment (secrets included)")


_JQ_ENV = re.compile(r"(?<![\w$.])env\b|\$ENV\b|\$__loc__")


JQ = model("jq", "acCejMnrRsSL:f:h", "seq stream stream-errors slurp raw-input null-input "
           "compact-output tab indent= color-output monochrome-output ascii-output unbuffered "
           "sort-keys raw-output raw-output0 join-output exit-status from-file= arg= argjson= "
           "args jsonargs help version",
           kinds={"f": Opt(kind=R, sets="program_file"),
                  "from-file": Opt(kind=R, sets="program_file"),
                  "L": (X, "jq -L loads modules from DIR")},
           finish=_jq_finish)

MODELS: list[Model] = [SED, AWK, GREP, RG, SORT, UNIQ, DIFF, XXD, JQ]
