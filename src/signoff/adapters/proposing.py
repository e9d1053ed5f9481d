"""Proposing a call from an event loop: answered in place when the gate can answer from
memory, else in a worker thread.

A worker-thread hop (``asyncio.to_thread``) costs about as much as the verdict itself
several times over (bench/frameworks_bench.py times both), and most calls are allowed
calls the gate answers without its database (``GateProtocol.propose_now``: the same
verdict and audit event). So those are answered on the loop; anything that may read or
write the store — an ask, a thread not read yet, a reviewed call — still goes to a worker,
so the store never blocks the loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from signoff.kernel.outcomes import Proposal
from signoff.kernel.protocol import GateProtocol
from signoff.model import RunContext, ToolCall

Hop = Callable[..., Awaitable[Any]]


async def propose(gate: GateProtocol, call: ToolCall, context: RunContext, *,
                  hop: Hop = asyncio.to_thread) -> Proposal:
    """``gate.propose(call, context)``, without a thread hop when memory answers it.
    ``hop``: how a blocking call leaves the loop (``anyio.to_thread.run_sync`` for anyio)."""
    found = gate.propose_now(call, context)
    if found is not None:
        return found
    proposal: Proposal = await hop(gate.propose, call, context)
    return proposal
