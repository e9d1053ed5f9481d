"""Which request ``/calls/{id}`` means: the request id, or the agent's own call id.

``POST /calls`` answers with a ``request_id``, but the agent already has a name for
its call — the ``call_id`` it proposed with — and a path that says "calls" reads
naturally with it. So every ``/calls/{id}`` route takes either. A request id is
tried first (it is unique); otherwise the call id is looked up among the requests the
caller may see (an agent: only its own calls, ``signoff.kernel.visibility``). A call id
is unique only within a thread: when it names several requests, ``?thread_id=`` picks
one, and without it the answer is ``409 call_id_ambiguous`` naming the threads.
Nothing found, or found but not the caller's, is the same ``404 not_found`` (the code
every unknown id gets), its message saying which ids the route takes.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Path, Query

from signoff.errors import Conflict, NotFound
from signoff.identity import Identity
from signoff.kernel.gate import Gate
from signoff.kernel.visibility import may_see, sees_all
from signoff.model import ApprovalRequest
from signoff.server import schemas
from signoff.store.pages import RequestQuery

CallRef = Annotated[schemas.Identifier, Path(
    description="the request id POST /calls answered with (req_…), or the call_id the "
    "agent proposed with")]
ThreadOfCall = Annotated[schemas.Identifier | None, Query(
    description="the thread of the call: picks one request when a call id was used on "
    "several threads")]


def resolve(gate: Gate, identity: Identity, ref: str,
            thread_id: str | None = None) -> ApprovalRequest:
    """The request ``ref`` names for ``identity`` (see the module's docstring)."""
    found = gate.find_request(ref)
    if found is not None and may_see(identity, found) and thread_id in (None, found.thread_id):
        return found
    principal = None if sees_all(identity) else identity.name
    named = gate.list_requests(
        query=RequestQuery(call_id=ref, principal=principal, thread_id=thread_id), limit=11)
    if not named:
        where = f" on thread {thread_id!r}" if thread_id is not None else ""
        raise NotFound(f"no call {ref!r}{where}: /calls/{{id}} takes the request_id that "
                       "POST /calls answered with, or the call_id the agent proposed with",
                       code="not_found")
    if len(named) > 1:
        threads = ", ".join(repr(r.thread_id) for r in named[:10])
        raise Conflict(f"call id {ref!r} names {'more than 10' if len(named) > 10 else len(named)}"
                       f" requests (threads {threads}): add ?thread_id=… or use the "
                       "request id", code="call_id_ambiguous")
    return named[0]
