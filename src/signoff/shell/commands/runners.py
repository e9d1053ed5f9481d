"""Runners: commands whose purpose is to run code the workspace holds.

``python script.py``, ``pytest``, ``make test``, ``npm test`` run workspace
files, and that is what an allow rule naming them admits: the script operand is
a *declared* execution. What they run that the command line does not say is
not: inline code (``python -c``), code from a network (``pip install``,
``npm install``), loading a plugin (``pytest -p``), ``make --eval``, a
variable override (``make SHELL=…``), ``npm exec``. ``-m http.server`` and
friends open listeners; ``--version`` and ``--help`` run nothing.
"""

from __future__ import annotations

from dataclasses import replace

from signoff.model import Risk
from signoff.shell.commands.grammar import parse
from signoff.shell.commands.models import (
    ARGUMENT_OF,
    STDIN_PROGRAM,
    Kind,
    Model,
    Opt,
    Part,
    State,
    model,
)

R, W, X, N, I, U = (Kind.READ, Kind.WRITE, Kind.EXEC, Kind.NETWORK, Kind.INERT,  # noqa: E741
                    Kind.UNKNOWN)

_LISTENER_MODULES = frozenset({"http.server", "SimpleHTTPServer", "smtpd", "aiosmtpd",
                               "xmlrpc.server", "CGIHTTPServer", "wsgiref.simple_server",
                               "uvicorn", "gunicorn", "jupyter", "notebook", "ipykernel"})
# Frameworks whose runner serves only with one of these subcommands.
_SERVE_WORDS = frozenset({"runserver", "run", "serve", "server", "--serve"})
_PIP_MODULES = frozenset({"pip", "pip3", "ensurepip", "venv", "virtualenv"})
# Modules that run a code string or start an interactive interpreter.
_CODE_MODULES = frozenset({"timeit", "pdb", "code", "IPython", "idlelib", "trace",
                           "cProfile", "profile"})


def _as_command(state: State, name: str) -> None:
    """Read a module's arguments with the model of the command it is (pytest, pip)."""
    spec = _MODEL_BY_NAME[name]
    first = state.parts[state.operands[0]].index if state.operands else len(state.argv)
    argv = (name, *state.argv[first:])
    literal = (True, *state.literal[first:])
    inner = parse(spec, argv, literal)
    kept = [p for i, p in enumerate(state.parts) if i not in set(state.operands)]
    shift = first - 1
    state.parts[:] = kept + [replace(p, index=p.index + shift) for p in inner.parts]
    state.operands = []
    state.concerns.extend(inner.concerns)


def _python_finish(state: State) -> None:
    module = state.modes.get("module")
    if module is not None:
        base = module.split(".", 1)[0]
        words = {state.parts[i].word for i in state.operands}
        if module in _LISTENER_MODULES or (module in ("django", "flask", "pydoc")
                                           and words & (_SERVE_WORDS | {"-p", "-b"})):
            state.concern("listener", f"python -m {module} opens a network listener")
            state.parts.append(Part(kind=N, word=f"-m {module}", index=0,
                                    why="serves on the network"))
        elif base in _CODE_MODULES:
            state.parts.append(Part(kind=X, word=f"-m {module}", index=0,
                                    why="runs code given on its command line or interactively"))
        elif module in _RUN_AS_COMMAND:  # python -m pytest ARGS is pytest ARGS
            _as_command(state, _RUN_AS_COMMAND[module])
            return
        elif base in _PIP_MODULES:
            state.parts.append(Part(kind=N, word=f"-m {module}", index=0,
                                    why="installs or fetches packages"))
        for n in range(len(state.operands)):
            state.set_operand(n, I, ARGUMENT_OF + "module")
        if module == "json.tool" and len(state.operands) >= 2:
            state.set_operand(1, W, "json.tool writes its output to the second operand")
        return
    _program_operands(state)


