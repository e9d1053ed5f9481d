"""The gate protects itself: its policy file, its database (and -wal/-shm/-journal), the
files the server's configuration names, and the agent harnesses' settings are never
written, renamed or deleted without a human — by a write tool or by any shell spelling, in
every review mode, under the starter, deepagents and MCP-filesystem presets and under a
policy that allows every command. Their paths come from the running configuration: the
policy lives at ``rules/agent-policy.toml`` and the database at
``state/approvals.sqlite3``, so nothing here is found by a ``signoff.*`` name."""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from signoff import Policy, PolicyError, SqliteStore, ToolCall
from signoff.cli import main
from signoff.kernel.gate import Gate
from signoff.model import Effect, Grant, GrantScope, Risk, Verdict
from signoff.notify.config import load_notify
from signoff.policy.guarded import database_path, guard_database
from signoff.policy.harnesses import HARNESSES
from signoff.policy.memory import Memory
from signoff.policy.modes import trusted_context
from signoff.policy.starter import starter_toml
from signoff.server.app import create_app

MODES = ("manual", "auto", "full")
POLICY = "rules/agent-policy.toml"
DATABASE = "state/approvals.sqlite3"
CA_FILE = "certs/smtp-ca.pem"
NOTIFY = '\n[notify.smtp]\nhost = "mail.example"\nca_file = "certs/smtp-ca.pem"\n'
# A policy that allows every command and every write: only the gate's own protection
# stands between an agent and its files.
ALLOW_ALL = """
[policy]
gated = []
[workspace]
root = "{root}"
[tools.execute]
shell = "command"
[tools.write_file]
paths = ["path"]
writes = true
[[rules]]
id = "everything"
effect = "allow"
tool = "execute"
command = "*"
writes = ["**"]
[[rules]]
id = "any-write"
effect = "allow"
tool = "write_file"
"""
# A file for each harness pattern (a glob pattern by an example it names).
EXAMPLES = {".claude/hooks/**": ".claude/hooks/pre-tool.sh",
            "*.code-workspace": "team.code-workspace",
            ".codex/*.config.toml": ".codex/deep.config.toml",
            ".codex/rules/**": ".codex/rules/default.rules",
            ".continue/mcpServers/**": ".continue/mcpServers/fs.yaml",
            "saoudrizwan.claude-dev/settings/**":
                ".config/Code/User/globalStorage/saoudrizwan.claude-dev/settings/"
                "cline_mcp_settings.json",
            ".clinerules/hooks/**": ".clinerules/hooks/PreToolUse"}
HARNESS_FILES = sorted({EXAMPLES.get(p, p.lstrip("/")) for files in HARNESSES.values()
                        for p in files})
GATE_FILES = [POLICY, DATABASE, DATABASE + "-wal", DATABASE + "-shm", DATABASE + "-journal",
              CA_FILE]
PROTECTED = GATE_FILES + HARNESS_FILES

# Each shell spelling of a write, rename or delete of {p}; {d} is its directory, {b} its
# name. The starter's no-rm rule denies the ones that run rm.
SPELLINGS = [
    "echo x > {p}", "echo x >> {p}", "printf x 1>{p}", "cp notes.txt {p}", "cp -f notes.txt {p}",
    "mv notes.txt {p}", "mv {p} {p}.old", "mv -t /tmp {p}", "ln -sf notes.txt {p}",
    "ln {p} alias", "install notes.txt {p}", "tee {p} < notes.txt", "echo x | tee -a {p}",
    "dd if=notes.txt of={p}", "sed -i s/ask/allow/ {p}", "sed -i.bak -e s/a/b/ {p}",
    "perl -pi -e s/ask/allow/ {p}", "truncate -s0 {p}", "touch {p}", "chmod 666 {p}",
    "rm {p}", "rm -f {p}", "unlink {p}", "shred -u {p}",
    """python3 -c "open('{p}', 'w').write('x')" """.strip(),
    "git checkout -- {p}", "git restore {p}", "sqlite3 {p} 'UPDATE requests SET status=1'",
    "cp /tmp/{b} {d}/", "awk -i inplace 1 {p}", "timeout 5 tee {p}",
    "echo {p} | xargs rm", "cat notes.txt > ./{p}",
]
DENIED_BY_NO_RM = ("rm ", "xargs rm")


