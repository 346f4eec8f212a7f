"""The ``perception-safety`` command: each sub-command lives in `perception_safety.commands`."""

from __future__ import annotations

import argparse
import atexit
import gc
import importlib
import pkgutil
import sys
from collections.abc import Sequence

from perception_safety import __version__, commands
from perception_safety.errors import PerceptionSafetyError

# Last at exit (handlers run last-registered first): the interpreter's final garbage collections would walk every
# object the command left behind, 0.2-0.3 CPU s after an `evaluate`; frozen objects are skipped. Every other exit
# handler (workers, Ray, temporary files) has run by then; objects are freed as before, only reference cycles are
# left to the operating system, which takes the whole process's memory back anyway.
atexit.register(gc.freeze)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every command module's sub-command registered."""
    parser = argparse.ArgumentParser(
        prog="perception-safety",
        description="Safety evaluation of camera object detectors: offline metrics, verification, monitors.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):  # shared helpers of the commands, not a command
            continue
        module = importlib.import_module(f"{commands.__name__}.{info.name}")
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one sub-command; a `PerceptionSafetyError` becomes ``error: ...`` and exit code 2."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except PerceptionSafetyError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        from perception_safety.executors.lifetime import Terminated

        print("terminated" if isinstance(exc, Terminated) else "interrupted", file=sys.stderr)
        return 143 if isinstance(exc, Terminated) else 130


if __name__ == "__main__":
    sys.exit(main())