def _program_operands(state: State) -> None:
    """An interpreter's operands: inline code's arguments, or a script and its arguments,
    or nothing — then it reads its program from standard input."""
    if "code" in state.modes:
        for n in range(len(state.operands)):
            state.set_operand(n, I, ARGUMENT_OF + "code")
        return
    if "stop" in state.modes:
        return
    if not state.operands or state.parts[state.operands[0]].word == "-":
        state.parts.append(Part(kind=X, word=state.argv[0], index=0, why=STDIN_PROGRAM))
        return
    state.set_operand(0, X, "the script it runs", declared=True)
    for n in range(1, len(state.operands)):
        state.set_operand(n, I, ARGUMENT_OF + "script")


PYTHON = model(
    "python", "bBc:dEhiIm:OPqsSuvVW:xX:", "help version check-hash-based-pycs= help-env "
    "help-xoptions help-all", posix=True, finish=_python_finish,
    kinds={"c": Opt(kind=X, sets="code", ends=True, why="runs inline code"),
           "m": Opt(sets="module", declared=True, ends=True, why="runs a module"),
           "i": (X, "python -i starts an interactive interpreter"),
           "X": (U, "python -X sets implementation options (pycache_prefix writes elsewhere)"),
           "h": Opt(stop=True), "V": Opt(stop=True)})




NODE = model(
    "node", "e:p:cir:hv", "eval= print= check interactive require= import= loader= "
    "experimental-loader= inspect=? inspect-brk=? inspect-port= test watch env-file= "
    "no-warnings trace-warnings enable-source-maps input-type= stack-size= "
    "max-old-space-size= experimental-vm-modules help version", posix=True,
    finish=_program_operands,
    kinds={"e": Opt(kind=X, sets="code", ends=True, why="runs inline code"),
           "eval": Opt(kind=X, sets="code", ends=True, why="runs inline code"),
           "p": Opt(kind=X, sets="code", ends=True, why="runs inline code"),
           "print": Opt(kind=X, sets="code", ends=True, why="runs inline code"),
           "i": (X, "starts an interactive interpreter"),
           "interactive": (X, "starts an interactive interpreter"),
           "r": (X, "preloads a module"), "require": (X, "preloads a module"),
           "import": (X, "preloads a module"), "loader": (X, "loads a module loader"),
           "experimental-loader": (X, "loads a module loader"),
           "inspect": (N, "opens a debugger port"), "inspect-brk": (N, "opens a debugger port"),
           "inspect-port": (N, "opens a debugger port"),
           "env-file": (R, "reads environment variables from FILE"),
           "v": Opt(stop=True), "h": Opt(stop=True)})

def _pytest_finish(state: State) -> None:
    """``-p no:NAME`` disables a plugin: it loads nothing."""
    for n, part in enumerate(state.parts):
        if part.option in ("-p", "--p") and (part.value or "").startswith("no:"):
            state.parts[n] = replace(part, kind=I, why="disables a plugin")


