"""Allow rules learned from the approval history, each proven by replaying it.

People approve most of what an agent asks, and stop reading. The history says which
asks they approved; a suggestion is the narrowest allow rule that would have spared
those asks (``signoff.policy.shapes``: a command's own words, then its shape, then
``CMD *`` only when many distinct invocations of it were approved), grouped by the
program a command calls (``python3`` is ``python``, ``./mvnw`` is ``mvn``) and written for
every name of it. Before it is shown, the whole history is evaluated again with the real
``Policy.evaluate`` under the policy plus the suggestion (and plus every suggestion
accepted before it): it counts the asks saved, and it must admit no call a human
rejected, edited or answered instead, none whose verdict carried a concern, none that
was a mandatory ask. A suggestion that fails is narrowed and proven again, or dropped.
A command whose program is not among its words (``python - <<'PY'``) teaches nothing.
Nothing here writes: ``amend`` does, when a person applies a suggestion.
"""

from __future__ import annotations

import enum
import hashlib
import json
import re
import shlex
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from signoff.canonical import parse_args
from signoff.model import (
    ApprovalRequest,
    Effect,
    InteractionMode,
    RequestStatus,
    ReviewMode,
    RunContext,
    ToolCall,
)
from signoff.policy.amend import insert_rules
from signoff.policy.engine import Policy
from signoff.policy.reviewing import Reviewer
from signoff.policy.shapes import Shapes, escape, family, join, path_glob, rename, shapes
from signoff.policy.spec import CONCERN_CODES
from signoff.shell import analyze

# Reasons that make a call one no learned rule may admit, besides the shell's concerns.
CONCERNS = CONCERN_CODES | {"protected_path", "outside_workspace", "sensitive_write",
                            "secret_read", "outside_write"}
WIDE_INVOCATIONS = 8  # distinct approved invocations before ``CMD *`` is proposed ...
WIDE_SHAPES = 4  # ... and distinct shapes among them (many different uses, not one)
MIN_SAVED = 2  # asks a suggestion must save to be shown
# Findings that say a command runs a program its words do not hold (``python - <<'PY'``,
# ``bash`` reading standard input): what was approved was that program, which no pattern
# on the words can name, so such a command teaches nothing.
_PROGRAM_ELSEWHERE = frozenset({"heredoc_program", "interpreter_stdin"})
_APPROVED = frozenset({RequestStatus.APPROVED, RequestStatus.EXECUTING, RequestStatus.SUCCEEDED,
                       RequestStatus.FAILED, RequestStatus.UNKNOWN, RequestStatus.INVALIDATED})


class Outcome(enum.StrEnum):
    """What a human made of a request."""

    APPROVED = "approved"
    REJECTED = "rejected"
    EDITED = "edited"  # approved with other arguments: the asked ones were refused
    RESPONDED = "responded"  # answered instead of run


@dataclass(frozen=True, slots=True, kw_only=True)
class Decided:
    """One decided request of the history, as the suggestions read it."""

    request_id: str
    tool: str
    args: Mapping[str, Any]
    outcome: Outcome
    mandatory: bool = False
    concerns: tuple[str, ...] = ()
    review_mode: ReviewMode = ReviewMode.MANUAL

    @property
    def protected(self) -> bool:
        """A call no suggestion may admit: refused, mandatory, or with a concern."""
        return self.outcome is not Outcome.APPROVED or self.mandatory or bool(self.concerns)

    @classmethod
    def of(cls, request: ApprovalRequest) -> Decided | None:
        """The decided request, or ``None`` for one no human decided (pending, expired,
        cancelled)."""
        if request.status in _APPROVED:
            outcome = Outcome.EDITED if request.approved_args is not None else Outcome.APPROVED
        elif request.status is RequestStatus.REJECTED:
            outcome = Outcome.REJECTED
        elif request.status is RequestStatus.RESPONDED:
            outcome = Outcome.RESPONDED
        else:
            return None
        codes = tuple(dict.fromkeys(str(r.get("code")) for r in request.reasons
                                    if r.get("code") in CONCERNS))
        return cls(request_id=request.id, tool=request.tool, args=parse_args(request.args),
                   outcome=outcome, mandatory=request.mandatory, concerns=codes,
                   review_mode=request.review_mode)


