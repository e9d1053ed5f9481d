"""Workspace path guard: real trees in tmp_path, real symlinks, no filesystem mocks."""

from __future__ import annotations

import errno
import os
import pwd
import shutil
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from signoff.errors import PathError
from signoff.policy.workspace import Location, PathVerdict, Workspace

INSIDE, ALLOWLISTED, OUTSIDE = Location.INSIDE, Location.ALLOWLISTED, Location.OUTSIDE


def build_tree(base: Path) -> tuple[Path, Path]:
    """ws/ with links in every direction, plus ws_evil/, ws-2/ and outside/ beside it."""
    ws, out = base / "ws", base / "outside"
    for d in (ws / "sub" / "deeper", base / "ws_evil", base / "ws-2", out / "deep", out / "deepx"):
        d.mkdir(parents=True)
    (ws / "file.txt").write_text("inside")
    (ws / "sub" / "inner.txt").write_text("inner")
    (out / "secret").write_text("SECRET")
    (base / "ws_evil" / "x").write_text("evil")
    links = {
        "abs_out": str(out),  # absolute target outside
        "rel_out": "../outside",  # relative target outside
        "secret_link": str(out / "secret"),
        "a": "b",  # chain: a -> b -> ../outside
        "b": "../outside",
        "d": str(out),  # a symlinked directory in the middle of a path
        "in_link": "sub",
        "abs_in": str(ws / "sub"),
        "jump": str(out / "deep"),  # jump/.. is outside/, not ws/
        "deep_in": "sub/deeper",  # deep_in/.. is ws/sub
        "back": ".",
        "dangle_out": str(out / "new.txt"),
        "dangle_in": "newfile.txt",
        "dangle_outdir": str(out / "newdir"),
        "loop1": "loop2",
        "loop2": "loop1",
        "self": "self",
        "pr": "/proc/self/root",
        "missing_chain": "nowhere/../rel_out",
    }
    for name, target in links.items():
        (ws / name).symlink_to(target)
    (ws / "sub" / "up").symlink_to("../..")  # sub/up -> the directory holding ws
    return ws, out


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    return build_tree(tmp_path)


@pytest.fixture
def ws(tree: tuple[Path, Path]) -> Workspace:
    return Workspace(str(tree[0]), name="dev-workspace")


def where(w: Workspace, path: object, **kw: str) -> tuple[Location, str | None]:
    v = w.check(path, **kw)
    assert v.code is None, v
    return v.location, v.resolved


# -- ordinary paths ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("file.txt", "file.txt"),
        ("./sub//inner.txt", "sub/inner.txt"),
        ("sub/./deeper/", "sub/deeper"),
        ("sub/../file.txt", "file.txt"),
        ("new/dirs/later.txt", "new/dirs/later.txt"),
        ("file.txt/x", "file.txt/x"),  # ENOTDIR: judged lexically
        ("in_link/inner.txt", "sub/inner.txt"),
        ("abs_in/inner.txt", "sub/inner.txt"),
        ("deep_in/../inner.txt", "sub/inner.txt"),
        ("back/back/file.txt", "file.txt"),
        ("dangle_in", "newfile.txt"),
        (".", ""),
        ("x" * 300, "x" * 300),  # ENAMETOOLONG on lstat: lexical, no crash
        ("caf\udce9", "caf\udce9"),  # an undecodable byte, as os.listdir would give it
    ],
)
def test_inside(ws: Workspace, path: str, expected: str) -> None:
    v = ws.check(path)
    assert v == PathVerdict(
        given=path,
        resolved=os.path.join(ws.root, expected).rstrip("/"),
        location=INSIDE,
        note=v.note,
    )
    assert v.inside and "inside workspace 'dev-workspace'" in v.note
    assert ws.resolve(path) == v.resolved


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("../outside/secret", "outside/secret"),
        ("sub/../../outside", "outside"),
        ("abs_out/secret", "outside/secret"),
        ("rel_out/secret", "outside/secret"),
        ("secret_link", "outside/secret"),
        ("a", "outside"),  # chain a -> b -> ../outside
        ("a/secret", "outside/secret"),
        ("d/x", "outside/x"),
        ("jump/..", "outside"),  # kernel semantics: the parent of the link's *target*
        ("jump/../secret", "outside/secret"),
        ("sub/up/outside/secret", "outside/secret"),
        ("sub/up", ""),
        ("dangle_out", "outside/new.txt"),  # a write would create outside/new.txt
        ("dangle_outdir/x/y", "outside/newdir/x/y"),
        ("missing/../abs_out/secret", "outside/secret"),  # mkdir -p, then through the link
        ("missing_chain", "outside"),
        ("../ws_evil/x", "ws_evil/x"),
        ("../ws-2", "ws-2"),
        ("..", ""),
    ],
)
def test_outside(ws: Workspace, path: str, expected: str) -> None:
    base = os.path.dirname(ws.root)
    loc, resolved = where(ws, path)
    assert loc is OUTSIDE
    assert resolved == os.path.join(base, expected).rstrip("/")
    v = ws.check(path)
    assert not v.inside
    assert v.note == (
        f"{path!r} resolves to {resolved!r}, outside workspace 'dev-workspace' ({ws.root})"
    )


