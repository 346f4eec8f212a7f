"""Every command and every option of `perception-safety` has --help text (issue 18 item 6)."""

from __future__ import annotations

import argparse

from perception_safety.cli import build_parser


def _missing(parser: argparse.ArgumentParser, path: str) -> list[str]:
    out = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {c.dest: c.help for c in action._choices_actions}
            for name, sub in action.choices.items():
                if not helps.get(name):
                    out.append(f"{path} {name} (command)")
                out += _missing(sub, f"{path} {name}")
        elif not action.help and not isinstance(action, argparse._HelpAction):
            out.append(f"{path} {'/'.join(action.option_strings) or action.dest}")
    return out


def test_every_command_and_option_has_help():
    parser = build_parser()
    assert _missing(parser, "perception-safety") == []
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    assert {"evaluate", "compare", "returns", "confusion", "pcd", "bbsl"} <= set(commands)
