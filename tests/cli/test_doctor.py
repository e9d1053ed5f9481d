"""``signoff doctor``: every check passing and failing on real files, real OS users and a
real PostgreSQL; exit 0 when nothing fails, 1 when a check does, 2 for a usage error.

The tests run as root (the gate's user here) and use ``nobody`` as the agent's user. The
files live in a directory ``nobody`` can reach (``/tmp/…``, mode 0755), as a real setup's
``/etc/signoff`` is, so what the modes allow is what the checks must find.
"""

from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from signoff.cli import main
from signoff.cli.access import OsUser, how_changed
from signoff.cli.checks import users_apart
from signoff.policy.starter import starter_toml
from signoff.store.sqlite import SqliteStore

NOBODY = pwd.getpwnam("nobody")
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root: it chowns files "
                                "to another user")


@pytest.fixture
def home() -> Iterator[Path]:
    """A directory every user can reach: ``etc/`` (0755) for the policy, ``lib/`` (0700)
    for the database, ``ws/`` for the agent's workspace."""
    base = Path(tempfile.mkdtemp(prefix="signoff-doctor-", dir="/tmp"))
    base.chmod(0o755)
    for name, mode in (("etc", 0o755), ("lib", 0o700), ("ws", 0o755)):
        (base / name).mkdir()
        (base / name).chmod(mode)
    try:
        yield base
    finally:
        shutil.rmtree(base)


@pytest.fixture(autouse=True)
def _no_database_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SIGNOFF_DB", raising=False)


def write_policy(path: Path, root: Path, extra: str = "") -> Path:
    path.write_text(starter_toml(str(root)) + extra, "utf-8")
    path.chmod(0o644)
    return path


def make_database(path: Path) -> Path:
    SqliteStore(path).close()
    path.chmod(0o600)
    return path


@pytest.fixture
def apart(home: Path) -> tuple[Path, Path]:
    """A setup that passes: the policy in etc/, the database in lib/, both outside ws/."""
    return (write_policy(home / "etc" / "signoff.toml", home / "ws"),
            make_database(home / "lib" / "signoff.db"))


