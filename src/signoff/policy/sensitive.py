"""Sensitive paths: files whose content tools execute or trust.

Writing one is how an agent turns an allowed command into code execution
(``echo … > conftest.py && pytest``, a ``.git/hooks`` script, a Makefile
recipe, an npm script, a shell rc file), so a write to one is a mandatory ask,
whatever the rules and the review mode. The built-in list below can be
extended with ``[workspace] sensitive = [...]`` (or replaced, with
``sensitive_defaults = false``). A pattern without a leading ``/`` matches at
any depth: ``conftest.py`` is ``**/conftest.py``.
"""

from __future__ import annotations

import posixpath
import re
from functools import lru_cache

from signoff.policy.patterns import glob_to_regex

DEFAULT_SENSITIVE: tuple[str, ...] = (
    # git runs hooks and what its configuration names
    ".git/config", ".git/hooks/**", ".git/info/**", ".gitattributes", ".gitmodules",
    ".gitconfig", ".config/git/**",
    # Python test runners, builds and start-up hooks
    "conftest.py", "pytest.ini", "tox.ini", "setup.cfg", "setup.py", "pyproject.toml",
    "noxfile.py", "sitecustomize.py", "usercustomize.py", "*.pth", ".pypirc", "pip.conf",
    # make, npm and friends
    "Makefile", "makefile", "GNUmakefile", "*.mk", "package.json", ".npmrc", ".yarnrc",
    ".yarnrc.yml", ".pnpmfile.cjs", "Dockerfile", "docker-compose.yml", "compose.yaml",
    "*.gradle", "gradlew", "mvnw", ".mvn/**", ".cargo/config.toml", "build.rs",
    # shells, environments, editors and pagers that read files at start
    ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc",
    ".zshenv", ".zprofile", ".zlogin", ".inputrc", ".envrc", ".env", ".vimrc", ".exrc",
    ".lessfilter", ".lesskey", ".netrc", ".ssh/**",
    # automation that runs on someone else's machine
    ".github/workflows/**", ".gitlab-ci.yml", "Jenkinsfile", ".pre-commit-config.yaml",
    ".husky/**", ".vscode/**", ".devcontainer/**",
    # the system: outside any workspace, and sensitive even where no workspace is set
    "/etc/**", "/usr/**", "/bin/**", "/sbin/**", "/lib/**", "/lib64/**", "/boot/**",
    "/root/**", "/var/spool/cron/**", "/Library/**", "/System/**",
)

# Files that hold credentials: reading one through any tool is a mandatory ask
# (``secret_read``), with or without a workspace. ``[workspace] secrets`` extends it.
DEFAULT_SECRETS: tuple[str, ...] = (
    "/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/sudoers", "/etc/sudoers.d/**",
    "/etc/ssh/*_key", ".ssh/**", ".gnupg/**", ".aws/credentials", ".aws/config",
    ".azure/**", ".config/gcloud/**", ".kube/config", ".docker/config.json", ".netrc",
    ".pgpass", ".my.cnf", ".git-credentials", ".npmrc", ".pypirc", ".vault-token",
    ".env", ".env.*", "*.pem", "*.key", "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*",
    "/proc/*/environ", "/proc/*/mem", "/proc/*/cmdline",
)


@lru_cache(maxsize=64)
def _compiled(patterns: tuple[str, ...]) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """All patterns as one regex over absolute paths and one over relative ones.

    Each alternative is a named group, so a match says which pattern it was. A pattern
    without a leading ``/`` matches at any depth; an anchored one only an absolute path.
    """
    absolute: list[str] = []
    relative: list[str] = []
    for n, pattern in enumerate(patterns):
        body = glob_to_regex(pattern.strip("/"))
        if pattern.startswith("/"):
            absolute.append(f"(?P<p{n}>/{body})")
        else:
            absolute.append(f"(?P<p{n}>/(?:.*/)?{body})")
            relative.append(f"(?P<p{n}>(?:.*/)?{body})")
    never = "(?!)"
    return (re.compile("|".join(absolute) or never, re.DOTALL),
            re.compile("|".join(relative) or never, re.DOTALL))


# A copy an editor or a person leaves beside a file: .env~, .netrc.bak, credentials.orig
_BACKUP = re.compile(r"(?:~|\.(?:bak|backup|orig|old|save|sav|swp|swo|tmp|copy)|-)$", re.I)


def is_secret(path: str, secrets: tuple[str, ...]) -> str | None:
    """The secret pattern ``path`` matches, itself or as a backup copy of a match
    (``.env~``, ``.pgpass.bak``): a copy holds what the file held."""
    hit = is_sensitive(path, secrets)
    if hit is None and _BACKUP.search(path):
        hit = is_sensitive(_BACKUP.sub("", path), secrets)
    return hit


def is_sensitive(path: str, patterns: tuple[str, ...]) -> str | None:
    """The first pattern ``path`` matches, or ``None``. ``path`` may be relative."""
    if not path:
        return None
    normal = posixpath.normpath(path)
    absolute, relative = _compiled(patterns)
    match = (absolute if normal.startswith("/") else relative).fullmatch(
        normal.removeprefix("./"))
    if match is None:
        return None
    name = next(k for k, v in match.groupdict().items() if v is not None)
    return patterns[int(name[1:])]
