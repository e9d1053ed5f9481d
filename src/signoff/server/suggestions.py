"""Rule suggestions for admins, over HTTP and in the inbox (docs/insights.md).

``GET /api/v1/insights/suggestions`` is ``signoff insights suggest --json``: the allow
rules the decided history proves safe (``signoff.policy.suggest``), learned against the
policy file this server loaded. ``POST /api/v1/insights/suggestions/apply`` writes the
chosen ones into that file as the CLI's ``--apply`` does (``signoff.policy.adopt``: the
file at the version the caller listed, the result proven by replay, written atomically),
then ``Gate.reload_policy`` hands the new policy to every part of the running gate, with
its ``policy.changed`` audit event naming the admin. One apply at a time per server.

The page ``/inbox/insights/suggestions`` lists them with their rule, the asks each saved
and the refused requests none admits; **Review** (a GET) draws the exact diff of the
policy file and a confirmation carrying the version listed, the ids and the digest of
the text shown, so **Apply** writes that text or nothing (``suggestions_changed``).
Admins only: ``403 admin_required`` (an HTML page in the inbox). Every agent-supplied
text (a command, a path) is escaped, with hidden characters flagged (``reveal``).
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import shlex
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from signoff import inputs
from signoff.errors import ConfigurationError, Conflict, InvalidInput, PolicyError, SignoffError
from signoff.identity import Identity, IdentityKind
from signoff.kernel.gate import Gate
from signoff.model import Effect
from signoff.policy.adopt import Adoption, adopt, check_version, choose, write
from signoff.policy.config import parse_policy_file
from signoff.policy.guarded import policy_file
from signoff.policy.suggest import (
    Decided,
    Replay,
    Report,
    Suggestion,
    read_history,
    suggest,
    with_rules,
)
from signoff.reveal import reveal
from signoff.review import RiskReviewer
from signoff.server.auth import admin_of, authenticate
from signoff.server.bodies import body_doc, read_body
from signoff.server.inbox import _diff_class, _field, render, signed_in
from signoff.server.schemas import Identifier, PolicyVersion, Strict
from signoff.server.state import state_of

router = APIRouter(prefix="/insights/suggestions", tags=["insights"])  # under /api/v1
pages = APIRouter(include_in_schema=False)
PAGE = "/inbox/insights/suggestions"
CHOSEN_MAX = 100  # ids in one apply
EXAMPLES = 5  # saved asks shown with each suggestion
PROOF_SHOWN = 8  # refused requests shown with each suggestion
_APPLYING = threading.Lock()  # one apply at a time: read, prove, write, reload


# ---- the API's shapes ---------------------------------------------------------------------------

class SuggestionOut(BaseModel):
    id: str = Field(description="what `ids` names: stable while the rule is the same")
    rule_id: str
    tool: str
    level: str = Field(description="exact, paths, shape or wide (docs/insights.md)")
    command: list[str] = Field(description="the rule's command patterns (a shell tool)")
    args: dict[str, list[str]] = Field(description="the rule's argument patterns")
    writes: list[str]
    saved: int = Field(description="asks it saved in the replay")
    evidence: list[str] = Field(description="the request ids of those asks")


class SuggestionsOut(BaseModel):
    policy_version: str = Field(description="the policy file's version: send it back as "
                                "`expect_version`")
    decided: int
    asked: int
    protected: int = Field(description="refused, edited, answered, mandatory or concerned "
                           "requests: no suggestion admits one")
    saved: int
    suggestions: list[SuggestionOut]


class ApplyIn(Strict):
    ids: list[Identifier] = Field(max_length=CHOSEN_MAX,
                                  description="the suggestions to write (their `id`)")
    expect_version: PolicyVersion = Field(
        description="the `policy_version` the suggestions were listed at: refused with "
        "409 policy_stale when the file is at another")


class AppliedOut(BaseModel):
    applied: list[SuggestionOut]
    policy: str = Field(description="the policy file written")
    previous_version: str
    version: str = Field(description="the new version: the server judges by it now")
    diff: str = Field(description="the unified diff of the file")


# ---- the work, in the thread pool ---------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Suggested:
    """The suggestions for the server's policy file, and what they were learned from."""

    path: Path
    text: str
    history: list[Decided]
    report: Report


def policy_path(gate: Gate) -> Path:
    """The policy file this server loaded; ``ConfigurationError(no_policy_file)`` when its
    policy was not loaded from a file (made from text or in code)."""
    found = policy_file(gate.config)
    if found is None:
        raise ConfigurationError(
            "this server's policy was not loaded from a file, so there is none to write rules "
            "into; `signoff serve --policy FILE` serves one", code="no_policy_file")
    return Path(found)


def _read(path: Path) -> str:
    try:
        return path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else "not UTF-8"
        raise PolicyError(f"cannot read policy: {why}", file=str(path),
                          code="policy_unreadable") from None


