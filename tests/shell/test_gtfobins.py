"""Issue 11 against the published GTFOBins forms: none may ever be allowed.

Every row (binary, function, danger, command) is judged under (1) a policy
whose only allow rule is ``"<binary> *"`` and (2) the starter policy. Then
each row is respelled in ways the real tool's parser reads with the same
meaning (``--opt=value`` and ``--opt value``, unambiguous GNU long-option
prefixes, attached short values, a quoted option word, ``--``) and judged
again under the ``"<binary> *"`` policy.

The data is vendored into ``tests/data/``; until then it is read from the
shared copy.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kit import only_rule_policy, shell_workspace
from signoff import Policy, RunContext, ToolCall
from signoff.policy.starter import starter_toml

_VENDORED = Path(__file__).resolve().parents[1] / "data" / "gtfobins-published.jsonl"
_SHARED = Path("/work/shared/data/gtfobins-published.jsonl")
DATA = _VENDORED if _VENDORED.exists() else _SHARED


@dataclass(frozen=True, slots=True)
class Entry:
    binary: str
    function: str
    danger: str
    command: str
    index: int

    @property
    def id(self) -> str:
        return f"{self.binary}-{self.function}-{self.index}"


def _load() -> list[Entry]:
    entries: list[Entry] = []
    for index, line in enumerate(DATA.read_text("utf-8").splitlines()):
        if line.strip():
            row = json.loads(line)
            entries.append(Entry(row["binary"], row["function"], row["danger"], row["command"],
                                 index))
    return entries


ENTRIES = _load()

# Respellings per binary: (text in the published command, replacement). Each was
# checked against the real tool (GNU tar 1.34, sed 4.9, gawk 5.2, findutils 4.9,
# coreutils 9.1, util-linux 2.38, man-db 2.11, curl 7.88, wget 1.21, make 4.3,
# git 2.39, node 20, CPython 3.11) or is documented as equivalent.
RESPELL: dict[str, list[tuple[str, str]]] = {
    "find": [(r"\;", "';'"), ("{}", "'{}'"), ("find ", "find -- ")],
    "git": [("git diff /dev/null", "git diff --no-index /dev/null"),
            ("--directory /", "--directory=/"),
            ("--unsafe-paths --directory /", "--unsafe-p --dir=/")],
    "tar": [("--checkpoint-action=exec=", "--checkpoint-action exec="),
            ("--checkpoint-action=exec=", "--checkpoint-act=exec="),
            ("-I '", "--use-compress-program='"), ("-I '", "--use-comp '"), ("-I '", "-I'"),
            ("--to-command /bin/sh", "--to-command=/bin/sh"),
            ("--to-command /bin/sh", "--to-com /bin/sh"),
            ("--rsh-command=/bin/ssh", "--rsh-command /bin/ssh"),
            ("--rsh-command=/bin/ssh", "--rsh=/bin/ssh"),
            ("--xform s@", "--xform=s@"), ("--xform s@", "--transform s@"),
            ("tar Pxf", "tar -Pxf"), ("tar Pxf", "tar -P -x -f"),
            ("tar xvf", "tar -xvf"), ("tar cvf", "tar -cvf"),
            ("tar xf /dev/null", "tar -xf /dev/null")],
    "mawk": [("awk '", "awk -- '"), ("awk '", "awk -v x=1 '")],
    "gawk": [("gawk '", "gawk -e '"), ("gawk '", "gawk --source='"), ("gawk '", "gawk --so '")],
    "sed": [("sed ''", "sed -e ''"), ("sed ''", "sed --expression=''"),
            ("sed -n '", "sed -ne '"), ("sed -n '", "sed --quiet --expr='"),
            ("sed -n '", "sed -n --e '"), ("sed e", "sed -e e"), ("sed e", "sed --ex e")],
    "less": [("less /", "less -- /")],
    "more": [("more /", "more -- /")],
    "man": [("man /etc/shadow", "man -l /etc/shadow"),
            ("man /etc/shadow", "man --local-file=/etc/shadow"),
            ("'-H/bin/sh #'", "'--html=/bin/sh #'"), ("'-H/bin/sh #'", "'--ht=/bin/sh #'")],
    "vi": [("-c '", "'+")],
    "vim": [("-c '", "'+")],
    "env": [("env /", "env -- /")],
    "xargs": [("-a /etc/shadow", "-a/etc/shadow"), ("-a /etc/shadow", "--arg-file=/etc/shadow"),
              ("-a /etc/shadow", "--arg-f /etc/shadow"), ("-a /dev/null", "--arg-file=/dev/null"),
              ("xargs -o", "xargs --open-tty")],
    "nice": [("nice /", "nice -- /"), ("nice /", "nice --adjustment=10 /")],
    "timeout": [("timeout 0 ", "timeout -- 0 "), ("timeout 0 ", "timeout 0s ")],
    "watch": [("watch -x", "watch --exec")],
    "flock": [("flock -u", "flock --unlock"), ("flock -u", "flock --unl")],
    "ionice": [("ionice /", "ionice -- /")],
    "stdbuf": [("-i0", "-i 0"), ("-i0", "--input=0")],
    "nohup": [("nohup /", "nohup -- /")],
    "strace": [("-o /", "-o/"), ("-s 999", "-s999")],
    "gdb": [("-ex '", "--eval-command='"), ("-ex '", "-eval-command '")],
    "script": [("-q -c '", "-qc '"), ("-q -c '", "--quiet --command='"),
               ("script -q /", "script --quiet /")],
    "run-parts": [("--regex '", "--regex='")],
    "start-stop-daemon": [("-S -x /bin/sh", "--start --exec /bin/sh"), ("-x /", "-x/")],
    "cpulimit": [("-l 100", "-l100"), ("-l 100", "--limit=100")],
    "sudo": [("sudo /", "sudo -- /")],
    "su": [("su -c /", "su --command=/"), ("su -c /", "su -c/")],
    "bash": [("bash -c '", "bash --norc -c '")],
    "python": [("python -c '", "python -c'"), ("python -c '", "python -E -c '"),
               ("python -c '", "python -Ic '")],
    "perl": [("perl -e '", "perl -e'"), ("perl -ne print", "perl -n -e print")],
    "node": [("node -e '", "node --eval '"), ("node -e '", "node --eval='")],
    "ruby": [("ruby -e '", "ruby -e'")],
    "make": [("--eval='", "--eval '"), ("--eval='", "--ev='")],
    "npm": [("npm exec /", "npm exec -- /"), ("npm exec ", "npm x "),
            ("npm -C . i", "npm --prefix . i"), ("npm -C . i", "npm -C . install")],
    "pip": [("--editor '", "--editor='"), ("--editor '", "--ed '"),
            ("--break-system-packages", "--break-sys")],
    "docker": [("-v /:/mnt", "--volume /:/mnt"), ("-v /:/mnt", "--volume=/:/mnt"),
               ("docker cp", "docker container cp")],
    "curl": [("-o /", "-o/"), ("-o /", "--output /"), ("--data-binary @", "--data-bin @"),
             ("--engine ", "--eng "), ("curl file:", "curl FILE:")],
    "wget": [("-O /", "-O/"), ("-O /", "--output-document=/"), ("-O /", "--output-doc /"),
             ("-i /", "-i/"), ("-i /", "--input-file=/"),
             ("--post-file=", "--post-file "), ("--post-file=", "--post-f=")],
    "ssh": [("-F /", "-F/"), ("-o ProxyCommand=", "-oProxyCommand=")],
    "scp": [("-o '", "-o'")],
    "rsync": [("-e '", "--rsh='"), ("-e '", "--rsh '"), ("-e '", "-e'")],
    "nc": [("-e /", "-e/")],
    "busybox": [("-p 12345", "-p12345")],
    "head": [("-c-0", "-c -0"), ("-c-0", "--bytes=-0")],
    "tail": [("-c+0", "-c +0"), ("-c+0", "--bytes=+0")],
    "grep": [("grep ''", "grep -e ''"), ("grep ''", "grep --regexp=''")],
    "sort": [("sort -m /", "sort --merge /"), ("-o /", "-o/"), ("-o /", "--output=/"),
             ("-o /", "--outp=/")],
    "diff": [("--line-format=%L", "--line-format %L"), ("--line-format=%L", "--line-f=%L"),
             ("--recursive", "-r"), ("--recursive", "--recur")],
    "tee": [("tee /", "tee -- /"), ("tee /", "tee -a /")],
    "cp": [("cp /etc", "cp -- /etc"), ("cp /dev/stdin", "cp -T /dev/stdin")],
    "mv": [("mv /tmp/t", "mv -T /tmp/t"), ("mv /tmp/t", "mv -- /tmp/t")],
    "cut": [("-d '' -f1", "--delimiter='' --fields=1"), ("-f1", "-f 1")],
    "od": [("-An", "-A n"), ("-An", "--address-radix=n"), ("-w999", "--width=999")],
    "base64": [("--decode", "-d"), ("--decode", "--dec")],
    "split": [("--filter='", "--filter '"), ("--filter='", "--fil='")],
    "tac": [("-s 'RANDOM'", "-sRANDOM"), ("-s 'RANDOM'", "--separator=RANDOM")],
    "nl": [("-bn -w1", "-b n -w 1"), ("-bn", "--body-numbering=n")],
    "uniq": [("uniq /", "uniq -- /")],
    "comm": [("comm /", "comm -- /")],
    "jq": [("-Rr", "-R -r"), ("-Rr", "--raw-input --raw-output")],
    "file": [("-f /", "-f/"), ("-f /", "--files-from /"), ("-f /", "--files-from=/")],
    "csplit": [("csplit /", "csplit -- /")],
}

_OPTION_WORD = re.compile(r"(?<=\s)(--?[A-Za-z][\w-]*)(?=[\s=])")


def _quote_option(command: str) -> str | None:
    """The first option word in single quotes (``-x`` → ``'-x'``): the same argv for bash."""
    match = _OPTION_WORD.search(command)
    if match is None:
        return None
    before = command[: match.start()]
    if before.count("'") % 2 or before.count('"') % 2:  # inside a quoted string
        return None
    return command[: match.start()] + f"'{match.group(1)}'" + command[match.end():]


def _variants(entry: Entry) -> list[str]:
    out: list[str] = []
    for old, new in RESPELL.get(entry.binary, []):
        if old in entry.command:
            out.append(entry.command.replace(old, new, 1))
    quoted = _quote_option(entry.command)
    if quoted is not None:
        out.append(quoted)
    return [v for v in dict.fromkeys(out) if v != entry.command][:4]


def _variant_params() -> Iterator[object]:
    for entry in ENTRIES:
        for n, variant in enumerate(_variants(entry)):
            yield pytest.param(entry.binary, variant, entry.command, id=f"{entry.id}-v{n}")


def _only_rule(root: Path, binary: str) -> str:
    return only_rule_policy(root, binary)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("gtfobins") / "ws"
    return shell_workspace(root)


def _effect(policy: Policy, command: str) -> str:
    call = ToolCall(id="c1", name="execute", args={"command": command})
    return str(policy.evaluate(call, RunContext(thread_id="t")).effect)


@pytest.fixture(scope="module")
def only_rule(workspace: Path) -> Callable[[str], Policy]:
    cache: dict[str, Policy] = {}

    def get(binary: str) -> Policy:
        if binary not in cache:
            cache[binary] = Policy.from_toml(_only_rule(workspace, binary))
        return cache[binary]

    return get


@pytest.fixture(scope="module")
def starter(workspace: Path) -> Policy:
    return Policy.from_toml(starter_toml(str(workspace)))


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.id for e in ENTRIES])
def test_never_allowed_under_its_own_rule(only_rule: Callable[[str], Policy], entry: Entry) -> None:
    effect = _effect(only_rule(entry.binary), entry.command)
    assert effect != "allow", f"{entry.command!r} allowed under '{entry.binary} *' ({entry.danger})"


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.id for e in ENTRIES])
def test_never_allowed_under_the_starter_policy(starter: Policy, entry: Entry) -> None:
    effect = _effect(starter, entry.command)
    assert effect != "allow", f"{entry.command!r} allowed by the starter policy ({entry.danger})"


@pytest.mark.parametrize(("binary", "variant", "original"), list(_variant_params()))
def test_respellings_are_never_allowed(
    only_rule: Callable[[str], Policy], binary: str, variant: str, original: str
) -> None:
    effect = _effect(only_rule(binary), variant)
    assert effect != "allow", f"{variant!r} (from {original!r}) allowed under '{binary} *'"


def test_the_data_is_complete() -> None:
    assert len(ENTRIES) >= 100
    assert all(e.binary and e.function and e.danger in {"exec", "read", "write"} and e.command
               for e in ENTRIES)
    ids = [e.id for e in ENTRIES]
    assert len(ids) == len(set(ids))


def test_every_respelling_applies() -> None:
    """A respelling whose text no published command contains is stale."""
    commands: dict[str, list[str]] = {}
    for entry in ENTRIES:
        commands.setdefault(entry.binary, []).append(entry.command)
    stale = [(binary, old) for binary, pairs in RESPELL.items() for old, _ in pairs
             if not any(old in command for command in commands.get(binary, []))]
    assert not stale
