"""Sensitive paths: files whose content tools execute or trust.

Writing one is how an agent turns an allowed command into code execution
(``echo … > conftest.py && pytest``, a ``.git/hooks`` script, a Makefile
recipe, an npm script, a shell rc file), so a write to one is a mandatory ask,
whatever the rules and the review mode. The built-in list below can be
extended with ``[workspace] sensitive = [...]`` (or replaced, with
``sensitive_defaults = false``). A pattern without a leading ``/`` matches at
any depth: ``conftest.py`` is ``**/conftest.py`` (matched by
``signoff.globs.pathglob.is_sensitive``; ``is_secret`` also counts a backup copy).
"""

from __future__ import annotations

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