@dataclass
class Setup:
    """A workspace with the gate's files where the running configuration puts them."""

    root: Path
    policy_path: Path
    gate: Gate

    def check(self, tool: str, args: dict[str, Any], mode: str, **context: Any) -> Verdict:
        return self.gate.policy.evaluate(
            ToolCall(id="call-1", name=tool, args=args),
            trusted_context(review_mode=mode, **context))


def _workspace(tmp_path: Path, text: str, *, chdir: Callable[[Path], None]) -> Setup:
    root = tmp_path / "ws"
    for name in ("rules", "state", "certs", "src"):
        (root / name).mkdir(parents=True)
    (root / "notes.txt").write_text("notes\n")
    (root / "src" / "app.py").write_text("print('hi')\n")
    (root / CA_FILE).write_text("-----BEGIN CERTIFICATE-----\n")
    policy_path = root / POLICY
    policy_path.write_text(text.replace("__ROOT__", str(root)) + NOTIFY)
    chdir(root)  # the server's relative paths (ca_file) are the process's
    store = SqliteStore(str(root / DATABASE))
    gate = Gate(Policy.load(policy_path), store)
    create_app(gate, notify=load_notify(str(policy_path)))  # registers [notify] ca_file
    return Setup(root=root, policy_path=policy_path, gate=gate)


@pytest.fixture
def make(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], Setup]]:
    made: list[Setup] = []

    def build(preset: str) -> Setup:
        if preset == "allow-all":
            text = ALLOW_ALL.replace("{root}", "__ROOT__")
        else:
            text = starter_toml("__ROOT__", preset)
        setup = _workspace(tmp_path / preset, text, chdir=monkeypatch.chdir)
        made.append(setup)
        return setup

    yield build
    for setup in made:
        setup.gate.close()


def _is_protected_ask(verdict: Verdict) -> bool:
    return verdict.effect is Effect.ASK and verdict.mandatory and \
        "protected_path" in {r.code for r in verdict.reasons}


def _judge(verdict: Verdict, *, denied_ok: bool) -> str | None:
    """Why ``verdict`` is not what a protected write must get, or ``None``."""
    if verdict.effect is Effect.DENY and denied_ok:
        return None
    if _is_protected_ask(verdict):
        return None
    return f"{verdict.effect.value}/{verdict.code} {[r.code for r in verdict.reasons]}"


def _shell(path: str) -> dict[str, str]:
    directory, name = os.path.split(path)
    return {"p": shlex.quote(path), "d": shlex.quote(directory or "."), "b": shlex.quote(name)}


@pytest.mark.parametrize("preset", ["default", "deepagents", "allow-all"])
@pytest.mark.parametrize("mode", MODES)
def test_every_shell_spelling_of_every_protected_path_is_a_mandatory_ask(
        make: Callable[[str], Setup], preset: str, mode: str) -> None:
    setup = make(preset)
    failures = []
    for path in PROTECTED:
        for spelling in SPELLINGS:
            if "xargs" in spelling and " " in path:
                continue  # xargs splits the name on its blanks: another file
            command = spelling.format(**_shell(path))
            verdict = setup.check("execute", {"command": command}, mode)
            denied_ok = preset != "allow-all" and any(d in spelling for d in DENIED_BY_NO_RM)
            if preset != "allow-all" and denied_ok and verdict.effect is not Effect.DENY:
                failures.append(f"{command}: not denied by no-rm: {verdict.effect.value}")
                continue
            why = _judge(verdict, denied_ok=denied_ok)
            if why is not None:
                failures.append(f"{command}: {why}")
    assert not failures, f"{len(failures)} protected writes not asked:\n" + "\n".join(
        failures[:40])


