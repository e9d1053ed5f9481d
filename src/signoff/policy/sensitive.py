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
from functools import lru_cache

from signoff.policy.linear import LinearSet
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
def _compiled(patterns: tuple[str, ...]) -> tuple[LinearSet, LinearSet]:
    """All patterns as one RE2 set over absolute paths and one over relative ones: one
    pass in time linear in the path, whatever its length, says which pattern matched.
    A pattern without a leading ``/`` matches at any depth; an anchored one only an
    absolute path."""
    absolute: list[str] = []
    relative: list[str] = []
    for pattern in patterns:
        body = glob_to_regex(pattern.strip("/"))
        if pattern.startswith("/"):
            absolute.append(f"/{body}")
            relative.append(_NEVER)
        else:
            absolute.append(f"/(?:.*/)?{body}")
            relative.append(f"(?:.*/)?{body}")
    return LinearSet(absolute), LinearSet(relative)


_NEVER = r"[^\x00-\x{10FFFF}]"  # matches nothing: keeps the indices of both sets aligned


# A copy an editor or a person leaves beside a file: .env~, .netrc.bak, credentials.orig
_BACKUP = frozenset(("bak", "backup", "orig", "old", "save", "sav", "swp", "swo", "tmp",
                     "copy"))


def _original(path: str) -> str | None:
    """The file ``path`` is a backup copy of, or ``None`` (a look at its end only: a
    search through a long path would cost time in proportion to its dots)."""
    if path.endswith(("~", "-")):
        return path[:-1]
    _, dot, extension = path[-8:].rpartition(".")
    if dot and extension.lower() in _BACKUP:
        return path[:len(path) - len(extension) - 1]
    return None


def is_secret(path: str, secrets: tuple[str, ...]) -> str | None:
    """The secret pattern ``path`` matches, itself or as a backup copy of a match
    (``.env~``, ``.pgpass.bak``): a copy holds what the file held."""
    hit = is_sensitive(path, secrets)
    if hit is None and (original := _original(path)) is not None:
        hit = is_sensitive(original, secrets)
    return hit


def is_sensitive(path: str, patterns: tuple[str, ...]) -> str | None:
    """The first pattern ``path`` matches, or ``None``. ``path`` may be relative."""
    if not path:
        return None
    normal = posixpath.normpath(path)
    absolute, relative = _compiled(patterns)
    index = (absolute if normal.startswith("/") else relative).first(
        normal.removeprefix("./"))
    return None if index is None else patterns[index]
