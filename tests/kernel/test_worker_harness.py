"""The lock-step process harness fails cleanly: a child that dies before it is READY fails
the test that started it, and leaves no pipe open for a later test to trip over (an
unclosed pipe's ResourceWarning fails whichever test happens to collect it)."""

from __future__ import annotations

import gc
import warnings

import pytest
from _worker import Children


def test_a_dead_child_fails_its_test_and_leaves_no_open_pipe() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(AssertionError, match="expected READY"), \
                Children("no-such-mode", [{}, {}], timeout=30) as kids:
            kids.step()
        for proc in kids.procs:
            assert proc.returncode is not None
            assert all(pipe is None or pipe.closed
                       for pipe in (proc.stdin, proc.stdout, proc.stderr))
        gc.collect()