@pytest.mark.parametrize("mode", MODES)
def test_a_command_allowed_outright_still_asks_for_a_protected_path(
        make: Callable[[str], Setup], mode: str) -> None:
    """Under ``command = "*"`` the same lines on an ordinary file are allowed: only the
    protection asks."""
    setup = make("allow-all")
    for spelling in ("echo x > {p}", "sed -i s/a/b/ {p}", "cp notes.txt {p}", "rm {p}",
                     "mv {p} x.old"):
        ordinary = setup.check("execute", {"command": spelling.format(p="src/app.py")}, mode)
        assert ordinary.effect is Effect.ALLOW, (spelling, ordinary.reasons)
        guarded = setup.check("execute", {"command": spelling.format(p=POLICY)}, mode)
        assert _is_protected_ask(guarded), (spelling, guarded.reasons)
        assert guarded.risk is Risk.CRITICAL


WRITE_TOOLS: dict[str, list[Callable[[str], tuple[str, dict[str, Any]]]]] = {
    "default": [lambda p: ("write_file", {"path": p, "content": "x"})],
    "allow-all": [lambda p: ("write_file", {"path": p, "content": "x"})],
    "deepagents": [
        lambda p: ("write_file", {"file_path": "/" + p, "content": "x"}),
        lambda p: ("edit_file", {"file_path": "/" + p, "old_string": "a", "new_string": "b"}),
        lambda p: ("delete", {"file_path": "/" + p}),
    ],
    "mcp-filesystem": [
        lambda p: ("fs__write_file", {"path": p, "content": "x"}),
        lambda p: ("fs__edit_file", {"path": p, "edits": [{"oldText": "a", "newText": "b"}]}),
        lambda p: ("fs__move_file", {"source": p, "destination": "moved.txt"}),
        lambda p: ("fs__move_file", {"source": "notes.txt", "destination": p}),
        lambda p: ("fs__create_directory", {"path": p}),
    ],
}


@pytest.mark.parametrize("preset", sorted(WRITE_TOOLS))
@pytest.mark.parametrize("mode", MODES)
def test_every_write_tool_on_every_protected_path_is_a_mandatory_ask(
        make: Callable[[str], Setup], preset: str, mode: str) -> None:
    setup = make(preset)
    failures = []
    for path in PROTECTED:
        for build in WRITE_TOOLS[preset]:
            tool, args = build(path)
            for given in (args, _absolute(setup, args)):
                why = _judge(setup.check(tool, given, mode), denied_ok=False)
                if why is not None:
                    failures.append(f"{tool} {given}: {why}")
    assert not failures, "\n".join(failures[:40])


def _absolute(setup: Setup, args: dict[str, Any]) -> dict[str, Any]:
    """The same call with real absolute paths (what a non-virtual tool is handed)."""
    out = dict(args)
    for key in ("path", "file_path", "source", "destination"):
        if key in out:
            value = str(out[key]).lstrip("/")
            out[key] = str(setup.root / value) if key != "file_path" else "/" + value
    return out


@pytest.mark.parametrize("mode", MODES)
def test_a_grant_never_covers_a_protected_path(make: Callable[[str], Setup],
                                               mode: str) -> None:
    setup = make("default")
    memory = Memory()
    memory.add_grant(Grant(id="g1", scope=GrantScope.THREAD, tool="execute",
                           args={"command": "*"}, thread_id="t1"))
    memory.add_grant(Grant(id="g2", scope=GrantScope.THREAD, tool="write_file",
                           thread_id="t1"))
    policy = Policy(setup.gate.policy.config, memory=memory)
    for tool, args in (("execute", {"command": f"echo x > {POLICY}"}),
                       ("write_file", {"path": DATABASE, "content": "x"})):
        verdict = policy.evaluate(ToolCall(id="c", name=tool, args=args),
                                  trusted_context(review_mode=mode, thread_id="t1"))
        assert _is_protected_ask(verdict), verdict.reasons
        assert verdict.grant_id is None
    ordinary = policy.evaluate(ToolCall(id="c", name="execute",
                                        args={"command": "echo x > notes.txt"}),
                               trusted_context(review_mode="manual", thread_id="t1"))
    assert ordinary.effect is Effect.ALLOW and ordinary.grant_id == "g1"