PYTEST = model(
    "pytest", "k:m:xqvsr:lp:c:n:W:o:hV", "exitfirst maxfail= strict-markers strict-config "
    "continue-on-collection-errors lf last-failed ff failed-first nf new-first sw stepwise "
    "stepwise-skip sw-skip cache-show=? cache-clear lfnf= last-failed-no-failures= "
    "durations= durations-min= verbose quiet verbosity= disable-warnings disable-pytest-warnings "
    "tb= show-capture= full-trace color= code-highlight= capture= runxfail collect-only co "
    "pyargs ignore= ignore-glob= deselect= confcutdir= noconftest keep-duplicates "
    "collect-in-virtualenv import-mode= doctest-modules doctest-glob= doctest-report= "
    "doctest-continue-on-failure doctest-ignore-import-errors rootdir= basetemp= "
    "junitxml= junit-xml= junit-prefix= override-ini= log-level= log-format= "
    "log-date-format= log-cli-level= log-cli-format= log-cli-date-format= log-file= "
    "log-file-level= log-file-format= log-file-date-format= log-auto-indent= "
    "log-disable= setup-only setup-show setup-plan fixtures funcsetup fixtures-per-test "
    "markers version help debug=? trace-config no-header no-summary no-fold-skipped "
    "strict assert= pdb pdbcls= trace cov=? cov-report= cov-config= cov-fail-under= "
    "cov-append no-cov dist= numprocesses= maxprocesses= timeout= benchmark-disable "
    "benchmark-skip benchmark-only hypothesis-show-statistics hypothesis-seed= "
    "hypothesis-profile= asyncio-mode= reruns= count= randomly-seed= p= plugins "
    "report-log= config-file=",
    kinds={"p": (X, "pytest -p loads a plugin module"),
           "c": Opt(kind=X, file=True,
                    why="pytest -c reads configuration that can load plugins (addopts = -p …)"),
           "config-file": Opt(kind=X, file=True,
                              why="reads configuration that can load plugins"),
           "o": (U, "pytest -o overrides configuration (addopts can load plugins)"),
           "override-ini": (U, "overrides configuration (addopts can load plugins)"),
           "basetemp": (W, "writes temporary files in DIR (deleting what is there)"),
           "junitxml": (W, "writes a report to FILE"), "junit-xml": (W, "writes a report"),
           "log-file": (W, "writes a log to FILE"), "report-log": (W, "writes a report"),
           "cov-report": (U, "may write coverage reports to DIR"),
           "pdb": (X, "starts an interactive debugger on failure"),
           "debug": (W, "writes a debug log to FILE"),
           "trace": (X, "starts an interactive debugger"),
           "pdbcls": (X, "loads a debugger class"),
           "rootdir": (R, "runs from DIR"), "confcutdir": (R, "reads conftest.py up to DIR"),
           "ignore": (R, "a path it skips"), "cov-config": (R, "reads FILE"),
           "doctest-glob": (R, "collects doctests matching")},
    operand_why="a test path it collects and runs", operand_declared=True,
    finish=_pytest_finish)


def _make_finish(state: State) -> None:
    for n, index in enumerate(list(state.operands)):
        word = state.parts[index].word
        if "=" in word:
            state.set_operand(n, U, "a variable override changes what make's recipes run")
        else:
            state.set_operand(n, I, "a make target")
    state.parts.append(Part(kind=X, word="make", index=0, declared=True,
                            why="runs the recipes of the workspace's makefile"))


MAKE = model(
    "make", "bBC:d:eEf:hiI:j::kl::LnNo:pqrRsStvwW:", "always-make directory= debug=? "
    "environment-overrides eval= file= makefile= help ignore-errors include-dir= jobs=? "
    "keep-going load-average=? max-load=? check-symlink-times just-print dry-run recon "
    "old-file= assume-old= output-sync=? print-data-base question no-builtin-rules "
    "no-builtin-variables shuffle=? silent quiet no-silent stop no-keep-going touch trace "
    "version print-directory no-print-directory what-if= new-file= assume-new= "
    "warn-undefined-variables",
    kinds={"E": (X, "make --eval runs make code (and through it, the shell)"),
           "eval": (X, "make --eval runs make code (and through it, the shell)"),
           "f": (R, "runs the recipes of FILE"), "file": (R, "runs the recipes of FILE"),
           "makefile": (R, "runs the recipes of FILE"),
           "C": (R, "runs in DIR"), "directory": (R, "runs in DIR"),
           "I": (R, "includes makefiles from DIR"), "include-dir": (R, "includes from DIR"),
           "t": (W, "touches targets"), "touch": (W, "touches targets"),
           "e": (U, "lets the environment override makefile variables"),
           "environment-overrides": (U, "lets the environment override variables")},
    finish=_make_finish)

