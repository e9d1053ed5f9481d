"""``signoff init`` and ``signoff serve`` say, in one line on stderr with the fix, when the
policy or the database lies inside the workspace root — and say nothing when neither does.
A warning, never an error: the README's first look keeps working."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from signoff.cli import main
from signoff.cli.boundary import inside, warn_serve

EXE = Path(sys.executable).with_name("signoff")


@pytest.fixture(autouse=True)
def _no_database_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SIGNOFF_DB", raising=False)


def test_init_inside_the_workspace_warns_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)  # the README: signoff init signoff.toml --root "$PWD"
    assert main(["init", "signoff.toml", "--root", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("wrote signoff.toml")
    assert captured.err.splitlines() == [
        f"signoff: warning: signoff.toml and signoff.db are inside the workspace root "
        f"{tmp_path}: an agent's tools can rewrite them; move them outside (signoff init "
        f"/etc/signoff/signoff.toml --root {tmp_path}, signoff serve --db "
        "/var/lib/signoff/signoff.db) — see docs/security.md"]


def test_init_outside_the_workspace_says_nothing(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    monkeypatch.chdir(tmp_path)
    assert main(["init", "signoff.toml", "--root", str(workspace), "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["root"] == str(workspace)
    assert captured.err == ""
    # only the policy inside; a PostgreSQL database is no file in any workspace
    monkeypatch.setenv("SIGNOFF_DB", "postgresql://postgres@127.0.0.1:5432/x")
    assert main(["init", str(workspace / "p.toml"), "--root", str(workspace)]) == 0
    err = capsys.readouterr().err
    assert err.startswith(f"signoff: warning: {workspace / 'p.toml'} is inside the workspace "
                          f"root {workspace}: an agent's tools can rewrite it; move it outside")
    assert "signoff.db" not in err and len(err.splitlines()) == 1


def test_inside_resolves_symlinks_and_is_not_a_prefix(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (tmp_path / "link").symlink_to(workspace)
    assert inside(tmp_path / "link" / "signoff.db", workspace)
    assert inside(workspace, workspace)
    assert not inside(tmp_path / "ws_evil" / "signoff.db", workspace)
    assert warn_serve(str(workspace), str(tmp_path / "p.toml"),
                      "postgresql://postgres@127.0.0.1/x") is None


def _serve_stderr(cwd: Path, *args: str) -> str:
    """Start the real server, wait for its start-up line, stop it, return its stderr."""
    with subprocess.Popen([str(EXE), "serve", "--port", "0", "--json", *args], cwd=cwd,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        try:
            assert proc.stdout is not None
            start = proc.stdout.readline()
            assert json.loads(start)["url"].startswith("http://127.0.0.1:"), start
        finally:
            proc.terminate()
            _, err = proc.communicate(timeout=30)
    return err


@pytest.mark.slow
def test_serve_warns_when_its_files_are_inside_and_not_otherwise(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    inner = workspace / "signoff.toml"
    outer = tmp_path / "signoff.toml"
    for policy in (inner, outer):
        assert main(["init", str(policy), "--root", str(workspace)]) == 0
    err = _serve_stderr(tmp_path, "--policy", str(inner), "--db", str(workspace / "s.db"))
    warnings = [line for line in err.splitlines() if line.startswith("signoff: warning:")]
    assert warnings == [
        f"signoff: warning: {inner} and {workspace / 's.db'} are inside the workspace root "
        f"{workspace}: an agent's tools can rewrite them; move them outside (--policy "
        "/etc/signoff/signoff.toml, --db /var/lib/signoff/signoff.db) — see docs/security.md"]
    err = _serve_stderr(tmp_path, "--policy", str(outer), "--db", str(workspace / "t.db"))
    warnings = [line for line in err.splitlines() if line.startswith("signoff: warning:")]
    assert len(warnings) == 1 and str(inner) not in warnings[0]
    assert f"{workspace / 't.db'} is inside" in warnings[0]
    assert "(--db /var/lib/signoff/signoff.db)" in warnings[0]
    err = _serve_stderr(tmp_path, "--policy", str(outer), "--db", str(tmp_path / "u.db"))
    assert "signoff: warning:" not in err, err