def test_always_ask_cannot_switch_it_off(tmp_path: Path) -> None:
    root = tmp_path
    (root / "agent.toml").write_text(
        f'[policy]\nalways_ask = []\n[workspace]\nroot = "{root}"\n'
        '[tools.write_file]\npaths = ["path"]\nwrites = true\n')
    policy = Policy.load(root / "agent.toml")
    verdict = policy.evaluate(ToolCall(id="c", name="write_file",
                                       args={"path": "agent.toml", "content": "x"}),
                              trusted_context(review_mode="full"))
    assert _is_protected_ask(verdict)


def test_an_unattended_run_is_blocked(make: Callable[[str], Setup]) -> None:
    setup = make("default")
    (setup.root / "src" / "unattended.toml").write_text("")
    config = setup.gate.policy.config
    policy = Policy(config.__class__(**{**{f: getattr(config, f) for f in
                                            config.__dataclass_fields__},
                                        "unattended_asks": "allow"}))
    verdict = policy.evaluate(
        ToolCall(id="c", name="execute", args={"command": f"sed -i s/a/b/ {POLICY}"}),
        trusted_context(review_mode="full", interaction_mode="autonomous"))
    assert verdict.effect is Effect.BLOCKED and verdict.mandatory


# ---- reads, and what is not protected -------------------------------------------------------

DB_READS = ["cat {p}", "sqlite3 {p} .dump", "head -c 100 {p}", "grep -a token {p}",
            "cp {p} /tmp/copy.db", "python3 -c \"print(open('{p}', 'rb').read())\""]


@pytest.mark.parametrize("preset", ["default", "deepagents", "allow-all"])
@pytest.mark.parametrize("mode", MODES)
def test_reading_the_database_is_a_secret_read(make: Callable[[str], Setup], preset: str,
                                               mode: str) -> None:
    setup = make(preset)
    for path in (DATABASE, DATABASE + "-wal", DATABASE + "-journal"):
        for spelling in DB_READS:
            verdict = setup.check("execute", {"command": spelling.format(p=path)}, mode)
            assert verdict.effect is Effect.ASK and verdict.mandatory, (spelling, path)
            assert "secret_read" in {r.code for r in verdict.reasons}, (spelling, path)
    read_tool = {"deepagents": ("read_file", {"file_path": "/" + DATABASE}),
                 "default": ("read_file", {"path": DATABASE})}.get(preset)
    if read_tool is not None:
        verdict = setup.check(*read_tool, mode)
        assert verdict.effect is Effect.ASK and verdict.code == "secret_read"


@pytest.mark.parametrize("mode", MODES)
def test_the_mcp_preset_reads_the_database_only_with_a_human(make: Callable[[str], Setup],
                                                             mode: str) -> None:
    setup = make("mcp-filesystem")
    for tool, args in (("fs__read_text_file", {"path": DATABASE}),
                       ("fs__read_multiple_files", {"paths": ["notes.txt", DATABASE]}),
                       ("fs__read_media_file", {"path": str(setup.root / DATABASE)})):
        verdict = setup.check(tool, args, mode)
        assert verdict.effect is Effect.ASK and verdict.code == "secret_read", (tool, args)
    policy = setup.check("fs__read_text_file", {"path": POLICY}, mode)
    assert policy.effect is Effect.ALLOW


@pytest.mark.parametrize("preset", ["default", "deepagents"])
@pytest.mark.parametrize("mode", MODES)
def test_the_policy_file_stays_readable(make: Callable[[str], Setup], preset: str,
                                        mode: str) -> None:
    setup = make(preset)
    for command in (f"cat {POLICY}", f"grep -n ask {POLICY}", f"sed -n 1,20p {POLICY}",
                    f"head {POLICY}", f"diff {POLICY} notes.txt", f"wc -l {POLICY}",
                    "ls -la rules state"):
        verdict = setup.check("execute", {"command": command}, mode)
        assert verdict.effect is Effect.ALLOW, (command, verdict.reasons)
    read = ("read_file", {"file_path": "/" + POLICY}) if preset == "deepagents" else \
        ("read_file", {"path": POLICY})
    assert setup.check(*read, mode).effect is Effect.ALLOW