class HistoryReader(Protocol):
    """What the history is read through: the ``Gate``'s own listing."""

    def list_requests(self, *, limit: int = 100,
                      after: tuple[float, str] | None = None) -> list[ApprovalRequest]: ...


def read_history(reader: HistoryReader, *, page: int = 500) -> list[Decided]:
    """Every decided request, newest first, read page by page."""
    found: list[Decided] = []
    after: tuple[float, str] | None = None
    while True:
        rows = reader.list_requests(limit=page, after=after)
        found += [d for d in map(Decided.of, rows) if d is not None]
        if len(rows) < page:
            return found
        after = (rows[-1].created_at, rows[-1].id)


@dataclass(frozen=True, slots=True, kw_only=True)
class Suggestion:
    """One allow rule, with the asks it saved in the replay and the requests they were."""

    rule_id: str
    tool: str
    level: str  # exact | shape | wide
    commands: tuple[str, ...] = ()
    args: tuple[tuple[str, tuple[str, ...]], ...] = ()
    writes: tuple[str, ...] = ()
    evidence: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        """Stable while the rule is the same: what ``--apply ID`` names."""
        body = json.dumps([self.tool, self.commands, self.args, self.writes])
        return "s-" + hashlib.sha256(body.encode()).hexdigest()[:8]

    @property
    def saved(self) -> int:
        return len(self.evidence)

    @property
    def early(self) -> bool:  # its writes must come from the first rule admitting its command
        return bool(self.writes)

    def toml(self, comment: str = "") -> str:
        """The rule as a ``[[rules]]`` table, under ``comment`` lines."""
        lines = [f"# {line}" for line in comment.splitlines()]
        lines += ["[[rules]]", f"id = {_q(self.rule_id)}", 'effect = "allow"',
                  f"tool = {_q(self.tool)}"]
        if self.commands:
            lines.append(f"command = {_list(self.commands)}")
        if self.args:
            inner = ", ".join(f"{_key(k)} = {_list(v)}" for k, v in self.args)
            lines.append(f"args = {{ {inner} }}")
        if self.writes:
            lines.append(f"writes = {_list(self.writes)}")
        return "\n".join(lines) + "\n"

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "rule_id": self.rule_id, "tool": self.tool, "level": self.level,
                "command": list(self.commands), "args": {k: list(v) for k, v in self.args},
                "writes": list(self.writes), "saved": self.saved,
                "evidence": list(self.evidence)}