def test_absolute_and_sibling_prefix(tree: tuple[Path, Path]) -> None:
    root, _ = tree
    w = Workspace(str(root))
    assert where(w, str(root / "file.txt")) == (INSIDE, str(root / "file.txt"))
    assert where(w, str(root)) == (INSIDE, str(root))
    assert where(w, str(root) + "/")[0] is INSIDE
    assert where(w, "/" + str(root / "sub") + "//inner.txt")[0] is INSIDE
    assert where(w, str(root) + "_evil/x")[0] is OUTSIDE
    assert where(w, str(root) + "-2")[0] is OUTSIDE
    assert where(w, str(root / ".." / "ws_evil"))[0] is OUTSIDE
    assert where(w, "//etc//passwd") == (OUTSIDE, "/etc/passwd")
    assert where(w, "/etc/passwd") == (OUTSIDE, "/etc/passwd")
    assert where(w, "/") == (OUTSIDE, "/")
    assert where(w, "/" + "../" * 50 + "etc") == (OUTSIDE, "/etc")


def test_root_slash_admits_everything_but_magic(tree: tuple[Path, Path]) -> None:
    w = Workspace("/")
    assert where(w, "/etc/passwd")[0] is INSIDE
    assert where(w, str(tree[1] / "secret"))[0] is INSIDE
    assert where(w, "/proc/self/root/etc")[0] is OUTSIDE


def test_home_expansion(
    ws: Workspace, tree: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tree[1]))
    assert where(ws, "~") == (OUTSIDE, str(tree[1]))
    assert where(ws, "~/secret") == (OUTSIDE, str(tree[1] / "secret"))
    root_home = pwd.getpwnam("root").pw_dir
    assert where(ws, "~root/.ssh") == (OUTSIDE, os.path.realpath(root_home) + "/.ssh")
    # An unknown user is left alone by the shell: a literal relative name.
    assert where(ws, "~no_such_user_x9/f") == (INSIDE, ws.root + "/~no_such_user_x9/f")


def test_home_judged_expanded_and_literal(
    ws: Workspace, tree: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """HOME inside the root but cwd outside: a tool that does not expand '~' leaves."""
    monkeypatch.setenv("HOME", ws.root)
    assert where(ws, "~/file.txt")[0] is INSIDE
    loc, resolved = where(ws, "~/file.txt", cwd=str(tree[1]))
    assert (loc, resolved) == (OUTSIDE, str(tree[1] / "~" / "file.txt"))


# -- magic links ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/proc/self/root/etc/passwd",
        "/proc/self/root{ws}/file.txt",  # through the magic link back into the root
        "/proc/self/cwd/file.txt",
        "/proc/thread-self/root{ws}",
        "/proc/1/root{ws}",
        "/proc/{pid}/cwd",
        "/proc/self/fd/0",
        "/proc",
        "/dev/fd/0",
        "/dev/fd/3/x",
        "/dev/stdin",
        "/dev/stdout",
        "/dev/stderr",
        "pr{ws}/file.txt",  # a planted link to /proc/self/root
        "/dev/../proc/self/root",
        "sub/up/{dots}proc/self/root{ws}",
    ],
)
def test_magic_links_are_outside(ws: Workspace, path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ws.root)  # even when the checker's own cwd *is* the root
    path = path.format(ws=ws.root, pid=os.getpid(), dots="../" * 40)
    v = ws.check(path)
    assert (v.location, v.code) == (OUTSIDE, None)
    assert "goes through /proc or /dev/fd" in v.note


def test_magic_cwd(ws: Workspace) -> None:
    v = ws.check("file.txt", cwd="/proc/self/cwd")
    assert (v.location, v.code) == (OUTSIDE, None)
    assert "/proc" in v.note