def suggested(gate: Gate, expect_version: str | None = None) -> Suggested:
    """The proven suggestions for the policy file as it is now, over the whole history;
    ``Conflict(policy_stale)`` first when the file is not at ``expect_version``."""
    path = policy_path(gate)
    text = _read(path)
    check_version(text, expect_version, source=str(path))
    history = read_history(gate)
    report = suggest(text, history, source=str(path), reviewer=RiskReviewer())
    return Suggested(path=path, text=text, history=history, report=report)


def _today(gate: Gate) -> str:
    return datetime.datetime.fromtimestamp(gate.clock(), tz=datetime.UTC).date().isoformat()


def review(gate: Gate, ids: Sequence[str], expect_version: str | None,
           identity: Identity) -> tuple[Suggested, Adoption]:
    """The policy text with the chosen suggestions written in, nothing written."""
    if not ids:
        raise InvalidInput("choose at least one suggestion", code="nothing_chosen",
                           field="ids")
    found = suggested(gate, expect_version)
    chosen = choose(found.report, ids)
    adoption = adopt(found.text, found.history, chosen, source=str(found.path),
                     reviewer=RiskReviewer(), today=_today(gate), applied_by=identity.name)
    return found, adoption


def apply(gate: Gate, ids: Sequence[str], expect_version: str, identity: Identity, *,
          via: str, digest: str | None = None) -> tuple[Path, Adoption]:
    """Write the chosen suggestions into the server's policy file and judge by it from now
    on. ``digest``: the text a confirmation showed (``Conflict(suggestions_changed)`` when
    it would be another). Refusals write nothing; a failure after the write (the audit
    event) puts the file back as it was."""
    with _APPLYING:
        found, adoption = review(gate, ids, expect_version, identity)
        if digest is not None and digest != adoption.digest:
            raise Conflict("the policy file would not change as the page you confirmed "
                           "showed (the history or the file moved on): review it again",
                           code="suggestions_changed")
        config = parse_policy_file(adoption.after, found.path, source=gate.config.source)
        write(found.path, found.text, adoption.after)
        try:
            gate.reload_policy(config, actor=identity.name, data={
                "file": str(found.path), "rules": [s.rule_id for s in adoption.chosen],
                "suggestions": [s.id for s in adoption.chosen], "via": via})
        except BaseException:
            with contextlib.suppress(SignoffError):
                write(found.path, adoption.after, found.text)
            raise
    return found.path, adoption


def applied_dict(path: Path, adoption: Adoption) -> dict[str, Any]:
    return {"applied": [s.to_dict() for s in adoption.chosen], "policy": str(path),
            "previous_version": adoption.version_before, "version": adoption.version,
            "diff": adoption.diff}


# ---- the API ----------------------------------------------------------------------------------

@router.get("", response_model=SuggestionsOut,
            summary="Allow rules the decided history proves safe (admins)")
async def list_suggestions(request: Request) -> Any:
    state, _ = await admin_of(request)
    found = await run_in_threadpool(suggested, state.gate)
    return found.report.to_dict()


@router.post("/apply", response_model=AppliedOut, openapi_extra=body_doc(ApplyIn),
             summary="Write chosen suggestions into the policy file; the server judges by it "
             "at once (admins)")
async def apply_suggestions(request: Request) -> Any:
    state, identity = await admin_of(request)
    body = await read_body(request, ApplyIn)
    path, adoption = await run_in_threadpool(
        lambda: apply(state.gate, body.ids, body.expect_version, identity, via="api"))
    return applied_dict(path, adoption)


# ---- the inbox page ------------------------------------------------------------------------------

def _forbidden(request: Request, identity: Identity) -> Response | None:
    """The inbox's 403 page for anyone but an admin."""
    if identity.kind is IdentityKind.ADMIN:
        return None
    return render(request, "error.html", status=403, heading="Admins only", error={
        "code": "admin_required", "message": f"{identity.name} is not an admin: rule "
        "suggestions change the policy file"})


async def _admin_page(request: Request) -> Identity | Response:
    who = await signed_in(request)
    if isinstance(who, Response):
        return who
    return _forbidden(request, who) or who


def _shown(item: Decided, shell: str | None) -> str:
    """A call as a person reads it: its command line, else its arguments as JSON."""
    line = item.args.get(shell) if shell else None
    if isinstance(line, str):
        return line
    return json.dumps(dict(item.args), ensure_ascii=False, sort_keys=True)


def _program(text: str) -> str:
    try:
        words = shlex.split(text)
    except ValueError:
        words = text.split()
    return words[0] if words else ""


def _outcome(item: Decided) -> str:
    why = [item.outcome.value]
    if item.mandatory:
        why.append("a mandatory ask")
    if item.concerns:
        why.append("concern: " + ", ".join(item.concerns))
    return "; ".join(why)


