"""Every argument of every command says what it is for in ``--help``."""

from __future__ import annotations

import argparse

from signoff.cli import build_parser


def _lacking(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[str]:
    missing: list[str] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                missing += _lacking(sub, (*path, name))
        elif not (action.help or "").strip():
            name = "/".join(action.option_strings) or action.dest
            missing.append(f"signoff {' '.join(path)} {name}")
    return missing


def _commands(parser: argparse.ArgumentParser) -> int:
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return sum(1 + _commands(p) for a in subs for p in a.choices.values())


def test_every_argument_of_every_command_has_help() -> None:
    parser = build_parser()
    assert _commands(parser) > 30  # the walk reaches the subcommands' own parsers
    assert _lacking(parser) == []