# -- invalid input ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "code"),
    [
        (None, "invalid_path"),
        (3, "invalid_path"),
        (b"x", "invalid_path"),
        (["a"], "invalid_path"),
        ({"a": 1}, "invalid_path"),
        (Path("x"), "invalid_path"),
        ("", "empty_path"),
        ("a\x00b", "nul_byte"),
        ("/etc/passwd\x00.txt", "nul_byte"),
        ("\ud800", "invalid_path"),  # a lone surrogate cannot reach the kernel
        ("a/" * 2049, "path_too_long"),
        ("loop1", "symlink_loop"),
        ("loop1/x", "symlink_loop"),
        ("self", "symlink_loop"),
        ("sub/../self/..", "symlink_loop"),
    ],
)
def test_invalid(ws: Workspace, path: object, code: str) -> None:
    v = ws.check(path)
    assert (v.code, v.location, v.resolved, v.inside) == (code, OUTSIDE, None, False)
    assert v.given == (path if isinstance(path, str) else repr(path))
    with pytest.raises(PathError) as err:
        ws.resolve(path)  # type: ignore[arg-type]
    assert err.value.code == code


def test_symlink_limit_matches_kernel(tmp_path: Path) -> None:
    """40 follows are fine, 41 are a loop, exactly like the kernel; 100 fail fast."""
    (tmp_path / "target").write_text("t")
    for n in (40, 41, 100):
        prev = "target"
        for i in range(n):
            (tmp_path / f"c{n}_{i}").symlink_to(prev)
            prev = f"c{n}_{i}"
    w = Workspace(str(tmp_path))
    assert where(w, "c40_39") == (INSIDE, str(tmp_path / "target"))
    os.stat(tmp_path / "c40_39")
    with pytest.raises(OSError, match="Too many levels"):
        os.stat(tmp_path / "c41_40")
    assert w.check("c41_40").code == "symlink_loop"
    start = time.thread_time()  # this thread's CPU seconds: blind to load and to other threads
    assert w.check("c100_99").code == "symlink_loop"
    assert time.thread_time() - start < 0.05


def test_path_just_under_limit(ws: Workspace) -> None:
    path = "n/" * 2048  # 4096 bytes
    assert where(ws, path)[0] is INSIDE


# -- configuration ----------------------------------------------------------------------


def test_root_through_symlink(tree: tuple[Path, Path]) -> None:
    root, _ = tree
    link = root.parent / "ws_link"
    link.symlink_to(root)
    w = Workspace(str(link) + "/")
    assert w.root == str(root)
    assert where(w, str(link / "file.txt")) == (INSIDE, str(root / "file.txt"))
    assert where(w, str(root / "file.txt"))[0] is INSIDE
    assert where(w, "file.txt") == (INSIDE, str(root / "file.txt"))
    assert where(w, "../ws_link/file.txt")[0] is INSIDE
    assert where(w, "abs_out")[0] is OUTSIDE


def test_allowlist(tree: tuple[Path, Path]) -> None:
    root, out = tree
    (out / "alias").symlink_to("secret")
    w = Workspace(
        str(root), allowlist=[str(out / "alias"), str(out / "deep"), str(out / "future") + "/"]
    )
    assert w.allowlist == (str(out / "secret"), str(out / "deep"), str(out / "future"))
    assert where(w, "secret_link")[0] is ALLOWLISTED
    assert where(w, str(out / "secret"))[0] is ALLOWLISTED
    assert where(w, str(out / "secret") + "/x")[0] is OUTSIDE  # a file admits only itself
    assert where(w, "jump")[0] is ALLOWLISTED
    assert where(w, "jump/new/file")[0] is ALLOWLISTED
    assert where(w, str(out / "deepx"))[0] is OUTSIDE  # sibling prefix of an entry
    assert where(w, "jump/..")[0] is OUTSIDE
    assert where(w, str(out / "future" / "x"))[0] is ALLOWLISTED
    assert where(w, str(out / "futurex"))[0] is OUTSIDE
    v = w.check("secret_link")
    assert v.inside and v.note.endswith("but allowlisted")


def test_allowlist_entry_that_links_away(tree: tuple[Path, Path]) -> None:
    """Beneath an allowlisted directory, a symlink elsewhere is judged by its target."""
    root, out = tree
    (out / "deep" / "esc").symlink_to("/etc")
    w = Workspace(str(root), allowlist=[str(out / "deep")])
    assert where(w, str(out / "deep" / "esc" / "passwd")) == (OUTSIDE, "/etc/passwd")


def test_bad_root_and_allowlist() -> None:
    with pytest.raises(PathError) as err:
        Workspace("/tmp\x00x")
    assert err.value.code == "nul_byte"
    with pytest.raises(PathError) as err:
        Workspace("/tmp", allowlist=[""])
    assert err.value.code == "empty_path"