@pytest.mark.parametrize("mode", MODES)
def test_files_beside_the_protected_ones_stay_as_they_were(make: Callable[[str], Setup],
                                                           mode: str) -> None:
    """No noise: writes next to the policy and the database, files that only share part
    of a name, and a file called signoff.toml that is not the gate's policy."""
    setup = make("default")
    for target in ("rules/other.toml", "state/notes.txt", "signoff.toml", "signoff.db",
                   "approvals.sqlite3.txt", "src/settings.json", "docs/mcp.md",
                   "claude/settings.json", ".claude/CLAUDE.md", "src/.vscode.md"):
        for spelling in ("echo x > {p}", "sed -i s/a/b/ {p}", "touch {p}", "cp notes.txt {p}"):
            verdict = setup.check("execute", {"command": spelling.format(p=target)}, mode)
            codes = {r.code for r in verdict.reasons}
            assert "protected_path" not in codes, (spelling, target, verdict.reasons)
            assert not verdict.mandatory, (spelling, target, verdict.reasons)
            if mode == "full":
                assert verdict.effect is Effect.ALLOW, (spelling, target, verdict.reasons)
        write = setup.check("write_file", {"path": target, "content": "x"}, mode)
        assert "protected_path" not in {r.code for r in write.reasons}, target
    for command in ("git status", "ls -la", "cat notes.txt", "mkdir -p build",
                    "cp notes.txt src/", "cp notes.txt /dev/null"):
        verdict = setup.check("execute", {"command": command}, mode)
        assert "protected_path" not in {r.code for r in verdict.reasons}, command


@pytest.mark.parametrize("mode", MODES)
def test_a_directory_that_holds_a_protected_file(make: Callable[[str], Setup],
                                                 mode: str) -> None:
    """Removing, moving or rewriting a directory changes what it holds; copying into it
    changes the file of the source's name."""
    setup = make("allow-all")
    (setup.root / ".claude").mkdir()
    (setup.root / ".claude" / "settings.json").write_text("{}")
    for command in ("rm -rf state", "mv state /tmp/state", "chmod -R 777 rules",
                    "rm -rf .claude", "mv .claude x", "find state -delete",
                    "cp -r /tmp/evil/. .claude/", "cp -r /tmp/x/rules .",
                    "cp /tmp/agent-policy.toml rules/",
                    "mv /tmp/approvals.sqlite3 state", "git checkout .",
                    "tar xf /tmp/x.tar", "find . -name '*.toml' -exec sed -i s/a/b/ {} +",
                    "find . -name 'approvals*' -delete", "find state -delete",
                    "find . -maxdepth 2 -name '*.json' -exec truncate -s0 {} +",
                    "find . -type d -name rules -exec rm -rf {} +",
                    "find . -execdir mv {} {}.old ';'"):
        verdict = setup.check("execute", {"command": command}, mode)
        assert _is_protected_ask(verdict), (command, verdict.reasons)
    for command in ("cp notes.txt rules/", "mkdir -p state", "touch rules",
                    "find . -name '*.pyc' -delete", "find src -delete",
                    "find . -name '*.py' -exec sed -i s/a/b/ {} +",
                    "find . -maxdepth 1 -name '*.json' -delete",
                    "find . -name '*.toml' -exec cat {} +",
                    "cp -r src build", "rm -rf src", "mv src lib"):
        verdict = setup.check("execute", {"command": command}, mode)
        assert verdict.effect is Effect.ALLOW, (command, verdict.reasons)


@pytest.mark.parametrize("mode", MODES)
def test_git_deleting_untracked_files_and_links_to_the_database(
        make: Callable[[str], Setup], mode: str) -> None:
    """``git clean`` and ``git stash -u`` delete the untracked files the database is; a
    hard link (``cp -l``, ``ln``) makes a second name for the same file."""
    setup = make("allow-all")
    for command in ("git clean -fdx", "git -C . clean -f -d", "git stash -u",
                    "git stash push --include-untracked", "git stash -a",
                    f"cp -l {DATABASE} x.db", f"cp --link {POLICY} p.toml",
                    f"ln {DATABASE} backup.db"):
        verdict = setup.check("execute", {"command": command}, mode)
        assert _is_protected_ask(verdict), (command, verdict.reasons)
    for command in ("git clean -n", "git clean --dry-run -x", "git stash", "git stash list",
                    f"cp {POLICY} rules-copy.toml"):
        verdict = setup.check("execute", {"command": command}, mode)
        assert "protected_path" not in {r.code for r in verdict.reasons}, command


