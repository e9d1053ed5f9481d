"""open_beneath / read_beneath: both methods, real files, and a real symlink-swap race."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from signoff.errors import PathError
from signoff.safeopen import Method, has_openat2, open_beneath, read_beneath

METHODS = [
    pytest.param("openat2", marks=pytest.mark.skipif(not has_openat2(), reason="no openat2")),
    "walk",
]


@pytest.fixture(params=METHODS)
def method(request: pytest.FixtureRequest) -> Method:
    m: Method = request.param
    return m


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    ws, out = tmp_path / "ws", tmp_path / "outside"
    (ws / "sub").mkdir(parents=True)
    out.mkdir()
    (tmp_path / "ws_evil").mkdir()
    (tmp_path / "ws_evil" / "x").write_bytes(b"EVIL")
    (ws / "f").write_bytes(b"inside")
    (ws / "sub" / "g").write_bytes(b"g")
    (out / "secret").write_bytes(b"SECRET")
    (ws / "in_link").symlink_to("sub/g")
    (ws / "in_dir").symlink_to("sub")
    (ws / "abs_in").symlink_to(ws / "f")
    (ws / "out_link").symlink_to(out / "secret")
    (ws / "out_rel").symlink_to("../outside/secret")
    (ws / "out_dir").symlink_to(out)
    (ws / "dangle_out").symlink_to(out / "created")
    (ws / "pr").symlink_to("/proc/self/root")
    (ws / "loop").symlink_to("loop")
    os.mkfifo(ws / "fifo")
    return ws, out


def assert_refused(
    root: str | int, path: str, method: Method, code: str = "path_escape", flags: int = os.O_RDONLY
) -> None:
    with pytest.raises(PathError) as err:
        os.close(open_beneath(root, path, flags, method=method))
    assert err.value.code == code, err.value


@pytest.mark.parametrize("path", ["f", "./f", "sub/g", "sub/../f", "sub//g", "sub/./../sub/g"])
def test_reads_inside(tree: tuple[Path, Path], method: Method, path: str) -> None:
    ws, _ = tree
    assert read_beneath(str(ws), path, method=method) in (b"inside", b"g")


def test_absolute_inside(tree: tuple[Path, Path], method: Method) -> None:
    ws, _ = tree
    assert read_beneath(str(ws), str(ws / "f"), method=method) == b"inside"
    assert read_beneath(str(ws), f"/{ws}//sub/g", method=method) == b"g"
    link = ws.parent / "ws_link"
    link.symlink_to(ws)
    # root given through a symlink: both its spelling and its realpath are accepted
    assert read_beneath(str(link), str(link / "f"), method=method) == b"inside"
    assert read_beneath(str(link), str(ws / "f"), method=method) == b"inside"


@pytest.mark.parametrize(
    "path",
    [
        "../outside/secret",
        "sub/../../outside/secret",
        "..",
        "out_link",
        "out_rel",
        "out_dir/secret",
        "abs_in",  # an absolute symlink is refused even when its target is inside
        "pr/etc/passwd",
        "/etc/passwd",
        "{ws}_evil/x",  # sibling prefix
        "{ws}/../outside/secret",
    ],
)
def test_refuses_escapes(tree: tuple[Path, Path], method: Method, path: str) -> None:
    ws, _ = tree
    assert_refused(str(ws), path.format(ws=ws), method)


def test_symlink_inside_differs_by_method(tree: tuple[Path, Path], method: Method) -> None:
    """openat2 follows links that stay beneath the root; the fd walk refuses every link."""
    ws, _ = tree
    if method == "openat2":
        assert read_beneath(str(ws), "in_link", method=method) == b"g"
        assert read_beneath(str(ws), "in_dir/g", method=method) == b"g"
        os.close(open_beneath(str(ws), "in_dir/", method=method))
    else:
        for path in ("in_link", "in_dir/g", "in_dir/"):
            assert_refused(str(ws), path, method)


def test_loop(tree: tuple[Path, Path], method: Method) -> None:
    assert_refused(str(tree[0]), "loop", method)


@pytest.mark.parametrize("path", ["root/etc/passwd", "cwd", "fd/0", "exe"])
def test_magic_links(method: Method, path: str) -> None:
    assert_refused("/proc/self", path, method)


def test_fd_root(tree: tuple[Path, Path], method: Method) -> None:
    ws, _ = tree
    fd = os.open(ws, os.O_PATH | os.O_DIRECTORY)
    try:
        assert read_beneath(fd, "f", method=method) == b"inside"
        assert read_beneath(fd, str(ws / "sub" / "g"), method=method) == b"g"
        assert_refused(fd, "../outside/secret", method)
        assert_refused(fd, "out_link", method)
        assert_refused(fd, "/etc/passwd", method)
        os.fstat(fd)  # still open: the caller's fd is never closed
    finally:
        os.close(fd)


def test_invalid_paths(tree: tuple[Path, Path], method: Method) -> None:
    ws = str(tree[0])
    assert_refused(ws, "f\x00", method, "nul_byte")
    assert_refused(ws, "", method, "empty_path")
    assert_refused(ws, 3, method, "invalid_path")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown method"):
        open_beneath(ws, "f", method="magic")  # type: ignore[arg-type]


def test_ordinary_errors_propagate(tree: tuple[Path, Path], method: Method) -> None:
    ws, _ = tree
    with pytest.raises(FileNotFoundError):
        read_beneath(str(ws), "nope", method=method)
    with pytest.raises(FileNotFoundError):
        read_beneath(str(ws), "nope/f", method=method)
    with pytest.raises(NotADirectoryError):
        read_beneath(str(ws), "f/x", method=method)
    with pytest.raises(NotADirectoryError):
        os.close(open_beneath(str(ws), "f/", method=method))
    with pytest.raises(IsADirectoryError):
        read_beneath(str(ws), "sub", method=method)
    with pytest.raises(OSError, match="not a regular file"):
        read_beneath(str(ws), "fifo", method=method)  # and it does not hang


def test_write_and_create(tree: tuple[Path, Path], method: Method) -> None:
    ws, out = tree
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    fd = open_beneath(str(ws), "sub/new", flags, 0o640, method=method)
    os.write(fd, b"hi")
    os.close(fd)
    assert (ws / "sub" / "new").read_bytes() == b"hi"
    assert (ws / "sub" / "new").stat().st_mode & 0o777 == 0o640 & ~_umask()
    assert_refused(str(ws), "dangle_out", method, flags=os.O_WRONLY | os.O_CREAT)
    assert not (out / "created").exists()
    assert_refused(str(ws), "out_link", method, flags=os.O_WRONLY | os.O_TRUNC)
    assert (out / "secret").read_bytes() == b"SECRET"


def test_root_itself(tree: tuple[Path, Path], method: Method) -> None:
    ws, _ = tree
    for path in (".", str(ws), "sub/.."):
        fd = open_beneath(str(ws), path, os.O_RDONLY | os.O_DIRECTORY, method=method)
        try:
            assert os.path.samestat(os.fstat(fd), os.stat(ws))
        finally:
            os.close(fd)


def test_no_fd_leaks(tree: tuple[Path, Path], method: Method) -> None:
    ws, _ = tree
    before = len(os.listdir("/proc/self/fd"))
    for path in ("f", "sub/g", "sub/../../x", "out_dir/secret", "nope/x", "f/x", "a/b/c/.."):
        try:
            read_beneath(str(ws), path, method=method)
        except OSError:
            pass
        except PathError:
            pass
    assert len(os.listdir("/proc/self/fd")) == before


def test_has_openat2_is_cached() -> None:
    assert has_openat2() is has_openat2()


def test_auto_method(tree: tuple[Path, Path]) -> None:
    ws, _ = tree
    assert read_beneath(str(ws), "f") == b"inside"
    assert_refused(str(ws), "out_link", "auto")
    # auto means openat2 when available, whose hallmark is following an inside link
    if has_openat2():
        assert read_beneath(str(ws), "in_link") == b"g"
    else:
        assert_refused(str(ws), "in_link", "auto")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# -- the race the module exists for ------------------------------------------------------

# The swapper runs in its own process: a thread would mostly swap at GIL hand-offs,
# between reads, and rarely inside the window between resolving 'd' and opening 'f'.
SWAPPER = r"""
import ctypes, os, sys
d, alt, spare, stop = (os.fsencode(a) for a in sys.argv[1:5])
exchange = getattr(ctypes.CDLL(None), "renameat2", None)
n = 0
while n % 256 or not os.path.exists(stop):
    if exchange is None or exchange(-100, d, -100, alt, 2) != 0:  # 2: RENAME_EXCHANGE
        os.rename(d, spare); os.rename(alt, d); os.rename(spare, alt)  # with a gap
    n += 1
