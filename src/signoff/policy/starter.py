"""The starter policies that ``signoff init`` writes and ``signoff demo`` runs on.

One template (``templates/signoff.toml``) holds the policy, the workspace and the rules;
a preset swaps its tool declarations (between ``# @tools`` and ``# @end tools``) for
those of a harness, and renames the path argument its rules match on. So the rules a
newcomer reads are the same whichever agent they start from.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

from signoff.errors import ConfigurationError


@dataclass(frozen=True, slots=True)
class Preset:
    tools: str | None  # the template file of its [tools.*] tables; None: the template's own
    path_argument: str  # what the file tools call their path argument
    gated: tuple[str, ...]


GATED = ("execute", "run_in_background", "schedule_task")
PRESETS = {
    "default": Preset(tools=None, path_argument="path", gated=GATED),
    # deepagents (create_deep_agent): virtual file paths, `task` subagents, `delete` reviewed
    "deepagents": Preset(tools="deepagents.toml", path_argument="file_path",
                         gated=(*GATED, "delete")),
}


def starter_toml(root: str, preset: str = "default") -> str:
    """The text of a starter ``signoff.toml`` with its workspace root set to ``root``."""
    try:
        chosen = PRESETS[preset]
    except KeyError:
        raise ConfigurationError(f"unknown preset {preset!r}: expected one of "
                                 f"{', '.join(PRESETS)}", code="unknown_preset") from None
    text = _template("signoff.toml")
    if chosen.tools is not None:
        head, rest = text.split("# @tools", 1)
        _, tail = rest.split("# @end tools", 1)
        text = f"{head}{_template(chosen.tools)}{tail}"
        text = text.replace('args = { path = "**/.env" }',
                            f'args = {{ {chosen.path_argument} = "**/.env" }}')
    text = text.replace(_gated_line(GATED), _gated_line(chosen.gated))
    return text.replace("__ROOT__", root.replace("\\", "\\\\").replace('"', '\\"'))


def _gated_line(names: tuple[str, ...]) -> str:
    return "gated = [" + ", ".join(f'"{name}"' for name in names) + "]"


def _template(name: str) -> str:
    return resources.files("signoff").joinpath(f"templates/{name}").read_text("utf-8")