def doctor(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    code = main(["doctor", *argv, "--json"])
    body = json.loads(capsys.readouterr().out)
    return code, {check["check"]: check for check in body["checks"]} | {"": body}


def test_a_setup_run_apart_passes_every_check(apart: tuple[Path, Path],
                                              capsys: pytest.CaptureFixture[str]) -> None:
    policy, db = apart
    assert main(["doctor", "--policy", str(policy), "--db", str(db),
                 "--agent-user", "nobody"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[:2] for line in lines[:-1]] == [
        ["ok", "policy.loads"], ["ok", "policy.outside"], ["ok", "policy.permissions"],
        ["ok", "database.outside"], ["ok", "database.permissions"], ["ok", "users.separate"],
        ["ok", "review.key"]]
    assert lines[-1] == "7 ok, 0 warn, 0 fail"
    assert "'nobody' (uid 65534)" in lines[5] and "'root' (uid 0)" in lines[5]
    code, checks = doctor(capsys, "--policy", str(policy), "--db", str(db), "--agent-user",
                          str(NOBODY.pw_uid))
    assert code == 0
    assert checks[""]["ok"] is True and checks[""]["counts"] == {"ok": 7, "warn": 0, "fail": 0}
    assert checks[""]["agent_user"] == {"name": "nobody", "uid": NOBODY.pw_uid}
    assert checks[""]["gate_user"] == {"name": "root", "uid": 0}
    assert all(c["fix"] is None for c in checks[""]["checks"])


def test_the_readme_first_look_fails_inside_the_workspace(
        home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """``signoff init signoff.toml --root "$PWD"`` and the default ``signoff.db``."""
    workspace = home / "ws"
    monkeypatch.chdir(workspace)
    assert main(["init", "signoff.toml", "--root", str(workspace)]) == 0
    capsys.readouterr()
    assert main(["doctor", "--agent-user", "nobody"]) == 1
    out = capsys.readouterr().out
    assert re.search(r"^fail  policy\.outside +signoff\.toml is inside the workspace root "
                     rf"{workspace}: .* — fix: .*--policy /etc/signoff/signoff\.toml$", out,
                     re.MULTILINE), out
    assert re.search(r"^fail  database\.outside +signoff\.db is inside the workspace root .*"
                     r"--db /var/lib/signoff/signoff\.db", out, re.MULTILINE), out
    assert out.splitlines()[-1] == "5 ok, 0 warn, 2 fail"
    assert not (workspace / "signoff.db").exists()  # the doctor creates no database


def test_inside_is_judged_with_symlinks_resolved_and_never_by_prefix(
        home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    workspace = home / "ws"
    policy = write_policy(home / "etc" / "signoff.toml", workspace)
    # the database outside by name, a symlink into the workspace in fact
    make_database(workspace / "real.db")
    (home / "lib" / "signoff.db").symlink_to(workspace / "real.db")
    code, checks = doctor(capsys, "--policy", str(policy), "--db", str(home / "lib" / "signoff.db"))
    assert code == 1 and checks["database.outside"]["status"] == "fail"
    # a journal file planted as a symlink into the workspace counts as the database
    sibling = home / "ws_evil"  # /…/ws_evil is not inside /…/ws
    sibling.mkdir(mode=0o700)
    make_database(sibling / "signoff.db")
    code, checks = doctor(capsys, "--policy", str(policy), "--db", str(sibling / "signoff.db"))
    assert checks["database.outside"]["status"] == "ok", checks["database.outside"]
    (sibling / "signoff.db-journal").symlink_to(workspace / "journal")
    code, checks = doctor(capsys, "--policy", str(policy), "--db", str(sibling / "signoff.db"))
    assert code == 1 and checks["database.outside"]["status"] == "fail"
    assert "signoff.db-journal" in checks["database.outside"]["message"]


def test_a_policy_with_no_workspace_root_cannot_be_placed(
        home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    policy = home / "etc" / "bare.toml"
    policy.write_text('[policy]\nversion = "1"\n', "utf-8")
    code, checks = doctor(capsys, "--policy", str(policy), "--db", str(home / "lib" / "x.db"),
                          "--agent-user", "nobody")
    assert code == 0  # warnings only
    for name in ("policy.outside", "database.outside"):
        assert checks[name]["status"] == "warn"
        assert "names no workspace root" in checks[name]["message"]


@pytest.mark.parametrize(("text", "code"), [
    (None, "policy_unreadable"),
    ("[policy\n", "policy_invalid"),
    ("[[rules]]\nid = 'x'\neffect = 'maybe'\n", "policy_invalid"),
    ("[server]\nport = 70000\n", "invalid_port"),
])
def test_a_policy_serve_would_refuse_fails(home: Path, text: str | None, code: str,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    policy = home / "etc" / "signoff.toml"
    if text is not None:
        write_policy(policy, home / "ws", "\n" + text)
    status, checks = doctor(capsys, "--policy", str(policy), "--db", str(home / "lib" / "x.db"),
                            "--agent-user", "nobody")
    assert status == 1
    assert checks["policy.loads"]["status"] == "fail"
    assert checks["policy.loads"]["code"] == code
    assert str(policy) in checks["policy.loads"]["message"]
    for name in ("policy.outside", "database.outside", "review.key"):
        assert checks[name]["status"] == "warn", name
        assert "not checked: the policy did not load" in checks[name]["message"]
    if text is None:
        assert checks["policy.permissions"]["status"] == "warn"
        assert "signoff init" in checks["policy.loads"]["fix"]


def test_users_apart_the_same_user_and_no_user_named(
        apart: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    policy, db = apart
    base = ("--policy", str(policy), "--db", str(db))
    code, checks = doctor(capsys, *base, "--agent-user", "nobody")
    assert code == 0 and checks["users.separate"]["status"] == "ok"
    code, checks = doctor(capsys, *base, "--agent-user", "root")  # the gate's own user
    assert code == 1 and checks["users.separate"]["status"] == "fail"
    assert "both run as 'root' (uid 0)" in checks["users.separate"]["message"]
    code, checks = doctor(capsys, *base)
    assert code == 0 and checks["users.separate"]["status"] == "warn"
    assert checks["users.separate"]["fix"] == "name it: signoff doctor --agent-user NAME"
    # an agent as root, whoever the gate is, can change anything
    gate = OsUser("signoff", 990, frozenset({990}))
    check = users_apart(gate, OsUser.named("root"))
    assert check.status == "fail" and "run as root" in check.message


def test_an_unknown_agent_user_is_a_usage_error(apart: tuple[Path, Path],
                                                capsys: pytest.CaptureFixture[str]) -> None:
    policy, db = apart
    assert main(["doctor", "--policy", str(policy), "--db", str(db), "--agent-user",
                 "no-such-user-x", "--json"]) == 2
    captured = capsys.readouterr()
    assert json.loads(captured.out)["error"]["code"] == "unknown_user"
    assert "[unknown_user]" in captured.err and "no-such-user-x" in captured.err
    assert main(["doctor", "--policy", str(policy), "--db", "mysql://u:secret@db/x"]) == 2
    err = capsys.readouterr().err
    assert "[unsupported_database]" in err and "secret" not in err
    with pytest.raises(SystemExit) as usage:  # argparse
        main(["doctor", "--no-such-flag"])
    assert usage.value.code == 2


def test_policy_permissions(apart: tuple[Path, Path],
                            capsys: pytest.CaptureFixture[str]) -> None:
    policy, db = apart
    base = ("--policy", str(policy), "--db", str(db))

    def check(*extra: str) -> dict[str, Any]:
        return doctor(capsys, *base, *extra)[1]["policy.permissions"]

    policy.chmod(0o666)  # world-writable
    found = check("--agent-user", "nobody")
    assert found["status"] == "fail" and f"any user may write {policy}" in found["message"]
    policy.chmod(0o664)  # group-writable, group root: nobody is not in it
    assert check("--agent-user", "nobody")["status"] == "ok"
    found = check()  # without the agent's user: who is in the group?
    assert found["status"] == "warn" and "group 'root' may write" in found["message"]
    policy.chmod(0o644)
    os.chown(policy, NOBODY.pw_uid, -1)  # the agent's user owns it: it may chmod it
    found = check("--agent-user", "nobody")
    assert found["status"] == "fail"
    assert found["message"] == f"the agent's user 'nobody' owns {policy}"
    os.chown(policy, 0, -1)
    os.chown(policy.parent, NOBODY.pw_uid, -1)  # … or the directory it is in
    found = check("--agent-user", "nobody")
    assert found["status"] == "fail" and f"owns the directory {policy.parent}" in found["message"]
    os.chown(policy.parent, 0, -1)
    policy.parent.chmod(0o777)  # anyone may replace it
    found = check("--agent-user", "nobody")
    assert found["status"] == "fail"
    assert f"may write the directory {policy.parent} (and replace signoff.toml)" in \
        found["message"]
    policy.parent.chmod(0o755)
    assert check("--agent-user", "nobody")["status"] == "ok"
    code, _ = doctor(capsys, *base, "--agent-user", "nobody")
    assert code == 0


def test_an_ancestor_the_agent_may_write_lets_it_swap_the_tree(home: Path) -> None:
    """Renaming ``etc`` away and making a new one replaces the policy in it."""
    policy = write_policy(home / "etc" / "signoff.toml", home / "ws")
    agent = OsUser.named("nobody")
    assert how_changed(agent, policy) is None
    home.chmod(0o777)
    assert how_changed(agent, policy) == f"may write the directory {home} (and replace etc)"
    home.chmod(0o1777)  # sticky: only its own entries, and etc is root's
    assert how_changed(agent, policy) is None
    home.chmod(0o755)  # and /tmp above it is sticky, home root's
    assert how_changed(agent, policy) is None


def test_database_permissions(apart: tuple[Path, Path],
                              capsys: pytest.CaptureFixture[str]) -> None:
    policy, db = apart
    base = ("--policy", str(policy), "--db", str(db))

    def check(*extra: str) -> dict[str, Any]:
        return doctor(capsys, *base, *extra)[1]["database.permissions"]

    found = check("--agent-user", "nobody")
    assert found["status"] == "ok"
    assert found["message"] == (f"neither 'nobody' nor any other user may change {db} and "
                                "its journal files")
    db.parent.chmod(0o755)  # reachable, and the file readable: the requests are a secret
    db.chmod(0o644)
    found = check("--agent-user", "nobody")
    assert found["status"] == "warn"
    assert found["message"] == (f"the agent's user 'nobody' may read {db} (the requests' "
                                "arguments, the audit)")
    assert found["fix"] == f"chmod 0700 {db.parent}"
    assert check()["status"] == "warn"  # any user may read it
    db.chmod(0o600)
    assert check("--agent-user", "nobody")["status"] == "ok"
    # a journal file the agent's user owns: it writes the database's next state
    wal = Path(f"{db}-wal")
    wal.write_bytes(b"")
    os.chown(wal, NOBODY.pw_uid, NOBODY.pw_gid)
    found = check("--agent-user", "nobody")
    assert found["status"] == "fail" and found["message"] == f"the agent's user 'nobody' owns {wal}"
    wal.unlink()
    # a world-writable directory, even a sticky one: a missing journal can be planted
    db.parent.chmod(0o1777)
    found = check("--agent-user", "nobody")
    assert found["status"] == "fail"
    assert f"may write the directory {db.parent} (and create signoff.db-wal)" in found["message"]
    code, _ = doctor(capsys, *base, "--agent-user", "nobody")
    assert code == 1
    db.parent.chmod(0o700)
    # not created yet: the directory is what counts
    fresh = db.parent / "new.db"
    found = doctor(capsys, "--policy", str(policy), "--db", str(fresh))[1]["database.permissions"]
    assert found["status"] == "ok" and found["message"].endswith("(not created yet)")
    assert not fresh.exists()


def test_the_reviewer_key(home: Path, capsys: pytest.CaptureFixture[str],
                          monkeypatch: pytest.MonkeyPatch) -> None:
    policy = write_policy(home / "etc" / "signoff.toml", home / "ws",
                          '\n[review]\nreviewer = "openai"\nmodel = "gpt-test"\n'
                          'api_key_env = "SIGNOFF_DOCTOR_TEST_KEY"\n')
    base = ("--policy", str(policy), "--db", str(home / "lib" / "x.db"), "--agent-user",
            "nobody")
    monkeypatch.delenv("SIGNOFF_DOCTOR_TEST_KEY", raising=False)
    code, checks = doctor(capsys, *base)
    assert code == 1
    found = checks["review.key"]
    assert found["status"] == "fail" and found["code"] == "review_no_key"
    assert "$SIGNOFF_DOCTOR_TEST_KEY" in found["message"]
    assert checks["policy.loads"]["status"] == "ok"  # the policy itself loads
    monkeypatch.setenv("SIGNOFF_DOCTOR_TEST_KEY", "sk-never-printed")
    code, checks = doctor(capsys, *base)
    assert code == 0 and checks["review.key"]["status"] == "ok"
    assert "gpt-test" in checks["review.key"]["message"]
    assert "sk-never-printed" not in json.dumps(checks[""])


def test_postgresql_reachable_migrated_or_not(postgres_database: str, home: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    policy = write_policy(home / "etc" / "signoff.toml", home / "ws")
    base = ("--policy", str(policy), "--agent-user", "nobody")
    code, checks = doctor(capsys, *base, "--db", postgres_database)
    assert code == 1
    found = checks["database.reachable"]
    assert found["status"] == "fail" and found["code"] == "schema_outdated"
    assert found["fix"] == f"signoff db migrate --db '{postgres_database}'"
    assert "database.outside" not in checks and "database.permissions" not in checks
    assert main(["db", "migrate", "--db", postgres_database]) == 0
    capsys.readouterr()
    code, checks = doctor(capsys, *base, "--db", postgres_database)
    assert code == 0 and checks["database.reachable"]["status"] == "ok"
    assert "answers, schema version" in checks["database.reachable"]["message"]


def test_postgresql_unreachable_fails_fast(home: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    policy = write_policy(home / "etc" / "signoff.toml", home / "ws")
    with socket.socket() as probe:  # a loopback port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = time.monotonic()
    code, checks = doctor(capsys, "--policy", str(policy), "--db",
                          f"postgresql://postgres:pw@127.0.0.1:{port}/postgres")
    assert time.monotonic() - started < 10
    assert code == 1
    found = checks["database.reachable"]
    assert found["status"] == "fail" and found["code"] == "store_unavailable"
    assert f"127.0.0.1:{port}" in found["message"] and "pw" not in found["message"]
    assert "\n" not in found["message"] and "\t" not in found["message"]


def test_the_installed_command(apart: tuple[Path, Path]) -> None:
    """Exit statuses through the real entry point, in a real process."""
    policy, db = apart
    exe = Path(sys.executable).with_name("signoff")
    args = [str(exe), "doctor", "--policy", str(policy), "--db", str(db)]
    env = {k: v for k, v in os.environ.items() if k != "SIGNOFF_DB"}
    passed = subprocess.run([*args, "--agent-user", "nobody"], capture_output=True, text=True,
                            timeout=60, check=False, env=env)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    failed = subprocess.run([*args, "--agent-user", "root"], capture_output=True, text=True,
                            timeout=60, check=False, env=env)
    assert failed.returncode == 1 and "fail  users.separate" in failed.stdout
    assert failed.stderr == ""