print(n)
"""


def _check_then_open(root: Path, rel: str) -> bytes:
    """The bug this module prevents: lstat every component, then open the path."""
    path = root
    for name in rel.split("/"):
        path = path / name
        if path.is_symlink():
            raise PathError("symlink", code="path_escape")
    return path.read_bytes()


@pytest.fixture
def swapping(tmp_path: Path) -> Iterator[tuple[Path, Callable[[], int]]]:
    """ws/d flips between a real directory (f = b'inside') and a symlink to outside/.

    Yields the root and a function that stops the swapper and returns its swap count.
    """
    ws, out = tmp_path / "ws", tmp_path / "outside"
    (ws / "d").mkdir(parents=True)
    out.mkdir()
    (ws / "d" / "f").write_bytes(b"inside")
    (out / "f").write_bytes(b"SECRET")
    (ws / "alt").symlink_to(out)
    args = [ws / "d", ws / "alt", ws / "spare", tmp_path / "stop"]
    proc = subprocess.Popen(
        [sys.executable, "-c", SWAPPER, *map(str, args)], stdout=subprocess.PIPE, text=True
    )

    def stop() -> int:
        (tmp_path / "stop").touch()
        stdout, _ = proc.communicate(timeout=10)
        return int(stdout)

    try:
        while not (ws / "alt").is_dir():  # wait for the first swap
            time.sleep(0.001)
        yield ws, stop
    finally:
        if proc.returncode is None:
            stop()


def test_race_never_reads_outside(swapping: tuple[Path, Callable[[], int]], method: Method) -> None:
    ws, stop = swapping
    readers: list[tuple[str, Callable[[], bytes]]] = [
        ("", lambda: read_beneath(str(ws), "d/f", method=method)),
        ("control:", lambda: _check_then_open(ws, "d/f")),
    ]
    seen: Counter[str] = Counter()
    deadline = time.monotonic() + 5
    rounds = 0
    # 3,000 rounds, or more (within 5 s) until the control has shown the window is hit.
    while time.monotonic() < deadline and (rounds < 3000 or not seen["control:SECRET"]):
        rounds += 1
        for label, read in readers:
            try:
                seen[label + read().decode()] += 1
            except PathError as exc:
                assert exc.code == "path_escape"
                seen[label + "refused"] += 1
            except FileNotFoundError:
                seen[label + "missing"] += 1
    swaps = stop()
    assert seen["SECRET"] == 0, seen
    assert seen["inside"] > 0 and seen["refused"] > 0, seen
    assert swaps > 1000, swaps
    assert seen["control:SECRET"] > 0, seen  # the window was hit: a check-then-open leaks