# npm: subcommands and what they do. Options are npm configuration (any key is accepted,
# and several run programs: --script-shell, --node-options, --userconfig), so only a
# few known harmless ones are modelled and the rest are unknown.
_NPM_OPTS = ("silent quiet verbose loglevel= json long parseable depth= all workspace= "
             "workspaces include-workspace-root if-present ignore-scripts no-audit no-fund "
             "omit= include= save-dev save-exact no-save production dry-run prefer-offline "
             "offline global help version")


def _npm_sub(name: str, kind: Kind, why: str, *, operand: Kind = I,
             declared: bool = False) -> Model:
    def finish(state: State) -> None:
        if "global" in state.modes and kind is N:
            state.concern("system_install", "npm -g installs packages for the whole system")
        state.parts.append(Part(kind=kind, word=f"npm {name}", index=0, declared=declared,
                                why=why))
    return model(f"npm {name}", "sqdlagw:", _NPM_OPTS, operand=operand, finish=finish,
                 kinds={"g": Opt(sets="global"), "global": Opt(sets="global")})


def _npm_config_finish(state: State) -> None:
    """``npm config get|list`` reads; ``set``, ``delete``, ``edit`` write an npmrc."""
    action = state.parts[state.operands[0]].word if state.operands else "list"
    if action in ("get", "list", "ls"):
        return
    project = state.modes.get("location") == "project"
    state.parts.append(Part(kind=W, word=f"npm config {action}", index=0, cause="config",
                            value=".npmrc" if project else "~/.npmrc",
                            why="writes npm configuration (it can make npm run programs)"))
    if not project:
        state.concern("global_config", "npm config changes the user's configuration")


_NPM_RUN = _npm_sub("run", X, "runs a script of package.json", declared=True)
_NPM_INSTALL = _npm_sub("install", N, "downloads packages and runs their install scripts")
_NPM_SUBS: dict[str, Model] = {
    **{k: _npm_sub("test", X, "runs the test script of package.json", declared=True)
       for k in ("test", "t", "tst")},
    **{k: _NPM_RUN for k in ("run", "run-script", "rum", "urn")},
    **{k: _npm_sub(k, X, f"runs the {k} script of package.json", declared=True)
       for k in ("start", "stop", "restart")},
    **{k: _npm_sub("ls", I, "lists installed packages") for k in ("ls", "list", "ll", "la")},
    **{k: _npm_sub("view", N, "asks the registry", declared=True)
       for k in ("view", "info", "show", "v", "outdated", "search", "audit")},
    **{k: _NPM_INSTALL for k in ("install", "i", "in", "ins", "inst", "insta", "instal",
                                 "isnt", "isnta", "isntal", "isntall", "add", "ci",
                                 "clean-install", "ic", "install-clean", "update", "up",
                                 "upgrade", "udpate")},
    **{k: _npm_sub("exec", X, "runs a package's program (fetched if missing)")
       for k in ("exec", "x")},
    "version": model("npm version", "", _NPM_OPTS, operand=U),
    **{k: model("npm config", "sqlg", _NPM_OPTS + " location=", operand=I,
                kinds={"location": Opt(sets="location")},
                finish=_npm_config_finish) for k in ("config", "c")},
}
NPM = model("npm", "v", "version help", subcommands=_NPM_SUBS, posix=True)
NPX = model("npx", operand=X, operand_why="npx runs a package's program, fetched if missing",
            lenient=True)


def _pip_install_finish(state: State) -> None:
    if "break_system" in state.modes:
        state.concern("system_install",
                      "pip --break-system-packages installs into the system Python")
    if "user" in state.modes:
        state.concern("system_install", "pip --user installs for the whole account")
    state.parts.append(Part(kind=N, word="pip install", index=0,
                            why="downloads packages and runs their build code"))


_PIP_COMMON = ("help isolated require-virtualenv python= verbose version quiet log= "
               "no-input proxy= retries= timeout= exists-action= trusted-host= cert= "
               "client-cert= cache-dir= no-cache-dir disable-pip-version-check no-color "
               "no-python-version-warning use-feature= use-deprecated= ")
