"""Environment variables that configure what a program runs, as data.

``GIT_EXTERNAL_DIFF='rm -rf ~ #' git diff`` runs ``rm``; ``LD_PRELOAD=./x.so ls``
runs the library's code inside ``ls``; ``TAR_OPTIONS=--checkpoint-action=exec=…``
hands tar an option the command line never shows. Setting one of these
variables (``NAME=value cmd``, ``NAME=value`` alone, ``export``/``declare``/``local``,
``env NAME=value cmd``, ``read NAME``) changes what the command does in a way the
command line does not spell: the shell analysis calls it *opaque*, a mandatory ask
in every review mode (``signoff.shell.opaque``).

Each entry says how the value is read:

* ``command`` — a command line or a program (a pager, an editor, a diff driver);
  the value is also parsed as a nested script, so deny rules see what it runs. A
  value that runs nothing new (empty, ``cat``, ``true``, ``:``) is not opaque:
  ``GIT_PAGER=cat git log`` is what agents write to avoid a pager;
* ``paths`` — a list of directories code is loaded from (``PYTHONPATH``); relative
  entries without ``..`` (``PYTHONPATH=src pytest``) are read as paths the workspace
  guard judges, anything else is opaque;
* ``options`` — more options for the program named in ``command_of``; options its
  command model finds inert (``LESS=-R``) are not opaque, others are, and the
  options are judged as part of that command too;
* ``system`` — directories programs are run from (``PATH``, ``JAVA_HOME``): the system's
  own (``/usr/…``, ``/bin``, ``/sbin``, whose writing is a mandatory ask), and the
  variable's own value (``PATH=$PATH:/usr/local/go/bin``), are not opaque; any other
  directory is;
* ``opaque`` — always opaque: a library loaded into every program, a start-up file,
  a configuration file or directory read instead of the usual one, a file written
  as a side effect.

``ENV`` is left out: only an interactive ``sh`` reads it, and ``make deploy ENV=staging``
is how people name a target environment. To add a variable: append an ``Entry`` below
(a ``*`` in a name matches any text: ``GIT_CONFIG_*``); tests/shell/test_opaque.py tries
every entry of the table in every spelling.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

Reading = Literal["command", "paths", "options", "system", "opaque"]


@dataclass(frozen=True, slots=True)
class Entry:
    name: str  # a variable name; ``*`` matches any text
    reading: Reading
    why: str
    command_of: str = ""  # for ``options``: the program the options are for


def _entries(reading: Reading, why: str, *names: str, command_of: str = "") -> list[Entry]:
    return [Entry(name, reading, why, command_of) for name in names]


TABLE: tuple[Entry, ...] = (
    # git: programs it runs, configuration it reads, files it writes
    *_entries("command", "git runs it as a program", "GIT_EXTERNAL_DIFF", "GIT_SSH_COMMAND",
              "GIT_SSH", "GIT_PAGER", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "GIT_ASKPASS",
              "GIT_PROXY_COMMAND"),
    *_entries("opaque", "git reads configuration, hooks or programs from where it names",
              "GIT_CONFIG_*", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_DIR", "GIT_WORK_TREE",
              "GIT_EXEC_PATH", "GIT_TEMPLATE_DIR", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
              "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_TRACE*",
              "GIT_ALLOW_PROTOCOL", "GIT_PROTOCOL_FROM_USER"),
    # pagers, editors, browsers and password prompts that tools start
    *_entries("command", "tools start it as a pager, an editor or a helper", "PAGER",
              "MANPAGER", "SYSTEMD_PAGER", "BAT_PAGER", "DELTA_PAGER", "PSQL_PAGER", "EDITOR",
              "VISUAL", "FCEDIT", "SUDO_EDITOR", "SVN_EDITOR", "HGEDITOR", "BROWSER",
              "LESSOPEN", "LESSCLOSE", "LESSEDIT", "SSH_ASKPASS", "SUDO_ASKPASS", "RSYNC_RSH",
              "RSYNC_CONNECT_PROG", "CVS_RSH", "PROMPT_COMMAND", "PS4", "MANROFFSEQ"),
    *_entries("options", "options for less", "LESS", command_of="less"),
    *_entries("options", "options for more", "MORE", command_of="more"),
    *_entries("opaque", "less and man read key bindings, preprocessors or pages from it",
              "LESSKEY", "LESSKEYIN", "LESSKEY_SYSTEM", "MANPATH", "MANOPT"),
    # archivers and compressors that take options from the environment
    *_entries("options", "options for tar", "TAR_OPTIONS", command_of="tar"),
    *_entries("options", "options for grep", "GREP_OPTIONS", command_of="grep"),
    *_entries("options", "options for zip", "ZIPOPT", command_of="zip"),
    *_entries("options", "options for unzip", "UNZIP", "UNZIPOPT", command_of="unzip"),
    *_entries("opaque", "options for a compressor", "GZIP", "XZ_OPT", "XZ_DEFAULTS", "BZIP2",
              "BZIP", "ZSTD_CLEVEL"),
    # interpreters: options, start-up files, module paths
    *_entries("opaque", "perl reads options or a debugger from it", "PERL5OPT", "PERL5DB",
              "PERLDB_OPTS", "PERL5SHELL", "PERL_MB_OPT", "PERL_MM_OPT"),
    *_entries("paths", "perl loads modules from it", "PERL5LIB", "PERLLIB"),
    *_entries("opaque", "python runs or imports what it names", "PYTHONSTARTUP",
              "PYTHONHOME", "PYTHONUSERBASE", "PYTHONWARNINGS", "PYTHONBREAKPOINT",
              "PYTHONINSPECT", "PYTHONEXECUTABLE", "PYTHONPYCACHEPREFIX",
              "COVERAGE_PROCESS_START", "PYTEST_PLUGINS", "PYTEST_ADDOPTS"),
    *_entries("paths", "python imports modules from it", "PYTHONPATH"),
    *_entries("opaque", "node loads code named in it", "NODE_OPTIONS",
              "NODE_REPL_EXTERNAL_MODULE"),
    *_entries("paths", "node loads modules from it", "NODE_PATH"),
    *_entries("opaque", "ruby loads code named in it", "RUBYOPT", "RUBYSHELL", "GEM_HOME",
              "GEM_PATH", "BUNDLE_GEMFILE"),
    *_entries("paths", "ruby loads libraries from it", "RUBYLIB"),
    *_entries("opaque", "the JVM loads agents or options from it", "JAVA_TOOL_OPTIONS",
              "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "JAVA_OPTS", "MAVEN_OPTS", "GRADLE_OPTS",
              "CLASSPATH"),
    *_entries("system", "a build runs the java it names", "JAVA_HOME"),
    *_entries("opaque", "php reads its configuration from it", "PHPRC", "PHP_INI_SCAN_DIR"),
    # the dynamic linker: code loaded into every program
    *_entries("opaque", "the dynamic linker loads code from it into every program",
              "LD_*", "DYLD_*", "GCONV_PATH", "LOCPATH", "HOSTALIASES", "MALLOC_CONF"),
    # shells: start-up files, functions, splitting, where names are looked up
    *_entries("opaque", "a shell reads start-up code, functions or options from it",
              "BASH_ENV", "ZDOTDIR", "BASH_FUNC_*", "SHELLOPTS", "BASHOPTS", "IFS",
              "INPUTRC", "BASH_XTRACEFD", "EXINIT", "VIMINIT", "MYVIMRC",
              "GVIMINIT", "SHELL", "CONFIG_SHELL"),
    *_entries("opaque", "which program a name runs, or where ~ and configuration files are",
              "CDPATH", "HOME", "XDG_CONFIG_HOME", "XDG_CONFIG_DIRS", "XDG_DATA_HOME",
              "XDG_DATA_DIRS"),
    *_entries("system", "which program a name runs", "PATH"),
    # package managers and build tools that run programs or read configuration
    *_entries("opaque", "pip reads configuration or options from it", "PIP_*"),
    *_entries("opaque", "npm reads configuration (its script shell, node options) from it",
              "NPM_CONFIG_*", "npm_config_*", "YARN_*", "PNPM_*", "COREPACK_*"),
    *_entries("opaque", "make reads options (--eval) or its shell from it", "MAKEFLAGS",
              "MFLAGS", "GNUMAKEFLAGS", "MAKEFILES", "MAKE"),
    *_entries("opaque", "a build runs the compiler, linker or wrapper it names", "CC", "CXX",
              "CPP", "LD", "AR", "AS", "NM", "RANLIB", "STRIP", "OBJCOPY", "CARGO_*",
              "RUSTC", "RUSTC_WRAPPER", "RUSTC_WORKSPACE_WRAPPER", "RUSTDOCFLAGS", "RUSTFLAGS",
              "GOFLAGS", "GOTOOLCHAIN", "CGO_*", "CFLAGS", "CXXFLAGS", "LDFLAGS", "CPPFLAGS"),
    # ssh, gpg, containers: programs and configuration they read
    *_entries("opaque", "ssh, gpg, docker or kubectl read configuration or keys from it",
              "GNUPGHOME", "DOCKER_HOST", "DOCKER_CONFIG", "KUBECONFIG"),
)

_HARMLESS_PROGRAMS = frozenset({"", "cat", "true", ":", "/bin/cat", "/usr/bin/cat",
                                "/bin/true", "/usr/bin/true"})
_SAFE_PATH_ENTRY = re.compile(r"[A-Za-z0-9._+@%,=-]+(?:/[A-Za-z0-9._+@%,=-]+)*/?")


@lru_cache(maxsize=1024)
def lookup(name: str) -> Entry | None:
    """The table's entry for a variable name, or ``None`` (exact names before globs)."""
    for entry in TABLE:
        if entry.name == name:
            return entry
    for entry in TABLE:
        if "*" in entry.name and fnmatch.fnmatchcase(name, entry.name):
            return entry
    return None


