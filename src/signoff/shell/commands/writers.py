"""Commands whose purpose is to write: cp, mv, tee, touch, mkdir, ln, dd, chmod, rm …

An allow rule naming one of these admits its declared target — inside the
workspace and not a sensitive path; the workspace guard and the sensitive-path
list still judge every target. What they read (cp's sources, ln's target) is
read.
"""

from __future__ import annotations

from signoff.shell.commands.models import Kind, Model, Opt, Part, State, model

R, W, I = Kind.READ, Kind.WRITE, Kind.INERT  # noqa: E741


def _last_is_target(state: State) -> None:
    """cp/ln/install: without -t the last operand is the target; with -t every operand is
    read. A word whose value is known only when the shell runs may be an operand too:
    in ``cp $X .git/hooks/pre-commit`` the hook is the target, and in ``cp x $X`` the
    target is somewhere nothing can place."""
    state.copies_trees("-r", "-R", "-a", "--recursive", "--archive")
    if "target_dir" in state.modes:
        return
    unknown = [p for p in state.parts if p.kind is Kind.UNKNOWN and not p.literal]
    last = state.parts[state.operands[-1]] if state.operands else None
    if unknown and (last is None or unknown[-1].index > last.index):  # cp x $X: somewhere
        state.parts.append(Part(kind=W, word=unknown[-1].word, index=unknown[-1].index,
                                value=unknown[-1].word, literal=False,
                                why="may be the target it writes"))
    elif last is not None and (len(state.operands) >= 2 or unknown):
        state.set_operand(-1, W, "the target it writes", declared=True)


def _all_written(state: State) -> None:
    for n in range(len(state.operands)):
        state.set_operand(n, W, "a file it changes", declared=True)


def _mode_then_files(state: State) -> None:
    if state.operands and not state.modes.get("reference"):
        state.set_operand(0, I, "the mode or owner")
    for n in range(1 if state.operands and not state.modes.get("reference") else 0,
                   len(state.operands)):
        state.set_operand(n, W, "a file whose metadata it changes", declared=True)


def _dd(state: State) -> None:
    for n, index in enumerate(list(state.operands)):
        word = state.parts[index].word
        key, _, value = word.partition("=")
        if key == "if":
            state.parts[index] = state.parts[index].__class__(
                kind=R, word=word, index=state.parts[index].index, value=value,
                literal=state.parts[index].literal, why="dd reads if=FILE")
        elif key == "of":
            state.parts[index] = state.parts[index].__class__(
                kind=W, word=word, index=state.parts[index].index, value=value, declared=True,
                literal=state.parts[index].literal, why="dd writes of=FILE")
        elif key in ("bs", "ibs", "obs", "cbs", "count", "skip", "seek", "iseek", "oseek",
                     "conv", "iflag", "oflag", "status"):
            state.set_operand(n, I, "a dd setting")
        else:
            state.set_operand(n, Kind.UNKNOWN, f"dd has no operand {key!r}")


_TARGET = {"t": Opt(kind=W, sets="target_dir", why="writes into DIR"),
           "target-directory": Opt(kind=W, sets="target_dir", why="writes into DIR")}

MODELS: list[Model] = [
    model("cp", "abdfHilLnPpRrS:t:TuvxZ", "archive attributes-only backup=? copy-contents "
          "dereference force interactive link no-dereference no-clobber preserve=? "
          "no-preserve= parents recursive reflink=? remove-destination sparse= "
          "strip-trailing-slashes suffix= symbolic-link target-directory= no-target-directory "
          "update=? verbose one-file-system context=? debug keep-directory-symlink help version",
          kinds={**_TARGET}, finish=_last_is_target),
    model("mv", "bfinS:t:TuvZ", "backup=? force interactive no-clobber strip-trailing-slashes "
          "suffix= target-directory= no-target-directory update=? verbose context exchange "
          "no-copy debug help version", kinds={**_TARGET}, finish=_all_written),
    model("ln", "bdfFinLPrsS:t:Tv", "backup=? directory force interactive logical "
          "no-dereference physical relative symbolic suffix= target-directory= "
          "no-target-directory verbose help version", kinds={**_TARGET},
          finish=_last_is_target),
    model("install", "bcCdDg:m:o:pPsS:t:TvZ", "backup=? compare directory group= mode= "
          "owner= preserve-timestamps strip strip-program= suffix= target-directory= "
          "no-target-directory verbose preserve-context context=? debug help version",
          kinds={**_TARGET, "strip-program": (Kind.EXEC, "runs PROGRAM")},
          finish=_last_is_target),
    model("tee", "aip", "append ignore-interrupts output-error=? help version", operand=W,
          operand_declared=True),
    model("touch", "acd:fhmr:t:", "no-create date= no-dereference reference= time= "
          "help version", operand=W, operand_declared=True,
          kinds={"r": (R, "reads FILE's times"), "reference": (R, "reads FILE's times")}),
    model("mkdir", "m:pvZ", "mode= parents verbose context=? help version", operand=W,
          operand_declared=True),
    model("rmdir", "pv", "ignore-fail-on-non-empty parents verbose help version", operand=W,
          operand_declared=True),
    model("rm", "dfiIrRv", "force interactive=? one-file-system no-preserve-root "
          "preserve-root=? recursive dir verbose help version", operand=W,
          operand_declared=True),
    model("truncate", "cor:s:", "no-create io-blocks reference= size= help version", operand=W,
          operand_declared=True, kinds={"r": (R, "reads FILE's size"),
                                        "reference": (R, "reads FILE's size")}),
    model("chmod", "cfvRHLP", "changes silent quiet verbose no-preserve-root preserve-root "
          "reference= recursive help version", finish=_mode_then_files,
          kinds={"reference": Kind.READ}),
    model("chown", "cfvRhHLP", "changes dereference no-dereference from= silent quiet "
          "verbose no-preserve-root preserve-root reference= recursive help version",
          finish=_mode_then_files, kinds={"reference": Kind.READ}),
    model("dd", "", "help version", operand=I, finish=_dd),
    model("split", "a:b:C:del:n:ut:x", "suffix-length= additional-suffix= bytes= "
          "line-bytes= numeric-suffixes=? hex-suffixes=? elide-empty-files filter= lines= "
          "number= separator= unbuffered verbose help version",
          kinds={"filter": (Kind.EXEC, "split --filter runs a shell command")},
          finish=lambda s: s.set_operand(1, W, "the prefix of the files split writes")
          if len(s.operands) > 1 else None),
    model("csplit", "b:f:kn:szq", "suffix-format= prefix= keep-files suppress-matched "
          "digits= quiet silent elide-empty-files help version",
          finish=lambda s: [s.set_operand(n, I, "a split pattern")
                            for n in range(1, len(s.operands))] and None),
]