def _q(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _list(items: Iterable[str]) -> str:
    return "[" + ", ".join(_q(i) for i in items) + "]"


def _key(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else _q(name)


@dataclass(frozen=True, slots=True, kw_only=True)
class Report:
    """The suggestions for one policy text and history, and what the replay found."""

    policy_version: str
    decided: int  # decided requests read
    asked: int  # approved requests the policy still asks about, without concerns
    protected: int  # requests no suggestion may admit
    saved: int  # asks all the suggestions together save
    suggestions: tuple[Suggestion, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"policy_version": self.policy_version, "decided": self.decided,
                "asked": self.asked, "protected": self.protected, "saved": self.saved,
                "suggestions": [s.to_dict() for s in self.suggestions]}


@dataclass(slots=True)
class _Group:
    """The approved, still-asked invocations of one command head (or one tool)."""

    tool: str
    head: str
    # (request id, the command's shapes, the paths its redirections write: (glob, exact))
    found: list[tuple[str, Shapes, tuple[tuple[str, str], ...]]] = field(default_factory=list)
    indexes: set[int] = field(default_factory=set)  # the history's requests it holds
    names: set[str] = field(default_factory=set)  # the names its program was called by
    args: list[tuple[str, Mapping[str, Any]]] = field(default_factory=list)
    paths: tuple[str, ...] = ()  # a tool's path arguments (``[tools.X] paths``)
    root: str | None = None


class Replay:
    """The history evaluated under one policy text (``Policy.from_toml``, the real engine)."""

    def __init__(self, text: str, history: Sequence[Decided], *, source: str,
                 reviewer: Reviewer | None) -> None:
        self.text = text
        self.history = history
        self.source = source
        self.reviewer = reviewer
        self.base = self.policy(text)
        self.effects = self.run(self.base, range(len(history)))

    def policy(self, text: str) -> Policy:
        return Policy.from_toml(text, source=self.source, reviewer=self.reviewer)

    def verdicts(self, policy: Policy, indexes: Iterable[int]) -> Iterator[tuple[int, Any]]:
        for i in indexes:
            item = self.history[i]
            context = RunContext(review_mode=item.review_mode, thread_id=f"replay-{i}",
                                 interaction_mode=InteractionMode.INTERACTIVE)
            yield i, policy.evaluate(ToolCall(id=f"replay-{i}", name=item.tool,
                                              args=dict(item.args)), context)

    def run(self, policy: Policy, indexes: Iterable[int]) -> dict[int, Effect]:
        return {i: v.effect for i, v in self.verdicts(policy, indexes)}


def suggest(text: str, history: Sequence[Decided], *, source: str = "<policy>",
            reviewer: Reviewer | None = None) -> Report:
    """The proven suggestions for the policy ``text`` given the decided ``history``."""
    replay = Replay(text, history, source=source, reviewer=reviewer)
    base = replay.base
    protected = [i for i, d in enumerate(history)
                 if d.protected and replay.effects[i] is not Effect.ALLOW]
    learnable = [i for i, d in enumerate(history)
                 if not d.protected and replay.effects[i] is Effect.ASK]
    groups = _groups(base, history, learnable)
    # the names the refused calls gave programs: a family rule is written for them too,
    # so the replay sees it admit a refused call under its own name (python3.12 drop.py)
    refused = _names(base, history, protected)
    used_ids = {r.id for r in base.config.rules}
    accepted: list[Suggestion] = []
    for group in sorted(groups.values(), key=lambda g: (-len(g.found) - len(g.args), g.head)):
        # widest first; a narrower candidate is taken only when it saves more of the
        # group's asks (an exact pattern admits what a model refuses a glob)
        best: tuple[Suggestion, int] | None = None
        for candidate in _candidates(group, used_ids, refused):
            saves = _saves(replay, [*accepted, candidate], protected, group.indexes)
            if saves is not None and (best is None or saves > best[1]):
                best = (candidate, saves)
                if saves == len(group.indexes):
                    break
        if best is not None:
            accepted.append(best[0])
            used_ids.add(best[0].rule_id)
    final, saved = _attribute(replay, accepted, learnable, protected)
    return Report(policy_version=base.version, decided=len(history), asked=len(learnable),
                  protected=len(protected), saved=saved, suggestions=tuple(final))


def with_rules(text: str, policy: Policy, chosen: Sequence[Suggestion],
               comments: Sequence[str] = ()) -> str:
    """``text`` with the ``chosen`` suggestions written in as rules."""
    blocks = [(s.toml(comments[i] if i < len(comments) else ""), s.early)
              for i, s in enumerate(chosen)]
    return insert_rules(text, policy.config, blocks)


def prove(replay: Replay, chosen: Sequence[Suggestion]) -> list[str]:
    """The request ids a human refused (or that were mandatory, or had a concern) which
    the policy plus ``chosen`` would admit; empty: the proof holds."""
    protected = [i for i, d in enumerate(replay.history)
                 if d.protected and replay.effects[i] is not Effect.ALLOW]
    policy = replay.policy(with_rules(replay.text, replay.base, chosen))
    return [replay.history[i].request_id for i, e in replay.run(policy, protected).items()
            if e is Effect.ALLOW]


def _proven(replay: Replay, chosen: Sequence[Suggestion], protected: Sequence[int]) -> bool:
    policy = replay.policy(with_rules(replay.text, replay.base, chosen))
    return all(e is not Effect.ALLOW for e in replay.run(policy, protected).values())


def _saves(replay: Replay, chosen: Sequence[Suggestion], protected: Sequence[int],
           indexes: Iterable[int]) -> int | None:
    """How many of ``indexes`` the policy plus ``chosen`` allows; ``None`` when it admits
    a protected request (the proof fails)."""
    policy = replay.policy(with_rules(replay.text, replay.base, chosen))
    if any(e is Effect.ALLOW for e in replay.run(policy, protected).values()):
        return None
    return sum(e is Effect.ALLOW for e in replay.run(policy, indexes).values())


def _attribute(replay: Replay, accepted: list[Suggestion], learnable: Sequence[int],
               protected: Sequence[int]) -> tuple[list[Suggestion], int]:
    """Each suggestion's evidence: the asks it admitted in the replay with all of them,
    those saving too few dropped (and the rest proven again)."""
    while True:
        policy = replay.policy(with_rules(replay.text, replay.base, accepted))
        by_rule: dict[str, list[str]] = {s.rule_id: [] for s in accepted}
        saved = 0
        for i, verdict in replay.verdicts(policy, learnable):
            if verdict.effect is not Effect.ALLOW:
                continue
            saved += 1
            for reason in verdict.reasons:
                if reason.rule in by_rule and replay.history[i].request_id not in \
                        by_rule[reason.rule][-1:]:
                    by_rule[reason.rule].append(replay.history[i].request_id)
        kept = [_with(s, tuple(by_rule[s.rule_id])) for s in accepted
                if len(by_rule[s.rule_id]) >= MIN_SAVED]
        if len(kept) == len(accepted):
            return sorted(kept, key=lambda s: (-s.saved, s.rule_id)), saved
        accepted = kept if kept and _proven(replay, kept, protected) else []


def _with(s: Suggestion, evidence: tuple[str, ...]) -> Suggestion:
    return Suggestion(rule_id=s.rule_id, tool=s.tool, level=s.level, commands=s.commands,
                      args=s.args, writes=s.writes, evidence=evidence)


def _groups(base: Policy, history: Sequence[Decided], learnable: Sequence[int]
            ) -> dict[tuple[str, str], _Group]:
    """The learnable requests by tool and, for a shell tool, by the head of each command
    that the policy does not admit on its own."""
    groups: dict[tuple[str, str], _Group] = {}
    root = base.config.workspace.root if base.config.workspace else None
    alone: dict[tuple[str, tuple[str, ...]], bool] = {}
    for i in learnable:
        item = history[i]
        spec = base.config.tools.get(item.tool)
        shell = spec.shell if spec is not None else None
        if shell is None:
            group = groups.setdefault((item.tool, ""), _Group(
                item.tool, "", paths=spec.paths if spec is not None else (), root=root))
            group.args.append((item.request_id, item.args))
            group.indexes.add(i)
            continue
        line = item.args.get(shell)
        if not isinstance(line, str):
            continue
        analysis = analyze(line)
        written: dict[int, list[tuple[str, str]]] = {}
        for ref in analysis.paths:
            if ref.write and ref.redirect and ref.literal:
                written.setdefault(ref.command, []).append((path_glob(ref.path, root),
                                                            escape(ref.path)))
        elsewhere = {n for code, owners in analysis.finding_commands
                     if code in _PROGRAM_ELSEWHERE for n in owners}
        for index, command in enumerate(analysis.commands):
            if command.deny_only or command.nested or not command.argv or index in elsewhere:
                continue
            redirects = tuple(written.get(index, ()))
            if not redirects and _admitted_alone(base, item.tool, shell, command.argv, alone):
                continue
            shaped = shapes(command, root)
            group = groups.setdefault((item.tool, shaped.head), _Group(item.tool, shaped.head))
            group.found.append((item.request_id, shaped, redirects))
            group.indexes.add(i)
            if command.literal[0]:
                group.names.add(command.argv[0])
    return groups


def _admitted_alone(base: Policy, tool: str, shell: str, argv: tuple[str, ...],
                    cache: dict[tuple[str, tuple[str, ...]], bool]) -> bool:
    key = (tool, argv)
    if key not in cache:
        call = ToolCall(id="alone", name=tool, args={shell: shlex.join(argv)})
        verdict = base.evaluate(call, RunContext(review_mode=ReviewMode.MANUAL,
                                                 thread_id="suggest-alone"))
        cache[key] = verdict.effect is Effect.ALLOW
    return cache[key]


def _slug(head: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", head).strip("-").lower()[:40] or "tool"


def _names(base: Policy, history: Sequence[Decided], indexes: Iterable[int]) -> set[str]:
    """The literal names the commands of these requests call."""
    found: set[str] = set()
    for i in indexes:
        spec = base.config.tools.get(history[i].tool)
        line = history[i].args.get(spec.shell) if spec is not None and spec.shell else None
        if isinstance(line, str):
            found.update(c.argv[0] for c in analyze(line).commands if c.argv and c.literal[0])
    return found


def _candidates(group: _Group, used: set[str], called: Iterable[str] = ()
                ) -> Iterator[Suggestion]:
    """The group's rule at each level it qualifies for, widest first: each is tried in
    turn, and the widest the replay proves that saves the most of the group's asks is
    kept."""
    stem = f"suggested-{_slug(group.head or group.tool)}"
    rule_id = stem
    n = 1
    while rule_id in used:
        n += 1
        rule_id = f"{stem}-{n}"
    if group.args:
        yield from _arg_candidates(group, rule_id)
        return
    found = group.found
    exact = {(s.exact, tuple(e for _, e in w)) for _, s, w in found}
    globbed = {(s.paths, tuple(g for g, _ in w)) for _, s, w in found}
    shaped = {(s.shape, tuple(g for g, _ in w)) for _, s, w in found}
    writes = tuple(sorted({g for _, _, w in found for g, _ in w}))
    name = found[0][1].program  # one program per group: the head starts with it
    # Every level is written for every name of the program (python: python2, python3;
    # mvn: ./mvnw), never for some of them: the names are one program, so a call refused
    # under one name is refused under all (the replay then refuses the rule), and a rule
    # admits a call under one name exactly when it admits it under the others.
    names = family(name, {*group.names, *called})

    def make(level: str, commands: Iterable[str], written: Iterable[str]) -> Suggestion:
        return Suggestion(rule_id=rule_id, tool=group.tool, level=level,
                          commands=tuple(sorted({rename(c, name, n) for c in commands
                                                 for n in names})),
                          writes=tuple(sorted(set(written))))

    if len(exact) >= WIDE_INVOCATIONS and len(shaped) >= WIDE_SHAPES:
        yield make("wide", (s.wide for _, s, _ in found), writes)
    # where several distinct invocations share a shape, a word that differed among them
    # becomes its shape's (``*``, a glob of its kind); a word they all gave stays as given
    under: dict[tuple[str, ...], set[tuple[str, ...]]] = {}
    for _, s, _ in found:
        under.setdefault(s.shape_words, set()).add(s.path_words)
    commands = [join([shape[i] if len({p[i] for p in forms}) > 1 else next(iter(forms))[i]
                      for i in range(len(shape))])
                for shape, forms in under.items()]
    if len(shaped) < len(exact) and set(commands) != {s.paths for _, s, _ in found}:
        yield make("shape", commands, writes)
    if len(found) >= MIN_SAVED and globbed != exact:
        yield make("paths", (s.paths for _, s, _ in found), writes)
    if len(found) >= MIN_SAVED:
        yield make("exact", (c for c, _ in exact), (e for _, w in exact for e in w))


def _arg_candidates(group: _Group, rule_id: str) -> Iterator[Suggestion]:
    """A tool without a shell: its path arguments as globs of their kind (shape) when
    several approved calls differ there, else every argument as the calls gave it
    (exact); never the whole tool. Calls with non-text arguments teach nothing."""
    names = sorted({k for _, args in group.args for k in args})
    values = [[args.get(n) for n in names] for _, args in group.args]
    if any(not isinstance(v, str) for row in values for v in row):
        return
    exact = {n: sorted({escape(str(row[j])) for row in values}) for j, n in enumerate(names)}
    shaped = {n: sorted({path_glob(str(row[j]), group.root) if n in group.paths
                         else escape(str(row[j])) for row in values})
              for j, n in enumerate(names)}
    if len(group.args) < MIN_SAVED:
        return
    if shaped != exact and all(len(shaped[n]) < len(exact[n]) or n not in group.paths
                               for n in names):
        yield Suggestion(rule_id=rule_id, tool=group.tool, level="shape",
                         args=tuple((n, tuple(shaped[n])) for n in names))
    yield Suggestion(rule_id=rule_id, tool=group.tool, level="exact",
                     args=tuple((n, tuple(exact[n])) for n in names))
