"""Printing the environment is a credential read: a human's in every mode by default.

``echo $AWS_SECRET_ACCESS_KEY`` was a mandatory ask while ``env``, ``ps eww``,
``declare -p``, ``jq -n env`` and ``python -c 'print(os.environ)'`` — every such
variable at once — were allowed in ``full`` mode. ``env_dump`` is now in the default
``always_ask``, and a variable inline code reads by name counts as one the shell
expands.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kit import assert_human_decides, judge_shell
from signoff import Effect, Policy, ReviewMode, Verdict
from signoff.policy.starter import starter_toml


def _judge(policy: Policy, command: str) -> Verdict:
    return judge_shell(policy, command, ReviewMode.FULL)


@pytest.mark.parametrize(("command", "code"), [
    ("env", "env_dump"), ("printenv", "env_dump"), ("set", "env_dump"),
    ("declare -p", "env_dump"), ("declare -x", "env_dump"), ("export", "env_dump"),
    ("export -p", "env_dump"), ("ps eww", "env_dump"), ("ps auxe", "env_dump"),
    ("ps -ef e", "env_dump"), ("jq -n env", "env_dump"), ("jq -n '$ENV.HOME'", "env_dump"),
    ("python -c 'import os; print(os.environ)'", "env_dump"),
    ("python -c 'import os; print(dict(os.environ))'", "env_dump"),
    ("node -e 'console.log(process.env)'", "env_dump"),
    ("perl -e 'print %ENV'", "env_dump"), ("ruby -e 'p ENV.to_h'", "env_dump"),
    ("python - <<'PY'\nimport os\nfor k, v in os.environ.items(): print(k, v)\nPY",
     "env_dump"),
    ("printenv GITHUB_TOKEN", "secret_read"),
    ("python -c 'import os; print(os.environ[\"OPENAI_API_KEY\"])'", "secret_read"),
    ("python -c 'import os; print(os.getenv(\"DB_PASSWORD\"))'", "secret_read"),
    ("node -e 'console.log(process.env.GITHUB_TOKEN)'", "secret_read"),
    ("perl -e 'print $ENV{AWS_SECRET_ACCESS_KEY}'", "secret_read"),
    ("ruby -e 'puts ENV[\"GITHUB_TOKEN\"]'", "secret_read"),
])
def test_reading_the_environment_is_a_mandatory_ask(
        starter: Policy, command: str, code: str) -> None:
    assert_human_decides(starter, command, code, modes=(ReviewMode.FULL,))


@pytest.mark.parametrize("command", [
    "printenv HOME", "ps aux", "ps -e", "ps -o pid,user,comm", "jq '.environment' x.json",
    "python -c 'import os; print(os.environ.get(\"HOME\"))'",
    "python -c \"print('API_KEY missing')\"", "declare -p HOME",
    "set -x", "set -euo pipefail", "set -x; ls",  # tracing and options: nothing listed
])
def test_what_names_no_credential_is_judged_as_before(starter: Policy, command: str) -> None:
    verdict = _judge(starter, command)
    assert not verdict.mandatory, (command, verdict)


def test_an_operator_may_let_env_dumps_through(tmp_path: Path) -> None:
    text = starter_toml(str(tmp_path)).replace(
        "[policy]\n", '[policy]\nalways_ask = ["secret_read"]\n', 1)
    assert _judge(Policy.from_toml(text), "env").effect is Effect.ALLOW  # full mode
