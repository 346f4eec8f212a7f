"""Sub-commands of ``perception-safety``: one module each, discovered by `perception_safety.cli`.

A command module defines ``register(subparsers)``, which adds its parser and sets
``func`` to a callable ``(argparse.Namespace) -> int`` (the exit code).
"""