def test_cwd(ws: Workspace, tree: tuple[Path, Path]) -> None:
    root, out = tree
    assert where(ws, "inner.txt", cwd="sub") == (INSIDE, str(root / "sub" / "inner.txt"))
    assert where(ws, "inner.txt", cwd=str(root / "in_link"))[0] is INSIDE
    assert where(ws, "secret", cwd=str(out)) == (OUTSIDE, str(out / "secret"))
    assert where(ws, "secret", cwd="abs_out") == (OUTSIDE, str(out / "secret"))
    assert where(ws, "../ws/file.txt", cwd=str(out))[0] is INSIDE
    assert where(ws, "passwd", cwd="/etc") == (OUTSIDE, "/etc/passwd")
    assert where(ws, str(root / "file.txt"), cwd="/etc")[0] is INSIDE  # absolute: cwd unused
    assert ws.check("x", cwd="a\x00").code == "nul_byte"
    assert ws.check("x", cwd="loop1").code == "symlink_loop"


def _check_as_nobody(root: Path, path: str) -> str:
    """check() in a process that may not search root/locked (root can: so drop to nobody)."""
    if os.geteuid() != 0:
        v = Workspace(str(root)).check(path)
        return f"{v.location} {v.resolved} {v.code}"
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        try:
            os.setgid(65534)
            os.setuid(65534)
            v = Workspace(str(root)).check(path)
            os.write(write, f"{v.location} {v.resolved} {v.code}".encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        out = pipe.read().decode()
    os.waitpid(pid, 0)
    return out


def test_permission_denied_is_judged_lexically() -> None:
    """A directory the checker may not search: lstat fails with EACCES; no crash."""
    base = Path(tempfile.mkdtemp(prefix="signoff-ws-"))
    root = base / "ws"
    try:
        base.chmod(0o755)
        (root / "locked").mkdir(parents=True)
        root.chmod(0o755)
        (root / "locked" / "link").symlink_to("/etc")
        (root / "locked").chmod(0o700 if os.geteuid() == 0 else 0o000)
        got = _check_as_nobody(root, "locked/link/passwd")
        assert got.split() == ["inside", f"{root}/locked/link/passwd", "None"]
    finally:
        (root / "locked").chmod(0o700)
        shutil.rmtree(base)


def test_repr_and_location_values(ws: Workspace) -> None:
    assert [str(loc) for loc in Location] == ["inside", "allowlisted", "outside"]
    assert "dev-workspace" in repr(ws)


# -- property: never INSIDE when the kernel's view is outside --------------------------

# fmt: off
COMPONENTS = [
    "..", ".", "", "ws", "sub", "deeper", "file.txt", "inner.txt", "abs_out", "rel_out",
    "secret", "secret_link", "a", "b", "d", "in_link", "abs_in", "jump", "deep_in", "back",
    "up", "dangle_out", "dangle_in", "dangle_outdir", "loop1", "self", "missing_chain",
    "outside", "ws_evil", "deep", "missing",
]
# fmt: on


@pytest.fixture(scope="module")
def prop_tree(tmp_path_factory: pytest.TempPathFactory) -> tuple[Workspace, Path]:
    base = tmp_path_factory.mktemp("prop")
    root, _ = build_tree(base)
    return Workspace(str(root), name="p"), base


paths = st.lists(st.sampled_from(COMPONENTS), min_size=1, max_size=8).map("/".join)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(path=paths, absolute=st.booleans(), cwd=st.sampled_from([None, "sub", "../outside"]))
def test_inside_agrees_with_realpath(
    prop_tree: tuple[Workspace, Path], path: str, absolute: bool, cwd: str | None
) -> None:
    w, base = prop_tree
    if absolute:
        path = f"{base}/{path}"
    verdict = w.check(path, cwd=cwd)
    start = os.path.realpath(os.path.join(w.root, cwd or "."))
    full = os.path.join(start, path)
    try:
        kernel_view: str | None = os.path.realpath(full, strict=True)
    except OSError as exc:
        kernel_view = None if exc.errno == errno.ELOOP else os.path.realpath(full)
    if kernel_view is None:
        assert verdict.location is not INSIDE
        return
    inside = kernel_view == w.root or kernel_view.startswith(w.root + "/")
    if verdict.location is INSIDE:
        assert inside, (path, cwd, verdict, kernel_view)
    if verdict.code is None and "goes through /proc" not in verdict.note:
        assert verdict.resolved == kernel_view, (path, cwd, verdict)