def list_data(gate: Gate) -> dict[str, Any]:
    """The page's data: each suggestion with its rule, examples of the asks it saved and
    the refused requests of its tool, each replayed under every suggestion at once."""
    found = suggested(gate)
    report, history = found.report, found.history
    replay = Replay(found.text, history, source=str(found.path), reviewer=RiskReviewer())
    protected = [i for i, d in enumerate(history)
                 if d.protected and replay.effects[i] is not Effect.ALLOW]
    everything = replay.policy(with_rules(found.text, replay.base, report.suggestions))
    effects = replay.run(everything, protected)
    by_id = {d.request_id: d for d in history}
    views = []
    for s in report.suggestions:
        spec = replay.base.config.tools.get(s.tool)
        shell = spec.shell if spec is not None else None
        programs = {_program(c) for c in s.commands}
        mine = [i for i in protected if history[i].tool == s.tool]
        mine.sort(key=lambda i: _program(_shown(history[i], shell)) not in programs)
        views.append(_view(s, [by_id[r] for r in s.evidence[:EXAMPLES] if r in by_id],
                           [(history[i], effects[i]) for i in mine[:PROOF_SHOWN]],
                           len(mine), shell))
    return {"report": report, "suggestions": views, "policy_path": str(found.path),
            "writable": _writable(found.path), "replayed": len(history)}


def _view(s: Suggestion, examples: Sequence[Decided], proof: Sequence[tuple[Decided, Effect]],
          refused_of_tool: int, shell: str | None) -> dict[str, Any]:
    toml_html, flagged = reveal(s.toml())
    shown = []
    for item in examples:
        html, count = reveal(_shown(item, shell))
        flagged += count
        shown.append({"id": item.request_id, "html": html})
    held = []
    for item, effect in proof:
        html, count = reveal(_shown(item, shell))
        flagged += count
        held.append({"id": item.request_id, "html": html, "outcome": _outcome(item),
                     "effect": effect.value})
    return {"s": s, "toml_html": toml_html, "examples": shown, "proof": held,
            "refused_of_tool": refused_of_tool, "flagged": flagged}


def _writable(path: Path) -> bool:
    return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)


def _error(exc: SignoffError) -> dict[str, str]:
    return {"code": exc.code, "message": exc.message}


@pages.get(PAGE)
async def suggestions_page(request: Request) -> Response:
    who = await _admin_page(request)
    if isinstance(who, Response):
        return who
    try:
        data = await run_in_threadpool(list_data, state_of(request).gate)
    except SignoffError as exc:
        return render(request, "suggestions.html", status=exc.http_status, error=_error(exc),
                      report=None, suggestions=[])
    return render(request, "suggestions.html", **data)


def _ids(values: Sequence[Any]) -> list[str]:
    return [inputs.identifier("id", v) for v in values]


def review_data(gate: Gate, ids: Sequence[str], expect_version: str | None,
                identity: Identity) -> dict[str, Any]:
    found, adoption = review(gate, ids, expect_version, identity)
    lines, flagged = [], 0
    for line in adoption.diff.splitlines():
        html, count = reveal(line)
        flagged += count
        lines.append((_diff_class(line), html))
    return {"adoption": adoption, "diff_lines": lines, "flagged": flagged,
            "policy_path": str(found.path), "expect_version": adoption.version_before}


@pages.get(PAGE + "/review")
async def review_page(request: Request) -> Response:
    """The exact diff of the policy file the chosen suggestions make, and the confirmation."""
    who = await _admin_page(request)
    if isinstance(who, Response):
        return who
    query = request.query_params
    try:
        ids = _ids(query.getlist("id"))
        version = query.get("expect_version")
        if version is not None:
            inputs.text("expect_version", version, inputs.ID_MAX)
        data = await run_in_threadpool(review_data, state_of(request).gate, ids, version, who)
    except SignoffError as exc:
        return render(request, "suggestions_review.html", status=exc.http_status,
                      error=_error(exc), adoption=None)
    return render(request, "suggestions_review.html", **data)


@pages.post(PAGE + "/apply")
async def apply_form(request: Request) -> Response:
    """Apply what the review showed: the ids, the version listed, the digest of the text."""
    form = await request.form()
    state = state_of(request)
    identity = await authenticate(state.gate, request, csrf=_field(form, "csrf"))
    refused = _forbidden(request, identity)
    if refused is not None:
        return refused
    try:
        ids = _ids(_values(form, "id"))
        version = inputs.text("expect_version", _field(form, "expect_version") or "",
                              inputs.ID_MAX)
        digest = inputs.text("digest", _field(form, "digest") or "", 100)
        path, adoption = await run_in_threadpool(
            lambda: apply(state.gate, ids, version, identity, via="inbox", digest=digest))
    except SignoffError as exc:
        return render(request, "suggestions_review.html", status=exc.http_status,
                      error=_error(exc), adoption=None)
    lines = [(_diff_class(line), reveal(line)[0]) for line in adoption.diff.splitlines()]
    return render(request, "suggestions_applied.html", adoption=adoption, diff_lines=lines,
                  policy_path=str(path))


def _values(form: Mapping[str, Any], name: str) -> list[Any]:
    getlist = getattr(form, "getlist", None)
    return list(getlist(name)) if callable(getlist) else []

