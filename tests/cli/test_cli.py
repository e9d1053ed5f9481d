"""The signoff command: every command has help, verdicts exit 0, bad input exits 2 with a code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from signoff.cli import build_parser, main

COMMANDS = ["init", "check", "demo", "requests", "users", "audit", "recover", "db", "serve",
            "mcp-proxy", "webhooks", "doctor", "keys", "receipts", "hook", "insights"]
LEAVES = [["requests", "list"], ["requests", "show"], ["requests", "approve"],
          ["requests", "reject"], ["users", "add"], ["users", "list"], ["users", "disable"],
          ["users", "enable"], ["users", "remove"], ["users", "rotate"], ["users", "roles"],
          ["users", "login"], ["users", "sessions"], ["users", "revoke"], ["audit", "verify"],
          ["audit", "export"], ["recover"], ["db", "migrate"], ["init"], ["check"], ["demo"],
          ["mcp-proxy"], ["webhooks", "list"], ["webhooks", "add"], ["webhooks", "remove"],
          ["webhooks", "deliveries"], ["webhooks", "replay"], ["insights", "suggest"],
          ["serve"], ["doctor"], ["keys", "list"], ["keys", "rotate"],
          ["receipts", "verify"], ["receipts", "show"], ["hook", "claude-code"],
          ["hook", "gemini"], ["hook", "install"], ["insights"]]


@pytest.fixture
def policy(tmp_path: Path) -> Path:
    target = tmp_path / "signoff.toml"
    (tmp_path / "ws").mkdir()
    assert main(["init", str(target), "--root", str(tmp_path / "ws")]) == 0
    return target


def test_every_command_has_help(capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser()
    actions = [a for a in parser._actions if a.dest == "==SUPPRESS==" and a.choices]
    listed = set(actions[0].choices or {}) if actions else set()
    assert listed == set(COMMANDS)
    for command in LEAVES:
        with pytest.raises(SystemExit) as info:
            main([*command, "--help"])
        assert info.value.code == 0
        out = capsys.readouterr().out
        assert out.startswith(f"usage: signoff {' '.join(command)}")
        assert "--json" in out


def test_every_command_is_documented() -> None:
    doc = (Path(__file__).parents[2] / "docs" / "cli.md").read_text("utf-8")
    for command in LEAVES:
        assert f"## signoff {' '.join(command)}" in doc, command


def test_human_explanation(policy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--policy", str(policy), "--tool", "execute",
                 "--args", '{"command": "sudo rm -rf /"}']) == 0
    out = capsys.readouterr().out
    assert out.startswith("DENY  execute")
    assert "[no-rm]" in out and "because:" in out and "risk critical" in out


def test_json_verdict(policy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--policy", str(policy), "--tool", "read_file",
                 "--args", '{"path": "/etc/passwd"}', "--interaction", "scheduled",
                 "--json"]) == 0
    verdict = json.loads(capsys.readouterr().out)
    assert verdict["effect"] == "blocked"
    assert {"effect", "reasons", "risk", "source", "policy_version", "decision_id"} <= set(verdict)


@pytest.mark.parametrize(("argv", "code"), [
    (["--tool", "x", "--args", "{"], "invalid_json"),
    (["--tool", "x", "--args", "[1]"], "not_an_object"),
    (["--tool", "x", "--args", '{"a":1,"a":2}'], "duplicate_key"),
    (["--tool", "x", "--interaction", "robot"], "unknown_interaction_mode"),
    (["--tool", "x", "--memory", "/nonexistent.json"], "memory_invalid"),
])
def test_bad_input_exits_2(policy: Path, argv: list[str], code: str,
                           capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--policy", str(policy), *argv, "--json"]) == 2
    captured = capsys.readouterr()
    assert json.loads(captured.out)["error"]["code"] == code
    assert f"[{code}]" in captured.err


def test_bad_policy_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[[rules]]\nid = 'x'\neffect = 'maybe'\n")
    assert main(["check", "--policy", str(bad), "--tool", "x"]) == 2
    err = capsys.readouterr().err
    assert "policy_invalid" in err and "bad.toml" in err and "rules[0] (id 'x')" in err
    assert "field 'effect'" in err


def test_init_refuses_to_overwrite(policy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", str(policy)]) == 2
    assert "file_exists" in capsys.readouterr().err
    assert main(["init", str(policy), "--force"]) == 0


def test_init_preset_deepagents(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "deep.toml"
    root = tmp_path / "ws"
    root.mkdir()
    assert main(["init", str(target), "--root", str(root), "--preset", "deepagents",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["preset"] == "deepagents"

    def effect(tool: str, args: str) -> str:
        assert main(["check", "--policy", str(target), "--tool", tool, "--args", args,
                     "--json"]) == 0
        return str(json.loads(capsys.readouterr().out)["effect"])

    # deepagents' virtual paths: "/notes.md" is the root's notes.md, "/../x" is outside.
    assert effect("read_file", '{"file_path": "/notes.md"}') == "allow"
    assert effect("write_file", '{"file_path": "/out.md", "content": "x"}') == "allow"
    assert effect("read_file", '{"file_path": "/../../etc/passwd"}') == "ask"
    assert effect("glob", '{"pattern": "**/*.py", "path": null}') == "allow"
    assert effect("glob", '{"pattern": "/../*"}') == "ask"
    assert effect("read_file", '{"file_path": "/.env"}') == "ask"  # the env-files rule
    assert effect("delete", '{"file_path": "/notes.md"}') == "ask"  # gated
    assert effect("execute", '{"command": "rm -rf /"}') == "deny"
    assert effect("execute", '{"command": "ls -la"}') == "allow"
    with pytest.raises(SystemExit) as refused:  # argparse: a usage error, exit 2
        main(["init", str(tmp_path / "x.toml"), "--preset", "nope"])
    assert refused.value.code == 2 and not (tmp_path / "x.toml").exists()


def test_console_script_end_to_end(policy: Path) -> None:
    """The installed entry point, in a real process."""
    exe = Path(sys.executable).with_name("signoff")
    assert exe.exists(), "install with pip install -e '.[dev]'"
    result = subprocess.run(
        [str(exe), "check", "--policy", str(policy), "--tool", "execute", "--args",
         '{"command": "ls -la && echo ok"}', "--json"],
        capture_output=True, text=True, timeout=60, env={**os.environ, "NO_COLOR": "1"},
        check=False)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["effect"] == "allow"
    bad = subprocess.run([str(exe), "check", "--policy", str(policy), "--tool", "x",
                          "--interaction", "nope"], capture_output=True, text=True, timeout=60,
                         check=False)
    assert bad.returncode == 2 and "unknown_interaction_mode" in bad.stderr
