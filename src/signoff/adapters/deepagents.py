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
``/etc/passwd`` as ``<root>/etc/passwd`` and admit it. ``SignoffMiddleware`` runs it by
itself on the backend of every deepagents file tool it sees (``backend_of``), at each
model call and each tool call, so the application need not call anything: a mismatched
agent fails with ``PolicyError(backend_mismatch)`` before any of its tools runs. Over a
backend that reads real paths, deepagents reads a relative path from the filesystem's
root (its tools put a ``/`` before it); a policy judges it under the workspace root, so
such a call is refused (``relative_path``) with the full path to use instead.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from signoff.errors import PolicyError
from signoff.extras import absent

try:
    from deepagents.backends import CompositeBackend
    from deepagents.middleware.filesystem import FilesystemMiddleware
    from deepagents.middleware.subagents import GENERAL_PURPOSE_SUBAGENT

    from signoff.adapters.langchain import SignoffMiddleware
except ImportError as exc:
    raise absent("deepagents", __name__, exc) from exc
from signoff.policy import Policy, PolicyConfig

FILE_TOOLS = ("ls", "read_file", "write_file", "edit_file", "delete", "glob", "grep")
OPENED = ("file_path", "path")  # the arguments deepagents' file tools open, after a "/"
RELATIVE_PATH = ("[signoff] {tool} was not run: {path!r} is relative, and over this backend "
                 "(virtual_mode=False) deepagents reads it from the filesystem's root "
                 "({rooted!r}), not from the workspace. Name the file by its full path, e.g. "
                 "{full!r}.")


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
        check_backend(middleware.gate.config, backend)
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


def check_backend(policy: Policy | PolicyConfig, backend: Any) -> None:
    """Refuse (``PolicyError(backend_mismatch)``) a policy whose file tools read paths
    otherwise than ``backend`` resolves them: virtual over a real-path backend, real over
    a virtual one, or a workspace root that is not the backend's root directory. A
    ``CompositeBackend`` is checked through its default backend and each route on disk,
    which must be virtual and rooted where the policy reads the route's prefix
    (``<root>/memories`` for ``/memories/`` under virtual file tools). A backend
    without a root on disk (deepagents' default ``StateBackend``, a ``StoreBackend``) is
    not checked: its paths are virtual by construction and reach no file."""
    problems = _mismatches(_config(policy), backend)
    if problems:
        raise PolicyError(
            f"the policy does not read paths as the {_shown(backend)} does: "
            f"{'; '.join(problems)}. Declare the file tools virtual as the backend's "
            "virtual_mode says, with [workspace] root = its root_dir; until then no tool "
            "of this agent runs", code="backend_mismatch")


def backend_of(tool: Any) -> Any | None:
    """The backend a deepagents file tool runs on, or ``None`` for any other tool.
    deepagents builds ``ls``, ``read_file``, … ``execute`` as closures of the
    ``FilesystemMiddleware`` that holds the backend (one per agent and subagent)."""
    for func in (getattr(tool, "func", None), getattr(tool, "coroutine", None)):
        for cell in getattr(func, "__closure__", None) or ():
            try:
                value = cell.cell_contents
            except ValueError:  # a cell not filled yet
                continue
            if isinstance(value, FilesystemMiddleware):
                return value.backend
    return None


def relative_path(policy: Policy | PolicyConfig, backend: Any,
                  call: Mapping[str, Any]) -> str | None:
    """The refusal of a file tool call that names a relative path over a backend that
    reads real paths (``virtual_mode=False``): deepagents puts a ``/`` before it, so
    ``etc/passwd`` opens ``/etc/passwd``, while the policy, whose tools then read real
    paths, judges it under the workspace root. ``None`` when the call names none."""
    disk = _disk(backend.default if isinstance(backend, CompositeBackend) else backend)
    spec = _config(policy).tools.get(str(call.get("name")))
    args = call.get("args")
    if disk is None or disk[0] or spec is None or spec.virtual or not isinstance(args, Mapping):
        return None
    for name in spec.paths:
        value = args.get(name) if name in OPENED else None  # not glob's pattern, grep's glob
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str) and item and not item.startswith(("/", "~")):
                return RELATIVE_PATH.format(tool=call.get("name"), path=item,
                                            rooted="/" + item,
                                            full=posixpath.join(str(disk[1]), item))
    return None


def _config(policy: Policy | PolicyConfig) -> PolicyConfig:
    """The configuration judged by: a policy's, or the one a gate gives (``Gate.config``)."""
    return policy.config if isinstance(policy, Policy) else policy


def _mismatches(config: PolicyConfig, backend: Any) -> list[str]:
    workspace = config.workspace
    if isinstance(backend, CompositeBackend):
        problems: list[str] = [f"its default {_shown(backend.default)}: {problem}"
                    for problem in _mismatches(config, backend.default)]
        readings = {spec.virtual for name in FILE_TOOLS
                    if (spec := config.tools.get(name)) is not None and spec.paths}
        for prefix, routed in backend.routes.items():
            disk = _disk(routed)
            if disk is None or workspace is None:
                continue
            virtual, root = disk
            stem = prefix.strip("/")
            for reading in sorted(readings):
                # what the policy reads "<prefix>x" as; the route is handed "/x"
                expected = posixpath.join(workspace.root, stem) if reading else "/" + stem
                if not virtual or os.path.realpath(root) != os.path.realpath(expected):
                    problems.append(
                        f"the route {prefix!r} is a {_shown(routed)} rooted at {str(root)!r}, "
                        f"where file tools with virtual = {str(reading).lower()} read "
                        f"{prefix!r} as {expected!r} (it must be virtual and rooted there)")
        return problems
    disk = _disk(backend)
    if disk is None:
        return []
    virtual, root = disk
    found: list[str] = []
    for name in FILE_TOOLS:
        spec = config.tools.get(name)
        if spec is not None and spec.paths and spec.virtual is not virtual:
            found.append(f"[tools.{name}] virtual = {str(spec.virtual).lower()}")
    if workspace is not None and os.path.realpath(workspace.root) != os.path.realpath(root):
        found.append(f"[workspace] root = {workspace.root!r}, the backend's root_dir is "
                     f"{str(root)!r}")
    return found


def _disk(backend: Any) -> tuple[bool, Any] | None:
    """(virtual_mode, root_dir) of a backend on disk; ``None`` for one without a root."""
    virtual = getattr(backend, "virtual_mode", None)
    root = getattr(backend, "cwd", None)
    return None if not isinstance(virtual, bool) or root is None else (virtual, root)


def _shown(backend: Any) -> str:
    disk = _disk(backend)
    name = type(backend).__name__
    return name if disk is None else f"{name} (virtual_mode={disk[0]})"


__all__ = ["backend_of", "check_backend", "gate_subagents", "relative_path"]
