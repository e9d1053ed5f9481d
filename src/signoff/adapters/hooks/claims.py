"""The claims a pre-call hook made, kept for the post-call hook of the same call.

The two hooks of a coding agent are separate processes, and a ``signoff serve`` never
shows a claim's fencing token to anyone but the claimer: so the pre-call hook writes the claimed
``Execution`` to a file only this user can read (``$XDG_STATE_HOME/signoff/<agent>``,
else ``~/.local/state/…``), named by the call id, and the post-call hook takes it
back to report the result. A file that is missing is no claim: the result is audited as
an allowed call's (in-process), never reported against a request it did not claim.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from signoff.kernel.execution import Execution


def default_dir(agent: str = "claude-code") -> Path:
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "signoff" / agent


def keep(directory: Path, call_id: str, execution: Execution) -> None:
    """Write ``execution`` under ``call_id`` (0600, in a 0700 directory)."""
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    target = directory / f"{call_id}.json"
    temporary = directory / f".{call_id}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump({"request_id": execution.request_id,
                   "fencing_token": execution.fencing_token}, out)
    os.replace(temporary, target)


def take(directory: Path, base: str) -> Execution | None:
    """The claim kept for a call id starting ``base`` (removed as it is taken)."""
    if not directory.is_dir():
        return None
    for path in sorted(directory.glob(f"{base}-*.json")):
        try:
            data = json.loads(path.read_text("utf-8"))
            path.unlink()
        except (OSError, ValueError):
            continue
        return Execution(request_id=str(data["request_id"]),
                         fencing_token=int(data["fencing_token"]))
    return None
