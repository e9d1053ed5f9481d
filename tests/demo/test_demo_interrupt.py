"""Ctrl-C while the demo waits for a human: the goodbye says what happens to its files —
a temporary directory is removed (and the note says so), a ``--dir`` is kept (and the
note names it) — through a real ``signoff demo`` and a real SIGINT."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from signoff.model import RequestStatus
from signoff.store.sqlite import SqliteStore

SIGNOFF = str(Path(sys.executable).parent / "signoff")


def _ignore_ctrl_c() -> None:  # in the child, before exec: as a shell's background job
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _interrupt_while_pending(*args: str, ignored: bool = False
                             ) -> tuple[int, dict[str, Any], str, str]:
    """The exit code, the start event, the last note, and stderr (``ignored``: the demo
    starts with SIGINT ignored, inherited from its parent)."""
    demo = subprocess.Popen([SIGNOFF, "demo", "--json", "--no-auto-approve", "--port", "0",
                             *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=_ignore_ctrl_c if ignored else None)  # noqa: PLW1509
    try:
        assert demo.stdout is not None
        start: dict[str, Any] = {}
        for line in demo.stdout:
            event = json.loads(line)
            if event["event"] == "start":
                start = event
            if event["event"] == "pending":
                break
        demo.send_signal(signal.SIGINT)
        rest, err = demo.communicate(timeout=60)
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.wait()
    notes = [json.loads(line) for line in rest.splitlines() if '"note"' in line]
    return demo.returncode, start, notes[-1]["text"] if notes else "", err


@pytest.mark.slow
def test_ctrl_c_says_the_temporary_directory_is_removed() -> None:
    code, start, note, err = _interrupt_while_pending()
    home = Path(start["db"]).parent
    assert code == 130 and "Traceback" not in err, err
    assert note == (f"interrupted: the demo stops here and removes its temporary directory "
                    f"{home} (database, policy and workspace, with the requests nobody "
                    "decided); run it with --dir DIR to keep them.")
    assert not home.exists()  # as the note says


@pytest.mark.slow
def test_ctrl_c_with_dir_says_where_the_pending_requests_stay(tmp_path: Path) -> None:
    home = tmp_path / "demo"
    code, start, note, err = _interrupt_while_pending("--dir", str(home))
    assert code == 130 and "Traceback" not in err, err
    assert note == (f"interrupted: the demo stops here. Its database, policy and workspace "
                    f"stay in {home.resolve()}; requests nobody decided stay pending there.")
    assert Path(start["db"]).is_file()
    store = SqliteStore(start["db"])
    try:
        assert [r.status for r in store.list_requests()] == [RequestStatus.PENDING]
    finally:
        store.close()


@pytest.mark.slow
def test_ctrl_c_stops_the_demo_even_when_its_parent_ignored_sigint() -> None:
    """The demo says Ctrl-C stops it; an inherited SIG_IGN (a background job, a parent that
    ignored SIGINT while it forked) must not leave it waiting for a human forever."""
    code, start, note, err = _interrupt_while_pending(ignored=True)
    assert code == 130 and "Traceback" not in err, err
    assert note.startswith("interrupted: the demo stops here")
    assert not Path(start["db"]).parent.exists()