# ---- from the running configuration ---------------------------------------------------------


def test_the_paths_come_from_the_running_configuration(tmp_path: Path) -> None:
    """Two gates, two sets of files: each protects its own, wherever and whatever they are
    called, and nothing named like another gate's."""
    root = tmp_path
    (root / "a").mkdir()
    (root / "b").mkdir()
    for name in ("a", "b"):
        (root / name / "policy.conf").write_text(
            f'[workspace]\nroot = "{root}"\n[tools.write_file]\npaths = ["path"]\n'
            "writes = true\n")
    gate_a = Gate(Policy.load(root / "a" / "policy.conf"), SqliteStore(str(root / "a" / "x.db")))
    gate_b = Gate(Policy.load(root / "b" / "policy.conf"),
                  SqliteStore(str(root / "b" / "y.sqlite")))
    try:
        def protected(gate: Gate, path: str) -> bool:
            verdict = gate.policy.evaluate(
                ToolCall(id="c", name="write_file", args={"path": path, "content": "x"}),
                trusted_context(review_mode="full"))
            return _is_protected_ask(verdict)

        assert protected(gate_a, "a/policy.conf") and protected(gate_a, "a/x.db")
        assert protected(gate_a, "a/x.db-wal") and protected(gate_a, str(root / "a/x.db-shm"))
        assert not protected(gate_a, "b/y.sqlite") and not protected(gate_a, "b/policy.conf")
        assert protected(gate_b, "b/y.sqlite") and protected(gate_b, "b/policy.conf")
        assert not protected(gate_b, "a/x.db") and not protected(gate_b, "signoff.db")
        # the revalidation policy judges the same way
        again = gate_a.revalidation_policy.evaluate(
            ToolCall(id="c", name="write_file", args={"path": "a/x.db", "content": "x"}),
            trusted_context(review_mode="full"))
        assert _is_protected_ask(again)
    finally:
        gate_a.close()
        gate_b.close()


def test_a_symlinked_path_and_a_link_to_the_policy(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "rules").mkdir(parents=True)
    (root / "rules" / "p.toml").write_text(
        f'[workspace]\nroot = "{root}"\n[tools.execute]\nshell = "command"\n'
        '[[rules]]\nid = "all"\neffect = "allow"\ntool = "execute"\ncommand = "*"\n'
        'writes = ["**"]\n')
    (root / "via").symlink_to(root / "rules")
    policy = Policy.load(root / "via" / "p.toml")  # loaded through the link
    for command in ("echo x > rules/p.toml", "echo x > via/p.toml", "sed -i s/a/b/ via/p.toml",
                    f"echo x > {root}/rules/../rules/p.toml"):
        verdict = policy.evaluate(ToolCall(id="c", name="execute", args={"command": command}),
                                  trusted_context(review_mode="full"))
        assert _is_protected_ask(verdict), command


def test_a_path_nothing_can_place_counts_by_its_name(make: Callable[[str], Setup]) -> None:
    setup = make("allow-all")
    for command in ("cd $DIR && echo x > approvals.sqlite3", "cd $DIR && rm agent-policy.toml",
                    'echo x > "$DIR/approvals.sqlite3"', "cd $X; sed -i s/a/b/ settings.json"
                    " .mcp.json"):
        verdict = setup.check("execute", {"command": command}, "full")
        assert _is_protected_ask(verdict), (command, verdict.reasons)