PIP_INSTALL = model(
    "pip install", "r:c:e:t:Ui:qv", _PIP_COMMON + "requirement= constraint= editable= "
    "target= upgrade upgrade-strategy= force-reinstall ignore-installed no-deps pre "
    "index-url= extra-index-url= no-index find-links= user root= prefix= src= "
    "no-build-isolation no-binary= only-binary= prefer-binary require-hashes dry-run "
    "report= break-system-packages no-warn-script-location no-compile compile "
    "progress-bar= root-user-action= config-settings= global-option=",
    kinds={"r": (R, "reads requirements from FILE"), "requirement": (R, "reads FILE"),
           "c": (R, "reads constraints"), "constraint": (R, "reads constraints"),
           "t": (W, "installs into DIR"), "target": (W, "installs into DIR"),
           "root": (W, "installs under DIR"), "prefix": (W, "installs under DIR"),
           "i": (N, "uses another package index"), "index-url": (N, "another package index"),
           "extra-index-url": (N, "another package index"),
           "user": Opt(sets="user"), "break-system-packages": Opt(sets="break_system"),
           "report": (W, "writes a report"), "log": (W, "writes a log")},
    operand=I, finish=_pip_install_finish)
PIP = model("pip", "hVqv", "help version quiet verbose isolated python= no-color", posix=True,
            subcommands={
                "install": PIP_INSTALL,
                "download": model("pip download", "r:d:", _PIP_COMMON + "dest= requirement=",
                                  operand=N, kinds={"d": (W, "writes into DIR"),
                                                    "dest": (W, "writes into DIR"),
                                                    "r": (R, "reads FILE"),
                                                    "requirement": (R, "reads FILE")}),
                **{k: model(f"pip {k}", "lov", _PIP_COMMON + "local user outdated uptodate "
                            "format= not-required exclude-editable include-editable path= "
                            "all files", operand=I)
                   for k in ("list", "freeze", "show", "check", "inspect")},
                "uninstall": model("pip uninstall", "yr:", _PIP_COMMON + "yes requirement=",
                                   operand=W),
            })


def _apt_finish(state: State) -> None:
    changes = ("install", "remove", "purge", "upgrade", "dist-upgrade", "full-upgrade",
               "autoremove", "update", "reinstall", "build-dep", "source", "download")
    first = state.parts[state.operands[0]].word if state.operands else ""
    if first in changes:
        state.concern("system_install", f"{state.argv[0]} {first} changes system packages")
        state.parts.append(Part(kind=N, word=first, index=0, why="fetches packages"))
        state.parts.append(Part(kind=W, word=first, index=0, value=None, literal=False,
                                why="changes the system's packages"))
    for n in range(len(state.operands)):
        state.set_operand(n, I, "a subcommand or package")


def _packages(name: str) -> Model:
    return model(name, "yqsdfmbuVhc:o:t:", "yes assume-yes quiet simulate dry-run fix-broken "
                 "no-install-recommends install-recommends download-only reinstall purge "
                 "target-release= option= config-file= show-progress help version",
                 kinds={"c": (U, "reads configuration"), "config-file": (U, "reads config"),
                        "o": (U, "sets options that can run programs"),
                        "option": (U, "sets options that can run programs")},
                 finish=_apt_finish)


_MODEL_BY_NAME = {"pytest": PYTEST, "pip": PIP}
_RUN_AS_COMMAND = {"pytest": "pytest", "py.test": "pytest", "pip": "pip"}

MODELS: list[Model] = [PYTHON, NODE, PYTEST, MAKE, NPM, NPX, PIP,
                       *(_packages(n) for n in ("apt", "apt-get", "aptitude", "yum", "dnf",
                                                "apk", "zypper", "brew", "snap", "port"))]
ALIASES = {"py.test": "pytest", "nodejs": "node", "gmake": "make", "pip3": "pip",
           "python3": "python", "python2": "python", "pypy": "python", "pypy3": "python"}
RISKS = {"listener": Risk.HIGH}
