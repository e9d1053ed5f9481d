"""The bash analyser and the command models: what a shell command line does, as data.

``analyze(command)`` parses a command line with tree-sitter-bash and returns a
``ShellAnalysis``: its simple commands (argv, each read against the model of its
command in ``commands/``), the paths it reads and writes, and the findings that
keep an allow rule from matching it. It judges nothing: ``signoff.policy`` decides
what the analysis means for a call. This package imports nothing from the policy.

Inside: ``analysis`` walks the syntax tree; ``words`` turns nodes into words;
``redirects``, ``paths`` and ``writes`` find what a line touches; ``variables`` and
``execenv`` what its assignments change; ``feed`` what a command reads on standard
input; ``nested`` the scripts given to other programs (``codecommands`` finds them in
inline code); ``opaque`` what the line hides; ``chain`` what one command means for
those after it; ``results`` holds the records. Beside the analysis: ``dangers`` and
``concerns`` name what a command does that raises its risk; ``wordglob`` and
``globoverlap`` which paths a word with expansions or wildcards can name; ``ignores``
how git and rg read ignore files.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from signoff.shell.analysis import MAX_SHELL_BYTES, analyze
    from signoff.shell.paths import PathRef
    from signoff.shell.results import (
        MAX_NESTED_SCRIPTS,
        MAX_SIMPLE_COMMANDS,
        Finding,
        ShellAnalysis,
        SimpleCommand,
    )

__all__ = ["MAX_NESTED_SCRIPTS", "MAX_SHELL_BYTES", "MAX_SIMPLE_COMMANDS", "Finding", "PathRef",
           "ShellAnalysis", "SimpleCommand", "analyze"]

# Each name, the module it is imported from on first use: a call that runs no shell
# command (a Read, a Write) imports the module it needs, never the whole analyser.
_HOMES = {"MAX_SHELL_BYTES": "analysis", "analyze": "analysis", "PathRef": "paths",
          "MAX_NESTED_SCRIPTS": "results", "MAX_SIMPLE_COMMANDS": "results",
          "Finding": "results", "ShellAnalysis": "results", "SimpleCommand": "results"}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'signoff.shell' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"signoff.shell.{home}"), name)
    globals()[name] = value
    return value