def test_no_workspace_protects_by_path_and_name(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "gate.toml").write_text(
        '[policy]\ngated = []\n[tools.execute]\nshell = "command"\n'
        '[[rules]]\nid = "all"\neffect = "allow"\ntool = "execute"\ncommand = "*"\n'
        'writes = ["**"]\n')
    gate = Gate(Policy.load("conf/gate.toml"), SqliteStore("data.db"))
    try:
        for command in ("echo x > conf/gate.toml", f"echo x > {tmp_path}/data.db",
                        "sqlite3 data.db 'DELETE FROM requests'", "rm -f data.db-wal"):
            verdict = gate.policy.evaluate(
                ToolCall(id="c", name="execute", args={"command": command}),
                trusted_context(review_mode="full"))
            assert _is_protected_ask(verdict), command
        read = gate.policy.evaluate(
            ToolCall(id="c", name="execute", args={"command": "cat data.db"}),
            trusted_context(review_mode="full"))
        assert read.code == "secret_read"
        fine = gate.policy.evaluate(
            ToolCall(id="c", name="execute", args={"command": "echo x > notes.md"}),
            trusted_context(review_mode="full"))
        assert fine.effect is Effect.ALLOW
    finally:
        gate.close()


def test_a_virtual_path_with_no_workspace_counts_by_its_name(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("gate.toml").write_text('[tools.write_file]\npaths = ["file_path"]\nwrites = true\n'
                                 "virtual = true\n")
    policy = Policy.load("gate.toml")
    for path, expected in (("/gate.toml", True), ("/.mcp.json", True), ("/notes.md", False)):
        verdict = policy.evaluate(
            ToolCall(id="c", name="write_file", args={"file_path": path, "content": "x"}),
            trusted_context(review_mode="full"))
        assert _is_protected_ask(verdict) is expected, path


def test_a_name_nothing_spells_is_not_taken_for_a_protected_one(
        make: Callable[[str], Setup]) -> None:
    """``> $F`` and ``cp x $X`` write somewhere unknown (the workspace guard's business),
    not a protected path."""
    setup = make("allow-all")
    for command in ('echo x > "$OUT"', "cp notes.txt $X", "tee $LOG < notes.txt"):
        verdict = setup.check("execute", {"command": command}, "full")
        assert "protected_path" not in {r.code for r in verdict.reasons}, command


def test_signoff_check_protects_the_policy_it_is_given(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rules").mkdir()
    Path(POLICY).write_text(starter_toml(str(tmp_path)))
    for args in ({"path": POLICY, "content": "x"}, {"path": "notes.md", "content": "x"}):
        assert main(["check", "--policy", POLICY, "--tool", "write_file", "--args",
                     json.dumps(args), "--mode", "full", "--json"]) == 0
        body = json.loads(capsys.readouterr().out)
        if args["path"] == POLICY:
            assert body["effect"] == "ask" and body["code"] == "protected_path"
        else:
            assert body["effect"] == "allow"


def test_signoff_check_protects_the_servers_database(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """``--db``, else ``$SIGNOFF_DB``, else the server's default: the database ``signoff
    serve`` would open in this directory."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rules").mkdir()
    Path(POLICY).write_text(starter_toml(str(tmp_path)))

    def effect(path: str, *extra: str) -> str:
        assert main(["check", "--policy", POLICY, "--tool", "write_file", "--args",
                     json.dumps({"path": path, "content": "x"}), "--mode", "full", "--json",
                     *extra]) == 0
        body = json.loads(capsys.readouterr().out)
        return f"{body['effect']}/{body['code']}"

    assert effect(DATABASE, "--db", DATABASE) == "ask/protected_path"
    assert effect(DATABASE + "-wal", "--db", f"sqlite://{DATABASE}") == "ask/protected_path"
    assert effect(DATABASE, "--db", "postgresql://gate@db/signoff") == "allow/allowed"
    assert effect("signoff.db") == "ask/protected_path"
    monkeypatch.setenv("SIGNOFF_DB", "state/other.sqlite")
    assert effect("state/other.sqlite") == "ask/protected_path"
    assert effect("signoff.db") == "allow/allowed"


def test_the_servers_configured_files_are_protected(make: Callable[[str], Setup]) -> None:
    setup = make("default")
    verdict = setup.check("execute", {"command": f"cp /tmp/evil.pem {CA_FILE}"}, "full")
    assert _is_protected_ask(verdict)
    assert any("ca_file" in r.text for r in verdict.reasons if r.code == "protected_path")


def test_database_paths_of_stores() -> None:
    class Store:
        def __init__(self, path: object) -> None:
            self.path = path

    assert database_path(Store("state/a.db")) == "state/a.db"
    assert database_path(Store(":memory:")) is None
    assert database_path(Store("file:state/a.db?mode=rwc")) == "state/a.db"
    assert database_path(Store("file:x?mode=memory&cache=shared")) is None
    assert database_path(object()) is None


def test_guarding_a_database_twice_changes_nothing(tmp_path: Path) -> None:
    config = Policy.from_toml("").config
    once = guard_database(config, tmp_path / "a.db")
    assert len(once.guarded) == 4
    assert guard_database(once, tmp_path / "a.db") is once


# ---- [policy] protected ----------------------------------------------------------------------


def test_the_policy_adds_protected_paths(tmp_path: Path) -> None:
    policy = Policy.from_toml(
        f'[policy]\nprotected = ["~/.myagent/config.json", "/opt/agent/**", "*.agentrc"]\n'
        f'[workspace]\nroot = "{tmp_path}"\noutside = "allow"\n'
        '[tools.write_file]\npaths = ["path"]\nwrites = true\n')
    for path, expected in ((".myagent/config.json", True), ("/home/u/.myagent/config.json", True),
                           ("/opt/agent/x/y", True), ("deploy.agentrc", True),
                           (".claude/settings.json", True), ("myagent/config.json", False),
                           ("/opt/agents", False)):
        verdict = policy.evaluate(
            ToolCall(id="c", name="write_file", args={"path": path, "content": "x"}),
            trusted_context(review_mode="full"))
        assert _is_protected_ask(verdict) is expected, path


@pytest.mark.parametrize(("value", "message"), [
    ('"x"', "must be a list of non-empty strings"),
    ('[""]', "must be a list of non-empty strings"),
    ('["**"]', "must be a path glob"),
    ('["re:.*"]', "must be a path glob"),
    ('["/"]', "must be a path glob"),
])
def test_protected_is_validated(value: str, message: str) -> None:
    with pytest.raises(PolicyError) as raised:
        Policy.from_toml(f"[policy]\nprotected = {value}\n", source="team/agent.toml")
    text = str(raised.value)
    assert "team/agent.toml" in text and "protected" in text and message in text


@pytest.mark.parametrize("mode", MODES)
def test_a_path_longer_than_any_file_system_takes(make: Callable[[str], Setup],
                                                  mode: str) -> None:
    """Written out over PATH_MAX it names no file; what it resolves to still counts, so a
    long detour that normalises to a protected file asks, and a megabyte of text is judged
    without being normalised more than once."""
    setup = make("allow-all")
    detour = "x/../" * 1000 + ".claude/settings.json"  # 5 kB, resolves to a harness file
    assert len(detour) > 4096
    assert _judge(setup.check("write_file", {"path": detour, "content": "x"}, mode),
                  denied_ok=True) is None
    huge = setup.check("write_file", {"path": "a/" * 400_000 + "x", "content": "x"}, mode)
    assert huge.effect is not Effect.ALLOW  # the workspace guard refuses it
    assert "protected_path" not in [r.code for r in huge.reasons]


def test_a_long_detour_with_no_workspace_counts_by_the_name_it_normalises_to(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    policy = Policy.from_toml('[policy]\ngated = []\n[tools.write_file]\npaths = ["path"]\n'
                              'writes = true\n[[rules]]\nid = "w"\neffect = "allow"\n'
                              'tool = "write_file"\n')
    detour = "x/../" * 1000 + ".claude/settings.json"
    verdict = policy.evaluate(ToolCall(id="c", name="write_file",
                                       args={"path": detour, "content": "x"}),
                              trusted_context(review_mode="full"))
    assert _is_protected_ask(verdict)
    plain = policy.evaluate(ToolCall(id="c", name="write_file",
                                     args={"path": "x/../" * 1000 + "notes.md", "content": "x"}),
                            trusted_context(review_mode="full"))
    assert "protected_path" not in [r.code for r in plain.reasons]
