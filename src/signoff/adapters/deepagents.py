"""signoff in deepagents (``create_deep_agent``): the subagents and the backend.

``SignoffMiddleware`` in ``create_deep_agent(middleware=[...])`` reviews the main
agent's calls. deepagents builds each subagent's middleware stack itself, and its
default general-purpose subagent inherits none of the caller's middleware — so a
``task`` subagent would run its tools unreviewed. ``gate_subagents`` gives every
subagent the same middleware (and so the same gate), and tells the middleware which
subagents are reviewed: a ``task`` call naming any other subagent is refused
(``[tools.task] subagent = "subagent_type"``, in ``signoff init --preset deepagents``).

A subagent's run starts inside the parent's ``task`` call, so the child bridge
(``langchain.child``) labels its requests with that call and makes its asks wait in place.

``check_backend`` refuses a policy that reads paths otherwise than the backend does:
a file tool declared virtual over a backend with ``virtual_mode=False`` would judge
``/etc/passwd`` as ``<root>/etc/passwd`` and admit it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from deepagents.middleware.subagents import GENERAL_PURPOSE_SUBAGENT

from signoff.adapters.langchain import SignoffMiddleware
from signoff.errors import PolicyError
from signoff.policy import Policy

FILE_TOOLS = ("ls", "read_file", "write_file", "edit_file", "delete", "glob", "grep")


def gate_subagents(middleware: SignoffMiddleware, *, model: Any,
                   tools: Sequence[Any] = (), subagents: Iterable[Mapping[str, Any]] = (),
                   backend: Any = None) -> list[Any]:
    """The ``subagents=`` for ``create_deep_agent``: each declarative spec with
    ``middleware`` added to its own, and a general-purpose subagent (deepagents'
    default, with ``model`` and ``tools``) unless one is given. A compiled subagent
    (``{"runnable": ...}``) is passed on as it is but counted as reviewed only if it was
    built with a ``SignoffMiddleware`` of the same gate: name it in
    ``SignoffMiddleware(gated_subagents=...)`` yourself. With ``backend``, the policy is
    checked against it (``check_backend``)."""
    if backend is not None:
        check_backend(middleware.gate.policy, backend)
    out: list[Any] = []
    for spec in subagents:
        if "runnable" in spec or "graph_id" in spec:
            out.append(spec)
            continue
        out.append({**spec, "middleware": [*spec.get("middleware", ()), middleware]})
        middleware.gated_subagents.add(str(spec["name"]))
    if not any(spec.get("name") == GENERAL_PURPOSE_SUBAGENT["name"] for spec in out):
        out.insert(0, {**GENERAL_PURPOSE_SUBAGENT, "model": model, "tools": list(tools),
                       "middleware": [middleware]})
        middleware.gated_subagents.add(GENERAL_PURPOSE_SUBAGENT["name"])
    return out


def check_backend(policy: Policy, backend: Any) -> None:
    """Refuse (``PolicyError(backend_mismatch)``) a policy whose file tools read paths
    otherwise than ``backend`` resolves them: virtual over a real-path backend, real over
    a virtual one, or a workspace root that is not the backend's root directory. A
    backend without a root on disk (deepagents' default ``StateBackend``, a composite)
    is not checked here: its paths are virtual by construction."""
    virtual = getattr(backend, "virtual_mode", None)
    root = getattr(backend, "cwd", None)
    if not isinstance(virtual, bool) or root is None:
        return
    config = policy.config
    problems: list[str] = []
    for name in FILE_TOOLS:
        spec = config.tools.get(name)
        if spec is not None and spec.paths and spec.virtual is not virtual:
            problems.append(f"[tools.{name}] virtual = {str(spec.virtual).lower()}")
    workspace = config.workspace
    if workspace is not None and os.path.realpath(workspace.root) != os.path.realpath(root):
        problems.append(f"[workspace] root = {workspace.root!r}, the backend's root_dir is "
                        f"{str(root)!r}")
    if problems:
        raise PolicyError(
            f"the policy does not read paths as the {type(backend).__name__} "
            f"(virtual_mode={virtual}) does: {'; '.join(problems)}",
            code="backend_mismatch")


__all__ = ["check_backend", "gate_subagents"]
