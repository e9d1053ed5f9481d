"""The starter policy that ``signoff init`` writes and ``signoff demo`` runs on."""

from __future__ import annotations

from importlib import resources


def starter_toml(root: str) -> str:
    """The text of the starter ``signoff.toml`` with its workspace root set to ``root``."""
    template = resources.files("signoff").joinpath("templates/signoff.toml").read_text("utf-8")
    return template.replace("__ROOT__", root.replace("\\", "\\\\").replace('"', '\\"'))
