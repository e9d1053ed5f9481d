"""The first commands a new user types: ``init`` refuses a root that is not there (unless
told to create it), and ``check`` without a policy says how to write one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from signoff.cli import main


def test_init_refuses_a_missing_root(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "signoff.toml"
    missing = tmp_path / "no" / "such"
    assert main(["init", str(target), "--root", str(missing)]) == 2
    assert capsys.readouterr().err == (
        f"signoff: error [root_missing]: --root {missing} does not exist: create it first, "
        "or add --create-root\n")
    assert not target.exists() and not missing.exists()
    assert main(["init", str(target), "--root", str(missing), "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "root_missing"


def test_init_creates_the_root_when_asked(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "signoff.toml"
    missing = tmp_path / "new" / "ws"
    assert main(["init", str(target), "--root", str(missing), "--create-root", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["root"] == str(missing)
    assert missing.is_dir() and f'root = "{missing}"' in target.read_text("utf-8")


def test_init_refuses_a_root_that_is_a_file(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "file").write_text("x")
    assert main(["init", str(tmp_path / "p.toml"), "--root", str(tmp_path / "file"),
                 "--create-root"]) == 2
    assert "[root_not_a_directory]" in capsys.readouterr().err
    assert not (tmp_path / "p.toml").exists()


def test_check_without_a_policy_suggests_init(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["check", "--tool", "execute"]) == 2
    assert capsys.readouterr().err == (
        "signoff: error [policy_unreadable]: signoff.toml: cannot read policy: no such file: "
        "write one with `signoff init signoff.toml` (or name another with --policy)\n")
    assert main(["check", "--tool", "execute", "--policy", "my policy.toml", "--json"]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["code"] == "policy_unreadable"
    assert "`signoff init 'my policy.toml'`" in error["message"]