def harmless_program(value: str) -> bool:
    """``GIT_PAGER=cat``, ``GIT_EDITOR=true``: a command value that runs nothing new."""
    return value.strip() in _HARMLESS_PROGRAMS


_SYSTEM_DIR = re.compile(r"/(?:usr|bin|sbin|lib|lib64)(?:/[A-Za-z0-9._+@%-]+)*/?")


def system_entries(name: str, value: str) -> bool:
    """``PATH=/usr/bin:/bin``, ``PATH=$PATH:/usr/local/go/bin``, ``JAVA_HOME=/usr/lib/jvm/x``:
    every entry a system directory or the variable itself (``value`` as written, quotes
    and all)."""
    text = value[1:-1] if len(value) > 1 and value[0] == value[-1] == '"' else value
    own = (f"${name}", f"${{{name}}}")
    entries = text.split(":")
    return bool(text) and all(
        e in own or (_SYSTEM_DIR.fullmatch(e) is not None and ".." not in e.split("/"))
        for e in entries)


def relative_entries(value: str) -> list[str] | None:
    """The entries of a path list made only of relative, ``..``-free paths (``src:.``),
    or ``None`` when any entry is absolute, climbs, or holds shell syntax."""
    entries = value.split(":")
    if not value or not all(_SAFE_PATH_ENTRY.fullmatch(e) for e in entries):
        return None
    if any(part == ".." for e in entries for part in e.split("/")):
        return None
    return entries
