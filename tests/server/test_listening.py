"""What goes wrong when a server binds is a typed ``ListenError`` (``listening.listen``),
and a busy port names the process holding it (``holders.port_holder``, Linux)."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import pytest

from signoff.errors import ListenError
from signoff.server.holders import port_holder
from signoff.server.listening import listen

linux = pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="needs Linux /proc")


@linux
def test_the_holder_of_a_listening_port_is_this_process(busy: int) -> None:
    holder = port_holder(busy)
    assert holder is not None
    assert holder.startswith(f"pid {os.getpid()} ")
    assert os.path.basename(sys.argv[0]) in holder  # the command, shown by name


def test_a_port_nobody_listens_on_has_no_holder() -> None:
    with socket.socket() as bound:  # bound, never listening: no LISTEN row
        bound.bind(("127.0.0.1", 0))
        assert port_holder(int(bound.getsockname()[1])) is None


def test_no_proc_means_no_holder_not_an_error(tmp_path: Path, busy: int) -> None:
    assert port_holder(busy, proc=tmp_path / "nothing") is None


@linux
def test_a_busy_port_is_port_in_use_with_the_hint(busy: int) -> None:
    with pytest.raises(ListenError) as caught:
        listen("127.0.0.1", busy, hint="pass --listen HOST:N")
    assert caught.value.code == "port_in_use"
    assert caught.value.message == (f"127.0.0.1:{busy} is already in use (by "
                                    f"{port_holder(busy)}) — pass --listen HOST:N")


@pytest.mark.parametrize("host", ["999.1.1.1", "1.2.3.256", "a\x00b"])
def test_a_host_that_is_no_address_is_bad_host(host: str) -> None:
    with pytest.raises(ListenError) as caught:
        listen(host, 0)
    assert caught.value.code == "bad_host"
    assert repr(host) in caught.value.message


def test_an_address_this_machine_does_not_have_is_bad_host() -> None:
    with pytest.raises(ListenError) as caught:  # TEST-NET-1: never assigned to a host
        listen("192.0.2.1", 0)
    assert caught.value.code == "bad_host"
    assert "not an address of this machine" in caught.value.message


def test_a_free_port_is_bound_and_listening() -> None:
    with listen("127.0.0.1", 0) as sock:
        port = sock.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
